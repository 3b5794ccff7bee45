#-------------------------------------------------------------------------
# test/t/052_example_go.pl
#	  examples/go/worker.go (pgx v4) against a throwaway server: a batch
#	  with a retried and a permanently failed task, a lost connection,
#	  heartbeats, SIGTERM while working and while waiting (see
#	  ExampleWorker.pm).  Built in GOPATH mode against Debian's packaged
#	  Go libraries, with no download; skipped without go or pgx v4
#	  (Debian: golang-go golang-github-jackc-pgx-v4-dev, which .ci/run
#	  installs).
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use ExampleWorker;

my $src = "$ENV{SCHEDQ_SRCDIR}/examples/go/worker.go";
my $gopath = '/usr/share/gocode';

my $version = `go version 2>/dev/null` // '';
plan skip_all => 'no Go toolchain (apt-get install golang-go)'
  unless $version =~ /^go version/;
plan skip_all =>
  "no pgx v4 in $gopath (apt-get install golang-github-jackc-pgx-v4-dev)"
  unless -d "$gopath/src/github.com/jackc/pgx/v4";
chomp $version;
note $version;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $binary = "$tmp/schedq-worker";
{
	local $ENV{GO111MODULE} = 'off';
	local $ENV{GOPATH} = $gopath;
	local $ENV{GOCACHE} = "$tmp/gocache";
	local $ENV{GOPROXY} = 'off';
	local $ENV{GOFLAGS} = '';
	my $out = `go build -o $binary $src 2>&1`;
	if (!is($?, 0, 'go build examples/go/worker.go'))
	{
		diag $out;
		done_testing();
		exit;
	}
}

run_example_tests('go', [$binary]);
done_testing();

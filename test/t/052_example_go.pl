#-------------------------------------------------------------------------
# test/t/052_example_go.pl
#	  examples/go/worker.go (pgx v4) against a throwaway server: a batch
#	  with a retried and a permanently failed task, a lost connection,
#	  heartbeats, SIGTERM while working and while waiting (see
#	  ExampleWorker.pm).  Built with the client library in clients/go, in
#	  GOPATH mode against Debian's packaged Go libraries, with no download
#	  (GoBuild.pm); skipped without go or pgx v4 (Debian: golang-go
#	  golang-github-jackc-pgx-v4-dev, which .ci/run installs).
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use ExampleWorker;
use GoBuild;

my $src = "$ENV{SCHEDQ_SRCDIR}/examples/go/worker.go";

my $missing = go_missing();
plan skip_all => $missing if $missing;
my $version = `go version`;
chomp $version;
note $version;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $binary = "$tmp/schedq-worker";
my ($built, $out) = go_build($tmp, $binary, $src);
if (!ok($built, 'go build examples/go/worker.go'))
{
	diag $out;
	done_testing();
	exit;
}

run_example_tests('go', [$binary]);
done_testing();

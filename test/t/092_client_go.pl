#-------------------------------------------------------------------------
# test/t/092_client_go.pl
#	  The Go client library (clients/go) against a throwaway server: its
#	  own tests (go test, in clients/go/*_test.go) with the server's
#	  connection string in SCHEDQ_TEST_DSN, each test case one TAP
#	  assertion (read from go test -json; a case that fails, is skipped
#	  or never reports is a failing assertion, and so is go test exiting
#	  non-zero); go vet of the library, its tests and examples/go.
#	  Built offline in GOPATH mode against Debian's packaged Go libraries
#	  (GoBuild.pm); skipped without go or pgx v4 (Debian: golang-go
#	  golang-github-jackc-pgx-v4-dev, which .ci/run installs).
#-------------------------------------------------------------------------
use strict;
use warnings;

use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use GoBuild;

my $missing = go_missing();
plan skip_all => $missing if $missing;
my $version = `go version`;
chomp $version;
note $version;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my %env = go_env($tmp);
local @ENV{ keys %env } = values %env;
my $pkg = 'schedq.dev/schedq';

my $vet = `go vet $pkg 2>&1`;
is($?, 0, 'go vet clients/go (the library and its tests)') or diag $vet;
$vet = `go vet $ENV{SCHEDQ_SRCDIR}/examples/go/worker.go 2>&1`;
is($?, 0, 'go vet examples/go/worker.go') or diag $vet;

my $node = schedq_node('client_go', extension => 'postgres', conf => q{
max_worker_processes = 16
schedq.sql_workers = 0
});
my $user = getpwuid($<);
local $ENV{SCHEDQ_TEST_DSN} =
  'host=' . $node->host . ' port=' . $node->port . " user=$user dbname=postgres";

my $out = `go test -count=1 -json -timeout 600s $pkg 2>&1`;
my $status = $?;
my (%result, %output, @order);
for my $line (split /\n/, $out)
{
	my $event = eval { decode_json($line) };
	if (!$event || !defined $event->{Test})
	{
		diag $line unless $event;
		next;
	}
	my $test = $event->{Test};
	next if $test =~ m{/} || $test =~ /^TestHelper/;  # subtests; helpers
	push @order, $test unless exists $output{$test};
	$output{$test} .= $event->{Output} // '';
	$result{$test} = $event->{Action}
	  if $event->{Action} =~ /^(pass|fail|skip)$/;
}
for my $test (@order)
{
	my $r = $result{$test} // 'no result';
	ok($r eq 'pass', "$test") or diag "$test: $r\n$output{$test}";
}
cmp_ok(scalar @order, '>=', 15, 'go test ran the test cases') or diag $out;
is($status, 0, 'go test exits 0') or diag $out;

$node->stop;
done_testing();

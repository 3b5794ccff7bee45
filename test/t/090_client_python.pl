#-------------------------------------------------------------------------
# test/t/090_client_python.pl
#	  The Python client library (clients/python) against a throwaway
#	  server: its own tests (clients/python/tests, pytest), one TAP
#	  assertion per test case, and pytest's exit status.  The server has
#	  schedq preloaded and the roles of docs/security.md#roles; the tests
#	  connect with the connection string in SCHEDQ_TEST_DSN, as the
#	  bootstrap superuser.  Skipped when no python3 imports psycopg 3 and
#	  pytest (Debian: python3-psycopg python3-pytest, which .ci/run
#	  installs; mypy too, for the typing test).
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $dir = "$ENV{SCHEDQ_SRCDIR}/clients/python";

# The first python3 on PATH may be one without Debian's packages.
my ($python) = grep {
	system("$_ -c 'import psycopg, pytest' >/dev/null 2>&1") == 0
} ('python3', '/usr/bin/python3');
plan skip_all =>
  'no python3 that imports psycopg 3 and pytest (apt-get install python3-psycopg python3-pytest)'
  unless $python;

my $node = schedq_node('client_python', extension => 'postgres', conf => q{
max_worker_processes = 16
schedq.sql_workers = 0
});
doc_roles($node);

my ($out, $err) = ('', '');
local $ENV{SCHEDQ_TEST_DSN} = $node->connstr('postgres');
local $ENV{PYTHONDONTWRITEBYTECODE} = 1;
my $h = IPC::Run::start(
	[ $python, '-m', 'pytest', '-v', '-p', 'no:cacheprovider',
		'-o', 'console_output_style=classic', '--basetemp',
		PostgreSQL::Test::Utils::tempdir() . '/pytest', 'tests' ],
	'<', '/dev/null', '>', \$out, '2>', \$err,
	init => sub { chdir $dir or die "chdir $dir: $!" },
	IPC::Run::timeout(900));
my $finished = eval { $h->finish; 1 };
$h->kill_kill unless $finished;
my $rc = $finished ? $h->result(0) : -1;

my $cases = 0;
for my $line (split /\n/, $out)
{
	next unless $line =~ /^(tests\/\S+::\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b/;
	my ($case, $result) = ($1, $2);
	$cases++;
	ok($result eq 'PASSED' || $result eq 'XFAIL', "$case: $result");
}
cmp_ok($cases, '>=', 30, 'pytest ran the library\'s test cases') or diag "$out\n$err";
is($rc, 0, 'pytest exits 0') or diag "$out\n$err";

$node->stop;
done_testing();

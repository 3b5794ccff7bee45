#-------------------------------------------------------------------------
# test/t/091_client_node.pl
#	  The Node.js library (clients/node): its own tests, `node --test
#	  test/*.test.js` (node's TAP), against a throwaway server with schedq
#	  preloaded and the roles of docs/security.md; each test case of theirs
#	  is one assertion here, and the runner exiting non-zero is a failure
#	  too.  Skipped without Node.js 18 or later, or without the library's
#	  packages, which `make check` installs with npm ci from
#	  clients/node/package-lock.json (as t/051 the example's).
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $dir = "$ENV{SCHEDQ_SRCDIR}/clients/node";

my $version = `node --version 2>/dev/null` // '';
plan skip_all => 'no Node.js (node) on PATH' unless $version =~ /^v(\d+)/;
plan skip_all => "Node.js $version is too old (18 or later)" if $1 < 18;
plan skip_all =>
  'the library\'s packages are not installed (cd clients/node && npm ci)'
  unless -f "$dir/node_modules/pg/package.json"
  && -f "$dir/node_modules/typescript/package.json";
chomp $version;
note "node $version";

my $node = schedq_node('client_node', extension => 'postgres', conf => q{
max_worker_processes = 16
max_connections = 100
schedq.sql_workers = 0
track_functions = 'all'
});
doc_roles($node);

my @files = sort glob("$dir/test/*.test.js");
note 'test files: ' . join(' ', map { s{.*/}{}r } @files);
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[ 'node', '--test', '--test-reporter=tap', @files ],
	'<', '/dev/null', '>', \$out, '2>', \$err,
	init => sub {
		chdir $dir or die "chdir $dir: $!";
		$ENV{PGHOST} = $node->host;
		$ENV{PGPORT} = $node->port;
		$ENV{PGUSER} = (getpwuid($<))[0];
		$ENV{PGDATABASE} = 'postgres';
		$ENV{SCHEDQ_TEST_ROLES} = 1; # app and worker exist
		delete $ENV{PGPASSWORD};
	},
	IPC::Run::timeout(600));
my $status = $?;

# node's TAP: each test case is a line "ok N - name" or "not ok N - name"
# at the top level (subtests are indented), with its diagnostics in the
# indented YAML block after it.
my @lines = split /\n/, $out;
my $cases = 0;
for my $i (0 .. $#lines)
{
	next unless $lines[$i] =~ /^(not )?ok \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/;
	my ($failed, $name, $directive) = ($1, $2, $3);
	$cases++;
	if ($directive && $directive eq 'SKIP')
	{
		SKIP: { skip "node: $name", 1; }
		next;
	}
	my @yaml;
	for (my $j = $i + 1; $j <= $#lines && $lines[$j] =~ /^\s/; $j++)
	{
		push @yaml, $lines[$j];
	}
	ok(!$failed, "node: $name") or diag join("\n", @yaml);
}
# Only failures add an assertion: a passing run counts its cases.
fail('node --test reported no test case') or diag "stdout:\n$out\nstderr:\n$err"
  unless $cases;
fail("node --test exited with status $status") or diag "stderr:\n$err"
  unless $ok && $status == 0;

$node->stop;
done_testing();

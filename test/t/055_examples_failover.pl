#-------------------------------------------------------------------------
# test/t/055_examples_failover.pl
#	  The example workers (examples/python, node, go; a language whose
#	  toolchain is missing is skipped) follow the primary:
#	  (a) PGHOST and PGPORT list three servers: a dead one (no socket), a
#	      read-only one (default_transaction_read_only = on) and the
#	      primary, with PGTARGETSESSIONATTRS=read-write.  Each worker
#	      connects to the primary, logs its host and port, and runs a task;
#	  (b) the primary is stopped (fast) and started again while the worker
#	      is frozen (SIGSTOP) with a task waiting: the worker claims it
#	      within 3 s of the server being ready (the figure is printed), and
#	      logs its connection to the primary again;
#	  (c) the primary turns read-only (default_transaction_read_only, as a
#	      failover manager fences a primary off) while the worker waits:
#	      the worker says so and keeps trying; writable again, it runs a
#	      new task;
#	  then SIGTERM: exit 0.
#
#	  Every wait has a deadline.  Run by test/check.sh (make check) with
#	  prove; see the header of check.sh for the environment every TAP test
#	  gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use POSIX ':sys_wait_h';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SchedqTest;
use GoBuild;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $src = $ENV{SCHEDQ_SRCDIR};

my @examples;
my ($python) =
  grep { system("$_ -c 'import psycopg' >/dev/null 2>&1") == 0 } ('python3', '/usr/bin/python3');
push @examples, [ 'python', [ $python, "$src/examples/python/worker.py" ] ] if $python;
my $nodever = `node --version 2>/dev/null` // '';
push @examples, [ 'node', [ 'node', "$src/examples/node/worker.js" ] ]
  if $nodever =~ /^v(\d+)/ && $1 >= 18
  && -f "$src/examples/node/node_modules/pg/package.json";
my $go_built;
if (!go_missing())
{
	my $built;
	($built, $go_built) = go_build($dir, "$dir/schedq-worker", "$src/examples/go/worker.go");
	push @examples, [ 'go', ["$dir/schedq-worker"] ] if $built;
}
plan skip_all => 'no example worker can run here (python3-psycopg, node 18 with npm ci, go with pgx v4)'
  unless @examples;
note 'example workers: ' . join(', ', map { $_->[0] } @examples);
ok(defined $go_built ? grep({ $_->[0] eq 'go' } @examples) : 1, 'go build examples/go/worker.go')
  or diag $go_built;

my $node = schedq_node('primary', extension => 'postgres', conf => qq{
max_worker_processes = 16
schedq.sql_workers = 0
});
doc_roles($node);
my $ro = schedq_node('readonly');
$ro->safe_psql('postgres', 'CREATE ROLE worker LOGIN');
$ro->append_conf('postgresql.conf', "default_transaction_read_only = on\n");
$ro->reload;
my $dead = PostgreSQL::Test::Cluster::get_free_port();
my ($h, $p) = ($node->host, $node->port);


sub as_app
{
	return $node->safe_psql('postgres', $_[0], extra_params => [ '-U', 'app' ]);
}

for my $ex (@examples)
{
	my ($label, $cmd) = @$ex;
	my $log = "$dir/$label.log";
	my $queue = "q_$label";
	my $pid = fork;
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null') or die;
		open(STDOUT, '>>', $log) or die;
		open(STDERR, '>&', \*STDOUT) or die;
		$ENV{PGHOST} = join ',', $h, $ro->host, $h;
		$ENV{PGPORT} = join ',', $dead, $ro->port, $p;
		$ENV{PGTARGETSESSIONATTRS} = 'read-write';
		$ENV{PGUSER} = 'worker';
		$ENV{PGDATABASE} = 'postgres';
		$ENV{SCHEDQ_WORKER} = "failover-$label";
		$ENV{SCHEDQ_QUEUES} = $queue;
		$ENV{SCHEDQ_WAIT} = 30;
		exec(@$cmd) or POSIX::_exit(127);
	}

	#
	# (a) Past a dead and a read-only server, to the primary.
	#
	my $t1 = as_app("SELECT schedq.submit('add', queue => '$queue', payload => '{\"numbers\": [1, 2]}')");
	ok( defined poll_until(
			$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $t1", 'done', 90),
		"(a) $label: past a dead and a read-only server, it runs a task on the primary")
	  or diag slurp($log);
	my @connected = slurp($log) =~ /connected to \Q$h:$p\E\b/g;
	ok(@connected >= 1, "(a) $label logs the primary's host and port ($h:$p)")
	  or diag slurp($log);
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'worker'"
			  . " AND state = 'active' AND query LIKE 'CALL schedq.await_task%'",
			't', 30),
		"(a) $label waits in await_task");

	#
	# (b) A restart, with a task waiting.
	#
	kill 'STOP', $pid;
	my $t2 = as_app("SELECT schedq.submit('add', queue => '$queue', payload => '{\"numbers\": [3, 4]}')");
	$node->stop('fast');
	kill 'CONT', $pid;
	$node->start;
	my @ready = slurp($node->logfile) =~
	  /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+) \[\d+\] LOG:  database system is ready to accept connections/mg;
	ok( defined poll_until(
			$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $t2", 'done', 90),
		"(b) $label: after the restart it runs the waiting task")
	  or diag slurp($log);
	my $secs = $node->safe_psql('postgres',
		"SELECT round(extract(epoch FROM started_at - '$ready[-1]'::timestamptz), 3)"
		  . " FROM schedq.task WHERE id = $t2");
	diag "$label: reconnect after a restart: ${secs} s from the server being ready to the claim";
	cmp_ok($secs, '<', 3, "(b) $label: within 3 s of the server being ready");
	my @again = slurp($log) =~ /connected to \Q$h:$p\E\b/g;
	cmp_ok(scalar(@again), '>', scalar(@connected),
		"(b) $label logs its new connection to $h:$p") or diag slurp($log);

	#
	# (c) The primary turns read-only while the worker waits (as a failover
	# manager fences a primary off): await_task ends with 25006, and the
	# worker keeps trying, with no server writable, until one is again.
	#
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'worker'"
			  . " AND state = 'active' AND query LIKE 'CALL schedq.await_task%'",
			't', 30),
		"(c) $label waits in await_task again");
	my $before = () = slurp($log) =~ /server read-only/g;
	$node->safe_psql('postgres',
		'ALTER SYSTEM SET default_transaction_read_only = on; SELECT pg_reload_conf()');
	my ($said, $since) = (0, time);
	while (!$said && time - $since < 30)
	{
		my $n = () = slurp($log) =~ /server read-only/g;
		$said = $n > $before;
		usleep(50_000) unless $said;
	}
	ok($said, "(c) $label says the server turned read-only") or diag slurp($log);
	ok(kill(0, $pid), "(c) $label keeps running");
	$node->safe_psql('postgres',
		'ALTER SYSTEM RESET default_transaction_read_only; SELECT pg_reload_conf()');
	my $t3 = as_app("SELECT schedq.submit('add', queue => '$queue', payload => '{\"numbers\": [5, 6]}')");
	ok( defined poll_until(
			$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $t3", 'done', 60),
		"(c) $label: writable again, it runs a new task") or diag slurp($log);

	kill 'TERM', $pid;
	my $status;
	my $start = time;
	while (time - $start < 60)
	{
		if (waitpid($pid, WNOHANG) == $pid) { $status = $?; last; }
		usleep(50_000);
	}
	is($status, 0, "$label: SIGTERM: exit status 0") or diag slurp($log);
}

$node->stop;
$ro->stop;
done_testing();

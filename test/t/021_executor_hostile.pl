#-------------------------------------------------------------------------
# test/t/021_executor_hostile.pl
#	  The built-in SQL executors against commands that do not stop when
#	  asked, against cancels that should not reach them, and over many
#	  tasks; with schedq.reaper_interval = 200ms and
#	  schedq.sql_cancel_grace = 1s:
#
#	  (a) a command that catches query_canceled forever, with a 1 s
#	      timeout: its executor is terminated after the grace period;
#	      each attempt is failed ('timeout') only once its executor has
#	      stopped, so never do two executors run the task at once; the
#	      task ends failed after its two attempts; no executor is left
#	      busy.
#	  (b) the same command canceled by its owner: its executor is
#	      terminated within the grace period (plus a reaper pass); the
#	      task stays canceled; the next task runs.
#	  (c) a SQL task submitted or scheduled without a timeout gets
#	      schedq.sql_task_timeout (1 h by default; 0: none); an explicit
#	      one is kept; only a superuser sets the default.
#	  (d) one transaction of role a cancels 70 running tasks of a while an
#	      executor runs a task of role b: b's task is not interrupted.
#	  (e) cancels rolled back (ROLLBACK TO SAVEPOINT, a PL/pgSQL
#	      exception block, a savepoint released into one rolled back) do
#	      not interrupt the task; one released into the transaction does,
#	      even when a later sibling savepoint rolls back.
#	  (f) memory: an executor's TopMemoryContext does not grow with the
#	      tasks it runs (pg_log_backend_memory_contexts after 300 tasks and
#	      after 1,200 more).
#
#	  Waiting is done by polling with deadlines.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time usleep);

my $node = schedq_node('hostile', extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.reaper_interval = '200ms'
schedq.sql_cancel_grace = '1s'
schedq.sql_idle_timeout = -1
});
$node->safe_psql(
	'postgres', q{
	CREATE ROLE a LOGIN;
	CREATE ROLE b LOGIN;
	GRANT USAGE ON SCHEMA schedq TO a, b;
	GRANT EXECUTE ON FUNCTION schedq.submit, schedq.submit_sql, schedq.cancel,
		schedq.schedule_sql, schedq.unschedule TO a, b;
	GRANT SELECT ON schedq.task, schedq.periodic TO a, b;
});

# Executors of postgres, as "pid,pid,...".
my $executors =
	"SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '')"
  . " FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
  . " AND datname = 'postgres'";

sub count_of
{
	my ($list) = @_;
	return $list eq '' ? 0 : scalar(split /,/, $list);
}

# Executors running exactly $command right now, as "pid,pid,...".
sub running_query
{
	my ($command) = @_;
	$command =~ s/'/''/g;
	return "SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '')"
	  . " FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
	  . " AND datname = 'postgres' AND state = 'active' AND query = '$command'";
}

# Submit $command as $role with extra submit_sql arguments; returns the id.
sub submit
{
	my ($role, $command, $args) = @_;
	return $node->safe_psql('postgres',
		'SELECT schedq.submit_sql($cmd$' . $command . '$cmd$'
		  . (defined $args ? ", $args" : '') . ')',
		extra_params => [ '-U', $role ]);
}

# status|attempts|last_error|result of a task.
sub task_row
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT status || '|' || attempts || '|' || coalesce(last_error, '')"
		  . " || '|' || coalesce(result::text, '') FROM schedq.task WHERE id = $id");
}

# Wait until the task runs in an executor; returns that executor's pid.
sub wait_running
{
	my ($id, $command) = @_;
	my $r = poll_value($node, 'postgres',
		"SELECT (SELECT status FROM schedq.task WHERE id = $id) || '|'"
		  . ' || (' . running_query($command) . ')',
		sub { $_[0] =~ /^running\|\d+$/ }, 10);
	return $r ? (split /\|/, $r->[1])[1] : undef;
}

sub wait_finished
{
	my ($timeout, @ids) = @_;
	my $list = join(',', @ids);
	return poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE id IN ($list)"
		  . " AND status IN ('done', 'failed', 'canceled')",
		scalar(@ids), $timeout);
}

sub alive
{
	my ($pid) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") eq '1';
}

# Whatever a failed check left running is stopped, so that the next part
# starts with no executor busy (the scheduler starts executors on demand).
sub restore_pool
{
	my ($command) = @_;
	$command =~ s/'/''/g;
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
		  . " WHERE backend_type = 'schedq sql executor' AND query = '$command'");
	return poll_until($node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity"
		  . " WHERE backend_type = 'schedq sql executor' AND datname = 'postgres'"
		  . " AND state IS DISTINCT FROM 'idle'",
		'0', 15);
}

# A command that catches every cancel of its statement, forever.
my $stubborn = 'DO $d$ BEGIN LOOP'
  . ' BEGIN PERFORM pg_sleep(0.05); EXCEPTION WHEN query_canceled THEN NULL; END;'
  . ' END LOOP; END $d$';

#
# (a) A stubborn command with a 1 s timeout and two attempts.
#
my $offset = -s $node->logfile;
my $t_a = submit('a', $stubborn, "timeout => '1 second', max_attempts => 2");
my $first = wait_running($t_a, $stubborn);
ok($first, '(a) the stubborn task runs in an executor');
$first //= 0;

my $start = time;
my ($max_running, $early, $last) = (0, '', '');
my $ended = 0;
while (time - $start < 30)
{
	$last = $node->safe_psql('postgres',
		"SELECT t.status || '|' || t.attempts || '|' || coalesce(t.last_error, '')"
		  . " || '|' || (SELECT count(*) FROM pg_locks WHERE pid = $first AND granted)"
		  . " || '|' || (" . running_query($stubborn) . ')'
		  . " FROM schedq.task t WHERE t.id = $t_a");
	my ($s, $n, $e, $first_alive, $pids) = split /\|/, $last, 5;
	$pids //= '';
	$max_running = count_of($pids) if count_of($pids) > $max_running;
	# the first attempt is over (taken back, retried) while its executor
	# still holds locks, i.e. its transaction has not rolled back yet (an
	# executor that has rolled back may still be listed in pg_stat_activity
	# for a moment while it exits).  Unless that executor runs the next
	# attempt itself: a cancel that lands between the loop's blocks ends
	# the first attempt as a timeout in its own executor, which lives on.
	$early = $last
	  if $first_alive
	  && ($s ne 'running' || $n > 1)
	  && !grep { $_ == $first } split /,/, $pids;
	if ($s eq 'failed') { $ended = 1; last; }
	usleep(50_000);
}
ok($ended, '(a) the task ends failed');
note sprintf('(a) after %.2f s: %s', time - $start, $last);
is(task_row($t_a), 'failed|2|timeout|', '(a) after two attempts, each a timeout');
is($max_running, 1, '(a) never did two executors run it at once');
is($early, '', '(a) its first attempt was taken back only after its executor stopped');
ok(!alive($first), '(a) the executor of the first attempt was terminated');
like(slurp_file($node->logfile, $offset),
	qr/terminating SQL executor $first: task $t_a ignored/,
	'(a) the log says why it was terminated');
ok(restore_pool($stubborn), '(a) no executor is left busy');

#
# (b) The stubborn command canceled by its owner.
#
$offset = -s $node->logfile;
my $t_b = submit('a', $stubborn);
my $pid_b = wait_running($t_b, $stubborn);
ok($pid_b, '(b) the stubborn task runs in an executor');
$pid_b //= 0;
is($node->safe_psql('postgres', "SELECT schedq.cancel($t_b)", extra_params => [ '-U', 'a' ]),
	't', '(b) its owner cancels it');
$start = time;
my $r = poll_until($node, 'postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid_b", '0', 6);
ok(defined $r, '(b) its executor is terminated within 6 s (grace 1 s)');
note sprintf('(b) terminated after %.2f s', $r // -1);
like(slurp_file($node->logfile, $offset),
	qr/terminating SQL executor $pid_b: task $t_b ignored/,
	'(b) the log says why');
is(task_row($t_b), 'canceled|1||', '(b) the task stays canceled');
ok(restore_pool($stubborn), '(b) no executor is left busy');
my $next = submit('a', 'SELECT 1');
ok(wait_finished(10, $next), '(b) the next task runs');
is(task_row($next), 'done|1||{"rows": 1}', '(b) and is done');

# (b2) Canceled, then retried at once while its executor still ignores the
# cancel: no second executor takes it up until the first has gone.
my $t_r = submit('a', $stubborn);
my $pid_r = wait_running($t_r, $stubborn) // 0;
$node->safe_psql('postgres', "SELECT schedq.cancel($t_r), schedq.retry($t_r)");
my ($twice, $second) = (0, 0);
$start = time;
while (time - $start < 15)
{
	my ($first_alive, $pids) = split /\|/, $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM pg_stat_activity WHERE pid = $pid_r)"
		  . " || '|' || coalesce((" . running_query($stubborn) . "), '')");
	$twice = 1 if count_of($pids) > 1;
	if (!$first_alive && count_of($pids) == 1) { $second = 1; last; }
	usleep(50_000);
}
ok(!$twice, '(b2) a retried task is not run while its old executor still runs it');
ok($second, '(b2) it runs once the old executor has gone');
$node->safe_psql('postgres', "SELECT schedq.cancel($t_r)");
ok(restore_pool($stubborn), '(b2) no executor is left busy');


# (b3) A SQL task waits for a lock as any session would: the workers' own
# one-second lock_timeout is not its own.
$node->safe_psql('postgres', 'CREATE TABLE held (x int); GRANT ALL ON held TO a');
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE held');
my $t_l = submit('a', 'INSERT INTO public.held VALUES (1)');
my $waiting = q{SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
  WHERE a.backend_type = 'schedq sql executor' AND NOT l.granted
    AND l.relation = 'held'::regclass};
ok(defined poll_until($node, 'postgres', $waiting, '1', 10),
	'(b3) the SQL task waits for the lock');
is(stays($node, 'postgres', $waiting, '1', 2), undef,
	'(b3) and keeps waiting past the workers\' lock_timeout');
$holder->query_safe('COMMIT');
$holder->quit;
ok(wait_finished(10, $t_l), '(b3) it runs once the lock is free');
is(task_row($t_l), 'done|1||{"rows": 1}', '(b3) and is done');

#
# (c) The default timeout of SQL tasks.
#
sub timeout_of
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(timeout::text, 'none') FROM schedq.task WHERE id = $id");
}
is(timeout_of(submit('a', 'SELECT 1')), '01:00:00',
	'(c) submit_sql without a timeout: schedq.sql_task_timeout, 1 h');
is(timeout_of(submit('a', 'SELECT 1', "timeout => '5 seconds'")), '00:00:05',
	'(c) an explicit timeout is kept');
# Output of $sql, or its error (the setting is unknown before the fix).
sub output_or_error
{
	my ($sql, @args) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql, @args);
	return $ret == 0 ? $out : $err;
}
is( output_or_error("SET schedq.sql_task_timeout = '10min';"
		  . " SELECT schedq.submit_sql('SELECT 1') AS id \\gset\n"
		  . " SELECT timeout FROM schedq.task WHERE id = :id"),
	'00:10:00', '(c) the setting is the default');
is( output_or_error("SET schedq.sql_task_timeout = 0;"
		  . " SELECT schedq.submit_sql('SELECT 1') AS id \\gset\n"
		  . " SELECT coalesce(timeout::text, 'none') FROM schedq.task WHERE id = :id"),
	'none', '(c) 0: no timeout');
is( output_or_error("SELECT schedq.schedule_sql('c', '\@daily', 'SELECT 1');"
		  . " SELECT coalesce(timeout::text, 'none') FROM schedq.periodic WHERE name = 'c';"
		  . " SELECT schedq.unschedule('c')",
		extra_params => [ '-U', 'a' ]),
	"c\n01:00:00\nt", '(c) schedule_sql too');
like( output_or_error("SET schedq.sql_task_timeout = 0",
		extra_params => [ '-U', 'a', '-v', 'VERBOSITY=verbose' ]),
	qr/42501/, '(c) only a superuser may change it (42501)');

#
# (d) Seventy cancels of role a's running tasks in one transaction while
# an executor runs role b's task.
#
$node->safe_psql('postgres',
	"SELECT schedq.submit('x', queue => 'many') FROM generate_series(1, 70)",
	extra_params => [ '-U', 'a' ]);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM schedq.claim('w', queues => '{many}', n => 70)"),
	'70', '(d) seventy tasks of a are running (claimed by a worker)');
my $t_d = submit('b', 'SELECT pg_sleep(3)');
ok(wait_running($t_d, 'SELECT pg_sleep(3)'), "(d) b's task runs in an executor");
is( $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE c) FROM (SELECT schedq.cancel(id) AS c"
		  . " FROM schedq.task WHERE queue = 'many' AND status = 'running') s",
		extra_params => [ '-U', 'a' ]),
	'70', '(d) a cancels its seventy in one statement');
ok(wait_finished(15, $t_d), "(d) b's task finishes");
is(task_row($t_d), 'done|1||{"rows": 1}',
	"(d) at its first attempt, done: it was not interrupted");

#
# (e) Cancels rolled back to a savepoint.  Three of them, one after the
# other, at the task while it runs its 3 s statement.
#
my $t_e = submit('b', 'SELECT pg_sleep(3)');
ok(wait_running($t_e, 'SELECT pg_sleep(3)'), '(e) the task runs in an executor');
is( $node->safe_psql(
		'postgres', qq{
	BEGIN;
	SAVEPOINT s;
	SELECT schedq.cancel($t_e);
	ROLLBACK TO s;
	COMMIT;
	BEGIN;
	SAVEPOINT s1;
	SAVEPOINT s2;
	SELECT schedq.cancel($t_e);
	RELEASE s2;
	ROLLBACK TO s1;
	COMMIT;
	DO \$d\$ BEGIN
		PERFORM schedq.cancel($t_e);
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN NULL;
	END \$d\$;
	SELECT status FROM schedq.task WHERE id = $t_e;
}), "t\nt\nrunning", '(e) three cancels, each rolled back; the task still runs');
ok(wait_finished(15, $t_e), '(e) the task finishes');
is(task_row($t_e), 'done|1||{"rows": 1}',
	'(e) at its first attempt, done: it was not interrupted');

# A cancel released into the transaction, then a sibling savepoint rolled
# back: the cancel stands, and interrupts the statement.
my $t_e2 = submit('b', 'SELECT pg_sleep(60)');
my $pid_e2 = wait_running($t_e2, 'SELECT pg_sleep(60)');
ok($pid_e2, '(e) a pg_sleep(60) task runs');
$node->safe_psql(
	'postgres', qq{
	BEGIN;
	SAVEPOINT s1;
	SELECT schedq.cancel($t_e2);
	RELEASE s1;
	SAVEPOINT s2;
	ROLLBACK TO s2;
	COMMIT;
});
$r = poll_until($node, 'postgres', running_query('SELECT pg_sleep(60)'), '', 3);
ok(defined $r, '(e) a cancel released, then a sibling rolled back: the statement stops');
is(task_row($t_e2), 'canceled|1||', '(e) and the task is canceled');

#
# (f) Memory of an executor over many tasks, with one executor.
#
$node->safe_psql('postgres', 'ALTER SYSTEM SET schedq.sql_workers = 1');
$node->reload;
ok(poll_value($node, 'postgres', $executors, sub { count_of($_[0]) <= 1 }, 10),
	'(f) one executor at most');
ok(defined run_tasks(1), '(f) a first task is done');
$r = poll_value($node, 'postgres', $executors, sub { count_of($_[0]) == 1 }, 10);
ok($r, '(f) by one executor');
my $pid_f = $r ? $r->[1] : 0;

# The bytes TopMemoryContext itself uses in the executor.
sub top_used
{
	my $off = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid_f)");
	my $re = qr/\[$pid_f\] LOG:  level: [01]; TopMemoryContext: \d+ total in \d+ blocks; \d+ free \(\d+ chunks\); (\d+) used/;
	my $deadline = time + 10;
	while (time < $deadline)
	{
		return $1 if slurp_file($node->logfile, $off) =~ $re;
		usleep(100_000);
	}
	return undef;
}

sub run_tasks
{
	my ($n) = @_;
	my $ids = $node->safe_psql('postgres',
		"SELECT min(id) || ',' || max(id) FROM (SELECT schedq.submit_sql("
		  . "'SELECT ' || i, queue => 'soak') AS id FROM generate_series(1, $n) i) s",
		extra_params => [ '-U', 'b' ]);
	my ($lo, $hi) = split /,/, $ids;
	return poll_until($node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE id BETWEEN $lo AND $hi AND status = 'done'",
		$n, 120);
}

ok(defined run_tasks(300), '(f) 300 tasks done');
my $used1 = top_used();
ok(defined $used1, '(f) the executor logs its memory contexts');
$r = run_tasks(1200);
ok(defined $r, '(f) 1,200 more done');
note sprintf('(f) 1,200 tasks in %.2f s', $r // -1);
my $used2 = top_used();
is($node->safe_psql('postgres', $executors), $pid_f, '(f) by the same executor');
$used1 //= 0;
$used2 //= 1e9;
cmp_ok($used2 - $used1, '<', 32 * 1024,
	'(f) its TopMemoryContext grew by less than 32 kB over 1,200 tasks');
note "(f) TopMemoryContext used: $used1 bytes after 300 tasks, $used2 after 1,500";

$node->stop;

done_testing();

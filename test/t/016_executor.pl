#-------------------------------------------------------------------------
# test/t/016_executor.pl
#	  The built-in SQL executors, through the live scheduler,
#	  with schedq.default_lease = 2s (the executors' lease) and
#	  schedq.reaper_interval = 200ms:
#
#	  (a) on demand: no executor before a SQL task is ready; then up to
#	      schedq.sql_workers (2) for the database with the tasks, none
#	      for another with schedq and none for one without it; a reload
#	      to 3 lets three run, to 1 stops the extra ones.  (Executors
#	      stay once started here: schedq.sql_idle_timeout = -1; idle
#	      ones leaving is t/020_worker_slots.pl's.)
#	  (e) backpressure: with one executor, five 0.5 s tasks run one at a
#	      time (the others wait 'available'), all end done, their
#	      statements never overlap; each one's finished_at is after its
#	      command ran.
#	  (b) runs as the owner: a role's task has that role's privileges and
#	      no more (permission denied on another's table; SET ROLE, SET/RESET
#	      SESSION AUTHORIZATION, RESET ROLE, set_config('role') all refused);
#	      current_user in the task is the owner; rows are counted.
#	  (c) timeout: a task with timeout 1 s fails within a few seconds, even
#	      if it sets statement_timeout = 0 itself; the executor is free
#	      again.  A command that catches query_canceled and writes after
#	      its attempts were taken back commits nothing.
#	  (d) cancel: cancel() of a running task interrupts its statement at
#	      once; the task stays canceled; the same executor runs the next.
#	      A command that catches the cancel and writes commits nothing.
#	  (f) an owner that lost LOGIN, or was dropped, fails its task for good
#	      (attempts 1 of 5) with a clear error.
#	  (g) crash mid-task: while the statement outlives its 2 s lease, the
#	      reaper keeps extending the lease instead of taking it back; the
#	      executor is killed with SIGKILL (the cluster restarts), the lease
#	      then expires, the second attempt completes; the first never
#	      committed, and never were two executors running it.
#	  (h) a task's session settings (search_path, TimeZone, ...) end with
#	      it: they neither reach the next task (another role's) in the same
#	      executor, nor the executor's own queries, which run as the
#	      superuser (a search_path naming the owner's schema would make
#	      them call the owner's functions).
#	  (i) errors no retry can cure (classes 0A, 22, 25, 26, 2B, 34, 3D,
#	      3F, 42: division by zero, a syntax error, an unknown table,
#	      permission denied, a bad input value, VACUUM) fail the task at
#	      its first attempt; a serialization failure, a deadlock, the
#	      command's own RAISE and a lock not available are retried.
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

my $node = schedq_node('executor', extension => 'postgres', conf => qq{
max_worker_processes = 32
restart_after_crash = on
schedq.enabled = on
schedq.reaper_interval = '200ms'
schedq.default_lease = '2s'
schedq.sql_idle_timeout = -1
});
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION schedq');
$node->safe_psql('postgres', 'CREATE DATABASE plain');
my $su = $node->safe_psql('postgres', 'SELECT current_user');

# Executors of a database, as "pid,pid,..." (by pid).
sub executors_of
{
	my ($db) = @_;
	return "SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '')"
	  . " FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
	  . " AND datname = '$db'";
}

sub count_of
{
	my ($list) = @_;
	return $list eq '' ? 0 : scalar(split /,/, $list);
}

# Executors of postgres running exactly $command right now.
sub running_query
{
	my ($command) = @_;
	$command =~ s/'/''/g;
	return "SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '')"
	  . " FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
	  . " AND datname = 'postgres' AND state = 'active' AND query = '$command'";
}

sub set_workers
{
	my ($n) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET schedq.sql_workers = $n");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
}

# Submit $command as $role with extra submit_sql arguments; returns the id.
sub submit
{
	my ($role, $command, $args) = @_;
	my $sql = 'SELECT schedq.submit_sql($cmd$' . $command . '$cmd$'
	  . (defined $args ? ", $args" : '') . ')';
	return $node->safe_psql('postgres', $sql, extra_params => [ '-U', $role ]);
}

# status|attempts|last_error|result of a task (as the superuser).
sub task_row
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT status || '|' || attempts || '|' || coalesce(last_error, '')"
		  . " || '|' || coalesce(result::text, '') FROM schedq.task WHERE id = $id");
}

# Wait until every task of @ids is finished.
sub wait_finished
{
	my ($timeout, @ids) = @_;
	my $list = join(',', @ids);
	return poll_value(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE id IN ($list)"
		  . " AND status IN ('done', 'failed', 'canceled')",
		scalar(@ids), $timeout);
}

#
# (a) On demand.
#
is( stays($node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'",
		'0', 2),
	undef, '(a) no executor runs before a SQL task is ready');
my $sleepers = $node->safe_psql('postgres',
	q{SELECT string_agg(schedq.submit_sql('SELECT pg_sleep(1)')::text, ',')}
	  . q{ FROM generate_series(1, 4)});
my $most = 0;
my $r = poll_value(
	$node, 'postgres',
	"SELECT (" . executors_of('postgres') . ") || '|' || count(*) FILTER (WHERE status = 'done')"
	  . " FROM schedq.task WHERE id IN ($sleepers)",
	sub {
		my ($pids, $done) = split /\|/, $_[0], -1;
		$most = count_of($pids) if count_of($pids) > $most;
		return $done == 4;
	},
	20);
ok($r, '(a) four SQL tasks are done');
is($most, 2, '(a) by two executors at most (schedq.sql_workers default)');
note sprintf('(a) done after %.2f s', $r ? $r->[0] : -1);
is( $node->safe_psql('postgres',
		"SELECT string_agg(DISTINCT application_name || '/' || usesysid::regrole, ',')"
		  . " FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"),
	"schedq sql executor/$su",
	'(a) executors show as "schedq sql executor", connected as the superuser');
is($node->safe_psql('postgres', executors_of('other')),
	'', '(a) none for another database with schedq but no SQL task');
is($node->safe_psql('postgres', executors_of('plain')),
	'', '(a) none for a database without schedq');

set_workers(3);
$sleepers = $node->safe_psql('postgres',
	q{SELECT string_agg(schedq.submit_sql('SELECT pg_sleep(2)')::text, ',')}
	  . q{ FROM generate_series(1, 3)});
$r = poll_value($node, 'postgres', executors_of('postgres'),
	sub { count_of($_[0]) == 3 }, 10);
ok($r, '(a) after sql_workers = 3 and a reload, three executors run three tasks');
note sprintf('(a) three after %.2f s', $r ? $r->[0] : -1);
ok(wait_finished(20, split /,/, $sleepers), '(a) the three tasks finish');

set_workers(1);
$r = poll_value($node, 'postgres', executors_of('postgres'),
	sub { count_of($_[0]) == 1 }, 5);
ok($r, '(a) after sql_workers = 1 and a reload, one executor is left');
note sprintf('(a) one after %.2f s', $r ? $r->[0] : -1);

#
# Roles and tables.  u submits; v and w are for (f).
#
$node->safe_psql(
	'postgres', qq{
	CREATE ROLE u LOGIN;
	CREATE ROLE v LOGIN;
	CREATE ROLE w LOGIN;
	GRANT USAGE ON SCHEMA schedq TO u, v, w;
	GRANT EXECUTE ON FUNCTION schedq.submit_sql, schedq.cancel TO u, v, w;
	GRANT SELECT ON schedq.task TO u, v, w;
	CREATE TABLE public.secret (x int);
	CREATE TABLE public.mine (x int, who text);
	CREATE TABLE public.spans (xid bigint, t0 timestamptz, t1 timestamptz);
	CREATE TABLE public.runs (x int);
	ALTER TABLE public.mine OWNER TO u;
	ALTER TABLE public.spans OWNER TO u;
	ALTER TABLE public.runs OWNER TO u;
});

#
# (e) Backpressure: one executor, five tasks of 0.5 s each.  Each records
# the span of its statement in public.spans.
#
my $one = $node->safe_psql('postgres', executors_of('postgres'));
my $span_cmd = 'INSERT INTO public.spans VALUES (txid_current(), clock_timestamp());'
  . ' SELECT pg_sleep(0.5);'
  . ' UPDATE public.spans SET t1 = clock_timestamp() WHERE xid = txid_current()';
my $ids = $node->safe_psql('postgres',
	'SELECT string_agg(schedq.submit_sql($cmd$' . $span_cmd . '$cmd$)::text, \',\')'
	  . ' FROM generate_series(1, 5)',
	extra_params => [ '-U', 'u' ]);
my $start = time;
my ($max_running, $max_waiting, $max_active, $bad) = (0, 0, 0, '');
my $all_done = 0;
while (time - $start < 10)
{
	my $row = $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE status = 'running') || '|'"
		  . " || count(*) FILTER (WHERE status = 'available') || '|'"
		  . " || count(*) FILTER (WHERE status = 'done') || '|' || count(*) || '|'"
		  . " || (SELECT count(*) FROM pg_stat_activity"
		  . "     WHERE backend_type = 'schedq sql executor' AND state = 'active'"
		  . "     AND query LIKE '%pg_sleep(0.5)%')"
		  . " FROM schedq.task WHERE id IN ($ids)");
	my ($running, $waiting, $done, $total, $active) = split /\|/, $row;
	$max_running = $running if $running > $max_running;
	$max_waiting = $waiting if $waiting > $max_waiting;
	$max_active = $active if $active > $max_active;
	$bad = $row if $running + $waiting + $done != 5 || $total != 5;
	if ($done == 5) { $all_done = 1; last; }
	usleep(20_000);
}
my $took = time - $start;
ok($all_done, '(e) all five tasks end done');
note sprintf('(e) done after %.2f s', $took);
is($max_running, 1, '(e) at most one task ran at a time');
cmp_ok($max_waiting, '>=', 3, '(e) the others waited as available');
cmp_ok($max_active, '<=', 1, '(e) at most one executor was running a statement at a time');
is($bad, '', '(e) every task was running, available or done at every look (none dropped)');
is( $node->safe_psql('postgres',
		"SELECT count(*) || ':' || count(t1) || ':' || bool_and(t1 - t0 >= interval '0.5 s')"
		  . " || ':' || coalesce(bool_and(t0 >= prev), true)"
		  . " FROM (SELECT t0, t1, lag(t1) OVER (ORDER BY t0) AS prev FROM public.spans) s"),
	'5:5:true:true',
	'(e) the five statements ran one after another, never overlapping');
is($node->safe_psql('postgres', executors_of('postgres')),
	$one, '(e) by the one executor, which is still the same process');
# A task's started_at and finished_at span its statement: a 0.5 s command
# ends at least 0.5 s after it started (finished_at is when complete ran,
# not when the transaction that ran the command began).
is( $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE finished_at - started_at >= interval '0.5 s')"
		  . " FROM schedq.task WHERE id IN ($ids)"),
	'5', '(e) each task\'s finished_at is after its command ran');

set_workers(2);

#
# (b) Runs as the owner, with the owner's privileges and no more.
#
my %b;
$b{secret} = submit('u', 'INSERT INTO public.secret VALUES (1)', 'max_attempts => 1');
$b{mine} = submit('u', 'INSERT INTO public.mine VALUES (1, current_user)');
$b{set_role} = submit('u', "SET ROLE $su; INSERT INTO public.secret VALUES (2)",
	'max_attempts => 1');
$b{reset_auth} = submit('u',
	'RESET SESSION AUTHORIZATION; INSERT INTO public.secret VALUES (3)',
	'max_attempts => 1');
$b{set_auth} = submit('u',
	"SET SESSION AUTHORIZATION $su; INSERT INTO public.secret VALUES (4)",
	'max_attempts => 1');
$b{reset_role} = submit('u', 'RESET ROLE; INSERT INTO public.secret VALUES (5)',
	'max_attempts => 1');
$b{set_config} = submit('u',
	"SELECT set_config('role', '$su', false); INSERT INTO public.secret VALUES (6)",
	'max_attempts => 1');
$b{two} = submit('u', 'INSERT INTO public.mine VALUES (2, current_user), (3, current_user)');
ok(wait_finished(10, values %b), '(b) every task finishes');

like(task_row($b{secret}),
	qr/^failed\|1\|permission denied for table secret\|$/,
	'(b) a task writing a table its owner may not write fails: permission denied');
is(task_row($b{mine}), 'done|1||{"rows": 1}',
	'(b) a task writing a table its owner owns is done, result {"rows": 1}');
is(task_row($b{two}), 'done|1||{"rows": 2}', '(b) rows counts the rows of the command');
is($node->safe_psql('postgres', q{SELECT string_agg(x || ':' || who, ',' ORDER BY x) FROM public.mine}),
	'1:u,2:u,3:u', '(b) current_user in the task is its owner');
for my $k (qw(set_role reset_auth set_auth reset_role set_config))
{
	my $row = task_row($b{$k});
	like($row, qr/^failed\|1\|.*(cannot set parameter|permission denied)/,
		"(b) $k: the task cannot become another role");
	note "(b) $k: $row";
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.secret'),
	'0', '(b) public.secret is still empty: no task escalated');

#
# (c) Timeout: the statement is stopped at the task's timeout, even if the
# command sets statement_timeout = 0; the executor is free again.
#
my $t_sleep = submit('u', 'SELECT pg_sleep(30)', "timeout => '1 second', max_attempts => 1");
my $t_lift = submit('u', 'SET statement_timeout = 0; SELECT pg_sleep(30)',
	"timeout => '1 second', max_attempts => 1");
$r = poll_value($node, 'postgres',
	"SELECT status FROM schedq.task WHERE id = $t_sleep", 'failed', 5);
ok($r, '(c) a pg_sleep(30) task with timeout 1 s fails within 5 s');
note sprintf('(c) failed after %.2f s', $r ? $r->[0] : -1);
like(task_row($t_sleep),
	qr/^failed\|1\|(canceling statement due to statement timeout|timeout)\|$/,
	'(c) with last_error statement timeout (or the reaper\'s "timeout")');
note '(c) ' . task_row($t_sleep);
ok( poll_value($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $t_lift", 'failed', 5),
	'(c) so does one that sets statement_timeout = 0 first');
note '(c) ' . task_row($t_lift);
ok( poll_value($node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
		  . " AND state = 'active' AND query LIKE '%pg_sleep(30)%'",
		'0', 3),
	'(c) no executor is running them any more');
my $quick = submit('u', 'SELECT 1');
ok(poll_value($node, 'postgres', "SELECT status FROM schedq.task WHERE id = $quick", 'done', 3),
	'(c) a following quick task completes');

# A command that catches query_canceled (the statement timeout, then the
# reaper's interrupt) and goes on to write: each attempt is taken back by
# the reaper ('timeout'), so complete() refuses its stale grant; its
# writes must be rolled back with it, not committed by a task that failed.
my $t_swallow = submit('u',
	'DO $d$ BEGIN'
	  . ' BEGIN PERFORM pg_sleep(3); EXCEPTION WHEN query_canceled THEN NULL; END;'
	  . ' BEGIN PERFORM pg_sleep(3); EXCEPTION WHEN query_canceled THEN NULL; END;'
	  . ' INSERT INTO public.mine VALUES (20, current_user);'
	  . ' END $d$',
	"timeout => '1 second', max_attempts => 2");
$r = poll_value($node, 'postgres',
	"SELECT status || '|' || attempts || '|' || last_error FROM schedq.task WHERE id = $t_swallow",
	'failed|2|timeout', 10);
ok($r, '(c) a task that swallows its cancels times out at both attempts and fails');
ok( poll_value($node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
		  . " AND state = 'active' AND query LIKE 'DO %'",
		'0', 5),
	'(c) and its executor finished with it');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.mine WHERE x = 20'),
	'0', '(c) none of its timed-out attempts committed its writes');

#
# (d) Cancel of a running task interrupts its statement.
#
my $pids_before = $node->safe_psql('postgres', executors_of('postgres'));
my $t_cancel = submit('u', 'SELECT pg_sleep(60)');
$r = poll_value($node, 'postgres',
	"SELECT (SELECT status FROM schedq.task WHERE id = $t_cancel) || '|'"
	  . ' || (' . running_query('SELECT pg_sleep(60)') . ')',
	sub { $_[0] =~ /^running\|\d+$/ }, 5);
ok($r, '(d) the pg_sleep(60) task runs in an executor');
my $cancel_pid = $r ? (split /\|/, $r->[1])[1] : 0;
is($node->safe_psql('postgres', "SELECT schedq.cancel($t_cancel)",
		extra_params => [ '-U', 'u' ]),
	't', '(d) its owner cancels it: cancel() returns true');
$r = poll_value($node, 'postgres', running_query('SELECT pg_sleep(60)'), '', 3);
ok($r, '(d) within 3 s no executor runs pg_sleep(60) any more');
note sprintf('(d) statement stopped after %.2f s', $r ? $r->[0] : -1);
ok( poll_value($node, 'postgres',
		"SELECT state FROM pg_stat_activity WHERE pid = $cancel_pid", 'idle', 3),
	'(d) the executor that ran it is idle again');
is(task_row($t_cancel), 'canceled|1||', '(d) the task is canceled, no error recorded over it');
is($node->safe_psql('postgres', executors_of('postgres')),
	$pids_before, '(d) the same executors: none died or was restarted');
$quick = submit('u', 'INSERT INTO public.mine VALUES (10, current_user)');
ok(poll_value($node, 'postgres', "SELECT status FROM schedq.task WHERE id = $quick", 'done', 3),
	'(d) the next task runs');

# A command that catches the cancel and goes on to write: complete()
# refuses the stale grant of the canceled task, so its writes must be
# rolled back, not committed under a canceled task.
my $swallow_cmd = 'DO $d$ BEGIN'
  . ' BEGIN PERFORM pg_sleep(60); EXCEPTION WHEN query_canceled THEN NULL; END;'
  . ' INSERT INTO public.mine VALUES (11, current_user);'
  . ' END $d$';
$t_cancel = submit('u', $swallow_cmd);
$r = poll_value($node, 'postgres',
	"SELECT (SELECT status FROM schedq.task WHERE id = $t_cancel) || '|'"
	  . ' || (' . running_query($swallow_cmd) . ')',
	sub { $_[0] =~ /^running\|\d+$/ }, 5);
ok($r, '(d) a task that catches query_canceled runs');
$cancel_pid = $r ? (split /\|/, $r->[1])[1] : 0;
is($node->safe_psql('postgres', "SELECT schedq.cancel($t_cancel)",
		extra_params => [ '-U', 'u' ]),
	't', '(d) it is canceled');
ok( poll_value($node, 'postgres',
		"SELECT state FROM pg_stat_activity WHERE pid = $cancel_pid", 'idle', 3),
	'(d) its executor is done with it');
is(task_row($t_cancel), 'canceled|1||', '(d) the task stays canceled');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.mine WHERE x = 11'),
	'0', '(d) the writes of the canceled task were not committed');

#
# (f) An owner that lost LOGIN, or was dropped, fails its task for good.
# The task waits for its run_at; the role is changed while the task row is
# locked, so that no executor can claim it before.
#
my $t_v = submit('v', 'SELECT 1', "run_at => now() + interval '2 seconds'");
my $t_w = submit('w', 'SELECT 1', "run_at => now() + interval '2 seconds'");
is( $node->safe_psql(
		'postgres', qq{
	BEGIN;
	SELECT status FROM schedq.task WHERE id = $t_v FOR UPDATE;
	ALTER ROLE v NOLOGIN;
	COMMIT;
}), 'pending', '(f) v loses LOGIN before its task is due');
is( $node->safe_psql(
		'postgres', qq{
	BEGIN;
	SELECT status FROM schedq.task WHERE id = $t_w FOR UPDATE;
	DROP OWNED BY w;
	DROP ROLE w;
	COMMIT;
}), 'pending', '(f) w is dropped before its task is due (its task does not block DROP ROLE)');
ok(wait_finished(6, $t_v, $t_w), '(f) both tasks finish');
is(task_row($t_v),
	'failed|1|role "v" that submitted the task is not permitted to log in|',
	'(f) the task of a NOLOGIN role fails for good at its first attempt');
like(task_row($t_w),
	qr/^failed\|1\|the role that submitted the task \(OID \d+\) no longer exists\|$/,
	'(f) the task of a dropped role fails for good at its first attempt');

#
# (g) Crash mid-task.  The statement (5 s) outlives the executor's 2 s
# lease: the reaper extends the lease while the executor lives.  Then the
# executor is killed with SIGKILL; the cluster restarts, the lease expires,
# the second attempt completes.
#
my $g_cmd = 'SELECT pg_sleep(5); INSERT INTO public.runs VALUES (1)';
my $t_g = submit('u', $g_cmd, 'max_attempts => 3');
$r = poll_value($node, 'postgres',
	"SELECT t.status || '|' || t.attempts || '|' || t.lease || '|' || t.claimed_by || '|'"
	  . " || extract(epoch FROM t.lease_expires_at) || '|' || ("
	  . running_query($g_cmd) . ") FROM schedq.task t WHERE t.id = $t_g",
	sub { $_[0] =~ /^running\|1\|.*\|\d+$/ }, 5);
ok($r, '(g) the task runs in an executor');
my ($status, $attempts, $lease, $claimed_by, $expires, $g_pid) =
  $r ? split(/\|/, $r->[1]) : ('', 0, '', '', 0, 0);
is($lease, '00:00:02', '(g) with the 2 s schedq.default_lease');
is($claimed_by, "schedq sql executor $g_pid", '(g) claimed by the executor running it');

# Until the reaper has extended the lease, the attempt stays the first,
# running, in that one executor.
my ($held, $twice) = (1, 0);
$r = poll_value(
	$node, 'postgres',
	"SELECT t.status || '|' || t.attempts || '|' || extract(epoch FROM t.lease_expires_at)"
	  . " || '|' || (" . running_query($g_cmd) . ") FROM schedq.task t WHERE t.id = $t_g",
	sub {
		my ($s, $a, $e, $p) = split /\|/, $_[0];
		$held = 0 unless $s eq 'running' && $a == 1 && $p eq $g_pid;
		$twice = 1 if $p =~ /,/;
		return $e > $expires;
	},
	4);
ok($r, '(g) after the 2 s lease expired, the reaper extended it');
note sprintf('(g) lease extended %.2f s after the first look', $r ? $r->[0] : -1);
ok($held, '(g) meanwhile the task stayed running, attempt 1, in its executor');
is($node->safe_psql('postgres', running_query($g_cmd)),
	$g_pid, '(g) the executor is still in the statement');

my $offset = -s $node->logfile;
kill 'KILL', $g_pid;
ok( eval {
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
		1;
	},
	'(g) killing the executor with SIGKILL makes the postmaster reinitialize');

my $taken_back = 0;
$r = poll_value(
	$node, 'postgres',
	"SELECT t.status || '|' || t.attempts || '|' || coalesce(t.last_error, '') || '|' || ("
	  . running_query($g_cmd) . ") FROM schedq.task t WHERE t.id = $t_g",
	sub {
		my ($s, $a, $e, $p) = split /\|/, $_[0];
		$taken_back = 1 if $s ne 'running' && $a == 1 && $e eq 'lease expired';
		$twice = 1 if defined $p && $p =~ /,/;
		return $s eq 'done';
	},
	20);
ok($r, '(g) after the restart the task is retried and completes');
note sprintf('(g) done %.2f s after the kill', $r ? $r->[0] : -1);
like(task_row($t_g), qr/^done\|2\|[^|]*\|\{"rows": 1\}$/,
	'(g) at its second attempt');
note '(g) ' . task_row($t_g);
ok($taken_back, '(g) in between, the first attempt was taken back: "lease expired"');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.runs'),
	'1', '(g) public.runs has one row: the killed attempt never committed');
ok(!$twice, '(g) never were two executors running the task');
cmp_ok(count_of($node->safe_psql('postgres', executors_of('postgres'))), '<=', 2,
	'(g) at most two executors run after the restart');

#
# (h) The owner's session settings stay with its task.  With one
# executor, role o records some settings, u's task changes them (and puts
# its own schema first in search_path, where it has a function shadowing
# the jsonb_build_object the executor calls to record the result), then o
# records them again.  Nothing u set may reach o's task, and nothing may
# run u's function with the executor's (superuser) privileges.  Last,
# because the failure leaves the executor in u's settings.
#
set_workers(1);
ok(poll_value($node, 'postgres', executors_of('postgres'), sub { count_of($_[0]) <= 1 }, 5),
	'(h) one executor at most');
$node->safe_psql(
	'postgres', qq{
	CREATE ROLE o LOGIN;
	GRANT USAGE ON SCHEMA schedq TO o;
	GRANT EXECUTE ON FUNCTION schedq.submit_sql TO o;
	GRANT SELECT ON schedq.task TO o;
	CREATE TABLE public.settings (k text, tz text, ds text, sp text);
	ALTER TABLE public.settings OWNER TO o;
	CREATE TABLE public.escalated (who text);
	GRANT INSERT ON public.escalated TO PUBLIC;
	CREATE SCHEMA uschema AUTHORIZATION u;
});
$node->safe_psql(
	'postgres', q{
	CREATE FUNCTION uschema.jsonb_build_object(text, bigint) RETURNS jsonb
	LANGUAGE plpgsql AS $f$
	BEGIN
		INSERT INTO public.escalated VALUES (current_user);
		RETURN pg_catalog.jsonb_build_object($1, $2);
	END $f$;
}, extra_params => [ '-U', 'u' ]);
my $record = q{INSERT INTO public.settings VALUES ('%s', current_setting('TimeZone'),}
  . q{ current_setting('DateStyle'), current_setting('search_path'))};
my @h;
push @h, submit('o', sprintf($record, 'before'));
push @h, submit('u',
	"SET TimeZone = 'Asia/Tokyo'; SET DateStyle = 'SQL, DMY';"
	  . ' SET search_path = uschema, pg_catalog; SELECT 1');
push @h, submit('o', sprintf($record, 'after'));
ok(wait_finished(10, @h), '(h) the three tasks finish');
is(task_row($h[1]), 'done|1||{"rows": 1}', "(h) u's task is done");
is($node->safe_psql('postgres', q{SELECT count(*) FROM public.escalated}),
	'0', "(h) u's function never ran in the executor's context");
note '(h) escalated: '
  . $node->safe_psql('postgres', q{SELECT string_agg(who, ',') FROM public.escalated});
my $settings = $node->safe_psql('postgres',
	q{SELECT string_agg(k || ': ' || tz || ' / ' || ds || ' / ' || sp, E'\n' ORDER BY k DESC)}
	  . q{ FROM public.settings});
my ($before, $after) = map { s/^\w+: //r } split /\n/, $settings;
is($after, $before, "(h) o's task after u's runs with the same settings as before it");
note "(h) settings:\n$settings";

#
# (i) Errors no retry can cure fail the task at once, whatever attempts
# are left (max_attempts is the default 5); the others are retried.
#
my %final = (
	'division by zero' => [ 'SELECT 1/0', qr/^division by zero$/ ],
	'a syntax error' => [ 'SELEC 1', qr/^syntax error at or near "SELEC"$/ ],
	'an unknown table' => [ 'SELECT * FROM public.nowhere', qr/^relation "public.nowhere" does not exist$/ ],
	'permission denied' => [ 'INSERT INTO public.secret VALUES (7)', qr/^permission denied for table secret$/ ],
	'a bad input value' => [ q{SELECT 'x'::int}, qr/^invalid input syntax for type integer: "x"$/ ],
	'a command that cannot run in a transaction' => [ 'VACUUM public.mine', qr/^VACUUM cannot (run inside a transaction block|be executed from a function)$/ ],
);
my %i = map { $_ => submit('u', $final{$_}[0]) } keys %final;
# Retried: serialization failure, deadlock, the command's own RAISE, a
# lock not available.  max_attempts 2 and retries at once: attempts 2.
my %retried = (
	'a serialization failure (40001)' => q{DO $$BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END$$},
	'a deadlock (40P01)' => q{DO $$BEGIN RAISE EXCEPTION 'deadlock' USING ERRCODE = '40P01'; END$$},
	'a RAISE of its own (P0001)' => q{DO $$BEGIN RAISE EXCEPTION 'not yet'; END$$},
	'a lock not available (55P03)' => q{DO $$BEGIN RAISE EXCEPTION 'busy' USING ERRCODE = '55P03'; END$$},
);
my %j = map { $_ => submit('u', $retried{$_}, 'max_attempts => 2') } keys %retried;
ok(wait_finished(30, values %i, values %j), '(i) every task finishes');
for my $k (sort keys %final)
{
	my ($status, $attempts, $error) = split /\|/, task_row($i{$k});
	is("$status|$attempts", 'failed|1', "(i) $k fails for good at its first attempt of 5");
	like($error, $final{$k}[1], "(i) ... with its error in last_error");
}
for my $k (sort keys %retried)
{
	like(task_row($j{$k}), qr/^failed\|2\|/, "(i) $k is retried: failed after 2 attempts of 2");
}

$node->stop;

done_testing();

#-------------------------------------------------------------------------
# test/t/017_hostile_locks.pl
#	  Nobody can stop the scheduler by holding a lock.
#
#	  (a) A role with nothing but CONNECT takes, with pg_advisory_lock,
#	      every advisory key in the space schedq's locks used to live in
#	      (class 0x53510000 of pg_advisory_lock(int4, int4), and the same
#	      numbers as int8 keys).  Promotion, periodic ticks and the reaper
#	      of the database go on, and the scheduler stays the same process.
#	  (b) A session that ran schedq._promote_once() and keeps its
#	      transaction open holds the promotion lock: the scheduler skips
#	      promotion meanwhile, but does not wait for it -- periodic ticks
#	      and the reaper go on -- and promotes again once it is released.
#	  (c) A superuser's idle transaction holds FOR UPDATE the row of a
#	      parked task that a gate event asks the pass to unpark: the pass
#	      gives up on those events after its lock timeout (a WARNING), the
#	      scheduler stays the same process, other tasks are promoted, and
#	      the parked task follows once the row is released.
#	  (d) With the squatter waiting on what was the scheduler's own key, a
#	      scheduler that was terminated is started again and stays.
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

my $node = schedq_node('hostile_locks', extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.reaper_interval = '200ms'
schedq.sql_workers = 0
});
$node->safe_psql('postgres', 'CREATE ROLE squatter LOGIN');

my $scheduler_pid = "SELECT pid FROM pg_stat_activity"
  . " WHERE backend_type = 'schedq scheduler' AND datname = 'postgres'";
ok( defined poll_until(
		$node, 'postgres',
		"SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'idle', 10),
	'the scheduler of postgres is up');
my $pid = $node->safe_psql('postgres', $scheduler_pid);

# A task due in half a second, in its own queue; returns its id.
sub due_task
{
	my ($queue) = @_;
	return $node->safe_psql('postgres',
		"SELECT schedq.submit('t', queue => '$queue',"
		  . " run_at => now() + interval '500 ms')");
}

# Wait up to $timeout seconds for the server log, from $offset on, to
# match $re.
sub log_matches
{
	my ($re, $offset, $timeout) = @_;
	my $start = time;

	while (time - $start < $timeout)
	{
		return 1 if slurp_file($node->logfile, $offset) =~ $re;
		usleep(100_000);
	}
	return 0;
}

sub status_of
{
	my ($id) = @_;
	return "SELECT status FROM schedq.task WHERE id = $id";
}

# Ticks of the schedule 'tick' so far: fired, or skipped because its last
# task was still there (nobody claims them).
sub ticks
{
	return $node->safe_psql('postgres',
		"SELECT fired + skipped FROM schedq.periodic WHERE name = 'tick'");
}

# Checks that promotion, periodic ticks and the reaper all work.
sub all_passes_work
{
	my ($what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	my $id = due_task("pass_$what");
	ok(defined poll_until($node, 'postgres', status_of($id), 'available', 10),
		"($what) a task due in 500 ms is promoted");

	my $ticks = ticks();
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT fired + skipped >= $ticks + 2 FROM schedq.periodic"
			  . " WHERE name = 'tick'",
			't', 10),
		"($what) a schedule of every second ticks twice more");

	my $claimed = $node->safe_psql('postgres',
		"SELECT id FROM schedq.claim('w', queues => '{pass_$what}',"
		  . " lease => '1 second')");
	is($claimed, $id, "($what) the task is claimed with a lease of 1 s");
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT status <> 'running' AND last_error = 'lease expired'"
			  . " FROM schedq.task WHERE id = $id",
			't', 10),
		"($what) the reaper takes the expired lease back");
}

$node->safe_psql('postgres',
	"SELECT schedq.schedule('tick', '\@every 1s', 'tick')");

#
# (a) A role with only CONNECT squats the advisory keys schedq used.
#
my $squatter = $node->background_psql('postgres',
	extra_params => [ '-U', 'squatter' ]);
$squatter->query_safe(
	    "SELECT pg_advisory_lock(1397817344, k), pg_advisory_lock(k::bigint),"
	  . " pg_advisory_lock((1397817344::bigint << 32) | k)"
	  . " FROM generate_series(0, 2) k");
# What was the scheduler's own key: the scheduler holds it while it lives
# (before the fix), so take it in a second session that waits for it.
my $squatter2 = $node->background_psql('postgres',
	extra_params => [ '-U', 'squatter' ], on_error_stop => 0);
$squatter2->query_until(qr/waiting/,
	"\\echo waiting\nSELECT pg_advisory_lock(1397817344, k) FROM generate_series(3, 8) k;\n");
is( $node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
		  . " WHERE l.locktype = 'advisory' AND l.granted AND a.usename = 'squatter'"),
	't', '(a) the squatter holds advisory locks');
all_passes_work('a');
is($node->safe_psql('postgres', $scheduler_pid),
	$pid, '(a) the scheduler is the same process');

#
# (b) Another session holds the promotion lock in an open transaction.
#
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe('SELECT schedq._promote_once(now())');
my $held = due_task('q_b');
my $ticks = ticks();
ok( defined poll_until(
		$node, 'postgres',
		"SELECT fired + skipped >= $ticks + 2 FROM schedq.periodic"
		  . " WHERE name = 'tick'",
		't', 10),
	'(b) while the promotion lock is held, periodic ticks go on');
is($node->safe_psql('postgres', status_of($held)),
	'pending', '(b) and the due task waits for the lock');
$holder->query_safe('COMMIT');
ok(defined poll_until($node, 'postgres', status_of($held), 'available', 10),
	'(b) once the lock is released the task is promoted');
is($node->safe_psql('postgres', $scheduler_pid),
	$pid, '(b) the scheduler is the same process');

#
# (c) A superuser's idle transaction holds the row of a parked task that
# a gate event asks the pass to unpark.
#
my $first = $node->safe_psql('postgres',
	"SELECT schedq.submit('c', queue => 'q_c', lock_key => 'k')");
my $second = $node->safe_psql('postgres',
	"SELECT schedq.submit('c', queue => 'q_c', lock_key => 'k')");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT string_agg(status || ':' || parked, ',' ORDER BY id)"
		  . " FROM schedq.task WHERE id IN ($first, $second)",
		'available:false,pending:true', 10),
	'(c) the head of lock key k is available, the second task parked');
my $token = $node->safe_psql('postgres',
	"SELECT token FROM schedq.claim('w', queues => '{q_c}')");
$holder->query_safe('BEGIN');
$holder->query_safe("SELECT FROM schedq.task WHERE id = $second FOR UPDATE");
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT schedq.complete('$token')");
my $other = due_task('q_c2');
ok(defined poll_until($node, 'postgres', status_of($other), 'available', 15),
	'(c) with the parked row locked, another task is still promoted');
ok(log_matches(qr/WARNING:.*lock timeout/, $log_offset, 15),
	'(c) the pass that needed the row gave up with a WARNING');
is($node->safe_psql('postgres', status_of($second)),
	'pending', '(c) the locked task is still pending');
is($node->safe_psql('postgres', $scheduler_pid),
	$pid, '(c) the scheduler is the same process');
$holder->query_safe('COMMIT');
ok(defined poll_until($node, 'postgres', status_of($second), 'available', 30),
	'(c) once the row is released, the parked task is promoted');
all_passes_work('c');

#
# (d) The squatter waits on what was the scheduler's own key; the
# scheduler is terminated and started again by the launcher.
#
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'"
		  . " AND datname = 'postgres' AND pid <> $pid",
		'1', 10),
	'(d) a new scheduler is started');
my $new_pid = $node->safe_psql('postgres', $scheduler_pid);
is(stays($node, 'postgres', $scheduler_pid, $new_pid, 3),
	undef, '(d) and stays, the same process, for 3 s');
unlike(
	slurp_file($node->logfile, $log_offset),
	qr/another scheduler serves database/,
	'(d) no scheduler left because another seemed to serve the database');
$pid = $new_pid;
all_passes_work('d');
is($node->safe_psql('postgres', $scheduler_pid),
	$pid, '(d) the scheduler is the same process');

$squatter->quit;
$squatter2->quit;
$holder->quit;
$node->stop;

done_testing();

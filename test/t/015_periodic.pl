#-------------------------------------------------------------------------
# test/t/015_periodic.pl
#	  Periodic tasks through the live scheduler:
#
#	  (a) a '* * * * * *' schedule whose tasks a consumer completes at once
#	      fires every second: distinct run_at values, each a whole second,
#	      consecutive ticks 1 s apart from the first tick after the
#	      schedule was made, none missing or skipped, each task created
#	      within 500 ms of its run_at (a few ms is usual; the bound leaves
#	      room for a slow machine).  promote_interval is 10 s here, so
#	      only the scheduler sleeping until the next tick explains that.
#	  (b) a schedule whose task is never finished fires once, then skips
#	      (skipped and the periodic_skipped_overlap metric grow, one live
#	      task); once that task is done, the next tick fires again.
#	  (c) crashes around ticks: the scheduler is killed with SIGKILL five
#	      times (three of them a few milliseconds after a whole second,
#	      while the tick is being fired; two at random moments), then the
#	      server is stopped with -m immediate for ~3 s and started again.
#	      No tick fires twice, periodic.fired matches the tasks made, and
#	      the ticks missed while the server was down fire once, not once
#	      each: the first tick after the restart is the one due during the
#	      downtime, then the cadence resumes after the restart.
#	  (d) a schedule whose next_run is an hour in the past fires exactly
#	      once when the scheduler wakes, and its next_run moves to the
#	      future.
#	  (e) with a streaming standby: the standby fires nothing (no schedq
#	      worker, its periodic metrics stay 0, its tasks are exactly the
#	      primary's after catch-up); once promoted, it fires the schedule.
#
#	  The consumers are psql sessions running a file of
#	    SELECT schedq.complete(token) FROM schedq.claim(..., wait => '1 s')
#	  statements: claim and complete commit together, the claim wakes on
#	  the tick's commit, so a tick's task is done well before the next
#	  tick.  Waiting is done by polling with deadlines; the only sleeps
#	  place a fault at a chosen moment (c) or make a downtime (c).
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time usleep);

my $max_lateness = 0.5;

my $dir = PostgreSQL::Test::Utils::tempdir;

# A consumer of $queue on $node: psql running claim+complete statements,
# each waiting up to 1 s for a task.  It exits by itself when its
# connection is lost (crash, immediate stop); stop_consumer ends it.
sub start_consumer
{
	my ($node, $queue) = @_;
	my $file = "$dir/consumer_$queue.sql";
	if (!-e $file)
	{
		open(my $fh, '>', $file) or die "$file: $!";
		print $fh "SELECT schedq.complete(token) FROM schedq.claim('c_$queue',"
		  . " queues => '{$queue}', lease => '2 seconds', wait => '1 second');\n"
		  for 1 .. 5000;
		close $fh;
	}
	return IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'), '-f', $file
		],
		'<', \undef, '>', '/dev/null', '2>', "$dir/consumer_$queue.err");
}

sub stop_consumer
{
	my ($h) = @_;
	return unless $h;
	eval { $h->kill_kill; };
	eval { $h->finish; };
}

my $node = schedq_node('periodic', extension => 'postgres', conf => qq{
max_worker_processes = 32
restart_after_crash = on
schedq.enabled = on
schedq.promote_interval = '10s'
schedq.reaper_interval = '100ms'
});
ok( poll_value(
		$node, 'postgres',
		"SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'idle', 10),
	'the scheduler of postgres is up and idle');

my $scheduler_pid = "SELECT coalesce(string_agg(pid::text, ','), '')"
  . " FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'"
  . " AND datname = 'postgres'";

#
# (a) every second, on the second, none missing; and (b) never
# overlapping.  Both schedules run side by side.
#
my $fired0 = metric($node, 'periodic_fired');
my $skipped0 = metric($node, 'periodic_skipped_overlap');
my $consumer = start_consumer($node, 'a');
# the consumer's claim is waiting before the first tick
ok( poll_value(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension'"
		  . " AND state = 'active' AND query LIKE '%claim(''c_a''%'"
		  . " AND pid <> pg_backend_pid()",
		'1', 10),
	'(a) the consumer waits in claim');
my ($t_sched0, undef, undef, $t_sched1) = split /\|/,
  $node->safe_psql(
	'postgres', q{
	SELECT floor(extract(epoch FROM clock_timestamp())),
	       schedq.schedule('a', '* * * * * *', 'tick', queue => 'a'),
	       schedq.schedule('ov', '* * * * * *', 'tick', queue => 'ov'),
	       floor(extract(epoch FROM clock_timestamp()))});

my $r = poll_value($node, 'postgres',
	"SELECT fired >= 6 FROM schedq.periodic WHERE name = 'a'", 't', 20);
ok($r, '(a) the schedule fired 6 times');
$r = poll_value($node, 'postgres',
	"SELECT skipped >= 3 FROM schedq.periodic WHERE name = 'ov'", 't', 10);
ok($r, '(b) the never-finished schedule skipped 3 ticks');
# Stop (a) (ov runs on until (b) is checked); what (a) made is checked below.
$node->safe_psql('postgres',
	"SELECT schedq.schedule('a', '* * * * * *', 'tick', queue => 'a', enabled => false)");
my ($a_fired, $a_skipped) = split /\|/,
  $node->safe_psql('postgres', "SELECT fired, skipped FROM schedq.periodic WHERE name = 'a'");
ok( poll_value(
		$node, 'postgres',
		"SELECT count(*) FILTER (WHERE status <> 'done') FROM schedq.task WHERE periodic = 'a'",
		'0', 5),
	'(a) every task of the schedule was completed by the consumer');
stop_consumer($consumer);

my $a_tasks = "SELECT run_at, created_at, status,"
  . " run_at - lag(run_at) OVER (ORDER BY run_at) AS step,"
  . " extract(epoch FROM created_at - run_at) AS late"
  . " FROM schedq.task WHERE periodic = 'a'";
my ($n, $ndistinct, $whole, $one_s, $min_late, $max_late, $avg_late, $first) =
  split /\|/,
  $node->safe_psql(
	'postgres', qq{
	SELECT count(*), count(DISTINCT run_at),
	       count(*) FILTER (WHERE run_at = date_trunc('second', run_at)),
	       count(*) FILTER (WHERE step = interval '1 second'),
	       round(min(late) * 1000, 3), round(max(late) * 1000, 3),
	       round(avg(late) * 1000, 3), extract(epoch FROM min(run_at))::bigint
	  FROM ($a_tasks) t});
note "(a) $n ticks, lateness created_at - run_at: min $min_late ms,"
  . " avg $avg_late ms, max $max_late ms";
ok($n >= 6, "(a) at least 6 tasks were made ($n)");
is($n, $a_fired, '(a) periodic.fired counts every task');
is($a_skipped, '0', '(a) no tick was skipped (each task was done in time)');
is($ndistinct, $n, '(a) every task has its own run_at');
is($whole, $n, '(a) every run_at is a whole second');
is($one_s, $n - 1, '(a) consecutive ticks are 1 s apart: none missing')
  or diag $node->safe_psql('postgres', "SELECT * FROM ($a_tasks) t ORDER BY run_at");
ok($first == $t_sched0 + 1 || $first == $t_sched1 + 1,
	'(a) the first tick is the first whole second after the schedule was made')
  or diag "first tick $first, schedule made in second $t_sched0..$t_sched1";
ok($min_late >= 0, '(a) no task was made before its tick');
ok($max_late < $max_lateness * 1000,
	"(a) every task was made within $max_lateness s of its tick (max $max_late ms)")
  or diag $node->safe_psql('postgres', "SELECT * FROM ($a_tasks) t ORDER BY run_at");

# (b): one live task, fired once, the skips counted.
my ($ov_tasks, $ov_status, $ov_fired, $ov_skipped, $ov_last) = split /\|/,
  $node->safe_psql(
	'postgres', q{
	SELECT (SELECT count(*) FROM schedq.task WHERE periodic = 'ov'),
	       (SELECT string_agg(status, ',') FROM schedq.task WHERE periodic = 'ov'),
	       p.fired, p.skipped,
	       p.last_task_id = (SELECT max(id) FROM schedq.task WHERE periodic = 'ov')
	  FROM schedq.periodic p WHERE name = 'ov'});
is($ov_tasks, '1', '(b) only one task was made');
is($ov_status, 'available', '(b) and it is still live');
is($ov_fired, '1', '(b) fired is 1');
ok($ov_skipped >= 3, "(b) skipped grows ($ov_skipped)");
is($ov_last, 't', '(b) last_task_id is that task');
ok(metric($node, 'periodic_skipped_overlap') - $skipped0 >= 3,
	'(b) the periodic_skipped_overlap metric counts the skips');
ok(metric($node, 'periodic_fired') - $fired0 >= $n + 1,
	'(a, b) the periodic_fired metric counts the ticks fired');
# Once the task is done, the next tick fires again.
is( $node->safe_psql('postgres',
		"SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{ov}')"),
	't', '(b) the live task is completed');
ok( poll_value(
		$node, 'postgres',
		"SELECT fired || ':' || (SELECT count(*) FROM schedq.task WHERE periodic = 'ov')"
		  . " FROM schedq.periodic WHERE name = 'ov'",
		'2:2', 5),
	'(b) the next tick after the task is done fires');
$node->safe_psql('postgres', "SELECT schedq.unschedule('ov'), schedq.unschedule('a')");

#
# (c) Crashes around ticks.
#
$consumer = start_consumer($node, 'cr');
$node->safe_psql('postgres', "SELECT schedq.schedule('cr', '* * * * * *', 'tick', queue => 'cr')");
ok(poll_value($node, 'postgres', "SELECT fired >= 2 FROM schedq.periodic WHERE name = 'cr'", 't', 10),
	'(c) the schedule fires');

my $cr_fired = "SELECT fired FROM schedq.periodic WHERE name = 'cr'";
my @offsets = ((map { rand(0.008) } 1 .. 3), (map { rand(1) } 1 .. 2));
my $restarts = 0;
for my $i (1 .. @offsets)
{
	my $off = $offsets[ $i - 1 ];
	my $pid = $node->safe_psql('postgres', $scheduler_pid);
	my $before = $node->safe_psql('postgres', $cr_fired);
	# place the kill $off s after the next whole second
	my $at = int(time) + 1 + $off;
	Time::HiRes::sleep($at - time) if $at > time;
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	note sprintf('(c) kill %d: SIGKILL to scheduler %s at +%.1f ms after the second',
		$i, $pid, $off * 1000);
	ok( eval {
			$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
			1;
		},
		"(c) kill $i: the postmaster reinitializes");
	$restarts++;
	stop_consumer($consumer);
	$r = poll_value($node, 'postgres', $scheduler_pid,
		sub { $_[0] =~ /^\d+$/ && $_[0] ne $pid }, 30);
	ok($r, "(c) kill $i: a new scheduler runs");
	$consumer = start_consumer($node, 'cr');
	ok( poll_value(
			$node, 'postgres', $cr_fired, sub { $_[0] >= $before + 2 }, 15),
		"(c) kill $i: the schedule fires again");
}

# An immediate stop of about 3 s, made while no tick is being fired and
# the last tick's task is done.
ok( poll_value(
		$node, 'postgres',
		"SELECT t.status = 'done' AND extract(epoch FROM clock_timestamp())"
		  . "  - floor(extract(epoch FROM clock_timestamp())) BETWEEN 0.3 AND 0.6"
		  . "  AND t.run_at = date_trunc('second', clock_timestamp())"
		  . " FROM schedq.periodic p JOIN schedq.task t ON t.id = p.last_task_id"
		  . " WHERE p.name = 'cr'",
		't', 10),
	'(c) the last tick is done, the next is ~0.5 s away');
my $t_stop = time;
$node->stop('immediate');
stop_consumer($consumer);
Time::HiRes::sleep(3.2);
my $t_start = time;
$node->start;
$restarts++;
$consumer = start_consumer($node, 'cr');
ok( poll_value(
		$node, 'postgres',
		"SELECT count(*) >= 3 FROM schedq.task WHERE periodic = 'cr'"
		  . " AND created_at >= to_timestamp($t_start)",
		't', 15),
	'(c) after the immediate stop, the schedule fires again');
$node->safe_psql('postgres',
	"SELECT schedq.schedule('cr', '* * * * * *', 'tick', queue => 'cr', enabled => false)");
stop_consumer($consumer);

is( $node->safe_psql(
		'postgres', q{
	SELECT coalesce(string_agg(run_at || ' x' || n, ', '), '') FROM (
	  SELECT run_at, count(*) AS n FROM schedq.task WHERE periodic = 'cr'
	   GROUP BY run_at HAVING count(*) > 1) d}),
	'',
	'(c) no tick fired twice');
is( $node->safe_psql(
		'postgres', q{
	SELECT p.fired = (SELECT count(*) FROM schedq.task WHERE periodic = 'cr')
	  FROM schedq.periodic p WHERE p.name = 'cr'}),
	't',
	'(c) periodic.fired equals the tasks made (each tick and its count commit together)');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM schedq.task WHERE periodic = 'cr'"
		  . " AND run_at <> date_trunc('second', run_at)"),
	'0', '(c) every run_at is a whole second');
my $late = $node->safe_psql('postgres',
	"SELECT count(*) FROM schedq.task WHERE periodic = 'cr'"
	  . " AND created_at - run_at > interval '$max_lateness seconds'");
ok($late <= $restarts,
	"(c) at most one late (catch-up) tick per restart: $late late ticks, $restarts restarts");
note "(c) ticks: " . $node->safe_psql('postgres',
	"SELECT count(*) || ' tasks, ' || (SELECT skipped FROM schedq.periodic WHERE name = 'cr')"
	  . " || ' skipped' FROM schedq.task WHERE periodic = 'cr'");

# The immediate stop in detail.  T = the last tick before the stop.
my $window = $node->safe_psql(
	'postgres', qq{
	SELECT string_agg(to_char(run_at, 'HH24:MI:SS') || ' +'
	                  || round(extract(epoch FROM created_at - run_at) * 1000) || 'ms', ' '
	                  ORDER BY run_at)
	  FROM schedq.task WHERE periodic = 'cr'
	   AND run_at >= to_timestamp($t_stop) - interval '2 seconds'});
note "(c) ticks around the immediate stop (stop at +0 s, start at +"
  . sprintf('%.1f', $t_start - $t_stop) . " s): $window";
my ($last_before, $catchup, $n_down, $after_ok) = split /\|/,
  $node->safe_psql(
	'postgres', qq{
	WITH t AS (SELECT * FROM schedq.task WHERE periodic = 'cr'),
	     before AS (SELECT max(run_at) AS t FROM t WHERE created_at < to_timestamp($t_stop)),
	     after AS (SELECT * FROM t WHERE created_at >= to_timestamp($t_start))
	SELECT (SELECT t FROM before) = date_trunc('second', to_timestamp($t_stop)),
	       (SELECT min(run_at) FROM after) = (SELECT t FROM before) + interval '1 second',
	       (SELECT count(*) FROM t WHERE run_at > to_timestamp($t_stop)
	          AND run_at < to_timestamp($t_start)),
	       (SELECT count(*) FROM after WHERE run_at >= to_timestamp($t_start))
	         = (SELECT count(*) - 1 FROM after)});
is($last_before, 't', '(c) the last tick before the stop is the second of the stop');
is($catchup, 't',
	'(c) the first tick after the restart is the next one, due during the downtime');
is($n_down, '1', '(c) of the ticks due during the downtime, exactly one fired');
is($after_ok, 't', '(c) every later tick is due after the restart (no burst)');
$node->safe_psql('postgres', "SELECT schedq.unschedule('cr')");
unlike(
	PostgreSQL::Test::Utils::slurp_file($node->logfile),
	qr/could not fire/,
	'(c) no periodic task failed to fire');

#
# (d) next_run an hour in the past: fires once, next_run moves ahead.
# The UPDATE does not wake the scheduler (and promote_interval is 10 s); a
# submit of a pending task does.
#
$node->safe_psql('postgres', "SELECT schedq.schedule('past', '0 0 1 1 *', 'yearly', queue => 'past')");
my $due = $node->safe_psql('postgres',
	"UPDATE schedq.periodic SET next_run = date_trunc('second', now()) - interval '1 hour'"
	  . " WHERE name = 'past' RETURNING extract(epoch FROM next_run)");
$node->safe_psql('postgres',
	"SELECT schedq.submit('wake', queue => 'wake', run_at => now() + interval '1 hour')");
ok( poll_value($node, 'postgres', "SELECT fired FROM schedq.periodic WHERE name = 'past'", '1', 5),
	'(d) the overdue schedule fires');
# Let the scheduler make another pass: a task due in 300 ms is promoted
# by a pass that runs after the tick fired.  Still once.
my $wake = $node->safe_psql('postgres',
	"SELECT schedq.submit('wake', queue => 'wake', run_at => now() + interval '300 ms')");
ok( poll_value(
		$node, 'postgres', "SELECT status <> 'pending' FROM schedq.task WHERE id = $wake",
		't', 5),
	'(d) the scheduler made another pass');
my ($d_count, $d_run_at, $d_fired, $d_next, $d_last) = split /\|/,
  $node->safe_psql(
	'postgres', q{
	SELECT count(*), extract(epoch FROM min(t.run_at)), p.fired,
	       p.next_run > now() AND p.next_run = schedq._next_run('0 0 1 1 *', 'UTC', now()),
	       extract(epoch FROM p.last_run)
	  FROM schedq.periodic p LEFT JOIN schedq.task t ON t.periodic = p.name
	 WHERE p.name = 'past' GROUP BY p.fired, p.next_run, p.last_run});
is($d_count, '1', '(d) exactly one task was made');
is($d_fired, '1', '(d) fired is 1');
is($d_run_at, $due, '(d) its run_at is the overdue tick');
is($d_last, $due, '(d) last_run is the overdue tick');
is($d_next, 't', '(d) next_run moved to the next tick in the future');
$node->safe_psql('postgres', "SELECT schedq.unschedule('past')");

$node->stop;

#
# (e) A streaming standby fires nothing; once promoted, it fires.
#
my $primary = schedq_node(
	'primary',
	init => { allows_streaming => 1 },
	extension => 'postgres',
	conf => qq{
max_worker_processes = 32
schedq.reaper_interval = '100ms'
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

$consumer = start_consumer($primary, 'sb');
$primary->safe_psql('postgres',
	"SELECT schedq.schedule('sb', '* * * * * *', 'tick', queue => 'sb')");
ok( poll_value(
		$primary, 'postgres', "SELECT fired >= 3 FROM schedq.periodic WHERE name = 'sb'",
		't', 10),
	'(e) the primary fires the schedule');
# Without the consumer, the last task stays live and the next tick is
# skipped: from then on, the primary makes no more tasks.
stop_consumer($consumer);
ok( poll_value(
		$primary, 'postgres',
		"SELECT p.skipped >= 1 AND t.status = 'available'"
		  . " FROM schedq.periodic p JOIN schedq.task t ON t.id = p.last_task_id"
		  . " WHERE p.name = 'sb'",
		't', 10),
	'(e) the primary skips ticks now: its tasks are final');
$primary->wait_for_catchup($standby);

my $tasks_sb = "SELECT count(*) || ':' || coalesce(max(id), 0) || ':'"
  . " || md5(coalesce(string_agg(id || ':' || run_at, ',' ORDER BY id), ''))"
  . " FROM schedq.task WHERE periodic = 'sb'";
my $on_primary = $primary->safe_psql('postgres', $tasks_sb);
is($standby->safe_psql('postgres', $tasks_sb), $on_primary,
	'(e) the standby has exactly the tasks of the primary');
note "(e) tasks (count:max id:hash) $on_primary";
is( $standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity"
		  . " WHERE backend_type IN ('schedq launcher', 'schedq scheduler', 'schedq sql executor')"),
	'0', '(e) no schedq worker runs on the standby');
is( $standby->safe_psql('postgres',
		"SELECT string_agg(name || '=' || value, ',' ORDER BY name) FROM schedq.metrics()"
		  . " WHERE name IN ('periodic_fired', 'periodic_skipped_overlap')"),
	'periodic_fired=0,periodic_skipped_overlap=0',
	'(e) the standby fired and skipped nothing itself');
unlike(
	PostgreSQL::Test::Utils::slurp_file($standby->logfile),
	qr/ERROR|could not fire/,
	'(e) no error in the standby log');

# Failover: the standby takes over and fires the replayed schedule.
my ($n_primary, $max_id) = split /:/, $on_primary;
$primary->stop;
$standby->promote;
ok( poll_value(
		$standby, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'",
		'1', 10),
	'(e) a scheduler runs on the new primary');
is( $standby->safe_psql('postgres',
		"SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{sb}')"),
	't', '(e) the task left live by the old primary is completed on the new one');
$consumer = start_consumer($standby, 'sb');
ok( poll_value(
		$standby, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE periodic = 'sb' AND id > $max_id",
		sub { $_[0] >= 3 }, 10),
	'(e) the new primary fires the schedule');
stop_consumer($consumer);
is( $standby->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM (SELECT run_at FROM schedq.task WHERE periodic = 'sb'
	                      GROUP BY run_at HAVING count(*) > 1) d}),
	'0', '(e) no tick fired on both');
is( $standby->safe_psql(
		'postgres', qq{
	SELECT min(run_at) > (SELECT max(run_at) FROM schedq.task
	                      WHERE periodic = 'sb' AND id <= $max_id)
	  FROM schedq.task WHERE periodic = 'sb' AND id > $max_id}),
	't', '(e) the new primary goes on after the last tick of the old one');
ok(metric($standby, 'periodic_fired') >= 3, '(e) the new primary counts its ticks');

$standby->stop;

done_testing();

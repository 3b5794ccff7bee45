#-------------------------------------------------------------------------
# test/t/013_wakeup.pl
#	  Timing through the live scheduler.  The fallback poll
#	  (schedq.promote_interval) and the reaper interval are 10 s here, so
#	  only wake-ups can explain what is measured: a task due in a second is
#	  claimed by a waiting claim within 300 ms of its run_at; a waiting
#	  claim (also claim_queue's) returns within 300 ms of the commit of a
#	  submit; a lock_key
#	  chain runs one task at a time in version order, each promoted within
#	  seconds of its predecessor's completion; and promote_interval can be
#	  changed with a reload while the scheduler keeps working.
#
#	  Times are taken with clock_timestamp() on the server, so they do not
#	  include the test's own latency.  300 ms is generous for a loaded
#	  2-core machine; a scheduler that waited for its fallback poll would
#	  take seconds.
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

my $max_lag = 0.3;

# Assert that a lag (seconds) is within [0, $max_lag).
sub lag_ok
{
	my ($lag, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	ok(defined $lag && $lag >= 0 && $lag < $max_lag, $name)
	  or diag 'lag: ' . ($lag // 'none') . " s, expected 0 <= lag < $max_lag s";
	note sprintf('%s: %.3f s', $name, $lag // -1);
}

my $node = schedq_node('wakeup', extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.promote_interval = '10s'
schedq.reaper_interval = '10s'
});
ok( defined poll_until(
		$node, 'postgres',
		"SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'idle', 10),
	'the scheduler of postgres is up and idle');
my $sched_pid = $node->safe_psql('postgres',
	"SELECT pid FROM schedq.scheduler_status() WHERE datname = 'postgres'");

#
# (a) A task due in one second is claimed by a waiting claim within
# $max_lag of its run_at (and not before it).
#
my $id = $node->safe_psql('postgres',
	"SELECT schedq.submit('a', queue => 'a', run_at => now() + interval '1 second')");
my $run_at = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM run_at) FROM schedq.task WHERE id = $id");
my $claimed = $node->safe_psql('postgres',
	"SELECT id || '|' || extract(epoch FROM clock_timestamp())"
	  . " FROM schedq.claim('wa', queues => '{a}', wait => '5s')");
my ($cid, $at) = split /\|/, $claimed;
is($cid, $id, '(a) the waiting claim gets the task due in 1 s');
lag_ok(defined $at ? $at - $run_at : undef,
	'(a) claimed within 300 ms of run_at, not before');

#
# (b) A claim waiting before a submit returns within $max_lag of the
# submit's commit: for a task available at once, and for one that the
# scheduler must promote first (it has a lock_key).
#
for my $case ([ 'plain', '' ], [ 'gated', ", lock_key => 'kb'" ],
	[ 'claim_queue', '', 1 ])
{
	my ($label, $extra, $one_queue) = @$case;
	my $queue = "b_$label";
	my $claim = $one_queue
	  ? "schedq.claim_queue('$queue', 'wb', wait => '10s')"
	  : "schedq.claim('wb', queues => '{$queue}', wait => '10s')";
	my $waiter = $node->background_psql('postgres');
	my $wpid = $waiter->query_safe('SELECT pg_backend_pid()');
	$waiter->query_until(qr/claiming\n/,
		    "\\echo claiming\n"
		  . "SELECT 'claimed:' || id || '|' || extract(epoch FROM clock_timestamp())"
		  . " FROM $claim;\n");
	# Wait until the claim sleeps (wait event "Extension").
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT state || ':' || wait_event_type FROM pg_stat_activity WHERE pid = $wpid",
			'active:Extension', 10),
		"(b, $label) the claim is waiting");

	my ($t0, $sid) = split /\|/,
	  $node->safe_psql('postgres',
		    "SELECT extract(epoch FROM clock_timestamp()) || '|' ||"
		  . " schedq.submit('b', queue => '$queue'$extra)");
	my $out = $waiter->query_until(qr/claimed:\d+\|[\d.]+\n/, '');
	my ($wid, $wat) = $out =~ /claimed:(\d+)\|([\d.]+)/;
	is($wid, $sid, "(b, $label) the waiting claim gets the submitted task");
	lag_ok(defined $wat ? $wat - $t0 : undef,
		"(b, $label) the claim returns within 300 ms of the submit");
	$waiter->quit;
}

#
# (c) A lock_key chain: three tasks with one lock_key, versions 1, 2, 3,
# submitted in one statement, run one at a time in version order, each
# promoted by the live scheduler within seconds of its predecessor's
# completion.  Once submitted in version order, once in the order 3, 1, 2
# (key order is version first, then id).
#
for my $case ([ 'ordered', [ 1, 2, 3 ] ], [ 'shuffled', [ 3, 1, 2 ] ])
{
	my ($label, $versions) = @$case;
	my $key = "chain_$label";
	my $json = join(',',
		map { qq({"kind": "c", "queue": "$key", "lock_key": "$key", "version": $_}) }
		  @$versions);
	my $t_prev = $node->safe_psql('postgres',
		    "SELECT extract(epoch FROM clock_timestamp()) FROM"
		  . " (SELECT count(*) FROM schedq.submit_many('[$json]')) s");
	is( $node->safe_psql('postgres',
			"SELECT string_agg(version::text, ',' ORDER BY id) FROM schedq.task"
			  . " WHERE lock_key = '$key'"),
		join(',', @$versions),
		"(c, $label) three tasks submitted");

	for my $expect (1, 2, 3)
	{
		my $row = $node->safe_psql('postgres',
			    "SELECT c.id || '|' || c.token || '|' || extract(epoch FROM clock_timestamp())"
			  . " FROM schedq.claim('wc', queues => '{$key}', wait => '5s') c");
		my ($tid, $token, $t_claim) = split /\|/, $row;
		if (!defined $t_claim)
		{
			fail("(c, $label) version $expect becomes available");
			diag $node->safe_psql('postgres',
				    "SELECT string_agg(id || ':' || version || ':' || status || ':' || parked, ' ')"
				  . " FROM schedq.task WHERE lock_key = '$key'");
			last;
		}
		is( $node->safe_psql('postgres', "SELECT version FROM schedq.task WHERE id = $tid"),
			$expect, "(c, $label) the next task of the chain is version $expect");
		my $lag = $t_claim - $t_prev;
		ok($lag < 3, "(c, $label) version $expect available within 3 s")
		  or diag "lag: $lag s";
		note sprintf('(c, %s) version %d claimed %.3f s after the previous step',
			$label, $expect, $lag);
		is( $node->safe_psql('postgres',
				"SELECT count(*) FROM schedq.task WHERE lock_key = '$key'"
				  . " AND status = 'available'"),
			'0',
			"(c, $label) nothing else of the key is available while version $expect runs");
		is( $node->safe_psql('postgres',
				"SELECT count(*) FROM schedq.task WHERE lock_key = '$key'"
				  . " AND status = 'pending'"),
			3 - $expect,
			"(c, $label) the later versions are still pending");
		my ($done, $t_done) = split /\|/,
		  $node->safe_psql('postgres',
			"SELECT schedq.complete('$token') || '|' || extract(epoch FROM clock_timestamp())");
		is($done, 'true', "(c, $label) version $expect completes");
		$t_prev = $t_done;
	}
	is( $node->safe_psql('postgres',
			"SELECT string_agg(status, ',') FROM schedq.task WHERE lock_key = '$key'"),
		'done,done,done',
		"(c, $label) the whole chain is done");
}

#
# (d) promote_interval changed by ALTER SYSTEM and a reload: in effect,
# and the same scheduler keeps working with it.
#
$node->safe_psql('postgres', "ALTER SYSTEM SET schedq.promote_interval = '50ms'");
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok(defined poll_until($node, 'postgres', 'SHOW schedq.promote_interval', '50ms', 10),
	'(d) SHOW schedq.promote_interval says 50ms after the reload');
# The scheduler ticks at least every 50 ms now (it slept up to 10 s before).
ok( defined poll_until(
		$node, 'postgres',
		"SELECT clock_timestamp() - last_tick < interval '500 ms'"
		  . " FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		't', 5),
	'(d) the scheduler now ticks at the new interval');
# A task made due behind the scheduler's back (no wake-up: a plain UPDATE
# of run_at) is found by the 50 ms fallback poll.
$id = $node->safe_psql('postgres',
	"SELECT schedq.submit('d1', queue => 'd', run_at => now() + interval '1 hour')");
$node->safe_psql('postgres', "UPDATE schedq.task SET run_at = now() WHERE id = $id");
my $took = poll_until($node, 'postgres',
	"SELECT status FROM schedq.task WHERE id = $id", 'available', 2);
ok(defined $took, '(d) the fallback poll promotes a task within 2 s');
note sprintf('(d) fallback promotion after %.3f s', $took // -1);
# And wake-ups still work.
$id = $node->safe_psql('postgres',
	"SELECT schedq.submit('d2', queue => 'd2', run_at => now() + interval '1 second')");
$run_at = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM run_at) FROM schedq.task WHERE id = $id");
($cid, $at) = split /\|/,
  $node->safe_psql('postgres',
	    "SELECT id || '|' || extract(epoch FROM clock_timestamp())"
	  . " FROM schedq.claim('wd', queues => '{d2}', wait => '5s')");
is($cid, $id, '(d) a task due in 1 s is claimed');
lag_ok(defined $at ? $at - $run_at : undef, '(d) within 300 ms of its run_at');
is( $node->safe_psql('postgres',
		"SELECT pid FROM schedq.scheduler_status() WHERE datname = 'postgres'"),
	$sched_pid,
	'(d) the same scheduler process throughout');

#
# (e) Many waiting claims and one task: one claim is woken, not all of them
# (no thundering herd), and the others sleep on without spinning.  Woken
# waiting claims are counted in schedq.metrics() as claim_wakeups.
#
my $nwaiters = 20;
my @waiters;
for my $i (1 .. $nwaiters)
{
	my $w = $node->background_psql('postgres');
	$w->query_until(qr/waiting\n/,
		    "\\echo waiting\n"
		  . "SELECT 'got:' || count(*) FROM schedq.claim('we$i', queues => '{e}', wait => '60s');\n");
	push @waiters, $w;
}
my $sleeping = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
  . " AND wait_event_type = 'Extension' AND query LIKE '%queues => ''{e}''%'";
ok(defined poll_until($node, 'postgres', $sleeping, "$nwaiters", 20),
	"(e) $nwaiters claims are waiting");
my $wakeups = metric($node, 'claim_wakeups');
$node->safe_psql('postgres', "SELECT schedq.submit('e', queue => 'e')");
ok( defined poll_until(
		$node, 'postgres', "SELECT status FROM schedq.task WHERE queue = 'e'",
		'running', 5),
	'(e) a waiting claim took the task');
ok(defined poll_until($node, 'postgres', $sleeping, $nwaiters - 1, 5),
	'(e) the others are still waiting');
my $woken = metric($node, 'claim_wakeups') - $wakeups;
cmp_ok($woken, '<=', 2,
	"(e) one submit woke $woken of $nwaiters waiting claims, not all of them");
is(stays($node, 'postgres',
		"SELECT value FROM schedq.metrics() WHERE name = 'claim_wakeups'",
		$wakeups + $woken, 1),
	undef, '(e) the waiting claims do not wake up again by themselves');
# Release the others: one task each.
$node->safe_psql('postgres',
	"SELECT schedq.submit('e', queue => 'e') FROM generate_series(2, $nwaiters)");
my $got = 0;
for my $w (@waiters)
{
	$got++ if $w->query_until(qr/got:\d+\n/, '') =~ /got:1/;
	$w->quit;
}
is($got, $nwaiters, '(e) every waiting claim got exactly one task');

$node->stop;

done_testing();

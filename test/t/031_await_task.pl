#-------------------------------------------------------------------------
# test/t/031_await_task.pl
#	  schedq.await_task: waiting for a task while holding no snapshot and
#	  no lock, against claim(wait => ...), which holds both.
#
#	  (a) refused where it cannot commit (inside BEGIN, from a function:
#	      25001), bad arguments (22004, 22023), and not executable by
#	      PUBLIC (42501) until granted;
#	  (b) what it answers: false after wait on an empty queue; true at once
#	      for an available task (which it leaves available, and the
#	      session's synchronous_commit as it was); false, after waiting
#	      rather than spinning,
#	      for a task an uncommitted claim holds; true within 2 s of the
#	      commit of a submit while it waits; a wake-up that went first to
#	      a waiter of a role that cannot take the task reaches the one
#	      that can;
#	  (c) what a waiter holds, sixteen at a time: await_task no xmin and
#	      no relation lock on schedq's tables, and REINDEX of a schedq
#	      index does not wait for it; claim(wait => ...) an xmin and locks
#	      on the task table and its indexes, and REINDEX waits;
#	  (d) what that does to VACUUM: tasks churned through another queue
#	      while sixteen sessions wait are removed by VACUUM when they wait
#	      in await_task, and are dead but not removable while they wait in
#	      claim(wait => ...);
#	  (e) await_queue(queue, ...) is await_task(ARRAY[queue], ...): the
#	      same refusals (and 22004 for a NULL queue), PUBLIC cannot run
#	      it, its looks see only its queue and its caps, a submit to its
#	      queue wakes it, and it holds no xmin while it waits.
#
#	  autovacuum is off, and so are the scheduler and the SQL executors
#	  (schedq.enabled = off, sql_workers = 0): no other transaction moves
#	  the horizon.  Times are taken with clock_timestamp() on the server.
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

my $max_lag = 2;
my $nwaiters = 16;

my $node = schedq_node('await_task', conf => qq{
max_worker_processes = 32
autovacuum = off
schedq.enabled = off
schedq.sql_workers = 0
});
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION schedq;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE nobody LOGIN;
GRANT USAGE ON SCHEMA schedq TO alice, bob, nobody;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.submit TO alice, bob;
});

# Run $sql; return its SQLSTATE (or 'ok') and the error message.
sub sqlstate
{
	my ($sql, $user) = @_;
	my ($ret, $out, $err) = $node->psql(
		'postgres', "\\set VERBOSITY verbose\n$sql",
		extra_params => defined $user ? [ '-U', $user ] : []);
	return ('ok', '') if $ret == 0;
	my ($state, $msg) = $err =~ /ERROR:\s+([0-9A-Z]{5}):\s+(.*)/;
	return ($state // 'none', $msg // $err);
}

#
# (a) Where it cannot run, and bad input.
#
{
	my @cases = (
		[ 'inside BEGIN', "BEGIN;\nCALL schedq.await_task(wait => '0');\nCOMMIT;", '25001' ],
		[ 'from a function',
			"CREATE FUNCTION await_in_function() RETURNS boolean LANGUAGE plpgsql AS \$\$"
			  . " DECLARE w boolean; BEGIN CALL schedq.await_task(wait => '0', woken => w);"
			  . " RETURN w; END \$\$;\nSELECT await_in_function();", '25001' ],
		[ 'wait null', "CALL schedq.await_task(wait => NULL);", '22004' ],
		[ 'wait negative', "CALL schedq.await_task(wait => '-1 s');", '22023' ],
		[ 'caps null', "CALL schedq.await_task(caps => NULL, wait => '0');", '22004' ],
		[ 'caps with a null', "CALL schedq.await_task(caps => '{a,NULL}', wait => '0');", '22004' ],
		[ 'queues with a null', "CALL schedq.await_task(queues => '{a,NULL}', wait => '0');", '22004' ],
	);
	for my $case (@cases)
	{
		my ($label, $sql, $expected) = @$case;
		my ($state, $msg) = sqlstate($sql);
		is($state, $expected, "(a) $label: $expected") or diag $msg;
		note "(a) $label: $msg";
	}
	my ($state) = sqlstate("CALL schedq.await_task(wait => '0');", 'nobody');
	is($state, '42501', '(a) PUBLIC cannot execute it');
	$node->safe_psql('postgres',
		'GRANT EXECUTE ON PROCEDURE schedq.await_task TO alice, bob, nobody');
	is($node->safe_psql('postgres', "CALL schedq.await_task(wait => '0')",
			extra_params => [ '-U', 'nobody' ]),
		'f', '(a) granted, it runs');
	my ($ret, $out, $err) = $node->psql('postgres',
		    "DO \$\$ DECLARE w boolean; BEGIN"
		  . " CALL schedq.await_task(wait => '0', woken => w);"
		  . " RAISE NOTICE 'woken: %', w; END \$\$");
	like($err, qr/woken: f/,
		'(a) a DO block outside a transaction block may call it');
}

#
# (b) What it answers.
#
{
	my $t0 = time;
	is($node->safe_psql('postgres',
			"CALL schedq.await_task(queues => '{b}', wait => '200 ms')"),
		'f', '(b) empty queue: woken is false after wait');
	cmp_ok(time - $t0, '>=', 0.2, '(b) ... having waited');

	$node->safe_psql('postgres', "SELECT schedq.submit('b', queue => 'b')");
	is($node->safe_psql('postgres',
			"CALL schedq.await_task(queues => '{b}', wait => '10 s')"),
		't', '(b) an available task: true at once');
	is( $node->safe_psql('postgres',
			"SELECT status FROM schedq.task WHERE queue = 'b'"),
		'available', '(b) await_task claims nothing');
	is( $node->safe_psql('postgres',
			"CALL schedq.await_task(queues => '{b}', wait => '0');\n"
			  . 'SHOW synchronous_commit'),
		"t\non", "(b) its looks' own setting does not reach the session");

	# A claim in an open transaction holds the task.
	my $holder = $node->background_psql('postgres');
	$holder->query_safe("BEGIN; SELECT id FROM schedq.claim('holder', queues => '{b}')");
	$t0 = time;
	is($node->safe_psql('postgres',
			"CALL schedq.await_task(queues => '{b}', wait => '1 s')"),
		'f', '(b) a task an uncommitted claim holds does not count');
	cmp_ok(time - $t0, '>=', 1, '(b) ... it waited instead');
	$holder->query_safe('COMMIT');
	$holder->quit;

	# Waiting, then a submit.
	my $w = $node->background_psql('postgres');
	my $pid = $w->query_safe('SELECT pg_backend_pid()');
	$w->query_until(qr/waiting\n/,
		    "\\echo waiting\n"
		  . "CALL schedq.await_task(queues => '{b2}', wait => '10 s');\n"
		  . "SELECT 'at:' || extract(epoch FROM clock_timestamp());\n");
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid",
			'Extension', 10),
		'(b) await_task is waiting');
	my ($t1) = $node->safe_psql('postgres',
		    "SELECT extract(epoch FROM clock_timestamp())"
		  . " FROM (SELECT schedq.submit('b2', queue => 'b2')) s");
	my $out = $w->query_until(qr/at:[\d.]+\n/, '');
	my ($woken, $at) = $out =~ /^(\w)\nat:([\d.]+)/m;
	is($woken, 't', '(b) woken by a submit');
	ok(defined $at && $at - $t1 < $max_lag,
		"(b) within $max_lag s of the submit's commit")
	  or diag 'lag: ' . (defined $at ? $at - $t1 : 'none');
	note sprintf('(b) submit to await_task returning: %.1f ms',
		1000 * (($at // $t1) - $t1));
	is($w->query_safe("SELECT count(*) FROM schedq.claim('w', queues => '{b2}')"),
		'1', '(b) claim() then takes the task');
	$w->quit;

	# The wake-up goes first to alice, who cannot take bob's task.
	my ($wa, $wb) = map { $node->background_psql('postgres', extra_params => [ '-U', $_ ]) }
	  qw(alice bob);
	my $pa = $wa->query_safe('SELECT pg_backend_pid()');
	my $pb = $wb->query_safe('SELECT pg_backend_pid()');
	for my $s ($wa, $wb)
	{
		$s->query_until(qr/waiting\n/,
			    "\\echo waiting\n"
			  . "CALL schedq.await_task(queues => '{b3}', wait => '20 s');\n"
			  . "SELECT 'at:' || extract(epoch FROM clock_timestamp());\n");
	}
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid IN ($pa, $pb)"
			  . " AND wait_event_type = 'Extension'",
			'2', 10),
		'(b) alice and bob wait');
	($t1) = $node->safe_psql('postgres',
		    "SELECT extract(epoch FROM clock_timestamp())"
		  . " FROM (SELECT schedq.submit('b3', queue => 'b3')) s",
		extra_params => [ '-U', 'bob' ]);
	$out = $wb->query_until(qr/at:[\d.]+\n/, '');
	($woken, $at) = $out =~ /^(\w)\nat:([\d.]+)/m;
	is($woken, 't', "(b) bob's await_task is woken for bob's task");
	ok(defined $at && $at - $t1 < $max_lag, "(b) within $max_lag s")
	  or diag 'lag: ' . (defined $at ? $at - $t1 : 'none');
	note sprintf("(b) bob's task to bob's await_task, past alice: %.1f ms",
		1000 * (($at // $t1) - $t1));
	is( $node->safe_psql('postgres',
			"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pa"),
		'Extension', '(b) alice waits on');
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pa)");
	eval { $wa->quit };
	$wb->quit;
}

#
# (c) and (d): sixteen waiters, in one way or the other.
#
my $churned = 0;

# Start $nwaiters sessions running $sql; return them once all sleep.
sub start_waiters
{
	my ($sql, $label) = @_;
	my @w;
	for my $i (1 .. $nwaiters)
	{
		my $s = $node->background_psql('postgres');
		my $pid = $s->query_safe('SELECT pg_backend_pid()');
		$s->query_until(qr/waiting\n/, "\\echo waiting\n$sql;\n");
		push @w, { psql => $s, pid => $pid };
	}
	my $pids = join(',', map { $_->{pid} } @w);
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid IN ($pids)"
			  . " AND state = 'active' AND wait_event_type = 'Extension'",
			$nwaiters, 30),
		"($label) $nwaiters sessions wait");
	return ($pids, @w);
}

sub stop_waiters
{
	my ($pids, @w) = @_;
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM unnest(ARRAY[$pids]) pid");
	eval { $_->{psql}->quit } for @w;
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid IN ($pids)",
			'0', 10),
		'the waiters are gone');
}

# Relation locks these backends hold on schedq's relations.
sub schedq_locks
{
	my ($pids) = @_;
	return $node->safe_psql('postgres',
		    "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
		  . " WHERE l.pid IN ($pids) AND l.locktype = 'relation'"
		  . " AND c.relnamespace = 'schedq'::regnamespace");
}

# Churn 200 tasks through queue 'busy' (submit, claim, complete: two dead
# row versions each), then VACUUM the task table; return how many row
# versions it removed and how many were dead but not removable.
sub churn_and_vacuum
{
	$churned++;
	$node->safe_psql('postgres',
		"SELECT schedq.submit('busy$churned', queue => 'busy') FROM generate_series(1, 200)");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FILTER (WHERE c) FROM unnest(schedq.complete_many(ARRAY("
			  . "SELECT token FROM schedq.claim('churn', queues => '{busy}', n => 200)))) c"),
		'200', 'churned 200 tasks');
	my ($ret, $out, $err) =
	  $node->psql('postgres', 'VACUUM (VERBOSE) schedq.task');
	my ($removed, $not_removable) =
	  $err =~ /tuples: (\d+) removed, \d+ remain, (\d+) are dead but not yet removable/;
	note "VACUUM VERBOSE schedq.task: $1" if $err =~ /(tuples: [^\n]*)/;
	note 'n_dead_tup of schedq.task: '
	  . $node->safe_psql('postgres',
		"SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'schedq.task'::regclass");
	return ($removed, $not_removable);
}

# REINDEX of a schedq index with lock_timeout: 'ok' or its SQLSTATE.
sub reindex
{
	my ($state) = sqlstate(
		"SET lock_timeout = '1s';\nREINDEX INDEX schedq.task_available_idx;");
	return $state;
}

# A clean start: nothing dead in the task table.
$node->safe_psql('postgres', 'VACUUM schedq.task');

{
	my ($pids, @w) = start_waiters(
		"CALL schedq.await_task(queues => '{idle}', wait => '120 s')",
		'c, await_task');
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid IN ($pids)"
			  . " AND backend_xmin IS NULL AND backend_xid IS NULL"),
		$nwaiters, '(c, await_task) no waiter has an xmin or an xid');
	is(schedq_locks($pids), '0',
		"(c, await_task) no waiter holds a lock on schedq's relations");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_locks WHERE pid IN ($pids)"
			  . " AND locktype NOT IN ('virtualxid')"),
		'0', '(c, await_task) nor any lock but its virtual xid');
	is(reindex(), 'ok', '(c, await_task) REINDEX does not wait for them');

	my ($removed, $not_removable) = churn_and_vacuum();
	is($not_removable, '0',
		'(d, await_task) VACUUM removes the churned row versions: none is dead but not removable'
	);
	stop_waiters($pids, @w);
}

{
	my ($pids, @w) = start_waiters(
		"SELECT count(*) FROM schedq.claim('w', queues => '{idle}', wait => '120 s')",
		'c, claim(wait)');
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid IN ($pids)"
			  . " AND backend_xmin IS NOT NULL"),
		$nwaiters, '(c, claim(wait)) every waiter has an xmin');
	my $locks = schedq_locks($pids);
	cmp_ok($locks, '>=', $nwaiters,
		"(c, claim(wait)) the waiters hold locks on schedq's relations");
	note sprintf('(c, claim(wait)) %.1f relation locks on schedq per waiter',
		$locks / $nwaiters);
	is(reindex(), '55P03', '(c, claim(wait)) REINDEX waits for them');

	my ($removed, $not_removable) = churn_and_vacuum();
	cmp_ok($not_removable // 0, '>=', 400,
		'(d, claim(wait)) the churned row versions are dead but not removable');
	stop_waiters($pids, @w);
	($removed, $not_removable) = churn_and_vacuum();
	is($not_removable, '0',
		'(d, claim(wait)) once the claims end, VACUUM removes them');
}

#
# (e) await_queue: await_task for one queue.
#
{
	my @cases = (
		[ 'inside BEGIN', "BEGIN;\nCALL schedq.await_queue('e', wait => '0');\nCOMMIT;", '25001' ],
		[ 'queue null', "CALL schedq.await_queue(NULL, wait => '0');", '22004' ],
		[ 'queue too long', "CALL schedq.await_queue(repeat('q', 256), wait => '0');", '54000' ],
		[ 'wait null', "CALL schedq.await_queue('e', wait => NULL);", '22004' ],
		[ 'wait negative', "CALL schedq.await_queue('e', wait => '-1 s');", '22023' ],
		[ 'caps null', "CALL schedq.await_queue('e', caps => NULL, wait => '0');", '22004' ],
	);
	for my $case (@cases)
	{
		my ($label, $sql, $expected) = @$case;
		my ($state, $msg) = sqlstate($sql);
		is($state, $expected, "(e) await_queue, $label: $expected") or diag $msg;
	}
	my ($state) = sqlstate("CALL schedq.await_queue('e', wait => '0');", 'nobody');
	is($state, '42501', '(e) PUBLIC cannot execute await_queue');

	my $t0 = time;
	is($node->safe_psql('postgres', "CALL schedq.await_queue('e', wait => '200 ms')"),
		'f', '(e) empty queue: false after wait');
	cmp_ok(time - $t0, '>=', 0.2, '(e) ... having waited');
	$node->safe_psql('postgres',
		"SELECT schedq.submit('e', queue => 'e-other');"
		  . "SELECT schedq.submit('e', queue => 'e', required_caps => '{gpu}')");
	is( $node->safe_psql('postgres',
			"CALL schedq.await_queue('e', wait => '0');"
			  . "CALL schedq.await_queue('e', caps => '{gpu}', wait => '0');"
			  . "CALL schedq.await_queue('e-other', wait => '0')"),
		"f\nt\nt",
		"(e) it sees its queue's tasks only, and those its caps allow");

	my $w = $node->background_psql('postgres');
	my $pid = $w->query_safe('SELECT pg_backend_pid()');
	$w->query_until(qr/waiting\n/,
		    "\\echo waiting\n"
		  . "CALL schedq.await_queue('e2', wait => '10 s');\n"
		  . "SELECT 'at:' || extract(epoch FROM clock_timestamp());\n");
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid",
			'Extension', 10),
		'(e) await_queue is waiting');
	is( $node->safe_psql('postgres',
			"SELECT backend_xmin IS NULL FROM pg_stat_activity WHERE pid = $pid"),
		't', '(e) ... holding no xmin');
	my ($t1) = $node->safe_psql('postgres',
		    "SELECT extract(epoch FROM clock_timestamp())"
		  . " FROM (SELECT schedq.submit('e2', queue => 'e2')) s");
	my $out = $w->query_until(qr/at:[\d.]+\n/, '');
	my ($woken, $at) = $out =~ /^(\w)\nat:([\d.]+)/m;
	is($woken, 't', '(e) woken by a submit to its queue');
	ok(defined $at && $at - $t1 < $max_lag, "(e) within $max_lag s")
	  or diag 'lag: ' . (defined $at ? $at - $t1 : 'none');
	is($w->query_safe("SELECT count(*) FROM schedq.claim_queue('e2', 'w')"),
		'1', '(e) claim_queue then takes the task');
	$w->quit;
}

$node->stop;

done_testing();

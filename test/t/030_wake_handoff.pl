#-------------------------------------------------------------------------
# test/t/030_wake_handoff.pl
#	  A task made available wakes one waiting claim chosen by queue hash
#	  and capability Bloom bits only; that claim may be unable to take it.
#	  The wake-up must then reach a waiting claim that can, within a
#	  generous 2 s of the submit's commit (the target is 200 ms), rather
#	  than that claim sleeping its full wait.  Each case starts the claims
#	  that cannot take the task first, so that they hold the lower backend
#	  ids (the order in which a wake-up looks at the waiters), and checks
#	  that order before it submits:
#
#	  (a) role: bob's task, three claims of alice (who cannot act for bob)
#	      and one of bob;
#	  (b) queue filter: a claim filtering on five queues (more than the
#	      waiters' table keeps: it matches every queue) and one filtering
#	      on the task's queue;
#	  (c) capabilities: a worker with a capability whose Bloom bit is the
#	      one of the capability the task requires, and a worker that has
#	      that capability.
#
#	  And the work stays bounded:
#
#	  (d) a task that none of three waiting claims can take wakes each of
#	      them at most once, and then none of them again (no ping-pong);
#	  (e) a task of a paused queue wakes at most one of three waiting
#	      claims; resume_queue then gives it to one of them at once.
#
#	  t/013_wakeup.pl (e) checks that a task one of twenty waiting claims
#	  can take wakes one of them, not all.
#
#	  Times are taken with clock_timestamp() on the server.
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

my $node = schedq_node('wake_handoff', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.sql_workers = 0
schedq.promote_interval = '10s'
schedq.reaper_interval = '10s'
});
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION schedq;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
GRANT USAGE ON SCHEMA schedq TO alice, bob, carol;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.submit, schedq.pause_queue,
	  schedq.resume_queue TO alice, bob, carol;
});

# Start a waiting claim as $user; its output line, when it returns, is
# "got:<task id or none>|<epoch>".
sub start_waiter
{
	my ($user, $args) = @_;
	my $w = $node->background_psql('postgres',
		extra_params => [ '-U', $user ]);
	my $pid = $w->query_safe('SELECT pg_backend_pid()');
	$w->query_until(qr/waiting\n/,
		    "\\echo waiting\n"
		  . "SELECT 'got:' || coalesce(max(id)::text, 'none') || '|'"
		  . " || extract(epoch FROM clock_timestamp())"
		  . " FROM schedq.claim('w$pid', $args);\n");
	return { psql => $w, pid => $pid };
}

# End these waiters: a claim sleeps on after its psql quits, so end its
# backend first (psql then exits by itself: quitting it may find the pipe
# closed).
sub stop_waiters
{
	return unless @_;
	my @pids = map { $_->{pid} } @_;
	$node->safe_psql('postgres',
		'SELECT pg_terminate_backend(pid) FROM unnest(ARRAY['
		  . join(',', @pids) . ']) pid');
	eval { $_->{psql}->quit } for @_;
}

# The claims of these waiters that sleep (wait event "Extension").
sub sleeping
{
	my @pids = map { $_->{pid} } @_;
	return
	    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
	  . " AND wait_event_type = 'Extension' AND pid IN ("
	  . join(',', @pids) . ')';
}

# Whether every backend of @$first has a lower backend id than $last's
# (pg_stat_get_backend_idset lists backends in backend id order).
sub ids_before
{
	my ($first, $last) = @_;
	my @order = split /,/,
	  $node->safe_psql('postgres',
		    'SELECT string_agg(pg_stat_get_backend_pid(s)::text, \',\' ORDER BY s)'
		  . ' FROM pg_stat_get_backend_idset() s');
	my %pos;
	@pos{@order} = (0 .. $#order);
	for my $w (@$first)
	{
		return 0 unless $pos{ $w->{pid} } < $pos{ $last->{pid} };
	}
	return 1;
}

# Submit a task as $user, then wait for $right's claim to return; check it
# got the task within $max_lag of the submit's commit.
sub handoff_ok
{
	my ($label, $user, $submit, $wrong, $right) = @_;

	ok(defined poll_until($node, 'postgres', sleeping(@$wrong, $right),
			scalar(@$wrong) + 1, 20),
		"($label) every claim is waiting");
	ok(ids_before($wrong, $right),
		"($label) the claims that cannot take the task come first");

	my ($t0, $id) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT extract(epoch FROM clock_timestamp()) || '|' || $submit",
		extra_params => [ '-U', $user ]);
	my $out = $right->{psql}->query_until(qr/got:\w+\|[\d.]+\n/, '');
	my ($got, $at) = $out =~ /got:(\w+)\|([\d.]+)/;
	is($got, $id, "($label) the claim that can take the task gets it");
	my $lag = defined $at ? $at - $t0 : undef;
	ok(defined $lag && $lag >= 0 && $lag < $max_lag,
		"($label) within $max_lag s of the submit's commit")
	  or diag 'lag: ' . ($lag // 'none') . ' s';
	note sprintf('(%s) submit to claim: %.1f ms', $label, 1000 * ($lag // -1));
	$right->{psql}->quit;
	is($node->safe_psql('postgres', sleeping(@$wrong)),
		scalar(@$wrong), "($label) the others still wait");
	stop_waiters(@$wrong);
}

#
# (a) A task that only bob's claim can take.
#
{
	my @wrong =
	  map { start_waiter('alice', "queues => '{a}', wait => '30s'") } 1 .. 3;
	my $right = start_waiter('bob', "queues => '{a}', wait => '10s'");
	handoff_ok('a, role', 'bob', "schedq.submit('a', queue => 'a')",
		\@wrong, $right);
}

#
# (b) A claim on five queues matches every queue in the waiters' table.
#
{
	my @wrong = (start_waiter('bob',
			"queues => '{b1,b2,b3,b4,b5}', wait => '30s'"));
	my $right = start_waiter('bob', "queues => '{b}', wait => '10s'");
	handoff_ok('b, queue filter', 'bob', "schedq.submit('b', queue => 'b')",
		\@wrong, $right);
}

#
# (c) Two capabilities with one Bloom bit (of 64): the worker with gpu
# cannot take a task requiring the other.
#
{
	my $cap = $node->safe_psql('postgres',
		    "SELECT c FROM (SELECT 'cap' || i AS c FROM generate_series(1, 10000) i) s"
		  . " WHERE hashtext(c) & 63 = hashtext('gpu') & 63 LIMIT 1");
	my @wrong = (start_waiter('bob',
			"queues => '{c}', caps => '{gpu}', wait => '30s'"));
	my $right =
	  start_waiter('bob', "queues => '{c}', caps => '{$cap}', wait => '10s'");
	handoff_ok("c, capability $cap", 'bob',
		"schedq.submit('c', queue => 'c', required_caps => '{$cap}')",
		\@wrong, $right);
}

#
# (d) carol's task, three claims of alice: each is tried at most once.
#
{
	my @w =
	  map { start_waiter('alice', "queues => '{d}', wait => '30s'") } 1 .. 3;
	ok(defined poll_until($node, 'postgres', sleeping(@w), '3', 20),
		'(d) three claims are waiting');
	my $before = metric($node, 'claim_wakeups');
	$node->safe_psql('postgres', "SELECT schedq.submit('d', queue => 'd')",
		extra_params => [ '-U', 'carol' ]);
	# Settled: the counter stays put for a second.
	my $woken;
	for (1 .. 20)
	{
		$woken = metric($node, 'claim_wakeups') - $before;
		last
		  unless defined stays($node, 'postgres',
			"SELECT value FROM schedq.metrics() WHERE name = 'claim_wakeups'",
			$before + $woken, 1);
	}
	cmp_ok($woken, '<=', 3,
		"(d) a task nobody waiting can take woke $woken of 3 claims, each once at most");
	is($node->safe_psql('postgres', sleeping(@w)), '3',
		'(d) all three still wait');
	is( $node->safe_psql('postgres',
			"SELECT status FROM schedq.task WHERE queue = 'd'"),
		'available', '(d) the task is still available');
	stop_waiters(@w);
}

#
# (e) A paused queue: a task there wakes at most one claim; resuming the
# queue wakes them and one takes it.
#
{
	$node->safe_psql('postgres', "SELECT schedq.pause_queue('e')");
	my @w = map { start_waiter('bob', "queues => '{e}', wait => '30s'") } 1 .. 3;
	ok(defined poll_until($node, 'postgres', sleeping(@w), '3', 20),
		'(e) three claims are waiting');
	my $before = metric($node, 'claim_wakeups');
	my $id = $node->safe_psql('postgres',
		"SELECT schedq.submit('e', queue => 'e')",
		extra_params => [ '-U', 'bob' ]);
	is(stays($node, 'postgres', sleeping(@w), '3', 1),
		undef, '(e) the claims keep waiting while the queue is paused');
	my $woken = metric($node, 'claim_wakeups') - $before;
	cmp_ok($woken, '<=', 1,
		"(e) a task of a paused queue woke $woken of 3 claims");
	my $t0 = $node->safe_psql('postgres',
		    "SELECT extract(epoch FROM clock_timestamp())"
		  . " FROM (SELECT schedq.resume_queue('e')) r");
	ok(defined poll_until($node, 'postgres', sleeping(@w), '2', 5),
		'(e) after resume_queue one claim returns');
	my ($got, $at);
	for my $w (@w)
	{
		next
		  if $node->safe_psql('postgres', sleeping($w)) eq '1';
		($got, $at) = $w->{psql}->query_until(qr/got:\w+\|[\d.]+\n/, '')
		  =~ /got:(\w+)\|([\d.]+)/;
		$w->{done} = 1;
	}
	is($got, $id, '(e) it got the task');
	ok(defined $at && $at - $t0 < $max_lag,
		"(e) within $max_lag s of resume_queue")
	  or diag 'lag: ' . (defined $at ? $at - $t0 : 'none');
	stop_waiters(grep { !$_->{done} } @w);
	$_->{psql}->quit for grep { $_->{done} } @w;
}

$node->stop;

done_testing();

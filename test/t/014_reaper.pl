#-------------------------------------------------------------------------
# test/t/014_reaper.pl
#	  The reaper of the live scheduler, with
#	  schedq.reaper_interval = 100ms: an expired lease is a failed attempt
#	  ('lease expired'), retried while attempts remain, else the task fails;
#	  an attempt past its timeout fails with 'timeout' even though it is
#	  heartbeated; the grant of a reaped attempt is stale; and finished tasks
#	  older than schedq.retention are deleted.
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

my $node = schedq_node('reaper', extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.reaper_interval = '100ms'
});
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'1', 10),
	'the scheduler of postgres runs');

# Claim the one available task of a queue; returns (id, token).
sub claim_one
{
	my ($queue, $lease) = @_;
	return split /\|/,
	  $node->safe_psql('postgres',
		    "SELECT id || '|' || token FROM schedq.claim('w', queues => '{$queue}',"
		  . " lease => '$lease')");
}

#
# A lease that expires without a heartbeat: the attempt fails with
# 'lease expired' and the task goes back (attempts remain).
#
my $expirations = metric($node, 'lease_expirations');
my $id = $node->safe_psql('postgres', "SELECT schedq.submit('lease', queue => 'lease')");
my ($cid, $token) = claim_one('lease', '1 second');
is($cid, $id, 'a task is claimed with a 1 s lease');
my $took = poll_until(
	$node, 'postgres',
	"SELECT status IN ('pending', 'available') || ':' || attempts || ':' || last_error"
	  . " FROM schedq.task WHERE id = $id",
	'true:1:lease expired', 5);
ok(defined $took,
	'after its lease expires, the task goes back with attempts 1 and last_error "lease expired"');
note sprintf('lease reaped %.2f s after the claim', $took // -1);
is( $node->safe_psql('postgres',
		"SELECT claimed_by IS NULL AND lease_expires_at IS NULL FROM schedq.task WHERE id = $id"),
	't', 'the reaped task has no worker and no lease');
cmp_ok(metric($node, 'lease_expirations'), '>', $expirations, 'lease_expirations grew');

# The grant of the reaped attempt is stale: it can no longer finish the
# task, or extend its lease.
is($node->safe_psql('postgres', "SELECT schedq.verify_grant('$token')"),
	'stale', 'the grant of the reaped attempt is stale');
is($node->safe_psql('postgres', "SELECT schedq.complete('$token')"),
	'f', 'complete with the stale grant returns false');
is($node->safe_psql('postgres', "SELECT schedq.fail('$token', 'late')"),
	'stale', 'fail with the stale grant returns stale');
is($node->safe_psql('postgres', "SELECT schedq.heartbeat('$token') IS NULL"),
	't', 'heartbeat with the stale grant returns NULL');
is( $node->safe_psql('postgres',
		"SELECT status IN ('pending', 'available') || ':' || attempts || ':' || last_error"
		  . " FROM schedq.task WHERE id = $id"),
	'true:1:lease expired',
	'the stale calls changed nothing');

# The retried task becomes available again (after its backoff) and its
# second attempt completes.
ok( defined poll_until(
		$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $id",
		'available', 5),
	'the task becomes available again');
($cid, my $token2) = claim_one('lease', '1 minute');
is($cid, $id, 'it is claimed again');
is($node->safe_psql('postgres', "SELECT schedq.complete('$token2')"),
	't', 'its second attempt completes');
is($node->safe_psql('postgres', "SELECT schedq.complete('$token')"),
	'f', 'the first grant still cannot complete it');
is( $node->safe_psql('postgres', "SELECT status || ':' || attempts FROM schedq.task WHERE id = $id"),
	'done:2', 'the task is done after two attempts');

#
# A timeout: claimed with a long lease and heartbeated, the attempt still
# fails at its timeout, with 'timeout'.
#
my $timeouts = metric($node, 'task_timeouts');
$id = $node->safe_psql('postgres',
	"SELECT schedq.submit('slow', queue => 'slow', timeout => '1 second')");
($cid, $token) = claim_one('slow', '1 hour');
is($cid, $id, 'a task with a 1 s timeout is claimed with a 1 hour lease');
isnt($node->safe_psql('postgres', "SELECT schedq.heartbeat('$token', extend => '1 hour')"),
	'', 'a heartbeat is accepted');
$took = poll_until(
	$node, 'postgres',
	"SELECT status IN ('pending', 'available') || ':' || attempts || ':' || last_error"
	  . " FROM schedq.task WHERE id = $id",
	'true:1:timeout', 5);
ok(defined $took, 'the heartbeated attempt fails at its timeout with last_error "timeout"');
note sprintf('timeout reaped %.2f s after the claim', $took // -1);
cmp_ok(metric($node, 'task_timeouts'), '>', $timeouts, 'task_timeouts grew');
is($node->safe_psql('postgres', "SELECT schedq.complete('$token')"),
	'f', 'complete with the timed-out grant returns false');

# With no attempt left, a timeout fails the task for good.
$id = $node->safe_psql('postgres',
	"SELECT schedq.submit('slow1', queue => 'slow1', timeout => '1 second', max_attempts => 1)");
($cid, $token) = claim_one('slow1', '1 hour');
ok( defined poll_until(
		$node, 'postgres',
		"SELECT status || ':' || attempts || ':' || last_error FROM schedq.task WHERE id = $id",
		'failed:1:timeout', 5),
	'a task with max_attempts 1 that times out ends failed');

#
# A lease that expires on the last attempt: the task fails for good.
#
$id = $node->safe_psql('postgres',
	"SELECT schedq.submit('once', queue => 'once', max_attempts => 1)");
($cid, $token) = claim_one('once', '1 second');
is($cid, $id, 'a task with max_attempts 1 is claimed with a 1 s lease');
ok( defined poll_until(
		$node, 'postgres',
		"SELECT status || ':' || attempts || ':' || last_error || ':' || (finished_at IS NOT NULL)"
		  . " FROM schedq.task WHERE id = $id",
		'failed:1:lease expired:true', 5),
	'when its lease expires it ends failed with last_error "lease expired"');
is($node->safe_psql('postgres', "SELECT schedq.complete('$token')"),
	'f', 'the stale grant cannot complete the failed task');
is($node->safe_psql('postgres', "SELECT status FROM schedq.task WHERE id = $id"),
	'failed', 'the task stays failed');

#
# A lease that is heartbeated is not reaped.
#
$id = $node->safe_psql('postgres', "SELECT schedq.submit('kept', queue => 'kept')");
($cid, $token) = claim_one('kept', '1 second');
my $start = time;
my $kept = 1;
while (time - $start < 2.5)
{
	$kept = 0
	  if $node->safe_psql('postgres', "SELECT schedq.heartbeat('$token') IS NOT NULL") ne 't';
	usleep(200_000);
}
ok($kept, 'a lease heartbeated every 200 ms stays with its worker for 2.5 s');
is( $node->safe_psql('postgres',
		"SELECT status || ':' || attempts || ':' || coalesce(last_error, '')"
		  . " FROM schedq.task WHERE id = $id"),
	'running:1:', 'the heartbeated task is still running, never reaped');
is($node->safe_psql('postgres', "SELECT schedq.complete('$token')"),
	't', 'and its worker completes it');

#
# Retention: with schedq.retention = 1s, done, canceled and skipped
# tasks older than that are deleted by the scheduler, failed ones once
# schedq.failed_retention is 1s too; live tasks are kept.
#
my $live = $node->safe_psql('postgres',
	"SELECT schedq.submit('live', queue => 'live', run_at => now() + interval '1 hour')");
my $finished = $node->safe_psql('postgres',
	"SELECT count(*) FROM schedq.task WHERE status IN ('done', 'failed', 'canceled', 'skipped')");
cmp_ok($finished, '>=', 4, 'there are finished tasks');
my $failed = $node->safe_psql('postgres',
	"SELECT count(*) FROM schedq.task WHERE status = 'failed'");
cmp_ok($failed, '>=', 1, 'some of them failed');
$node->safe_psql('postgres', "ALTER SYSTEM SET schedq.retention = '1s'");
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
$took = poll_until(
	$node, 'postgres',
	"SELECT count(*) FROM schedq.task WHERE status IN ('done', 'canceled', 'skipped')",
	'0', 10);
ok(defined $took, 'finished tasks older than schedq.retention are deleted');
note sprintf('deleted after %.2f s', $took // -1);
is($node->safe_psql('postgres', "SELECT count(*) FROM schedq.task WHERE status = 'failed'"),
	$failed, 'failed ones are kept: schedq.failed_retention is theirs');
$node->safe_psql('postgres', "ALTER SYSTEM SET schedq.failed_retention = '1s'");
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE status = 'failed'", '0', 10),
	'failed tasks older than schedq.failed_retention are deleted');
is($node->safe_psql('postgres', "SELECT status FROM schedq.task WHERE id = $live"),
	'pending', 'a live task is kept');

$node->stop;

done_testing();

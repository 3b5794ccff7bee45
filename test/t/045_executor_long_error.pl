#-------------------------------------------------------------------------
# test/t/045_executor_long_error.pl
#	  A SQL task whose command fails with an error message longer than
#	  fail()'s limit (64 kB: PostgreSQL quotes the bad value in "invalid
#	  input syntax" messages) is recorded as failed, with its error cut to
#	  the limit, by the same executor: the executor does not die of
#	  fail() refusing the message.  Before the fix the executor exited
#	  ("error must be at most 65536 bytes"), the attempt stayed 'running'
#	  until its lease expired, and every retry killed an executor again.
#	  (b) The task's owner holds its row in an open transaction while its
#	  command ends (cancel, not committed).  The executor's complete() and
#	  then fail() wait for that lock under the workers' one-second
#	  lock_timeout (before the fix, the command's lock_timeout -- the
#	  server's, 0 -- stayed the executor's for good: it waited as long as
#	  the owner liked), fail with it, and the executor goes on (before the
#	  fix, that would have stopped it); the reaper takes the attempt back
#	  when its lease expires, and the retry runs.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node('long_error', extension => 'postgres', conf => qq{
max_worker_processes = 16
schedq.enabled = on
schedq.sql_workers = 1
schedq.sql_idle_timeout = -1
schedq.reaper_interval = '200ms'
schedq.default_lease = '2s'
});
$node->safe_psql(
	'postgres', q{
	CREATE ROLE a LOGIN;
	GRANT USAGE ON SCHEMA schedq TO a;
	GRANT EXECUTE ON FUNCTION schedq.submit_sql, schedq.cancel TO a;
	GRANT SELECT ON schedq.task TO a;
});

# A first SQL task starts the executor (on demand), which stays (-1).
$node->safe_psql('postgres', q{SELECT schedq.submit_sql('SELECT 1')});
my $executor =
	"SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity"
  . " WHERE backend_type = 'schedq sql executor' AND datname = 'postgres'";
my $r = poll_value($node, 'postgres', $executor, sub { $_[0] =~ /^\d+$/ },
	30);
ok($r, 'one executor runs');
my $pid = $r ? $r->[1] : '';

my $id = $node->safe_psql(
	'postgres',
	q{SELECT schedq.submit_sql($$SELECT repeat('x', 100000)::int$$,
	                          max_attempts => 1)},
	extra_params => [ '-U', 'a' ]);

ok( defined poll_until(
		$node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $id",
		'failed', 30),
	'the task fails');
is( $node->safe_psql(
		'postgres',
		"SELECT left(last_error, 36) || '|' || (octet_length(last_error)"
		  . " <= 65536) FROM schedq.task WHERE id = $id"),
	'invalid input syntax for type intege|true',
	"its own error is recorded, cut to fail()'s limit");
is($node->safe_psql('postgres', $executor),
	$pid, 'the same executor recorded it and still runs');

# and runs the next task
$id = $node->safe_psql('postgres', 'SELECT schedq.submit_sql($$SELECT 1$$)',
	extra_params => [ '-U', 'a' ]);
ok( defined poll_until(
		$node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $id",
		'done', 30),
	'the next task runs');

# The owner holds the task's row while its command ends.
$id = $node->safe_psql('postgres',
	'SELECT schedq.submit_sql($$SELECT pg_sleep(2)$$, max_attempts => 2)',
	extra_params => [ '-U', 'a' ]);
ok( defined poll_until(
		$node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $id",
		'running', 30),
	'(b) the task runs');
my $offset = -s $node->logfile;
my $holder =
  $node->background_psql('postgres', extra_params => [ '-U', 'a' ]);
$holder->query_safe('BEGIN');
$holder->query_safe("SELECT schedq.cancel($id)");
$node->wait_for_log(
	qr/could not record the failure of task $id|schedq sql executor.*exited with exit code/,
	$offset);
is($node->safe_psql('postgres', $executor),
	$pid, '(b) the executor that could not record the failure still runs');
$holder->query_safe('ROLLBACK');
$holder->quit;
ok( defined poll_until(
		$node, 'postgres',
		"SELECT status || '|' || attempts FROM schedq.task WHERE id = $id",
		'done|2', 30),
	'(b) the attempt is taken back, and the retry runs');

# (c) Session advisory locks a command takes are released with its task:
# the next task in the same executor, of any role, does not inherit them.
$id = $node->safe_psql('postgres',
	'SELECT schedq.submit_sql($$SELECT pg_advisory_lock(4242)$$)',
	extra_params => [ '-U', 'a' ]);
ok( defined poll_until(
		$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $id",
		'done', 30),
	'(c) the task that took an advisory lock is done');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242}
	),
	'0',
	'(c) and its lock went with it');

$node->stop;
done_testing();

#-------------------------------------------------------------------------
# test/t/022_hostile_tenant.pl
#	  A role with only CONNECT (what PUBLIC has on a database) tries every
#	  vector we know of against a database that uses schedq, and holds on
#	  to what it can: advisory locks in schedq's old key space and every
#	  int4 pair near them, DROP / RENAME / CREATE ... TEMPLATE / SET
#	  TABLESPACE of the database, LOCK TABLE and DML on schedq's tables,
#	  schedq's functions, a long-running transaction holding a snapshot, a
#	  notification flood, and cancelling or terminating schedq's
#	  processes.  Afterwards, and while it still holds its locks and its
#	  transaction, another role's tasks flow within their usual latency:
#	  a delayed task is promoted and claimed, a SQL task runs, a periodic
#	  tick fires; and the launcher, the scheduler and the SQL executors
#	  are the same processes as before.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node('hostile', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.sql_workers = 1
schedq.sql_idle_timeout = -1
schedq.promote_interval = '10s'
});

$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql(
	'app', q{
CREATE EXTENSION schedq;
CREATE ROLE owner LOGIN;
GRANT USAGE ON SCHEMA schedq TO owner;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA schedq TO owner;
CREATE TABLE ran (at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON ran TO owner;
CREATE ROLE mallory LOGIN;
});

# A first SQL task starts the executor (on demand), which stays (-1).
$node->safe_psql('app', q{SELECT schedq.submit_sql('SELECT 1')});
my $processes = q{SELECT string_agg(backend_type || ' ' || pid, ', '
  ORDER BY backend_type, pid) FROM pg_stat_activity
  WHERE backend_type LIKE 'schedq%'};
ok( defined poll_until(
		$node, 'app', $processes,
		sub { $_[0] =~ /schedq scheduler/ && $_[0] =~ /schedq sql executor/ },
		20),
	'the scheduler and the SQL executor of app are up');
my $before = $node->safe_psql('app', $processes);

# Mallory's sessions that hold on to what they got: advisory locks in the
# old key space of schedq's locks (class 0x53510000 = 1397817344, every
# key 0..16, in both SQL key spaces), and an old snapshot.
my $squat = $node->background_psql('app', on_error_stop => 0);
$squat->query_safe('SET ROLE mallory');
$squat->query_safe(
	'SELECT pg_advisory_lock(1397817344, k), pg_advisory_lock((1397817344::bigint << 32) | k)
	   FROM generate_series(0, 16) k');
my $snapshot = $node->background_psql('app', on_error_stop => 0);
$snapshot->query_safe('SET ROLE mallory');
$snapshot->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$snapshot->query_safe('SELECT count(*) FROM pg_class');

# What mallory may try once: each must fail (or do nothing).
my @refused = (
	[ 'app', 'SELECT schedq.submit(\'x\')' ],
	[ 'app', 'SELECT * FROM schedq.claim(\'w\')' ],
	[ 'app', 'SELECT * FROM schedq.task' ],
	[ 'app', 'BEGIN; LOCK TABLE schedq.task IN ACCESS EXCLUSIVE MODE; COMMIT' ],
	[ 'app', 'DELETE FROM schedq.gate_event' ],
	[ 'app', 'SELECT schedq._promote_once()' ],
	[ 'postgres', 'DROP DATABASE app' ],
	[ 'postgres', 'DROP DATABASE app WITH (FORCE)' ],
	[ 'postgres', 'ALTER DATABASE app RENAME TO app2' ],
	[ 'postgres', 'CREATE DATABASE copy TEMPLATE app' ],
	[ 'postgres', 'ALTER DATABASE app SET TABLESPACE pg_default' ],
);
# mallory sees no backend_type of others' processes: give it the pids
for my $pid (split /\n/,
	$node->safe_psql('app',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'schedq%'}))
{
	push @refused, [ 'app', "SELECT pg_cancel_backend($pid)" ],
	  [ 'app', "SELECT pg_terminate_backend($pid)" ];
}
for my $try (@refused)
{
	my ($db, $sql) = @$try;
	my ($ret, $out, $err) =
	  $node->psql($db, "SET ROLE mallory; $sql", on_error_stop => 1);
	isnt($ret, 0, "refused to mallory: $sql");
	note "  $err";
}

# A notification flood is harmless: schedq listens to nothing.
$node->safe_psql('app',
	q{SET ROLE mallory; SELECT pg_notify('schedq', repeat('x', 7000)) FROM generate_series(1, 1000)});

# Meanwhile the owner's work flows as usual, while mallory holds on.
my $t = poll_value(
	$node, 'app',
	q{SELECT (SELECT count(*) FROM schedq.task WHERE status = 'available')},
	'0', 5);
$node->safe_psql('app',
	q{SET ROLE owner; SELECT schedq.submit('delayed', run_at => clock_timestamp() + interval '1 second')});
my $promoted = poll_until(
	$node, 'app',
	q{SELECT count(*) FROM schedq.task WHERE kind = 'delayed' AND status = 'available'},
	'1', 10);
ok(defined $promoted && $promoted < 4,
	'a delayed task of another role is promoted on time while mallory holds on')
  or diag 'took ' . ($promoted // 'forever');
is( $node->safe_psql(
		'app',
		q{SET ROLE owner; SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{default}')}
	),
	't',
	'and claimed and completed');

$node->safe_psql('app',
	q{SET ROLE owner; SELECT schedq.submit_sql('INSERT INTO public.ran DEFAULT VALUES')});
ok(defined poll_until($node, 'app', 'SELECT count(*) FROM ran', '1', 10),
	'a SQL task of another role runs');

$node->safe_psql('app',
	q{SET ROLE owner; SELECT schedq.schedule('tick', '@every 1 second', 'tick')});
ok( defined poll_until(
		$node, 'app',
		q{SELECT count(*) FROM schedq.task WHERE kind = 'tick'},
		'1', 10),
	'a periodic schedule of another role fires');

# The reaper works too: a lost lease is taken back.
$node->safe_psql('app',
	q{SET ROLE owner; SELECT schedq.submit('lost', queue => 'lost');
	  SELECT count(*) FROM schedq.claim('w', queues => '{lost}', lease => '1 second')});
ok( defined poll_until(
		$node, 'app',
		q{SELECT last_error FROM schedq.task WHERE kind = 'lost'},
		'lease expired', 10),
	'the reaper takes back a lost lease');

is($node->safe_psql('app', $processes),
	$before, 'the same launcher, scheduler and executor processes as before');


$squat->quit;
$snapshot->quit;
$node->stop;
done_testing();

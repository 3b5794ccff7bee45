#-------------------------------------------------------------------------
# test/t/011_crash.pl
#	  The scheduler through crashes: killed with SIGKILL (the postmaster
#	  restarts the cluster) or SIGTERM (the launcher starts it again), it
#	  comes back, one per database; and an immediate shutdown under load
#	  loses no committed submit, completes no task twice, and the tasks
#	  that were running come back when their lease expires.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use Time::HiRes qw(time usleep);

my $scheduler_of = "SELECT coalesce(string_agg(pid::text, ','), '')"
  . " FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'"
  . " AND datname = current_database()";
my $launcher_pid = "SELECT pid FROM pg_stat_activity"
  . " WHERE backend_type = 'schedq launcher'";

my $node = schedq_node('crash', extension => 'postgres', conf => qq{
max_worker_processes = 32
restart_after_crash = on
schedq.reaper_interval = '100ms'
});
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION schedq');

my $r = poll_value($node, 'postgres', $scheduler_of, sub { $_[0] =~ /^\d+$/ }, 5);
ok($r, 'a scheduler runs for postgres');
my $pid1 = $r ? $r->[1] : 0;
ok(poll_value($node, 'other', $scheduler_of, sub { $_[0] =~ /^\d+$/ }, 5),
	'a scheduler runs for other');

#
# (a) SIGKILL the scheduler: the postmaster reinitializes the cluster
# (crash recovery), and a scheduler runs for the database again.
#
my $offset = -s $node->logfile;
kill 'KILL', $pid1;
ok( eval {
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
		1;
	},
	'(a) killing the scheduler with SIGKILL makes the postmaster reinitialize');
$r = poll_value($node, 'postgres', $scheduler_of,
	sub { $_[0] =~ /^\d+$/ && $_[0] ne $pid1 }, 30);
ok($r, '(a) a new scheduler runs for postgres after crash recovery');
note sprintf('(a) back after %.2f s', $r ? $r->[0] : -1);
my $pid2 = $r ? $r->[1] : 0;
ok(poll_value($node, 'other', $scheduler_of, sub { $_[0] =~ /^\d+$/ }, 10),
	'(a) and one for other');
my $task = $node->safe_psql('postgres',
	"SELECT schedq.submit('after-crash', run_at => now() + interval '500 ms')");
ok( poll_value(
		$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $task",
		'available', 5),
	'(a) the new scheduler promotes a due task');

#
# (b) SIGTERM the scheduler: the launcher starts it again within a few
# seconds, without a cluster restart; never two at once meanwhile.
#
my $lpid = $node->safe_psql('postgres', $launcher_pid);
$offset = -s $node->logfile;
kill 'TERM', $pid2;
my $seen_two = 0;
$r = poll_value(
	$node, 'postgres', $scheduler_of,
	sub {
		$seen_two = 1 if $_[0] =~ /,/;
		return $_[0] =~ /^\d+$/ && $_[0] ne $pid2;
	},
	5);
ok($r, '(b) after SIGTERM, a new scheduler runs within 5 s');
note sprintf('(b) back after %.2f s', $r ? $r->[0] : -1);
my $pid3 = $r ? $r->[1] : 0;
ok(!$seen_two, '(b) never two schedulers for the database meanwhile');
is($node->safe_psql('postgres', $launcher_pid), $lpid,
	'(b) the same launcher: no cluster restart');
unlike(
	PostgreSQL::Test::Utils::slurp_file($node->logfile, $offset),
	qr/reinitializing/,
	'(b) SIGTERM is not a crash');

#
# (c) One scheduler per database, and scheduler_status() agrees.
#
my $status = "SELECT string_agg(datname || ':' || pid, ',' ORDER BY datname)"
  . " FROM schedq.scheduler_status()";
my $activity = "SELECT string_agg(datname || ':' || pid, ',' ORDER BY datname)"
  . " FROM pg_stat_activity WHERE backend_type = 'schedq scheduler'";
my $other_pid = $node->safe_psql('other', $scheduler_of);
is($node->safe_psql('postgres', $status),
	"other:$other_pid,postgres:$pid3",
	'(c) scheduler_status() shows one row per database');
is($node->safe_psql('postgres', $activity),
	"other:$other_pid,postgres:$pid3",
	'(c) pg_stat_activity shows one scheduler per database');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT datname FROM schedq.scheduler_status()"
		  . " GROUP BY datname HAVING count(*) > 1) d"),
	'0', '(c) no database has two rows in scheduler_status()');

#
# (d) Immediate shutdown under load.  A submitter prints the id of each
# task whose submit committed; two workers claim, then complete each task
# and log it in done_log in the same transaction; a holder has claimed
# five tasks of its own queue and never finishes them.
#
$node->safe_psql(
	'postgres', q{
	CREATE TABLE done_log (task_id bigint NOT NULL, worker text NOT NULL,
	                       at timestamptz NOT NULL DEFAULT clock_timestamp());
	SELECT schedq.submit('held', queue => 'held') FROM generate_series(1, 5);
});

my $dir = tempdir(CLEANUP => 1);
my @psql = ('psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'));
my %proc;

open(my $fh, '>', "$dir/submit.sql") or die;
print $fh "SELECT schedq.submit('load', payload => '{\"i\": $_}');\n" for 1 .. 20000;
close $fh;
$proc{submitter} = IPC::Run::start([ @psql, '-f', "$dir/submit.sql" ],
	'<', \undef, '>', "$dir/submitted.out", '2>', "$dir/submitter.err");

for my $w (1, 2)
{
	open($fh, '>', "$dir/worker$w.sql") or die;
	print $fh "CREATE TEMP TABLE mine (id bigint, token text);\n";
	for (1 .. 20000)
	{
		print $fh
		  "INSERT INTO mine SELECT id, token FROM schedq.claim('w$w',"
		  . " queues => '{default}', n => 3, lease => '2 seconds');\n"
		  . "WITH c AS (DELETE FROM mine RETURNING id, token)"
		  . " INSERT INTO done_log (task_id, worker)"
		  . " SELECT id, 'w$w' FROM c WHERE schedq.complete(token);\n";
	}
	close $fh;
	$proc{"worker$w"} = IPC::Run::start([ @psql, '-f', "$dir/worker$w.sql" ],
		'<', \undef, '>', "$dir/worker$w.out", '2>', "$dir/worker$w.err");
}

# Let the load run until a fair amount has been submitted and completed.
ok( poll_value(
		$node, 'postgres',
		"SELECT (SELECT count(*) FROM schedq.task WHERE kind = 'load') >= 1000"
		  . " AND (SELECT count(*) FROM done_log) >= 500",
		't', 30),
	'(d) under load: tasks are submitted and completed');
my $held = $node->safe_psql('postgres',
	"SELECT string_agg(id::text, ',' ORDER BY id)"
	  . " FROM schedq.claim('holder', queues => '{held}', n => 5, lease => '2 seconds')");
is(scalar(split /,/, $held), 5, '(d) the holder runs five tasks');

$node->stop('immediate');
for my $p (sort keys %proc)
{
	# they lost their connection and exit by themselves
	eval { $proc{$p}->finish; };
}
$node->start;

my @submitted = grep { /^\d+$/ } split /\n/,
  PostgreSQL::Test::Utils::slurp_file("$dir/submitted.out");
note scalar(@submitted) . ' submits returned before the shutdown';
ok(@submitted >= 1000, '(d) the submitter saw its submits return');
note $node->safe_psql('postgres',
	"SELECT count(*) FROM schedq.task WHERE status = 'running'")
  . ' tasks were running at the shutdown';
my $ids = join(',', @submitted);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM unnest('{$ids}'::bigint[]) s(id)"
		  . " WHERE NOT EXISTS (SELECT FROM schedq.task t WHERE t.id = s.id)"),
	'0',
	'(d) every task whose submit returned is still there after the restart');

my $dups = "SELECT count(*) - count(DISTINCT task_id) FROM done_log";
is($node->safe_psql('postgres', $dups), '0', '(d) no task was completed twice');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM done_log d JOIN schedq.task t ON t.id = d.task_id"
		  . " WHERE t.status <> 'done'"),
	'0',
	'(d) every logged completion is a done task');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM schedq.task t WHERE t.status = 'done'"
		  . " AND NOT EXISTS (SELECT FROM done_log d WHERE d.task_id = t.id)"),
	'0',
	'(d) every done task has its completion logged (no half-committed complete)');

# The held tasks come back once their lease has expired.
$r = poll_value(
	$node, 'postgres',
	"SELECT count(*) FROM schedq.task WHERE id IN ($held)"
	  . " AND status IN ('pending', 'available') AND attempts = 1"
	  . " AND last_error = 'lease expired'",
	'5', 15);
ok($r, '(d) the tasks that were running come back after their lease expired');
ok( poll_value(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE status = 'running'",
		'0', 15),
	'(d) no task is left running');

# Drain: every task can still be claimed and completed, once.
$r = poll_value(
	$node, 'postgres', q{
	WITH c AS (SELECT id, token FROM schedq.claim('drain', n => 1000, wait => '1s'))
	INSERT INTO done_log (task_id, worker)
	SELECT id, 'drain' FROM c WHERE schedq.complete(token);
	SELECT count(*) FROM schedq.task WHERE status <> 'done';
	},
	'0', 30);
ok($r, '(d) every task is completed in the end');
is($node->safe_psql('postgres', $dups), '0', '(d) still no task completed twice');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM schedq.task WHERE id IN ($held)"
		  . " AND status = 'done' AND attempts = 2"),
	'5',
	'(d) the held tasks were completed by their second attempt');
is( $node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM schedq.task) = (SELECT count(*) FROM done_log)"),
	't',
	'(d) one logged completion per task');

$node->stop;

done_testing();

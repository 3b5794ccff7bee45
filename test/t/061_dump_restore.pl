#-------------------------------------------------------------------------
# test/t/061_dump_restore.pl
#	  pg_dump of a database using schedq, restored into a fresh cluster
#	  with schedq preloaded (custom format with pg_restore --create, and
#	  plain format with psql): tasks, runs, schedules, budgets, limits and
#	  paused queues come back row for row, sequences go on after the
#	  highest id; the launcher starts a scheduler in each restored
#	  database; a pending task is promoted; a periodic schedule fires once
#	  for the ticks it missed, then once per tick; tasks running when the
#	  dump was taken are reclaimed after their lease and complete once.
#	  Grant keys are not dumped: the restored database signs with a key of
#	  its own, and grants issued before the dump do not verify there (they
#	  sign the database OID as well).
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use SchedqState;

# The source: its reaper passes an hour apart, so that the claims made by
# fill_state are still running when the dump is taken.
my $old = schedq_node('source', conf => qq{
max_worker_processes = 32
schedq.sql_workers = 1
schedq.reaper_interval = '1h'
});
$old->safe_psql('postgres', 'CREATE DATABASE src');
$old->safe_psql('src',      'CREATE EXTENSION schedq');
ok( defined poll_until(
		$old, 'src',
		"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = 'src' AND pid IS NOT NULL",
		'1', 30),
	'the scheduler of the source database runs');

my $state = fill_state($old, 'src', '3 seconds');
ok(settle($old, 'src'), 'the source scheduler has settled the gates');

# Quiesce the source (its scheduler idles), then add what must happen
# after the restore: a task due in 2 seconds, a schedule every 2 seconds.
$old->safe_psql('postgres', 'ALTER SYSTEM SET schedq.enabled = off');
$old->reload;
ok( defined poll_until(
		$old, 'src', "SELECT state FROM schedq.scheduler_status() WHERE datname = 'src'",
		'disabled', 30),
	'the source scheduler is disabled');
my $due = $old->safe_psql('src',
	q{SELECT schedq.submit('due', queue => 'due', run_at => now() + interval '2 seconds')});
$old->safe_psql('src',
	q{SELECT schedq.schedule('every2', '*/2 * * * * *', 'tick', queue => 'tick')});
is( $old->safe_psql(
		'src', q{SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM schedq.task}),
	'available,canceled,done,failed,pending,running,skipped',
	'the source has tasks in every status');

my $dir = PostgreSQL::Test::Utils::tempdir();
command_ok([ 'pg_dump', '-Fc', '-f', "$dir/src.dump", '-d', $old->connstr('src') ],
	'pg_dump -Fc of the source database');
command_ok([ 'pg_dump', '-f', "$dir/src.sql", '-d', $old->connstr('src') ],
	'pg_dump (plain) of the source database');
my $rows_src = rows_of($old, 'src', grant_key => 'false', unparked => 1);
my $key_src = $old->safe_psql('src', 'SELECT string_agg(md5(secret), \',\') FROM schedq.grant_key');
my $max_task = $old->safe_psql('src', 'SELECT max(id) FROM schedq.task');
my $max_run = $old->safe_psql('src', 'SELECT max(id) FROM schedq.run');

# The target: a fresh cluster, schedq preloaded, the roles the tasks name
# (pg_dumpall --globals-only would bring them), the scheduler disabled
# until the rows are compared.
my $new = schedq_node('target', conf => qq{
max_worker_processes = 32
schedq.sql_workers = 1
schedq.enabled = off
});
$new->safe_psql('postgres', 'CREATE ROLE app');

command_ok(
	[
		'pg_restore', '--create', '--exit-on-error', '-d', $new->connstr('postgres'),
		"$dir/src.dump"
	],
	'pg_restore --create of the custom dump: no error');
$new->safe_psql('postgres', 'CREATE DATABASE r2');
command_ok(
	[
		'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', "$dir/src.sql",
		'-d', $new->connstr('r2')
	],
	'psql restore of the plain dump: no error');

for my $db (qw(src r2))
{
	same_text(rows_of($new, $db, grant_key => 'false', unparked => 1),
		$rows_src, "$db: every row and sequence is back", [ 'source', "restored-$db" ]);
	ok( defined poll_until(
			$new, $db,
			"SELECT state FROM schedq.scheduler_status() WHERE datname = '$db' AND pid IS NOT NULL",
			'disabled', 30),
		"$db: the launcher started a scheduler in the restored database");
	is( $new->safe_psql(
			$db, q{SELECT count(*) || ':' || (min(kid) = 1) FROM schedq.grant_key}),
		'1:true', "$db: one grant key, made by CREATE EXTENSION");
	isnt($new->safe_psql($db, 'SELECT md5(secret) FROM schedq.grant_key'),
		$key_src, "$db: not the source's secret (keys are not dumped)");
}

#
# Grants of the source do not verify in the restored database.
#
my ($r1, $r2) = sort { $a <=> $b } keys %{ $state->{running} };
is( $new->safe_psql('src', qq{SELECT schedq.verify_grant('$state->{running}{$r1}')}),
	'bad_signature', 'a grant issued before the dump does not verify after restore');
my ($ret, $out, $err) =
  $new->psql('src',
	qq{\\set VERBOSITY verbose\nSELECT schedq.complete('$state->{running}{$r1}')});
like($err, qr/ERROR:  28000/, 'and complete refuses it (28000)');

#
# The scheduler at work in the restored database.
#
my $fired0 = $new->safe_psql('src', q{SELECT fired FROM schedq.periodic WHERE name = 'every2'});
$new->safe_psql('postgres', 'ALTER SYSTEM SET schedq.enabled = on');
$new->reload;

# A scheduler unparks every task when it starts (the gate events of the
# unlogged gate_event table are not dumped); its promotion pass parks
# again what is still held back.
ok( defined poll_until(
		$new, 'src',
		q{SELECT string_agg(kind || ':' || parked_on, ',' ORDER BY kind)
			FROM schedq.task WHERE parked AND status = 'pending'},
		'c2:limit,k2:deps,l2:lock', 30),
	'the restored scheduler parks the tasks held back by their gates again');

ok( defined poll_until(
		$new, 'src', "SELECT status FROM schedq.task WHERE id = $due",
		'available', 30),
	'a pending task of the dump is promoted');

# Running at dump time, lease long expired: reclaimed, then claimed and
# completed exactly once.
ok( defined poll_until(
		$new, 'src',
		"SELECT string_agg(status || ':' || attempts || ':' || coalesce(last_error, ''), ',' ORDER BY id)
		   FROM schedq.task WHERE id IN ($r1, $r2)",
		'available:1:lease expired,available:1:lease expired', 30),
	'tasks running at dump time are reclaimed after their lease');
my $done = $new->safe_psql(
	'src', q{
	CREATE TEMP TABLE g AS SELECT id, token FROM schedq.claim('w9', queues => '{work}', n => 10);
	SELECT string_agg(schedq.complete(token)::text, ',' ORDER BY id) FROM g;
	SELECT string_agg(schedq.complete(token)::text, ',' ORDER BY id) FROM g;
	SELECT string_agg(schedq.verify_grant(token), ',' ORDER BY id) FROM g;});
is($done, "true,true\nfalse,false\nstale,stale",
	'they are claimed again and complete once (new grants, signed by the new key)');
is( $new->safe_psql(
		'src', "SELECT string_agg(status || ':' || attempts, ',' ORDER BY id) FROM schedq.task WHERE id IN ($r1, $r2)"),
	'done:2,done:2', 'done after their second attempt');

# The schedule: the ticks missed between dump and restore fire once, not
# once each; then each tick fires once (while a tick's task is unfinished
# the next ticks are skipped).
ok( defined poll_until(
		$new, 'src', q{SELECT count(*) FROM schedq.task WHERE periodic = 'every2'},
		'1', 30),
	'the schedule fires in the restored database');
ok( defined poll_until(
		$new, 'src', q{SELECT skipped > 0 FROM schedq.periodic WHERE name = 'every2'},
		't', 30),
	'its next ticks pass (skipped: the first task is not finished)');
is($new->safe_psql('src', q{SELECT count(*) FROM schedq.task WHERE periodic = 'every2'}),
	'1', 'the missed ticks fired once, not once each');
$new->safe_psql('src',
	q{SELECT schedq.complete(token) FROM schedq.claim('w9', queues => '{tick}')});
ok( defined poll_until(
		$new, 'src', q{SELECT count(*) FROM schedq.task WHERE periodic = 'every2'},
		'2', 30),
	'once its task is done, the next tick fires');
is( $new->safe_psql(
		'src', qq{
	SELECT (p.fired - $fired0) || ':' || count(t.id) || ':' || count(DISTINCT t.run_at)
	       || ':' || bool_and(extract(microseconds FROM t.run_at)::bigint % 2000000 = 0)
	  FROM schedq.periodic p LEFT JOIN schedq.task t ON t.periodic = p.name
	 WHERE p.name = 'every2' GROUP BY p.fired}),
	'2:2:2:true',
	'one task per tick fired, each on a tick of the schedule');

#
# The rest of the state works: sequences go on, paused queue, budgets,
# the gates.
#
my ($task_id, $run_id) = split /\|/,
  $new->safe_psql('src', q{SELECT schedq.submit('new', queue => 'new') || '|' || schedq.create_run('new')});
ok($task_id > $max_task && $run_id > $max_run,
	"new ids go on after the restored ones (task $task_id > $max_task, run $run_id > $max_run)");
is($new->safe_psql('src', q{SELECT count(*) FROM schedq.claim('w9', queues => '{held}')}),
	'0', 'the paused queue is still paused');
is( $new->safe_psql(
		'src', q{SELECT string_agg(kind, ',') FROM schedq.claim('w9', queues => '{q}', n => 10)}),
	'a1,a2,a3', 'available tasks are claimed in claim order');
is($new->safe_psql('src', q{SELECT used FROM schedq.budget WHERE name = 'b1'}),
	'3', 'the budget counts the claim');
is( $new->safe_psql(
		'src', q{SELECT string_agg(kind, ',' ORDER BY kind) FROM (
				  SELECT kind, schedq.complete(token) FROM schedq.claim('w9', queues => '{gate}', n => 10)) c}),
	'c1,l1', 'the gate holders are claimed and completed');
ok( defined poll_until(
		$new, 'src',
		q{SELECT string_agg(kind, ',' ORDER BY kind) FROM schedq.task
		   WHERE queue = 'gate' AND status = 'available'},
		'c2,l2', 30),
	'and their gate events free the tasks parked behind them');
is( $new->safe_psql(
		'src', q{SELECT string_agg(kind, ',') FROM (
				  SELECT kind, schedq.complete(token) FROM schedq.claim('w9', queues => '{wf2}')) c}),
	'k1', 'a workflow step completes');
ok( defined poll_until(
		$new, 'src', q{SELECT status FROM schedq.task WHERE kind = 'k2'},
		'available', 30),
	'and its dependent is released');

#
# A dump taken at 1.0, which still dumped the grant keys, restored under
# the current version: pg_dump's CREATE EXTENSION installs it, and its own first key takes
# kid 1, so the COPY of the old keys fails on it -- the one error of such
# a restore, and a harmless one: everything else is back and works.
#
$old->safe_psql('postgres', 'CREATE DATABASE v10');
$old->safe_psql('v10', q{CREATE EXTENSION schedq VERSION '1.0';
	SELECT schedq.submit('from-1.0', queue => 'v10');});
command_ok([ 'pg_dump', '-Fc', '-f', "$dir/v10.dump", '-d', $old->connstr('v10') ],
	'pg_dump -Fc of a database at 1.0');
$new->safe_psql('postgres', 'CREATE DATABASE v10');
my ($stdout, $stderr);
my $rc = PostgreSQL::Test::Utils::run_log(
	[ 'pg_restore', '-d', $new->connstr('v10'), "$dir/v10.dump" ],
	'>', \$stdout, '2>', \$stderr);
my @errors = $stderr =~ /^pg_restore: error: (.*)$/mg;
is_deeply(\@errors,
	[ 'COPY failed for table "grant_key": ERROR:  duplicate key value violates unique constraint "grant_key_pkey"' ],
	'restoring a 1.0 dump under the current version: the one error is the COPY of the old grant keys');
is( $new->safe_psql(
		'v10', q{SELECT extversion FROM pg_extension WHERE extname = 'schedq';
				 SELECT kind || ':' || schedq.complete(token) FROM schedq.claim('w', queues => '{v10}')}),
	$new->safe_psql('v10',
		"SELECT default_version FROM pg_available_extensions WHERE name = 'schedq'") . "\nfrom-1.0:true",
	'and the restored 1.0 queue works at the current version');

done_testing();

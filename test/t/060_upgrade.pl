#-------------------------------------------------------------------------
# test/t/060_upgrade.pl
#	  ALTER EXTENSION schedq UPDATE from each released version (1.0, 1.1)
#	  to the default version, on a live database, with this library
#	  loaded:
#	  (a) the catalog it leaves equals a fresh install's, both as
#	      normalised catalog facts (SchedqState::catalog_of) and as
#	      normalised `pg_dump --schema-only --binary-upgrade` output (which,
#	      unlike a plain dump, shows the extension's own objects); any
#	      difference fails, with the diff printed;
#	  (b) every row of every schedq table is as it was, and available
#	      tasks are claimable (a paused queue's once resumed);
#	  (c) tokens issued before the update still complete, heartbeat, fail;
#	  (d) the scheduler keeps promoting across the update without a
#	      restart: a task due just after it is promoted, a gate event
#	      after it frees a parked task.
#	  And a database left at 1.0 keeps working under this library: its
#	  scheduler says once in the log that it is older, and promotes; claim
#	  and complete work.
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
use Time::HiRes qw(time usleep);

my $node = schedq_node('upgrade', conf => qq{
max_worker_processes = 32
schedq.sql_workers = 1
});

# Wait (with a deadline) until the server log, from $offset on, matches
# $re; returns the number of matches, 0 on timeout.
sub log_matches
{
	my ($re, $offset, $timeout) = @_;
	my $start = time;
	for (;;)
	{
		my $log = substr(slurp_file($node->logfile), $offset);
		my $n = () = $log =~ /$re/g;
		return $n if $n || time - $start > $timeout;
		usleep(100_000);
	}
}

sub scheduler_pid
{
	my ($db) = @_;
	my $r = poll_value($node, 'postgres',
		"SELECT pid FROM schedq.scheduler_status() WHERE datname = '$db' AND pid IS NOT NULL",
		sub { $_[0] =~ /^\d+$/ }, 30);
	return $r ? $r->[1] : undef;
}

my $latest = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'schedq'");
my $latest_re = quotemeta($latest);
my @from = ('1.0', '1.1');

my $log_start = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE EXTENSION schedq');
for my $db ((map { dbname($_) } @from), 'fresh', 'old')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
}
$node->safe_psql(dbname($_), "CREATE EXTENSION schedq VERSION '$_'") for @from;
$node->safe_psql('old',   "CREATE EXTENSION schedq VERSION '1.0'");
$node->safe_psql('fresh', 'CREATE EXTENSION schedq');
# The grants the fill gives role app, in the fresh database too: privileges
# a DBA granted are part of the catalog compared.
grant_app($node, $_) for ((map { dbname($_) } @from), 'fresh');
# A worker set up as the 1.x documentation said: a member of the
# submitting role.  The update records it as a work grant.
$node->safe_psql('postgres', 'CREATE ROLE old_worker; GRANT app TO old_worker');
$node->safe_psql($_, 'GRANT USAGE ON SCHEMA schedq TO old_worker;
	GRANT EXECUTE ON FUNCTION schedq.claim, schedq.complete TO old_worker')
  for ((map { dbname($_) } @from), 'fresh');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'schedq'"),
	$latest, "database fresh is a fresh $latest install");

# The database updated from version $from.
sub dbname
{
	my ($from) = @_;
	(my $db = "up$from") =~ s/\.//g;
	return $db;
}

# pg_dump --binary-upgrade dumps the extension's member objects too.
# Normalised: OIDs, relfilenodes, frozen xids and multixacts, sequence values (data,
# compared by rows_of) and the \restrict key left out, the
# extension's config arrays (OIDs, in the order the tables were marked)
# replaced (catalog_of compares them by name), dropped columns (an update
# may drop one) left out, trailing commas dropped.
sub schema_dump
{
	my ($db) = @_;
	my $file = PostgreSQL::Test::Utils::tempdir() . "/$db.sql";
	command_ok(
		[
			'pg_dump', '--schema-only', '--binary-upgrade', '-f', $file,
			'-d',      $node->connstr($db)
		],
		"pg_dump --schema-only --binary-upgrade of $db");
	my @out;
	my $skip = 0;
	for my $line (split /\n/, slurp_file($file))
	{
		if ($line =~ /^-- For binary upgrade, recreate dropped column/)
		{
			$skip = 1;
			next;
		}
		if ($skip)
		{
			$skip = 0 if $line =~ /DROP COLUMN/;
			next;
		}
		next if $line =~ /^\\(un)?restrict /;
		next if $line =~ /binary_upgrade_set_next_/;
		next if $line =~ /pg\.dropped\./;
		$line =~ s/relfrozenxid = '\d+'/relfrozenxid = <xid>/;
		$line =~ s/relminmxid = '\d+'/relminmxid = <mxid>/;
		$line =~ s/^WHERE oid = '\d+';/WHERE oid = <oid>;/;
		$line =~ s/(pg_catalog\.setval\('[^']*'), .*\);/$1, <value>);/;
		$line =~
		  s/(binary_upgrade_create_empty_extension\('schedq', 'schedq', \w+, '[^']*'), '\{[^}]*\}', '\{.*?\}'/$1, <config>, <conditions>/;
		$line =~ s/,\s*$//;
		push @out, $line;
	}
	return join("\n", @out) . "\n";
}
sub update_from
{
	my ($from) = @_;
	my $db = dbname($from);
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'schedq'"),
		$from, "database $db starts at schedq $from");
	my $pid_before = scheduler_pid($db);
	ok(defined $pid_before, "the scheduler of the $from database runs");
	ok( log_matches(
			qr/database "$db" has schedq \Q$from\E, older than the library's $latest_re/,
			$log_start, 30),
		"the scheduler says the $from database is older than the library");

	#
	# Fill the $from database with state of every kind, let the scheduler settle
	# it, then submit the task that falls due just after the update.
	#
	my $state = fill_state($node, $db, '1 hour');
	is(scalar keys %{ $state->{running} }, 2, 'two live claims, tokens held');
	ok(settle($node, $db), 'the scheduler has promoted and parked what it could');
	is( $node->safe_psql(
			$db,
			q{SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM schedq.task}),
		'available,canceled,done,failed,pending,running,skipped',
		'tasks in every status');
	is( $node->safe_psql(
			$db,
			q{SELECT string_agg(kind || ':' || parked_on, ',' ORDER BY kind)
				FROM schedq.task WHERE parked AND status = 'pending'}),
		'c2:limit,k2:deps,l2:lock',
		'tasks parked behind a concurrency limit, a dependency, a lock key');

	my ($due_id, $due_at) = split /\|/,
	  $node->safe_psql($db,
		q{SELECT schedq.submit('due-after', queue => 'post',
			run_at => now() + interval '6 seconds') AS id \gset
		  SELECT id || '|' || run_at FROM schedq.task WHERE id = :id});
	my $rows_before = rows_of($node, $db, task => "id <> $due_id");

	#
	# The update.
	#
	my $update_log = -s $node->logfile;
	is( $node->safe_psql(
			$db, qq{
		ALTER EXTENSION schedq UPDATE;
		SELECT extversion FROM pg_extension WHERE extname = 'schedq';
		SELECT status || ':' || (clock_timestamp() < run_at) FROM schedq.task WHERE id = $due_id;
	}),
		"$latest\npending:true",
		"ALTER EXTENSION UPDATE brings the database to $latest before the task is due");
	is( $node->safe_psql($db,
			q{SELECT string_agg(worker || ':' || owner, ',') FROM schedq.work_grant}),
		'old_worker:app',
		"the update from $from records the worker's membership as a work grant");

	#
	# (a) The catalog equals a fresh install's.
	#
	same_text(catalog_of($node, $db), catalog_of($node, 'fresh'),
		"catalog after the update equals a fresh $latest install",
		[ "fresh-$latest", "updated-$from" ]);

	same_text(schema_dump($db), schema_dump('fresh'),
		"pg_dump --binary-upgrade after the update equals a fresh $latest install's",
		[ "fresh-$latest.sql", "updated-$from.sql" ]);

	#
	# (b) Every row is intact.
	#
	same_text(rows_of($node, $db, task => "id <> $due_id"),
		$rows_before, 'every row of every schedq table is as it was before the update',
		[ 'before', 'after' ]);

	#
	# (d) The scheduler keeps promoting: same process, the task due after the
	# update is promoted, and it noticed the new version.
	#
	ok( defined poll_until(
			$node, $db, "SELECT status FROM schedq.task WHERE id = $due_id",
			'available', 30),
		'a task due after the update is promoted by the scheduler');
	is(scheduler_pid($db), $pid_before, 'by the same scheduler process: no restart');
	ok(log_matches(qr/database "$db" now has schedq $latest_re/, $update_log, 30),
		'the scheduler saw the update');

	#
	# (c) Tokens issued before the update.
	#
	my ($t1, $t2) = map { $state->{running}{$_} } sort keys %{ $state->{running} };
	is( $node->safe_psql(
			$db, qq{SELECT schedq.verify_grant('$t1') || ',' || schedq.verify_grant('$t2')}),
		'valid,valid', "tokens issued by $from verify after the update");
	is($node->safe_psql($db, qq{SELECT schedq.complete('$t1', result => '{"after": true}')}),
		't', "a token issued by $from completes its task after the update");
	is($node->safe_psql($db, qq{SELECT schedq.heartbeat('$t2') IS NOT NULL}),
		't', 'another heartbeats');
	is($node->safe_psql($db, qq{SELECT schedq.fail('$t2', 'later')}),
		'pending', 'and fails (to be retried)');
	is($node->safe_psql($db, qq{SELECT schedq.complete('$t1')}),
		'f', 'a finished attempt\'s grant is stale, as ever');

	#
	# (b) Available tasks are claimable; a paused queue's after resume_queue;
	# a gate event frees a parked task.
	#
	is( $node->safe_psql(
			$db, q{SELECT string_agg(kind, ',') FROM schedq.claim('w2', queues => '{q}', n => 10)}),
		'a1,a2,a3', 'the available tasks of queue q are claimed, in claim order');
	is( $node->safe_psql(
			$db, q{SELECT count(*) FROM schedq.claim('w2', queues => '{held}')}),
		'0', 'the paused queue stays paused');
	is( $node->safe_psql(
			$db, q{SELECT schedq.resume_queue('held');
					SELECT string_agg(kind, ',') FROM schedq.claim('w2', queues => '{held}')}),
		"\nh1", 'and is claimable once resumed');
	is( $node->safe_psql(
			$db, q{SELECT string_agg(kind, ',' ORDER BY kind) FROM (
					  SELECT kind, schedq.complete(token) FROM schedq.claim('w2', queues => '{gate}', n => 10)) c}),
		'c1,l1', 'gated tasks that were available are claimed and completed');
	ok( defined poll_until(
			$node, $db,
			q{SELECT string_agg(kind, ',' ORDER BY kind) FROM schedq.task
			   WHERE queue = 'gate' AND status = 'available'},
			'c2,l2', 30),
		'the gate events free the parked tasks');
	is( $node->safe_psql(
			$db, q{SELECT (SELECT used FROM schedq.budget WHERE name = 'b1')}),
		'3', "the budget of $from counts the claim of its task");
}

update_from($_) for @from;

# With the grant, the membership can go: the worker keeps working for app
# and can no longer act as app.
$node->safe_psql('postgres', 'REVOKE app FROM old_worker');
for my $db (map { dbname($_) } @from)
{
	my $id = $node->safe_psql($db,
		q{SET ROLE app; SELECT schedq.submit('after-revoke', queue => 'wg')});
	my ($rc, $out, $err) = $node->psql($db, q{SET SESSION AUTHORIZATION old_worker;
		SELECT id || ':' || schedq.complete(token) FROM schedq.claim('w', queues => '{wg}');
		SET ROLE app;});
	is($out, "$id:true",
		"$db: the worker claims app's task by its work grant once the membership is revoked");
	like($err, qr/permission denied to set role "app"/, "$db: and cannot act as app");
}

#
# A database left at 1.0 works under this library.
#
is($node->safe_psql('old', "SELECT extversion FROM pg_extension WHERE extname = 'schedq'"),
	'1.0', 'database old is still at 1.0');
ok(defined scheduler_pid('old'), 'its scheduler runs');
my $old_id = $node->safe_psql('old',
	q{SELECT schedq.submit('old', run_at => now() + interval '1 second')});
ok( defined poll_until(
		$node, 'old', "SELECT status FROM schedq.task WHERE id = $old_id",
		'available', 30),
	'its scheduler promotes a due task');
my $columns_declined = q{SELECT COALESCE(sum(value), 0) FROM schedq.metrics()
	WHERE name = 'direct_declined_columns'};
my $declined_before = $node->safe_psql('old', $columns_declined);
is( $node->safe_psql(
		'old', q{SELECT id || ':' || schedq.complete(token) FROM schedq.claim('w')}),
	"$old_id:true", 'claim and complete work on the 1.0 catalog');
is($node->safe_psql('old', $columns_declined), $declined_before,
	'through the direct writes: a table without the later versions\' columns is theirs');
is( log_matches(
		qr/database "old" has schedq 1\.0, older than the library's $latest_re/,
		$log_start, 30),
	1,
	'the scheduler of the 1.0 database said it is older, once');

done_testing();

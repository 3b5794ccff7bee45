#-------------------------------------------------------------------------
# test/t/010_launcher.pl
#	  The launcher runs exactly one scheduler per database where schedq is
#	  installed, discovered by itself: none while the extension is
#	  installed nowhere; one within 5 s of CREATE EXTENSION (also of
#	  schedq_cron's, CASCADE); it leaves within
#	  10 s of DROP EXTENSION and stays away; DROP DATABASE (with or without
#	  FORCE), ALTER DATABASE ... RENAME TO / SET TABLESPACE and CREATE
#	  DATABASE ... TEMPLATE work on a database that has a scheduler; and
#	  databases that come and go do not use up the room for schedulers.
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

# Schedulers of one database, as pg_stat_activity shows them.
sub schedulers_of
{
	my ($datname) = @_;
	return "SELECT count(*) FROM pg_stat_activity"
	  . " WHERE backend_type = 'schedq scheduler' AND datname = '$datname'";
}

sub scheduler_pid
{
	my ($node, $datname) = @_;
	return $node->safe_psql('postgres',
		    "SELECT string_agg(pid::text, ',') FROM pg_stat_activity"
		  . " WHERE backend_type = 'schedq scheduler' AND datname = '$datname'");
}

my $all_schedulers = "SELECT count(*) FROM pg_stat_activity"
  . " WHERE backend_type = 'schedq scheduler'";

my $node = schedq_node('launcher', conf => qq{
max_worker_processes = 32
});

#
# (a) schedq installed nowhere: the launcher runs, no scheduler does.
#
ok( defined poll_until(
		$node,
		'postgres',
		"SELECT count(*) FILTER (WHERE backend_type = 'schedq launcher') || '/'"
		  . " || count(*) FILTER (WHERE backend_type = 'schedq scheduler')"
		  . " FROM pg_stat_activity",
		'1/0',
		10),
	'(a) the launcher runs and no scheduler runs while schedq is installed nowhere'
);
is(stays($node, 'postgres', $all_schedulers, '0', 2),
	undef, '(a) no scheduler appears over the next 2 s');
is( $node->safe_psql('postgres',
		"SELECT datname FROM pg_stat_activity WHERE backend_type = 'schedq launcher'"),
	'',
	'(a) the launcher is connected to no database');

#
# (b) CREATE EXTENSION in database A: a scheduler for A within 5 s.
#
$node->safe_psql('postgres', 'CREATE DATABASE dba');
$node->safe_psql('dba', 'CREATE EXTENSION schedq');
my $took = poll_until($node, 'postgres', schedulers_of('dba'), '1', 5);
ok(defined $took, '(b) a scheduler for dba appears within 5 s of CREATE EXTENSION');
note sprintf('(b) scheduler for dba after %.2f s', $took // -1);
my $pid_a = scheduler_pid($node, 'dba');
like($pid_a, qr/^\d+$/, '(b) exactly one scheduler for dba');
ok( defined poll_until(
		$node, 'dba',
		"SELECT datname, pid FROM schedq.scheduler_status()"
		  . " WHERE state IN ('idle', 'promoting', 'reaping')",
		"dba|$pid_a", 5),
	'(b) scheduler_status() shows that scheduler for dba, at work');

# It serves A: a task due in half a second becomes available by itself.
my $task = $node->safe_psql('dba',
	"SELECT schedq.submit('b', run_at => now() + interval '500 ms')");
ok( defined poll_until(
		$node, 'dba', "SELECT status FROM schedq.task WHERE id = $task",
		'available', 5),
	'(b) the scheduler of dba promotes its due task');

#
# (c) CREATE DATABASE B, CREATE EXTENSION there: a second scheduler, for B.
#
$node->safe_psql('postgres', 'CREATE DATABASE dbb');
$node->safe_psql('dbb', 'CREATE EXTENSION schedq');
$took = poll_until($node, 'postgres', schedulers_of('dbb'), '1', 5);
ok(defined $took, '(c) a scheduler for dbb appears within 5 s of CREATE EXTENSION');
note sprintf('(c) scheduler for dbb after %.2f s', $took // -1);
my $pid_b = scheduler_pid($node, 'dbb');
is($node->safe_psql('postgres', $all_schedulers),
	'2', '(c) two schedulers in all, one per database');
is(scheduler_pid($node, 'dba'), $pid_a, '(c) the scheduler of dba is the same process');

#
# (d) Exactly one scheduler per database, whatever else happens: a
# repeated CREATE EXTENSION IF NOT EXISTS, a no-op ALTER EXTENSION UPDATE,
# ALTER DATABASE SET, a configuration reload.
#
$node->safe_psql('dba', 'CREATE EXTENSION IF NOT EXISTS schedq');
$node->safe_psql('dbb', 'CREATE EXTENSION IF NOT EXISTS schedq');
$node->psql('dba', 'ALTER EXTENSION schedq UPDATE');
$node->safe_psql('postgres', "ALTER DATABASE dba SET work_mem = '8MB'");
$node->safe_psql('postgres', "ALTER DATABASE dbb SET work_mem = '8MB'");
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
my $per_db = "SELECT string_agg(datname || ':' || n, ',' ORDER BY datname) FROM"
  . " (SELECT datname, count(*) AS n FROM pg_stat_activity"
  . "   WHERE backend_type = 'schedq scheduler' GROUP BY datname) s";
is(stays($node, 'postgres', $per_db, 'dba:1,dbb:1', 2),
	undef, '(d) one scheduler for each database, over 2 s of polls');
is(scheduler_pid($node, 'dba') . ' ' . scheduler_pid($node, 'dbb'),
	"$pid_a $pid_b", '(d) neither scheduler was restarted');
is( $node->safe_psql('dba',
		"SELECT string_agg(datname || ':' || pid, ',' ORDER BY datname)"
		  . " FROM schedq.scheduler_status()"),
	"dba:$pid_a,dbb:$pid_b",
	'(d) scheduler_status() shows one row per database');

#
# (e) DROP EXTENSION in A: A's scheduler exits within 10 s and does not
# come back.
#
my $log_offset = -s $node->logfile;
$node->safe_psql('dba', 'DROP EXTENSION schedq');
$took = poll_until($node, 'postgres', schedulers_of('dba'), '0', 10);
ok(defined $took, '(e) the scheduler of dba exits within 10 s of DROP EXTENSION');
note sprintf('(e) scheduler for dba gone after %.2f s', $took // -1);
is(stays($node, 'postgres', schedulers_of('dba'), '0', 3),
	undef, '(e) no scheduler for dba over the next 3 s');
# A scheduler started there again would find no schedq and leave at once,
# too fast for pg_stat_activity polls; the log has each one.
my @left = PostgreSQL::Test::Utils::slurp_file($node->logfile, $log_offset) =~
  /(schedq scheduler exiting: extension "schedq" is not installed in database "dba")/g;
is(scalar(@left), 1,
	'(e) no scheduler was started in dba again after DROP EXTENSION (one exit logged)');
is(scheduler_pid($node, 'dbb'), $pid_b, '(e) the scheduler of dbb is untouched');
is( $node->safe_psql('dbb',
		"SELECT string_agg(datname::text, ',') FROM schedq.scheduler_status()"),
	'dbb', '(e) scheduler_status() no longer lists dba');
# CREATE EXTENSION again brings a scheduler back.
$node->safe_psql('dba', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', schedulers_of('dba'), '1', 5),
	'(e) CREATE EXTENSION again: a scheduler for dba within 5 s');

#
# (f) DROP DATABASE B, without FORCE, while B has a scheduler.
#
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE dbb');
is($ret, 0, '(f) DROP DATABASE of a database with a scheduler succeeds')
  or diag $err;
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname = 'dbb'"),
	'0', '(f) dbb is gone');
is(stays($node, 'postgres', $per_db, 'dba:1', 2.5),
	undef, '(f) afterwards only the scheduler of dba runs (none for the dropped database)');

#
# (g) DROP DATABASE ... WITH (FORCE) while a client is connected to it.
#
$node->safe_psql('postgres', 'CREATE DATABASE dbc');
$node->safe_psql('dbc', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', schedulers_of('dbc'), '1', 5),
	'(g) a scheduler for dbc appears');
my $client = $node->background_psql('dbc');
is($client->query_safe("SELECT current_database()"), 'dbc', '(g) a client is connected to dbc');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE dbc WITH (FORCE)');
is($ret, 0, '(g) DROP DATABASE WITH (FORCE) succeeds with a client and a scheduler there')
  or diag $err;
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname = 'dbc'"),
	'0', '(g) dbc is gone');
eval { $client->quit; };
is(stays($node, 'postgres', $per_db, 'dba:1', 2.5),
	undef, '(g) afterwards only the scheduler of dba runs');

#
# (h) ALTER DATABASE ... RENAME TO a database with a scheduler: it works,
# and a scheduler comes back for the renamed database.
#
$node->safe_psql('postgres', 'CREATE DATABASE dbd');
$node->safe_psql('dbd', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', schedulers_of('dbd'), '1', 5),
	'(h) a scheduler for dbd appears');
my $pid_d = scheduler_pid($node, 'dbd');
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE dbd RENAME TO dbe');
is($ret, 0, '(h) ALTER DATABASE RENAME TO succeeds on a database with a scheduler')
  or diag $err;
$took = poll_until($node, 'postgres', schedulers_of('dbe'), '1', 10);
ok(defined $took, '(h) a scheduler comes back for the renamed database');
note sprintf('(h) scheduler for dbe after %.2f s', $took // -1);
is($node->safe_psql('postgres', schedulers_of('dbd')), '0',
	'(h) no scheduler under the old name');
isnt(scheduler_pid($node, 'dbe'), $pid_d, '(h) it is a new process');
is(stays($node, 'postgres', schedulers_of('dbe'), '1', 2),
	undef, '(h) exactly one scheduler for dbe over 2 s');
$task = $node->safe_psql('dbe',
	"SELECT schedq.submit('h', run_at => now() + interval '500 ms')");
ok( defined poll_until(
		$node, 'dbe', "SELECT status FROM schedq.task WHERE id = $task",
		'available', 5),
	'(h) the scheduler of the renamed database promotes its due task');
is( $node->safe_psql('dbe',
		"SELECT string_agg(datname::text, ',' ORDER BY datname) FROM schedq.scheduler_status()"),
	'dba,dbe', '(h) scheduler_status() shows the new name');

# ALTER DATABASE ... SET TABLESPACE needs the database to itself as well.
my $tablespace = PostgreSQL::Test::Utils::tempdir_short();
$node->safe_psql('postgres', "CREATE TABLESPACE elsewhere LOCATION '$tablespace'");
$pid_d = scheduler_pid($node, 'dbe');
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE dbe SET TABLESPACE elsewhere');
is($ret, 0, '(h) ALTER DATABASE SET TABLESPACE succeeds on a database with a scheduler')
  or diag $err;
ok( defined poll_until(
		$node, 'postgres',
		schedulers_of('dbe') . " AND pid <> $pid_d", '1', 10),
	'(h) a scheduler comes back for the moved database');

#
# (i) A database with a scheduler is a valid template: CREATE DATABASE
# ... TEMPLATE needs the source database to itself too.  The copy has
# schedq, so it gets a scheduler of its own.
#
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE dbe_copy TEMPLATE dbe');
is($ret, 0, '(i) CREATE DATABASE ... TEMPLATE of a database with a scheduler succeeds')
  or diag $err;
SKIP:
{
	skip 'the copy was not created', 2 if $ret != 0;
	ok(defined poll_until($node, 'postgres', schedulers_of('dbe_copy'), '1', 5),
		'(i) the copy gets a scheduler of its own');
	ok(defined poll_until($node, 'postgres', schedulers_of('dbe'), '1', 5),
		'(i) the template keeps its scheduler');
}

#
# (j) Databases without schedq, and databases that were dropped, do not use
# up the room for schedulers: with many databases around, and after they
# are dropped, a new database with schedq still gets its scheduler.
#
my $n_spare = 66;
$node->safe_psql('postgres',
	join('', map { "CREATE DATABASE spare_$_;\n" } 1 .. $n_spare));
$node->safe_psql('postgres', 'CREATE DATABASE dbf');
$node->safe_psql('dbf', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', schedulers_of('dbf'), '1', 10),
	"(j) with $n_spare databases without schedq, a new one with schedq gets a scheduler");
$node->safe_psql('postgres',
	join('', map { "DROP DATABASE spare_$_;\n" } 1 .. $n_spare));
$node->safe_psql('postgres', 'CREATE DATABASE dbg');
$node->safe_psql('dbg', 'CREATE EXTENSION schedq');
ok(defined poll_until($node, 'postgres', schedulers_of('dbg'), '1', 10),
	"(j) after $n_spare databases were dropped, a new one with schedq gets a scheduler");
is( $node->safe_psql('postgres', $per_db),
	'dba:1,dbe:1,dbe_copy:1,dbf:1,dbg:1', '(j) one scheduler for each database with schedq');

#
# (k) schedq installed by CASCADE with an extension that requires it
# (CREATE EXTENSION schedq_cron CASCADE, as docs/pg_cron.md says), in a
# database that existed when the server started (the launcher found no
# schedq there then): a scheduler there within 5 s.
#
$node->safe_psql('postgres', 'CREATE DATABASE dbh');
$node->restart;
ok(defined poll_until($node, 'postgres', schedulers_of('dbg'), '1', 10),
	'(k) after a restart, the launcher is at work');
is($node->safe_psql('postgres', schedulers_of('dbh')), '0', '(k) no scheduler for dbh yet');
$node->safe_psql('dbh', 'CREATE EXTENSION schedq_cron CASCADE');
ok(defined poll_until($node, 'postgres', schedulers_of('dbh'), '1', 5),
	'(k) CREATE EXTENSION schedq_cron CASCADE: a scheduler for dbh within 5 s');

$node->stop;

done_testing();

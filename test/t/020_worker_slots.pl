#-------------------------------------------------------------------------
# test/t/020_worker_slots.pl
#	  Background worker slots (max_worker_processes): what schedq takes,
#	  and what it says when there are too few, at CREATE EXTENSION, in the
#	  log and in scheduler_status(), never silently.
#
#	  With max_worker_processes = 4 and no logical replication launcher,
#	  schedq.sql_workers = 2 and schedq.sql_idle_timeout = 1s:
#	  (a) a database with schedq and no SQL task costs one process, its
#	      scheduler (the launcher is the cluster's); CREATE EXTENSION
#	      warns of nothing;
#	  (b) a SQL task starts an executor at once (on demand), which runs
#	      it; scheduler_status() shows it started and wanted;
#	  (c) the executor, idle, exits after schedq.sql_idle_timeout (not
#	      before), and the database is back to one process;
#	  (d) the third database's CREATE EXTENSION warns that no slot is left
#	      for SQL executors (its scheduler takes the last one);
#	  (e) the fourth's warns that it gets no scheduler, with the sizing
#	      rule in its hint; the log says so too; scheduler_status() shows
#	      it as 'no worker slot' (also seen from another database), and
#	      its delayed task stays pending;
#	  (f) a SQL task of the first database meanwhile: no executor can
#	      start (0 of 1 wanted), which the log says once, with the hint;
#	  (g) after a restart with room enough, every database has its
#	      scheduler, the delayed task is promoted, the SQL task runs.
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

my $node = schedq_node('worker_slots', conf => qq{
max_worker_processes = 4
max_logical_replication_workers = 0
schedq.enabled = on
schedq.sql_workers = 2
schedq.sql_idle_timeout = '1s'
});

my $status = "SELECT string_agg(datname || ':' || state || ':'"
  . " || coalesce(sql_workers::text, '-') || '/'"
  . " || coalesce(sql_workers_wanted::text, '-'), ',' ORDER BY datname)"
  . " FROM schedq.scheduler_status()";

# The schedq processes connected to a database.
sub processes_of
{
	my ($db) = @_;
	return "SELECT count(*) FROM pg_stat_activity"
	  . " WHERE backend_type LIKE 'schedq%' AND datname = '$db'";
}

sub count_in_log
{
	my ($re, $offset) = @_;
	my @hits = slurp_file($node->logfile, $offset) =~ /$re/g;
	return scalar @hits;
}

# CREATE EXTENSION schedq in a new database; returns its stderr.
sub create_with_schedq
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my ($ret, $out, $err) = $node->psql($db, 'CREATE EXTENSION schedq');
	is($ret, 0, "CREATE EXTENSION schedq in $db succeeds");
	return $err;
}

#
# (a) One process per database without SQL tasks.
#
my $err = create_with_schedq('one');
is($err, '', '(a) CREATE EXTENSION in the first database warns of nothing');
ok(defined poll_until($node, 'one', $status, 'one:idle:0/0', 10),
	'(a) its scheduler runs, no SQL executor started or wanted');
is(stays($node, 'one', processes_of('one'), '1', 3),
	undef, '(a) for 3 s, the database has exactly one schedq process, its scheduler');

#
# (b) A SQL task starts an executor, which runs it.
#
$node->safe_psql('one', 'CREATE TABLE public.ran (at timestamptz)');
my $t0 = time;
my $sql = $node->safe_psql('one',
	q{SELECT schedq.submit_sql('SELECT pg_sleep(1); INSERT INTO public.ran VALUES (clock_timestamp())')});
my $r = poll_value($node, 'one',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'"
	  . " AND datname = 'one'", '1', 10);
ok($r, '(b) a SQL executor starts for the SQL task');
note sprintf('(b) started %.2f s after the submit', time - $t0);
ok(defined poll_until($node, 'one', $status, 'one:idle:1/1', 10),
	'(b) scheduler_status() shows it: 1 started, 1 wanted');
ok(defined poll_until($node, 'one', "SELECT status FROM schedq.task WHERE id = $sql",
		'done', 10),
	'(b) the task runs and is done');
is($node->safe_psql('one', 'SELECT count(*) FROM public.ran'), '1',
	'(b) its command ran once');

#
# (c) Idle, it exits after schedq.sql_idle_timeout.
#
# (finished_at is its transaction's start; the command wrote the time it
# ended into public.ran)
$r = poll_value($node, 'one',
	"SELECT (" . processes_of('one') . ") || '|'"
	  . " || extract(epoch FROM clock_timestamp() - at) FROM public.ran",
	sub { $_[0] =~ /^1\|/ }, 15);
ok($r, '(c) the idle executor exits: one process again');
my $after = $r ? (split /\|/, $r->[1])[1] : 0;
cmp_ok($after, '>=', 1, '(c) not before schedq.sql_idle_timeout (1 s) after its task');
note sprintf('(c) gone %.2f s after its task ended', $after);
ok(defined poll_until($node, 'one', $status, 'one:idle:0/0', 10),
	'(c) scheduler_status(): none started, none wanted');

#
# (d) Second and third databases: the third takes the last slot.
#
$err = create_with_schedq('two');
is($err, '', '(d) the second database: no warning (two slots left)');
ok(defined poll_until($node, 'one', $status, 'one:idle:0/0,two:idle:0/0', 10),
	'(d) its scheduler runs');
my $log_offset = -s $node->logfile;
$err = create_with_schedq('three');
like($err,
	qr/WARNING:  database "three" gets its schedq scheduler, but no background worker slot is left for SQL executors/,
	'(d) the third database: a WARNING that no slot is left for SQL executors');
like($err, qr/HINT:  Set max_worker_processes to at least \d+ and restart the server/,
	'(d) ... with a hint naming max_worker_processes and the restart');
ok(defined poll_until($node, 'one', $status, 'one:idle:0/0,three:idle:0/0,two:idle:0/0', 10),
	'(d) its scheduler runs');

#
# (e) The fourth database gets no scheduler, and says so.
#
$err = create_with_schedq('four');
like($err, qr/WARNING:  database "four" gets no schedq scheduler: every background worker slot is taken/,
	'(e) the fourth database: a WARNING that it gets no scheduler');
like($err, qr/DETAIL:  max_worker_processes is 4\b.*'no worker slot'/s,
	'(e) ... a detail naming max_worker_processes and what scheduler_status() shows');
like($err,
	qr/HINT:  Set max_worker_processes to at least 7 and restart the server: schedq takes a background worker for its launcher, one for the scheduler of each database with schedq, and one for each SQL task running at once, at most schedq.sql_workers \(now 2\) per database\. See docs\/operations\.md#sizing-max_worker_processes\./,
	'(e) ... and a hint with the sizing rule, the size to set and the page');
ok(count_in_log(qr/WARNING:  database "four" gets no schedq scheduler/, $log_offset) == 1,
	'(e) the server log has the WARNING too');
ok(defined poll_until($node, 'four', $status,
		'four:no worker slot:-/-,one:idle:0/0,three:idle:0/0,two:idle:0/0', 10),
	"(e) scheduler_status() shows the fourth as 'no worker slot'");
is($node->safe_psql('one', "$status WHERE datname = 'four'"),
	'four:no worker slot:-/-', '(e) ... also from another database');
my $launcher_warning =
  qr/WARNING:  could not start the schedq scheduler of database "four": no background worker slot is free/;
ok(defined poll_until($node, 'four', 'SELECT 1', sub { count_in_log($launcher_warning, $log_offset) >= 1 }, 10),
	'(e) the launcher says in the log that it could not start it');
my $later = $node->safe_psql('four',
	q{SELECT schedq.submit('later', run_at => now() + interval '1 second')});
is(stays($node, 'four', "SELECT status FROM schedq.task WHERE id = $later", 'pending', 3),
	undef, '(e) its task due in 1 s stays pending meanwhile (no scheduler)');
is(count_in_log($launcher_warning, $log_offset), 1,
	'(e) the launcher said it once, not at every retry');

#
# (f) No slot for a SQL executor either.
#
$log_offset = -s $node->logfile;
my $sql2 = $node->safe_psql('one', q{SELECT schedq.submit_sql('SELECT 2')});
ok(defined poll_until($node, 'one', "$status WHERE datname = 'one'", 'one:idle:0/1', 10),
	'(f) a SQL task in the first database: 0 executors of 1 wanted');
my $executors_warning =
  qr/WARNING:  could not start a schedq SQL executor for database "one": no background worker slot is free/;
ok(defined poll_until($node, 'one', 'SELECT 1', sub { count_in_log($executors_warning, $log_offset) >= 1 }, 10),
	'(f) the log says the executor could not start');
like(slurp_file($node->logfile, $log_offset),
	qr/$executors_warning[^\n]*\n(?:[^\n]*\n)*?[^\n]*HINT:  Raise max_worker_processes[^\n]*sizing-max_worker_processes/,
	'(f) with a hint naming max_worker_processes and the sizing section');
is(stays($node, 'one', "SELECT status FROM schedq.task WHERE id = $sql2", 'available', 2),
	undef, '(f) the SQL task waits, available');
is(count_in_log($executors_warning, $log_offset), 1, '(f) said once, not at every retry');

#
# (g) Room enough after a restart.
#
$node->append_conf('postgresql.conf', 'max_worker_processes = 16');
$node->restart;
ok( defined poll_until(
		$node, 'one', "SELECT count(*) FROM schedq.scheduler_status() WHERE state = 'idle'",
		'4', 15),
	'(g) with room enough, the four databases have their schedulers');
ok(defined poll_until($node, 'four', "SELECT status FROM schedq.task WHERE id = $later",
		'available', 10),
	"(g) the fourth database's delayed task is promoted");
ok(defined poll_until($node, 'one', "SELECT status FROM schedq.task WHERE id = $sql2",
		'done', 10),
	'(g) the SQL task runs');

$node->stop;

done_testing();

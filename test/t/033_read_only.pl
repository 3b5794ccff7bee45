#-------------------------------------------------------------------------
# test/t/033_read_only.pl
#	  schedq stands aside while the server is read-only, as a new primary
#	  is for a while after a failover under pg_auto_failover
#	  (default_transaction_read_only = on by ALTER SYSTEM and a reload).
#	  The scheduler is on and has work: a task whose run_at comes while
#	  the server is read-only, a schedule firing every second, and a SQL
#	  task ready to run (schedq.sql_workers goes from 0 to 2 in the same
#	  reload that makes the server read-only).
#
#	  (a) waiting before: a claim(wait => ...), an await_task, and a
#	      claim(wait => ...) in a transaction that submitted a task first,
#	      all started while the server is writable;
#	  (b) read-only: scheduler_status() says 'read-only' within seconds;
#	      each waiter ends with 25006 "the server became read-only while
#	      waiting for a task" well before its 60 s wait, and the third's
#	      submit rolled back; a claim(wait) or await_task started now is
#	      refused at once (25006); for 3 s no SQL executor runs, no tick
#	      fires, the due task stays pending, read_only_ms grows; the log
#	      has exactly one LOG line saying so, and no WARNING, ERROR or
#	      FATAL but the waiters' own;
#	  (c) writable again (ALTER SYSTEM RESET, reload): the scheduler is
#	      back within 5 s, the log has exactly one LOG line saying so, the
#	      due task is promoted, ticks fire again, an executor runs the SQL
#	      task; read_only_ms no longer grows;
#	  (d) refused writes without default_transaction_read_only (here a
#	      trigger that raises 25006 on every write of schedq.periodic, as
#	      a fencing extension might): the periodic pass is refused, the
#	      scheduler says 'read-only' with the refusal in its one LOG line,
#	      a waiting claim ends with 25006, no WARNING; once the trigger is
#	      gone it resumes by itself;
#	  (e) a database made read-only by ALTER DATABASE ... SET (read by a
#	      scheduler only when it connects): a scheduler started then
#	      stands aside, and after ALTER DATABASE ... RESET one is idle
#	      there again within seconds and promotes.
#
#	  Without the change the scheduler runs its passes into "cannot
#	  execute ... in a read-only transaction" WARNINGs, its executors die
#	  with that ERROR and are started again, and the waiters wait out
#	  their 60 s.
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

my $node = schedq_node('read_only', extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.sql_workers = 0
schedq.reaper_interval = 200
});

sub q1 { return $node->safe_psql('postgres', shift); }

sub state
{
	return q1(q{SELECT state FROM schedq.scheduler_status()
		WHERE datname = 'postgres'});
}

# The log since byte $pos.
sub log_since
{
	my ($pos) = @_;
	my $log = slurp_file($node->logfile);
	return substr($log, $pos);
}

# Lines of $text at WARNING or worse, but those of the sessions that
# wait (application_name waiter).
sub bad_lines
{
	my ($text) = @_;
	return join("\n",
		grep { /\b(WARNING|ERROR|FATAL|PANIC):/ && !/\] waiter / } split /\n/, $text);
}

# Start a background session running $sql (which must leave a line
# "over" on stdout when it ends, however it ends); returns it and its pid.
sub waiter
{
	my ($sql) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('\set VERBOSITY verbose');
	$s->query_safe("SET application_name = 'waiter'");
	$s->query_until(qr/started\n/, "\\echo started\n$sql\n\\echo over\n");
	return ($s, $pid);
}

# Wait until a session sleeps in schedq (wait event type Extension).
sub sleeping
{
	my ($pid, $what) = @_;
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid",
			'Extension', 20),
		"$what waits");
}

ok(defined poll_until($node, 'postgres',
		q{SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'},
		'idle', 30),
	'the scheduler is idle');
q1(q{SELECT schedq.schedule('tick', '* * * * * *', 'tick', queue => 'ticks')});
my $sql_task = q1(q{SELECT schedq.submit_sql('CREATE TABLE public.ran_sql_task (i int)')});
ok(defined poll_until($node, 'postgres',
		q{SELECT count(*) > 0 FROM schedq.task WHERE queue = 'ticks'}, 't', 20),
	'the schedule fires while the server is writable');

#
# (a) Waiters, started while the server is writable.
#
my ($w1, $p1) = waiter(q{SELECT count(*) FROM schedq.claim('w1', queues => '{none}', wait => '60 s');});
my ($w2, $p2) = waiter(q{CALL schedq.await_task(queues => '{none}', caps => '{}', wait => '60 s');});
my ($w3, $p3) = waiter(
	q{BEGIN;
SELECT schedq.submit('in-waiter', queue => 'w3') > 0 AS submitted;
SELECT count(*) FROM schedq.claim('w3', queues => '{none}', wait => '60 s');
ROLLBACK;});
sleeping($p1, '(a) claim(wait)');
sleeping($p2, '(a) await_task');
sleeping($p3, '(a) claim(wait) in a transaction that wrote');

# A task due while the server will be read-only.
my $due = q1(q{SELECT schedq.submit('due', queue => 'due', run_at => now() + interval '2 s')});

#
# (b) Read-only.
#
my $logpos = -s $node->logfile;
my $t0 = time;
q1(q{ALTER SYSTEM SET default_transaction_read_only = on;
ALTER SYSTEM SET schedq.sql_workers = 2;
SELECT pg_reload_conf();});
my $took = poll_until($node, 'postgres',
	q{SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'},
	'read-only', 10);
ok(defined $took, "(b) scheduler_status() says read-only") and
  note sprintf('(b) read-only shown after %.2f s', $took);

for my $w ([ $w1, 'claim(wait)' ], [ $w2, 'await_task' ], [ $w3, 'claim(wait) in a transaction that wrote' ])
{
	my ($s, $what) = @$w;
	$s->query_until(qr/over\n/, '');
	like($s->{stderr},
		qr/ERROR:  25006: the server became read-only while waiting for a task/,
		"(b) $what ends with 25006");
	like($s->{stderr}, qr/HINT:  Reconnect and wait again/, "(b) ... and the hint to reconnect");
}
my $waited = time - $t0;
ok($waited < 15, sprintf('(b) the waiters ended %.1f s after the reload, not after their 60 s', $waited));
is(q1(q{SELECT count(*) FROM schedq.task WHERE queue = 'w3'}), '0',
	"(b) the waiting transaction's submit rolled back");
$_->quit for ($w1, $w2, $w3);

# Refused at once while read-only.
for my $case (
	[ 'claim(wait)', q{SELECT count(*) FROM schedq.claim('w4', queues => '{none}', wait => '30 s')} ],
	[ 'await_task', q{CALL schedq.await_task(queues => '{none}', caps => '{}', wait => '30 s')} ])
{
	my ($what, $sql) = @$case;
	my $t = time;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET application_name = 'waiter';\n$sql");
	like($err, qr/ERROR:  25006: cannot wait for a task: the server is read-only\n.*DETAIL:  default_transaction_read_only is on/s,
		"(b) $what started while read-only is refused with 25006");
	ok(time - $t < 10, "(b) ... at once");
}

# For 3 s: no executor, no tick, the due task pending.
my $ticks_q = q{SELECT sum(value) FROM schedq.metrics()
	WHERE name IN ('periodic_fired', 'periodic_skipped_overlap')};
my $ticks = q1($ticks_q);
my $ro0 = metric($node, 'read_only_ms');
is( stays($node, 'postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'schedq sql executor'},
		'0', 3),
	undef, '(b) no SQL executor runs for 3 s, though a SQL task is ready');
is(q1($ticks_q), $ticks, '(b) no tick fired or was skipped');
is(q1("SELECT status FROM schedq.task WHERE id = $due"), 'pending',
	'(b) the task due meanwhile stays pending');
is(q1("SELECT status FROM schedq.task WHERE id = $sql_task"), 'available',
	'(b) the SQL task stays available');
is(state(), 'read-only', '(b) still read-only');
my $ro1 = metric($node, 'read_only_ms');
ok($ro1 - $ro0 >= 2000, "(b) read_only_ms grew by @{[ $ro1 - $ro0 ]} ms in about 3 s");
is(q1(q{SELECT sql_workers FROM schedq.scheduler_status() WHERE datname = 'postgres'}),
	'0', '(b) scheduler_status(): no SQL executor');

my $log = log_since($logpos);
my @in = $log =~ /LOG:  schedq scheduler: the server is read-only \(default_transaction_read_only is on\); database "postgres" runs no pass/g;
is(scalar @in, 1, '(b) exactly one LOG line on entering read-only');
is(bad_lines($log), '',
	'(b) no WARNING, ERROR or FATAL in the log but the waiters\' own');
unlike(join("\n", grep { !/\] waiter / } split /\n/, $log),
	qr/cannot execute|could not fire|exited with exit code/,
	'(b) no refused pass, no tick that could not fire, no executor that died');

#
# (c) Writable again.
#
$logpos = -s $node->logfile;
q1(q{ALTER SYSTEM RESET default_transaction_read_only; SELECT pg_reload_conf();});
$took = poll_until($node, 'postgres',
	q{SELECT state <> 'read-only' FROM schedq.scheduler_status() WHERE datname = 'postgres'},
	't', 5);
ok(defined $took, '(c) the scheduler leaves read-only within 5 s of the reload') and
  note sprintf('(c) writable again after %.2f s', $took);
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $due", 'available', 5),
	'(c) the due task is promoted');
ok(defined poll_until($node, 'postgres', "SELECT ($ticks_q) > $ticks", 't', 5),
	'(c) ticks fire again');
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $sql_task", 'done', 20),
	'(c) an executor runs the SQL task');
is(q1(q{SELECT to_regclass('ran_sql_task') IS NOT NULL}), 't', '(c) ... whose command ran');
my $ro2 = metric($node, 'read_only_ms');
usleep(1_500_000);
is(metric($node, 'read_only_ms'), $ro2, '(c) read_only_ms no longer grows');
$log = log_since($logpos);
my @out = $log =~ /LOG:  schedq scheduler: the server is no longer read-only; database "postgres" resumes after [\d.]+ s/g;
is(scalar @out, 1, '(c) exactly one LOG line on leaving read-only');
is(bad_lines($log), '', '(c) no WARNING, ERROR or FATAL in the log');

#
# (d) Writes refused with default_transaction_read_only off.
#
q1(q{CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'writes are fenced off' USING ERRCODE = 'read_only_sql_transaction';
END $$;});
my ($w5, $p5) = waiter(q{SELECT count(*) FROM schedq.claim('w5', queues => '{none}', wait => '60 s');});
sleeping($p5, '(d) claim(wait)');
$logpos = -s $node->logfile;
q1(q{CREATE TRIGGER fence BEFORE UPDATE ON schedq.periodic
	FOR EACH ROW EXECUTE FUNCTION refuse()});
ok(defined poll_until($node, 'postgres',
		q{SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'},
		'read-only', 10),
	'(d) a refused pass makes the scheduler read-only');
$w5->query_until(qr/over\n/, '');
like($w5->{stderr}, qr/ERROR:  25006: the server became read-only while waiting for a task/,
	'(d) the waiting claim ends with 25006');
like($w5->{stderr}, qr/DETAIL:  Writes are refused/, '(d) ... saying writes are refused');
$w5->quit;
is(stays($node, 'postgres',
		q{SELECT state FROM schedq.scheduler_status() WHERE datname = 'postgres'},
		'read-only', 2),
	undef, '(d) it stays read-only while writes are refused');
q1(q{DROP TRIGGER fence ON schedq.periodic});
ok(defined poll_until($node, 'postgres',
		q{SELECT state <> 'read-only' FROM schedq.scheduler_status() WHERE datname = 'postgres'},
		't', 5),
	'(d) it resumes by itself once writes are accepted');
$ticks = q1($ticks_q);
ok(defined poll_until($node, 'postgres', "SELECT ($ticks_q) > $ticks", 't', 5),
	'(d) ticks fire again');
$log = log_since($logpos);
my @refused = $log =~ /LOG:  schedq scheduler: the server is read-only \(a write was refused: writes are fenced off\)/g;
is(scalar @refused, 1, '(d) exactly one LOG line on entering, with the refusal');
@out = $log =~ /LOG:  schedq scheduler: the server is no longer read-only/g;
is(scalar @out, 1, '(d) exactly one LOG line on leaving');
is(bad_lines($log), '', '(d) no WARNING, ERROR or FATAL but the waiter\'s');

#
# (e) A database made read-only by ALTER DATABASE ... SET: its scheduler
# reads that when it starts, and when it is reset, a scheduler that sees
# it gone takes over.
#
q1('CREATE DATABASE ro_db');
$node->safe_psql('ro_db', 'CREATE EXTENSION schedq');
my $ro_state = q{SELECT state FROM schedq.scheduler_status() WHERE datname = 'ro_db'};
ok(defined poll_until($node, 'postgres', $ro_state, 'idle', 30), '(e) ro_db has its scheduler');
q1(q{ALTER DATABASE ro_db SET default_transaction_read_only = on});
q1(q{SELECT pg_terminate_backend(pid) FROM schedq.scheduler_status() WHERE datname = 'ro_db'});
ok(defined poll_until($node, 'postgres', $ro_state, 'read-only', 30),
	'(e) its next scheduler stands aside: the database is read-only');
q1(q{ALTER DATABASE ro_db RESET default_transaction_read_only});
$took = poll_until($node, 'postgres', $ro_state, 'idle', 10);
ok(defined $took, '(e) reset, a scheduler is idle there again') and
  note sprintf('(e) idle %.1f s after the reset', $took);
$node->safe_psql('ro_db', q{SELECT schedq.submit('after', queue => 'e', run_at => now() + interval '1 s')});
ok(defined poll_until($node, 'ro_db',
		q{SELECT status FROM schedq.task WHERE queue = 'e'}, 'available', 10),
	'(e) and it promotes');

$node->stop;
done_testing();

#-------------------------------------------------------------------------
# test/t/048_schedqctl_worker_failover.pl
#	  schedqctl worker follows the server: a multi-host connection string,
#	  and a restart.
#	  (a) -d lists three servers: a dead one (no socket), a read-only one
#	      (default_transaction_read_only = on) and the primary, with
#	      target_session_attrs=read-write.  The worker connects to the
#	      primary, logs its host and port at the start, and runs a task;
#	      its wait connection goes to the same server, so the read-only
#	      server saw one connection of the worker (the check libpq made),
#	      not two;
#	  (b) the primary is stopped (fast), left down for 7 s, and started
#	      again; it was stopped while the worker was frozen (SIGSTOP) with
#	      a task waiting, and the worker runs on during the outage: it
#	      claims it within 3 s of the server being ready ("database system
#	      is ready to accept connections" in the server's log, to the
#	      millisecond, against the task's started_at), the figure is
#	      printed, and the worker logs that it reconnected to the
#	      primary's host and port.  The back-off is 0.1 s doubling to 2 s,
#	      and to 1 s while no connection can be made (jittered by +-25 %),
#	      so the wait after the server is ready is at most 1.25 s, about
#	      half a second on average.
#
#	  Every wait has a deadline.  Run by test/check.sh (make check) with
#	  prove; see the header of check.sh for the environment every TAP test
#	  gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SchedqTest;
use SchedqCtl;

my $node = ctl_node('failover', "log_connections = on\n");
my $ro = schedq_node('readonly', conf => "log_connections = on\n");
$ro->safe_psql('postgres', 'CREATE ROLE worker LOGIN');
$ro->append_conf('postgresql.conf', "default_transaction_read_only = on\n");
$ro->reload;
my $dir = PostgreSQL::Test::Utils::tempdir();
my $dead = PostgreSQL::Test::Cluster::get_free_port();


sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

my ($h, $p) = ($node->host, $node->port);
my $conninfo = join ' ',
  'host=' . join(',', $h, $ro->host, $h),
  'port=' . join(',', $dead, $ro->port, $p),
  'dbname=postgres user=worker target_session_attrs=read-write';
note "-d $conninfo";

#
# (a) A dead server, a read-only one, then the primary.
#
my $log = "$dir/w.log";
my $w = IPC::Run::start(
	[ 'schedqctl', 'worker', '-d', $conninfo, '--queue', 'f', '--wait', '5', '--', 'true' ],
	'<', '/dev/null', '>', "$log.out", '2>', $log);
my $t1 = q1("SET ROLE app; SELECT schedq.submit('first', queue => 'f')");
ok(defined poll_until($node, 'postgres', "SELECT status FROM schedq.task WHERE id = $t1",
		'done', 60),
	'(a) past a dead and a read-only server, the worker runs a task on the primary')
  or diag slurp($log);
like(slurp($log), qr/started: .*connected to \Q$h:$p\E$/m,
	"(a) it logs the primary's host and port ($h:$p) at the start")
  or diag slurp($log);
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'"
		  . " AND query LIKE 'CALL schedq.await_task(%'",
		'1', 30),
	'(a) its wait connection waits on the primary');
my $ro_connects = () = slurp($ro->logfile) =~ /connection authorized: user=worker/g;
is($ro_connects, 1,
	'(a) the read-only server saw one connection (the check), the wait connection went to the primary');

#
# (b) A restart of the primary, with a task waiting.
#
my $pid = worker_pid($w);
kill 'STOP', $pid;
my $t2 = q1("SET ROLE app; SELECT schedq.submit('after restart', queue => 'f')");
$node->stop('fast');
kill 'CONT', $pid;
# The outage: 7 s, long enough for a back-off capped at 30 s (as it was)
# to reach 6.4 s, and the reconnection to come 3 s or more after the
# server is ready; capped at 1 s, it comes within 1.25 s.
usleep(7_000_000);
$node->start;
my @ready = slurp($node->logfile) =~
  /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+) \[\d+\] LOG:  database system is ready to accept connections/mg;
ok(@ready >= 2, '(b) the server logged that it is ready again');
ok(defined poll_until($node, 'postgres', "SELECT status FROM schedq.task WHERE id = $t2",
		'done', 60),
	'(b) after the restart the worker runs the waiting task')
  or diag slurp($log);
my $secs = q1("SELECT round(extract(epoch FROM started_at - '$ready[-1]'::timestamptz), 3)"
	  . " FROM schedq.task WHERE id = $t2");
note "(b) the worker claimed the task ${secs} s after the server was ready";
diag "reconnect after a restart: ${secs} s from the server being ready to the claim";
cmp_ok($secs, '<', 3, '(b) within 3 s of the server being ready');
cmp_ok($secs, '>=', 0, '(b) and not before (the figure is sound)');
like(slurp($log), qr/reconnected to \Q$h:$p\E/, "(b) it logs that it reconnected to $h:$p")
  or diag slurp($log);

$w->signal('TERM');
$w->finish;
is($w->result(0), 0, 'the worker exits 0 on SIGTERM');
$node->stop;
$ro->stop;
done_testing();

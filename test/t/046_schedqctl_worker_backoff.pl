#-------------------------------------------------------------------------
# test/t/046_schedqctl_worker_backoff.pl
#	  schedqctl worker against a server that cannot hand out work, and
#	  its shutdown, read from the server's log (log_connections on):
#	  (a) a clean shutdown leaves no ERROR (nor FATAL) in the server's
#	      log: SIGTERM on an idle worker waiting in await_task, and on a
#	      worker running a task, each exits 0, the idle one within its
#	      --wait;
#	  (b) DROP EXTENSION schedq under a running worker: over a window of
#	      ten seconds the worker connects a few times, not ten times a
#	      second (the back-off is not reset by a connection that cannot
#	      work), the server logs at most a few ERRORs, and the worker says
#	      why once; after CREATE EXTENSION (and the grants, in one
#	      transaction) the same worker claims and runs a new task.
#
#	  Every wait has a deadline.  Run by test/check.sh (make check) with
#	  prove; see the header of check.sh for the environment every TAP test
#	  gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SchedqTest;
use SchedqCtl;

my $node = ctl_node('ctl_backoff', "log_connections = on\n");
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}


# The server's log from byte $offset on.
sub log_since
{
	return PostgreSQL::Test::Utils::slurp_file($node->logfile, $_[0]);
}



my $waiting = "SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'"
  . " AND state = 'active' AND query LIKE 'CALL schedq.await_task(%'";

#
# (a) A clean shutdown, idle and busy: no ERROR in the server's log.
#
my $w = start_worker($node, 'worker', [ '--queue' => 'a', '--wait' => '5' ], ['true'],
	"$dir/a.log");
ok(defined poll_until($node, 'postgres', $waiting, '1', 30),
	'(a) the idle worker waits in await_task');
my $offset = -s $node->logfile;
my $t0 = time;
$w->signal('TERM');
is(wait_exit($w, 30), 0, '(a) SIGTERM on the idle worker: exit 0');
cmp_ok(time - $t0, '<', 10, '(a) within its --wait of 5 s');
ok(defined poll_until($node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'", '0', 30),
	'(a) its sessions are gone');
my $log = log_since($offset);
unlike($log, qr/ERROR:/, '(a) no ERROR in the server log (no canceled statement)')
  or diag $log;
unlike($log, qr/FATAL:|could not send data/, '(a) nor a lost client');

my $slow = "$dir/slow.sh";
open(my $fh, '>', $slow) or die;
print $fh "#!/bin/sh\ntouch $dir/slow.started\nsleep 2\necho '\"ok\"'\n";
close $fh;
chmod 0755, $slow;
$w = start_worker($node, 'worker', [ '--queue' => 'a', '--concurrency' => '2' ], [$slow],
	"$dir/a2.log");
my $ta = q1("SET ROLE app; SELECT schedq.submit('slow', queue => 'a')");
ok(wait_for(sub { -e "$dir/slow.started" }, 30, 'the task'), '(a) a task runs');
$offset = -s $node->logfile;
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(a) SIGTERM while a task runs: exit 0');
is(q1("SELECT status FROM schedq.task WHERE id = $ta"), 'done', '(a) the task finished');
$log = log_since($offset);
unlike($log, qr/ERROR:|FATAL:/, '(a) no ERROR in the server log') or diag $log;

#
# (b) DROP EXTENSION under a running worker.
#
# --wait 1: the wait in progress when schedq is dropped ends at once, and
# the window below sees what the worker does next.
$w = start_worker($node, 'worker', [ '--queue' => 'b', '--wait' => '1' ], ['true'],
	"$dir/b.log");
ok(defined poll_until($node, 'postgres', $waiting, '1', 30),
	'(b) the worker waits for work');
$offset = -s $node->logfile;
q1('DROP EXTENSION schedq');
my $window = 10;
my $start = time;
my $died;
while (time - $start < $window)
{
	$died = 1, last if !kill(0, worker_pid($w));
	usleep(200_000);
}
ok(!$died, "(b) the worker keeps running for the ${window} s without schedq");
$log = log_since($offset);
my $connects = () = $log =~ /connection authorized: user=worker/g;
my $errors = () = $log =~ /ERROR:/g;
note "(b) in ${window} s: $connects connections, $errors ERRORs";
cmp_ok($connects, '>=', 2, "(b) it tries again: connections in ${window} s");
cmp_ok($connects, '<=', 12,
	"(b) it backs off: at most 12 connections in ${window} s (a reset back-off made ~100)");
cmp_ok($errors, '<=', 3, "(b) at most 3 ERRORs in the server log in ${window} s")
  or diag $log;
my $said = () = slurp("$dir/b.log") =~ /schedq is not installed/g;
is($said, 1, '(b) the worker says why once, not at each retry')
  or diag slurp("$dir/b.log");

# Installed again, with the grants and the work grant (schedq.work_grant
# went with the extension), in one transaction: a worker sees the
# functions and its privileges together.
q1(q{BEGIN;
CREATE EXTENSION schedq;
GRANT USAGE ON SCHEMA schedq TO app, worker;
GRANT EXECUTE ON FUNCTION schedq.submit TO app;
GRANT SELECT ON schedq.task TO app;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, schedq.complete,
      schedq.complete_many, schedq.complete_and_claim, schedq.fail,
      schedq.verify_grant TO worker;
GRANT EXECUTE ON PROCEDURE schedq.await_task TO worker;
SELECT schedq.grant_work('worker', 'app');
COMMIT;});
my $tb = q1("SET ROLE app; SELECT schedq.submit('back', queue => 'b')");
ok(defined poll_until($node, 'postgres', "SELECT status FROM schedq.task WHERE id = $tb",
		'done', 90),
	'(b) after CREATE EXTENSION the same worker claims and runs a new task')
  or diag slurp("$dir/b.log");
like(slurp("$dir/b.log"), qr/claiming again after \d+ retries/, '(b) and says it works again');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(b) the worker exits 0 on SIGTERM');

$node->stop;
done_testing();

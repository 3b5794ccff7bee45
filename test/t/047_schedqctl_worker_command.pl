#-------------------------------------------------------------------------
# test/t/047_schedqctl_worker_command.pl
#	  schedqctl worker with a command that cannot be run: the worker's
#	  fault, never the tasks':
#	  (a) at the start: a path that does not exist, a name not in PATH, a
#	      directory, a file without execute permission: exit 2 with a
#	      message naming the command, before anything is claimed (the
#	      backlog stays available, no attempt counted);
#	  (b) mid-run, the program exits 126 (a wrapper whose own program lost
#	      its execute permission): the task is given back (available
#	      again at once, not failed, its error saying it did not run), the
#	      worker claims nothing more and exits 2, and the rest of the
#	      backlog is untouched; the same with exit 127 (not found);
#	  (c) mid-run, the command itself loses its execute permission while
#	      the worker waits: the next task is not claimed, the worker exits
#	      2.
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

my $node = ctl_node('ctl_command');
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}


sub script
{
	my ($name, $body, $mode) = @_;
	my $path = "$dir/$name";
	open(my $fh, '>', $path) or die "cannot write $path: $!";
	print $fh "#!/bin/sh\n$body";
	close $fh;
	chmod $mode // 0755, $path;
	return $path;
}

# Run a worker to its end (at most $timeout s); returns (exit code, log).
sub run_worker
{
	my ($queue, $cmd, $timeout) = @_;
	my ($out, $err) = ('', '');
	my @argv = ('schedqctl', 'worker', '-d', ctl_conn($node, 'worker'),
		'--queue', $queue, '--wait', '2', '--', @$cmd);
	my $h = IPC::Run::start(\@argv, '<', '/dev/null', '>', \$out, '2>', \$err,
		IPC::Run::timeout($timeout));
	eval { $h->finish; };
	if ($@)
	{
		$h->kill_kill;
		return (undef, $err);
	}
	return ($h->result(0), $err);
}


# The tasks of a queue: "status attempts" of each, in id order.
sub states
{
	return q1("SELECT string_agg(status || ' ' || attempts, ', ' ORDER BY id)"
		  . " FROM schedq.task WHERE queue = '$_[0]'");
}

#
# (a) At the start.
#
q1("SET ROLE app; SELECT schedq.submit('k', queue => 'a') FROM generate_series(1, 3)");
my $noexec = script('noexec.sh', "echo hi\n", 0644);
for my $case (
	[ "$dir/does-not-exist.sh", qr/No such file or directory/, 'a path that does not exist' ],
	[ 'schedq-no-such-command', qr/not found in PATH/, 'a name not in PATH' ],
	[ $dir, qr/Is a directory/, 'a directory' ],
	[ $noexec, qr/Permission denied/, 'a file without execute permission' ])
{
	my ($cmd, $why, $what) = @$case;
	my ($rc, $err) = run_worker('a', [$cmd], 30);
	is($rc, 2, "(a) $what: exit 2");
	like($err, qr/command "\Q$cmd\E" cannot be run: .*$why/s, "(a) $what: saying why");
}
is(states('a'), 'available 0, available 0, available 0',
	'(a) nothing was claimed: the backlog is untouched');

#
# (b) Mid-run, exit 126: a wrapper whose program cannot be executed.
#
my $inner = script('inner.sh', "cat >/dev/null\necho '\"ran\"'\n");
my $wrap = script('wrap.sh', "echo \"\$SCHEDQ_TASK_ID\" >> $dir/wrap.runs\nexec $inner\n");
my $first = q1("SET ROLE app; SELECT schedq.submit('k', queue => 'b')");
my $w = start_worker($node, 'worker', [ '--queue' => 'b', '--wait' => '2' ], [$wrap],
	"$dir/b.log");
ok(defined poll_until($node, 'postgres', "SELECT status FROM schedq.task WHERE id = $first",
		'done', 60),
	'(b) a first task runs');
chmod 0644, $inner;
my @ids = split /\n/,
  q1("SET ROLE app; SELECT schedq.submit('k', queue => 'b', max_attempts => 3) FROM generate_series(1, 3)");
my $start = time;
ok(defined poll_until($node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE id IN (" . join(',', @ids) . ") AND attempts > 0",
		'1', 60),
	'(b) the next task is claimed, and its program exits 126');
is(wait_exit($w, 60), 2, '(b) the worker exits 2');
cmp_ok(time - $start, '<', 30, '(b) soon');
is(q1("SELECT status, attempts FROM schedq.task WHERE id = $ids[0]"), 'available|1',
	'(b) the task is given back: available again, not failed');
like(q1("SELECT last_error FROM schedq.task WHERE id = $ids[0]"),
	qr/^not run: the worker could not run its command \(exit status 126/,
	'(b) its error says it did not run');
is(q1("SELECT string_agg(status || ' ' || attempts, ', ' ORDER BY id) FROM schedq.task WHERE id IN ($ids[1], $ids[2])"),
	'available 0, available 0', '(b) the rest of the backlog is untouched');
is(q1("SELECT count(*) FROM schedq.task WHERE status = 'failed'"), '0', '(b) no task failed');
like(slurp("$dir/b.log"), qr/task $ids[0] kind=k attempt=1 .*outcome=returned exit=126/,
	'(b) logged as returned');
like(slurp("$dir/b.log"), qr/error: .*could not be run.*no more claims/, '(b) and why the worker stops');

# Exit 127: the wrapper's program is not found.
my $wrap127 = script('wrap127.sh', "exec $dir/gone.sh\n");
my ($rc, $err) = run_worker('b', [$wrap127], 60);
is($rc, 2, '(b) exit 127 of the program: the worker exits 2');
is( q1(
		"SELECT string_agg(status || ' ' || attempts, ', ') FROM schedq.task"
		  . " WHERE id IN (" . join(',', @ids) . ") AND last_error LIKE 'not run: %exit status 127%'"),
	'available 1',
	'(b) its task is given back too: available, not failed');

#
# (c) The command itself loses its execute permission while the worker
#     waits: the next task is not claimed.
#
q1("SELECT count(schedq.cancel(id)) FROM schedq.task WHERE queue = 'b' AND status = 'available'");
my $cmd = script('cmd.sh', "cat >/dev/null\n");
$w = start_worker($node, 'worker', [ '--queue' => 'c', '--wait' => '2' ], [$cmd], "$dir/c.log");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker' AND state = 'active' AND query LIKE 'CALL schedq.await_task(%'",
		'1', 30),
	'(c) the worker waits for work');
chmod 0644, $cmd;
my $tc = q1("SET ROLE app; SELECT schedq.submit('k', queue => 'c')");
is(wait_exit($w, 60), 2, '(c) the worker exits 2');
is(q1("SELECT status, attempts FROM schedq.task WHERE id = $tc"), 'available|0',
	'(c) the task was not claimed');
like(slurp("$dir/c.log"), qr/command "\Q$cmd\E" cannot be run: Permission denied/,
	'(c) saying why');

$node->stop;
done_testing();

#-------------------------------------------------------------------------
# test/t/042_schedqctl_status_top.pl
#	  schedqctl status and top, through the installed binary, as the
#	  README's admin role:
#	  (a) status prints the queues (counts by status, oldest available),
#	      the workers, the scheduler of the database and the latest
#	      failures; a role without the grants gets exit 4 and the GRANTs;
#	  (b) top renders in a pseudo-terminal (a tmux session on its own
#	      socket): the queue and its throughput appear, the rate goes up
#	      while tasks are done, and q quits with exit 0.
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

my $node = ctl_node('ctl_status');
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return '';
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t // '';
}

ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'1', 30),
	'the scheduler is up');

# Three available tasks in alpha, one failed in beta.
q1("SET ROLE app; SELECT schedq.submit('a', queue => 'alpha') FROM generate_series(1, 3)");
q1("SET ROLE app; SELECT schedq.submit('b', queue => 'beta', max_attempts => 1)");
q1("SELECT schedq.fail(token, 'disk on fire') FROM schedq.claim('w1', queues => '{beta}')");

#
# (a) status.
#
my ($rc, $out, $err) = ctl($node, 'ops', 'status');
is($rc, 0, '(a) status: exit 0') or diag $err;
like($out, qr/^Queues\n\s+queue\s.*pending\s+available\s+running\s+done\s+failed\s+canceled\s+oldest available\s+done\/min\n/m,
	'(a) the queue table\'s header');
like($out, qr/^\s+alpha\s+0\s+3\s+0\s+0\s+0\s+0\s+[0-9.]+s\s+0$/m, '(a) alpha: 3 available, and how old');
like($out, qr/^\s+beta\s+0\s+0\s+0\s+0\s+1\s+0\s+0$/m, '(a) beta: 1 failed');
like($out, qr/^Workers.*\n.*\n.*\n\s+w1\s+0\s+1\s/m, '(a) the worker w1');
like($out, qr/^Schedulers\n.*\n.*\n\s+postgres\s+\d+\s+\w+/m, '(a) the scheduler of postgres');
like($out, qr/^Latest failures\n.*\n.*\n\s+\d+\s+beta\s+b\s+1\s+\S+ \S+\s+disk on fire$/m,
	'(a) the failure and its error');
($rc, $out, $err) = ctl($node, 'nobody', 'status');
is($rc, 4, '(a) status without privileges: exit 4');
like($err, qr/GRANT SELECT ON ALL TABLES IN SCHEMA schedq TO nobody/, '(a) naming the GRANT');

#
# (b) top in tmux.
#
my $sock = "$dir/tmux.sock";
my $runner = "$dir/top.sh";
{
	my $conn = ctl_conn($node, 'ops');
	$conn =~ s/'/'\\''/g;
	open(my $fh, '>', $runner) or die;
	print $fh "#!/bin/sh\nschedqctl top -d '$conn'\necho \"exit \$?\" > $dir/top.exit\n";
	close $fh;
	chmod 0755, $runner;
}
IPC::Run::run([ 'tmux', '-S', $sock, 'new-session', '-d', '-s', 'top',
		'-x', '160', '-y', '50', $runner ])
  or die 'tmux failed';

sub screen
{
	my $text = '';
	IPC::Run::run([ 'tmux', '-S', $sock, 'capture-pane', '-p', '-t', 'top' ],
		'>', \$text, '2>', \my $e);
	return $text;
}

sub wait_screen
{
	my ($re, $timeout) = @_;
	my $start = time;
	my $text;

	while (time - $start < $timeout)
	{
		$text = screen();
		return $text if $text =~ $re;
		usleep(100_000);
	}
	diag "screen after ${timeout}s:\n$text";
	return undef;
}

my $s = wait_screen(qr/schedqctl top.*q quits/s, 30);
ok(defined $s, '(b) top draws its screen');
ok(defined wait_screen(qr/^\s+alpha\s+0\s+3\s+0/m, 30), '(b) and the queue alpha with its counts');
ok(defined wait_screen(qr/Throughput.*\n\s+alpha\s+0\.0\/s/, 30), '(b) and alpha\'s throughput');

# Tasks done: alpha's rate goes up.
my $done = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SET ROLE app; SELECT count(schedq.submit('a', queue => 'alpha')) FROM generate_series(1, 200);" ]);
$done->finish;
my $worker = start_worker($node, 'worker', [ '--queue' => 'alpha', '--concurrency' => '4' ],
	[ 'true' ], "$dir/w.log");
$s = wait_screen(qr/^\s+alpha\s+(?!0\.0\/s)[0-9]+\.[0-9]\/s/m, 60);
ok(defined $s, '(b) alpha\'s rate shows tasks done');
note "the screen:\n" . ($s // '');
$worker->signal('TERM');
$worker->finish;

IPC::Run::run([ 'tmux', '-S', $sock, 'send-keys', '-t', 'top', 'q' ]);
my $start = time;
usleep(50_000) while slurp("$dir/top.exit") eq '' && time - $start < 30;
is(slurp("$dir/top.exit"), "exit 0\n", '(b) q quits, exit 0');
IPC::Run::run([ 'tmux', '-S', $sock, 'kill-server' ], '>', \my $o, '2>', \my $e);

$node->stop;
done_testing();

#-------------------------------------------------------------------------
# test/t/042_schedqctl_status_top.pl
#	  schedqctl status and top, through the installed binary, as the
#	  admin role of docs/security.md:
#	  (a) status prints the queues (counts by status, a "paused" column,
#	      oldest available), the workers seen in the last ten minutes
#	      (saying how many older ones it hides; --all-workers shows them),
#	      the scheduler of the database and the latest failures;
#	  (b) a role that lacks any privilege status needs gets exit 4, the
#	      exact GRANTs it lacks (none broader), and nothing on standard
#	      output: not half the tables;
#	  (c) top renders in a pseudo-terminal (a tmux session on its own
#	      socket): the queue and its throughput appear, the rate goes up
#	      while tasks are done, and q quits with exit 0;
#	  (d) top in an 80x24 terminal: every column of the queue table fits
#	      the width; what does not fit the height scrolls with End, Home,
#	      PgDn and the arrows, and the last line says which lines show;
#	  (e) the running tasks with their progress and note; status as the
#	      monitor role (the all_ views: every role's rows); a worker role
#	      without privileges is told to get a work grant.
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


ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'1', 30),
	'the scheduler is up');

# Three available tasks in alpha, one failed in beta, a paused queue; a
# worker seen a day ago.
q1("SET ROLE app; SELECT schedq.submit('a', queue => 'alpha') FROM generate_series(1, 3)");
q1("SET ROLE app; SELECT schedq.submit('b', queue => 'beta', max_attempts => 1)");
q1("SELECT schedq.fail(token, 'disk on fire') FROM schedq.claim('w1', queues => '{beta}')");
q1("SELECT schedq.pause_queue('gamma')");
q1("SET ROLE app; SELECT schedq.submit('old', queue => 'old', max_attempts => 1)");
q1("SELECT schedq.fail(token, 'long ago') FROM schedq.claim('ancient', queues => '{old}')");
q1("UPDATE schedq.task SET started_at = now() - interval '1 day', finished_at = now() - interval '1 day' WHERE claimed_by = 'ancient'");

#
# (a) status.
#
my ($rc, $out, $err) = ctl($node, 'ops', 'status');
is($rc, 0, '(a) status: exit 0') or diag $err;
like($out, qr/^Queues\n\s+queue\s+paused\s+pending\s+available\s+running\s+done\s+failed\s+canceled\s+oldest available\s+done\/min\n/m,
	'(a) the queue table\'s header: every column named, "paused" too');
like($out, qr/^\s+alpha\s+0\s+3\s+0\s+0\s+0\s+0\s+[0-9.]+s\s+0$/m, '(a) alpha: 3 available, and how old');
like($out, qr/^\s+beta\s+0\s+0\s+0\s+0\s+1\s+0\s+0$/m, '(a) beta: 1 failed');
like($out, qr/^\s+gamma\s+yes\s+0\s+0\s+0\s+0\s+0\s+0\s+0$/m, '(a) gamma: paused');
like($out, qr/^Workers \(seen in the last 10 minutes; 1 older hidden: --all-workers\)\n.*\n.*\n\s+w1\s+0\s+1\s/m,
	'(a) the worker w1, and one older worker hidden');
unlike($out, qr/ancient/, '(a) the worker seen a day ago is not shown');
($rc, $out, $err) = ctl($node, 'ops', 'status', '--all-workers');
like($out, qr/^Workers \(all, from the retained tasks\)\n(.*\n)*\s+ancient\s+0\s+1\s/m,
	'(a) --all-workers shows it');
like($out, qr/^Schedulers\n.*\n.*\n\s+postgres\s+\d+\s+\w+/m, '(a) the scheduler of postgres');
like($out, qr/^Latest failures\n.*\n.*\n\s+\d+\s+beta\s+b\s+1\s+\S+ \S+\s+disk on fire$/m,
	'(a) the failure and its error');
#
# (b) Privileges: all of them, or nothing printed.
#
($rc, $out, $err) = ctl($node, 'nobody', 'status');
is($rc, 4, '(b) status without privileges: exit 4');
is($out, '', '(b) nothing printed');
like($err, qr/GRANT USAGE ON SCHEMA schedq TO nobody;\n\s+GRANT SELECT ON schedq\.task TO nobody;/,
	'(b) naming the GRANTs');
unlike($err, qr/\bALL\b/, '(b) none broader than status needs');
# app, a submitter, may read the tasks and queues, not the workers' view
# nor the schedulers.
($rc, $out, $err) = ctl($node, 'app', 'status');
is($rc, 4, '(b) status as a submitter: exit 4');
is($out, '', '(b) nothing printed, not the queues it may read');
like($err, qr/role "app" lacks 2 privileges/, '(b) saying how many privileges are missing');
like($err, qr/GRANT SELECT ON schedq\.worker_status TO app;\n\s+GRANT EXECUTE ON FUNCTION schedq\.scheduler_status\(\) TO app;/,
	'(b) and exactly which');
unlike($err, qr/schedq\.task|queue_stats|\bALL\b/, '(b) and only those');

#
# (c) top in tmux.
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
ok(defined $s, '(c) top draws its screen');
ok(defined wait_screen(qr/^\s+alpha\s+0\s+3\s+0/m, 30), '(c) and the queue alpha with its counts');
ok(defined wait_screen(qr/Throughput.*\n\s+alpha\s+0\.0\/s/, 30), '(c) and alpha\'s throughput');

# Tasks done: alpha's rate goes up.
my $done = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
	  "SET ROLE app; SELECT count(schedq.submit('a', queue => 'alpha')) FROM generate_series(1, 200);" ]);
$done->finish;
my $worker = start_worker($node, 'worker', [ '--queue' => 'alpha', '--concurrency' => '4' ],
	[ 'true' ], "$dir/w.log");
$s = wait_screen(qr/^\s+alpha\s+(?!0\.0\/s)[0-9]+\.[0-9]\/s/m, 60);
ok(defined $s, '(c) alpha\'s rate shows tasks done');
note "the screen:\n" . ($s // '');
$worker->signal('TERM');
$worker->finish;

IPC::Run::run([ 'tmux', '-S', $sock, 'send-keys', '-t', 'top', 'q' ]);
my $start = time;
usleep(50_000) while slurp("$dir/top.exit") eq '' && time - $start < 30;
is(slurp("$dir/top.exit"), "exit 0\n", '(c) q quits, exit 0');
IPC::Run::run([ 'tmux', '-S', $sock, 'kill-server' ], '>', \my $o, '2>', \my $e);

#
# (d) top at 80x24: forty queues with long names, a failure with a long
#     error.
#
q1("SET ROLE app; SELECT count(schedq.submit('q', queue => format('queue-with-a-long-name-%s', lpad(i::text, 2, '0')))) FROM generate_series(1, 40) i");
q1("SET ROLE app; SELECT schedq.submit('long', queue => 'zz-last', max_attempts => 1)");
q1("SELECT schedq.fail(token, repeat('a long error ', 20)) FROM schedq.claim('w2', queues => '{zz-last}')");
unlink "$dir/top.exit";
IPC::Run::run([ 'tmux', '-S', $sock, 'new-session', '-d', '-s', 'top',
		'-x', '80', '-y', '24', $runner ])
  or die 'tmux failed';

sub send_key
{
	IPC::Run::run([ 'tmux', '-S', $sock, 'send-keys', '-t', 'top', @_ ]);
	return;
}

$s = wait_screen(qr/^lines 1-21 of (\d+) .*q quits/m, 30);
ok(defined $s, '(d) top draws an 80x24 screen, saying which lines show');
my ($nlines) = ($s // '') =~ /^lines 1-21 of (\d+)/m;
cmp_ok($nlines // 0, '>', 60, '(d) more lines than the screen holds');
unlike($s // '', qr/zz-last/, '(d) the last queue is below the screen');
send_key('End');
$s = wait_screen(qr/^lines \d+-$nlines of $nlines/m, 30);
ok(defined $s, '(d) End scrolls to the last line');
like($s // '', qr/^Latest failures\n\s+id\s+queue\s+kind\s+attempts\s+finished\s+error\n\s+\d+\s+zz-last\s+long\s+1\s+\S+ \S+\s+a long error a long.*~$/m,
	'(d) the failures fit: every column, the error cut with ~');
send_key('Home');
ok(defined wait_screen(qr/^lines 1-21 of/m, 30), '(d) Home scrolls back to the first line');
# Down to the queue table's header: every column fits in 80.
my $header;
for (1 .. 100)
{
	send_key('Down');
	$s = screen();
	if ($s =~ /^(\s+queue\s.*)$/m)
	{
		$header = $1;
		last;
	}
}
ok(defined $header, '(d) Down scrolls to the queue table');
like($header // '', qr/^\s+queue\s+paused\s+pending\s+avail\s+running\s+done\s+failed\s+cancel\s+oldest\s+done\/min$/,
	'(d) its header shows every column, none cut');
cmp_ok(length($header // ''), '<=', 80, '(d) within 80 columns');
send_key('NPage');
ok(defined wait_screen(qr/^lines (2[2-9]|[3-9]\d)-/m, 30), '(d) PgDn scrolls a screen');
send_key('q');
$start = time;
usleep(50_000) while slurp("$dir/top.exit") eq '' && time - $start < 30;
is(slurp("$dir/top.exit"), "exit 0\n", '(d) q quits, exit 0');
IPC::Run::run([ 'tmux', '-S', $sock, 'kill-server' ], '>', \$o, '2>', \$e);

#
# (e) The running tasks and their progress; status as the monitor of
# docs/security.md, which reads the all_ views: every role's queues and
# tasks, and the same tables.  A worker without privileges is told to get
# a work grant, not a membership.
#
q1("SET ROLE app; SELECT schedq.submit('resize', queue => 'delta')");
q1("SELECT schedq.progress(token, 42, 'image 3 of 7') FROM schedq.claim('w9', queues => '{delta}')");
for my $role ('ops', 'oncall')
{
	($rc, $out, $err) = ctl($node, $role, 'status');
	is($rc, 0, "(e) status as $role: exit 0") or diag $err;
	like($out, qr/^Running \(the longest first, at most 10\)\n\s+id\s+queue\s+kind\s+worker\s+started\s+progress\s+note\n.*\n\s+\d+\s+delta\s+resize\s+w9\s+\S+ \S+\s+42%\s+image 3 of 7$/m,
		"(e) as $role: the running task, its worker, progress and note");
	like($out, qr/^\s+beta\s+0\s+0\s+0\s+0\s+1\s+0\s+0$/m, "(e) as $role: app's failed task in beta");
	like($out, qr/^\s+\d+\s+beta\s+b\s+1\s+\S+ \S+\s+disk on fire$/m, "(e) as $role: and its error");
}
is($node->safe_psql('postgres', "SELECT has_table_privilege('oncall', 'schedq.task', 'SELECT')"),
	'f', '(e) the monitor may not read the task table itself');
($rc, $out, $err) = ctl($node, 'nobody', 'worker', '--', 'true');
is($rc, 4, '(e) a worker without privileges: exit 4');
like($err, qr/SELECT schedq\.grant_work\('nobody', '<submitting role>'\)/,
	'(e) told to get a work grant');
unlike($err, qr/GRANT <|TO nobody;\s*--/, '(e) not a membership');

$node->stop;
done_testing();

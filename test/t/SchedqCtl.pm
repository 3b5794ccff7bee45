#-------------------------------------------------------------------------
# test/t/SchedqCtl.pm
#	  Helpers of the schedqctl TAP tests (04x_schedqctl_*.pl): a node with
#	  schedq and the roles of docs/security.md, running the installed schedqctl
#	  (found in PATH: check.sh puts the server's bindir first, where
#	  make install put it), and starting workers in the background.
#-------------------------------------------------------------------------
package SchedqCtl;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use SchedqTest;
use Test::More;

our @EXPORT = qw(ctl_node ctl ctl_conn start_worker worker_pid wait_exit);

# A started node with schedq, and the roles of docs/security.md#roles:
# app (submitter), worker (a work grant of app), oncall (monitor), ops
# (admin); and nobody (CONNECT only).  Extra configuration lines may be given.
sub ctl_node
{
	my ($name, $conf) = @_;
	my $node = schedq_node($name, extension => 'postgres', conf => qq{
max_worker_processes = 32
schedq.sql_workers = 0
schedq.reaper_interval = '200ms'
} . ($conf // ''));

	doc_roles($node);
	$node->safe_psql('postgres', 'CREATE ROLE nobody LOGIN');
	return $node;
}

# The -d string for a role.
sub ctl_conn
{
	my ($node, $user) = @_;
	return $node->connstr('postgres') . " user=$user";
}

# Run schedqctl COMMAND with -d for $user; returns (exit code, stdout,
# stderr).  $opts->{stdin} is fed to its standard input; $opts->{env} is
# added to its environment; $opts->{nod} leaves -d out.
sub ctl
{
	my ($node, $user, $command, @args) = @_;
	my $opts = ref $args[-1] eq 'HASH' ? pop @args : {};
	my ($out, $err) = ('', '');
	my @cmd = ('schedqctl', $command);

	push @cmd, '-d', ctl_conn($node, $user) unless $opts->{nod};
	push @cmd, @args;
	local %ENV = (%ENV, %{ $opts->{env} // {} });
	my $in = $opts->{stdin} // '';
	IPC::Run::run(\@cmd, '<', \$in, '>', \$out, '2>', \$err,
		IPC::Run::timeout(60));
	my $rc = $? >> 8;
	chomp $out;
	return ($rc, $out, $err);
}

# Start `schedqctl worker` for $user with options @$opts and command @$cmd,
# its log (stderr) in $log.  Returns the IPC::Run handle.
sub start_worker
{
	my ($node, $user, $opts, $cmd, $log) = @_;
	my @argv = (
		'schedqctl', 'worker', '-d', ctl_conn($node, $user),
		@$opts, '--', @$cmd);
	return IPC::Run::start(\@argv, '<', '/dev/null', '>', "$log.out", '2>', $log);
}

# The pid of a started worker.
sub worker_pid
{
	my ($h) = @_;
	return $h->{KIDS}[0]{PID};
}


# Wait up to $timeout seconds for a worker started by start_worker to
# exit (a zombie, or gone; finish then reaps it at once); returns its exit
# status, or undef (after killing it) when it did not exit in time.
sub wait_exit
{
	my ($h, $timeout) = @_;
	my $pid = worker_pid($h);

	if (wait_for(
			sub {
				my $stat = slurp("/proc/$pid/stat");
				return $stat eq '' || $stat =~ /^\d+ \(.*\) Z/;
			},
			$timeout,
			'the worker to exit'))
	{
		$h->finish;
		return $h->result(0);
	}
	$h->kill_kill;
	return undef;
}

1;

#-------------------------------------------------------------------------
# test/t/HaCluster.pm
#	  A pg_auto_failover formation for t/080_ha.pl: a monitor and two
#	  Postgres nodes on 127.0.0.1, managed by the real pg_autoctl (run as
#	  the test's OS user, everything under the test's temporary directory),
#	  with schedq preloaded on the nodes and the failover timeouts lowered
#	  so that a failover takes seconds.  HaConn is a connection target
#	  (one node's port, or the formation's multi-host URI) with the psql
#	  and safe_psql methods SchedqTest's helpers call.
#-------------------------------------------------------------------------
package HaConn;

use strict;
use warnings;

use IPC::Run;

sub new
{
	my ($class, $conn) = @_;
	return bless { conn => $conn }, $class;
}

# psql -c $query (the database is the target's); returns ($rc, $stdout,
# $stderr) in list context, as PostgreSQL::Test::Cluster's psql does.
sub psql
{
	my ($self, $db, $query, %opts) = @_;
	my ($out, $err) = ('', '');
	my @cmd = (
		'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
		'-d', $self->{conn}, '-f', '-');
	my $ok = eval {
		IPC::Run::run(\@cmd, '<', \$query, '>', \$out, '2>', \$err,
			IPC::Run::timeout($opts{timeout} // 60));
		1;
	};
	my $rc = $ok ? $? >> 8 : 124;
	$err .= $@ unless $ok;
	chomp $out;
	return wantarray ? ($rc, $out, $err) : $out;
}

sub safe_psql
{
	my ($self, $db, $query) = @_;
	my ($rc, $out, $err) = $self->psql($db, $query);
	die "psql on $self->{conn} failed ($rc): $err\nquery: $query" if $rc != 0;
	return $out;
}

package HaCluster;

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

# What the formation needs, or undef: pg_autoctl in PATH, and the
# pgautofailover extension installed in the server of the pg_config in PATH.
sub missing
{
	my $pgac = `command -v pg_autoctl 2>/dev/null`;
	return 'pg_autoctl is not installed (Debian: pg-auto-failover-cli)'
	  unless $pgac =~ /\S/;
	chomp(my $lib = `pg_config --pkglibdir`);
	chomp(my $share = `pg_config --sharedir`);
	return "the pgautofailover extension is not installed for this server"
	  . " (Debian: postgresql-NN-auto-failover; looked in $lib and $share/extension)"
	  unless -f "$lib/pgautofailover.so"
	  && -f "$share/extension/pgautofailover.control";
	return undef;
}

# The monitor's settings: health checks every second, a node unhealthy
# after 2 s, the old primary given 3 s to drain (the new primary's
# read-only window after a crash).
my $monitor_conf = q{
shared_buffers = '32MB'
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 3000
pgautofailover.startup_grace_period = 1000
};

# The keeper's timeouts (pg_autoctl config set), in seconds: a primary
# that reaches neither the monitor nor its standby demotes itself after 4 s,
# before the monitor lets the new primary take writes (2 s + 3 s).
my %keeper_conf = (
	'timeout.network_partition_timeout' => 4,
	'timeout.prepare_promotion_walreceiver' => 1,
	'timeout.prepare_promotion_catchup' => 10,
	'timeout.postgresql_restart_failure_timeout' => 5,
);

sub new
{
	my ($class, %opts) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my $self = bless {
		dir => $dir,
		node_conf => $opts{node_conf} // '',
		handles => {},
	}, $class;

	chomp(my $bindir = `pg_config --bindir`);
	$self->{pg_ctl} = "$bindir/pg_ctl";
	mkdir "$dir/$_" for qw(config data run sock);
	# pg_autoctl keeps its configuration and state in the XDG directories;
	# the keepers connect to their own Postgres on 127.0.0.1.
	$ENV{XDG_CONFIG_HOME} = "$dir/config";
	$ENV{XDG_DATA_HOME} = "$dir/data";
	$ENV{XDG_RUNTIME_DIR} = "$dir/run";
	$ENV{PGHOST} = '127.0.0.1';
	delete $ENV{$_} for qw(PGPORT PGDATABASE PGUSER PGDATA);
	$self->{port}{$_} = PostgreSQL::Test::Cluster::get_free_port()
	  for qw(monitor node1 node2);
	return $self;
}

sub pgdata { return "$_[0]{dir}/$_[1]" }
sub port { return $_[0]{port}{ $_[1] } }

# A connection to one node as $user (default postgres).
sub conn
{
	my ($self, $name, $user) = @_;
	return HaConn->new(
		"host=127.0.0.1 port=$self->{port}{$name} dbname=postgres user="
		  . ($user // 'postgres')
		  . ' connect_timeout=2');
}

# Run pg_autoctl @args; returns ($rc, $stdout, $stderr).
sub autoctl
{
	my ($self, @args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_autoctl', @args ], '<', '/dev/null', '>', \$out,
		'2>', \$err, IPC::Run::timeout(180));
	return ($? >> 8, $out, $err);
}

sub autoctl_ok
{
	my ($self, @args) = @_;
	my ($rc, $out, $err) = $self->autoctl(@args);
	die "pg_autoctl @args failed ($rc):\n$out\n$err" if $rc != 0;
	return $out;
}

sub append
{
	my ($path, $text) = @_;
	open(my $fh, '>>', $path) or die "cannot append to $path: $!";
	print $fh $text;
	close $fh;
	return;
}

# Start `pg_autoctl run` for $name, its output in $dir/$name.autoctl.log.
sub run_service
{
	my ($self, $name) = @_;
	my $log = "$self->{dir}/$name.autoctl.log";
	$self->{handles}{$name} = IPC::Run::start(
		[ 'pg_autoctl', 'run', '--pgdata', $self->pgdata($name) ],
		'<', '/dev/null', '>>', $log, '2>>', $log);
	return;
}

# The monitor, then node1 (the primary) and node2 (its standby, by
# pg_basebackup); returns once the monitor says primary and secondary.
sub create
{
	my ($self) = @_;
	my $dir = $self->{dir};
	my @common = (
		'--pgctl' => $self->{pg_ctl},
		'--hostname' => '127.0.0.1',
		'--auth' => 'trust',
		'--no-ssl');
	# Sockets in the test's directory, not the system's.
	my $sock = "\nunix_socket_directories = '$dir/sock'\n";

	$self->autoctl_ok('create', 'monitor', @common,
		'--pgdata' => $self->pgdata('monitor'),
		'--pgport' => $self->{port}{monitor});
	append($self->pgdata('monitor') . '/postgresql.conf', $monitor_conf . $sock);
	$self->run_service('monitor');
	$self->{monitor_uri} =
	  "postgres://autoctl_node\@127.0.0.1:$self->{port}{monitor}/pg_auto_failover?sslmode=disable";
	$self->{monitor} = HaConn->new(
		"host=127.0.0.1 port=$self->{port}{monitor} dbname=pg_auto_failover user=postgres");
	die 'the monitor does not start'
	  unless $self->wait_until(sub { ($self->{monitor}->psql('', 'SELECT 1'))[0] == 0 }, 60);

	for my $name (qw(node1 node2))
	{
		$self->autoctl_ok('create', 'postgres', @common,
			'--pgdata' => $self->pgdata($name),
			'--pgport' => $self->{port}{$name},
			'--pghost' => '127.0.0.1',
			'--listen' => '127.0.0.1',
			'--name' => $name,
			'--monitor' => $self->{monitor_uri});
		# node2 is a copy of node1, configuration included.
		append($self->pgdata($name) . '/postgresql.conf',
			"\nshared_preload_libraries = 'schedq, pg_stat_statements'\n"
			  . "shared_buffers = '32MB'\n"
			  . $self->{node_conf} . $sock)
		  if $name eq 'node1';
		$self->autoctl_ok('config', 'set', '--pgdata', $self->pgdata($name), $_,
			$keeper_conf{$_})
		  for sort keys %keeper_conf;
		$self->run_service($name);
	}
	return $self->wait_stable('node1', 120);
}

# The monitor's view: "name:reported:goal,..." by name.
sub states
{
	my ($self) = @_;
	my ($rc, $out) = $self->{monitor}->psql('',
		"SELECT string_agg(nodename || ':' || reportedstate || ':' || goalstate, ','"
		  . " ORDER BY nodename) FROM pgautofailover.node");
	return $rc == 0 ? $out : '';
}

# Wait until $primary is primary and the other node secondary, both as
# reported and as assigned.  Returns the seconds it took, or undef.
sub wait_stable
{
	my ($self, $primary, $timeout) = @_;
	my $other = $primary eq 'node1' ? 'node2' : 'node1';
	my $want = join ',',
	  sort("$primary:primary:primary", "$other:secondary:secondary");
	my $start = time;
	return time - $start
	  if $self->wait_until(sub { $self->states eq $want }, $timeout);
	diag "the formation did not settle with $primary as primary: " . $self->states;
	return undef;
}

sub wait_until
{
	my ($self, $cond, $timeout) = @_;
	my $start = time;
	while (time - $start < $timeout)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return 0;
}

# The formation's URI (pg_autoctl show uri --formation default): every
# node, target_session_attrs=read-write.
sub formation_uri
{
	my ($self) = @_;
	my $out = $self->autoctl_ok('show', 'uri', '--pgdata', $self->pgdata('monitor'),
		'--formation', 'default');
	$out =~ s/\s+$//;
	$out = (split /\n/, $out)[-1];
	$out =~ s/^.*?(postgres(?:ql)?:\/\/)/$1/;
	return $out;
}

# The text of the server logs of node $name (logging_collector's files).
sub server_log
{
	my ($self, $name) = @_;
	my $text = '';
	for my $f (sort glob($self->pgdata($name) . '/log/*.log'))
	{
		open(my $fh, '<', $f) or next;
		local $/;
		$text .= <$fh> // '';
		close $fh;
	}
	return $text;
}

# The processes under $pid (itself included), from /proc.
sub descendants
{
	my ($pid) = @_;
	my %children;
	for my $stat (glob('/proc/[0-9]*/stat'))
	{
		open(my $fh, '<', $stat) or next;
		my $line = <$fh> // '';
		close $fh;
		push @{ $children{$2} }, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+)/s;
	}
	my @all = ($pid);
	for (my $i = 0; $i < @all; $i++)
	{
		push @all, @{ $children{ $all[$i] } // [] };
	}
	return @all;
}

# A crash of node $name, as of its machine: its keeper and its Postgres
# (postmaster, backends, walsenders) are frozen at once and killed, so
# that nothing more is written, sent or shut down cleanly.
sub crash
{
	my ($self, $name) = @_;
	my $h = delete $self->{handles}{$name};
	my @pids = descendants($h->{KIDS}[0]{PID});
	kill 'STOP', @pids;
	kill 'KILL', @pids;
	eval { $h->finish; 1 } or $h->kill_kill;
	return scalar @pids;
}

# Everything down, whatever state it is in.
sub teardown
{
	my ($self) = @_;
	for my $name (qw(node1 node2 monitor))
	{
		next unless $self->{handles}{$name};
		$self->autoctl('stop', '--pgdata', $self->pgdata($name), '--immediate');
	}
	for my $name (keys %{ $self->{handles} })
	{
		my $h = delete $self->{handles}{$name};
		$h->kill_kill(grace => 5);
	}
	for my $name (qw(node1 node2 monitor))
	{
		my $pgdata = $self->pgdata($name);
		next unless open(my $fh, '<', "$pgdata/postmaster.pid");
		my @lines = <$fh>;
		close $fh;
		my ($pid) = ($lines[0] // '') =~ /(\d+)/;
		if ($pid && kill(0, $pid))
		{
			system("'$self->{pg_ctl}' -D '$pgdata' -m immediate stop >/dev/null 2>&1");
		}
		elsif (($lines[6] // '') =~ /^\s*\d+\s+(\d+)/)
		{
			# A crashed node's shared memory segment.
			system("ipcrm -m $1 >/dev/null 2>&1");
		}
	}
	return;
}

1;

#-------------------------------------------------------------------------
# test/t/053_examples_auth.pl
#	  The three example workers (examples/python, node, go) against a
#	  server set up as a stock Debian cluster is: peer authentication on
#	  the Unix socket, scram-sha-256 over TCP on localhost:
#	  (a) the documented recipe (PGHOST=localhost, the password in a
#	      password file of mode 0600) works: each worker does a task, and
#	      exits 0 on SIGTERM;
#	  (b) a wrong password: each exits 3 within seconds, with one line on
#	      stderr, the same line for all three;
#	  (c) the Unix socket as another OS user than the role (peer
#	      authentication): exit 3, one line, the server's reason;
#	  (d) a role without the worker's privileges: exit 4, one line, the
#	      same for all three.
#	  A language whose toolchain or packages are missing is left out with
#	  a note (the other tests of examples/ say how to install them).
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SchedqTest;
use GoBuild;

my $src = $ENV{SCHEDQ_SRCDIR};
my $tmp = PostgreSQL::Test::Utils::tempdir;
my %worker;

# The workers this machine can run.
{
	my ($python) = grep { system("$_ -c 'import psycopg' >/dev/null 2>&1") == 0 }
	  ('python3', '/usr/bin/python3');
	$worker{python} = [ $python, "$src/examples/python/worker.py" ] if $python;

	my $node = `node --version 2>/dev/null` // '';
	$worker{node} = [ 'node', "$src/examples/node/worker.js" ]
	  if $node =~ /^v(\d+)/ && $1 >= 18
	  && -f "$src/examples/node/node_modules/pg/package.json";

	if (!go_missing())
	{
		my ($built, $out) = go_build($tmp, "$tmp/schedq-worker", "$src/examples/go/worker.go");
		if ($built) { $worker{go} = ["$tmp/schedq-worker"]; }
		else { diag "go build failed:\n$out"; }
	}
}
plan skip_all => 'none of the example workers can run here' unless %worker;
note 'workers: ' . join(', ', sort keys %worker);
my @langs = sort keys %worker;

my $node = schedq_node('examples_auth', extension => 'postgres', conf => q{
listen_addresses = 'localhost'
password_encryption = 'scram-sha-256'
max_worker_processes = 16
schedq.sql_workers = 0
});
doc_roles($node);
$node->safe_psql('postgres', q{
ALTER ROLE worker PASSWORD 'right-pw';
CREATE ROLE bare LOGIN PASSWORD 'bare-pw';
});
# Debian's stock pg_hba.conf, in short: peer on the socket, a password over
# TCP.  The test's own psql connects by peer, as the OS user its role is.
{
	my $hba = $node->data_dir . '/pg_hba.conf';
	open(my $fh, '>', $hba) or die "cannot write $hba: $!";
	print $fh "local all all peer\n";
	print $fh "host all all 127.0.0.1/32 scram-sha-256\n";
	print $fh "host all all ::1/128 scram-sha-256\n";
	close $fh;
	$node->reload;
}

sub passfile
{
	my ($name, $line) = @_;
	my $path = "$tmp/$name";
	open(my $fh, '>', $path) or die;
	print $fh "$line\n";
	close $fh;
	chmod 0600, $path;
	return $path;
}
my $port = $node->port;
my $right = passfile('right.pgpass', "localhost:$port:postgres:worker:right-pw");
my $wrong = passfile('wrong.pgpass', "localhost:$port:postgres:worker:not-the-pw");
my $bare = passfile('bare.pgpass', "localhost:$port:postgres:bare:bare-pw");

# Start a worker with the libpq settings of %$env (in its environment
# only: the test's own psql connects as before); its output in $$out and
# $$err.
sub start_lang
{
	my ($lang, $env, $out, $err, $timeout) = @_;
	my %set = (PGPORT => $port, PGDATABASE => 'postgres', SCHEDQ_WAIT => 2,
		SCHEDQ_LEASE => 10, %$env);
	return IPC::Run::start(
		$worker{$lang}, '<', '/dev/null', '>', $out, '2>', $err,
		init => sub {
			delete $ENV{PGPASSWORD};
			$ENV{$_} = $set{$_} for keys %set;
		},
		IPC::Run::timeout($timeout));
}

# Run a worker to its end, at most $timeout s: (exit code, stderr, secs).
sub run_to_end
{
	my ($lang, $env, $timeout) = @_;
	my ($out, $err) = ('', '');
	my $t0 = time;
	my $h = start_lang($lang, $env, \$out, \$err, $timeout);
	my $rc = eval { $h->finish; $h->result(0) };
	$h->kill_kill unless defined $rc;
	return ($rc, $err, time - $t0);
}

#
# (a) The recipe: PGHOST=localhost, the password in a password file.
#
for my $lang (@langs)
{
	my $id = $node->safe_psql('postgres',
		"SET ROLE app; SELECT schedq.submit('add', payload => '{\"numbers\": [1, 2, 3]}')");
	my ($out, $err) = ('', '');
	my $h = start_lang($lang,
		{ PGHOST => 'localhost', PGUSER => 'worker', PGPASSFILE => $right },
		\$out, \$err, 120);
	ok( defined poll_until(
			$node, 'postgres', "SELECT result->>'sum' FROM schedq.task WHERE id = $id", '6', 60),
		"(a) $lang: PGHOST=localhost and a password file: the task is done")
	  or diag "stdout: $out\nstderr: $err";
	$h->signal('TERM');
	my $rc = eval { $h->finish; $h->result(0) };
	is($rc, 0, "(a) $lang: exit 0 on SIGTERM") or diag $err;
}

#
# (b) A wrong password; (c) peer authentication on the socket; (d) no
#     privileges.
#
my %line;
for my $case (
	[ 'b', 'a wrong password', { PGHOST => 'localhost', PGUSER => 'worker', PGPASSFILE => $wrong },
		3, qr/^schedq-worker: could not connect: password authentication failed for user "worker"\n\z/ ],
	[ 'c', 'the socket (peer)', { PGHOST => $node->host, PGUSER => 'worker', PGPASSFILE => $right },
		3, qr/^schedq-worker: could not connect: .*Peer authentication failed for user "worker"\n\z/ ],
	[ 'd', 'no privileges', { PGHOST => 'localhost', PGUSER => 'bare', PGPASSFILE => $bare },
		4, qr/^schedq-worker: missing privilege: permission denied for schema schedq \(see docs\/security\.md#roles\)\n\z/ ])
{
	my ($tag, $what, $env, $code, $re) = @$case;
	for my $lang (@langs)
	{
		my ($rc, $err, $secs) = run_to_end($lang, $env, 60);
		is($rc, $code, "($tag) $lang, $what: exit $code") or diag $err;
		like($err, $re, "($tag) $lang, $what: one line on stderr");
		cmp_ok($secs, '<', 15, "($tag) $lang, $what: within seconds, not retrying");
		$line{$tag}{$lang} = $err;
	}
	my %distinct = map { $_ => 1 } values %{ $line{$tag} };
	is(scalar keys %distinct, 1, "($tag) $what: the same line from every worker")
	  or diag explain $line{$tag};
}

$node->stop;
done_testing();

#-------------------------------------------------------------------------
# test/t/043_schedqctl_connect.pl
#	  schedqctl connects the libpq way to a server that requires
#	  scram-sha-256 password authentication (pg_hba.conf of the node):
#	  without a password it fails with exit 3 and a message that says a
#	  password is needed and where to put it; with a wrong one, exit 3 and
#	  the server's "password authentication failed"; a password file
#	  (PGPASSFILE) readable by others is ignored, as libpq does; with the
#	  file at mode 0600, owned by the user running schedqctl, it connects
#	  (submit, and a worker that completes the task); a service file
#	  (PGSERVICEFILE, -d service=NAME) with the password file works too,
#	  for submit and status.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;
use SchedqCtl;

my $node = ctl_node('ctl_connect', "password_encryption = 'scram-sha-256'\n");
my $dir = PostgreSQL::Test::Utils::tempdir();
my $host = $node->host;
my $port = $node->port;
my $os_user = getpwuid($<);

# Passwords for the roles schedqctl uses; then only the OS user (the
# node's superuser, for the test's own psql) logs in without one.
$node->safe_psql(
	'postgres', q{
ALTER ROLE app PASSWORD 'app pw: s3cret';
ALTER ROLE worker PASSWORD 'worker-pw';
ALTER ROLE ops PASSWORD 'ops-pw';
});
is( $node->safe_psql(
		'postgres', "SELECT rolpassword LIKE 'SCRAM-SHA-256\$%' FROM pg_authid WHERE rolname = 'app'"),
	't',
	'the password is stored as a SCRAM verifier');
my $hba = $node->data_dir . '/pg_hba.conf';
open(my $fh, '>', $hba) or die "cannot write $hba: $!";
print $fh "local all $os_user trust\n";
print $fh "local all all scram-sha-256\n";
print $fh "host all all 127.0.0.1/32 scram-sha-256\n";
close $fh;
$node->reload;

sub write_file
{
	my ($path, $text, $mode) = @_;
	open(my $out, '>', $path) or die "cannot write $path: $!";
	print $out $text;
	close $out;
	chmod $mode, $path;
	return $path;
}

# schedqctl with a clean libpq environment: no PGPASSWORD, and a password
# file only where the test names one.
sub run_ctl
{
	my ($env, @args) = @_;
	my %env = (PGPASSFILE => "$dir/none", %$env);
	delete $env{PGPASSWORD};
	my ($rc, $out, $err) = ctl($node, 'app', @args, { nod => 1, env => \%env });
	return ($rc, $out, $err);
}

my $conn = "host=$host port=$port dbname=postgres user=app";

# Wait until the server refuses a password-less login (the reload is
# asynchronous): the first check below must see the new pg_hba.conf.
my $refused = 0;
for (1 .. 600)
{
	my ($rc) = run_ctl({}, 'submit', 'probe', '-d', $conn);
	if ($rc != 0) { $refused = 1; last; }
	$node->safe_psql('postgres', "DELETE FROM schedq.task WHERE kind = 'probe'");
	select(undef, undef, undef, 0.1);
}
ok($refused, 'pg_hba.conf in force: scram-sha-256 for app');

#
# No password, a wrong one, a password file others can read.
#
my ($rc, $out, $err) = run_ctl({}, 'submit', 'k', '-d', $conn);
is($rc, 3, 'no password: exit 3');
like($err, qr/could not connect: .*no password supplied/s, 'saying no password was supplied');
like($err, qr/hint: .*~\/\.pgpass.*PGPASSFILE.*0600/s, 'and where to put one');
is($out, '', 'nothing on stdout');

my $wrong = write_file("$dir/wrong.pgpass", "*:*:*:app:not the password\n", 0600);
($rc, $out, $err) = run_ctl({ PGPASSFILE => $wrong }, 'submit', 'k', '-d', $conn);
is($rc, 3, 'a wrong password: exit 3');
like($err, qr/password authentication failed for user "app"/, 'the server\'s message');

my $pgpass = write_file("$dir/pgpass",
	"# host:port:database:user:password\n"
	  . "$host:$port:postgres:worker:worker-pw\n"
	  . "*:*:*:app:app pw\\: s3cret\n"
	  . "*:*:*:ops:ops-pw\n",
	0644);
($rc, $out, $err) = run_ctl({ PGPASSFILE => $pgpass }, 'submit', 'k', '-d', $conn);
is($rc, 3, 'a password file others can read is ignored: exit 3');
like($err, qr/has group or world access/, 'libpq says why');

#
# The password file, mode 0600, owned by the user running schedqctl.
#
chmod 0600, $pgpass;
is((stat $pgpass)[4], $<, 'the password file is owned by the user running schedqctl');
($rc, $out, $err) = run_ctl({ PGPASSFILE => $pgpass }, 'submit', 'pw.task', '-d', $conn,
	'--payload' => '{"n": 7}');
ok($rc == 0 && $out =~ /^\d+$/, 'PGPASSFILE (0600): submit connects') or diag $err;
my $id = $out;
is($node->safe_psql('postgres', "SELECT owner || ' ' || kind FROM schedq.task WHERE id = $id"),
	'app pw.task', 'the task is app\'s');

# A worker (as the worker role, its password a host:port:database line).
{
	my $log = "$dir/worker.log";
	local $ENV{PGPASSFILE} = $pgpass;
	local $ENV{PGPASSWORD};
	delete $ENV{PGPASSWORD};
	my $h = start_worker($node, 'worker', [ '--concurrency' => '2' ],
		[ 'sh', '-c', 'cat' ], $log);
	ok( defined poll_until(
			$node, 'postgres', "SELECT status FROM schedq.task WHERE id = $id",
			'done', 120),
		'a worker connects with the password file and completes the task')
	  or diag PostgreSQL::Test::Utils::slurp_file($log);
	is($node->safe_psql('postgres', "SELECT result->>'n' FROM schedq.task WHERE id = $id"),
		'7', 'with the program\'s output as the result');
	$h->signal('TERM');
	$h->finish;
	is($h->result(0), 0, 'the worker exits 0 on SIGTERM');
}

#
# A service file: connection parameters by name, the password still from
# the password file.
#
my $svc = write_file("$dir/pg_service.conf",
	"[schedq-app]\nhost=$host\nport=$port\ndbname=postgres\nuser=app\n\n"
	  . "[schedq-ops]\nhost=$host\nport=$port\ndbname=postgres\nuser=ops\n",
	0600);
($rc, $out, $err) = run_ctl({ PGPASSFILE => $pgpass, PGSERVICEFILE => $svc },
	'submit', 'svc.task', '-d', 'service=schedq-app');
ok($rc == 0 && $out =~ /^\d+$/, 'a service file (-d service=NAME): submit connects') or diag $err;
is($node->safe_psql('postgres', "SELECT owner FROM schedq.task WHERE id = " . ($out =~ /^(\d+)$/ ? $1 : 0)),
	'app', 'as the service\'s user');
($rc, $out, $err) = run_ctl({ PGPASSFILE => $pgpass, PGSERVICEFILE => $svc },
	'status', '-d', 'service=schedq-ops');
is($rc, 0, 'status through a service as ops: exit 0') or diag $err;
like($out, qr/svc\.task|default/, 'status shows the queue');
($rc, $out, $err) = run_ctl({ PGSERVICEFILE => $svc }, 'status', '-d', 'service=schedq-ops');
is($rc, 3, 'the service without a password: exit 3');
($rc, $out, $err) = run_ctl({ PGPASSFILE => $pgpass, PGSERVICEFILE => $svc },
	'status', '-d', 'service=nonesuch');
is($rc, 3, 'an unknown service: exit 3');
like($err, qr/definition of service "nonesuch" not found/, 'libpq\'s message');

$node->stop;
done_testing();

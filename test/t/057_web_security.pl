#-------------------------------------------------------------------------
# test/t/057_web_security.pl
#	  schedqctl web's defences, spoken to in plain HTTP (no browser):
#	  sign-in needs the role's own password, checked by the server: an
#	  empty password is refused (400) even when PGPASSWORD or a password
#	  file of the console's user holds it, and a role whose pg_hba.conf
#	  line needs no password (trust) cannot sign in (401), with a generic
#	  message; a failed sign-in is logged with the role name (and the
#	  server's reason) escaped, so that a name holding a newline or an
#	  escape sequence forges no log line; listening on 0.0.0.0, a foreign Host is refused (421) while
#	  the loopback names and --allow-host names are served;
#	  --no-sign-in refuses to start as a superuser (exit 2), and refuses
#	  /api/logout; enabling or disabling a schedule
#	  (schedq.set_schedule_enabled) keeps its owner; at most 4 sessions of a role
#	  (503, none evicted), and signing in again closes the previous one;
#	  a statement blocked by a lock is canceled after 5 seconds; a run's
#	  graph is sent at most 500 tasks.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use SchedqTest;
use SchedqCtl;

my $node = ctl_node('websec');
my $password = 'console-sec-pw';
my $super = $node->safe_psql('postgres', 'SELECT current_user');
my $conninfo = $node->connstr('postgres');
my $log = "$PostgreSQL::Test::Utils::tmp_check/websec";

# app, ops and oncall have passwords (scram); nobody's line is trust, no
# password asked.
$node->safe_psql('postgres', "ALTER ROLE $_ PASSWORD '$password'")
  for qw(app ops oncall);
my $hba = $node->data_dir . '/pg_hba.conf';
open(my $fh, '>', $hba) or die "$hba: $!";
print $fh "local all $super trust\nlocal all nobody trust\n"
  . "local all all scram-sha-256\n";
close $fh;
$node->reload;

# A password file of the console's user holding app's password.
my $passfile = "$log.pgpass";
open($fh, '>', $passfile) or die "$passfile: $!";
print $fh "*:*:*:app:$password\n";
close $fh;
chmod 0600, $passfile;

# Start schedqctl web; returns (handle, port) once it listens.
sub start_web
{
	my ($listen_host, $env, @args) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $out = '';
	local %ENV = (%ENV, %$env);
	my $h = IPC::Run::start(
		[ 'schedqctl', 'web', '--listen', "$listen_host:$port", @args ],
		'<', '/dev/null', '>', \$out, '2>', "$log.$port.err");
	my $deadline = time + 30;
	$h->pump_nb while $out !~ /listening/ && time < $deadline && sleep 0.1;
	like($out, qr{listening on http://\Q$listen_host\E:$port/},
		"schedqctl web @args listens on $listen_host:$port");
	return ($h, $port);
}

# One HTTP request over a socket to 127.0.0.1:$port; returns (status,
# headers, body).
sub http
{
	my ($port, $method, $path, %o) = @_;
	my $sock = IO::Socket::INET->new("127.0.0.1:$port")
	  or return ("connect: $!", '', '');
	my $body = $o{body} // '';
	my $req = "$method $path HTTP/1.1\r\nHost: "
	  . ($o{host} // "127.0.0.1:$port")
	  . "\r\nConnection: close\r\n";
	$req .= "Cookie: $o{cookie}\r\n" if $o{cookie};
	$req .= "X-CSRF-Token: $o{csrf}\r\n" if $o{csrf};
	$req .= "Content-Type: application/x-www-form-urlencoded\r\n"
	  . "Content-Length: "
	  . length($body) . "\r\n"
	  if $method eq 'POST';
	print $sock "$req\r\n$body";
	local $/;
	my $resp = <$sock> // '';
	close $sock;
	my ($head, $content) = split /\r\n\r\n/, $resp, 2;
	my ($status) = ($head // '') =~ m{^HTTP/1\.1 (\d+)};
	return ($status // $resp, $head // '', $content // '');
}

# Sign in as $user with $pw: GET /api/session for the sign-in token and
# its cookie, then POST /api/login.  Returns (status, body).
sub sign_in
{
	my ($port, $user, $pw, $old) = @_;
	my ($st, $head, $body) = http($port, 'GET', '/api/session');
	my ($token) = $body =~ /"loginToken":"([0-9a-f]+)"/;
	return ("no login token: $st $body", '') unless $token;
	($st, $head, $body) = http(
		$port, 'POST', '/api/login',
		cookie => "schedq_login=$token" . ($old ? "; $old" : ''),
		csrf => $token,
		body => "user=$user&password=$pw");
	return ($st, $body, $head);
}

# Sign in and return the session's cookie and CSRF token.
sub session_of
{
	my ($port, $user, $old) = @_;
	my ($st, $body, $head) = sign_in($port, $user, $password, $old);
	my ($cookie) = $head =~ /^Set-Cookie: (schedq_session=[0-9a-f]+)/mi;
	my ($csrf) = $body =~ /"csrf":"([0-9a-f]+)"/;
	return ($cookie, $csrf);
}

# 1. Sign-in is the role's own password, never the console's.
my ($web, $port) = start_web('127.0.0.1',
	{ PGPASSWORD => $password, PGPASSFILE => $passfile },
	'-d', $conninfo);
my ($st, $body) = sign_in($port, 'app', '');
is($st, 400, 'an empty password is refused (400), PGPASSWORD holds it');
like($body, qr/password is needed/, '... and says a password is needed');
($st, $body) = sign_in($port, 'nobody', 'anything');
is($st, 401, 'a role of a trust line cannot sign in (401)');
like($body, qr/sign-in failed/, '... with a generic message');
unlike($body, qr{/tmp|socket|trust|password authentication}i,
	'... that names neither the server nor why');
($st, $body) = sign_in($port, 'app', 'wrong');
is($st, 401, 'a wrong password is refused (401)');
($st, $body) = sign_in($port, 'app', $password);
is($st, 200, 'the right password signs in');
like($body, qr/"user":"app"/, '... as app');

# A failed sign-in is logged with the role name escaped: a name holding a
# newline and a terminal's escape sequence forges no line of the log.
($st, $body) = sign_in($port,
	'evil%0Aschedqctl%3A%20warning%3A%20web%3A%20sign-in%20as%20%22ops%22%20succeeded%1B%5B2J',
	'wrong');
is($st, 401, 'a hostile role name is refused (401)');
my $errlog = '';
my $deadline = time + 30;
while ($errlog !~ /evil/ && time < $deadline)
{
	sleep 0.1;
	$errlog = slurp_file("$log.$port.err");
}
like($errlog,
	qr/web: sign-in as "evil\\nschedqctl: warning: web: sign-in as \\"ops\\" succeeded\\x1b\[2J" failed: [^\n]*evil\\n/,
	'the failed sign-in is logged, its name escaped (the server\'s reason too)');
unlike($errlog, qr/^schedqctl: warning: web: sign-in as "ops" succeeded/m,
	'... and forges no line');
unlike($errlog, qr/\x1b/, '... nor writes an escape sequence');
$web->signal('TERM');
$web->finish;

# Without PGPASSWORD, the password file alone.
($web, $port) = start_web('127.0.0.1', { PGPASSFILE => $passfile },
	'-d', $conninfo);
($st, $body) = sign_in($port, 'app', '');
is($st, 400, 'an empty password is refused, a password file holds it');
($st, $body) = sign_in($port, 'app', 'wrong');
is($st, 401, 'a wrong password is refused, not replaced by the file\'s');
$web->signal('TERM');
$web->finish;

# Enabling or disabling a schedule keeps its owner: the console calls
# schedq.set_schedule_enabled, not schedq.schedule() (which makes its
# caller the owner).
$node->safe_psql('postgres',
	"SET ROLE app; SELECT schedq.schedule('nightly', '0 3 * * *', 'report')");
sub nightly
{
	return $node->safe_psql('postgres',
		"SELECT owner::text || ' ' || enabled || ' ' || (next_run > now()) "
		  . "FROM schedq.periodic WHERE name = 'nightly'");
}
($web, $port) = start_web('127.0.0.1', {}, '-d', $conninfo);
my ($cookie, $csrf) = session_of($port, 'ops');
my $head;
($st, $head, $body) = http(
	$port, 'POST', '/api/action/disable',
	cookie => $cookie,
	csrf => $csrf,
	body => 'name=nightly');
is($st, 200, 'the admin disables app\'s schedule from the console');
is(nightly(), 'app false true', '... which stays app\'s, disabled');
($st, $head, $body) = http(
	$port, 'POST', '/api/action/enable',
	cookie => $cookie,
	csrf => $csrf,
	body => 'name=nowhere');
is($st, 404, 'no such schedule: 404');
($cookie, $csrf) = session_of($port, 'app');
($st, $head, $body) = http(
	$port, 'POST', '/api/action/enable',
	cookie => $cookie,
	csrf => $csrf,
	body => 'name=nightly');
is($st, 200, 'app enables its own schedule');
is(nightly(), 'app true true', '... which stays app\'s, enabled');
$web->signal('TERM');
$web->finish;

# schedq.set_schedule_enabled itself: the owner stays; a role that may not
# act for the owner is refused (42501); enabling starts from now; NULLs
# are refused (22004); a missing one is false.
$node->safe_psql('postgres', q{
SET ROLE ops;
SELECT schedq.schedule('ops-job', '0 4 * * *', 'cleanup');
RESET ROLE;
UPDATE schedq.periodic SET next_run = now() - interval '3 days', enabled = false
 WHERE name = 'ops-job';
});
my ($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE app; SELECT schedq.set_schedule_enabled('ops-job', false)");
like($err, qr/permission denied for periodic task "ops-job"/,
	'app may not disable ops\'s schedule');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE app; SELECT schedq.set_schedule_enabled('nightly', NULL)");
like($err, qr/enabled must not be null/, 'enabled NULL is refused');
is( $node->safe_psql(
		'postgres', q{SET ROLE ops;
SELECT schedq.set_schedule_enabled('ops-job', true) || ' '
  || schedq.set_schedule_enabled('no-such', true)}),
	'true false',
	'enabling: true; a missing one: false');
is( $node->safe_psql(
		'postgres',
		"SELECT owner::text || ' ' || enabled || ' ' || (next_run > now()) "
		  . "FROM schedq.periodic WHERE name = 'ops-job'"),
	'ops true true',
	'... started from now, not from its old next run');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE app; SELECT schedq.set_schedule_enabled('nightly', NULL)",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/22004/, '... with 22004');

# Sessions: at most 4 open of one role (503 after, none evicted); signing
# in again closes the browser's previous session.
($web, $port) = start_web('127.0.0.1', {}, '-d', $conninfo);
my @app = map { [ session_of($port, 'app') ] } 1 .. 4;
ok(!(grep { !$_->[0] } @app), 'app opens 4 sessions');
($st, $body) = sign_in($port, 'app', $password);
is($st, 503, 'a fifth session of app is refused (503)');
like($body, qr/too many sessions of this role/, '... and says why');
($st) = http($port, 'GET', '/api/overview', cookie => $app[0][0]);
is($st, 200, '... and the first session is still open');
my ($other) = session_of($port, 'oncall');
ok($other, 'another role still signs in');
my ($again) = session_of($port, 'app', $app[0][0]);
ok($again, 'app signs in again from the browser of its first session');
($st) = http($port, 'GET', '/api/overview', cookie => $app[0][0]);
is($st, 401, '... which closed that session');
($st) = http($port, 'GET', '/api/overview', cookie => $again);
is($st, 200, '... and the new one answers');

# A run's graph is sent at most 500 tasks (and one more to say there are
# more), however large the run.
my $big = $node->safe_psql('postgres', q{
SET ROLE app;
SELECT schedq.create_run('big', 'continue') \gset
SELECT count(schedq.submit('step', run_id => :create_run, queue => 'big'))
  FROM generate_series(1, 600);
SELECT :create_run;
});
($big) = $big =~ /(\d+)\s*$/;
($st, undef, $body) = http($port, 'GET', "/api/run?id=$big", cookie => $again);
is($st, 200, 'a run of 600 tasks answers');
my $sent = () = $body =~ /"kind" ?: ?"step"/g;
is($sent, 501, '... with its first 500 tasks and one more, not 600');

# A statement of the console runs at most 5 seconds: a page blocked by a
# lock answers with the timeout instead of holding the connection.
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe('LOCK TABLE schedq.task IN ACCESS EXCLUSIVE MODE');
my $t0 = time;
my $resp = eval {
	local $SIG{ALRM} = sub { die "no answer in 20 s\n" };
	alarm 20;
	my @r = http($port, 'GET', '/api/tasks', cookie => $again);
	alarm 0;
	\@r;
} // [ $@, '', '' ];
my $took = time - $t0;
$holder->query_safe('COMMIT');
$holder->quit;
like($resp->[2], qr/statement timeout.*57014/s,
	'a statement blocked by a lock is canceled (57014)');
cmp_ok($took, '<', 9, "... within the console's 5 s (took ${took}s)");
$web->signal('TERM');
$web->finish;

# 2. Listening on every address, the console answers to its names only.
($web, $port) = start_web('0.0.0.0', {}, '-d', $conninfo,
	'--allow-host', 'console.example');
my $any_port = $port;
for my $host ("127.0.0.1:$port", "localhost:$port", "console.example:$port",
	'console.example', "Console.Example:$port")
{
	($st) = http($port, 'GET', '/', host => $host);
	is($st, 200, "Host $host is served");
}
for my $host ("rebind.example:$port", "127.0.0.1:1", "console.example:1", '')
{
	($st) = http($port, 'GET', '/api/session', host => $host);
	is($st, 421, "Host '$host' is refused (421)");
}
$web->signal('TERM');
$web->finish;
my ($rc, $o, $e) = ctl($node, 'ops', 'web', '--allow-host', 'a b');
is($rc, 2, '--allow-host with a space: exit 2');

# 3. --no-sign-in: never as a role that reads every payload.
($rc, $o, $e) = ctl($node, $super, 'web', '--read-only', '--no-sign-in',
	'--listen', '127.0.0.1:' . PostgreSQL::Test::Cluster::get_free_port());
is($rc, 2, '--no-sign-in as a superuser: exit 2');
like($e, qr/superuser.*monitor role/s, '... and says to use a monitor role');
($rc, $o, $e) = ctl($node, 'ops', 'web', '--read-only', '--no-sign-in',
	'--listen', '127.0.0.1:' . PostgreSQL::Test::Cluster::get_free_port(),
	{ env => { PGPASSWORD => $password } });
is($rc, 2, '--no-sign-in as a BYPASSRLS admin (ops): exit 2');
like($e, qr/BYPASSRLS/, '... and says why');
($web, $port) = start_web('127.0.0.1', {},
	'-d', "$conninfo user=oncall password=$password",
	'--read-only', '--no-sign-in');
($st, undef, $body) = http($port, 'GET', '/api/session');
is($st, 200, 'the --no-sign-in session is there');
my ($csrf) = $body =~ /"csrf":"([0-9a-f]+)"/;
($st) = http($port, 'POST', '/api/logout', csrf => $csrf);
is($st, 400, '... and /api/logout is refused (400)');
($st, undef, $body) = http($port, 'GET', '/api/overview');
is($st, 200, '... and the shared session still answers');
($st, undef, $body) = http($port, 'GET', '/api/session');
like($body, qr/"user":"oncall"/, '... as oncall');
$web->signal('TERM');
$web->finish;
is($web->result(0), 0, 'schedqctl web exits 0 at SIGTERM');

done_testing();

#-------------------------------------------------------------------------
# test/t/056_web_console.pl
#	  schedqctl web, the console, in Debian's chromium (headless), driven
#	  by test/web/console_test.js with playwright-core (pinned by
#	  test/web/package-lock.json; make check installs it with npm ci):
#	  a wrong password cannot sign in; the overview's counts change as
#	  tasks are submitted and worked, with its charts and the scheduler;
#	  its pending tasks by gate (run_at, a lock key, a limit, dependencies);
#	  the task filters and keyset pages (a cursor, never an offset); a
#	  task's payload, result and error; find by dedup key; a hostile task
#	  kind runs no script; a workflow graph with a failed and a skipped
#	  node; every action (pause, resume, retry, cancel, disable, enable,
#	  run now, set a limit) works for the admin (enable and disable keep
#	  the schedule's owner; run now again while the tick's task is live is
#	  refused with 55006) and is refused with the database's
#	  error for the monitor (which reads through the all_ views, without
#	  payloads) and the submitter; a POST without the CSRF token is
#	  refused (403); --read-only offers no action and refuses a forged
#	  POST; bounded bodies (413), a form body only (415); HTTPS with
#	  --tls-cert and --tls-key, with Secure cookies; --read-only
#	  --no-sign-in as -d's role (a monitor); on the loopback, another Host
#	  header refused (DNS rebinding); bad options refused (exit 2).  Each page's screenshot is saved in SCHEDQ_WEB_SHOTS (default:
#	  tmp_check/screenshots of the test), the source of docs/images/.
#	  Skipped without chromium, Node.js or the test's packages.
#-------------------------------------------------------------------------
use strict;
use warnings;

use File::Path qw(make_path);
use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use SchedqTest;
use SchedqCtl;

my $webdir = "$ENV{SCHEDQ_SRCDIR}/test/web";
plan skip_all => 'no chromium at /usr/bin/chromium (apt-get install chromium)'
  unless -x '/usr/bin/chromium';
my $version = `node --version 2>/dev/null` // '';
plan skip_all => 'no Node.js (node) on PATH' unless $version =~ /^v(\d+)/;
plan skip_all =>
  'the test\'s packages are not installed (cd test/web && npm ci)'
  unless -f "$webdir/node_modules/playwright-core/package.json";

my $node = ctl_node('web');
my $password = 'console-test-pw';
my $super = $node->safe_psql('postgres', 'SELECT current_user');

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

# Passwords for the roles, and password authentication for all but the
# bootstrap superuser (the test's own psql).
q1("ALTER ROLE $_ PASSWORD '$password'") for qw(app oncall ops nobody);
my $hba = $node->data_dir . '/pg_hba.conf';
open(my $fh, '>', $hba) or die "$hba: $!";
print $fh "local all $super trust\nlocal all all scram-sha-256\n";
close $fh;
$node->reload;

ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.scheduler_status() WHERE datname = 'postgres'",
		'1', 30),
	'the scheduler is up');

# The data: queue alpha; a failed task with a payload; a dedup key; two
# hostile kinds; a workflow (continue) with a failed, a skipped and a done
# task; a lock key held and waited for; a budget; a limit; a schedule; a
# task running under a lease.
my $hostile = '<img src=x onerror="window.__pwned=true">';
q1(<<"SQL");
SET ROLE app;
SELECT schedq.submit('warmup', queue => 'alpha');
SELECT schedq.submit('charge', '{"amount": 42}', queue => 'pay', max_attempts => 1);
SELECT schedq.submit('invoice', dedup_key => 'order-7', queue => 'beta');
SELECT schedq.submit('$hostile', queue => 'beta');
SELECT schedq.submit('</script><script>window.__pwned=true</script>', queue => 'beta');
SELECT schedq.submit('sync', lock_key => 'account-1', queue => 'locks') FROM generate_series(1, 2);
SELECT schedq.schedule('nightly', '0 3 * * *', 'report');
SQL
q1("SELECT schedq.fail(token, 'card declined') FROM schedq.claim('w-pay', queues => '{pay}')");
my $run = q1(<<'SQL');
SET ROLE app;
SELECT schedq.create_run('etl', 'continue') \gset
SELECT schedq.submit('extract', run_id => :create_run, queue => 'etl', max_attempts => 1) AS a \gset
SELECT schedq.submit('transform', run_id => :create_run, depends_on => ARRAY[:a]::bigint[], queue => 'etl') AS b \gset
SELECT schedq.submit('load', run_id => :create_run, depends_on => ARRAY[:b]::bigint[], queue => 'etl');
SELECT schedq.submit('notify', run_id => :create_run, queue => 'etl');
SELECT :create_run;
SQL
($run) = $run =~ /(\d+)\s*$/;
q1("SET ROLE ops; SELECT schedq.schedule('weekly', '0 4 * * 0', 'cleanup')");
q1("SELECT schedq.set_budget('llm', 100)");
q1("SELECT schedq.set_concurrency_limit('gpu', 2)");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE kind = 'extract' AND status = 'available'",
		'1', 30),
	'the workflow\'s first task is available');
q1("SELECT schedq.fail(token, 'source down') FROM schedq.claim('w-etl', queues => '{etl}')");
q1("SELECT schedq.complete(c.token, '{\"rows\": 3}') FROM schedq.claim('w-etl', queues => '{etl}', n => 10) c");
q1("SELECT schedq.submit('render', queue => 'gamma')");
q1("SELECT count(*) FROM schedq.claim('w-busy', queues => '{gamma}', lease => '1 hour')");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE run_id = $run AND status = 'skipped'",
		'2', 30),
	'the run has its skipped tasks');
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE lock_key = 'account-1' AND status = 'pending'",
		'1', 30),
	'a task waits for the lock key');

# The two consoles.
my $conninfo = $node->connstr('postgres');
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $ro_port = PostgreSQL::Test::Cluster::get_free_port();
my $log = "$PostgreSQL::Test::Utils::tmp_check/web";
my $tls_port = PostgreSQL::Test::Cluster::get_free_port();
my @tls;
# A self-signed certificate for the HTTPS console, when openssl is there.
if (system("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
		. "-keyout $log.key -out $log.crt >/dev/null 2>&1") == 0)
{
	@tls = ([ $tls_port, [ '--tls-cert', "$log.crt", '--tls-key', "$log.key" ] ]);
}
my $open_port = PostgreSQL::Test::Cluster::get_free_port();
my @web;
for my $c (
	[ $port, [] ],
	[ $ro_port, ['--read-only'] ],
	@tls,
	[
		$open_port,
		[ '--read-only', '--no-sign-in' ],
		"$conninfo user=oncall password=$password"
	])
{
	my ($p, $extra, $d) = @$c;
	my $out = '';
	my $h = IPC::Run::start(
		[ 'schedqctl', 'web', '--listen', "127.0.0.1:$p", '-d', $d // $conninfo, @$extra ],
		'<', '/dev/null', '>', \$out, '2>', "$log.$p.err");
	my $deadline = time + 30;
	$h->pump_nb while $out !~ /listening/ && time < $deadline && sleep 0.1;
	like($out, qr{listening on https?://127\.0\.0\.1:$p/}, "schedqctl web @$extra listens on $p");
	push @web, $h;
}

my $shots = $ENV{SCHEDQ_WEB_SHOTS} // "$PostgreSQL::Test::Utils::tmp_check/screenshots";
make_path($shots);
note "screenshots in $shots";

my ($out, $err) = ('', '');
local %ENV = (
	%ENV,
	WEB_URL => "http://127.0.0.1:$port",
	WEB_RO_URL => "http://127.0.0.1:$ro_port",
	WEB_TLS_URL => (@tls ? "https://127.0.0.1:$tls_port" : ''),
	WEB_OPEN_URL => "http://127.0.0.1:$open_port",
	SHOTS_DIR => $shots,
	ROLE_PASSWORD => $password,
	RUN_ID => $run,
	HOSTILE_KIND => $hostile,
	PSQL_CONN => $conninfo,
	NODE_PATH => "$webdir/node_modules");
IPC::Run::run([ 'node', "$webdir/console_test.js" ],
	'<', '/dev/null', '>', \$out, '2>', \$err, IPC::Run::timeout(600));
my $checks = 0;
for my $line (split /\n/, $out)
{
	if ($line =~ /^ok - (.*)$/) { pass($1); $checks++; }
	elsif ($line =~ /^not ok - (.*)$/) { fail($1); $checks++; }
}
ok($out =~ /^done$/m, 'the browser driver ran to its end') or diag "$out\n$err";
cmp_ok($checks, '>=', 25, 'every check of the driver reported');
for my $p (qw(signin overview overview-monitor tasks workflows schedules gates workers))
{
	ok(-s "$shots/$p.png", "screenshot $p.png");
}

# On the loopback, the console answers to its own address only: a page
# of another name that resolves to 127.0.0.1 (DNS rebinding) is refused.
sub status_for_host
{
	my ($host) = @_;
	my $sock = IO::Socket::INET->new("127.0.0.1:$port") or return "connect: $!";
	print $sock "GET / HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n";
	my $line = <$sock> // '';
	close $sock;
	return $line =~ m{^HTTP/1\.1 (\d+)} ? $1 : $line;
}
is(status_for_host("127.0.0.1:$port"), 200, 'Host 127.0.0.1:PORT is served');
is(status_for_host("localhost:$port"), 200, 'Host localhost:PORT is served');
is(status_for_host("rebind.example:$port"), 421, 'another Host is refused (421)');

# Options refused before anything starts.
my ($rc, $o, $e) = ctl($node, 'ops', 'web', '--listen', 'nowhere');
is($rc, 2, '--listen without a port: exit 2');
like($e, qr/--listen needs HOST:PORT/, '... and says so');
($rc, $o, $e) = ctl($node, 'ops', 'web', '--no-sign-in');
is($rc, 2, '--no-sign-in without --read-only: exit 2');
($rc, $o, $e) = ctl($node, 'ops', 'web', '--tls-cert', '/dev/null');
is($rc, 2, '--tls-cert without --tls-key: exit 2');

# The server stops cleanly at SIGTERM.
for my $h (@web)
{
	$h->signal('TERM');
	$h->finish;
	is($h->result(0), 0, 'schedqctl web exits 0 at SIGTERM');
}

done_testing();

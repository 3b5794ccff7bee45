#-------------------------------------------------------------------------
# test/t/054_pgbouncer.pl
#	  schedq through PgBouncer in transaction mode (pool_mode =
#	  transaction), started on loopback with an ini file of its own;
#	  skipped when pgbouncer is not installed.  Two server connections a
#	  pool (default_pool_size = 2, kept open by min_pool_size, handed out
#	  in turn by server_round_robin), so that a client's next transaction
#	  usually runs on the other one.  Through the pooler:
#	  (a) schedqctl worker runs tasks;
#	  (b) the example workers (Python, and Node.js and Go when their
#	      toolchains are there) run tasks, with no server-side prepared
#	      statement outliving its transaction, log the pooler's address,
#	      and stop on SIGTERM while they wait (their cancel request passes
#	      the pooler);
#	  (c) schedq.claim(wait => ...) waiting is woken by a submit from
#	      another client, long before its wait ends;
#	  (d) CALL schedq.await_task(...) likewise;
#	  (e) complete_and_claim completes a task claimed by another client
#	      session (another server connection, maybe) and claims the next;
#	  (f) two clients interleaved on ONE server connection (a database of
#	      the pooler that logs in as one role, pool_size = 1), each acting
#	      as a documented role with SET LOCAL ROLE in its transactions: the
#	      submitters app and app2 each see only their own tasks and cannot
#	      cancel the other's; the workers worker and worker2 (each with a
#	      work grant of one of them) each claim only their own submitter's
#	      tasks, in turns on the same backend (the work grants a backend
#	      keeps are for the current role, not the session's); and a
#	      transaction's SET LOCAL ROLE does not outlive it.
#
#	  Every wait has a deadline.  Run by test/check.sh (make check) with
#	  prove; see the header of check.sh for the environment every TAP test
#	  gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use POSIX ':sys_wait_h';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use DocBlocks;
use SchedqTest;
use SchedqCtl;
use GoBuild;

my ($pgbouncer) =
  grep { -x $_ } ((map { "$_/pgbouncer" } split /:/, $ENV{PATH}), '/usr/sbin/pgbouncer');
plan skip_all => 'pgbouncer is not installed (apt-get install pgbouncer)'
  unless $pgbouncer;
note `$pgbouncer --version 2>&1`;

my $node = ctl_node('pgbouncer');
my $dir = PostgreSQL::Test::Utils::tempdir();

# A second submitter and worker pair, app2 and worker2, made by the
# recipes of docs/security.md with the names changed; and the role the
# shared pool logs in as, a member of the four that inherits nothing.
my $page = DocBlocks::doc_slurp(DocBlocks::doc_top() . '/docs/security.md');
for my $b (grep { $_->{lang} eq 'sql' && $_->{body} =~ /\ACREATE ROLE (app|worker) LOGIN\b/ }
	DocBlocks::fenced_blocks($page))
{
	(my $sql = $b->{body}) =~ s/\b(app|worker)\b(?!\.)/${1}2/g;
	$node->safe_psql('postgres', $sql);
}
$node->safe_psql('postgres', q{
CREATE ROLE pooler LOGIN NOINHERIT;
GRANT app, app2, worker, worker2 TO pooler;
});

#
# PgBouncer, on loopback.
#
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($sock, $pgport) = ($node->host, $node->port);
open(my $fh, '>', "$dir/userlist.txt") or die;
print $fh qq{"$_" ""\n} for qw(app app2 worker worker2 pooler);
close $fh;
open($fh, '>', "$dir/pgbouncer.ini") or die;
print $fh <<EOF;
[databases]
postgres = host=$sock port=$pgport dbname=postgres
shared = host=$sock port=$pgport dbname=postgres user=pooler pool_size=1 min_pool_size=1

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = 2
min_pool_size = 2
server_round_robin = 1
max_client_conn = 100
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
close $fh;
my ($bout, $berr) = ('', '');
my $bouncer = IPC::Run::start([ $pgbouncer, "$dir/pgbouncer.ini" ],
	'<', '/dev/null', '>', \$bout, '2>', \$berr);
END { $bouncer->kill_kill if $bouncer && $bouncer->pumpable; }

sub bconn
{
	my ($user, $db) = @_;
	return "host=127.0.0.1 port=$port dbname=" . ($db // 'postgres') . " user=$user";
}

# psql through the pooler: (exit code, stdout, stderr).
sub bpsql
{
	my ($user, $sql, $db) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', bconn($user, $db), '-c', $sql ],
		'<', '/dev/null', '>', \$out, '2>', \$err, IPC::Run::timeout(60));
	chomp $out;
	return ($? >> 8, $out, $err);
}

sub bq
{
	my ($rc, $out, $err) = bpsql(@_);
	die "psql through pgbouncer failed: $err" if $rc;
	return $out;
}



ok(wait_for(sub { (bpsql('app', 'SELECT 1'))[0] == 0 }, 30),
	'pgbouncer takes connections')
  or BAIL_OUT("pgbouncer did not start: $berr " . slurp("$dir/pgbouncer.log"));

#
# (a) schedqctl worker.
#
my $wlog = "$dir/worker.log";
my $w = IPC::Run::start(
	[ 'schedqctl', 'worker', '-d', bconn('worker'), '--queue', 'a', '--wait', '2',
		'--concurrency', '2', '--', 'sh', '-c', 'echo "{\"pid\": $$}"' ],
	'<', '/dev/null', '>', "$wlog.out", '2>', $wlog);
bq('app', q{SELECT count(*) FROM schedq.submit_many(
	(SELECT jsonb_agg(jsonb_build_object('kind', 'a', 'queue', 'a')) FROM generate_series(1, 20)))});
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FILTER (WHERE status = 'done' AND result ? 'pid') FROM schedq.task WHERE queue = 'a'",
		'20', 90),
	'(a) schedqctl worker through pgbouncer runs 20 tasks') or diag slurp($wlog);
like(slurp($wlog), qr/connected to 127\.0\.0\.1:$port\b/, '(a) it logs the pooler as its server');
unlike(slurp($wlog), qr/connection lost|error:/, '(a) without a lost connection or an error')
  or diag slurp($wlog);
$w->signal('TERM');
$w->finish;
is($w->result(0), 0, '(a) and exits 0 on SIGTERM');

#
# (b) The example workers.
#
my @examples;
my ($python) =
  grep { system("$_ -c 'import psycopg' >/dev/null 2>&1") == 0 } ('python3', '/usr/bin/python3');
push @examples, [ 'python', [ $python, "$ENV{SCHEDQ_SRCDIR}/examples/python/worker.py" ] ]
  if $python;
my $nodever = `node --version 2>/dev/null` // '';
push @examples, [ 'node', [ 'node', "$ENV{SCHEDQ_SRCDIR}/examples/node/worker.js" ] ]
  if $nodever =~ /^v(\d+)/ && $1 >= 18
  && -f "$ENV{SCHEDQ_SRCDIR}/examples/node/node_modules/pg/package.json";
if (!go_missing())
{
	my ($built, $out) = go_build($dir, "$dir/schedq-worker", "$ENV{SCHEDQ_SRCDIR}/examples/go/worker.go");
	ok($built, '(b) go build examples/go/worker.go') or diag $out;
	push @examples, [ 'go', ["$dir/schedq-worker"] ] if $built;
}
note '(b) example workers: ' . join(', ', map { $_->[0] } @examples);
ok(@examples >= 1, '(b) at least one example worker can run (python3 with psycopg)');

for my $ex (@examples)
{
	my ($label, $cmd) = @$ex;
	my $log = "$dir/example_$label.log";
	my $queue = "ex_$label";
	my $pid = fork;
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null') or die;
		open(STDOUT, '>>', $log) or die;
		open(STDERR, '>&', \*STDOUT) or die;
		$ENV{PGHOST} = '127.0.0.1';
		$ENV{PGPORT} = $port;
		$ENV{PGUSER} = 'worker';
		$ENV{PGDATABASE} = 'postgres';
		$ENV{SCHEDQ_WORKER} = "pooled-$label";
		$ENV{SCHEDQ_QUEUES} = $queue;
		$ENV{SCHEDQ_BATCH} = 3;
		$ENV{SCHEDQ_WAIT} = 30;
		exec(@$cmd) or POSIX::_exit(127);
	}
	# Three rounds of submits: claims, completes, waits, claims again.
	for my $round (1 .. 3)
	{
		bq('app', qq{SELECT count(*) FROM schedq.submit_many(
			(SELECT jsonb_agg(jsonb_build_object('kind', 'add', 'queue', '$queue', 'payload',
			                  jsonb_build_object('numbers', jsonb_build_array(i, $round))))
			   FROM generate_series(1, 10) AS i))});
		ok( defined poll_until(
				$node, 'postgres',
				"SELECT count(*) FROM schedq.task WHERE queue = '$queue' AND status = 'done'"
				  . " AND (result->>'sum')::int = (payload->'numbers'->>0)::int + (payload->'numbers'->>1)::int",
				10 * $round, 90),
			"(b) $label through pgbouncer: round $round, every task done with its sum")
		  or diag slurp($log);
	}
	my $text = slurp($log);
	like($text, qr/connected to 127\.0\.0\.1:$port\b/, "(b) $label logs the pooler as its server");
	unlike($text, qr/prepared statement|connection lost|outcome=(retry|failed)/,
		"(b) $label: no prepared statement missing, no lost connection, no failure")
	  or diag $text;
	ok( defined poll_until(
			$node, 'postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'worker'"
			  . " AND state = 'active' AND query LIKE 'CALL schedq.await_task%'",
			't', 30),
		"(b) $label waits in await_task");
	my $t0 = time;
	kill 'TERM', $pid;
	my $status;
	wait_for(sub { waitpid($pid, WNOHANG) == $pid ? (($status = $?), 1) : 0 }, 30);
	is($status, 0, "(b) $label: SIGTERM while it waits: exit status 0") or diag slurp($log);
	cmp_ok(time - $t0, '<', 10,
		"(b) $label: within 10 s, not the 30 s of its wait (the cancel passed the pooler)");
}

#
# (c) claim(wait => ...) through the pooler, woken by a submit from another
# client.
#
my ($cout, $cerr) = ('', '');
my $claimer = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', bconn('worker'), '-c',
		"SELECT id, kind FROM schedq.claim('c', queues => ARRAY['c'], wait => '60 s')" ],
	'<', '/dev/null', '>', \$cout, '2>', \$cerr, IPC::Run::timeout(90));
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'"
		  . " AND state = 'active' AND query LIKE '%schedq.claim(''c''%'",
		'1', 30),
	'(c) a claim(wait => 60 s) waits, through the pooler');
my $t0 = time;
my $tc = bq('app', "SELECT schedq.submit('woken', queue => 'c')");
$claimer->finish;
my $took = time - $t0;
chomp $cout;
is($cout, "$tc|woken", '(c) the submit of another client wakes it: it returns the task');
note sprintf('(c) claim returned %.3f s after the submit was sent', $took);
cmp_ok($took, '<', 10, '(c) long before its 60 s wait');

#
# (d) await_task through the pooler.
#
my ($aout, $aerr) = ('', '');
my $awaiter = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', bconn('worker'), '-c',
		"CALL schedq.await_task(queues => ARRAY['d'], wait => '60 s')" ],
	'<', '/dev/null', '>', \$aout, '2>', \$aerr, IPC::Run::timeout(90));
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'"
		  . " AND state = 'active' AND query LIKE 'CALL schedq.await_task(queues => ARRAY[''d'']%'",
		'1', 30),
	'(d) await_task(wait => 60 s) waits, through the pooler');
$t0 = time;
my $td = bq('app', "SELECT schedq.submit('awaited', queue => 'd')");
$awaiter->finish;
$took = time - $t0;
chomp $aout;
is($aout, 't', '(d) the submit wakes it (woken = true)') or diag $aerr;
cmp_ok($took, '<', 10, '(d) long before its 60 s wait');
is(bq('worker', "SELECT id FROM schedq.claim('d', queues => ARRAY['d'])"), $td,
	'(d) and the claim after it gets the task');

#
# (e) complete_and_claim, each call its own client session.
#
my ($e1, $e2) = split /\n/, bq('app',
	"SELECT schedq.submit('e', queue => 'e', priority => 2)"
	  . " UNION ALL SELECT schedq.submit('e', queue => 'e', priority => 1)");
my $first = bq('worker', "SELECT id || ' ' || token FROM schedq.claim('e', queues => ARRAY['e'])");
my ($id1, $tok1) = split / /, $first;
is($id1, $e1, '(e) a claim through the pooler');
my $next = bq('worker',
	"SELECT id FROM schedq.complete_and_claim(ARRAY['$tok1'], 'e',"
	  . " ARRAY['{\"ok\": 1}'::jsonb], queues => ARRAY['e'])");
is($next, $e2, '(e) complete_and_claim from another session claims the next task');
is($node->safe_psql('postgres', "SELECT status || ' ' || result::text FROM schedq.task WHERE id = $e1"),
	'done {"ok": 1}', '(e) and completed the first with its result');

#
# (f) Two clients, one server connection, different roles.
#
my %client;
for my $c (qw(A B))
{
	$client{$c} = $node->background_psql('postgres',
		on_error_stop => 0,
		extra_params => [ '-d', bconn($c eq 'A' ? 'app' : 'app2', 'shared') ]);
}

# One transaction of client $c as $role; its output (and stderr).
sub as_role
{
	my ($c, $role, $sql) = @_;
	my ($out, $failed) = $client{$c}->query(
		"BEGIN;\nSET LOCAL ROLE $role;\n$sql;\n"
		  . "SELECT 'pid=' || pg_backend_pid() || ' user=' || current_user;\nCOMMIT;");
	my $err = $client{$c}->{stderr};
	$client{$c}->{stderr} = '';
	return ($out, $err);
}

my %pids;
my %mine;
for my $round (1 .. 2)
{
	for my $pair ([ 'A', 'app' ], [ 'B', 'app2' ])
	{
		my ($c, $role) = @$pair;
		my ($out) = as_role($c, $role, "SELECT schedq.submit('$role-$round', queue => 'f')");
		my ($id, $who) = split /\n/, $out;
		push @{ $mine{$role} }, $id;
		$pids{$1}++ if $who =~ /pid=(\d+)/;
		like($who, qr/user=$role$/, "(f) client $c submits as $role (round $round)");
	}
}
for my $pair ([ 'A', 'app', 'app2' ], [ 'B', 'app2', 'app' ])
{
	my ($c, $role, $other) = @$pair;
	my ($out) = as_role($c, $role,
		"SELECT string_agg(kind, ',' ORDER BY id) FROM schedq.task WHERE queue = 'f'");
	my ($kinds, $who) = split /\n/, $out;
	$pids{$1}++ if $who =~ /pid=(\d+)/;
	is($kinds, "$role-1,$role-2", "(f) client $c as $role sees only its own tasks");
	my ($cout2, $err) = as_role($c, $role, "SELECT schedq.cancel($mine{$other}[0])");
	like($err, qr/42501|permission denied|may not act/i,
		"(f) client $c as $role cannot cancel a task of $other") or diag "$cout2 / $err";
}
for my $round (1 .. 2)
{
	for my $pair ([ 'A', 'worker', 'app' ], [ 'B', 'worker2', 'app2' ])
	{
		my ($c, $role, $owner) = @$pair;
		my ($out) = as_role($c, $role,
			"SELECT string_agg(id::text, ',') FROM schedq.claim('$role', queues => ARRAY['f'], n => 1)");
		my ($got, $who) = split /\n/, $out;
		$pids{$1}++ if $who =~ /pid=(\d+)/;
		is($got, $mine{$owner}[ $round - 1 ],
			"(f) client $c as $role claims $owner\'s task, not the other's (round $round)");
	}
}
my ($left) = as_role('A', 'worker',
	"SELECT count(*) FROM schedq.claim('worker', queues => ARRAY['f'], n => 10)");
is((split /\n/, $left)[0], '0', '(f) nothing is left for worker (worker2 took only its own)');
my $after = $client{B}->query("SELECT current_user");
is($after, 'pooler', '(f) after the transactions, the pooled session is the pool\'s role again');
is(scalar(keys %pids), 1,
	'(f) every transaction of both clients ran on one server connection (one backend pid)')
  or diag explain \%pids;
is($node->safe_psql('postgres',
		"SELECT string_agg(status || ':' || claimed_by, ',' ORDER BY id) FROM schedq.task WHERE queue = 'f'"),
	'running:worker,running:worker2,running:worker,running:worker2',
	'(f) each task claimed by its owner\'s worker');
$_->quit for values %client;

$bouncer->signal('INT');
$bouncer->finish;
$node->stop;
done_testing();

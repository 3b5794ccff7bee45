#-------------------------------------------------------------------------
# test/t/049_schedqctl_tasks.pl
#	  schedqctl's commands for tasks, runs and schedules, through the
#	  installed binary, as the roles of docs/security.md:
#	  (a) show: status, attempts, result, error, timings; --json; a task
#	      of another role, or none, is exit 5;
#	  (b) list: by queue, kind, status, run, age, with a limit, newest
#	      first, and only the role's own tasks;
#	  (c) cancel and retry by filter: a bare bulk command is refused (exit
#	      2), --all means every task, retry takes failed tasks unless
#	      --status says otherwise, --dry-run changes nothing, row-level
#	      security keeps a role to its own tasks, exit 5 when nothing
#	      changed;
#	  (d) submit with --run, --depends-on, --budgets and --cost; submit-sql
#	      (text and stdin);
#	  (e) submit-many: ids in input order; a bad line (client-side or
#	      server-side) is named and nothing is submitted;
#	  (f) schedules, with the next run; a role without SELECT on
#	      schedq.periodic gets the exact GRANT;
#	  (g) runs, with their tasks counted by outcome, --status, --limit;
#	  (h) wait: 0 and the result when done, 6 failed, 7 canceled, 8
#	      skipped, 9 after --timeout, 5 for no task; a task finishing
#	      while it waits ends the wait within a second or two.
#
#	  Every wait has a deadline.  Run by test/check.sh (make check) with
#	  prove; see the header of check.sh for the environment every TAP test
#	  gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SchedqTest;
use SchedqCtl;

my $node = ctl_node('ctl_tasks', "schedq.enabled = off\n");

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

sub as_app
{
	return q1("SET ROLE app; $_[0]");
}

# A second submitter, whose tasks app must never see or change.
q1(q{CREATE ROLE app2 LOGIN;
GRANT USAGE ON SCHEMA schedq TO app2;
GRANT EXECUTE ON FUNCTION schedq.submit, schedq.retry, schedq.cancel TO app2;
GRANT SELECT ON schedq.task TO app2;});

# Claim the task $id and finish it: complete with $result, or fail with
# $error (permanent).
sub finish
{
	my ($id, %how) = @_;
	my $q = "SELECT token FROM schedq.claim('w', queues => ARRAY[(SELECT queue FROM schedq.task WHERE id = $id)])";
	my $token = q1($q);
	return q1(defined $how{error} ?
		  "SELECT schedq.fail('$token', '$how{error}', permanent => true)" :
		  "SELECT schedq.complete('$token', '$how{result}')");
}

#
# (a) show.
#
my $t1 = as_app("SELECT schedq.submit('email.send', queue => 'mail', payload => '{\"to\": \"ann\"}', dedup_key => 'd1')");
my ($rc, $out, $err) = ctl($node, 'app', 'show', $t1);
is($rc, 0, '(a) show: exit 0') or diag $err;
like($out, qr/^id:\s+$t1\nkind:\s+email\.send\nqueue:\s+mail\nstatus:\s+available\nattempts:\s+0 \(0 of 5/m,
	'(a) id, kind, queue, status, attempts');
like($out, qr/^payload:\s+\{"to": "ann"\}$/m, '(a) the payload');
like($out, qr/^dedup key:\s+d1$/m, '(a) the dedup key');
unlike($out, qr/^(result|error|finished):/m, '(a) no field without a value');
finish($t1, result => '{"sent": true}');
($rc, $out) = ctl($node, 'app', 'show', $t1);
like($out, qr/^status:\s+done$/m, '(a) done');
like($out, qr/^result:\s+\{"sent": true\}$/m, '(a) with its result');
like($out, qr/^started:\s+\S+ \S+\nfinished:\s+\S+ \S+\nran for:\s+\S+/m, '(a) and its timings');
my $t2 = as_app("SELECT schedq.submit('k', queue => 'mail', max_attempts => 1)");
finish($t2, error => "line one\nline two");
($rc, $out) = ctl($node, 'app', 'show', $t2);
like($out, qr/^status:\s+failed\n(.*\n)*error:\s+line one\n {17}line two$/m,
	'(a) a failed task: its error, its lines indented');
($rc, $out) = ctl($node, 'app', 'show', $t1, '--json');
my $json = eval { decode_json($out) };
ok($json && $json->{id} == $t1 && $json->{status} eq 'done' && $json->{result}{sent},
	'(a) --json: the task as a JSON object');
ok($json && !exists $json->{claim_nonce}, '(a) without the claim\'s nonce');
my $other = q1("SET ROLE app2; SELECT schedq.submit('secret', queue => 'mail')");
($rc, $out, $err) = ctl($node, 'app', 'show', $other);
is($rc, 5, '(a) another role\'s task: exit 5');
like($err, qr/there is no task $other \(or it is not a task this role can see\)/, '(a) saying so');
($rc, $out, $err) = ctl($node, 'app', 'show', '999999');
is($rc, 5, '(a) no such task: exit 5');

#
# (b) list.
#
as_app("SELECT schedq.submit('report', queue => 'reports') FROM generate_series(1, 3)");
q1("UPDATE schedq.task SET created_at = now() - interval '2 hours' WHERE id = $t1");
($rc, $out, $err) = ctl($node, 'app', 'list');
is($rc, 0, '(b) list: exit 0') or diag $err;
like($out, qr/^\s*id\s+queue\s+kind\s+status\s+attempts\s+created\s+finished\s+error\n/,
	'(b) the header');
my @ids = $out =~ /^\s*(\d+)\s/mg;
is_deeply(\@ids, [ sort { $b <=> $a } @ids ], '(b) newest first');
unlike($out, qr/secret/, '(b) not another role\'s task');
($rc, $out) = ctl($node, 'app', 'list', '--queue', 'reports');
is(scalar(() = $out =~ /^\s*\d+\s+reports\s+report\s+available/mg), 3, '(b) --queue');
($rc, $out) = ctl($node, 'app', 'list', '--status', 'done,failed');
is(join(',', sort $out =~ /^\s*(\d+)\s/mg), join(',', sort ($t1, $t2)), '(b) --status, a list');
($rc, $out) = ctl($node, 'app', 'list', '--kind', 'email.send');
is(join(',', $out =~ /^\s*(\d+)\s/mg), $t1, '(b) --kind');
($rc, $out) = ctl($node, 'app', 'list', '--older-than', '1h');
is(join(',', $out =~ /^\s*(\d+)\s/mg), $t1, '(b) --older-than');
($rc, $out) = ctl($node, 'app', 'list', '--queue', 'reports', '--limit', '2');
is(scalar(() = $out =~ /^\s*\d+\s/mg), 2, '(b) --limit');
($rc, $out, $err) = ctl($node, 'app', 'list', '--status', 'lost');
is($rc, 2, '(b) an unknown status: exit 2');
like($err, qr/"lost" is not a status/, '(b) saying so');
($rc, $out) = ctl($node, 'app', 'list', '--queue', 'none-such');
is($out, '(none)', '(b) nothing selected: (none)');

#
# (c) cancel and retry by filter.
#
my @failed = map { as_app("SELECT schedq.submit('send', queue => 'email', max_attempts => 1)") } 1 .. 3;
finish($_, error => 'smtp down') for @failed;
my $done = as_app("SELECT schedq.submit('send', queue => 'email')");
finish($done, result => '{}');
my $failed2 = q1("SET ROLE app2; SELECT schedq.submit('send', queue => 'email', max_attempts => 1)");
finish($failed2, error => 'smtp down');
my $statuses = sub {
	q1("SELECT string_agg(status, ',' ORDER BY id) FROM schedq.task WHERE queue = 'email'");
};
my $before = $statuses->();
for my $bare ([ 'retry' ], [ 'cancel' ], [ 'cancel', '--limit', '5' ], [ 'retry', '--dry-run' ])
{
	($rc, $out, $err) = ctl($node, 'app', @$bare);
	is($rc, 2, "(c) '@$bare': exit 2");
	like($err, qr/give a task ID, or filters .* or --all/, "(c) '@$bare': says what to give");
}
($rc, $out, $err) = ctl($node, 'app', 'retry', $t2, '--queue', 'email');
is($rc, 2, '(c) an ID and filters: exit 2');
is($statuses->(), $before, '(c) nothing changed');
($rc, $out) = ctl($node, 'app', 'retry', '--queue', 'email', '--dry-run');
is($out, 'would have retried 3 of 3 selected tasks', '(c) --dry-run: how many');
is($statuses->(), $before, '(c) --dry-run changes nothing');
($rc, $out, $err) = ctl($node, 'app', 'retry', '--queue', 'email');
is($rc, 0, '(c) retry --queue email: exit 0') or diag $err;
is($out, 'retried 3 of 3 selected tasks', '(c) the failed ones: not the done one');
is(q1("SELECT string_agg(status, ',' ORDER BY id) FROM schedq.task WHERE id IN (" . join(',', @failed, $done, $failed2) . ")"),
	'available,available,available,done,failed',
	'(c) retried: app\'s failed tasks; not its done one, not app2\'s');
($rc, $out, $err) = ctl($node, 'app', 'retry', '--queue', 'email');
is($rc, 5, '(c) again: nothing to retry, exit 5');
($rc, $out) = ctl($node, 'app', 'cancel', '--queue', 'email', '--kind', 'send');
is($out, 'canceled 3 of 3 selected tasks', '(c) cancel by queue and kind: the live ones');
($rc, $out) = ctl($node, 'app', 'retry', '--status', 'canceled,done', '--queue', 'email', '--limit', '2');
is($out, 'retried 2 of 2 selected tasks', '(c) --status and --limit: lowest ids first');
is(q1("SELECT string_agg(status, ',' ORDER BY id) FROM schedq.task WHERE id IN (" . join(',', @failed, $done) . ")"),
	'available,available,canceled,done', '(c) those two');
($rc, $out) = ctl($node, 'app', 'retry', '--all');
is($out, 'retried 1 of 1 selected task', "(c) --all: every failed task of app: one ($t2)");
is(q1("SELECT status FROM schedq.task WHERE id = $failed2"), 'failed', '(c) not app2\'s');
($rc, $out) = ctl($node, 'ops', 'retry', '--all', '--queue', 'email');
is($out, 'retried 1 of 1 selected task', '(c) an admin (BYPASSRLS) retries app2\'s too');

#
# (d) submit: runs, dependencies, budgets, cost; submit-sql.
#
my $run = as_app("SELECT schedq.create_run('build')");
($rc, my $a) = ctl($node, 'app', 'submit', 'compile', '--queue', 'build', '--run', $run);
is($rc, 0, '(d) submit --run');
($rc, my $b, $err) = ctl($node, 'app', 'submit', 'link', '--queue', 'build', '--run', $run, '--depends-on', $a);
is($rc, 0, '(d) submit --depends-on') or diag $err;
is(q1("SELECT run_id, depends_on, status FROM schedq.task WHERE id = $b"), "$run|{$a}|pending",
	'(d) in the run, after its dependency, pending');
q1("SELECT schedq.set_budget('gpu', 10)");
($rc, $out, $err) = ctl($node, 'app', 'submit', 'train', '--budgets', 'gpu', '--cost', '2.5');
is($rc, 0, '(d) submit --budgets --cost') or diag $err;
is(q1("SELECT budgets, cost FROM schedq.task WHERE id = $out"), '{gpu}|2.5', '(d) stored');
($rc, $out, $err) = ctl($node, 'app', 'submit', 'train', '--budgets', 'nope');
is($rc, 1, '(d) a budget that does not exist: the server refuses, exit 1');
like($err, qr/budget "nope" does not exist/, '(d) saying so');
($rc, $out, $err) = ctl($node, 'app', 'submit-sql', 'SELECT 1', '--queue', 'sql', '--timeout', '1min');
is($rc, 0, '(d) submit-sql: exit 0') or diag $err;
is(q1("SELECT kind, payload->>'command', 'sql' = ANY (required_caps), timeout FROM schedq.task WHERE id = $out"),
	'sql|SELECT 1|t|00:01:00', '(d) a SQL task with its command');
($rc, $out) = ctl($node, 'app', 'submit-sql', '-', { stdin => 'VACUUM ANALYZE public.t' });
is(q1("SELECT payload->>'command' FROM schedq.task WHERE id = $out"), 'VACUUM ANALYZE public.t',
	'(d) submit-sql - reads stdin');
($rc, $out, $err) = ctl($node, 'app', 'submit-sql', 'SELECT 1', '--payload', '{}');
is($rc, 2, '(d) submit-sql --payload: exit 2');

#
# (e) submit-many.
#
my $n0 = q1('SELECT count(*) FROM schedq.task');
($rc, $out, $err) = ctl($node, 'app', 'submit-many', {
	stdin => qq({"kind": "m1", "queue": "many", "payload": {"i": 1}}\n\n)
	  . qq({"kind": "m2", "queue": "many", "priority": 3}\n{"kind": "m3", "queue": "many"}\n) });
is($rc, 0, '(e) submit-many: exit 0') or diag $err;
my @m = split /\n/, $out;
is(scalar @m, 3, '(e) three ids (the blank line skipped)');
is(q1("SELECT string_agg(kind || priority, ',' ORDER BY id) FROM schedq.task WHERE id IN (" . join(',', @m) . ")"),
	'm10,m23,m30', '(e) in input order, with their options');
is(q1("SELECT string_agg(id::text, ',' ORDER BY id) FROM schedq.task WHERE queue = 'many'"),
	join(',', @m), '(e) the ids printed are the tasks');
$n0 = q1('SELECT count(*) FROM schedq.task');
($rc, $out, $err) = ctl($node, 'app', 'submit-many',
	{ stdin => qq({"kind": "ok"}\n{"kind": "bad",\n) });
is($rc, 2, '(e) a line that is not JSON: exit 2');
like($err, qr/line 2 is not a JSON object of submit's arguments/, '(e) naming the line');
($rc, $out, $err) = ctl($node, 'app', 'submit-many',
	{ stdin => qq({"kind": "ok"}\n\n{"kind": "ok"}\n{"kind": "x", "colour": "red"}\n) });
is($rc, 2, '(e) a key submit does not take: exit 2');
like($err, qr/line 4: of tasks has unknown key "colour"/, '(e) naming its line');
is($out, '', '(e) no id printed');
is(q1('SELECT count(*) FROM schedq.task'), $n0, '(e) nothing submitted: all or none');

#
# (f) schedules.
#
as_app("SELECT schedq.schedule('nightly', '0 2 * * *', 'report.build', timezone => 'Europe/Berlin', queue => 'reports')");
as_app("SELECT schedq.schedule('often', '*/5 * * * *', 'ping')");
($rc, $out, $err) = ctl($node, 'app', 'schedules');
is($rc, 0, '(f) schedules: exit 0') or diag $err;
like($out, qr/^\s*name\s+schedule\s+timezone\s+enabled\s+next run\s+last run\s+kind\s+queue\s+fired\s+skipped\s+error\n/,
	'(f) the header');
my $next = q1("SELECT to_char(next_run, 'YYYY-MM-DD HH24:MI:SSOF') FROM schedq.periodic WHERE name = 'nightly'");
like($out, qr/^\s*nightly\s+0 2 \* \* \*\s+Europe\/Berlin\s+yes\s+\Q$next\E\s+report\.build\s+reports\s+0\s+0$/m,
	'(f) each schedule, with its next run');
($rc, $out, $err) = ctl($node, 'nobody', 'schedules');
is($rc, 4, '(f) without the privileges: exit 4');
like($err, qr/GRANT USAGE ON SCHEMA schedq TO nobody;\n\s+GRANT SELECT ON schedq\.periodic TO nobody;/,
	'(f) naming exactly the GRANTs');

#
# (g) runs.
#
finish($a, result => '{}');
q1("SELECT schedq.cancel($b)");
my $run2 = as_app("SELECT schedq.create_run('second')");
as_app("SELECT schedq.submit('step', run_id => $run2)");
($rc, $out, $err) = ctl($node, 'app', 'runs');
is($rc, 0, '(g) runs: exit 0') or diag $err;
like($out, qr/^\s*id\s+name\s+status\s+policy\s+tasks\s+done\s+failed\s+canceled\s+live\s+created\s+finished\n/,
	'(g) the header');
like($out, qr/^\s*$run2\s+second\s+running\s+halt\s+1\s+0\s+0\s+0\s+1\s+\S+ \S+$/m, '(g) a running run');
like($out, qr/^\s*$run\s+build\s+failed\s+halt\s+2\s+1\s+0\s+1\s+0\s+\S+ \S+\s+\S+ \S+$/m,
	'(g) a finished run, its tasks counted');
ok(index($out, "$run2 ") < index($out, "$run "), '(g) newest first');
($rc, $out) = ctl($node, 'app', 'runs', '--status', 'running');
is(join(',', $out =~ /^\s*(\d+)\s/mg), $run2, '(g) --status');
($rc, $out) = ctl($node, 'app', 'runs', '--limit', '1');
is(join(',', $out =~ /^\s*(\d+)\s/mg), $run2, '(g) --limit');

#
# (h) wait.
#
my $w1 = as_app("SELECT schedq.submit('w', queue => 'wait')");
finish($w1, result => '{"answer": 42}');
($rc, $out) = ctl($node, 'app', 'wait', $w1);
is($rc, 0, '(h) wait for a done task: exit 0');
is($out, '{"answer": 42}', '(h) printing its result');
my $w2 = as_app("SELECT schedq.submit('w', queue => 'wait', max_attempts => 1)");
finish($w2, error => 'it broke');
($rc, $out, $err) = ctl($node, 'app', 'wait', $w2);
is($rc, 6, '(h) failed: exit 6');
like($err, qr/task $w2 failed \(attempt 1\): it broke/, '(h) with its error');
my $w3 = as_app("SELECT schedq.submit('w', queue => 'wait')");
q1("SELECT schedq.cancel($w3)");
($rc) = ctl($node, 'app', 'wait', $w3);
is($rc, 7, '(h) canceled: exit 7');
my $run3 = as_app("SELECT schedq.create_run('r', failure_policy => 'continue')");
my $first = as_app("SELECT schedq.submit('a', queue => 'wait', run_id => $run3, max_attempts => 1)");
my $dep = as_app("SELECT schedq.submit('b', queue => 'wait', run_id => $run3, depends_on => ARRAY[${first}::bigint])");
finish($first, error => 'no');
($rc) = ctl($node, 'app', 'wait', $dep);
is($rc, 8, '(h) skipped (its dependency failed): exit 8');
my $w4 = as_app("SELECT schedq.submit('w', queue => 'wait-later')");
my $t0 = time;
($rc, $out, $err) = ctl($node, 'app', 'wait', $w4, '--timeout', '1s');
is($rc, 9, '(h) still available at --timeout: exit 9');
like($err, qr/task $w4 is still available after 1s/, '(h) saying so');
cmp_ok(time - $t0, '<', 10, '(h) promptly');
($rc) = ctl($node, 'app', 'wait', '999999');
is($rc, 5, '(h) no such task: exit 5');

# A task that finishes while wait waits.
my ($wout, $werr) = ('', '');
my $h = IPC::Run::start(
	[ 'schedqctl', 'wait', $w4, '-d', ctl_conn($node, 'app'), '--timeout', '60s' ],
	'>', \$wout, '2>', \$werr, IPC::Run::timeout(90));
ok(defined poll_until($node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'app'",
		'1', 30),
	'(h) wait is connected, waiting');
finish($w4, result => '"late"');
$t0 = time;
$h->finish;
is($h->result(0), 0, '(h) the task done meanwhile: exit 0');
cmp_ok(time - $t0, '<', 5, '(h) within a few seconds');
is($wout, "\"late\"\n", '(h) with its result');

$node->stop;
done_testing();

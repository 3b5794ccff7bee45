#-------------------------------------------------------------------------
# test/t/041_schedqctl_worker.pl
#	  schedqctl worker, through the installed binary, as the README's
#	  worker role:
#	  (a) 1,000 shell tasks with --concurrency 8: every task done, each
#	      with attempts = 1, and the side effect (a line per run in a
#	      file) once per task: none lost, none run twice; reported by
#	      complete_and_claim, in fewer report and claim statements than
#	      tasks (pg_stat_statements);
#	  (b) what a program's exit means: stdout JSON as the result, other
#	      stdout wrapped, the payload on stdin and SCHEDQ_* in the
#	      environment, exit 75 retried, another exit failed for good with
#	      the tail of stderr in last_error; a lease shorter than the
#	      program's run kept alive by heartbeats;
#	  (c) kill -9 of a worker mid-task: the task is reclaimed after its
#	      lease and completed once, by a second worker;
#	  (d) SIGTERM drains: running tasks finish, nothing more is claimed,
#	      exit 0; past --grace a task is killed and failed for retry; a
#	      second signal exits at once and kills the program;
#	  (e) a task over its timeout has its process group killed (a child
#	      that sleeps in the background is gone too);
#	  (f) idle, it waits in CALL schedq.await_task, and runs a task
#	      submitted meanwhile within seconds;
#	  (g) connection loss: it reconnects and reports once; an attempt
#	      whose lease was lost meanwhile is killed and logged, never
#	      reported, and the next attempt is completed;
#	  (h) a completion made stale by a cancel is logged as stale and
#	      changes nothing, and the same call claims the next task;
#	  (i) a batch the server refuses (a result over a limit lowered
#	      meanwhile) is reported task by task, shrunk, and the next task is
#	      claimed;
#	  (j) a first claim that fails for a reason other than its arguments
#	      (canceled while it waits for a lock) is logged and retried after
#	      a back-off: the worker does not exit, and runs the next task.
#
#	  Every wait has a deadline.  Run by test/check.sh (make check) with
#	  prove; see the header of check.sh for the environment every TAP test
#	  gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SchedqTest;
use SchedqCtl;

# pg_stat_statements counts the worker's statements in (a).
my $node = ctl_node('ctl_worker',
	"shared_preload_libraries = 'schedq, pg_stat_statements'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements');
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1
{
	return $node->safe_psql('postgres', $_[0]);
}

# Submit as app (the worker role works on app's tasks).
sub submit_as_app
{
	return $node->safe_psql('postgres', "SET ROLE app; $_[0]");
}



sub script
{
	my ($name, $body) = @_;
	my $path = "$dir/$name";
	open(my $fh, '>', $path) or die "cannot write $path: $!";
	print $fh "#!/bin/sh\n$body";
	close $fh;
	chmod 0755, $path;
	return $path;
}


#
# (a) 1,000 shell tasks, 8 at a time.
#
my $runs = "$dir/runs";
# Even ids print a JSON object, odd ones text to be wrapped, both with a
# quote and a backslash: the results of a batch must reach their tasks.
my $bulk_sh = script('bulk.sh', <<'EOF' =~ s/RUNS/$runs/r);
cat >/dev/null
echo "$SCHEDQ_TASK_ID $SCHEDQ_ATTEMPT" >> RUNS
if [ $((SCHEDQ_TASK_ID % 2)) = 0 ]; then
	printf '{"id": %s, "s": "a\\"b\\\\c"}' "$SCHEDQ_TASK_ID"
else
	printf 'id %s "q" \\ x' "$SCHEDQ_TASK_ID"
fi
EOF
$node->safe_psql('postgres', 'SELECT pg_stat_statements_reset()');
submit_as_app(
	"SELECT count(schedq.submit('shell', payload => jsonb_build_object('i', i), queue => 'bulk')) FROM generate_series(1, 1000) i"
);
my $bulk = start_worker($node, 'worker',
	[ '--queue' => 'bulk', '--concurrency' => '8', '--lease' => '30s' ],
	[$bulk_sh], "$dir/bulk.log");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE queue = 'bulk' AND status = 'done'",
		'1000', 300),
	'(a) 1,000 tasks done');
is(q1("SELECT count(*) FROM schedq.task WHERE queue = 'bulk' AND attempts <> 1"),
	'0', '(a) each in one attempt');
{
	my %seen;
	my @lines = split /\n/, slurp($runs);
	$seen{$_}++ for map { (split / /)[0] } @lines;
	is(scalar @lines, 1000, '(a) 1,000 runs of the program');
	is(scalar(grep { $seen{$_} != 1 } keys %seen), 0, '(a) none ran twice');
	my $ids = q1("SELECT string_agg(id::text, ',' ORDER BY id) FROM schedq.task WHERE queue = 'bulk'");
	is(join(',', sort { $a <=> $b } keys %seen), $ids, '(a) the runs are the tasks');
}
is( q1(
		q{SELECT count(*) FROM schedq.task WHERE queue = 'bulk' AND result IS DISTINCT FROM
		  CASE WHEN id % 2 = 0 THEN jsonb_build_object('id', id, 's', 'a"b\c')
		       ELSE jsonb_build_object('stdout', format('id %s "q" \ x', id)) END}),
	'0',
	'(a) each task has its own program\'s result');
{
	# Programs that finish together, and the claim for the slots they
	# free, share one complete_and_claim: one statement, one commit.
	my ($single, $many, $cac, $claims, $verify) = split /\|/, q1(
		q{SELECT coalesce(sum(calls) FILTER (WHERE query LIKE '%schedq.complete(%'), 0),
		         coalesce(sum(calls) FILTER (WHERE query LIKE '%schedq.complete_many(%'), 0),
		         coalesce(sum(calls) FILTER (WHERE query LIKE '%schedq.complete_and_claim(%'), 0),
		         coalesce(sum(calls) FILTER (WHERE query LIKE '%schedq.claim(%'), 0),
		         coalesce(sum(calls) FILTER (WHERE query LIKE '%schedq.verify_grant(%'), 0)
		    FROM pg_stat_statements});
	diag "(a) 1,000 tasks: $cac complete_and_claim, $single complete, $many complete_many, "
	  . "$claims claim, $verify verify_grant calls";
	cmp_ok($cac, '>', 0, '(a) finished programs are completed by complete_and_claim');
	is($single + $many, 0, '(a) no separate complete or complete_many while running');
	cmp_ok($cac + $claims, '<', 1000,
		'(a) in fewer report and claim statements than tasks');
	cmp_ok($verify, '<=', $cac, '(a) at most one verify_grant statement per complete_and_claim');
}
$bulk->signal('TERM');
is(wait_exit($bulk, 60), 0, '(a) SIGTERM on an idle worker: exit 0');
{
	my @done = grep { /outcome=done/ } split /\n/, slurp("$dir/bulk.log");
	is(scalar @done, 1000, '(a) one log line per task');
	like($done[0], qr/task \d+ kind=shell attempt=1 queue=bulk duration=[0-9.]+s outcome=done/,
		'(a) with id, kind, attempt, duration, outcome');
}

#
# (b) Exit codes, results, payload and environment, heartbeats.
#
my $misc = script('misc.sh', <<'EOF');
case "$SCHEDQ_KIND" in
json) echo '{"ok": true, "n": [1, 2]}' ;;
text) printf 'hello\nworld' ;;
env) printf '{"id": %s, "attempt": %s, "queue": "%s", "kind": "%s", "run": "%s", "payload": %s}' \
	"$SCHEDQ_TASK_ID" "$SCHEDQ_ATTEMPT" "$SCHEDQ_QUEUE" "$SCHEDQ_KIND" "$SCHEDQ_RUN_ID" "$(cat)" ;;
temp) [ "$SCHEDQ_ATTEMPT" -ge 2 ] && exit 0; echo "try again" >&2; exit 75 ;;
fail) echo "first line" >&2; echo "boom: disk on fire" >&2; exit 3 ;;
slow) sleep 3; echo '"slept"' ;;
esac
EOF
my %id;
for my $k (qw(json text env temp fail))
{
	$id{$k} = submit_as_app(
		"SELECT schedq.submit('$k', payload => '{\"p\": 42}', queue => 'misc')");
}
my $w = start_worker($node, 'worker', [ '--queue' => 'misc', '--concurrency' => '2', '--json' ],
	[$misc], "$dir/misc.log");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM schedq.task WHERE queue = 'misc' AND status IN ('done', 'failed')",
		'5', 60),
	'(b) the five tasks finished');
is(q1("SELECT result FROM schedq.task WHERE id = $id{json}"),
	'{"n": [1, 2], "ok": true}', '(b) JSON stdout is the result');
is(q1("SELECT result FROM schedq.task WHERE id = $id{text}"),
	'{"stdout": "hello\nworld"}', '(b) other stdout is wrapped');
is( q1(
		"SELECT result->>'id' = id::text, result->>'attempt', result->>'queue', result->>'kind', result->>'run', result->'payload' FROM schedq.task WHERE id = $id{env}"
	),
	"t|1|misc|env||{\"p\": 42}",
	'(b) the payload on stdin, SCHEDQ_* in the environment');
is(q1("SELECT status, attempts FROM schedq.task WHERE id = $id{temp}"),
	'done|2', '(b) exit 75: retried, done at the second attempt');
is(q1("SELECT status, attempts FROM schedq.task WHERE id = $id{fail}"),
	'failed|1', '(b) exit 3: failed for good');
like(q1("SELECT last_error FROM schedq.task WHERE id = $id{fail}"),
	qr/^exit status 3: first line\nboom: disk on fire$/, '(b) with the tail of stderr');
like(slurp("$dir/misc.log"), qr/\{"ts": "[^"]+", "task": $id{temp}, "attempt": 1, "kind": "temp", "queue": "misc", "duration": [0-9.]+, "outcome": "retry", "exit": 75/,
	'(b) --json: a JSON line per task');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(b) the worker exits on SIGTERM');

# A lease of 1 s, a program of 3 s: heartbeats keep the task.
$id{slow} = submit_as_app("SELECT schedq.submit('slow', queue => 'hb')");
$w = start_worker($node, 'worker', [ '--queue' => 'hb', '--lease' => '1s' ],
	[$misc], "$dir/hb.log");
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $id{slow}", 'done', 60),
	'(b) a 3 s program under a 1 s lease is done');
is(q1("SELECT attempts, result FROM schedq.task WHERE id = $id{slow}"),
	'1|"slept"', '(b) in one attempt: the heartbeats kept its lease');
$w->signal('TERM');
wait_exit($w, 60);

#
# (c) kill -9 of a worker mid-task.
#
my $k9 = script('k9.sh', <<"EOF");
echo "\$SCHEDQ_TASK_ID \$SCHEDQ_ATTEMPT \$\$" >> $dir/k9.runs
if [ "\$SCHEDQ_ATTEMPT" = 1 ]; then sleep 600; fi
echo '{"by": "second"}'
EOF
my $t9 = submit_as_app("SELECT schedq.submit('k9', queue => 'k9', max_attempts => 3)");
my $w1 = start_worker($node, 'worker', [ '--queue' => 'k9', '--lease' => '2s', '--name' => 'first' ],
	[$k9], "$dir/k9a.log");
ok(wait_for(sub { slurp("$dir/k9.runs") =~ /^$t9 1 /m }, 60, 'the first run'),
	'(c) the first worker runs the task');
kill 'KILL', worker_pid($w1);
$w1->finish;
my $w2 = start_worker($node, 'worker', [ '--queue' => 'k9', '--lease' => '2s', '--name' => 'second' ],
	[$k9], "$dir/k9b.log");
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $t9", 'done', 60),
	'(c) reclaimed after the lease and done');
is(q1("SELECT attempts, claimed_by, result->>'by' FROM schedq.task WHERE id = $t9"),
	'2|second|second', '(c) by the second worker, at the second attempt');
is(scalar(() = slurp("$dir/k9b.log") =~ /task $t9 .*outcome=done/g), 1,
	'(c) completed once');
unlike(slurp("$dir/k9a.log"), qr/task $t9 /, '(c) the killed worker reported nothing');
$w2->signal('TERM');
wait_exit($w2, 60);
# The first worker's program was orphaned by kill -9: end it.
if (slurp("$dir/k9.runs") =~ /^$t9 1 (\d+)$/m)
{
	kill 'KILL', -$1;
}

#
# (d) SIGTERM drains.
#
my $drain = script('drain.sh', <<"EOF");
echo "start \$SCHEDQ_TASK_ID" >> $dir/drain.runs
case "\$SCHEDQ_KIND" in
short) sleep 2 ;;
long) echo "\$\$" > $dir/long.pid; sleep 600 ;;
esac
echo "end \$SCHEDQ_TASK_ID" >> $dir/drain.runs
EOF
my @short = split /\n/,
  submit_as_app("SELECT schedq.submit('short', queue => 'drain') FROM generate_series(1, 2)");
$w = start_worker($node, 'worker', [ '--queue' => 'drain', '--concurrency' => '2' ],
	[$drain], "$dir/drain.log");
ok(wait_for(sub { (() = slurp("$dir/drain.runs") =~ /^start/mg) == 2 }, 60, 'two starts'),
	'(d) two tasks running');
my @waiting = split /\n/,
  submit_as_app("SELECT schedq.submit('short', queue => 'drain') FROM generate_series(1, 3)");
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(d) SIGTERM: the worker exits 0 after draining');
is(q1("SELECT string_agg(status, ',') FROM schedq.task WHERE id IN (" . join(',', @short) . ")"),
	'done,done', '(d) the running tasks finished');
is(q1("SELECT string_agg(status || attempts, ',') FROM schedq.task WHERE id IN (" . join(',', @waiting) . ")"),
	'available0,available0,available0', '(d) nothing more was claimed');

# Past the grace period: killed, failed for an immediate retry.
q1("SELECT count(schedq.cancel(id)) FROM schedq.task WHERE queue = 'drain' AND status = 'available'");
my $long = submit_as_app("SELECT schedq.submit('long', queue => 'drain')");
$w = start_worker($node, 'worker', [ '--queue' => 'drain', '--grace' => '1' ],
	[$drain], "$dir/grace.log");
ok(wait_for(sub { -s "$dir/long.pid" }, 60, 'the long task'), '(d) the long task runs');
my $lpid = slurp("$dir/long.pid") + 0;
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(d) past --grace: the worker exits 0');
is(q1("SELECT status, attempts FROM schedq.task WHERE id = $long"), 'available|1',
	'(d) the task is available again at once');
like(q1("SELECT last_error FROM schedq.task WHERE id = $long"), qr/^worker shut down/,
	'(d) failed as shut down');
ok(wait_for(sub { !kill(0, $lpid) }, 10, 'the program to go'), '(d) its program was killed');

# A second signal: exit at once.
unlink "$dir/long.pid";
$w = start_worker($node, 'worker', [ '--queue' => 'drain', '--grace' => '600' ],
	[$drain], "$dir/second.log");
ok(wait_for(sub { -s "$dir/long.pid" }, 60, 'the long task'), '(d) the long task runs again');
$lpid = slurp("$dir/long.pid") + 0;
$w->signal('TERM');
ok(wait_for(sub { slurp("$dir/second.log") =~ /no more claims/ }, 10, 'the first signal'),
	'(d) first signal taken');
my $t0 = time;
$w->signal('TERM');
is(wait_exit($w, 10), 1, '(d) a second signal: exit 1 at once');
ok(time - $t0 < 5, '(d) well before the 600 s grace');
ok(wait_for(sub { !kill(0, $lpid) }, 10, 'the program to go'), '(d) and its program is killed');

#
# (e) Timeout: the process group is killed.
#
my $to = script('timeout.sh', <<"EOF");
sleep 600 &
echo \$! > $dir/bg.pid
wait
EOF
my $tt = submit_as_app("SELECT schedq.submit('slow', queue => 'to', timeout => '2 seconds', max_attempts => 1)");
$w = start_worker($node, 'worker', [ '--queue' => 'to', '--lease' => '30s' ],
	[$to], "$dir/to.log");
ok(wait_for(sub { -s "$dir/bg.pid" }, 60, 'the background child'), '(e) the program started a background child');
my $bg = slurp("$dir/bg.pid") + 0;
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $tt", 'failed', 60),
	'(e) the task failed');
like(q1("SELECT last_error FROM schedq.task WHERE id = $tt"), qr/timeout/, '(e) of its timeout');
ok(wait_for(sub { !kill(0, $bg) }, 10, 'the background child to go'),
	'(e) the background child in its process group is gone');
ok(wait_for(sub { slurp("$dir/to.log") =~ /task $tt .*outcome=(timeout|stale|lost)/ }, 10, 'the log line'),
	'(e) the worker logged it');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(e) the worker exits');

#
# (f) Idle, the worker waits in await_task (no polling), and a task
#     submitted meanwhile is run within a second or two, not at the end
#     of the 30 s wait.
#
my $since = q1('SELECT now()');
$w = start_worker($node, 'worker', [ '--queue' => 'idle' ], ['true'], "$dir/idle.log");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker' AND backend_start > '$since' AND state = 'active' AND query LIKE 'CALL schedq.await_task(%'",
		'1', 30),
	'(f) the idle worker waits in CALL schedq.await_task');
my $ti = submit_as_app("SELECT schedq.submit('idle', queue => 'idle')");
my $took = poll_until($node, 'postgres',
	"SELECT status FROM schedq.task WHERE id = $ti", 'done', 30);
ok(defined $took && $took < 5, '(f) a task submitted meanwhile is done within seconds')
  or diag 'took ' . ($took // 'forever');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(f) the worker exits');
like(slurp("$dir/idle.log"), qr/task $ti kind=idle attempt=1 queue=idle .*outcome=done/,
	'(f) and logged the task');

#
# (g) Connection loss.  The worker's connections are terminated while a
#     program runs: it reconnects and reports the task once.  Then the
#     server refuses it for longer than the lease: the program is killed,
#     the reaper gives the task another attempt, and the worker, back,
#     logs the lost attempt without reporting it and completes the next.
#
my $cl = script('cl.sh', <<"EOF");
echo "\$SCHEDQ_TASK_ID \$SCHEDQ_ATTEMPT" >> $dir/cl.runs
case "\$SCHEDQ_KIND" in
cut) sleep 2 ;;
lose) [ "\$SCHEDQ_ATTEMPT" = 1 ] && sleep 600 ;;
esac
echo '"ok"'
EOF
my $terminate =
  "SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity WHERE usename = 'worker'";
$w = start_worker($node, 'worker', [ '--queue' => 'cl', '--lease' => '1s' ], [$cl],
	"$dir/cl.log");
my $tc = submit_as_app("SELECT schedq.submit('cut', queue => 'cl')");
ok(wait_for(sub { slurp("$dir/cl.runs") =~ /^$tc 1$/m }, 60, 'the program'),
	'(g) the task runs');
is(q1($terminate), 't', '(g) its connections are terminated');
ok(defined poll_until($node, 'postgres',
		"SELECT status, attempts FROM schedq.task WHERE id = $tc", 'done|1', 60),
	'(g) the worker reconnected and completed it, in its first attempt');
like(slurp("$dir/cl.log"), qr/connection lost.*\n(.*\n)*.*reconnected/, '(g) logged');

my $tl = submit_as_app("SELECT schedq.submit('lose', queue => 'cl')");
ok(wait_for(sub { slurp("$dir/cl.runs") =~ /^$tl 1$/m }, 60, 'the program'),
	'(g) a task runs');
q1("ALTER ROLE worker NOLOGIN");
is(q1($terminate), 't', '(g) its connections are terminated, and the role may not log in');
ok(defined poll_until($node, 'postgres',
		"SELECT last_error FROM schedq.task WHERE id = $tl", 'lease expired', 60),
	'(g) the lease expires, the reaper fails the attempt');
q1("ALTER ROLE worker LOGIN");
ok(defined poll_until($node, 'postgres',
		"SELECT status, attempts FROM schedq.task WHERE id = $tl", 'done|2', 60),
	'(g) the worker is back, and completes the second attempt');
like(slurp("$dir/cl.log"), qr/task $tl kind=lose attempt=1 .*outcome=lost/,
	'(g) the first attempt logged as lost');
is(scalar(() = slurp("$dir/cl.log") =~ /task $tl .*outcome=(done|stale|retry|failed)/g), 1,
	'(g) and reported once: the second attempt, done');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(g) the worker exits');

#
# (h) A completion that is stale (the task was canceled after the
#     program's last heartbeat, here before its first: the lease is 120 s)
#     is logged as stale, and changes nothing; the same complete_and_claim
#     claims the task waiting behind it.
#
my $sg = "$dir/stale.go";
my $st = script('stale.sh', <<"EOF");
echo "\$SCHEDQ_TASK_ID" >> $dir/stale.runs
while [ "\$SCHEDQ_KIND" = hold ] && [ ! -e $sg ]; do sleep 0.05; done
echo '"ok"'
EOF
$w = start_worker($node, 'worker', [ '--queue' => 'st', '--lease' => '120s' ], [$st],
	"$dir/stale.log");
my $ts = submit_as_app("SELECT schedq.submit('hold', queue => 'st')");
ok(wait_for(sub { slurp("$dir/stale.runs") =~ /^$ts$/m }, 60, 'the program'),
	'(h) the task runs');
my $tn = submit_as_app("SELECT schedq.submit('next', queue => 'st')");
is(submit_as_app("SELECT schedq.cancel($ts)"), 't', '(h) it is canceled');
open(my $go, '>', $sg) or die;
close $go;
ok(wait_for(sub { slurp("$dir/stale.log") =~ /task $ts kind=hold attempt=1 .*outcome=(\w+)/ }, 60,
		'the log line'),
	'(h) the program ends');
like(slurp("$dir/stale.log"), qr/task $ts kind=hold attempt=1 .*outcome=stale/,
	'(h) its completion is logged as stale');
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $tn", 'done', 60),
	'(h) the next task is claimed and done');
is(q1("SELECT status, result IS NULL FROM schedq.task WHERE id = $ts"), 'canceled|t',
	'(h) the stale completion changed nothing');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(h) the worker exits');

#
# (i) The server refuses the batch: schedq.max_payload is lowered after the
#     worker read it, so complete_and_claim fails (54000) and changes
#     nothing; the worker then completes the task on its own, its result
#     cut down to a quarter of the limit it knows, and claims the next.
#
my $rf = script('refuse.sh', <<'EOF');
[ "$SCHEDQ_KIND" = big ] && head -c 600000 /dev/zero | tr '\0' x
[ "$SCHEDQ_KIND" = small ] && echo '"ok"'
exit 0
EOF
$since = q1('SELECT now()');
$w = start_worker($node, 'worker', [ '--queue' => 'rf' ], [$rf], "$dir/refuse.log");
ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker' AND backend_start > '$since' AND state = 'active' AND query LIKE 'CALL schedq.await_task(%'",
		'1', 30),
	'(i) the worker is connected, and waits');
$node->append_conf('postgresql.conf', "schedq.max_payload = '400kB'\n");
$node->reload;
ok(defined poll_until($node, 'postgres', "SHOW schedq.max_payload", '400kB', 30),
	'(i) the limit is lowered to 400 kB (the worker read 1 MB)');
my $tbig = submit_as_app("SELECT schedq.submit('big', queue => 'rf', priority => 1)");
my $tsmall = submit_as_app("SELECT schedq.submit('small', queue => 'rf')");
ok(defined poll_until($node, 'postgres',
		"SELECT string_agg(status, ',' ORDER BY id) FROM schedq.task WHERE id IN ($tbig, $tsmall)",
		'done,done', 60),
	'(i) both tasks are done');
is(q1("SELECT result->>'truncated', attempts FROM schedq.task WHERE id = $tbig"), 'true|1',
	'(i) the big one with its result cut down, in its first attempt');
like(slurp("$dir/refuse.log"), qr/error: complete_and_claim: .*\n(.*\n)*.*task $tbig kind=big .*outcome=done/,
	'(i) the refusal is logged, then the task as done');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(i) the worker exits');

#
# (j) The first claim is canceled (it waits for a lock on schedq.task that
#     a session holds): not an error of the worker's arguments, so the
#     worker logs it, backs off and claims again, rather than exit 1.
#
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe('LOCK TABLE schedq.task IN ACCESS EXCLUSIVE MODE');
$since = q1('SELECT now()');
$w = start_worker($node, 'worker', [ '--queue' => 'fc' ], ['true'], "$dir/firstclaim.log");
my $blocked = "SELECT count(*) FROM pg_stat_activity WHERE usename = 'worker'"
  . " AND backend_start > '$since' AND wait_event_type = 'Lock'"
  . " AND query LIKE '%schedq.claim(%'";
ok(defined poll_until($node, 'postgres', $blocked, '1', 30),
	'(j) the first claim waits for the lock');
is( q1("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE usename = 'worker'"
		  . " AND backend_start > '$since' AND wait_event_type = 'Lock'"
		  . " AND query LIKE '%schedq.claim(%'"),
	'1', '(j) and is canceled');
ok(wait_for(sub { slurp("$dir/firstclaim.log") =~ /error: claim: .*cancel/ }, 30,
		'the cancel to be logged'),
	'(j) the canceled claim is logged');
$holder->query_safe('COMMIT');
$holder->quit;
my $tfc = submit_as_app("SELECT schedq.submit('fc', queue => 'fc')");
ok(defined poll_until($node, 'postgres',
		"SELECT status FROM schedq.task WHERE id = $tfc", 'done', 60),
	'(j) the worker carries on: the next task is done');
$w->signal('TERM');
is(wait_exit($w, 60), 0, '(j) the worker exits 0 on SIGTERM');

$node->stop;
done_testing();

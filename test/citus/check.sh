#!/usr/bin/env bash
#-------------------------------------------------------------------------
# test/citus/check.sh
#	  make check-citus: schedq on a three-node Citus cluster (coordinator +
#	  two workers on this machine), distributed by schedq.distribute()
#	  (after its refusals: on a worker, a worker without schedq or with
#	  another version; nothing changed), then:
#	    1. 16 clients submit to 8 queues through the coordinator (submit is
#	       a distributed function, delegated to the queue's node): every
#	       task stored once, ids unique in the cluster, both workers used;
#	    2. 16 clients run schedq.claim (one queue) and schedq.complete
#	       across the 8 queues: every cycle completes exactly one task,
#	       no task claimed twice;
#	    3. the same under load while worker 2 is restarted (immediate
#	       shutdown): no committed task lost, none done twice;
#	    then the claims schedq refuses on a cluster (0A000); claim_queue
#	    with wait, run by Citus on its queue's node: woken there by a
#	    submit through the coordinator and by one through the other
#	    worker, three tasks to eight waiting claims each claimed once,
#	    the wait ending with no row, refused (0A000) in a transaction
#	    block; rotate_grant_key through the coordinator reaching a
#	    long-lived session on a worker within a second (the previous key
#	    still verifies, one two rotations old no longer does);
#	    await_queue, run by Citus on its queue's node too,
#	    waiting there holding no snapshot, woken by a submit and finding
#	    a routed one at its next look; schedq.fail
#	    (retried at once, failed for good, pending after a back-off,
#	    stale), schedq.cancel, schedq.retry (once, on both workers, its
#	    dedup check per queue, a gated task pending), submit with a
#	    dedup_key (one live task per key and queue, also from eight
#	    sessions at once), submit_many over queues of both workers; the
#	    calls a cluster cannot serve refused (0A000: await_task) before
#	    they change anything; budgets: set through the coordinator,
#	    charged by claims on every node, none over its limit under 16
#	    clients, tasks without room passed over, two budgets charged
#	    both or neither, a waiting claim holding no lock, a period's
#	    refill, SQL tasks' budgets;
#	    4. schedq's own scheduler on every node, over the shards placed
#	       there: the reapers take back expired leases (the restart's and
#	       five abandoned claims), each once; a back-off and a delay come
#	       due; 800 gated tasks (lock keys with versions, a concurrency
#	       limit) promoted by the workers' schedulers and drained by 16
#	       clients: each done once, each lock key's order and each
#	       shard's limit held; a shard moved under load (block_writes)
#	       with pending, gated and available tasks: none lost, none done
#	       twice, the new node's scheduler promotes them, the old one
#	       frees its kept plans of the shard; periodic
#	       tasks fired by the coordinator's scheduler, each tick once for
#	       the cluster, into the queue's shard, with the schedule's owner
#	       by name, never overlapping; run_schedule_now; a gated tick's
#	       task promoted by its node; schedules inserted by hand fire;
#	       set_schedule_enabled and unschedule; two schedule calls
#	       creating one name at once (23505 for the second); a role
#	       named "10"; a
#	       transaction left open on schedq.periodic does not hold the
#	       coordinator's scheduler; SQL tasks (submit_sql, delegated or
#	       routed, schedule_sql, schedq_cron's cron.schedule) run by the
#	       SQL executors of their shard's node, once, as their owner; a
#	       failing command; a cancel through the coordinator;
#	    5. figures, in the same run: claim + complete cycles/s on the
#	       cluster with schedq's calls and with hand-written router
#	       statements, and on one plain server with schedq's calls; the
#	       per-call latency of submit through the coordinator against one
#	       server.
#	  Builds nothing.  Skips (exit 0) with a message when Citus is not
#	  installed in PG_CONFIG's pkglibdir; fails when schedq is not installed.
#
# Environment: PG_CONFIG; CITUS_PORT (first of four ports, default 55431);
#	CITUS_SECONDS (length of each figure run, default 10);
#	SCHEDQ_CHECK_USER (OS user for the servers when run as root, postgres);
#	SCHEDQ_CHECK_KEEP=1 keeps the work directory.
# The last line is "N passed, M failed"; exit status non-zero when M > 0.
#-------------------------------------------------------------------------

set -u
set -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cluster.sh
source "$HERE/cluster.sh"

PG_CONFIG=${PG_CONFIG:-pg_config}
PKGLIBDIR=$("$PG_CONFIG" --pkglibdir) || { echo "check-citus: $PG_CONFIG does not run"; exit 1; }
if [ ! -f "$PKGLIBDIR/citus.so" ]; then
	echo "check-citus: skipped: Citus is not installed in $PKGLIBDIR"
	echo "check-citus: build Citus v14.0.1 into this server as docs/scale-out.md says, then run make check-citus again"
	exit 0
fi
if [ ! -f "$PKGLIBDIR/schedq.so" ]; then
	echo "check-citus: schedq is not installed in $PKGLIBDIR: run make install PG_CONFIG=$PG_CONFIG first"
	exit 1
fi

WORK=$(mktemp -d /tmp/schedq-citus.XXXXXX)
chmod 755 "$WORK"
[ "$(id -u)" = 0 ] && chown "${SCHEDQ_CHECK_USER:-postgres}" "$WORK"
cluster_init_vars "$WORK" "${CITUS_PORT:-55431}"
SINGLE_PORT=$((CITUS_PORT + 3))
SECONDS_RUN=${CITUS_SECONDS:-10}
PASSED=0
FAILED=0

cleanup()
{
	cluster_stop
	[ -f "$WORK/single/postmaster.pid" ] &&
		as_user "$CITUS_BINDIR/pg_ctl" -D "$WORK/single" -m fast -w stop >/dev/null 2>&1
	if [ "$FAILED" = 0 ] && [ "${SCHEDQ_CHECK_KEEP:-}" != 1 ]; then
		rm -rf "$WORK"
	else
		echo "check-citus: logs kept in $WORK"
	fi
}
trap cleanup EXIT

ok()
{
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
		PASSED=$((PASSED + 1))
	else
		echo "not ok - $1: got '$2', expected '$3'"
		FAILED=$((FAILED + 1))
	fi
}

# q NODE SQL: one value.
q()
{
	cpsql "$1" -At -c "$2"
}

pgb()
{
	as_user "$CITUS_BINDIR/pgbench" -n -M simple -h "$CITUS_DIR" "$@" schedq
}

# The cycles/s of a pgbench run's output.
tps()
{
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | cut -d. -f1
}

latency()
{
	sed -n 's/^latency average = \([0-9.]*\) ms/\1/p'
}

echo "check-citus: starting the cluster in $WORK (ports $CITUS_PORT-$((CITUS_PORT + 2)))"
if ! cluster_start >"$WORK/start.log" 2>&1; then
	cat "$WORK/start.log"
	echo "not ok - the cluster starts"
	echo "0 passed, 1 failed"
	FAILED=1
	exit 1
fi
# sqlstate NODE SQL: the SQLSTATE of the error SQL raises ("none" if none).
sqlstate()
{
	local out
	out=$(cpsql "$1" -v VERBOSITY=verbose -c "$2" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p' | head -1)
	echo "${out:-none}"
}
# What distribute() changes, on the coordinator: "N KEY": the schedq tables
# Citus knows, the primary key of schedq.task.
shape()
{
	q coord "SELECT (SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::regclass::text LIKE 'schedq.%')
	         || ' ' || (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'schedq.task'::regclass AND contype = 'p')"
}
ok "schedq.distribute() refuses on a worker (not the coordinator)" \
	"$(sqlstate w1 'SELECT schedq.distribute()')" 55000
cpsql w2 -c "SET citus.enable_ddl_propagation TO off" -c "DROP EXTENSION schedq" >>"$WORK/start.log" 2>&1
ok "schedq.distribute() refuses while a worker lacks schedq" \
	"$(sqlstate coord 'SELECT schedq.distribute()')" 42704
cpsql w2 -c "SET citus.enable_ddl_propagation TO off" -c "CREATE EXTENSION schedq VERSION '1.1'" >>"$WORK/start.log" 2>&1
ok "schedq.distribute() refuses while a worker runs another version of schedq" \
	"$(sqlstate coord 'SELECT schedq.distribute()')" 55000
ok "the refusals changed nothing (no table distributed, primary key (id))" "$(shape)" "0 PRIMARY KEY (id)"
cpsql w2 -c "SET citus.enable_ddl_propagation TO off" -c "ALTER EXTENSION schedq UPDATE" >>"$WORK/start.log" 2>&1
# (the log's clock when distribute starts: the passes' failures are
# counted from there; DROP EXTENSION above fails the passes it races)
dist_at=$(date -u '+%Y-%m-%d %H:%M:%S.%3N')
cpsql coord -c "SELECT schedq.distribute(shard_count => 8)" >"$WORK/distribute.log" 2>&1
ok "schedq.distribute() on the coordinator" "$?" 0
ok "schedq.distribute() refuses a second time" "$(sqlstate coord 'SELECT schedq.distribute()')" 42710
ok "schedq's tables are distributed (task, five reference tables), primary key (queue, id)" "$(shape)" "6 PRIMARY KEY (queue, id)"
ok "schedq.task is distributed by queue" \
	"$(q coord "SELECT column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition WHERE logicalrelid = 'schedq.task'::regclass")" queue

# Tasks per worker node.
per_node()
{
	q coord "SELECT string_agg(n, ' ' ORDER BY n) FROM (
	  SELECT p.nodeport || ':' || sum(s.result::bigint) AS n
	    FROM run_command_on_shards('schedq.task', \$\$SELECT count(*) FROM %s\$\$) s
	    JOIN pg_dist_shard_placement p USING (shardid)
	   GROUP BY p.nodeport) x"
}

# 1. Concurrent submits through the coordinator.
pgb -p "$CITUS_PORT" -c 16 -j 2 -t 50 -f "$HERE/submit.sql" >"$WORK/submit.log" 2>&1
ok "16 clients submit 800 tasks to 8 queues" "$(grep -c 'actually processed: 800/800' "$WORK/submit.log")" 1
ok "800 tasks stored" "$(q coord 'SELECT count(*) FROM schedq.task')" 800
ok "task ids unique in the cluster" "$(q coord 'SELECT count(DISTINCT id) FROM schedq.task')" 800
nodes=$(per_node)
echo "#   tasks per node: $nodes"
ok "both workers hold tasks" "$(echo "$nodes" | grep -c "$((CITUS_PORT + 1)):[1-9].* $((CITUS_PORT + 2)):[1-9]")" 1
ok "submits ran on the workers (delegated): ids from the workers' ranges" \
	"$(q coord 'SELECT count(*) FILTER (WHERE id < 2^48) FROM schedq.task')" 0

# 2. Concurrent claim + complete.
q coord "SELECT count(schedq.submit('k', queue => 'q' || (g % 8 + 1))) FROM generate_series(1, 3200) g" >/dev/null
pgb -p "$CITUS_PORT" -c 16 -j 2 -t 100 -f "$HERE/schedq_claim_complete.sql" >"$WORK/claim.log" 2>&1
ok "16 clients run 1600 cycles of schedq.claim (one queue) + schedq.complete" "$(grep -c 'actually processed: 1600/1600' "$WORK/claim.log")" 1
ok "1600 tasks done" "$(q coord "SELECT count(*) FROM schedq.task WHERE status = 'done'")" 1600
ok "no task claimed twice" "$(q coord 'SELECT count(*) FROM schedq.task WHERE attempts > 1')" 0
ok "nothing lost" "$(q coord "SELECT count(*) FROM schedq.task WHERE status = 'available'")" 2400

# 3. A worker restarted mid-load.
before=$(q coord 'SELECT count(*) FROM schedq.task')
pgb -p "$CITUS_PORT" -c 16 -j 2 -T 8 -f "$HERE/schedq_claim_complete.sql" >"$WORK/restart.log" 2>&1 &
load=$!
sleep 3
as_user "$CITUS_BINDIR/pg_ctl" -D "$CITUS_DIR/w2" -m immediate -w stop >/dev/null 2>&1
as_user "$CITUS_BINDIR/pg_ctl" -D "$CITUS_DIR/w2" -l "$CITUS_DIR/w2.log" -w start >/dev/null 2>&1
wait $load
echo "#   under the restart: $(sed -n 's/.*actually processed: //p' "$WORK/restart.log") cycles;" \
	"$(grep -c 'aborted in command' "$WORK/restart.log") of 16 clients stopped by an error, e.g.:"
grep -o 'ERROR: .*' "$WORK/restart.log" | head -1 | sed 's/^/#     /'
echo "#   left running (claimed, complete cut off; the workers' reapers, step 4a, take them back): " \
	"$(q coord "SELECT count(*) FROM schedq.task WHERE status = 'running'")"
ok "worker 2 back after an immediate restart" "$(q w2 'SELECT 1')" 1
pgb -p "$CITUS_PORT" -c 16 -j 2 -t 20 -f "$HERE/schedq_claim_complete.sql" >"$WORK/after.log" 2>&1
ok "16 clients claim and complete again after the restart" "$(grep -c 'actually processed: 320/320' "$WORK/after.log")" 1
ok "no committed task lost across the restart" "$(q coord 'SELECT count(*) FROM schedq.task')" "$before"
ok "no task claimed twice across the restart" "$(q coord 'SELECT count(*) FROM schedq.task WHERE attempts > 1')" 0

# Known limits (docs/scale-out.md): what schedq refuses on a distributed
# schedq.task, with its SQLSTATE, and what Citus refuses still.
ok "a claim over every queue is refused (0A000)" "$(sqlstate coord "SELECT schedq.claim('w')")" 0A000
ok "a claim over two queues is refused (0A000)" "$(sqlstate coord "SELECT schedq.claim('w', queues => '{q1,q2}')")" 0A000
ok "a claim with wait is refused (0A000)" "$(sqlstate coord "SELECT schedq.claim('w', queues => '{q1}', wait => '1s')")" 0A000

# claim_queue with wait: delegated by Citus to the node of its queue's
# shard, it waits there, on that node's wake-ups.
# qnode QUEUE: the node (w1, w2) holding QUEUE's shard.
qnode()
{
	case "$(q coord "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('schedq.task', '$1')")" in
	$((CITUS_PORT + 1))) echo w1 ;;
	$((CITUS_PORT + 2))) echo w2 ;;
	*) echo none ;;
	esac
}
# waiters NODE QUEUE: claim_queue calls waiting on NODE for QUEUE.
waiters()
{
	q "$1" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SchedqClaim' AND query LIKE '%claim_queue%''$2''%'"
}
# until_eq DEADLINE_S EXPECTED CMD...: poll CMD's output until EXPECTED or
# the deadline; prints the last output.
until_eq()
{
	local end=$((SECONDS + $1)) want=$2 got
	shift 2
	while :; do
		got=$("$@")
		[ "$got" = "$want" ] || [ "$SECONDS" -ge "$end" ] && break
		sleep 0.05
	done
	echo "$got"
}
wakeups()
{
	q "$1" "SELECT value FROM schedq.metrics() WHERE name = 'claim_wakeups'"
}
# A session that stays open, one at a time: session_open NODE, then
# session_q SQL prints the statement's one line of output (an error as
# "ERROR:  message"), session_close.
session_open()
{
	coproc SESS { cpsql "$1" -At -v ON_ERROR_STOP=0 -v VERBOSITY=terse 2>&1; }
}
session_q()
{
	local line
	echo "$1;" >&"${SESS[1]}"
	read -r -t 20 line <&"${SESS[0]}"
	echo "$line"
}
session_close()
{
	echo '\q' >&"${SESS[1]}"
	wait "$SESS_PID"
}
# lines FILE...: non-empty lines in FILE... (no such file counts 0).
lines()
{
	cat "$@" 2>/dev/null | grep -c .
}
wq=
for i in $(seq 1 40); do
	[ "$(qnode "wq$i")" = w1 ] && wq=wq$i && break
done
ok "a queue on worker 1 for the waiting claims" "$(qnode "$wq")" w1
ok "claim_queue of an empty queue with wait 1s: no rows, after the wait" \
	"$(q coord "SELECT count(*) || ' ' || (clock_timestamp() - statement_timestamp() >= '1s') FROM schedq.claim_queue('$wq', 'cw', wait => '1s')")" "0 true"
for via in coord w2; do
	rm -f "$WORK/cq.out"
	w0=$(wakeups w1)
	cpsql coord -At -c "SELECT id FROM schedq.claim_queue('$wq', 'cw', wait => '60s')" >"$WORK/cq.out" 2>&1 &
	waiter=$!
	ok "claim_queue with wait through the coordinator waits on worker 1" "$(until_eq 20 1 waiters w1 "$wq")" 1
	t0=$(date +%s%N)
	id=$(q "$via" "SELECT schedq.submit('k', queue => '$wq')")
	got=$(until_eq 10 1 lines "$WORK/cq.out")
	ms=$((($(date +%s%N) - t0) / 1000000))
	wait $waiter
	echo "#   woken ${ms} ms after the submit through $via returned"
	ok "a submit through $via wakes it: it returns the task" "$(cat "$WORK/cq.out")" "$id"
	ok "  woken by the wake-up on worker 1, not by its once-a-second look" \
		"$(q w1 "SELECT $(wakeups w1) > $w0")" t
done
# Eight waiting claims, three tasks: each task claimed once; the other five
# claims return nothing when their wait ends.
rm -f "$WORK"/cq8.*
pids=
for i in $(seq 1 8); do
	cpsql coord -At -c "SELECT id FROM schedq.claim_queue('$wq', 'cw$i', wait => '8s')" >"$WORK/cq8.$i" 2>&1 &
	pids="$pids $!"
done
ok "eight claim_queue calls wait on worker 1" "$(until_eq 20 8 waiters w1 "$wq")" 8
ids=$(for v in coord w2 coord; do q "$v" "SELECT schedq.submit('k', queue => '$wq')"; done | sort | tr '\n' ' ')
ok "three submits take three of the eight waiting claims" "$(until_eq 10 3 lines "$WORK"/cq8.*)" 3
ok "  five still wait" "$(until_eq 5 5 waiters w1 "$wq")" 5
# shellcheck disable=SC2086
wait $pids
id_list=${ids% }
id_list=${id_list// /,}
ok "each of the three tasks claimed by exactly one claim" \
	"$(cat "$WORK"/cq8.* | grep . | sort | tr '\n' ' ')" "$ids"
ok "  once each (attempt 1, running); the other five ended without a row" \
	"$(q coord "SELECT count(*) FROM schedq.task WHERE queue = '$wq' AND status = 'running' AND attempts = 1 AND id IN ($id_list)") $(lines "$WORK"/cq8.*)" "3 3"
ok "claim_queue with wait in a transaction block (run on the coordinator) is refused (0A000)" \
	"$(cpsql coord -v VERBOSITY=verbose -c "BEGIN" -c "SELECT schedq.claim_queue('$wq', 'cw', wait => '1s')" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p')" 0A000
q coord "SELECT schedq.submit('k', queue => '$wq')" >/dev/null
ok "claim_queue without wait in a transaction block claims (routed from the coordinator)" \
	"$(cpsql coord -At -c "BEGIN" -c "SELECT count(*) FROM schedq.claim_queue('$wq', 'cw')" -c "ROLLBACK")" 1
# Tokens: claim_queue runs on worker 1 and signs its tokens there; with
# one set of keys on every node (grant_key is a reference table), they
# verify through the coordinator and on worker 2.
for via in coord w2; do
	q coord "SELECT schedq.submit('k', queue => '$wq')" >/dev/null
	tok=$(q coord "SELECT token FROM schedq.claim_queue('$wq', 'cw')")
	ok "a token of claim_queue (signed on worker 1) completes through $via" \
		"$(q "$via" "SELECT schedq.complete('$tok')")" t
done
alt=a
[ "${tok: -1}" = a ] && alt=b
ok "  a token with its signature changed is refused (28000)" \
	"$(sqlstate coord "SELECT schedq.complete('${tok%?}$alt')")" 28000
# await_queue: delegated like claim_queue, it waits on the queue's node
# holding no snapshot; a submit through the coordinator wakes it, and a
# task that wakes no one there (submitted in a transaction block, routed
# from the coordinator) is found by its once-a-second look.
aq=
for i in $(seq 1 40); do
	[ "$(qnode "aq$i")" = w1 ] && aq=aq$i && break
done
awaiters()
{
	q w1 "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SchedqAwait' AND backend_xmin IS NULL AND query LIKE '%await_queue%''$aq''%'"
}
t0=$(date +%s%N)
got=$(q coord "CALL schedq.await_queue('$aq', wait => '1s')")
ok "await_queue of an empty queue with wait 1s: false, after the wait" \
	"$got $(($(date +%s%N) - t0 >= 1000000000))" "f 1"
for how in submit routed; do
	rm -f "$WORK/aq.out"
	w0=$(wakeups w1)
	cpsql coord -At -c "CALL schedq.await_queue('$aq', wait => '60s')" >"$WORK/aq.out" 2>&1 &
	waiter=$!
	ok "await_queue through the coordinator waits on worker 1, holding no snapshot ($how)" "$(until_eq 20 1 awaiters)" 1
	if [ $how = submit ]; then
		ok "  the coordinator's backend it came through keeps its statement's snapshot meanwhile" \
			"$(q coord "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL schedq.await_queue(''$aq''%' AND backend_xmin IS NOT NULL")" 1
	fi
	if [ $how = submit ]; then
		q coord "SELECT schedq.submit('k', queue => '$aq')" >/dev/null
	else
		cpsql coord -At -c "BEGIN" -c "SELECT schedq.submit('k', queue => '$aq')" -c "COMMIT" >/dev/null
	fi
	got=$(until_eq 10 1 lines "$WORK/aq.out")
	wait $waiter
	ok "  the task wakes it ($how): woken is true" "$got $(cat "$WORK/aq.out")" "1 t"
	if [ $how = submit ]; then
		ok "  woken by the wake-up on worker 1" "$(q w1 "SELECT $(wakeups w1) > $w0")" t
	fi
	ok "  claim_queue takes the task, which await_queue left available" \
		"$(q coord "SELECT count(*) FROM schedq.claim_queue('$aq', 'aw')")" 1
done
q coord "CREATE ROLE aq_admin LOGIN BYPASSRLS; CREATE ROLE aq_plain LOGIN;
	GRANT USAGE ON SCHEMA schedq TO aq_admin, aq_plain;
	GRANT EXECUTE ON PROCEDURE schedq.await_queue TO aq_admin, aq_plain" >/dev/null
ok "await_queue by an admin role that may not read schedq.task waits; by a role that is not an admin it is refused (0A000)" \
	"$(cpsql coord -At -U aq_admin -c "CALL schedq.await_queue('$aq', wait => '200 ms')" 2>&1) $(cpsql coord -U aq_plain -v VERBOSITY=verbose -c "CALL schedq.await_queue('$aq', wait => '200 ms')" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\): .*/\1/p')" \
	"f 0A000"
ok "await_queue run on the coordinator (an argument that is not a constant) is refused (0A000)" \
	"$(sqlstate coord "CALL schedq.await_queue(CASE WHEN random() < 2 THEN '$aq' END, wait => '1s')")" 0A000
# Key rotation on the cluster, through the coordinator: every node has
# the new keys at once, and a session that has cached the old ones (on
# worker 1, signing and checking tokens of its claims) uses them within
# a second; a token of the previous key still completes, and one of a
# key two rotations old is refused (28000) everywhere.
q coord "SELECT count(*) FROM (SELECT schedq.submit('k', queue => '$wq') FROM generate_series(1, 40)) s" >/dev/null
session_open w1
ks_kid()
{
	local t
	t=$(session_q "SELECT coalesce((SELECT token FROM schedq.claim_queue('$wq', 'kw')), 'none')")
	echo "${t%%.*}"
}
tok_a=$(session_q "SELECT token FROM schedq.claim_queue('$wq', 'kw')")
tok_b=$(session_q "SELECT token FROM schedq.claim_queue('$wq', 'kw')")
k1=$(q coord "SELECT schedq.rotate_grant_key()")
ok "schedq.rotate_grant_key on the cluster: the new key is on every node" \
	"$(for n in $CITUS_NODES; do q "$n" "SELECT max(kid) FROM schedq.grant_key"; done | sort -u)" "$k1"
ok "  a session on worker 1 that cached the old keys signs with the new one within a second" \
	"$(until_eq 5 "$k1" ks_kid)" "$k1"
ok "  a token of the previous key still completes, through the coordinator" \
	"$(q coord "SELECT schedq.complete('$tok_a')")" t
q coord "SELECT schedq.rotate_grant_key()" >/dev/null
ok "  after another rotation, a token of the key two rotations old is refused in that session and through the coordinator (28000)" \
	"$(until_eq 5 "ERROR:  invalid token signature" session_q "SELECT schedq.heartbeat('$tok_b') IS NOT NULL") $(sqlstate coord "SELECT schedq.complete('$tok_b')")" \
	"ERROR:  invalid token signature 28000"
session_close
# fail: at once, the task is available again; the last attempt fails it
# for good; a back-off of an hour leaves it pending.
q coord "SELECT schedq.submit('f', queue => 'fq', max_attempts => 2)" >/dev/null
ok "schedq.fail with retry_in 0 makes the task available again" \
	"$(q coord "SELECT schedq.fail(token, 'x', retry_in => '0') FROM schedq.claim('w', queues => '{fq}')")" available
ok "schedq.fail of the last attempt fails the task for good" \
	"$(q coord "SELECT schedq.fail(token, 'y') FROM schedq.claim('w', queues => '{fq}')")" failed
ok "the failed task: attempts 2, last_error y, finished" \
	"$(q coord "SELECT status || ' ' || attempts || ' ' || last_error || ' ' || (finished_at IS NOT NULL) FROM schedq.task WHERE queue = 'fq'")" "failed 2 y true"
q coord "SELECT schedq.submit('f', queue => 'fq2')" >/dev/null
ok "schedq.fail with a back-off leaves the task pending" \
	"$(q coord "SELECT schedq.fail(token, 'z', retry_in => '1 hour') FROM schedq.claim('w', queues => '{fq2}')")" pending
ok "a stale token's fail changes nothing" \
	"$(q coord "SELECT schedq.fail(token, 'w') FROM schedq.claim('w', queues => '{q1}') c, LATERAL (SELECT schedq.complete(c.token)) d")" stale
# cancel: a running task is canceled once, and its worker's complete then
# changes nothing.
tok=$(q coord "SELECT token FROM schedq.claim('w', queues => '{q2}')")
cid=$(q coord "SELECT id FROM schedq.task WHERE queue = 'q2' AND status = 'running' ORDER BY started_at DESC LIMIT 1")
ok "schedq.cancel of a running task, then again" \
	"$(q coord "SELECT schedq.cancel($cid) || ' ' || schedq.cancel($cid)")" "true false"
ok "the canceled task's complete changes nothing" "$(q coord "SELECT schedq.complete('$tok')")" f
ok "the task is canceled" "$(q coord "SELECT status FROM schedq.task WHERE id = $cid")" canceled
# retry: each statement names the task's queue.  The canceled task runs
# again once; the failed task of fq gets a fresh allowance and runs once
# more; tasks of eight queues, on both workers, each retried once by four
# sessions at once; the dedup check within the queue (dedup keys are
# unique per role and queue on a cluster); a gated task goes back to
# pending; what stays refused.
ok "schedq.retry of the canceled task, then again" \
	"$(q coord "SELECT schedq.retry($cid) || ' ' || schedq.retry($cid)")" "true false"
ok "the retried task is available, a fresh allowance, unfinished" \
	"$(q coord "SELECT status || ' ' || (retry_base = attempts) || ' ' || (finished_at IS NULL) FROM schedq.task WHERE id = $cid")" "available true true"
fid=$(q coord "SELECT id FROM schedq.task WHERE queue = 'fq'")
ok "schedq.retry of the task that failed for good" "$(q coord "SELECT schedq.retry($fid)")" t
ok "its next attempt (3) is claimed and fails with a retry: a fresh allowance of 2" \
	"$(q coord "SELECT c.attempt || ' ' || schedq.fail(c.token, 'again', retry_in => '0') FROM schedq.claim('w', queues => '{fq}') c")" "3 available"
ok "then done, once" \
	"$(q coord "SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{fq}')")" t
ok "the task of fq: done after attempt 4, retry_base 2" \
	"$(q coord "SELECT status || ' ' || attempts || ' ' || retry_base FROM schedq.task WHERE queue = 'fq'")" "done 4 2"
for i in 1 2 3 4 5 6 7 8; do
	q coord "SELECT schedq.submit('r', queue => 'rq$i')" >/dev/null
done
rids=$(q coord "SELECT id FROM schedq.task WHERE queue LIKE 'rq_' ORDER BY id")
for id in $rids; do
	q coord "SELECT schedq.cancel($id)" >/dev/null
done
ok "the tasks of rq1..rq8 are on both workers" \
	"$(q coord "SELECT count(DISTINCT p.nodeport) FROM generate_series(1, 8) i
	  JOIN pg_dist_shard_placement p ON p.shardid = get_shard_id_for_distribution_column('schedq.task', 'rq' || i)
	 WHERE p.nodeport <> $CITUS_PORT")" 2
: >"$WORK/retry.out"
for id in $rids; do
	for s in 1 2 3 4; do
		q coord "SELECT schedq.retry($id)" >>"$WORK/retry.out" 2>&1 &
	done
done
wait
ok "four sessions each, all at once, retry the 8 tasks: one retry each, no error" \
	"$(sort "$WORK/retry.out" | uniq -c | awk '{ printf "%s%s:%s", sep, $2, $1; sep = " " }')" "f:24 t:8"
ok "the 8 tasks are available again, each with its attempts unchanged" \
	"$(q coord "SELECT count(*) FROM schedq.task WHERE queue LIKE 'rq_' AND status = 'available' AND attempts = 0 AND retry_base = 0")" 8
# dedup keys: a finished task of rq1 holding d is not retried while a live
# task of rq1 holds d (23505, nothing changed), while a live task of rq2
# holding d does not stop it.
did=$(q coord "SELECT schedq.submit('r', queue => 'rq1', dedup_key => 'd')")
q coord "SELECT schedq.cancel($did)" >/dev/null
hid=$(q coord "SELECT schedq.submit('r', queue => 'rq1', dedup_key => 'd')")
q coord "SELECT schedq.submit('r', queue => 'rq2', dedup_key => 'd')" >/dev/null
ok "schedq.retry while a live task of the same queue holds its dedup_key is refused (23505)" \
	"$(sqlstate coord "SELECT schedq.retry($did)")" 23505
ok "the refused retry changed nothing" "$(q coord "SELECT status || ' ' || (finished_at IS NOT NULL) FROM schedq.task WHERE id = $did")" "canceled true"
q coord "SELECT schedq.cancel($hid)" >/dev/null
ok "a live task of another queue holding the same dedup_key does not stop it" \
	"$(q coord "SELECT schedq.retry($did)")" t
gid=$(q coord "SELECT id FROM schedq.task WHERE queue = 'rq3'")
q coord "UPDATE schedq.task SET lock_key = 'l' WHERE id = $gid" >/dev/null
q coord "SELECT schedq.cancel($gid)" >/dev/null
ok "schedq.retry of a gated task makes it pending; the node's scheduler promotes it" \
	"$(q coord "SELECT schedq.retry($gid)") $(until_eq 10 available q coord "SELECT status FROM schedq.task WHERE id = $gid")" "t available"
ok "schedq.retry of a live task returns false" "$(q coord "SELECT schedq.retry($gid)")" f
ok "schedq.retry of a missing task returns false" "$(q coord "SELECT schedq.retry(-1)")" f
ok "schedq.retry(NULL) is refused (22004)" "$(sqlstate coord "SELECT schedq.retry(NULL)")" 22004
q coord "CREATE ROLE schedq_plain; GRANT USAGE ON SCHEMA schedq TO schedq_plain;
	GRANT EXECUTE ON FUNCTION schedq.retry(bigint), schedq.cancel(bigint) TO schedq_plain" >/dev/null
ok "schedq.retry by a role that is not an admin is refused (0A000)" \
	"$(sqlstate coord "SET ROLE schedq_plain; SELECT schedq.retry($did)")" 0A000
# submit with a dedup_key: one live task per role, key and queue, found by
# a second submit through the coordinator (delegated to the queue's node)
# or in a transaction block (routed from the coordinator), and by eight
# sessions submitting at once; another queue gets a task of its own; a
# finished holder no longer holds the key.
k1=$(q coord "SELECT schedq.submit('k', queue => 'dq1', dedup_key => 'dk')" 2>&1)
ok "schedq.submit with a dedup_key returns an id" "$(echo "$k1" | grep -c '^[1-9][0-9]*$')" 1
ok "a second submit with the same dedup_key and queue returns the live task" \
	"$(q coord "SELECT schedq.submit('k', queue => 'dq1', dedup_key => 'dk')")" "$k1"
ok "so does one in a transaction block" \
	"$(cpsql coord -At -c "BEGIN" -c "SELECT schedq.submit('k', queue => 'dq1', dedup_key => 'dk')" -c "COMMIT")" "$k1"
k2=$(q coord "SELECT schedq.submit('k', queue => 'dq2', dedup_key => 'dk')" 2>&1)
ok "the same dedup_key in another queue is a task of its own" \
	"$(echo "$k2" | grep -v "^$k1\$" | grep -c '^[1-9][0-9]*$')" 1
: >"$WORK/dedup.out"
for s in 1 2 3 4 5 6 7 8; do
	q coord "SELECT schedq.submit('k', queue => 'dq3', dedup_key => 'dc')" >>"$WORK/dedup.out" 2>&1 &
done
wait
ok "eight sessions submit one dedup_key at once: one id for all, no error" \
	"$(sort -u "$WORK/dedup.out" | wc -l)$(grep -c '^[0-9][0-9]*$' "$WORK/dedup.out")" 18
ok "one task per dedup_key and queue stored" \
	"$(q coord "SELECT string_agg(queue || ':' || n, ' ' ORDER BY queue) FROM (SELECT queue, count(*) n FROM schedq.task WHERE dedup_key IN ('dk', 'dc') GROUP BY queue) x")" "dq1:1 dq2:1 dq3:1"
ok "the task holding the key is done" \
	"$(q coord "SELECT id || ' ' || schedq.complete(token) FROM schedq.claim('w', queues => '{dq1}')")" "$k1 true"
k3=$(q coord "SELECT schedq.submit('k', queue => 'dq1', dedup_key => 'dk')" 2>&1)
ok "then a submit with its dedup_key makes a new task" \
	"$(echo "$k3" | grep -v "^$k1\$" | grep -c '^[1-9][0-9]*$')" 1
# A role whose OID on the coordinator differs from its OID on the
# workers: its submits through the coordinator (delegated) and in
# transaction blocks (routed from the coordinator), four of each at once,
# find one task.
q coord "CREATE ROLE schedq_app LOGIN; GRANT USAGE ON SCHEMA schedq TO schedq_app;
	GRANT EXECUTE ON FUNCTION schedq.submit TO schedq_app; GRANT SELECT ON schedq.task TO schedq_app" >/dev/null
app_oid=$(q coord "SELECT oid FROM pg_roles WHERE rolname = 'schedq_app'")
ok "schedq_app's OID on the coordinator is not its OID on either worker" \
	"$(for n in w1 w2; do q "$n" "SELECT oid FROM pg_roles WHERE rolname = 'schedq_app'"; done | grep -c "^$app_oid\$")" 0
: >"$WORK/dedup-app.out"
for s in 1 2 3 4; do
	cpsql coord -At -U schedq_app -c "SELECT schedq.submit('k', queue => 'dq4', dedup_key => 'da')" >>"$WORK/dedup-app.out" 2>&1 &
	cpsql coord -At -U schedq_app -c "BEGIN" -c "SELECT schedq.submit('k', queue => 'dq4', dedup_key => 'da')" -c "COMMIT" >>"$WORK/dedup-app.out" 2>&1 &
done
wait
ok "its eight submits, delegated and routed, return one id, no error" \
	"$(sort -u "$WORK/dedup-app.out" | wc -l)$(grep -c '^[1-9][0-9]*$' "$WORK/dedup-app.out")" 18
ok "one task of schedq_app stored" "$(q coord "SELECT count(*) FROM schedq.task WHERE queue = 'dq4'")" 1
# pause_queue and resume_queue change the reference table schedq.queue,
# in a transaction Citus prepares on every node: a claim through the
# coordinator, and claim_queue on the queue's node, read the flag.
q coord "SELECT count(schedq.submit('p', queue => 'pq')) FROM generate_series(1, 2)" >/dev/null
ok "schedq.pause_queue on the cluster" "$(cpsql coord -c "SELECT schedq.pause_queue('pq')" 2>&1 | grep -c ERROR)" 0
ok "  a paused queue gives nothing to claim or claim_queue" \
	"$(q coord "SELECT count(*) FROM schedq.claim('w', queues => '{pq}')") $(q coord "SELECT count(*) FROM schedq.claim_queue('pq', 'w')")" "0 0"
ok "schedq.resume_queue on the cluster; then claim and claim_queue take its tasks" \
	"$(cpsql coord -c "SELECT schedq.resume_queue('pq')" 2>&1 | grep -c ERROR) $(q coord "SELECT count(*) FROM schedq.claim('w', queues => '{pq}')") $(q coord "SELECT count(*) FROM schedq.claim_queue('pq', 'w')")" "0 1 1"
# submit_many through the coordinator: each task into its queue's shard,
# dedup keys per queue within the call.
sm=$(q coord "SELECT string_agg(id::text, ' ' ORDER BY ord) FROM schedq.submit_many((
	SELECT jsonb_agg(jsonb_build_object('kind', 'm', 'queue', 'sm' || least(i, 9), 'dedup_key', CASE WHEN i > 8 THEN 'd' END) ORDER BY i)
	  FROM generate_series(1, 10) i)) WITH ORDINALITY AS s(id, ord)")
ok "schedq.submit_many on the cluster: ten submissions over nine queues, two with one dedup key in one queue" \
	"$(echo "$sm" | wc -w) $(echo "$sm" | tr ' ' '\n' | sort -u | wc -l) $(q coord "SELECT count(*) || ' ' || count(DISTINCT queue) FROM schedq.task WHERE queue LIKE 'sm%'")" \
	"10 9 9 9"
ok "  in the shards of both workers" \
	"$(for i in 1 2 3 4 5 6 7 8 9; do qnode "sm$i"; done | sort -u | tr '\n' ' ')" "w1 w2 "
# Calls that could not keep their promise on a cluster are refused, with
# 0A000 and before they change anything.
ok "schedq.await_task is refused on the cluster (0A000, by schedq): wait with claim_queue" \
	"$(sqlstate coord "CALL schedq.await_task(queues => '{q1}', wait => '10 ms')") $(sqlstate w1 "CALL schedq.await_task(wait => '10 ms')") $(cpsql coord -c "CALL schedq.await_task(wait => '10 ms')" 2>&1 | grep -c 'await_task is not supported on a distributed schedq')" \
	"0A000 0A000 1"

# Budgets: set through the coordinator into the reference table
# schedq.budget; every claim on the cluster, wherever it runs, charges it
# there (a change of a reference table: two phases on every node).
# budget_used NAME: what each node's copy of budget NAME has used.
budget_used()
{
	echo "$(q coord "SELECT used FROM schedq.budget WHERE name = '$1'") $(q w1 "SELECT used FROM schedq.budget WHERE name = '$1'") $(q w2 "SELECT used FROM schedq.budget WHERE name = '$1'")"
}
ok "schedq.set_budget on the cluster: the budget on every node" \
	"$(cpsql coord -c "SELECT schedq.set_budget('bc', 60)" 2>&1 | grep -c ERROR) $(budget_used bc)" "0 0 0 0"
q coord "SELECT count(schedq.submit('b', queue => 'bq' || (g % 8 + 1), budgets => '{bc}')) FROM generate_series(1, 200) g" >/dev/null
printf '%s\n' '\set q random(1, 8)' "SELECT count(*) FROM schedq.claim_queue('bq' || :q, 'w', n => 2);" >"$WORK/budget_claim_queue.sql"
printf '%s\n' '\set q random(1, 8)' "SELECT count(*) FROM schedq.claim('w', queues => ARRAY['bq' || :q]);" >"$WORK/budget_claim.sql"
pgb -p "$CITUS_PORT" -c 16 -j 2 -T 4 -f "$WORK/budget_claim_queue.sql" -f "$WORK/budget_claim.sql" >"$WORK/budget.log" 2>&1
echo "#   budgeted claims: $(sed -n 's/^number of transactions actually processed: //p' "$WORK/budget.log") calls, $(grep -c 'aborted in command' "$WORK/budget.log") clients stopped by an error"
ok "16 clients claim (claim_queue on the queues' nodes, claim through the coordinator) tasks of a budget of 60 over 8 queues: 60 claimed, none over, no error" \
	"$(q coord "SELECT count(*) FROM schedq.task WHERE queue LIKE 'bq%' AND status = 'running'") $(grep -c 'aborted in command' "$WORK/budget.log")" "60 0"
ok "  the budget used 60 on every node" "$(budget_used bc)" "60 60 60"
# A task whose budget has no room holds back none behind it in its queue,
# and a task of two budgets is charged to both or neither.
q coord "SELECT schedq.set_budget('bd', 100)" >/dev/null
q coord "SELECT schedq.submit('full', queue => 'bh', budgets => '{bc}'), schedq.submit('both', queue => 'bh', budgets => '{bd,bc,bd}')" >/dev/null
q coord "SELECT schedq.submit('free', queue => 'bh'), schedq.submit('one', queue => 'bh', budgets => '{bd,bd}', cost => 3)" >/dev/null
ok "claim_queue and claim pass over tasks without budget room to the next ones; a task charges each budget once, both or neither" \
	"$(q coord "SELECT string_agg(t.kind, ',') FROM schedq.claim_queue('bh', 'w') c JOIN schedq.task t ON t.id = c.id") $(q coord "SELECT string_agg(t.kind, ',') FROM schedq.claim('w', queues => '{bh}', n => 3) c JOIN schedq.task t ON t.id = c.id") $(budget_used bd) $(budget_used bc)" \
	"free one 3 3 3 60 60 60"
# A waiting claim that took nothing holds no lock while it waits: its
# queue's task names a budget that was deleted since (refused after the
# budgets were locked), yet set_budget and another queue's budgeted claim
# go on meanwhile.
q coord "SELECT schedq.set_budget('bgone', 5)" >/dev/null
q coord "SELECT schedq.submit('gone', queue => 'bw', budgets => '{bgone}'), schedq.submit('other', queue => 'bw2', budgets => '{bd}')" >/dev/null
q coord "DELETE FROM schedq.budget WHERE name = 'bgone'" >/dev/null
q coord "SELECT count(*) FROM schedq.claim_queue('bw', 'w', wait => '8 s')" >"$WORK/bw.out" 2>&1 &
bw=$!
until_eq 10 1 waiters "$(qnode bw)" bw >/dev/null
ok "while a claim_queue waits, having refused a task whose budget is gone, set_budget and a budgeted claim of another queue are not held back" \
	"$(cpsql coord -At -c "SET statement_timeout = '3s'" -c "SELECT schedq.set_budget('bx', 1)" 2>&1 | grep -c ERROR) $(cpsql coord -At -c "SET statement_timeout = '3s'" -c "SELECT count(*) FROM schedq.claim_queue('bw2', 'w')" 2>&1)" "0 1"
wait $bw
ok "  and the waiting claim ends taking nothing" "$(cat "$WORK/bw.out")" 0
q coord "SELECT schedq.submit('behind', queue => 'bw')" >/dev/null
ok "  a task behind it in its queue is claimed, one claim at a time" \
	"$(q coord "SELECT string_agg(t.kind, ',') FROM schedq.claim_queue('bw', 'w') c JOIN schedq.task t ON t.id = c.id")" behind
# A waiter woken for a task it cannot take (its budget is full) asks
# whether the task is still there for another waiter -- a read of its
# queue's shard -- and goes on waiting: claim_queue and await_queue.
q coord "SELECT schedq.set_budget('bf', 1)" >/dev/null
q coord "SELECT schedq.submit('f1', queue => 'bf', budgets => '{bf}')" >/dev/null
q coord "SELECT count(*) FROM schedq.claim_queue('bf', 'w')" >/dev/null
bf_node=$(qnode bf)
bf_wakeups=$(wakeups "$bf_node")
q coord "SELECT count(*) FROM schedq.claim_queue('bf', 'w', wait => '3 s')" >"$WORK/bf.out" 2>&1 &
bf=$!
cpsql coord -At -c "CALL schedq.await_queue('bf', wait => '3 s')" >"$WORK/bf_await.out" 2>&1 &
bf_await=$!
until_eq 10 1 waiters "$bf_node" bf >/dev/null
until_eq 10 1 q "$bf_node" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SchedqAwait'" >/dev/null
q coord "SELECT schedq.submit('f2', queue => 'bf', budgets => '{bf}')" >/dev/null
wait $bf $bf_await
ok "a claim_queue and an await_queue woken for a task whose budget is full go on waiting, and end without it or an error" \
	"$(cat "$WORK/bf.out") $(cat "$WORK/bf_await.out") $(($(wakeups "$bf_node") > bf_wakeups))" "0 f 1"
# A budget with a period starts empty again at each boundary.
q coord "SELECT schedq.set_budget('bp', 1, '1 second')" >/dev/null
q coord "SELECT count(schedq.submit('p', queue => 'bpq', budgets => '{bp}')) FROM generate_series(1, 3)" >/dev/null
ok "a budget of 1 a second: one claim now, the next once the second has passed" \
	"$(q coord "SELECT count(*) FROM schedq.claim_queue('bpq', 'w', n => 3)") $(until_eq 5 1 q coord "SELECT count(*) FROM schedq.claim_queue('bpq', 'w', n => 3)")" "1 1"
# SQL tasks: the executors of the task's node charge its budget.
q coord "SELECT schedq.set_budget('bs', 1)" >/dev/null
q coord "SELECT schedq.submit_sql('SELECT 1', queue => 'bsq', budgets => '{bs}'), schedq.submit_sql('SELECT 2', queue => 'bsq', budgets => '{bs}')" >/dev/null
ok "SQL tasks of a budget of 1: the executors run one" \
	"$(until_eq 30 "available done" q coord "SELECT string_agg(status, ' ' ORDER BY status) FROM schedq.task WHERE queue = 'bsq'") $(budget_used bs)" "available done 1 1 1"
q coord "SELECT schedq.set_budget('bs', 2)" >/dev/null
ok "  and the other once the budget is raised" \
	"$(until_eq 30 "done done" q coord "SELECT string_agg(status, ' ' ORDER BY status) FROM schedq.task WHERE queue = 'bsq'") $(budget_used bs)" "done done 2 2 2"
# With every budget deleted, a task naming one is still admitted, and
# waits (a budget another node has and this one not yet is never skipped);
# tasks without budgets go on.
q coord "DELETE FROM schedq.budget" >/dev/null
q coord "SELECT schedq.submit('u', queue => 'bq3')" >/dev/null
ok "with the budgets gone, tasks without budgets are claimed, behind those naming a budget, which wait for it; a waiting look does not find them" \
	"$(q coord "SELECT string_agg(t.kind, ',') FROM schedq.claim('w', queues => '{bq3}') c JOIN schedq.task t ON t.id = c.id") $(q coord "SELECT count(*) FROM schedq.claim('w', queues => '{bq1}')") $(q coord "SELECT count(*) FROM schedq.claim_queue('bq2', 'w')") $(q coord "CALL schedq.await_queue('bq1', wait => '1 s')")" "u 0 0 f"
q coord "SELECT schedq.set_budget('bc', 1000)" >/dev/null
ok "  until it exists again" "$(q coord "SELECT count(*) FROM schedq.claim_queue('bq2', 'w')") $(budget_used bc)" "1 1 1 1"
q coord "DELETE FROM schedq.budget" >/dev/null

# 4. schedq's own scheduler on every node: promotion and the reaper over
# the shards placed on the node (the coordinator holds none).
sched=0
start=$SECONDS
while [ $((SECONDS - start)) -lt 60 ]; do
	sched=0
	for node in $CITUS_NODES; do
		grep -q "schedq.task is distributed by Citus; in database \"schedq\" the scheduler promotes and reaps the tasks of the shards placed on this node" \
			"$CITUS_DIR/$node.log" &&
			[ "$(q "$node" "SELECT state <> 'disabled' FROM schedq.scheduler_status() WHERE datname = 'schedq'")" = t ] &&
			sched=$((sched + 1))
	done
	[ "$sched" = 3 ] && break
	sleep 0.2
done
ok "schedq's scheduler runs on every node over its shards (logged; not disabled)" "$sched" 3

# 4a. The reaper: the tasks whose complete the restart cut off, and five
# claims whose workers never come back, their leases past: each worker's
# reaper takes back those of its shards, each once.
for i in 1 2 3 4 5; do
	q coord "SELECT count(*) FROM schedq.claim('gone', queues => '{q$i}')" >/dev/null
done
# (their leases first put out of reach, to count from here)
q coord "UPDATE schedq.task SET lease_expires_at = now() + interval '1 hour' WHERE status = 'running'" >/dev/null
running=$(q coord "SELECT string_agg(id::text, ',') FROM schedq.task WHERE status = 'running'")
left=$(q coord "SELECT count(*) FROM schedq.task WHERE id IN ($running)")
expirations()
{
	echo $(($(q w1 "SELECT value FROM schedq.metrics() WHERE name = 'lease_expirations'") +
		$(q w2 "SELECT value FROM schedq.metrics() WHERE name = 'lease_expirations'")))
}
lease0=$(expirations)
q coord "UPDATE schedq.task SET lease_expires_at = now() - interval '1 second' WHERE id IN ($running)" >/dev/null
ok "the reapers of the workers take back the $left tasks left running" \
	"$(until_eq 30 0 q coord "SELECT count(*) FROM schedq.task WHERE id IN ($running) AND status = 'running'")" 0
ok "  each once (lease_expirations on the two workers)" "$(($(expirations) - lease0))" "$left"
ok "  and available again (a retry, promoted by the node's scheduler)" \
	"$(until_eq 30 "$left" q coord "SELECT count(*) FROM schedq.task WHERE id IN ($running) AND last_error = 'lease expired' AND status = 'available'")" "$left"
q coord "SELECT schedq.submit('f', queue => 'fq3')" >/dev/null
ok "schedq.fail with a back-off of 1 s: pending, then available (promoted by the node's scheduler)" \
	"$(q coord "SELECT schedq.fail(token, 'b', retry_in => '1 second') FROM schedq.claim('w', queues => '{fq3}')") $(until_eq 10 available q coord "SELECT status FROM schedq.task WHERE queue = 'fq3'")" \
	"pending available"
q coord "SELECT schedq.submit('d', queue => 'q3', run_at => now() + interval '1 second')" >/dev/null
ok "a task due in 1 s becomes available when due" \
	"$(until_eq 10 available q coord "SELECT status FROM schedq.task WHERE kind = 'd'")" available

# 4b. Gated tasks: 800 tasks in queues g1..g8, lock keys k0..k9 with
# versions and concurrency keys c0 (no limit) and c1 (limit 3) in each
# queue, all pending, promoted by the schedulers of the workers while 16
# clients claim and complete through the coordinator, until all are done
# (deadline 120 s).
q coord "INSERT INTO schedq.concurrency_limit (key, max_active) VALUES ('c1', 3)" >/dev/null
q coord "SELECT count(schedq.submit('g', queue => 'g' || (g % 8 + 1), lock_key => 'k' || (g % 10),
	version => g / 80, concurrency_key => 'c' || (g % 2), run_at => now() + interval '2 seconds'))
	FROM generate_series(0, 799) g" >/dev/null
ok "800 gated tasks wait for promotion" \
	"$(q coord "SELECT count(*) FROM schedq.task WHERE queue LIKE 'g_' AND status = 'pending'")" 800
pgb -p "$CITUS_PORT" -c 16 -j 2 -T 150 -f "$HERE/claim_gated.sql" >"$WORK/gated.log" 2>&1 &
drain=$!
start=$SECONDS
done_n=$(until_eq 120 800 q coord "SELECT count(*) FROM schedq.task WHERE queue LIKE 'g_' AND status = 'done'")
kill "$drain" 2>/dev/null
wait "$drain" 2>/dev/null
echo "#   gated drain: $done_n of 800 done in $((SECONDS - start)) s"
ok "every gated task done" "$done_n" 800
ok "no gated task claimed twice" \
	"$(q coord "SELECT count(*) FROM schedq.task WHERE queue LIKE 'g_' AND attempts > 1")" 0
# Order and limits from the tasks' own times: a task is claimed only after
# the complete of the one before it in its key committed, so its
# started_at comes after that one's finished_at (all clocks are this
# machine's); and it counts against its concurrency key at least from its
# started_at to its finished_at.
ok "each (queue, lock_key) ran one task at a time, in key order" \
	"$(q coord "SELECT count(*) FROM (SELECT started_at, lag(finished_at) OVER w AS prev_finished
	  FROM schedq.task WHERE queue LIKE 'g_' WINDOW w AS (PARTITION BY queue, lock_key ORDER BY version, id)) x
	 WHERE started_at < prev_finished")" 0
# A concurrency limit counts per shard: at no task's start were more than 3
# tasks of c1 of its shard claimed and unfinished.
most=$(q coord "WITH c AS MATERIALIZED (SELECT get_shard_id_for_distribution_column('schedq.task', queue) AS shard, started_at, finished_at
	                          FROM schedq.task WHERE queue LIKE 'g_' AND concurrency_key = 'c1')
	SELECT max(n) FROM (SELECT (SELECT count(*) FROM c o WHERE o.shard = c.shard
	                              AND o.started_at <= c.started_at AND o.finished_at > c.started_at) AS n FROM c) x")
ok "at most 3 tasks of c1 ran at once in a shard (most: $most)" "$([ "${most:-0}" -le 3 ] && [ "${most:-0}" -ge 1 ] && echo yes)" yes

# 4b'. A limit raised through the coordinator reaches the workers: three
# tasks of key z0 wait on a limit of 0, parked in their shard; with the
# limit raised to 2, that node's scheduler unparks and promotes two (its
# gate event was written on the coordinator, which holds no shard).
q coord "SELECT schedq.set_concurrency_limit('z0', 0)" >/dev/null
q coord "SELECT count(schedq.submit('z', queue => 'zq', concurrency_key => 'z0')) FROM generate_series(1, 3)" >/dev/null
ok "three tasks of a key limited to 0 are parked" \
	"$(until_eq 20 3 q coord "SELECT count(*) FROM schedq.task WHERE queue = 'zq' AND status = 'pending' AND parked")" 3
q coord "SELECT schedq.set_concurrency_limit('z0', 2)" >/dev/null
ok "  raised to 2 through the coordinator: two become available" \
	"$(until_eq 20 2 q coord "SELECT count(*) FROM schedq.task WHERE queue = 'zq' AND status = 'available'")" 2

# 4c. A shard move under load: the shard of queue mq (50 tasks due in an
# hour, 50 gated by one lock key, 50 available) moves from its worker to
# the other while 8 clients claim and complete in mq and q1..q8; then the
# 50 are made due.  Nothing is lost or done twice; the other worker's
# scheduler promotes the queue's tasks after the move.
q coord "SELECT count(schedq.submit('m', queue => 'mq', run_at => now() + interval '1 hour')) FROM generate_series(1, 50)" >/dev/null
q coord "SELECT count(schedq.submit('m', queue => 'mq', lock_key => 'mk', version => v)) FROM generate_series(1, 50) v" >/dev/null
q coord "SELECT count(schedq.submit('m', queue => 'mq')) FROM generate_series(1, 50)" >/dev/null
mfrom=$(qnode mq)
mto=w1
[ "$mfrom" = w1 ] && mto=w2
mshard=$(q coord "SELECT get_shard_id_for_distribution_column('schedq.task', 'mq')")
promoted()
{
	q "$1" "SELECT value FROM schedq.metrics() WHERE name = 'tasks_promoted'"
}
pgb -p "$CITUS_PORT" -c 8 -j 2 -T 150 -f "$HERE/claim_moved.sql" >"$WORK/moved.log" 2>&1 &
load=$!
sleep 1
cpsql coord -c "SELECT citus_move_shard_placement($mshard, '$CITUS_DIR', $(node_port "$mfrom"), '$CITUS_DIR', $(node_port "$mto"), shard_transfer_mode => 'block_writes')" >"$WORK/move.log" 2>&1
ok "the shard of mq moves from $mfrom to $mto under load" "$?:$(qnode mq)" "0:$mto"
ok "  $mfrom's scheduler frees its kept plans of the shard that moved away" \
	"$(until_eq 20 t eval "grep -q 'freed [0-9]* kept plans of shards of schedq.task no longer placed on this node' '$CITUS_DIR/$mfrom.log' && echo t")" t
p0=$(promoted "$mto")
q coord "UPDATE schedq.task SET run_at = now() WHERE queue = 'mq' AND status = 'pending' AND lock_key IS NULL" >/dev/null
ok "the 150 tasks of mq are done, after the move, each once" \
	"$(until_eq 90 150 q coord "SELECT count(*) FROM schedq.task WHERE queue = 'mq' AND status = 'done' AND attempts = 1")" 150
kill "$load" 2>/dev/null
wait "$load" 2>/dev/null
ok "  none lost, none doubled (150 tasks of mq, ids distinct)" \
	"$(q coord "SELECT count(*) || ' ' || count(DISTINCT id) FROM schedq.task WHERE queue = 'mq'")" "150 150"
ok "  the 50 made due after the move were promoted by $mto's scheduler" \
	"$(q coord "SELECT $(promoted "$mto") - $p0 >= 50")" t
ok "  the lock key mk ran in version order, one at a time" \
	"$(q coord "SELECT count(*) FROM (SELECT started_at, lag(finished_at) OVER (ORDER BY version) AS p FROM schedq.task WHERE queue = 'mq' AND lock_key = 'mk') x WHERE started_at < p")" 0
ok "  no scheduler pass failed on any node since distribute" \
	"$(cat "$CITUS_DIR"/coord.log "$CITUS_DIR"/w1.log "$CITUS_DIR"/w2.log |
		awk -v t="$dist_at" '$1 " " $2 >= t && /schedq scheduler: .* failed/' | wc -l)" 0

# 4d. A task's owner survives a shard move: the task of schedq_app (whose
# OID differs on every node) names schedq_app on the node its shard moved
# to (distribute() turns Citus's binary copies off, which would carry
# the source node's OID).
ofrom=$(qnode dq4)
oto=w1
[ "$ofrom" = w1 ] && oto=w2
ok "citus.enable_binary_protocol is off in the database on every node" \
	"$(for n in $CITUS_NODES; do q "$n" "SHOW citus.enable_binary_protocol"; done | sort -u)" off
cpsql coord -c "SELECT citus_move_shard_placement(get_shard_id_for_distribution_column('schedq.task', 'dq4'), '$CITUS_DIR', $(node_port "$ofrom"), '$CITUS_DIR', $(node_port "$oto"), shard_transfer_mode => 'block_writes')" >>"$WORK/move.log" 2>&1
ok "the shard of dq4 moves from $ofrom to $oto" "$?:$(qnode dq4)" "0:$oto"
ok "  its task's owner is still schedq_app, by $oto's OID for it" \
	"$(q coord "SELECT owner::text FROM schedq.task WHERE queue = 'dq4'") $(q coord "SELECT owner::oid FROM schedq.task WHERE queue = 'dq4'") " \
	"schedq_app $(q "$oto" "SELECT oid FROM pg_roles WHERE rolname = 'schedq_app'") "

# Periodic tasks: the coordinator's scheduler fires each tick once for
# the cluster, into the shard of the schedule's queue; the workers'
# schedulers fire none.  A schedule of schedq_app (whose OID differs on
# every node), every second, whose task nobody claims at first: later
# ticks are skipped, not overlapped.
q coord "GRANT EXECUTE ON FUNCTION schedq.schedule, schedq.run_schedule_now, schedq.unschedule TO schedq_app" >/dev/null
ok "schedq.schedule on the cluster, by schedq_app" \
	"$(cpsql coord -At -U schedq_app -c "SELECT schedq.schedule('tick', '* * * * * *', 'tick', queue => 'pt')" 2>&1)" tick
ok "  the schedule is schedq_app's on every node (by each node's OID for it)" \
	"$(for n in $CITUS_NODES; do q "$n" "SELECT owner::text FROM schedq.periodic WHERE name = 'tick'"; done | sort -u)" schedq_app
ok "  its first tick fires: one task, in the queue's shard, schedq_app's, the id the schedule drew" \
	"$(until_eq 30 1 q coord "SELECT count(*) FROM schedq.task WHERE periodic = 'tick'") $(q "$(qnode pt)" "SELECT count(*) FROM schedq.task_$(q coord "SELECT get_shard_id_for_distribution_column('schedq.task', 'pt')") WHERE periodic = 'tick'") $(q coord "SELECT owner::text || ' ' || status || ' ' || (id = (SELECT last_task_id FROM schedq.periodic WHERE name = 'tick')) FROM schedq.task WHERE periodic = 'tick'")" \
	"1 1 schedq_app available true"
ok "  while that task is live the next ticks are skipped: still one task" \
	"$(until_eq 30 t q coord "SELECT skipped >= 2 FROM schedq.periodic WHERE name = 'tick'") $(q coord "SELECT count(*) FROM schedq.task WHERE periodic = 'tick'") $(q coord "SELECT fired FROM schedq.periodic WHERE name = 'tick'")" \
	"t 1 1"
tok=$(q coord "SELECT token FROM schedq.claim('w', queues => '{pt}')")
q coord "SELECT schedq.complete('$tok')" >/dev/null
ok "  once it is done the next tick fires; every task a tick of its own (fired = tasks)" \
	"$(until_eq 30 2 q coord "SELECT count(*) FROM schedq.task WHERE periodic = 'tick'") $(q coord "SELECT fired = 2 FROM schedq.periodic WHERE name = 'tick'") $(q coord "SELECT count(DISTINCT id) FROM schedq.task WHERE periodic = 'tick'")" \
	"2 t 2"
ok "  schedq.unschedule by schedq_app; its tasks stay" \
	"$(cpsql coord -At -U schedq_app -c "SELECT schedq.unschedule('tick')" 2>&1) $(q w1 "SELECT count(*) FROM schedq.periodic WHERE name = 'tick'") $(q coord "SELECT count(*) >= 2 FROM schedq.task WHERE periodic = 'tick'")" \
	"t 0 t"
# run_schedule_now: a yearly schedule's tick now, with the id it returned;
# refused (55006) while that task is live.
q coord "SELECT schedq.schedule('yearly', '0 0 1 1 *', 'y', queue => 'py')" >/dev/null
now_id=$(q coord "SELECT schedq.run_schedule_now('yearly')")
ok "schedq.run_schedule_now on the cluster: its tick fires now, as the task it returned" \
	"$(until_eq 30 1 q coord "SELECT count(*) FROM schedq.task WHERE periodic = 'yearly'") $(q coord "SELECT id FROM schedq.task WHERE periodic = 'yearly'")" \
	"1 $now_id"
ok "  run_schedule_now again while that task is live: 55006" \
	"$(sqlstate coord "SELECT schedq.run_schedule_now('yearly')")" 55006
# A gated schedule: its tick's task is pending on its node, which that
# node's scheduler promotes.
q coord "SELECT schedq.schedule('gated', '* * * * * *', 'g', queue => 'pg', lock_key => 'pk')" >/dev/null
ok "a gated schedule's task is promoted by the scheduler of its queue's node" \
	"$(until_eq 30 available q coord "SELECT min(status) FROM schedq.task WHERE periodic = 'gated'")" available
q coord "SELECT schedq.unschedule('gated')" >/dev/null
# Schedules put into the reference table by hand fire as well.
q coord "INSERT INTO schedq.periodic (name, schedule, kind, queue, owner, next_run)
	SELECT 'p' || i, '0 0 1 1 *', 'tick', 'q' || i, 'postgres', now() - interval '1 second'
	  FROM generate_series(1, 3) i" >/dev/null
ok "schedules inserted due by hand fire once each" \
	"$(until_eq 30 3 q coord "SELECT count(*) FROM schedq.task WHERE periodic IN ('p1', 'p2', 'p3')") $(q coord "SELECT count(*) FROM schedq.periodic WHERE name IN ('p1', 'p2', 'p3') AND fired = 1 AND last_error IS NULL AND next_run > now()")" \
	"3 3"
ok "schedq.set_schedule_enabled and unschedule work on the cluster" \
	"$(q coord "SELECT schedq.set_schedule_enabled('p2', false)") $(q coord "SELECT schedq.unschedule('p1')") $(q w2 "SELECT string_agg(name || ':' || enabled, ',' ORDER BY name) FROM schedq.periodic WHERE name LIKE 'p_'")" \
	"t t p2:false,p3:true"
ok "  no periodic pass failed, and no tick failed to fire, on any node since distribute" \
	"$(cat "$CITUS_DIR"/*.log 2>/dev/null |
		awk -v t="$dist_at" '$1 " " $2 >= t && /the periodic pass failed|could not fire/' | wc -l)" 0
# A role whose name reads as an OID ("10" is the bootstrap superuser's):
# its schedule and its ticks' tasks are its own, by name, on every node.
q coord "CREATE ROLE \"10\" LOGIN; GRANT USAGE ON SCHEMA schedq TO \"10\";
	GRANT EXECUTE ON FUNCTION schedq.schedule, schedq.submit TO \"10\"" >/dev/null
cpsql coord -At -U 10 -c "SELECT schedq.schedule('ten', '0 0 1 1 *', 't', queue => 'pten')" >/dev/null 2>&1
q coord "SELECT schedq.run_schedule_now('ten')" >/dev/null
ok "a schedule of the role \"10\" is that role's on every node, and so is its tick's task" \
	"$(for n in $CITUS_NODES; do q "$n" "SELECT owner::text FROM schedq.periodic WHERE name = 'ten'"; done | sort -u) $(until_eq 30 1 q coord "SELECT count(*) FROM schedq.task WHERE periodic = 'ten'") $(q "$(qnode pten)" "SELECT owner::text FROM schedq.task_$(q coord "SELECT get_shard_id_for_distribution_column('schedq.task', 'pten')") WHERE periodic = 'ten'")" \
	'"10" 1 "10"'
# A schedule whose owner was dropped: its tick fails with a clear error,
# recorded on the schedule, and fires no task (no OID travels in place of
# a name).
q coord "CREATE ROLE gone LOGIN; GRANT USAGE ON SCHEMA schedq TO gone;
	GRANT EXECUTE ON FUNCTION schedq.schedule, schedq.submit TO gone" >/dev/null
cpsql coord -At -U gone -c "SELECT schedq.schedule('orphan', '0 0 1 1 *', 'o', queue => 'po')" >/dev/null 2>&1
q coord "DROP OWNED BY gone; DROP ROLE gone" >/dev/null
q coord "SELECT schedq.run_schedule_now('orphan')" >/dev/null
ok "a schedule whose owner was dropped records the error at its tick and fires nothing" \
	"$(until_eq 30 t q coord "SELECT last_error LIKE 'the owner of periodic task \"orphan\" no longer exists%' FROM schedq.periodic WHERE name = 'orphan'") $(q coord "SELECT count(*) FROM schedq.task WHERE periodic = 'orphan'")" \
	"t 0"
q coord "SELECT schedq.unschedule('orphan')" >/dev/null
# A transaction left open after changing a schedule holds every tick back
# (Citus serializes the writes of a reference table), but not the
# coordinator's scheduler: its pass gives up after its lock_timeout, also
# where the lock is waited for on a worker, and the ticks fire once the
# transaction ends.
q coord "SELECT schedq.schedule('held', '* * * * * *', 'h', queue => 'ph')" >/dev/null
until_eq 30 t q coord "SELECT fired >= 1 FROM schedq.periodic WHERE name = 'held'" >/dev/null
cpsql coord -c "BEGIN" -c "SELECT schedq.set_schedule_enabled('p3', false)" -c "SELECT pg_sleep(6)" -c "COMMIT" >/dev/null 2>&1 &
holder=$!
until_eq 10 1 q coord "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(6)'" >/dev/null
held_at=$(q coord "SELECT clock_timestamp()")
ok "  while it is open the coordinator's scheduler goes on: its periodic pass times out" \
	"$(until_eq 10 t q coord "SELECT last_tick > '$held_at'::timestamptz + interval '1.5 s' AND EXISTS (SELECT FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(6)') FROM schedq.scheduler_status() WHERE datname = 'schedq'") $(until_eq 10 t eval "[ \$(grep -c 'the periodic pass failed: canceling statement due to lock timeout' '$CITUS_DIR/coord.log') -gt 0 ] && echo t")" \
	"t t"
wait "$holder"
skipped=$(q coord "SELECT skipped FROM schedq.periodic WHERE name = 'held'")
ok "  once it ends, the ticks go on" \
	"$(until_eq 30 t q coord "SELECT skipped > $skipped FROM schedq.periodic WHERE name = 'held'")" t
q coord "SELECT schedq.unschedule('held')" >/dev/null

# Two schedule calls creating one new name at once: the second waits for
# the first's transaction, then fails with 23505 and changes nothing
# (while the first is open, the periodic pass times out, as above).
session_open coord
session_q "BEGIN" >/dev/null
session_q "SELECT schedq.schedule('twice', '0 0 1 1 *', 'first', queue => 'p2x')" >/dev/null
sqlstate coord "SELECT schedq.schedule('twice', '0 0 1 1 *', 'second', queue => 'p2x')" >"$WORK/twice.out" &
second=$!
# (it waits on a lock on the node of the first placement it writes)
locked()
{
	for n in $CITUS_NODES; do q "$n" "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"; done |
		awk '{ s += $1 } END { print (s > 0) ? "yes" : "no" }'
}
until_eq 10 yes locked >/dev/null
session_q "COMMIT" >/dev/null
wait "$second"
ok "two schedule calls creating one name at once: the second fails with 23505, the first's schedule stands" \
	"$(cat "$WORK/twice.out") $(q w1 "SELECT kind FROM schedq.periodic WHERE name = 'twice'")" "23505 first"
session_close
q coord "SELECT schedq.unschedule('twice')" >/dev/null

# 4e. SQL tasks: the SQL executors of each node run the SQL tasks of the
# shards placed there, as their owner (by that node's OID for the role),
# once each; submit_sql runs on the queue's node, and one routed from a
# transaction block is found by that node's scheduler; schedule_sql and
# schedq_cron's cron.schedule fire them from the coordinator.
q coord "CREATE TABLE public.sq_log (who text, tag text); SELECT create_reference_table('public.sq_log');
	GRANT SELECT, INSERT ON public.sq_log TO schedq_app;
	GRANT EXECUTE ON FUNCTION schedq.submit_sql, schedq.schedule_sql TO schedq_app" >/dev/null
sq1='' sq2=''
for i in $(seq 1 40); do
	case "$(qnode "sq$i")" in
	w1) [ -z "$sq1" ] && sq1=sq$i ;;
	w2) [ -z "$sq2" ] && sq2=sq$i ;;
	esac
done
for sq in $sq1 $sq2; do
	cpsql coord -At -U schedq_app -c "SELECT schedq.submit_sql('INSERT INTO public.sq_log SELECT current_user, ''$sq''', queue => '$sq')" >/dev/null
done
ok "schedq.submit_sql by schedq_app into a queue of each worker: each task done" \
	"$(until_eq 30 "done done" q coord "SELECT string_agg(status::text, ' ') FROM schedq.task WHERE queue IN ('$sq1', '$sq2') AND kind = 'sql'")" "done done"
ok "  once each, as schedq_app, with the rows its command changed" \
	"$(q coord "SELECT string_agg(who || ':' || tag, ' ' ORDER BY tag = '$sq1' DESC) FROM public.sq_log") $(q coord "SELECT string_agg(DISTINCT result::text, ' ') FROM schedq.task WHERE queue IN ('$sq1', '$sq2') AND kind = 'sql'")" \
	"schedq_app:$sq1 schedq_app:$sq2 {\"rows\": 1}"
for sq in $sq1 $sq2; do
	n=$(qnode "$sq")
	pid=$(q coord "SELECT split_part(claimed_by, ' ', 4) FROM schedq.task WHERE queue = '$sq' AND kind = 'sql'")
	ok "  the task of $sq ran in an SQL executor of $n, the node of its shard" \
		"$(q "$n" "SELECT count(*) FROM pg_stat_activity WHERE pid = ${pid:-0} AND application_name = 'schedq sql executor'")" 1
done
cpsql coord -At -U schedq_app -c "BEGIN" -c "SELECT schedq.submit_sql('INSERT INTO public.sq_log SELECT current_user, ''routed''', queue => '$sq1')" -c "COMMIT" >/dev/null
q coord "SELECT schedq.submit_sql('SELECT 1/0', queue => '$sq2', max_attempts => 1)" >/dev/null
ok "a submit_sql routed from a transaction block runs too; a failing command fails its task with the error" \
	"$(until_eq 30 1 q coord "SELECT count(*) FROM public.sq_log WHERE tag = 'routed'") $(until_eq 30 "failed division by zero" q coord "SELECT status || ' ' || last_error FROM schedq.task WHERE queue = '$sq2' AND payload->>'command' = 'SELECT 1/0'")" \
	"1 failed division by zero"
# Cancel through the coordinator: the executor runs on another node and
# is not interrupted; its command's work rolls back with the complete that
# finds the task canceled.
id=$(q coord "SELECT schedq.submit_sql('INSERT INTO public.sq_log VALUES (''x'', ''canceled''); SELECT pg_sleep(2)', queue => '$sq1')")
until_eq 30 running q coord "SELECT status FROM schedq.task WHERE id = $id" >/dev/null
ok "a running SQL task canceled through the coordinator: canceled, and its command's work rolled back" \
	"$(q coord "SELECT schedq.cancel($id)") $(until_eq 30 0 q w1 "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(2)%' AND application_name = 'schedq sql executor'") $(q coord "SELECT status FROM schedq.task WHERE id = $id") $(q coord "SELECT count(*) FROM public.sq_log WHERE tag = 'canceled'")" \
	"t 0 canceled 0"
cpsql coord -At -U schedq_app -c "SELECT schedq.schedule_sql('sqtick', '* * * * * *', 'INSERT INTO public.sq_log SELECT current_user, ''tick''')" >/dev/null
ok "schedq.schedule_sql by schedq_app: its ticks run, as schedq_app" \
	"$(until_eq 30 t q coord "SELECT count(*) >= 2 FROM public.sq_log WHERE tag = 'tick'") $(q coord "SELECT string_agg(DISTINCT who, ' ') FROM public.sq_log WHERE tag = 'tick'")" \
	"t schedq_app"
q coord "SELECT schedq.unschedule('sqtick')" >/dev/null
q coord "CREATE EXTENSION schedq_cron" >/dev/null
q coord "SELECT cron.schedule('cj', '1 second', 'INSERT INTO public.sq_log VALUES (''cron'', ''cron'')')" >/dev/null
ok "schedq_cron's cron.schedule on the cluster: its job runs, and cron.job_run_details says so" \
	"$(until_eq 30 t q coord "SELECT count(*) >= 2 FROM public.sq_log WHERE tag = 'cron'") $(until_eq 30 t q coord "SELECT count(*) >= 2 FROM cron.job_run_details WHERE status = 'succeeded'")" \
	"t t"
q coord "SELECT cron.unschedule('cj')" >/dev/null
ok "  no SQL executor failed on any node" \
	"$(cat "$CITUS_DIR"/*.log 2>/dev/null | grep -c 'background worker "schedq sql executor" (PID [0-9]*) exited with exit code 1')" 0

# 5. Figures: the cluster against one server, same machine, same run.
as_user "$CITUS_BINDIR/initdb" -D "$WORK/single" -A trust -U postgres --no-sync >"$WORK/initdb-single.log" 2>&1
cat >>"$WORK/single/postgresql.conf" <<EOF
port = $SINGLE_PORT
listen_addresses = ''
unix_socket_directories = '$CITUS_DIR'
shared_preload_libraries = 'schedq'
max_connections = 120
shared_buffers = 64MB
schedq.sql_workers = 0
EOF
as_user "$CITUS_BINDIR/pg_ctl" -D "$WORK/single" -l "$WORK/single.log" -w start >/dev/null
as_user "$CITUS_BINDIR/createdb" -h "$CITUS_DIR" -p "$SINGLE_PORT" schedq
as_user "$CITUS_BINDIR/psql" -X -q -h "$CITUS_DIR" -p "$SINGLE_PORT" -d schedq -c 'CREATE EXTENSION schedq'

# preload NODE_PORT N [BUDGETS]: N tasks over the 8 queues, inserted as
# submit would insert ungated tasks (one statement: submit one by one is
# slow on Citus), charging BUDGETS (a text[] literal, default none).
preload()
{
	as_user "$CITUS_BINDIR/psql" -X -q -At -h "$CITUS_DIR" -p "$1" -d schedq \
		-c "INSERT INTO schedq.task (kind, queue, status, owner, budgets)
		    SELECT 'k', 'q' || (g % 8 + 1), 'available', 'postgres', '${3:-{\}}' FROM generate_series(1, $2) g" >/dev/null
}
figure()
{
	local port=$1 clients=$2 script=$3
	preload "$port" $((clients * SECONDS_RUN * 100 + 4000)) "${4:-}"
	pgb -p "$port" -c "$clients" -j $((clients < 2 ? 1 : 2)) -T "$SECONDS_RUN" -f "$script" 2>&1 | tps
}
echo "#   claim + complete cycles/s, ${SECONDS_RUN}s each (2 shared cores: an overhead figure, not scaling)"
echo "#   | clients | cluster, schedq.claim/complete | cluster, router statements | one server, schedq.claim/complete |"
for c in 1 16; do
	a=$(figure "$CITUS_PORT" "$c" "$HERE/schedq_claim_complete.sql")
	b=$(figure "$CITUS_PORT" "$c" "$HERE/claim_complete.sql")
	s=$(figure "$SINGLE_PORT" "$c" "$HERE/schedq_claim_complete.sql")
	echo "#   | $c | $a | $b | $s |"
done
# Budgeted tasks: each claim charges one budget, on every node.
q coord "DELETE FROM schedq.task WHERE status = 'available'; SELECT schedq.set_budget('fig', 1e15)" >/dev/null
fb=$(figure "$CITUS_PORT" 16 "$HERE/schedq_claim_complete.sql" '{fig}')
q coord "DELETE FROM schedq.task WHERE status = 'available'; DELETE FROM schedq.budget" >/dev/null
fu=$(figure "$CITUS_PORT" 16 "$HERE/schedq_claim_complete.sql")
echo "#   claim + complete cycles/s, 16 clients, the cluster: each task charging one budget $fb, no budgets $fu"
ok "budgeted figures measured" "$([ -n "$fb" ] && [ -n "$fu" ] && echo yes)" yes
lc=$(pgb -p "$CITUS_PORT" -c 1 -T "$SECONDS_RUN" -f "$HERE/submit.sql" 2>&1 | latency)
ls=$(pgb -p "$SINGLE_PORT" -c 1 -T "$SECONDS_RUN" -f "$HERE/submit.sql" 2>&1 | latency)
lw=$(pgb -p "$((CITUS_PORT + 1))" -c 1 -T "$SECONDS_RUN" -f "$HERE/submit.sql" 2>&1 | latency)
echo "#   submit latency, 1 client: cluster via coordinator $lc ms, via worker 1 $lw ms, one server $ls ms"
ok "figures measured" "$([ -n "$lc" ] && [ -n "$ls" ] && echo yes)" yes

# One worker node against two: worker 2 drained (its shards moved to
# worker 1), the same cycles again; nothing lost by the drain.
before=$(q coord 'SELECT count(*) FROM schedq.task')
cpsql coord -c "SELECT citus_drain_node('$CITUS_DIR', $((CITUS_PORT + 2)), shard_transfer_mode => 'block_writes')" >"$WORK/drain.log" 2>&1
ok "worker 2 drained: every shard on worker 1, no task lost" \
	"$(q coord "SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'schedq.task'::regclass") $(q coord 'SELECT count(*) FROM schedq.task')" \
	"1 $before"
echo "#   claim + complete cycles/s with schedq's calls, one worker node against two (the same run):"
for c in 1 16; do
	echo "#   | $c clients | one worker node $(figure "$CITUS_PORT" "$c" "$HERE/schedq_claim_complete.sql") |"
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]

#!/usr/bin/env bash
# test/bench/scheduler.sh -- the scheduler's latencies and promotion costs,
# each next to a baseline measured in the same run on the same server
#
#   bash test/bench/scheduler.sh        (after `make install`; about 2.5 minutes)
#
# Starts a throwaway PostgreSQL server with schedq preloaded (and
# auto_explain and pg_stat_statements, idle unless switched on for a
# measurement) and measures:
#
# 1. Submit-to-claim latency through a blocking claim.  A producer (pgbench,
#    one client) submits BENCH_LAT_TASKS tasks one at a time, one every
#    BENCH_LAT_GAP_MS ms; a consumer (consumer.c, one connection) sits in
#    schedq.claim('lat', wait => '5 s') and completes each task it gets.
#      latency = clock_timestamp() evaluated right after claim() returned,
#                in the claiming statement
#              - commit timestamp of the submitting transaction
#                (track_commit_timestamp = on; the producer writes its
#                pg_current_xact_id() in the payload, the result is read
#                with pg_xact_commit_timestamp())
#    Both stamps come from the same server clock, and the end stamp is
#    taken inside the server, so client scheduling does not blur it.  The
#    commit timestamp is taken when the commit record is written, just
#    before the transaction becomes visible, so the latency also holds
#    whatever the commit itself costs after that point (with the default
#    synchronous_commit = off of this script: nothing but making the
#    transaction visible and the wake-up).
#    Variants: an ungated task (inserted 'available', the submit's commit
#    wakes the claim) and a gated one (a concurrency_key without a limit:
#    inserted 'pending', the commit wakes the scheduler, which promotes it
#    and its commit wakes the claim).
#    Baseline: a plain table (raw_setup.sql) woken by LISTEN/NOTIFY: the
#    producer INSERTs and NOTIFYs in one transaction; the consumer (same
#    program) LISTENs, claims with UPDATE ... FOR UPDATE SKIP LOCKED, and
#    waits in poll(2) on its socket for a notification when that finds
#    nothing.  Its end stamp is taken the same way, inside its claim.
#    "waited" counts the claims that were already waiting when the task
#    was committed (schedq: the claiming statement started before the
#    submit's commit; raw: the consumer slept for a notification).
#
# 2. Due-time precision.  BENCH_DUE_TASKS tasks, one submitted every
#    BENCH_DUE_GAP_MS ms, each with run_at = now() + BENCH_DUE_DELAY_MS;
#    one consumer waits in schedq.claim(wait => '5 s').
#      lateness = clock_timestamp() right after claim() returned - run_at
#    A negative lateness would be a task handed out before its time (and is
#    reported as a problem).
#    Baseline: the plain table, rows inserted 'available' with the same
#    run_at, a consumer that polls every 10 ms with
#    UPDATE ... WHERE run_at <= now() ... FOR UPDATE SKIP LOCKED.
#
# 3. Promotion throughput.
#    a) Gated drain, live scheduler: BENCH_LOCK_KEYS lock keys x
#       BENCH_VERSIONS versions, submitted version by version (all keys'
#       version 1 first), each task also under one of BENCH_CONC_KEYS
#       concurrency keys limited to BENCH_CONC_LIMIT active tasks.
#       BENCH_WORKERS consumers claim (n => 10, wait => '500 ms') and
#       complete until nothing is claimable for 3 s; time = last
#       finished_at - start.  The number of tasks available or running is
#       sampled every 250 ms ("active", at most BENCH_CONC_KEYS x
#       BENCH_CONC_LIMIT), and pg_stat_statements shows where the time
#       went.  Checked afterwards: every lock key ran in version order with
#       no overlap, and no concurrency key ever had more running tasks than
#       its limit.  The same again, smaller (BENCH_KEYMAJOR_VERSIONS
#       versions a key, 0 skips it), submitted key by key (all versions of
#       one key, then the next), which changes which parked tasks a freed
#       concurrency slot wakes.  Baseline: the same workers draining as
#       many ungated tasks (all 'available' from the start): the workers'
#       own ceiling, so the difference is what gating costs.  Each drain
#       also reads the CPU time the whole machine spent (/proc/stat,
#       sampled every 50 ms) and the scheduler's (/proc/PID/stat): the
#       CPU time per task of the gated and the ungated drain give the
#       highest ratio gating at that cost could reach were the CPUs the
#       only limit, and what 0.8 x would allow it to cost.  Right after
#       the first drain, _promote_once() is also timed as in part 4: each
#       completion left a row in schedq.gate_event, and every pass reads
#       that table until autovacuum has cleaned it.
#    b) Pure promotion, scheduler disabled (schedq.enabled = off):
#       BENCH_PROMOTE_TASKS ungated tasks with run_at next year, promoted by
#       SELECT schedq._promote_once(now() + '2 years') repeated (one
#       autocommit transaction each, PROMOTE_BATCH = 1000 a pass) until
#       none is left.  Also the same count of lock-key tasks (BENCH_LOCK_KEYS
#       keys), where each pass judges tasks one by one: it promotes each
#       key's head and parks the rest.  Baseline: a plain table of the same
#       size whose rows go from 'pending' to 'available' with a raw UPDATE
#       of 1000 rows (SELECT ... ORDER BY run_at, id LIMIT 1000 FOR UPDATE
#       SKIP LOCKED) repeated the same way.  The middle pass of each runs
#       under auto_explain; the report shows which plan nodes grow with the
#       table.
#
# 4. Idle tick cost.  SELECT schedq._promote_once() (and _reap_once()),
#    BENCH_IDLE_CALLS calls in one psql session, each timed by \timing
#    (end to end over the unix socket), first on an empty table
#    (the baseline), then with BENCH_IDLE_TASKS pending tasks due next
#    year (submitted with submit_many).  Then the live scheduler is
#    enabled with auto_explain (log_analyze, log_buffers) switched on for
#    1.5 x schedq.promote_interval (two ticks), and the plans of every
#    query it ran are shown with the buffers each touched.
#
# Environment (defaults in brackets):
#   PG_CONFIG                 pg_config of the server [PostgreSQL 15]
#   BENCH_ONLY                which parts to run, e.g. "1 2" ["1 2 3 4"];
#                             "3a": only part 3 a), the version-major gated
#                             drain and its ungated baseline (the
#                             target: gated >= 0.8x ungated), repeated
#                             BENCH_REPEAT times interleaved (gated, ungated,
#                             gated, ...): the report adds the medians and
#                             the median of the rounds' ratios
#   BENCH_REPEAT [1]          rounds of 3 a) (gated drain + ungated baseline)
#   BENCH_LAT_TASKS [2000]    BENCH_LAT_GAP_MS [5]
#   BENCH_DUE_TASKS [200]     BENCH_DUE_GAP_MS [30]    BENCH_DUE_DELAY_MS [1000]
#   BENCH_LOCK_KEYS [1000]    BENCH_VERSIONS [100]     BENCH_CONC_KEYS [10]
#   BENCH_CONC_LIMIT [10]     BENCH_WORKERS [4]        BENCH_KEYMAJOR_VERSIONS [10]
#   BENCH_DRAIN_TIMEOUT [120] (seconds; a drain stopped by it is a problem)
#   BENCH_DRAIN_WAIT [block]  how part 3's workers wait when they find
#                             nothing: block (claim(wait => '500 ms'), which
#                             holds its statement's snapshot while it
#                             waits), await (claim without wait, then CALL
#                             schedq.await_task(wait => '500 ms'), which
#                             holds none) or poll (claim without wait, then
#                             sleep 5 ms)
#   BENCH_PROMOTE_TASKS [100000]
#   BENCH_IDLE_TASKS [1000000]  BENCH_IDLE_CALLS [200]
#   BENCH_SYNCHRONOUS_COMMIT  synchronous_commit of the server [off]: these
#                             numbers are about wake-ups and passes, not
#                             about the disk's flush time
#   BENCH_SERVER_CONF         extra postgresql.conf lines, e.g.
#                             "schedq.sql_workers = 0"
#   BENCH_OUT                 if set, the report is also written there
#
# Targets (printed as met / NOT met): latency p99 < 5 ms; lateness p99 and
# max <= 20 ms; idle tick mean and p99 < 1 ms.
#
# Run as root; the server and every client run as the OS user postgres.
# Needs a C compiler and libpq's headers for consumer.c.
# The report names the other PostgreSQL servers running on the machine
# and the load average: this benchmark's tails are only as quiet as the
# machine.  Exit status: 0 when every part ran and checked out (targets
# aside: a missed target is printed, not an error), 1 otherwise (every
# problem is listed under PROBLEMS with its evidence).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=scheduler
# shellcheck source=lib.sh
source "$HERE/lib.sh"

ONLY=${BENCH_ONLY:-"1 2 3 4"}
LAT_TASKS=${BENCH_LAT_TASKS:-2000}
LAT_GAP_MS=${BENCH_LAT_GAP_MS:-5}
DUE_TASKS=${BENCH_DUE_TASKS:-200}
DUE_GAP_MS=${BENCH_DUE_GAP_MS:-30}
DUE_DELAY_MS=${BENCH_DUE_DELAY_MS:-1000}
LOCK_KEYS=${BENCH_LOCK_KEYS:-1000}
VERSIONS=${BENCH_VERSIONS:-100}
CONC_KEYS=${BENCH_CONC_KEYS:-10}
CONC_LIMIT=${BENCH_CONC_LIMIT:-10}
WORKERS=${BENCH_WORKERS:-4}
KEYMAJOR_VERSIONS=${BENCH_KEYMAJOR_VERSIONS:-10}
DRAIN_TIMEOUT=${BENCH_DRAIN_TIMEOUT:-120}
PROMOTE_TASKS=${BENCH_PROMOTE_TASKS:-100000}
IDLE_TASKS=${BENCH_IDLE_TASKS:-1000000}
IDLE_CALLS=${BENCH_IDLE_CALLS:-200}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-off}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
DB=bench
PROFILE=0 # gated_run: profile the drain (pg_stat_statements, track = all)
PROMOTE_BATCH=1000 # src/scheduler.h

for v in LAT_TASKS LAT_GAP_MS DUE_TASKS DUE_GAP_MS DUE_DELAY_MS LOCK_KEYS VERSIONS \
	CONC_KEYS CONC_LIMIT WORKERS DRAIN_TIMEOUT PROMOTE_TASKS IDLE_TASKS IDLE_CALLS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "BENCH_$v must be a positive integer, not '${!v}'"
done
for p in $ONLY; do
	[[ $p =~ ^([1-4]|3a)$ ]] || die "BENCH_ONLY lists parts 1 to 4 (or 3a), not '$ONLY'"
done
REPEAT=${BENCH_REPEAT:-1}
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, not '$REPEAT'"
[[ $KEYMAJOR_VERSIONS =~ ^[0-9]+$ ]] || die "BENCH_KEYMAJOR_VERSIONS must be a number, not '$KEYMAJOR_VERSIONS'"
# most gated tasks that may be available or running at once
MAX_ACTIVE=$((CONC_KEYS * CONC_LIMIT))
((LOCK_KEYS >= MAX_ACTIVE)) || MAX_ACTIVE=$LOCK_KEYS
# part 3 runs for "3" and for "3a" (which skips the key-major drain and b)
runs() { [[ " $ONLY " == *" $1 "* ]] || { [[ $1 == 3 ]] && [[ " $ONLY " == *" 3a "* ]]; }; }
only_3a() { [[ " $ONLY " == *" 3a "* && " $ONLY " != *" 3 "* ]]; }
bench_check_tools initdb pg_ctl psql pgbench
for f in auto_explain pg_stat_statements; do
	[[ -f $("$PG_CONFIG" --pkglibdir)/$f.so ]] || die "$f is not installed (PostgreSQL's contrib)"
done

# ---------------------------------------------------------------------------
# Server, client program, helpers
# ---------------------------------------------------------------------------
bench_init

bench_libpq_client consumer
cp "$HERE/raw_setup.sql" "$TMP/"
chmod 0644 "$TMP/raw_setup.sql"
[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/consumer" "$TMP/raw_setup.sql"

bench_start_server "shared_preload_libraries = 'schedq,auto_explain,pg_stat_statements'
pg_stat_statements.track = none
track_commit_timestamp = on
synchronous_commit = $SYNC_COMMIT
log_line_prefix = '%m [%p] '
$EXTRA_CONF"

psql_db postgres -c "CREATE DATABASE $DB" >/dev/null
psql_q -c "CREATE EXTENSION schedq" >/dev/null
psql_q -c "CREATE EXTENSION pg_stat_statements" >/dev/null
psql_q -f "$TMP/raw_setup.sql" >/dev/null
psql_q >/dev/null <<'EOF'
-- 3b baseline: pending rows of the plain table, by due time
CREATE INDEX raw_job_pending ON raw_job (run_at, id) WHERE status = 'pending';
-- one row per claimed task of parts 1 and 2
CREATE TABLE bench_lat (
    test    text,        -- lat | due
    sys     text,        -- schedq | gated | raw
    task    bigint,
    xid     xid8,        -- the submitting transaction (lat)
    run_at  timestamptz, -- the task's due time (due)
    t_start timestamptz, -- the claiming statement's start
    t_claim timestamptz, -- clock_timestamp() right after the claim
    waits   int          -- consumer.c: waits since its previous claim
);
CREATE VIEW bench_lat_ms AS
SELECT test, sys,
       extract(epoch FROM t_claim - CASE test WHEN 'lat' THEN pg_xact_commit_timestamp(xid::xid)
                                              ELSE run_at END) * 1000 AS ms,
       CASE WHEN sys = 'raw' THEN waits > 0
            ELSE t_start < pg_xact_commit_timestamp(xid::xid) END AS waited
  FROM bench_lat;
EOF

PGVER=$(psql_q -c "SHOW server_version" | cut -d' ' -f1)
SCHEDQ_VER=$(psql_q -c "SELECT extversion FROM pg_extension WHERE extname = 'schedq'")
FSYNC=$(psql_q -c "SHOW fsync")
SHBUF=$(psql_q -c "SHOW shared_buffers")
PROMOTE_INTERVAL=$(psql_q -c "SHOW schedq.promote_interval")
PROMOTE_INTERVAL_MS=$(psql_q -c "SELECT setting FROM pg_settings WHERE name = 'schedq.promote_interval'")
NCPU=$(nproc 2>/dev/null || echo '?')
SO=$("$PG_CONFIG" --pkglibdir)/schedq.so
BUILD="library $(date -u -r "$SO" '+%Y-%m-%d %H:%M:%S UTC' 2>/dev/null || echo '?')"
if git -C "$HERE/../.." rev-parse --short HEAD >/dev/null 2>&1; then
	BUILD+=", checkout at $(git -C "$HERE/../.." rev-parse --short HEAD)"
	n=$(git -C "$HERE/../.." status --porcelain -- src sql Makefile 2>/dev/null | wc -l)
	((n == 0)) || BUILD+=" with $n uncommitted change(s) in src/ sql/ Makefile"
fi
CONNINFO="host=$TMP port=$PORT user=postgres dbname=$DB"

declare -A R # results, by name
FAILED=0
problem() { # record something that did not check out
	echo "$BENCH_NAME: PROBLEM: $*" >&2
	PROBLEMS+=("$*")
	FAILED=1
}
PROBLEMS=()

now_s() { date +%s.%N; }
# target N EXPECTED CONDITION: ok_if, unless fewer than EXPECTED tasks were measured.
target() {
	if [[ $1 != "$2" ]]; then echo "n/a (only $1 of $2 measured)"; else ok_if "$3"; fi
}
ok_if() { # awk condition over numbers; "-" stands for a value that was not measured
	if [[ $1 =~ (^|[[:space:]])-([[:space:]]|$) ]]; then
		echo "n/a (not measured)"
	elif awk "BEGIN { exit !($1) }"; then
		echo met
	else
		echo "NOT met"
	fi
}
f1() { printf '%.1f' "$1"; }
rate() { awk "BEGIN { if ($2 > 0) printf \"%.0f\", $1 / $2; else print \"-\" }"; }

# Wait until the scheduler reports state $1 (idle, disabled).
wait_scheduler() {
	local want=$1 state i
	for ((i = 0; i < 200; i++)); do
		state=$(psql_q -c "SELECT coalesce((SELECT state FROM schedq.scheduler_status() WHERE datname = current_database()), 'none')")
		[[ $state == "$want" ]] && return 0
		sleep 0.05
	done
	die "the scheduler is '$state', not '$want', 10 s after asking"
}
scheduler() { # on|off
	psql_q >/dev/null <<EOF
ALTER SYSTEM SET schedq.enabled = $1;
SELECT pg_reload_conf();
EOF
	if [[ $1 == on ]]; then wait_scheduler idle; else wait_scheduler disabled; fi
}

# pg_stat_statements for every statement (nested ones too), or none.
track_statements() {
	psql_q >/dev/null <<EOF
ALTER SYSTEM SET pg_stat_statements.track = '$1';
SELECT pg_reload_conf();
EOF
	sleep 0.3
	[[ $1 == none ]] || psql_q -c "SELECT pg_stat_statements_reset()" >/dev/null
}

# Empty both queues (and what parts 1 and 2 recorded); vacuum them and
# schedq's internal gate_event table, whose dead rows every pass reads.
reset_queues() {
	psql_q >/dev/null <<'EOF'
TRUNCATE schedq.task, raw_job, bench_lat;
VACUUM (ANALYZE) schedq.task;
VACUUM schedq.gate_event;
VACUUM (ANALYZE) raw_job;
EOF
}

# Submit $1 tasks with submit_many, $2 per statement, over $3 concurrent
# sessions (chunks dealt round-robin).  $4: the task object as a SQL
# expression of g (0 .. $1-1), e.g. jsonb_build_object('kind', 'x').
submit_tasks() {
	local n=$1 chunk=$2 sessions=$3 expr=$4 lo hi k pids=() rc=0
	local -a sql=()
	for ((lo = 0, k = 0; lo < n; lo += chunk, k = (k + 1) % sessions)); do
		hi=$((lo + chunk - 1))
		((hi < n)) || hi=$((n - 1))
		sql[k]+="SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg($expr ORDER BY g) FROM generate_series($lo, $hi) AS g));"$'\n'
	done
	for k in "${!sql[@]}"; do
		psql_q >/dev/null <<<"${sql[k]}" &
		pids+=($!)
	done
	for k in "${pids[@]}"; do wait "$k" || rc=$?; done
	((rc == 0)) || die "submitting $n tasks failed"
}

# start_consumer NAME consumer-args...: start consumer.c in the background
# and wait until it is connected (and listening).  Its pid goes to CPID.
start_consumer() {
	local name=$1 i
	shift
	as_pg "$TMP/consumer" -d "$CONNINFO" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	CPID=$!
	CHILDREN+=("$CPID")
	for ((i = 0; i < 200; i++)); do
		grep -q '^ready' "$TMP/$name.err" 2>/dev/null && return 0
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$TMP/$name.err" >&2
	die "consumer $name did not start"
}
# wait_consumer NAME PID: wait for it; sets CRC (exit status), CCLAIMED, CEMPTY.
wait_consumer() {
	local name=$1 pid=$2
	CRC=0
	wait "$pid" || CRC=$?
	read -r _ CCLAIMED _ CEMPTY <"$TMP/$name.out" 2>/dev/null || { CCLAIMED=0; CEMPTY=0; }
	if ((CRC != 0 && CRC != 3)); then
		sed 's/^/    /' "$TMP/$name.err" >&2
		problem "consumer $name failed (exit $CRC)"
	fi
}

# pgbench_file NAME: write stdin to $TMP/NAME.sql, readable by postgres.
pgbench_file() {
	cat >"$TMP/$1.sql"
	chmod 0644 "$TMP/$1.sql"
	[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/$1.sql"
}
pgbench_run() { # script clients transactions [more pgbench options]
	local script=$1 c=$2 t=$3
	shift 3
	as_pg "$BINDIR/pgbench" -n -M prepared -h "$TMP" -p "$PORT" -U postgres \
		-c "$c" -j 1 -t "$t" -f "$TMP/$script.sql" "$@" "$DB"
}

# producer NAME N: pgbench, one client, N transactions of NAME.sql, in the
# background (so that a signal reaches our traps at once); output in
# $TMP/NAME.pgbench, exit status returned.
producer() {
	local pid
	pgbench_run "$1" 1 "$2" >"$TMP/$1.pgbench" 2>&1 &
	pid=$!
	CHILDREN+=("$pid")
	wait "$pid"
}

# Nearest-rank statistics of the numbers on stdin (one a line):
# "n mean p50 p95 p99 max min", 3 decimals.
stats() {
	sort -g | awk '{ v[NR] = $1; s += $1 }
		function r(p) { i = int(p * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; return v[i] }
		END { if (NR == 0) { print "0 - - - - - -"; exit }
		      printf "%d %.3f %.3f %.3f %.3f %.3f %.3f\n", NR, s / NR, r(0.5), r(0.95), r(0.99), v[NR], v[1] }'
}

# tick_time NAME FUNCTION: TICK_WARMUP + IDLE_CALLS calls in one psql
# session, each timed by psql's \timing (client side, end to end; each
# call its own autocommit transaction, as each scheduler pass is); the
# first TICK_WARMUP are left out (the first call of a session prepares
# every plan of the pass).  R[tick:NAME] = "n mean p50 p95 p99 max min"
# in ms; R[cold:NAME] = the first call's time.  (Not pgbench's per-
# transaction log: pgbench 15 logs some sub-0.1 ms transactions as 0 us.)
TICK_WARMUP=10
tick_time() {
	local name=$1 fn=$2 out rc=0 i n mean p50 p95 p99 max min
	pgbench_file "tick_$name" < <(
		printf '%s\n' '\timing on'
		for ((i = 0; i < IDLE_CALLS + TICK_WARMUP; i++)); do echo "SELECT $fn;"; done
	)
	out=$(psql_q -f "$TMP/tick_$name.sql" 2>&1) || rc=$?
	((rc == 0)) || { sed 's/^/    /' <<<"$out" >&2; problem "psql failed timing $fn"; return; }
	out=$(awk '/^Time: / { print $2 }' <<<"$out")
	R[tick:$name]=$(awk -v w=$TICK_WARMUP 'NR > w' <<<"$out" | stats)
	R[cold:$name]=$(awk 'NR == 1 { printf "%.3f", $1 }' <<<"$out")
	read -r n mean p50 p95 p99 max min <<<"${R[tick:$name]}"
	log "$(printf '%-14s %s calls: mean %s  p50 %s  p95 %s  p99 %s  max %s ms (first call of the session %s ms)' \
		"$name" "$n" "$mean" "$p50" "$p95" "$p99" "$max" "${R[cold:$name]}")"
}

# Other servers on this machine (test suites run by others, say) share its
# CPUs: say so in the report, since they blur the latency tails.
other_servers() {
	ps -eo args= | grep -E '^[^ ]*/bin/postgres( |$)' | grep -vcF -- "$PGDATA_DIR" || true
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
OTHERS_BEFORE=$(other_servers)
T_START=$(date +%s)

# ---------------------------------------------------------------------------
# 1. Submit-to-claim latency through a blocking claim
# ---------------------------------------------------------------------------
# lat_run SYS: one producer and one consumer; results in bench_lat.
lat_run() {
	local sys=$1 name=lat_$1 claim complete args=() out rc=0 cpid
	case $sys in
	schedq | gated)
		local opt=''
		[[ $sys == gated ]] && opt=", concurrency_key => 'lat'"
		pgbench_file "$name" <<EOF
SELECT schedq.submit('lat', jsonb_build_object('x', pg_current_xact_id()::text)$opt);
\sleep $LAT_GAP_MS ms
EOF
		claim="WITH c AS MATERIALIZED (
		         SELECT id, token, payload, clock_timestamp() AS t_claim
		           FROM schedq.claim('lat', wait => '5 s'))
		     , i AS (INSERT INTO bench_lat (test, sys, task, xid, t_start, t_claim, waits)
		             SELECT 'lat', '$sys', id, (payload->>'x')::xid8, statement_timestamp(), t_claim, \$1
		               FROM c)
		     SELECT token FROM c"
		complete="SELECT schedq.complete(t) FROM unnest(\$1::text[]) AS t"
		args=(-m block)
		;;
	raw)
		pgbench_file "$name" <<EOF
BEGIN;
INSERT INTO raw_job (payload) VALUES (jsonb_build_object('x', pg_current_xact_id()::text));
NOTIFY raw_job;
COMMIT;
\sleep $LAT_GAP_MS ms
EOF
		claim="WITH c AS (
		         UPDATE raw_job SET status = 'running', claimed_by = 'lat', locked_at = now()
		          WHERE id = (SELECT id FROM raw_job WHERE status = 'available'
		                       ORDER BY priority DESC, run_at, id LIMIT 1
		                       FOR UPDATE SKIP LOCKED)
		         RETURNING id, payload, clock_timestamp() AS t_claim)
		     , i AS (INSERT INTO bench_lat (test, sys, task, xid, t_start, t_claim, waits)
		             SELECT 'lat', 'raw', id, (payload->>'x')::xid8, statement_timestamp(), t_claim, \$1
		               FROM c)
		     SELECT id FROM c"
		complete="UPDATE raw_job SET status = 'done' WHERE id = ANY (\$1::bigint[])"
		args=(-m notify -l raw_job)
		;;
	esac
	start_consumer "$name" "${args[@]}" -n "$LAT_TASKS" -i 10000 -c "$claim" -f "$complete"
	cpid=$CPID
	producer "$name" "$LAT_TASKS" || rc=$?
	out=$(cat "$TMP/$name.pgbench")
	((rc == 0)) || { sed 's/^/    /' <<<"$out" >&2; problem "the $sys producer failed (pgbench exit $rc)"; }
	wait_consumer "$name" "$cpid"
	R[lat_empty:$sys]=$CEMPTY
	R[lat_claimed:$sys]=$CCLAIMED
	if ((CCLAIMED != LAT_TASKS)); then
		problem "latency, $sys: the consumer claimed $CCLAIMED of $LAT_TASKS tasks (it stops after 10 s without one); $(where_tasks "$sys")"
	fi
}

# where_tasks SYS: where the tasks of a latency/due run ended up, as
# "status by claimer: count, ..." (evidence when the consumer missed some).
where_tasks() {
	local tbl=schedq.task
	[[ $1 == raw ]] && tbl=raw_job
	local more=''
	if [[ $1 != raw ]]; then
		more=$(psql_q -c "SELECT '; those not claimed by the consumer: ' || string_agg(format('id %s %s, result %s, last_error %s', id, status, coalesce(result::text, '-'), coalesce(last_error, '-')), '; ')
			FROM (SELECT * FROM schedq.task WHERE claimed_by IS DISTINCT FROM 'lat' AND claimed_by IS DISTINCT FROM 'due' ORDER BY id LIMIT 5) AS t")
	fi
	echo "tasks by status and claimed_by: $(psql_q -c "SELECT string_agg(st || ' by ' || coalesce(cb, '-') || ': ' || n, ', ' ORDER BY n DESC)
		FROM (SELECT status AS st, claimed_by AS cb, count(*) AS n FROM $tbl GROUP BY 1, 2) AS s")$more"
}

lat_stats() { # test sys -> R[test:sys] = "n waited p50 p95 p99 max min"
	local n waited s
	read -r n waited <<<"$(psql_q -F' ' -c "SELECT count(*), count(*) FILTER (WHERE waited) FROM bench_lat_ms WHERE test = '$1' AND sys = '$2'")"
	s=$(psql_q -c "SELECT ms FROM bench_lat_ms WHERE test = '$1' AND sys = '$2' AND ms IS NOT NULL" | stats)
	read -r n _ p50 p95 p99 max min <<<"$s"
	R[$1:$2]="$n $waited $p50 $p95 $p99 $max $min"
	if [[ $1 == lat ]]; then waited=" ($waited waited)"; else waited=''; fi
	log "$(printf '%s %-6s: %s tasks%s  p50 %s  p95 %s  p99 %s  max %s  min %s ms' \
		"$1" "$2" "$n" "$waited" "$p50" "$p95" "$p99" "$max" "$min")"
}

if runs 1; then
	echo "$BENCH_NAME: 1. submit-to-claim latency, $LAT_TASKS tasks, one every $LAT_GAP_MS ms" >&2
	scheduler on
	for sys in schedq gated raw; do
		reset_queues
		lat_run "$sys"
		lat_stats lat "$sys"
	done
fi

# ---------------------------------------------------------------------------
# 2. Due-time precision
# ---------------------------------------------------------------------------
due_run() {
	local sys=$1 name=due_$1 claim complete args=() out rc=0 cpid
	if [[ $sys == schedq ]]; then
		pgbench_file "$name" <<EOF
SELECT schedq.submit('due', jsonb_build_object('r', r), run_at => r)
  FROM (SELECT now() + interval '$DUE_DELAY_MS ms' AS r) AS s;
\sleep $DUE_GAP_MS ms
EOF
		claim="WITH c AS MATERIALIZED (
		         SELECT id, token, payload, clock_timestamp() AS t_claim
		           FROM schedq.claim('due', wait => '5 s'))
		     , i AS (INSERT INTO bench_lat (test, sys, task, run_at, t_start, t_claim, waits)
		             SELECT 'due', 'schedq', id, (payload->>'r')::timestamptz, statement_timestamp(), t_claim, \$1
		               FROM c)
		     SELECT token FROM c"
		complete="SELECT schedq.complete(t) FROM unnest(\$1::text[]) AS t"
		args=(-m block)
	else
		pgbench_file "$name" <<EOF
INSERT INTO raw_job (payload, run_at) VALUES ('{}', now() + interval '$DUE_DELAY_MS ms');
\sleep $DUE_GAP_MS ms
EOF
		claim="WITH c AS (
		         UPDATE raw_job SET status = 'running', claimed_by = 'due', locked_at = now()
		          WHERE id = (SELECT id FROM raw_job WHERE status = 'available' AND run_at <= now()
		                       ORDER BY priority DESC, run_at, id LIMIT 1
		                       FOR UPDATE SKIP LOCKED)
		         RETURNING id, run_at, clock_timestamp() AS t_claim)
		     , i AS (INSERT INTO bench_lat (test, sys, task, run_at, t_start, t_claim, waits)
		             SELECT 'due', 'raw', id, run_at, statement_timestamp(), t_claim, \$1 FROM c)
		     SELECT id FROM c"
		complete="UPDATE raw_job SET status = 'done' WHERE id = ANY (\$1::bigint[])"
		args=(-m poll -p 10)
	fi
	start_consumer "$name" "${args[@]}" -n "$DUE_TASKS" -i $((DUE_DELAY_MS + 10000)) -c "$claim" -f "$complete"
	cpid=$CPID
	producer "$name" "$DUE_TASKS" || rc=$?
	out=$(cat "$TMP/$name.pgbench")
	((rc == 0)) || { sed 's/^/    /' <<<"$out" >&2; problem "the $sys due-time producer failed (pgbench exit $rc)"; }
	wait_consumer "$name" "$cpid"
	R[due_claimed:$sys]=$CCLAIMED
	if ((CCLAIMED != DUE_TASKS)); then
		problem "due time, $sys: the consumer claimed $CCLAIMED of $DUE_TASKS tasks; $(where_tasks "$sys")"
	fi
}

if runs 2; then
	echo "$BENCH_NAME: 2. due-time precision, $DUE_TASKS tasks due ${DUE_DELAY_MS} ms after submit, one every $DUE_GAP_MS ms" >&2
	scheduler on
	for sys in schedq raw; do
		reset_queues
		due_run "$sys"
		lat_stats due "$sys"
		read -r _ _ _ _ _ _ min <<<"${R[due:$sys]}"
		if [[ $min != - ]] && awk "BEGIN { exit !($min < 0) }"; then
			problem "due time, $sys: a task was claimed $min ms before its run_at"
		fi
	done
fi

# ---------------------------------------------------------------------------
# 3. Promotion throughput
# ---------------------------------------------------------------------------
# drain NAME [sample]: BENCH_WORKERS consumers claim and complete until
# nothing is claimable for 3 s (or BENCH_DRAIN_TIMEOUT s have passed);
# R[drain_s:NAME] = last finished_at - start (seconds).  With "sample",
# the number of gated tasks available or running is sampled every 250 ms:
# R[active:NAME] = "mean min max" of the samples.
drain() {
	local name=$1 sample=${2:-} w pids=() t0 t0_epoch spid='' cpid deadline alive
	# the machine's busy CPU time, sampled every 50 ms
	cpu_sampler >"$TMP/$name.cpu" &
	cpid=$!
	CHILDREN+=("$cpid")
	IFS='|' read -r t0 t0_epoch < <(psql_q -c "SELECT clock_timestamp()::text || '|' || extract(epoch FROM clock_timestamp())")
	for ((w = 1; w <= WORKERS; w++)); do
		if [[ ${BENCH_DRAIN_WAIT:-block} == await ]]; then
			start_consumer "${name}_w$w" -m await -n 0 -i 3000 \
				-w "CALL schedq.await_task(wait => '500 ms')" \
				-c "SELECT token FROM schedq.claim('w$w', n => 10)" \
				-f "SELECT count(*) FROM unnest(\$1::text[]) AS t WHERE schedq.complete(t)"
			pids+=("$CPID")
			continue
		fi
		if [[ ${BENCH_DRAIN_WAIT:-block} == poll ]]; then
			start_consumer "${name}_w$w" -m poll -p 5 -n 0 -i 3000 \
				-c "SELECT token FROM schedq.claim('w$w', n => 10)" \
				-f "SELECT count(*) FROM unnest(\$1::text[]) AS t WHERE schedq.complete(t)"
			pids+=("$CPID")
			continue
		fi
		start_consumer "${name}_w$w" -m block -n 0 -i 3000 \
			-c "SELECT token FROM schedq.claim('w$w', n => 10, wait => '500 ms')" \
			-f "SELECT count(*) FROM unnest(\$1::text[]) AS t WHERE schedq.complete(t)"
		pids+=("$CPID")
	done
	if [[ -n $sample ]]; then
		while :; do
			psql_q -c "SELECT count(*) FROM schedq.task WHERE concurrency_key IS NOT NULL AND status IN ('available', 'running')" || break
			sleep 0.25
		done >"$TMP/$name.samples" 2>/dev/null &
		spid=$!
		CHILDREN+=("$spid")
	fi
	deadline=$((SECONDS + DRAIN_TIMEOUT))
	while ((SECONDS < deadline)); do
		alive=0
		for w in "${pids[@]}"; do kill -0 "$w" 2>/dev/null && alive=1; done
		((alive)) || break
		sleep 0.2
	done
	if ((alive)); then
		problem "drain $name: stopped after BENCH_DRAIN_TIMEOUT = $DRAIN_TIMEOUT s"
		for w in "${pids[@]}"; do kill "$w" 2>/dev/null || true; done
	fi
	for ((w = 1; w <= WORKERS; w++)); do wait_consumer "${name}_w$w" "${pids[w - 1]}"; done
	if [[ -n $spid ]]; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		R[active:$name]=$(awk 'NR == 1 { mn = $1; mx = $1 } { s += $1; if ($1 < mn) mn = $1; if ($1 > mx) mx = $1 }
			END { if (NR) printf "%.0f %d %d\n", s / NR, mn, mx; else print "- - -" }' "$TMP/$name.samples")
	fi
	kill "$cpid" 2>/dev/null || true
	wait "$cpid" 2>/dev/null || true
	R[drain_s:$name]=$(psql_q -c "SELECT round(extract(epoch FROM max(finished_at) - '$t0'::timestamptz)::numeric, 3) FROM schedq.task")
	# CPU seconds the whole machine spent busy from the start to the last
	# finished task (the samples whose interval ends inside it), per task
	R[cpu:$name]=$(awk -v a="$t0_epoch" -v b="$(calc "$t0_epoch + ${R[drain_s:$name]}")" -v n="$(psql_q -c "SELECT count(*) FROM schedq.task")" \
		-v hz="$(getconf CLK_TCK)" \
		'NR > 1 && $1 > a && $1 <= b { busy += ($2 - prev) / hz; wall += $1 - pt }
		 { prev = $2; pt = $1 }
		 END { if (n > 0 && wall > 0) printf "%.0f %.0f\n", 1e6 * busy / n, 100 * busy / wall; else print "- -" }' "$TMP/$name.cpu")
	R[drain_done:$name]=$(psql_q -c "SELECT count(*) FILTER (WHERE status = 'done') || ' of ' || count(*) FROM schedq.task")
}

# cpu_sampler: every 50 ms, "epoch-seconds busy-clock-ticks" of the whole
# machine (user, nice, system, irq, softirq of every CPU, from /proc/stat)
cpu_sampler() {
	local _ u n s i w q sq
	while :; do
		read -r _ u n s i w q sq _ </proc/stat
		echo "$EPOCHREALTIME $((u + n + s + q + sq))"
		sleep 0.05
	done
}

# cpu_bound: what the rounds' CPU time per task says of the gated drain's
# ceiling on this machine (medians of the rounds)
cpu_bound() {
	local g p sch bg bp
	g=$(median "${R[rounds_cpu_gated]}") p=$(median "${R[rounds_cpu_plain]}")
	sch=$(median "${R[rounds_sched]}")
	bg=$(median "${R[rounds_busy_gated]}") bp=$(median "${R[rounds_busy_plain]}")
	if ! [[ $g =~ ^[0-9.]+$ && $p =~ ^[0-9.]+$ ]] || [[ $g == 0 ]]; then
		echo "      CPU time per task: not measured (/proc/stat unreadable?)"
		return
	fi
	echo "      CPU time per task, every process of the machine (/proc/stat), medians of the rounds: gated $g µs"
	echo "        (the scheduler $sch µs of it), ungated $p µs; the CPUs busy $bg % (gated) and $bp % (ungated) of"
	echo "        $(nproc) x 100 %.  Were the CPUs the only limit, gating at this cost would allow at most"
	echo "        $(awk "BEGIN { printf \"%.2f\", $p / $g }") x the ungated rate; 0.8 x needs the gated drain to cost at most $(awk "BEGIN { printf \"%.0f\", $p / 0.8 }") µs a task"
	echo "        ($(awk "BEGIN { printf \"%.0f\", $p / 0.8 - $p }") µs more than ungated)"
}

# scheduler_cpu: the CPU seconds (user + system) the scheduler of $DB has
# used, from /proc; "-" when it is not running
scheduler_cpu() {
	local pid
	pid=$(psql_q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'schedq scheduler' AND datname = current_database()")
	[[ -n $pid && -r /proc/$pid/stat ]] || { echo -; return; }
	# fields 14 and 15 counted after the ") " that ends the command name
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$pid/stat"
}

# gated_run NAME ORDER VERSIONS: LOCK_KEYS keys x VERSIONS versions, each
# task also under concurrency key 'c' || (key % CONC_KEYS), submitted with
# the live scheduler running, in ORDER "version" (every key's version 1,
# then every key's version 2, ...) or "key" (all versions of key 0, then of
# key 1, ...); wait until the scheduler has judged every task, drain, check
# lock order and concurrency limits.
gated_run() {
	local name=$1 order=$2 versions=$3 n k v t0 t1 t2 left i cpu0 cpu1
	n=$((LOCK_KEYS * versions))
	if [[ $order == version ]]; then
		k="(g % $LOCK_KEYS)" v="(g / $LOCK_KEYS + 1)"
	else
		k="(g / $versions)" v="(g % $versions + 1)"
	fi
	R[n:$name]=$n
	reset_queues
	t0=$(now_s)
	submit_tasks "$n" 10000 1 "jsonb_build_object('kind', 'gated', 'lock_key', 'k' || $k, 'version', $v, 'concurrency_key', 'c' || ($k % $CONC_KEYS))"
	t1=$(now_s)
	# the scheduler has looked at every task once none is left unparked
	for ((i = 0; i < 600; i++)); do
		left=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'pending' AND NOT parked")
		((left == 0)) && break
		sleep 0.1
	done
	t2=$(now_s)
	R[submit_s:$name]=$(calc "$t1 - $t0")
	R[settle_s:$name]=$(calc "$t2 - $t1")
	R[initial:$name]=$(psql_q -c "SELECT count(*) FILTER (WHERE status = 'available') || ' available, ' || count(*) FILTER (WHERE parked) || ' parked' FROM schedq.task")
	((left == 0)) || problem "$name: $left tasks still pending and unparked 60 s after the submits"
	log "$name: submitted $n tasks in $(printf '%.1f' "${R[submit_s:$name]}") s; the scheduler settled $(printf '%.2f' "${R[settle_s:$name]}") s later: ${R[initial:$name]}"
	psql_q -c "VACUUM (ANALYZE) schedq.task" >/dev/null
	((!PROFILE)) || track_statements all
	cpu0=$(scheduler_cpu)
	drain "$name" sample
	# the scheduler's CPU time over the drain, as a share of its wall time
	# (the workers' idle tail after the last task costs it next to nothing)
	cpu1=$(scheduler_cpu)
	R[schedcpu:$name]=$(awk -v a="$cpu0" -v b="$cpu1" -v s="${R[drain_s:$name]}" \
		'BEGIN { if (a == "-" || b == "-" || s <= 0) print "-"; else printf "%.0f %%", 100 * (b - a) / s }')
	# and per task, in microseconds
	R[schedus:$name]=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$n" \
		'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.0f", 1e6 * (b - a) / n }')
	if ((PROFILE)); then
		track_statements none
		R[profile:$name]=$(psql_q -F' ' -c "
			SELECT calls, round((total_exec_time / 1000)::numeric, 2), round(mean_exec_time::numeric, 3),
			       shared_blks_hit / greatest(calls, 1), left(regexp_replace(query, '\s+', ' ', 'g'), 110)
			  FROM pg_stat_statements
			 WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE 'SELECT count(*) FROM schedq.task WHERE concurrency_key IS NOT NULL%'
			 ORDER BY total_exec_time DESC LIMIT 8" | awk '{ printf "   %8s %8s %9s %8s  ", $1, $2, $3, $4; $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print }')
		# each completion left a gate event, which the scheduler deleted:
		# what does a pass cost before autovacuum has cleaned them up?
		R[burst_pages]=$(psql_q -c "SELECT pg_relation_size('schedq.gate_event') / 8192")
		tick_time promote_burst "schedq._promote_once()"
	fi
	R[lockviol:$name]=$(psql_q -c "
		SELECT count(*) FILTER (WHERE version < prev_v OR started_at < prev_f)
		  FROM (SELECT version, started_at,
		               lag(version) OVER w AS prev_v, lag(finished_at) OVER w AS prev_f
		          FROM schedq.task WHERE kind = 'gated'
		        WINDOW w AS (PARTITION BY lock_key ORDER BY started_at, id)) AS s")
	R[maxrun:$name]=$(psql_q -c "
		SELECT coalesce(max(running), 0) FROM (
		  SELECT sum(d) OVER (PARTITION BY k ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS running
		    FROM (SELECT concurrency_key AS k, started_at AS t, 1 AS d FROM schedq.task
		           WHERE kind = 'gated' AND started_at IS NOT NULL
		          UNION ALL
		          SELECT concurrency_key, finished_at, -1 FROM schedq.task
		           WHERE kind = 'gated' AND finished_at IS NOT NULL) AS e) AS s")
	log "$name: ${R[drain_done:$name]} done in ${R[drain_s:$name]} s ($(rate "$n" "${R[drain_s:$name]}") tasks/s); scheduler on the CPU ${R[schedcpu:$name]} of it (${R[schedus:$name]} µs a task); the machine's CPUs ${R[cpu:$name]#* } % busy, $(cut -d' ' -f1 <<<"${R[cpu:$name]}") µs a task; available+running sampled: mean/min/max ${R[active:$name]} (at most $MAX_ACTIVE allowed); lock-order violations ${R[lockviol:$name]}; most running under one concurrency key ${R[maxrun:$name]} (limit $CONC_LIMIT)"
	[[ ${R[drain_done:$name]} == "$n of $n" ]] || problem "$name drain: only ${R[drain_done:$name]} tasks done when the workers stopped"
	[[ ${R[lockviol:$name]} -eq 0 ]] || problem "$name drain: ${R[lockviol:$name]} tasks ran out of version order or overlapping their predecessor"
	[[ ${R[maxrun:$name]} -le $CONC_LIMIT ]] || problem "$name drain: ${R[maxrun:$name]} tasks of one concurrency key ran at once (limit $CONC_LIMIT)"
}

# promote_loop NAME SQL TOTAL: run SQL (one pass, returning how many rows
# it made available) in autocommit, ceil(TOTAL/1000)+2 times in one psql
# session; sets LOOP_S (wall seconds) and LOOP_N (sum of what it returned).
# The middle pass runs under auto_explain (ANALYZE, BUFFERS, nested
# statements, sent to the client as NOTICEs): its plans go to
# $TMP/NAME.plans.  (That one instrumented pass of a hundred costs the
# total well under 1 %.)
promote_loop() {
	local name=$1 stmt=$2 total=$3 calls mid i t0 t1
	calls=$(((total + PROMOTE_BATCH - 1) / PROMOTE_BATCH + 2))
	mid=$((calls / 2))
	pgbench_file "loop_$name" < <(
		for ((i = 1; i <= calls; i++)); do
			if ((i == mid)); then
				echo "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;"
				echo "SET auto_explain.log_buffers = on; SET auto_explain.log_nested_statements = on;"
				echo "SET auto_explain.log_level = notice; SET client_min_messages = notice;"
			fi
			echo "$stmt"
			((i != mid)) || echo "SET auto_explain.log_min_duration = -1;"
		done
	)
	t0=$(now_s)
	LOOP_N=$(psql_q -f "$TMP/loop_$name.sql" 2>"$TMP/$name.plans" | awk '{ s += $1 } END { print s + 0 }')
	t1=$(now_s)
	LOOP_S=$(calc "$t1 - $t0")
	LOOP_MID=$mid
}

# plan_summary FILE [nodes]: the plans logged by auto_explain (server log
# or NOTICEs), grouped by statement in order of first appearance: how many
# times it ran, its mean duration and mean shared buffers hit (top node),
# the statement.  With "nodes", also the plan lines of its first run that
# show work proportional to the table: scans returning or filtering out
# thousands of rows, sequential scans, sorts and hashes of such sets.
plan_summary() {
	awk -v nodes="${2:-}" '
		function flush() {
			if (q == "") return
			if (!(q in calls)) { order[++nq] = q; extra[q] = ex }
			calls[q]++; dur[q] += d; hit[q] += h
			q = ""
		}
		/(LOG|NOTICE):  duration:/ {
			flush()
			d = $0; sub(/.*duration: /, "", d); sub(/ ms.*/, "", d)
			h = 0; gotb = 0; ex = ""; next
		}
		/Query Text:/ { t = $0; sub(/.*Query Text: /, "", t); gsub(/[ \t]+/, " ", t); q = t; next }
		/Buffers:/ && !gotb { gotb = 1; if (match($0, /shared hit=[0-9]+/)) h = substr($0, RSTART + 11, RLENGTH - 11) + 0; next }
		{
			t = $0; gsub(/^[ \t]+/, "", t); sub(/^-> +/, "", t); sub(/ *\(cost=[^)]*\)/, "", t)
			big = 0
			if (match(t, /rows=[0-9]+ loops/)) { r = substr(t, RSTART + 5, RLENGTH - 11) + 0; big = (r >= 2000 && t ~ /Scan|Sort|Hash/) }
			if (t ~ /^Seq Scan/) big = 1
			if (match(t, /Rows Removed by Filter: [0-9]+/)) big = (substr(t, RSTART + 24) + 0 >= 1000)
			if (big) { sub(/actual time=[0-9.]+\.\.[0-9.]+ /, "", t); ex = ex sprintf("   %27s %.120s\n", "", t) }
		}
		END {
			flush()
			printf "   %6s %9s %10s  %s\n", "runs", "mean ms", "mean hit", "statement"
			for (i = 1; i <= nq; i++) {
				k = order[i]
				printf "   %6d %9.3f %10.0f  %.110s\n", calls[k], dur[k] / calls[k], hit[k] / calls[k], k
				if (nodes != "") printf "%s", extra[k]
			}
		}' "$1"
}

# plan_dedupe FILE: the plans of FILE, each statement's first one only,
# then how many more runs of each were left out.
plan_dedupe() {
	sed -E -e 's/^[0-9-]+ ([0-9:.]+) [A-Z]+ \[[0-9]+\] /\1 /' -e 's/^psql:[^:]*:[0-9]+: //' "$1" | awk '
		function flush() {
			if (blk == "") return
			if (!(q in seen)) { seen[q] = 1; printf "%s", blk } else { more[q]++ }
			blk = ""
		}
		/(LOG|NOTICE):  duration:/ { flush(); q = "" }
		/Query Text:/ && q == "" { q = $0; sub(/.*Query Text: /, "", q) }
		{ blk = blk $0 "\n" }
		END {
			flush()
			for (k in more) printf "(%d more runs of: %.100s)\n", more[k], k
		}'
}

if runs 3; then
	GATED=$((LOCK_KEYS * VERSIONS))
	echo "$BENCH_NAME: 3. promotion throughput" >&2
	scheduler on
	psql_q -c "SELECT count(schedq.set_concurrency_limit('c' || i, $CONC_LIMIT)) FROM generate_series(0, $((CONC_KEYS - 1))) AS i" >/dev/null

	# a) gated drains with the live scheduler, and the baseline: the same
	# workers, the same number of ungated tasks; BENCH_REPEAT rounds
	for ((round = 1; round <= REPEAT; round++)); do
		((REPEAT == 1)) || log "3a: round $round of $REPEAT"
		gated_run gated version "$VERSIONS"
		((KEYMAJOR_VERSIONS == 0 || round > 1)) || only_3a || gated_run keymajor key "$KEYMAJOR_VERSIONS"
		reset_queues
		submit_tasks "$GATED" 10000 2 "jsonb_build_object('kind', 'plain')"
		psql_q -c "VACUUM (ANALYZE) schedq.task" >/dev/null
		# sampled too, so that both drains pay the same for the samples
		# when their CPU time is compared
		drain plain sample
		log "ungated: ${R[drain_done:plain]} done in ${R[drain_s:plain]} s ($(rate "$GATED" "${R[drain_s:plain]}") tasks/s); the machine's CPUs ${R[cpu:plain]#* } % busy, $(cut -d' ' -f1 <<<"${R[cpu:plain]}") µs a task"
		[[ ${R[drain_done:plain]} == "$GATED of $GATED" ]] || problem "ungated drain: only ${R[drain_done:plain]} tasks done"
		R[rounds_gated]+=" $(rate "$GATED" "${R[drain_s:gated]}")"
		R[rounds_plain]+=" $(rate "$GATED" "${R[drain_s:plain]}")"
		R[rounds_ratio]+=" $(awk "BEGIN { printf \"%.2f\", ${R[drain_s:plain]} / ${R[drain_s:gated]} }")"
		R[rounds_cpu_gated]+=" ${R[cpu:gated]% *}"
		R[rounds_cpu_plain]+=" ${R[cpu:plain]% *}"
		R[rounds_busy_gated]+=" ${R[cpu:gated]#* }"
		R[rounds_busy_plain]+=" ${R[cpu:plain]#* }"
		R[rounds_sched]+=" ${R[schedus:gated]}"
	done
	# the profile: one more gated drain with pg_stat_statements tracking
	# every statement, not counted in the rounds (tracking slows it)
	PROFILE=1
	gated_run gated version "$VERSIONS"
	PROFILE=0
fi
if runs 3 && ! only_3a; then
	# b) pure promotion passes, scheduler disabled
	scheduler off
	for kind in future futlock; do
		reset_queues
		if [[ $kind == future ]]; then
			expr="jsonb_build_object('kind', 'future', 'run_at', now() + interval '1 year')"
		else
			expr="jsonb_build_object('kind', 'futlock', 'run_at', now() + interval '1 year', 'lock_key', 'k' || (g % $LOCK_KEYS), 'version', g / $LOCK_KEYS + 1)"
		fi
		submit_tasks "$PROMOTE_TASKS" 10000 2 "$expr"
		psql_q -c "VACUUM (ANALYZE) schedq.task" -c "CHECKPOINT" >/dev/null
		promote_loop "$kind" "SELECT schedq._promote_once(now() + interval '2 years');" "$PROMOTE_TASKS"
		R[promote_s:$kind]=$LOOP_S
		R[promote_n:$kind]=$LOOP_N
		R[promote_state:$kind]=$(psql_q -c "SELECT count(*) FILTER (WHERE status = 'available') || ' available, ' || count(*) FILTER (WHERE parked) || ' parked, ' || count(*) FILTER (WHERE status = 'pending' AND NOT parked) || ' unjudged' FROM schedq.task")
		log "promote $kind: $PROMOTE_TASKS tasks, passes returned $LOOP_N in $(printf '%.3f' "$LOOP_S") s: ${R[promote_state:$kind]}"
	done
	expect_future="$PROMOTE_TASKS available, 0 parked, 0 unjudged"
	[[ ${R[promote_state:future]} == "$expect_future" ]] || problem "pure promotion: ${R[promote_state:future]} (expected $expect_future)"
	heads=$((PROMOTE_TASKS < LOCK_KEYS ? PROMOTE_TASKS : LOCK_KEYS))
	expect_lock="$heads available, $((PROMOTE_TASKS - heads)) parked, 0 unjudged"
	[[ ${R[promote_state:futlock]} == "$expect_lock" ]] || problem "lock-key pass: ${R[promote_state:futlock]} (expected $expect_lock)"

	# b) baseline: a plain table of the same size, raw UPDATEs of 1000 rows
	psql_q >/dev/null <<EOF
INSERT INTO raw_job (status, payload, run_at)
SELECT 'pending', '{}', now() + interval '1 year' FROM generate_series(1, $PROMOTE_TASKS);
VACUUM (ANALYZE) raw_job;
CHECKPOINT;
EOF
	promote_loop raw "WITH p AS (SELECT id FROM raw_job WHERE status = 'pending' AND run_at <= now() + interval '2 years' ORDER BY run_at, id LIMIT $PROMOTE_BATCH FOR UPDATE SKIP LOCKED), u AS (UPDATE raw_job AS t SET status = 'available' FROM p WHERE t.id = p.id RETURNING 1) SELECT count(*) FROM u;" "$PROMOTE_TASKS"
	R[promote_s:raw]=$LOOP_S
	R[promote_n:raw]=$LOOP_N
	log "promote raw: $PROMOTE_TASKS rows, UPDATEs flipped $LOOP_N in $(printf '%.3f' "$LOOP_S") s"
	((LOOP_N == PROMOTE_TASKS)) || problem "raw promotion flipped $LOOP_N of $PROMOTE_TASKS rows"
	scheduler on
fi

# ---------------------------------------------------------------------------
# 4. Idle tick cost
# ---------------------------------------------------------------------------
# The scheduler's own plans: auto_explain on for two ticks of the live
# scheduler, then its log lines (by pid) cut into one plan per query.
scheduler_plans() {
	local pid from
	pid=$(psql_q -c "SELECT pid FROM schedq.scheduler_status() WHERE datname = current_database()")
	from=$(wc -l <"$TMP/server.log")
	psql_q >/dev/null <<'EOF'
ALTER SYSTEM SET auto_explain.log_min_duration = 0;
ALTER SYSTEM SET auto_explain.log_analyze = on;
ALTER SYSTEM SET auto_explain.log_buffers = on;
ALTER SYSTEM SET auto_explain.log_timing = on;
ALTER SYSTEM SET auto_explain.log_nested_statements = on;
SELECT pg_reload_conf();
EOF
	# the reload wakes it at once; the fallback poll brings the next tick
	sleep "$(calc "$PROMOTE_INTERVAL_MS / 1000 * 1.5 + 0.3")"
	psql_q >/dev/null <<'EOF'
ALTER SYSTEM RESET auto_explain.log_min_duration;
ALTER SYSTEM RESET auto_explain.log_analyze;
ALTER SYSTEM RESET auto_explain.log_buffers;
ALTER SYSTEM RESET auto_explain.log_timing;
ALTER SYSTEM RESET auto_explain.log_nested_statements;
SELECT pg_reload_conf();
EOF
	sleep 0.3
	tail -n +"$((from + 1))" "$TMP/server.log" | awk -v pid="$pid" '
		/^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] / { keep = (index($0, "[" pid "] LOG:  duration:") > 0) }
		keep' >"$TMP/plans.log"
}

if runs 4; then
	echo "$BENCH_NAME: 4. idle tick cost, $IDLE_CALLS calls, empty table then $IDLE_TASKS future tasks" >&2
	scheduler off
	reset_queues
	tick_time promote_empty "schedq._promote_once()"
	tick_time reap_empty "schedq._reap_once()"
	t0=$(now_s)
	submit_tasks "$IDLE_TASKS" 20000 2 "jsonb_build_object('kind', 'idle', 'run_at', now() + interval '1 year')"
	psql_q -c "VACUUM (ANALYZE) schedq.task" -c "CHECKPOINT" >/dev/null
	t1=$(now_s)
	R[idle_load_s]=$(calc "$t1 - $t0")
	R[idle_rows]=$(psql_q -c "SELECT count(*) FILTER (WHERE status = 'pending' AND run_at > now()) FROM schedq.task")
	log "loaded ${R[idle_rows]} future tasks in $(printf '%.1f' "${R[idle_load_s]}") s (submit_many + VACUUM)"
	((R[idle_rows] == IDLE_TASKS)) || problem "idle: ${R[idle_rows]} future tasks in the table, not $IDLE_TASKS"
	tick_time promote_full "schedq._promote_once()"
	tick_time reap_full "schedq._reap_once()"
	scheduler on
	scheduler_plans
	R[plans]=$(grep -c 'LOG:  duration:' "$TMP/plans.log" || true)
	R[ticks]=$(grep -c 'Query Text: WITH e AS (DELETE FROM schedq.gate_event' "$TMP/plans.log" || true)
	((R[plans] > 0)) || problem "auto_explain logged no plan of the scheduler"
fi

# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

report() {
	local sys n waited p50 p95 p99 max min label
	echo "schedq benchmark: scheduler latencies and promotion costs"
	echo
	echo "  server    PostgreSQL $PGVER, schedq $SCHEDQ_VER, $NCPU CPU(s), fsync=$FSYNC, synchronous_commit=$SYNC_COMMIT,"
	echo "            shared_buffers=$SHBUF, schedq.promote_interval=$PROMOTE_INTERVAL, track_commit_timestamp=on"
	[[ -z $EXTRA_CONF ]] || echo "  extra     postgresql.conf: $(tr '\n' ';' <<<"$EXTRA_CONF" | sed 's/;$//')"
	echo "  schedq    $BUILD"
	echo "  clients   pgbench (producers), psql (passes, timings), test/bench/consumer.c (libpq consumers); unix socket"
	echo "  machine   load average $LOAD_BEFORE before, $LOAD_AFTER after; other PostgreSQL servers running: $OTHERS_BEFORE before,"
	echo "            $OTHERS_AFTER after (they share the CPUs and blur the latency tails)"

	if runs 1; then
		echo
		echo "1. Submit-to-claim latency, $LAT_TASKS tasks submitted one at a time (one every $LAT_GAP_MS ms), one consumer"
		echo "   latency = clock_timestamp() right after the claim returned (inside the claiming statement)"
		echo "             - commit timestamp of the submit (pg_xact_commit_timestamp); same server clock; ms"
		printf '   %-44s %6s %7s %7s %7s %7s %7s\n' "" tasks waited p50 p95 p99 max
		for sys in schedq gated raw; do
			case $sys in
			schedq) label="schedq, ungated task, claim(wait => 5 s)" ;;
			gated) label="schedq, gated task (scheduler promotes)" ;;
			raw) label="raw table + LISTEN/NOTIFY, SKIP LOCKED" ;;
			esac
			read -r n waited p50 p95 p99 max min <<<"${R[lat:$sys]:-0 0 - - - - -}"
			printf '   %-44s %6s %7s %7s %7s %7s %7s\n' "$label" "$n" "$waited" "$p50" "$p95" "$p99" "$max"
		done
		echo "   schedq claims that ended empty after waiting 5 s: ${R[lat_empty:schedq]:-?} (ungated), ${R[lat_empty:gated]:-?} (gated)"
	fi

	if runs 2; then
		echo
		echo "2. Due-time precision, $DUE_TASKS tasks due $DUE_DELAY_MS ms after their submit (one every $DUE_GAP_MS ms), one consumer"
		echo "   lateness = clock_timestamp() right after the claim returned - run_at; ms (negative: early)"
		printf '   %-44s %6s %7s %7s %7s %7s %7s\n' "" tasks min p50 p95 p99 max
		for sys in schedq raw; do
			[[ $sys == schedq ]] && label="schedq, claim(wait => 5 s)" || label="raw table, consumer polling every 10 ms"
			read -r n waited p50 p95 p99 max min <<<"${R[due:$sys]:-0 0 - - - - -}"
			printf '   %-44s %6s %7s %7s %7s %7s %7s\n' "$label" "$n" "$min" "$p50" "$p95" "$p99" "$max"
		done
	fi

	if runs 3; then
		echo
		echo "3. Promotion throughput"
		echo "   a) Lock keys and concurrency limits, live scheduler: $LOCK_KEYS lock keys, each task also under one of"
		echo "      $CONC_KEYS concurrency keys limited to $CONC_LIMIT (so at most $MAX_ACTIVE available or running at once);"
		echo "      $WORKERS consumers claiming n => 10 (wait => 500 ms) and completing the batch, until all are done;"
		echo "      time = last finished_at - start.  active = available + running, sampled every 250 ms."
		printf '      %-42s %8s %9s %9s  %-16s %s\n' "" seconds tasks/s active "done" "before the drain"
		for k in gated keymajor plain; do
			[[ -n ${R[drain_s:$k]:-} ]] || continue
			case $k in
			gated) label="$VERSIONS versions per key, version-major" ;;
			keymajor) label="$KEYMAJOR_VERSIONS versions per key, key-major" ;;
			plain) label="baseline: ungated, same workers" ;;
			esac
			local n=${R[n:$k]:-$GATED} act='-' before='all available'
			[[ $k != plain && -n ${R[active:$k]:-} ]] && act=$(cut -d' ' -f1 <<<"${R[active:$k]}")
			[[ $k != plain ]] && before="${R[initial:$k]}"
			printf '      %-42s %8s %9s %9s  %-16s %s\n' "$label" "${R[drain_s:$k]}" "$(rate "$n" "${R[drain_s:$k]}")" "$act" "${R[drain_done:$k]}" "$before"
		done
		for k in gated keymajor; do
			[[ -n ${R[drain_s:$k]:-} ]] || continue
			echo "      $k: submitted ${R[n:$k]} in $(f1 "${R[submit_s:$k]}") s (submit_many of 10000, 1 session); every task judged $(printf '%.2f' "${R[settle_s:$k]}") s"
			echo "        after the last submit; active mean/min/max ${R[active:$k]// //}; lock-order violations ${R[lockviol:$k]};"
			echo "        most running at once under one concurrency key ${R[maxrun:$k]} (limit $CONC_LIMIT); the scheduler on the CPU"
			echo "        ${R[schedcpu:$k]:--} of the drain (its passes run one at a time: at 100 % they are the ceiling)"
		done
		echo "      (version-major: all keys' version 1, then all keys' version 2, ...; key-major: all versions of"
		echo "      one key, then the next key's)"
		echo "      gated / ungated, $REPEAT round(s), interleaved: median gated $(median "${R[rounds_gated]}") tasks/s,"
		echo "        ungated $(median "${R[rounds_plain]}") tasks/s, ratio $(median "${R[rounds_ratio]}") (rounds:${R[rounds_ratio]}); target >= 0.8"
		cpu_bound
		echo "        (the table's gated rows and the profile below are from one more gated drain after the rounds, with"
		echo "        pg_stat_statements tracking every statement; it is not counted in the medians)"
		if [[ -n ${R[profile:gated]:-} ]]; then
			echo "      Where the time went during the version-major drain (pg_stat_statements, track = all, every backend"
			echo "      and the scheduler; the claim's time includes its waits; top 8 by total time):"
			printf '   %8s %8s %9s %8s  %s\n' calls total_s mean_ms blks/call statement
			echo "${R[profile:gated]}"
		fi
	fi
	if runs 3 && ! only_3a; then
		echo "   b) Passes by hand, scheduler disabled: SELECT schedq._promote_once(now() + '2 years') until none is left,"
		echo "      one autocommit transaction per pass (up to $PROMOTE_BATCH tasks each), $PROMOTE_TASKS tasks due next year; psql wall time"
		printf '      %-42s %8s %9s  %s\n' "" seconds tasks/s "after"
		printf '      %-42s %8s %9s  %s\n' "schedq, ungated tasks" "$(printf '%.3f' "${R[promote_s:future]}")" "$(rate "$PROMOTE_TASKS" "${R[promote_s:future]}")" "${R[promote_state:future]}"
		printf '      %-42s %8s %9s  %s\n' "schedq, lock-key tasks ($LOCK_KEYS keys), judged" "$(printf '%.3f' "${R[promote_s:futlock]}")" "$(rate "$PROMOTE_TASKS" "${R[promote_s:futlock]}")" "${R[promote_state:futlock]}"
		printf '      %-42s %8s %9s  %s\n' "baseline: raw UPDATE of 1000 rows a time" "$(printf '%.3f' "${R[promote_s:raw]}")" "$(rate "$PROMOTE_TASKS" "${R[promote_s:raw]}")" "${R[promote_n:raw]} rows flipped"
		for k in future futlock raw; do
			[[ -s $TMP/$k.plans ]] || continue
			echo "      The middle pass (pass ${LOOP_MID:-?}) of \"$k\" under auto_explain (ANALYZE, BUFFERS), by statement, with the"
			echo "      plan nodes whose work grows with the number of due rows or the table:"
			plan_summary "$TMP/$k.plans" nodes
		done
	fi

	if runs 4; then
		echo
		echo "4. Idle tick cost: $IDLE_CALLS calls each after $TICK_WARMUP warm-up calls, one psql session, each call its own"
		echo "   transaction timed by psql's \\timing (end to end over the unix socket, parse included); ms.  \"1st call\":"
		echo "   the session's first call, which also prepares the pass's plans (the scheduler keeps its plans)"
		echo "   ${R[idle_rows]} pending tasks due next year loaded in $(f1 "${R[idle_load_s]}") s (submit_many, 2 sessions, + VACUUM)"
		printf '   %-44s %7s %7s %7s %7s %7s\n' "" mean p50 p99 max "1st call"
		for k in promote_empty promote_full promote_burst reap_empty reap_full; do
			[[ -n ${R[tick:$k]:-} ]] || continue
			case $k in
			promote_burst) label="_promote_once(), after 3a's drain (*)" ;;
			promote_empty) label="_promote_once(), empty table (baseline)" ;;
			promote_full) label="_promote_once(), $IDLE_TASKS future tasks" ;;
			reap_empty) label="_reap_once(), empty table (baseline)" ;;
			reap_full) label="_reap_once(), $IDLE_TASKS future tasks" ;;
			esac
			read -r n mean p50 p95 p99 max min <<<"${R[tick:$k]:-0 - - - - - -}"
			printf '   %-44s %7s %7s %7s %7s %7s\n' "$label" "$mean" "$p50" "$p99" "$max" "${R[cold:$k]:--}"
		done
		if [[ -n ${R[tick:promote_burst]:-} ]]; then
			echo "   (*) measured in part 3 right after the version-major drain, with the live scheduler running: its"
			echo "       $GATED completions each left a row in schedq.gate_event, which the scheduler deleted; the table"
			echo "       then had ${R[burst_pages]} pages, which every pass reads (DELETE ... seq scan) until autovacuum"
			echo "       truncates it; the empty-table and 1M rows above start from a vacuumed gate_event"
		fi
		echo
		echo "   The live scheduler's statements during ${R[ticks]:-?} ticks with $IDLE_TASKS future tasks (auto_explain, ANALYZE,"
		echo "   BUFFERS; times include auto_explain's instrumentation; mean hit = shared buffers of the top node):"
		plan_summary "$TMP/plans.log"
		echo "   (full plans in the appendix below)"
	fi

	if runs 3; then
		for k in future futlock raw; do
			[[ -s $TMP/$k.plans ]] || continue
			echo
			echo "APPENDIX: part 3b, \"$k\", the middle pass's plans (auto_explain; each statement's first run)"
			plan_dedupe "$TMP/$k.plans" | sed 's/^/  /'
		done
	fi
	if runs 4 && [[ -s $TMP/plans.log ]]; then
		echo
		echo "APPENDIX: the live scheduler's plans, ${R[ticks]:-?} ticks, $IDLE_TASKS future tasks (auto_explain; each statement's first run)"
		plan_dedupe "$TMP/plans.log" | sed 's/^/  /'
	fi

	if ((${#PROBLEMS[@]} > 0)); then
		echo
		echo "PROBLEMS"
		for p in "${PROBLEMS[@]}"; do echo "   - $p"; done
	fi

	echo
	echo "SUMMARY"
	printf '  %-36s %-38s %-44s %s\n' measure schedq baseline target
	if runs 1; then
		read -r n waited p50 p95 p99 max min <<<"${R[lat:schedq]}"
		local s1="p50 $p50  p99 $p99  max $max ms" t1
		t1="p99 < 5 ms: $(target "$n" "$LAT_TASKS" "$p99 < 5")"
		read -r n waited p50 p95 p99 max min <<<"${R[lat:raw]}"
		printf '  %-36s %-38s %-44s %s\n' "1. submit->claim, ungated" "$s1" "NOTIFY: p50 $p50  p99 $p99  max $max" "$t1"
		read -r n waited p50 p95 p99 max min <<<"${R[lat:gated]}"
		printf '  %-36s %-38s %-44s %s\n' "   submit->claim, via scheduler" "p50 $p50  p99 $p99  max $max ms" "(same baseline)" "p99 < 5 ms: $(target "$n" "$LAT_TASKS" "$p99 < 5")"
	fi
	if runs 2; then
		read -r n waited p50 p95 p99 max min <<<"${R[due:schedq]}"
		local s2="p50 $p50  p99 $p99  max $max ms" t2
		t2="<= 20 ms: $(target "$n" "$DUE_TASKS" "$p99 <= 20 && $max <= 20 && $min >= 0")"
		read -r n waited p50 p95 p99 max min <<<"${R[due:raw]}"
		printf '  %-36s %-38s %-44s %s\n' "2. due-time lateness" "$s2" "poll 10 ms: p50 $p50  p99 $p99  max $max" "$t2"
	fi
	if runs 3; then
		printf '  %-36s %-38s %-44s %s\n' "3a. gated drain, $GATED tasks" "$(rate "$GATED" "${R[drain_s:gated]}") tasks/s (${R[drain_s:gated]} s)" \
			"ungated: $(rate "$GATED" "${R[drain_s:plain]}") tasks/s (${R[drain_s:plain]} s)" "-"
		printf '  %-36s %-38s %-44s %s\n' "    gated/ungated, $REPEAT round(s)" "median ratio $(median "${R[rounds_ratio]}")" \
			"rounds:${R[rounds_ratio]}" ">= 0.8: $(ok_if "$(median "${R[rounds_ratio]}") >= 0.8")"
		if [[ -n ${R[drain_s:keymajor]:-} ]]; then
			printf '  %-36s %-38s %-44s %s\n' "    key-major order, ${R[n:keymajor]} tasks" "$(rate "${R[n:keymajor]}" "${R[drain_s:keymajor]}") tasks/s, active $(cut -d' ' -f1 <<<"${R[active:keymajor]}") of $MAX_ACTIVE" \
				"version-major: active $(cut -d' ' -f1 <<<"${R[active:gated]}") of $MAX_ACTIVE" "-"
		fi
	fi
	if runs 3 && ! only_3a; then
		printf '  %-36s %-38s %-44s %s\n' "3b. promotion passes, ungated" "$(rate "$PROMOTE_TASKS" "${R[promote_s:future]}") tasks/s" \
			"raw UPDATE: $(rate "$PROMOTE_TASKS" "${R[promote_s:raw]}") rows/s" "-"
		printf '  %-36s %-38s %-44s %s\n' "    promotion passes, lock keys" "$(rate "$PROMOTE_TASKS" "${R[promote_s:futlock]}") tasks/s judged" "(same baseline)" "-"
	fi
	if runs 4; then
		read -r n mean p50 p95 p99 max min <<<"${R[tick:promote_full]}"
		local s4="mean $mean  p99 $p99 ms" t4
		t4="< 1 ms: $(ok_if "$mean < 1 && $p99 < 1")"
		read -r n mean p50 p95 p99 max min <<<"${R[tick:promote_empty]}"
		printf '  %-36s %-38s %-44s %s\n' "4. idle _promote_once, $IDLE_TASKS fut." "$s4" "empty table: mean $mean  p99 $p99" "$t4"
	fi
	echo
	echo "  total wall time $((T_END - T_START)) s"

}

T_END=$(date +%s)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
OTHERS_AFTER=$(other_servers)
echo >&2
if [[ -n $OUT ]]; then
	report | tee "$OUT"
	echo "$BENCH_NAME: report written to $OUT" >&2
else
	report
fi
if ((FAILED)); then
	echo "$BENCH_NAME: some parts failed or did not check out (see PROBLEMS)" >&2
	exit 1
fi

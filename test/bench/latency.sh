#!/usr/bin/env bash
# test/bench/latency.sh -- submit -> start latency seen from the clients,
# with idle workers waiting, and where each part of it goes
#
#   bash test/bench/latency.sh          (after `make install`; 3 to 4 minutes)
#
# Starts a throwaway PostgreSQL server with schedq preloaded and
# track_commit_timestamp on.  BENCH_WORKERS (8) consumers (latency.c, one
# libpq connection each, over the unix socket) wait for work; one producer
# submits BENCH_TASKS tasks one at a time, one every BENCH_GAP_MS ms, so
# that every worker is back waiting when the next task comes.  Each task's
# way from the producer's call to a worker holding it, in stamps of one
# clock (CLOCK_REALTIME in the clients, the same clock in the server):
#
#   send     the producer's clock before it sends the submit
#   stmt     statement_timestamp() of the submit (its Bind message read)
#   commit   pg_xact_commit_timestamp() of the submit's transaction: the
#            commit record's stamp, taken before the WAL flush and before
#            the transaction becomes visible and wakes anyone
#   look     schedq: the task's started_at, the clock the claim reads right
#            before the look that takes it (after its wake-up);
#            raw: statement_timestamp() of the claim that takes it
#   claimed  clock_timestamp() in the claiming statement, right after the
#            claim returned its row (before the claim's commit)
#   recv     the worker's clock once the claim's result is in (its commit
#            and the way back included)
#
# and the parts reported: send -> stmt (the way in, bind), stmt -> commit
# (the submit and its commit record), commit -> look (the WAL flush, the
# transaction made visible, the wake-up and the waiter scheduled; in the
# await and notify modes also the return to the client and the claim's way
# in), look -> claimed (the claim itself), claimed -> recv (the claim's
# commit and the way back); total = send -> recv.  Percentiles of each part
# are taken on their own (they do not add up to the total's).
#
# Modes, interleaved in each round:
#   raw     the baseline (as scheduler.sh's): the plain table of
#           raw_setup.sql; the producer inserts a row and pg_notify()s in one
#           statement; each worker LISTENs, claims with UPDATE ... FOR UPDATE
#           SKIP LOCKED and, when that finds nothing, waits in poll(2) for a
#           notification (every notification wakes all of them)
#   claim   schedq.submit; the workers wait in
#           schedq.claim('lat', queues => '{lat}', wait => '1 s')
#   await   schedq.submit; the workers wait in CALL schedq.await_task(...),
#           then claim (wait => 0)
# A task "waited" when the worker's waiting statement (claim, CALL, poll)
# began before the task's commit.  The workers complete each task.
#
# Environment (defaults in brackets):
#   PG_CONFIG                  pg_config of the server [PostgreSQL 15]
#   BENCH_ROUNDS [5]           rounds; medians of the rounds' percentiles
#   BENCH_TASKS [1000]         tasks per mode and round
#   BENCH_GAP_MS [5]           pause after each submit
#   BENCH_WORKERS [8]          waiting workers
#   BENCH_MODES ["raw claim await"]
#   BENCH_SYNCHRONOUS_COMMIT [on]  the server's
#   BENCH_SUBMIT_SYNC          if set, the producer's synchronous_commit
#                              (e.g. off: the submit does not wait for its
#                              WAL flush; the workers' commits still do)
#   BENCH_SERVER_CONF          extra postgresql.conf lines
#   BENCH_OUT                  if set, the report is also written there
#
# Target (printed as met / NOT met): claim mode, total p50 <= 0.7 ms and
# p99 <= 1.5 ms.  Run as root; the server and the clients run as the OS
# user postgres.  Needs a C compiler and libpq's headers for latency.c.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=latency
# shellcheck source=lib.sh
source "$HERE/lib.sh"

ROUNDS=${BENCH_ROUNDS:-5}
TASKS=${BENCH_TASKS:-1000}
GAP_MS=${BENCH_GAP_MS:-5}
WORKERS=${BENCH_WORKERS:-8}
MODES=${BENCH_MODES:-"raw claim await"}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-on}
SUBMIT_SYNC=${BENCH_SUBMIT_SYNC:-}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
DB=bench

for v in ROUNDS TASKS GAP_MS WORKERS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "BENCH_$v must be a positive integer, not '${!v}'"
done
for m in $MODES; do
	[[ $m == raw || $m == claim || $m == await ]] || die "BENCH_MODES lists raw, claim or await, not '$MODES'"
done
[[ -z $SUBMIT_SYNC || $SUBMIT_SYNC =~ ^(on|off|local|remote_write|remote_apply)$ ]] ||
	die "BENCH_SUBMIT_SYNC must be a synchronous_commit value, not '$SUBMIT_SYNC'"
bench_check_tools initdb pg_ctl psql

bench_init

bench_libpq_client latency
[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/latency"
bench_copy "$HERE/raw_setup.sql"

bench_start_server "track_commit_timestamp = on
synchronous_commit = $SYNC_COMMIT
$EXTRA_CONF"
bench_create_db "$DB" raw

psql_q >/dev/null <<'EOF'
-- microseconds since the epoch, as the clients' stamps
CREATE FUNCTION us(timestamptz) RETURNS bigint IMMUTABLE LANGUAGE sql
AS 'SELECT (extract(epoch FROM $1) * 1000000)::bigint';
-- the producer's lines: one per task
CREATE TABLE lat_p (mode text, round int, send bigint, ack bigint, id bigint,
                    stmt bigint, after bigint, xid text, commit bigint);
-- the workers' lines: one per claimed task
CREATE TABLE lat_c (mode text, round int, wait bigint, woke bigint, recv bigint,
                    id bigint, c_stmt bigint, look bigint, claimed bigint);
CREATE VIEW lat_ms AS
SELECT p.mode, p.round, p.id,
       (c.recv - p.send) / 1000.0 AS total,
       (p.stmt - p.send) / 1000.0 AS send_stmt,
       (p.commit - p.stmt) / 1000.0 AS stmt_commit,
       (c.look - p.commit) / 1000.0 AS commit_look,
       (c.claimed - c.look) / 1000.0 AS look_claimed,
       (c.recv - c.claimed) / 1000.0 AS claimed_recv,
       (p.after - p.stmt) / 1000.0 AS submit_exec,
       (p.ack - p.commit) / 1000.0 AS commit_ack,
       (c.woke - p.commit) / 1000.0 AS commit_woke,
       c.wait < p.commit AS waited
  FROM lat_p p JOIN lat_c c USING (mode, round, id);
EOF

PGVER=$(psql_q -c "SHOW server_version" | cut -d' ' -f1)
SCHEDQ_VER=$(psql_q -c "SELECT extversion FROM pg_extension WHERE extname = 'schedq'")
FSYNC=$(psql_q -c "SHOW fsync")
CONNINFO="host=$TMP port=$PORT dbname=$DB user=postgres"

# The statements of a mode: SUBMIT, CLAIM, COMPLETE, WAIT; CMODE (latency.c -m).
# Every claim returns id, what complete takes, and the stamps c_stmt, look
# (NULL: read from the task's started_at afterwards), claimed.
statements() {
	case $1 in
	raw)
		SUBMIT="WITH i AS (INSERT INTO raw_job (payload) VALUES ('{}') RETURNING id)
		        SELECT i.id, us(statement_timestamp()), us(clock_timestamp()), pg_current_xact_id()
		          FROM i, pg_notify('raw_job', '') AS n"
		CLAIM="WITH c AS (
		         UPDATE raw_job SET status = 'running', claimed_by = 'lat', locked_at = clock_timestamp()
		          WHERE id = (SELECT id FROM raw_job WHERE status = 'available'
		                       ORDER BY priority DESC, run_at, id LIMIT 1
		                       FOR UPDATE SKIP LOCKED)
		         RETURNING id)
		       SELECT id, id, us(statement_timestamp()), us(statement_timestamp()), us(clock_timestamp()) FROM c"
		COMPLETE="UPDATE raw_job SET status = 'done' WHERE id = \$1::bigint"
		WAIT=''
		CMODE=notify
		;;
	claim | await)
		SUBMIT="SELECT id, us(statement_timestamp()), us(clock_timestamp()), pg_current_xact_id()
		          FROM schedq.submit('lat', '{}', queue => 'lat') AS id"
		local w="'1 s'"
		CMODE=block
		WAIT=''
		if [[ $1 == await ]]; then
			w="'0'"
			CMODE=await
			WAIT="CALL schedq.await_task(queues => '{lat}', wait => '1 s')"
		fi
		CLAIM="SELECT id, token, us(statement_timestamp()), NULL::bigint, us(clock_timestamp())
		         FROM schedq.claim('lat', queues => '{lat}', wait => $w)"
		COMPLETE="SELECT schedq.complete(\$1)"
		;;
	esac
}

# waiting MODE: how many of the workers are in their waiting state.
waiting() {
	# PostgreSQL 17 and later name schedq's wait events, older ones say Extension
	local cond="wait_event LIKE 'Schedq%' OR wait_event = 'Extension'"
	[[ $1 == raw ]] && cond="state = 'idle' AND query LIKE 'LISTEN%' OR state = 'idle' AND query LIKE 'WITH c AS%'"
	psql_q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lat-worker' AND ($cond)"
}

declare -A R
run_mode() { # MODE ROUND
	local mode=$1 round=$2 i k pids=() rc=0 claimed n setup=''
	statements "$mode"
	psql_q >/dev/null <<EOF
DELETE FROM schedq.task;
TRUNCATE raw_job;
VACUUM (ANALYZE) schedq.task, raw_job;
EOF
	for ((k = 1; k <= WORKERS; k++)); do
		local args=(-r consumer -m "$CMODE" -c "$CLAIM" -f "$COMPLETE" -i 3000)
		[[ -z $WAIT ]] || args+=(-w "$WAIT")
		[[ $CMODE != notify ]] || args+=(-l raw_job)
		as_pg "$TMP/latency" -d "$CONNINFO application_name=lat-worker" "${args[@]}" \
			>"$TMP/c.$k.out" 2>"$TMP/c.$k.err" &
		pids+=($!)
		CHILDREN+=($!)
	done
	# every worker connected and waiting (for the await mode the check
	# catches those in the CALL; a worker between its looks is counted
	# as soon as it waits again)
	for ((i = 0; i < 200; i++)); do
		n=$(waiting "$mode")
		((n >= WORKERS)) && break
		sleep 0.05
	done
	((n >= WORKERS)) || log "$mode round $round: only $n of $WORKERS workers seen waiting after 10 s"
	[[ -z $SUBMIT_SYNC ]] || setup="SET synchronous_commit = $SUBMIT_SYNC"
	R[load:$mode:$round]=$(cut -d' ' -f1 /proc/loadavg)
	as_pg "$TMP/latency" -d "$CONNINFO application_name=lat-producer" -r producer \
		-s "$SUBMIT" -n "$TASKS" -g $((GAP_MS * 1000)) ${setup:+-S "$setup"} >"$TMP/p.out" 2>"$TMP/p.err" ||
		{ cat "$TMP/p.err" >&2; die "the $mode producer failed"; }
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	CHILDREN=()
	((rc == 0)) || { cat "$TMP"/c.*.err >&2; die "a $mode worker failed"; }
	cat "$TMP"/c.*.out >"$TMP/c.out"
	chmod 0644 "$TMP/p.out" "$TMP/c.out"
	psql_q >/dev/null <<EOF
\\copy lat_p (send, ack, id, stmt, after, xid) FROM '$TMP/p.out' WITH (DELIMITER ' ')
\\copy lat_c (wait, woke, recv, id, c_stmt, look, claimed) FROM '$TMP/c.out' WITH (DELIMITER ' ')
UPDATE lat_p SET mode = '$mode', round = $round, commit = us(pg_xact_commit_timestamp(xid::xid)) WHERE mode IS NULL;
UPDATE lat_c SET mode = '$mode', round = $round WHERE mode IS NULL;
UPDATE lat_c c SET look = us(t.started_at) FROM schedq.task t
 WHERE c.mode = '$mode' AND c.round = $round AND c.look IS NULL AND t.id = c.id;
EOF
	claimed=$(psql_q -c "SELECT count(*) FROM lat_c WHERE mode = '$mode' AND round = $round")
	((claimed == TASKS)) || die "$mode round $round: the workers claimed $claimed of $TASKS tasks"
	log "$(psql_q -F' ' -c "SELECT format('%-5s round %s: load %s, %s tasks (%s waited), total p50 %s p99 %s ms',
	         '$mode', $round, '${R[load:$mode:$round]}', count(*), count(*) FILTER (WHERE waited),
	         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY total)::numeric, 3),
	         round(percentile_cont(0.99) WITHIN GROUP (ORDER BY total)::numeric, 3))
	       FROM lat_ms WHERE mode = '$mode' AND round = $round")"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)
for ((round = 1; round <= ROUNDS; round++)); do
	for mode in $MODES; do
		run_mode "$mode" "$round"
	done
done
T_END=$(date +%s)
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# The medians over the rounds of each part's p50, p95 and p99, in ms.
PARTS="total send_stmt stmt_commit commit_look look_claimed claimed_recv submit_exec commit_ack commit_woke"
psql_q >/dev/null <<EOF
CREATE TABLE lat_round AS
SELECT mode, round, part,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) AS p95,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
  FROM lat_ms,
       LATERAL (VALUES $(for p in $PARTS; do printf "('%s', %s)," "$p" "$p"; done | sed 's/,$//')) AS v(part, ms)
 WHERE ms IS NOT NULL
 GROUP BY 1, 2, 3;
EOF

report() {
	local mode part label sub=''
	[[ -z $SUBMIT_SYNC ]] || sub=" (the producer: $SUBMIT_SYNC)"
	echo "schedq benchmark: submit -> start latency, $WORKERS waiting workers, one producer (one task at a time)"
	echo
	echo "  server    PostgreSQL $PGVER, schedq $SCHEDQ_VER, $(nproc) CPU(s), fsync=$FSYNC, synchronous_commit=$SYNC_COMMIT$sub,"
	echo "            track_commit_timestamp=on; clients: test/bench/latency.c over the unix socket"
	[[ -z $EXTRA_CONF ]] || echo "  extra     postgresql.conf: $(tr '\n' ';' <<<"$EXTRA_CONF" | sed 's/;$//')"
	echo "  runs      $ROUNDS rounds x modes ($MODES), $TASKS tasks each, one every $GAP_MS ms;"
	echo "            figures: the median over the rounds of each round's percentile, ms"
	echo "  machine   load average $LOAD_START before, $LOAD_END after; per round (mode: 1-minute load at its start):"
	for mode in $MODES; do
		printf '            %-6s' "$mode"
		for ((round = 1; round <= ROUNDS; round++)); do printf ' %s' "${R[load:$mode:$round]}"; done
		echo
	done
	for mode in $MODES; do
		echo
		case $mode in
		raw) label="raw: plain table + pg_notify, workers LISTEN and claim with SKIP LOCKED" ;;
		claim) label="schedq: workers waiting in claim(wait => '1 s')" ;;
		await) label="schedq: workers waiting in CALL await_task(wait => '1 s'), then claim" ;;
		esac
		echo "$label"
		psql_q -c "SELECT format('  %s tasks, %s waited (the worker was waiting before the commit)', count(*), count(*) FILTER (WHERE waited))
		             FROM lat_ms WHERE mode = '$mode'"
		printf '  %-52s %7s %7s %7s   %s\n' "" p50 p95 p99 "rounds' p50 / p99"
		for part in $PARTS; do
			case $part in
			total) label="total: the producer sends -> a worker has the row" ;;
			send_stmt) label="  send -> submit statement starts (way in, bind)" ;;
			stmt_commit) label="  submit statement -> its commit record" ;;
			commit_look) label="  commit record -> the claim's look" ;;
			look_claimed) label="  look -> claim returned its row" ;;
			claimed_recv) label="  claim returned -> worker has it (commit, way back)" ;;
			submit_exec) label="  (of stmt -> commit: the submit statement itself)" ;;
			commit_ack) label="  (commit record -> producer has its answer)" ;;
			commit_woke) label="  (commit record -> worker woken in the client)" ;;
			esac
			psql_q -F' ' -c "SELECT format('  %-52s %7s %7s %7s   %s / %s', '${label//\'/\'\'}',
			         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY p50)::numeric, 3),
			         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY p95)::numeric, 3),
			         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY p99)::numeric, 3),
			         string_agg(round(p50::numeric, 3)::text, ' ' ORDER BY round),
			         string_agg(round(p99::numeric, 3)::text, ' ' ORDER BY round))
			       FROM lat_round WHERE mode = '$mode' AND part = '$part' HAVING count(*) > 0"
		done
	done
	if [[ " $MODES " == *" raw "* ]]; then
		echo
		echo "schedq / raw, total, the median of the rounds' ratios:"
		for mode in $MODES; do
			[[ $mode != raw ]] || continue
			psql_q -c "SELECT format('  %-6s p50 %s  p99 %s   (rounds'' p50 ratios: %s)', '$mode',
			         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY s.p50 / r.p50)::numeric, 2),
			         round(percentile_cont(0.5) WITHIN GROUP (ORDER BY s.p99 / r.p99)::numeric, 2),
			         string_agg(round((s.p50 / r.p50)::numeric, 2)::text, ' ' ORDER BY s.round))
			       FROM lat_round s JOIN lat_round r USING (round, part)
			      WHERE s.mode = '$mode' AND r.mode = 'raw' AND part = 'total'"
		done
	fi
	if [[ " $MODES " == *" claim "* ]]; then
		echo
		psql_q -c "SELECT format('target, claim mode: total p50 %s <= 0.7 ms and p99 %s <= 1.5 ms: %s',
		         round(p50::numeric, 3), round(p99::numeric, 3),
		         CASE WHEN p50 <= 0.7 AND p99 <= 1.5 THEN 'met' ELSE 'NOT met' END)
		       FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY p50) AS p50,
		                    percentile_cont(0.5) WITHIN GROUP (ORDER BY p99) AS p99
		               FROM lat_round WHERE mode = 'claim' AND part = 'total') AS m"
	fi
	echo
	echo "  wall time $((T_END - T_START)) s"
}

echo >&2
if [[ -n $OUT ]]; then
	report | tee "$OUT"
	echo "$BENCH_NAME: report written to $OUT" >&2
else
	report
fi

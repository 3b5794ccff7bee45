#!/usr/bin/env bash
# test/bench/periodic.sh -- how precisely periodic tasks fire
#
#   bash test/bench/periodic.sh        (after `make install`; about 1.5 minutes)
#
# Starts a throwaway PostgreSQL server with schedq preloaded
# (schedq.enabled = on) and runs two cases, one after the other, on it:
#
#   baseline   1 schedule
#   load       PERIODIC_SCHEDULES schedules (default 1,000)
#
# all with the schedule PERIODIC_SCHEDULE (default '*/2 * * * * *': every
# even second), distinct names, tasks in a dedicated queue.  Every schedule
# of a case is created in one transaction at a moment that gives them all
# the same first tick; the case runs for PERIODIC_SECONDS (default 30) and
# ends halfway between two ticks, when every schedule is disabled at once.
# A disabled schedule keeps its next_run, the first tick it did not
# process, so every tick before it is known to have been fired, skipped
# for overlap, or passed over (see "missing").  Meanwhile
# PERIODIC_CONSUMERS pgbench clients (default 2) claim (n => 100, waiting up
# to 1 s) and complete the tasks, in one statement, so that a tick's task
# is done before the next tick and no tick is skipped for overlap.
#
# Measured, over every task the schedules made:
#   lateness   = created_at - run_at.  run_at is the tick; created_at is
#                clock_timestamp() when the scheduler inserted the task, so
#                this is how late the scheduler fired it (its wake-up plus
#                its place in the tick's one INSERT ... SELECT), as seen by
#                the server's own clock.  p50 / p95 / p99 / max in ms.
#   first      the lateness of the first task of each tick (the wake-up
#                alone), and the spread of a tick (last - first created_at).
#   claimed    = started_at - run_at, when a consumer got the task: adds
#                the commit of the tick and the consumers' own pace.
#   ticks      fired vs expected (each schedule's ticks from its first one
#                to its final next_run), skipped (periodic.skipped, i.e.
#                overlap), missing (neither: passed over by a pass more than
#                a period late), ticks that made two tasks, and the
#                periodic_fired / periodic_skipped_overlap metrics as a
#                cross-check.
# Target: p99 lateness under PERIODIC_TARGET_P99_MS (default 20) ms with
# 1,000 schedules.
#
# Comparison (not measured; pg_cron is not installed): pg_cron's schedules
# are 5-field cron (one-minute resolution) or '[1-59] seconds' intervals,
# and its jobs start on whole seconds at best.  schedq takes 6-field cron
# with seconds and fires within the milliseconds this reports.
#
# Environment:
#   PG_CONFIG               pg_config of the server to use (default PostgreSQL 15)
#   PERIODIC_SECONDS        length of each case (default 30)
#   PERIODIC_SCHEDULES      schedules of the load case (default 1000)
#   PERIODIC_SCHEDULE       the schedule (default '*/2 * * * * *')
#   PERIODIC_CONSUMERS      consumer connections (default 2)
#   PERIODIC_TARGET_P99_MS  target p99 lateness of the load case (default 20)
#   BENCH_SERVER_CONF       extra postgresql.conf lines
#   BENCH_OUT               if set, the report is also written to this file
#
# Run as root, the server and every client run as the OS user postgres.
# Exit status: 0 when both cases ran, fired every expected tick and the
# load case met the target; 1 when a case could not run; 2 when a tick
# went missing or the target was missed.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=periodic
# shellcheck source=lib.sh
source "$HERE/lib.sh"
DURATION=${PERIODIC_SECONDS:-30}
NSCHED=${PERIODIC_SCHEDULES:-1000}
SCHEDULE=${PERIODIC_SCHEDULE:-'*/2 * * * * *'}
CONSUMERS=${PERIODIC_CONSUMERS:-2}
TARGET=${PERIODIC_TARGET_P99_MS:-20}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
DB=bench
QUEUE=periodic_bench

[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "PERIODIC_SECONDS must be a positive integer, not '$DURATION'"
[[ $NSCHED =~ ^[1-9][0-9]*$ ]] || die "PERIODIC_SCHEDULES must be a positive integer, not '$NSCHED'"
[[ $CONSUMERS =~ ^[1-9][0-9]*$ ]] || die "PERIODIC_CONSUMERS must be a positive integer, not '$CONSUMERS'"
[[ $TARGET =~ ^[0-9]+([.][0-9]+)?$ ]] || die "PERIODIC_TARGET_P99_MS must be a number, not '$TARGET'"
[[ $SCHEDULE != *\'* ]] || die "PERIODIC_SCHEDULE must not contain a quote"
bench_check_tools initdb pg_ctl psql pgbench

# ---------------------------------------------------------------------------
# Throwaway server (lib.sh) and the consumer script
# ---------------------------------------------------------------------------
PGBENCH_PID=
stop_consumers() {
	if [[ -n $PGBENCH_PID ]]; then
		kill "$PGBENCH_PID" 2>/dev/null || true
		wait "$PGBENCH_PID" 2>/dev/null || true
		PGBENCH_PID=
	fi
}
BENCH_CLEANUP_HOOK=stop_consumers
bench_init

cat >"$TMP/consume.sql" <<EOF
SELECT count(*) FILTER (WHERE schedq.complete(token))
  FROM schedq.claim('consumer' || :client_id, queues => '{$QUEUE}', n => 100, wait => '1 second');
EOF
chmod 0644 "$TMP/consume.sql"
[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/consume.sql"

bench_start_server "schedq.enabled = on
$EXTRA_CONF"
as_pg "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$TMP" -p "$PORT" -U postgres -d postgres \
	-c "CREATE DATABASE $DB" >/dev/null
psql_q -c "CREATE EXTENSION schedq" >/dev/null

PGVER=$(psql_q -c "SHOW server_version" | cut -d' ' -f1)
SCHEDQ_VER=$(psql_q -c "SELECT extversion FROM pg_extension WHERE extname = 'schedq'")
NCPU=$(nproc 2>/dev/null || echo '?')
SYNC=$(psql_q -c "SHOW synchronous_commit")
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')

for _ in $(seq 1 100); do
	[[ $(psql_q -c "SELECT count(*) FROM schedq.scheduler_status() WHERE datname = '$DB' AND pid > 0") == 1 ]] && break
	sleep 0.1
done
[[ $(psql_q -c "SELECT count(*) FROM schedq.scheduler_status() WHERE datname = '$DB' AND pid > 0") == 1 ]] ||
	die "no scheduler for database $DB after 10 s"

# now as epoch seconds (fractional), from the server's clock
server_now() { psql_q -c "SELECT extract(epoch FROM clock_timestamp())"; }
# sleep until server epoch time $1
sleep_until() {
	local left
	left=$(calc "$1 - $(server_now)")
	if awk "BEGIN { exit !($left > 0) }"; then sleep "$left"; fi
}

metric() { psql_q -c "SELECT value FROM schedq.metrics() WHERE name = '$1'"; }

# ---------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------
declare -A R # R[case:field]

run_case() { # case-name schedules
	local c=$1 n=$2 first stop state fired0 skipped0 left=0
	log "case $c: $n schedule(s) of '$SCHEDULE', $DURATION s, $CONSUMERS consumer(s)"
	psql_q >/dev/null <<EOF
SET client_min_messages = warning;
DELETE FROM schedq.periodic;
DELETE FROM schedq.task;
DROP TABLE IF EXISTS first_tick;
VACUUM (ANALYZE) schedq.task, schedq.periodic;
EOF
	fired0=$(metric periodic_fired)
	skipped0=$(metric periodic_skipped_overlap)

	# Consumers first; they wait in claim.  Ended below (pg_terminate_backend).
	as_pg "$BINDIR/pgbench" -n -h "$TMP" -p "$PORT" -U postgres -c "$CONSUMERS" -j "$CONSUMERS" \
		-T $((DURATION + 120)) -f "$TMP/consume.sql" "$DB" >"$TMP/pgbench_$c.log" 2>&1 &
	PGBENCH_PID=$!
	for _ in $(seq 1 100); do
		state=$(psql_q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench' AND datname = '$DB'")
		((state >= CONSUMERS)) && break
		sleep 0.1
	done
	((state >= CONSUMERS)) || die "case $c: the consumers did not connect"

	# Create every schedule in one transaction, early in the gap before a
	# tick, so that they all share their first tick; remember it per schedule.
	sleep_until "$(psql_q -c "
		SELECT extract(epoch FROM r) - 0.9 * extract(epoch FROM s - r)
		  FROM (SELECT min(r) AS r, max(r) AS s FROM schedq.next_runs('$SCHEDULE', 'UTC',
		        clock_timestamp() + interval '1 second', 2) r) t")"
	psql_q >/dev/null <<EOF
BEGIN;
SELECT count(schedq.schedule('${c}_' || g, '$SCHEDULE', 'tick', queue => '$QUEUE'))
  FROM generate_series(1, $n) g;
CREATE TABLE first_tick AS SELECT name, next_run FROM schedq.periodic;
COMMIT;
EOF
	first=$(psql_q -c "SELECT extract(epoch FROM min(next_run)) FROM first_tick")
	R[$c:same_first]=$(psql_q -c "SELECT count(DISTINCT next_run) = 1 FROM first_tick")

	# End halfway between the first tick at or after first + DURATION and
	# the one after it.
	stop=$(psql_q -c "
		SELECT extract(epoch FROM min(r) + (max(r) - min(r)) / 2)
		  FROM schedq.next_runs('$SCHEDULE', 'UTC',
		                        to_timestamp($first + $DURATION) - interval '1 microsecond', 2) r")
	sleep_until "$stop"
	# (an UPDATE: one statement, no waiting for a thousand upserts; it
	# waits only for a pass in progress)
	psql_q -c "UPDATE schedq.periodic SET enabled = false" >/dev/null
	R[$c:window]=$(calc "$stop - $first")

	# Let the consumers finish what was fired, then end them.
	for _ in $(seq 1 200); do
		left=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status <> 'done'")
		((left == 0)) && break
		sleep 0.1
	done
	R[$c:undone]=$left
	psql_q -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	            WHERE application_name = 'pgbench' AND datname = '$DB'" >/dev/null
	wait "$PGBENCH_PID" 2>/dev/null || true
	PGBENCH_PID=

	R[$c:schedules]=$n
	# A disabled schedule keeps its next_run: the first tick it did not
	# process.  Every tick before it was fired, skipped, or passed over.
	R[$c:expected]=$(psql_q -c "
		SELECT count(*) FROM first_tick f JOIN schedq.periodic p USING (name),
		       LATERAL schedq.next_runs('$SCHEDULE', 'UTC', f.next_run - interval '1 microsecond', 10000) r
		 WHERE r < p.next_run")
	R[$c:late_stop]=$(psql_q -c "
		SELECT count(*) FROM schedq.periodic
		 WHERE next_run > (SELECT r FROM schedq.next_runs('$SCHEDULE', 'UTC', to_timestamp($stop), 1) r)")
	IFS='|' read -r R[$c:tasks] R[$c:distinct] R[$c:fired] R[$c:skipped] <<<"$(psql_q -c "
		SELECT (SELECT count(*) FROM schedq.task),
		       (SELECT count(*) FROM (SELECT DISTINCT periodic, run_at FROM schedq.task) d),
		       sum(fired), sum(skipped) FROM schedq.periodic")"
	R[$c:m_fired]=$(($(metric periodic_fired) - fired0))
	R[$c:m_skipped]=$(($(metric periodic_skipped_overlap) - skipped0))
	IFS='|' read -r R[$c:p50] R[$c:p95] R[$c:p99] R[$c:max] R[$c:min] <<<"$(psql_q -c "
		WITH t AS (SELECT extract(epoch FROM created_at - run_at) * 1000 AS ms FROM schedq.task)
		SELECT round(percentile_cont(0.50) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		       round(max(ms)::numeric, 2), round(min(ms)::numeric, 2) FROM t")"
	IFS='|' read -r R[$c:ticks] R[$c:w50] R[$c:wmax] R[$c:s50] R[$c:smax] <<<"$(psql_q -c "
		WITH k AS (SELECT run_at,
		                  extract(epoch FROM min(created_at) - run_at) * 1000 AS first_ms,
		                  extract(epoch FROM max(created_at) - min(created_at)) * 1000 AS spread_ms
		             FROM schedq.task GROUP BY run_at)
		SELECT count(*),
		       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY first_ms)::numeric, 2),
		       round(max(first_ms)::numeric, 2),
		       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY spread_ms)::numeric, 2),
		       round(max(spread_ms)::numeric, 2) FROM k")"
	IFS='|' read -r R[$c:c50] R[$c:c99] R[$c:cmax] R[$c:others] <<<"$(psql_q -c "
		WITH t AS (SELECT extract(epoch FROM started_at - run_at) * 1000 AS ms, claimed_by
		             FROM schedq.task WHERE started_at IS NOT NULL)
		SELECT round(percentile_cont(0.50) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		       round(max(ms)::numeric, 2),
		       count(*) FILTER (WHERE claimed_by NOT LIKE 'consumer%') FROM t")"
	R[$c:missing]=$((${R[$c:expected]} - ${R[$c:tasks]} - ${R[$c:skipped]}))
	log "$(printf 'case %s: %d tasks of %d expected ticks, %d skipped; lateness p50 %s p99 %s max %s ms' \
		"$c" "${R[$c:tasks]}" "${R[$c:expected]}" "${R[$c:skipped]}" "${R[$c:p50]}" "${R[$c:p99]}" "${R[$c:max]}")"
}

run_case baseline 1
run_case load "$NSCHED"

# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
VERDICT=0
NOTES=()
for c in baseline load; do
	if [[ ${R[$c:same_first]} != t ]]; then
		NOTES+=("note: case $c: the schedules did not all get the same first tick")
	fi
	if ((${R[$c:others]} != 0)); then
		NOTES+=("note: case $c: ${R[$c:others]} task(s) were claimed by something else than the consumers")
	fi
	if ((${R[$c:late_stop]} != 0)); then
		NOTES+=("note: case $c: disabling waited for a pass in progress; ${R[$c:late_stop]} schedule(s) processed ticks after the planned end (counted)")
	fi
	if ((${R[$c:undone]} != 0)); then
		NOTES+=("note: case $c: ${R[$c:undone]} task(s) still not done 20 s after the end")
	fi
	if ((${R[$c:missing]} != 0 || ${R[$c:tasks]} != ${R[$c:distinct]} || ${R[$c:fired]} != ${R[$c:tasks]})); then
		NOTES+=("FAIL: case $c: ticks missing or doubled (expected ${R[$c:expected]}, tasks ${R[$c:tasks]}, skipped ${R[$c:skipped]}, fired ${R[$c:fired]}, distinct ${R[$c:distinct]})")
		VERDICT=2
	fi
done
TARGET_MET=$(awk "BEGIN { print (${R[load:p99]} < $TARGET) ? \"met\" : \"MISSED\" }")
[[ $TARGET_MET == met ]] || VERDICT=2

report() {
	local c
	echo "schedq periodic precision -- PostgreSQL $PGVER, schedq $SCHEDQ_VER, $NCPU CPU(s), synchronous_commit = $SYNC"
	echo "schedule '$SCHEDULE' (UTC), about $DURATION s per case, $CONSUMERS consumer connection(s) completing the tasks"
	echo "load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER (other work on the machine blurs the numbers)"
	echo
	echo "lateness = created_at - run_at (when the scheduler inserted the task, minus its tick), ms"
	printf '  %-10s %9s %8s %8s %8s %8s %8s\n' case schedules p50 p95 p99 max min
	for c in baseline load; do
		printf '  %-10s %9s %8s %8s %8s %8s %8s\n' "$c" "${R[$c:schedules]}" \
			"${R[$c:p50]}" "${R[$c:p95]}" "${R[$c:p99]}" "${R[$c:max]}" "${R[$c:min]}"
	done
	echo
	echo "per tick: first = lateness of the tick's first task (the wake-up); spread = last - first created_at;"
	echo "claimed = started_at - run_at (a consumer got the task: adds the tick's commit and the consumers' pace); ms"
	printf '  %-10s %6s %10s %10s %10s %10s %11s %11s %11s\n' case ticks 'first p50' 'first max' \
		'spread p50' 'spread max' 'claimed p50' 'claimed p99' 'claimed max'
	for c in baseline load; do
		printf '  %-10s %6s %10s %10s %10s %10s %11s %11s %11s\n' "$c" "${R[$c:ticks]}" \
			"${R[$c:w50]}" "${R[$c:wmax]}" "${R[$c:s50]}" "${R[$c:smax]}" \
			"${R[$c:c50]}" "${R[$c:c99]}" "${R[$c:cmax]}"
	done
	echo
	echo "ticks from the first tick to the end (expected = sum over schedules of the ticks before their final next_run)"
	printf '  %-10s %8s %8s %8s %8s %8s %10s %10s %6s\n' case window expected tasks skipped missing \
		'fired(m)' 'skipped(m)' 'dup'
	for c in baseline load; do
		printf '  %-10s %7ss %8s %8s %8s %8s %10s %10s %6s\n' "$c" "$(printf '%.1f' "${R[$c:window]}")" \
			"${R[$c:expected]}" "${R[$c:tasks]}" "${R[$c:skipped]}" "${R[$c:missing]}" \
			"${R[$c:m_fired]}" "${R[$c:m_skipped]}" "$((${R[$c:tasks]} - ${R[$c:distinct]}))"
	done
	echo "  (m) = delta of schedq.metrics() periodic_fired / periodic_skipped_overlap;"
	echo "  missing = expected - tasks - skipped: ticks passed over without a trace (a pass more than"
	echo "  one period late moves next_run past them); dup = ticks that made two tasks"
	echo
	for c in "${NOTES[@]}"; do echo "  $c"; done
	echo "target: p99 lateness < $TARGET ms with ${R[load:schedules]} schedules: $TARGET_MET (p99 ${R[load:p99]} ms)"
	echo
	echo "comparison: pg_cron (not installed, not measured) takes 5-field cron (one-minute resolution)"
	echo "or '[1-59] seconds' intervals; its jobs start on whole seconds at best, so its timing is in"
	echo "seconds where schedq's is in the milliseconds above, and it has no cron with a seconds field."
}

if [[ -n $OUT ]]; then
	report | tee "$OUT"
	echo "$BENCH_NAME: report written to $OUT" >&2
else
	report
fi
exit "$VERDICT"

#!/usr/bin/env bash
# test/bench/soak.sh -- memory of client backends and of schedq's background
# workers over a long soak (the target: a flat RSS)
#
#   bash test/bench/soak.sh                     (30 minutes, after `make install`)
#   BENCH_SOAK_SECONDS=180 bash test/bench/soak.sh   (a quick check)
#
# A throwaway server (schedq.sql_workers = 2) with BENCH_SOAK_SCHEDULES
# periodic schedules firing every second ('* * * * * *', tasks of kind
# tick) and a backlog of 1,000 no-op tasks (ahead of the first ticks in claim order).  pgbench runs
# BENCH_SOAK_CLIENTS clients of soak_cycle.sql at BENCH_SOAK_RATE cycles a
# second in all (-R; the machine is shared): submit, claim, complete; one
# cycle in 20 also submits a SQL task (run by the built-in executors), one
# in 50 claims 10 and finishes them with complete_many.  The queue is
# drained of nothing: what a cycle claims is replaced by what it submits.
#
# Every BENCH_SOAK_INTERVAL seconds, VmRSS and RssAnon (/proc/PID/status)
# of every process of each class are sampled:
#   client      the pgbench clients' backends
#   scheduler   schedq scheduler (promotion, reaper, periodic ticks)
#   executor    schedq sql executor
#   launcher    schedq launcher
# The first BENCH_SOAK_WARMUP seconds are warm-up (a backend's RSS grows as
# it first touches shared buffers and builds its caches).  The report gives
# per class, over its processes: RssAnon and VmRSS at the start (after the
# warm-up), the middle and the end of the soak (means over the processes),
# and the slope of RssAnon (least squares over the samples after the
# warm-up, kB per 10 minutes; the largest of the processes).  RssAnon is a
# process's private memory, the measure of a leak; VmRSS also counts the
# shared buffers a process has touched, which grows until it has touched
# them all.
#
# Environment (defaults in brackets):
#   PG_CONFIG  BENCH_SOAK_SECONDS [1800]  BENCH_SOAK_WARMUP [30]
#   BENCH_SOAK_INTERVAL [5]  BENCH_SOAK_CLIENTS [4]  BENCH_SOAK_RATE [200]
#   BENCH_SOAK_SCHEDULES [10]  BENCH_SYNCHRONOUS_COMMIT [off]
#   BENCH_SERVER_CONF  BENCH_OUT  BENCH_SOAK_SAMPLES (keep the raw samples
#   in this file: "seconds class pid VmRSS RssAnon")
# Run as root; the server and clients run as the OS user postgres.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=soak
# shellcheck source=lib.sh
source "$HERE/lib.sh"
SECS=${BENCH_SOAK_SECONDS:-1800}
WARMUP=${BENCH_SOAK_WARMUP:-30}
INTERVAL=${BENCH_SOAK_INTERVAL:-5}
CLIENTS=${BENCH_SOAK_CLIENTS:-4}
RATE=${BENCH_SOAK_RATE:-200}
SCHEDULES=${BENCH_SOAK_SCHEDULES:-10}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-off}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
SAMPLES_OUT=${BENCH_SOAK_SAMPLES:-}
DB=bench
for v in SECS WARMUP INTERVAL CLIENTS RATE SCHEDULES; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done

PGB=''
stop_pgbench() { [[ -z $PGB ]] || { kill "$PGB" 2>/dev/null || true; wait "$PGB" 2>/dev/null || true; }; }
BENCH_CLEANUP_HOOK=stop_pgbench
bench_check_tools initdb pg_ctl psql pgbench
bench_init
bench_copy "$HERE/soak_cycle.sql"
bench_start_server "synchronous_commit = $SYNC_COMMIT
schedq.sql_workers = 2
$EXTRA_CONF"
bench_create_db "$DB"
bench_submit "$DB" 1000
psql_q -c "SELECT count(schedq.schedule('soak-' || i, '* * * * * *', 'tick', payload => jsonb_build_object('s', i)))
             FROM generate_series(1, $SCHEDULES) AS i" >/dev/null

# "class pid" of every process sampled
processes() {
	psql_q -F' ' -c "SELECT CASE WHEN application_name = 'pgbench' THEN 'client'
	                             WHEN backend_type = 'schedq scheduler' THEN 'scheduler'
	                             WHEN backend_type = 'schedq sql executor' THEN 'executor'
	                             WHEN backend_type = 'schedq launcher' THEN 'launcher' END, pid
	                   FROM pg_stat_activity
	                  WHERE application_name = 'pgbench' OR backend_type LIKE 'schedq %'
	                  ORDER BY 1, 2"
}

log "soak: $SECS s (+ $WARMUP s warm-up), $CLIENTS clients at $RATE cycles/s, $SCHEDULES schedules every second"
as_pg "$BINDIR/pgbench" -n -M prepared -h "$TMP" -p "$PORT" -U postgres -c "$CLIENTS" -j 2 \
	-R "$RATE" -T $((SECS + WARMUP)) -f "$TMP/soak_cycle.sql" "$DB" >"$TMP/pgbench.out" 2>&1 &
PGB=$!
T0=$(date +%s.%N)
: >"$TMP/samples"
next=0
while kill -0 "$PGB" 2>/dev/null; do
	now=$(calc "$(date +%s.%N) - $T0")
	if awk "BEGIN { exit !($now >= $next) }"; then
		while read -r class pid; do
			[[ -n $pid ]] || continue
			read -r rss anon <<<"$(bench_rss "$pid")"
			[[ $rss == - ]] || echo "$now $class $pid $rss $anon" >>"$TMP/samples"
		done <<<"$(processes)"
		next=$((next + INTERVAL))
	fi
	sleep 0.5
done
rc=0
wait "$PGB" || rc=$?
PGB=''
[[ $rc == 0 ]] || { cat "$TMP/pgbench.out" >&2; die "pgbench failed (exit $rc)"; }
[[ -z $SAMPLES_OUT ]] || cp "$TMP/samples" "$SAMPLES_OUT"
TPS=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$TMP/pgbench.out" | head -n 1)
DONE=$(psql_q -c "SELECT count(*) FILTER (WHERE status = 'done') || ' done (' || count(*) FILTER (WHERE status = 'done' AND kind = 'sql') || ' SQL, ' || count(*) FILTER (WHERE status = 'done' AND kind = 'tick') || ' ticks), ' || count(*) FILTER (WHERE status = 'failed') || ' failed' FROM schedq.task")

report() {
	echo "schedq benchmark: memory over a soak of $SECS s after $WARMUP s of warm-up"
	echo "  $CLIENTS pgbench clients at $RATE cycles/s (soak_cycle.sql; measured $(printf '%.0f' "$TPS")/s), $SCHEDULES schedules every second,"
	echo "  2 SQL executors; tasks: $DONE; samples every $INTERVAL s"
	echo "  kB, means over a class's processes; slope: RssAnon, least squares after the warm-up, kB per 10 min, the largest"
	awk -v w="$WARMUP" -v e="$SECS" '
	$1 >= w {
		k = $2 SUBSEP $3; cls[$2] = 1; pids[$2, $3] = 1
		# the sample nearest each of start, middle, end
		for (m = 0; m < 3; m++) {
			at = w + e * m / 2; d = ($1 - at) < 0 ? at - $1 : $1 - at
			if (!((k, m) in best) || d < best[k, m]) { best[k, m] = d; rss[k, m] = $4; anon[k, m] = $5 }
		}
		n[k]++; sx[k] += $1; sy[k] += $5; sxx[k] += $1 * $1; sxy[k] += $1 * $5
	}
	END {
		printf "  %-10s %5s %26s %26s %14s\n", "class", "procs", "RssAnon start/mid/end", "VmRSS start/mid/end", "slope kB/10min"
		for (c in cls) {
			np = 0; delete a; delete r; slope = ""
			for (pk in pids) {
				split(pk, p, SUBSEP); if (p[1] != c) continue
				k = c SUBSEP p[2]; np++
				for (m = 0; m < 3; m++) { a[m] += anon[k, m]; r[m] += rss[k, m] }
				den = n[k] * sxx[k] - sx[k] * sx[k]
				s = den > 0 ? (n[k] * sxy[k] - sx[k] * sy[k]) / den * 600 : 0
				if (slope == "" || s > slope) slope = s
			}
			printf "  %-10s %5d %26s %26s %14.0f\n", c, np, sprintf("%.0f / %.0f / %.0f", a[0] / np, a[1] / np, a[2] / np),
				sprintf("%.0f / %.0f / %.0f", r[0] / np, r[1] / np, r[2] / np), slope
		}
	}' "$TMP/samples" | sort -k1,1
}
echo >&2
if [[ -n $OUT ]]; then report | tee "$OUT"; else report; fi

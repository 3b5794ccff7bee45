#!/usr/bin/env bash
# test/bench/executor_soak.sh -- memory of the SQL executors over a long run
#
#   bash test/bench/executor_soak.sh     (after `make install`; a few minutes)
#
# Starts a throwaway server (lib.sh; synchronous_commit = off, since what
# is measured is memory, not commit latency) with the default two SQL
# executors, warms them up with BENCH_SOAK_WARMUP tasks, then runs
# BENCH_SOAK_TASKS SQL tasks ('SELECT n', submitted BENCH_SOAK_BATCH at a
# time, each batch drained before the next) and prints, for each executor,
# before and after the soak:
#
#   VmRSS     its resident set, which also counts the shared memory (shared
#             buffers) it has touched
#   RssAnon   its private memory: what a leak makes grow
#   Top used  bytes used by TopMemoryContext itself, from
#             pg_log_backend_memory_contexts (in the server log)
#   Total     the grand total of all its memory contexts
#
# An executor that was replaced during the soak (it exited or was
# restarted) makes the run fail: its figures would compare two processes.
#
# Environment: PG_CONFIG, BENCH_SOAK_TASKS (100000), BENCH_SOAK_WARMUP
# (1000), BENCH_SOAK_BATCH (10000).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=executor_soak
# shellcheck source=test/bench/lib.sh
source "$HERE/lib.sh"

TASKS=${BENCH_SOAK_TASKS:-100000}
WARMUP=${BENCH_SOAK_WARMUP:-1000}
BATCH=${BENCH_SOAK_BATCH:-10000}
DB=postgres

bench_check_tools initdb pg_ctl psql
bench_init
bench_start_server "synchronous_commit = off
schedq.sql_workers = 2"
psql_q -c "CREATE EXTENSION schedq"

executors() {
	psql_q -c "SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity
	            WHERE backend_type = 'schedq sql executor' AND datname = '$DB'"
}

# Wait (at most 30 s) for the two executors; print their pids.
wait_executors() {
	local pids _
	for _ in $(seq 1 300); do
		pids=$(executors)
		if [[ $(wc -w <<<"$pids") == 2 ]]; then
			echo "$pids"
			return 0
		fi
		sleep 0.1
	done
	die "the two SQL executors did not start"
}

# run_tasks N: submit N SQL tasks, BATCH at a time, each batch drained
# before the next.
run_tasks() {
	local left=$1 n live
	while ((left > 0)); do
		n=$((left < BATCH ? left : BATCH))
		psql_q -c "SELECT count(schedq.submit_sql('SELECT ' || i)) FROM generate_series(1, $n) i" >/dev/null
		for _ in $(seq 1 6000); do
			live=$(psql_q -c "SELECT count(*) FROM schedq.task
			                   WHERE status IN ('pending', 'available', 'running')")
			[[ $live == 0 ]] && break
			sleep 0.1
		done
		[[ $live == 0 ]] || die "$live tasks still not done after 10 minutes"
		left=$((left - n))
	done
}

# mem PID: "VmRSS RssAnon Top-used Grand-total" (kB kB bytes bytes).
mem() {
	local pid=$1 rss anon off log top total _
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status")
	off=$(stat -c %s "$TMP/server.log")
	psql_q -c "SELECT pg_log_backend_memory_contexts($pid)" >/dev/null
	for _ in $(seq 1 100); do
		log=$(tail -c +$((off + 1)) "$TMP/server.log")
		top=$(grep -m1 -oP "\[$pid\] LOG:  level: 0; TopMemoryContext: .*; \K\d+(?= used)" <<<"$log" || true)
		total=$(grep -m1 -oP "\[$pid\] LOG:  Grand total: \K\d+(?= bytes)" <<<"$log" || true)
		[[ -n $top && -n $total ]] && break
		sleep 0.1
	done
	[[ -n $top && -n $total ]] || die "executor $pid did not log its memory contexts"
	echo "$rss $anon $top $total"
}

read -r -a pids <<<"$(wait_executors)"
log "executors: ${pids[*]}"
log "warm-up: $WARMUP tasks"
run_tasks "$WARMUP"
declare -A before
for p in "${pids[@]}"; do before[$p]=$(mem "$p"); done
first=$(psql_q -c "SELECT coalesce(max(id), 0) FROM schedq.task")

log "soak: $TASKS tasks, $BATCH at a time"
start=$(date +%s.%N)
run_tasks "$TASKS"
secs=$(calc "$(date +%s.%N) - $start")
[[ $(executors) == "${pids[*]}" ]] ||
	die "the executors changed during the soak: ${pids[*]} -> $(executors)"

echo
echo "$TASKS SQL tasks in $(printf '%.1f' "$secs") s ($(calc "$TASKS / $secs" | cut -d. -f1) tasks/s), two executors"
printf '%-9s %7s  %-21s %-21s %-23s %s\n' executor tasks 'VmRSS kB' 'RssAnon kB' 'Top used bytes' 'Total bytes'
for p in "${pids[@]}"; do
	n=$(psql_q -c "SELECT count(*) FROM schedq.task
	               WHERE id > $first AND claimed_by = 'schedq sql executor $p'")
	read -r r0 a0 t0 g0 <<<"${before[$p]}"
	read -r r1 a1 t1 g1 <<<"$(mem "$p")"
	printf '%-9s %7s  %-21s %-21s %-23s %s\n' "$p" "$n" \
		"$r0 -> $r1" "$a0 -> $a1" "$t0 -> $t1" "$g0 -> $g1"
done

#!/usr/bin/env bash
# test/bench/backlog.sh -- claim + complete cost flat in backlog size,
# history and a held xmin; retention's cost to the claims
#
#   BENCH_REPEAT=3 bash test/bench/backlog.sh   (after `make install`;
#                                                about 35 minutes with the
#                                                defaults on a loaded 2-core
#                                                machine, half of it loading)
#
# One throwaway server, three databases loaded once (submit_many in calls
# of 50,000 over two sessions, bench_submit in lib.sh: the way an
# application loads a backlog, keeping every invariant of the table):
#   small  BENCH_SMALL (200,000) available no-op tasks, and the raw queue
#          (raw_setup.sql) with as many rows
#   big    BENCH_BIG (2,000,000) available tasks
#   hist   BENCH_SMALL available tasks plus BENCH_HISTORY (1,000,000)
#          finished ones (status done, kept as retention keeps them):
#          submitted, then claimed 1,000 at a time and finished with
#          complete_many
# Every measurement is pgbench, BENCH_CLIENTS (16) clients running
# schedq_claim_complete.sql (raw: raw_claim_complete.sql), tasks/s = tps.
# After each run the tasks it finished are deleted and the backlog topped
# up to its size again, then VACUUM (ANALYZE).  Each round, interleaved:
#   A. backlog   small, then big, BENCH_SECONDS each: big / small >= 0.9
#   B. held xmin small without, then with a session of the same database
#                holding a REPEATABLE READ snapshot (taken by a query
#                before pgbench starts) for the whole run, BENCH_HOLD_SECONDS
#                (30) each; the raw queue the same way, for contrast:
#                schedq held / schedq free >= 0.9
#   C. history   small, then hist: hist / small >= 0.9
# Then once:
#   D. retention on hist, as schedq runs it: the reaper of the database
#                deletes the finished tasks past schedq.retention, in its
#                own batches and at its own pace (src/reaper.c).  Pairs of
#                BENCH_SECONDS slices, interleaved: claims with retention
#                off (schedq.retention = -1, reloaded), then claims while
#                the reaper deletes the history (schedq.retention set to
#                the history's age in seconds, reloaded: every history
#                task is past it, the tasks the run finishes are not), at
#                most BENCH_RETENTION_PAIRS pairs or until the history is
#                gone: median of each pair's ratio (deleting / off) >= 0.9,
#                i.e. a cost <= 10 %; and the reaper's rate (history rows
#                gone during the deleting slices / their seconds) and what
#                a million takes at that rate.
#
# Environment (defaults in brackets):
#   PG_CONFIG  BENCH_SECONDS [10]  BENCH_HOLD_SECONDS [20]  BENCH_CLIENTS [16]
#   BENCH_SMALL [200000]  BENCH_BIG [2000000]  BENCH_HISTORY [1000000]
#   BENCH_REPEAT [3]  BENCH_ONLY ["A B C D"; "D" loads only hist]
#   BENCH_RETENTION_PAIRS [10]  BENCH_SYNCHRONOUS_COMMIT [on]
#   BENCH_SERVER_CONF  BENCH_OUT
# Run as root; the server and clients run as the OS user postgres.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=backlog
# shellcheck source=lib.sh
source "$HERE/lib.sh"
DURATION=${BENCH_SECONDS:-10}
HOLD=${BENCH_HOLD_SECONDS:-20}
CLIENTS=${BENCH_CLIENTS:-16}
SMALL=${BENCH_SMALL:-200000}
BIG=${BENCH_BIG:-2000000}
HISTORY=${BENCH_HISTORY:-1000000}
REPEAT=${BENCH_REPEAT:-3}
ONLY=${BENCH_ONLY:-"A B C D"}
PAIRS=${BENCH_RETENTION_PAIRS:-10}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-on}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
CHUNK=50000
for v in DURATION HOLD CLIENTS SMALL BIG HISTORY REPEAT PAIRS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
runs() { [[ " $ONLY " == *" $1 "* ]]; }

bench_check_tools initdb pg_ctl psql pgbench
bench_init
bench_copy "$HERE/raw_setup.sql" "$HERE/raw_claim_complete.sql" "$HERE/schedq_claim_complete.sql"
bench_start_server "synchronous_commit = $SYNC_COMMIT
$EXTRA_CONF"

t0=$(date +%s)
if runs A || runs B || runs C; then
	bench_create_db small raw
	bench_submit small "$SMALL" "" "$CHUNK"
	psql_db small -c "INSERT INTO raw_job (payload) SELECT jsonb_build_object('i', g) FROM generate_series(1, $SMALL) AS g" >/dev/null
fi
runs A && bench_create_db big
runs C || runs D && bench_create_db hist
! runs A || bench_submit big "$BIG" "" "$CHUNK"
if runs C || runs D; then
	bench_submit hist "$HISTORY" "" "$CHUNK"
	psql_db hist >/dev/null <<<"$(for ((i = 0; i < (HISTORY + 999) / 1000; i++)); do
		echo "SELECT schedq.complete_many(array_agg(token)) FROM schedq.claim('history', n => 1000);"
	done)"
	HIST_CUT=$(psql_db hist -c "SELECT max(finished_at) FROM schedq.task WHERE status = 'done'")
	bench_submit hist "$SMALL" "" "$CHUNK"
	log "hist: $(psql_db hist -c "SELECT string_agg(status || ' ' || n, ', ') FROM (SELECT status, count(*) AS n FROM schedq.task GROUP BY 1 ORDER BY 1) s")"
fi
for db in small big hist; do
	psql_db postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 || continue
	psql_db "$db" -c "VACUUM (ANALYZE)" >/dev/null
done
psql_db postgres -c "CHECKPOINT" >/dev/null
log "loaded in $(($(date +%s) - t0)) s"

# refill DB SYS N: delete what the last run finished and top the backlog
# up to N available again (hist keeps its history: finished before HIST_CUT).
refill() {
	local db=$1 sys=$2 n=$3 have
	if [[ $sys == raw ]]; then
		have=$(psql_db "$db" -c "DELETE FROM raw_job WHERE status <> 'available'; SELECT count(*) FROM raw_job")
		((have >= n)) || psql_db "$db" -c "INSERT INTO raw_job (payload) SELECT jsonb_build_object('i', g) FROM generate_series(1, $((n - have))) AS g" >/dev/null
		psql_db "$db" -c "VACUUM (ANALYZE) raw_job" >/dev/null
	else
		have=$(psql_db "$db" -c "DELETE FROM schedq.task WHERE status <> 'available' AND finished_at > '${HIST_CUT:--infinity}'::timestamptz OR status = 'running'; SELECT count(*) FROM schedq.task WHERE status = 'available'")
		((have >= n)) || bench_submit "$db" $((n - have)) "" "$CHUNK"
		psql_db "$db" -c "VACUUM (ANALYZE) schedq.task" >/dev/null
	fi
	psql_db "$db" -c "CHECKPOINT" >/dev/null
}
# measure KEY DB SYS SECONDS: one pgbench run; appends its tasks/s to ALL[KEY]
declare -A ALL
measure() {
	local key=$1 db=$2 sys=$3 secs=$4 n=$SMALL
	[[ $db == big ]] && n=$BIG
	refill "$db" "$sys" "$n"
	[[ -z ${BEFORE_RUN:-} ]] || "$BEFORE_RUN"
	[[ -z ${HOLDING:-} ]] || bench_hold_snapshot "$db" $((secs + 10))
	bench_pgbench "$db" "${sys}_claim_complete.sql" "$CLIENTS" "$secs"
	if [[ -n ${HOLDING:-} ]]; then
		XMIN_AGE=$(bench_xmin_age "$db")
		kill "$HOLD_PID" 2>/dev/null || true
		wait "$HOLD_PID" 2>/dev/null || true
		psql_db "$db" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db' AND query LIKE 'SELECT pg_sleep%'" >/dev/null
	fi
	ALL[$key]+=" $(printf '%.0f' "$PGB_TPS")"
	log "$(printf '%-14s %-6s %-6s %3d s: %6.0f tasks/s%s' "$key" "$db" "$sys" "$secs" "$PGB_TPS" "${HOLDING:+ (xmin age at the end $XMIN_AGE)}")"
}
ratio() { ALL[$1]+=" $(printf '%.2f' "$(calc "${ALL[$2]##* } / ${ALL[$3]##* }")")"; }

LOAD_START=$(loadavg)
T_START=$(date +%s)
for ((round = 1; round <= REPEAT; round++)); do
	[[ $ONLY == D ]] || log "round $round of $REPEAT"
	if runs A; then
		measure small small schedq "$DURATION"
		measure big big schedq "$DURATION"
		ratio r:big big small
	fi
	if runs B; then
		measure free small schedq "$HOLD"
		HOLDING=1 measure held small schedq "$HOLD"
		measure rawfree small raw "$HOLD"
		HOLDING=1 measure rawheld small raw "$HOLD"
		ratio r:held held free
		ratio r:rawheld rawheld rawfree
		ratio r:vsraw held rawheld
	fi
	if runs C; then
		measure fresh small schedq "$DURATION"
		measure hist hist schedq "$DURATION"
		ratio r:hist hist fresh
	fi
done

# D. retention while claims run: the reaper deletes the history
set_retention() {
	psql_db postgres -c "ALTER SYSTEM SET schedq.retention = $1" -c "SELECT pg_reload_conf()" >/dev/null
}
hist_left() { psql_db hist -c "SELECT count(*) FROM schedq.task WHERE finished_at <= '$HIST_CUT'"; }
# CPU seconds the hist scheduler (whose reaper deletes) has used so far
sched_cpu() {
	[[ -n ${SCHED_PID:-} ]] || SCHED_PID=$(psql_db hist -c "SELECT pid FROM pg_stat_activity WHERE datname = 'hist' AND backend_type = 'schedq scheduler'")
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$SCHED_PID/stat" 2>/dev/null || echo 0
}
start_off() { OFF_CPU1=$(sched_cpu); OFF_T1=$(date +%s.%N); }
# every history task past retention, the tasks this run finishes not (for
# as many seconds as the history is old: longer than a slice)
expire_history() {
	HIST_AGE=$(psql_db hist -c "SELECT floor(extract(epoch FROM now() - '$HIST_CUT'::timestamptz))::int")
	set_retention "$HIST_AGE"
	HIST_BEFORE=$(hist_left)
	REAP_CPU1=$(sched_cpu)
	REAP_T1=$(date +%s.%N)
}
if runs D; then
	left=$(hist_left)
	REAP_S=0
	REAPED=0
	REAP_CPU=0
	OFF_S=0
	OFF_CPU=0
	for ((pair = 1; pair <= PAIRS && left > 0; pair++)); do
		set_retention -1
		BEFORE_RUN=start_off measure off hist schedq "$DURATION"
		OFF_CPU=$(calc "$OFF_CPU + $(sched_cpu) - $OFF_CPU1")
		OFF_S=$(calc "$OFF_S + $(date +%s.%N) - $OFF_T1")
		BEFORE_RUN=expire_history measure deleting hist schedq "$DURATION"
		left=$(hist_left)
		REAP_CPU=$(calc "$REAP_CPU + $(sched_cpu) - $REAP_CPU1")
		REAP_S=$(calc "$REAP_S + $(date +%s.%N) - $REAP_T1")
		set_retention -1
		REAPED=$((REAPED + HIST_BEFORE - left))
		log "  the reaper deleted $((HIST_BEFORE - left)) (retention ${HIST_AGE} s); history left $left"
		ratio r:retention deleting off
	done
	set_retention -1
	REAP_RATE=$(calc "$REAPED / ($REAP_S + 0.001)")
fi
T_END=$(date +%s)
LOAD_END=$(loadavg)

report() {
	local line
	line() { # label key-a key-b ratio-key target
		printf '  %-34s %9s %9s %6s  %-5s rounds: %s\n' "$1" "$(median "${ALL[$2]}")" "$(median "${ALL[$3]}")" \
			"$(median "${ALL[$4]}")" "$5" "${ALL[$4]# }"
	}
	echo "schedq benchmark: claim + complete against backlog, held xmin, history, retention"
	echo "  PostgreSQL $(psql_db postgres -c 'SHOW server_version' | cut -d' ' -f1), $(nproc) CPU(s), synchronous_commit=$SYNC_COMMIT;"
	echo "  pgbench -M prepared, $CLIENTS clients; tasks/s medians of $REPEAT round(s) (D: of its pairs), ratio = median of the rounds' ratios"
	printf '  %-34s %9s %9s %6s  %-5s\n' "" "measured" baseline ratio target
	! runs A || line "A. $BIG available vs $SMALL" big small r:big ">=0.9"
	if runs B; then
		line "B. held snapshot ${HOLD}s vs none" held free r:held ">=0.9"
		line "   raw queue, held vs none" rawheld rawfree r:rawheld ""
		line "   schedq vs raw, both held" held rawheld r:vsraw ""
	fi
	! runs C || line "C. +$HISTORY done kept vs fresh" hist fresh r:hist ">=0.9"
	if runs D; then
		line "D. claims while reaping vs off" deleting off r:retention ">=0.9"
		echo "     the reaper deleted $REAPED of $HISTORY finished tasks in $(printf '%.0f' "$REAP_S") s of retention on" \
			"($(printf '%.0f' "$REAP_RATE") rows/s: a million in $(printf '%.0f' "$(calc "1000000 / ($REAP_RATE + 0.001)")") s);" \
			"ratio = median of the pairs' ratios"
		echo "     the database's scheduler (its reaper) used $(printf '%.1f' "$(calc "100 * $REAP_CPU / ($REAP_S + 0.001)")") % of a CPU while deleting," \
			"$(printf '%.1f' "$(calc "100 * $OFF_CPU / ($OFF_S + 0.001)")") % with retention off"
	fi
	echo "  wall time $((T_END - T_START)) s after loading; load average before $LOAD_START, after $LOAD_END"
}
echo >&2
if [[ -n $OUT ]]; then report | tee "$OUT"; else report; fi

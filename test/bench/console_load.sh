#!/usr/bin/env bash
# test/bench/console_load.sh -- what an open console costs a running queue
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh),
# loads BENCH_FINISHED tasks finished over the last hour (so that the
# overview and the charts read full samples) and starts `schedqctl web`,
# signed in with curl.  Then measures claim + complete throughput (pgbench,
# schedq_claim_complete.sql: claim one task, complete it, as run.sh's
# variant A) at BENCH_CLIENTS clients for BENCH_SECONDS, in rounds that
# alternate without and with a console open on the overview page: a loop
# that asks for /api/overview, waits two seconds after each answer, and
# asks for /api/charts every 30 seconds, as the page does (console.js:
# POLL_MS, CHARTS_MS); the order of the two alternates from round to
# round.  Before each run the queue is topped up so that it never runs
# dry, and vacuumed and analyzed.  Prints the median throughput of each side, the median
# of the ratios of each round (with / without), and the console's calls
# made during the runs with their median time.  On a shared machine the
# rates move a lot from run to run; the CPU figures move much less: the
# server's CPU time per task on each side (every process of the server,
# from /proc), the CPU time of the console's own backends per second of
# polling and their share of the server's, and schedqctl web's own.
#
# Environment: PG_CONFIG (default PostgreSQL 15), BENCH_FINISHED (200000),
# BENCH_CLIENTS (4), BENCH_SECONDS (10), BENCH_REPEAT (5 rounds of each),
# SCHEDQCTL (the binary, default: the installed one).  Needs curl.  Run as
# root, the server runs as the OS user postgres.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=console_load
# shellcheck source=lib.sh
source "$HERE/lib.sh"
bench_check_tools initdb pg_ctl psql pgbench schedqctl
command -v curl >/dev/null || die "curl not found"
SCHEDQCTL=${SCHEDQCTL:-$BINDIR/schedqctl}

FINISHED=${BENCH_FINISHED:-200000}
CLIENTS=${BENCH_CLIENTS:-4}
SECONDS_RUN=${BENCH_SECONDS:-10}
REPEAT=${BENCH_REPEAT:-5}
TOPUP=150000
DB=bench
WEB_PID=
POLL_PID=

stop_poll() {
	if [[ -n $POLL_PID ]]; then
		kill -TERM "$POLL_PID" 2>/dev/null || true
		wait "$POLL_PID" 2>/dev/null || true
		POLL_PID=
	fi
}
stop_all() {
	stop_poll
	if [[ -n $WEB_PID ]]; then
		kill -TERM "$WEB_PID" 2>/dev/null || true
		wait "$WEB_PID" 2>/dev/null || true
		WEB_PID=
	fi
}
BENCH_CLEANUP_HOOK=stop_all

bench_init
bench_start_server "schedq.sql_workers = 0
shared_buffers = '512MB'"
bench_create_db "$DB"
bench_copy "$HERE/schedq_claim_complete.sql"

echo "$BENCH_NAME: loading $FINISHED finished tasks" >&2
psql_q >/dev/null <<SQL
INSERT INTO schedq.task (kind, queue, status, owner, payload, attempts,
                         run_at, created_at, started_at, finished_at,
                         last_error, claimed_by)
SELECT 'job.' || (g % 20), 'default',
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'done' END,
       'postgres'::regrole, jsonb_build_object('i', g), 1,
       t - interval '2 seconds', t - interval '2 seconds',
       t - interval '1 second', t,
       CASE WHEN g % 100 = 0 THEN 'boom' END, 'w' || (g % 16)
FROM generate_series(1, $FINISHED) g,
     LATERAL (SELECT now() - interval '1 hour'
                     + (g::float8 / $FINISHED) * interval '1 hour') AS x(t);
VACUUM ANALYZE schedq.task;
SQL

bench_web_start   # WEB_PID, URL, JAR: signed in as postgres

# The overview page's polling: the overview two seconds after each answer,
# the charts every 30 seconds; each call's time (s) into $TMP/calls.
poll() {
	local charts_at=0 now t
	while :; do
		now=$(date +%s)
		if ((now - charts_at >= 30)); then
			t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -b "$JAR" "$URL/api/charts")
			[[ ${t%% *} == 200 ]] || echo "charts answered ${t%% *}" >&2
			echo "charts ${t#* }" >>"$TMP/calls"
			charts_at=$now
		fi
		t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -b "$JAR" "$URL/api/overview")
		[[ ${t%% *} == 200 ]] || echo "overview answered ${t%% *}" >&2
		echo "overview ${t#* }" >>"$TMP/calls"
		sleep 2
	done
}

topup() {
	local n
	n=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'available'")
	if ((n < TOPUP / 2)); then
		bench_submit "$DB" "$TOPUP"
	fi
	psql_q -c "VACUUM ANALYZE schedq.task" >/dev/null
}

without= with= ratios= cpu_without= cpu_with= console= share= web=
: >"$TMP/calls"
# CPU time in clock ticks: ticks PID... (utime + stime of live processes);
# server_ticks: every process of the server, the exited ones too (the
# postmaster's reaped children, cutime + cstime).
ticks() {
	local p t=0
	for p in "$@"; do
		[[ -r /proc/$p/stat ]] || continue
		t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
	done
	echo "$t"
}
server_ticks() {
	local pm
	pm=$(head -n 1 "$PGDATA_DIR/postmaster.pid")
	echo $(($(sed 's/.*) //' "/proc/$pm/stat" | awk '{ print $12 + $13 + $14 + $15 }') +
		$(ticks $(pgrep -P "$pm"))))
}
HZ=$(getconf CLK_TCK)

# run_side on|off: one measured run, with or without the console polling;
# sets PGB_TPS, SERVER_MS (the server's CPU over the run, ms) and, with the
# console, CONSOLE_MS (its backends' CPU) and WEB_MS (schedqctl web's).
run_side() {
	local s0 c0 w0 cpids
	topup
	cpids=$(psql_q -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity
	                   WHERE application_name = 'schedqctl web'")
	s0=$(server_ticks)
	# shellcheck disable=SC2086
	c0=$(ticks $cpids)
	w0=$(ticks "$WEB_PID")
	if [[ $1 == on ]]; then
		poll &
		POLL_PID=$!
	fi
	bench_pgbench "$DB" schedq_claim_complete.sql "$CLIENTS" "$SECONDS_RUN"
	stop_poll
	SERVER_MS=$(calc "($(server_ticks) - $s0) * 1000 / $HZ")
	# shellcheck disable=SC2086
	CONSOLE_MS=$(calc "($(ticks $cpids) - $c0) * 1000 / $HZ")
	WEB_MS=$(calc "($(ticks "$WEB_PID") - $w0) * 1000 / $HZ")
}

for r in $(seq 1 "$REPEAT"); do
	# the order alternates from round to round, so that neither side
	# always runs first after the queue is topped up
	for side in $( ((r % 2)) && echo off on || echo on off); do
		run_side "$side"
		# server CPU per task (the pgbench transaction: claim + complete)
		per=$(calc "$SERVER_MS / ($PGB_TPS * $SECONDS_RUN)")
		if [[ $side == off ]]; then
			off=$PGB_TPS off_cpu=$per
		else
			on=$PGB_TPS on_cpu=$per
			console+=" $(calc "$CONSOLE_MS / $SECONDS_RUN")"
			share+=" $(calc "100 * $CONSOLE_MS / $SERVER_MS")"
			web+=" $(calc "$WEB_MS / $SECONDS_RUN")"
		fi
	done
	log "round $r: without a console $off tasks/s, $off_cpu ms server CPU a task;" \
		"with one $on, $on_cpu (load $(loadavg))"
	without+=" $off"
	with+=" $on"
	ratios+=" $(calc "$on / $off")"
	cpu_without+=" $off_cpu"
	cpu_with+=" $on_cpu"
done

ov=$(awk '$1 == "overview" { printf " %s", $2 * 1000 }' "$TMP/calls")
ch=$(awk '$1 == "charts" { printf " %s", $2 * 1000 }' "$TMP/calls")
printf '%s: claim + complete, %d clients, %d s runs, %d rounds each, %d finished tasks retained\n' \
	"$BENCH_NAME" "$CLIENTS" "$SECONDS_RUN" "$REPEAT" "$FINISHED"
printf '| %-32s | %10s |\n' "" "median"
printf '|%s|%s|\n' "----------------------------------" "------------"
printf '| %-32s | %10s |\n' "tasks/s, no console" "$(printf "%.2f" "$(median "$without")")"
printf '| %-32s | %10s |\n' "tasks/s, console on the overview" "$(printf "%.2f" "$(median "$with")")"
printf '| %-32s | %10s |\n' "with / without (per round)" "$(printf "%.2f" "$(median "$ratios")")"
printf '| %-32s | %10s |\n' "server CPU a task, ms, no console" "$(printf "%.2f" "$(median "$cpu_without")")"
printf '| %-32s | %10s |\n' "server CPU a task, ms, console" "$(printf "%.2f" "$(median "$cpu_with")")"
printf '| %-32s | %10s |\n' "console backends, CPU ms a s" "$(printf "%.2f" "$(median "$console")")"
printf '| %-32s | %10s |\n' "console backends, % server CPU" "$(printf "%.2f" "$(median "$share")")"
printf '| %-32s | %10s |\n' "schedqctl web, CPU ms a s" "$(printf "%.2f" "$(median "$web")")"
printf '| %-32s | %10s |\n' "overview calls, ms ($(wc -w <<<"$ov"))" "$(printf "%.2f" "$(median "$ov")")"
printf '| %-32s | %10s |\n' "charts calls, ms ($(wc -w <<<"$ch"))" "$(printf "%.2f" "$(median "$ch")")"

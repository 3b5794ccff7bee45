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
# POLL_MS, CHARTS_MS).  Before each run the queue is topped up so that it
# never runs dry.  Prints the median throughput of each side, the median
# of the ratios of each round (with / without), and the console's calls
# made during the runs with their median time.
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

WEB_PORT=$(pick_port) || die "no free port"
"$SCHEDQCTL" web --listen "127.0.0.1:$WEB_PORT" \
	-d "host=127.0.0.1 port=$PORT dbname=$DB" >"$TMP/web.log" 2>&1 &
WEB_PID=$!
for _ in $(seq 1 100); do
	grep -q listening "$TMP/web.log" && break
	sleep 0.1
done
grep -q listening "$TMP/web.log" || die "schedqctl web did not start: $(cat "$TMP/web.log")"
URL=http://127.0.0.1:$WEB_PORT
JAR=$TMP/cookies
token=$(curl -s -c "$JAR" "$URL/api/session" | sed -n 's/.*"loginToken":"\([0-9a-f]*\)".*/\1/p')
curl -s -b "$JAR" -c "$JAR" -H "X-CSRF-Token: $token" \
	--data-urlencode user=postgres --data-urlencode password= "$URL/api/login" |
	grep -q '"signedIn":true' || die "could not sign in"

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
	psql_q -c "VACUUM schedq.task" >/dev/null
}

without=
with=
ratios=
: >"$TMP/calls"
for r in $(seq 1 "$REPEAT"); do
	topup
	bench_pgbench "$DB" schedq_claim_complete.sql "$CLIENTS" "$SECONDS_RUN"
	off=$PGB_TPS
	topup
	poll &
	POLL_PID=$!
	bench_pgbench "$DB" schedq_claim_complete.sql "$CLIENTS" "$SECONDS_RUN"
	on=$PGB_TPS
	stop_poll
	log "round $r: without a console $off, with one $on tasks/s (load $(loadavg))"
	without+=" $off"
	with+=" $on"
	ratios+=" $(calc "$on / $off")"
done

ov=$(awk '$1 == "overview" { printf " %s", $2 * 1000 }' "$TMP/calls")
ch=$(awk '$1 == "charts" { printf " %s", $2 * 1000 }' "$TMP/calls")
printf '%s: claim + complete, %d clients, %d s runs, %d rounds each, %d finished tasks retained\n' \
	"$BENCH_NAME" "$CLIENTS" "$SECONDS_RUN" "$REPEAT" "$FINISHED"
printf '| %-32s | %10s |\n' "" "median"
printf '|%s|%s|\n' "----------------------------------" "------------"
printf '| %-32s | %10s |\n' "tasks/s, no console" "$(median "$without")"
printf '| %-32s | %10s |\n' "tasks/s, console on the overview" "$(median "$with")"
printf '| %-32s | %10s |\n' "with / without (per round)" "$(median "$ratios")"
printf '| %-32s | %10s |\n' "overview calls, ms ($(wc -w <<<"$ov"))" "$(median "$ov")"
printf '| %-32s | %10s |\n' "charts calls, ms ($(wc -w <<<"$ch"))" "$(median "$ch")"

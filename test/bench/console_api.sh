#!/usr/bin/env bash
# test/bench/console_api.sh -- the time of each call of schedqctl web's API
# on a large table
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh),
# loads BENCH_FINISHED finished tasks (done, with one in 100 failed),
# finished over the last two hours (so that the overview's charts of the
# last hour read half of them), and BENCH_WAITING waiting tasks in four
# queues (nine in ten available, one in ten pending until an hour from
# now), a workflow run of 20 tasks, 50 schedules, lock keys and a limit
# with tasks parked behind them; VACUUM ANALYZE.  The tasks are inserted into schedq.task
# directly (as the superuser, for speed: the API functions would give the
# same rows).  Then starts `schedqctl web`, signs in with curl, and times
# each API call BENCH_REPEAT times (curl's time_total, on 127.0.0.1),
# printing the median and the slowest in milliseconds.
#
# Environment: PG_CONFIG (default PostgreSQL 15), BENCH_FINISHED
# (1000000), BENCH_WAITING (100000), BENCH_REPEAT (11), SCHEDQCTL (the
# binary, default: the installed one).  Needs curl.  Run as root, the
# server runs as the OS user postgres.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=console_api
# shellcheck source=lib.sh
source "$HERE/lib.sh"
bench_check_tools initdb pg_ctl psql schedqctl
command -v curl >/dev/null || die "curl not found"
SCHEDQCTL=${SCHEDQCTL:-$BINDIR/schedqctl}

FINISHED=${BENCH_FINISHED:-1000000}
WAITING=${BENCH_WAITING:-100000}
REPEAT=${BENCH_REPEAT:-11}
DB=bench
WEB_PID=

stop_web() {
	if [[ -n $WEB_PID ]]; then
		kill -TERM "$WEB_PID" 2>/dev/null || true
		wait "$WEB_PID" 2>/dev/null || true
		WEB_PID=
	fi
}
BENCH_CLEANUP_HOOK=stop_web

bench_init
bench_start_server "schedq.sql_workers = 0
shared_buffers = '512MB'"
bench_create_db "$DB"

echo "$BENCH_NAME: loading $FINISHED finished and $WAITING waiting tasks" >&2
t0=$(date +%s)
psql_q >/dev/null <<SQL
INSERT INTO schedq.task (kind, queue, status, owner, payload, attempts,
                         run_at, created_at, started_at, finished_at,
                         last_error, claimed_by)
SELECT 'job.' || (g % 20), 'q' || (g % 4),
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'done' END,
       'postgres'::regrole, jsonb_build_object('i', g), 1,
       t - interval '2 seconds', t - interval '2 seconds',
       t - interval '1 second', t,
       CASE WHEN g % 100 = 0 THEN 'boom' END, 'w' || (g % 16)
FROM generate_series(1, $FINISHED) g,
     LATERAL (SELECT now() - interval '2 hours'
                     + (g::float8 / $FINISHED) * interval '2 hours') AS x(t);
INSERT INTO schedq.task (kind, queue, status, owner, payload, run_at, created_at)
SELECT 'job.' || (g % 20), 'q' || (g % 4),
       CASE WHEN g % 10 = 0 THEN 'pending' ELSE 'available' END, 'postgres'::regrole,
       jsonb_build_object('i', g),
       CASE WHEN g % 10 = 0 THEN now() + interval '1 hour' ELSE now() END, now()
FROM generate_series(1, $WAITING) g;
SELECT schedq.submit('sync', lock_key => 'account-' || (g % 50)) FROM generate_series(1, 200) g;
SELECT schedq.set_concurrency_limit('gpu', 4);
SELECT schedq.submit('render', concurrency_key => 'gpu') FROM generate_series(1, 10);
SELECT schedq.set_budget('llm', 1000);
SELECT schedq.schedule('s' || g, '*/5 * * * *', 'report') FROM generate_series(1, 50) g;
SELECT schedq.create_run('bench', 'continue') AS run \gset
SELECT schedq.submit('step', run_id => :run, queue => 'wf') FROM generate_series(1, 20);
VACUUM ANALYZE schedq.task;
SQL
# The scheduler promotes or parks the tasks of the keys and the limit; once
# it has, vacuum again: the first VACUUM ran while its passes held the
# horizon back, and left the waiting tasks' pages out of the visibility
# map (every index-only read of them would visit the table).
for _ in $(seq 1 300); do
	[[ $(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'pending'
		AND NOT parked AND run_at <= now()") == 0 ]] && break
	sleep 0.1
done
psql_q -c "VACUUM ANALYZE schedq.task" >/dev/null
echo "$BENCH_NAME: loaded in $(($(date +%s) - t0)) s" >&2

bench_web_start   # WEB_PID, URL, JAR: signed in as postgres

read -r mid_id max_id run_id <<<"$(psql_q -F ' ' -c "SELECT $FINISHED / 2, max(id), (SELECT max(id) FROM schedq.run) FROM schedq.task")"

# name and path of each call
CALLS=(
	"session|/api/session"
	"overview (queues, schedulers)|/api/overview"
	"charts (the last hour)|/api/charts"
	"tasks, first page|/api/tasks"
	"tasks, a page in the middle|/api/tasks?before=$mid_id"
	"tasks, queue and status|/api/tasks?queue=q1&status=available"
	"tasks, failed (1 in 100)|/api/tasks?status=failed"
	"tasks, kind and time|/api/tasks?kind=job.7&since=$(date -u -d '-30 minutes' +%FT%TZ)"
	"task|/api/task?id=$mid_id"
	"runs|/api/runs"
	"run (20 tasks)|/api/run?id=$run_id"
	"schedules (50)|/api/schedules"
	"gates|/api/gates"
	"workers|/api/workers"
)

printf '%s: %d finished, %d waiting tasks; median and slowest of %d calls, ms\n' \
	"$BENCH_NAME" "$FINISHED" "$WAITING" "$REPEAT"
printf '| %-32s | %8s | %8s |\n' call median slowest
printf '|%s|%s|%s|\n' "----------------------------------" "----------" "----------"
for c in "${CALLS[@]}"; do
	name=${c%%|*}
	path=${c#*|}
	times=
	for _ in $(seq 1 "$REPEAT"); do
		t=$(curl -s -o "$TMP/answer" -w '%{http_code} %{time_total}' -b "$JAR" "$URL$path")
		[[ ${t%% *} == 200 ]] || die "$path answered ${t%% *}: $(head -c 300 "$TMP/answer")"
		times+=" $(calc "${t#* } * 1000")"
	done
	printf '| %-32s | %8s | %8s |\n' "$name" "$(median "$times")" \
		"$(tr ' ' '\n' <<<"$times" | grep -v '^$' | sort -g | tail -1 | xargs printf '%.1f')"
done

#!/usr/bin/env bash
# test/bench/schedqctl.sh -- tasks per second through `schedqctl worker`
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh), then,
# for each concurrency in BENCH_CONCURRENCY:
#   ctl  submits BENCH_TASKS no-op tasks, starts `schedqctl worker
#        --concurrency C -- true` and times it from start until every task
#        is done (a fork and exec of true per task; the programs that
#        finished together completed, and the slots they free claimed
#        for, by one complete_and_claim: one commit);
#   sql  the SQL-level figure in the same run: pgbench -c C, one claim
#        (n => 1) and one complete per task, no program run, for
#        BENCH_SECONDS on a preloaded queue.
# The overhead per task is C / ctl - C / sql: the time a worker slot
# spends per task beyond the two SQL calls (fork, exec, pipes, wait).
#
# Environment: PG_CONFIG (default PostgreSQL 15), BENCH_TASKS (2000),
# BENCH_CONCURRENCY ("1 8"), BENCH_SECONDS (5), BENCH_SQL_TASKS (50000,
# the preload of the SQL runs: more than they can finish), SCHEDQCTL (the
# binary, default: the installed one), BENCH_WORKER_LOGS (a directory:
# each worker's log is copied there as worker.C.log).  Run as root, the
# server and the clients run as the OS user postgres.  Needs schedqctl
# installed (make install).
#
# A worker that exits before its tasks are done fails the run at once;
# on any failure the worker's exit status and the last 50 lines of its
# log are printed (before the server log's tail).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=schedqctl
# shellcheck source=lib.sh
source "$HERE/lib.sh"
bench_check_tools initdb pg_ctl psql pgbench schedqctl
SCHEDQCTL=${SCHEDQCTL:-$BINDIR/schedqctl}

TASKS=${BENCH_TASKS:-2000}
CONCURRENCY=${BENCH_CONCURRENCY:-1 8}
SECONDS_SQL=${BENCH_SECONDS:-5}
SQL_TASKS=${BENCH_SQL_TASKS:-50000}
DB=bench
WORKER_PID=
WORKER_LOG=
WORKER_STATUS=

# Stop the worker (if still running) and record its exit status.
stop_worker() {
	if [[ -n $WORKER_PID ]]; then
		kill -TERM "$WORKER_PID" 2>/dev/null || true
		WORKER_STATUS=0
		wait "$WORKER_PID" 2>/dev/null || WORKER_STATUS=$?
		WORKER_PID=
	fi
}

# The cleanup hook (lib.sh passes the exit status): on a failure, say how
# the worker ended and what it logged last.
cleanup_worker() {
	local rc=${1:-0}
	stop_worker
	if [[ $rc != 0 && -n $WORKER_LOG && -f $WORKER_LOG ]]; then
		echo "$BENCH_NAME: worker exit status ${WORKER_STATUS:-?}; last lines of $WORKER_LOG:" >&2
		tail -n 50 "$WORKER_LOG" | sed 's/^/    /' >&2
	fi
}
BENCH_CLEANUP_HOOK=cleanup_worker

bench_init
bench_start_server "autovacuum = on
schedq.sql_workers = 0"
psql_db postgres -c "CREATE DATABASE $DB"
psql_q -c "CREATE EXTENSION schedq"
cp "$HERE/schedq_claim_complete.sql" "$TMP/"
chmod a+r "$TMP/schedq_claim_complete.sql"

now() { date +%s.%N; }

submit() { # n
	psql_q -c "TRUNCATE schedq.task" -c "SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg(jsonb_build_object('kind', 'noop')) FROM generate_series(1, $1)))" >/dev/null
	psql_q -c "VACUUM ANALYZE schedq.task" >/dev/null
}

printf '%-12s %12s %12s %18s\n' concurrency "ctl tasks/s" "sql tasks/s" "overhead/task"
for c in $CONCURRENCY; do
	submit "$TASKS"
	WORKER_LOG=$TMP/worker.$c.log
	WORKER_STATUS=
	start=$(now)
	# Not through runuser: the worker is a client, and stop_worker must
	# signal it, not runuser.
	"$SCHEDQCTL" worker -d "host=$TMP port=$PORT dbname=$DB user=postgres" \
		--concurrency "$c" -- true 2>"$WORKER_LOG" &
	WORKER_PID=$!
	deadline=$(($(date +%s) + 600))
	while :; do
		# A failed look (psql) is just looked at again.
		n_done=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'done'") || n_done=
		[[ $n_done != "$TASKS" ]] || break
		if ! kill -0 "$WORKER_PID" 2>/dev/null; then
			stop_worker # reaps it: WORKER_STATUS
			die "the worker exited (status $WORKER_STATUS) with $n_done of $TASKS tasks done"
		fi
		(($(date +%s) < deadline)) || die "the worker did not finish $TASKS tasks in 600 s ($n_done done)"
		sleep 0.05
	done
	end=$(now)
	stop_worker
	[[ -z ${BENCH_WORKER_LOGS:-} ]] || cp "$WORKER_LOG" "$BENCH_WORKER_LOGS/worker.$c.log"
	ctl=$(calc "$TASKS / ($end - $start)")

	# SQL level: enough tasks that the queue never runs dry.
	submit "$SQL_TASKS"
	j=$((c < 2 ? c : 2))
	out=$(as_pg "$BINDIR/pgbench" -n -M prepared -h "$TMP" -p "$PORT" -U postgres \
		-c "$c" -j "$j" -T "$SECONDS_SQL" -f "$TMP/schedq_claim_complete.sql" "$DB" 2>&1) ||
		{ echo "$out" >&2; die "pgbench failed (the queue ran dry?)"; }
	sql=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	over=$(calc "($c / $ctl - $c / $sql) * 1000")
	printf '%-12s %12.0f %12.0f %15.2f ms\n' "$c" "$ctl" "$sql" "$over"
done

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
# binary, default: the installed one).  Run as root, the server
# and the clients run as the OS user postgres.  Needs schedqctl installed
# (make install).

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

stop_worker() {
	if [[ -n $WORKER_PID ]]; then
		kill -TERM "$WORKER_PID" 2>/dev/null || true
		wait "$WORKER_PID" 2>/dev/null || true
		WORKER_PID=
	fi
}
BENCH_CLEANUP_HOOK=stop_worker

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
	start=$(now)
	# Not through runuser: the worker is a client, and stop_worker must
	# signal it, not runuser.
	"$SCHEDQCTL" worker -d "host=$TMP port=$PORT dbname=$DB user=postgres" \
		--concurrency "$c" -- true 2>"$TMP/worker.log" &
	WORKER_PID=$!
	deadline=$(($(date +%s) + 600))
	while [[ $(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'done'") != "$TASKS" ]]; do
		(($(date +%s) < deadline)) || die "the worker did not finish $TASKS tasks in 600 s"
		sleep 0.05
	done
	end=$(now)
	stop_worker
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

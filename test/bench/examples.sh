#!/usr/bin/env bash
# test/bench/examples.sh -- tasks per second through the example workers
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh) and,
# in the same run, drains BENCH_TASKS 'add' tasks (default 20000) each way:
#
#   sql A       pgbench, one client: claim n => 1, then complete(token)
#               (test/bench/schedq_claim_complete.sql)
#   sql B       pgbench, one client: claim n => 10, then the ten completes
#               in one statement (test/bench/schedq_claim10_complete.sql)
#   sql C       pgbench, one client: claim n => 10, then ten complete
#               statements, one per task: the statements the example
#               workers send (test/bench/schedq_claim10_complete_each.sql)
#   python      examples/python/worker.py  (psycopg 3)
#   node        examples/node/worker.js    (pg; run `make examples-deps`)
#   go          examples/go/worker.go      (pgx v4, built here)
#
# Each example worker runs as one process with its defaults (batches of 10,
# each task completed by its own statement, as soon as its handler
# returns): it does what sql C does, plus the handler, the heartbeat timer
# and its language's driver, so "/ sql C" is what those cost.  A rate is the number of tasks over
# the time from the first claim to the last complete (the task table's
# started_at and finished_at), so start-up is not counted.  A language
# whose toolchain is missing is skipped with a note.
#
# Environment: PG_CONFIG (default PostgreSQL 15), BENCH_TASKS,
# BENCH_SYNCHRONOUS_COMMIT (default on; off shows the clients' own cost
# rather than the disk's flushes, one per commit).  Run as
# root, the server runs as the OS user postgres; the clients run as you.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BENCH_NAME=bench-examples
# shellcheck source=lib.sh
source "$HERE/lib.sh"
N=${BENCH_TASKS:-20000}
[[ $N =~ ^[1-9][0-9]*0$ ]] || die "BENCH_TASKS must be a positive multiple of 10, not '$N'"
bench_check_tools initdb pg_ctl psql pgbench

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
cp "$HERE"/schedq_claim_complete.sql "$HERE"/schedq_claim10_complete.sql \
	"$HERE"/schedq_claim10_complete_each.sql "$TMP"/
chmod 0644 "$TMP"/*.sql
bench_start_server "synchronous_commit = ${BENCH_SYNCHRONOUS_COMMIT:-on}"
DB=postgres
psql_q -c "CREATE EXTENSION schedq" >/dev/null

# Empty the task table and submit $N 'add' tasks.
load() {
	local lo
	psql_q -c "DELETE FROM schedq.task" >/dev/null
	psql_q -c "VACUUM (ANALYZE) schedq.task" >/dev/null
	for ((lo = 1; lo <= N; lo += 10000)); do
		psql_q -c "SELECT count(*) FROM schedq.submit_many((
			SELECT jsonb_agg(jsonb_build_object('kind', 'add', 'payload',
			                 jsonb_build_object('numbers', jsonb_build_array(g, 1))))
			  FROM generate_series($lo, least($lo + 9999, $N)) AS g))" >/dev/null
	done
	psql_q -c "VACUUM (ANALYZE) schedq.task" -c "CHECKPOINT" >/dev/null
}

# Wait (up to 10 minutes) until the $N tasks are done.
wait_done() {
	local i n
	for ((i = 0; i < 6000; i++)); do
		n=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'done'")
		[[ $n == "$N" ]] && return 0
		sleep 0.1
	done
	die "after 10 minutes only $n of $N tasks are done"
}

# Tasks per second, first claim to last complete.
rate() {
	psql_q -c "SELECT round(count(*) / extract(epoch FROM max(finished_at) - min(started_at)))
	             FROM schedq.task WHERE status = 'done'"
}

declare -A RATE
NAMES=()

measure_sql() { # name script tasks-per-cycle
	load
	log "$1: pgbench -c 1 -f $2"
	as_pg "$BINDIR/pgbench" -n -M prepared -c 1 -t $((N / $3)) -f "$TMP/$2" \
		-h "$TMP" -p "$PORT" -U postgres "$DB" >"$TMP/$1.log" 2>&1 ||
		{ cat "$TMP/$1.log" >&2; die "pgbench failed"; }
	wait_done
	RATE[$1]=$(rate)
	NAMES+=("$1")
}

measure_worker() { # name command...
	local name=$1
	shift
	load
	log "$name: $*"
	PGHOST=$TMP PGPORT=$PORT PGUSER=postgres PGDATABASE=$DB SCHEDQ_WAIT=5 \
		"$@" >"$TMP/$name.log" 2>&1 &
	WORKER_PID=$!
	wait_done
	stop_worker
	RATE[$name]=$(rate)
	NAMES+=("$name")
}

measure_sql "sql A" schedq_claim_complete.sql 1
measure_sql "sql B" schedq_claim10_complete.sql 10
measure_sql "sql C" schedq_claim10_complete_each.sql 10

PYTHON=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import psycopg' >/dev/null 2>&1; then PYTHON=$p && break; fi
done
if [[ -n $PYTHON ]]; then
	measure_worker python "$PYTHON" "$ROOT/examples/python/worker.py"
else
	log "python: skipped (no python3 imports psycopg: apt-get install python3-psycopg)"
fi

if [[ -f $ROOT/examples/node/node_modules/pg/package.json ]] && command -v node >/dev/null; then
	measure_worker node node "$ROOT/examples/node/worker.js"
else
	log "node: skipped (no node, or run: make examples-deps)"
fi

if command -v go >/dev/null && [[ -d /usr/share/gocode/src/github.com/jackc/pgx/v4 ]]; then
	mkdir -p "$TMP/gopath/src/schedq.dev" && ln -sfn "$ROOT/clients/go" "$TMP/gopath/src/schedq.dev/schedq"
	GO111MODULE=off GOPATH="$TMP/gopath:/usr/share/gocode" GOPROXY=off \
		go build -o "$TMP/go-worker" "$ROOT/examples/go/worker.go" || die "go build failed"
	measure_worker go "$TMP/go-worker"
else
	log "go: skipped (apt-get install golang-go golang-github-jackc-pgx-v4-dev)"
fi

printf '\n%s tasks, one client each, PostgreSQL %s, fsync %s, synchronous_commit %s\n\n' \
	"$N" "$(psql_q -c 'SHOW server_version' | cut -d' ' -f1)" \
	"$(psql_q -c 'SHOW fsync')" "$(psql_q -c 'SHOW synchronous_commit')"
printf '| %-7s | %8s | %9s |\n' "client" "tasks/s" "/ sql C"
printf '|---------|---------:|----------:|\n'
for name in "${NAMES[@]}"; do
	printf '| %-7s | %8s | %9s |\n' "$name" "${RATE[$name]}" \
		"$(calc "${RATE[$name]} / ${RATE[sql C]}" | awk '{ printf "%.2f", $1 }')"
done

#!/usr/bin/env bash
# test/bench/client_go.sh -- the Go client library's cost over raw SQL
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh) and
# drains BENCH_TASKS no-op tasks (default 5000) with 8 handlers in one
# process (test/bench/client_go/main.go), each way, BENCH_ROUNDS times
# (default 3), interleaved:
#
#   lib   clients/go's schedq.Worker, Concurrency 8, batches of 8
#   raw   the same statements without the library: one Go loop calling
#         schedq.complete_and_claim with the tokens of its last batch of 8
#
# A rate is the number of tasks over the time from the first claim to the
# last complete (the task table's started_at and finished_at); the
# client's CPU time per 1000 tasks (user + system, from the program
# itself) is what the library costs on its side, steadier than the rate
# on a busy machine.  Prints the median of each and lib / raw (the
# target: at least 0.90).
#
# Built offline in GOPATH mode against Debian's packaged pgx v4
# (golang-go golang-github-jackc-pgx-v4-dev).  Environment: PG_CONFIG
# (default PostgreSQL 15), BENCH_TASKS, BENCH_ROUNDS,
# BENCH_SYNCHRONOUS_COMMIT (default on), BENCH_CPUPROFILE (a directory
# writable by you: the last round's Go CPU profiles are left there,
# lib.pprof and raw.pprof, for go tool pprof).  Run as root, the server runs as
# the OS user postgres; the clients run as you.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BENCH_NAME=bench-client-go
# shellcheck source=lib.sh
source "$HERE/lib.sh"
N=${BENCH_TASKS:-5000}
ROUNDS=${BENCH_ROUNDS:-3}
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_TASKS must be a positive number, not '$N'"
bench_check_tools initdb pg_ctl psql
command -v go >/dev/null && [[ -d /usr/share/gocode/src/github.com/jackc/pgx/v4 ]] ||
	die "no go or pgx v4 (apt-get install golang-go golang-github-jackc-pgx-v4-dev)"

bench_init
mkdir -p "$TMP/gopath/src/schedq.dev"
ln -s "$ROOT/clients/go" "$TMP/gopath/src/schedq.dev/schedq"
GO111MODULE=off GOPATH="$TMP/gopath:/usr/share/gocode" GOPROXY=off GOFLAGS= \
	GOCACHE="${GOCACHE:-$TMP/gocache}" \
	go build -o "$TMP/client-go" "$HERE/client_go/main.go" || die "go build failed"
bench_start_server "synchronous_commit = ${BENCH_SYNCHRONOUS_COMMIT:-on}"
DB=postgres
psql_q -c "CREATE EXTENSION schedq" >/dev/null

load() {
	psql_q -c "DELETE FROM schedq.task" >/dev/null
	psql_q -c "VACUUM (ANALYZE) schedq.task" >/dev/null
	psql_q -c "SELECT count(*) FROM schedq.submit_many((
		SELECT jsonb_agg(jsonb_build_object('kind', 'noop', 'payload', jsonb_build_object('i', g)))
		  FROM generate_series(1, $N) AS g))" >/dev/null
	psql_q -c "VACUUM (ANALYZE) schedq.task" -c "CHECKPOINT" >/dev/null
}

measure() { # mode
	load
	PGHOST=$TMP PGPORT=$PORT PGUSER=postgres PGDATABASE=$DB \
		timeout 600 "$TMP/client-go" -mode "$1" -n "$N" -handlers 8 >"$TMP/$1.log" 2>&1 ||
		{ cat "$TMP/$1.log" >&2; die "client-go -mode $1 failed"; }
	local done cpu
	done=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'done'")
	[[ $done == "$N" ]] || die "$1: $done of $N tasks done"
	cpu=$(sed -n 's/^cpu_ms=//p' "$TMP/$1.log")
	echo "$(psql_q -c "SELECT round(count(*) / extract(epoch FROM max(finished_at) - min(started_at)))
	             FROM schedq.task WHERE status = 'done'") $(awk "BEGIN { printf \"%.1f\", 1000 * $cpu / $N }")"
}

LIB=() RAW=() LIBCPU=() RAWCPU=()
for ((r = 1; r <= ROUNDS; r++)); do
	read -r rate cpu < <(measure lib)
	LIB+=("$rate") LIBCPU+=("$cpu")
	read -r rate cpu < <(measure raw)
	RAW+=("$rate") RAWCPU+=("$cpu")
	log "round $r: lib ${LIB[-1]} tasks/s, raw ${RAW[-1]} tasks/s; client CPU per 1000 tasks: lib ${LIBCPU[-1]} ms, raw ${RAWCPU[-1]} ms (load $(cut -d' ' -f1 /proc/loadavg))"
done
lib=$(median "${LIB[*]}")
raw=$(median "${RAW[*]}")
libcpu=$(median "${LIBCPU[*]}")
rawcpu=$(median "${RAWCPU[*]}")
printf '\n%s no-op tasks, 8 handlers in one process, %s rounds, PostgreSQL %s, synchronous_commit %s\n\n' \
	"$N" "$ROUNDS" "$(psql_q -c 'SHOW server_version' | cut -d' ' -f1)" "$(psql_q -c 'SHOW synchronous_commit')"
printf '| %-24s | %8s | %26s |\n' "client" "tasks/s" "client CPU per 1000 tasks"
printf '|--------------------------|---------:|---------------------------:|\n'
printf '| %-24s | %8s | %23s ms |\n' "raw SQL (Go loop)" "$raw" "$rawcpu" \
	"clients/go schedq.Worker" "$lib" "$libcpu"
printf '\nlib / raw: %.2f in tasks/s (target: at least 0.90)\n' "$(calc "$lib / $raw")"

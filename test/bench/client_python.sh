#!/usr/bin/env bash
# test/bench/client_python.sh -- the Python client library's cost
#
# Tasks per second of no-op handlers through clients/python (schedq.Pool,
# 8 handlers in one process, claims of 8) against the same statements
# without the library (a plain psycopg loop: complete_and_claim with the
# tokens of the batch it ran, claiming the next 8), both driven by
# test/bench/client_python.py.  BENCH_ROUNDS rounds (default 3), the two
# ways interleaved, BENCH_TASKS tasks each (default 10000); a rate is the
# tasks over the time from the first claim to the last completion (the
# task table's started_at and finished_at), so start-up is not counted.
# Prints the median of each, lib / raw of the medians and the median of
# the rounds' own ratios (the target: at least 0.90), and, per round, the
# library's complete_and_claim statements (N / 8 when every claim is full).
#
# Environment: PG_CONFIG (default PostgreSQL 15), BENCH_TASKS,
# BENCH_ROUNDS, BENCH_SYNCHRONOUS_COMMIT (default on).  Run as root, the
# server runs as the OS user postgres; the clients run as you.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=bench-client-python
# shellcheck source=lib.sh
source "$HERE/lib.sh"
N=${BENCH_TASKS:-10000}
ROUNDS=${BENCH_ROUNDS:-3}
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_TASKS must be a positive number, not '$N'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive number, not '$ROUNDS'"
bench_check_tools initdb pg_ctl psql

PYTHON=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import psycopg' >/dev/null 2>&1; then PYTHON=$p && break; fi
done
[[ -n $PYTHON ]] || die "no python3 imports psycopg (apt-get install python3-psycopg)"

bench_init
bench_start_server "synchronous_commit = ${BENCH_SYNCHRONOUS_COMMIT:-on}"
DB=postgres
psql_q -c "CREATE EXTENSION schedq" >/dev/null

load() {
	psql_q -c "DELETE FROM schedq.task" -c "VACUUM (ANALYZE) schedq.task" >/dev/null
	bench_submit "$DB" "$N" \
		"jsonb_build_object('kind', 'noop', 'queue', 'bench', 'payload', jsonb_build_object('i', g))"
	psql_q -c "VACUUM (ANALYZE) schedq.task" -c "CHECKPOINT" >/dev/null
}

measure() { # lib|raw: prints tasks/s
	load
	PGHOST=$TMP PGPORT=$PORT PGUSER=postgres PGDATABASE=$DB \
		timeout 600 "$PYTHON" "$HERE/client_python.py" "$1" "$N" >"$TMP/$1.log" 2>&1 ||
		{ cat "$TMP/$1.log" >&2; die "$1 failed"; }
	local done
	done=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'done'")
	[[ $done == "$N" ]] || die "$1: $done of $N tasks done"
	psql_q -c "SELECT round(count(*) / extract(epoch FROM max(finished_at) - min(started_at)))
	             FROM schedq.task WHERE status = 'done'"
}

LIB=() RAW=() RATIO=()
STMTS=()
for ((r = 1; r <= ROUNDS; r++)); do
	RAW+=("$(measure raw)")
	LIB+=("$(measure lib)")
	STMTS+=("$(grep -o "^[0-9]* complete_and_claim" "$TMP/lib.log" | cut -d" " -f1)")
	RATIO+=("$(calc "${LIB[-1]} / ${RAW[-1]}")")
	log "round $r: raw ${RAW[-1]} tasks/s, lib ${LIB[-1]} tasks/s in ${STMTS[-1]} statements (load $(loadavg))"
done
lib=$(median "${LIB[*]}")
raw=$(median "${RAW[*]}")
printf '\n%s tasks, %s rounds, 8 handlers, PostgreSQL %s, synchronous_commit %s, load %s\n\n' \
	"$N" "$ROUNDS" "$(psql_q -c 'SHOW server_version' | cut -d' ' -f1)" \
	"$(psql_q -c 'SHOW synchronous_commit')" "$(loadavg)"
printf '| %-4s | %8s |\n|------|---------:|\n' way tasks/s
printf '| %-4s | %8s |\n' raw "$raw" lib "$lib"
printf '\nlib / raw: %s of the medians, %s the median of the rounds'"'"' ratios (target: at least 0.90)\n' \
	"$(calc "$lib / $raw" | awk '{ printf "%.2f", $1 }')" "$(median "${RATIO[*]}" | awk '{ printf "%.2f", $1 }')"

#!/usr/bin/env bash
# test/bench/client_node.sh -- the Node.js library (clients/node) against
# raw SQL and against graphile-worker
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh) and,
# for BENCH_REPEAT rounds, interleaved in each round (client_node.js does
# the measuring):
#   lib   BENCH_TASKS no-op schedq tasks drained by the library: one
#         Worker, 8 handlers, in one Node.js process;
#   raw   the same number drained by the same statements without the
#         library: one loop of complete_and_claim(tokens, ..., n => 8)
#         running the 8 handlers of each batch (what the library costs
#         is lib / raw);
#   lib500, raw500  the same two with 500 tasks in hand: the library's
#         prefetch 500 (claimed ahead of a free handler, as
#         graphile-worker's localQueue; it claims 500 at a time, once
#         the tasks in hand have all started), and the loop with
#         n => 500, its tasks run 8 at a time;
#   gw    BENCH_TASKS no-op jobs drained by graphile-worker 0.17.3 at its
#         best: 8 handlers (concurrency 8), localQueue size 500,
#         completeJobBatchDelay 0 (test/bench/peers pins it).
# The order turns from round to round.  Each figure is tasks per second
# from the first handler call to the last
# completion committed; the report gives each one's median over the
# rounds and the ratios lib / raw and lib500 / raw500 (target >= 0.90:
# the library costs at most 10 %), and lib / gw and lib500 / gw (target
# >= 1.0).
#
# Environment: PG_CONFIG (default PostgreSQL 15), BENCH_TASKS (20000),
# BENCH_REPEAT (3), BENCH_SYNCHRONOUS_COMMIT (on).  Needs node, `npm ci` in
# clients/node and in test/bench/peers (make examples-deps does the
# first).  Run as root, the server runs as the OS user postgres; the
# clients run as you, over TCP on 127.0.0.1.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BENCH_NAME=client-node
# shellcheck source=lib.sh
source "$HERE/lib.sh"
bench_check_tools initdb pg_ctl psql
N=${BENCH_TASKS:-20000}
REPEAT=${BENCH_REPEAT:-3}
command -v node >/dev/null || die "no node on PATH"
[[ -f $ROOT/clients/node/node_modules/pg/package.json ]] ||
	die "run 'npm ci' in clients/node first (or make examples-deps)"
[[ -d $HERE/peers/node_modules/graphile-worker ]] ||
	die "run 'npm ci' in $HERE/peers first (graphile-worker)"

bench_init
bench_start_server "synchronous_commit = ${BENCH_SYNCHRONOUS_COMMIT:-on}
schedq.sql_workers = 0"
DB=postgres
psql_q -c "CREATE EXTENSION schedq" >/dev/null
CONN="postgresql://postgres@127.0.0.1:$PORT/$DB"

# Measure one: prints tasks per second.
measure() { # lib | raw | gw
	local out secs n
	if [[ $1 != gw ]]; then
		psql_q -c "TRUNCATE schedq.task CASCADE" >/dev/null
		bench_submit "$DB" "$N"
		psql_q -c "VACUUM (ANALYZE) schedq.task" -c "CHECKPOINT" >/dev/null
	else
		psql_q -c "DO \$\$ BEGIN
		  IF to_regclass('graphile_worker._private_jobs') IS NOT NULL THEN
		    TRUNCATE graphile_worker._private_jobs CASCADE;
		  END IF; END \$\$" >/dev/null
	fi
	out=$(node "$HERE/client_node.js" "$1" "$CONN" "$N") || die "client_node.js $1 failed"
	read -r _ secs n <<<"$out"
	[[ $n == "$N" ]] || die "$1: $n tasks done, not $N"
	# graphile-worker's dead rows are vacuumed now, not by autovacuum
	# during the next measurement.
	if [[ $1 == gw ]]; then
		psql_q -c "VACUUM (ANALYZE) graphile_worker._private_jobs" -c "CHECKPOINT" >/dev/null
	fi
	calc "$N / $secs" | awk '{ printf "%.0f", $1 }'
}

MODES=(lib raw lib500 raw500 gw)
declare -A ALL=()
for ((r = 1; r <= REPEAT; r++)); do
	# Each round starts with the next one, so that none is always first.
	for ((i = 0; i < ${#MODES[@]}; i++)); do
		m=${MODES[(i + r - 1) % ${#MODES[@]}]}
		v=$(measure "$m")
		ALL[$m]+="$v "
		log "round $r: $m $v tasks/s (load $(loadavg))"
	done
done

declare -A MED
for m in "${MODES[@]}"; do MED[$m]=$(median "${ALL[$m]}"); done
printf '\n%s no-op tasks, 8 handlers in one Node.js process, %s rounds, PostgreSQL %s, synchronous_commit %s\n\n' \
	"$N" "$REPEAT" "$(psql_q -c 'SHOW server_version' | cut -d' ' -f1)" \
	"$(psql_q -c 'SHOW synchronous_commit')"
printf '| %-36s | %14s | %s |\n' "client" "median tasks/s" "rounds"
printf '|%s|%s|%s|\n' "--------------------------------------" "----------------:" "--------"
printf '| %-36s | %14s | %s |\n' "lib: schedq library (Worker)" "${MED[lib]}" "${ALL[lib]}"
printf '| %-36s | %14s | %s |\n' "raw: complete_and_claim loop" "${MED[raw]}" "${ALL[raw]}"
printf '| %-36s | %14s | %s |\n' "lib500: the library, prefetch 500" "${MED[lib500]}" "${ALL[lib500]}"
printf '| %-36s | %14s | %s |\n' "raw500: the loop, n => 500" "${MED[raw500]}" "${ALL[raw500]}"
printf '| %-36s | %14s | %s |\n' "gw: graphile-worker 0.17.3 batched" "${MED[gw]}" "${ALL[gw]}"
ratio() { calc "${MED[$1]} / ${MED[$2]}" | awk '{ printf "%.2f", $1 }'; }
printf '\nlib / raw = %s, lib500 / raw500 = %s (target >= 0.90)\n' "$(ratio lib raw)" "$(ratio lib500 raw500)"
printf 'lib / gw = %s, lib500 / gw = %s (target >= 1.0)\n' "$(ratio lib gw)" "$(ratio lib500 gw)"

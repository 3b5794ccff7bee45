#!/usr/bin/env bash
# test/bench/pooler.sh -- submit-to-start latency through PgBouncer
# (transaction mode) and directly, in the same run
#
#   bash test/bench/pooler.sh        (after `make install`; about 1 minute)
#
# Starts a throwaway PostgreSQL server with schedq preloaded (lib.sh) and a
# PgBouncer in front of it (pool_mode = transaction, default_pool_size = 4,
# on 127.0.0.1, to the server's Unix socket), then, for BENCH_ROUNDS
# rounds, interleaved (direct, pooler, direct, ...), runs one consumer and
# one producer (test/bench/pooler_client.py, psycopg 3, one connection
# each, no server-side prepared statements):
#   the consumer waits in schedq.claim(wait => '5 s'), and completes each
#     task it gets;
#   the producer submits BENCH_TASKS tasks, one every BENCH_GAP_MS ms.
#   latency = the consumer's clock when claim() returned the task
#           - the producer's clock just before it sent the submit
# (same machine, time.time()): the submit's round trip and commit, the
# wake-up, and the claim's answer.  "direct" connects to the server on
# 127.0.0.1 (TCP, as the clients of the pooler do), "pooler" to PgBouncer.
# Each round gives p50 and p99 per path; the report adds the medians of
# the rounds'.
#
# Environment (defaults in brackets):
#   PG_CONFIG          pg_config of the server [PostgreSQL 15]
#   BENCH_ROUNDS [5]   BENCH_TASKS [400]   BENCH_GAP_MS [10]
#   BENCH_SYNCHRONOUS_COMMIT [on]
#   BENCH_OUT          if set, the report is also written there
#
# Needs pgbouncer (Debian: pgbouncer) and python3 with psycopg 3
# (python3-psycopg).  Run as root: the server, PgBouncer and the clients
# run as the OS user postgres.  Exit status 0 when every round measured
# every task, 1 otherwise.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=bench-pooler
# shellcheck source=lib.sh
source "$HERE/lib.sh"

ROUNDS=${BENCH_ROUNDS:-5}
TASKS=${BENCH_TASKS:-400}
GAP_MS=${BENCH_GAP_MS:-10}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-on}
OUT=${BENCH_OUT:-}
for v in ROUNDS TASKS GAP_MS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "BENCH_$v must be a positive integer, not '${!v}'"
done
bench_check_tools initdb pg_ctl psql
PGBOUNCER=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
[[ -x $PGBOUNCER ]] || die "pgbouncer not found (apt-get install pgbouncer)"
PYTHON=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import psycopg' 2>/dev/null; then
		PYTHON=$(command -v "$p")
		break
	fi
done
[[ -n $PYTHON ]] || die "no python3 that imports psycopg 3 (apt-get install python3-psycopg)"

bench_init
bench_copy "$HERE/pooler_client.py"
bench_start_server "synchronous_commit = $SYNC_COMMIT"
DB=postgres
psql_q -c "CREATE EXTENSION schedq" >/dev/null

# PgBouncer, as the server's user, in the foreground (a child of ours).
BPORT=$(pick_port) || die "no free port found"
cat >"$TMP/pgbouncer.ini" <<EOF
[databases]
postgres = host=$TMP port=$PORT dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BPORT
unix_socket_dir =
auth_type = trust
auth_file = $TMP/userlist.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 100
logfile = $TMP/pgbouncer.log
pidfile = $TMP/pgbouncer.pid
EOF
echo '"postgres" ""' >"$TMP/userlist.txt"
[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/pgbouncer.ini" "$TMP/userlist.txt"
as_pg "$PGBOUNCER" "$TMP/pgbouncer.ini" >"$TMP/pgbouncer.out" 2>&1 &
CHILDREN+=($!)
for ((i = 0; i < 100; i++)); do
	as_pg "$BINDIR/psql" -X -q -At -h 127.0.0.1 -p "$BPORT" -U postgres -d postgres \
		-c "SELECT 1" >/dev/null 2>&1 && break
	sleep 0.1
done
((i < 100)) || { cat "$TMP/pgbouncer.out" "$TMP/pgbouncer.log" >&2 || true; die "pgbouncer did not start"; }
BVERSION=$("$PGBOUNCER" --version 2>/dev/null | head -n 1)

declare -A DSN=(
	[direct]="host=127.0.0.1 port=$PORT dbname=postgres user=postgres"
	[pooler]="host=127.0.0.1 port=$BPORT dbname=postgres user=postgres"
)

# Nearest-rank "p50 p99 max" of the numbers on stdin.
pcts() {
	sort -g | awk '{ v[NR] = $1 }
		function r(p) { i = int(p * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; return v[i] }
		END { if (NR == 0) { print "- - -"; exit } printf "%.2f %.2f %.2f\n", r(0.5), r(0.99), v[NR] }'
}

FAILED=0
declare -A P50 P99 MAX
# round PATH K: one consumer and one producer through PATH; results in
# P50[PATH], P99[PATH] (space-separated lists, one entry a round).
round() {
	local path=$1 k=$2 q="q_${1}_$2" cpid rc=0 n p50 p99 max i
	as_pg "$PYTHON" "$TMP/pooler_client.py" consume "${DSN[$path]}" "$q" "$TASKS" \
		>"$TMP/$q.ms" 2>"$TMP/$q.err" &
	cpid=$!
	CHILDREN+=("$cpid")
	for ((i = 0; i < 200; i++)); do
		grep -q '^ready' "$TMP/$q.err" 2>/dev/null && break
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.05
	done
	as_pg "$PYTHON" "$TMP/pooler_client.py" produce "${DSN[$path]}" "$q" "$TASKS" "$GAP_MS" ||
		{ echo "$BENCH_NAME: the producer of $q failed" >&2; FAILED=1; }
	wait "$cpid" || rc=$?
	n=$(wc -l <"$TMP/$q.ms")
	if ((rc != 0 || n != TASKS)); then
		sed 's/^/    /' "$TMP/$q.err" >&2
		echo "$BENCH_NAME: round $k, $path: the consumer measured $n of $TASKS tasks (exit $rc)" >&2
		FAILED=1
	fi
	read -r p50 p99 max <<<"$(pcts <"$TMP/$q.ms")"
	P50[$path]+=" $p50"
	P99[$path]+=" $p99"
	MAX[$path]+=" $max"
	log "$(printf 'round %d %-6s: %d tasks  p50 %s  p99 %s  max %s ms' "$k" "$path" "$n" "$p50" "$p99" "$max")"
	psql_q -c "DELETE FROM schedq.task" >/dev/null
}

LOAD_BEFORE=$(loadavg)
echo "$BENCH_NAME: $ROUNDS rounds of $TASKS tasks each way, one every $GAP_MS ms" >&2
for ((k = 1; k <= ROUNDS; k++)); do
	round direct "$k"
	round pooler "$k"
done

PGVER=$(psql_q -c "SHOW server_version" | cut -d' ' -f1)
report() {
	local path
	echo "schedq benchmark: submit-to-start latency through PgBouncer (transaction mode) and directly"
	echo
	echo "  server    PostgreSQL $PGVER, $(nproc 2>/dev/null || echo '?') CPU(s), synchronous_commit=$SYNC_COMMIT"
	echo "  pooler    $BVERSION, pool_mode=transaction, default_pool_size=4, to the server's Unix socket"
	echo "  clients   test/bench/pooler_client.py (psycopg $("$PYTHON" -c 'import psycopg; print(psycopg.__version__)')), over 127.0.0.1;"
	echo "            a consumer in claim(wait => '5 s'), a producer submitting one task every $GAP_MS ms"
	echo "  machine   load average $LOAD_BEFORE before, $(loadavg) after"
	echo
	echo "  latency = consumer's clock when claim() returned - producer's clock before the submit; ms"
	echo "  $ROUNDS rounds of $TASKS tasks, direct and pooler interleaved; medians of the rounds' figures"
	printf '  %-8s %8s %8s %8s   %s\n' path p50 p99 max "rounds' p50 / p99"
	for path in direct pooler; do
		printf '  %-8s %8s %8s %8s   %s /%s\n' "$path" "$(median "${P50[$path]}")" \
			"$(median "${P99[$path]}")" "$(median "${MAX[$path]}")" "${P50[$path]# }" "${P99[$path]}"
	done
}
if [[ -n $OUT ]]; then report | tee "$OUT"; else report; fi
exit "$FAILED"

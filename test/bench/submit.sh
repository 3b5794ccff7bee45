#!/usr/bin/env bash
# test/bench/submit.sh -- putting work in: schedq's submit and submit_many
# against plain INSERTs into a table with a primary key and one index
#
#   bash test/bench/submit.sh              (after `make install`; ~2 minutes)
#   BENCH_REPEAT=3 bash test/bench/submit.sh
#
# Starts a throwaway PostgreSQL server with schedq preloaded and measures,
# in each round, interleaved (the baseline first, then schedq):
#
# 1. One task per transaction, pgbench at BENCH_CLIENTS clients,
#    BENCH_SECONDS s each: schedq.submit('noop', payload => ...)
#    (schedq_submit.sql: an ungated task, inserted 'available') against
#    INSERT INTO raw_job (raw_insert.sql; raw_setup.sql: a bigserial
#    primary key and one partial index).  Both tables are emptied and
#    vacuumed before each run.  Rate = pgbench's tps; the row counts are
#    checked against it.
# 2. A batch of BENCH_BATCH (20,000) tasks sent by a client, the payloads
#    spelt out in the statement (as a client library sends them):
#      schedq   SELECT count(*) FROM schedq.submit_many('[{"kind": ...}, ...]')
#      INSERT   one multi-row INSERT INTO raw_job (payload) VALUES (...), ...
#      COPY     COPY raw_job (payload) FROM STDIN, the rows inline
#    each BENCH_BATCH_CALLS times in one psql session (\timing, end to
#    end over the unix socket, commit included); per round the median call.
#
# 3. With BENCH_PEERS=1 (needs node and `npm ci` in test/bench/peers, which
#    pins graphile-worker 0.17.3): from Node.js, BENCH_BATCH_CALLS batches
#    of BENCH_BATCH jobs through graphile-worker's addJobs and through
#    schedq.submit_many (node-postgres, the JSON array as one parameter),
#    alternating (peers/add_jobs.js); per round the median call.
#
# Targets: submit >= 0.95x the raw INSERT at 16 and 32 clients;
# submit_many of 20,000 >= 1.5x graphile-worker's addJobs (3.; the raw
# INSERT and COPY of 2. are the ceiling every client library shares).
#
# Environment (defaults in brackets):
#   PG_CONFIG                 pg_config of the server [PostgreSQL 15]
#   BENCH_SECONDS [10]        duration of each pgbench run
#   BENCH_CLIENTS ["16 32"]   client counts of 1. (BENCH_SUBMIT_CLIENTS is
#                             read when BENCH_CLIENTS is not set)
#   BENCH_BATCH [20000]       BENCH_BATCH_CALLS [5]     BENCH_PEERS [0]
#   BENCH_REPEAT [3]          rounds; the report gives medians of the rounds
#                             and the median of the rounds' ratios
#   BENCH_SYNCHRONOUS_COMMIT  [on]    BENCH_SERVER_CONF (extra conf lines)
#   BENCH_OUT                 if set, the report is also written there
#
# Run as root; the server and clients run as the OS user postgres.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=submit
# shellcheck source=lib.sh
source "$HERE/lib.sh"
DURATION=${BENCH_SECONDS:-10}
CLIENTS=${BENCH_CLIENTS:-${BENCH_SUBMIT_CLIENTS:-"16 32"}}
BATCH=${BENCH_BATCH:-20000}
CALLS=${BENCH_BATCH_CALLS:-5}
REPEAT=${BENCH_REPEAT:-3}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-on}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
PEERS=${BENCH_PEERS:-0}
DB=bench

for v in DURATION BATCH CALLS REPEAT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
for c in $CLIENTS; do
	[[ $c =~ ^[1-9][0-9]*$ ]] || die "BENCH_CLIENTS must list positive integers, not '$CLIENTS'"
done
bench_check_tools initdb pg_ctl psql pgbench
if [[ $PEERS == 1 ]]; then
	command -v node >/dev/null || die "BENCH_PEERS=1 needs node"
	[[ -d $HERE/peers/node_modules/graphile-worker ]] || die "BENCH_PEERS=1: run 'npm ci' in $HERE/peers first"
fi
bench_init
bench_copy "$HERE/raw_setup.sql" "$HERE/raw_insert.sql" "$HERE/schedq_submit.sql"
bench_start_server "synchronous_commit = $SYNC_COMMIT
$EXTRA_CONF"
bench_create_db "$DB" raw

# The batch scripts, the payloads spelt out as a client sends them.
# (printed piece by piece: awk would copy a growing string 20,000 times)
awk -v n="$BATCH" -v calls="$CALLS" 'BEGIN {
	print "\\timing on"
	for (c = 0; c < calls; c++) {
		printf "SELECT count(*) FROM schedq.submit_many($$["
		for (i = 1; i <= n; i++) printf "%s{\"kind\": \"noop\", \"payload\": {\"i\": %d}}", (i > 1 ? ", " : ""), i
		print "]$$);"
	}
}' >"$TMP/batch_schedq.sql"
awk -v n="$BATCH" -v calls="$CALLS" 'BEGIN {
	print "\\timing on"
	for (c = 0; c < calls; c++) {
		printf "INSERT INTO raw_job (payload) VALUES "
		for (i = 1; i <= n; i++) printf "%s($${\"i\": %d}$$)", (i > 1 ? ", " : ""), i
		print ";"
	}
}' >"$TMP/batch_insert.sql"
awk -v n="$BATCH" -v calls="$CALLS" 'BEGIN {
	print "\\timing on"
	for (c = 0; c < calls; c++) {
		print "COPY raw_job (payload) FROM STDIN;"
		for (i = 1; i <= n; i++) print "{\"i\": " i "}"
		print "\\."
	}
}' >"$TMP/batch_copy.sql"
chmod 0644 "$TMP"/batch_*.sql
[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP"/batch_*.sql

empty_tables() {
	psql_q >/dev/null <<EOF
DELETE FROM schedq.task;
VACUUM (FULL, ANALYZE) schedq.task;
TRUNCATE raw_job RESTART IDENTITY;
VACUUM (ANALYZE) raw_job;
DO \$\$ BEGIN
  IF to_regclass('graphile_worker._private_jobs') IS NOT NULL THEN
    TRUNCATE graphile_worker._private_jobs CASCADE;
  END IF;
END \$\$;
CHECKPOINT;
EOF
}

# batch_run NAME: the median time (ms) of the calls of $TMP/batch_NAME.sql
batch_run() {
	local out
	empty_tables
	out=$(psql_q -f "$TMP/batch_$1.sql" 2>&1) || { echo "$out" | tail -5 >&2; die "batch $1 failed"; }
	median "$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tr '\n' ' ')"
}

declare -A ALL # key -> one value per round
LOAD_START=$(loadavg)
T_START=$(date +%s)
for ((round = 1; round <= REPEAT; round++)); do
	log "round $round of $REPEAT"
	for c in $CLIENTS; do
		empty_tables
		bench_pgbench "$DB" raw_insert.sql "$c" "$DURATION"
		r=$PGB_TPS rn=$PGB_N
		empty_tables
		bench_pgbench "$DB" schedq_submit.sql "$c" "$DURATION"
		s=$PGB_TPS sn=$PGB_N
		rows=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'available'")
		((rows == sn)) || die "schedq: $rows available tasks after $sn submits"
		ALL[raw:$c]+=" $r" ALL[schedq:$c]+=" $s"
		ALL[ratio:$c]+=" $(printf '%.2f' "$(calc "$s / $r")")"
		log "$(printf 'submit, %2d clients: raw INSERT %.0f/s (%d), schedq.submit %.0f/s (%d): %.2f' \
			"$c" "$r" "$rn" "$s" "$sn" "$(calc "$s / $r")")"
	done
	for b in insert copy schedq; do
		ms=$(batch_run "$b")
		ALL[batch:$b]+=" $(printf '%.0f' "$(calc "$BATCH * 1000 / $ms")")"
		log "$(printf 'batch of %d, %-6s: median %.1f ms = %.0f rows/s' "$BATCH" "$b" "$ms" "$(calc "$BATCH * 1000 / $ms")")"
	done
	rows=$(psql_q -c "SELECT count(*) FROM schedq.task WHERE status = 'available'")
	((rows == BATCH * CALLS)) || die "submit_many: $rows available tasks after $CALLS calls of $BATCH"
	if [[ $PEERS == 1 ]]; then
		empty_tables
		out=$(node "$HERE/peers/add_jobs.js" "postgresql://postgres@127.0.0.1:$PORT/$DB" "$BATCH" "$CALLS") ||
			die "peers/add_jobs.js failed"
		gw=$(median "$(awk '$1 == "gw" { print $2 }' <<<"$out" | tr '\n' ' ')")
		sq=$(median "$(awk '$1 == "schedq" { print $2 }' <<<"$out" | tr '\n' ' ')")
		ALL[batch:gw]+=" $(printf '%.0f' "$(calc "$BATCH * 1000 / $gw")")"
		ALL[batch:node]+=" $(printf '%.0f' "$(calc "$BATCH * 1000 / $sq")")"
		ALL[bratio:gw]+=" $(printf '%.2f' "$(calc "$gw / $sq")")"
		log "$(printf 'batch of %d from Node.js: graphile-worker addJobs %.1f ms, schedq.submit_many %.1f ms' "$BATCH" "$gw" "$sq")"
	fi
	ALL[bratio:insert]+=" $(printf '%.2f' "$(calc "${ALL[batch:schedq]##* } / ${ALL[batch:insert]##* }")")"
	ALL[bratio:copy]+=" $(printf '%.2f' "$(calc "${ALL[batch:schedq]##* } / ${ALL[batch:copy]##* }")")"
done
T_END=$(date +%s)
LOAD_END=$(loadavg)

report() {
	local c
	echo "schedq benchmark: putting work in ($REPEAT rounds; medians, and the median of the rounds' ratios)"
	echo "  server PostgreSQL $(psql_q -c 'SHOW server_version' | cut -d' ' -f1), $(nproc) CPU(s), synchronous_commit=$SYNC_COMMIT"
	echo
	echo "1. one task per transaction, pgbench -M prepared, -T $DURATION"
	printf '  %7s  %14s  %16s  %8s  %s\n' clients "raw INSERT/s" "schedq.submit/s" ratio "rounds' ratios"
	for c in $CLIENTS; do
		printf '  %7s  %14.0f  %16.0f  %8s  %s\n' "$c" "$(median "${ALL[raw:$c]}")" \
			"$(median "${ALL[schedq:$c]}")" "$(median "${ALL[ratio:$c]}")" "${ALL[ratio:$c]# }"
	done
	echo "  target >= 0.95"
	echo
	echo "2. a batch of $BATCH from a client, median of $CALLS calls a round, rows/s"
	printf '  %-28s %10s   %s\n' "multi-row INSERT" "$(median "${ALL[batch:insert]}")" "${ALL[batch:insert]# }"
	printf '  %-28s %10s   %s\n' "COPY FROM STDIN" "$(median "${ALL[batch:copy]}")" "${ALL[batch:copy]# }"
	printf '  %-28s %10s   %s\n' "schedq.submit_many" "$(median "${ALL[batch:schedq]}")" "${ALL[batch:schedq]# }"
	if [[ $PEERS == 1 ]]; then
		printf '  %-28s %10s   %s\n' "Node.js: graphile-worker addJobs" "$(median "${ALL[batch:gw]}")" "${ALL[batch:gw]# }"
		printf '  %-28s %10s   %s\n' "Node.js: schedq.submit_many" "$(median "${ALL[batch:node]}")" "${ALL[batch:node]# }"
		echo "  Node.js submit_many / addJobs $(median "${ALL[bratio:gw]}") (rounds:${ALL[bratio:gw]}); target >= 1.5"
	fi
	echo "  submit_many / INSERT $(median "${ALL[bratio:insert]}") (rounds:${ALL[bratio:insert]}), / COPY $(median "${ALL[bratio:copy]}") (rounds:${ALL[bratio:copy]})"
	echo
	echo "  wall time $((T_END - T_START)) s; load average before $LOAD_START, after $LOAD_END"
}
echo >&2
if [[ -n $OUT ]]; then report | tee "$OUT"; else report; fi

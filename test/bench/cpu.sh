#!/usr/bin/env bash
# test/bench/cpu.sh -- server CPU per transaction: schedq against the raw
# SKIP LOCKED queue, shape by shape.
#
#   BENCH_REPEAT=3 bash test/bench/cpu.sh
#
# Throughput on this shared 2-core machine swings with whatever else runs;
# the CPU time a backend spends on a transaction hardly does.  Each run is
# one pgbench client (-c 1 -t N, -M prepared) on a freshly loaded and
# vacuumed queue; the backend's CPU time (user + system) is read from the
# postmaster's cutime + cstime once the backend has exited, and divided by
# the transactions.  With 16 clients on 2 cores both queues are CPU-bound,
# so raw CPU / schedq CPU is what their throughput ratio tends to there.
#
# Shapes, run.sh's variants (a "transaction" is one run of the pgbench
# script; the same scripts as run.sh):
#   A  claim 1 + complete (2 commits)             raw: lock 1 + update
#   B  claim 10 + ten complete calls (2 commits)  raw: lock 10 + update (2)
#   C  claim 10 + complete_many (2 commits)       raw: as B
#   D  complete_and_claim (1 commit)              raw: one statement
#   S  submit one task                            raw: INSERT one row
#
# Environment:
#   BENCH_REPEAT [3]            rounds (schedq and raw interleaved)
#   BENCH_TRANSACTIONS [10000]  transactions per run (B and C: a tenth)
#   BENCH_SHAPES ["A B C D S"]
#   BENCH_SYNCHRONOUS_COMMIT [on]
#   BENCH_OUT                   if set, the report is also written there
# autovacuum is off (its workers' CPU would land in the same counter);
# every run starts from a VACUUMed table.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BENCH_NAME=cpu
# shellcheck source=test/bench/lib.sh
source "$HERE/lib.sh"

REPEAT=${BENCH_REPEAT:-3}
N=${BENCH_TRANSACTIONS:-10000}
SHAPES=${BENCH_SHAPES:-"A B C D S"}
OUT=${BENCH_OUT:-}

bench_check_tools pgbench psql initdb pg_ctl
bench_init
bench_start_server "autovacuum = off
synchronous_commit = ${BENCH_SYNCHRONOUS_COMMIT:-on}"
bench_copy "$HERE/raw_setup.sql" \
	"$HERE/schedq_claim_complete.sql" "$HERE/raw_claim_complete.sql" \
	"$HERE/schedq_claim10_complete.sql" "$HERE/schedq_claim10_complete_many.sql" \
	"$HERE/raw_claim10_complete.sql" \
	"$HERE/schedq_complete_and_claim.sql" "$HERE/raw_complete_and_claim.sql" \
	"$HERE/schedq_submit.sql" "$HERE/raw_insert.sql"
DB=cpu
bench_create_db "$DB" raw
PM=$(head -n 1 "$PGDATA_DIR/postmaster.pid")

# CPU time of the postmaster's exited children, in clock ticks.
children_ticks() { awk '{ print $16 + $17 }' "/proc/$PM/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# load SYS TASKS: an empty, vacuumed queue of SYS holding TASKS tasks.
load() {
	psql_q -c "TRUNCATE schedq.task, raw_job" >/dev/null
	if [[ $1 == schedq ]]; then
		(($2 == 0)) || bench_submit "$DB" "$2"
	else
		psql_q -c "INSERT INTO raw_job (payload)
		           SELECT jsonb_build_object('i', g) FROM generate_series(1, $2) g" >/dev/null
	fi
	psql_q -c "VACUUM ANALYZE schedq.task" -c "VACUUM ANALYZE raw_job" -c "CHECKPOINT" >/dev/null
}

# run SCRIPT N [pgbench options]: CPU microseconds per transaction.
run() {
	local script=$1 n=$2 t0 t1 i out
	shift 2
	sleep 0.3 # the loading sessions are reaped
	t0=$(children_ticks)
	out=$(as_pg "$BINDIR/pgbench" -n -M prepared -h "$TMP" -p "$PORT" -U postgres \
		-c 1 -t "$n" -f "$TMP/$script" "$@" "$DB" 2>&1) ||
		{ sed 's/^/    /' <<<"$out" >&2; die "pgbench $script failed"; }
	grep -q "^number of transactions actually processed: $n/$n" <<<"$out" ||
		{ sed 's/^/    /' <<<"$out" >&2; die "pgbench $script did not complete $n transactions"; }
	for ((i = 0; i < 100; i++)); do
		[[ $(psql_q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'") == 0 ]] && break
		sleep 0.05
	done
	sleep 0.3
	t1=$(children_ticks)
	calc "($t1 - $t0) * $TICK_US / $n" | awk '{ printf "%.0f", $1 }'
}

# shape SHAPE: sets S_US and R_US, schedq's and raw's CPU per transaction.
shape() {
	case $1 in
	A)
		load schedq "$N"; S_US=$(run schedq_claim_complete.sql "$N")
		load raw "$N"; R_US=$(run raw_claim_complete.sql "$N") ;;
	B)
		load schedq $((N + 10)); S_US=$(run schedq_claim10_complete.sql $((N / 10)))
		load raw $((N + 10)); R_US=$(run raw_claim10_complete.sql $((N / 10))) ;;
	C)
		load schedq $((N + 10)); S_US=$(run schedq_claim10_complete_many.sql $((N / 10)))
		load raw $((N + 10)); R_US=$(run raw_claim10_complete.sql $((N / 10))) ;;
	D)
		load schedq $((N + 1)); S_US=$(run schedq_complete_and_claim.sql "$N" -D tokens={})
		load raw $((N + 1)); R_US=$(run raw_complete_and_claim.sql "$N" -D id=0) ;;
	S)
		load schedq 0; S_US=$(run schedq_submit.sql "$N")
		load raw 0; R_US=$(run raw_insert.sql "$N") ;;
	*) die "unknown shape $1" ;;
	esac
}

declare -A S_ALL R_ALL RATIO_ALL
load0=$(loadavg)
for ((round = 1; round <= REPEAT; round++)); do
	log "round $round of $REPEAT"
	for s in $SHAPES; do
		shape "$s"
		ratio=$(calc "$R_US / $S_US")
		log "$s: schedq $S_US us, raw $R_US us per transaction: raw/schedq $(printf %.2f "$ratio")"
		S_ALL[$s]+=" $S_US"
		R_ALL[$s]+=" $R_US"
		RATIO_ALL[$s]+=" $(printf %.2f "$ratio")"
	done
done

report() {
	echo "Server CPU per transaction, one client, $N transactions a run (B, C: $((N / 10))),"
	echo "$REPEAT rounds; medians; raw/schedq above 1 means schedq uses less CPU"
	echo "  shape  schedq us  raw us  raw/schedq  (rounds)"
	for s in $SHAPES; do
		printf '  %-5s  %9s  %6s  %10s  (%s)\n' "$s" "$(median "${S_ALL[$s]}")" \
			"$(median "${R_ALL[$s]}")" "$(median "${RATIO_ALL[$s]}")" "${RATIO_ALL[$s]# }"
	done
	echo "  1-minute load average before $load0, after $(loadavg) (CPU time is little moved by it)"
}
report
[[ -z $OUT ]] || report >"$OUT"

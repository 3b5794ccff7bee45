#!/usr/bin/env bash
# test/bench/run.sh -- claim + complete throughput, schedq against a raw table
#
# Starts a throwaway PostgreSQL server with schedq preloaded, then measures
# how many no-op tasks per second workers can claim and complete, the way a
# real worker does it: one claim transaction, then one complete transaction
# carrying the returned token.  The same server, in the same run, also
# measures the hand-rolled baseline most applications start with: a plain
# table claimed with UPDATE ... FOR UPDATE SKIP LOCKED (raw_setup.sql).
#
# Four variants, each at 1, 4 and 16 clients (pgbench -c N -j min(N,2)):
#   A  one task per cycle:  claim n => 1, then complete(token)
#   B  batches of 10:       claim n => 10, then complete the 10 tokens in
#                           one statement (still two transactions per cycle)
#   C  batches of 10, the 10 tokens completed by one complete_many call;
#      schedq only, compared with the raw queue's B
#   D  one commit per task: complete_and_claim(previous token) finishes the
#      previous task and claims the next in one transaction; the raw queue
#      does the same in one statement (raw_complete_and_claim.sql).  Also
#      compared with the raw queue's A (two commits per task) of the same
#      round, run for it when A is not among the variants.
#
# Every measured run starts from an emptied, vacuumed table preloaded with
# enough tasks that the queue never runs dry (sized from the rates measured
# so far; a run that ran dry anyway is repeated once with a bigger load).
# After each run the number of tasks actually marked done is checked against
# what pgbench says it did.
#
# Environment:
#   PG_CONFIG        pg_config of the server to use (default PostgreSQL 15)
#   BENCH_SECONDS    duration of each measured run (default 10)
#   BENCH_CLIENTS    client counts (default "1 4 16")
#   BENCH_VARIANTS   which variants to run (default "A B C D"; C needs B's raw
#                    runs, D A's: they are run when B or A is not listed)
#   BENCH_REPEAT     run the whole sequence this many times (default 1); the
#                    report then gives medians, and schedq/raw is the median
#                    of the ratios of each schedq run to the raw run just
#                    before it (this machine's figures move a lot run to run)
#   BENCH_SYNCHRONOUS_COMMIT  synchronous_commit for the server (default on)
#   BENCH_SERVER_CONF  extra postgresql.conf lines, e.g. "jit = off"
#   BENCH_OUT        if set, the report is also written to this file
#
# Run as root, the server and every client run as the OS user postgres.
# Exit status: 0 when every run succeeded, 1 otherwise.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_NAME=bench
# shellcheck source=lib.sh
source "$HERE/lib.sh"
DURATION=${BENCH_SECONDS:-10}
CLIENTS=${BENCH_CLIENTS:-"1 4 16"}
VARIANTS=${BENCH_VARIANTS:-"A B C D"}
REPEAT=${BENCH_REPEAT:-1}
SYNC_COMMIT=${BENCH_SYNCHRONOUS_COMMIT:-on}
EXTRA_CONF=${BENCH_SERVER_CONF:-}
OUT=${BENCH_OUT:-}
MAX_PRELOAD=${BENCH_MAX_PRELOAD:-3000000}
DB=bench

[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "BENCH_SECONDS must be a positive integer, not '$DURATION'"
for c in $CLIENTS; do
	[[ $c =~ ^[1-9][0-9]*$ ]] || die "BENCH_CLIENTS must list positive integers, not '$CLIENTS'"
done
for var in $VARIANTS; do
	[[ $var == [ABCD] ]] || die "BENCH_VARIANTS must list A, B, C or D, not '$VARIANTS'"
done
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer, not '$REPEAT'"
bench_check_tools initdb pg_ctl psql pgbench

# ---------------------------------------------------------------------------
# Throwaway server (lib.sh)
# ---------------------------------------------------------------------------
bench_init

# The scripts are copied into the temp dir: the postgres OS user need not be
# able to read the checkout.
bench_copy "$HERE"/*.sql

bench_start_server "synchronous_commit = $SYNC_COMMIT
$EXTRA_CONF"

as_pg "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$TMP" -p "$PORT" -U postgres -d postgres \
	-c "CREATE DATABASE $DB" >/dev/null
psql_q -c "CREATE EXTENSION schedq" >/dev/null
psql_q -f "$TMP/raw_setup.sql" >/dev/null

PGVER=$(psql_q -c "SHOW server_version" | cut -d' ' -f1)
SCHEDQ_VER=$(psql_q -c "SELECT extversion FROM pg_extension WHERE extname = 'schedq'")
FSYNC=$(psql_q -c "SHOW fsync")
SHBUF=$(psql_q -c "SHOW shared_buffers")
JIT=$(psql_q -c "SHOW jit")
NCPU=$(nproc 2>/dev/null || echo '?')

# ---------------------------------------------------------------------------
# Loading and resetting the queues
# ---------------------------------------------------------------------------

# Empty the raw table and fill it with $1 available rows.
load_raw() {
	psql_q >/dev/null <<EOF
TRUNCATE raw_job RESTART IDENTITY;
INSERT INTO raw_job (payload)
SELECT jsonb_build_object('i', g) FROM generate_series(1, $1) AS g;
VACUUM (ANALYZE) raw_job;
CHECKPOINT;
EOF
}

# Empty schedq.task, submit $1 no-op tasks with submit_many (chunks of
# 10000, spread over up to 4 concurrent sessions, bench_submit in lib.sh) and wait until all
# of them are available.
load_schedq() {
	local n=$1 i state
	psql_q >/dev/null <<EOF
DELETE FROM schedq.task;
VACUUM (FULL, ANALYZE) schedq.task;
EOF
	bench_submit "$DB" "$n"
	for ((i = 0; i < 600; i++)); do
		state=$(psql_q -c "SELECT count(*) FILTER (WHERE status = 'available') || ' ' || count(*) FROM schedq.task")
		[[ $state == "$n $n" ]] && break
		sleep 0.1
	done
	[[ $state == "$n $n" ]] ||
		die "after 60 s only '$state' (available total) of $n submitted tasks are available"
	psql_q >/dev/null <<EOF
VACUUM (ANALYZE) schedq.task;
CHECKPOINT;
EOF
}

# "done running available" counts of a system's queue.
queue_counts() {
	local tbl=raw_job
	[[ $1 == schedq ]] && tbl=schedq.task
	psql_q -c "SELECT count(*) FILTER (WHERE status = 'done') || ' ' ||
	                  count(*) FILTER (WHERE status = 'running') || ' ' ||
	                  count(*) FILTER (WHERE status = 'available')
	             FROM $tbl"
}

# ---------------------------------------------------------------------------
# One measured run
# ---------------------------------------------------------------------------
declare -A RATE LAT CHECK
declare -A BEST # per system:variant: best tasks/s measured so far
declare -A MAXC # per system:variant: highest client count measured so far
FAILED=0

script_for() { # system variant
	case $1:$2 in
	raw:A) echo raw_claim_complete.sql ;;
	raw:B) echo raw_claim10_complete.sql ;;
	schedq:A) echo schedq_claim_complete.sql ;;
	schedq:B) echo schedq_claim10_complete.sql ;;
	schedq:C) echo schedq_claim10_complete_many.sql ;;
	raw:D) echo raw_complete_and_claim.sql ;;
	schedq:D) echo schedq_complete_and_claim.sql ;;
	esac
}
batch_of() { [[ $1 == [AD] ]] && echo 1 || echo 10; }
# The raw variant a schedq variant is compared with.
raw_variant() { [[ $1 == C ]] && echo B || echo "$1"; }

# How many tasks to preload so that the queue does not run dry.  The
# expected rate is this system's best so far in this variant (doubled for a
# client count higher than any measured yet), or before any, twice its rate
# in the other variant.  Raw tasks are cheap to load: 2.5 times what that
# rate would consume.  schedq tasks cost more to submit, so their estimate
# is also capped by the raw rate just measured at the same client count
# (schedq does more work per task than the raw table), with a margin of 1.5.
# A run that runs dry anyway is repeated (run_one).
preload_size() { # system variant clients
	local sys=$1 var=$2 c=$3 other est n raw_here
	est=${BEST[$sys:$var]:-0}
	if ((est > 0)); then
		if ((c > ${MAXC[$sys:$var]:-0})); then est=$((est * 2)); fi
	else
		[[ $var == A ]] && other=B || other=A
		est=$((${BEST[$sys:$other]:-0} * 2))
	fi
	if [[ $sys == raw ]]; then
		((est > 0)) || est=8000
		n=$((est * DURATION * 5 / 2))
	else
		raw_here=${RATE[$(raw_variant "$var"):raw:$c]:-0}
		if ((est == 0 || (raw_here > 0 && raw_here < est))); then est=$raw_here; fi
		((est > 0)) || est=8000
		n=$((est * DURATION * 3 / 2))
	fi
	((n >= 5000)) || n=5000
	((n <= MAX_PRELOAD)) || n=$MAX_PRELOAD
	echo "$n"
}

# Run pgbench for one (system, variant, clients); fill RATE/LAT/CHECK.
run_one() {
	local sys=$1 var=$2 c=$3 preload=${4:-} attempt=${5:-1}
	local key=$var:$sys:$c script batch j out rc t0 t1
	local tps processed lat done running avail expect rate err
	script=$(script_for "$sys" "$var")
	batch=$(batch_of "$var")
	j=$((c < 2 ? c : 2))
	[[ -n $preload ]] || preload=$(preload_size "$sys" "$var" "$c")

	t0=$(date +%s.%N)
	if [[ $sys == raw ]]; then load_raw "$preload"; else load_schedq "$preload"; fi
	t1=$(date +%s.%N)
	log "$(printf '%-6s variant %s, %2d client(s): loaded %d tasks in %.1f s; running %d s' \
		"$sys" "$var" "$c" "$preload" "$(calc "$t1 - $t0")" "$DURATION")"

	rc=0
	# -D: the first cycle of variant D has no previous task (an empty
	# token list, id 0); other scripts ignore the variables.
	out=$(as_pg "$BINDIR/pgbench" -n -M prepared -h "$TMP" -p "$PORT" -U postgres \
		-c "$c" -j "$j" -T "$DURATION" -D 'tokens={}' -D id=0 \
		-f "$TMP/$script" "$DB" 2>&1) || rc=$?

	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
	processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out" | head -n 1)
	lat=$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -n 1)
	read -r done running avail <<<"$(queue_counts "$sys")"

	# Ran dry: the run measured an empty queue part of the time.  Repeat once
	# with three times as many tasks as were consumed.
	if ((avail == 0)) && ((attempt == 1)); then
		log "$sys variant $var, $c client(s): the queue ran dry; repeating with more tasks"
		run_one "$sys" "$var" "$c" $(((done + running + 1) * 3)) 2
		return
	fi

	if [[ $rc != 0 || -z $tps || -z $processed || $processed == 0 ]]; then
		err=$(grep -m 1 -E 'error|ERROR|FATAL' <<<"$out" || true)
		echo "bench: pgbench failed for $sys variant $var, $c client(s) (exit $rc):" >&2
		sed 's/^/    /' <<<"$out" >&2
		RATE[$key]=0
		LAT[$key]=-
		CHECK[$key]="FAILED: ${err:-exit $rc}"
		FAILED=1
		return
	fi

	# Tasks per second from the tasks really marked done, over pgbench's
	# measured time (transactions / tps, connection time excluded).
	rate=$(calc "$done * $tps / $processed")
	RATE[$key]=$(printf '%.0f' "$rate")
	LAT[$key]=$lat
	expect=$((processed * batch))
	# D: a client's first cycle finishes nothing, and its last claim is
	# left running when the time is up.
	[[ $var != D ]] || expect=$((processed - c))
	if ((done == expect && running == 0)) || [[ $var == D && $done == "$expect" && $running == "$c" ]]; then
		CHECK[$key]=ok
	elif ((done == expect)); then
		CHECK[$key]="ok ($running left running by the time limit)"
	else
		CHECK[$key]="MISMATCH: $done done, pgbench did $processed x $batch"
		FAILED=1
	fi
	if ((${RATE[$key]} > ${BEST[$sys:$var]:-0})); then BEST[$sys:$var]=${RATE[$key]}; fi
	if ((c > ${MAXC[$sys:$var]:-0})); then MAXC[$sys:$var]=$c; fi
	log "$(printf '%-6s variant %s, %2d client(s): %s tasks/s, latency %s ms, %s' \
		"$sys" "$var" "$c" "${RATE[$key]}" "$lat" "${CHECK[$key]}")"
}

LOAD_START=$(loadavg)
T_START=$(date +%s)
declare -A ALL_RAW ALL_SCHEDQ ALL_RATIO # per variant:clients, one value per round
declare -A ALL_RATIO_A ALL_RAW_A         # D: schedq D / raw A of the same round; raw A
for ((round = 1; round <= REPEAT; round++)); do
	((REPEAT == 1)) || log "round $round of $REPEAT"
	for var in $VARIANTS; do
		for c in $CLIENTS; do
			# C is compared with B's raw runs: run them if B is not run
			if [[ $var != C ]] || [[ " $VARIANTS " != *" B "* ]]; then
				run_one raw "$(raw_variant "$var")" "$c"
			fi
			# D is also compared with A's raw runs: run them if A is not run
			if [[ $var == D && " $VARIANTS " != *" A "* ]]; then
				run_one raw A "$c"
			fi
			run_one schedq "$var" "$c"
			r=${RATE[$(raw_variant "$var"):raw:$c]:-0}
			s=${RATE[$var:schedq:$c]:-0}
			ALL_RAW[$var:$c]+=" $r"
			ALL_SCHEDQ[$var:$c]+=" $s"
			if ((r > 0)); then ALL_RATIO[$var:$c]+=" $(printf '%.2f' "$(calc "$s / $r")")"; fi
			ra=${RATE[A:raw:$c]:-0}
			if [[ $var == D ]] && ((ra > 0)); then
				ALL_RATIO_A[$var:$c]+=" $(printf '%.2f' "$(calc "$s / $ra")")"
				ALL_RAW_A[$c]+=" $ra"
			fi
		done
	done
done
T_END=$(date +%s)
LOAD_END=$(loadavg)

# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
report() {
	local var c r s ratio title
	echo "schedq benchmark: claim + complete throughput, no-op work"
	echo
	echo "  server    PostgreSQL $PGVER, schedq $SCHEDQ_VER, $NCPU CPU(s), fsync=$FSYNC, synchronous_commit=$SYNC_COMMIT, jit=$JIT, shared_buffers=$SHBUF"
	[[ -z $EXTRA_CONF ]] || echo "  extra     postgresql.conf: $(tr '\n' ';' <<<"$EXTRA_CONF" | sed 's/;$//')"
	echo "  pgbench   -M prepared, -T $DURATION s per run, -c N -j min(N,2); each run starts from an emptied,"
	echo "            vacuumed queue preloaded with enough no-op tasks never to run dry"
	echo "  raw       plain table, partial index on (priority DESC, run_at, id) WHERE status = 'available',"
	echo "            claimed with UPDATE ... FOR UPDATE SKIP LOCKED (test/bench/raw_*.sql)"
	echo "  schedq    schedq.claim + schedq.complete, D schedq.complete_and_claim (test/bench/schedq_*.sql)"
	echo "  tasks/s   tasks found 'done' after the run / pgbench's measured time"
	echo "  latency   pgbench 'latency average': one whole cycle (claim txn + complete txn), in ms"
	for var in $VARIANTS; do
		echo
		case $var in
		A) title="A. one task per cycle: claim n => 1 (1 txn), then complete(token) (1 txn)" ;;
		B) title="B. batch of 10 per cycle: claim n => 10 (1 txn), then complete the 10 tokens in one statement (1 txn)" ;;
		C) title="C. as B, the 10 tokens completed by one complete_many call (raw: its B figures)" ;;
		D) title="D. one commit per task: complete_and_claim(previous token) (1 txn); raw: one statement finishing the previous row and locking the next (1 txn)" ;;
		esac
		echo "$title"
		printf '  %7s  %12s  %14s  %10s  %12s  %14s  %s\n' \
			clients "raw tasks/s" "schedq tasks/s" schedq/raw "raw lat ms" "schedq lat ms" check
		for c in $CLIENTS; do
			r=$(printf '%.0f' "$(median "${ALL_RAW[$var:$c]}")")
			s=$(printf '%.0f' "$(median "${ALL_SCHEDQ[$var:$c]}")")
			ratio=$(median "${ALL_RATIO[$var:$c]:-}")
			[[ -n $ratio ]] || ratio=-
			local chk="raw ${CHECK[$(raw_variant "$var"):raw:$c]:-?}, schedq ${CHECK[$var:schedq:$c]:-?}"
			[[ $chk == "raw ok, schedq ok" ]] && chk=ok
			printf '  %7s  %12s  %14s  %10s  %12s  %14s  %s\n' \
				"$c" "$r" "$s" "$ratio" "${LAT[$(raw_variant "$var"):raw:$c]:--}" "${LAT[$var:schedq:$c]:--}" "$chk"
		done
		if [[ $var == D ]]; then
			echo "  D against the raw queue's two-commit cycle (A) of the same round:"
			for c in $CLIENTS; do
				printf '  %7s  raw A tasks/s %s, schedq D / raw A %s (rounds:%s)\n' "$c" \
					"$(printf '%.0f' "$(median "${ALL_RAW_A[$c]:-0}")")" \
					"$(median "${ALL_RATIO_A[D:$c]:-}")" "${ALL_RATIO_A[D:$c]:-}"
			done
		fi
	done
	if ((REPEAT > 1)); then
		echo
		echo "  $REPEAT rounds: tasks/s are medians; schedq/raw is the median of the rounds' ratios:"
		for var in $VARIANTS; do
			for c in $CLIENTS; do
				echo "    $var, $c client(s):${ALL_RATIO[$var:$c]:-}"
			done
		done
	fi
	echo
	echo "  total wall time $((T_END - T_START)) s; 1-minute load average before the runs $LOAD_START, after $LOAD_END"
	echo "  (a load well above 0 before the runs means other work on the machine skewed the numbers)"
}

echo >&2
if [[ -n $OUT ]]; then
	report | tee "$OUT"
	echo "bench: report written to $OUT" >&2
else
	report
fi

if ((FAILED)); then
	echo "bench: some runs failed or did not check out (see above)" >&2
	exit 1
fi

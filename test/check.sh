#!/usr/bin/env bash
#-------------------------------------------------------------------------
# test/check.sh
#	  Run every schedq test suite against throwaway servers and print one
#	  summary line.  Called by `make check` after `make install`.
#
# Suites, in order:
#	regress    pg_regress, sql/NAME.sql vs expected/NAME.out, names in $REGRESS.
#	           The first test (install) runs CREATE EXTENSION itself.
#	isolation  pg_isolation_regress, test/specs/NAME.spec vs
#	           test/expected/NAME.out, names in $ISOLATION; the database is
#	           created with --load-extension=schedq.
#	tap        every test/t/*.pl (or $TAP_TESTS), run one file at a time with
#	           prove; the tests start their own nodes with
#	           PostgreSQL::Test::Cluster.
# Both pg_regress suites use a temporary instance configured with
# test/schedq.conf (shared_preload_libraries = 'schedq').
#
# initdb refuses to run as root, so as root the test material (sql/, src/,
# expected/, test/, examples/, clients/, docs/, monitoring/, README.md,
# CHANGELOG.md -- whole, with the node_modules npm ci installed -- and the
# other files git tracks, listed in .tracked-files) is copied to a fresh
# directory under /tmp, handed to the
# `postgres` OS user ($SCHEDQ_CHECK_USER) and every suite runs as that user.
# Otherwise the suites run as the current user, in a temporary copy as well,
# so the work tree is never written to.
#
# Counting: pg_regress and isolation count one per test named in the list;
# a test whose .sql/.spec or expected .out is missing, or that never
# reported (the server could not start, the suite timed out), counts as
# failed.  TAP counts every top-level assertion ("not ok ... # TODO" counts
# as passed), plus one failure for a file that exits non-zero (dies, bad
# plan, timeout) without a failing assertion.
# The last line of output is always "N passed, M failed"; the exit status is
# non-zero when M > 0.
#
# Environment:
#	PG_CONFIG              pg_config of the target server (default: PG 15's)
#	REGRESS, ISOLATION     space-separated test names (empty: suite skipped)
#	TAP_TESTS              TAP files to run, names or paths (default: all of
#	                       test/t/*.pl; set to "none" to skip the suite)
#	ISOLATION_EXTENSIONS   extensions created in the isolation database
#	                       (default: schedq)
#	SUITES                 subset of "regress isolation tap" (default: all)
#	SCHEDQ_CHECK_CONF      lines added to test/schedq.conf, the configuration
#	                       of the pg_regress and isolation servers
#	SCHEDQ_CHECK_USER      OS user used when running as root (postgres)
#	SCHEDQ_CHECK_TIMEOUT   overall time budget in seconds (default 3000)
#	SCHEDQ_CHECK_KEEP=1    keep the work directory even when everything passed
#	SCHEDQ_CHECK_LOG_LINES lines of each diff/log printed on failure (400)
#	PG_TEST_EXTRA, PG_TEST_TIMEOUT_DEFAULT, PG_TEST_NOCLEAN are passed to
#	the TAP tests, and so is SCHEDQ_UPGRADE_FROM (the bindir of an older
#	major with schedq installed: t/062_pg_upgrade.pl upgrades from it).
#
# Every suite runs with a clean environment: PATH (server bindir first),
# HOME (an empty directory), LANG=C.UTF-8, TZ=UTC, nothing else from the
# caller.  TAP tests also get TESTDIR, TESTDATADIR and TESTLOGDIR (logs in
# $TESTDIR/tmp_check/log: PostgreSQL 15 derives them from TESTDIR, 18 reads
# the other two),
# PG_REGRESS, PERL5LIB (PostgreSQL::Test::* and test/t), SCHEDQ_TEST_CONF
# (the path of test/schedq.conf), SCHEDQ_SRCDIR (the copied tree) and
# SCHEDQ_REPO (the source tree itself, for the tests that package it from
# git: they must not write to it).  A new TAP test is just a new
# test/t/NNN_name.pl: it is picked up by itself, and must append
# shared_preload_libraries = 'schedq' to its nodes itself
# (schedq_node() of test/t/SchedqTest.pm makes such a node).
# A TAP file with the line "# check.sh: run as root" (070_package.pl: it
# installs a .deb) runs as root when check.sh does, with SCHEDQ_CHECK_USER
# set to the OS user its servers must run as; $TESTDIR is handed back to
# that user afterwards.
#-------------------------------------------------------------------------

set -u
set -o pipefail

REGRESS=${REGRESS-}
ISOLATION=${ISOLATION-}
SUITES=${SUITES:-regress isolation tap}
RUN_USER=${SCHEDQ_CHECK_USER:-postgres}
BUDGET=${SCHEDQ_CHECK_TIMEOUT:-3000}
LOG_LINES=${SCHEDQ_CHECK_LOG_LINES:-400}
DEADLINE=$(($(date +%s) + BUDGET))

# Per-step ceilings (seconds), further capped by what is left of the budget.
REGRESS_CAP=1200
ISOLATION_CAP=1200
TAP_FILE_CAP=900

TOTAL_PASSED=0
TOTAL_FAILED=0
SUMMARY=()
WORK=
RUN=()
BASE_ENV=()
CHILD_PID=
TEE_PID=

say()
{
	printf '%s\n' "$*"
}

banner()
{
	say ""
	say "======== $* ========"
}

# Print the last $LOG_LINES lines of a file under a heading, if it exists.
show_file()
{
	local title=$1 file=$2

	[ -s "$file" ] || return 0
	say ""
	say "---- $title: $file (last $LOG_LINES lines) ----"
	tail -n "$LOG_LINES" "$file"
	say "---- end of $title ----"
}

# Give up before any suite ran: still end with the summary line.
fatal()
{
	say "check.sh: $*" >&2
	say "0 passed, 1 failed"
	exit 2
}

# Seconds a step may take: min(cap, what is left of the overall budget).
step_timeout()
{
	local cap=$1 left

	left=$((DEADLINE - $(date +%s)))
	if [ "$left" -lt "$cap" ]; then
		echo "$left"
	else
		echo "$cap"
	fi
}

count_words()
{
	# shellcheck disable=SC2086
	set -- $1
	echo "$#"
}

suite_wanted()
{
	case " $SUITES " in
		*" $1 "*) return 0 ;;
		*) return 1 ;;
	esac
}

record()
{
	local suite=$1 passed=$2 failed=$3 note=${4-}

	TOTAL_PASSED=$((TOTAL_PASSED + passed))
	TOTAL_FAILED=$((TOTAL_FAILED + failed))
	SUMMARY+=("$(printf '%-10s %4d passed, %4d failed%s' "$suite:" "$passed" "$failed" "$note")")
}

# Run a command as the test user with a clean, predictable environment.
# Extra VAR=value words before the command are added to that environment.
run_as_user()
{
	"${RUN[@]}" env -i "${BASE_ENV[@]}" "$@"
}

# Run one step of a suite: in directory $1, as the test user, with output
# shown live and saved in $2.  The step runs in the background so that an
# interrupt reaches on_signal at once (bash defers traps until a foreground
# command finishes).  Returns the command's exit status.
run_step()
{
	local dir=$1 log=$2 fifo="$WORK/logs/.step.fifo" rc
	shift 2

	rm -f "$fifo"
	mkfifo "$fifo" || return 2
	tee "$log" < "$fifo" &
	TEE_PID=$!
	(cd "$dir" && exec "${RUN[@]}" env -i "${BASE_ENV[@]}" "$@") > "$fifo" 2>&1 &
	CHILD_PID=$!
	wait "$CHILD_PID"
	rc=$?
	CHILD_PID=
	wait "$TEE_PID"
	TEE_PID=
	rm -f "$fifo"
	return "$rc"
}

# Stop every server still running from a data directory under $WORK
# (a suite that timed out or was interrupted leaves one behind).
stop_leftover_servers()
{
	local pidfile datadir pid

	[ -n "$WORK" ] && [ -d "$WORK" ] || return 0
	while IFS= read -r pidfile; do
		datadir=$(dirname "$pidfile")
		pid=$(head -n 1 "$pidfile" 2>/dev/null)
		if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
			continue
		fi
		say "check.sh: stopping leftover server in $datadir (pid $pid)" >&2
		run_as_user "$BINDIR/pg_ctl" -D "$datadir" -m immediate -w -t 30 stop \
			>/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null
	done < <(find "$WORK" -name postmaster.pid -type f 2>/dev/null)
}

KEEP_WORK=${SCHEDQ_CHECK_KEEP:-0}

cleanup()
{
	stop_leftover_servers
	if [ -n "$WORK" ] && [ -d "$WORK" ] && [ "$KEEP_WORK" = 0 ]; then
		rm -rf "$WORK"
	fi
}

on_signal()
{
	trap - EXIT INT TERM
	say "check.sh: interrupted" >&2
	if [ -n "$CHILD_PID" ]; then
		kill -TERM "$CHILD_PID" 2>/dev/null
		wait "$CHILD_PID" 2>/dev/null
	fi
	stop_leftover_servers
	say "$TOTAL_PASSED passed, $((TOTAL_FAILED + 1)) failed"
	exit 130
}

#
# Locate the PostgreSQL installation.
#
if [ -z "${PG_CONFIG-}" ]; then
	if [ -x /usr/lib/postgresql/15/bin/pg_config ]; then
		PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	else
		PG_CONFIG=pg_config
	fi
fi
command -v "$PG_CONFIG" >/dev/null 2>&1 || fatal "pg_config not found ($PG_CONFIG)"
BINDIR=$("$PG_CONFIG" --bindir) || fatal "$PG_CONFIG --bindir failed"
PGXS_MK=$("$PG_CONFIG" --pgxs) || fatal "$PG_CONFIG --pgxs failed"
PGXS_DIR=$(cd "$(dirname "$PGXS_MK")/../.." && pwd) ||
	fatal "PGXS directory not found (is the server-dev package installed?)"
PG_REGRESS=$PGXS_DIR/src/test/regress/pg_regress
PG_ISOLATION_REGRESS=$PGXS_DIR/src/test/isolation/pg_isolation_regress
PG_PERL_DIR=$PGXS_DIR/src/test/perl

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || fatal "cannot find the source tree"

#
# Prepare the work directory.
#
WORK=$(mktemp -d /tmp/schedq-check.XXXXXX) || fatal "mktemp failed"
trap cleanup EXIT
trap on_signal INT TERM

for d in sql expected test src examples clients docs monitoring README.md CHANGELOG.md; do
	if [ -e "$SRC_DIR/$d" ]; then
		cp -R "$SRC_DIR/$d" "$WORK/" || fatal "cannot copy $SRC_DIR/$d to $WORK"
	fi
done
# The rest of the tracked files, and their list in .tracked-files, for the
# tests that read the whole repository (t/066_reference.pl).
if git -C "$SRC_DIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$SRC_DIR" ls-files >"$WORK/.tracked-files" ||
		fatal "cannot list the tracked files"
	while IFS= read -r f; do
		if [ -f "$SRC_DIR/$f" ] && [ ! -e "$WORK/$f" ]; then
			mkdir -p "$WORK/$(dirname "$f")" &&
				cp "$SRC_DIR/$f" "$WORK/$f" || fatal "cannot copy $f to $WORK"
		fi
	done <"$WORK/.tracked-files"
fi
# Leftovers of earlier in-tree runs must not confuse this one.
rm -rf "$WORK/results" "$WORK/regression.diffs" "$WORK/regression.out" \
	"$WORK/test/tmp_check" "$WORK/test/output_iso"
mkdir -p "$WORK/home" "$WORK/logs" "$WORK/tap"
[ -f "$WORK/test/schedq.conf" ] || fatal "test/schedq.conf is missing"
if [ -n "${SCHEDQ_CHECK_CONF-}" ]; then
	printf '%s\n' "$SCHEDQ_CHECK_CONF" >>"$WORK/test/schedq.conf"
	say "check.sh: the pg_regress servers also have: $SCHEDQ_CHECK_CONF"
fi

if [ "$(id -u)" = 0 ]; then
	id -u "$RUN_USER" >/dev/null 2>&1 ||
		fatal "running as root but OS user '$RUN_USER' does not exist (set SCHEDQ_CHECK_USER)"
	chown -R "$RUN_USER": "$WORK" || fatal "chown $RUN_USER $WORK failed"
	RUN=(runuser -u "$RUN_USER" --)
	say "check.sh: running as root; suites run as OS user '$RUN_USER' in $WORK"
else
	say "check.sh: suites run as $(id -un) in $WORK"
fi
# The environment of every suite: nothing from the caller's PG* variables,
# ~/.psqlrc or locale leaks in, so expected output is the same everywhere.
BASE_ENV=(
	PATH="$BINDIR:$PATH"
	HOME="$WORK/home"
	LANG=C.UTF-8
	TZ=UTC
)
say "check.sh: PostgreSQL $("$PG_CONFIG" --version | sed 's/^PostgreSQL //') at $BINDIR"

# pg_regress / pg_isolation_regress output -> "name ok|FAILED" lines.
# Understands the PG 15 layout ("test name ... ok 12 ms", parallel groups
# indented) and the TAP layout of PG 16+ ("ok 1 - name 12 ms").
parse_pg_regress()
{
	awk '
		/^(test |     )[ \t]*[^ \t]+[ \t]+\.\.\. / {
			line = $0
			sub(/^(test |     )[ \t]*/, "", line)
			split(line, a, /[ \t]+\.\.\. /)
			if (a[2] ~ /^ok/ || a[2] ~ /^failed \(ignored\)/)
				print a[1], "ok"
			else if (a[2] ~ /^FAILED/)
				print a[1], "FAILED"
			next
		}
		/^(not )?ok [0-9]+[ \t]+[-+] [^ \t]+/ {
			line = $0
			fail = (line ~ /^not ok/)
			sub(/^(not )?ok [0-9]+[ \t]+[-+] /, "", line)
			split(line, a, /[ \t]+/)
			print a[1], (fail && line !~ /# \(ignored\)/) ? "FAILED" : "ok"
		}
	' "$1"
}

# Run one pg_regress-style suite.  $1 = label, $2 = program, $3 = names,
# $4 = output dir, $5 = cap (seconds), $6/$7 = input and expected file of a
# test relative to $WORK ("%s" stands for the name), rest = options for the
# program.  A test whose input or expected file is missing counts as failed
# and is left out of the run (pg_regress would stop at it).
run_pg_regress_suite()
{
	local label=$1 prog=$2 names=$3 outdir=$4 cap=$5 infmt=$6 expfmt=$7
	shift 7
	local log="$WORK/logs/$label.log" t rc=0 passed=0 failed=0 name status
	local failed_names=() results="" runnable="" f

	banner "$label: $names"
	if [ ! -x "$prog" ]; then
		say "check.sh: $prog not found; cannot run the $label suite"
		record "$label" 0 "$(count_words "$names")" " (could not run: $(basename "$prog") missing)"
		return
	fi

	for name in $names; do
		for f in "$infmt" "$expfmt"; do
			# shellcheck disable=SC2059
			f=$(printf "$f" "$name")
			if [ ! -f "$WORK/$f" ]; then
				say "check.sh: $label test $name: $f is missing"
				failed=$((failed + 1))
				failed_names+=("$name (missing $f)")
				continue 2
			fi
		done
		runnable="$runnable $name"
	done

	if [ -n "$runnable" ]; then
		t=$(step_timeout "$cap")
		if [ "$t" -le 0 ]; then
			record "$label" 0 "$(count_words "$names")" " (not run: time budget exhausted)"
			return
		fi
		# shellcheck disable=SC2086
		run_step "$WORK" "$log" timeout -k 30 "$t" "$prog" \
			--bindir="$BINDIR" --outputdir="$outdir" "$@" $runnable
		rc=$?
		stop_leftover_servers
		results=$(parse_pg_regress "$log")
	fi

	for name in $runnable; do
		status=$(printf '%s\n' "$results" | awk -v n="$name" '$1 == n { s = $2 } END { print s }')
		if [ "$status" = ok ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			if [ -z "$status" ]; then
				failed_names+=("$name (not run)")
			else
				failed_names+=("$name")
			fi
		fi
	done

	local note=""
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		note=" (timed out after ${t}s)"
	elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		# pg_regress failed although every test reported ok.
		failed=1
		note=" ($(basename "$prog") exited with status $rc)"
	elif [ "$rc" -ge 2 ]; then
		note=" ($(basename "$prog") could not finish, status $rc)"
	fi
	if [ "${#failed_names[@]}" -gt 0 ]; then
		note="$note; failed: ${failed_names[*]}"
	fi

	if [ "$failed" -gt 0 ]; then
		show_file "$label regression.diffs" "$outdir/regression.diffs"
		# The initdb log only matters when the server never started.
		[ -e "$outdir/log/postmaster.log" ] ||
			show_file "$label initdb log" "$outdir/log/initdb.log"
		show_file "$label server log" "$outdir/log/postmaster.log"
	fi
	record "$label" "$passed" "$failed" "$note"
}

# Run every TAP file, one prove per file.
run_tap_suite()
{
	local files=() f name log rc ok notok passed=0 failed=0 t nfiles=0 nl
	local failed_names=() logdir="$WORK/tap/tmp_check/log"

	if [ "${TAP_TESTS-}" = none ]; then
		return
	elif [ -n "${TAP_TESTS-}" ]; then
		for f in $TAP_TESTS; do
			f=$(basename "$f" .pl)
			files+=("t/$f.pl")
		done
	else
		for f in "$WORK"/test/t/*.pl; do
			[ -e "$f" ] && files+=("t/$(basename "$f")")
		done
	fi
	[ "${#files[@]}" -gt 0 ] || return

	banner "tap: ${files[*]}"
	if ! command -v prove >/dev/null 2>&1; then
		say "check.sh: prove not found (install perl); cannot run the TAP suite"
		record tap 0 "${#files[@]}" " (could not run: prove missing)"
		return
	fi
	if [ ! -f "$PG_PERL_DIR/PostgreSQL/Test/Cluster.pm" ] || [ ! -x "$PG_REGRESS" ]; then
		say "check.sh: PostgreSQL TAP modules or pg_regress missing under $PGXS_DIR"
		record tap 0 "${#files[@]}" " (could not run: TAP modules missing)"
		return
	fi
	if ! perl -MIPC::Run -e 1 >/dev/null 2>&1; then
		say "check.sh: Perl module IPC::Run missing (install libipc-run-perl)"
		record tap 0 "${#files[@]}" " (could not run: IPC::Run missing)"
		return
	fi

	# What every TAP test gets in its environment (see the header).
	local tap_env=(
		TESTDIR="$WORK/tap"
		TESTDATADIR="$WORK/tap/tmp_check"
		TESTLOGDIR="$WORK/tap/tmp_check/log"
		PG_REGRESS="$PG_REGRESS"
		PERL5LIB="$PG_PERL_DIR:$WORK/test/t${PERL5LIB:+:$PERL5LIB}"
		SCHEDQ_TEST_CONF="$WORK/test/schedq.conf"
		SCHEDQ_SRCDIR="$WORK"
		SCHEDQ_REPO="$SRC_DIR"
	)
	local v
	for v in PG_TEST_EXTRA PG_TEST_TIMEOUT_DEFAULT PG_TEST_NOCLEAN SCHEDQ_UPGRADE_FROM; do
		[ -n "${!v+set}" ] && tap_env+=("$v=${!v}")
	done

	for f in "${files[@]}"; do
		name=$(basename "$f" .pl)
		log="$WORK/logs/tap_$name.log"
		nfiles=$((nfiles + 1))
		say ""
		say "---- tap: $f ----"
		if [ ! -f "$WORK/test/$f" ]; then
			say "check.sh: $f not found"
			failed=$((failed + 1))
			failed_names+=("$name (missing)")
			continue
		fi
		t=$(step_timeout "$TAP_FILE_CAP")
		if [ "$t" -le 0 ]; then
			failed=$((failed + 1))
			failed_names+=("$name (not run: time budget exhausted)")
			continue
		fi

		if [ "${#RUN[@]}" -gt 0 ] && grep -q -x '# check.sh: run as root' "$WORK/test/$f"; then
			local user_run=("${RUN[@]}")
			RUN=()
			run_step "$WORK/test" "$log" "${tap_env[@]}" SCHEDQ_CHECK_USER="$RUN_USER" \
				timeout -k 30 "$t" prove -v -I "$PG_PERL_DIR" "$f"
			rc=$?
			RUN=("${user_run[@]}")
			chown -R "$RUN_USER": "$WORK/tap"
		else
			run_step "$WORK/test" "$log" "${tap_env[@]}" \
				timeout -k 30 "$t" prove -v -I "$PG_PERL_DIR" "$f"
			rc=$?
		fi
		stop_leftover_servers

		# Top-level assertions only; a "not ok ... # TODO" is an expected
		# failure and counts as passed, like prove does.
		ok=$(grep -E -c '^ok [0-9]+' "$log")
		notok=$(grep -E '^not ok [0-9]+' "$log" | grep -E -v -c '#[[:space:]]*TODO')
		ok=$((ok + $(grep -E '^not ok [0-9]+' "$log" | grep -E -c '#[[:space:]]*TODO')))
		passed=$((passed + ok))
		failed=$((failed + notok))
		if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
			failed=$((failed + 1))
			if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
				failed_names+=("$name (timed out after ${t}s)")
			else
				failed_names+=("$name (exited with status $rc)")
			fi
		elif [ "$notok" -gt 0 ]; then
			failed_names+=("$name")
		fi
		if [ "$rc" -ne 0 ] || [ "$notok" -gt 0 ]; then
			show_file "tap $name test log" "$logdir/regress_log_$name"
			for nl in "$logdir/${name}"_*.log; do
				[ -e "$nl" ] && show_file "tap $name server log" "$nl"
			done
		fi
	done

	local note=" ($nfiles files)"
	[ "${#failed_names[@]}" -gt 0 ] && note="$note; failed: ${failed_names[*]}"
	record tap "$passed" "$failed" "$note"
}

if suite_wanted regress && [ -n "${REGRESS// /}" ]; then
	run_pg_regress_suite regress "$PG_REGRESS" "$REGRESS" "$WORK/regress_out" \
		"$REGRESS_CAP" sql/%s.sql expected/%s.out \
		--inputdir="$WORK" \
		--temp-instance="$WORK/tmp_check" \
		--temp-config="$WORK/test/schedq.conf" \
		--encoding=UTF8
fi

if suite_wanted isolation && [ -n "${ISOLATION// /}" ]; then
	iso_ext_opts=()
	for e in ${ISOLATION_EXTENSIONS-schedq}; do
		iso_ext_opts+=("--load-extension=$e")
	done
	run_pg_regress_suite isolation "$PG_ISOLATION_REGRESS" "$ISOLATION" \
		"$WORK/isolation_out" "$ISOLATION_CAP" \
		test/specs/%s.spec test/expected/%s.out \
		--inputdir="$WORK/test" \
		--temp-instance="$WORK/tmp_check_iso" \
		--temp-config="$WORK/test/schedq.conf" \
		--encoding=UTF8 \
		"${iso_ext_opts[@]}"
fi

if suite_wanted tap; then
	run_tap_suite
fi

stop_leftover_servers

if [ "${#SUMMARY[@]}" -eq 0 ]; then
	say ""
	say "check.sh: no test suite ran (REGRESS, ISOLATION and test/t/*.pl all empty)"
	TOTAL_FAILED=1
fi

if [ "$TOTAL_FAILED" -gt 0 ]; then
	KEEP_WORK=1
fi

banner "summary"
for line in "${SUMMARY[@]}"; do
	say "$line"
done
if [ "$KEEP_WORK" != 0 ]; then
	say "work directory kept: $WORK"
fi
say "$TOTAL_PASSED passed, $TOTAL_FAILED failed"

[ "$TOTAL_FAILED" -eq 0 ]

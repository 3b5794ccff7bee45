#!/usr/bin/env bash
#-------------------------------------------------------------------------
# test/matrix.sh
#	  What CI runs (`make check-matrix`): the suites on every server of the
#	  version matrix, then the habits the project keeps (formatting, static
#	  analysis, fuzzing), with one summary line over everything.
#
# Each entry of $MATRIX is MAJOR[:SUITES] or MAJOR=PG_CONFIG[:SUITES];
# SUITES is a comma-separated list of regress, isolation, tap, or
# tap=FILE+FILE (those TAP files only), and conf=NAME=VALUE adds a setting
# to the pg_regress and isolation servers:
#	15                    Debian's PostgreSQL 15, every suite
#	18                    PostgreSQL 18 built with assertions, every suite
#	17:regress,isolation,tap=070_package
#	                      Debian trixie's PostgreSQL 17 in a trixie root,
#	                      and its Debian package
#	15:regress,isolation,conf=schedq.direct_writes=off
#	                      again with every write through its statement
#	16=/opt/pg16/bin/pg_config   a server a maintainer has (16, 19, ...)
# The servers come from test/pg-server.sh (built or fetched once, cached).
# A server of another major than 15 is also the target of
# test/t/062_pg_upgrade.pl's upgrade across majors, from $UPGRADE_FROM
# (default 15-main: bookworm's own 15, see test/pg-server.sh), into which
# schedq is built and installed first ("upgrade source" below; UPGRADE_FROM=
# none leaves it out).
#
# Each entry runs `make clean` and `make check` in this tree (or in a copy
# inside the trixie root), so schedq is built against that server's
# headers; the tree is left clean.
#
# $HABITS (default "format analyze fuzz"), each one check:
#	format   clang-format --dry-run --Werror over src/ and schedqctl/
#	analyze  clang-tidy over src/ and schedqctl/ (.clang-tidy says which checks)
#	fuzz     make fuzz for $FUZZ_SECONDS (default 60) seconds
#
# The last line is "N passed, M failed"; the exit status is non-zero when
# M > 0.
#-------------------------------------------------------------------------

set -u
set -o pipefail

# Nothing of a calling make (its MAKEFLAGS carry command-line variables and
# job-server descriptors) may reach the builds run here.
unset MAKEFLAGS MFLAGS MAKELEVEL

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
TOP=$(pwd)

MATRIX=${MATRIX:-15 15:regress,isolation,conf=schedq.direct_writes=off 18 17:regress,isolation,tap=070_package}
HABITS=${HABITS-format analyze fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
UPGRADE_FROM=${UPGRADE_FROM:-15-main}
LOGDIR=$(mktemp -d /tmp/schedq-matrix.XXXXXX) || exit 2

PASSED=0
FAILED=0
SUMMARY=()

say()
{
	printf '%s\n' "$*"
}

banner()
{
	say ""
	say "################ $* ################"
}

record()
{
	local what=$1 passed=$2 failed=$3 seconds=$4 note=${5-}

	PASSED=$((PASSED + passed))
	FAILED=$((FAILED + failed))
	SUMMARY+=("$(printf '%-28s %5d passed, %4d failed  %5d s%s' "$what" "$passed" "$failed" "$seconds" "$note")")
}

# The "N passed, M failed" line a run ended with, as "N M"; "0 1" when it
# printed none (it could not start).
counts_of()
{
	local line

	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		echo "0 1"
	else
		echo "$line" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed$/\1 \2/'
	fi
}

# The tree as git sees it (tracked, and untracked but not ignored files),
# copied to $1.
copy_tree()
{
	mkdir -p "$1"
	git ls-files -z -c -o --exclude-standard |
		tar --null -cf - -T - | tar -xf - -C "$1"
}

# The upgrade source: its server, with schedq built against its own
# headers and installed into it.  Sets UPGRADE_BINDIR.
UPGRADE_BINDIR=

prepare_upgrade_source()
{
	local log="$LOGDIR/upgrade-source.log" start=$SECONDS pg_config

	[ "$UPGRADE_FROM" != none ] || return 0
	banner "upgrade source: PostgreSQL $UPGRADE_FROM"
	if pg_config=$(bash test/pg-server.sh pg_config "$UPGRADE_FROM" 2>>"$log") &&
		make -s clean >>"$log" 2>&1 &&
		make -s NO_SCHEDQCTL=1 PG_CONFIG="$pg_config" install </dev/null >>"$log" 2>&1; then
		UPGRADE_BINDIR=$("$pg_config" --bindir)
		say "schedq installed into $UPGRADE_BINDIR/.."
		record "upgrade source ($UPGRADE_FROM)" 1 0 $((SECONDS - start))
	else
		tail -n 30 "$log"
		record "upgrade source ($UPGRADE_FROM)" 0 1 $((SECONDS - start))
	fi
	make -s clean >/dev/null 2>&1
}

run_entry()
{
	local entry=$1 major spec suites pg_config log start rc counts
	local -a suite_env=()

	spec=${entry%%:*}
	suites=all
	[ "$spec" != "$entry" ] && suites=${entry#*:}
	major=${spec%%=*}
	log="$LOGDIR/pg$major-$(echo "$suites" | tr -c 'a-z0-9\n' _).log"
	if [ "$suites" != all ]; then
		local s list=""
		for s in ${suites//,/ }; do
			case $s in
			tap=*)
				list="$list tap"
				suite_env+=(TAP_TESTS="$(echo "${s#tap=}" | tr + ' ')")
				;;
			conf=*)
				suite_env+=(SCHEDQ_CHECK_CONF="$(echo "${s#conf=}" | sed 's/=/ = /')")
				;;
			*) list="$list $s" ;;
			esac
		done
		suite_env+=(SUITES="${list# }")
	fi

	banner "PostgreSQL $major ($suites)"
	start=$SECONDS
	if [ "$spec" != "$major" ]; then
		pg_config=${spec#*=}
	elif ! pg_config=$(bash test/pg-server.sh pg_config "$major" 2>&1 | tee -a "$log" | tail -n 1) ||
		[ -z "$pg_config" ]; then
		say "matrix: no PostgreSQL $major server (see $log)"
		record "PostgreSQL $major ($suites)" 0 1 $((SECONDS - start)) " (no server)"
		return
	fi

	if [ "$major" = 17 ] && [ "$spec" = 17 ]; then
		# Inside the trixie root: a copy of the tree, built and tested there.
		local root
		root=$(bash test/pg-server.sh path 17)
		rm -rf "$root/tmp/schedq"
		copy_tree "$root/tmp/schedq"
		# the package test packs HEAD with git
		cp -a .git "$root/tmp/schedq/.git"
		bash test/pg-server.sh run 17 env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			"${suite_env[@]}" make -C /tmp/schedq check PG_CONFIG="$pg_config" \
			</dev/null 2>&1 | tee -a "$log"
		rc=${PIPESTATUS[0]}
		rm -rf "$root/tmp/schedq"
	else
		local -a upgrade_env=()
		if [ -n "$UPGRADE_BINDIR" ] && [ "$major" != 15 ]; then
			upgrade_env=(SCHEDQ_UPGRADE_FROM="$UPGRADE_BINDIR")
		fi
		make -s clean >/dev/null 2>&1
		env "${suite_env[@]}" "${upgrade_env[@]}" make check PG_CONFIG="$pg_config" \
			</dev/null 2>&1 | tee -a "$log"
		rc=${PIPESTATUS[0]}
		make -s clean >/dev/null 2>&1
	fi
	read -r p f < <(counts_of "$log")
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	record "PostgreSQL $major ($suites)" "$p" "$f" $((SECONDS - start))
	# Name what failed in the summary, where the last lines of a run are read.
	local line
	while IFS= read -r line; do
		SUMMARY+=("    $line")
	done < <(grep -E '^(regress|isolation|tap):.*failed: ' "$log" | sed -E 's/^([a-z]+):.*failed: /\1 failed: /')
	# and which TAP checks, with their diagnostics (the first 40 lines)
	while IFS= read -r line; do
		SUMMARY+=("      $line")
	done < <(awk '/^not ok [0-9]+/ && !/# *TODO/ { keep = 8; print; next }
		keep > 0 && /^#/ { keep--; print; next } { keep = 0 }' "$log" | head -n 40)
}

run_habit()
{
	local habit=$1 log="$LOGDIR/$1.log" start=$SECONDS rc

	banner "$habit"
	case $habit in
	format)
		make -s format-check </dev/null >"$log" 2>&1
		;;
	analyze)
		make -s analyze </dev/null >"$log" 2>&1
		;;
	fuzz)
		make -s fuzz FUZZ_SECONDS="$FUZZ_SECONDS" PG_CONFIG="${FUZZ_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}" \
			</dev/null >"$log" 2>&1
		;;
	*)
		echo "unknown habit $habit" >"$log"
		false
		;;
	esac
	rc=$?
	tail -n 30 "$log"
	if [ "$rc" -eq 0 ]; then
		record "$habit" 1 0 $((SECONDS - start))
	else
		record "$habit" 0 1 $((SECONDS - start))
	fi
}

prepare_upgrade_source
for entry in $MATRIX; do
	run_entry "$entry"
done
for habit in $HABITS; do
	run_habit "$habit"
done

banner "matrix summary"
for line in "${SUMMARY[@]}"; do
	say "$line"
done
say "logs: $LOGDIR"
say "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

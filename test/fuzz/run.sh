#!/usr/bin/env bash
#-------------------------------------------------------------------------
# test/fuzz/run.sh
#	  Build test/fuzz/build/fuzz_cron -- src/base/cron.c, cron_field.c and cron_systemd.c, unchanged, with the
#	  backend stand-ins of shim.c and the checks of fuzz_cron.c -- with
#	  clang, libFuzzer, ASan (with LeakSanitizer) and UBSan, then fuzz it
#	  for FUZZ_SECONDS seconds (default 60).  `make fuzz` runs this.
#
#	  Exits 0 when the run ends clean; non-zero on a crash, a failed check,
#	  undefined behaviour, a hang (one input over 5 s) or a leak, with the
#	  input saved under test/fuzz/build/artifacts/.  Replay one with
#	      test/fuzz/build/fuzz_cron test/fuzz/build/artifacts/crash-...
#
#	  Environment: FUZZ_SECONDS, PG_CONFIG, CLANG (default clang),
#	  FUZZ_ARGS (more libFuzzer flags, e.g. "-jobs=2" or "-seed=1").
#	  Needs clang and its libFuzzer runtime; on Debian bookworm:
#	      apt-get install clang libclang-rt-14-dev
#-------------------------------------------------------------------------

set -u
set -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
PG_CONFIG=${PG_CONFIG:-pg_config}
CLANG=${CLANG:-clang}
FUZZ_ARGS=${FUZZ_ARGS:-}
DIR=test/fuzz
BUILD=$DIR/build

die()
{
	echo "fuzz: $*" >&2
	exit 2
}

case "$FUZZ_SECONDS" in
	'' | *[!0-9]* | 0) die "FUZZ_SECONDS must be a positive number of seconds, not '$FUZZ_SECONDS'" ;;
esac

command -v "$CLANG" >/dev/null 2>&1 ||
	die "$CLANG not found: install clang and its libFuzzer runtime (Debian bookworm: apt-get install clang libclang-rt-14-dev)"
rt_package=libclang-rt-14-dev
if "$CLANG" --version 2>/dev/null | grep -q clang; then
	rt_package=libclang-rt-$("$CLANG" -dumpversion | cut -d. -f1)-dev
fi

mkdir -p "$BUILD/corpus" "$BUILD/artifacts" || die "cannot create $BUILD"

# Can this clang link a libFuzzer target at all?
probe=$BUILD/probe
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
	'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void) d; (void) n; return 0; }' \
	>"$probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" 2>"$probe.log"; then
	sed 's/^/  /' "$probe.log" >&2
	die "$CLANG cannot link -fsanitize=fuzzer,address,undefined: the libFuzzer/sanitizer runtime (libclang_rt.fuzzer) is missing; on Debian: apt-get install $rt_package"
fi
rm -f "$probe" "$probe.c" "$probe.log"

INCLUDE_SERVER=$("$PG_CONFIG" --includedir-server) || die "$PG_CONFIG --includedir-server failed"
[ -f "$INCLUDE_SERVER/postgres.h" ] ||
	die "no postgres.h in $INCLUDE_SERVER: install postgresql-server-dev-15"
PGPORT_LIB=$("$PG_CONFIG" --pkglibdir)/libpgport.a
[ -f "$PGPORT_LIB" ] || PGPORT_LIB=$("$PG_CONFIG" --libdir)/libpgport.a
[ -f "$PGPORT_LIB" ] || die "libpgport.a not found next to $PG_CONFIG (postgresql-server-dev-15)"

# No -fwrapv, unlike the server build: UBSan is to report signed overflow.
CFLAGS=(-g -O1 -fno-omit-frame-pointer -std=gnu99 -D_GNU_SOURCE
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
	-Wall -Wmissing-prototypes -Wno-ignored-attributes -Werror
	-I"$INCLUDE_SERVER" -Isrc -I"$DIR")

echo "fuzz: building $BUILD/fuzz_cron with $("$CLANG" --version | head -1)"
for src in src/base/cron.c src/base/cron_field.c src/base/cron_systemd.c "$DIR/shim.c" "$DIR/fuzz_cron.c"; do
	obj=$BUILD/$(basename "$src" .c).o
	"$CLANG" "${CFLAGS[@]}" -c "$src" -o "$obj" || die "compiling $src failed"
done
"$CLANG" -fsanitize=fuzzer,address,undefined -o "$BUILD/fuzz_cron" \
	"$BUILD/cron.o" "$BUILD/cron_field.o" "$BUILD/cron_systemd.o" "$BUILD/shim.o" "$BUILD/fuzz_cron.o" "$PGPORT_LIB" -lm ||
	die "linking $BUILD/fuzz_cron failed"

# Leaks are checked after each input (the shim frees the palloc arena per
# input, so anything left is a real leak); UBSan aborts with a stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

echo "fuzz: running for ${FUZZ_SECONDS}s (seed corpus $DIR/corpus, working corpus $BUILD/corpus)"
# shellcheck disable=SC2086
"$BUILD/fuzz_cron" \
	-max_total_time="$FUZZ_SECONDS" \
	-timeout=5 \
	-max_len=256 \
	-detect_leaks=1 \
	-dict="$DIR/cron.dict" \
	-artifact_prefix="$BUILD/artifacts/" \
	-print_final_stats=1 \
	$FUZZ_ARGS \
	"$BUILD/corpus" "$DIR/corpus"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "fuzz: FAILED (exit $rc); inputs in $BUILD/artifacts/:" >&2
	ls -1 "$BUILD/artifacts" >&2
	exit "$rc"
fi
echo "fuzz: clean run of ${FUZZ_SECONDS}s"

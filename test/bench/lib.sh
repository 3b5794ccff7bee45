# shellcheck shell=bash
# test/bench/lib.sh -- shared plumbing of the benchmark runners (sourced)
#
# A throwaway PostgreSQL server with schedq preloaded, run as the OS user
# postgres when the runner is root (initdb refuses root), on a unix socket
# in a private temp directory plus 127.0.0.1 on a free port.  The server
# and the temp directory are removed on exit, whatever happens.
#
# Usage, from a runner that has `set -euo pipefail`:
#
#   BENCH_NAME=bench                    # prefix of messages and temp dir
#   source "$HERE/lib.sh"               # checks PG_CONFIG, the binaries, schedq
#   bench_init                          # TMP, PGDATA_DIR, RUNAS, traps
#   bench_start_server "extra conf"     # initdb, postgresql.conf, start; PORT
#   psql_q -c "..."                     # psql -At on $DB (set DB first)
#
# Defines: PG_CONFIG BINDIR die log calc as_pg pick_port bench_init
# bench_start_server bench_stop_server psql_q psql_db.

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
BINDIR=$("$PG_CONFIG" --bindir)
BENCH_NAME=${BENCH_NAME:-bench}

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
log() { printf '  %s\n' "$*" >&2; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

# bench_check_tools tool...: every tool exists in BINDIR, and schedq is installed.
bench_check_tools() {
	local f
	for f in "$@"; do
		[[ -x $BINDIR/$f ]] || die "$BINDIR/$f not found (PG_CONFIG=$PG_CONFIG)"
	done
	[[ -f $("$PG_CONFIG" --sharedir)/extension/schedq.control ]] ||
		die "schedq is not installed for $PG_CONFIG; run 'make install' (or 'make bench')"
}

# Make the temp dir and install the cleanup trap.  Sets TMP, PGDATA_DIR,
# STARTED, RUNAS.  BENCH_CLEANUP_HOOK, if set, names a function run first
# by the cleanup (to stop clients the runner started).
bench_init() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/schedq-$BENCH_NAME.XXXXXX")
	PGDATA_DIR=$TMP/data
	STARTED=0
	if [[ $(id -u) == 0 ]]; then
		RUNAS=(runuser -u postgres --)
		chown postgres: "$TMP"
	else
		RUNAS=()
	fi
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

as_pg() { "${RUNAS[@]}" "$@"; }

bench_stop_server() {
	if [[ $STARTED == 1 ]]; then
		as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null 2>&1 ||
			echo "$BENCH_NAME: could not stop the server in $PGDATA_DIR" >&2
		STARTED=0
	fi
}

bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n ${BENCH_CLEANUP_HOOK:-} ]]; then "$BENCH_CLEANUP_HOOK" || true; fi
	bench_stop_server
	if [[ $rc != 0 && $rc != 130 && -f $TMP/server.log ]]; then
		echo "$BENCH_NAME: failed (exit $rc); last lines of the server log:" >&2
		tail -n 20 "$TMP/server.log" | sed 's/^/    /' >&2
	fi
	rm -rf "$TMP"
	exit "$rc"
}

# A TCP port nobody listens on (the server also binds 127.0.0.1).
pick_port() {
	local p _
	for _ in $(seq 1 100); do
		p=$((40000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
			[[ ! -e $TMP/.s.PGSQL.$p ]]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# bench_start_server [extra postgresql.conf lines]: initdb, configure
# (schedq preloaded, socket in $TMP, port $PORT) and start.
bench_start_server() {
	local extra=${1:-}
	PORT=$(pick_port) || die "no free port found"
	echo "$BENCH_NAME: starting a throwaway server in $TMP (port $PORT)" >&2
	as_pg "$BINDIR/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --locale=C -N \
		>"$TMP/initdb.log" 2>&1 || { cat "$TMP/initdb.log" >&2; die "initdb failed"; }
	cat >>"$PGDATA_DIR/postgresql.conf" <<EOF

# --- schedq benchmark ---
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$TMP'
shared_preload_libraries = 'schedq'
max_connections = 100
max_worker_processes = 32
$extra
EOF
	if ! as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$TMP/server.log" -w -t 60 start >/dev/null; then
		tail -n 30 "$TMP/server.log" >&2 || true
		die "the server did not start"
	fi
	STARTED=1
}

# psql on database $1 / on $DB, quiet, unaligned, stop on error.
psql_db() {
	local db=$1
	shift
	as_pg "$BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$TMP" -p "$PORT" -U postgres -d "$db" "$@"
}
psql_q() { psql_db "$DB" "$@"; }

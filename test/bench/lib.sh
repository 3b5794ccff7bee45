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
# bench_start_server bench_stop_server psql_q psql_db, and the helpers at the
# end: bench_copy bench_create_db median bench_submit bench_pgbench
# bench_hold_snapshot bench_xmin_age bench_rss loadavg.

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
# by the cleanup (to stop clients the runner started), with the exit
# status as its argument.
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

# Clients a runner starts in the background: their pids go into CHILDREN,
# and the cleanup stops them (before BENCH_CLEANUP_HOOK and the server).
CHILDREN=()
stop_children() {
	local p
	for p in "${CHILDREN[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${CHILDREN[@]}"; do wait "$p" 2>/dev/null || true; done
	CHILDREN=()
}

# bench_libpq_client NAME: build $HERE/NAME.c against libpq into $TMP/NAME
# (after bench_init).
bench_libpq_client() {
	local inc
	inc=$("$PG_CONFIG" --includedir)
	[[ -f $inc/libpq-fe.h ]] || die "libpq-fe.h not found in $inc (install libpq-dev)"
	command -v cc >/dev/null || die "no C compiler (cc) found"
	cc -O2 -Wall -I"$inc" "$HERE/$1.c" -L"$("$PG_CONFIG" --libdir)" -lpq \
		-o "$TMP/$1" 2>"$TMP/cc.log" || { cat "$TMP/cc.log" >&2; die "could not build $1.c"; }
	chmod 0755 "$TMP/$1"
}

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
	stop_children
	if [[ -n ${BENCH_CLEANUP_HOOK:-} ]]; then "$BENCH_CLEANUP_HOOK" "$rc" || true; fi
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

# bench_web_start: start `schedqctl web` ($SCHEDQCTL) on a free port of
# 127.0.0.1 for database $DB and sign in as postgres with curl.  The
# console signs in by password only: connections over 127.0.0.1 are made
# to authenticate with one (scram-sha-256; the unix socket stays trust)
# and postgres gets one.  Sets WEB_PID, URL and JAR (the cookie jar).
bench_web_start() {
	local port token
	psql_db postgres -c "ALTER ROLE postgres PASSWORD 'bench'" >/dev/null
	as_pg sed -i '1i host all all 127.0.0.1/32 scram-sha-256' "$PGDATA_DIR/pg_hba.conf"
	psql_db postgres -c 'SELECT pg_reload_conf()' >/dev/null
	port=$(pick_port) || die "no free port"
	"$SCHEDQCTL" web --listen "127.0.0.1:$port" \
		-d "host=127.0.0.1 port=$PORT dbname=$DB" >"$TMP/web.log" 2>&1 &
	WEB_PID=$!
	for _ in $(seq 1 100); do
		grep -q listening "$TMP/web.log" && break
		sleep 0.1
	done
	grep -q listening "$TMP/web.log" || die "schedqctl web did not start: $(cat "$TMP/web.log")"
	URL=http://127.0.0.1:$port
	JAR=$TMP/cookies
	token=$(curl -s -c "$JAR" "$URL/api/session" | sed -n 's/.*"loginToken":"\([0-9a-f]*\)".*/\1/p')
	curl -s -b "$JAR" -c "$JAR" -H "X-CSRF-Token: $token" \
		--data-urlencode user=postgres --data-urlencode password=bench "$URL/api/login" |
		grep -q '"signedIn":true' || die "could not sign in"
}

# ---------------------------------------------------------------------------
# Helpers shared by the measuring scripts (run.sh, submit.sh, backlog.sh,
# soak.sh): files for the server's user, databases, loading, pgbench runs,
# held snapshots, medians.
# ---------------------------------------------------------------------------

# bench_copy file...: copy files into $TMP, readable by the postgres OS user
# (which need not be able to read the checkout).
bench_copy() {
	local f
	cp "$@" "$TMP"/
	for f in "$@"; do
		chmod 0644 "$TMP/${f##*/}"
		[[ ${#RUNAS[@]} -eq 0 ]] || chown postgres: "$TMP/${f##*/}"
	done
}

# bench_create_db NAME [raw]: a database with schedq (and with "raw", the
# raw queue of raw_setup.sql, which must have been copied with bench_copy).
bench_create_db() {
	psql_db postgres -c "CREATE DATABASE $1" >/dev/null
	psql_db "$1" -c "CREATE EXTENSION schedq" >/dev/null
	[[ ${2:-} != raw ]] || psql_db "$1" -f "$TMP/raw_setup.sql" >/dev/null
}

# The median of a list of numbers (empty for an empty list).
median() {
	tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) exit; m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print (m == int(m)) ? m : sprintf("%.2f", m) }'
}

# bench_submit DB N [EXPR] [CHUNK]: submit N tasks to DB with submit_many,
# CHUNK (default 10000) a call, the calls spread over up to 4 concurrent
# sessions (one per CPU).  EXPR is a jsonb expression of g, the task's
# number (default: a no-op task {"kind": "noop", "payload": {"i": g}}).
# Tasks without a gate are available when this returns.
bench_submit() {
	local db=$1 n=$2 expr=${3:-"jsonb_build_object('kind', 'noop', 'payload', jsonb_build_object('i', g))"}
	local chunk=${4:-10000} sessions lo hi k p pids=() rc=0
	local -a sql=()
	sessions=$(nproc 2>/dev/null || echo 2)
	((sessions <= 4)) || sessions=4
	for ((lo = 1, k = 0; lo <= n; lo += chunk, k = (k + 1) % sessions)); do
		hi=$((lo + chunk - 1))
		((hi <= n)) || hi=$n
		sql[k]+="SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg($expr ORDER BY g) FROM generate_series($lo, $hi) AS g));"$'\n'
	done
	for k in "${!sql[@]}"; do
		psql_db "$db" >/dev/null <<<"${sql[k]}" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	((rc == 0)) || die "submitting $n tasks to $db failed"
}

# bench_pgbench DB SCRIPT CLIENTS SECONDS [pgbench options]: run pgbench
# (-M prepared, -j min(CLIENTS, 2)) with a script copied into $TMP; sets
# PGB_TPS (transactions per second, connection time excluded) and PGB_N
# (transactions processed).  A failed run dies with pgbench's output.
bench_pgbench() {
	local db=$1 script=$2 c=$3 secs=$4 out rc=0
	shift 4
	out=$(as_pg "$BINDIR/pgbench" -n -M prepared -h "$TMP" -p "$PORT" -U postgres \
		-c "$c" -j $((c < 2 ? c : 2)) -T "$secs" -f "$TMP/$script" "$@" "$db" 2>&1) || rc=$?
	PGB_TPS=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
	PGB_N=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out" | head -n 1)
	if [[ $rc != 0 || -z $PGB_TPS || -z $PGB_N || $PGB_N == 0 ]]; then
		sed 's/^/    /' <<<"$out" >&2
		die "pgbench $script on $db, $c client(s), failed (exit $rc)"
	fi
}

# bench_hold_snapshot DB SECONDS: in the background, a session of DB opens a
# REPEATABLE READ transaction, takes its snapshot (runs a query: the xmin
# is held from then on) and keeps it SECONDS seconds.  Returns once the
# snapshot is taken; sets HOLD_PID (wait for it, or kill it).
bench_hold_snapshot() {
	local db=$1 secs=$2 i
	rm -f "$TMP/held.$db"
	printf '%s\n' "BEGIN ISOLATION LEVEL REPEATABLE READ;" \
		"SELECT count(*) FROM pg_class;" \
		"\\! touch $TMP/held.$db" \
		"SELECT pg_sleep($secs);" \
		"COMMIT;" | psql_db "$db" >/dev/null 2>&1 &
	HOLD_PID=$!
	for ((i = 0; i < 100; i++)); do
		[[ -e $TMP/held.$db ]] && return 0
		sleep 0.1
	done
	die "the session holding a snapshot on $db did not start"
}

# bench_xmin_age DB: age of the oldest xmin a session of DB holds (a check
# that a held snapshot really holds the horizon back), 0 if none.
bench_xmin_age() {
	psql_db "$1" -c "SELECT coalesce(max(age(backend_xmin)), 0) FROM pg_stat_activity
	                  WHERE datname = '$1' AND pid <> pg_backend_pid()"
}

# bench_rss PID: "VmRSS RssAnon" of a process, in kB ("- -" once it is gone).
bench_rss() {
	awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } END { if (r == "") print "- -"; else print r, a }' \
		"/proc/$1/status" 2>/dev/null || echo "- -"
}

loadavg() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?'; }

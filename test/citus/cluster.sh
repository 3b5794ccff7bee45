#!/usr/bin/env bash
#-------------------------------------------------------------------------
# test/citus/cluster.sh
#	  A throwaway Citus cluster for schedq: a coordinator and two workers,
#	  three PostgreSQL instances on this machine, schedq preloaded on all.
#	  Sourced by test/citus/check.sh; also usable by hand:
#
#	    PG_CONFIG=... bash test/citus/cluster.sh start DIR [PORT]
#	    PG_CONFIG=... bash test/citus/cluster.sh stop DIR
#
#	  Nodes: DIR/coord (PORT), DIR/w1 (PORT+1), DIR/w2 (PORT+2), database
#	  "schedq".  Ports default to 55431-55433.  As root, the servers run as
#	  the OS user $SCHEDQ_CHECK_USER (postgres): initdb refuses root.
#	  Builds nothing: Citus and schedq must be installed in PG_CONFIG's
#	  server already.
#-------------------------------------------------------------------------

CITUS_USER=${SCHEDQ_CHECK_USER:-postgres}
CITUS_NODES="coord w1 w2"

# as_user CMD...: run CMD as the server's OS user.
as_user()
{
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$CITUS_USER" -- "$@"
	else
		"$@"
	fi
}

node_port()
{
	case "$1" in
	coord) echo "$CITUS_PORT" ;;
	w1) echo $((CITUS_PORT + 1)) ;;
	w2) echo $((CITUS_PORT + 2)) ;;
	esac
}

# psql on a node: cpsql NODE [psql args...]
cpsql()
{
	local node=$1
	shift
	as_user "$CITUS_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$CITUS_DIR" \
		-p "$(node_port "$node")" -d schedq "$@"
}

cluster_start()
{
	local node port
	mkdir -p "$CITUS_DIR"
	[ "$(id -u)" = 0 ] && chown "$CITUS_USER" "$CITUS_DIR"
	for node in $CITUS_NODES; do
		port=$(node_port "$node")
		as_user "$CITUS_BINDIR/initdb" -D "$CITUS_DIR/$node" -A trust -U postgres \
			--no-sync >"$CITUS_DIR/initdb-$node.log" 2>&1 || return 1
		cat >>"$CITUS_DIR/$node/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$CITUS_DIR'
shared_preload_libraries = 'citus,schedq'
max_connections = 120
max_worker_processes = 24
shared_buffers = 64MB
max_prepared_transactions = 60
fsync = on
synchronous_commit = on
wal_level = logical
log_min_messages = warning
log_line_prefix = '%m [%p] $node '
citus.enable_unsafe_triggers = on
citus.local_hostname = '$CITUS_DIR'
EOF
		as_user "$CITUS_BINDIR/pg_ctl" -D "$CITUS_DIR/$node" -l "$CITUS_DIR/$node.log" \
			-w -t 60 start >/dev/null || return 1
		as_user "$CITUS_BINDIR/createdb" -h "$CITUS_DIR" -p "$port" -U postgres schedq || return 1
		cpsql "$node" -U postgres -c 'CREATE EXTENSION citus' || return 1
	done
	# The workers join first: then Citus has every node when schedq's tables
	# are distributed.
	cpsql coord -c "SELECT citus_set_coordinator_host('$CITUS_DIR', $CITUS_PORT)" >/dev/null || return 1
	for node in w1 w2; do
		cpsql coord -c "SELECT citus_add_node('$CITUS_DIR', $(node_port $node))" >/dev/null || return 1
	done
	# CREATE EXTENSION schedq on each node by itself: propagated by Citus it
	# runs in a prepared transaction, which schedq refuses (the grant key).
	for node in $CITUS_NODES; do
		cpsql "$node" -c "SET citus.enable_ddl_propagation TO off" -c "CREATE EXTENSION schedq" || return 1
	done
}

cluster_stop()
{
	local node
	for node in $CITUS_NODES; do
		[ -f "$CITUS_DIR/$node/postmaster.pid" ] &&
			as_user "$CITUS_BINDIR/pg_ctl" -D "$CITUS_DIR/$node" -m fast -w stop >/dev/null 2>&1
	done
	return 0
}

cluster_init_vars()
{
	PG_CONFIG=${PG_CONFIG:-pg_config}
	CITUS_BINDIR=$("$PG_CONFIG" --bindir)
	CITUS_PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
	CITUS_DIR=$1
	CITUS_PORT=${2:-${CITUS_PORT:-55431}}
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	cluster_init_vars "${2:?usage: cluster.sh start|stop DIR [PORT]}" "${3:-}"
	case "$1" in
	start) cluster_start ;;
	stop) cluster_stop ;;
	*) echo "usage: cluster.sh start|stop DIR [PORT]" >&2; exit 2 ;;
	esac
fi

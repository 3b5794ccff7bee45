#-------------------------------------------------------------------------
# test/t/001_install.pl
#	  A server with schedq in shared_preload_libraries starts, CREATE
#	  EXTENSION installs version 1.2, one task makes the round trip
#	  submit -> claim -> complete, and the extension survives a restart.
#	  On a server without the preload, CREATE EXTENSION schedq fails with
#	  55000 and a hint naming shared_preload_libraries and the restart,
#	  and leaves nothing behind.
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# Without the preload: a clear error, its hint, nothing installed.
my $bare = PostgreSQL::Test::Cluster->new('not_preloaded');
$bare->init;
$bare->start;
my ($ret, $out, $err) = $bare->psql('postgres',
	"\\set VERBOSITY verbose\nCREATE EXTENSION schedq");
isnt($ret, 0, 'without the preload, CREATE EXTENSION schedq fails');
like($err, qr/ERROR:  55000: schedq must be loaded via shared_preload_libraries/,
	'... with 55000 and the message naming shared_preload_libraries');
like($err, qr/HINT:  Add 'schedq' to shared_preload_libraries in postgresql\.conf and restart the server/,
	'... and a hint saying where to add it and that a restart is needed');
is( $bare->safe_psql('postgres',
		"SELECT count(*) FROM pg_extension WHERE extname = 'schedq'"
		  . " UNION ALL SELECT count(*) FROM pg_namespace WHERE nspname = 'schedq'"),
	"0\n0", '... and leaves no extension and no schema behind');
$bare->stop;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'schedq'\n");
$node->start;

# The library is preloaded: its GUCs exist in a session that never touched
# the extension (they are defined by _PG_init).
is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'schedq', 'shared_preload_libraries names schedq');
is( $node->safe_psql(
		'postgres',
		"SELECT setting FROM pg_settings WHERE name = 'schedq.enabled'"),
	'on',
	'library loaded at start: schedq.enabled is defined');

$node->safe_psql('postgres', 'CREATE EXTENSION schedq');
is( $node->safe_psql(
		'postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'schedq'"),
	'1.2',
	'CREATE EXTENSION installs version 1.2');
is( $node->safe_psql(
		'postgres',
		"SELECT n.nspname FROM pg_extension e
		   JOIN pg_namespace n ON n.oid = e.extnamespace
		  WHERE e.extname = 'schedq'"),
	'schedq',
	'the extension lives in schema schedq');

# One task, start to finish, in a single session.
my $id = $node->safe_psql('postgres',
	"SELECT schedq.submit('smoke', payload => '{\"n\": 1}')");
like($id, qr/^\d+$/, 'submit returns a task id');

my $claimed = $node->safe_psql(
	'postgres', qq{
	CREATE TEMP TABLE g AS
		SELECT id, token FROM schedq.claim('w1', queues => '{default}');
	SELECT id FROM g;
	SELECT schedq.complete(token, result => '{"ok": true}') FROM g;
});
is($claimed, "$id\nt", 'claim hands out the task and complete accepts its grant');
is( $node->safe_psql(
		'postgres', "SELECT status, attempts FROM schedq.task WHERE id = $id"),
	'done|1',
	'the task is done after one attempt');

# JIT: schedq's own queries are never compiled, even with JIT forced on
# for every query (a planner hook turns it off inside its functions, where
# a compile would cost more than the query); a query of the caller's in
# the same session still is, when the server has JIT at all.  auto_explain
# logs every plan, nested ones included, with a "JIT:" section when the
# plan was to be compiled.  Plain claims and completes write without the
# executor (src/direct.c); a paused queue sends the claim through its
# statement, and heartbeat is always one.
my $log_offset = -s $node->logfile;
$node->safe_psql(
	'postgres', q{
	LOAD 'auto_explain';
	SET auto_explain.log_min_duration = 0;
	SET auto_explain.log_nested_statements = on;
	SET jit = on;
	SET jit_above_cost = 0;
	SELECT schedq.submit('jit', queue => 'jit');
	SELECT schedq.pause_queue('jit-paused');
	SELECT schedq.heartbeat(token), schedq.complete(token)
	  FROM schedq.claim('w1', queues => '{jit}');
	SELECT schedq.resume_queue('jit-paused');
	SELECT sum(g) AS jit_probe FROM generate_series(1, 10) g;
});
my @plans = split /LOG:  duration: /,
  slurp_file($node->logfile, $log_offset);
my @internal = grep { /schedq\.task/ && !/schedq\.(submit|claim)\(/ } @plans;
cmp_ok(scalar(@internal), '>=', 2,
	"auto_explain logged schedq's own queries (claim, heartbeat)");
is(scalar(grep { /JIT:/ } @internal), 0,
	"none of schedq's own queries was planned for JIT");
SKIP:
{
	skip 'this server has no JIT', 1
	  unless $node->safe_psql('postgres', 'SELECT pg_jit_available()') eq 't';
	ok(scalar(grep { /jit_probe/ && /JIT:/ } @plans),
		"the caller's own query in that session was planned for JIT");
}

# The extension and its data survive a restart of the preloaded server.
$node->restart;
is( $node->safe_psql(
		'postgres', "SELECT status FROM schedq.task WHERE id = $id"),
	'done', 'task still done after restart');

$node->stop;

done_testing();

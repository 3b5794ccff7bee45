#-------------------------------------------------------------------------
# test/t/019_database_commands.pl
#	  DROP DATABASE, CREATE DATABASE ... TEMPLATE, ALTER DATABASE ...
#	  RENAME TO and ALTER DATABASE ... SET TABLESPACE need the database to
#	  themselves, so the utility hook stops its scheduler and SQL executors
#	  before they run.  It must do so only when the command will go ahead:
#	  each command below fails with PostgreSQL's own error, and the
#	  scheduler and the executors of the database stay the same processes.
#
#	  (a) a role with nothing but CONNECT, from another database: all four
#	      commands (not the owner; no CREATEDB);
#	  (b) a role with CREATEDB that does not own the database: a copy of it
#	      (not a template), a rename (not the owner);
#	  (c) the superuser, where PostgreSQL refuses for other reasons: inside
#	      a transaction block, inside a function, the currently open
#	      database, a template or new name that exists, SET TABLESPACE to
#	      the tablespace it is in already (a no-op);
#	  (d) and a real DROP DATABASE by the owner still works
#	      (t/010_launcher.pl covers the other commands' legitimate paths).
#
#	  Run by test/check.sh (make check) with prove; see the header of
#	  check.sh for the environment every TAP test gets.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node('dbcommands', conf => qq{
max_worker_processes = 32
schedq.enabled = on
schedq.sql_workers = 2
schedq.sql_idle_timeout = -1
});

$node->safe_psql('postgres', 'CREATE DATABASE target');
$node->safe_psql('target', 'CREATE EXTENSION schedq');
# Two SQL tasks at once start two executors (on demand), which stay (-1).
$node->safe_psql('target',
	q{SELECT schedq.submit_sql('SELECT pg_sleep(0.5)') FROM generate_series(1, 2)});
$node->safe_psql('postgres', 'CREATE ROLE nobody LOGIN');
$node->safe_psql('postgres', 'CREATE ROLE maker LOGIN CREATEDB');
$node->safe_psql('postgres', 'CREATE DATABASE spare');

# The schedq processes connected to a database: "type:pid,..." by pid.
my $workers_of = "SELECT coalesce(string_agg(backend_type || ':' || pid, ','"
  . " ORDER BY backend_type, pid), '') FROM pg_stat_activity"
  . " WHERE backend_type IN ('schedq scheduler', 'schedq sql executor')"
  . " AND datname = 'target'";

ok( defined poll_until(
		$node, 'postgres',
		"SELECT count(*) FROM pg_stat_activity"
		  . " WHERE backend_type IN ('schedq scheduler', 'schedq sql executor')"
		  . " AND datname = 'target'",
		'3', 15),
	'the scheduler and two executors of target are up');
my $workers = $node->safe_psql('postgres', $workers_of);
note "workers of target: $workers";

# Run $sql as $role in $db; it must fail with an error matching $error,
# and the workers of target must be the same processes afterwards.  The
# hook waited for them to exit before the command ran, so a look right
# after the command sees whether they were stopped.
sub refused
{
	my ($role, $db, $sql, $error, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	my ($ret, $out, $err) =
	  $node->psql($db, $sql, extra_params => [ '-U', $role ]);
	ok($ret != 0 && $err =~ $error, "$name: refused by PostgreSQL")
	  or diag "ret $ret, stderr: $err";
	is($node->safe_psql('postgres', $workers_of),
		$workers, "$name: the scheduler and executors of target were not stopped");
}

#
# (a) A role with nothing but CONNECT (PUBLIC's), from another database.
#
refused('nobody', 'spare', 'DROP DATABASE target',
	qr/must be owner of database target/, '(a) DROP DATABASE');
refused('nobody', 'spare', 'DROP DATABASE target WITH (FORCE)',
	qr/must be owner of database target/, '(a) DROP DATABASE WITH (FORCE)');
refused('nobody', 'spare', 'CREATE DATABASE copy TEMPLATE target',
	qr/permission denied to create database/, '(a) CREATE DATABASE ... TEMPLATE');
refused('nobody', 'spare', 'ALTER DATABASE target RENAME TO renamed',
	qr/must be owner of database target/, '(a) ALTER DATABASE ... RENAME TO');
refused('nobody', 'spare', 'ALTER DATABASE target SET TABLESPACE pg_default',
	qr/must be owner of database target/, '(a) ALTER DATABASE ... SET TABLESPACE');
refused('nobody', 'target', 'DROP DATABASE target',
	qr/must be owner of database target/, '(a) DROP DATABASE from target itself');

#
# (b) A role with CREATEDB that does not own the database.
#
refused('maker', 'spare', 'CREATE DATABASE copy TEMPLATE target',
	qr/permission denied to copy database "target"/,
	'(b) CREATE DATABASE ... TEMPLATE of a database it does not own');
refused('maker', 'spare', 'ALTER DATABASE target RENAME TO renamed',
	qr/must be owner of database target/, '(b) ALTER DATABASE ... RENAME TO');
refused('maker', 'spare', 'CREATE DATABASE copy TEMPLATE target OWNER nobody',
	qr/must be member of role "nobody"|must be able to SET ROLE "nobody"|permission denied/,
	'(b) CREATE DATABASE ... OWNER a role it cannot become');

#
# (c) The superuser, where PostgreSQL refuses for other reasons.
#
my $su = $node->safe_psql('postgres', 'SELECT current_user');
refused($su, 'spare', "BEGIN; DROP DATABASE target; COMMIT;",
	qr/cannot run inside a transaction block/,
	'(c) DROP DATABASE in a transaction block');
refused($su, 'spare', "SELECT 1 \\; DROP DATABASE target",
	qr/cannot run inside a transaction block/,
	'(c) DROP DATABASE in an implicit transaction block');
refused($su, 'spare', "BEGIN; CREATE DATABASE copy TEMPLATE target; COMMIT;",
	qr/cannot run inside a transaction block/,
	'(c) CREATE DATABASE ... TEMPLATE in a transaction block');
refused($su, 'spare', "BEGIN; ALTER DATABASE target SET TABLESPACE pg_global; COMMIT;",
	qr/cannot run inside a transaction block/,
	'(c) ALTER DATABASE ... SET TABLESPACE in a transaction block');
refused($su, 'spare', 'DO $$ BEGIN EXECUTE $x$DROP DATABASE target$x$; END $$',
	qr/cannot be executed from a function|cannot run inside a transaction block/,
	'(c) DROP DATABASE inside a function');
refused($su, 'target', 'DROP DATABASE target',
	qr/cannot drop the currently open database/,
	'(c) DROP DATABASE of the currently open database');
refused($su, 'target', 'ALTER DATABASE target RENAME TO renamed',
	qr/current database cannot be renamed/,
	'(c) ALTER DATABASE ... RENAME TO of the currently open database');
refused($su, 'target', 'ALTER DATABASE target SET TABLESPACE pg_global',
	qr/cannot change the tablespace of the currently open database/,
	'(c) ALTER DATABASE ... SET TABLESPACE of the currently open database');
refused($su, 'spare', 'ALTER DATABASE target RENAME TO spare',
	qr/database "spare" already exists/,
	'(c) ALTER DATABASE ... RENAME TO a name that exists');
refused($su, 'spare', 'CREATE DATABASE spare TEMPLATE target',
	qr/database "spare" already exists/,
	'(c) CREATE DATABASE ... TEMPLATE with a name that exists');
refused($su, 'spare', 'ALTER DATABASE target SET TABLESPACE nowhere',
	qr/tablespace "nowhere" does not exist/,
	'(c) ALTER DATABASE ... SET TABLESPACE to a tablespace that does not exist');
refused($su, 'spare', 'ALTER DATABASE target SET TABLESPACE pg_global',
	qr/pg_global cannot be used as default tablespace/,
	'(c) ALTER DATABASE ... SET TABLESPACE pg_global');

# SET TABLESPACE to the tablespace it is in already does nothing, and
# needs nobody to leave.
my ($ret, $out, $err) =
  $node->psql('spare', 'ALTER DATABASE target SET TABLESPACE pg_default');
is($ret, 0, '(c) ALTER DATABASE ... SET TABLESPACE to its own tablespace succeeds')
  or diag $err;
is($node->safe_psql('postgres', $workers_of),
	$workers, '(c) ... without stopping the workers of target');

#
# (d) The owner's DROP DATABASE still works: the hook stops the workers
# and the database goes.
#
$node->safe_psql('postgres', 'ALTER DATABASE target OWNER TO maker');
($ret, $out, $err) =
  $node->psql('spare', 'DROP DATABASE target', extra_params => [ '-U', 'maker' ]);
is($ret, 0, '(d) the owner drops the database, workers and all') or diag $err;
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_database WHERE datname = 'target'"),
	'0', '(d) target is gone');

$node->stop;

done_testing();

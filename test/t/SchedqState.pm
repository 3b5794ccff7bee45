#-------------------------------------------------------------------------
# test/t/SchedqState.pm
#	  What the upgrade and dump/restore tests share: filling a database
#	  with schedq state of every kind (tasks in every status, runs,
#	  schedules, budgets, limits, paused queues, live claims), reading every
#	  row of schedq's tables as comparable text, describing schedq's catalog
#	  as normalised text, and comparing two texts with a printed diff.
#-------------------------------------------------------------------------
package SchedqState;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

our @EXPORT = qw(grant_app fill_state settle rows_of catalog_of same_text);

# schedq's tables, every row of which is state a dump or an update must
# keep (gate_event is unlogged scratch, rebuilt by the scheduler).
our @TABLES =
  qw(task run queue concurrency_limit budget periodic grant_key);

# Role app (created if missing) may submit, create runs and schedule in
# database $db.
sub grant_app
{
	my ($node, $db) = @_;
	$node->safe_psql(
		$db,
		q{DO $$ BEGIN
			IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'app') THEN
				CREATE ROLE app;
			END IF;
		  END $$;
		  GRANT USAGE ON SCHEMA schedq TO app;
		  GRANT EXECUTE ON FUNCTION schedq.submit, schedq.create_run,
			schedq.schedule TO app;});
	return;
}

# Fill database $db (schedq installed, scheduler running) with state of
# every kind.  Tasks are submitted by role app (created here if missing)
# and by the superuser.  Claims hold leases of $lease; returns a hash:
# running => { id => token } (live claims, tokens held), and the ids of
# named tasks.
sub fill_state
{
	my ($node, $db, $lease) = @_;
	my %r;
	my $q = sub { $node->safe_psql($db, $_[0]) };

	grant_app($node, $db);
	$q->(
		q{SELECT schedq.set_budget('b1', 10);
		  SELECT schedq.set_budget('rl', 5, period => '1 hour');});
	# available, in two queues, one task of role app; a paused queue
	$r{avail} = [
		split /\n/, $q->(
			q{SELECT schedq.submit('a1', queue => 'q', priority => 2);
			  SELECT schedq.submit('a2', queue => 'q', budgets => '{b1}', cost => 3);
			  SET ROLE app;
			  SELECT schedq.submit('a3', queue => 'q', payload => '{"who": "app"}');
			  RESET ROLE;})
	];
	$q->(q{SELECT schedq.pause_queue('held')});
	$r{held} = $q->(q{SELECT schedq.submit('h1', queue => 'held')});
	# pending, due tomorrow; a dedup key
	$r{later} = $q->(
		q{SELECT schedq.submit('later', queue => 'q', run_at => now() + interval '1 day',
			dedup_key => 'later-1')});
	# budgets, a rate limit, a concurrency limit with a parked task, a lock
	# key with a parked task
	$q->(
		q{SELECT schedq.set_concurrency_limit('api', 1);
		  SELECT schedq.submit('c1', queue => 'gate', concurrency_key => 'api');
		  SELECT schedq.submit('c2', queue => 'gate', concurrency_key => 'api');
		  SELECT schedq.submit('l1', queue => 'gate', lock_key => 'lk', version => 1);
		  SELECT schedq.submit('l2', queue => 'gate', lock_key => 'lk', version => 2);});
	# finished tasks: done, failed, canceled
	$q->(
		q{SELECT schedq.submit('d1', queue => 'fin');
		  SELECT schedq.complete(token, result => '{"ok": 1}')
			FROM schedq.claim('w0', queues => '{fin}');
		  SELECT schedq.submit('f1', queue => 'fin');
		  SELECT schedq.fail(token, 'broken', permanent => true)
			FROM schedq.claim('w0', queues => '{fin}');
		  SELECT schedq.cancel(schedq.submit('x1', queue => 'fin'));});
	# workflows: a run whose failed task skipped its dependent; a chain
	# whose second step waits for the first
	$q->(
		q{SELECT schedq.create_run('broken', 'continue') AS r \gset
		  SELECT schedq.submit('s1', queue => 'wf1', run_id => :r) AS s1 \gset
		  SELECT schedq.submit('s2', queue => 'wf1', run_id => :r,
			depends_on => ARRAY[:s1]::bigint[]);
		  SELECT schedq.submit('s3', queue => 'wf1x', run_id => :r);
		  SELECT schedq.fail(token, 'no', permanent => true)
			FROM schedq.claim('w0', queues => '{wf1}');
		  SELECT schedq.create_run('chain') AS c \gset
		  SELECT schedq.submit('k1', queue => 'wf2', run_id => :c) AS k1 \gset
		  SELECT schedq.submit('k2', queue => 'wf2', run_id => :c,
			depends_on => ARRAY[:k1]::bigint[]);});
	# periodic schedules, one of role app; neither fires during a test
	$q->(
		q{SELECT schedq.schedule('yearly', '0 0 1 1 *', 'yr', queue => 'per',
			timezone => 'Europe/Berlin', payload => '{"y": 1}');
		  SET ROLE app;
		  SELECT schedq.schedule('app-monthly', '0 3 1 * *', 'mo', queue => 'per');
		  RESET ROLE;});
	# live claims: two running tasks, their tokens held
	for my $row (
		split /\n/, $q->(
			qq{SELECT schedq.submit('r' || i, queue => 'work') FROM generate_series(1, 2) i;
			   SELECT id || '|' || token FROM schedq.claim('w1', queues => '{work}', n => 2,
				 lease => '$lease')})
	  )
	{
		next unless $row =~ /\|/;
		my ($id, $token) = split /\|/, $row, 2;
		$r{running}{$id} = $token;
	}
	# a rotated key: two keys in the table
	$q->(q{SELECT schedq.rotate_grant_key()});
	return \%r;
}

# Wait until the scheduler has done all it can with what fill_state made
# (every gate looked at: no pending task due and unparked).
sub settle
{
	my ($node, $db) = @_;
	return defined poll_until(
		$node, $db,
		q{SELECT count(*) FROM schedq.task
		   WHERE status = 'pending' AND NOT parked AND run_at <= now()},
		'0', 30);
}

# Every row of schedq's tables as text, one line per row, ordered; with
# $where{table} a condition that leaves rows out (a task the scheduler is
# about to change, say); with unparked => 1, the tasks without the columns
# parked and parked_on (a scheduler unparks every task when it starts, and
# parks again what is still held back).  The sequences' last
# values, but for gate_event's (scratch, unlogged, not dumped).  Read as the superuser: row-level security hides
# nothing.
sub rows_of
{
	my ($node, $db, %where) = @_;
	my $out = '';
	for my $t (@TABLES)
	{
		my $cond = $where{$t} // 'true';
		# NULLs left out: a column an update added (NULL in every row
		# it found) does not make a row differ
		my $row = 'jsonb_strip_nulls(to_jsonb(r))::text';
		$row = q{jsonb_strip_nulls(to_jsonb(r) - '{parked,parked_on}'::text[])::text}
		  if $t eq 'task' && $where{unparked};
		$out .= "-- $t\n"
		  . $node->safe_psql($db,
			"SELECT $row FROM schedq.$t r WHERE $cond ORDER BY 1")
		  . "\n";
	}
	$out .= "-- sequences\n"
	  . $node->safe_psql($db,
		q{SELECT format('%s last=%s', c.relname, pg_sequence_last_value(c.oid))
			FROM pg_class c
		   WHERE c.relnamespace = 'schedq'::regnamespace AND c.relkind = 'S'
			 AND c.relname <> 'gate_event_id_seq'
		   ORDER BY 1})
	  . "\n";
	return $out;
}

# schedq's catalog as normalised text, one fact per line, sorted: what the
# extension owns; every relation of the schema with its kind, persistence,
# row-level security, owner, ACL, options and comment; columns in order
# (dropped ones left out, positions renumbered) with type, NOT NULL,
# default, identity, collation, ACL, comment; indexes; constraints;
# functions and procedures with their whole definition, owner, ACL,
# SECURITY DEFINER, settings, volatility, parallel safety; policies;
# triggers; sequences; views; the extension's config tables with their
# conditions (as names); the schema's owner and ACL.  OIDs never appear.
sub catalog_of
{
	my ($node, $db) = @_;
	return $node->safe_psql(
		$db, q{
WITH ext AS (SELECT * FROM pg_extension WHERE extname = 'schedq'),
s AS (SELECT 'schedq'::regnamespace AS nsp)
SELECT line FROM (
  SELECT format('extension %s version=%s relocatable=%s schema=%s',
				extname, extversion, extrelocatable, extnamespace::regnamespace) AS line
	FROM ext
  UNION ALL
  SELECT format('config %s condition=%L', c::regclass, cond)
	FROM ext, unnest(ext.extconfig, ext.extcondition) AS u(c, cond)
  UNION ALL
  SELECT format('member %s', pg_describe_object(d.classid, d.objid, d.objsubid))
	FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
	 AND d.deptype = 'e'
  UNION ALL
  SELECT format('schema %s owner=%s acl=%s', n.nspname, n.nspowner::regrole, n.nspacl)
	FROM pg_namespace n, s WHERE n.oid = s.nsp
  UNION ALL
  SELECT format('default acl %s %s', d.defaclobjtype, d.defaclacl)
	FROM pg_default_acl d, s WHERE d.defaclnamespace = s.nsp
  UNION ALL
  SELECT format('relation %s kind=%s persistence=%s rls=%s force_rls=%s owner=%s acl=%s options=%s comment=%L',
				c.oid::regclass, c.relkind, c.relpersistence, c.relrowsecurity,
				c.relforcerowsecurity, c.relowner::regrole, c.relacl, c.reloptions,
				obj_description(c.oid, 'pg_class'))
	FROM pg_class c, s WHERE c.relnamespace = s.nsp
  UNION ALL
  SELECT format('column %s #%s %s %s notnull=%s default=%s identity=%s generated=%s collation=%s acl=%s comment=%L',
				c.oid::regclass,
				row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum),
				a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
				pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
				CASE WHEN a.attcollation <> 0 THEN a.attcollation::regcollation::text END,
				a.attacl, col_description(c.oid, a.attnum))
	FROM pg_class c
	JOIN s ON c.relnamespace = s.nsp
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
  UNION ALL
  SELECT format('index %s %s', pg_get_indexdef(i.indexrelid),
				CASE WHEN i.indisclustered THEN 'clustered' END)
	FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN s ON c.relnamespace = s.nsp
  UNION ALL
  SELECT format('constraint %s %s %s deferrable=%s deferred=%s',
				CASE WHEN co.conrelid <> 0 THEN co.conrelid::regclass::text
					 ELSE co.contypid::regtype::text END,
				co.conname, pg_get_constraintdef(co.oid), co.condeferrable, co.condeferred)
	FROM pg_constraint co, s WHERE co.connamespace = s.nsp
  UNION ALL
  SELECT format(E'function %s kind=%s owner=%s acl=%s secdef=%s config=%s volatile=%s parallel=%s strict=%s leakproof=%s cost=%s rows=%s comment=%L\n%s',
				p.oid::regprocedure, p.prokind, p.proowner::regrole, p.proacl,
				p.prosecdef, p.proconfig, p.provolatile, p.proparallel,
				p.proisstrict, p.proleakproof, p.procost, p.prorows,
				obj_description(p.oid, 'pg_proc'),
				CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END)
	FROM pg_proc p, s WHERE p.pronamespace = s.nsp
  UNION ALL
  SELECT format('policy %s %s permissive=%s roles=%s cmd=%s using=%s check=%s',
				po.polrelid::regclass, po.polname, po.polpermissive,
				ARRAY(SELECT CASE WHEN r = 0 THEN 'public' ELSE r::regrole::text END
						FROM unnest(po.polroles) r ORDER BY 1),
				po.polcmd, pg_get_expr(po.polqual, po.polrelid),
				pg_get_expr(po.polwithcheck, po.polrelid))
	FROM pg_policy po JOIN pg_class c ON c.oid = po.polrelid JOIN s ON c.relnamespace = s.nsp
  UNION ALL
  SELECT format('trigger %s enabled=%s', pg_get_triggerdef(t.oid), t.tgenabled)
	FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN s ON c.relnamespace = s.nsp
   WHERE NOT t.tgisinternal
  UNION ALL
  SELECT format('sequence %s type=%s start=%s increment=%s max=%s min=%s cache=%s cycle=%s',
				q.seqrelid::regclass, q.seqtypid::regtype, q.seqstart, q.seqincrement,
				q.seqmax, q.seqmin, q.seqcache, q.seqcycle)
	FROM pg_sequence q JOIN pg_class c ON c.oid = q.seqrelid JOIN s ON c.relnamespace = s.nsp
  UNION ALL
  SELECT format('depends %s on %s (%s)', pg_describe_object(d.classid, d.objid, d.objsubid),
				pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid), d.deptype)
	FROM pg_depend d JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
	JOIN s ON c.relnamespace = s.nsp
   WHERE c.relkind = 'S' AND d.deptype IN ('a', 'i')
  UNION ALL
  SELECT format(E'view %s\n%s', c.oid::regclass, pg_get_viewdef(c.oid))
	FROM pg_class c, s WHERE c.relnamespace = s.nsp AND c.relkind IN ('v', 'm')
  UNION ALL
  SELECT format('type %s type=%s', t.oid::regtype, t.typtype)
	FROM pg_type t, s WHERE t.typnamespace = s.nsp
) facts
ORDER BY line COLLATE "C"});
}

# Compare two texts: one test, passing when they are equal, else printing
# a unified diff (diff -u) of them.
sub same_text
{
	my ($got, $want, $name, $labels) = @_;
	return pass($name) if $got eq $want;
	my ($a, $b) = @{ $labels // [ 'expected', 'got' ] };
	my $dir = PostgreSQL::Test::Utils::tempdir();
	PostgreSQL::Test::Utils::append_to_file("$dir/$a", $want);
	PostgreSQL::Test::Utils::append_to_file("$dir/$b", $got);
	my ($stdout, $stderr) =
	  PostgreSQL::Test::Utils::run_command([ 'diff', '-u', "$dir/$a", "$dir/$b" ]);
	diag($stdout . $stderr);
	return fail($name);
}

1;

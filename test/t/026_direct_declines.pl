#-------------------------------------------------------------------------
# test/t/026_direct_declines.pl
#	  The direct writes' decline contract (store/direct.h): a write that is
#	  not for the direct path declines with a reason, counted in metrics()
#	  as direct_declined_<reason> and logged at DEBUG1 the first time in a
#	  backend; the statement then does the write, with its triggers,
#	  constraints and policies.  And the cases where a table a DBA changed
#	  once made the direct path differ from the statement; for each, the
#	  direct path now declines, or applies the rule itself:
#	  (d1) a default a DBA set on a column the INSERT leaves out applies to
#	       direct inserts too (created_at DEFAULT clock_timestamp(), a
#	       result default);
#	  (d2) NOT NULL added to result and deadline: declined ('constraint'),
#	       and the statements raise 23502 and change nothing;
#	  (d3) task_available_idx redefined with another predicate, or another
#	       key: declined ('index'), claims take every task, in order;
#	  (d4) a table inheriting from schedq.task: declined ('inherited'),
#	       the child's task is claimed and its token completes;
#	  (d5) a non-superuser table owner and FORCE ROW LEVEL SECURITY:
#	       declined ('row_security'), and a policy's WITH CHECK refuses a
#	       submit as the statement does;
#	  (d6) attempts at INT_MAX: a claim raises 22003 as attempts + 1 does,
#	       and changes nothing;
#	  (off) schedq.direct_writes = off: every write declined ('off'), the
#	       statements run (pg_stat_statements), results the same; only a
#	       superuser may turn it off.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node(
	'declines',
	extension => 'postgres',
	conf => q{
shared_preload_libraries = 'schedq, pg_stat_statements'
pg_stat_statements.track = all
schedq.enabled = off
});
$node->safe_psql('postgres', 'CREATE EXTENSION pg_stat_statements');

sub q1 { return $node->safe_psql('postgres', $_[0]); }

# The SQLSTATE of the error a statement raises, or 'ok'.
sub sqlstate
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY sqlstate\n$sql");
	return 'ok' if $rc == 0;
	return $err =~ /ERROR:\s+(\w{5})/ ? $1 : "? $err";
}

sub declined { return metric($node, "direct_declined_$_[0]"); }

# Statements schedq ran on schedq.task that insert or update it.
sub writes
{
	return q1(q{SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
		WHERE query ~ '(INSERT INTO|UPDATE) schedq\.task'});
}

sub all_declines
{
	return q1(q{SELECT sum(value) FROM schedq.metrics()
		WHERE name LIKE 'direct\_declined\_%'});
}

# Claim everything available of queue q and complete it.
sub drain
{
	my ($q) = @_;
	return q1(qq{SELECT count(*) FILTER (WHERE schedq.complete(token))
		FROM schedq.claim('w', queues => '{$q}', n => 1000)});
}

#
# (d1) Defaults a DBA set.
#
q1(q{ALTER TABLE schedq.task ALTER created_at SET DEFAULT clock_timestamp();
	 ALTER TABLE schedq.task ALTER result SET DEFAULT '{"d": 1}'});
my $before = all_declines();
my $w = writes();
my $row = q1(q{BEGIN;
	CREATE TEMP TABLE t0 AS SELECT now() AS start;
	SELECT pg_sleep(0.05);
	SELECT schedq.submit('d1', queue => 'd1') AS id \gset
	SELECT created_at > (SELECT start FROM t0), result
	  FROM schedq.task WHERE id = :id;
	COMMIT;});
is($row, "\nt|{\"d\": 1}", '(d1) a direct insert takes the defaults a DBA set: clock_timestamp(), a result');
is(writes(), $w, '(d1) no INSERT statement ran: the direct path did it');
is(all_declines(), $before, '(d1) nothing declined');
q1(q{ALTER TABLE schedq.task ALTER created_at SET DEFAULT now();
	 ALTER TABLE schedq.task ALTER result DROP DEFAULT});

#
# (d2) NOT NULL on result and on deadline (the rows there made to comply).
#
q1(q{SELECT schedq.submit('d2a', queue => 'd2a');
	 SELECT schedq.submit('d2b', queue => 'd2b')});
my $t2 = q1(q{SELECT token FROM schedq.claim('w', queues => '{d2a}')});
q1(q{UPDATE schedq.task SET result = coalesce(result, '{}'),
		deadline = coalesce(deadline, now() + interval '1 day');
	 ALTER TABLE schedq.task ALTER result SET NOT NULL;
	 ALTER TABLE schedq.task ALTER deadline SET NOT NULL});
$before = declined('constraint');
is(sqlstate(qq{SELECT schedq.complete('$t2')}), '23502',
	'(d2) a complete with no result: NOT NULL result refuses it (23502)');
is(sqlstate(q{SELECT * FROM schedq.claim('w', queues => '{d2b}')}), '23502',
	'(d2) a claim of a task without timeout: NOT NULL deadline refuses it (23502)');
ok(declined('constraint') >= $before + 2, '(d2) the direct writes declined: constraint');
is(q1(q{SELECT string_agg(status, ',' ORDER BY kind) FROM schedq.task
	 WHERE kind IN ('d2a', 'd2b')}), 'running,available', '(d2) and nothing changed');
q1(q{ALTER TABLE schedq.task ALTER result DROP NOT NULL;
	 ALTER TABLE schedq.task ALTER deadline DROP NOT NULL});
is(q1(qq{SELECT schedq.complete('$t2')}), 't',
	'(d2) without the constraints: the complete completes');

#
# (d3) task_available_idx redefined: another predicate, another key.
#
q1(q{SELECT schedq.submit('d3-' || i, queue => CASE WHEN i % 2 = 0 THEN 'hidden' ELSE 'shown' END,
	   priority => i) FROM generate_series(1, 6) i});
for my $def (
	[ 'another predicate',
		q{((-(priority::bigint)), run_at, id) WHERE status = 'available' AND queue <> 'hidden'} ],
	[ 'another key', q{(priority, run_at, id) WHERE status = 'available'} ])
{
	q1(qq{DROP INDEX schedq.task_available_idx;
		 CREATE INDEX task_available_idx ON schedq.task $def->[1]});
	$before = declined('index');
	my $got = q1(q{BEGIN;
		SELECT string_agg(kind, ',')
		  FROM schedq.claim('w', queues => '{hidden,shown}', n => 10);
		ROLLBACK;});
	is($got, 'd3-6,d3-5,d3-4,d3-3,d3-2,d3-1',
		"(d3) $def->[0]: a claim takes every task, in claim order");
	ok(declined('index') > $before, "(d3) $def->[0]: the direct claim declined: index");
}
q1(q{DROP INDEX schedq.task_available_idx;
	 CREATE INDEX task_available_idx ON schedq.task
	   ((-(priority::bigint)), run_at, id) WHERE status = 'available'});
$before = declined('index');
is(q1(q{SELECT count(*) FROM schedq.claim('w', queues => '{hidden,shown}', n => 10)}), '6',
	'(d3) the index as the script defines it: claims');
is(declined('index'), $before, '(d3) and the direct claim takes it again');

#
# (d5) A non-superuser table owner, FORCE ROW LEVEL SECURITY, a policy's
# WITH CHECK.
#
q1(q{CREATE ROLE tab_owner;
	 DO $$ BEGIN EXECUTE format('GRANT %I TO tab_owner', current_user); END $$;
	 ALTER TABLE schedq.task OWNER TO tab_owner;
	 GRANT USAGE ON SCHEMA schedq TO tab_owner;
	 GRANT ALL ON ALL TABLES IN SCHEMA schedq TO tab_owner;
	 GRANT ALL ON ALL SEQUENCES IN SCHEMA schedq TO tab_owner;
	 ALTER TABLE schedq.task FORCE ROW LEVEL SECURITY;
	 CREATE POLICY not_forbidden ON schedq.task FOR INSERT
	   WITH CHECK (queue <> 'forbidden')});
$before = declined('row_security');
is(sqlstate(q{SELECT schedq.submit('d5', queue => 'forbidden')}), '42501',
	'(d5) a policy\'s WITH CHECK refuses the submit (42501)');
ok(declined('row_security') > $before, '(d5) the direct insert declined: row_security');
is(sqlstate(q{SELECT schedq.submit('d5', queue => 'allowed')}), 'ok',
	'(d5) a submit the policy allows is made');
q1(q{DROP POLICY not_forbidden ON schedq.task;
	 ALTER TABLE schedq.task NO FORCE ROW LEVEL SECURITY;
	 ALTER TABLE schedq.task OWNER TO CURRENT_USER});
is(q1(q{SELECT count(*) FROM schedq.task WHERE kind = 'd5'}), '1',
	'(d5) only the allowed task is there');

#
# (d4) A table inheriting from schedq.task.
#
q1(q{CREATE TABLE public.task_child () INHERITS (schedq.task);
	 INSERT INTO public.task_child (id, queue, kind, status, owner)
	   VALUES (900000001, 'd4', 'child', 'available', current_user::regrole)});
$before = declined('inherited');
my $t4 = q1(q{SELECT token FROM schedq.claim('w', queues => '{d4}')});
ok($t4 ne '', '(d4) the child\'s task is claimed');
is(q1(qq{SELECT schedq.complete('$t4')}), 't', '(d4) and its token completes it');
is(q1(q{SELECT status FROM public.task_child}), 'done', '(d4) in the child table');
ok(declined('inherited') > $before, '(d4) the direct writes declined: inherited');
q1(q{DROP TABLE public.task_child});
# relhassubclass stays set until VACUUM sees no child
q1(q{VACUUM schedq.task});

#
# (d6) attempts at INT_MAX.
#
my $id6 = q1(q{SELECT schedq.submit('d6', queue => 'd6')});
q1(qq{UPDATE schedq.task SET attempts = 2147483647, max_attempts = 2147483647
	  WHERE id = $id6});
for my $direct (qw(on off))
{
	is(sqlstate(qq{SET schedq.direct_writes = $direct;
		SELECT * FROM schedq.claim('w', queues => '{d6}')}), '22003',
		"(d6) direct writes $direct: a claim at attempts INT_MAX raises 22003");
}
is(q1(qq{SELECT status || ' ' || attempts FROM schedq.task WHERE id = $id6}),
	'available 2147483647', '(d6) and changes nothing');

#
# (off) The switch.
#
$before = declined('off');
$w = writes();
my ($rc, $out, $err) = $node->psql('postgres', q{
	SET schedq.direct_writes = off;
	SET client_min_messages = debug1;
	SELECT schedq.submit('off', queue => 'off') IS NOT NULL;
	SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{off}');
});
is($out, "t\nt", '(off) submit, claim and complete work with direct writes off');
ok(writes() >= $w + 3, '(off) through their statements (an INSERT, a claim, a complete)');
ok(declined('off') >= $before + 3, '(off) each declined: off');
like($err, qr/direct write declined \(off\)/, '(off) the first decline is logged at DEBUG1');
is(scalar(() = $err =~ /direct write declined \(off\)/g), 1, '(off) once');
q1(q{CREATE ROLE plain LOGIN});
($rc, $out, $err) = $node->psql('postgres', 'SET schedq.direct_writes = off',
	extra_params => [ '-U', 'plain' ]);
like($err, qr/permission denied to set parameter "schedq.direct_writes"/,
	'(off) only a superuser may turn direct writes off');

done_testing();

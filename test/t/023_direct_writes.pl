#-------------------------------------------------------------------------
# test/t/023_direct_writes.pl
#	  The direct writes of src/direct.c: submit, submit_many and complete
#	  write schedq.task without the SQL executor, and only where that is
#	  the same as the statement:
#	  (a) the calls run no INSERT or UPDATE statement on schedq.task for
#	      plain tasks (pg_stat_statements, track = all), and the rows they
#	      make are the rows the INSERT statement makes (a dedup_key
#	      element still goes through it), column by column; a claim
#	      likewise, but the statement's while a queue is paused, and the
#	      two make the same running row;
#	  (b) every index of schedq.task holds exactly the rows it should
#	      after submits, claims, completes, complete_many and fails
#	      (amcheck's heapallindexed check of every B-tree index, and the
#	      partial indexes' counts against the table);
#	  (c) an index created afterwards is maintained from the next call on
#	      (the per-backend index cache is invalidated), in the same
#	      session;
#	  (d) a trigger added to schedq.task by a superuser fires for
#	      submits and completes: the direct path declines and the
#	      statements run; once it is dropped the direct path is back;
#	  (e) a task holding lock_key or concurrency_key completes without
#	      the statement and records task_status_event's gate event
#	      itself, so the next holder of its key is freed; a task of a
#	      run completes through the statement (the trigger finishes the
#	      run); a stale or forged completion changes nothing;
#	  (f) in a read-only transaction submit, claim and complete fail as
#	      the statements would (25006) and change nothing;
#	  (g) a complete whose claimed-row hint points past the end of the
#	      table (VACUUM FULL since the claim) completes;
#	  (h) a write keeps what an index AM caches (GIN's GinState) for the
#	      write, not one per row: a submit_many of depends_on elements
#	      does not grow by one GinState per element;
#	  (i) a CHECK constraint a DBA added is enforced, on inserts and on
#	      updates, as the statements enforce it;
#	  (j) an invalid task_available_idx (a failed CREATE INDEX
#	      CONCURRENTLY) is not scanned: claims still claim;
#	  (k) a claim that follows a row's update chain checks the queue of
#	      the latest version, as the statement's recheck does;
#	  (l) an UPDATE the executor refuses on a published table without a
#	      replica identity is refused to the direct claim and complete;
#	  (m) a primary key of another shape (schedq.distribute's (queue,
#	      id), docs/scale-out.md): the statements run, and complete
#	      completes.
#-------------------------------------------------------------------------
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SchedqTest;

my $node = schedq_node(
	'direct',
	extension => 'postgres',
	conf => q{
shared_preload_libraries = 'schedq, pg_stat_statements'
pg_stat_statements.track = all
schedq.enabled = off
});
$node->safe_psql('postgres',
	'CREATE EXTENSION pg_stat_statements; CREATE EXTENSION amcheck');

sub q1 { return $node->safe_psql('postgres', $_[0]); }

# Statements schedq ran on schedq.task that insert or update it.
my $writes = q{SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
	WHERE query ~ '^(INSERT INTO|UPDATE) schedq\.task'};

# Every B-tree index of schedq.task checked against the heap, and each
# partial index's entry count against the rows its predicate selects.
sub indexes_sound
{
	my ($rc, $out, $err) = $node->psql(
		'postgres',
		q{SELECT count(*) FROM (SELECT c.oid FROM pg_index i
		    JOIN pg_class c ON c.oid = i.indexrelid
		    JOIN pg_am a ON a.oid = c.relam
		    WHERE i.indrelid = 'schedq.task'::regclass
		      AND a.amname = 'btree' OFFSET 0) b,
		  LATERAL bt_index_check(b.oid::regclass, true)});
	return $rc == 0 && $out >= 12 ? 'ok' : "failed: $out $err";
}

# (a)
q1('SELECT pg_stat_statements_reset()');
q1(q{SELECT schedq.submit('plain', '{"n": 1}', 'q1', priority => 3,
		max_attempts => 2, timeout => '1 minute', required_caps => '{x}',
		cost => 2.5)});
q1(q{SELECT schedq.submit('later', run_at => now() + interval '1 hour')});
q1(q{SELECT * FROM schedq.submit_many(
		'[{"kind": "many", "queue": "q1", "priority": 3, "payload": {"n": 1},
		   "max_attempts": 2, "timeout": "1 minute", "required_caps": ["x"],
		   "cost": 2.5},
		  {"kind": "many"}, {"kind": "many", "lock_key": "k"}]')});
is(q1($writes), '0', '(a) plain submits ran no INSERT statement');
q1(q{SELECT * FROM schedq.submit_many(
		'[{"kind": "dedup", "queue": "q1", "priority": 3, "payload": {"n": 1},
		   "max_attempts": 2, "timeout": "1 minute", "required_caps": ["x"],
		   "cost": 2.5, "dedup_key": "d"}]')});
is(q1($writes), '1', '(a) a dedup_key element ran its INSERT statement');
is( q1(
		q{SELECT count(DISTINCT to_jsonb(t) - 'id' - 'kind' - 'dedup_key'
		    - 'created_at' - 'run_at') || '/' || bool_and(created_at = run_at)
		  FROM schedq.task t WHERE kind IN ('plain', 'many', 'dedup')
		    AND queue = 'q1'}),
	'1/true',
	'(a) a direct row equals the INSERT statement\'s, column by column');
is( q1(
		q{SELECT count(DISTINCT to_jsonb(t) - 'id' - 'kind' - 'created_at'
		    - 'run_at')
		  FROM schedq.task t WHERE kind IN ('many') AND queue = 'default'
		    AND lock_key IS NULL}) . '/'
	  . q1(q{SELECT status FROM schedq.task WHERE lock_key = 'k'}),
	'1/pending',
	'(a) defaults and a gated element\'s status as the statement has them');

q1('SELECT pg_stat_statements_reset()');
my $out = q1(
	q{WITH c AS (SELECT * FROM schedq.claim('w', queues => '{q1}',
	               caps => '{x}', n => 2))
	  SELECT count(*) FILTER (WHERE schedq.complete(c.token, '{"ok": 1}'))
	  FROM c});
is($out, '2', '(a) two claimed tasks completed');
is(q1(q{SELECT count(*) FROM pg_stat_statements
	WHERE query ~ '^UPDATE schedq\.task SET status = \$\d+, result ='}),
	'0', '(a) complete ran no UPDATE statement');
is(q1(q{SELECT string_agg(status || ':' || (result->>'ok'), ',')
	FROM schedq.task WHERE kind IN ('plain', 'many') AND queue = 'q1'}),
	'done:1,done:1', '(a) ... and the tasks are done with their results');

my $claim_statements = q{SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
	WHERE query ~ '^(WITH c AS \(SELECT t\.id|UPDATE schedq\.task t SET status)'};
is(q1($claim_statements), '0', '(a) the claims ran no claim statement');
q1(q{SELECT schedq.submit('cmp', queue => 'cmpA', timeout => '1 minute',
		payload => '{"p": 1}', priority => 2);
	 SELECT schedq.submit('cmp', queue => 'cmpB', timeout => '1 minute',
		payload => '{"p": 1}', priority => 2);
	 SELECT schedq.pause_queue('zz')});
q1(q{SELECT count(*) FROM schedq.claim('w', queues => '{cmpA}',
		lease => '10 minutes')});
is(q1($claim_statements), '1', '(a) with a paused queue the statement claims');
q1(q{SELECT schedq.resume_queue('zz')});
q1(q{SELECT count(*) FROM schedq.claim('w', queues => '{cmpB}',
		lease => '10 minutes')});
is(q1($claim_statements), '1', '(a) ... and without, the direct claim');
is( q1(
		q{SELECT count(DISTINCT to_jsonb(t) - 'id' - 'queue' - 'created_at'
		    - 'run_at' - 'started_at' - 'lease_expires_at' - 'deadline'
		    - 'claim_nonce' || jsonb_build_object(
		      'l', lease_expires_at - started_at, 'd', deadline - started_at,
		      'n', claim_nonce IS NOT NULL))
		  FROM schedq.task t WHERE kind = 'cmp' AND status = 'running'}),
	'1',
	'(a) the direct claim makes the running row the statement makes');

# (b) a mixed load, then every index checked
q1(q{SELECT count(*) FROM schedq.submit_many(
		(SELECT jsonb_agg(jsonb_build_object('kind', 'load',
			'priority', i % 5, 'queue', 'q' || (i % 3)))
		 FROM generate_series(1, 3000) i))});
for my $round (1 .. 5)
{
	q1(q{SELECT schedq.complete_many(array_agg(token))
		 FROM schedq.claim('w', n => 100)});
	q1(q{SELECT schedq.fail(token, 'boom', retry_in => '0 s')
		 FROM schedq.claim('w', n => 20)});
	q1(q{SELECT count(*) FROM schedq.complete_and_claim(
		   (SELECT array_agg(token) FROM schedq.claim('w', n => 10)), 'w',
		   n => 10)});
}
is(indexes_sound(), 'ok', '(b) every B-tree index matches the heap');
is( q1(
		q{SET enable_seqscan = off; SET enable_bitmapscan = off;
		  SELECT (SELECT count(*) FROM schedq.task WHERE status = 'available')
		       = (SELECT count(*) FROM schedq.task
		          WHERE status = 'available' AND -(priority::bigint) > -100)}
	),
	't',
	'(b) task_available_idx returns every available task');

# (c) an index made after the session described the table, used by it
my $session = $node->background_psql('postgres');
$session->query_safe(q{SELECT schedq.submit('warm')});
q1(q{CREATE INDEX task_kind_test_idx ON schedq.task (kind)
	 WHERE kind LIKE 'new%'});
$session->query_safe(
	q{SELECT schedq.submit('new' || i) FROM generate_series(1, 50) i});
$session->query_safe(
	q{SELECT * FROM schedq.submit_many('[{"kind": "newer"}, {"kind": "new2"}]')});
is( q1(
		q{SELECT bt_index_check('schedq.task_kind_test_idx', true);
		  SET enable_seqscan = off; SET enable_bitmapscan = off;
		  SELECT count(*) FROM schedq.task WHERE kind LIKE 'new%'}),
	"\n52",
	'(c) rows written after CREATE INDEX are in the new index');
q1('DROP INDEX schedq.task_kind_test_idx');
$session->query_safe(q{SELECT schedq.submit('after-drop')});
is(indexes_sound(), 'ok', '(c) after DROP INDEX the session still writes');

# (d) a trigger on the table: the statements run, and it fires
q1(q{CREATE TABLE trig_log (op text, kind text, status text);
	 CREATE FUNCTION log_task() RETURNS trigger LANGUAGE plpgsql AS $$
	 BEGIN INSERT INTO public.trig_log VALUES (TG_OP, NEW.kind, NEW.status);
	       RETURN NEW; END $$;
	 CREATE TRIGGER task_log AFTER INSERT OR UPDATE ON schedq.task
	   FOR EACH ROW EXECUTE FUNCTION log_task()});
$session->query_safe(q{SELECT schedq.submit('trig', queue => 'trigq')});
$session->query_safe(
	q{SELECT * FROM schedq.submit_many('[{"kind": "trig2", "queue": "trigq2"}]')});
$session->query_safe(
	q{SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{trigq}')});
is( q1(
		q{SELECT string_agg(op || ':' || kind || ':' || status, ','
		    ORDER BY op, kind COLLATE "C", status COLLATE "C")
		  FROM trig_log}),
	'INSERT:trig:available,INSERT:trig2:available,'
	  . 'UPDATE:trig:done,UPDATE:trig:running',
	'(d) with a trigger on schedq.task, submit and complete fire it');
q1('DROP TRIGGER task_log ON schedq.task; TRUNCATE trig_log');
q1('SELECT pg_stat_statements_reset()');
$session->query_safe(q{SELECT schedq.submit('untrig')});
is(q1($writes) . '/' . q1('SELECT count(*) FROM trig_log'),
	'0/0', '(d) dropped: the direct path is back');
$session->quit;

# (e) keyed tasks complete directly, with their gate events; their gates
# open.  A task of a run completes through the statement.
q1(q{SELECT schedq.submit('k1', queue => 'gate', lock_key => 'L',
			concurrency_key => 'C');
	 SELECT schedq.submit('k2', queue => 'gate', lock_key => 'L');
	 SELECT schedq._promote_once()});
is(q1(q{SELECT string_agg(kind || ':' || status, ',' ORDER BY id)
	FROM schedq.task WHERE queue = 'gate'}),
	'k1:available,k2:pending', '(e) lock_key: one at a time');
q1('SELECT pg_stat_statements_reset()');
my $tok = q1(q{SELECT token FROM schedq.claim('w', queues => '{gate}')});
is(q1("SELECT schedq.complete('$tok')"), 't', '(e) the holder completes');
is(q1(q{SELECT count(*) FROM pg_stat_statements
	WHERE query ~ '^UPDATE schedq\.task SET status = \$\d+, result ='}),
	'0', '(e) ... without the UPDATE statement');
is(q1(q{SELECT string_agg(lock_key || '/' || concurrency_key
		|| '/' || coalesce(task_id::text, '-'), ',') FROM schedq.gate_event}),
	'L/C/-', '(e) ... recording the gate event the trigger would');
q1('SELECT schedq._promote_once()');
is(q1(q{SELECT status FROM schedq.task WHERE kind = 'k2'}),
	'available', '(e) ... and the next holder of the key is freed');
is(q1("SELECT schedq.complete('$tok')"), 'f',
	'(e) completing again: stale, false');
my $other = q1(q{SELECT token FROM schedq.claim('w', queues => '{gate}')});
my ($kid, $id, $att, $rest) = split /\./, $other, 4;
my $forged = join '.', $kid, $id, $att + 1, $rest;
my ($rc, $stdout, $stderr) =
  $node->psql('postgres', "SELECT schedq.complete('$forged')");
like($stderr, qr/grant|token/i, '(e) a forged token is refused');
is(q1(q{SELECT status FROM schedq.task WHERE kind = 'k2'}),
	'running', '(e) ... and changes nothing');
my $run = q1(q{SELECT schedq.create_run('direct-e')});
q1(qq{SELECT schedq.submit('in-run', queue => 'gate-run', run_id => $run)});
q1('SELECT pg_stat_statements_reset()');
$tok = q1(q{SELECT token FROM schedq.claim('w', queues => '{gate-run}')});
is(q1("SELECT schedq.complete('$tok')"), 't', '(e) a task of a run completes');
is(q1(q{SELECT count(*) FROM pg_stat_statements
	WHERE query ~ '^UPDATE schedq\.task SET status = \$\d+, result ='}),
	'1', '(e) ... through the UPDATE statement');
is(q1("SELECT status FROM schedq.run WHERE id = $run"), 'done',
	'(e) ... and its trigger finishes the run');
is(indexes_sound(), 'ok', '(e) indexes still match the heap');

# (f) read-only transactions
q1(q{SELECT schedq.submit('ro', queue => 'ro')});
my $ro_tok = q1(q{SELECT token FROM schedq.claim('w', queues => '{ro}')});
q1(q{SELECT schedq.submit('ro2', queue => 'ro')});
for my $call ("SELECT schedq.submit('ro3')",
	"SELECT count(*) FROM schedq.claim('w', queues => '{ro}')",
	"SELECT schedq.complete('$ro_tok')")
{
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET default_transaction_read_only = on; $call");
	like($err, qr/cannot execute (INSERT|UPDATE) in a read-only transaction/,
		"(f) read-only: " . substr($call, 7, 20) . "... refused");
}
is(q1(q{SELECT string_agg(kind || ':' || status, ',' ORDER BY id)
	FROM schedq.task WHERE kind LIKE 'ro%'}),
	'ro:running,ro2:available', '(f) ... and nothing changed');

# (g) the hint past the end of the table
q1(q{SELECT count(*) FROM schedq.submit_many(
		(SELECT jsonb_agg(jsonb_build_object('kind', 'fill', 'queue', 'vf'))
		 FROM generate_series(1, 3000)))});
q1(q{SELECT schedq.submit('last', queue => 'vf', priority => 1)});
my $vf = $node->background_psql('postgres');
my $vf_tok = $vf->query_safe(
	q{SELECT token FROM schedq.claim('w', queues => '{vf}')});
my $block = q1(q{SELECT (ctid::text::point)[0] FROM schedq.task
	WHERE kind = 'last'});
q1(q{DELETE FROM schedq.task WHERE kind <> 'last'});
q1(q{VACUUM FULL schedq.task});
ok($block > 0 && q1(q{SELECT pg_relation_size('schedq.task') / 8192}) <= $block,
	"(g) the claimed row was at block $block, now past the end");
is($vf->query_safe("SELECT schedq.complete('$vf_tok')"), 't',
	'(g) complete after VACUUM FULL: done');
is(q1(q{SELECT status FROM schedq.task WHERE kind = 'last'}), 'done',
	'(g) ... and the task is done');
$vf->quit;
is(indexes_sound(), 'ok', '(g) indexes still match the heap');

# (h) memory of a submit_many whose elements go to the GIN index
my $dep_base = q1(q{SELECT schedq.submit('dep-base', queue => 'memq')});
sub hwm_growth_kb
{
	my ($sql) = @_;
	my $s = $node->background_psql('postgres');
	my $hwm = q{SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid()
		|| '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint};
	my $before = $s->query_safe($hwm);
	$s->query_safe($sql);
	my $after = $s->query_safe($hwm);
	$s->quit;
	return $after - $before;
}
my $plain_kb = hwm_growth_kb(
	q{SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg(
		jsonb_build_object('kind', 'mem-plain', 'queue', 'memq'))
		FROM generate_series(1, 20000)))});
my $dep_kb = hwm_growth_kb(
	qq{SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg(
		jsonb_build_object('kind', 'mem-dep', 'queue', 'memq',
		'depends_on', jsonb_build_array($dep_base)))
		FROM generate_series(1, 20000)))});
cmp_ok(($dep_kb - $plain_kb) / 20000, '<', 15,
	"(h) a depends_on element costs submit_many no GinState of its own "
	  . "(plain $plain_kb kB, depends_on $dep_kb kB for 20000)");
q1(q{DELETE FROM schedq.task WHERE queue = 'memq'});

# (i) a CHECK constraint added by a DBA
q1(q{ALTER TABLE schedq.task ADD CONSTRAINT no_evil CHECK (kind <> 'evil')
	NOT VALID});
for my $call ("SELECT schedq.submit('evil')",
	q{SELECT * FROM schedq.submit_many('[{"kind": "evil"}, {"kind": "evil"}]')})
{
	my ($rc, $out, $err) = $node->psql('postgres', $call);
	like($err, qr/violates check constraint "no_evil"/,
		'(i) CHECK enforced: ' . substr($call, 7, 20) . '...');
}
q1(q{ALTER TABLE schedq.task DROP CONSTRAINT no_evil});
q1(q{SELECT schedq.submit('chk', queue => 'chkq')});
my $chk_tok = q1(q{SELECT token FROM schedq.claim('w', queues => '{chkq}')});
q1(q{ALTER TABLE schedq.task ADD CONSTRAINT done_has_result
	CHECK (status <> 'done' OR result IS NOT NULL) NOT VALID});
($rc, $stdout, $stderr) =
  $node->psql('postgres', "SELECT schedq.complete('$chk_tok')");
like($stderr, qr/violates check constraint "done_has_result"/,
	'(i) CHECK enforced on complete');
is(q1(q{SELECT status FROM schedq.task WHERE kind = 'chk'}),
	'running', '(i) ... and the task is still running');
q1(q{ALTER TABLE schedq.task DROP CONSTRAINT done_has_result});

# (j) an invalid task_available_idx left by a failed CREATE INDEX
# CONCURRENTLY (its build waited for a transaction and timed out)
q1('DROP INDEX schedq.task_available_idx');
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE schedq.task IN ROW EXCLUSIVE MODE');
($rc, $stdout, $stderr) = $node->psql('postgres',
	q{SET lock_timeout = '300ms';
	  CREATE INDEX CONCURRENTLY task_available_idx ON schedq.task
		((-(priority::bigint)), run_at, id) WHERE status = 'available'});
$holder->query_safe('COMMIT');
$holder->quit;
is(q1(q{SELECT indisvalid FROM pg_index
	WHERE indexrelid = 'schedq.task_available_idx'::regclass}),
	'f', '(j) task_available_idx is there, invalid');
q1(q{SELECT schedq.submit('inv', queue => 'invq', priority => 99)});
($rc, $stdout, $stderr) = $node->psql('postgres',
	q{SELECT string_agg(kind, ',') FROM schedq.claim('w', n => 1)});
is("$stdout$stderr", 'inv', '(j) a claim of every queue still claims');
q1(q{DROP INDEX schedq.task_available_idx;
	 CREATE INDEX task_available_idx ON schedq.task
		((-(priority::bigint)), run_at, id) WHERE status = 'available'});

# (k) a task moved to another queue while a claim of its queue runs
q1(q{CREATE FUNCTION public.gate(k text) RETURNS boolean LANGUAGE plpgsql
	 IMMUTABLE AS $$
	 BEGIN
	   IF k = 'mv-first' THEN
	     PERFORM pg_advisory_lock_shared(4242);
	     PERFORM pg_advisory_unlock_shared(4242);
	   END IF;
	   RETURN false;
	 END $$;
	 CREATE INDEX task_gate_idx ON schedq.task (id) WHERE public.gate(kind)});
q1(q{SELECT schedq.submit('mv-first', queue => 'mvq', priority => 10);
	 SELECT schedq.submit('mv-second', queue => 'mvq', priority => 5)});
my $locker = $node->background_psql('postgres');
$locker->query_safe('SELECT pg_advisory_lock(4242)');
my $claimer = $node->background_psql('postgres');
$claimer->query_until(qr/claiming/,
	"\\echo claiming\nSELECT string_agg(queue, ',' ORDER BY queue) AS q"
	  . " FROM schedq.claim('w', queues => '{mvq}', n => 2);\n");
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity
	  WHERE wait_event = 'advisory' AND query LIKE '%schedq.claim%'})
  or die 'the claim did not reach the gate';
# the claim has its snapshot and has taken mv-first; mv-second moves away
q1(q{UPDATE schedq.task SET queue = 'mvq2' WHERE kind = 'mv-second'});
$locker->query_safe('SELECT pg_advisory_unlock(4242)');
my $moved = $claimer->query_until(qr/claimed/, "\\echo claimed\n");
$claimer->quit;
$locker->quit;
like($moved, qr/^mvq$/m, '(k) the claim of mvq took only the task still in mvq');
is(q1(q{SELECT status || ':' || queue FROM schedq.task
	WHERE kind = 'mv-second'}), 'available:mvq2',
	'(k) ... and the moved task is available in its new queue');
q1(q{DROP INDEX schedq.task_gate_idx; DROP FUNCTION public.gate(text)});

# (l) a publication that publishes updates of a table without a replica
# identity: the executor refuses the UPDATE, so must the direct path
q1(q{SELECT schedq.submit('ri', queue => 'riq');
	 SELECT schedq.submit('ri2', queue => 'riq')});
my $ri_tok = q1(q{SELECT token FROM schedq.claim('w', queues => '{riq}')});
q1(q{ALTER TABLE schedq.task REPLICA IDENTITY NOTHING;
	 CREATE PUBLICATION task_pub FOR TABLE schedq.task});
for my $call ("SELECT schedq.complete('$ri_tok')",
	"SELECT count(*) FROM schedq.claim('w', queues => '{riq}')")
{
	my ($rc, $out, $err) = $node->psql('postgres', $call);
	like($err, qr/does not have a replica identity and publishes updates/,
		'(l) refused: ' . substr($call, 7, 16) . '...');
}
q1(q{DROP PUBLICATION task_pub;
	 ALTER TABLE schedq.task REPLICA IDENTITY DEFAULT});
is(q1(q{SELECT string_agg(kind || ':' || status, ',' ORDER BY kind)
	FROM schedq.task WHERE queue = 'riq'}),
	'ri:running,ri2:available', '(l) ... and nothing changed');
is(indexes_sound(), 'ok', '(h)-(l) indexes still match the heap');

# (m) the primary key schedq.distribute gives the table
q1(q{ALTER TABLE schedq.task DROP CONSTRAINT task_pkey;
	 ALTER TABLE schedq.task ADD PRIMARY KEY (queue, id)});
q1(q{SELECT schedq.submit('pk', queue => 'pk')});
q1('SELECT pg_stat_statements_reset()');
my $pk_tok = q1(q{SELECT token FROM schedq.claim('w', queues => '{pk}')});
is(q1("SELECT schedq.complete('$pk_tok')"), 't',
	'(m) primary key (queue, id): complete completes');
is(q1($claim_statements) . '/' . q1(q{SELECT count(*) FROM pg_stat_statements
	WHERE query ~ '^UPDATE schedq\.task SET status = \$\d+, result ='}),
	'1/1', '(m) ... through the statements');
q1(q{ALTER TABLE schedq.task DROP CONSTRAINT task_pkey;
	 ALTER TABLE schedq.task ADD PRIMARY KEY (id)});

$node->stop;
done_testing();

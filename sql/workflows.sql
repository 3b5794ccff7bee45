-- Workflows: runs, dependencies in the shapes of a chain, a fan-out, a
-- fan-in and a diamond; the failure policies halt and continue;
-- cancel_run; runs finished as their last task ends, or by the reaper.
-- Promotion is driven by schedq._promote_once().
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup
-- a run's tasks and their states, then the run's
CREATE FUNCTION pg_temp.st(r bigint) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(kind || '=' || status, ' ' ORDER BY id)
		   || '  | run ' || (SELECT status FROM schedq.run WHERE id = r)
	  FROM schedq.task WHERE run_id = r
$$;
-- promote, then complete everything the run's queue has available;
-- returns the kinds completed
CREATE FUNCTION pg_temp.step(q text) RETURNS text LANGUAGE sql AS $$
	SELECT schedq._promote_once();
	SELECT coalesce(string_agg(c.kind, ',' ORDER BY c.kind), '-')
	  FROM schedq.claim('w', queues => ARRAY[q], n => 100) c, schedq.complete(c.token)
$$;

-- A chain: a -> b -> c.  One at a time, in order; the run is done when c is.
BEGIN;
SELECT schedq.create_run('chain') AS r \gset
SELECT schedq.submit('a', queue => 'chain', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'chain', run_id => :r, depends_on => ARRAY[:a]::bigint[]) AS b \gset
SELECT schedq.submit('c', queue => 'chain', run_id => :r, depends_on => ARRAY[:b]::bigint[]);
COMMIT;
SELECT pg_temp.st(:r);
SELECT pg_temp.step('chain'), pg_temp.st(:r);
SELECT pg_temp.step('chain'), pg_temp.st(:r);
SELECT pg_temp.step('chain'), pg_temp.st(:r);
SELECT name, status, failure_policy, finished_at IS NOT NULL AS finished FROM schedq.run WHERE id = :r;

-- A fan-out: a -> (b, c, d).
BEGIN;
SELECT schedq.create_run('fan-out') AS r \gset
SELECT schedq.submit('a', queue => 'fo', run_id => :r) AS a \gset
SELECT schedq.submit(k, queue => 'fo', run_id => :r, depends_on => ARRAY[:a]::bigint[])
  FROM unnest('{b,c,d}'::text[]) k;
COMMIT;
SELECT pg_temp.step('fo'), pg_temp.st(:r);
SELECT pg_temp.step('fo'), pg_temp.st(:r);

-- A fan-in: (a, b, c) -> d.  d waits for the last of the three.
BEGIN;
SELECT schedq.create_run('fan-in') AS r \gset
SELECT schedq.submit('a', queue => 'fi', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'fi', run_id => :r) AS b \gset
SELECT schedq.submit('c', queue => 'fi', run_id => :r, run_at => now() + interval '1 hour') AS c \gset
SELECT schedq.submit('d', queue => 'fi', run_id => :r, depends_on => ARRAY[:a, :b, :c]::bigint[]);
COMMIT;
SELECT pg_temp.step('fi'), pg_temp.st(:r);
SELECT pg_temp.step('fi'), pg_temp.st(:r);
UPDATE schedq.task SET run_at = now() WHERE id = :c;
SELECT pg_temp.step('fi'), pg_temp.st(:r);
SELECT pg_temp.step('fi'), pg_temp.st(:r);

-- A diamond: a -> (b, c) -> d.
BEGIN;
SELECT schedq.create_run('diamond') AS r \gset
SELECT schedq.submit('a', queue => 'dm', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'dm', run_id => :r, depends_on => ARRAY[:a]::bigint[]) AS b \gset
SELECT schedq.submit('c', queue => 'dm', run_id => :r, depends_on => ARRAY[:a]::bigint[]) AS c \gset
SELECT schedq.submit('d', queue => 'dm', run_id => :r, depends_on => ARRAY[:b, :c]::bigint[]);
COMMIT;
SELECT pg_temp.step('dm'), pg_temp.st(:r);
SELECT pg_temp.step('dm'), pg_temp.st(:r);
SELECT pg_temp.step('dm'), pg_temp.st(:r);

-- halt: a task failing for good cancels every unfinished task of the run,
-- running ones included (their grants go stale); the run ends failed.
BEGIN;
SELECT schedq.create_run('halting', 'halt') AS r \gset
SELECT schedq.submit('a', queue => 'h', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'h', run_id => :r, depends_on => ARRAY[:a]::bigint[]);
SELECT schedq.submit('x', queue => 'h', run_id => :r);
SELECT schedq.submit('y', queue => 'h2', run_id => :r);
COMMIT;
SELECT token AS ty FROM schedq.claim('w', queues => '{h2}') \gset
SELECT schedq.fail(token, 'broken', permanent => true) FROM schedq.claim('w', queues => '{h}') WHERE kind = 'a';
SELECT pg_temp.st(:r);
SELECT schedq.complete(:'ty') AS stale_complete;
SELECT status FROM schedq.run WHERE id = :r;

-- continue: the transitive dependents of the failed task are skipped;
-- independent branches go on; the run ends failed once they are done.
BEGIN;
SELECT schedq.create_run('continuing', 'continue') AS r \gset
SELECT schedq.submit('a', queue => 'k', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'k', run_id => :r, depends_on => ARRAY[:a]::bigint[]) AS b \gset
SELECT schedq.submit('c', queue => 'k', run_id => :r, depends_on => ARRAY[:b]::bigint[]);
SELECT schedq.submit('x', queue => 'k2', run_id => :r) AS x \gset
SELECT schedq.submit('y', queue => 'k2', run_id => :r, depends_on => ARRAY[:x]::bigint[]);
COMMIT;
SELECT schedq._promote_once();
SELECT schedq.fail(token, 'broken', permanent => true) FROM schedq.claim('w', queues => '{k}');
SELECT pg_temp.st(:r);
-- each skipped task names the dependency that held it back
SELECT kind, last_error FROM schedq.task WHERE run_id = :r AND status = 'skipped' ORDER BY id;
SELECT pg_temp.step('k2'), pg_temp.st(:r);
SELECT pg_temp.step('k2'), pg_temp.st(:r);
-- a failure with attempts left is not "for good": nothing is skipped
BEGIN;
SELECT schedq.create_run('retrying', 'continue') AS r \gset
SELECT schedq.submit('a', queue => 'rt', run_id => :r, max_attempts => 2) AS a \gset
SELECT schedq.submit('b', queue => 'rt', run_id => :r, depends_on => ARRAY[:a]::bigint[]);
COMMIT;
SELECT schedq.fail(token, 'flaky', retry_in => '0') FROM schedq.claim('w', queues => '{rt}');
SELECT pg_temp.st(:r);
SELECT pg_temp.step('rt'), pg_temp.step('rt'), pg_temp.st(:r);

-- cancel_run: every unfinished task is canceled and the run too; false
-- once it is finished.
BEGIN;
SELECT schedq.create_run('to-cancel') AS r \gset
SELECT schedq.submit('a', queue => 'cr', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'cr', run_id => :r, depends_on => ARRAY[:a]::bigint[]);
COMMIT;
SELECT token AS ta FROM schedq.claim('w', queues => '{cr}') \gset
SELECT schedq.cancel_run(:r), schedq.cancel_run(:r) AS again;
SELECT pg_temp.st(:r);
SELECT schedq.complete(:'ta') AS stale_complete;
-- a finished run takes no new task
SELECT pg_temp.err(format('SELECT schedq.submit(%L, run_id => %s)', 'late', :r));

-- The reaper finishes a run left running whose tasks have all ended (here
-- the finishing trigger is disabled by hand to leave one behind).
BEGIN;
SELECT schedq.create_run('orphan') AS r \gset
SELECT schedq.submit('a', queue => 'or', run_id => :r);
COMMIT;
ALTER TABLE schedq.task DISABLE TRIGGER task_status_event;
SELECT pg_temp.step('or');
ALTER TABLE schedq.task ENABLE TRIGGER task_status_event;
SELECT pg_temp.st(:r);
CREATE TEMP TABLE m0 AS SELECT * FROM schedq.metrics() WHERE name = 'orphan_runs_reaped';
SELECT schedq._reap_once();
SELECT pg_temp.st(:r);
SELECT n.value - o.value AS orphans_reaped FROM schedq.metrics() n JOIN m0 o USING (name);
-- a run without tasks is left alone
SELECT schedq.create_run('empty') AS r \gset
SELECT schedq._reap_once();
SELECT status FROM schedq.run WHERE id = :r;

-- Bad input.
SELECT pg_temp.err($$SELECT schedq.create_run('x', 'stop')$$);
SELECT pg_temp.err($$SELECT schedq.create_run('x', NULL)$$);
SELECT pg_temp.err($$SELECT schedq.cancel_run(NULL)$$);
SELECT schedq.cancel_run(999999) AS unknown_run;
SELECT schedq.create_run('one') AS r1 \gset
SELECT schedq.create_run('two') AS r2 \gset
SELECT schedq.submit('in-one', run_id => :r1) AS t1 \gset
SELECT pg_temp.err(format('SELECT schedq.submit(%L, run_id => %s, depends_on => ARRAY[%s]::bigint[])', 'x', :r2, :t1));
SELECT pg_temp.err(format('SELECT schedq.submit(%L, depends_on => ARRAY[%s]::bigint[])', 'x', :t1));
SELECT pg_temp.err($$SELECT schedq.submit('x', run_id => 999999)$$);
SELECT pg_temp.err($$SELECT schedq.submit('x', depends_on => '{999999}')$$);
SELECT count(*) AS tasks_in_two FROM schedq.task WHERE run_id = :r2;

-- A dependency canceled under 'continue': its dependents are skipped,
-- naming it; one further down names the skipped task and the canceled
-- one; a diamond's join names its direct dependency.
BEGIN;
SELECT schedq.create_run('cancel-continue', 'continue') AS r \gset
SELECT schedq.submit('a', queue => 'cc', run_id => :r) AS a \gset
SELECT schedq.submit('b', queue => 'cc', run_id => :r, depends_on => ARRAY[:a]::bigint[]) AS b \gset
SELECT schedq.submit('c', queue => 'cc', run_id => :r, depends_on => ARRAY[:b]::bigint[]) AS c \gset
SELECT schedq.submit('d', queue => 'cc', run_id => :r, depends_on => ARRAY[:a, :c]::bigint[]) AS d \gset
COMMIT;
SELECT schedq.cancel(:a);
SELECT kind, status,
       replace(replace(replace(last_error, :'a', 'A'), :'b', 'B'), :'c', 'C') AS last_error
  FROM schedq.task WHERE run_id = :r ORDER BY id;


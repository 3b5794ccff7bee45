-- Hardening against careless values and hostile tenants: every argument
-- is bounded, a rolled-back claim's grant acts on nothing, another role's
-- task is not a dependency, and the promotion pass tells apart keys that
-- share a long prefix.  (The table-driven sweep of every function and
-- argument is hostile_input.sql.)
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup
GRANT EXECUTE ON FUNCTION pg_temp.err(text) TO PUBLIC;

-- Names are at most 255 bytes: a longer queue, kind or key would end up in
-- an index and stop the promotion of every task (54000, nothing written).
SELECT pg_temp.err(format($$SELECT schedq.submit('k', queue => %L, run_at => now() + interval '1 min')$$, repeat('q', 3200)));
SELECT pg_temp.err(format($$SELECT schedq.submit(%L)$$, repeat('k', 256)));
SELECT pg_temp.err(format($$SELECT schedq.submit('k', lock_key => %L)$$, repeat('l', 3200)));
SELECT pg_temp.err(format($$SELECT schedq.submit('k', concurrency_key => %L)$$, repeat('c', 3200)));
SELECT pg_temp.err(format($$SELECT schedq.submit('k', dedup_key => %L)$$, repeat('d', 3200)));
SELECT pg_temp.err(format($$SELECT schedq.submit('k', required_caps => ARRAY[%L])$$, repeat('c', 256)));
SELECT pg_temp.err($$SELECT schedq.submit('k', required_caps => (SELECT array_agg(i::text) FROM generate_series(1, 65) i))$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', depends_on => (SELECT array_agg(i::bigint) FROM generate_series(1, 1001) i))$$);
SELECT pg_temp.err(format($$SELECT schedq.claim(%L)$$, repeat('w', 256)));
SELECT pg_temp.err(format($$SELECT schedq.claim('w', queues => ARRAY[%L])$$, repeat('q', 256)));
SELECT pg_temp.err(format($$SELECT schedq.pause_queue(%L)$$, repeat('q', 256)));
SELECT pg_temp.err(format($$SELECT schedq.set_budget(%L, 1)$$, repeat('b', 256)));
SELECT pg_temp.err(format($$SELECT schedq.set_concurrency_limit(%L, 1)$$, repeat('c', 256)));
SELECT pg_temp.err(format($$SELECT schedq.create_run(%L)$$, repeat('r', 256)));
SELECT pg_temp.err(format($$SELECT schedq.schedule(%L, '* * * * *', 'k')$$, repeat('s', 256)));
SELECT pg_temp.err(format($$SELECT schedq.schedule('s', %L, 'k')$$, repeat('* ', 600)));
SELECT pg_temp.err(format($$SELECT schedq.next_runs('* * * * *', %L)$$, repeat('z', 256)));
SELECT count(*) AS tasks FROM schedq.task;

-- 255 bytes is fine.
SELECT pg_temp.err(format($$SELECT schedq.submit(%L, queue => %L, lock_key => %L)$$,
	repeat('k', 255), repeat('q', 255), repeat('l', 255)));

-- Intervals are at most 365 days (a wait at most an hour), so that no
-- claim, heartbeat or retry computes a time out of range (22023).
SELECT pg_temp.err($$SELECT schedq.submit('k', timeout => '300000 years')$$);
SELECT pg_temp.err($$SELECT schedq.submit_sql('SELECT 1', timeout => '366 days')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('s', '* * * * *', 'k', timeout => '1000 years')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', lease => '300000 years')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', wait => '2 hours')$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', 1, '400 days')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', run_at => now() + interval '2000 years')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', timeout => '365 days')$$);
SELECT count(*) AS tasks FROM schedq.task;

-- Every later use of a grant checks the claim's nonce: the grant of a claim
-- that rolled back names the same attempt number as the next claim of the
-- task, but acts on nothing.
SELECT schedq.submit('fenced', priority => 10) AS fenced \gset
BEGIN;
SELECT token AS rolled_back, attempt FROM schedq.claim('w1', queues => '{default}') WHERE id = :fenced \gset
ROLLBACK;
SELECT token AS current, attempt = :attempt AS same_attempt FROM schedq.claim('w2') WHERE id = :fenced \gset
SELECT :'same_attempt' AS same_attempt;
SELECT schedq.verify_grant(:'rolled_back') AS rolled_back_grant;
SELECT schedq.heartbeat(:'rolled_back') IS NULL AS no_heartbeat;
SELECT schedq.fail(:'rolled_back', 'not mine') AS fail;
SELECT schedq.complete(:'rolled_back') AS complete_rolled_back;
SELECT schedq.complete_many(ARRAY[:'rolled_back']) AS complete_many_rolled_back;
SELECT status FROM schedq.task WHERE id = :fenced;
SELECT schedq.complete(:'current') AS complete_current;

-- Keys are told apart by every byte: two concurrency keys that share 250
-- bytes each have their own limit of one.
SELECT repeat('x', 250) AS prefix \gset
SELECT schedq.set_concurrency_limit(:'prefix' || 'a', 1), schedq.set_concurrency_limit(:'prefix' || 'b', 1);
SELECT count(*) FROM (
	SELECT schedq.submit('limited', concurrency_key => :'prefix' || k)
	  FROM unnest('{a,a,b,b}'::text[]) k) s;
SELECT schedq._promote_once() AS promoted;
SELECT right(concurrency_key, 1) AS key, count(*) FILTER (WHERE status = 'available') AS available
  FROM schedq.task WHERE kind = 'limited' GROUP BY 1 ORDER BY 1;

-- A pass never dies of one bad row: a pending task planted by hand with a
-- queue too long for task_available_queue_idx cannot be promoted; it is set
-- aside (parked on 'error', the error in last_error, counted in metrics())
-- and every other due task is promoted.
INSERT INTO schedq.task (kind, queue, status, owner, run_at)
SELECT 'planted', string_agg(md5(i::text), ''), 'pending', 'postgres', now()
  FROM generate_series(1, 100) i;
SELECT schedq.submit('ok-' || i, lock_key => 'iso-' || i) FROM generate_series(1, 3) i;
SELECT schedq._promote_once() AS promoted;
SELECT kind, status, parked_on, last_error LIKE 'index row size % exceeds %' AS why
  FROM schedq.task WHERE kind = 'planted' OR kind LIKE 'ok-%' ORDER BY kind;
SELECT value FROM schedq.metrics() WHERE name = 'tasks_set_aside';
DELETE FROM schedq.task WHERE kind = 'planted';

-- The reaper and retention set a bad row aside too: here a constraint an
-- admin added, which the poisoned task's retry breaks, and a user's table
-- that references a finished task.
SELECT count(*) FROM (SELECT schedq.submit(k, queue => 'reap')
						FROM unnest('{poison,expired}'::text[]) k) s;
SELECT count(*) FROM schedq.claim('w', queues => '{reap}', n => 2, lease => '1 second');
ALTER TABLE schedq.task ADD CONSTRAINT poison
	CHECK (kind <> 'poison' OR status = 'running') NOT VALID;
SELECT schedq._reap_once(now() + interval '1 minute') AS reaped;
SELECT kind, status, last_error LIKE '%violates check constraint "poison"%' AS set_aside
  FROM schedq.task WHERE queue = 'reap' ORDER BY kind;
ALTER TABLE schedq.task DROP CONSTRAINT poison;
CREATE TABLE keeps (task_id bigint REFERENCES schedq.task (id));
UPDATE schedq.task SET status = 'done', finished_at = now() - interval '8 days'
 WHERE queue = 'reap';
INSERT INTO keeps SELECT id FROM schedq.task WHERE kind = 'poison';
SELECT schedq._reap_once(now());
SELECT kind, finished_at > now() - interval '1 minute' AS kept_another_period
  FROM schedq.task WHERE queue = 'reap';
SELECT value FROM schedq.metrics() WHERE name = 'tasks_set_aside';
DROP TABLE keeps;

-- A SQL task is made only by submit_sql and schedule_sql (their grants,
-- their default timeout): kind 'sql' requiring the capability 'sql' is
-- refused to submit, submit_many and schedule (42501).
SELECT pg_temp.err($$SELECT schedq.submit('sql', payload => '{"command": "SELECT 1"}', required_caps => '{sql}')$$);
SELECT pg_temp.err($$SELECT schedq.submit_many('[{"kind": "sql", "payload": {"command": "SELECT 1"}, "required_caps": ["sql"]}]')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('sneaky', '@hourly', 'sql', '{"command": "SELECT 1"}', required_caps => '{sql}')$$);
-- kind 'sql' without the capability, or the capability for another kind,
-- is an ordinary task for an ordinary worker.
SELECT pg_temp.err($$SELECT schedq.submit('sql', queue => 'not-sql')$$);

-- Another role's task as a dependency is refused exactly as a task that
-- does not exist (same SQLSTATE and message), and its row is not touched.
CREATE ROLE regress_hardening_a;
CREATE ROLE regress_hardening_b;
GRANT USAGE ON SCHEMA schedq TO regress_hardening_a, regress_hardening_b;
GRANT EXECUTE ON FUNCTION schedq.submit TO regress_hardening_a, regress_hardening_b;
SET ROLE regress_hardening_a;
SELECT schedq.submit('private') AS private \gset
SET ROLE regress_hardening_b;
SELECT pg_temp.err(format('SELECT schedq.submit(%L, depends_on => ARRAY[%s::bigint])', 'spy', :private));
SELECT pg_temp.err('SELECT schedq.submit(''spy'', depends_on => ARRAY[999999::bigint])');
RESET ROLE;
SELECT has_dependents FROM schedq.task WHERE id = :private;
SET ROLE regress_hardening_a;
SELECT schedq.submit('own', depends_on => ARRAY[:private::bigint]) > 0 AS own_dependency;
RESET ROLE;

-- A stale grant of a task given before the task's current grant hides
-- nothing: complete_many and complete_and_claim complete the current
-- attempt with its own result, and answer false only for the stale one.
SELECT schedq.submit('fenced2', priority => 1000) AS fenced2 \gset
BEGIN;
SELECT token AS rolled_back2 FROM schedq.claim('w1') WHERE id = :fenced2 \gset
ROLLBACK;
SELECT token AS current2 FROM schedq.claim('w2') WHERE id = :fenced2 \gset
SELECT schedq.complete_many(ARRAY[:'rolled_back2', :'current2', :'rolled_back2'],
	ARRAY['{"from": "rolled back"}', '{"from": "current"}', NULL]::jsonb[]) AS stale_first;
SELECT status, result FROM schedq.task WHERE id = :fenced2;
SELECT schedq.submit('fenced3', priority => 1000) AS fenced3 \gset
BEGIN;
SELECT token AS rolled_back3 FROM schedq.claim('w1') WHERE id = :fenced3 \gset
ROLLBACK;
SELECT token AS current3 FROM schedq.claim('w2') WHERE id = :fenced3 \gset
SELECT count(*) AS claimed FROM schedq.complete_and_claim(ARRAY[:'rolled_back3', :'current3'], 'w2',
	results => ARRAY['{"from": "rolled back"}', '{"from": "current"}']::jsonb[], queues => '{none}');
SELECT status, result FROM schedq.task WHERE id = :fenced3;

DROP EXTENSION schedq;
DROP OWNED BY regress_hardening_a, regress_hardening_b;
DROP ROLE regress_hardening_a, regress_hardening_b;

-- complete_and_claim: a worker's cycle with one commit per task.  The
-- tokens' attempts are completed as by complete_many, then tasks are
-- claimed as by claim without wait, in one call and one transaction.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup
GRANT EXECUTE ON FUNCTION pg_temp.err(text) TO PUBLIC;

-- Every task, for the checks below.
CREATE FUNCTION pg_temp.tasks() RETURNS TABLE (id bigint, kind text, status text,
		attempts integer, claimed_by text, result jsonb)
LANGUAGE sql AS $$
	SELECT id, kind, status, attempts, claimed_by, result FROM schedq.task ORDER BY id
$$;

SELECT schedq.submit('a'), schedq.submit('b'), schedq.submit('c', priority => 1),
	   schedq.submit('d', queue => 'other');

-- The first call has nothing to finish: an empty array.  The row type and
-- the claim order are claim's (priority first).
SELECT id, attempt, queue, kind, payload, priority, run_id,
	   lease_expires_at > now() AS leased, token AS t
  FROM schedq.complete_and_claim('{}', 'w1') \gset
SELECT :id AS id, :attempt AS attempt, :'queue' AS queue, :'kind' AS kind,
	   :'payload' AS payload, :priority AS priority, :'leased' AS leased;
SELECT schedq.verify_grant(:'t');

-- The cycle: finish task 3 with its result, take the next one (task 1).
SELECT id, kind, token AS t_next
  FROM schedq.complete_and_claim(ARRAY[:'t'], 'w1', results => ARRAY['{"n": 3}']::jsonb[]) \gset
SELECT :id AS id, :'kind' AS kind;
SELECT * FROM pg_temp.tasks();

-- One transaction: rolled back, the completion and the claim are both
-- undone (nothing lost, nothing doubled); the grant still works after.
BEGIN;
SELECT id, kind FROM schedq.complete_and_claim(ARRAY[:'t_next'], 'w1');
SELECT id, status FROM schedq.task WHERE id IN (1, 2) ORDER BY id;
ROLLBACK;
SELECT * FROM pg_temp.tasks();
-- Both parts commit together: the transaction that did them is one.
BEGIN;
SELECT :'t' AS t3 \gset
SELECT id, kind, token AS t FROM schedq.complete_and_claim(ARRAY[:'t_next'], 'w1') \gset
SELECT id, status, xmin::text = pg_current_xact_id()::text AS this_xact
  FROM schedq.task WHERE id IN (1, 2) ORDER BY id;
COMMIT;
SELECT * FROM pg_temp.tasks();

-- A stale token among the tokens: it changes nothing (as complete), the
-- others are completed, and the claim still happens.  Here task 2's
-- grant is good and task 3's, given first, is stale (done already): its
-- result is not written.
SELECT schedq.submit('e');
SELECT id, kind, token AS tr
  FROM schedq.complete_and_claim(ARRAY[:'t3', :'t'], 'w1',
								 results => ARRAY['{"stale": true}', '{"n": 2}']::jsonb[]) \gset
SELECT :id AS id, :'kind' AS kind;
SELECT * FROM pg_temp.tasks();
-- A task canceled under the worker: its token is stale, and the claim
-- still happens.
SELECT schedq.cancel(4);
SELECT schedq.submit('f');
SELECT id, kind, token AS t6 FROM schedq.complete_and_claim(ARRAY[:'tr'], 'w1') \gset
SELECT :id AS id, :'kind' AS kind;
SELECT id, status, result FROM schedq.task WHERE id IN (4, 5, 6) ORDER BY id;

-- Nothing to claim (no task in queue 'empty'): the completion still
-- commits, no row comes back, and the call returned without waiting
-- (it has no wait argument; the worker waits after it with await_task
-- or claim(wait => ...)).
SELECT count(*) AS claimed FROM schedq.complete_and_claim(ARRAY[:'t6'], 'w1', queues => '{empty}');
SELECT id, status FROM schedq.task WHERE id IN (5, 6) ORDER BY id;
SELECT pg_temp.err($$SELECT * FROM schedq.complete_and_claim('{}', 'w1', wait => '1s')$$);
-- The claim arguments are claim's: queues, caps, n, lease.
SELECT schedq.submit('gpu', queue => 'other', required_caps => '{gpu}');
SELECT id, kind, queue, lease_expires_at - now() BETWEEN interval '5 minutes' AND interval '5 minutes 30 seconds' AS lease_5min
  FROM schedq.complete_and_claim('{}', 'w2', queues => '{other}', caps => '{gpu}',
								 n => 5, lease => '5 minutes') ORDER BY id;

-- A batch: n tokens in, n tasks out; a token given twice counts once.
SELECT count(*) FROM (SELECT schedq.submit('batch') FROM generate_series(1, 6)) s;
SELECT array_agg(token ORDER BY id) AS batch, array_agg(id ORDER BY id) AS batch_ids
  FROM schedq.complete_and_claim('{}', 'w3', n => 3) \gset
SELECT :'batch_ids' AS first_batch;
SELECT array_agg(id ORDER BY id) AS next_batch
  FROM schedq.complete_and_claim(:'batch'::text[] || (:'batch'::text[])[1], 'w3',
								 results => ARRAY['1', '2', '3', '4']::jsonb[], n => 3);
SELECT id, status, result FROM schedq.task WHERE id = ANY (:'batch_ids'::bigint[]) ORDER BY id;

-- Bad input: a specific SQLSTATE, and nothing changes (a good grant
-- comes first in the arrays below; its task stays running and nothing is
-- claimed).
SELECT schedq.submit('spare');
SELECT token AS good FROM schedq.claim('w4', n => 1) \gset
SELECT id AS good_id FROM schedq.task WHERE claimed_by = 'w4' \gset
SELECT count(*) AS available_before FROM schedq.task WHERE status = 'available' \gset
SELECT pg_temp.err($$SELECT * FROM schedq.complete_and_claim(NULL, 'w4')$$);
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L, NULL], 'w4')$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L, 'not a token'], 'w4')$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L, %L], 'w4')$$,
		:'good', left(:'good', -1) || CASE right(:'good', 1) WHEN '0' THEN '1' ELSE '0' END));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', results => '{}')$$, :'good'));
-- Two-dimensional tokens or results: 2202E, as for every array argument
-- (the good grant inside is not completed).
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[[%L]], 'w4')$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', results => ARRAY[['{}']]::jsonb[])$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', results => ARRAY[jsonb_build_object('x', repeat('x', 2000000))])$$, :'good'));
SELECT pg_temp.err($$SELECT * FROM schedq.complete_and_claim(array_fill('x'::text, ARRAY[1001]), 'w4')$$);
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], NULL)$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], repeat('w', 256))$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', caps => NULL)$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', queues => '{NULL}')$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', n => 0)$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', n => 1001)$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', n => NULL)$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', lease => '-1 s')$$, :'good'));
SELECT pg_temp.err(format($$SELECT * FROM schedq.complete_and_claim(ARRAY[%L], 'w4', lease => '366 days')$$, :'good'));
SELECT status, claimed_by FROM schedq.task WHERE id = :good_id;
SELECT count(*) = :available_before AS nothing_claimed FROM schedq.task WHERE status = 'available';

-- Privileges: PUBLIC has nothing; a worker role needs EXECUTE on it (as
-- on claim and complete) and works only on the tasks of roles it is a
-- member of.
SELECT count(*) AS public_grants
  FROM pg_proc p, aclexplode(p.proacl) a
 WHERE p.oid = 'schedq.complete_and_claim'::regproc AND a.grantee = 0;
CREATE ROLE regress_cac_app;
CREATE ROLE regress_cac_other;
CREATE ROLE regress_cac_worker;
GRANT USAGE ON SCHEMA schedq TO regress_cac_app, regress_cac_other, regress_cac_worker;
GRANT EXECUTE ON FUNCTION schedq.submit TO regress_cac_app, regress_cac_other;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, schedq.complete,
	schedq.complete_many, schedq.fail, schedq.verify_grant TO regress_cac_worker;
SET ROLE regress_cac_worker;
SELECT pg_temp.err($$SELECT * FROM schedq.complete_and_claim('{}', 'w5')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION schedq.complete_and_claim TO regress_cac_worker;
GRANT regress_cac_app TO regress_cac_worker;
UPDATE schedq.task SET status = 'canceled' WHERE status = 'available';
SET ROLE regress_cac_other;
SELECT schedq.submit('not-for-w5') AS other_id \gset
RESET ROLE;
SET ROLE regress_cac_app;
SELECT schedq.submit('for-w5') AS app1, schedq.submit('for-w5') AS app2 \gset
RESET ROLE;
SET ROLE regress_cac_worker;
SELECT id = :app1 AS first, token AS tw FROM schedq.complete_and_claim('{}', 'w5') \gset
SELECT :'first' AS first;
SELECT id = :app2 AS second FROM schedq.complete_and_claim(ARRAY[:'tw'], 'w5');
SELECT count(*) AS then_nothing FROM schedq.complete_and_claim('{}', 'w5');
RESET ROLE;
SELECT id = :other_id AS other_task, status FROM schedq.task WHERE kind IN ('for-w5', 'not-for-w5') ORDER BY id;

DROP OWNED BY regress_cac_app, regress_cac_other, regress_cac_worker;
DROP ROLE regress_cac_app, regress_cac_other, regress_cac_worker;

-- Finishing attempts: complete, fail with backoff, retry_in, permanent,
-- max_attempts, heartbeat, and stale grants.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

-- complete: true once, then false (the attempt is no longer running).
SELECT schedq.submit('ok');
SELECT token AS t FROM schedq.claim('w') \gset
SELECT schedq.complete(:'t', '{"sent": true}');
SELECT schedq.complete(:'t', '{"sent": false}');
SELECT status, result, finished_at IS NOT NULL AS finished FROM schedq.task WHERE id = 1;

-- fail with attempts left: back to wait for the backoff, 1 s +-25 %
-- after the first attempt, 2 s +-25 % after the second.
SELECT schedq.submit('flaky', max_attempts => 3);
SELECT token AS t FROM schedq.claim('w') \gset
-- (the backoff counts from the fail, some time between the two clocks)
SELECT clock_timestamp() AS before \gset
SELECT schedq.fail(:'t', 'connection refused');
SELECT clock_timestamp() AS after \gset
SELECT status, attempts, last_error, claimed_by,
	   run_at BETWEEN :'before'::timestamptz + interval '0.75 s'
				  AND :'after'::timestamptz + interval '1.25 s' AS backoff_1s
  FROM schedq.task WHERE id = 2;
-- The old grant is stale now.
SELECT schedq.fail(:'t', 'again'), schedq.complete(:'t'), schedq.heartbeat(:'t');
-- Second attempt (made available by hand: the scheduler is not running).
UPDATE schedq.task SET status = 'available', run_at = now() WHERE id = 2;
SELECT token AS t FROM schedq.claim('w') \gset
SELECT clock_timestamp() AS before \gset
SELECT schedq.fail(:'t', 'timeout');
SELECT clock_timestamp() AS after \gset
SELECT status, attempts,
	   run_at BETWEEN :'before'::timestamptz + interval '1.5 s'
				  AND :'after'::timestamptz + interval '2.5 s' AS backoff_2s
  FROM schedq.task WHERE id = 2;
-- Third attempt fails for good: max_attempts is 3.
UPDATE schedq.task SET status = 'available', run_at = now() WHERE id = 2;
SELECT token AS t FROM schedq.claim('w') \gset
SELECT schedq.fail(:'t', 'gave up');
SELECT status, attempts, last_error, finished_at IS NOT NULL AS finished
  FROM schedq.task WHERE id = 2;

-- retry_in overrides the backoff; zero makes the task available at once.
SELECT schedq.submit('later');
SELECT token AS t FROM schedq.claim('w') \gset
SELECT clock_timestamp() AS before \gset
SELECT schedq.fail(:'t', 'rate limited', retry_in => '10 minutes');
SELECT clock_timestamp() AS after \gset
SELECT status, run_at BETWEEN :'before'::timestamptz + interval '10 min'
						  AND :'after'::timestamptz + interval '10 min' AS in_10_min
  FROM schedq.task WHERE id = 3;
UPDATE schedq.task SET status = 'available', run_at = now() WHERE id = 3;
SELECT token AS t FROM schedq.claim('w') \gset
SELECT schedq.fail(:'t', 'retry now', retry_in => '0');
SELECT status, attempts FROM schedq.task WHERE id = 3;
SELECT id, attempt, schedq.complete(token) FROM schedq.claim('w');
-- A gated task goes back to pending even with retry_in 0.
SELECT schedq.submit('keyed', lock_key => 'k');
UPDATE schedq.task SET status = 'available' WHERE id = 4;
SELECT token AS t FROM schedq.claim('w') \gset
SELECT schedq.fail(:'t', 'x', retry_in => '0');
SELECT status FROM schedq.task WHERE id = 4;

-- permanent fails at once, whatever attempts remain.
SELECT schedq.submit('bad-input', max_attempts => 10);
SELECT token AS t FROM schedq.claim('w') WHERE id = 5 \gset
SELECT schedq.fail(:'t', 'invalid address', permanent => true);
SELECT status, attempts, last_error FROM schedq.task WHERE id = 5;

-- heartbeat extends the lease (never shortens it) and returns the expiry;
-- NULL once the attempt is over.
SELECT schedq.submit('long');
SELECT token AS t FROM schedq.claim('w', lease => '1 minute') WHERE id = 6 \gset
BEGIN;	-- one now() for the comparisons below
SELECT schedq.heartbeat(:'t', '10 minutes') = now() + interval '10 minutes' AS extended;
SELECT schedq.heartbeat(:'t', '1 second') = now() + interval '10 minutes' AS not_shortened;
SELECT lease_expires_at = now() + interval '10 minutes' AS stored FROM schedq.task WHERE id = 6;
-- Without extend, the claim's own lease is used again.
UPDATE schedq.task SET lease_expires_at = now() WHERE id = 6;
SELECT schedq.heartbeat(:'t') = now() + interval '1 minute' AS claim_lease;
COMMIT;
SELECT schedq.complete(:'t');
SELECT schedq.heartbeat(:'t') IS NULL AS stopped;

-- A stale worker cannot touch the new attempt: the attempt number fences
-- it, and complete/fail report it without changing anything.
SELECT schedq.submit('fenced');
SELECT token AS old FROM schedq.claim('w') WHERE id = 7 \gset
UPDATE schedq.task SET status = 'available' WHERE id = 7;   -- as if reclaimed
SELECT token AS new FROM schedq.claim('w') WHERE id = 7 \gset
SELECT schedq.complete(:'old') AS old_complete, schedq.fail(:'old', 'x') AS old_fail,
	   schedq.heartbeat(:'old') AS old_heartbeat, schedq.verify_grant(:'old');
SELECT status, attempts FROM schedq.task WHERE id = 7;
SELECT schedq.complete(:'new');
SELECT status, attempts FROM schedq.task WHERE id = 7;

-- complete_many: a batch in one statement.  One boolean per token, in
-- order; each task gets its own result; a token given twice counts once,
-- at its first place; stale tokens are false and change nothing.
SELECT count(schedq.submit('batch', queue => 'batch')) FROM generate_series(1, 4);
SELECT string_agg(format('%s', token), ',' ORDER BY id) AS toks
  FROM schedq.claim('w', queues => '{batch}', n => 3) \gset
SELECT split_part(:'toks', ',', 1) AS b1, split_part(:'toks', ',', 2) AS b2,
	   split_part(:'toks', ',', 3) AS b3 \gset
SELECT schedq.complete_many(ARRAY[:'b1', :'b2', :'b1'],
							ARRAY['{"n": 1}', '{"n": 2}', '{"n": 99}']::jsonb[]);
SELECT schedq.complete_many(ARRAY[:'b3', :'b2']);
SELECT schedq.complete_many('{}');
-- results are matched to tokens by place, whatever their array's bounds
SELECT token AS b4 FROM schedq.claim('w', queues => '{batch}') \gset
SELECT schedq.complete_many(ARRAY[:'b4'], '[5:5]={"{\"n\": 4}"}'::jsonb[]);
SELECT kind, status, result FROM schedq.task WHERE queue = 'batch' ORDER BY id;

-- complete finds the claimed row where claim left it (a per-session hint);
-- when the row has moved since (here an update by hand), it still finds
-- the task through its id.
SELECT schedq.submit('moved', queue => 'moved');
SELECT id AS m, token AS t FROM schedq.claim('w', queues => '{moved}') \gset
UPDATE schedq.task SET payload = '{"moved": true}' WHERE id = :m;
SELECT schedq.complete(:'t');
SELECT kind, status FROM schedq.task WHERE id = :m;

-- claimed and finished in one statement (and so in one transaction): it
-- finishes no earlier than it started, through the direct writes and
-- through SQL, completed or failed for good.
SELECT count(schedq.submit('one-statement', queue => 'once')) FROM generate_series(1, 4);
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{once}');
SELECT schedq.fail(token, 'no', permanent => true) FROM schedq.claim('w', queues => '{once}');
SET schedq.direct_writes = off;
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{once}');
SELECT schedq.fail(token, 'no', permanent => true) FROM schedq.claim('w', queues => '{once}');
RESET schedq.direct_writes;
SELECT status, count(*) FILTER (WHERE finished_at >= started_at) AS in_order, count(*)
  FROM schedq.task WHERE queue = 'once' GROUP BY status ORDER BY status;

-- A run canceled in the statement that claimed one of its tasks: the
-- task is canceled no earlier than it started.
SELECT schedq.create_run('once-run') AS r \gset
SELECT count(schedq.submit('in-run', queue => 'once-run', run_id => :r));
SELECT schedq.cancel_run(:r) FROM schedq.claim('w', queues => '{once-run}');
SELECT status, finished_at >= started_at AS in_order
  FROM schedq.task WHERE queue = 'once-run';

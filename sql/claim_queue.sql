-- claim_queue(queue, worker, caps, n, lease, wait): on one server, exactly
-- claim(worker, ARRAY[queue], caps, n, lease, wait).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

SELECT count(schedq.submit('k' || g, queue => 'qa', priority => g % 3,
						   run_at => now() - g * interval '1 second'))
  FROM generate_series(1, 6) g;
SELECT count(schedq.submit('other', queue => 'qb')) FROM generate_series(1, 3);
SELECT schedq.submit('gpu', queue => 'qa', priority => 9, required_caps => '{gpu}') AS gpu_id \gset

-- The same tasks, in the same order, as claim with queues => ARRAY[queue];
-- each call rolled back, so both see the same tasks.
BEGIN;
SAVEPOINT s;
SELECT string_agg(format('%s/%s/%s/%s/%s', id, attempt, queue, kind, priority), ' ') AS via_queue
  FROM schedq.claim_queue('qa', 'w', n => 4) \gset
ROLLBACK TO s;
SELECT string_agg(format('%s/%s/%s/%s/%s', id, attempt, queue, kind, priority), ' ') AS via_claim
  FROM schedq.claim('w', queues => ARRAY['qa'], n => 4) \gset
ROLLBACK;
SELECT :'via_queue' = :'via_claim' AS same, :'via_queue' NOT LIKE '%/qb/%' AS only_qa;
-- the kinds, in claim order (priority, then run_at)
SELECT kind, priority FROM schedq.claim_queue('qa', 'w', n => 4);

-- caps, as claim's: the task needing gpu only with it.
SELECT count(*) FROM schedq.claim_queue('qa', 'w', n => 10) WHERE id = :gpu_id;
SELECT id = :gpu_id AS gpu, attempt FROM schedq.claim_queue('qa', 'w', caps => '{gpu}');

-- lease, as claim's; the token verifies.
SELECT schedq.submit('leased', queue => 'qc') AS leased_id \gset
SELECT lease_expires_at - now() BETWEEN interval '9 minutes' AND interval '11 minutes' AS lease_ok,
	   id = :leased_id AS leased, schedq.verify_grant(token) AS token
  FROM schedq.claim_queue('qc', 'w', lease => '10 minutes');
SELECT status, claimed_by, attempts, lease FROM schedq.task WHERE id = :leased_id;

-- A paused queue gives nothing.
SELECT schedq.submit('paused', queue => 'qp') AS paused_id \gset
SELECT schedq.pause_queue('qp');
SELECT count(*) FROM schedq.claim_queue('qp', 'w');
SELECT schedq.resume_queue('qp');
SELECT count(*) FROM schedq.claim_queue('qp', 'w');

-- wait: with nothing to claim, no rows once the wait is over.
SELECT count(*) AS claimed, clock_timestamp() - statement_timestamp() >= interval '200 ms' AS waited
  FROM schedq.claim_queue('empty', 'w', wait => '200 ms');
-- with a task there, no wait at all
SELECT schedq.submit('now', queue => 'qn') AS now_id \gset
SELECT id = :now_id AS claimed, clock_timestamp() - statement_timestamp() < interval '10 s' AS at_once
  FROM schedq.claim_queue('qn', 'w', wait => '30 s');

-- Bad input: the errors of claim, and nothing changes.
\set VERBOSITY sqlstate
SELECT schedq.claim_queue(NULL, 'w');
SELECT schedq.claim_queue('qb', NULL);
SELECT schedq.claim_queue('qb', 'w', caps => NULL);
SELECT schedq.claim_queue('qb', 'w', n => 0);
SELECT schedq.claim_queue('qb', 'w', n => 1001);
SELECT schedq.claim_queue('qb', 'w', wait => NULL);
SELECT schedq.claim_queue('qb', 'w', wait => '-1 s');
SELECT schedq.claim_queue('qb', 'w', wait => '2 hours');
SELECT schedq.claim_queue('qb', 'w', lease => '0 s');
SELECT schedq.claim_queue(repeat('q', 256), 'w');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT schedq.claim_queue('qb', 'w', wait => '1 s');
ROLLBACK;
\set VERBOSITY default
SELECT count(*) FROM schedq.task WHERE queue = 'qb' AND status = 'available';

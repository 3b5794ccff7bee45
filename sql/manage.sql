-- Managing tasks: cancel, retry, concurrency limits.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

-- cancel applies to every non-terminal state.
SELECT schedq.submit('running');
SELECT token AS t FROM schedq.claim('w') \gset
SELECT schedq.submit('pending', run_at => now() + interval '1 hour');
SELECT schedq.submit('available');
SELECT id, status FROM schedq.task ORDER BY id;
SELECT schedq.cancel(1) AS running, schedq.cancel(2) AS pending, schedq.cancel(3) AS available;
SELECT id, status, finished_at IS NOT NULL AS finished FROM schedq.task ORDER BY id;
-- Cancelling a running task invalidates its grant.
SELECT schedq.verify_grant(:'t'), schedq.complete(:'t'), schedq.fail(:'t', 'x');
SELECT status FROM schedq.task WHERE id = 1;
-- A terminal task cannot be canceled; an unknown one neither.
SELECT schedq.cancel(1) AS again, schedq.cancel(999) AS unknown;

-- retry: a terminal task runs again with a fresh allowance of attempts;
-- attempt numbers keep counting up.
SELECT schedq.submit('once', max_attempts => 1);  -- id 4
SELECT token AS t FROM schedq.claim('w') \gset
SELECT schedq.fail(:'t', 'broken');
SELECT status, attempts, retry_base FROM schedq.task WHERE id = 4;
SELECT schedq.retry(4);
SELECT status, attempts, retry_base, last_error, finished_at FROM schedq.task WHERE id = 4;
SELECT id, attempt FROM schedq.claim('w') \gset
SELECT :attempt AS second_attempt;
-- The grant from before the retry stays stale.
SELECT schedq.complete(:'t');
-- retry applies only to terminal tasks.
SELECT schedq.retry(4) AS running, schedq.retry(999) AS unknown;
-- Retried canceled tasks with a gate go back to pending.
SELECT schedq.submit('keyed', lock_key => 'k');
SELECT schedq.cancel(5), schedq.retry(5);
SELECT status FROM schedq.task WHERE id = 5;
-- A retry that would give a dedup_key two live tasks is refused.
SELECT schedq.submit('d', dedup_key => 'dk');
SELECT schedq.cancel(6);
SELECT schedq.submit('d', dedup_key => 'dk');
SELECT schedq.retry(6);
SELECT id, status FROM schedq.task WHERE dedup_key = 'dk' ORDER BY id;

-- Concurrency limits are stored now; the promotion loop enforces them.
SELECT schedq.set_concurrency_limit('api', 3);
SELECT schedq.set_concurrency_limit('db', 1);
SELECT schedq.set_concurrency_limit('api', 5);
SELECT * FROM schedq.concurrency_limit ORDER BY key;
SELECT schedq.set_concurrency_limit('db', NULL);
SELECT * FROM schedq.concurrency_limit ORDER BY key;

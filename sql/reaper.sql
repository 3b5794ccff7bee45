-- The reaper: expired leases and timeouts fail the attempt (retried while
-- attempts remain), only on that positive signal; finished tasks past
-- schedq.retention are deleted.  Driven by schedq._reap_once(now).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

CREATE TEMP TABLE m0 AS SELECT * FROM schedq.metrics();
CREATE FUNCTION pg_temp.grew(metric text) RETURNS bigint LANGUAGE sql AS $$
	SELECT n.value - o.value FROM schedq.metrics() n JOIN m0 o USING (name)
	 WHERE name = metric
$$;

-- A lease that has not expired is left alone.
SELECT schedq.submit('job', max_attempts => 2);
SELECT token AS t1 FROM schedq.claim('w', lease => '1 minute') \gset
SELECT schedq._reap_once(now() + interval '59 seconds');
SELECT status, attempts FROM schedq.task WHERE id = 1;
-- An expired lease fails the attempt: retried with backoff.
SELECT schedq._reap_once(now() + interval '61 seconds');
SELECT status, attempts, last_error, claimed_by, lease_expires_at
  FROM schedq.task WHERE id = 1;
SELECT pg_temp.grew('lease_expirations') AS lease_expirations;
-- The expired attempt's grant is stale now.
SELECT schedq.complete(:'t1'), schedq.verify_grant(:'t1');
-- The last attempt's lease expiring fails the task for good.
UPDATE schedq.task SET status = 'available', run_at = now() WHERE id = 1;
SELECT token AS t2 FROM schedq.claim('w', lease => '1 minute') \gset
SELECT schedq._reap_once(now() + interval '2 minutes');
SELECT status, attempts, last_error, finished_at IS NOT NULL AS finished
  FROM schedq.task WHERE id = 1;

-- A completed task is never touched, whatever its old lease said.
SELECT schedq.submit('quick');
SELECT schedq.complete(token) FROM schedq.claim('w', lease => '1 second');
SELECT schedq._reap_once(now() + interval '1 hour');
SELECT status, last_error FROM schedq.task WHERE kind = 'quick';

-- A timeout: the lease is capped at the deadline, even by heartbeats, and
-- an attempt past it fails with "timeout".
SELECT schedq.submit('slow', timeout => '10 seconds', max_attempts => 1);
BEGIN;
SELECT token AS ts FROM schedq.claim('w', lease => '1 hour') \gset
SELECT lease_expires_at = started_at + interval '10 seconds' AS capped,
	   deadline = started_at + interval '10 seconds' AS deadline
  FROM schedq.task WHERE kind = 'slow';
SELECT schedq.heartbeat(:'ts', '1 hour') = started_at + interval '10 seconds' AS still_capped
  FROM schedq.task WHERE kind = 'slow';
COMMIT;
SELECT schedq._reap_once(now() + interval '11 seconds');
SELECT status, last_error FROM schedq.task WHERE kind = 'slow';
SELECT pg_temp.grew('task_timeouts') AS task_timeouts;

-- Retention: finished tasks older than schedq.retention (7 days by
-- default) are deleted; younger ones and live ones stay.  Failed tasks
-- (dead letters) are kept for schedq.failed_retention (30 days by
-- default), each status by its own.
SELECT schedq.submit('old');
SELECT schedq.complete(token) FROM schedq.claim('w') WHERE kind = 'old';
SELECT schedq.submit('dead', max_attempts => 1);
SELECT schedq.fail(token, 'no such mailbox') FROM schedq.claim('w') WHERE kind = 'dead';
SELECT schedq.submit('dropped');
SELECT schedq.cancel(id) FROM schedq.task WHERE kind = 'dropped';
SELECT schedq.submit('live', run_at => now() + interval '1 year');
SELECT count(*) AS tasks FROM schedq.task;
SELECT schedq._reap_once(now() + interval '6 days');
SELECT count(*) AS tasks FROM schedq.task;
SELECT schedq._reap_once(now() + interval '8 days');
SELECT kind, status FROM schedq.task ORDER BY id;
SELECT schedq._reap_once(now() + interval '29 days');
SELECT kind, status FROM schedq.task ORDER BY id;
SELECT schedq._reap_once(now() + interval '31 days');
SELECT kind, status FROM schedq.task ORDER BY id;
-- Retention reads finished tasks through task_finished_idx, whatever the
-- table holds: its plan (generic, the status a parameter) reads no table
-- sequentially.
SELECT pg_stat_force_next_flush();
SELECT seq_scan AS seq0 FROM pg_stat_user_tables
 WHERE relid = 'schedq.task'::regclass \gset
SELECT schedq._reap_once(now() + interval '400 days');
SELECT pg_stat_force_next_flush();
SELECT seq_scan - :seq0 AS seq_scans FROM pg_stat_user_tables
 WHERE relid = 'schedq.task'::regclass;

-- Observability: metrics(), scheduler_status(), queue_stats, worker_status,
-- and claim(wait => ...) returning empty-handed when nothing comes.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

SELECT name FROM schedq.metrics() ORDER BY name;

-- The scheduler of this database is running (the launcher starts it
-- within moments of CREATE EXTENSION: wait for it, 10 s at most), idle
-- because schedq.enabled is off in this suite.
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXIT WHEN EXISTS (SELECT FROM schedq.scheduler_status()
						  WHERE datname = current_database() AND state = 'disabled');
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT datname = current_database() AS this_db, pid > 0 AS has_pid, state
  FROM schedq.scheduler_status() WHERE datname = current_database();

-- metrics() counts the work of this database (from 1.1; TAP 065 shows that
-- another database's work does not move it): the deltas of this file
-- (claim_wakeups left out: an SQL executor's latch may be set by others;
-- direct_declined_* too: with schedq.direct_writes off, each write counts).
CREATE TEMP TABLE m0 AS SELECT * FROM schedq.metrics();
SELECT p.prosrc FROM pg_proc p WHERE p.oid = 'schedq.metrics()'::regprocedure;

SELECT schedq.submit('a', queue => 'mail') FROM generate_series(1, 3);
SELECT schedq.submit('b', queue => 'mail', run_at => now() + interval '1 hour');
SELECT schedq.submit('c', queue => 'reports');
SELECT schedq.pause_queue('idle');
SELECT schedq.complete(token) FROM schedq.claim('w1', queues => '{mail}');
SELECT count(*) FROM schedq.claim('w2', queues => '{reports}');
SELECT name, n.value - o.value AS delta
  FROM schedq.metrics() n JOIN m0 o USING (name)
 WHERE n.value <> o.value AND name <> 'claim_wakeups'
   AND name NOT LIKE 'direct_declined%' ORDER BY name;
SELECT queue, paused, pending, available, running, done, failed, canceled, skipped,
	   oldest_available_age IS NOT NULL AS has_age
  FROM schedq.queue_stats ORDER BY queue;
SELECT worker, running, claims, last_seen IS NOT NULL AS seen
  FROM schedq.worker_status ORDER BY worker;

-- A claim that waits and finds nothing returns no row once the wait ends.
SELECT count(*) FROM schedq.claim('w3', queues => '{nothing}', wait => '20 milliseconds');
-- Waiting needs READ COMMITTED: a transaction snapshot would never see
-- new tasks.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM schedq.claim('w3', wait => '1 second');
ROLLBACK;

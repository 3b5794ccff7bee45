-- test/bench/raw_claim_complete.sql -- raw baseline, one task per cycle.
-- Claim the best available row with SKIP LOCKED (one autocommit
-- transaction), then mark it done (a second one), as a worker would.
-- Run with pgbench -M prepared: variables travel as bind parameters.
UPDATE raw_job
   SET status = 'running', claimed_by = 'w' || :client_id, locked_at = now()
 WHERE id = (SELECT id FROM raw_job
              WHERE status = 'available'
              ORDER BY priority DESC, run_at, id
              LIMIT 1
              FOR UPDATE SKIP LOCKED)
RETURNING id \gset
UPDATE raw_job SET status = 'done' WHERE id = :id;

-- test/bench/raw_complete_and_claim.sql -- raw baseline, one commit per
-- task: one statement (one autocommit transaction) marks the row of the
-- previous cycle done and locks the next with SKIP LOCKED.  The id travels
-- from cycle to cycle in the pgbench variable :id (run.sh passes -D id=0
-- for the first cycle; 0 when nothing was claimed).  Run with pgbench
-- -M prepared.
WITH done AS (
    UPDATE raw_job SET status = 'done' WHERE id = :id AND status = 'running'),
c AS (
    UPDATE raw_job
       SET status = 'running', claimed_by = 'w' || :client_id, locked_at = now()
     WHERE id = (SELECT id FROM raw_job
                  WHERE status = 'available'
                  ORDER BY priority DESC, run_at, id
                  LIMIT 1
                  FOR UPDATE SKIP LOCKED)
    RETURNING id)
SELECT coalesce((SELECT id FROM c), 0) AS id \gset

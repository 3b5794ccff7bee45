-- test/bench/raw_claim10_complete.sql -- raw baseline, batches of 10.
-- Claim up to 10 rows with SKIP LOCKED in one statement (one autocommit
-- transaction), then mark them all done in a second statement.
-- Run with pgbench -M prepared.
WITH c AS (
    UPDATE raw_job
       SET status = 'running', claimed_by = 'w' || :client_id, locked_at = now()
     WHERE id = ANY (ARRAY(SELECT id FROM raw_job
                            WHERE status = 'available'
                            ORDER BY priority DESC, run_at, id
                            LIMIT 10
                            FOR UPDATE SKIP LOCKED))
    RETURNING id)
SELECT coalesce(array_agg(id), '{}') AS ids FROM c \gset
UPDATE raw_job SET status = 'done' WHERE id = ANY (:ids::bigint[]);

-- test/citus/claim_gated.sql -- pgbench script (-M simple): claim_complete.sql
-- on the gated queues g1..g8, for a queue that may be empty for a moment
-- (its next task waits for the per-node promotion pass, passes.sql): the
-- claim always returns one row, id 0 when it took nothing, and the
-- complete of id 0 changes nothing.
\set q random(1, 8)
WITH c AS (SELECT id FROM schedq.task
            WHERE queue = 'g:q' AND status = 'available'
            ORDER BY -(priority::bigint), run_at, id
            LIMIT 1 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE schedq.task t
              SET status = 'running', attempts = t.attempts + 1, claimed_by = 'w:client_id',
                  started_at = now(), lease_expires_at = now() + interval '30 seconds'
            WHERE t.queue = 'g:q' AND t.id = ANY (ARRAY(SELECT c.id FROM c))
           RETURNING t.id, t.attempts)
SELECT coalesce((SELECT id FROM u), 0) AS id, coalesce((SELECT attempts FROM u), 0) AS att \gset
UPDATE schedq.task SET status = 'done', finished_at = now()
 WHERE queue = 'g:q' AND id = :id AND attempts = :att AND status = 'running';

-- test/citus/claim_complete.sql -- pgbench script (-M simple): claim one
-- task of one of 8 queues, then complete it, as two transactions, in the
-- shape Citus routes to one shard (every statement names its queue, the
-- distribution column): the figures' comparison with schedq's own claim
-- and complete (schedq_claim_complete.sql).  The queues must not
-- run dry: a claim that returns no row makes \gset abort the client.
-- Run it with -M simple: Citus refuses a generic plan of this
-- one-statement claim (CTE + UPDATE), even with the queue a parameter.
\set q random(1, 8)
WITH c AS (SELECT id FROM schedq.task
            WHERE queue = 'q:q' AND status = 'available'
            ORDER BY -(priority::bigint), run_at, id
            LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE schedq.task t
   SET status = 'running', attempts = t.attempts + 1, claimed_by = 'w:client_id',
       started_at = now(), lease_expires_at = now() + interval '30 seconds'
 WHERE t.queue = 'q:q' AND t.id = ANY (ARRAY(SELECT c.id FROM c))
RETURNING t.id AS id, t.attempts AS att \gset
UPDATE schedq.task SET status = 'done', finished_at = now()
 WHERE queue = 'q:q' AND id = :id AND attempts = :att AND status = 'running';

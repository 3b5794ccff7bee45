-- test/citus/claim_moved.sql -- pgbench script (-M simple): schedq's own
-- claim of one task and its complete, in one statement, from the queue
-- whose shard moves (mq) or one of q1..q8; a queue may be empty for a
-- moment: then it does nothing.
\set q random(0, 8)
SELECT count(schedq.complete(token)) FROM schedq.claim('w:client_id', queues => ARRAY[CASE WHEN :q = 0 THEN 'mq' ELSE 'q' || :q END]);

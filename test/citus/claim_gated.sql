-- test/citus/claim_gated.sql -- pgbench script (-M simple): schedq's own
-- claim of one task of the gated queues g1..g8 and its complete, in one
-- statement, for a queue that may be empty for a moment (its next task
-- waits for the per-node promotion pass, passes.sql): then it does nothing.
\set q random(1, 8)
SELECT count(schedq.complete(token)) FROM schedq.claim('w:client_id', queues => '{g:q}');

-- test/citus/claim_gated.sql -- pgbench script (-M simple): schedq's own
-- claim of one task of the gated queues g1..g8, then its complete, as two
-- transactions (so that started_at and finished_at bound the time it was
-- claimed); a queue may be empty for a moment (its next task waits for
-- the promotion by its node's scheduler): then it does nothing.
\set q random(1, 8)
SELECT coalesce((SELECT token FROM schedq.claim('w:client_id', queues => '{g:q}')), '') AS token \gset
SELECT CASE WHEN ':token' <> '' THEN schedq.complete(':token') END;

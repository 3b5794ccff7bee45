-- test/bench/schedq_claim_complete.sql -- schedq, one task per cycle.
-- Claim one task (one autocommit transaction), then complete it with the
-- returned token (a second one), as a worker with no-op work would.
-- Run with pgbench -M prepared: the token travels as a bind parameter,
-- so it needs no quoting.  The queue must never run dry during the run:
-- a claim that returns no row makes \gset abort the client.
SELECT token FROM schedq.claim('w' || :client_id, n => 1) \gset
SELECT schedq.complete(:token);

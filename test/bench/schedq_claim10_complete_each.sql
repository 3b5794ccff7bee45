-- test/bench/schedq_claim10_complete_each.sql -- schedq, batches of 10,
-- each task completed by a statement of its own, as the example workers
-- in examples/ do: claim up to 10 tasks (one autocommit transaction),
-- then ten complete calls (ten more).  The queue must hold a multiple
-- of 10 tasks (a missing token is a NULL, which complete refuses).
-- Run with pgbench -M prepared.
SELECT array_agg(token) AS tokens FROM schedq.claim('w' || :client_id, n => 10) \gset
SELECT schedq.complete((:tokens::text[])[1]);
SELECT schedq.complete((:tokens::text[])[2]);
SELECT schedq.complete((:tokens::text[])[3]);
SELECT schedq.complete((:tokens::text[])[4]);
SELECT schedq.complete((:tokens::text[])[5]);
SELECT schedq.complete((:tokens::text[])[6]);
SELECT schedq.complete((:tokens::text[])[7]);
SELECT schedq.complete((:tokens::text[])[8]);
SELECT schedq.complete((:tokens::text[])[9]);
SELECT schedq.complete((:tokens::text[])[10]);

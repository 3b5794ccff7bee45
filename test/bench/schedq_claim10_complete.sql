-- test/bench/schedq_claim10_complete.sql -- schedq, batches of 10.
-- Claim up to 10 tasks in one statement (one autocommit transaction),
-- then complete all the returned tokens in a second statement.
-- Run with pgbench -M prepared.
SELECT coalesce(array_agg(token), '{}') AS tokens
  FROM schedq.claim('w' || :client_id, n => 10) \gset
SELECT count(*)
  FROM unnest(:tokens::text[]) AS t(token)
 CROSS JOIN LATERAL schedq.complete(t.token) AS c(ok)
 WHERE c.ok;

-- test/bench/schedq_claim10_complete_many.sql -- schedq, batches of 10,
-- finished with complete_many: claim up to 10 tasks in one statement (one
-- autocommit transaction), then complete them all with one call (a second
-- one).  Run with pgbench -M prepared.
SELECT coalesce(array_agg(token), '{}') AS tokens
  FROM schedq.claim('w' || :client_id, n => 10) \gset
SELECT schedq.complete_many(:tokens::text[]);

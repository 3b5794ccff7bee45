-- test/bench/schedq_complete_and_claim.sql -- schedq, one commit per task.
-- One complete_and_claim call (one autocommit transaction) finishes the
-- task of the previous call and claims the next: the token travels from
-- call to call in the pgbench variable :tokens, an array of at most one
-- token (run.sh passes -D tokens={} for the first call, and a call that
-- claims nothing passes {} on).  Run with pgbench -M prepared.
SELECT coalesce(array_agg(token), '{}') AS tokens
  FROM schedq.complete_and_claim(:tokens::text[], 'w' || :client_id) \gset

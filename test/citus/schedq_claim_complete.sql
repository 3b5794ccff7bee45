-- test/citus/schedq_claim_complete.sql -- pgbench script (-M simple), one
-- server only: schedq's own claim and complete of one of 8 queues.  The
-- token is substituted as text inside the quotes (pgbench has no :'var').
\set q random(1, 8)
SELECT token FROM schedq.claim('w:client_id', queues => '{q:q}') \gset
SELECT schedq.complete(':token');

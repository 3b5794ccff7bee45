-- test/citus/schedq_claim_complete.sql -- pgbench script (-M simple):
-- schedq's own claim of one task of one of 8 queues, then its complete,
-- as two transactions; on the cluster and on one server.  The token is
-- substituted as text inside the quotes (pgbench has no :'var').  The
-- queues must not run dry: a claim that returns no row makes \gset abort
-- the client.
\set q random(1, 8)
SELECT token FROM schedq.claim('w:client_id', queues => '{q:q}') \gset
SELECT schedq.complete(':token');

-- A grant works from any session, for a worker that is no superuser:
-- heartbeat, complete, complete_many and fail, each the first call of a
-- new session (whose grant-key cache is empty), read the keys as the
-- owner of the schedq tables, as every other query of schedq does.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
DROP ROLE IF EXISTS gs_app;
DROP ROLE IF EXISTS gs_worker;
RESET client_min_messages;
CREATE EXTENSION schedq;
SELECT current_user AS superuser \gset

CREATE ROLE gs_app;
CREATE ROLE gs_worker LOGIN;
GRANT USAGE ON SCHEMA schedq TO gs_app, gs_worker;
GRANT EXECUTE ON FUNCTION schedq.submit TO gs_app;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, schedq.complete,
      schedq.complete_many, schedq.fail, schedq.verify_grant TO gs_worker;
GRANT gs_app TO gs_worker;
SET ROLE gs_app;
SELECT count(schedq.submit('gs', queue => 'gs')) FROM generate_series(1, 5);
RESET ROLE;

\c - gs_worker
SELECT array_agg(token ORDER BY id) AS t
  FROM schedq.claim('w', queues => '{gs}', n => 5) \gset
SELECT (:'t'::text[])[1] AS t1, (:'t'::text[])[2] AS t2,
       (:'t'::text[])[3] AS t3, (:'t'::text[])[4] AS t4,
       (:'t'::text[])[5] AS t5 \gset

\c - gs_worker
SELECT schedq.heartbeat(:'t1') IS NOT NULL AS heartbeat;
\c - gs_worker
SELECT schedq.complete(:'t2') AS complete;
\c - gs_worker
SELECT schedq.complete_many(ARRAY[:'t3']) AS complete_many;
\c - gs_worker
SELECT schedq.fail(:'t4', 'no', permanent => true) AS fail;
\c - gs_worker
SELECT schedq.verify_grant(:'t5') AS verify_grant;

\c - :"superuser"
SELECT kind, status FROM schedq.task WHERE queue = 'gs' ORDER BY id;
DROP EXTENSION schedq CASCADE;
DROP OWNED BY gs_app, gs_worker;
DROP ROLE gs_app;
DROP ROLE gs_worker;

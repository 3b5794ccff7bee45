-- Work grants: a worker claims and finishes another role's tasks without
-- being a member of it, so it can do nothing else as that role.  Who may
-- grant and revoke; the claims of one session see grants and revokes of
-- another as soon as they commit; a worker group; a dropped role.
-- And the monitoring views: every role's tasks without their payloads.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup
GRANT EXECUTE ON FUNCTION pg_temp.err(text) TO PUBLIC;

CREATE ROLE regress_wg_app;
CREATE ROLE regress_wg_other;
CREATE ROLE regress_wg_worker;
CREATE ROLE regress_wg_workers;			-- a group of workers
CREATE ROLE regress_wg_worker2 IN ROLE regress_wg_workers;
CREATE ROLE regress_wg_oncall;
CREATE TABLE public.regress_wg_events (id int);
INSERT INTO public.regress_wg_events VALUES (1);
GRANT ALL ON public.regress_wg_events TO regress_wg_app;

-- The roles of docs/security.md#roles.
GRANT USAGE ON SCHEMA schedq TO regress_wg_app, regress_wg_other,
	regress_wg_worker, regress_wg_workers, regress_wg_oncall;
GRANT EXECUTE ON FUNCTION schedq.submit, schedq.cancel, schedq.retry
	TO regress_wg_app, regress_wg_other;
GRANT SELECT ON schedq.task TO regress_wg_app, regress_wg_other;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, schedq.progress,
	schedq.complete, schedq.fail, schedq.revoke_work
	TO regress_wg_worker, regress_wg_workers;
GRANT SELECT ON schedq.work_grant TO regress_wg_app, regress_wg_worker;
GRANT SELECT ON schedq.all_tasks, schedq.all_queue_stats,
	schedq.all_worker_status, schedq.all_schedules TO regress_wg_oncall;
GRANT EXECUTE ON FUNCTION schedq.metrics, schedq.scheduler_status TO regress_wg_oncall;

SET ROLE regress_wg_app;
SELECT schedq.submit('app-1', payload => '{"card": "4242"}') AS app1 \gset
SELECT schedq.submit('app-2');
SET ROLE regress_wg_other;
SELECT schedq.submit('other-1');

-- Without a grant and without membership, a worker gets nothing.
SET ROLE regress_wg_worker;
SELECT count(*) FROM schedq.claim('w', n => 10);

-- The submitter cannot grant: grant_work is an admin's.
SET ROLE regress_wg_app;
SELECT pg_temp.err($$SELECT schedq.grant_work('regress_wg_worker')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION schedq.grant_work, schedq.revoke_work
	TO regress_wg_app, regress_wg_other;

-- A role grants work on its own tasks, never on another's.
SET ROLE regress_wg_app;
SELECT schedq.grant_work('regress_wg_worker');
SELECT schedq.grant_work('regress_wg_worker');
SELECT pg_temp.err($$SELECT schedq.grant_work('regress_wg_worker', 'regress_wg_other')$$);
SELECT pg_temp.err($$SELECT schedq.grant_work('regress_wg_app')$$);
SELECT pg_temp.err($$SELECT schedq.grant_work(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.grant_work(4294967295::oid::regrole)$$);
SELECT worker, owner, granted_by FROM schedq.work_grant;

-- The worker claims and finishes the app's tasks, and only those ...
-- (as a session of its own: SET ROLE is checked against the session's
-- user)
RESET ROLE;
SET SESSION AUTHORIZATION regress_wg_worker;
SELECT kind, payload, schedq.progress(token, 50) IS NOT NULL AS progress,
	   schedq.complete(token) FROM schedq.claim('w', n => 10) ORDER BY id;
-- ... and cannot act as the app anywhere else: not on its table, not by
-- SET ROLE, not by submitting as it, not by reading its tasks.
SELECT pg_temp.err($$DELETE FROM public.regress_wg_events$$);
SELECT pg_temp.err($$SET ROLE regress_wg_app$$);
SELECT pg_temp.err($$SELECT schedq.submit('as-app')$$);
SELECT pg_temp.err($$SELECT count(*) FROM schedq.task$$);
SELECT pg_temp.err($$SELECT schedq.cancel($$ || :app1 || $$)$$);
SELECT pg_temp.err($$SELECT schedq.grant_work('regress_wg_worker', 'regress_wg_other')$$);
SELECT worker, owner FROM schedq.work_grant;
RESET SESSION AUTHORIZATION;
SELECT count(*) AS app_rows FROM public.regress_wg_events;
SELECT kind, status FROM schedq.task ORDER BY id;

-- Claims see a revoke, and a grant, as soon as they commit, and never
-- a grant that rolled back.
SET ROLE regress_wg_app;
SELECT schedq.submit('app-3');
SELECT schedq.revoke_work('regress_wg_worker');
SET ROLE regress_wg_worker;
SELECT count(*) FROM schedq.claim('w');
SET ROLE regress_wg_app;
BEGIN;
SELECT schedq.grant_work('regress_wg_worker');
ROLLBACK;
SET ROLE regress_wg_worker;
SELECT count(*) FROM schedq.claim('w');
SET ROLE regress_wg_app;
SELECT schedq.grant_work('regress_wg_worker');
SET ROLE regress_wg_worker;
SELECT kind, schedq.complete(token) FROM schedq.claim('w');

-- The worker may give up its grant; revoking what is not there is false.
SELECT schedq.revoke_work('regress_wg_worker', 'regress_wg_app');
SELECT schedq.revoke_work('regress_wg_worker', 'regress_wg_app');
SELECT pg_temp.err($$SELECT schedq.revoke_work('regress_wg_workers', 'regress_wg_other')$$);
RESET ROLE;

-- A grant to a group reaches its members, and leaves with the membership.
SET ROLE regress_wg_app;
SELECT schedq.submit('app-4');
SELECT schedq.grant_work('regress_wg_workers');
SET ROLE regress_wg_worker2;
SELECT kind, schedq.complete(token) FROM schedq.claim('w');
RESET ROLE;
SET ROLE regress_wg_app;
SELECT schedq.submit('app-5');
RESET ROLE;
REVOKE regress_wg_workers FROM regress_wg_worker2;
GRANT USAGE ON SCHEMA schedq TO regress_wg_worker2;
GRANT EXECUTE ON FUNCTION schedq.claim TO regress_wg_worker2;
SET ROLE regress_wg_worker2;
SELECT count(*) FROM schedq.claim('w');
RESET ROLE;

-- Membership still works (it is the owner's privileges), with or
-- without a grant.
GRANT regress_wg_other TO regress_wg_worker;
SET ROLE regress_wg_worker;
SELECT kind FROM schedq.claim('w');
RESET ROLE;
REVOKE regress_wg_other FROM regress_wg_worker;

-- An admin (BYPASSRLS) grants for any role.
CREATE ROLE regress_wg_admin BYPASSRLS;
GRANT USAGE ON SCHEMA schedq TO regress_wg_admin;
GRANT EXECUTE ON FUNCTION schedq.grant_work TO regress_wg_admin;
SET ROLE regress_wg_admin;
SELECT schedq.grant_work('regress_wg_worker', 'regress_wg_other');
RESET ROLE;
SELECT worker, owner, granted_by FROM schedq.work_grant ORDER BY 1, 2;

-- Monitoring: every role's tasks, counts, workers and schedules, without
-- payloads or results; nothing of the tables themselves.
SET ROLE regress_wg_oncall;
SELECT kind, owner, status, progress FROM schedq.all_tasks ORDER BY id;
SELECT queue, pending, available, running, done FROM schedq.all_queue_stats;
SELECT worker, running, claims FROM schedq.all_worker_status;
SELECT count(*) FROM schedq.all_schedules;
SELECT pg_temp.err($$SELECT payload FROM schedq.all_tasks$$);
SELECT pg_temp.err($$SELECT payload FROM schedq.task$$);
SELECT pg_temp.err($$SELECT count(*) FROM schedq.task$$);
SELECT count(*) > 0 AS metrics FROM schedq.metrics();
SELECT pg_temp.err($$SELECT schedq.cancel(1)$$);
RESET ROLE;

DROP TABLE public.regress_wg_events;
DROP EXTENSION schedq;
DROP OWNED BY regress_wg_admin, regress_wg_app, regress_wg_other,
	regress_wg_worker, regress_wg_workers, regress_wg_worker2,
	regress_wg_oncall;
DROP ROLE regress_wg_admin, regress_wg_app, regress_wg_other, regress_wg_worker,
	regress_wg_workers, regress_wg_worker2, regress_wg_oncall;

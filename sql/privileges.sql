-- Privileges: PUBLIC gets nothing; the README's GRANTs make submitters,
-- workers and admins; a role sees and changes only its own tasks unless
-- granted more; the grant secret is for superusers only.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup
GRANT EXECUTE ON FUNCTION pg_temp.err(text) TO PUBLIC;

CREATE ROLE regress_schedq_app;
CREATE ROLE regress_schedq_other;
CREATE ROLE regress_schedq_worker;
CREATE ROLE regress_schedq_admin BYPASSRLS;

-- Without grants a role can do nothing.
SET ROLE regress_schedq_app;
SELECT pg_temp.err($$SELECT schedq.submit('x')$$);
SELECT pg_temp.err($$SELECT count(*) FROM schedq.task$$);
RESET ROLE;

-- Submitter.
GRANT USAGE ON SCHEMA schedq TO regress_schedq_app, regress_schedq_other;
GRANT EXECUTE ON FUNCTION schedq.submit, schedq.submit_many, schedq.submit_sql,
	schedq.cancel, schedq.retry TO regress_schedq_app, regress_schedq_other;
GRANT SELECT ON schedq.task, schedq.run TO regress_schedq_app, regress_schedq_other;
-- Worker: may work on the tasks of the roles it is a member of.
GRANT USAGE ON SCHEMA schedq TO regress_schedq_worker;
GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, schedq.complete,
	schedq.complete_many, schedq.fail, schedq.verify_grant TO regress_schedq_worker;
-- Admin: everything, on every task (BYPASSRLS).
GRANT USAGE ON SCHEMA schedq TO regress_schedq_admin;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA schedq TO regress_schedq_admin;
GRANT SELECT ON ALL TABLES IN SCHEMA schedq TO regress_schedq_admin;
REVOKE SELECT ON schedq.grant_key FROM regress_schedq_admin;

SET ROLE regress_schedq_app;
SELECT schedq.submit('app-1'), schedq.submit('app-2'), schedq.submit_sql('SELECT 1');
SELECT id, kind, owner FROM schedq.task ORDER BY id;
-- A submitter cannot write the table directly, nor claim.
SELECT pg_temp.err($$UPDATE schedq.task SET status = 'done'$$);
SELECT pg_temp.err($$SELECT schedq.claim('me')$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', 1)$$);
SELECT pg_temp.err($$SELECT secret FROM schedq.grant_key$$);

SET ROLE regress_schedq_other;
SELECT schedq.submit('other-1');
-- Each role sees only its own tasks ...
SELECT id, kind, owner FROM schedq.task ORDER BY id;
-- ... and cannot cancel or retry another's.
SELECT pg_temp.err($$SELECT schedq.cancel(1)$$);
SELECT pg_temp.err($$SELECT schedq.retry(1)$$);
-- dedup keys are per role: another role's key neither blocks a submit nor
-- shows that it exists, and its task is not touched.
RESET ROLE;
SET ROLE regress_schedq_app;
SELECT schedq.submit('d', dedup_key => 'shared') AS app_task \gset
SET ROLE regress_schedq_other;
SELECT schedq.submit('d', dedup_key => 'shared') <> :app_task AS own_task;
SELECT schedq.submit('d', dedup_key => 'shared') = max(id) AS deduplicated
  FROM schedq.task WHERE dedup_key = 'shared';
SELECT schedq.cancel(max(id)) FROM schedq.task WHERE dedup_key = 'shared';
RESET ROLE;

-- A worker gets only the tasks of roles it has the privileges of.
SET ROLE regress_schedq_worker;
SELECT count(*) FROM schedq.claim('w');
RESET ROLE;
GRANT regress_schedq_app TO regress_schedq_worker;
SET ROLE regress_schedq_worker;
SELECT id, kind FROM schedq.claim('w', n => 10);
SELECT id, kind FROM schedq.claim('w', caps => '{sql}');
RESET ROLE;

-- The admin sees every task and may cancel any.
SET ROLE regress_schedq_admin;
SELECT id, kind, owner, status FROM schedq.task ORDER BY id;
SELECT schedq.cancel(4);
SELECT pg_temp.err($$SELECT secret FROM schedq.grant_key$$);
RESET ROLE;

-- Roles cannot read the secret through any function either: none
-- returns it, and no function is SECURITY DEFINER.
SELECT count(*) FROM pg_proc
 WHERE pronamespace = 'schedq'::regnamespace AND prosecdef;

-- Runs and schedules belong to their creators too.
GRANT EXECUTE ON FUNCTION schedq.create_run, schedq.cancel_run, schedq.schedule,
	schedq.schedule_sql, schedq.unschedule TO regress_schedq_app, regress_schedq_other;
GRANT SELECT ON schedq.periodic TO regress_schedq_app, regress_schedq_other;
SET ROLE regress_schedq_app;
SELECT schedq.create_run('app-run') AS app_run \gset
SELECT schedq.schedule('app-nightly', '@daily', 'report');
SELECT schedq.schedule_sql('app-sql', '@hourly', 'SELECT 1');
SELECT name, owner FROM schedq.periodic ORDER BY name;
SET ROLE regress_schedq_other;
SELECT count(*) AS visible_schedules FROM schedq.periodic;
SELECT pg_temp.err(format('SELECT schedq.cancel_run(%s)', :app_run));
SELECT pg_temp.err(format('SELECT schedq.submit(%L, run_id => %s)', 'sneak', :app_run));
SELECT pg_temp.err($$SELECT schedq.unschedule('app-nightly')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('app-sql', '@hourly', 'mine')$$);
SELECT pg_temp.err($$SELECT schedq.schedule_sql('app-sql', '@hourly', 'DROP TABLE x')$$);
RESET ROLE;
SELECT name, owner, payload FROM schedq.periodic ORDER BY name;
SELECT status FROM schedq.run WHERE id = :app_run;

-- A hostile search_path cannot hijack the functions' queries: an
-- operator or a function that shadows pg_catalog's is never used, even
-- when the caller puts its schema first.
CREATE SCHEMA evil;
GRANT USAGE, CREATE ON SCHEMA evil TO regress_schedq_app;
SET ROLE regress_schedq_app;
CREATE FUNCTION evil.eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'hijacked by %', current_user; END $$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.eq);
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'hijacked now()'; END $$;
SET search_path = evil, pg_catalog, public;
SELECT 1::bigint = 1::bigint;   -- the caller's own queries do see evil.=
SELECT schedq.submit('safe') > 0 AS submitted;
SELECT schedq.cancel(id) FROM schedq.task WHERE kind = 'safe';
RESET search_path;
RESET ROLE;
SET search_path = evil, pg_catalog, public;
SELECT count(*) FROM schedq.claim('admin', n => 100);
RESET search_path;
DROP SCHEMA evil CASCADE;

DROP EXTENSION schedq;
DROP OWNED BY regress_schedq_app, regress_schedq_other, regress_schedq_worker,
	regress_schedq_admin;
DROP ROLE regress_schedq_app, regress_schedq_other, regress_schedq_worker,
	regress_schedq_admin;

-- schedq_cron: pg_cron's SQL API on schedq's periodic tasks.
\i sql/include/setup.sql
CREATE EXTENSION schedq_cron;
SET cron.timezone = 'UTC';
SET timezone = 'UTC';
\set SHOW_CONTEXT never

-- the schedule forms, and what schedq runs for them
SELECT cron.schedule('*/5 * * * *', 'SELECT 1') AS five;
SELECT cron.schedule('secs', '10 seconds', 'SELECT 2');
SELECT cron.schedule('last', '0 11 $ * *', 'SELECT 3');
SELECT cron.schedule('boot', '@reboot', 'SELECT 4');
SELECT cron.schedule('hourly', '@hourly', 'SELECT 5');
SELECT jobid, jobname, schedule, command, database = current_database() AS here,
	   username = current_user AS mine, active FROM cron.job ORDER BY jobid;
SELECT name, schedule, timezone, enabled, kind, max_attempts, lock_key, owner = current_user::regrole AS mine
  FROM schedq.periodic ORDER BY name;
SELECT next_run = 'infinity' AS reboot_waits_for_a_start FROM schedq.periodic WHERE name = 'cron.job.4';

-- '$' is the last day of the month; a day field starting with '*' leaves
-- the other to decide (pg_cron's rule); two restricted fields match either
SELECT schedq.next_runs('0 11 $ * *', after => '2027-02-01 00:00Z', n => 3);
SELECT schedq.next_runs('0 0 */2 * 1', after => '2027-03-01 00:00Z', n => 3);
SELECT schedq.next_runs('0 0 1 * 1', after => '2027-03-01 00:00Z', n => 3);
SELECT schedq.next_runs('0 0 $ * 5', after => '2027-01-26 00:00Z', n => 3);
SELECT schedq.next_runs('@restart');

-- replacing by name keeps the id; unschedule by name and by id
SELECT cron.schedule('secs', '20 seconds', 'SELECT 22');
SELECT schedule, command FROM cron.job WHERE jobname = 'secs';
SELECT schedule FROM schedq.periodic WHERE name = 'cron.job.2';
SELECT cron.unschedule('secs');
SELECT cron.unschedule(1);
SELECT count(*) FROM schedq.periodic WHERE name IN ('cron.job.1', 'cron.job.2');

-- pg_cron's errors
\set VERBOSITY default
SELECT cron.schedule('* * * *', 'SELECT 1');
SELECT cron.schedule('60 seconds', 'SELECT 1');
SELECT cron.schedule('0 seconds', 'SELECT 1');
SELECT cron.schedule('5 secondc', 'SELECT 1');
SELECT cron.schedule('0 11 $foo * *', 'SELECT 1');
SELECT cron.schedule('@restar', 'SELECT 1');
SELECT cron.schedule('*/60 10 * * *', 'SELECT 1');
SELECT cron._error('XX', 'no');
SELECT cron.schedule(NULL, '* * * * *', 'SELECT 1');
SELECT cron.schedule('* * * * *', NULL);
SELECT cron.unschedule('no_such_job');
SELECT cron.unschedule(12345);
SELECT cron.alter_job(3);
SELECT cron.alter_job(3, database => 'no_such_db');
SELECT cron.alter_job(12345, command => 'SELECT 1');
SELECT cron.schedule_in_database('x', '* * * * *', 'SELECT 1', current_database(), 'no_such_role');
\set VERBOSITY terse
SELECT count(*) FROM cron.job;

-- alter_job: schedule, command, active
SELECT cron.alter_job(3, schedule => '0 12 $ * *', command => 'SELECT 33', active => false);
SELECT schedule, command, active FROM cron.job WHERE jobid = 3;
SELECT schedule, payload->>'command' AS command, enabled FROM schedq.periodic WHERE name = 'cron.job.3';

-- another database: its existence and the CONNECT privilege checked
CREATE ROLE cron_alice LOGIN;
CREATE ROLE cron_bob LOGIN;
CREATE ROLE cron_nologin;
GRANT USAGE ON SCHEMA cron TO cron_alice, cron_bob;
GRANT EXECUTE ON FUNCTION cron.alter_job TO cron_bob;
\set VERBOSITY default
REVOKE CONNECT ON DATABASE template0 FROM PUBLIC;
SELECT cron.schedule_in_database('x', '* * * * *', 'SELECT 1', 'template0', 'cron_alice');
GRANT CONNECT ON DATABASE template0 TO PUBLIC;
SELECT cron.schedule_in_database('x', '* * * * *', 'SELECT 1', 'template1', 'cron_alice', false) IS NOT NULL AS scheduled;
-- a job of another database: a run here starts a worker there (cron._run_elsewhere)
SELECT j.database, p.payload->>'command' AS command, p.owner, p.enabled
  FROM cron.job j JOIN schedq.periodic p ON p.name = 'cron.job.' || j.jobid WHERE j.jobname = 'x';
SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = 'x';
SELECT cron.schedule_in_database('x', '* * * * *', 'SELECT 1', current_database(), 'cron_nologin');
\set VERBOSITY terse

-- a job starts with the search_path its user would get in a session here
ALTER ROLE cron_alice IN DATABASE regression SET search_path = app, public;
-- a superuser schedules for another role: the job runs as that role
SELECT cron.schedule_in_database('alices', '0 6 * * *', 'SELECT 6', current_database(), 'cron_alice') AS alices \gset
SELECT owner, payload->>'command' AS command FROM schedq.periodic WHERE name = 'cron.job.' || :alices;

-- row-level ownership: a role sees and changes only its jobs
SET ROLE cron_bob;
SELECT cron.schedule('bobs', '0 7 * * *', 'SELECT 7') AS bobs \gset
SELECT jobname, username FROM cron.job ORDER BY jobid;
SELECT cron.unschedule(:alices);
SELECT cron.unschedule('alices');
SELECT cron.alter_job(:alices, command => 'SELECT 0');
SELECT cron.alter_job(:bobs, command => 'SELECT 77');
SELECT cron.alter_job(:bobs, username => 'cron_alice');
SELECT cron.schedule_in_database('y', '* * * * *', 'SELECT 1', current_database(), 'cron_alice');
UPDATE cron.job SET username = 'cron_alice' WHERE jobid = :bobs;
-- jobids come from the sequence: no role but a superuser picks one
INSERT INTO cron.job (jobid, schedule, command) VALUES (:bobs + 1000, '@daily', 'SELECT 1');
UPDATE cron.job SET jobid = :bobs + 1000 WHERE jobid = :bobs;
SELECT cron.set_job_options(:alices, priority => 5);
SELECT cron.run_job(:alices);
SELECT jobid = :bobs AS bobs, command FROM cron.job;
RESET ROLE;
SELECT owner, payload->>'command' AS command FROM schedq.periodic WHERE name = 'cron.job.' || :bobs;

-- the superuser changes username
SELECT cron.alter_job(:bobs, username => 'cron_alice');
SELECT owner FROM schedq.periodic WHERE name = 'cron.job.' || :bobs;

-- extras: time zone, priority, attempts, timeout per job; run now
SELECT cron.set_job_options(:alices, timezone => 'Europe/Berlin', priority => 7,
							max_attempts => 3, timeout => '5 minutes');
SELECT timezone, priority, max_attempts, timeout FROM schedq.periodic WHERE name = 'cron.job.' || :alices;
SELECT cron.set_job_options(:alices, timezone => 'Mars/Olympus');
SELECT cron.set_job_options(:alices, max_attempts => 0);
SELECT cron.run_job(:alices);
SELECT next_run <= now() AS due_now FROM schedq.periodic WHERE name = 'cron.job.' || :alices;
SELECT schedq._periodic_once(now()) >= 1 AS fired;
SELECT jobid = :alices AS alices, username, command, status, return_message FROM cron.job_run_details;
SELECT jobname, last_status, failed FROM cron.job_health WHERE jobid = :alices;
SET ROLE cron_bob;
SELECT count(*) FROM cron.job_run_details;
RESET ROLE;
-- a task of another role under a job's lock key is no run of the job
GRANT USAGE ON SCHEMA schedq TO cron_bob;
GRANT EXECUTE ON FUNCTION schedq.submit TO cron_bob;
SET ROLE cron_bob;
SELECT schedq.submit('spoof', lock_key => 'cron.job.' || :alices) > 0 AS submitted;
RESET ROLE;
SELECT jobid = :alices AS alices, username, command, status FROM cron.job_run_details ORDER BY runid;
REVOKE EXECUTE ON FUNCTION schedq.submit FROM cron_bob;
REVOKE USAGE ON SCHEMA schedq FROM cron_bob;

-- a job runs as the role of its username exactly: a name that reads as
-- another role's as an identifier (case, quotes, spaces) is its own role
CREATE ROLE cron_carol LOGIN;
CREATE ROLE "CRON_CAROL" LOGIN;
CREATE ROLE "cron_carol " LOGIN;
CREATE ROLE """cron_carol""" LOGIN;
GRANT USAGE ON SCHEMA cron TO "CRON_CAROL", "cron_carol ", """cron_carol""";
SET ROLE "CRON_CAROL";
SELECT cron.schedule('upper', '0 8 * * *', 'SELECT 8') AS upper_job \gset
SET ROLE "cron_carol ";
SELECT cron.schedule('spaced', '0 8 * * *', 'SELECT 8') AS spaced_job \gset
SET ROLE """cron_carol""";
SELECT cron.schedule('quoted', '0 8 * * *', 'SELECT 8') AS quoted_job \gset
RESET ROLE;
SELECT p.name = 'cron.job.' || j.jobid AS its_own, j.jobname, j.username,
	   p.owner::oid = (SELECT oid FROM pg_roles WHERE rolname = j.username) AS owner_is_username
  FROM cron.job j JOIN schedq.periodic p ON p.name = 'cron.job.' || j.jobid
 WHERE j.jobid IN (:upper_job, :spaced_job, :quoted_job) ORDER BY j.jobid;
SELECT count(*) FROM schedq.periodic WHERE owner = 'cron_carol'::regrole;
-- a superuser's row naming no role is refused as pg_cron refuses it
\set VERBOSITY default
INSERT INTO cron.job (schedule, command, username) VALUES ('@daily', 'SELECT 1', 'no_such_role');
\set VERBOSITY terse
SELECT cron.unschedule(:upper_job), cron.unschedule(:spaced_job), cron.unschedule(:quoted_job);
DROP OWNED BY "CRON_CAROL", "cron_carol ", """cron_carol""";
DROP ROLE cron_carol, "CRON_CAROL", "cron_carol ", """cron_carol""";

-- a restore's COPY of cron.job leaves schedq's schedules as restored; a
-- query that only begins with a COPY does not: what follows it in the same
-- query string changes the schedules as any change does
SET ROLE cron_bob;
SELECT cron.schedule('copied', '0 9 * * *', 'SELECT 9') AS copied \gset
SELECT cron.schedule('copied2', '0 9 * * *', 'SELECT 9') AS copied2 \gset
COPY cron.job (jobname) TO STDOUT \; DELETE FROM cron.job WHERE jobid = :copied;
COPY cron.job (jobname) TO STDOUT \; UPDATE cron.job SET command = 'SELECT 99' WHERE jobid = :copied2;
COPY cron.job (jobname) TO STDOUT \; INSERT INTO cron.job (schedule, command) VALUES ('not a schedule', 'SELECT 1');
RESET ROLE;
SELECT count(*) FROM schedq.periodic WHERE name = 'cron.job.' || :copied;
SELECT payload->>'command' LIKE '%; SELECT 99' AS changed FROM schedq.periodic WHERE name = 'cron.job.' || :copied2;
SELECT count(*) FROM cron.job WHERE schedule = 'not a schedule';
-- a superuser's COPY FROM followed by another statement is no restore
COPY cron.job (jobid, schedule, command, username) FROM STDIN \; SELECT 1;
600	@daily	SELECT 600	cron_bob
\.
SELECT count(*) FROM schedq.periodic WHERE name = 'cron.job.600';
SELECT cron.unschedule(:copied2), cron.unschedule(600);

-- internal functions a role may call: those the API calls as the caller,
-- and _prune, which a job's run calls as its user (and which does nothing
-- elsewhere); the triggers' and those only they call are not granted
SELECT p.proname, has_function_privilege('cron_bob', p.oid, 'EXECUTE') AS bob_may
  FROM pg_proc p WHERE p.pronamespace = 'cron'::regnamespace AND p.proname LIKE '\_%'
 ORDER BY p.proname;

-- the importer takes a copy of pg_cron's cron.job
CREATE TABLE pg_temp.pgcron_job (jobid bigint, schedule text, command text, nodename text,
	nodeport integer, database text, username text, active boolean, jobname text);
INSERT INTO pg_temp.pgcron_job VALUES
	(100, '*/10 * * * *', 'SELECT 100', 'localhost', 5432, current_database(), 'cron_alice', true, 'imported'),
	(101, '1 seconds', 'SELECT 101', 'localhost', 5432, current_database(), 'cron_bob', false, NULL),
	(102, '0 0 * * *', 'SELECT 102', 'localhost', 5432, 'elsewhere', 'cron_bob', true, NULL);
SELECT cron.import_pg_cron('pg_temp.pgcron_job', start_after => '2030-01-01 00:00:30Z');
SELECT jobid, jobname, schedule, username, active FROM cron.job WHERE jobid >= 100 ORDER BY jobid;
SELECT name, schedule, owner, enabled, next_run FROM schedq.periodic WHERE name IN ('cron.job.100', 'cron.job.101') ORDER BY name;
SELECT cron.schedule('after import', '@daily', 'SELECT 1') > 101 AS ids_go_on;
SET ROLE cron_bob;
SELECT cron.import_pg_cron('pg_temp.pgcron_job');
RESET ROLE;
-- all_databases: the jobs of other databases too, to run there; a database
-- that does not exist is refused, and nothing is imported
DELETE FROM pg_temp.pgcron_job WHERE jobid < 102;
INSERT INTO pg_temp.pgcron_job VALUES
	(103, '0 1 * * *', 'SELECT 103', 'localhost', 5432, 'template1', 'cron_bob', false, 'far');
SELECT cron.import_pg_cron('pg_temp.pgcron_job', all_databases => true);
SELECT count(*) FROM cron.job WHERE jobid = 103;
DELETE FROM pg_temp.pgcron_job WHERE jobid = 102;
SELECT cron.import_pg_cron('pg_temp.pgcron_job', all_databases => true);
SELECT j.jobid, j.database, p.payload->>'command' AS command, p.owner, p.enabled
  FROM cron.job j JOIN schedq.periodic p ON p.name = 'cron.job.' || j.jobid WHERE j.jobid = 103;
SELECT cron.unschedule(103);

-- a row written directly is checked as schedule_in_database checks: a
-- database that does not exist, or one the job's user may not connect to,
-- is refused (t/028 restores into a database of another name)
INSERT INTO cron.job (jobid, schedule, command, database) VALUES (500, '@daily', 'SELECT 500', 'elsewhere');
REVOKE CONNECT ON DATABASE template1 FROM PUBLIC;
INSERT INTO cron.job (jobid, schedule, command, database, username) VALUES (500, '@daily', 'SELECT 500', 'template1', 'cron_alice');
GRANT CONNECT ON DATABASE template1 TO PUBLIC;
SELECT database = current_database() AS here FROM cron.job WHERE jobid = 500;
SELECT count(*) FROM schedq.periodic WHERE name = 'cron.job.500';

-- dropping the extension removes its jobs' schedules; a failed drop keeps them
SELECT count(*) FROM schedq.periodic;
BEGIN;
DROP EXTENSION schedq_cron;
SELECT count(*) FROM schedq.periodic;
ROLLBACK;
SELECT count(*) FROM schedq.periodic;
SET ROLE cron_bob;
DROP EXTENSION schedq_cron;
RESET ROLE;
SELECT count(*) FROM schedq.periodic;
DROP EXTENSION schedq_cron;
SELECT count(*) FROM schedq.periodic;
SELECT count(*) FROM pg_namespace WHERE nspname = 'cron';
ALTER ROLE cron_alice IN DATABASE regression RESET search_path;
DROP OWNED BY cron_alice, cron_bob;
DROP ROLE cron_alice, cron_bob, cron_nologin;

/* sql/schedq_cron--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION schedq_cron" to load this file. \quit

--
-- schedq_cron: pg_cron 1.6's SQL API in schema cron, on schedq's periodic
-- tasks and SQL executor.  cron.job is the jobs' own table (row-level
-- security: a role sees and changes its own rows, as in pg_cron); a
-- trigger keeps one schedq periodic task per job, named cron.job.<jobid>,
-- owned by the job's username, its tasks run by the SQL executor under
-- the exclusive key cron.job.<jobid> (never twice at once).
--

-- pg_cron's schema: made here, so that it goes with the extension (and
-- CREATE EXTENSION fails where pg_cron's schema cron is).
CREATE SCHEMA cron;
COMMENT ON SCHEMA cron IS 'schedq_cron: pg_cron''s SQL API on schedq';

CREATE SEQUENCE cron.jobid_seq;

CREATE TABLE cron.job (
	jobid bigint PRIMARY KEY DEFAULT pg_catalog.nextval('cron.jobid_seq'),
	schedule text NOT NULL,
	command text NOT NULL,
	nodename text NOT NULL DEFAULT 'localhost',
	nodeport integer NOT NULL DEFAULT coalesce(pg_catalog.inet_server_port(), pg_catalog.current_setting('port')::integer),
	database text NOT NULL DEFAULT pg_catalog.current_database(),
	username text NOT NULL DEFAULT CURRENT_USER,
	active boolean NOT NULL DEFAULT true,
	jobname text,
	CONSTRAINT jobname_username_uniq UNIQUE (jobname, username)
);
ALTER SEQUENCE cron.jobid_seq OWNED BY cron.job.jobid;
COMMENT ON TABLE cron.job IS 'pg_cron''s jobs: one schedq periodic task each, named cron.job.<jobid>';
ALTER TABLE cron.job ENABLE ROW LEVEL SECURITY;
CREATE POLICY cron_job_policy ON cron.job
	USING (username OPERATOR(pg_catalog.=) CURRENT_USER);

-- What pg_cron has not: per job time zone, priority, attempts, timeout and
-- how much of its history to keep.
CREATE TABLE cron.job_options (
	jobid bigint PRIMARY KEY REFERENCES cron.job ON DELETE CASCADE ON UPDATE CASCADE,
	timezone text,
	priority integer NOT NULL DEFAULT 0,
	max_attempts integer NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
	timeout interval,
	keep_runs integer CHECK (keep_runs >= 0),
	keep_for interval CHECK (keep_for >= interval '0'),
	errors_only boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE cron.job_options IS 'schedq_cron''s options of a job: time zone, priority, attempts, timeout, history kept';
ALTER TABLE cron.job_options ENABLE ROW LEVEL SECURITY;
CREATE POLICY cron_job_options_policy ON cron.job_options
	USING (EXISTS (SELECT 1 FROM cron.job j
				   WHERE j.jobid OPERATOR(pg_catalog.=) job_options.jobid));

-- A job's id comes from the sequence and its username from row security:
-- only a superuser writes jobid (import_pg_cron) or changes username
-- (alter_job), so no role can take ids ahead of others' cron.schedule.
GRANT SELECT, DELETE ON cron.job TO PUBLIC;
GRANT INSERT (schedule, command, nodename, nodeport, database, username, active, jobname)
	ON cron.job TO PUBLIC;
GRANT UPDATE (schedule, command, nodename, nodeport, database, active, jobname)
	ON cron.job TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON cron.job_options TO PUBLIC;
GRANT USAGE ON SEQUENCE cron.jobid_seq TO PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('cron.job', '');
SELECT pg_catalog.pg_extension_config_dump('cron.job_options', '');
SELECT pg_catalog.pg_extension_config_dump('cron.jobid_seq', '');

-- Errors as pg_cron raises them: its messages and hints, no context.
CREATE FUNCTION cron._error(sqlstate text, message text, detail text DEFAULT NULL,
							hint text DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE
AS '$libdir/schedq', 'schedq_cron_raise_error';

--
-- Schedules: pg_cron's forms as schedq's.
--
CREATE FUNCTION cron._schedq_schedule(schedule text)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m text[];
	fields text[];
	detail text;
BEGIN
	IF schedule IS NULL THEN
		PERFORM cron._error('22004', 'schedule can not be NULL', NULL, NULL);
	END IF;
	-- pg_cron's interval form: "[1-59] seconds", counted on a grid
	m := regexp_match(schedule, '^\s*([0-9]{1,2})\s*seconds?\s*$', 'i');
	IF m IS NOT NULL AND m[1]::integer BETWEEN 1 AND 59 THEN
		RETURN format('@every %s seconds', m[1]::integer);
	END IF;
	IF schedule ~* '^\s*-?[0-9]+\s*secon' OR schedule ~* '^\s*@every'
	   OR length(schedule) > 1000 THEN
		detail := 'The interval form takes 1 to 59 seconds.';
	ELSE
		BEGIN
			PERFORM schedq._next_run(schedule, 'UTC', now());
			-- pg_cron's steps stop below a field's highest value (*/60)
			fields := regexp_split_to_array(btrim(schedule), '\s+');
			IF cardinality(fields) <> 5 OR NOT EXISTS (
				SELECT 1 FROM unnest(fields, ARRAY[59, 23, 31, 12, 7]) AS f(field, high),
							  regexp_matches(f.field, '/([0-9]+)', 'g') AS s(step)
				 WHERE s.step[1]::numeric > f.high) THEN
				RETURN schedule;
			END IF;
		EXCEPTION WHEN invalid_parameter_value THEN
			GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
		END;
	END IF;
	PERFORM cron._error('22023', format('invalid schedule: %s', schedule), NULL, 'Use cron format (e.g. 5 4 * * *), or interval format ''[1-59] seconds''');
END
$$;

-- The job's time zone: its option, else cron.timezone (pg_cron's default GMT).
CREATE FUNCTION cron._timezone(jobid bigint)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT o.timezone FROM cron.job_options o WHERE o.jobid = $1),
					nullif(current_setting('cron.timezone', true), ''), 'GMT')
$$;
REVOKE ALL ON FUNCTION cron._timezone(bigint) FROM PUBLIC;

-- The search_path a job starts with: what a session of its user in this
-- database would get (ALTER ROLE ... IN DATABASE, ALTER ROLE, ALTER
-- DATABASE, the server's default), as pg_cron's job sessions have it.
-- schedq's SQL executor starts commands with pg_catalog, pg_temp: the job's
-- command is run after a set_config of this, as a literal (the stored value
-- is not SQL: SET ... FROM CURRENT stores what set_config took, ';' and all).
CREATE FUNCTION cron._search_path(username text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(
		(SELECT substr(c, length('search_path=') + 1)
		   FROM pg_db_role_setting s, unnest(s.setconfig) WITH ORDINALITY AS u(c, n)
		  WHERE c LIKE 'search_path=%'
			AND s.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = $1))
			AND s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
		  ORDER BY s.setrole = 0, s.setdatabase = 0
		  LIMIT 1),
		(SELECT boot_val FROM pg_settings WHERE name = 'search_path'))
$$;
REVOKE ALL ON FUNCTION cron._search_path(text) FROM PUBLIC;

-- The history a job keeps (cron.set_job_options: keep_runs, keep_for,
-- errors_only): its finished runs past the newest keep_runs, older than
-- keep_for, and, with errors_only, those that succeeded, go.  Called at the
-- start of each of the job's runs (see _command), in its transaction, as
-- the extension's owner; called from anywhere else (another job's run, a
-- session) it does nothing.
CREATE FUNCTION cron._prune(jobid bigint)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	o cron.job_options;
	key text := 'cron.job.' || jobid;
	runas oid;
BEGIN
	SELECT * INTO o FROM cron.job_options jo WHERE jo.jobid = _prune.jobid;
	SELECT r.oid INTO runas FROM cron.job j JOIN pg_roles r ON r.rolname = j.username
	 WHERE j.jobid = _prune.jobid;
	-- only from the job's own run: this backend is the SQL executor running
	-- a task of the job's schedule as its user (session_user proves nothing
	-- there: it is the executor's superuser)
	IF o.jobid IS NULL OR runas IS NULL OR NOT EXISTS (
			SELECT 1 FROM schedq.task t
			 WHERE t.periodic = key AND t.owner::oid = runas AND t.status = 'running'
			   AND t.claimed_by = 'schedq sql executor ' || pg_backend_pid()) THEN
		RETURN;
	END IF;
	-- the job's runs: the tasks of its schedule owned by its user (no other
	-- role's task, whatever its lock_key or the schedule it came from)
	DELETE FROM schedq.task t
	 WHERE t.periodic = key AND t.owner::oid = runas
	   AND t.status IN ('done', 'failed', 'canceled', 'skipped')
	   AND ((o.errors_only AND t.status = 'done')
			OR t.finished_at < now() - o.keep_for
			OR (o.keep_runs IS NOT NULL AND t.id IN (SELECT f.id FROM schedq.task f
						 WHERE f.periodic = key AND f.owner::oid = runas
						   AND f.status IN ('done', 'failed', 'canceled', 'skipped')
						 ORDER BY f.id DESC OFFSET o.keep_runs)));
END
$$;

-- The command schedq runs for a job: its history pruned, if it keeps less
-- than schedq.retention does, then its search_path, then its command
-- (cron.job_run_details strips the first two).  A job of another database:
-- its history pruned, then cron._run_elsewhere, which runs its command
-- there.
CREATE FUNCTION cron._command(jobid bigint, username text, command text, database text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN EXISTS (SELECT 1 FROM cron.job_options o WHERE o.jobid = $1
							 AND (o.keep_runs IS NOT NULL OR o.keep_for IS NOT NULL OR o.errors_only))
				THEN format('SELECT cron._prune(%s); ', $1) ELSE '' END
		   || CASE WHEN $4 = current_database()
				   THEN format('SELECT pg_catalog.set_config(''search_path'', %L, false); %s',
							   cron._search_path($2), $3)
				   ELSE format('SELECT FROM cron._run_elsewhere(%s)', $1) END
$$;
REVOKE ALL ON FUNCTION cron._command(bigint, text, text, text) FROM PUBLIC;

-- A job of another database, run there: a background worker connected to
-- that database as the job's user runs the job's command, as a session of
-- that user would (its search_path, its LOGIN and CONNECT privilege), and
-- this run waits for it: the command's error is the run's, the job's
-- timeout ends it.  Only from the job's own run, as cron._prune; the
-- rows it returns are the command's, for cron.job_run_details.
CREATE FUNCTION cron._run_in_database(database text, username text, command text, jobid bigint)
RETURNS bigint
LANGUAGE C VOLATILE
AS '$libdir/schedq', 'schedq_cron_run_in_database';
REVOKE ALL ON FUNCTION cron._run_in_database(text, text, text, bigint) FROM PUBLIC;

CREATE FUNCTION cron._run_elsewhere(jobid bigint)
RETURNS SETOF integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	j record;
	runas oid;
	n bigint;
BEGIN
	SELECT * INTO j FROM cron.job WHERE cron.job.jobid = _run_elsewhere.jobid;
	SELECT r.oid INTO runas FROM pg_roles r WHERE r.rolname = j.username;
	IF j.jobid IS NULL OR runas IS NULL OR NOT EXISTS (
			SELECT 1 FROM schedq.task t
			 WHERE t.periodic = 'cron.job.' || _run_elsewhere.jobid
			   AND t.owner::oid = runas AND t.status = 'running'
			   AND t.claimed_by = 'schedq sql executor ' || pg_backend_pid()) THEN
		PERFORM cron._error('42501', format('cron._run_elsewhere(%s) runs only in a run of that job', jobid),
							NULL, 'A job runs on its schedule, or now with cron.run_job.');
	END IF;
	IF NOT has_database_privilege(runas, j.database, 'CONNECT') THEN
		PERFORM cron._error('42501', format('User %s does not have CONNECT privilege on %s', j.username, j.database), NULL, NULL);
	END IF;
	n := cron._run_in_database(j.database, j.username, j.command, j.jobid);
	RETURN QUERY SELECT 1 FROM generate_series(1, n);
END
$$;

-- A restore's COPY of cron.job or cron.job_options (pg_dump's, run by
-- pg_restore or psql as a superuser): a superuser's query that is one COPY
-- ... FROM, and nothing after it.  is_superuser is the session's current
-- role's (SET ROLE's), not a SECURITY DEFINER function's owner's.
CREATE FUNCTION cron._restoring()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT current_setting('is_superuser') = 'on'
	   AND current_query() ~* '^\s*COPY\s+cron\.job(_options)?\s[^;]*\sFROM\s[^;]*;?\s*$'
$$;

--
-- The trigger that keeps schedq's periodic tasks as cron.job says.  It runs
-- as the extension's owner: the row it is given passed cron.job's row
-- security (a role writes only rows of its own username; a superuser any).
--
CREATE FUNCTION cron._job_changed()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	pname text;
	o record;
	runas oid;
	run_now text := current_setting('cron.run_now', true);
BEGIN
	-- a restore (pg_dump's COPY of cron.job): the schedules come with
	-- schedq's own data, in the state they were dumped in
	IF cron._restoring() THEN
		RETURN NULL;
	END IF;
	IF TG_OP IN ('DELETE', 'UPDATE') AND (TG_OP = 'DELETE' OR OLD.jobid <> NEW.jobid) THEN
		PERFORM schedq.unschedule('cron.job.' || OLD.jobid);
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN NULL;
	END IF;
	pname := 'cron.job.' || NEW.jobid;
	-- the role named exactly so: row security compared the name as text, so
	-- must this (never as an identifier, which folds case, drops quotes and
	-- spaces, and so names another role)
	SELECT r.oid INTO runas FROM pg_roles r WHERE r.rolname = NEW.username;
	IF runas IS NULL THEN
		PERFORM cron._error('42704', format('role "%s" does not exist', NEW.username), NULL, NULL);
	END IF;
	SELECT coalesce(jo.priority, 0) AS priority, coalesce(jo.max_attempts, 1) AS max_attempts,
		   jo.timeout INTO o
	  FROM (SELECT 1) one LEFT JOIN cron.job_options jo ON jo.jobid = NEW.jobid;
	PERFORM schedq.schedule_sql(pname, cron._schedq_schedule(NEW.schedule),
								cron._command(NEW.jobid, NEW.username, NEW.command, NEW.database),
								timezone => cron._timezone(NEW.jobid),
								enabled => NEW.active, priority => o.priority,
								max_attempts => o.max_attempts, timeout => o.timeout,
								lock_key => pname);
	UPDATE schedq.periodic SET owner = runas::regrole
	 WHERE name = pname AND owner OPERATOR(pg_catalog.<>) runas::regrole;
	-- run_job: its tick now, unless the job is inactive or a run of it is
	-- still going (never twice at once: then run_job does nothing)
	IF run_now = NEW.jobid::text AND NEW.active THEN
		BEGIN
			PERFORM schedq.run_schedule_now(pname);
		EXCEPTION WHEN object_in_use THEN
			NULL;
		END;
	END IF;
	RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION cron._job_changed() FROM PUBLIC;

CREATE TRIGGER job_changed AFTER INSERT OR UPDATE OR DELETE ON cron.job
	FOR EACH ROW EXECUTE FUNCTION cron._job_changed();

-- A row naming another database: its job runs there, if the database
-- exists and the job's user may connect to it (as schedule_in_database and
-- alter_job check, for rows written directly too), and if the role that
-- wrote it may call one of those two.  A restore (pg_dump's
-- COPY, perhaps into a database of another name) cannot tell the jobs
-- that ran in the database it came from: its rows naming another
-- database become jobs of this one, and alter_job moves one back.
CREATE FUNCTION cron._job_database()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NEW.database IS NULL OR NEW.database = current_database() THEN
		NEW.database := current_database();
	ELSIF cron._restoring() THEN
		RAISE WARNING 'job % names database "%": it runs in "%", where it is', NEW.jobid,
			NEW.database, current_database()
			USING HINT = 'cron.alter_job(job_id, database => ...) moves it to another database.';
		NEW.database := current_database();
	ELSIF TG_OP = 'INSERT' OR NEW.database IS DISTINCT FROM OLD.database
		  OR NEW.username IS DISTINCT FROM OLD.username THEN
		-- placed there only by whom schedule_in_database or alter_job lets
		-- (a superuser, or a role granted one): USAGE on schema cron and
		-- CONNECT (PUBLIC's by default) must not bypass pg_hba.conf
		IF (TG_OP = 'INSERT' OR NEW.database IS DISTINCT FROM OLD.database)
		   AND NOT has_function_privilege('cron.schedule_in_database(text, text, text, text, text, boolean)', 'EXECUTE')
		   AND NOT has_function_privilege('cron.alter_job(bigint, text, text, text, text, boolean)', 'EXECUTE') THEN
			PERFORM cron._error('42501', format('permission denied to place job %s in database "%s"', NEW.jobid, NEW.database),
								NULL, 'A superuser places a job in another database, with cron.schedule_in_database or cron.alter_job.');
		END IF;
		PERFORM cron._check_connect(NEW.username, NEW.database);
	END IF;
	RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION cron._job_database() FROM PUBLIC;

CREATE TRIGGER job_database BEFORE INSERT OR UPDATE ON cron.job
	FOR EACH ROW EXECUTE FUNCTION cron._job_database();

CREATE FUNCTION cron._job_options_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF cron._restoring() THEN
		RETURN NULL;
	END IF;
	UPDATE cron.job SET active = active
	 WHERE jobid = (CASE WHEN TG_OP = 'DELETE' THEN OLD.jobid ELSE NEW.jobid END);
	RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION cron._job_options_changed() FROM PUBLIC;

CREATE TRIGGER job_options_changed AFTER INSERT OR UPDATE OR DELETE ON cron.job_options
	FOR EACH ROW EXECUTE FUNCTION cron._job_options_changed();

--
-- Checks as pg_cron makes them.
--
CREATE FUNCTION cron._check_username(username text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	can_login boolean;
BEGIN
	SELECT rolcanlogin INTO can_login FROM pg_roles WHERE rolname = username;
	IF NOT FOUND THEN
		PERFORM cron._error('42704', format('role "%s" does not exist', username), NULL, NULL);
	END IF;
	IF NOT can_login THEN
		PERFORM cron._error('28000', format('role "%s" can not log in', username), 'Jobs may only be run by roles that have the LOGIN attribute.', NULL);
	END IF;
END
$$;

CREATE FUNCTION cron._check_connect(username text, database text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = database) THEN
		PERFORM cron._error('3D000', format('database "%s" does not exist', database), NULL, NULL);
	END IF;
	IF NOT has_database_privilege(username, database, 'CONNECT') THEN
		PERFORM cron._error('42501', format('User %s does not have CONNECT privilege on %s', username, database), NULL, NULL);
	END IF;
END
$$;

--
-- pg_cron's API.
--
CREATE FUNCTION cron.schedule(schedule text, command text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	id bigint;
BEGIN
	IF command IS NULL THEN
		PERFORM cron._error('22004', 'command can not be NULL', NULL, NULL);
	END IF;
	PERFORM cron._schedq_schedule(schedule);
	INSERT INTO cron.job (schedule, command) VALUES ($1, $2) RETURNING jobid INTO id;
	RETURN id;
END
$$;
COMMENT ON FUNCTION cron.schedule(text, text) IS 'schedule a pg_cron job';

CREATE FUNCTION cron.schedule(job_name text, schedule text, command text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	id bigint;
BEGIN
	IF job_name IS NULL THEN
		PERFORM cron._error('22004', 'job_name can not be NULL', NULL, NULL);
	END IF;
	IF command IS NULL THEN
		PERFORM cron._error('22004', 'command can not be NULL', NULL, NULL);
	END IF;
	PERFORM cron._schedq_schedule(schedule);
	INSERT INTO cron.job (jobname, schedule, command) VALUES ($1, $2, $3)
	ON CONFLICT ON CONSTRAINT jobname_username_uniq
	DO UPDATE SET schedule = EXCLUDED.schedule, command = EXCLUDED.command
	RETURNING jobid INTO id;
	RETURN id;
END
$$;
COMMENT ON FUNCTION cron.schedule(text, text, text) IS 'schedule a pg_cron job by name (replaces the caller''s job of that name)';

CREATE FUNCTION cron.schedule_in_database(job_name text, schedule text, command text,
										  database text, username text DEFAULT NULL,
										  active boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	id bigint;
	who text := coalesce(username, CURRENT_USER);
BEGIN
	IF job_name IS NULL THEN
		PERFORM cron._error('22004', 'job_name can not be NULL', NULL, NULL);
	END IF;
	IF command IS NULL THEN
		PERFORM cron._error('22004', 'command can not be NULL', NULL, NULL);
	END IF;
	PERFORM cron._schedq_schedule(schedule);
	IF username IS NOT NULL THEN
		IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = CURRENT_USER) THEN
			PERFORM cron._error('42501', 'must be superuser to create a job for another role', NULL, NULL);
		END IF;
		PERFORM cron._check_username(username);
	END IF;
	PERFORM cron._check_connect(who, coalesce(database, current_database()));
	INSERT INTO cron.job (jobname, schedule, command, database, username, active)
	VALUES ($1, $2, $3, coalesce($4, current_database()), who, coalesce($6, true))
	ON CONFLICT ON CONSTRAINT jobname_username_uniq
	DO UPDATE SET schedule = EXCLUDED.schedule, command = EXCLUDED.command,
				  database = EXCLUDED.database, active = EXCLUDED.active
	RETURNING jobid INTO id;
	RETURN id;
END
$$;
COMMENT ON FUNCTION cron.schedule_in_database IS 'schedule a pg_cron job with its database, user and active flag';
REVOKE ALL ON FUNCTION cron.schedule_in_database FROM PUBLIC;

CREATE FUNCTION cron.unschedule(job_id bigint)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF job_id IS NULL THEN
		PERFORM cron._error('22004', 'job_id can not be NULL', NULL, NULL);
	END IF;
	DELETE FROM cron.job WHERE jobid = job_id;
	IF NOT FOUND THEN
		PERFORM cron._error('42704', format('could not find valid entry for job %s', job_id), NULL, NULL);
	END IF;
	RETURN true;
END
$$;
COMMENT ON FUNCTION cron.unschedule(bigint) IS 'remove a pg_cron job by id';

CREATE FUNCTION cron.unschedule(job_name text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF job_name IS NULL THEN
		PERFORM cron._error('22004', 'job_name can not be NULL', NULL, NULL);
	END IF;
	DELETE FROM cron.job WHERE jobname = job_name AND username = CURRENT_USER;
	IF NOT FOUND THEN
		PERFORM cron._error('42704', format('could not find valid entry for job ''%s''', job_name), NULL, NULL);
	END IF;
	RETURN true;
END
$$;
COMMENT ON FUNCTION cron.unschedule(text) IS 'remove the caller''s pg_cron job by name';

CREATE FUNCTION cron.alter_job(job_id bigint, schedule text DEFAULT NULL,
							   command text DEFAULT NULL, database text DEFAULT NULL,
							   username text DEFAULT NULL, active boolean DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	who text := coalesce(username, CURRENT_USER);
BEGIN
	IF job_id IS NULL THEN
		PERFORM cron._error('22004', 'job_id can not be NULL', NULL, NULL);
	END IF;
	IF username IS NOT NULL THEN
		IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = CURRENT_USER) THEN
			PERFORM cron._error('42501', 'must be superuser to alter username', NULL, NULL);
		END IF;
		PERFORM cron._check_username(username);
	END IF;
	IF database IS NOT NULL THEN
		PERFORM cron._check_connect(who, database);
	END IF;
	IF schedule IS NOT NULL THEN
		PERFORM cron._schedq_schedule(schedule);
	END IF;
	IF num_nonnulls(schedule, command, database, username, active) = 0 THEN
		PERFORM cron._error('22023', 'no updates specified', NULL, 'You must specify at least one job attribute to change when calling alter_job');
	END IF;
	IF NOT EXISTS (SELECT 1 FROM cron.job j WHERE j.jobid = job_id
				   AND (j.username = CURRENT_USER OR (SELECT rolsuper FROM pg_roles WHERE rolname = CURRENT_USER))) THEN
		PERFORM cron._error('42704', format('Job %s does not exist or you don''t own it', job_id), NULL, NULL);
	END IF;
	-- username apart: only a superuser (checked above) may update it
	IF username IS NOT NULL THEN
		UPDATE cron.job j SET username = alter_job.username WHERE j.jobid = job_id;
	END IF;
	UPDATE cron.job j
	   SET schedule = coalesce(alter_job.schedule, j.schedule),
		   command = coalesce(alter_job.command, j.command),
		   database = coalesce(alter_job.database, j.database),
		   active = coalesce(alter_job.active, j.active)
	 WHERE j.jobid = job_id;
	IF NOT FOUND THEN
		PERFORM cron._error('42704', format('Job %s does not exist or you don''t own it', job_id), NULL, NULL);
	END IF;
END
$$;
COMMENT ON FUNCTION cron.alter_job IS 'change a pg_cron job';
REVOKE ALL ON FUNCTION cron.alter_job FROM PUBLIC;

--
-- schedq_cron's extras.
--
CREATE FUNCTION cron.set_job_options(job_id bigint, timezone text DEFAULT NULL,
									 priority integer DEFAULT NULL,
									 max_attempts integer DEFAULT NULL,
									 timeout interval DEFAULT NULL,
									 keep_runs integer DEFAULT NULL,
									 keep_for interval DEFAULT NULL,
									 errors_only boolean DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF job_id IS NULL THEN
		PERFORM cron._error('22004', 'job_id can not be NULL', NULL, NULL);
	END IF;
	IF NOT EXISTS (SELECT 1 FROM cron.job WHERE jobid = job_id) THEN
		PERFORM cron._error('42704', format('Job %s does not exist or you don''t own it', job_id), NULL, NULL);
	END IF;
	-- the job's runs call cron._prune: its user needs the schema
	IF num_nonnulls(keep_runs, keep_for, errors_only) > 0 AND NOT has_schema_privilege(
			(SELECT j.username FROM cron.job j WHERE j.jobid = job_id), 'cron', 'USAGE') THEN
		PERFORM cron._error('42501', format('the user of job %s has no USAGE on schema cron', job_id),
							NULL, 'Its runs keep their history within the limits: GRANT USAGE ON SCHEMA cron to it.');
	END IF;
	INSERT INTO cron.job_options AS o (jobid, timezone, priority, max_attempts, timeout,
									   keep_runs, keep_for, errors_only)
	VALUES (job_id, timezone, coalesce(priority, 0), coalesce(max_attempts, 1), timeout,
			keep_runs, keep_for, coalesce(errors_only, false))
	ON CONFLICT (jobid) DO UPDATE
	   SET timezone = coalesce(EXCLUDED.timezone, o.timezone),
		   priority = coalesce(set_job_options.priority, o.priority),
		   max_attempts = coalesce(set_job_options.max_attempts, o.max_attempts),
		   timeout = coalesce(EXCLUDED.timeout, o.timeout),
		   keep_runs = coalesce(EXCLUDED.keep_runs, o.keep_runs),
		   keep_for = coalesce(EXCLUDED.keep_for, o.keep_for),
		   errors_only = coalesce(set_job_options.errors_only, o.errors_only);
END
$$;
COMMENT ON FUNCTION cron.set_job_options IS 'a job''s time zone, priority, attempts (retried with schedq''s back-off), timeout and history kept';

CREATE FUNCTION cron.run_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF job_id IS NULL THEN
		PERFORM cron._error('22004', 'job_id can not be NULL', NULL, NULL);
	END IF;
	PERFORM set_config('cron.run_now', job_id::text, true);
	UPDATE cron.job SET active = active WHERE jobid = job_id;
	IF NOT FOUND THEN
		PERFORM cron._error('42704', format('Job %s does not exist or you don''t own it', job_id), NULL, NULL);
	END IF;
	PERFORM set_config('cron.run_now', '', true);
END
$$;
COMMENT ON FUNCTION cron.run_job IS 'run a job now (its next tick stays); nothing while it runs already or is inactive';

--
-- Runs: each tick is a schedq task of the job's periodic task.
--
CREATE VIEW cron.job_run_details AS
SELECT j.jobid,
	   t.id AS runid,
	   NULL::integer AS job_pid,
	   CASE WHEN elsewhere THEN j.database ELSE pg_catalog.current_database()::text END AS database,
	   j.username,
	   CASE WHEN elsewhere THEN j.command
			ELSE pg_catalog.regexp_replace(t.payload OPERATOR(pg_catalog.->>) 'command',
										   '^(SELECT cron\._prune\([0-9]+\); )?SELECT pg_catalog\.set_config\(''search_path'', E?''([^'']|'''')*'', false\); ',
										   '') END AS command,
	   CASE t.status WHEN 'running' THEN 'running' WHEN 'done' THEN 'succeeded'
			WHEN 'failed' THEN 'failed' WHEN 'canceled' THEN 'failed'
			WHEN 'skipped' THEN 'failed' ELSE 'starting' END AS status,
	   CASE WHEN t.status OPERATOR(pg_catalog.=) 'done'
			THEN (t.result OPERATOR(pg_catalog.->>) 'rows') OPERATOR(pg_catalog.||) ' rows'
			ELSE t.last_error END AS return_message,
	   t.started_at AS start_time,
	   t.finished_at AS end_time
  FROM schedq.task t
  JOIN cron.job j ON t.periodic OPERATOR(pg_catalog.=) ('cron.job.' OPERATOR(pg_catalog.||) j.jobid)
  CROSS JOIN LATERAL (SELECT (t.payload OPERATOR(pg_catalog.->>) 'command')
						 OPERATOR(pg_catalog.~) '^(SELECT cron\._prune\([0-9]+\); )?SELECT FROM cron\._run_elsewhere\([0-9]+\)$'
						 AS elsewhere) e
  JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) j.username
						   AND r.oid OPERATOR(pg_catalog.=) t.owner::oid
 WHERE pg_catalog.pg_has_role(t.owner, 'USAGE');
COMMENT ON VIEW cron.job_run_details IS 'pg_cron''s runs: the schedq tasks of the jobs the caller may act for';
GRANT SELECT ON cron.job_run_details TO PUBLIC;

CREATE VIEW cron.job_health AS
SELECT j.jobid, j.jobname, j.username, j.schedule, j.active,
	   p.timezone, p.next_run, p.last_run,
	   last.start_time AS last_start, last.end_time AS last_end, last.status AS last_status,
	   last.start_time OPERATOR(pg_catalog.-) p.last_run AS last_delay,
	   coalesce(last.start_time OPERATOR(pg_catalog.-) p.last_run > interval '1 minute', false) AS ran_late,
	   coalesce(last.status OPERATOR(pg_catalog.=) 'failed', false) AS failed,
	   p.fired, p.skipped, p.last_error
  FROM cron.job j
  JOIN schedq.periodic p ON p.name OPERATOR(pg_catalog.=) ('cron.job.' OPERATOR(pg_catalog.||) j.jobid)
  LEFT JOIN LATERAL (SELECT d.start_time, d.end_time, d.status FROM cron.job_run_details d
					  WHERE d.jobid OPERATOR(pg_catalog.=) j.jobid
					  ORDER BY d.runid DESC LIMIT 1) last ON true
 WHERE pg_catalog.pg_has_role(p.owner, 'USAGE');
COMMENT ON VIEW cron.job_health IS 'each job: next and last run, how late it started, whether it failed';
GRANT SELECT ON cron.job_health TO PUBLIC;

--
-- Moving from pg_cron.
--
CREATE FUNCTION cron.import_pg_cron(source regclass, start_after timestamptz DEFAULT NULL,
									 all_databases boolean DEFAULT false)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
	n integer := 0;
	other integer := 0;
BEGIN
	IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = CURRENT_USER) THEN
		PERFORM cron._error('42501', 'must be superuser to import pg_cron''s jobs', NULL, NULL);
	END IF;
	IF start_after IS NOT NULL AND NOT isfinite(start_after) THEN
		PERFORM cron._error('22023', 'start_after must be finite', NULL, NULL);
	END IF;
	FOR r IN EXECUTE format('SELECT jobid, schedule, command, database, username, active, jobname'
							' FROM %s ORDER BY jobid', source)
	LOOP
		IF r.database <> current_database() AND NOT coalesce(all_databases, false) THEN
			other := other + 1;
			CONTINUE;
		END IF;
		PERFORM cron._check_username(r.username);
		INSERT INTO cron.job (jobid, schedule, command, database, username, active, jobname)
		VALUES (r.jobid, r.schedule, r.command, r.database, r.username, r.active, r.jobname);
		IF start_after IS NOT NULL THEN
			UPDATE schedq.periodic
			   SET next_run = schedq._next_run(schedule, timezone, start_after)
			 WHERE name = 'cron.job.' || r.jobid;
		END IF;
		n := n + 1;
	END LOOP;
	PERFORM setval('cron.jobid_seq', greatest((SELECT max(jobid) FROM cron.job), 1));
	IF other > 0 THEN
		RAISE NOTICE '% jobs of other databases were left out', other
			USING HINT = 'Import them in their own databases, or here with all_databases => true (they then run in their databases).';
	END IF;
	RETURN n;
END
$$;
COMMENT ON FUNCTION cron.import_pg_cron IS 'import pg_cron''s jobs of this database (or of all, to run in theirs) from a copy of its cron.job; first ticks after start_after';
REVOKE ALL ON FUNCTION cron.import_pg_cron FROM PUBLIC;

/* sql/schedq--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedq UPDATE TO '1.2'" to load this file. \quit

SET LOCAL search_path TO pg_catalog, pg_temp;

--
-- schedq 1.1 is released and frozen: every schema change since goes here
-- and into schedq--1.2.sql (the full script of a fresh install), and the
-- upgrade suite proves the two give the same catalog.
--

-- Progress: schedq.progress, a heartbeat that records how far the attempt
-- has come.
ALTER TABLE schedq.task
	ADD COLUMN progress real,
	ADD COLUMN progress_note text,
	ADD COLUMN progress_at timestamptz;
COMMENT ON COLUMN schedq.task.progress IS 'how far an attempt has come, 0 to 100, as schedq.progress last reported';
COMMENT ON COLUMN schedq.task.progress_note IS 'the note schedq.progress last reported with it';
COMMENT ON COLUMN schedq.task.progress_at IS 'when schedq.progress last reported; earlier than started_at: an earlier attempt''s';

CREATE FUNCTION schedq.progress(token text, progress real, note text DEFAULT NULL,
								extend interval DEFAULT NULL)
RETURNS timestamptz
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_progress';
COMMENT ON FUNCTION schedq.progress IS 'a heartbeat that also records how far the attempt has come (0 to 100) and a note';
REVOKE ALL ON FUNCTION schedq.progress FROM PUBLIC;

-- Claim from one queue; on Citus, on the queue's node (docs/scale-out.md).
CREATE FUNCTION schedq.claim_queue(
	queue text,
	worker text,
	caps text[] DEFAULT '{}',
	n integer DEFAULT 1,
	lease interval DEFAULT NULL,
	wait interval DEFAULT '0')
RETURNS SETOF schedq.claimed_task
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_claim_queue';
COMMENT ON FUNCTION schedq.claim_queue IS 'claim from one queue, as claim(worker, ARRAY[queue], ...); on a distributed schedq it runs, and may wait, on the queue''s node';
REVOKE ALL ON FUNCTION schedq.claim_queue FROM PUBLIC;

-- await_task for one queue: on a distributed schedq Citus runs it on the
-- node that holds the queue's shard, where it waits on that node's wake-ups.
CREATE PROCEDURE schedq.await_queue(
	queue text,
	caps text[] DEFAULT '{}',
	wait interval DEFAULT '30 seconds',
	INOUT woken boolean DEFAULT NULL)
LANGUAGE c
AS 'MODULE_PATHNAME', 'schedq_await_queue';
COMMENT ON PROCEDURE schedq.await_queue IS 'wait as await_task(ARRAY[queue], caps, wait); on a distributed schedq it runs, and waits, on the queue''s node';
REVOKE ALL ON PROCEDURE schedq.await_queue FROM PUBLIC;

-- Retention per status: failed tasks have their own
-- (schedq.failed_retention), so retention walks each status by age.
-- The index is rebuilt: writes to schedq.task wait while the finished
-- tasks are indexed again.
DROP INDEX schedq.task_finished_idx;
CREATE INDEX task_finished_idx ON schedq.task (status, finished_at)
	WHERE status IN ('done', 'failed', 'canceled', 'skipped');

-- Every task of a run, finished or not, for showing a run (schedqctl web).
-- Building it reads the table once; writes wait meanwhile.
CREATE INDEX task_run_all_idx ON schedq.task (run_id)
	WHERE run_id IS NOT NULL;

-- Work grants: a worker claims and finishes the tasks of a role without
-- being a member of it.
CREATE TABLE schedq.work_grant (
	worker			regrole NOT NULL,
	owner			regrole NOT NULL,
	granted_by		regrole NOT NULL,
	granted_at		timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (worker, owner)
);
COMMENT ON TABLE schedq.work_grant IS 'a worker role may claim and finish the tasks of an owner role';
ALTER TABLE schedq.work_grant ENABLE ROW LEVEL SECURITY;
CREATE POLICY work_grant_visible ON schedq.work_grant FOR SELECT
	USING (pg_catalog.pg_has_role(owner::oid, 'USAGE')
		   OR pg_catalog.pg_has_role(worker::oid, 'USAGE'));

CREATE FUNCTION schedq._work_grant_changed() RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'schedq_work_grant_changed_trigger';

CREATE TRIGGER work_grant_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
	ON schedq.work_grant FOR EACH STATEMENT
	EXECUTE FUNCTION schedq._work_grant_changed();
REVOKE ALL ON FUNCTION schedq._work_grant_changed FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('schedq.work_grant', '');
REVOKE ALL ON schedq.work_grant FROM PUBLIC;

CREATE FUNCTION schedq.grant_work(worker regrole, owner regrole DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_grant_work';
COMMENT ON FUNCTION schedq.grant_work IS 'let a worker role claim and finish the tasks of owner (default: the caller) without being a member of it; false if it already may';
REVOKE ALL ON FUNCTION schedq.grant_work FROM PUBLIC;

CREATE FUNCTION schedq.revoke_work(worker regrole, owner regrole DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_revoke_work';
COMMENT ON FUNCTION schedq.revoke_work IS 'take back grant_work; false if there was nothing to take back';
REVOKE ALL ON FUNCTION schedq.revoke_work FROM PUBLIC;

-- A worker set up as 1.1's documentation said (a member of the
-- submitting role) keeps working; the same pairs are recorded as work
-- grants, so that the membership, which lets the worker act as that role
-- everywhere, can be revoked without stopping its work.  A pair is a
-- member that may call claim, of a role that may call submit or
-- schedule (a submitter, not a group of workers) and is not a superuser.
DO $$
DECLARE
	pair record;
BEGIN
	FOR pair IN
		SELECT DISTINCT m.member::regrole AS worker, m.roleid::regrole AS owner
		  FROM pg_catalog.pg_auth_members m
		  JOIN pg_catalog.pg_roles o ON o.oid = m.roleid
		 WHERE NOT o.rolsuper
		   AND pg_catalog.has_function_privilege(m.member,
				'schedq.claim'::pg_catalog.regproc, 'EXECUTE')
		   AND (pg_catalog.has_function_privilege(m.roleid,
					'schedq.submit'::pg_catalog.regproc, 'EXECUTE')
				OR pg_catalog.has_function_privilege(m.roleid,
					'schedq.schedule'::pg_catalog.regproc, 'EXECUTE'))
		 ORDER BY 1, 2
	LOOP
		INSERT INTO schedq.work_grant (worker, owner, granted_by)
		VALUES (pair.worker, pair.owner, current_user::regrole)
		ON CONFLICT DO NOTHING;
		RAISE NOTICE 'role % may work for role % through schedq.work_grant now', pair.worker, pair.owner
			USING HINT = pg_catalog.format('Its membership lets it act as %s everywhere; revoke it with: REVOKE %s FROM %s;',
										   pair.owner, pair.owner, pair.worker);
	END LOOP;
END
$$;

-- Monitoring: every role's tasks, queues, workers and schedules, without
-- payloads, results or dedup keys.  Not security_invoker: a role granted
-- SELECT on them sees all rows, and nothing else of the tables.
CREATE VIEW schedq.all_tasks AS
SELECT id, queue, kind, owner, status, priority, run_at, attempts,
	   max_attempts, timeout, lock_key, version, concurrency_key,
	   required_caps, budgets, cost, run_id, depends_on, claimed_by,
	   lease_expires_at, deadline, parked, parked_on, periodic, last_error,
	   created_at, started_at, finished_at, progress, progress_note,
	   progress_at
  FROM schedq.task;
COMMENT ON VIEW schedq.all_tasks IS 'every task of every role, without payload, result or dedup key: for monitoring';

CREATE VIEW schedq.all_queue_stats AS
SELECT q.queue,
	   COALESCE(p.paused, false) AS paused,
	   count(t.id) FILTER (WHERE t.status = 'pending') AS pending,
	   count(t.id) FILTER (WHERE t.status = 'available') AS available,
	   count(t.id) FILTER (WHERE t.status = 'running') AS running,
	   count(t.id) FILTER (WHERE t.status = 'done') AS done,
	   count(t.id) FILTER (WHERE t.status = 'failed') AS failed,
	   count(t.id) FILTER (WHERE t.status = 'canceled') AS canceled,
	   count(t.id) FILTER (WHERE t.status = 'skipped') AS skipped,
	   now() - min(t.run_at) FILTER (WHERE t.status = 'available') AS oldest_available_age
  FROM (SELECT queue FROM schedq.task UNION SELECT name FROM schedq.queue) q
  LEFT JOIN schedq.task t ON t.queue = q.queue
  LEFT JOIN schedq.queue p ON p.name = q.queue
 GROUP BY q.queue, p.paused;
COMMENT ON VIEW schedq.all_queue_stats IS 'tasks per queue and status, of every role: for monitoring';

CREATE VIEW schedq.all_worker_status AS
SELECT claimed_by AS worker,
	   count(*) FILTER (WHERE status = 'running') AS running,
	   count(*) AS claims,
	   max(started_at) AS last_seen
  FROM schedq.task
 WHERE claimed_by IS NOT NULL
 GROUP BY claimed_by;
COMMENT ON VIEW schedq.all_worker_status IS 'workers seen in the retained tasks of every role: for monitoring';

CREATE VIEW schedq.all_schedules AS
SELECT name, schedule, timezone, enabled, next_run, last_run, last_task_id,
	   kind, queue, priority, owner, fired, skipped, last_error, created_at,
	   updated_at
  FROM schedq.periodic;
COMMENT ON VIEW schedq.all_schedules IS 'every role''s schedules, without payload: for monitoring';
REVOKE ALL ON schedq.all_tasks, schedq.all_queue_stats, schedq.all_worker_status,
	schedq.all_schedules FROM PUBLIC;

-- schedule_sql takes enabled, priority, max_attempts and timeout (for
-- schedq_cron's jobs, and anyone's).  A function cannot gain arguments in
-- place: it is made again, and the roles granted EXECUTE on the old one
-- keep it.
DO $$
DECLARE
	grantees text[];
BEGIN
	SELECT coalesce(array_agg(quote_ident(r.rolname)), '{}') INTO grantees
	  FROM pg_catalog.pg_proc p,
		   LATERAL pg_catalog.aclexplode(p.proacl) a
	  JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
	 WHERE p.oid = 'schedq.schedule_sql(text,text,text,text)'::pg_catalog.regprocedure
	   AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;
	DROP FUNCTION schedq.schedule_sql(text, text, text, text);
	CREATE FUNCTION schedq.schedule_sql(name text, schedule text, command text,
										timezone text DEFAULT 'UTC',
										enabled boolean DEFAULT true,
										priority integer DEFAULT 0,
										max_attempts integer DEFAULT 5,
										timeout interval DEFAULT NULL,
										lock_key text DEFAULT NULL)
	RETURNS text
	LANGUAGE c VOLATILE
	AS 'MODULE_PATHNAME', 'schedq_schedule_sql';
	COMMENT ON FUNCTION schedq.schedule_sql IS 'a periodic SQL command, run by the built-in executor as the role that scheduled it';
	REVOKE ALL ON FUNCTION schedq.schedule_sql FROM PUBLIC;
	IF cardinality(grantees) > 0 THEN
		EXECUTE 'GRANT EXECUTE ON FUNCTION schedq.schedule_sql TO '
			|| array_to_string(grantees, ', ');
	END IF;
END
$$;

-- set_schedule_enabled: enable or disable a schedule and nothing else.
-- Granted to no one, as in a fresh install: docs/security.md#roles lists
-- it among the submitter's functions.
CREATE FUNCTION schedq.set_schedule_enabled(name text, enabled boolean)
RETURNS boolean
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_set_schedule_enabled';
COMMENT ON FUNCTION schedq.set_schedule_enabled IS 'enable or disable a periodic task, keeping its owner; false if there is none by that name';
REVOKE ALL ON FUNCTION schedq.set_schedule_enabled FROM PUBLIC;

-- run_schedule_now: make a schedule's next tick due now.  Granted to no
-- one, as in a fresh install: docs/security.md#roles lists it among the
-- submitter's functions.
CREATE FUNCTION schedq.run_schedule_now(name text)
RETURNS bigint
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_run_schedule_now';
COMMENT ON FUNCTION schedq.run_schedule_now IS 'make a periodic task''s next tick due now, its cadence kept; the id its task takes; refused while its last task is live';
REVOKE ALL ON FUNCTION schedq.run_schedule_now FROM PUBLIC;

-- distribute: turn this database's schedq into a distributed one on a
-- Citus cluster (docs/scale-out.md).  Run on the coordinator by a
-- superuser, after CREATE EXTENSION schedq on every node.  Everything it
-- needs of Citus it calls by name at run time: schedq does not depend on
-- Citus, and on a server without it the function refuses and changes
-- nothing.
CREATE FUNCTION schedq.distribute(shard_count integer DEFAULT 32)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $distribute$
DECLARE
	mine text;
	bad text;
	nodes integer;
BEGIN
	IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'schedq.distribute must be run by a superuser'
			USING ERRCODE = '42501';
	END IF;
	IF shard_count IS NULL THEN
		RAISE EXCEPTION 'shard_count must not be NULL' USING ERRCODE = '22004';
	END IF;
	IF shard_count < 1 OR shard_count > 64000 THEN
		RAISE EXCEPTION 'shard_count must be between 1 and 64000, not %', shard_count
			USING ERRCODE = '22023';
	END IF;
	IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') THEN
		RAISE EXCEPTION 'schedq.distribute needs Citus, which is not installed in database "%"',
			current_database()
			USING ERRCODE = '55000',
				  HINT = 'On a Citus coordinator, CREATE EXTENSION citus comes first; on one server schedq needs nothing more.';
	END IF;
	EXECUTE 'SELECT citus_is_coordinator()' INTO STRICT bad;
	IF bad IS DISTINCT FROM 'true' THEN
		RAISE EXCEPTION 'schedq.distribute must run on the Citus coordinator'
			USING ERRCODE = '55000',
				  HINT = 'Connect to the coordinator, register it with citus_set_coordinator_host, and run it there.';
	END IF;
	IF EXISTS (SELECT FROM pg_dist_partition
				WHERE logicalrelid = 'schedq.task'::regclass) THEN
		RAISE EXCEPTION 'schedq is already distributed in database "%"', current_database()
			USING ERRCODE = '42710';
	END IF;
	-- Every node runs this version of schedq.
	SELECT extversion INTO STRICT mine FROM pg_extension WHERE extname = 'schedq';
	EXECUTE $q$
		SELECT string_agg(format('%s (%s)',
								 coalesce(n.nodename || ':' || n.nodeport, 'this node'),
								 CASE WHEN NOT r.success THEN 'unreachable: ' || r.result
									  WHEN r.result = '' THEN 'schedq is not installed'
									  ELSE 'schedq ' || r.result END), ', '
						  ORDER BY r.nodeid)
							FILTER (WHERE NOT r.success OR r.result IS DISTINCT FROM $1),
			   count(*) FILTER (WHERE r.success AND r.result = '')
		  FROM run_command_on_all_nodes(
				 $c$SELECT coalesce((SELECT extversion FROM pg_extension
									  WHERE extname = 'schedq'), '')$c$) r
		  LEFT JOIN pg_dist_node n USING (nodeid)$q$
		INTO bad, nodes USING mine;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'schedq.distribute needs schedq % on every node: %', mine, bad
			USING ERRCODE = CASE WHEN nodes > 0 THEN '42704' ELSE '55000' END,
				  HINT = 'On each node: CREATE EXTENSION schedq (or ALTER EXTENSION schedq UPDATE) with citus.enable_ddl_propagation off.';
	END IF;

	-- Task and run ids unique in the cluster: each node (group) numbers
	-- from its own range of 2^48, as Citus does for its own sequences.
	EXECUTE $q$
		SELECT count(*) FILTER (WHERE NOT success), string_agg(result, '; ') FILTER (WHERE NOT success)
		  FROM run_command_on_all_nodes(
				 'SELECT setval(''schedq.task_id_seq'', greatest((SELECT groupid::bigint << 48 FROM pg_dist_local_group) + 1, (SELECT last_value FROM schedq.task_id_seq)))::text
						 || '' '' || setval(''schedq.run_id_seq'', greatest((SELECT groupid::bigint << 48 FROM pg_dist_local_group) + 1, (SELECT last_value FROM schedq.run_id_seq)))')$q$
		INTO nodes, bad;
	IF nodes > 0 THEN
		RAISE EXCEPTION 'schedq.distribute could not give every node its id range: %', bad
			USING ERRCODE = '08006';
	END IF;

	-- schedq.task first: a scheduler iteration locks it before the tables
	-- below (store/task.c), so that its passes and distribute never wait
	-- for each other in opposite orders (a deadlock that failed a pass).
	LOCK TABLE schedq.task IN ACCESS EXCLUSIVE MODE;

	-- The trigger on schedq.queue and schedq.task are schedq's own.
	PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
	-- The small tables: one copy on every node.
	EXECUTE 'SELECT create_reference_table(''schedq.queue'')';
	EXECUTE 'SELECT create_reference_table(''schedq.concurrency_limit'')';
	EXECUTE 'SELECT create_reference_table(''schedq.budget'')';
	EXECUTE 'SELECT create_reference_table(''schedq.periodic'')';
	-- One set of token signing keys: a token signed on any node (a
	-- claim_queue runs on its queue's node) verifies on every other.
	EXECUTE 'SELECT create_reference_table(''schedq.grant_key'')';

	-- The task table, by queue.  Citus accepts no unique index without the
	-- distribution column: the primary key becomes (queue, id), id keeps an
	-- index of its own, and dedup keys are unique per (owner, queue).
	ALTER TABLE schedq.task DROP CONSTRAINT task_pkey;
	ALTER TABLE schedq.task ADD PRIMARY KEY (queue, id);
	CREATE INDEX task_id_idx ON schedq.task (id);
	DROP INDEX schedq.task_dedup_idx;
	CREATE UNIQUE INDEX task_dedup_idx ON schedq.task (owner, dedup_key, queue)
		WHERE dedup_key IS NOT NULL AND status IN ('pending', 'available', 'running');
	EXECUTE format('SELECT create_distributed_table(''schedq.task'', ''queue'', shard_count => %s)',
				   shard_count);

	-- submit runs on the node that holds its queue's shard, and so does
	-- submit_sql, whose task that node's SQL executors run.
	EXECUTE $q$SELECT create_distributed_function(
		'schedq.submit(text,jsonb,text,integer,timestamptz,integer,interval,text,bigint,text,text[],text[],numeric,bigint,bigint[],text)',
		distribution_arg_name => 'queue', colocate_with => 'schedq.task')$q$;
	EXECUTE $q$SELECT create_distributed_function(
		'schedq.submit_sql(text,text,integer,timestamptz,integer,interval,text,bigint,text,text[],text[],numeric,bigint,bigint[],text)',
		distribution_arg_name => 'queue', colocate_with => 'schedq.task')$q$;
	-- So does claim_queue, which may wait there, on that node's wake-ups.
	EXECUTE $q$SELECT create_distributed_function(
		'schedq.claim_queue(text,text,text[],integer,interval,interval)',
		distribution_arg_name => 'queue', colocate_with => 'schedq.task')$q$;
	-- And await_queue, which waits there.
	EXECUTE $q$SELECT create_distributed_function(
		'schedq.await_queue(text,text[],interval,boolean)',
		distribution_arg_name => 'queue', colocate_with => 'schedq.task')$q$;

	-- Citus copies a shard it moves in binary by default, and a binary
	-- regrole is the source node's OID: a task's owner would name another
	-- role, or none, on the target.  Text copies it by name.  Each node
	-- sets it for itself (Citus refuses to propagate ALTER DATABASE from
	-- a worker), outside this transaction: so last, after everything
	-- that could still fail and roll the rest back.
	EXECUTE format($q$
		SELECT count(*) FILTER (WHERE NOT success), string_agg(result, '; ') FILTER (WHERE NOT success)
		  FROM run_command_on_all_nodes(%L)$q$,
		format('SET LOCAL citus.enable_ddl_propagation TO off; '
			   'ALTER DATABASE %I SET citus.enable_binary_protocol = off', current_database()))
		INTO nodes, bad;
	IF nodes > 0 THEN
		RAISE EXCEPTION 'schedq.distribute could not turn citus.enable_binary_protocol off on every node: %', bad
			USING ERRCODE = '08006';
	END IF;
	SELECT count(*) INTO nodes FROM pg_dist_node WHERE isactive AND noderole = 'primary';
	RETURN nodes;
END
$distribute$;
COMMENT ON FUNCTION schedq.distribute IS 'distribute schedq over a Citus cluster: run once on the coordinator; returns the number of nodes';
REVOKE ALL ON FUNCTION schedq.distribute FROM PUBLIC;

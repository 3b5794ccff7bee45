-- test/citus/passes.sql
--   Per-node scheduler passes (docs/scale-out.md, "The scheduler": schedq's
--   own stands aside on a cluster), in PL/pgSQL, for make check-citus.  Created on every node with DDL propagation off (each
--   node runs its own copy).  Not schedq's scheduler: what its passes would
--   run on Citus, so that the suite can show on a real cluster that a
--   node's pass over its own shard tables promotes and reaps each task
--   once, and that periodic firing from the coordinator fires each tick
--   once.  Gates as the design limits them: a lock_key orders, and a
--   concurrency_key limits, the tasks of one queue.  Dependencies are not
--   promoted here (workflows across nodes: designed, not run).
\set ON_ERROR_STOP 1
SET citus.enable_ddl_propagation TO off;
CREATE SCHEMA schedq_citus;

-- The shards of schedq.task placed on this node (none on the coordinator).
CREATE FUNCTION schedq_citus.local_shards() RETURNS SETOF regclass
LANGUAGE sql STABLE AS $$
	SELECT format('schedq.task_%s', s.shardid)::regclass
	  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
	 WHERE s.logicalrelid = 'schedq.task'::regclass
	   AND p.groupid = (SELECT groupid FROM pg_dist_local_group)
	 ORDER BY s.shardid
$$;

-- One promotion pass over this node's shards at time `at`: in each shard,
-- the due pending tasks whose lock key (per queue) has no active task and
-- which are first in its key order, as many of each (queue,
-- concurrency_key) as its limit leaves room for, in claim order.  Each
-- shard's pass holds a transaction lock of its own, as schedq's pass
-- lock serializes passes on one server.  Returns how many it promoted.
CREATE FUNCTION schedq_citus.promote_local(at timestamptz DEFAULT now())
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	shard regclass;
	n bigint;
	total bigint := 0;
	-- the limits (a reference table), read once: the shard statements
	-- below then stay plain local statements
	limits jsonb := (SELECT coalesce(jsonb_object_agg(key, max_active), '{}')
	                   FROM schedq.concurrency_limit);
BEGIN
	FOR shard IN SELECT * FROM schedq_citus.local_shards() LOOP
		PERFORM pg_advisory_xact_lock(hashtext('schedq_citus.promote'), shard::oid::int);
		EXECUTE format($q$
			WITH live AS (
				SELECT id, queue, lock_key, version, status
				  FROM %1$s
				 WHERE lock_key IS NOT NULL AND status IN ('pending', 'available', 'running')),
			head AS (
				SELECT DISTINCT ON (queue, lock_key) id, queue, lock_key
				  FROM live ORDER BY queue, lock_key, version, id),
			held AS (
				SELECT DISTINCT queue, lock_key FROM live
				 WHERE status IN ('available', 'running')),
			cand AS (
				SELECT t.id, t.queue, t.concurrency_key, t.priority, t.run_at
				  FROM %1$s t
				 WHERE t.status = 'pending' AND t.run_at <= $1 AND t.depends_on = '{}'
				   AND (t.lock_key IS NULL
				        OR (t.id IN (SELECT id FROM head)
				            AND (t.queue, t.lock_key) NOT IN (SELECT queue, lock_key FROM held)))
				   FOR UPDATE SKIP LOCKED),
			ranked AS (
				SELECT c.id, c.concurrency_key, row_number() OVER (
				         PARTITION BY c.queue, c.concurrency_key
				         ORDER BY c.priority DESC, c.run_at, c.id) AS rn,
				       ($2 ->> c.concurrency_key)::integer AS max_active,
				       (SELECT count(*) FROM %1$s a
				         WHERE a.queue = c.queue AND a.concurrency_key = c.concurrency_key
				           AND a.status IN ('available', 'running')) AS active
				  FROM cand c)
			UPDATE %1$s t SET status = 'available', parked = false, parked_on = NULL
			  FROM ranked r
			 WHERE t.id = r.id AND t.status = 'pending'
			   AND (r.concurrency_key IS NULL OR r.max_active IS NULL
			        OR r.rn <= r.max_active - r.active)
		$q$, shard) USING at, limits;
		GET DIAGNOSTICS n = ROW_COUNT;
		total := total + n;
	END LOOP;
	RETURN total;
END $$;

-- The reaper's expiry pass over this node's shards at time `at`: a running
-- task whose lease expired goes back to 'available' while it has attempts
-- left, else it fails.
CREATE FUNCTION schedq_citus.reap_local(at timestamptz DEFAULT now())
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	shard regclass;
	n bigint;
	total bigint := 0;
BEGIN
	FOR shard IN SELECT * FROM schedq_citus.local_shards() LOOP
		EXECUTE format($q$
			UPDATE %1$s t
			   SET status = CASE WHEN t.attempts < t.max_attempts THEN 'available' ELSE 'failed' END,
			       claimed_by = NULL, lease_expires_at = NULL, claim_nonce = NULL,
			       last_error = 'lease expired',
			       finished_at = CASE WHEN t.attempts < t.max_attempts THEN NULL ELSE $1 END
			 WHERE t.id IN (SELECT id FROM %1$s
			                 WHERE status = 'running' AND lease_expires_at < $1
			                   FOR UPDATE SKIP LOCKED)
			   AND t.status = 'running'
		$q$, shard) USING at;
		GET DIAGNOSTICS n = ROW_COUNT;
		total := total + n;
	END LOOP;
	RETURN total;
END $$;

-- The periodic pass, on the coordinator only: each due schedule (the
-- reference table schedq.periodic) inserts its task, with the id the
-- schedule drew in advance (next_task_id), and moves on, in one
-- distributed transaction; a concurrent tick skips the locked schedule,
-- and a second insert of the same id would fail on the key (queue, id).
CREATE FUNCTION schedq_citus.tick(at timestamptz DEFAULT now())
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	p record;
	next_id bigint;
	next_at timestamptz;
	total bigint := 0;
BEGIN
	FOR p IN SELECT * FROM schedq.periodic
	          WHERE enabled AND next_run <= at
	          ORDER BY name FOR UPDATE SKIP LOCKED LOOP
		INSERT INTO schedq.task (id, kind, queue, payload, status, owner, periodic, run_at)
		VALUES (p.next_task_id, p.kind, p.queue, p.payload, 'available', p.owner, p.name, p.next_run);
		-- Citus takes no volatile function in an UPDATE of a reference table
		next_id := nextval('schedq.task_id_seq');
		next_at := (SELECT r FROM schedq.next_runs(p.schedule, p.timezone, at, 1) r);
		UPDATE schedq.periodic
		   SET last_run = p.next_run, last_task_id = p.next_task_id,
		       next_task_id = next_id, fired = fired + 1, next_run = next_at
		 WHERE name = p.name;
		total := total + 1;
	END LOOP;
	RETURN total;
END $$;

-- For the suite: every status change of a task on this node's shards,
-- with this node's clock at the change.  (The tasks' started_at and
-- finished_at are the coordinator's now(), taken before the statement
-- reaches the worker: a client's first statement, which opens its
-- connection to the worker, can carry a time half a second early, so they
-- cannot order two claims.)
CREATE TABLE schedq_citus.audit (
	id				bigint,
	queue			text,
	lock_key		text,
	concurrency_key	text,
	version			bigint,
	status			text,
	at				timestamptz DEFAULT clock_timestamp()
);
CREATE FUNCTION schedq_citus.audit_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO schedq_citus.audit (id, queue, lock_key, concurrency_key, version, status)
	VALUES (NEW.id, NEW.queue, NEW.lock_key, NEW.concurrency_key, NEW.version, NEW.status);
	RETURN NULL;
END $$;
DO $$
DECLARE
	shard regclass;
BEGIN
	FOR shard IN SELECT * FROM schedq_citus.local_shards() LOOP
		EXECUTE format('CREATE TRIGGER audit AFTER UPDATE OF status ON %s
		                FOR EACH ROW EXECUTE FUNCTION schedq_citus.audit_row()', shard);
	END LOOP;
END $$;

-- Violations on this node, from the audit: a task of a (queue, lock_key)
-- made available while another of the key was active or ahead of it in
-- key order; and the most tasks of one (queue, concurrency_key) active at
-- once.
CREATE FUNCTION schedq_citus.audit_lock_violations() RETURNS bigint
LANGUAGE sql AS $$
	WITH span AS (
		SELECT id, queue, lock_key, version,
		       min(at) FILTER (WHERE status = 'available') AS avail,
		       max(at) FILTER (WHERE status = 'done') AS done
		  FROM schedq_citus.audit WHERE lock_key IS NOT NULL
		 GROUP BY id, queue, lock_key, version)
	SELECT count(*) FROM span a JOIN span b
	    ON a.queue = b.queue AND a.lock_key = b.lock_key AND a.id <> b.id
	 WHERE b.avail > a.avail
	   AND (b.avail < a.done OR (b.version, b.id) < (a.version, a.id))
$$;
CREATE FUNCTION schedq_citus.audit_most_active(key text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT coalesce(max(n), 0) FROM (
		SELECT sum(d) OVER (PARTITION BY queue ORDER BY at, d
		                    ROWS UNBOUNDED PRECEDING) AS n
		  FROM (SELECT queue, at, CASE WHEN status = 'available' THEN 1 ELSE -1 END AS d
		          FROM schedq_citus.audit
		         WHERE concurrency_key = key AND status IN ('available', 'done')) e) s
$$;

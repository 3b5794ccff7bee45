-- Submitting tasks: defaults, the fast path to 'available', dedup keys,
-- submit_many and submit_sql.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

-- Defaults: an ungated task is available at once, owned by its submitter.
SELECT schedq.submit('email');
SELECT id, queue, kind, payload, priority, status, attempts, max_attempts,
	   timeout, lock_key, version, concurrency_key, required_caps, budgets,
	   cost, run_id, depends_on, dedup_key, owner = current_user::regrole AS own,
	   claimed_by, lease_expires_at, result, last_error,
	   run_at = created_at AS run_now, started_at, finished_at
  FROM schedq.task;

-- Every argument, by name.
SELECT schedq.submit('report', payload => '{"month": 11}', queue => 'reports',
					 priority => 7, max_attempts => 3, timeout => '5 min',
					 required_caps => '{gpu}', cost => 2.5);
SELECT id, queue, kind, payload, priority, status, max_attempts, timeout,
	   required_caps, cost
  FROM schedq.task WHERE id = 2;

-- Each gating constraint keeps a task pending, for the promotion loop.
SELECT schedq.submit('later', run_at => now() + interval '1 hour');
SELECT schedq.submit('locked', lock_key => 'account:1', version => 3);
SELECT schedq.submit('limited', concurrency_key => 'api');
SELECT schedq.submit('after', depends_on => ARRAY[1]);
-- A run_at in the past is not a gate.
SELECT schedq.submit('overdue', run_at => now() - interval '1 day');
SELECT id, kind, status FROM schedq.task WHERE id > 2 ORDER BY id;

-- dedup_key: while a live task holds the key, submitting returns its id.
SELECT schedq.submit('sync', dedup_key => 'sync:42') AS first,
	   schedq.submit('sync', dedup_key => 'sync:42') AS again;
SELECT count(*) FROM schedq.task WHERE dedup_key = 'sync:42';
-- Once that task is finished, the key is free again.
SELECT schedq.cancel(8);
SELECT schedq.submit('sync', dedup_key => 'sync:42');
SELECT id, status FROM schedq.task WHERE dedup_key = 'sync:42' ORDER BY id;

-- submit_many: one statement, ids in the order given, submit's defaults
-- for absent keys and JSON nulls.
SELECT * FROM schedq.submit_many('[
	{"kind": "a"},
	{"kind": "b", "priority": 5, "queue": "q2", "payload": {"x": 1}},
	{"kind": "c", "run_at": "2999-01-01T00:00:00Z", "priority": null},
	{"kind": "d", "dedup_key": "many"},
	{"kind": "e", "dedup_key": "many"},
	{"kind": "f", "required_caps": ["x", "y"], "depends_on": [1, 2]}
]');
SELECT id, kind, queue, priority, payload, status, required_caps, depends_on
  FROM schedq.task WHERE id >= 10 ORDER BY id;
SELECT * FROM schedq.submit_many('[]');

-- submit_many is atomic: one bad element submits nothing.
SELECT count(*) FROM schedq.task;
SELECT * FROM schedq.submit_many('[{"kind": "ok"}, {"kind": "bad", "max_attempts": 0}]');
SELECT count(*) FROM schedq.task;

-- submit_sql: kind 'sql', the command in the payload, capability 'sql'
-- required, so ordinary workers never receive it.
SELECT schedq.submit_sql('UPDATE t SET x = 1', timeout => '1 min');
SELECT schedq.submit_sql('SELECT 1', required_caps => '{sql,db}');
SELECT id, kind, payload, required_caps, timeout, status
  FROM schedq.task WHERE kind = 'sql' ORDER BY id;
SELECT count(*) AS claimed_without_sql FROM schedq.claim('w', n => 100) WHERE kind = 'sql';

-- submit_many's two paths: elements that need no other row are inserted
-- together; one with a dedup_key, a run_id, depends_on or budgets goes
-- alone, after the elements before it.  Ids come in array order either
-- way, a dedup hit returns the live task's id, an element may depend on
-- an earlier one of the same call, and each path keeps submit's values.
SELECT schedq.set_budget('many_budget', 5);
SELECT schedq.create_run('many_run') AS many_run \gset
CREATE TEMP TABLE many_before AS
  SELECT value FROM schedq.metrics() WHERE name = 'tasks_submitted';
CREATE TEMP TABLE many AS
SELECT s.ord, s.id FROM schedq.submit_many(format('[
	{"kind": "m1", "required_caps": ["x", "y z", "{\"q\"}"], "cost": 2.5},
	{"kind": "m2", "dedup_key": "mixed"},
	{"kind": "m3", "lock_key": "mk", "version": 2, "timeout": "5 min"},
	{"kind": "m4", "dedup_key": "mixed"},
	{"kind": "m5", "concurrency_key": "mc", "queue": "mq", "priority": -3},
	{"kind": "m6", "dedup_key": "many"},
	{"kind": "m7", "budgets": ["many_budget"], "cost": 2},
	{"kind": "m8", "run_id": %s},
	{"kind": "m9", "run_at": "2999-01-01T00:00:00Z", "max_attempts": 1},
	{"kind": "m10"}
]', :many_run)::jsonb) WITH ORDINALITY AS s(id, ord);
-- m4 is m2 (same key), m6 the live task 'd' of 'many' from above; every
-- other id is new and larger than those before it.
SELECT m.ord, t.kind, m.id > max(m.id) OVER (ORDER BY m.ord ROWS BETWEEN UNBOUNDED PRECEDING
                                                AND 1 PRECEDING) AS increasing
  FROM many m JOIN schedq.task t ON t.id = m.id ORDER BY m.ord;
SELECT t.kind, t.queue, t.priority, t.status, t.required_caps, t.budgets,
       t.cost, t.lock_key, t.version, t.concurrency_key, t.timeout,
       t.max_attempts, t.run_id = :many_run AS in_run, t.dedup_key,
       t.run_at > now() AS later, t.owner = current_user::regrole AS mine
  FROM schedq.task t WHERE t.id IN (SELECT id FROM many) ORDER BY t.id;
SELECT (SELECT value FROM schedq.metrics() WHERE name = 'tasks_submitted')
       - (SELECT value FROM many_before) AS submitted;
-- A later element may depend on an earlier one: the batch before it is in.
SELECT count(*) FROM schedq.submit_many(format('[
	{"kind": "n1"}, {"kind": "n2", "depends_on": [%s]}]',
	(SELECT last_value + 1 FROM schedq.task_id_seq))::jsonb);
SELECT kind, status, depends_on,
       depends_on = ARRAY[(SELECT id FROM schedq.task WHERE kind = 'n1')] AS on_n1
  FROM schedq.task WHERE kind IN ('n1', 'n2') ORDER BY id;
-- A bad element after a batch, or a batch after a bad reference: nothing.
SELECT count(*) FROM schedq.task;
SELECT * FROM schedq.submit_many('[{"kind": "ok"}, {"kind": "ok", "budgets": ["nope"]}]');
SELECT * FROM schedq.submit_many('[{"kind": "ok"}, {"kind": "ok", "depends_on": [999999]}, {"kind": "ok"}]');
SELECT * FROM schedq.submit_many('[{"kind": "ok", "dedup_key": "z"}, {"kind": "ok"}, {"kind": "ok", "cost": -1}]');
SELECT count(*) FROM schedq.task;
-- A large batch goes in several statements, still in order.
CREATE TEMP TABLE bulk AS
SELECT s.id, s.ord FROM schedq.submit_many((SELECT jsonb_agg(jsonb_build_object(
         'kind', 'bulk', 'payload', jsonb_build_object('i', i)) ORDER BY i)
         FROM generate_series(1, 25001) i)) WITH ORDINALITY AS s(id, ord);
SELECT count(*) AS n, count(*) FILTER (WHERE b.id > b.prev) AS increasing,
       count(*) FILTER (WHERE (t.payload->>'i')::int = b.ord) AS in_order,
       count(*) FILTER (WHERE t.status = 'available') AS available
  FROM (SELECT id, ord, lag(id) OVER (ORDER BY ord) AS prev FROM bulk) b
  JOIN schedq.task t USING (id);

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

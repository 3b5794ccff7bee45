-- The promotion pass and its gates: time, exclusive keys in version order,
-- concurrency limits, dependencies; parking and gate events.  Driven by
-- schedq._promote_once(now), the function the scheduler runs (the
-- background scheduler is disabled in this suite).
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

CREATE FUNCTION pg_temp.state(kind_pattern text DEFAULT '%')
RETURNS TABLE (id bigint, kind text, status text, parked boolean)
LANGUAGE sql AS $$
	SELECT id, kind, status, parked FROM schedq.task
	 WHERE kind LIKE kind_pattern ORDER BY id
$$;
-- claim and complete what a queue has available, as a worker would (each
-- section below uses its own queue)
CREATE FUNCTION pg_temp.finish(q text) RETURNS integer
LANGUAGE sql AS $$
	SELECT count(schedq.complete(c.token))::integer
	  FROM schedq.claim('w', queues => ARRAY[q], n => 100) c
$$;

-- Time: a task is promoted once its run_at has come, not before.
SELECT schedq.submit('later', run_at => now() + interval '1 hour');
SELECT schedq._promote_once(now());
SELECT * FROM pg_temp.state('later');
SELECT schedq._promote_once(now() + interval '59 minutes');
SELECT schedq._promote_once(now() + interval '1 hour');
SELECT * FROM pg_temp.state('later');

-- Exclusive keys: one at a time, in version order (tasks without a version
-- last, then by id), whatever the order of submission.
SELECT schedq.submit('k-v3', queue => 'k', lock_key => 'acct', version => 3);
SELECT schedq.submit('k-none', queue => 'k', lock_key => 'acct');
SELECT schedq.submit('k-v1', queue => 'k', lock_key => 'acct', version => 1);
SELECT schedq.submit('k-v2', queue => 'k', lock_key => 'acct', version => 2);
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('k-%');
-- Blocked tasks are parked: not looked at again by later passes ...
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('k-%');
-- ... until the task ahead of them finishes (a gate event).
SELECT pg_temp.finish('k');
SELECT count(*) AS gate_events FROM schedq.gate_event;
SELECT schedq._promote_once();
SELECT count(*) AS gate_events FROM schedq.gate_event;
SELECT * FROM pg_temp.state('k-%');
SELECT pg_temp.finish('k'), schedq._promote_once();
SELECT pg_temp.finish('k'), schedq._promote_once();
SELECT * FROM pg_temp.state('k-%');
SELECT pg_temp.finish('k'), schedq._promote_once();
SELECT * FROM pg_temp.state('k-%');

-- A task running under a key holds the key even for a task that comes
-- earlier in key order.
SELECT schedq.submit('r-v5', queue => 'r', lock_key => 'doc', version => 5);
SELECT schedq._promote_once();
SELECT token AS t5 FROM schedq.claim('w', queues => '{r}') \gset
SELECT schedq.submit('r-v2', queue => 'r', lock_key => 'doc', version => 2);
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('r-%');
SELECT schedq.complete(:'t5'), schedq._promote_once();
SELECT * FROM pg_temp.state('r-%');
SELECT pg_temp.finish('r');

-- A retried task keeps its place: it goes back to pending and the next
-- version waits behind it.
SELECT schedq.submit('f-v1', queue => 'f', lock_key => 'inv', version => 1, max_attempts => 2);
SELECT schedq.submit('f-v2', queue => 'f', lock_key => 'inv', version => 2);
SELECT schedq._promote_once();
SELECT schedq.fail(token, 'oops', retry_in => '0') FROM schedq.claim('w', queues => '{f}');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('f-%');
SELECT pg_temp.finish('f'), schedq._promote_once();
SELECT * FROM pg_temp.state('f-%');
-- Canceling the task ahead frees the next one too.
SELECT schedq.submit('c-v1', queue => 'c', lock_key => 'cx', version => 1, run_at => now() + interval '1 day');
SELECT schedq.submit('c-v2', queue => 'c', lock_key => 'cx', version => 2);
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('c-%');
SELECT schedq.cancel(id) FROM schedq.task WHERE kind = 'c-v1';
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('c-%');

-- Concurrency limits: at most max_active available or running; tasks
-- promoted in the same pass count.
SELECT schedq.set_concurrency_limit('api', 2);
SELECT schedq.submit('api-', queue => 'api' || i, concurrency_key => 'api', priority => 10 - i)
  FROM generate_series(1, 5) i;
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('api-%');
-- Freeing a slot lets exactly one more go, in claim order.
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{api}');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('api-%');
-- Raising the limit lets more go; removing it lets all go.
SELECT schedq.set_concurrency_limit('api', 3);
SELECT schedq._promote_once();
SELECT count(*) FILTER (WHERE status IN ('available', 'running')) AS active
  FROM schedq.task WHERE kind LIKE 'api-%';
SELECT schedq.set_concurrency_limit('api', NULL);
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('api-%');
-- A failure that will be retried later frees the slot too: the task goes
-- back to pending (a gate event, though only run_at and the status
-- change) and the parked one takes its place.
SELECT schedq.set_concurrency_limit('rl', 1);
SELECT schedq.submit('rl-' || i, queue => 'rl', concurrency_key => 'rl', priority => 10 - i)
  FROM generate_series(1, 2) i;
SELECT schedq._promote_once();
SELECT schedq.fail(token, 'later', retry_in => '1 hour') FROM schedq.claim('w', queues => '{rl}');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('rl-%');
-- A concurrency key without a limit does not hold anything back.
SELECT schedq.submit('free-', queue => 'free' || i, concurrency_key => 'nolimit') FROM generate_series(1, 3) i;
SELECT schedq._promote_once();
-- A limit of 0 holds everything.
SELECT schedq.set_concurrency_limit('zero', 0);
SELECT schedq.submit('z', queue => 'z', concurrency_key => 'zero');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('z');

-- A freed slot goes to a task the limit holds back, not to one a lock key
-- holds (which would only be parked again while an eligible task waits):
-- tasks are parked with the reason (parked_on).
SELECT schedq.set_concurrency_limit('c2', 2);
SELECT schedq.submit(k, queue => 's', lock_key => left(k, 1), version => right(k, 1)::bigint,
					 concurrency_key => 'c2')
  FROM unnest('{A1,A2,B1,B2,C1}'::text[]) k;
SELECT schedq._promote_once();
SELECT kind, status, parked_on FROM schedq.task WHERE queue = 's' ORDER BY id;
SELECT pg_temp.finish('s');		-- A1 and B1
SELECT schedq._promote_once();
SELECT kind, status, parked_on FROM schedq.task WHERE queue = 's' ORDER BY id;
SELECT token AS tb FROM schedq.claim('w', queues => '{s}') WHERE kind = 'A2' \gset
SELECT schedq._promote_once();
SELECT kind, status, parked_on FROM schedq.task WHERE queue = 's' ORDER BY id;
SELECT pg_temp.finish('s'), schedq.complete(:'tb'), schedq._promote_once();
SELECT pg_temp.finish('s'), schedq._promote_once();
SELECT kind, status FROM schedq.task WHERE queue = 's' ORDER BY id;

-- Both gates on one task: the key decides first, then the limit.
SELECT schedq.set_concurrency_limit('both', 1);
SELECT schedq.submit('b1', queue => 'b', lock_key => 'kb', concurrency_key => 'both');
SELECT schedq.submit('b2', queue => 'b', lock_key => 'kb2', concurrency_key => 'both');
SELECT schedq.submit('b3', queue => 'b', lock_key => 'kb', concurrency_key => 'both');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('b_');
SELECT pg_temp.finish('b'), schedq._promote_once();
SELECT * FROM pg_temp.state('b_');
SELECT pg_temp.finish('b'), schedq._promote_once();
SELECT * FROM pg_temp.state('b_');

-- Dependencies: a task waits (parked) until every dependency is done;
-- finishing a dependency frees only its dependents.
SELECT schedq.submit('dep-a', queue => 'dep') AS a \gset
SELECT schedq.submit('dep-b', queue => 'dep') AS b \gset
SELECT schedq.submit('dep-c', queue => 'dep', depends_on => ARRAY[:a, :b]::bigint[]);
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('dep-%');
SELECT has_dependents FROM schedq.task WHERE kind IN ('dep-a', 'dep-b') ORDER BY id;
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{dep}');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('dep-%');
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{dep}');
SELECT schedq._promote_once();
SELECT * FROM pg_temp.state('dep-%');

-- Every gated pending task was looked at a bounded number of times: no
-- parked task is left behind a key that is free.
SELECT count(*) AS stuck FROM schedq.task t
 WHERE t.status = 'pending' AND t.parked AND t.lock_key IS NOT NULL
   AND NOT EXISTS (SELECT FROM schedq.task o WHERE o.lock_key = t.lock_key
				   AND o.status IN ('available', 'running'));
SELECT value > 0 AS promoted_counted FROM schedq.metrics() WHERE name = 'tasks_promoted';

-- A freed slot that its first waiter cannot take goes to the next waiter.
-- wl-a waits for the limit; then wl-a0, an earlier version of its lock
-- key, comes and waits for the limit too.  When the slot frees, wl-a is
-- first in claim order but no longer first of its key: it is parked on
-- the key, and the slot goes on to wl-a0 (and then wl-b), not left free
-- with both parked on the limit and nothing active to free them.
SELECT schedq.set_concurrency_limit('wl', 1);
SELECT schedq.submit('wl-x', queue => 'wlx', concurrency_key => 'wl');
SELECT schedq._promote_once();
SELECT token AS twx FROM schedq.claim('w', queues => '{wlx}') \gset
SELECT schedq.submit('wl-a', queue => 'wl', concurrency_key => 'wl', lock_key => 'wk', version => 2);
SELECT schedq._promote_once();
SELECT schedq.submit('wl-a0', queue => 'wl', concurrency_key => 'wl', lock_key => 'wk', version => 1);
SELECT schedq.submit('wl-b', queue => 'wl', concurrency_key => 'wl');
SELECT schedq._promote_once();
SELECT kind, status, parked_on FROM schedq.task WHERE kind LIKE 'wl-%' ORDER BY id;
SELECT schedq.complete(:'twx');
SELECT schedq._promote_once();
SELECT schedq._promote_once();
SELECT kind, status, parked_on FROM schedq.task WHERE kind LIKE 'wl-%' ORDER BY id;
SELECT pg_temp.finish('wl'), schedq._promote_once();
SELECT kind, status, parked_on FROM schedq.task WHERE kind LIKE 'wl-%' ORDER BY id;
SELECT pg_temp.finish('wl'), schedq._promote_once();
SELECT pg_temp.finish('wl'), schedq._promote_once();
SELECT kind, status FROM schedq.task WHERE kind LIKE 'wl-%' ORDER BY id;

-- Memory: judging what gate events free keeps nothing per task beyond the
-- task's row.  4,000 lock keys each free their next version at once, in
-- one pass; for tasks with dependencies the pass asks whether they are
-- done, and that answer is not kept until the pass ends (8 kB a task
-- before).  The growth of a fresh session's peak (VmHWM), for tasks with
-- and without dependencies, differs by less than 4 kB a task (1 kB now).
SELECT schedq.create_run('mem') AS mrun \gset
SELECT schedq.submit('mem-d', queue => 'memd', run_id => :mrun) AS md \gset
SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg(jsonb_build_object(
	'kind', 'mem-r', 'queue', 'mem' || g, 'lock_key', 'mem' || g || '-' || i,
	'version', 1)) FROM generate_series(1, 2) g, generate_series(1, 4000) i));
SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg(jsonb_build_object(
	'kind', 'mem-h', 'queue', 'memh', 'lock_key', 'mem1-' || i, 'version', 2))
	FROM generate_series(1, 4000) i));
SELECT count(*) FROM schedq.submit_many((SELECT jsonb_agg(jsonb_build_object(
	'kind', 'mem-h', 'queue', 'memh', 'lock_key', 'mem2-' || i, 'version', 2,
	'run_id', :mrun, 'depends_on', jsonb_build_array(:md)))
	FROM generate_series(1, 4000) i));
SELECT count(schedq.complete(token)) FROM schedq.claim('w', queues => '{memd}');
SELECT sum(schedq._promote_once()) FROM generate_series(1, 20);
SELECT count(*) AS parked_on_lock FROM schedq.task
 WHERE kind = 'mem-h' AND parked_on = 'lock';
DO $$ BEGIN
	FOR i IN 1..4 LOOP
		PERFORM schedq.complete_many(array_agg(token))
		  FROM schedq.claim('w', queues => '{mem1}', n => 1000);
	END LOOP;
END $$;
\c
SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'),
	'VmHWM:\s+(\d+)'))[1]::bigint AS hwm0 \gset
SELECT schedq._promote_once();
SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'),
	'VmHWM:\s+(\d+)'))[1]::bigint - :hwm0 AS plain_kb \gset
DO $$ BEGIN
	FOR i IN 1..4 LOOP
		PERFORM schedq.complete_many(array_agg(token))
		  FROM schedq.claim('w', queues => '{mem2}', n => 1000);
	END LOOP;
END $$;
\c
SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'),
	'VmHWM:\s+(\d+)'))[1]::bigint AS hwm0 \gset
SELECT schedq._promote_once();
SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'),
	'VmHWM:\s+(\d+)'))[1]::bigint - :hwm0 AS deps_kb \gset
SELECT (:deps_kb - :plain_kb) / 4000.0 < 4 AS no_memory_per_task,
	   CASE WHEN (:deps_kb - :plain_kb) / 4000.0 >= 4
			THEN format('plain %s kB, with dependencies %s kB', :plain_kb, :deps_kb) END AS growth;
SELECT status, count(*) FROM schedq.task WHERE kind LIKE 'mem-%' GROUP BY 1 ORDER BY 1;

-- finish what a queue has available, run a pass, show the queue
CREATE FUNCTION pg_temp.finish_then_pass(q text)
RETURNS TABLE (kind text, status text, parked_on text)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM schedq.complete(c.token)
	   FROM schedq.claim('w', queues => ARRAY[q], n => 10) c;
	PERFORM schedq._promote_once();
	RETURN QUERY SELECT t.kind, t.status, t.parked_on FROM schedq.task t
				  WHERE t.queue = q ORDER BY t.id;
END $$;
-- A freed slot goes to the limit's first waiter in claim order, also to
-- one of a higher priority parked after the others were first read.
SELECT schedq.set_concurrency_limit('fl', 1);
SELECT count(schedq.submit('fl-' || k, queue => 'flq', concurrency_key => 'fl'))
  FROM unnest('{run,w1,w2}'::text[]) k;
SELECT schedq._promote_once();
-- fl-run done: fl-w1 goes
SELECT * FROM pg_temp.finish_then_pass('flq');
-- fl-hi, of a higher priority, waits: fl-w1 holds the slot
SELECT schedq.submit('fl-hi', queue => 'flq', concurrency_key => 'fl', priority => 5) > 0 AS submitted;
SELECT schedq._promote_once();
-- fl-w1 done: fl-hi goes before fl-w2
SELECT * FROM pg_temp.finish_then_pass('flq');
-- The same for a task parked on the limit in the pass that reads the
-- waiters: fs-l1v2 takes the slot fs-a freed, fs-l2v2 (next in claim
-- order) is parked on the limit, ahead of fs-w; the next slot goes to
-- fs-l2v2.
SELECT schedq.set_concurrency_limit('fs', 1);
SELECT count(schedq.submit('fs-' || k, queue => 'fsq', lock_key => l, version => v,
						   concurrency_key => c, priority => p))
  FROM (VALUES ('a', NULL, NULL, 'fs', 0), ('l1v1', 'fsL1', 1, NULL, 0),
			   ('l1v2', 'fsL1', 2, 'fs', 9), ('l2v1', 'fsL2', 1, NULL, 0),
			   ('l2v2', 'fsL2', 2, 'fs', 8), ('w', NULL, NULL, 'fs', 0)) AS s(k, l, v, c, p);
SELECT schedq._promote_once();
SELECT * FROM pg_temp.finish_then_pass('fsq');
SELECT * FROM pg_temp.finish_then_pass('fsq');
-- Passes in a transaction that rolls back: inside it, fr-hi ran and
-- fr-w2 got the next slot; after the rollback fr-hi waits again, and the
-- next slot is fr-hi's.
SELECT schedq.set_concurrency_limit('fr', 1);
SELECT count(schedq.submit('fr-' || k, queue => 'frq', concurrency_key => 'fr', priority => p))
  FROM (VALUES ('run', 9), ('hi', 5), ('w2', 0), ('w3', 0)) AS s(k, p);
SELECT schedq._promote_once();
BEGIN;
SELECT count(*) FROM pg_temp.finish_then_pass('frq');
SELECT * FROM pg_temp.finish_then_pass('frq');
ROLLBACK;
SELECT * FROM pg_temp.finish_then_pass('frq');

-- Bad input: each gets a clear error with a proper SQLSTATE, and changes
-- nothing.  Each line shows SQLSTATE: message.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup

SELECT schedq.submit('seed');
SELECT token AS t FROM schedq.claim('w') \gset
CREATE TEMP TABLE before AS SELECT * FROM schedq.task;
CREATE TEMP TABLE budget_before AS SELECT * FROM schedq.budget;

-- submit: NULLs where a value is needed (22004)
SELECT pg_temp.err($$SELECT schedq.submit(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', payload => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', queue => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', priority => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', run_at => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', max_attempts => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', required_caps => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', required_caps => '{a,NULL}')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', budgets => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', cost => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', depends_on => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', depends_on => '{1,NULL}')$$);
-- submit: values out of range (22023)
SELECT pg_temp.err($$SELECT schedq.submit('')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', queue => '')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', max_attempts => 0)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', max_attempts => -3)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', timeout => '-1 minute')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', timeout => '0')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', run_at => 'infinity')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', cost => -1)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', cost => 'NaN')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', version => 1)$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', lock_key => '')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', required_caps => '{{a},{b}}')$$);
-- submit: references that do not hold
SELECT pg_temp.err($$SELECT schedq.submit('k', budgets => '{nope}')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', depends_on => '{12345}')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', run_id => 12345)$$);
INSERT INTO schedq.run (id, owner) VALUES (100, current_user::regrole);
INSERT INTO schedq.run (id, owner, status) VALUES (101, current_user::regrole, 'done');
SELECT pg_temp.err($$SELECT schedq.submit('k', run_id => 100, depends_on => '{1}')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', run_id => 101)$$);
-- submit: oversized payload (54000), limit schedq.max_payload
SET schedq.max_payload = '1kB';
SELECT pg_temp.err($$SELECT schedq.submit('k', payload => jsonb_build_object('x', repeat('a', 2000)))$$);
RESET schedq.max_payload;
SELECT pg_temp.err($$SELECT schedq.submit('k', payload => jsonb_build_object('x', repeat('a', 1100000)))$$);

-- submit_many and submit_sql
SELECT pg_temp.err($$SELECT schedq.submit_many('{"kind": "k"}')$$);
SELECT pg_temp.err($$SELECT schedq.submit_many('[{"kind": "k"}, "k"]')$$);
SELECT pg_temp.err($$SELECT schedq.submit_many('[{"kind": "k", "prio": 1}]')$$);
SELECT pg_temp.err($$SELECT schedq.submit_many('[{"payload": {}}]')$$);
SELECT pg_temp.err($$SELECT schedq.submit_many('[{"kind": "k", "max_attempts": -1}]')$$);
SELECT pg_temp.err($$SELECT schedq.submit_many('[{"kind": "k", "priority": "high"}]')$$);
SELECT schedq.submit_many(NULL) IS NULL AS strict_null;
-- more tasks than one call takes (54000): refused before any is looked at
SELECT pg_temp.err($$SELECT schedq.submit_many((SELECT jsonb_agg('{"kind": "k"}'::jsonb) FROM generate_series(1, 100001)))$$);
SELECT pg_temp.err($$SELECT schedq.submit_sql(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.submit_sql('  ')$$);
SELECT pg_temp.err($$SELECT schedq.submit_sql('SELECT 1', max_attempts => 0)$$);

-- claim
SELECT pg_temp.err($$SELECT schedq.claim(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', n => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', n => 0)$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', n => -1)$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', n => 1000000)$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', caps => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', caps => '{NULL}')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', queues => '{a,NULL}')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', lease => '-5 seconds')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', lease => '0')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', wait => '-1 second')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', wait => NULL)$$);

-- heartbeat, complete, fail: NULLs, negative intervals, forged grants
SELECT pg_temp.err($$SELECT schedq.heartbeat(NULL)$$);
SELECT pg_temp.err(format('SELECT schedq.heartbeat(%L, %L)', :'t', '-1 minute'));
SELECT pg_temp.err($$SELECT schedq.complete(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.fail(NULL, 'x')$$);
SELECT pg_temp.err(format('SELECT schedq.fail(%L, NULL)', :'t'));
SELECT pg_temp.err(format('SELECT schedq.fail(%L, %L, retry_in => %L)', :'t', 'x', '-1 s'));
SELECT pg_temp.err(format('SELECT schedq.fail(%L, %L, permanent => NULL)', :'t', 'x'));
SELECT pg_temp.err($$SELECT schedq.complete('1.1.1.1.1.' || repeat('0', 64))$$);
SELECT pg_temp.err($$SELECT schedq.complete('not a grant')$$);
-- complete_many: a bad token or a results array of the wrong length fails
-- the whole call, even with a good token in it (the seed's grant still
-- works at the end)
SELECT pg_temp.err($$SELECT schedq.complete_many(NULL)$$);
SELECT pg_temp.err(format('SELECT schedq.complete_many(ARRAY[%L, NULL])', :'t'));
SELECT pg_temp.err(format('SELECT schedq.complete_many(ARRAY[%L, %L])', :'t', 'not a grant'));
SELECT pg_temp.err(format('SELECT schedq.complete_many(ARRAY[%L], %L::jsonb[])', :'t', '{"{}","{}"}'));
SELECT pg_temp.err(format('SELECT schedq.complete_many(array_fill(%L::text, ARRAY[1001]))', :'t'));
SELECT pg_temp.err(format('SELECT schedq.complete_many(ARRAY[[%L]])', :'t'));
SELECT pg_temp.err(format('SELECT schedq.complete_many(ARRAY[%L], ARRAY[[%L]]::jsonb[])', :'t', '{}'));

-- managing
SELECT pg_temp.err($$SELECT schedq.cancel(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.retry(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.pause_queue(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.set_concurrency_limit(NULL, 1)$$);
SELECT pg_temp.err($$SELECT schedq.set_concurrency_limit('k', -1)$$);
SELECT pg_temp.err($$SELECT schedq.set_budget(NULL, 1)$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', NULL)$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', -1)$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', 'NaN')$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', 1, '-1 hour')$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('b', 1, '1 month')$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('', 1)$$);

-- Nothing changed: the same tasks, the same budgets, and the seed's grant
-- still works.
SELECT count(*) AS changed_tasks FROM (
	(SELECT * FROM schedq.task EXCEPT SELECT * FROM before)
	UNION ALL
	(SELECT * FROM before EXCEPT SELECT * FROM schedq.task)) d;
SELECT count(*) AS changed_budgets FROM (
	(SELECT * FROM schedq.budget EXCEPT SELECT * FROM budget_before)
	UNION ALL
	(SELECT * FROM budget_before EXCEPT SELECT * FROM schedq.budget)) d;
SELECT count(*) AS limits FROM schedq.concurrency_limit;
SELECT count(*) AS queues FROM schedq.queue;
SELECT schedq.complete(:'t');

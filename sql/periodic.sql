-- Periodic tasks: schedule (an upsert), unschedule, schedule_sql, and the
-- periodic pass driven with an injected time: firing, never overlapping,
-- missed ticks firing once, disabled schedules, one bad schedule not
-- stalling the others.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup
CREATE TEMP TABLE m0 AS SELECT * FROM schedq.metrics();
CREATE FUNCTION pg_temp.grew(metric text) RETURNS bigint LANGUAGE sql AS $$
	SELECT n.value - o.value FROM schedq.metrics() n JOIN m0 o USING (name)
	 WHERE name = metric
$$;

-- schedule: validated, stored with its first run, owned by its creator.
SELECT schedq.schedule('report', '*/5 * * * *', 'build_report', '{"kind": "daily"}',
					   queue => 'reports', priority => 3, max_attempts => 2);
SELECT name, schedule, timezone, enabled, kind, payload, queue, priority, max_attempts,
	   owner = current_user::regrole AS own,
	   next_run = schedq._next_run('*/5 * * * *', 'UTC', created_at) AS first_run_ok,
	   last_run, last_task_id, fired, skipped
  FROM schedq.periodic;

-- Nothing fires before the tick; the tick fires once.
SELECT next_run AS t1 FROM schedq.periodic WHERE name = 'report' \gset
SELECT schedq._periodic_once(:'t1'::timestamptz - interval '1 second');
SELECT schedq._periodic_once(:'t1');
SELECT schedq._periodic_once(:'t1');
SELECT id, kind, payload, queue, priority, max_attempts, status, periodic,
	   run_at = :'t1' AS run_at_is_tick
  FROM schedq.task;
SELECT last_run = :'t1' AS last_run, last_task_id, fired, skipped,
	   next_run = :'t1'::timestamptz + interval '5 minutes' AS next_tick
  FROM schedq.periodic;

-- Never overlapping: the task of the last tick is still live, so the next
-- tick is skipped and counted.
SELECT schedq._periodic_once(:'t1'::timestamptz + interval '5 minutes');
SELECT count(*) AS tasks FROM schedq.task;
SELECT fired, skipped, next_run = :'t1'::timestamptz + interval '10 minutes' AS next_tick
  FROM schedq.periodic;
-- Once it is finished, the next tick fires.
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{reports}');
SELECT schedq._periodic_once(:'t1'::timestamptz + interval '10 minutes');
SELECT fired, skipped, last_task_id FROM schedq.periodic;

-- Ticks missed (the server was down for a day) fire once, not once each,
-- and the next run is the first tick after now.
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{reports}');
SELECT schedq._periodic_once(:'t1'::timestamptz + interval '1 day');
SELECT fired, skipped,
	   next_run = :'t1'::timestamptz + interval '1 day 5 minutes' AS next_after_now
  FROM schedq.periodic;
SELECT pg_temp.grew('periodic_fired') AS fired, pg_temp.grew('periodic_skipped_overlap') AS skipped;

-- schedule is an upsert by name: the new definition replaces the old,
-- the counters stay.
SELECT schedq.schedule('report', '0 6 * * *', 'build_report_v2', timezone => 'Europe/Berlin');
SELECT count(*) AS schedules FROM schedq.periodic;
SELECT schedule, timezone, kind, queue, fired, skipped,
	   next_run = schedq._next_run('0 6 * * *', 'Europe/Berlin', updated_at) AS next_ok
  FROM schedq.periodic;

-- (out of the way of the passes below, which run at "now" plus hours)
SELECT schedq.unschedule('report');

-- A disabled schedule does not fire.
SELECT schedq.schedule('off', '* * * * *', 'x', enabled => false);
SELECT schedq._periodic_once(now() + interval '1 hour') >= 0 AS ran;
SELECT fired FROM schedq.periodic WHERE name = 'off';

-- schedule_sql: a task for the built-in executor, capability 'sql'.
SELECT schedq.schedule_sql('vacuum', '@daily', 'VACUUM ANALYZE', 'America/New_York');
SELECT kind, payload, required_caps, timezone FROM schedq.periodic WHERE name = 'vacuum';

-- unschedule: true once, then false; the tasks it made stay.
SELECT schedq.unschedule('vacuum'), schedq.unschedule('vacuum');
SELECT count(*) AS tasks_kept FROM schedq.task WHERE periodic = 'report';

-- One bad schedule does not stall the others: a schedule whose time zone
-- disappeared (written behind the API's back) is disabled with its error,
-- the others fire.
SELECT schedq.schedule('a', '* * * * *', 'a');
SELECT schedq.schedule('b', '* * * * *', 'b');
UPDATE schedq.periodic SET timezone = 'Nowhere/Gone' WHERE name = 'a';
SET client_min_messages = error;
SELECT schedq._periodic_once(now() + interval '2 hours') AS fired;
RESET client_min_messages;
SELECT name, enabled, fired, last_error FROM schedq.periodic WHERE name IN ('a', 'b') ORDER BY name;

-- Bad input: an error, and nothing changes.
CREATE TEMP TABLE before AS SELECT * FROM schedq.periodic;
SELECT pg_temp.err($$SELECT schedq.schedule('x', '61 * * * *', 'k')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '0 0 30 2 *', 'k')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '@daily', 'k', timezone => 'Atlantis/Capital')$$);
SELECT pg_temp.err($$SELECT schedq.schedule(NULL, '@daily', 'k')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('', '@daily', 'k')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', NULL, 'k')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '@daily', NULL)$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '@daily', 'k', max_attempts => 0)$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '@daily', 'k', timeout => '-1s')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '@daily', 'k', budgets => '{none}')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('x', '@daily', 'k', enabled => NULL)$$);
SELECT pg_temp.err($$SELECT schedq.schedule_sql('x', '@daily', NULL)$$);
SELECT pg_temp.err($$SELECT schedq.schedule_sql('x', '@daily', ' ')$$);
SELECT pg_temp.err($$SELECT schedq.unschedule(NULL)$$);
SELECT count(*) AS changed FROM (
	(SELECT * FROM schedq.periodic EXCEPT SELECT * FROM before)
	UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM schedq.periodic)) d;

-- run_schedule_now: the next tick is due now and its task takes the id
-- returned; a second call before the pass changes nothing; the tick after
-- keeps the schedule's cadence.
CREATE ROLE regress_periodic_owner;
CREATE ROLE regress_periodic_other;
GRANT USAGE ON SCHEMA schedq TO regress_periodic_owner, regress_periodic_other;
GRANT EXECUTE ON FUNCTION schedq.schedule, schedq.run_schedule_now, pg_temp.err(text)
	TO regress_periodic_owner, regress_periodic_other;
GRANT SELECT ON schedq.periodic TO regress_periodic_owner, regress_periodic_other;
SET ROLE regress_periodic_owner;
SELECT schedq.schedule('yearly', '0 0 1 1 *', 'new_year');
RESET ROLE;
SELECT next_run AS regular, next_task_id AS promised FROM schedq.periodic WHERE name = 'yearly' \gset
SET ROLE regress_periodic_owner;
BEGIN;
SELECT schedq.run_schedule_now('yearly') = :promised AS returns_its_task_id;
SELECT next_run = now() AS due_now, last_task_id FROM schedq.periodic WHERE name = 'yearly';
COMMIT;
SELECT next_run AS run_now_at FROM schedq.periodic WHERE name = 'yearly' \gset
SELECT schedq.run_schedule_now('yearly') = :promised AS same_id,
	   (SELECT next_run = :'run_now_at' FROM schedq.periodic WHERE name = 'yearly') AS same_tick;
RESET ROLE;
SELECT schedq._periodic_once(now()) AS fired;
SELECT id = :promised AS promised_id, kind, status, run_at = :'run_now_at' AS run_at_is_tick,
	   owner = 'regress_periodic_owner'::regrole AS owners
  FROM schedq.task WHERE periodic = 'yearly';
SELECT fired, skipped, last_task_id = :promised AS last_task, last_run = :'run_now_at' AS last_run,
	   next_run = :'regular' AS cadence_kept
  FROM schedq.periodic WHERE name = 'yearly';

-- Never overlapping: while the last tick's task is live (available, then
-- running) it is refused, and nothing changes; once it is done, allowed.
CREATE TEMP TABLE before_now AS SELECT * FROM schedq.periodic;
SET ROLE regress_periodic_owner;
SELECT pg_temp.err($$SELECT schedq.run_schedule_now('yearly')$$) ~ '^55006: the last task of periodic task "yearly" is still available' AS refused_available;
RESET ROLE;
SELECT token AS tok FROM schedq.claim('w', queues => '{default}') \gset
SELECT pg_temp.err($$SELECT schedq.run_schedule_now('yearly')$$) ~ '^55006: .* still running' AS refused_running;
-- Others: another role 42501, unknown 42704, NULL 22004, disabled 55000.
SET ROLE regress_periodic_other;
SELECT pg_temp.err($$SELECT schedq.run_schedule_now('yearly')$$);
RESET ROLE;
SELECT pg_temp.err($$SELECT schedq.run_schedule_now('no such')$$);
SELECT pg_temp.err($$SELECT schedq.run_schedule_now(NULL)$$);
SELECT pg_temp.err($$SELECT schedq.run_schedule_now(repeat('n', 300))$$);
SELECT pg_temp.err($$SELECT schedq.run_schedule_now('off')$$);
SELECT count(*) AS changed FROM (
	(SELECT * FROM schedq.periodic EXCEPT SELECT * FROM before_now)
	UNION ALL (SELECT * FROM before_now EXCEPT SELECT * FROM schedq.periodic)) d;
SELECT count(*) AS tasks FROM schedq.task WHERE periodic = 'yearly';
-- Done: an admin (the superuser) may run another role's schedule.
SELECT schedq.complete(:'tok');
SELECT schedq.run_schedule_now('yearly') <> :promised AS next_id;
SELECT schedq._periodic_once(now()) AS fired;
SELECT fired, skipped, next_run = :'regular' AS cadence_kept FROM schedq.periodic WHERE name = 'yearly';
SELECT count(*) AS tasks, count(DISTINCT owner) AS owners FROM schedq.task WHERE periodic = 'yearly';
DROP EXTENSION schedq;
DROP OWNED BY regress_periodic_owner, regress_periodic_other;
DROP ROLE regress_periodic_owner, regress_periodic_other;

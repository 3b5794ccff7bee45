-- An interval is bounded by its parts, not only by its length.  PostgreSQL
-- adds an interval's months, then its days, then its time: one whose
-- length is a few days (months counted as 30 days) but whose months reach
-- past the end of the timestamp range makes every "now() + interval"
-- fail.  Stored as a task's timeout, it made every claim that reached the
-- task fail with "timestamp out of range" (the SQL executors died of it,
-- again and again).  An interval argument with a negative part is refused
-- (22023), so a length within the limit means parts within it too.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup

-- 3,600,000 months less 107,999,900 days: 100 days long
SELECT pg_temp.err($$SELECT now() + interval '300000 years -107999900 days'$$) AS "now() + it";
SELECT pg_temp.err($$SELECT schedq.submit('k', queue => 'parts', timeout => interval '300000 years -107999900 days')$$);
SELECT pg_temp.err($$SELECT schedq.submit_sql('SELECT 1', queue => 'parts', timeout => interval '300000 years -107999900 days')$$);
SELECT pg_temp.err($$SELECT * FROM schedq.submit_many('[{"kind": "k", "queue": "parts", "timeout": "300000 years -107999900 days"}]')$$);
SELECT pg_temp.err($$SELECT schedq.schedule('parts', '@daily', 'k', timeout => interval '300000 years -107999900 days')$$);
SELECT pg_temp.err($$SELECT schedq.claim('w', queues => '{parts}', lease => interval '300000 years -107999900 days')$$);
SELECT pg_temp.err($$SELECT schedq.set_budget('parts', 1, period => interval '2 days -1 hour')$$);
-- other shapes of the same: a negative time or day part
SELECT pg_temp.err($$SELECT schedq.submit('k', queue => 'parts', timeout => interval '2 days -1 hour')$$);
SELECT pg_temp.err($$SELECT schedq.submit('k', queue => 'parts', timeout => interval '1 month -1 day')$$);
SELECT count(*) AS tasks FROM schedq.task WHERE queue = 'parts';
SELECT count(*) AS schedules FROM schedq.periodic;

-- within the limits, parts and all: accepted, and claimed
SELECT schedq.submit('k', queue => 'parts', timeout => interval '1 month 2 days 3 hours') > 0 AS submitted;
SELECT kind, lease_expires_at <= now() + interval '1 month 2 days 3 hours' AS capped
  FROM schedq.claim('w', queues => '{parts}', lease => interval '1 day 1 hour');

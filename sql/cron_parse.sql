-- Schedules and what they mean: schedq.next_runs for every syntax, DST
-- transitions in three time zones, month ends, leap days, and invalid
-- schedules with their errors.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;
SET timezone = 'UTC';

-- local wall-clock times, with the UTC instant in brackets
CREATE FUNCTION pg_temp.runs(s text, tz text, after timestamptz, n int DEFAULT 4)
RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(to_char(r AT TIME ZONE tz, 'Dy YYYY-MM-DD HH24:MI:SS')
					  || ' [' || to_char(r AT TIME ZONE 'UTC', 'HH24:MI:SS') || 'Z]', E'\n'
					  ORDER BY r)
	  FROM schedq.next_runs(s, tz, after, n) r
$$;
CREATE FUNCTION pg_temp.err(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	EXECUTE query;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' -- ' || nullif(detail, ''), '');
END $$;

-- Cron, five fields: steps, lists, ranges, names.
SELECT s, pg_temp.runs(s, 'UTC', '2026-11-20 10:07:00+00') AS runs
  FROM (VALUES ('*/15 * * * *'), ('0 9 * * 1-5'), ('30 8 1,15 * *'),
			   ('0 0 * * sun'), ('0 12 * * MON-FRI'), ('0 0 1 jan,jul *'),
			   ('5-10/5 * * * *'), ('0 22 * * 7'), ('0 0 * * */3')) t(s);
-- Six fields: leading seconds.
SELECT s, pg_temp.runs(s, 'UTC', '2026-11-20 10:07:05+00') AS runs
  FROM (VALUES ('*/20 * * * * *'), ('30 0 12 * * *'), ('0 0 0 1 1 *')) t(s);
-- Day of month and day of week both restricted: either matches.
SELECT pg_temp.runs('0 0 13 * fri', 'UTC', '2026-11-01', 6);
-- Month ends and leap days.
SELECT pg_temp.runs('0 0 31 * *', 'UTC', '2026-01-01', 7);
SELECT pg_temp.runs('0 0 30 * *', 'UTC', '2026-01-15', 3);
SELECT pg_temp.runs('0 0 29 2 *', 'UTC', '2026-01-01', 3);
-- Macros.
SELECT s, pg_temp.runs(s, 'UTC', '2026-11-20 10:07:00+00', 2) AS runs
  FROM (VALUES ('@yearly'), ('@annually'), ('@monthly'), ('@weekly'),
			   ('@daily'), ('@midnight'), ('@hourly'), ('@HOURLY'),
			   ('@every 90 minutes'), ('@every 1 day 2 hours'), ('@every 45s')) t(s);
-- systemd calendar events.
SELECT s, pg_temp.runs(s, 'UTC', '2026-11-20 10:07:00+00', 3) AS runs
  FROM (VALUES ('Mon..Fri *-*-* 09:00:00'), ('*-*-01 00:00'), ('*:0/15'),
			   ('Sat,Sun 10:00'), ('minutely'), ('hourly'), ('daily'), ('weekly'),
			   ('monthly'), ('yearly'), ('quarterly'), ('semiannually'),
			   ('2027-*-* 12:00'), ('*-02-29 06:30:15'), ('Fri *-*-13 00:00'),
			   ('Mon,Wed..Fri 08:00'), ('*-*-* 00/6:00'), ('*-01..03-01 00:00')) t(s);
-- Wall-clock times in a time zone (Berlin is UTC+1 in winter).
SELECT pg_temp.runs('Mon..Fri *-*-* 09:00:00', 'Europe/Berlin', '2026-11-20 12:00:00+00', 3);

--
-- DST.  A skipped time fires once, at the first instant after the gap; a
-- repeated time fires once, at its first occurrence.
--
-- America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT.
SELECT pg_temp.runs('30 2 * * *', 'America/New_York', '2026-03-06 12:00:00+00', 4);
SELECT pg_temp.runs('*/30 * * * *', 'America/New_York', '2026-03-08 06:10:00+00', 4);
-- 2026-11-01 02:00 EDT -> 01:00 EST: 01:xx happens twice.
SELECT pg_temp.runs('30 1 * * *', 'America/New_York', '2026-10-30 12:00:00+00', 4);
SELECT pg_temp.runs('0 * * * *', 'America/New_York', '2026-11-01 03:30:00+00', 5);
SELECT pg_temp.runs('*/20 1 * * *', 'America/New_York', '2026-11-01 04:00:00+00', 4);
-- Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
SELECT pg_temp.runs('30 2 * * *', 'Europe/Berlin', '2026-03-27 12:00:00+00', 4);
SELECT pg_temp.runs('30 2 * * *', 'Europe/Berlin', '2026-10-23 12:00:00+00', 4);
SELECT pg_temp.runs('*-*-* 02:15:00', 'Europe/Berlin', '2026-10-24 12:00:00+00', 2);
-- Australia/Lord_Howe shifts by 30 minutes: 2026-10-04 02:00 -> 02:30
-- (+10:30 -> +11:00), and 2026-04-05 02:00 -> 01:30.
SELECT pg_temp.runs('15 2 * * *', 'Australia/Lord_Howe', '2026-10-02 12:00:00+00', 3);
SELECT pg_temp.runs('*/15 2 * * *', 'Australia/Lord_Howe', '2026-10-03 14:00:00+00', 4);
SELECT pg_temp.runs('45 1 * * *', 'Australia/Lord_Howe', '2026-04-03 12:00:00+00', 3);
SELECT pg_temp.runs('*/10 1 * * *', 'Australia/Lord_Howe', '2026-04-04 14:00:00+00', 8);

-- A schedule that never fires gives no runs (schedule() refuses it).
SELECT count(*) FROM schedq.next_runs('0 0 30 2 *', 'UTC', '2026-01-01', 5);
SELECT count(*) FROM schedq.next_runs('2020-*-* 00:00', 'UTC', '2026-01-01', 5);

--
-- Invalid schedules: 22023 with a detail saying what is wrong.
--
SELECT s, pg_temp.err(format('SELECT schedq.next_runs(%L)', s)) AS error
  FROM (VALUES (''), ('   '), ('* * * *'), ('* * * * * * *'), ('60 * * * *'),
			   ('* 24 * * *'), ('* * 0 * *'), ('* * 32 * *'), ('* * * 13 *'),
			   ('* * * * 8'), ('*/0 * * * *'), ('*/61 * * * *'), ('5-1 * * * *'),
			   ('abc * * * *'), ('1,,2 * * * *'), ('* * * jam *'), ('1- * * * *'),
			   ('@rebooted'), ('@every'), ('@every 1 month'), ('@every 0.5 seconds'),
			   ('@every soon'), ('Funday 10:00'), ('*-13-01 00:00'), ('25:00'),
			   ('10:00 Mon'), ('*-*-* 10:00 11:00'), ('1-2-3-4 00:00'),
			   ('10:61'), ('1969-*-* 00:00'), ('*-*-* 10:00:00 10')) t(s);
-- Time zones come from PostgreSQL's database; unknown ones are refused.
SELECT pg_temp.err($$SELECT schedq.next_runs('@daily', 'Mars/Olympus')$$);
SELECT pg_temp.err($$SELECT schedq.next_runs('@daily', '')$$);
SELECT pg_temp.err($$SELECT schedq.next_runs('@daily', n => 0)$$);
SELECT pg_temp.err($$SELECT schedq.next_runs('@daily', after => 'infinity')$$);
SELECT count(*) AS strict_null FROM schedq.next_runs(NULL);

-- Progress: schedq.progress is a heartbeat that also records how far the
-- attempt has come and a note; a stale token records nothing; bad values
-- are refused and change nothing.
\getenv abs_srcdir PG_ABS_SRCDIR
\set setup :abs_srcdir '/sql/include/setup.sql'
\i :setup

SELECT schedq.submit('resize', max_attempts => 2) AS id \gset
SELECT token AS t, lease_expires_at AS lease FROM schedq.claim('w', lease => '1 minute') \gset
SELECT progress, progress_note, progress_at FROM schedq.task WHERE id = :id;
SELECT schedq.progress(:'t', 40, '40 of 100 images') > :'lease' AS lease_extended;
SELECT progress, progress_note, progress_at >= started_at AS this_attempt
  FROM schedq.task WHERE id = :id;
-- A progress without a note clears the note; NULL progress: not known.
SELECT schedq.progress(:'t', 55) IS NOT NULL AS running;
SELECT progress, progress_note FROM schedq.task WHERE id = :id;
SELECT schedq.progress(:'t', NULL, 'waiting for the API') IS NOT NULL AS running;
SELECT progress, progress_note FROM schedq.task WHERE id = :id;
-- extend, as heartbeat's.
SELECT schedq.progress(:'t', 60, extend => '2 hours') > now() + interval '1 hour' AS extended;

-- Bad values: refused, nothing changes.
SELECT pg_temp.err($$SELECT schedq.progress('$$ || :'t' || $$', 101)$$);
SELECT pg_temp.err($$SELECT schedq.progress('$$ || :'t' || $$', -1)$$);
SELECT pg_temp.err($$SELECT schedq.progress('$$ || :'t' || $$', 'NaN')$$);
SELECT pg_temp.err($$SELECT schedq.progress('$$ || :'t' || $$', 1, repeat('x', 1001))$$);
SELECT pg_temp.err($$SELECT schedq.progress('$$ || :'t' || $$', 1, extend => '-1 second')$$);
SELECT pg_temp.err($$SELECT schedq.progress(NULL, 1)$$);
SELECT pg_temp.err($$SELECT schedq.progress('not a token', 1)$$);
SELECT progress, progress_note FROM schedq.task WHERE id = :id;

-- The next attempt starts without progress of its own: progress_at
-- before started_at says the recorded progress is an earlier attempt's.
SELECT schedq.fail(:'t', 'timeout', retry_in => '0 seconds');
SELECT schedq.progress(:'t', 99) IS NULL AS stale_records_nothing;
SELECT progress FROM schedq.task WHERE id = :id;
SELECT token AS t2 FROM schedq.claim('w') \gset
SELECT progress, progress_at >= started_at AS this_attempt FROM schedq.task WHERE id = :id;
SELECT schedq.progress(:'t2', 10, 'again') IS NOT NULL AS running;
SELECT progress, progress_note, progress_at >= started_at AS this_attempt
  FROM schedq.task WHERE id = :id;

-- test/bench/soak_cycle.sql -- one cycle of soak.sh's clients: submit a
-- task, claim one (the queue holds a backlog, so there is always one:
-- this one, an older one, or a periodic tick's), complete it; one cycle
-- in 20 also submits a SQL task for the built-in executors, one in 50
-- claims 10 and finishes them with complete_many.  Run with pgbench
-- -M prepared.
\set r random(1, 100)
SELECT schedq.submit('noop', payload => jsonb_build_object('c', :client_id::int, 'r', :r::int));
\if :r <= 5
SELECT schedq.submit_sql('SELECT count(*) FROM generate_series(1, ' || :r::int * 1000 || ')');
\endif
\if :r > 98
SELECT coalesce(array_agg(token), '{}') AS tokens FROM schedq.claim('soak' || :client_id, n => 10) \gset
SELECT schedq.complete_many(:tokens::text[]);
SELECT schedq.submit_many((SELECT jsonb_agg(jsonb_build_object('kind', 'noop')) FROM generate_series(1, 9)));
\else
SELECT token FROM schedq.claim('soak' || :client_id, n => 1) \gset
SELECT schedq.complete(:token);
\endif

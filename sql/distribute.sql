-- schedq.distribute on one server: without Citus it refuses with 55000
-- and changes nothing; only a superuser may call it.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;
SELECT schedq.submit('before');
\set VERBOSITY default

-- What distribute would change, before.
CREATE TEMP TABLE shape AS
SELECT (SELECT string_agg(indexrelid::regclass || ' ' || pg_get_indexdef(indexrelid), E'\n'
						  ORDER BY indexrelid::regclass::text)
		  FROM pg_index WHERE indrelid = 'schedq.task'::regclass) AS indexes,
	   (SELECT last_value FROM schedq.task_id_seq) AS task_seq,
	   (SELECT last_value FROM schedq.run_id_seq) AS run_seq,
	   (SELECT count(*) FROM pg_proc WHERE pronamespace = 'schedq'::regnamespace) AS functions;

\set SHOW_CONTEXT never
-- Citus is not installed: a clear refusal, with its SQLSTATE.
SELECT schedq.distribute();
CREATE FUNCTION pg_temp.refusal(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE call;
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT call, pg_temp.refusal(call)
  FROM unnest(ARRAY['SELECT schedq.distribute()',
					'SELECT schedq.distribute(shard_count => 8)',
					'SELECT schedq.distribute(0)',
					'SELECT schedq.distribute(NULL)']) call;

-- A role without superuser may not call it, even with EXECUTE.
CREATE ROLE regress_distribute_admin;
GRANT USAGE ON SCHEMA schedq TO regress_distribute_admin;
GRANT EXECUTE ON FUNCTION schedq.distribute TO regress_distribute_admin;
SET ROLE regress_distribute_admin;
SELECT pg_temp.refusal('SELECT schedq.distribute()');
RESET ROLE;
REVOKE ALL ON FUNCTION schedq.distribute FROM regress_distribute_admin;
REVOKE ALL ON SCHEMA schedq FROM regress_distribute_admin;
DROP ROLE regress_distribute_admin;

-- Nothing changed: same indexes, sequences and functions; the queue works.
SELECT s.indexes = n.indexes AS same_indexes, s.task_seq = n.task_seq AS same_task_seq,
	   s.run_seq = n.run_seq AS same_run_seq, s.functions = n.functions AS same_functions
  FROM shape s,
	   (SELECT (SELECT string_agg(indexrelid::regclass || ' ' || pg_get_indexdef(indexrelid), E'\n'
								  ORDER BY indexrelid::regclass::text)
				  FROM pg_index WHERE indrelid = 'schedq.task'::regclass) AS indexes,
			   (SELECT last_value FROM schedq.task_id_seq) AS task_seq,
			   (SELECT last_value FROM schedq.run_id_seq) AS run_seq,
			   (SELECT count(*) FROM pg_proc WHERE pronamespace = 'schedq'::regnamespace) AS functions) n;
SELECT conname FROM pg_constraint WHERE conrelid = 'schedq.task'::regclass AND contype = 'p';
SELECT schedq.submit('after') AS id;
SELECT id, kind FROM schedq.claim('w', n => 2) ORDER BY id;

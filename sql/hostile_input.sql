-- Hostile input, table-driven: every schedq function (from pg_proc) x
-- every argument x a set of hostile values for that argument's type, the
-- other arguments valid.  Each call runs in a subtransaction that is
-- always rolled back; the result is its SQLSTATE, or "accepted" when the
-- function accepted the value (documented acceptance: the README).
-- Nothing may crash the server or fail with an internal error (XX000),
-- and afterwards promotion, claims and completion still work.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

-- Valid values for the arguments that need real objects.
CREATE TEMP TABLE setup AS
SELECT schedq.submit('held') AS held_id, schedq.create_run('r') AS run_id;
ALTER TABLE setup ADD token text;
UPDATE setup SET token = (SELECT token FROM schedq.claim('setup'));
SELECT schedq.set_budget('b', 10);
SELECT schedq.schedule('s', '@hourly', 'k');
CREATE ROLE regress_hostile_worker;

CREATE TEMP TABLE hostile_value (type regtype, class text, literal text);
INSERT INTO hostile_value VALUES
	('text', 'null', 'NULL'),
	('text', 'empty', $$''$$),
	('text', '1 MB', $$repeat('x', 1048576)$$),
	('text', 'control chars', $$E'a\x01\r\n\tb'$$),
	('text[]', 'null', 'NULL'),
	('text[]', 'empty', $$'{}'$$),
	('text[]', 'null element', $$'{NULL}'::text[]$$),
	('text[]', '2-D', $$'{{a},{b}}'::text[]$$),
	('text[]', '10,000 elements', $$(SELECT array_agg(i::text) FROM generate_series(1, 10000) i)$$),
	('text[]', '1 MB element', $$ARRAY[repeat('x', 1048576)]$$),
	('jsonb', 'null', 'NULL'),
	('jsonb', 'JSON null', $$'null'::jsonb$$),
	('jsonb', 'array', $$'[]'::jsonb$$),
	('jsonb', 'deeply nested', $$(repeat('[', 1000) || repeat(']', 1000))::jsonb$$),
	('jsonb', '1 MB', $$to_jsonb(repeat('x', 1048576))$$),
	('jsonb[]', 'null', 'NULL'),
	('jsonb[]', '10,000 elements', $$(SELECT array_agg('{}'::jsonb) FROM generate_series(1, 10000))$$),
	('integer', 'null', 'NULL'),
	('integer', 'negative', '-1'),
	('integer', 'zero', '0'),
	('integer', 'huge', '2147483647'),
	('bigint', 'null', 'NULL'),
	('bigint', 'negative', '-1'),
	('bigint', 'zero', '0'),
	('bigint', 'huge', '9223372036854775807'),
	('bigint[]', 'null', 'NULL'),
	('bigint[]', 'null element', $$'{NULL}'::bigint[]$$),
	('bigint[]', '10,000 elements', $$(SELECT array_agg(i::bigint) FROM generate_series(1, 10000) i)$$),
	('bigint[]', 'negative', $$'{-1}'::bigint[]$$),
	('numeric', 'null', 'NULL'),
	('numeric', 'negative', '-1'),
	('numeric', 'NaN', $$'NaN'::numeric$$),
	('numeric', 'infinity', $$'Infinity'::numeric$$),
	('numeric', 'huge', $$('1e1000')::numeric$$),
	('interval', 'null', 'NULL'),
	('interval', 'negative', $$'-1 second'::interval$$),
	('interval', 'zero', $$'0'::interval$$),
	('interval', 'huge', $$'300000 years'::interval$$),
	('interval', 'huge negative', $$'-300000 years'::interval$$),
	('interval', 'huge microseconds', $$'2562047788 hours'::interval$$),
	('timestamp with time zone', 'null', 'NULL'),
	('timestamp with time zone', 'infinity', $$'infinity'::timestamptz$$),
	('timestamp with time zone', '-infinity', $$'-infinity'::timestamptz$$),
	('timestamp with time zone', 'far future', $$'294276-12-31'::timestamptz$$),
	('timestamp with time zone', 'far past', $$'4713-01-01 BC'::timestamptz$$),
	('boolean', 'null', 'NULL'),
	('real', 'null', 'NULL'),
	('real', 'negative', '-1'),
	('real', 'NaN', $$'NaN'::real$$),
	('real', 'infinity', $$'Infinity'::real$$),
	('real', 'huge', '1e30'),
	('regrole', 'null', 'NULL'),
	('regrole', 'no such role', $$4294967295::oid::regrole$$),
	('regrole', 'the bootstrap superuser', $$10::oid::regrole$$),
	('regrole', 'the caller', $$current_user::regrole$$);

-- A valid value for every argument, by name, then by type.
CREATE FUNCTION pg_temp.valid(fn text, arg text, type regtype) RETURNS text
LANGUAGE sql AS $$
SELECT CASE
	WHEN arg = 'token' THEN quote_literal(s.token)
	WHEN arg = 'tokens' THEN format('ARRAY[%L]', s.token)
	WHEN arg = 'task_id' THEN s.held_id::text
	WHEN arg = 'run_id' AND fn = 'cancel_run' THEN s.run_id::text
	WHEN arg = 'run_id' THEN 'NULL'
	WHEN arg = 'schedule' THEN $q$'@hourly'$q$
	WHEN arg = 'timezone' THEN $q$'UTC'$q$
	WHEN arg = 'failure_policy' THEN $q$'halt'$q$
	WHEN arg = 'budgets' THEN $q$'{}'$q$
	WHEN arg = 'command' THEN $q$'SELECT 1'$q$
	WHEN arg = 'tasks' THEN $q$'[{"kind": "k"}]'$q$
	WHEN arg IN ('now', 'after') THEN 'now()'
	WHEN arg = 'wait' THEN $q$'0'$q$
	WHEN arg = 'version' THEN 'NULL'
	WHEN arg IN ('lease', 'extend', 'retry_in', 'timeout', 'period') THEN 'NULL'
	WHEN arg IN ('lock_key', 'concurrency_key', 'dedup_key') THEN 'NULL'
	WHEN arg = 'worker' AND type = 'regrole'::regtype THEN $q$'regress_hostile_worker'$q$
	WHEN arg = 'owner' THEN 'NULL'
	WHEN type = 'real'::regtype THEN '50'
	WHEN type = 'text'::regtype THEN $q$'x'$q$
	WHEN type = 'text[]'::regtype THEN $q$'{}'$q$
	WHEN type = 'jsonb'::regtype THEN $q$'{}'$q$
	WHEN type = 'jsonb[]'::regtype THEN 'NULL'
	WHEN type IN ('integer'::regtype, 'bigint'::regtype, 'numeric'::regtype) THEN '1'
	WHEN type = 'bigint[]'::regtype THEN $q$'{}'$q$
	WHEN type = 'interval'::regtype THEN $q$'1 minute'$q$
	WHEN type = 'timestamp with time zone'::regtype THEN 'now()'
	WHEN type = 'boolean'::regtype THEN 'false'
END FROM setup s $$;

-- Run one call, always rolled back: its SQLSTATE, or 'accepted'.
CREATE FUNCTION pg_temp.try(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE call;
	RAISE EXCEPTION USING ERRCODE = 'SQ000';
EXCEPTION WHEN OTHERS THEN
	RETURN CASE SQLSTATE WHEN 'SQ000' THEN 'accepted' ELSE SQLSTATE END;
END $$;

CREATE TEMP TABLE hostile_case AS
WITH fn AS (
	SELECT p.proname AS fn, p.prokind, p.proretset,
		   p.proargnames[1:p.pronargs] AS names,
		   p.proargtypes::regtype[] AS types
	  FROM pg_proc p
	 WHERE p.pronamespace = 'schedq'::regnamespace
	   AND p.prorettype <> 'trigger'::regtype AND p.pronargs > 0),
arg AS (
	SELECT fn.*, a.i, a.name, fn.types[a.i - 1] AS type
	  FROM fn, unnest(fn.names) WITH ORDINALITY a(name, i))
SELECT arg.fn, arg.i, arg.name AS arg, v.class,
	   (CASE WHEN arg.prokind = 'p' THEN 'CALL ' ELSE 'SELECT count(*) FROM ' END)
	   || 'schedq.' || arg.fn || '('
	   || (SELECT string_agg(CASE WHEN o.j = arg.i THEN v.literal
								 ELSE pg_temp.valid(arg.fn::text, o.name, arg.types[o.j - 1]) END
							 || '::' || arg.types[o.j - 1]::text, ', ' ORDER BY o.j)
			 FROM unnest(arg.names) WITH ORDINALITY o(name, j)) || ')' AS call
  FROM arg JOIN hostile_value v ON v.type = arg.type;

SELECT count(*) AS cases, count(DISTINCT fn) AS functions FROM hostile_case;

-- Every case, with what it did.
SELECT fn, arg, class, pg_temp.try(call) AS result
  FROM hostile_case ORDER BY fn, i, class;

-- After all of that, the queue works: a task is submitted, promoted,
-- claimed and completed, and the held task is still running.
SELECT status FROM schedq.task WHERE id = (SELECT held_id FROM setup);
SELECT schedq.submit('after', run_at => now() - interval '1 second', lock_key => 'after') AS after_id \gset
SELECT schedq._promote_once() >= 1 AS promoted;
SELECT schedq.complete(token) FROM schedq.claim('w', queues => '{default}') WHERE id = :after_id;

DROP ROLE regress_hostile_worker;

-- sql/include/setup.sql, the start of several pg_regress files (\i :setup,
-- with PG_ABS_SRCDIR): a fresh schedq, and pg_temp.err(query), which runs
-- query and returns 'SQLSTATE: message' on an error, else 'no error'.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS schedq CASCADE;
RESET client_min_messages;
CREATE EXTENSION schedq;

CREATE FUNCTION pg_temp.err(query text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE query;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

/* sql/schedq--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedq UPDATE TO '1.1'" to load this file. \quit

SET LOCAL search_path TO pg_catalog, pg_temp;

--
-- schedq 1.0 is released and frozen: every schema change since goes here
-- and into schedq--1.1.sql (the full script of a fresh install), and the
-- upgrade suite proves the two give the same catalog.
--

-- metrics(): the counters of this database, no longer of the whole cluster
-- (same signature, so grants on it are kept; the 1.0 symbol still serves a
-- database at 1.0 with the cluster's counters).
CREATE OR REPLACE FUNCTION schedq.metrics(OUT name text, OUT value bigint)
RETURNS SETOF record
LANGUAGE c VOLATILE STRICT
AS 'MODULE_PATHNAME', 'schedq_metrics_1_1';
COMMENT ON FUNCTION schedq.metrics IS 'counters in shared memory, for this database, since the server started';

-- A worker's cycle with one commit per task: finish the attempts of the
-- tokens (as complete_many), then claim (as claim without wait), in one
-- call.  Never waits: with no row returned, the worker waits with
-- await_task or claim(wait => ...) after this call's commit.
CREATE FUNCTION schedq.complete_and_claim(
	tokens text[],
	worker text,
	results jsonb[] DEFAULT NULL,
	queues text[] DEFAULT NULL,
	caps text[] DEFAULT '{}',
	n integer DEFAULT 1,
	lease interval DEFAULT NULL)
RETURNS SETOF schedq.claimed_task
LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'schedq_complete_and_claim';
COMMENT ON FUNCTION schedq.complete_and_claim IS 'complete the grants (stale ones change nothing), then claim up to n tasks, in one transaction; never waits';
REVOKE ALL ON FUNCTION schedq.complete_and_claim FROM PUBLIC;

-- Grant keys are no longer dumped (see schedq--1.1.sql): in 1.0 their COPY
-- collided with the key CREATE EXTENSION makes, and pg_restore failed.
SELECT pg_catalog.pg_extension_config_dump('schedq.grant_key', 'WHERE false');

-- Active tasks by exclusive key: promotion asks whether a key is held
-- without visiting every waiting version of it.
CREATE INDEX task_lock_active_idx ON schedq.task (lock_key)
	WHERE lock_key IS NOT NULL AND status IN ('available', 'running');

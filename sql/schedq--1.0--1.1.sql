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

/* sql/schedq--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedq UPDATE TO '1.1'" to load this file. \quit

SET LOCAL search_path TO pg_catalog, pg_temp;

--
-- schedq 1.0 is released and frozen: every schema change since goes here
-- and into schedq--1.1.sql (the full script of a fresh install), and the
-- upgrade suite proves the two give the same catalog.
--

-- Grant keys are no longer dumped (see schedq--1.1.sql): in 1.0 their COPY
-- collided with the key CREATE EXTENSION makes, and pg_restore failed.
SELECT pg_catalog.pg_extension_config_dump('schedq.grant_key', 'WHERE false');

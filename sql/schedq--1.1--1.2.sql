/* sql/schedq--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION schedq UPDATE TO '1.2'" to load this file. \quit

SET LOCAL search_path TO pg_catalog, pg_temp;

--
-- schedq 1.1 is released and frozen: every schema change since goes here
-- and into schedq--1.2.sql (the full script of a fresh install), and the
-- upgrade suite proves the two give the same catalog.
--

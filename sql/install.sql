-- Installing schedq: the objects it creates, and that PUBLIC gets nothing.
CREATE EXTENSION schedq;
SELECT extversion, extrelocatable, n.nspname
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE extname = 'schedq';

-- Every table, view and sequence of the extension.
SELECT c.relname, c.relkind, c.relrowsecurity
  FROM pg_class c
 WHERE c.relnamespace = 'schedq'::regnamespace AND c.relkind IN ('r', 'v', 'S')
 ORDER BY c.relname;

-- Every function, with its arguments and its SET clauses.
SELECT p.oid::regprocedure AS function, p.proconfig
  FROM pg_proc p
 WHERE p.pronamespace = 'schedq'::regnamespace
 ORDER BY p.proname;

-- PUBLIC has no privilege on the schema, any table, sequence or function.
SELECT count(*) AS public_grants FROM (
	SELECT (aclexplode(nspacl)).grantee FROM pg_namespace WHERE nspname = 'schedq'
	UNION ALL
	SELECT (aclexplode(relacl)).grantee FROM pg_class
	 WHERE relnamespace = 'schedq'::regnamespace
	UNION ALL
	SELECT (aclexplode(proacl)).grantee FROM pg_proc
	 WHERE pronamespace = 'schedq'::regnamespace
) g WHERE grantee = 0;
SELECT count(*) AS functions_without_acl FROM pg_proc
 WHERE pronamespace = 'schedq'::regnamespace AND proacl IS NULL;

-- No function is SECURITY DEFINER, and only the task trigger's function
-- carries SET clauses.  The C functions pin the search path to pg_catalog
-- themselves while they run their queries (privileges.sql shows a hostile
-- search_path changes nothing) and keep JIT off for them
-- (t/001_install.pl shows it).
SELECT count(*) FILTER (WHERE prosecdef) AS security_definer,
	   array_agg(proname ORDER BY proname) FILTER (WHERE proconfig IS NOT NULL) AS with_set_clauses
  FROM pg_proc WHERE pronamespace = 'schedq'::regnamespace;

-- A first grant key exists and holds 32 random bytes.
SELECT kid, length(secret) FROM schedq.grant_key;

-- The tables are dumped with the database.
SELECT count(*) AS dumped_tables
  FROM pg_extension, unnest(extconfig) c WHERE extname = 'schedq';

-- Dropping and creating again works.
DROP EXTENSION schedq;
CREATE EXTENSION schedq;
SELECT count(*) AS keys FROM schedq.grant_key;

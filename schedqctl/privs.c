/*-------------------------------------------------------------------------
 * schedqctl/privs.c
 *	  What each command needs, and the exact GRANTs a role lacks for it.
 *
 *	  A command names the objects it uses (CtlNeeds in schedqctl.h): the
 *	  schema, the functions it calls, the tables it reads.  When the
 *	  server refuses a call for a missing privilege (42501), the hint lists
 *	  a GRANT for each of those objects that the connected role lacks, read
 *	  from the catalog (has_*_privilege) with the function's signature
 *	  (regprocedure), so that an operator can copy them: never more than
 *	  the command needs (never ON ALL FUNCTIONS).  A command that reads
 *	  several tables (status, list) checks them all before it prints
 *	  anything, so that it prints everything or nothing.
 *
 *	  The roles of docs/security.md#roles are named for the wording: a
 *	  worker also needs membership in the roles whose tasks it works on,
 *	  which no catalog lookup can tell, and the hint says so.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "schedqctl.h"

const CtlNeeds ctl_privs_submitter = { CTL_ROLE_SUBMITTER,
									   { "s:schedq", NULL } };

/* show, list, wait: the task table. */
const CtlNeeds ctl_privs_reader = { CTL_ROLE_SUBMITTER,
									{ "s:schedq", "t:task", NULL } };

const CtlNeeds ctl_privs_worker = {
	CTL_ROLE_WORKER,
	{ "s:schedq", "f:claim", "f:heartbeat", "f:complete", "f:complete_many",
	  "f:complete_and_claim", "f:fail", "f:verify_grant", "p:await_task", NULL }
};

/*
 * The missing privileges among needs, as GRANT statements for the current
 * role, one per row, in the order of needs.  $1 is the list of objects
 * ("s:schedq", "f:submit", ...).
 */
static const char *const missing_sql =
	"WITH need AS ("
	"  SELECT pg_catalog.split_part(o, ':', 1) AS k, "
	"         pg_catalog.split_part(o, ':', 2) AS n, i "
	"    FROM pg_catalog.unnest($1::text[]) WITH ORDINALITY AS u(o, i)), "
	"nsp AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = "
	"'schedq'), "
	"r AS (SELECT pg_catalog.quote_ident(current_user::text) AS name) "
	"SELECT g FROM ("
	"  SELECT i, 'GRANT USAGE ON SCHEMA schedq TO ' || r.name || ';' AS g "
	"    FROM need, nsp, r WHERE k = 's' "
	"     AND NOT pg_catalog.has_schema_privilege(nsp.oid, 'USAGE') "
	"  UNION ALL "
	"  SELECT i, 'GRANT SELECT ON schedq.' || pg_catalog.quote_ident(c.relname)"
	"            || ' TO ' || r.name || ';' "
	"    FROM need, nsp, r, pg_catalog.pg_class c "
	"   WHERE k = 't' AND c.relnamespace = nsp.oid AND c.relname = n "
	"     AND NOT pg_catalog.has_table_privilege(c.oid, 'SELECT') "
	"  UNION ALL "
	"  SELECT i, 'GRANT EXECUTE ON ' || CASE k WHEN 'p' THEN 'PROCEDURE ' "
	"            ELSE 'FUNCTION ' END || p.oid::pg_catalog.regprocedure::text"
	"            || ' TO ' || r.name || ';' "
	"    FROM need, nsp, r, pg_catalog.pg_proc p "
	"   WHERE k IN ('f', 'p') AND p.pronamespace = nsp.oid AND p.proname = n "
	"     AND NOT pg_catalog.has_function_privilege(p.oid, 'EXECUTE')"
	") AS m ORDER BY i, g";

/* The objects of needs as a text[] literal. */
static char *
privs_objects(const CtlNeeds *needs)
{
	int n = 0;

	while (n < (int) lengthof(needs->objects) && needs->objects[n] != NULL)
		n++;
	return ctl_text_array((char *const *) needs->objects, n);
}

/*
 * The GRANTs the current role lacks for needs, one per line, each indented,
 * into out.  Returns how many; -1 if the catalog could not be read.
 */
static int
privs_missing(PGconn *conn, const CtlNeeds *needs, PQExpBuffer out)
{
	char	   *objects = privs_objects(needs);
	const char *values[1] = { objects };
	PGresult   *res;
	int			n;

	res = PQexecParams(conn, missing_sql, 1, NULL, values, NULL, NULL, 0);
	n = PQresultStatus(res) == PGRES_TUPLES_OK ? PQntuples(res) : -1;
	for (int i = 0; i < n; i++)
		appendPQExpBuffer(out, "\n  %s", PQgetvalue(res, i, 0));
	/* A worker works on a role's tasks by a work grant of that role. */
	if (n > 0 && needs->role == CTL_ROLE_WORKER)
	{
		const char *user = PQuser(conn);
		/* A plain name as it is, another quoted, as regrole reads it. */
		bool plain = strspn(user, "abcdefghijklmnopqrstuvwxyz0123456789_") ==
						 strlen(user) &&
					 !isdigit((unsigned char) user[0]);
		char *ident =
			plain ? NULL : PQescapeIdentifier(conn, user, strlen(user));
		const char *name = ident ? ident : user;
		char	   *literal = PQescapeLiteral(conn, name, strlen(name));

		if (literal)
			appendPQExpBuffer(out,
							  "\n  SELECT schedq.grant_work(%s, '<submitting "
							  "role>');   -- for each role whose tasks it "
							  "works on",
							  literal);
		PQfreemem(literal);
		PQfreemem(ident);
	}
	ctl_text_check(out);
	PQclear(res);
	pg_free(objects);
	return n;
}

/* The words for the kind of role that needs is for. */
static const char *
privs_who(const CtlNeeds *needs)
{
	switch (needs->role)
	{
		case CTL_ROLE_SUBMITTER:
			return "a submitter";
		case CTL_ROLE_WORKER:
			return "a worker";
		case CTL_ROLE_ADMIN:
		case CTL_ROLE_READER:
		default:
			return "an admin";
	}
}

/*
 * After a refusal for a missing privilege: the hint with the GRANTs the
 * role lacks for what the command needs.  Nothing when the catalog shows
 * none missing (the refusal was for something no GRANT gives).
 */
void
ctl_privs_hint(PGconn *conn, const CtlNeeds *needs)
{
	PQExpBufferData grants;

	initPQExpBuffer(&grants);
	if (privs_missing(conn, needs, &grants) > 0)
		pg_log_error_hint("role \"%s\" lacks a privilege %s needs "
						  "(docs/security.md#roles); a superuser can run:%s",
						  PQuser(conn), privs_who(needs), grants.data);
	termPQExpBuffer(&grants);
}

/*
 * Before a command that reads several objects prints anything: returns
 * EXIT_OK when the role has every privilege of needs, else says which it
 * lacks and returns EXIT_PRIVILEGE (or EXIT_ERROR if the catalog could
 * not be read, EXIT_PRIVILEGE with CREATE EXTENSION without schedq).
 */
int
ctl_privs_require(PGconn *conn, const CtlNeeds *needs, const char *what)
{
	PQExpBufferData grants;
	PGresult	   *ext;
	bool			installed;
	int				n;

	ext = PQexec(conn, "SELECT 1 FROM pg_catalog.pg_extension "
					   "WHERE extname = 'schedq'");
	if (PQresultStatus(ext) != PGRES_TUPLES_OK)
	{
		int rc = ctl_conn_check(conn, ext, NULL, what);

		PQclear(ext);
		return rc;
	}
	installed = PQntuples(ext) == 1;
	PQclear(ext);
	if (!installed)
	{
		pg_log_error("%s: schedq is not installed in database \"%s\"", what,
					 PQdb(conn));
		pg_log_error_hint("a superuser can run CREATE EXTENSION schedq there");
		return EXIT_PRIVILEGE;
	}

	initPQExpBuffer(&grants);
	n = privs_missing(conn, needs, &grants);
	if (n < 0)
	{
		pg_log_error("%s: could not read the catalog: %s", what,
					 PQerrorMessage(conn));
		termPQExpBuffer(&grants);
		return EXIT_ERROR;
	}
	if (n > 0)
	{
		pg_log_error("%s: role \"%s\" lacks %d privilege%s this command "
					 "needs",
					 what, PQuser(conn), n, n == 1 ? "" : "s");
		pg_log_error_hint("see docs/security.md#roles; a superuser can "
						  "run:%s",
						  grants.data);
	}
	termPQExpBuffer(&grants);
	return n > 0 ? EXIT_PRIVILEGE : EXIT_OK;
}

/* What a command that calls one function of schedq needs. */
CtlNeeds
ctl_privs_function(CtlRole role, const char *function)
{
	CtlNeeds needs;

	memset(&needs, 0, sizeof(needs));
	needs.role = role;
	needs.objects[0] = "s:schedq";
	needs.objects[1] = function;
	return needs;
}

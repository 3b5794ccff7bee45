/*-------------------------------------------------------------------------
 * schedqctl/conn.c
 *	  Connecting, and checking a result, for every schedqctl command.
 *
 *	  Connecting is libpq's business: the -d string goes to
 *	  PQconnectdbParams as dbname with expand_dbname, so it may be a
 *	  conninfo string, a URI or a database name, and PG* variables,
 *	  ~/.pgpass and service files apply as for psql.  (fe_utils'
 *	  connectDatabase is not used: it prompts for passwords, pins the
 *	  search path and exits on failure, where schedqctl says why and exits
 *	  3.)
 *
 *	  A refused query is reported with the server's message.  A missing
 *	  privilege gets a hint with the GRANTs of the roles of
 *	  docs/security.md#roles that the command needs, so that an operator
 *	  can copy them; a database without schedq gets CREATE EXTENSION.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "schedqctl.h"

/*
 * Connect with the -d string (NULL: libpq's defaults alone).  Returns NULL,
 * having said why unless quiet, when the connection failed.
 */
PGconn *
ctl_conn_connect(const char *conninfo, bool quiet)
{
	const char *keys[3];
	const char *values[3];
	int			n = 0;
	PGconn	   *conn;

	if (conninfo != NULL)
	{
		keys[n] = "dbname";
		values[n++] = conninfo;
	}
	keys[n] = "fallback_application_name";
	values[n++] = "schedqctl";
	keys[n] = NULL;
	values[n] = NULL;

	conn = PQconnectdbParams(keys, values, 1);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		if (!quiet)
		{
			pg_log_error("could not connect: %s",
						 conn ? PQerrorMessage(conn) : "out of memory");
			if (conn && PQconnectionNeedsPassword(conn))
				pg_log_error_hint(
					"the server asks for a password: put it in ~/.pgpass "
					"(or the file PGPASSFILE names, mode 0600), or use "
					"PGPASSWORD or a service file (schedqctl(1), "
					"ENVIRONMENT)");
		}
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/*
 * Print the GRANTs of the role a command needs, for a role that lacks one
 * of its privileges.
 */
static void
conn_privilege_hint(CtlRole role, const char *user)
{
	const char	   *who;
	const char	   *grants;
	PQExpBufferData hint;

	switch (role)
	{
		case CTL_ROLE_SUBMITTER:
			who = "a submitter";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON FUNCTION schedq.submit, schedq.cancel, "
				"schedq.retry, schedq.schedule, schedq.unschedule TO %s;";
			break;
		case CTL_ROLE_WORKER:
			who = "a worker";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON FUNCTION schedq.claim, schedq.heartbeat, "
				"schedq.complete, schedq.complete_many, "
				"schedq.complete_and_claim, schedq.fail, schedq.verify_grant "
				"TO %s;\n"
				"  GRANT EXECUTE ON PROCEDURE schedq.await_task TO %s;\n"
				"  GRANT <submitting role> TO %s;   -- to work on its tasks";
			break;
		case CTL_ROLE_ADMIN:
			who = "an admin";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA schedq TO %s;\n"
				"  (pause and resume need schedq.pause_queue and "
				"schedq.resume_queue, which %s may not have)";
			break;
		case CTL_ROLE_READER:
		default:
			who = "an admin";
			grants =
				"GRANT USAGE ON SCHEMA schedq TO %s;\n"
				"  GRANT SELECT ON ALL TABLES IN SCHEMA schedq TO %s;\n"
				"  GRANT EXECUTE ON FUNCTION schedq.scheduler_status TO %s;\n"
				"  REVOKE SELECT ON schedq.grant_key FROM %s;";
			break;
	}
	initPQExpBuffer(&hint);
	appendPQExpBuffer(&hint,
					  "role \"%s\" lacks a privilege %s needs "
					  "(docs/security.md#roles); a superuser can run:\n  ",
					  user, who);
	appendPQExpBuffer(&hint, grants, user, user, user, user);
	ctl_text_check(&hint);
	pg_log_error_hint("%s", hint.data);
	termPQExpBuffer(&hint);
}

/* Whether a refusal is for a missing privilege or a missing schedq. */
bool
ctl_conn_refusal_is_privilege(const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return state != NULL &&
		   (strcmp(state, "42501") == 0 || strcmp(state, "3F000") == 0);
}

/*
 * Check a result.  Returns EXIT_OK when it succeeded, else reports the
 * error (with the GRANTs to run when a privilege is missing, or CREATE
 * EXTENSION when schedq is not installed) and returns the exit code.
 * Clears nothing: the caller owns res.
 */
int
ctl_conn_check(PGconn *conn, PGresult *res, CtlRole role, const char *what)
{
	const char *state;

	if (res != NULL && (PQresultStatus(res) == PGRES_TUPLES_OK ||
						PQresultStatus(res) == PGRES_COMMAND_OK))
		return EXIT_OK;

	if (PQstatus(conn) != CONNECTION_OK)
	{
		pg_log_error("%s: connection lost: %s", what, PQerrorMessage(conn));
		return EXIT_CONNECT;
	}
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	pg_log_error("%s: %s", what,
				 res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	if (state != NULL && strcmp(state, "3F000") == 0)
	{
		pg_log_error_hint("schedq is not installed in database \"%s\"; a "
						  "superuser can run CREATE EXTENSION schedq there",
						  PQdb(conn));
		return EXIT_PRIVILEGE;
	}
	if (state != NULL && strcmp(state, "42501") == 0)
	{
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		/*
		 * schedq itself raises 42501 for a task of another role: no GRANT
		 * helps with that, and the server's message says so.
		 */
		if (msg == NULL || strstr(msg, "another role") == NULL)
			conn_privilege_hint(role, PQuser(conn));
		return EXIT_PRIVILEGE;
	}
	return EXIT_ERROR;
}

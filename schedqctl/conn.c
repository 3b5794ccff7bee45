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
 *	  A refused query is reported with the server's message, detail and
 *	  hint, never its CONTEXT (a parameter's number says nothing to the
 *	  user), and the exit code says what kind of refusal it was: a missing
 *	  privilege gets a hint with the exact GRANTs the command needs and the
 *	  role lacks (privs.c), so that an operator can copy them; a database
 *	  without schedq gets CREATE EXTENSION; a value the server refuses is
 *	  a usage error (exit 2), as a bad option is.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "schedqctl.h"

/*
 * Connect with the -d string (NULL: libpq's defaults alone).  Returns NULL
 * when the connection failed, with *why (when why is not NULL) the
 * reason, in libpq's words, in a new allocation.
 */
PGconn *
ctl_conn_open(const char *conninfo, char **why, bool *needs_password)
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
		if (why)
			*why = conn ? ctl_conn_message(conn, NULL) :
						  pg_strdup("out of memory");
		if (needs_password)
			*needs_password = conn && PQconnectionNeedsPassword(conn);
		PQfinish(conn);
		return NULL;
	}
	/* Messages are made of the fields the server sends, never CONTEXT. */
	PQsetErrorContextVisibility(conn, PQSHOW_CONTEXT_NEVER);
	return conn;
}

/*
 * Connect with the -d string to the server another connection reached:
 * its host (or socket directory), port and, when an address was given,
 * its address override those of the string, which may list several hosts
 * (libpq takes the last value of a repeated keyword).  So a worker's
 * second connection talks to the server its first one chose, even when
 * another host of the list now answers first.  Returns NULL when the
 * connection failed.
 */
PGconn *
ctl_conn_open_like(const char *conninfo, PGconn *like)
{
	const char		 *keys[6];
	const char		 *values[6];
	int				  n = 0;
	bool			  hostaddr = false;
	PQconninfoOption *opts = PQconninfo(like);
	PGconn			 *conn;

	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, "hostaddr") == 0 && o->val && o->val[0])
			hostaddr = true;
	PQconninfoFree(opts);
	if (conninfo != NULL)
	{
		keys[n] = "dbname";
		values[n++] = conninfo;
	}
	keys[n] = "fallback_application_name";
	values[n++] = "schedqctl";
	keys[n] = "host";
	values[n++] = PQhost(like);
	keys[n] = "port";
	values[n++] = PQport(like);
	if (hostaddr)
	{
		keys[n] = "hostaddr";
		values[n++] = PQhostaddr(like);
	}
	keys[n] = NULL;
	values[n] = NULL;

	conn = PQconnectdbParams(keys, values, 1);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		PQfinish(conn);
		return NULL;
	}
	PQsetErrorContextVisibility(conn, PQSHOW_CONTEXT_NEVER);
	return conn;
}

/*
 * Connect with the -d string.  Returns NULL, having said why unless quiet,
 * when the connection failed.
 */
PGconn *
ctl_conn_connect(const char *conninfo, bool quiet)
{
	char   *why = NULL;
	bool	needs_password = false;
	PGconn *conn =
		ctl_conn_open(conninfo, quiet ? NULL : &why, &needs_password);

	if (conn == NULL && !quiet)
	{
		pg_log_error("could not connect: %s", why);
		if (needs_password)
			pg_log_error_hint(
				"the server asks for a password: put it in ~/.pgpass "
				"(or the file PGPASSFILE names, mode 0600), or use "
				"PGPASSWORD or a service file (schedqctl(1), "
				"ENVIRONMENT)");
	}
	pg_free(why);
	return conn;
}

/* Whether a refusal is for a missing privilege or a missing schema. */
bool
ctl_conn_refusal_is_privilege(const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return state != NULL &&
		   (strcmp(state, "42501") == 0 || strcmp(state, "3F000") == 0);
}

/*
 * Whether a refusal is for a value: a data exception (class 22: a syntax,
 * a range, a NULL) or a value over a limit (54000).  Such a call fails the
 * same way every time: a usage error, not a failure.
 */
bool
ctl_conn_refusal_is_value(const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return state != NULL && strlen(state) == 5 &&
		   (strncmp(state, "22", 2) == 0 || strcmp(state, "54000") == 0);
}

/*
 * Whether a refusal means that schedq is not installed in the database: its
 * schema is missing (3F000), or one of its objects is (42P01, 42883) and
 * pg_extension has no schedq (the extension was dropped and its schema
 * left).
 */
bool
ctl_conn_schedq_missing(PGconn *conn, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	PGresult   *ext;
	bool		missing;

	if (state == NULL)
		return false;
	if (strcmp(state, "3F000") == 0)
		return true;
	if (strcmp(state, "42P01") != 0 && strcmp(state, "42883") != 0)
		return false;
	ext = PQexec(conn, "SELECT 1 FROM pg_catalog.pg_extension "
					   "WHERE extname = 'schedq'");
	missing = PQresultStatus(ext) == PGRES_TUPLES_OK && PQntuples(ext) == 0;
	PQclear(ext);
	return missing;
}

/*
 * The server's message of a failed result (or of the connection), in a
 * new allocation: its primary text alone, without the "ERROR:" prefix,
 * the position or the CONTEXT lines.
 */
char *
ctl_conn_message(PGconn *conn, const PGresult *res)
{
	const char *primary =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char *msg;

	if (primary != NULL)
		return pg_strdup(primary);
	msg = pg_strdup(res && PQresultErrorMessage(res)[0] ?
						PQresultErrorMessage(res) :
						PQerrorMessage(conn));
	/* libpq's own messages end in a newline. */
	while (msg[0] && msg[strlen(msg) - 1] == '\n')
		msg[strlen(msg) - 1] = '\0';
	return msg;
}

/*
 * Report a failed result: "what: message", then the server's detail and
 * hint, if any.  Never the CONTEXT: the server's internals (a parameter's
 * number, a PL/pgSQL line) say nothing to the user.
 */
void
ctl_conn_report(PGconn *conn, const PGresult *res, const char *what)
{
	char	   *msg = ctl_conn_message(conn, res);
	const char *detail =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	const char *hint =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;

	pg_log_error("%s: %s", what, msg);
	if (detail)
		pg_log_error_detail("%s", detail);
	if (hint)
		pg_log_error_hint("%s", hint);
	pg_free(msg);
}

/*
 * Check a result.  Returns EXIT_OK when it succeeded, else reports the
 * error and returns the exit code: EXIT_CONNECT for a lost connection,
 * EXIT_PRIVILEGE for a missing privilege (with the exact GRANTs of what
 * the command needs and the role lacks) or a database without schedq
 * (with CREATE EXTENSION), EXIT_USAGE for a value the server refuses,
 * EXIT_ERROR for anything else.  Clears nothing: the caller owns res.
 */
int
ctl_conn_check(PGconn *conn, PGresult *res, const CtlNeeds *needs,
			   const char *what)
{
	const char *state;

	if (res != NULL && (PQresultStatus(res) == PGRES_TUPLES_OK ||
						PQresultStatus(res) == PGRES_COMMAND_OK))
		return EXIT_OK;

	if (PQstatus(conn) != CONNECTION_OK)
	{
		char *msg = ctl_conn_message(conn, res);

		pg_log_error("%s: connection lost: %s", what, msg);
		pg_free(msg);
		return EXIT_CONNECT;
	}
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	ctl_conn_report(conn, res, what);
	if (ctl_conn_schedq_missing(conn, res))
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
		if (needs != NULL &&
			(msg == NULL || strstr(msg, "another role") == NULL))
			ctl_privs_hint(conn, needs);
		return EXIT_PRIVILEGE;
	}
	if (ctl_conn_refusal_is_value(res))
		return EXIT_USAGE;
	return EXIT_ERROR;
}

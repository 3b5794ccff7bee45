/*-------------------------------------------------------------------------
 * schedqctl/websession.c
 *	  schedqctl web: sessions, sign-in, cookies and CSRF tokens.
 *
 *	  Signing in is PostgreSQL's own authentication: the browser sends a
 *	  role and its password, and the console connects to the database of
 *	  -d as that role (the role and password given override any in -d).
 *	  Whatever the server's pg_hba.conf and the role's privileges allow is
 *	  what the session may do; the console holds no privilege of its own.
 *	  The password must be one the server asked for (connect_as): never
 *	  the console's own.  A refusal is "sign-in failed" to the browser,
 *	  its reason on stderr.  The password is not kept by the console
 *	  (libpq keeps it in the session's connections, to reconnect a broken
 *	  one).
 *
 *	  A session is a random 256-bit id (the HttpOnly, SameSite=Strict
 *	  cookie schedq_session; Secure over TLS), a random 256-bit CSRF token
 *	  (which the page reads from GET /api/session and sends in the
 *	  X-CSRF-Token header of every POST), and WEB_SESSION_CONNS libpq
 *	  connections as the role, which its requests borrow; over TLS the
 *	  cookies have the __Host- prefix.  At most WEB_MAX_SESSIONS sessions,
 *	  WEB_SESSIONS_PER_ROLE open ones of a role; beyond, a sign-in is
 *	  refused (503) rather than push out an open session.  One idle for
 *	  WEB_SESSION_IDLE seconds is closed, and a browser's session when it
 *	  signs in again.  Every statement has WEB_STATEMENT_TIMEOUT.  Signing
 *	  in itself is guarded by a token too (the schedq_login cookie, echoed
 *	  in the header), so that no other site can sign a browser in as a
 *	  role of its choosing.
 *
 *	  --read-only --no-sign-in: no sign-in; one shared session connects
 *	  with -d's conninfo alone, with default_transaction_read_only on (its
 *	  role is the operator's choice, e.g. a monitor; never one that reads
 *	  every payload: shared_role_ok), and cannot be signed out of.
 *
 *	  Every session is in one array under one mutex; a session in use by a
 *	  request (refs > 0) is never freed under it.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <pthread.h>
#include <sys/random.h>
#include <time.h>

#include "common/logging.h"
#include "schedqctl.h"
#include "web.h"

#define WEB_SHARED_CONNS 4

struct WebSession
{
	bool	  used;
	bool	  closing;
	char	  id[WEB_ID_HEX + 1];
	char	  csrf[WEB_ID_HEX + 1];
	char	 *user;
	char	 *database;
	WebSource source;
	time_t	  last_used;
	int		  refs;
	int		  nconns;
	PGconn	 *conns[WEB_SHARED_CONNS];
	bool	  busy[WEB_SHARED_CONNS];
};

static WebSession	   sessions[WEB_MAX_SESSIONS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  freed = PTHREAD_COND_INITIALIZER;
static const char	  *web_conninfo;
static bool			   web_read_only;
static bool			   web_no_sign_in;
static bool			   web_tls;
static char			  *web_options;

/*
 * 256 random bits from the kernel (getrandom), as 64 hex digits; exits if
 * the system has none.
 */
void
ctl_websession_random_hex(char *hex)
{
	unsigned char bytes[WEB_ID_BYTES];
	size_t		  got = 0;

	while (got < sizeof(bytes))
	{
		ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);

		if (n < 0 && errno != EINTR)
			pg_fatal("web: could not get random bytes from the system: %m");
		if (n > 0)
			got += (size_t) n;
	}
	for (int i = 0; i < WEB_ID_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
	explicit_bzero(bytes, sizeof(bytes));
}

/* Compare two tokens in a time that does not depend on where they differ. */
static bool
token_equal(const char *a, const char *b)
{
	unsigned char diff = 0;

	if (a == NULL || b == NULL || strlen(a) != WEB_ID_HEX ||
		strlen(b) != WEB_ID_HEX)
		return false;
	for (int i = 0; i < WEB_ID_HEX; i++)
		diff |= (unsigned char) (a[i] ^ b[i]);
	return diff == 0;
}

bool
ctl_websession_tls(void)
{
	return web_tls;
}

/*
 * The name of the session's cookie (login: of the sign-in token's).  Over
 * TLS with the __Host- prefix, which a browser accepts only from a secure
 * origin, with Path=/ and no Domain: no other host (a sibling subdomain)
 * can set or shadow it.  Over plain HTTP the prefix would make the
 * browser drop the cookie (it needs Secure), so the plain name.
 */
const char *
ctl_websession_cookie_name(bool login)
{
	if (login)
		return web_tls ? "__Host-schedq_login" : "schedq_login";
	return web_tls ? "__Host-schedq_session" : "schedq_session";
}

bool
ctl_websession_read_only(void)
{
	return web_read_only;
}

/*
 * Connect as a role (user NULL: -d's own), with its password and the
 * console's options.  Returns NULL, with *why, when the server refused.
 *
 * Signing in as a role proves its password to the server, and nothing
 * else counts: the password is given explicitly, no password file is read
 * (passfile=/dev/null; PGPASSWORD never applies as a password is given),
 * and a connection the server let in without asking for the password
 * (trust, peer, ident, a client certificate, GSSAPI) is refused.
 */
static PGconn *
connect_as(const char *user, const char *password, char **why)
{
	const char *keys[9];
	const char *values[9];
	int			n = 0;
	PGconn	   *conn;

	if (web_conninfo != NULL)
	{
		keys[n] = "dbname";
		values[n++] = web_conninfo;
	}
	if (user != NULL)
	{
		keys[n] = "user";
		values[n++] = user;
		keys[n] = "password";
		values[n++] = password;
		keys[n] = "passfile";
		values[n++] = "/dev/null";
	}
	keys[n] = "options";
	values[n++] = web_options;
	keys[n] = "fallback_application_name";
	values[n++] = "schedqctl web";
	keys[n] = "connect_timeout";
	values[n++] = "10";
	keys[n] = NULL;
	values[n] = NULL;
	conn = PQconnectdbParams(keys, values, 1);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK)
	{
		*why = conn ? ctl_conn_message(conn, NULL) : pg_strdup("out of memory");
		PQfinish(conn);
		return NULL;
	}
	if (user != NULL && !PQconnectionUsedPassword(conn))
	{
		*why = psprintf("the server let role \"%s\" in without its password "
						"(pg_hba.conf: sign-in needs a password method, such "
						"as scram-sha-256)",
						user);
		PQfinish(conn);
		return NULL;
	}
	PQsetErrorContextVisibility(conn, PQSHOW_CONTEXT_NEVER);
	/*
	 * The console's queries are short index reads whose estimated cost can
	 * still pass jit_above_cost: compiling them would take longer (hundreds
	 * of milliseconds) than running them.
	 */
	PQclear(PQexec(conn, "SET jit = off"));
	return conn;
}

/*
 * Which tables the role reads: schedq.task and its own views when it may
 * (row-level security shows it its tasks, with their payloads), else a
 * monitor's all_ views when it may read them (every task, no payloads:
 * docs/security.md#roles), else its own (the pages then show the
 * database's refusals).
 */
static WebSource
detect_source(PGconn *conn)
{
	PGresult *res =
		PQexec(conn,
			   "SELECT pg_catalog.bool_or(c.relname = 'task' AND "
			   "pg_catalog.has_table_privilege(c.oid, 'SELECT')), "
			   "pg_catalog.count(*) FILTER (WHERE c.relname IN ('all_tasks', "
			   "'all_queue_stats', 'all_worker_status') AND "
			   "pg_catalog.has_table_privilege(c.oid, 'SELECT')) = 3 "
			   "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
			   "ON n.oid = c.relnamespace WHERE n.nspname = 'schedq' "
			   "AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')");
	WebSource source = WEB_SOURCE_OWN;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), "t") != 0 &&
		strcmp(PQgetvalue(res, 0, 1), "t") == 0)
		source = WEB_SOURCE_MONITOR;
	PQclear(res);
	return source;
}

/* Close a session's connections and free its slot (lock held). */
static void
session_free(WebSession *s)
{
	for (int i = 0; i < s->nconns; i++)
		PQfinish(s->conns[i]);
	pg_free(s->user);
	pg_free(s->database);
	explicit_bzero(s->id, sizeof(s->id));
	explicit_bzero(s->csrf, sizeof(s->csrf));
	memset(s, 0, sizeof(*s));
}

/*
 * A session for these connections (lock held): a free slot, or that of a
 * session signed out of or idle too long; never one still open.  NULL,
 * with *why, when every slot is taken by an open session or the role has
 * WEB_SESSIONS_PER_ROLE open already (old, the browser's previous session,
 * is not counted: it is closed when the new one opens).
 */
static WebSession *
session_new(PGconn **conns, int n, const char *user, WebSource source,
			WebSession *old, const char **why)
{
	WebSession *s = NULL;
	time_t		now = time(NULL);
	int			of_role = 0;

	for (int i = 0; i < WEB_MAX_SESSIONS; i++)
	{
		WebSession *t = &sessions[i];
		bool		open = t->used && !t->closing &&
					(web_no_sign_in || now - t->last_used <= WEB_SESSION_IDLE);

		if (open && t != old && strcmp(t->user, user) == 0)
			of_role++;
		if (s == NULL && (!t->used || (!open && t->refs == 0)))
			s = t;
	}
	*why = NULL;
	if (of_role >= WEB_SESSIONS_PER_ROLE)
		*why = "too many sessions of this role; sign out of one, or try "
			   "again later";
	else if (s == NULL)
		*why = "too many sessions; try again later";
	if (*why != NULL)
		return NULL;
	if (s->used)
		session_free(s);
	if (old != NULL)
		old->closing = true;
	s->used = true;
	ctl_websession_random_hex(s->id);
	ctl_websession_random_hex(s->csrf);
	s->user = pg_strdup(user);
	s->database = pg_strdup(PQdb(conns[0]));
	s->source = source;
	s->last_used = now;
	s->nconns = n;
	for (int i = 0; i < n; i++)
		s->conns[i] = conns[i];
	return s;
}

/*
 * The options of -d (or PGOPTIONS) with the console's own: a statement
 * runs at most WEB_STATEMENT_TIMEOUT, and the shared session of
 * --no-sign-in writes nothing, whatever its role.
 */
static char *
console_options(bool read_only)
{
	PQconninfoOption *opts =
		web_conninfo ? PQconninfoParse(web_conninfo, NULL) : NULL;
	const char *given = getenv("PGOPTIONS");
	char	   *result;

	for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++)
		if (strcmp(o->keyword, "options") == 0 && o->val != NULL)
			given = o->val;
	result = psprintf("%s -c statement_timeout=%s%s", given ? given : "",
					  WEB_STATEMENT_TIMEOUT,
					  read_only ? " -c default_transaction_read_only=on" : "");
	PQconninfoFree(opts);
	return result;
}

/*
 * --no-sign-in serves every browser that reaches it as -d's role: refuse a
 * role that reads every task's payload whatever row-level security says
 * (a superuser, BYPASSRLS, the owner of schedq.task or a member of it).
 * Returns false, having said why, for such a role.
 */
static bool
shared_role_ok(PGconn *conn)
{
	PGresult *res =
		PQexec(conn,
			   "SELECT r.rolsuper, r.rolbypassrls, "
			   "COALESCE((SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') "
			   "FROM pg_catalog.pg_class c WHERE c.oid = "
			   "pg_catalog.to_regclass('schedq.task')), false) "
			   "FROM pg_catalog.pg_roles r WHERE r.rolname = current_user");
	const char *why = NULL;

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		why = "its attributes could not be read";
	else if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
		why = "is a superuser";
	else if (strcmp(PQgetvalue(res, 0, 1), "t") == 0)
		why = "bypasses row-level security (BYPASSRLS)";
	else if (strcmp(PQgetvalue(res, 0, 2), "t") == 0)
		why = "owns schedq.task";
	if (why != NULL)
		pg_log_error("web: --no-sign-in as role \"%s\", which %s, would show "
					 "every task's payload to anyone who reaches the console; "
					 "use a monitor role (docs/security.md#roles)",
					 PQuser(conn), why);
	PQclear(res);
	return why == NULL;
}

/*
 * Returns EXIT_OK, or the exit status of schedqctl web when the shared
 * session of --no-sign-in cannot be made.
 */
int
ctl_websession_init(const char *conninfo, bool read_only, bool no_sign_in,
					bool tls)
{
	web_conninfo = conninfo;
	web_read_only = read_only;
	web_no_sign_in = no_sign_in;
	web_tls = tls;
	web_options = console_options(no_sign_in);
	if (no_sign_in)
	{
		PGconn	   *conns[WEB_SHARED_CONNS];
		char	   *why = NULL;
		const char *full = NULL;

		for (int i = 0; i < WEB_SHARED_CONNS; i++)
		{
			conns[i] = connect_as(NULL, NULL, &why);
			if (conns[i] == NULL || (i == 0 && !shared_role_ok(conns[0])))
			{
				if (conns[i] == NULL)
					pg_log_error("web: could not connect: %s", why);
				for (int j = 0; j <= i; j++)
					PQfinish(conns[j]);
				return conns[i] == NULL ? EXIT_CONNECT : EXIT_USAGE;
			}
		}
		session_new(conns, WEB_SHARED_CONNS, PQuser(conns[0]),
					detect_source(conns[0]), NULL, &full);
	}
	return EXIT_OK;
}

/*
 * The session of a cookie's id, with a reference held (give it back with
 * ctl_websession_release), or NULL.  Closes the sessions idle too long.
 */
WebSession *
ctl_websession_find(const char *id)
{
	WebSession *found = NULL;
	time_t		now = time(NULL);

	pthread_mutex_lock(&lock);
	for (int i = 0; i < WEB_MAX_SESSIONS; i++)
	{
		WebSession *s = &sessions[i];

		if (!s->used)
			continue;
		/* without sign-in, the one shared session; else the cookie's */
		if (!web_no_sign_in && s->refs == 0 &&
			(s->closing || now - s->last_used > WEB_SESSION_IDLE))
			session_free(s);
		else if (web_no_sign_in || (!s->closing && token_equal(s->id, id)))
			found = s;
		if (found)
			break;
	}
	if (found)
	{
		found->refs++;
		found->last_used = now;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

void
ctl_websession_release(WebSession *session)
{
	pthread_mutex_lock(&lock);
	session->refs--;
	if (session->refs == 0 && session->closing)
		session_free(session);
	pthread_mutex_unlock(&lock);
}

/* A free connection of the session; waits up to 10 seconds for one. */
PGconn *
ctl_websession_borrow(WebSession *session)
{
	struct timespec until;
	PGconn		   *conn = NULL;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&lock);
	while (conn == NULL)
	{
		for (int i = 0; i < session->nconns && conn == NULL; i++)
			if (!session->busy[i])
			{
				session->busy[i] = true;
				conn = session->conns[i];
			}
		if (conn == NULL && pthread_cond_timedwait(&freed, &lock, &until) != 0)
			break;
	}
	pthread_mutex_unlock(&lock);
	return conn;
}

/* Give a connection back; a broken one is connected again first. */
void
ctl_websession_give_back(WebSession *session, PGconn *conn, bool broken)
{
	if (broken)
		PQreset(conn);
	else if (PQtransactionStatus(conn) != PQTRANS_IDLE)
	{
		PGresult *res = PQexec(conn, "ROLLBACK");

		PQclear(res);
	}
	pthread_mutex_lock(&lock);
	for (int i = 0; i < session->nconns; i++)
		if (session->conns[i] == conn)
			session->busy[i] = false;
	pthread_cond_broadcast(&freed);
	pthread_mutex_unlock(&lock);
}

bool
ctl_websession_csrf_ok(WebSession *session, const char *token)
{
	return token_equal(session->csrf, token);
}

WebSource
ctl_websession_source(WebSession *session)
{
	return session->source;
}

const char *
ctl_websession_user(WebSession *session)
{
	return session->user;
}

/* GET /api/session of a signed-in browser. */
void
ctl_websession_describe(WebSession *session, PQExpBuffer out)
{
	appendPQExpBufferStr(out, "{\"signedIn\":true,\"user\":");
	ctl_web_json_string(out, session->user);
	appendPQExpBufferStr(out, ",\"database\":");
	ctl_web_json_string(out, session->database);
	appendPQExpBuffer(out,
					  ",\"source\":\"%s\",\"readOnly\":%s,\"signOut\":%s,"
					  "\"csrf\":\"%s\"}",
					  session->source == WEB_SOURCE_MONITOR ? "monitor" : "own",
					  web_read_only ? "true" : "false",
					  web_no_sign_in ? "false" : "true", session->csrf);
}

/*
 * text for one line of the log, in a new buffer: a backslash, a double
 * quote and every control character (a newline, a carriage return, an
 * escape sequence of a terminal) as a backslash escape, so that a role
 * name typed into the sign-in form cannot end the line and forge another,
 * nor break out of the quotes around it.  Other bytes (UTF-8) stay.
 */
static char *
log_escape(const char *text)
{
	PQExpBufferData buf;

	initPQExpBuffer(&buf);
	for (const unsigned char *c = (const unsigned char *) text; *c; c++)
	{
		if (*c == '\\' || *c == '"')
			appendPQExpBuffer(&buf, "\\%c", *c);
		else if (*c == '\n')
			appendPQExpBufferStr(&buf, "\\n");
		else if (*c == '\r')
			appendPQExpBufferStr(&buf, "\\r");
		else if (*c == '\t')
			appendPQExpBufferStr(&buf, "\\t");
		else if (*c < 0x20 || *c == 0x7f)
			appendPQExpBuffer(&buf, "\\x%02x", *c);
		else
			appendPQExpBufferChar(&buf, (char) *c);
	}
	return buf.data;
}

/*
 * POST /api/login: connect as the role.  Returns the HTTP status; the
 * answer goes to out, the session's cookie to cookie.
 */
int
ctl_websession_login(const char *user, const char *password, WebSession *old,
					 PQExpBuffer out, char *cookie, size_t cookie_len)
{
	PGconn	   *conns[WEB_SESSION_CONNS];
	char	   *why = NULL;
	const char *full = NULL;
	WebSession *s;
	WebSource	source;
	WebCall		call = { 0 };

	call.out = out;
	if (web_no_sign_in)
	{
		ctl_web_json_error(&call, 400, "this console has no sign-in", NULL);
		return 400;
	}
	if (user == NULL || strlen(user) > 63)
	{
		ctl_web_json_error(&call, 400,
						   "a role name (at most 63 bytes) is needed", NULL);
		return 400;
	}
	if (password == NULL || password[0] == '\0')
	{
		ctl_web_json_error(&call, 400, "a password is needed", NULL);
		return 400;
	}
	for (int i = 0; i < WEB_SESSION_CONNS; i++)
	{
		conns[i] = connect_as(user, password, &why);
		if (conns[i] == NULL)
		{
			char *user_esc = log_escape(user);
			char *why_esc = log_escape(why);

			/*
			 * The browser learns only that it failed; the reason (which may
			 * name the server, and the role again) goes to the console's log,
			 * escaped: the name is the client's.
			 */
			pg_log_warning("web: sign-in as \"%s\" failed: %s", user_esc,
						   why_esc);
			free(user_esc);
			free(why_esc);
			for (int j = 0; j < i; j++)
				PQfinish(conns[j]);
			ctl_web_json_error(&call, 401,
							   "sign-in failed: wrong role or password, or "
							   "the server refused it",
							   NULL);
			pg_free(why);
			return 401;
		}
	}
	/* a round trip: not under the lock */
	source = detect_source(conns[0]);
	pthread_mutex_lock(&lock);
	s = session_new(conns, WEB_SESSION_CONNS, user, source, old, &full);
	if (s != NULL)
	{
		snprintf(cookie, cookie_len,
				 "%s=%s; Path=/; HttpOnly; SameSite=Strict%s",
				 ctl_websession_cookie_name(false), s->id,
				 web_tls ? "; Secure" : "");
		ctl_websession_describe(s, out);
	}
	pthread_mutex_unlock(&lock);
	if (s == NULL)
	{
		for (int i = 0; i < WEB_SESSION_CONNS; i++)
			PQfinish(conns[i]);
		ctl_web_json_error(&call, 503, full, NULL);
		return 503;
	}
	return 200;
}

/*
 * Sign out: the session closes once its requests are done.  Returns false
 * without sign-in (the shared session stays).
 */
bool
ctl_websession_logout(WebSession *session)
{
	if (web_no_sign_in)
		return false;
	pthread_mutex_lock(&lock);
	session->closing = true;
	pthread_mutex_unlock(&lock);
	return true;
}

/* A sign-in token: random, checked only against the browser's cookie. */
void
ctl_websession_login_token(char *hex)
{
	ctl_websession_random_hex(hex);
}

bool
ctl_websession_login_token_ok(const char *cookie, const char *token)
{
	return token_equal(cookie, token);
}

void
ctl_websession_shutdown(void)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < WEB_MAX_SESSIONS; i++)
		if (sessions[i].used)
			session_free(&sessions[i]);
	pthread_mutex_unlock(&lock);
}

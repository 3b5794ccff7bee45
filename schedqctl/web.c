/*-------------------------------------------------------------------------
 * schedqctl/web.c
 *	  schedqctl web: a live console in a browser.
 *
 *	  An HTTP server (libmicrohttpd, a pool of four threads) serving the
 *	  console's static files (web/, embedded) and a JSON API (webapi.c,
 *	  webact.c) over the sessions of websession.c.  It binds the loopback
 *	  address by default, and answers only to its own names (the Host
 *	  header: --listen, the loopback names, --allow-host); with --tls-cert
 *	  and --tls-key it speaks HTTPS only.  Bounded: at most WEB_MAX_BODY
 *	  bytes of request body, 32 KB of headers per connection, 64
 *	  connections (16 per client address), 30 seconds of idle time per
 *	  connection.
 *
 *	  Every answer carries a strict Content-Security-Policy (scripts and
 *	  styles from the console's own files only, nothing inline), nosniff,
 *	  no framing and no referrer; the JSON answers are application/json
 *	  and never cached.  A POST needs the session's CSRF token in the
 *	  X-CSRF-Token header (sign-in: the token of the schedq_login cookie),
 *	  and a form body (application/x-www-form-urlencoded).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "common/logging.h"
#include "getopt_long.h"
#include "schedqctl.h"
#include "web.h"

#define WEB_MAX_ARGS 16

#define WEB_CSP                                                                \
	"default-src 'none'; script-src 'self'; style-src 'self'; "                \
	"img-src 'self'; connect-src 'self'; form-action 'none'; "                 \
	"frame-ancestors 'none'; base-uri 'none'"

/*
 * The Host headers accepted, whatever the address listened on: the HOST:PORT
 * of --listen as given, localhost, 127.0.0.1 and [::1] with its port, and
 * each --allow-host NAME (alone, and with the port when it has none).  A
 * page of another site that makes its name resolve to an address of the
 * console (DNS rebinding) sends its own name, and is refused (421).
 */
#define WEB_MAX_HOSTS 36
static char *allowed_hosts[WEB_MAX_HOSTS];
static int	 n_allowed_hosts;

static void
allow_host(char *host)
{
	if (n_allowed_hosts < WEB_MAX_HOSTS)
		allowed_hosts[n_allowed_hosts++] = host;
}

static bool
host_allowed(const char *host)
{
	for (int i = 0; host != NULL && i < n_allowed_hosts; i++)
		if (pg_strcasecmp(host, allowed_hosts[i]) == 0)
			return true;
	return false;
}

/* An --allow-host name: a DNS name or an address, with or without :PORT. */
static bool
valid_host(const char *name)
{
	return name[0] != '\0' && strlen(name) <= 255 &&
		   strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						"0123456789.-:[]") == strlen(name);
}

/* One request: its body, as it arrives, and the form fields parsed. */
typedef struct WebRequest
{
	PQExpBuffer body;
	bool		too_large;
	int			nargs;
	char	   *names[WEB_MAX_ARGS];
	char	   *values[WEB_MAX_ARGS];
} WebRequest;

/* The arguments of a GET: the query string, which libmicrohttpd decodes. */
static const char *
get_arg(const WebCall *call, const char *name)
{
	const char *v =
		MHD_lookup_connection_value((struct MHD_Connection *) call->arg_state,
									MHD_GET_ARGUMENT_KIND, name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The arguments of a POST: the form fields of its body. */
static const char *
post_arg(const WebCall *call, const char *name)
{
	const WebRequest *req = call->arg_state;

	for (int i = 0; i < req->nargs; i++)
		if (strcmp(req->names[i], name) == 0)
			return req->values[i][0] != '\0' ? req->values[i] : NULL;
	return NULL;
}

/* Decode application/x-www-form-urlencoded text in place. */
static void
form_decode(char *s)
{
	char *out = s;

	for (; *s; s++)
	{
		if (*s == '+')
			*out++ = ' ';
		else if (*s == '%' && isxdigit((unsigned char) s[1]) &&
				 isxdigit((unsigned char) s[2]))
		{
			char hex[3] = { s[1], s[2], '\0' };

			*out++ = (char) strtol(hex, NULL, 16);
			s += 2;
		}
		else
			*out++ = *s;
	}
	*out = '\0';
}

/* Split the body of a form into its fields (at most WEB_MAX_ARGS). */
static void
form_parse(WebRequest *req)
{
	char *save = NULL;

	for (char *f = strtok_r(req->body->data, "&", &save);
		 f != NULL && req->nargs < WEB_MAX_ARGS; f = strtok_r(NULL, "&", &save))
	{
		char *eq = strchr(f, '=');

		if (eq == NULL)
			continue;
		*eq = '\0';
		form_decode(f);
		form_decode(eq + 1);
		req->names[req->nargs] = f;
		req->values[req->nargs++] = eq + 1;
	}
}

/* Append s as a JSON string, quotes included. */
void
ctl_web_json_string(PQExpBuffer buf, const char *s)
{
	if (s == NULL)
	{
		appendPQExpBufferStr(buf, "null");
		return;
	}
	ctl_text_json_string(buf, s, strlen(s), (size_t) 1 << 20, NULL);
}

/* Answer {"error": message, "sqlstate": ...} with HTTP status. */
void
ctl_web_json_error(WebCall *call, int status, const char *message,
				   const char *sqlstate)
{
	resetPQExpBuffer(call->out);
	appendPQExpBufferStr(call->out, "{\"error\":");
	ctl_web_json_string(call->out, message);
	appendPQExpBufferStr(call->out, ",\"sqlstate\":");
	ctl_web_json_string(call->out, sqlstate);
	appendPQExpBufferStr(call->out, "}");
	call->status = status;
}

/*
 * Answer a refused statement with the database's message (and its detail
 * and hint): 403 for a missing privilege, 503 for a lost connection, 400
 * otherwise.
 */
void
ctl_web_json_result_error(WebCall *call, PGconn *conn, const PGresult *res)
{
	char	   *msg = ctl_conn_message(conn, res);
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *detail =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	const char *hint =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
	int status = 400;

	if (PQstatus(conn) != CONNECTION_OK)
		status = 503;
	else if (ctl_conn_refusal_is_privilege(res))
		status = 403;
	ctl_web_json_error(call, status, msg, state);
	/* the detail and hint go in before the closing brace */
	call->out->len--;
	call->out->data[call->out->len] = '\0';
	appendPQExpBufferStr(call->out, ",\"detail\":");
	ctl_web_json_string(call->out, detail);
	appendPQExpBufferStr(call->out, ",\"hint\":");
	ctl_web_json_string(call->out, hint);
	appendPQExpBufferStr(call->out, "}");
	pg_free(msg);
}

/*
 * Run a query whose one row and column is a JSON text, and answer it.
 * Returns false, having answered the error, when it was refused.
 */
bool
ctl_web_query_json(WebCall *call, const char *sql, int nparams,
				   const char *const *values)
{
	PGresult *res =
		PQexecParams(call->conn, sql, nparams, NULL, values, NULL, NULL, 0);
	bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			  PQnfields(res) == 1;

	if (ok)
	{
		resetPQExpBuffer(call->out);
		appendPQExpBufferStr(call->out, PQgetisnull(res, 0, 0) ?
											"null" :
											PQgetvalue(res, 0, 0));
		call->status = 200;
	}
	else
		ctl_web_json_result_error(call, call->conn, res);
	PQclear(res);
	return ok;
}

/* Queue an answer with the headers every answer carries. */
static enum MHD_Result
respond(struct MHD_Connection *c, int status, const char *type,
		const void *data, size_t len, bool copy, const char *cookie)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *) data,
										copy ? MHD_RESPMEM_MUST_COPY :
											   MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Content-Security-Policy", WEB_CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (ctl_websession_tls())
		MHD_add_response_header(r, "Strict-Transport-Security",
								"max-age=31536000");
	if (cookie != NULL)
		MHD_add_response_header(r, "Set-Cookie", cookie);
	ret = MHD_queue_response(c, (unsigned int) status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
respond_json(struct MHD_Connection *c, int status, PQExpBuffer out,
			 const char *cookie)
{
	return respond(c, status, "application/json; charset=utf-8", out->data,
				   out->len, true, cookie);
}

static enum MHD_Result
respond_error(struct MHD_Connection *c, int status, const char *message)
{
	PQExpBuffer		out = createPQExpBuffer();
	WebCall			call = { 0 };
	enum MHD_Result ret;

	call.out = out;
	ctl_web_json_error(&call, status, message, NULL);
	ret = respond_json(c, status, out, NULL);
	destroyPQExpBuffer(out);
	return ret;
}

/* GET /api/session and POST /api/login, /api/logout. */
static enum MHD_Result
handle_session(struct MHD_Connection *c, const char *url, bool post,
			   WebRequest *req, WebSession *session)
{
	PQExpBuffer		out = createPQExpBuffer();
	char			cookie[256];
	enum MHD_Result ret;
	int				status = 200;

	cookie[0] = '\0';
	if (!post && session != NULL)
		ctl_websession_describe(session, out);
	else if (!post)
	{
		char token[WEB_ID_HEX + 1];

		/* not signed in: a fresh sign-in token, also as a cookie */
		ctl_websession_login_token(token);
		snprintf(cookie, sizeof(cookie),
				 "%s=%s; Path=/; HttpOnly; SameSite=Strict%s",
				 ctl_websession_cookie_name(true), token,
				 ctl_websession_tls() ? "; Secure" : "");
		appendPQExpBuffer(out, "{\"signedIn\":false,\"loginToken\":\"%s\"}",
						  token);
	}
	else if (strcmp(url, "/api/logout") == 0)
	{
		if (session == NULL)
			status = 401;
		else if (!ctl_websession_csrf_ok(
					 session, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
														  "X-CSRF-Token")))
			status = 403;
		else if (!ctl_websession_logout(session))
		{
			status = 400;
			appendPQExpBufferStr(out, "{\"error\":\"this console has no "
									  "sign-in\",\"sqlstate\":null}");
		}
		else
		{
			snprintf(cookie, sizeof(cookie),
					 "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0%s",
					 ctl_websession_cookie_name(false),
					 ctl_websession_tls() ? "; Secure" : "");
		}
		if (out->len == 0)
			appendPQExpBufferStr(out, "{\"signedIn\":false}");
	}
	else
	{
		WebCall call = { 0 };

		call.arg = post_arg;
		call.arg_state = req;
		if (!ctl_websession_login_token_ok(
				MHD_lookup_connection_value(c, MHD_COOKIE_KIND,
											ctl_websession_cookie_name(true)),
				MHD_lookup_connection_value(c, MHD_HEADER_KIND,
											"X-CSRF-Token")))
		{
			call.out = out;
			ctl_web_json_error(&call, 403, "missing or wrong CSRF token", NULL);
			status = 403;
		}
		else
			status = ctl_websession_login(post_arg(&call, "user"),
										  post_arg(&call, "password"), session,
										  out, cookie, sizeof(cookie));
	}
	ret = respond_json(c, status, out, cookie[0] ? cookie : NULL);
	destroyPQExpBuffer(out);
	return ret;
}

/* GET /api/NAME and POST /api/action/NAME, for a signed-in session. */
static enum MHD_Result
handle_api(struct MHD_Connection *c, const char *url, bool post,
		   WebRequest *req, WebSession *session)
{
	WebCall			call = { 0 };
	PQExpBuffer		out;
	enum MHD_Result ret;
	bool			found;
	const char	   *name;

	if (post)
	{
		if (strncmp(url, "/api/action/", 12) != 0)
			return respond_error(c, 404, "no such action");
		if (!ctl_websession_csrf_ok(
				session, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
													 "X-CSRF-Token")))
			return respond_error(c, 403, "missing or wrong CSRF token");
		if (ctl_websession_read_only())
			return respond_error(c, 403, "this console is read-only");
		name = url + 12;
		call.arg = post_arg;
		call.arg_state = req;
	}
	else
	{
		name = url + 5;
		call.arg = get_arg;
		call.arg_state = c;
	}
	call.session = session;
	call.source = ctl_websession_source(session);
	call.user = ctl_websession_user(session);
	call.conn = ctl_websession_borrow(session);
	if (call.conn == NULL)
		return respond_error(c, 503,
							 "no database connection is free; try again");
	out = createPQExpBuffer();
	call.out = out;
	call.status = 200;
	found = post ? ctl_webact_dispatch(name, &call) :
				   ctl_webapi_dispatch(name, &call);
	ctl_websession_give_back(session, call.conn,
							 PQstatus(call.conn) != CONNECTION_OK);
	if (!found)
		ret = respond_error(c, 404, "no such API call");
	else
		ret = respond_json(c, call.status, out, NULL);
	destroyPQExpBuffer(out);
	return ret;
}

/* Serve an embedded file. */
static enum MHD_Result
handle_asset(struct MHD_Connection *c, const char *url)
{
	if (strcmp(url, "/") == 0)
		url = "/index.html";
	for (const WebAsset *a = ctl_webassets_files; a->path != NULL; a++)
		if (strcmp(a->path, url) == 0)
			return respond(c, 200, a->content_type, a->data, a->len, false,
						   NULL);
	return respond_error(c, 404, "not found");
}

/* libmicrohttpd's access handler: called with the headers, each piece of
 * the body, then once more to answer. */
static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
	   const char *version, const char *upload, size_t *upload_size,
	   void **req_cls)
{
	WebRequest	   *req = *req_cls;
	bool			post = strcmp(method, "POST") == 0;
	WebSession	   *session;
	enum MHD_Result ret;

	if (req == NULL)
	{
		req = pg_malloc0(sizeof(WebRequest));
		req->body = createPQExpBuffer();
		*req_cls = req;
		return MHD_YES;
	}
	if (*upload_size > 0)
	{
		if (req->body->len + *upload_size > WEB_MAX_BODY)
			req->too_large = true;
		else
			appendBinaryPQExpBuffer(req->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return respond_error(c, 405, "method not allowed");
	if (!host_allowed(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
		return respond_error(c, 421,
							 "this console answers to its own names only "
							 "(--allow-host)");
	if (req->too_large)
		return respond_error(c, 413, "request body too large");
	if (strncmp(url, "/api/", 5) != 0)
		return post ? respond_error(c, 405, "method not allowed") :
					  handle_asset(c, url);
	if (post)
	{
		const char *type =
			MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");

		if (type == NULL ||
			strncmp(type, "application/x-www-form-urlencoded", 33) != 0)
			return respond_error(c, 415, "a form body is needed");
		form_parse(req);
	}
	session = ctl_websession_find(
		MHD_lookup_connection_value(c, MHD_COOKIE_KIND,
									ctl_websession_cookie_name(false)));
	if (strcmp(url, "/api/session") == 0 || strcmp(url, "/api/login") == 0 ||
		strcmp(url, "/api/logout") == 0)
		ret = handle_session(c, url, post, req, session);
	else if (session == NULL)
		ret = respond_error(c, 401, "not signed in");
	else
		ret = handle_api(c, url, post, req, session);
	if (session != NULL)
		ctl_websession_release(session);
	return ret;
}

static void
request_done(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	WebRequest *req = *req_cls;

	if (req != NULL)
	{
		/* the password of a sign-in was in the body */
		if (req->body->data)
			explicit_bzero(req->body->data, req->body->maxlen);
		destroyPQExpBuffer(req->body);
		pg_free(req);
		*req_cls = NULL;
	}
}

/* Read a file of --tls-cert or --tls-key whole; exits on failure. */
static char *
read_file(const char *path, const char *option)
{
	FILE	   *f = fopen(path, "r");
	PQExpBuffer buf = createPQExpBuffer();
	char		chunk[4096];
	size_t		n;
	char	   *data;

	if (f == NULL)
		pg_fatal("web: could not open %s \"%s\": %m", option, path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		appendBinaryPQExpBuffer(buf, chunk, n);
	fclose(f);
	data = pg_strdup(buf->data);
	destroyPQExpBuffer(buf);
	return data;
}

/* --listen HOST:PORT (or [V6]:PORT) into an address. */
static bool
parse_listen(const char *arg, struct sockaddr_storage *addr, bool *v6)
{
	char			*host = pg_strdup(arg);
	char			*port = strrchr(host, ':');
	struct addrinfo	 hints = { 0 };
	struct addrinfo *ai = NULL;
	bool			 ok;

	if (port == NULL || port[1] == '\0')
		return false;
	*port++ = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']')
	{
		host[strlen(host) - 1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	ok = strspn(port, "0123456789") == strlen(port) &&
		 getaddrinfo(host[0] ? host : NULL, port, &hints, &ai) == 0;
	if (ok)
	{
		memcpy(addr, ai->ai_addr, ai->ai_addrlen);
		*v6 = ai->ai_family == AF_INET6;
		freeaddrinfo(ai);
	}
	pg_free(host);
	return ok;
}

int
ctl_web_command(int argc, char **argv)
{
	static struct option long_options[] = {
		{ "dbname", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "no-sign-in", no_argument, NULL, 'n' },
		{ "tls-cert", required_argument, NULL, 'c' },
		{ "tls-key", required_argument, NULL, 'k' },
		{ "allow-host", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, '?' },
		{ NULL, 0, NULL, 0 }
	};
	const char			   *conninfo = NULL;
	const char			   *listen = "127.0.0.1:8080";
	const char			   *cert = NULL;
	const char			   *key = NULL;
	bool					read_only = false;
	bool					no_sign_in = false;
	const char			   *extra_hosts[WEB_MAX_HOSTS / 2 - 4];
	int						n_extra_hosts = 0;
	const char			   *port;
	struct sockaddr_storage addr;
	bool					v6 = false;
	unsigned int			flags =
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *daemon;
	sigset_t		   sigs;
	int				   sig;
	int				   opt;
	int				   ret;

	while ((opt = getopt_long(argc, argv, "d:", long_options, NULL)) != -1)
	{
		switch (opt)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 'l':
				listen = optarg;
				break;
			case 'r':
				read_only = true;
				break;
			case 'n':
				no_sign_in = true;
				break;
			case 'c':
				cert = optarg;
				break;
			case 'k':
				key = optarg;
				break;
			case 'a':
				if (!valid_host(optarg) ||
					n_extra_hosts >= WEB_MAX_HOSTS / 2 - 4)
					return ctl_main_usage_error(
						"web",
						"--allow-host needs a host name or address (at most "
						"%d of them), not \"%s\"",
						WEB_MAX_HOSTS / 2 - 4, optarg);
				extra_hosts[n_extra_hosts++] = optarg;
				break;
			case '?':
				if (optind > 0 && strcmp(argv[optind - 1], "--help") == 0)
				{
					ctl_main_usage("web", false);
					return EXIT_OK;
				}
				return ctl_main_usage_error("web", NULL);
		}
	}
	if (optind < argc)
		return ctl_main_usage_error("web", "unexpected argument \"%s\"",
									argv[optind]);
	if ((cert == NULL) != (key == NULL))
		return ctl_main_usage_error("web",
									"--tls-cert and --tls-key go together");
	if (no_sign_in && !read_only)
		return ctl_main_usage_error("web", "--no-sign-in needs --read-only");
	port = listen != NULL ? strrchr(listen, ':') : NULL;
	if (port == NULL || !parse_listen(listen, &addr, &v6))
		return ctl_main_usage_error(
			"web", "--listen needs HOST:PORT, e.g. 127.0.0.1:8080, not \"%s\"",
			listen);
	if (cert != NULL && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
	{
		pg_log_error("web: this libmicrohttpd was built without TLS");
		return EXIT_ERROR;
	}
	allow_host(pg_strdup(listen));
	allow_host(psprintf("localhost%s", port));
	allow_host(psprintf("127.0.0.1%s", port));
	allow_host(psprintf("[::1]%s", port));
	for (int i = 0; i < n_extra_hosts; i++)
	{
		allow_host(pg_strdup(extra_hosts[i]));
		if (strchr(extra_hosts[i], ':') == NULL ||
			extra_hosts[i][strlen(extra_hosts[i]) - 1] == ']')
			allow_host(psprintf("%s%s", extra_hosts[i], port));
	}
	if (v6)
		flags |= MHD_USE_IPv6;
	if (cert != NULL)
		flags |= MHD_USE_TLS;

	ret = ctl_websession_init(conninfo, read_only, no_sign_in, cert != NULL);
	if (ret != EXIT_OK)
		return ret;

	/* SIGINT and SIGTERM stop the server: the threads never take them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	daemon =
		MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL,
						 MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &addr,
						 MHD_OPTION_THREAD_POOL_SIZE, (unsigned int) 4,
						 MHD_OPTION_CONNECTION_LIMIT, (unsigned int) 64,
						 MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) 16,
						 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) 30,
						 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 32768,
						 MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
						 cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
						 cert ? read_file(cert, "--tls-cert") : NULL,
						 MHD_OPTION_HTTPS_MEM_KEY,
						 key ? read_file(key, "--tls-key") : NULL,
						 MHD_OPTION_END);
	if (daemon == NULL)
	{
		pg_log_error("web: could not listen on %s (in use, or not an address "
					 "of this machine?)",
					 listen);
		return EXIT_ERROR;
	}
	printf("schedqctl web: listening on %s://%s/%s\n", cert ? "https" : "http",
		   listen, read_only ? " (read-only)" : "");
	fflush(stdout);
	sigwait(&sigs, &sig);
	MHD_stop_daemon(daemon);
	ctl_websession_shutdown();
	return EXIT_OK;
}

/*-------------------------------------------------------------------------
 * schedqctl/web.h
 *	  What the files of schedqctl web share.
 *
 *	  schedqctl web serves a console: static files (those of web/, embedded at build
 *	  time into webassets.c by web/embed.sh) and a small JSON API, over
 *	  libmicrohttpd, with its request handlers on a small pool of threads.
 *	  Each signed-in browser has a session holding a few libpq connections
 *	  made as the PostgreSQL role that signed in (the server never holds
 *	  more privilege than that role); a request borrows one of them.
 *
 *	  Modules and the prefix of their non-static functions:
 *		web.c			ctl_web_		the command: options, the daemon, routing
 *		websession.c	ctl_websession_	sessions, sign-in, cookies, CSRF
 *		webapi.c		ctl_webapi_		the read handlers (GET /api/...)
 *		webact.c		ctl_webact_		the actions (POST /api/action/...)
 *		webassets.c		ctl_webassets_	the static files (generated)
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQCTL_WEB_H
#define SCHEDQCTL_WEB_H

#include "libpq-fe.h"
#include "pqexpbuffer.h"

/*
 * Limits: sessions (in all, of one role), each one's connections, a
 * statement, a request body, idle time.
 */
#define WEB_MAX_SESSIONS	  32
#define WEB_SESSIONS_PER_ROLE 4
#define WEB_STATEMENT_TIMEOUT "5s"
#define WEB_SESSION_CONNS	  2
#define WEB_MAX_BODY		  8192
#define WEB_SESSION_IDLE	  1800 /* seconds */
#define WEB_ID_BYTES		  32   /* session ids and CSRF tokens: 256 bits */
#define WEB_ID_HEX			  (WEB_ID_BYTES * 2)

/* What the signed-in role may read: its own tables, or a monitor's views. */
typedef enum WebSource
{
	WEB_SOURCE_OWN,
	WEB_SOURCE_MONITOR
} WebSource;

typedef struct WebSession WebSession;

/* One API call: its arguments, and what it answers. */
typedef struct WebCall
{
	WebSession *session;
	PGconn	   *conn; /* borrowed from the session */
	WebSource	source;
	bool		read_only;
	const char *user;
	/* the arguments: the query string (GET) or the form body (POST) */
	const char *(*arg)(const struct WebCall *call, const char *name);
	void	   *arg_state;
	int			status; /* HTTP status of the answer */
	PQExpBuffer out;	/* the JSON answer */
} WebCall;

/* An asset: a file of web/, embedded. */
typedef struct WebAsset
{
	const char			*path;
	const char			*content_type;
	const unsigned char *data;
	size_t				 len;
} WebAsset;

/* web.c */
extern void ctl_web_json_string(PQExpBuffer buf, const char *s);
extern void ctl_web_json_error(WebCall *call, int status, const char *message,
							   const char *sqlstate);
extern void ctl_web_json_result_error(WebCall *call, PGconn *conn,
									  const PGresult *res);
extern bool ctl_web_query_json(WebCall *call, const char *sql, int nparams,
							   const char *const *values);

/* websession.c */
extern int		   ctl_websession_init(const char *conninfo, bool read_only,
									   bool no_sign_in, bool tls);
extern WebSession *ctl_websession_find(const char *cookie);
extern void		   ctl_websession_release(WebSession *session);
extern PGconn	  *ctl_websession_borrow(WebSession *session);
extern void		   ctl_websession_give_back(WebSession *session, PGconn *conn,
											bool broken);
extern bool		 ctl_websession_csrf_ok(WebSession *session, const char *token);
extern WebSource ctl_websession_source(WebSession *session);
extern const char *ctl_websession_user(WebSession *session);
extern void ctl_websession_describe(WebSession *session, PQExpBuffer out);
extern int	ctl_websession_login(const char *user, const char *password,
								 WebSession *old, PQExpBuffer out, char *cookie,
								 size_t cookie_len);
extern const char *ctl_websession_cookie_name(bool login);
extern bool		   ctl_websession_logout(WebSession *session);
extern void		   ctl_websession_login_token(char *hex);
extern bool		   ctl_websession_login_token_ok(const char *cookie,
												 const char *token);
extern bool		   ctl_websession_tls(void);
extern bool		   ctl_websession_read_only(void);
extern void		   ctl_websession_random_hex(char *hex);
extern void		   ctl_websession_shutdown(void);

/* webapi.c */
extern bool ctl_webapi_dispatch(const char *name, WebCall *call);

/* webact.c */
extern bool ctl_webact_dispatch(const char *name, WebCall *call);

/* webassets.c (generated) */
extern const WebAsset ctl_webassets_files[];

#endif /* SCHEDQCTL_WEB_H */

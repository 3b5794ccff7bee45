/*-------------------------------------------------------------------------
 * schedqctl/schedqctl.h
 *	  What the files of schedqctl share.
 *
 *	  Exit codes, the connection and its errors, the text handling, and
 *	  each command's entry point.
 *
 *	  schedqctl is a frontend program built on PostgreSQL's own frontend
 *	  libraries, as pg_amcheck and pgbench are: every file includes
 *	  postgres_fe.h first; messages go through common/logging.h
 *	  (pg_log_error, pg_fatal), memory through common/fe_memutils.h
 *	  (pg_malloc, pg_strdup, psprintf), text through pqexpbuffer.h, tables
 *	  through fe_utils/print.h, array literals through
 *	  fe_utils/string_utils.h.
 *
 *	  Every query schedqctl sends is a fixed text with $n parameters
 *	  (PQexecParams); no value a user passes is ever spliced into SQL.
 *
 *	  Modules and the prefix of their non-static functions:
 *		main.c		ctl_main_		dispatch and every command's help
 *		conn.c		ctl_conn_		connecting, checking a result, hints
 *		text.c		ctl_text_		payloads, array literals, JSON
 *		admin.c		ctl_admin_		the one-call commands (submit, ...)
 *		status.c	ctl_status_		status, and the tables top draws
 *		top.c		ctl_top_		top
 *		worker*.c	ctl_worker*_	the worker command (see worker.h)
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQCTL_H
#define SCHEDQCTL_H

#include "libpq-fe.h"
#include "pqexpbuffer.h"

/*
 * Exit codes (documented by --help, schedqctl.1 and
 * docs/guide/workers.md#schedqctl-worker).
 */
#define EXIT_OK		   0 /* done */
#define EXIT_ERROR	   1 /* the server refused, or something failed */
#define EXIT_USAGE	   2 /* bad command line */
#define EXIT_CONNECT   3 /* could not connect, or the connection broke */
#define EXIT_PRIVILEGE 4 /* a privilege is missing (42501, 3F000) */
#define EXIT_NO_EFFECT 5 /* cancel/retry/unschedule changed nothing */

/* The privileges a command needs, for the hint when one is missing. */
typedef enum CtlRole
{
	CTL_ROLE_SUBMITTER,
	CTL_ROLE_WORKER,
	CTL_ROLE_ADMIN,
	CTL_ROLE_READER
} CtlRole;

/* main.c */
extern void ctl_main_usage(const char *command, bool to_stderr);

/* conn.c */
extern PGconn *ctl_conn_connect(const char *conninfo, bool quiet);
extern int	   ctl_conn_check(PGconn *conn, PGresult *res, CtlRole role,
							  const char *what);
extern bool	   ctl_conn_refusal_is_privilege(const PGresult *res);

/* text.c */
extern void	 ctl_text_check(PQExpBuffer buf);
extern bool	 ctl_text_read_payload(const char *arg, PQExpBuffer out);
extern void	 ctl_text_array_add(PQExpBuffer array, const char *item);
extern char *ctl_text_array(char *const *items, int n);
extern char *ctl_text_list_array(const char *list);
extern void	 ctl_text_json_string(PQExpBuffer buf, const char *s, size_t len,
								  size_t max_out, size_t *consumed);
extern bool	 ctl_text_json_valid(const char *s, size_t len);
extern void	 ctl_text_sanitize(char *s, size_t len);

/* admin.c */
extern int ctl_admin_submit(int argc, char **argv);
extern int ctl_admin_cancel(int argc, char **argv);
extern int ctl_admin_retry(int argc, char **argv);
extern int ctl_admin_pause(int argc, char **argv);
extern int ctl_admin_resume(int argc, char **argv);
extern int ctl_admin_schedule(int argc, char **argv);
extern int ctl_admin_unschedule(int argc, char **argv);

/* status.c */
extern int ctl_status_render(PGconn *conn, PQExpBuffer out, int failures,
							 PGresult **queues);
extern int ctl_status_command(int argc, char **argv);

/* top.c */
extern int ctl_top_command(int argc, char **argv);

/* worker.c */
extern int ctl_worker_command(int argc, char **argv);

#endif /* SCHEDQCTL_H */

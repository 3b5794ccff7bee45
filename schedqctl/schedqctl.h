/*-------------------------------------------------------------------------
 * schedqctl/schedqctl.h
 *	  What the files of schedqctl share.
 *
 *	  Exit codes, the connection and its errors, the privileges each
 *	  command needs, the checks of values, the text handling, and each
 *	  command's entry point.
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
 *		conn.c		ctl_conn_		connecting, checking a result, exit codes
 *		privs.c		ctl_privs_		what each command needs; the exact GRANTs
 *		check.c		ctl_check_		values checked before anything is sent
 *		text.c		ctl_text_		payloads, array literals, JSON
 *		table.c		ctl_table_		results as tables: psql's, or fitted
 *		admin.c		ctl_admin_		the one-call commands (submit, ...)
 *		filter.c	ctl_filter_		list, cancel and retry, by id or filter
 *		tasks.c		ctl_tasks_		show, list and wait
 *		listings.c	ctl_listings_	schedules and runs
 *		many.c		ctl_many_		submit-many
 *		status.c	ctl_status_		status, and the tables top draws
 *		top.c		ctl_top_		top
 *		worker*.c	ctl_worker*_	the worker command (see worker.h)
 *		web*.c		ctl_web*_		the web command, a console (see web.h)
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQCTL_H
#define SCHEDQCTL_H

#include "libpq-fe.h"
#include "pqexpbuffer.h"

/*
 * Exit codes (documented by --help, schedqctl.1 and
 * docs/guide/cli.md#exit-status).
 */
#define EXIT_OK		   0 /* done */
#define EXIT_ERROR	   1 /* the server refused, or something failed */
#define EXIT_USAGE	   2 /* bad command line, or a value that is refused */
#define EXIT_CONNECT   3 /* could not connect, or the connection broke */
#define EXIT_PRIVILEGE 4 /* a privilege is missing, or schedq is */
#define EXIT_NO_EFFECT 5 /* nothing to do, or nothing found */
/* wait: how the task ended, or that it did not in time */
#define EXIT_TASK_FAILED   6
#define EXIT_TASK_CANCELED 7
#define EXIT_TASK_SKIPPED  8
#define EXIT_WAIT_TIMEOUT  9

/* The kinds of role of docs/security.md#roles, for the hint's wording. */
typedef enum CtlRole
{
	CTL_ROLE_SUBMITTER,
	CTL_ROLE_WORKER,
	CTL_ROLE_ADMIN,
	CTL_ROLE_READER
} CtlRole;

/*
 * What a command needs: a role (for the wording) and the objects it uses,
 * each "s:NAME" (USAGE on a schema), "t:NAME" (SELECT on a table or view
 * of schedq), "f:NAME" (EXECUTE on schedq's function) or "p:NAME" (on its
 * procedure); NULL ends the list.
 */
typedef struct CtlNeeds
{
	CtlRole		role;
	const char *objects[16];
} CtlNeeds;

/* main.c */
extern void ctl_main_usage(const char *command, bool to_stderr);
extern int	ctl_main_usage_error(const char *command, const char *fmt, ...)
	pg_attribute_printf(2, 3);

/* conn.c */
extern PGconn *ctl_conn_open(const char *conninfo, char **why,
							 bool *needs_password);
extern PGconn *ctl_conn_open_like(const char *conninfo, PGconn *like);
extern PGconn *ctl_conn_connect(const char *conninfo, bool quiet);
extern int	 ctl_conn_check(PGconn *conn, PGresult *res, const CtlNeeds *needs,
							const char *what);
extern void	 ctl_conn_report(PGconn *conn, const PGresult *res,
							 const char *what);
extern char *ctl_conn_message(PGconn *conn, const PGresult *res);
extern bool	 ctl_conn_refusal_is_privilege(const PGresult *res);
extern bool	 ctl_conn_refusal_is_value(const PGresult *res);
extern bool	 ctl_conn_schedq_missing(PGconn *conn, const PGresult *res);

/* privs.c */
extern const CtlNeeds ctl_privs_submitter;
extern const CtlNeeds ctl_privs_reader;
extern const CtlNeeds ctl_privs_worker;
extern int			  ctl_privs_require(PGconn *conn, const CtlNeeds *needs,
										const char *what);
extern void			  ctl_privs_hint(PGconn *conn, const CtlNeeds *needs);
extern CtlNeeds		  ctl_privs_function(CtlRole role, const char *function);

/* check.c */
extern bool	 ctl_check_id(const char *arg, const char *what);
extern char *ctl_check_id_list(const char *list, const char *what);
extern bool	 ctl_check_interval_unit(const char *value, const char *option);
extern bool	 ctl_check_number(const char *value, const char *option);
extern bool	 ctl_check_json(const char *text, size_t len, const char *what);
extern int	 ctl_check_cast(PGconn *conn, const char *value, const char *type,
							const char *option);

/* text.c */
extern void	 ctl_text_check(PQExpBuffer buf);
extern bool	 ctl_text_read_payload(const char *arg, PQExpBuffer out);
extern void	 ctl_text_array_add(PQExpBuffer array, const char *item);
extern char *ctl_text_array(char *const *items, int n);
extern char *ctl_text_list_array(const char *list);
extern void	 ctl_text_json_string(PQExpBuffer buf, const char *s, size_t len,
								  size_t max_out, size_t *consumed);
extern bool	 ctl_text_json_valid(const char *s, size_t len);
extern char *ctl_text_json_error(const char *s, size_t len);
extern void	 ctl_text_sanitize(char *s, size_t len);

/* table.c */
extern void ctl_table_render(PQExpBuffer out, PGresult *res, const char *title,
							 int encoding);
extern void ctl_table_fit(PQExpBuffer out, PGresult *res, const char *title,
						  int width);

/* admin.c */
extern int ctl_admin_submit(int argc, char **argv);
extern int ctl_admin_submit_sql(int argc, char **argv);
extern int ctl_admin_pause(int argc, char **argv);
extern int ctl_admin_resume(int argc, char **argv);
extern int ctl_admin_schedule(int argc, char **argv);
extern int ctl_admin_unschedule(int argc, char **argv);

/* filter.c */
extern int ctl_filter_cancel(int argc, char **argv);
extern int ctl_filter_retry(int argc, char **argv);
extern int ctl_filter_list(int argc, char **argv);

/* tasks.c */
extern int ctl_tasks_show(int argc, char **argv);
extern int ctl_tasks_wait(int argc, char **argv);

/* listings.c */
extern int ctl_listings_schedules(int argc, char **argv);
extern int ctl_listings_runs(int argc, char **argv);

/* many.c */
extern int ctl_many_command(int argc, char **argv);

/* status.c */
extern int ctl_status_require(PGconn *conn, const char *what);
extern int ctl_status_render(PGconn *conn, PQExpBuffer out, int failures,
							 bool all_workers, int width, PGresult **queues);
extern int ctl_status_command(int argc, char **argv);

/* top.c */
extern int ctl_top_command(int argc, char **argv);

/* worker.c */
extern int ctl_worker_command(int argc, char **argv);

/* web.c */
extern int ctl_web_command(int argc, char **argv);

#endif /* SCHEDQCTL_H */

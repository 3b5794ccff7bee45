/*-------------------------------------------------------------------------
 * schedqctl.h
 *	  What the command files of schedqctl share: exit codes, the
 *	  connection, running a parameterized query, and small buffers.
 *
 *	  Every query schedqctl sends is a fixed text with $n parameters
 *	  (PQexecParams); no value a user passes is ever spliced into SQL.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQCTL_H
#define SCHEDQCTL_H

#include <stdbool.h>
#include <stddef.h>

#include "libpq-fe.h"

/* Exit codes (documented in the README, "Workers", and by --help). */
#define EXIT_OK		   0 /* done */
#define EXIT_ERROR	   1 /* the server refused, or something failed */
#define EXIT_USAGE	   2 /* bad command line */
#define EXIT_CONNECT   3 /* could not connect, or the connection broke */
#define EXIT_PRIVILEGE 4 /* a privilege is missing (42501, 3F000) */
#define EXIT_NO_EFFECT 5 /* cancel/retry/unschedule changed nothing */

/* The privileges a command needs, for the message when one is missing. */
typedef enum CtlRole
{
	CTL_ROLE_SUBMITTER,
	CTL_ROLE_WORKER,
	CTL_ROLE_ADMIN,
	CTL_ROLE_READER
} CtlRole;

/* A growable byte buffer, always NUL-terminated. */
typedef struct CtlBuf
{
	char  *data;
	size_t len;
	size_t cap;
} CtlBuf;

/* common.c */
extern const char *ctl_progname;
extern void		   ctl_buf_init(CtlBuf *buf);
extern void		   ctl_buf_append(CtlBuf *buf, const char *data, size_t len);
extern void		   ctl_buf_appends(CtlBuf *buf, const char *s);
extern void		   ctl_buf_printf(CtlBuf *buf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
extern void	 ctl_buf_reset(CtlBuf *buf);
extern void	 ctl_buf_free(CtlBuf *buf);
extern void *ctl_malloc(size_t size);
extern char *ctl_strdup(const char *s);
extern void	 ctl_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
extern PGconn	*ctl_connect(const char *conninfo, bool quiet);
extern int		 ctl_result_status(PGconn *conn, PGresult *res, CtlRole role,
								   const char *what);
extern PGresult *ctl_exec(PGconn *conn, const char *sql, int nparams,
						  const char *const *values);
extern char		*ctl_text_array(char **items, int n);
extern char		*ctl_split_list(const char *list, int *n, char ***items);
extern void		 ctl_json_string(CtlBuf *buf, const char *s, size_t len,
								 size_t max_out, size_t *consumed);
extern bool		 ctl_json_valid(const char *s, size_t len);
extern void		 ctl_sanitize_text(char *s, size_t len);
extern bool		 ctl_read_payload(const char *arg, CtlBuf *out);

/* admin.c */
extern int ctl_cmd_submit(int argc, char **argv);
extern int ctl_cmd_cancel(int argc, char **argv);
extern int ctl_cmd_retry(int argc, char **argv);
extern int ctl_cmd_pause(int argc, char **argv);
extern int ctl_cmd_resume(int argc, char **argv);
extern int ctl_cmd_schedule(int argc, char **argv);
extern int ctl_cmd_unschedule(int argc, char **argv);

/* worker.c */
extern int ctl_cmd_worker(int argc, char **argv);

/* status.c */
extern void ctl_render_table(CtlBuf *out, PGresult *res, const char *title);
extern int	ctl_render_status(PGconn *conn, CtlBuf *out, int failures,
							  PGresult **queues);
extern int	ctl_cmd_status(int argc, char **argv);

/* top.c */
extern int ctl_cmd_top(int argc, char **argv);

/* main.c */
extern void ctl_usage(const char *command, bool to_stderr);

#endif /* SCHEDQCTL_H */

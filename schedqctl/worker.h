/*-------------------------------------------------------------------------
 * schedqctl/worker.h
 *	  What the files of the worker command share.
 *
 *	  Its settings, its state, one slot per running program, and their
 *	  functions.
 *
 *	  `schedqctl worker` claims tasks and runs a program for each.  It is
 *	  one process, one thread, one poll() loop, split by concern into one
 *	  file each, behind this header:
 *		worker.c		the command: set-up, the poll loop, the log lines
 *		workeropts.c	its options and their checks
 *		workerconn.c	the two connections: checks, back-off, the wait
 *		workerclaim.c	claiming tasks and reporting how they ended
 *		workerchild.c	starting and supervising each task's program
 *		workerlease.c	heartbeats: renewing leases, killing what ran out
 *		workerstop.c	signals and shutdown
 *	  The non-static functions of each file carry its name as their prefix
 *	  (ctl_workerclaim_...).  Each file's header says how its part works.
 *
 *	  A slot is a running program's: the task it works on (id, attempt,
 *	  queue, kind and the token that claim returned and complete takes),
 *	  its process group, its output so far, and its lease.  A slot is used
 *	  from the claim until its program has ended and been reported.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQCTL_WORKER_H
#define SCHEDQCTL_WORKER_H

#include <poll.h>
#include <sys/types.h>

#include "schedqctl.h"

#define MAX_CONCURRENCY 1000
#define ERR_TAIL		60000 /* bytes of stderr kept; fail() takes 64 kB */
/* stdout kept at most, whatever the server's max_payload */
#define OUT_CAP		(64 * 1024 * 1024)
#define EX_TEMPFAIL 75

/* Why a slot's process group was killed. */
typedef enum SlotKill
{
	KILL_NONE,
	KILL_TIMEOUT, /* the lease ran out (deadline) */
	KILL_LOST,	  /* the task is no longer ours */
	KILL_SHUTDOWN /* the grace period ended */
} SlotKill;

/* What a check of a control connection's result found. */
typedef enum WorkerCheck
{
	CHECK_OK,	  /* the query succeeded */
	CHECK_LOST,	  /* the connection broke (now dropped) */
	CHECK_REFUSED /* the server refused (logged) */
} WorkerCheck;

/* A running program and the task it works on. */
typedef struct Slot
{
	bool			used;
	pid_t			pid;	/* 0 once reaped */
	int				out_fd; /* -1 once at EOF */
	int				err_fd;
	int				wstatus;
	char		   *id;
	char		   *attempt;
	char		   *queue;
	char		   *kind;
	char		   *token;
	PQExpBufferData out;
	size_t			out_total;
	PQExpBufferData err;
	double			started;
	double			hb_every;
	double			next_hb;
	double			expires;
	SlotKill		killed;
	int				not_run; /* the program could not be started: the exit
							  * code of the worker's fault, else 0 */
} Slot;

/* The worker's settings and state. */
typedef struct Worker
{
	/* Settings, from the options (workeropts.c). */
	const char *conninfo;
	char	   *queues_param; /* text[] literal, NULL for every queue */
	char	   *caps_param;	  /* text[] literal */
	const char *lease;
	char		wait[32];
	char		name[256];
	int			concurrency;
	double		grace;
	int			wait_s;
	bool		json;
	char	  **cmd;

	/* State. */
	PGconn *conn;
	PGconn *wconn;
	bool	await_inflight;
	bool	want_claim;
	double	reconnect_at;
	double	backoff;
	bool	unreachable; /* the last attempt made no connection */
	size_t	max_result;
	Slot   *slots;
	int		running;  /* used slots */
	int		stopping; /* signals received */
	bool	draining; /* no more claims: a signal, or the worker's fault */
	int		fault;	  /* the exit code of the worker's fault, else 0 */
	double	grace_end;
	bool	claimed_ok; /* a claim has succeeded */

	/* Trouble: what was said since the last claim that worked. */
	char said[8][200];
	int	 nsaid;
	int	 retries;
} Worker;

/* worker.c */
extern double ctl_worker_now(void);
extern void	  ctl_worker_nonblock_cloexec(int fd);
extern void	  ctl_worker_log(Worker *w, const char *level, const char *fmt, ...)
	pg_attribute_printf(3, 4);
extern void ctl_worker_log_task(Worker *w, Slot *s, const char *outcome,
								int exit_code, const char *detail);
extern void ctl_worker_fault(Worker *w, int code, const char *fmt, ...)
	pg_attribute_printf(3, 4);

/* workeropts.c */
extern int ctl_workeropts_parse(int argc, char **argv, Worker *w);

/* workerconn.c */
extern bool ctl_workerconn_connect(Worker *w, char *why, size_t len);
extern void ctl_workerconn_say(Worker *w, const char *level, const char *key,
							   const char *fmt, ...) pg_attribute_printf(4, 5);
extern void ctl_workerconn_working(Worker *w);
extern void ctl_workerconn_where(Worker *w, char *buf, size_t len);
extern void ctl_workerconn_disconnect(Worker *w, const char *why);
extern void ctl_workerconn_drop_wait(Worker *w, bool cancel);
extern WorkerCheck ctl_workerconn_check(Worker *w, PGresult *res,
										const char *what);
extern void		   ctl_workerconn_await(Worker *w);
extern void		   ctl_workerconn_await_input(Worker *w);

/* workerclaim.c */
extern int ctl_workerclaim_claim(Worker *w, int n);
extern int ctl_workerclaim_report_finished(Worker *w);

/* workerchild.c */
extern bool	 ctl_workerchild_runnable(Worker *w, char *why, size_t len);
extern bool	 ctl_workerchild_start(Worker *w, Slot *s, const char *payload,
								   const char *run_id, char *errbuf,
								   size_t errlen);
extern void	 ctl_workerchild_read(Worker *w, Slot *s, bool is_out);
extern void	 ctl_workerchild_read_all(Worker *w);
extern void	 ctl_workerchild_add_fds(Worker *w, struct pollfd *fds, int *nfds);
extern void	 ctl_workerchild_reap(Worker *w);
extern void	 ctl_workerchild_kill(Slot *s, SlotKill why);
extern void	 ctl_workerchild_kill_all(Worker *w);
extern bool	 ctl_workerchild_done(const Slot *s);
extern char *ctl_workerchild_result(Slot *s, size_t max_out);
extern char *ctl_workerchild_error(Slot *s, const char *prefix);
extern void	 ctl_workerchild_free(Worker *w, Slot *s);

/* workerlease.c */
extern void ctl_workerlease_tend(Worker *w, double *next);

/* workerstop.c */
extern void ctl_workerstop_install(void);
extern int	ctl_workerstop_fd(void);
extern bool ctl_workerstop_signals(Worker *w);
extern bool ctl_workerstop_abandon(Worker *w);

#endif /* SCHEDQCTL_WORKER_H */

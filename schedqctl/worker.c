/*-------------------------------------------------------------------------
 * worker.c
 *	  schedqctl worker: claim tasks and run a program for each.
 *
 *	  One process, one thread, one poll() loop.  It holds two connections:
 *	  the control connection makes the short calls (claim, heartbeat,
 *	  complete_and_claim, complete, complete_many, fail, verify_grant),
 *	  waiting for each answer; the wait
 *	  connection only ever runs CALL schedq.await_task(...), sent
 *	  asynchronously, so that the loop
 *	  keeps reading the programs' output, renewing leases and reaping
 *	  children while it waits for work.  await_task holds no snapshot and
 *	  no lock while it sleeps (README, "Waiting for a task").
 *
 *	  The loop claims n => (free slots) whenever a slot is free and the
 *	  last claim was not short; a short claim means the queues are empty
 *	  for us, and the loop waits in await_task until it says a task came
 *	  (or its wait ends), then claims again.  A finished program frees a
 *	  slot and claims again at once, so with a backlog the worker never
 *	  waits.
 *
 *	  Round trips and commits: the programs that have finished when the
 *	  loop comes round are reported together.  Those that exited 0 are
 *	  completed, and the slots they free claimed for, by one
 *	  complete_and_claim (one statement, one commit, one round trip for all
 *	  of them and the next tasks); a verify_grant of their tokens goes
 *	  before it in the same pipeline and transaction, to log the stale ones.
 *	  When it claims nothing, the loop waits in await_task.  While shutting
 *	  down, complete_many (nothing claimed).  Failures, rarer, are reported
 *	  one fail() each.
 *
 *	  Each program runs in its own process group, with the payload on
 *	  stdin (a temporary file, so that a program that does not read it
 *	  never blocks us) and its stdout and stderr read through pipes: stdout
 *	  up to schedq.max_payload for the result, and the last 60 kB of
 *	  stderr for the error (the server's limit is 64 kB).
 *
 *	  Leases: each task's lease is renewed every third of it.  The time
 *	  left is always computed by the server (lease_expires_at -
 *	  clock_timestamp()), so clocks need not agree.  A lease never outlives
 *	  the task's deadline (the server caps it), so when the time left runs
 *	  out the program has hit its timeout -- or the server has been out of
 *	  reach for a whole lease and another worker may have the task -- and
 *	  its process group is killed.  A heartbeat answering NULL means the
 *	  task is no longer ours (canceled, reclaimed): the program is killed
 *	  and nothing is reported.
 *
 *	  Reports are guarded by the grant: a complete that returns false or a
 *	  fail that returns 'stale' lost its lease; that is logged and never
 *	  retried.  A report that could not be sent because the connection
 *	  broke is sent again after reconnecting: if the first one committed,
 *	  the second finds the attempt finished and is stale, so no task is
 *	  reported twice.
 *
 *	  Signals go through a self-pipe into the loop.  SIGTERM or SIGINT:
 *	  stop claiming, let running programs finish for --grace seconds, then
 *	  kill them and fail their attempts for an immediate retry.  A second
 *	  signal kills the programs and exits at once, reporting nothing (their
 *	  leases expire and the reaper retries them).
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "schedqctl.h"

#define MAX_CONCURRENCY 1000
#define ERR_TAIL		60000 /* bytes of stderr kept; fail() takes 64 kB */
#define OUT_CAP                                                                \
	(64 * 1024 * 1024) /* stdout kept at most, whatever the
									 * server's max_payload */
#define EX_TEMPFAIL 75

typedef enum SlotKill
{
	KILL_NONE,
	KILL_TIMEOUT, /* the lease ran out (deadline) */
	KILL_LOST,	  /* the task is no longer ours */
	KILL_SHUTDOWN /* the grace period ended */
} SlotKill;

typedef struct Slot
{
	bool	 used;
	pid_t	 pid;	 /* 0 once reaped */
	int		 out_fd; /* -1 once at EOF */
	int		 err_fd;
	int		 wstatus;
	char	*id;
	char	*attempt;
	char	*queue;
	char	*kind;
	char	*token;
	CtlBuf	 out;
	size_t	 out_total;
	CtlBuf	 err;
	double	 started;
	double	 hb_every;
	double	 next_hb;
	double	 expires;
	SlotKill killed;
} Slot;

/* The worker's settings and state. */
typedef struct Worker
{
	const char *conninfo;
	char	  **queues;
	int			nqueues;
	char	   *queues_param; /* text[] literal, NULL for every queue */
	char	   *caps_param;	  /* text[] literal */
	const char *lease;
	const char *wait;
	char		name[256];
	int			concurrency;
	double		grace;
	bool		json;
	char	  **cmd;

	PGconn *conn;
	PGconn *wconn;
	bool	await_inflight;
	bool	want_claim;
	double	reconnect_at;
	double	backoff;
	size_t	max_result;
	Slot   *slots;
	int		running;  /* used slots */
	int		stopping; /* signals received */
	double	grace_end;
	bool	claimed_ok; /* a claim has succeeded */
} Worker;

static int sig_pipe[2] = { -1, -1 };

static double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
worker_signal(int signo)
{
	int	 save = errno;
	char c = (char) signo;

	if (write(sig_pipe[1], &c, 1) < 0)
	{
		/* the pipe is full: the loop has plenty to read already */
	}
	errno = save;
}

static void
set_nonblock_cloexec(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* One log line: text, or a JSON object with --json.  extra is JSON. */
static void
worker_log(Worker *w, const char *level, const char *msg)
{
	time_t	  t = time(NULL);
	struct tm tm;
	char	  ts[32];

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (w->json)
	{
		CtlBuf b;

		ctl_buf_init(&b);
		ctl_buf_printf(&b, "{\"ts\": \"%s\", \"level\": \"%s\", \"msg\": ", ts,
					   level);
		ctl_json_string(&b, msg, strlen(msg), (size_t) -1, NULL);
		ctl_buf_appends(&b, "}\n");
		fputs(b.data, stderr);
		ctl_buf_free(&b);
	}
	else
		fprintf(stderr, "%s %s: %s\n", ts, level, msg);
	fflush(stderr);
}

/* The line of a finished task. */
static void
worker_log_task(Worker *w, Slot *s, const char *outcome, int exit_code,
				const char *detail)
{
	time_t	  t = time(NULL);
	struct tm tm;
	char	  ts[32];
	double	  duration = now_mono() - s->started;
	CtlBuf	  b;

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	ctl_buf_init(&b);
	if (w->json)
	{
		ctl_buf_printf(&b,
					   "{\"ts\": \"%s\", \"task\": %s, \"attempt\": %s, "
					   "\"kind\": ",
					   ts, s->id, s->attempt);
		ctl_json_string(&b, s->kind, strlen(s->kind), (size_t) -1, NULL);
		ctl_buf_appends(&b, ", \"queue\": ");
		ctl_json_string(&b, s->queue, strlen(s->queue), (size_t) -1, NULL);
		ctl_buf_printf(&b, ", \"duration\": %.3f, \"outcome\": \"%s\"",
					   duration, outcome);
		if (exit_code >= 0)
			ctl_buf_printf(&b, ", \"exit\": %d", exit_code);
		if (detail)
		{
			ctl_buf_appends(&b, ", \"detail\": ");
			ctl_json_string(&b, detail, strlen(detail), 1024, NULL);
		}
		ctl_buf_appends(&b, "}\n");
	}
	else
	{
		ctl_buf_printf(&b,
					   "%s task %s kind=%s attempt=%s queue=%s "
					   "duration=%.3fs outcome=%s",
					   ts, s->id, s->kind, s->attempt, s->queue, duration,
					   outcome);
		if (exit_code >= 0)
			ctl_buf_printf(&b, " exit=%d", exit_code);
		if (detail)
		{
			/* One line: the detail's first line only. */
			size_t n = strcspn(detail, "\n");

			ctl_buf_appends(&b, " detail=");
			ctl_buf_append(&b, detail, n > 200 ? 200 : n);
		}
		ctl_buf_appends(&b, "\n");
	}
	fputs(b.data, stderr);
	fflush(stderr);
	ctl_buf_free(&b);
}

static void
slot_free(Worker *w, Slot *s)
{
	if (s->out_fd >= 0)
		close(s->out_fd);
	if (s->err_fd >= 0)
		close(s->err_fd);
	free(s->id);
	free(s->attempt);
	free(s->queue);
	free(s->kind);
	free(s->token);
	ctl_buf_free(&s->out);
	ctl_buf_free(&s->err);
	memset(s, 0, sizeof(*s));
	s->out_fd = s->err_fd = -1;
	w->running--;
	w->want_claim = true;
}

/*
 * Close the wait connection.  A wait in progress is canceled first, so that
 * its backend ends now rather than when the wait would have.
 */
static void
worker_drop_wait(Worker *w)
{
	if (w->wconn != NULL && w->await_inflight)
	{
		PGcancel *cancel = PQgetCancel(w->wconn);
		char	  errbuf[256];

		if (cancel)
		{
			PQcancel(cancel, errbuf, sizeof(errbuf));
			PQfreeCancel(cancel);
		}
	}
	PQfinish(w->wconn);
	w->wconn = NULL;
	w->await_inflight = false;
}

/* The connection broke: drop both, reconnect after a back-off. */
static void
worker_disconnect(Worker *w, const char *why)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "connection lost (%s); reconnecting in %.1fs",
			 why, w->backoff);
	worker_log(w, "warning", msg);
	PQfinish(w->conn);
	w->conn = NULL;
	worker_drop_wait(w);
	w->reconnect_at = now_mono() + w->backoff;
	w->backoff = w->backoff * 2 > 30 ? 30 : w->backoff * 2;
}

/*
 * Check a result of the control connection.  Returns 0 on success, 1 on a
 * broken connection (now dropped), 2 on an error (reported).  A missing
 * privilege ends the worker: no task could be worked on.
 */
static int
worker_check(Worker *w, PGresult *res, const char *what)
{
	const char *state;

	if (res && (PQresultStatus(res) == PGRES_TUPLES_OK ||
				PQresultStatus(res) == PGRES_COMMAND_OK))
		return 0;
	if (PQstatus(w->conn) != CONNECTION_OK)
	{
		worker_disconnect(w, what);
		return 1;
	}
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (state && (strcmp(state, "42501") == 0 || strcmp(state, "3F000") == 0))
	{
		ctl_result_status(w->conn, res, CTL_ROLE_WORKER, what);
		for (int i = 0; i < w->concurrency; i++)
			if (w->slots[i].used && w->slots[i].pid > 0)
				kill(-w->slots[i].pid, SIGKILL);
		exit(EXIT_PRIVILEGE);
	}
	{
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s: %s", what,
				 res ? PQresultErrorMessage(res) : PQerrorMessage(w->conn));
		msg[strcspn(msg, "\n")] = '\0';
		worker_log(w, "error", msg);
	}
	return 2;
}

static bool
worker_connect(Worker *w)
{
	PGresult *res;
	long long max;

	w->conn = ctl_connect(w->conninfo, true);
	if (w->conn == NULL)
		return false;
	res = ctl_exec(w->conn,
				   "SELECT pg_catalog.pg_size_bytes(pg_catalog.current_setting("
				   "'schedq.max_payload', true))",
				   0, NULL);
	if (worker_check(w, res, "max_payload") != 0)
	{
		PQclear(res);
		return false;
	}
	max = PQgetisnull(res, 0, 0) ? 1024 * 1024 : atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (max <= 0 || max > OUT_CAP)
		max = OUT_CAP;
	w->max_result = (size_t) max;
	w->backoff = 0.1;
	w->want_claim = true;
	return true;
}

/* Kill a slot's process group (once per reason). */
static void
slot_kill(Slot *s, SlotKill why)
{
	if (s->pid > 0 && s->killed == KILL_NONE)
	{
		s->killed = why;
		kill(-s->pid, SIGKILL);
	}
}

/* Start the program for a claimed task in slot s.  false: it failed. */
static bool
slot_start(Worker *w, Slot *s, const char *payload, const char *run_id,
		   char *errbuf, size_t errlen)
{
	int			outp[2];
	int			errp[2];
	int			in_fd;
	char		path[] = "/tmp/schedqctl.XXXXXX";
	const char *tmpdir = getenv("TMPDIR");
	char	   *tmpl;
	size_t		len = strlen(payload);
	pid_t		pid;

	/* The payload goes in an unlinked temporary file: the program's stdin. */
	if (tmpdir && *tmpdir)
	{
		tmpl = ctl_malloc(strlen(tmpdir) + 32);
		sprintf(tmpl, "%s/schedqctl.XXXXXX", tmpdir);
	}
	else
		tmpl = ctl_strdup(path);
	in_fd = mkstemp(tmpl);
	if (in_fd < 0)
	{
		snprintf(errbuf, errlen, "could not create a temporary file: %s",
				 strerror(errno));
		free(tmpl);
		return false;
	}
	unlink(tmpl);
	free(tmpl);
	for (size_t off = 0; off < len;)
	{
		ssize_t n = write(in_fd, payload + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			snprintf(errbuf, errlen, "could not write the payload: %s",
					 strerror(errno));
			close(in_fd);
			return false;
		}
		off += n;
	}
	lseek(in_fd, 0, SEEK_SET);

	if (pipe(outp) < 0 || pipe(errp) < 0)
	{
		snprintf(errbuf, errlen, "could not create a pipe: %s",
				 strerror(errno));
		close(in_fd);
		return false;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
	{
		snprintf(errbuf, errlen, "could not fork: %s", strerror(errno));
		close(in_fd);
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		return false;
	}
	if (pid == 0)
	{
		sigset_t none;

		/* The child: its own process group, default signals, the env. */
		setpgid(0, 0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(in_fd, STDIN_FILENO);
		dup2(outp[1], STDOUT_FILENO);
		dup2(errp[1], STDERR_FILENO);
		close(in_fd);
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		setenv("SCHEDQ_TASK_ID", s->id, 1);
		setenv("SCHEDQ_ATTEMPT", s->attempt, 1);
		setenv("SCHEDQ_KIND", s->kind, 1);
		setenv("SCHEDQ_QUEUE", s->queue, 1);
		setenv("SCHEDQ_RUN_ID", run_id, 1);
		execvp(w->cmd[0], w->cmd);
		fprintf(stderr, "schedqctl: could not run \"%s\": %s\n", w->cmd[0],
				strerror(errno));
		_exit(127);
	}
	/* Both sides set the group, so a kill right after fork finds it. */
	setpgid(pid, pid);
	close(in_fd);
	close(outp[1]);
	close(errp[1]);
	set_nonblock_cloexec(outp[0]);
	set_nonblock_cloexec(errp[0]);
	s->pid = pid;
	s->out_fd = outp[0];
	s->err_fd = errp[0];
	return true;
}

/* Read what a pipe has; at EOF close it.  Bounded as the header says. */
static void
slot_read(Worker *w, Slot *s, bool is_out)
{
	char chunk[16384];
	int *fd = is_out ? &s->out_fd : &s->err_fd;

	while (*fd >= 0)
	{
		ssize_t n = read(*fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return; /* EAGAIN: nothing more now */
		if (n == 0)
		{
			close(*fd);
			*fd = -1;
			return;
		}
		if (is_out)
		{
			/* Keep one byte past the limit, to know it was passed. */
			size_t room = w->max_result + 1 > s->out.len ?
							  w->max_result + 1 - s->out.len :
							  0;

			ctl_buf_append(&s->out, chunk,
						   (size_t) n < room ? (size_t) n : room);
			s->out_total += n;
		}
		else
		{
			ctl_buf_append(&s->err, chunk, n);
			if (s->err.len > 2 * ERR_TAIL)
			{
				memmove(s->err.data, s->err.data + s->err.len - ERR_TAIL,
						ERR_TAIL);
				s->err.len = ERR_TAIL;
				s->err.data[s->err.len] = '\0';
			}
		}
	}
}

/* The result of a program's stdout, as the header says; NULL for none. */
static char *
slot_result(Worker *w, Slot *s, size_t max_out)
{
	CtlBuf b;
	size_t used;

	if (s->out_total == 0)
		return NULL;
	if (s->out_total <= max_out && ctl_json_valid(s->out.data, s->out.len))
		return ctl_strdup(s->out.data);
	ctl_buf_init(&b);
	ctl_buf_appends(&b, "{\"stdout\": ");
	ctl_json_string(&b, s->out.data,
					s->out.len > max_out ? max_out : s->out.len,
					max_out > 200 ? max_out - 200 : 0, &used);
	if (used < s->out_total)
		ctl_buf_printf(&b, ", \"truncated\": true, \"stdout_bytes\": %zu",
					   s->out_total);
	ctl_buf_appends(&b, "}");
	(void) w;
	return b.data;
}

/* The tail of stderr, made fit for a text value. */
static char *
slot_error(Slot *s, const char *prefix)
{
	CtlBuf b;
	size_t start = s->err.len > ERR_TAIL ? s->err.len - ERR_TAIL : 0;

	ctl_buf_init(&b);
	ctl_buf_appends(&b, prefix);
	if (s->err.len > start)
	{
		ctl_buf_appends(&b, ": ");
		ctl_buf_append(&b, s->err.data + start, s->err.len - start);
	}
	ctl_sanitize_text(b.data, b.len);
	/* Trailing newlines say nothing in last_error. */
	while (b.len > 0 && b.data[b.len - 1] == '\n')
		b.data[--b.len] = '\0';
	return b.data;
}

/*
 * Report a finished program.  Returns false if the connection broke
 * before the answer came: the slot stays and the report is sent again
 * after reconnecting.
 */
static bool
slot_report(Worker *w, Slot *s)
{
	PGresult   *res;
	int			code = -1;
	bool		done = false;
	bool		permanent = false;
	const char *retry_in = NULL;
	char		prefix[128];
	char	   *error = NULL;
	int			rc;

	if (s->killed == KILL_LOST)
	{
		worker_log_task(w, s, "lost", -1,
						"the task is no longer this worker's (canceled or "
						"reclaimed); nothing reported");
		return true;
	}
	if (s->killed == KILL_TIMEOUT)
		snprintf(prefix, sizeof(prefix),
				 "timeout: process group killed after %.1fs",
				 now_mono() - s->started);
	else if (s->killed == KILL_SHUTDOWN)
	{
		snprintf(prefix, sizeof(prefix),
				 "worker shut down: process group killed after %.1fs",
				 now_mono() - s->started);
		retry_in = "0";
	}
	else if (WIFEXITED(s->wstatus))
	{
		code = WEXITSTATUS(s->wstatus);
		if (code == 0)
			done = true;
		else
		{
			snprintf(prefix, sizeof(prefix), "exit status %d%s", code,
					 code == EX_TEMPFAIL ? " (EX_TEMPFAIL)" : "");
			permanent = (code != EX_TEMPFAIL);
		}
	}
	else
		snprintf(prefix, sizeof(prefix), "killed by signal %d",
				 WTERMSIG(s->wstatus));

	if (done)
	{
		char	   *result = slot_result(w, s, w->max_result);
		const char *values[2] = { s->token, result };

		res = ctl_exec(w->conn, "SELECT schedq.complete($1, $2::jsonb)", 2,
					   values);
		rc = worker_check(w, res, "complete");
		if (rc == 2 && result != NULL && PQstatus(w->conn) == CONNECTION_OK)
		{
			/*
			 * Refused (too large as jsonb, say): the result becomes a
			 * truncated wrapper of a quarter of the limit.
			 */
			PQclear(res);
			free(result);
			result =
				slot_result(w, s,
							w->max_result / 4 > 256 ? w->max_result / 4 : 256);
			values[1] = result;
			res = ctl_exec(w->conn, "SELECT schedq.complete($1, $2::jsonb)", 2,
						   values);
			rc = worker_check(w, res, "complete");
		}
		free(result);
		if (rc == 1)
		{
			PQclear(res);
			return false;
		}
		if (rc == 0)
			worker_log_task(w, s,
							strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? "done" :
																	  "stale",
							code, NULL);
		else
			worker_log_task(w, s, "error", code, "complete refused");
		PQclear(res);
		return true;
	}

	error = slot_error(s, prefix);
	{
		const char *values[4] = { s->token, error, retry_in,
								  permanent ? "true" : "false" };

		res = ctl_exec(w->conn,
					   "SELECT schedq.fail($1, $2, retry_in => $3::interval, "
					   "permanent => $4::boolean)",
					   4, values);
	}
	rc = worker_check(w, res, "fail");
	if (rc == 1)
	{
		PQclear(res);
		free(error);
		return false;
	}
	if (rc == 0)
	{
		const char *status = PQgetvalue(res, 0, 0);

		worker_log_task(w, s,
						s->killed == KILL_TIMEOUT	   ? "timeout" :
						strcmp(status, "pending") == 0 ? "retry" :
						strcmp(status, "stale") == 0   ? "stale" :
														 status,
						code, error);
	}
	else
		worker_log_task(w, s, "error", code, "fail refused");
	PQclear(res);
	free(error);
	return true;
}

/* The claim: up to $4 tasks, with the seconds left of each lease. */
static const char *const claim_sql =
	"SELECT id, attempt, queue, kind, payload, run_id, token, "
	"extract(epoch FROM lease_expires_at - pg_catalog.clock_timestamp()) "
	"FROM schedq.claim($1, $2::text[], $3::text[], $4::integer, "
	"$5::interval)";

/*
 * Is a claim's error one of our arguments' (docs/reference.md, claim's
 * SQLSTATEs: 22004, 22023, 2202E, 54000, 0A000, 55000)?  Those repeat on
 * every try; other errors (57014 canceled, 40001, 40P01, 55P03, XX000)
 * come from what else ran at the time.
 */
static bool
claim_error_is_ours(const char *state)
{
	if (state == NULL || strlen(state) != 5)
		return false;
	return strncmp(state, "22", 2) == 0 || strncmp(state, "54", 2) == 0 ||
		   strncmp(state, "0A", 2) == 0 || strcmp(state, "55000") == 0;
}

/*
 * Take the answer of a claim: start a program for each task claimed, in a
 * free slot.  Returns how many were claimed, or -1 if the claim failed
 * (the connection is then dropped, to be made again after a back-off).
 * Consumes res.
 */
static int
worker_claim_take(Worker *w, PGresult *res)
{
	int got;

	if (worker_check(w, res, "claim") != 0)
	{
		const char *state =
			res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		bool ours = claim_error_is_ours(state);

		PQclear(res);
		if (w->conn != NULL)
		{
			/*
			 * An error that is not the connection's.  If the first claim
			 * fails on our arguments (--lease, --queue, --caps: a data
			 * exception, a limit, a feature or state claim refuses), they
			 * will never pass: give up.  Anything else (canceled, a
			 * serialization failure, a deadlock, a lock timeout, an
			 * internal error), and any later error, may pass: back off as
			 * after a disconnect, rather than spin.
			 */
			if (!w->claimed_ok && ours)
			{
				for (int i = 0; i < w->concurrency; i++)
					if (w->slots[i].used && w->slots[i].pid > 0)
						kill(-w->slots[i].pid, SIGKILL);
				exit(EXIT_ERROR);
			}
			worker_disconnect(w, "claim failed");
		}
		return -1;
	}
	w->claimed_ok = true;
	got = PQntuples(res);
	for (int i = 0, j = 0; i < got; i++)
	{
		Slot  *s;
		char   err[256];
		double left = atof(PQgetvalue(res, i, 7));

		while (j < w->concurrency && w->slots[j].used)
			j++;
		if (j == w->concurrency || w->conn == NULL)
		{
			/*
			 * No slot for it: a batch of reports was refused and the
			 * connection broke while they were sent one by one, so their
			 * slots are still taken.  Without a connection the task cannot
			 * be handed back either: its lease runs out and the reaper
			 * retries it, as after a claim whose answer was lost.
			 */
			char msg[160];

			snprintf(msg, sizeof(msg),
					 "task %s claimed but not started (no free slot); its "
					 "lease will expire",
					 PQgetvalue(res, i, 0));
			worker_log(w, "warning", msg);
			continue;
		}
		s = &w->slots[j];
		s->used = true;
		w->running++;
		s->id = ctl_strdup(PQgetvalue(res, i, 0));
		s->attempt = ctl_strdup(PQgetvalue(res, i, 1));
		s->queue = ctl_strdup(PQgetvalue(res, i, 2));
		s->kind = ctl_strdup(PQgetvalue(res, i, 3));
		s->token = ctl_strdup(PQgetvalue(res, i, 6));
		ctl_buf_init(&s->out);
		ctl_buf_init(&s->err);
		s->out_fd = s->err_fd = -1;
		s->started = now_mono();
		s->expires = s->started + left;
		s->hb_every = left / 3 > 0.1 ? left / 3 : 0.1;
		s->next_hb = s->started + s->hb_every;
		if (!slot_start(w, s, PQgetvalue(res, i, 4), PQgetvalue(res, i, 5), err,
						sizeof(err)))
		{
			/* Could not start it: fail the attempt for a retry. */
			ctl_buf_appends(&s->err, err);
			s->pid = 0;
			/* As if it exited with EX_TEMPFAIL: retried. */
			s->wstatus = EX_TEMPFAIL << 8;
			if (slot_report(w, s))
				slot_free(w, s);
		}
	}
	PQclear(res);
	return got;
}

/* Claim up to n tasks and start them.  Returns how many were claimed. */
static int
worker_claim(Worker *w, int n)
{
	char		nbuf[16];
	const char *values[5] = { w->name, w->queues_param, w->caps_param, nbuf,
							  w->lease };

	snprintf(nbuf, sizeof(nbuf), "%d", n);
	return worker_claim_take(w, ctl_exec(w->conn, claim_sql, 5, values));
}

/*
 * Send n queries in one pipeline (libpq's pipeline mode), then read their
 * answers: one round trip for all of them.  With one_xact false each query
 * is followed by a sync point, so each is its own transaction and an error
 * in one does not abort the others; with one_xact true a single sync point
 * follows the last, so they run in one transaction (one commit), and an
 * error aborts it: the queries after the failed one answer
 * PGRES_PIPELINE_ABORTED.  res[i] gets the result of query i.  Returns
 * false if the connection broke (it is then dropped; res[] is all NULL).
 */
static bool
worker_pipeline(Worker *w, int n, const char *const *sql, const int *nparams,
				const char *const *const *values, PGresult **res, bool one_xact)
{
	PGconn *conn = w->conn;
	bool	ok = PQenterPipelineMode(conn) == 1;

	for (int i = 0; i < n; i++)
		res[i] = NULL;
	for (int i = 0; ok && i < n; i++)
		ok = PQsendQueryParams(conn, sql[i], nparams[i], NULL, values[i], NULL,
							   NULL, 0) == 1 &&
			 ((one_xact && i < n - 1) || PQpipelineSync(conn) == 1);
	for (int i = 0; ok && i < n; i++)
	{
		PGresult *r;

		/* The query's result, then NULL, then (maybe) the sync point's. */
		while ((r = PQgetResult(conn)) != NULL)
		{
			if (res[i] == NULL)
				res[i] = r;
			else
				PQclear(r);
		}
		ok = res[i] != NULL;
		if (ok && (!one_xact || i == n - 1))
		{
			r = PQgetResult(conn);
			ok = r != NULL && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
			PQclear(r);
		}
	}
	if (ok)
		ok = PQexitPipelineMode(conn) == 1;
	if (!ok || PQstatus(conn) != CONNECTION_OK)
	{
		char why[256];

		snprintf(why, sizeof(why), "pipeline: %s", PQerrorMessage(conn));
		why[strcspn(why, "\n")] = '\0';
		for (int i = 0; i < n; i++)
		{
			PQclear(res[i]);
			res[i] = NULL;
		}
		worker_disconnect(w, why);
		return false;
	}
	return true;
}

/* Did the program of a finished slot end so that the task is done? */
static bool
slot_done(Slot *s)
{
	return s->killed == KILL_NONE && WIFEXITED(s->wstatus) &&
		   WEXITSTATUS(s->wstatus) == 0;
}

/* complete_and_claim: the claim's columns, as claim_sql has them. */
static const char *const complete_and_claim_sql =
	"SELECT id, attempt, queue, kind, payload, run_id, token, "
	"extract(epoch FROM lease_expires_at - pg_catalog.clock_timestamp()) "
	"FROM schedq.complete_and_claim($1::text[], $2, $3::jsonb[], $4::text[], "
	"$5::text[], $6::integer, $7::interval)";

/*
 * What each grant is worth just before complete_and_claim uses it, in the
 * same transaction: complete_and_claim returns the claimed rows only, and
 * a stale grant changes nothing without saying so.
 */
static const char *const verify_sql =
	"SELECT schedq.verify_grant(t) FROM pg_catalog.unnest($1::text[]) "
	"WITH ORDINALITY AS u(t, o) ORDER BY o";

/*
 * Report every finished program and claim for the free slots, in as few
 * round trips and commits as the API allows.  A failure (or a task no
 * longer ours) is reported on its own, as slot_report does.  The programs
 * that exited 0 are completed together with the claim for the slots they
 * free, by one complete_and_claim (one statement, one commit for all of
 * them and the next tasks).  It is preceded, in the same pipeline and the
 * same transaction, by a verify_grant of each token, which says which
 * completions were stale (logged "stale"; a cancel or a reclaim that
 * commits between the two statements, microseconds apart, is logged
 * "done" although the completion changed nothing).  While shutting down
 * nothing is claimed: one complete(), or one complete_many() for several.
 * If the server refuses the batch (a result too large, a forged token)
 * each is reported on its own, which shrinks a result the server refuses,
 * and the claim is made on its own.  Returns the number claimed, -1 if
 * no claim was made or it failed.
 */
static int
worker_report_finished(Worker *w)
{
	Slot			 **done = ctl_malloc(sizeof(Slot *) * w->concurrency);
	char			 **tokens = ctl_malloc(sizeof(char *) * w->concurrency);
	char			 **results = ctl_malloc(sizeof(char *) * w->concurrency);
	int				   ndone = 0;
	int				   want = 0;
	int				   nq = 0;
	int				   got = -1;
	bool			   one_xact = false;
	char			   nbuf[16];
	char			  *tokens_param = NULL;
	char			  *results_param = NULL;
	const char		  *sql[2];
	int				   nparams[2];
	const char *const *values[2];
	const char		  *verify_values[1];
	const char		  *complete_values[7];
	const char *claim_values[5] = { w->name, w->queues_param, w->caps_param,
									nbuf, w->lease };
	PGresult   *res[2];

	memset(results, 0, sizeof(char *) * w->concurrency);
	for (int i = 0; i < w->concurrency && w->conn != NULL; i++)
	{
		Slot *s = &w->slots[i];

		if (!s->used || s->pid != 0)
			continue;
		if (slot_done(s))
			done[ndone++] = s;
		else if (slot_report(w, s))
			slot_free(w, s);
	}
	if (w->conn == NULL)
		goto out;

	if (ndone > 0)
	{
		for (int i = 0; i < ndone; i++)
		{
			tokens[i] = done[i]->token;
			results[i] = slot_result(w, done[i], w->max_result);
		}
		tokens_param = ctl_text_array(tokens, ndone);
		results_param = ctl_text_array(results, ndone);
	}
	if (ndone > 0 && !w->stopping)
	{
		/* One transaction: verify_grant, then complete_and_claim. */
		want = w->concurrency - w->running + ndone;
		snprintf(nbuf, sizeof(nbuf), "%d", want);
		verify_values[0] = tokens_param;
		sql[0] = verify_sql;
		nparams[0] = 1;
		values[0] = verify_values;
		complete_values[0] = tokens_param;
		complete_values[1] = w->name;
		complete_values[2] = results_param;
		complete_values[3] = w->queues_param;
		complete_values[4] = w->caps_param;
		complete_values[5] = nbuf;
		complete_values[6] = w->lease;
		sql[1] = complete_and_claim_sql;
		nparams[1] = 7;
		values[1] = complete_values;
		nq = 2;
		one_xact = true;
	}
	else if (ndone == 1)
	{
		/* Shutting down: complete, claim nothing. */
		complete_values[0] = done[0]->token;
		complete_values[1] = results[0];
		sql[nq] = "SELECT schedq.complete($1, $2::jsonb)";
		nparams[nq] = 2;
		values[nq++] = complete_values;
	}
	else if (ndone > 1)
	{
		complete_values[0] = tokens_param;
		complete_values[1] = results_param;
		sql[nq] = "SELECT schedq.complete_many($1::text[], $2::jsonb[])";
		nparams[nq] = 2;
		values[nq++] = complete_values;
	}
	else if (!w->stopping && w->want_claim && w->running < w->concurrency)
	{
		want = w->concurrency - w->running;
		snprintf(nbuf, sizeof(nbuf), "%d", want);
		sql[nq] = claim_sql;
		nparams[nq] = 5;
		values[nq++] = claim_values;
	}
	if (nq == 0)
		goto out;
	if (!worker_pipeline(w, nq, sql, nparams, values, res, one_xact))
		goto out; /* reported again after reconnecting */

	if (one_xact)
	{
		/* The first error, if any: the other answer is PIPELINE_ABORTED. */
		bool verified = PQresultStatus(res[0]) == PGRES_TUPLES_OK;
		int	 rc =
			worker_check(w, verified ? res[1] : res[0], "complete_and_claim");

		if (rc == 0)
		{
			for (int i = 0; i < ndone; i++)
			{
				const char *verdict =
					i < PQntuples(res[0]) ? PQgetvalue(res[0], i, 0) : "";

				worker_log_task(w, done[i],
								strcmp(verdict, "stale") == 0 ? "stale" :
																"done",
								0, NULL);
				slot_free(w, done[i]);
			}
			got = worker_claim_take(w, res[1]);
			res[1] = NULL;
			if (got >= 0 && got < want)
				w->want_claim = false;
		}
		else if (rc == 2)
		{
			/*
			 * Refused, and nothing was done: one at a time, each shrunk if
			 * need be; the claim is made on its own (want_claim).
			 */
			for (int i = 0; i < ndone && w->conn != NULL; i++)
				if (slot_report(w, done[i]))
					slot_free(w, done[i]);
		}
		PQclear(res[0]);
		PQclear(res[1]);
	}
	else if (ndone > 0)
	{
		int rc =
			worker_check(w, res[0], ndone == 1 ? "complete" : "complete_many");

		if (rc == 0)
		{
			/* "t", or "{t,f,...}": one letter per task, in order. */
			const char *p = PQgetvalue(res[0], 0, 0);

			for (int i = 0; i < ndone; i++)
			{
				while (*p && *p != 't' && *p != 'f')
					p++;
				worker_log_task(w, done[i], *p == 't' ? "done" : "stale", 0,
								NULL);
				if (*p)
					p++;
				slot_free(w, done[i]);
			}
		}
		else if (rc == 2)
		{
			/* Refused: one at a time, each shrunk if need be. */
			for (int i = 0; i < ndone && w->conn != NULL; i++)
				if (slot_report(w, done[i]))
					slot_free(w, done[i]);
		}
		PQclear(res[0]);
	}
	else if (want > 0)
	{
		got = worker_claim_take(w, res[0]);
		if (got >= 0 && got < want)
			w->want_claim = false;
	}

out:
	for (int i = 0; i < ndone; i++)
		free(results[i]);
	free(tokens_param);
	free(results_param);
	free(done);
	free(tokens);
	free(results);
	return got;
}

/* Send CALL await_task on the wait connection. */
static void
worker_await(Worker *w)
{
	const char *values[3] = { w->queues_param, w->caps_param, w->wait };

	if (w->wconn == NULL)
	{
		w->wconn = ctl_connect(w->conninfo, true);
		if (w->wconn == NULL)
		{
			worker_disconnect(w, "wait connection");
			return;
		}
	}
	if (!PQsendQueryParams(w->wconn,
						   "CALL schedq.await_task($1::text[], $2::text[], "
						   "$3::interval)",
						   3, NULL, values, NULL, NULL, 0))
	{
		worker_disconnect(w, "await_task");
		return;
	}
	w->await_inflight = true;
}

/* The wait connection has input: is await_task done? */
static void
worker_await_input(Worker *w)
{
	PGresult *res;
	bool	  failed = false;

	if (!PQconsumeInput(w->wconn))
	{
		worker_disconnect(w, "await_task");
		return;
	}
	if (PQisBusy(w->wconn))
		return;
	while ((res = PQgetResult(w->wconn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_TUPLES_OK &&
			PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

			if (state &&
				(strcmp(state, "42501") == 0 || strcmp(state, "3F000") == 0))
			{
				ctl_result_status(w->wconn, res, CTL_ROLE_WORKER, "await_task");
				exit(EXIT_PRIVILEGE);
			}
			failed = true;
			{
				char msg[1024];

				snprintf(msg, sizeof(msg), "await_task: %s",
						 PQresultErrorMessage(res));
				msg[strcspn(msg, "\n")] = '\0';
				worker_log(w, "error", msg);
			}
		}
		PQclear(res);
	}
	w->await_inflight = false;
	w->want_claim = true;
	if (failed)
	{
		/* Do not spin on a failing wait: back off as after a disconnect. */
		worker_disconnect(w, "await_task failed");
	}
}

/* Reap exited children into their slots. */
static void
worker_reap(Worker *w)
{
	pid_t pid;
	int	  status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		for (int i = 0; i < w->concurrency; i++)
		{
			Slot *s = &w->slots[i];

			if (s->used && s->pid == pid)
			{
				s->wstatus = status;
				s->pid = 0;
				/* What it wrote before it exited is in the pipes: drain. */
				slot_read(w, s, true);
				slot_read(w, s, false);
				break;
			}
		}
	}
}

static void
worker_heartbeat(Worker *w, Slot *s, double now)
{
	const char *values[1] = { s->token };
	PGresult   *res;
	int			rc;

	res = ctl_exec(w->conn,
				   "SELECT extract(epoch FROM schedq.heartbeat($1) - "
				   "pg_catalog.clock_timestamp())",
				   1, values);
	rc = worker_check(w, res, "heartbeat");
	if (rc == 0)
	{
		if (PQgetisnull(res, 0, 0))
			slot_kill(s, KILL_LOST);
		else
			s->expires = now + atof(PQgetvalue(res, 0, 0));
		s->next_hb = now + s->hb_every;
	}
	else if (rc == 2)
		s->next_hb = now + s->hb_every;
	PQclear(res);
}

static const struct option worker_options[] = {
	{ "dbname", required_argument, NULL, 'd' },
	{ "help", no_argument, NULL, 'H' },
	{ "queue", required_argument, NULL, 'q' },
	{ "caps", required_argument, NULL, 'c' },
	{ "concurrency", required_argument, NULL, 'n' },
	{ "lease", required_argument, NULL, 'l' },
	{ "grace", required_argument, NULL, 'g' },
	{ "name", required_argument, NULL, 'N' },
	{ "wait", required_argument, NULL, 'w' },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 }
};

int
ctl_cmd_worker(int argc, char **argv)
{
	Worker			 w;
	int				 c;
	struct sigaction sa;
	struct pollfd	*fds;
	int				 exit_code = EXIT_OK;
	char			*end;
	char			 waitbuf[32];
	long			 wait_s = 30;

	memset(&w, 0, sizeof(w));
	w.concurrency = 1;
	w.grace = 30;
	w.queues = ctl_malloc(sizeof(char *) * (argc + 1));

	optind = 1;
	/* "+": options end at the command, whose own options are its own. */
	while ((c = getopt_long(argc, argv, "+d:q:n:", worker_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				w.conninfo = optarg;
				break;
			case 'H':
				ctl_usage("worker", false);
				return EXIT_OK;
			case 'q':
				w.queues[w.nqueues++] = optarg;
				break;
			case 'c':
			{
				char **items;
				int	   n;
				char  *copy = ctl_split_list(optarg, &n, &items);

				w.caps_param =
					optarg[0] ? ctl_text_array(items, n) : ctl_strdup("{}");
				free(items);
				free(copy);
				break;
			}
			case 'n':
				w.concurrency = (int) strtol(optarg, &end, 10);
				if (*end || w.concurrency < 1 ||
					w.concurrency > MAX_CONCURRENCY)
				{
					ctl_error("worker: --concurrency must be 1 to %d",
							  MAX_CONCURRENCY);
					return EXIT_USAGE;
				}
				break;
			case 'l':
				w.lease = optarg;
				break;
			case 'g':
				w.grace = strtod(optarg, &end);
				if (*end || !(w.grace >= 0) || w.grace > 86400)
				{
					ctl_error("worker: --grace must be 0 to 86400 seconds");
					return EXIT_USAGE;
				}
				break;
			case 'N':
				snprintf(w.name, sizeof(w.name), "%s", optarg);
				break;
			case 'w':
				wait_s = strtol(optarg, &end, 10);
				if (*end || wait_s < 1 || wait_s > 3600)
				{
					ctl_error("worker: --wait must be 1 to 3600 seconds");
					return EXIT_USAGE;
				}
				break;
			case 'j':
				w.json = true;
				break;
			default:
				fprintf(stderr, "Try \"schedqctl help worker\".\n");
				return EXIT_USAGE;
		}
	}
	if (optind >= argc)
	{
		ctl_error("worker: no command given (schedqctl worker [options] -- "
				  "COMMAND [ARGS...])");
		return EXIT_USAGE;
	}
	w.cmd = argv + optind;
	if (w.nqueues > 0)
		w.queues_param = ctl_text_array(w.queues, w.nqueues);
	if (w.caps_param == NULL)
		w.caps_param = ctl_strdup("{}");
	snprintf(waitbuf, sizeof(waitbuf), "%ld seconds", wait_s);
	w.wait = waitbuf;
	if (w.name[0] == '\0')
	{
		char host[200];

		if (gethostname(host, sizeof(host)) != 0)
			strcpy(host, "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(w.name, sizeof(w.name), "schedqctl@%s:%d", host,
				 (int) getpid());
	}
	w.slots = ctl_malloc(sizeof(Slot) * w.concurrency);
	memset(w.slots, 0, sizeof(Slot) * w.concurrency);
	for (int i = 0; i < w.concurrency; i++)
		w.slots[i].out_fd = w.slots[i].err_fd = -1;
	fds = ctl_malloc(sizeof(struct pollfd) * (2 + 2 * w.concurrency));

	if (pipe(sig_pipe) < 0)
	{
		ctl_error("worker: could not create a pipe: %s", strerror(errno));
		return EXIT_ERROR;
	}
	set_nonblock_cloexec(sig_pipe[0]);
	set_nonblock_cloexec(sig_pipe[1]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = worker_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	w.backoff = 0.1;
	if (!worker_connect(&w))
	{
		/* Say why, once, the way the other commands do. */
		PGconn *conn = ctl_connect(w.conninfo, false);

		PQfinish(conn);
		return EXIT_CONNECT;
	}
	{
		char msg[512];

		snprintf(msg, sizeof(msg),
				 "worker %s started: concurrency %d, command %s", w.name,
				 w.concurrency, w.cmd[0]);
		worker_log(&w, "info", msg);
	}

	for (;;)
	{
		double now = now_mono();
		double next = now + 60;
		int	   nfds = 0;
		int	   timeout_ms;
		int	   wfd = -1;

		worker_reap(&w);

		/*
		 * Finished programs: report them, free their slots and claim for
		 * them, in one round trip.
		 */
		if (w.conn != NULL)
			worker_report_finished(&w);

		if (w.stopping && w.running == 0)
			break;

		/*
		 * Shutting down without a server past the grace period: what is
		 * left unreported is the reaper's once its lease runs out.
		 */
		if (w.stopping && w.conn == NULL && now_mono() >= w.grace_end)
		{
			char msg[160];

			snprintf(msg, sizeof(msg),
					 "no connection at the end of the grace period: %d "
					 "task(s) not reported; their leases will expire",
					 w.running);
			worker_log(&w, "warning", msg);
			for (int i = 0; i < w.concurrency; i++)
				if (w.slots[i].used && w.slots[i].pid > 0)
					kill(-w.slots[i].pid, SIGKILL);
			exit_code = EXIT_CONNECT;
			break;
		}

		if (w.conn == NULL && now >= w.reconnect_at)
		{
			if (worker_connect(&w))
				worker_log(&w, "info", "reconnected");
			else
			{
				PQfinish(w.conn);
				w.conn = NULL;
				worker_disconnect(&w, "reconnect failed");
			}
			continue;
		}

		/* Leases: renew those due; kill what ran out of time. */
		now = now_mono();
		for (int i = 0; i < w.concurrency; i++)
		{
			Slot *s = &w.slots[i];

			if (!s->used || s->pid == 0)
				continue;
			if (w.conn != NULL && s->killed == KILL_NONE && now >= s->next_hb)
				worker_heartbeat(&w, s, now);
			if (now >= s->expires)
				slot_kill(s, w.conn != NULL ? KILL_TIMEOUT : KILL_LOST);
			if (w.stopping && now >= w.grace_end)
				slot_kill(s, KILL_SHUTDOWN);
			if (s->killed == KILL_NONE)
			{
				if (s->next_hb < next)
					next = s->next_hb;
				if (s->expires < next)
					next = s->expires;
			}
		}
		if (w.stopping && w.grace_end < next)
			next = w.grace_end;

		/* Claim for the free slots, or wait until a task comes. */
		if (!w.stopping && w.conn != NULL && w.running < w.concurrency)
		{
			if (w.want_claim)
			{
				int want = w.concurrency - w.running;
				int got = worker_claim(&w, want);

				if (got < 0)
					continue;
				if (got == want)
					continue; /* maybe more: fill what frees up first */
				w.want_claim = false;
			}
			if (!w.await_inflight && w.conn != NULL)
				worker_await(&w);
		}
		if (w.conn == NULL && w.reconnect_at < next)
			next = w.reconnect_at;

		/* Wait for a signal, a child's output, or the wait's answer. */
		fds[nfds].fd = sig_pipe[0];
		fds[nfds++].events = POLLIN;
		if (w.await_inflight && w.wconn != NULL)
		{
			wfd = nfds;
			fds[nfds].fd = PQsocket(w.wconn);
			fds[nfds++].events = POLLIN;
		}
		for (int i = 0; i < w.concurrency; i++)
		{
			Slot *s = &w.slots[i];

			if (!s->used)
				continue;
			if (s->out_fd >= 0)
			{
				fds[nfds].fd = s->out_fd;
				fds[nfds++].events = POLLIN;
			}
			if (s->err_fd >= 0)
			{
				fds[nfds].fd = s->err_fd;
				fds[nfds++].events = POLLIN;
			}
		}
		now = now_mono();
		timeout_ms = next <= now ? 0 : (int) ((next - now) * 1000) + 1;
		if (poll(fds, nfds, timeout_ms) < 0 && errno != EINTR)
		{
			ctl_error("worker: poll failed: %s", strerror(errno));
			exit_code = EXIT_ERROR;
			break;
		}

		/* Signals. */
		{
			char	sigs[64];
			ssize_t n;

			while ((n = read(sig_pipe[0], sigs, sizeof(sigs))) > 0)
			{
				for (ssize_t i = 0; i < n; i++)
				{
					if (sigs[i] != SIGTERM && sigs[i] != SIGINT)
						continue; /* SIGCHLD: reaped at the loop's top */
					if (++w.stopping == 1)
					{
						char msg[128];

						snprintf(msg, sizeof(msg),
								 "signal %d: no more claims; %d task(s) "
								 "running, %.0fs to finish",
								 sigs[i], w.running, w.grace);
						worker_log(&w, "info", msg);
						w.grace_end = now_mono() + w.grace;
						/* Stop waiting for work. */
						worker_drop_wait(&w);
						wfd = -1;
					}
					else
					{
						worker_log(&w, "info",
								   "second signal: killing the running "
								   "tasks and exiting; their leases will "
								   "expire");
						for (int j = 0; j < w.concurrency; j++)
							if (w.slots[j].used && w.slots[j].pid > 0)
								kill(-w.slots[j].pid, SIGKILL);
						worker_drop_wait(&w);
						PQfinish(w.conn);
						return EXIT_ERROR;
					}
				}
			}
		}

		if (wfd >= 0 && w.wconn != NULL && (fds[wfd].revents != 0))
			worker_await_input(&w);

		for (int i = 0; i < w.concurrency; i++)
		{
			Slot *s = &w.slots[i];

			if (s->used && (s->out_fd >= 0 || s->err_fd >= 0))
			{
				slot_read(&w, s, true);
				slot_read(&w, s, false);
			}
		}
	}

	worker_log(&w, "info", "worker stopped");
	worker_drop_wait(&w);
	PQfinish(w.conn);
	return exit_code;
}

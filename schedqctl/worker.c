/*-------------------------------------------------------------------------
 * schedqctl/worker.c
 *	  schedqctl worker: set-up, the poll loop, and the log lines.
 *
 *	  The worker command claims tasks and runs a program for each: one
 *	  process, one thread, one poll() loop; worker.h lists the files each
 *	  part of it lives in.  Each turn of the loop:
 *		1. reaps the programs that exited (workerchild.c) and reports them,
 *		   claiming for the slots they free (workerclaim.c);
 *		2. checks that the command can still be run (else the worker
 *		   drains: its fault, not the tasks'), and ends the worker when it
 *		   drains, nothing runs and the wait for work has ended, or when the
 *		   grace period ended without a server (workerstop.c);
 *		3. reconnects after a back-off if the connection broke
 *		   (workerconn.c), and starts the turn again;
 *		4. renews the leases that are due and kills the programs whose
 *		   time ran out (workerlease.c);
 *		5. claims for the free slots; a short claim means the queues are
 *		   empty for us, and the wait connection then waits in await_task
 *		   until a task comes (workerconn.c);
 *		6. polls the signal pipe, the wait connection and the programs'
 *		   pipes until the first of them has something or the next lease
 *		   is due, and takes what came.
 *	  A finished program frees a slot and claims again at once, so with a
 *	  backlog the worker never waits.
 *
 *	  The log: one line per task on stderr, and a line for each event of
 *	  the worker (start, connection lost, signals), as text or, with
 *	  --json, as JSON objects.  This is the worker's output, which
 *	  operators parse; its own failures (bad options, poll failing) are
 *	  reported through common/logging.h, as every command's are.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/pg_prng.h"
#include "worker.h"

/* What a turn of the loop decided. */
typedef enum WorkerTurn
{
	TURN_AGAIN, /* start the next turn */
	TURN_STOP,	/* stopped: log it, close, exit with the code */
	TURN_QUIT	/* exit with the code at once (a second signal) */
} WorkerTurn;

/* Seconds on the monotonic clock. */
double
ctl_worker_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Make a descriptor non-blocking and close-on-exec. */
void
ctl_worker_nonblock_cloexec(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* The time of a log line, UTC, to the second. */
static void
log_time(char *ts, size_t len)
{
	time_t	  t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(ts, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * One log line of the worker at level (info, warning, error): text, or a
 * JSON object with --json.  The message is cut at its first newline.
 */
void
ctl_worker_log(Worker *w, const char *level, const char *fmt, ...)
{
	char			ts[32];
	char			msg[1024];
	va_list			ap;
	PQExpBufferData b;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_time(ts, sizeof(ts));
	initPQExpBuffer(&b);
	if (w->json)
	{
		appendPQExpBuffer(&b,
						  "{\"ts\": \"%s\", \"level\": \"%s\", \"msg\": ", ts,
						  level);
		ctl_text_json_string(&b, msg, strlen(msg), (size_t) -1, NULL);
		appendPQExpBufferStr(&b, "}\n");
	}
	else
		appendPQExpBuffer(&b, "%s %s: %s\n", ts, level, msg);
	ctl_text_check(&b);
	fputs(b.data, stderr);
	fflush(stderr);
	termPQExpBuffer(&b);
}

/*
 * The log line of a finished task: its id, kind, attempt, queue, how long
 * its program ran, the outcome, the exit status if any (>= 0) and a
 * detail if any.
 */
void
ctl_worker_log_task(Worker *w, Slot *s, const char *outcome, int exit_code,
					const char *detail)
{
	char			ts[32];
	double			duration = ctl_worker_now() - s->started;
	PQExpBufferData b;

	log_time(ts, sizeof(ts));
	initPQExpBuffer(&b);
	if (w->json)
	{
		appendPQExpBuffer(&b,
						  "{\"ts\": \"%s\", \"task\": %s, \"attempt\": %s, "
						  "\"kind\": ",
						  ts, s->id, s->attempt);
		ctl_text_json_string(&b, s->kind, strlen(s->kind), (size_t) -1, NULL);
		appendPQExpBufferStr(&b, ", \"queue\": ");
		ctl_text_json_string(&b, s->queue, strlen(s->queue), (size_t) -1, NULL);
		appendPQExpBuffer(&b, ", \"duration\": %.3f, \"outcome\": \"%s\"",
						  duration, outcome);
		if (exit_code >= 0)
			appendPQExpBuffer(&b, ", \"exit\": %d", exit_code);
		if (detail)
		{
			appendPQExpBufferStr(&b, ", \"detail\": ");
			ctl_text_json_string(&b, detail, strlen(detail), 1024, NULL);
		}
		appendPQExpBufferStr(&b, "}\n");
	}
	else
	{
		appendPQExpBuffer(&b,
						  "%s task %s kind=%s attempt=%s queue=%s "
						  "duration=%.3fs outcome=%s",
						  ts, s->id, s->kind, s->attempt, s->queue, duration,
						  outcome);
		if (exit_code >= 0)
			appendPQExpBuffer(&b, " exit=%d", exit_code);
		if (detail)
		{
			/* One line: the detail's first line only. */
			size_t n = strcspn(detail, "\n");

			appendPQExpBufferStr(&b, " detail=");
			appendBinaryPQExpBuffer(&b, detail, n > 200 ? 200 : n);
		}
		appendPQExpBufferChar(&b, '\n');
	}
	ctl_text_check(&b);
	fputs(b.data, stderr);
	fflush(stderr);
	termPQExpBuffer(&b);
}

/*
 * The worker's fault, not a task's (its command cannot be run, or a
 * program could not be started): say why, stop claiming, let the running
 * programs finish within --grace, and exit with code.  The first fault
 * decides the code.
 */
void
ctl_worker_fault(Worker *w, int code, const char *fmt, ...)
{
	char	msg[1024];
	va_list ap;

	if (w->fault != 0)
		return;
	w->fault = code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_worker_log(w, "error",
				   "%s: no more claims; the worker exits with status %d once "
				   "the tasks running end (at most %.0fs)",
				   msg, code, w->grace);
	if (!w->draining)
	{
		w->draining = true;
		w->grace_end = ctl_worker_now() + w->grace;
	}
}

/*
 * Claim for the free slots, or wait until a task comes.  Returns false
 * when the turn should start again at once: the claim failed, or it got
 * all it asked for and may get more.
 */
static bool
worker_claim_or_wait(Worker *w)
{
	if (w->draining || w->conn == NULL || w->running >= w->concurrency)
		return true;
	if (w->want_claim)
	{
		int want = w->concurrency - w->running;
		int got = ctl_workerclaim_claim(w, want);

		if (got < 0)
			return false;
		if (got == want)
			return false; /* maybe more: fill what frees up first */
		w->want_claim = false;
	}
	if (!w->await_inflight && w->conn != NULL)
		ctl_workerconn_await(w);
	return true;
}

/*
 * Wait until next (monotonic seconds) for a signal, a program's output or
 * the wait connection's answer, and take what came.  Returns TURN_AGAIN,
 * or what a signal or a failed poll decided.
 */
static WorkerTurn
worker_poll(Worker *w, struct pollfd *fds, double next, int *exit_code)
{
	int	   nfds = 0;
	int	   wfd = -1;
	double now;
	int	   timeout_ms;

	fds[nfds].fd = ctl_workerstop_fd();
	fds[nfds++].events = POLLIN;
	if (w->await_inflight && w->wconn != NULL)
	{
		wfd = nfds;
		fds[nfds].fd = PQsocket(w->wconn);
		fds[nfds++].events = POLLIN;
	}
	ctl_workerchild_add_fds(w, fds, &nfds);
	now = ctl_worker_now();
	timeout_ms = next <= now ? 0 : (int) ((next - now) * 1000) + 1;
	if (poll(fds, nfds, timeout_ms) < 0 && errno != EINTR)
	{
		pg_log_error("worker: poll failed: %m");
		*exit_code = EXIT_ERROR;
		return TURN_STOP;
	}

	if (!ctl_workerstop_signals(w))
	{
		*exit_code = EXIT_ERROR;
		return TURN_QUIT;
	}
	/* A second signal has dropped the wait connection: nothing to read. */
	if (wfd >= 0 && w->wconn != NULL && fds[wfd].revents != 0)
		ctl_workerconn_await_input(w);
	ctl_workerchild_read_all(w);
	return TURN_AGAIN;
}

/* One turn of the loop, as the header lists its steps. */
static WorkerTurn
worker_turn(Worker *w, struct pollfd *fds, int *exit_code)
{
	double now = ctl_worker_now();
	double next = now + 60;

	ctl_workerchild_reap(w);
	/* Before anything is claimed: can the command still be run? */
	if (!w->draining && w->conn != NULL)
	{
		char why[256];

		if (!ctl_workerchild_runnable(w, why, sizeof(why)))
			ctl_worker_fault(w, EXIT_USAGE, "command \"%s\" cannot be run: %s",
							 w->cmd[0], why);
	}
	/* Finished programs: report them and claim for them, one round trip. */
	if (w->conn != NULL)
		ctl_workerclaim_report_finished(w);

	/* Stopped once nothing runs and the wait for work has ended. */
	if (w->draining && w->running == 0 && !w->await_inflight)
		return TURN_STOP;
	if (ctl_workerstop_abandon(w))
	{
		*exit_code = EXIT_CONNECT;
		return TURN_STOP;
	}

	if (w->conn == NULL && now >= w->reconnect_at)
	{
		char why[256];

		if (ctl_workerconn_connect(w, why, sizeof(why)))
		{
			char where[300];
			char key[320];

			/* Said at each reconnection; once a server until a claim works. */
			ctl_workerconn_where(w, where, sizeof(where));
			snprintf(key, sizeof(key), "reconnected to %s", where);
			ctl_workerconn_say(w, "info", key, "%s", key);
		}
		else
			ctl_workerconn_disconnect(w, why);
		return TURN_AGAIN;
	}

	ctl_workerlease_tend(w, &next);
	if (!worker_claim_or_wait(w))
		return TURN_AGAIN;
	if (w->conn == NULL && w->reconnect_at < next)
		next = w->reconnect_at;
	return worker_poll(w, fds, next, exit_code);
}

/*
 * The first connection and what it checks before anything is claimed:
 * schedq is installed (exit 4), --lease is an interval (exit 2), the
 * role has every privilege a worker needs (exit 4, with the GRANTs).
 * Returns the exit code, EXIT_OK to go on with w->conn.
 */
static int
worker_start_checks(Worker *w)
{
	char why[256];
	int	 rc;

	if (!ctl_workerconn_connect(w, why, sizeof(why)))
	{
		if (w->conn == NULL)
		{
			/* Say why, once, the way the other commands do. */
			PQfinish(ctl_conn_connect(w->conninfo, false));
			return EXIT_CONNECT;
		}
		pg_log_error("worker: %s", why);
		pg_log_error_hint("a superuser can run CREATE EXTENSION schedq there");
		PQfinish(w->conn);
		return EXIT_PRIVILEGE;
	}
	rc = w->lease ? ctl_check_cast(w->conn, w->lease, "interval", "--lease") :
					EXIT_OK;
	if (rc == EXIT_OK)
		rc = ctl_privs_require(w->conn, &ctl_privs_worker, "worker");
	if (rc != EXIT_OK)
		PQfinish(w->conn);
	return rc;
}

/*
 * schedqctl worker [options] -- COMMAND [ARGS...]: set up, connect, and
 * turn the loop until a signal stops the worker.  Returns the exit code.
 */
int
ctl_worker_command(int argc, char **argv)
{
	Worker		   w;
	struct pollfd *fds;
	int			   exit_code = EXIT_OK;
	WorkerTurn	   turn;
	int			   rc;
	char		   why[256];

	memset(&w, 0, sizeof(w));
	rc = ctl_workeropts_parse(argc, argv, &w);
	if (rc >= 0)
		return rc;

	/* The command first: nothing is claimed for a command that cannot run. */
	if (!ctl_workerchild_runnable(&w, why, sizeof(why)))
	{
		pg_log_error("worker: command \"%s\" cannot be run: %s", w.cmd[0], why);
		pg_log_error_hint("give a path to an executable file, or the name of "
						  "one in PATH, after -- "
						  "(docs/guide/workers.md#the-command)");
		return EXIT_USAGE;
	}
	pg_prng_seed(&pg_global_prng_state, (uint64) getpid() << 32 ^
											(uint64) time(NULL) ^
											(uint64) (ctl_worker_now() * 1e9));

	w.slots = pg_malloc0(sizeof(Slot) * w.concurrency);
	for (int i = 0; i < w.concurrency; i++)
		w.slots[i].out_fd = w.slots[i].err_fd = -1;
	/* The signal pipe, the wait connection, two pipes per program. */
	fds = pg_malloc(sizeof(struct pollfd) * (2 + 2 * w.concurrency));
	ctl_workerstop_install();

	w.backoff = 0.1;
	rc = worker_start_checks(&w);
	if (rc != EXIT_OK)
		return rc;
	ctl_workerconn_where(&w, why, sizeof(why));
	ctl_worker_log(&w, "info",
				   "worker %s started: concurrency %d, command %s, "
				   "connected to %s",
				   w.name, w.concurrency, w.cmd[0], why);

	while ((turn = worker_turn(&w, fds, &exit_code)) == TURN_AGAIN)
		;
	if (turn == TURN_STOP)
	{
		if (w.fault != 0 && exit_code == EXIT_OK)
			exit_code = w.fault;
		ctl_worker_log(&w, "info", "worker stopped (exit status %d)",
					   exit_code);
		ctl_workerconn_drop_wait(&w, true);
		PQfinish(w.conn);
	}
	pg_free(fds);
	pg_free(w.slots);
	pg_free(w.queues_param);
	pg_free(w.caps_param);
	return exit_code;
}

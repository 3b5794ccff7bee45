/*-------------------------------------------------------------------------
 * schedqctl/workerstop.c
 *	  Signals and shutdown of the worker.
 *
 *	  Signals go through a self-pipe into the poll loop: the handler only
 *	  writes the signal's number, the loop acts on it.  SIGCHLD wakes the
 *	  loop to reap (workerchild.c).  SIGTERM or SIGINT: stop claiming, let
 *	  running programs finish for --grace seconds, then kill them and fail
 *	  their attempts for an immediate retry (workerlease.c kills,
 *	  workerclaim.c reports), let the wait for work end by itself (within
 *	  --wait seconds: a canceled statement would be an ERROR in the
 *	  server's log), and exit 0.  A second signal kills the programs,
 *	  cancels the wait and exits 1 at once, reporting nothing: their
 *	  leases expire and the reaper retries them.  Without a server at the
 *	  end of the grace period, what is left unreported is the reaper's
 *	  too, and the worker exits 3.
 *
 *	  fe_utils/cancel.h is not used: its SIGINT handler cancels one query
 *	  and lets the program go on, where the worker drains.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <signal.h>
#include <unistd.h>

#include "common/logging.h"
#include "worker.h"

static int sig_pipe[2] = { -1, -1 };

/* The handler of SIGTERM, SIGINT and SIGCHLD: into the pipe. */
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

/* Create the signal pipe and install the handlers. */
void
ctl_workerstop_install(void)
{
	struct sigaction sa;

	if (pipe(sig_pipe) < 0)
		pg_fatal("worker: could not create a pipe: %m");
	ctl_worker_nonblock_cloexec(sig_pipe[0]);
	ctl_worker_nonblock_cloexec(sig_pipe[1]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = worker_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The descriptor the loop polls for signals. */
int
ctl_workerstop_fd(void)
{
	return sig_pipe[0];
}

/*
 * Act on the signals received since the last call.  Returns false after a
 * second SIGTERM or SIGINT, the programs killed and the connections
 * closed: the worker exits 1 at once.
 */
bool
ctl_workerstop_signals(Worker *w)
{
	char	sigs[64];
	ssize_t n;

	while ((n = read(sig_pipe[0], sigs, sizeof(sigs))) > 0)
	{
		for (ssize_t i = 0; i < n; i++)
		{
			if (sigs[i] != SIGTERM && sigs[i] != SIGINT)
				continue; /* SIGCHLD: reaped at the loop's top */
			if (++w->stopping == 1)
			{
				ctl_worker_log(w, "info",
							   "signal %d: no more claims; %d task(s) "
							   "running, %.0fs to finish%s",
							   sigs[i], w->running, w->grace,
							   w->await_inflight ?
								   "; the wait for work ends within --wait" :
								   "");
				/* A fault may have started the drain: its grace holds. */
				if (!w->draining)
					w->grace_end = ctl_worker_now() + w->grace;
				w->draining = true;
			}
			else
			{
				ctl_worker_log(w, "info",
							   "second signal: killing the running tasks and "
							   "exiting; their leases will expire");
				ctl_workerchild_kill_all(w);
				ctl_workerconn_drop_wait(w, true);
				PQfinish(w->conn);
				w->conn = NULL;
				return false;
			}
		}
	}
	return true;
}

/*
 * Whether the worker gives up: stopping, without a server, past the grace
 * period.  If so the programs are killed, and what is left unreported is
 * the reaper's once its lease runs out.
 */
bool
ctl_workerstop_abandon(Worker *w)
{
	if (!w->draining || w->conn != NULL || ctl_worker_now() < w->grace_end)
		return false;
	ctl_worker_log(w, "warning",
				   "no connection at the end of the grace period: %d "
				   "task(s) not reported; their leases will expire",
				   w->running);
	ctl_workerchild_kill_all(w);
	return true;
}

/*-------------------------------------------------------------------------
 * schedqctl/workerconn.c
 *	  The worker's two connections: checks, back-off, waiting for a task.
 *
 *	  Here they are made, their results checked, and they are dropped
 *	  with a back-off when they break.
 *
 *	  The control connection makes the short calls (claim, heartbeat,
 *	  complete_and_claim, complete, complete_many, fail, verify_grant),
 *	  waiting for each answer.  The wait connection only ever runs CALL
 *	  schedq.await_task(...), sent asynchronously, so that the loop keeps
 *	  reading the programs' output, renewing leases and reaping children
 *	  while it waits for work; await_task holds no snapshot and no lock
 *	  while it sleeps.  When it answers (a task came, or its wait ended)
 *	  the loop claims again.  A stop lets the wait end (--wait, 5 s) and
 *	  then closes the connection between statements: canceling it would
 *	  leave an ERROR in the server's log at every clean shutdown.
 *
 *	  Each connection made checks that schedq is installed (a read of
 *	  pg_extension, which no server logs as an error).  A broken
 *	  connection, or one that cannot work (schedq dropped, a claim that
 *	  fails), drops both, and the loop reconnects after a back-off of 0.1 s
 *	  doubling to 2 s, each delay jittered by +-25 % so that workers cut
 *	  off together do not come back together, while the programs keep
 *	  running; what could not be reported is reported after reconnecting
 *	  (workerclaim.c).  The cap is short so that a restart or a failover
 *	  costs a worker about a second once the server takes connections
 *	  again; while no connection can be made at all (the server is down,
 *	  restarting, or refuses it), the delays are capped at 1 s, so that
 *	  the worker is back about half a second after the server on
 *	  average.  The back-off
 *	  starts again only when a claim (or a wait) works, not when a
 *	  connection is made: a server that takes connections but cannot hand
 *	  out tasks is not retried ten times a second.  While it retries, the
 *	  worker says each reason once; when a claim works again it says so.
 *	  A missing privilege ends the worker with exit 4, as does a database
 *	  without schedq at the start: no task could be worked on.
 *
 *	  The -d string may list several hosts (host=a,b port=x,y
 *	  target_session_attrs=read-write): libpq tries them in turn, at each
 *	  (re)connection, and the worker logs the host and port it reached.
 *	  The wait connection is made to that same server, whatever the list
 *	  says, so that both connections of a worker talk to one server.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <poll.h>

#include "common/logging.h"
#include "common/pg_prng.h"
#include "worker.h"

#define BACKOFF_FIRST 0.1
#define BACKOFF_MAX	  2.0
/* While no connection can be made at all. */
#define BACKOFF_MAX_UNREACHABLE 1.0

/*
 * Log a line at level, unless its key was said since the last claim that
 * worked: a retry for the same reason is not said again.
 */
void
ctl_workerconn_say(Worker *w, const char *level, const char *key,
				   const char *fmt, ...)
{
	char	msg[1024];
	va_list ap;

	for (int i = 0; i < w->nsaid; i++)
		if (strncmp(w->said[i], key, sizeof(w->said[i]) - 1) == 0)
			return;
	if (w->nsaid < (int) lengthof(w->said))
		strlcpy(w->said[w->nsaid++], key, sizeof(w->said[0]));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_worker_log(w, level, "%s", msg);
}

/*
 * A claim (or a wait) worked: the back-off starts again, and after
 * retries that were not all said, the worker says it works again.
 */
void
ctl_workerconn_working(Worker *w)
{
	if (w->retries > 1)
		ctl_worker_log(w, "info", "claiming again after %d retries",
					   w->retries);
	w->nsaid = 0;
	w->retries = 0;
	w->backoff = BACKOFF_FIRST;
}

/*
 * Where the control connection is: "host:port" (a socket directory for a
 * Unix-domain socket), in buf.
 */
void
ctl_workerconn_where(Worker *w, char *buf, size_t len)
{
	const char *host = w->conn ? PQhost(w->conn) : NULL;
	const char *port = w->conn ? PQport(w->conn) : NULL;

	snprintf(buf, len, "%s:%s", host && host[0] ? host : "?",
			 port && port[0] ? port : "?");
}

/*
 * Connect the control connection, check that schedq is installed and read
 * schedq.max_payload, the largest result the server takes.  Returns false
 * with why set if either failed; w->conn is then NULL, but when the
 * connection was made and schedq is missing (said by why).
 */
bool
ctl_workerconn_connect(Worker *w, char *why, size_t len)
{
	PGresult *res;
	long long max;
	char	 *failed = NULL;

	w->conn = ctl_conn_open(w->conninfo, &failed, NULL);
	w->unreachable = w->conn == NULL;
	if (w->conn == NULL)
	{
		/* libpq's words, first line: one reason, said once. */
		snprintf(why, len, "could not connect: %s", failed);
		why[strcspn(why, "\n")] = '\0';
		pg_free(failed);
		return false;
	}
	res = PQexec(w->conn,
				 "SELECT pg_catalog.pg_size_bytes(pg_catalog.current_setting("
				 "'schedq.max_payload', true)), EXISTS (SELECT FROM "
				 "pg_catalog.pg_extension WHERE extname = 'schedq')");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		char *msg = ctl_conn_message(w->conn, res);

		snprintf(why, len, "%s", msg);
		why[strcspn(why, "\n")] = '\0';
		pg_free(msg);
		PQclear(res);
		PQfinish(w->conn);
		w->conn = NULL;
		return false;
	}
	if (strcmp(PQgetvalue(res, 0, 1), "t") != 0)
	{
		snprintf(why, len, "schedq is not installed in database \"%s\"",
				 PQdb(w->conn));
		PQclear(res);
		return false;
	}
	max = PQgetisnull(res, 0, 0) ? 1024 * 1024 : atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (max <= 0 || max > OUT_CAP)
		max = OUT_CAP;
	w->max_result = (size_t) max;
	w->want_claim = true;
	return true;
}

/*
 * Close the wait connection.  A wait in progress is canceled first when
 * cancel is true (the connection broke, or a second signal), so that its
 * backend ends now rather than when the wait would have; its answer is
 * awaited for a second, so that the backend is not left writing to a
 * closed socket.  Without cancel, the connection must be idle.
 */
void
ctl_workerconn_drop_wait(Worker *w, bool cancel)
{
	if (w->wconn != NULL && w->await_inflight && cancel)
	{
		PGcancel	 *c = PQgetCancel(w->wconn);
		char		  errbuf[256];
		double		  until = ctl_worker_now() + 1;
		struct pollfd pfd;

		if (c)
		{
			PQcancel(c, errbuf, sizeof(errbuf));
			PQfreeCancel(c);
		}
		pfd.fd = PQsocket(w->wconn);
		pfd.events = POLLIN;
		while (pfd.fd >= 0 && PQisBusy(w->wconn) && ctl_worker_now() < until &&
			   poll(&pfd, 1, 100) >= 0 && PQconsumeInput(w->wconn))
			;
	}
	PQfinish(w->wconn);
	w->wconn = NULL;
	w->await_inflight = false;
}

/*
 * The connection broke, or cannot work: drop both, reconnect after the
 * back-off, jittered (at most 1 s while no connection can be made); the
 * next back-off is twice as long, up to 2 s.
 */
void
ctl_workerconn_disconnect(Worker *w, const char *why)
{
	double delay = Min(w->backoff,
					   w->unreachable ? BACKOFF_MAX_UNREACHABLE : BACKOFF_MAX) *
				   (0.75 + 0.5 * pg_prng_double(&pg_global_prng_state));
	char key[200];

	snprintf(key, sizeof(key), "connection lost (%s)", why);
	ctl_workerconn_say(w, "warning", key,
					   "%s; reconnecting in %.1fs, then with back-off up to "
					   "%.0fs (the same reason is said once)",
					   key, delay, BACKOFF_MAX);
	w->retries++;
	PQfinish(w->conn);
	w->conn = NULL;
	ctl_workerconn_drop_wait(w, true);
	w->reconnect_at = ctl_worker_now() + delay;
	w->backoff = Min(w->backoff * 2, BACKOFF_MAX);
}

/*
 * A refusal that ends the worker: a missing privilege (exit 4, with the
 * GRANTs), or, before any claim worked, a database without schedq.
 * Returns false when the refusal is not such.  Once a claim has worked, a
 * schedq that vanished (dropped, to be created again) is retried.
 */
static bool
conn_fatal(Worker *w, PGconn *conn, PGresult *res, const char *what)
{
	bool missing = ctl_conn_schedq_missing(conn, res);

	if (!(missing && !w->claimed_ok) &&
		!(ctl_conn_refusal_is_privilege(res) && !missing))
		return false;
	/* Said with the other commands' hint; the programs are killed. */
	ctl_conn_check(conn, res, &ctl_privs_worker, what);
	ctl_workerchild_kill_all(w);
	exit(EXIT_PRIVILEGE);
}

/*
 * Check a result of the control connection: CHECK_OK on success,
 * CHECK_LOST on a broken connection (now dropped), CHECK_REFUSED on an
 * error (logged, once per reason while retrying).  A missing privilege
 * ends the worker.
 */
WorkerCheck
ctl_workerconn_check(Worker *w, PGresult *res, const char *what)
{
	char *msg;
	char  key[200];

	if (res && (PQresultStatus(res) == PGRES_TUPLES_OK ||
				PQresultStatus(res) == PGRES_COMMAND_OK))
		return CHECK_OK;
	if (PQstatus(w->conn) != CONNECTION_OK)
	{
		ctl_workerconn_disconnect(w, what);
		return CHECK_LOST;
	}
	conn_fatal(w, w->conn, res, what);
	msg = ctl_conn_message(w->conn, res);
	snprintf(key, sizeof(key), "%s: %s", what, msg);
	ctl_workerconn_say(w, "error", key, "%s", key);
	pg_free(msg);
	return CHECK_REFUSED;
}

/* Send CALL await_task on the wait connection, connecting it if need be. */
void
ctl_workerconn_await(Worker *w)
{
	const char *values[3] = { w->queues_param, w->caps_param, w->wait };

	if (w->wconn == NULL)
	{
		w->wconn = ctl_conn_open_like(w->conninfo, w->conn);
		if (w->wconn == NULL)
		{
			ctl_workerconn_disconnect(w, "wait connection");
			return;
		}
	}
	if (!PQsendQueryParams(w->wconn,
						   "CALL schedq.await_task($1::text[], $2::text[], "
						   "$3::interval)",
						   3, NULL, values, NULL, NULL, 0))
	{
		ctl_workerconn_disconnect(w, "await_task");
		return;
	}
	w->await_inflight = true;
}

/*
 * The wait connection has input: if await_task has answered, claim again
 * (or, while draining, close it: it is idle now).  A failed wait backs
 * off as a broken connection does, rather than spin.
 */
void
ctl_workerconn_await_input(Worker *w)
{
	PGresult *res;
	char	 *failed = NULL;

	if (!PQconsumeInput(w->wconn))
	{
		ctl_workerconn_disconnect(w, "await_task");
		return;
	}
	if (PQisBusy(w->wconn))
		return;
	while ((res = PQgetResult(w->wconn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_TUPLES_OK &&
			PQresultStatus(res) != PGRES_COMMAND_OK && failed == NULL)
		{
			/* As ctl_workerconn_check, but the programs are left. */
			if (ctl_conn_refusal_is_privilege(res) &&
				!ctl_conn_schedq_missing(w->wconn, res))
			{
				ctl_conn_check(w->wconn, res, &ctl_privs_worker, "await_task");
				exit(EXIT_PRIVILEGE);
			}
			failed = ctl_conn_message(w->wconn, res);
		}
		PQclear(res);
	}
	w->await_inflight = false;
	w->want_claim = true;
	if (failed)
	{
		char why[200];

		snprintf(why, sizeof(why), "await_task: %s", failed);
		why[strcspn(why, "\n")] = '\0';
		pg_free(failed);
		ctl_workerconn_disconnect(w, why);
	}
	else if (w->draining)
		ctl_workerconn_drop_wait(w, false);
	else
		ctl_workerconn_working(w);
}

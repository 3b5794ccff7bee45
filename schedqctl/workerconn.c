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
 *	  the loop claims again.
 *
 *	  A broken connection drops both, and the loop reconnects after a
 *	  back-off of 0.1 s doubling to 30 s, while the programs keep running;
 *	  what could not be reported is reported after reconnecting
 *	  (workerclaim.c).  A missing privilege, or a database without schedq,
 *	  ends the worker with exit 4: no task could be worked on.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "common/logging.h"
#include "worker.h"

/*
 * Connect the control connection and read schedq.max_payload, the largest
 * result the server takes.  Returns false if either failed.
 */
bool
ctl_workerconn_connect(Worker *w)
{
	PGresult *res;
	long long max;

	w->conn = ctl_conn_connect(w->conninfo, true);
	if (w->conn == NULL)
		return false;
	res = PQexecParams(w->conn,
					   "SELECT pg_catalog.pg_size_bytes(pg_catalog."
					   "current_setting('schedq.max_payload', true))",
					   0, NULL, NULL, NULL, NULL, 0);
	if (ctl_workerconn_check(w, res, "max_payload") != CHECK_OK)
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

/*
 * Close the wait connection.  A wait in progress is canceled first, so that
 * its backend ends now rather than when the wait would have.
 */
void
ctl_workerconn_drop_wait(Worker *w)
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
void
ctl_workerconn_disconnect(Worker *w, const char *why)
{
	ctl_worker_log(w, "warning", "connection lost (%s); reconnecting in %.1fs",
				   why, w->backoff);
	PQfinish(w->conn);
	w->conn = NULL;
	ctl_workerconn_drop_wait(w);
	w->reconnect_at = ctl_worker_now() + w->backoff;
	w->backoff = w->backoff * 2 > 30 ? 30 : w->backoff * 2;
}

/*
 * Check a result of the control connection: CHECK_OK on success,
 * CHECK_LOST on a broken connection (now dropped), CHECK_REFUSED on an
 * error (logged).  A missing privilege ends the worker.
 */
WorkerCheck
ctl_workerconn_check(Worker *w, PGresult *res, const char *what)
{
	if (res && (PQresultStatus(res) == PGRES_TUPLES_OK ||
				PQresultStatus(res) == PGRES_COMMAND_OK))
		return CHECK_OK;
	if (PQstatus(w->conn) != CONNECTION_OK)
	{
		ctl_workerconn_disconnect(w, what);
		return CHECK_LOST;
	}
	if (ctl_conn_refusal_is_privilege(res))
	{
		/* Said with the other commands' hint; the programs are killed. */
		ctl_conn_check(w->conn, res, CTL_ROLE_WORKER, what);
		ctl_workerchild_kill_all(w);
		exit(EXIT_PRIVILEGE);
	}
	ctl_worker_log(w, "error", "%s: %s", what,
				   res ? PQresultErrorMessage(res) : PQerrorMessage(w->conn));
	return CHECK_REFUSED;
}

/* Send CALL await_task on the wait connection, connecting it if need be. */
void
ctl_workerconn_await(Worker *w)
{
	const char *values[3] = { w->queues_param, w->caps_param, w->wait };

	if (w->wconn == NULL)
	{
		w->wconn = ctl_conn_connect(w->conninfo, true);
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
 * The wait connection has input: if await_task has answered, claim again.
 * A failed wait backs off as a broken connection does, rather than spin.
 */
void
ctl_workerconn_await_input(Worker *w)
{
	PGresult *res;
	bool	  failed = false;

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
			PQresultStatus(res) != PGRES_COMMAND_OK)
		{
			if (ctl_conn_refusal_is_privilege(res))
			{
				/* As ctl_workerconn_check, but the programs are left. */
				ctl_conn_check(w->wconn, res, CTL_ROLE_WORKER, "await_task");
				exit(EXIT_PRIVILEGE);
			}
			failed = true;
			ctl_worker_log(w, "error", "await_task: %s",
						   PQresultErrorMessage(res));
		}
		PQclear(res);
	}
	w->await_inflight = false;
	w->want_claim = true;
	if (failed)
		ctl_workerconn_disconnect(w, "await_task failed");
}

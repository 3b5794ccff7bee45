/*-------------------------------------------------------------------------
 * schedqctl/workerlease.c
 *	  Heartbeats: renewing leases, killing programs whose time ran out.
 *
 *	  Each task's lease is renewed every third of it (schedq.heartbeat
 *	  with its token).  The time left is always computed by the server
 *	  (lease_expires_at - clock_timestamp()), so clocks need not agree.  A
 *	  lease never outlives the task's deadline (the server caps it), so
 *	  when the time left runs out the program has hit its timeout -- or
 *	  the server has been out of reach for a whole lease and another
 *	  worker may have the task -- and its process group is killed.  A
 *	  heartbeat answering NULL means the task is no longer ours (canceled,
 *	  reclaimed): the program is killed and nothing is reported.  When the
 *	  grace period of a shutdown ends (workerstop.c), the programs still
 *	  running are killed too, and their attempts failed for a retry.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "worker.h"

/* Renew the lease of slot s; now is the monotonic time. */
static void
heartbeat(Worker *w, Slot *s, double now)
{
	const char *values[1] = { s->token };
	PGresult   *res;
	WorkerCheck rc;

	res = PQexecParams(w->conn,
					   "SELECT extract(epoch FROM schedq.heartbeat($1) - "
					   "pg_catalog.clock_timestamp())",
					   1, NULL, values, NULL, NULL, 0);
	rc = ctl_workerconn_check(w, res, "heartbeat");
	if (rc == CHECK_OK)
	{
		if (PQgetisnull(res, 0, 0))
			ctl_workerchild_kill(s, KILL_LOST);
		else
			s->expires = now + atof(PQgetvalue(res, 0, 0));
		s->next_hb = now + s->hb_every;
	}
	else if (rc == CHECK_REFUSED)
		s->next_hb = now + s->hb_every;
	PQclear(res);
}

/*
 * Renew the leases that are due, and kill the programs whose lease ran
 * out or whose grace period ended.  *next is lowered to the next time a
 * lease needs the loop.
 */
void
ctl_workerlease_tend(Worker *w, double *next)
{
	double now = ctl_worker_now();

	for (int i = 0; i < w->concurrency; i++)
	{
		Slot *s = &w->slots[i];

		if (!s->used || s->pid == 0)
			continue;
		if (w->conn != NULL && s->killed == KILL_NONE && now >= s->next_hb)
			heartbeat(w, s, now);
		if (now >= s->expires)
			ctl_workerchild_kill(s, w->conn != NULL ? KILL_TIMEOUT : KILL_LOST);
		if (w->draining && now >= w->grace_end)
			ctl_workerchild_kill(s, KILL_SHUTDOWN);
		if (s->killed == KILL_NONE)
		{
			if (s->next_hb < *next)
				*next = s->next_hb;
			if (s->expires < *next)
				*next = s->expires;
		}
	}
	if (w->draining && w->grace_end < *next)
		*next = w->grace_end;
}

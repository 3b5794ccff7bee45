/*-------------------------------------------------------------------------
 * pass/reaper.c
 *	  Take back what workers left behind: expired leases and attempts past
 *	  their timeout; and delete finished tasks past schedq.retention
 *	  (failed ones: past schedq.failed_retention).
 *
 * Do no harm: a task is changed only on a positive signal (its lease or
 * deadline has passed), its row is locked with SKIP LOCKED first (a worker
 * completing it at this moment holds the lock, and wins), and the write
 * itself is schedq_task_attempt_fail's, guarded by (id, attempt, 'running').
 * An attempt taken back is a failed attempt: retried with backoff while
 * attempts remain, else the task fails.
 *
 * An attempt that a live SQL executor runs is never taken back: the task
 * would run twice at once.  Its lease is extended instead; past its
 * deadline its statement is interrupted, and an executor that ignores
 * that for schedq.sql_cancel_grace is terminated
 * (schedq_sqlslots_escalate, every pass).  Once the SQL executor is gone the
 * attempt times out like any other.
 *
 * A task the pass cannot take back, or retention cannot delete (a user's
 * table that references it, say), is set aside (shared/isolate.c): looked at
 * again in an hour, or kept one more retention period; the others go on.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "store/task_attempt.h"
#include "shared/call.h"
#include "shared/sqlslots.h"
#include "shared/isolate.h"
#include "shared/metrics.h"
#include "pass/reaper.h"
#include "store/task_runs.h"
#include "base/settings.h"
#include "store/task.h"
#include "store/task_reap.h"

/* The expired attempts of one pass, for reap_apply. */
typedef struct ReapBatch
{
	int64	   *ids;
	int32	   *attempts;
	bool	   *timed_out;
	TimestampTz now;
	int			timeouts; /* taken back, by kind */
	int			leases;
} ReapBatch;

/*
 * Take back the expired attempts ids[0..n-1] (schedq_isolate_batch's apply).
 */
static int
reap_apply(int64 *ids, int n, void *arg)
{
	ReapBatch *batch = arg;
	int		   first = ids - batch->ids;
	int		   timeouts = 0;
	int		   leases = 0;

	for (int i = first; i < first + n; i++)
	{
		int64 id = batch->ids[i];
		int32 attempt = batch->attempts[i];
		bool  timed_out = batch->timed_out[i];

		if (timed_out && schedq_sqlslots_interrupt(id, attempt))
			continue; /* taken back once its executor has let go */
		if (!timed_out && schedq_sqlslots_runs(id, attempt))
		{
			/* a live executor is still running it: not a lost lease */
			schedq_task_reap_extend(id, attempt, batch->now);
			continue;
		}
		if (schedq_task_attempt_fail(id, attempt, NULL,
									 timed_out ? "timeout" : "lease expired",
									 -1, false) == FAIL_STALE)
			continue;
		/* an executor that took it up after the look above stops */
		if (timed_out)
			schedq_sqlslots_cancel_at_commit(id);
		if (timed_out)
			timeouts++;
		else
			leases++;
	}
	/* only now: a batch that failed half-way counts nothing */
	batch->timeouts += timeouts;
	batch->leases += leases;
	return timeouts + leases;
}

static void
reap_set_aside(int64 id, const char *error, void *arg)
{
	schedq_task_reap_postpone(id, error);
}

static int
retention_apply(int64 *ids, int n, void *arg)
{
	return schedq_task_reap_delete(ids, n);
}

static void
retention_set_aside(int64 id, const char *error, void *arg)
{
	schedq_task_reap_keep(id, error);
}

/*
 * One reaper pass at time `now`.  Returns how many attempts it took back;
 * *more is set when a batch was full.  A lease never outlives the
 * attempt's deadline (claim and heartbeat cap it), so one index finds
 * both: an attempt past its deadline timed out, any other lost its lease.
 */
int
schedq_reaper_pass(TimestampTz now, bool *more)
{
	ReapBatch batch = { 0 };
	int64	 *ids;
	int		  n;
	int		  reaped;

	n = schedq_task_reap_expired(now, &batch.ids, &batch.attempts,
								 &batch.timed_out);
	if (n == TASK_REAP_BATCH)
		*more = true;
	batch.now = now;
	reaped = schedq_isolate_batch("reaper", batch.ids, n, reap_apply,
								  reap_set_aside, &batch);
	schedq_metrics_count(METRIC_TASK_TIMEOUTS, batch.timeouts);
	schedq_metrics_count(METRIC_LEASE_EXPIRATIONS, batch.leases);

	schedq_sqlslots_escalate();
	(void) schedq_task_runs_reap();

	for (SchedqTaskStatus s = TASK_DONE; s < TASK_NUM_STATUSES; s++)
	{
		int keep_s =
			s == TASK_FAILED ? schedq_failed_retention_s : schedq_retention_s;

		if (keep_s < 0)
			continue;
		n = schedq_task_reap_finished(s, now - (int64) keep_s * USECS_PER_SEC,
									  &ids);
		if (n == TASK_RETENTION_BATCH)
			*more = true;
		(void) schedq_isolate_batch("retention", ids, n, retention_apply,
									retention_set_aside, NULL);
	}
	return reaped;
}

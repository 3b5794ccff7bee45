/*-------------------------------------------------------------------------
 * reaper.c
 *	  Take back what workers left behind: expired leases and attempts past
 *	  their timeout; and delete finished tasks past schedq.retention.
 *
 * Do no harm: a task is changed only on a positive signal (its lease or
 * deadline has passed), its row is locked with SKIP LOCKED first (a worker
 * completing it at this moment holds the lock, and wins), and the write
 * itself is schedq_fail_attempt's, guarded by (id, attempt, 'running').
 * An attempt taken back is a failed attempt: retried with backoff while
 * attempts remain, else the task fails.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "schedq.h"
#include "scheduler.h"
#include "shmem.h"
#include "wake.h"

static SPIPlanPtr plan_expired = NULL;
static SPIPlanPtr plan_retention = NULL;
static SPIPlanPtr plan_extend = NULL;

/*
 * Is a live built-in executor of this database running this attempt?
 */
static bool
reap_held_by_executor(int64 id, int32 attempt)
{
	bool held = false;

	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	for (int i = 0; i < SCHEDQ_MAX_EXECUTORS && !held; i++)
	{
		SchedqExecutor *e = &schedq_shared->executors[i];

		held = e->dboid == MyDatabaseId && e->pid != 0 && e->task_id == id &&
			   e->attempt == attempt && kill(e->pid, 0) == 0;
	}
	LWLockRelease(schedq_shared->lock);
	return held;
}

/*
 * One reaper pass at time `now`.  Returns how many attempts it took back;
 * *more is set when a batch was full.  A lease never outlives the
 * attempt's deadline (claim and heartbeat cap it), so one index finds
 * both: an attempt past its deadline timed out, any other lost its lease.
 */
int
schedq_reap_pass(TimestampTz now, bool *more)
{
	Datum		   value = TimestampTzGetDatum(now);
	SPITupleTable *rows;
	int			   n;
	int			   reaped = 0;

	n = schedq_execute(
		schedq_plan(&plan_expired,
					"SELECT id, attempts, deadline <= $1 FROM schedq.task"
					" WHERE status = 'running' AND lease_expires_at < $1"
					" ORDER BY lease_expires_at LIMIT " CppAsString2(
						REAP_BATCH) " FOR UPDATE SKIP LOCKED",
					1, (Oid[]){ TIMESTAMPTZOID }),
		&value, NULL, 0, SPI_OK_SELECT);
	rows = SPI_tuptable;
	if (n == REAP_BATCH)
		*more = true;
	for (int i = 0; i < n; i++)
	{
		bool  isnull;
		int64 id = DatumGetInt64(
			SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull));
		int32 attempt = DatumGetInt32(
			SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull));
		bool timed_out = DatumGetBool(
			SPI_getbinval(rows->vals[i], rows->tupdesc, 3, &isnull));

		timed_out = timed_out && !isnull;
		if (!timed_out && reap_held_by_executor(id, attempt))
		{
			/* a live executor is still running it: not a lost lease */
			Datum args[3] = { Int64GetDatum(id), Int32GetDatum(attempt),
							  value };

			schedq_execute(
				schedq_plan(
					&plan_extend,
					"UPDATE schedq.task"
					" SET lease_expires_at = least($3 + lease, deadline)"
					" WHERE id = $1 AND attempts = $2 AND status = 'running'",
					3, (Oid[]){ INT8OID, INT4OID, TIMESTAMPTZOID }),
				args, NULL, 0, SPI_OK_UPDATE);
			continue;
		}
		if (strcmp(schedq_fail_attempt(id, attempt,
									   timed_out ? "timeout" : "lease expired",
									   -1, false),
				   "stale") == 0)
			continue;
		/* an executor still at it (past its deadline) stops */
		if (timed_out)
			schedq_cancel_executor_at_commit(id);
		reaped++;
		schedq_count(timed_out ? METRIC_TASK_TIMEOUTS :
								 METRIC_LEASE_EXPIRATIONS,
					 1);
	}

	(void) schedq_reap_runs();

	if (schedq_retention_s >= 0)
	{
		value = TimestampTzGetDatum(now -
									(int64) schedq_retention_s * USECS_PER_SEC);
		if (schedq_execute(
				schedq_plan(
					&plan_retention,
					"DELETE FROM schedq.task WHERE id IN ("
					"  SELECT id FROM schedq.task"
					"  WHERE status IN ('done', 'failed', 'canceled', 'skipped')"
					"    AND finished_at < $1"
					"  ORDER BY finished_at LIMIT " CppAsString2(
						RETENTION_BATCH) "  FOR UPDATE SKIP LOCKED)",
					1, (Oid[]){ TIMESTAMPTZOID }),
				&value, NULL, 0, SPI_OK_DELETE) == RETENTION_BATCH)
			*more = true;
	}
	return reaped;
}

PG_FUNCTION_INFO_V1(schedq_reap_once);

/*
 * schedq._reap_once(now): one reaper pass, as the scheduler runs it, at
 * the given time.  Returns how many attempts were taken back.
 */
Datum
schedq_reap_once(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	bool	   more = false;
	int		   reaped;

	schedq_call_begin(&call);
	reaped = schedq_reap_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(reaped);
}

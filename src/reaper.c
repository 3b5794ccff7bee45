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

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "schedq.h"
#include "scheduler.h"
#include "shmem.h"

static SPIPlanPtr plan_expired = NULL;
static SPIPlanPtr plan_timed_out = NULL;
static SPIPlanPtr plan_retention = NULL;

/*
 * Fail every attempt the plan returns (id, attempts), with the reason.
 */
static int
reap_attempts(SPIPlanPtr *plan, const char *sql, TimestampTz now,
			  const char *reason, SchedqMetric metric, bool *more)
{
	Datum		value = TimestampTzGetDatum(now);
	SPITupleTable *rows;
	int			n;
	int			reaped = 0;

	n = schedq_execute(schedq_plan(plan, sql, 1, (Oid[]) { TIMESTAMPTZOID }),
					   &value, NULL, 0, SPI_OK_SELECT);
	rows = SPI_tuptable;
	if (n == REAP_BATCH)
		*more = true;
	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull));
		int32		attempt = DatumGetInt32(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull));

		if (strcmp(schedq_fail_attempt(id, attempt, reason, -1, false), "stale") != 0)
			reaped++;
	}
	schedq_count(metric, reaped);
	return reaped;
}

/*
 * One reaper pass at time `now`.  Returns how many attempts it took back;
 * *more is set when a batch was full.
 */
int
schedq_reap_pass(TimestampTz now, bool *more)
{
	int			reaped;

	reaped = reap_attempts(&plan_timed_out,
						   "SELECT id, attempts FROM schedq.task"
						   " WHERE status = 'running' AND deadline < $1"
						   " ORDER BY deadline LIMIT " CppAsString2(REAP_BATCH)
						   " FOR UPDATE SKIP LOCKED",
						   now, "timeout", METRIC_TASK_TIMEOUTS, more);
	reaped += reap_attempts(&plan_expired,
							"SELECT id, attempts FROM schedq.task"
							" WHERE status = 'running' AND lease_expires_at < $1"
							" ORDER BY lease_expires_at LIMIT " CppAsString2(REAP_BATCH)
							" FOR UPDATE SKIP LOCKED",
							now, "lease expired", METRIC_LEASE_EXPIRATIONS, more);

	if (schedq_retention_s >= 0)
	{
		Datum		value = TimestampTzGetDatum(now - (int64) schedq_retention_s * USECS_PER_SEC);

		if (schedq_execute(
				schedq_plan(&plan_retention,
							"DELETE FROM schedq.task WHERE id IN ("
							"  SELECT id FROM schedq.task"
							"  WHERE status IN ('done', 'failed', 'canceled', 'skipped')"
							"    AND finished_at < $1"
							"  ORDER BY finished_at LIMIT " CppAsString2(RETENTION_BATCH)
							"  FOR UPDATE SKIP LOCKED)",
							1, (Oid[]) { TIMESTAMPTZOID }),
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
	SchedqCall	call;
	bool		more = false;
	int			reaped;

	schedq_call_begin(&call);
	reaped = schedq_reap_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(reaped);
}

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
 *
 * An attempt that a live SQL executor runs is never taken back: the task
 * would run twice at once.  Its lease is extended instead; past its
 * deadline its statement is interrupted, and an executor that ignores
 * that for schedq.sql_cancel_grace is terminated
 * (schedq_executors_escalate, every pass).  Once the executor is gone the
 * attempt times out like any other.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/timestamp.h"

#include "attempt.h"
#include "call.h"
#include "executor.h"
#include "metrics.h"
#include "plan.h"
#include "reaper.h"
#include "run.h"
#include "settings.h"
#include "task.h"

/* How many tasks one pass handles in one batch. */
#define REAP_BATCH			500
#define REAP_BATCH_SQL		CppAsString2(REAP_BATCH)
#define RETENTION_BATCH		1000
#define RETENTION_BATCH_SQL CppAsString2(RETENTION_BATCH)

static SchedqQuery q_expired =
	SCHEDQ_QUERY("SELECT id, attempts, deadline <= $1 FROM schedq.task"
				 " WHERE status = 'running' AND lease_expires_at < $1"
				 " ORDER BY lease_expires_at LIMIT " REAP_BATCH_SQL
				 " FOR UPDATE SKIP LOCKED",
				 TIMESTAMPTZOID);
static SchedqQuery q_extend = SCHEDQ_QUERY(
	"UPDATE schedq.task SET lease_expires_at = least($3 + lease, deadline)"
	" WHERE id = $1 AND attempts = $2 AND status = 'running'",
	INT8OID, INT4OID, TIMESTAMPTZOID);
static SchedqQuery q_retention =
	SCHEDQ_QUERY("DELETE FROM schedq.task WHERE id IN ("
				 "  SELECT id FROM schedq.task"
				 "  WHERE status IN " TASK_FINISHED_SQL
				 "    AND finished_at < $1"
				 "  ORDER BY finished_at LIMIT " RETENTION_BATCH_SQL
				 "  FOR UPDATE SKIP LOCKED)",
				 TIMESTAMPTZOID);

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

	n = schedq_run(&q_expired, &value, NULL, 0, SPI_OK_SELECT);
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
		if (timed_out && schedq_executor_interrupt(id, attempt))
			continue; /* taken back once its executor has let go */
		if (!timed_out && schedq_executor_runs(id, attempt))
		{
			/* a live executor is still running it: not a lost lease */
			Datum args[3] = { Int64GetDatum(id), Int32GetDatum(attempt),
							  value };

			schedq_run(&q_extend, args, NULL, 0, SPI_OK_UPDATE);
			continue;
		}
		if (schedq_fail_attempt(id, attempt, NULL,
								timed_out ? "timeout" : "lease expired", -1,
								false) == FAIL_STALE)
			continue;
		/* an executor that took it up after the look above stops */
		if (timed_out)
			schedq_executor_cancel_at_commit(id);
		reaped++;
		schedq_count(timed_out ? METRIC_TASK_TIMEOUTS :
								 METRIC_LEASE_EXPIRATIONS,
					 1);
	}

	schedq_executors_escalate();
	(void) schedq_reap_runs();

	if (schedq_retention_s >= 0)
	{
		value = TimestampTzGetDatum(now -
									(int64) schedq_retention_s * USECS_PER_SEC);
		if (schedq_run(&q_retention, &value, NULL, 0, SPI_OK_DELETE) ==
			RETENTION_BATCH)
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

/*-------------------------------------------------------------------------
 * pass/reaper.c
 *	  Take back what workers left behind: expired leases and attempts past
 *	  their timeout; and delete finished tasks past schedq.retention.
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
 * (schedq_sqlslots_escalate, every pass).  Once the executor is gone the
 * attempt times out like any other.
 *
 * A task the pass cannot take back, or retention cannot delete (a user's
 * table that references it, say), is set aside (isolate.c): looked at
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
#include "shared/plan.h"
#include "pass/reaper.h"
#include "store/task_runs.h"
#include "base/settings.h"
#include "store/task.h"

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
	SCHEDQ_QUERY("SELECT id FROM schedq.task"
				 " WHERE status IN " TASK_FINISHED_SQL " AND finished_at < $1"
				 " ORDER BY finished_at LIMIT " RETENTION_BATCH_SQL
				 " FOR UPDATE SKIP LOCKED",
				 TIMESTAMPTZOID);
static SchedqQuery q_delete =
	SCHEDQ_QUERY("DELETE FROM schedq.task WHERE id = ANY ($1)", INT8ARRAYOID);
/* A task the reaper could not take back: looked at again in an hour. */
static SchedqQuery q_postpone_expired =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET lease_expires_at = now() + interval '1 hour',"
				 "     last_error = $2"
				 " WHERE id = $1 AND status = 'running'",
				 INT8OID, TEXTOID);
/* A task retention could not delete: kept one more retention period. */
static SchedqQuery q_postpone_retention =
	SCHEDQ_QUERY("UPDATE schedq.task SET finished_at = now(), last_error = $2"
				 " WHERE id = $1",
				 INT8OID, TEXTOID);

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
			Datum args[3] = { Int64GetDatum(id), Int32GetDatum(attempt),
							  TimestampTzGetDatum(batch->now) };

			schedq_plan_run(&q_extend, args, NULL, 0, SPI_OK_UPDATE);
			continue;
		}
		if (schedq_task_attempt_fail(id, attempt, NULL,
								timed_out ? "timeout" : "lease expired", -1,
								false) == FAIL_STALE)
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
	Datum values[2] = { Int64GetDatum(id), CStringGetTextDatum(error) };

	schedq_plan_run(&q_postpone_expired, values, NULL, 0, SPI_OK_UPDATE);
}

static int
retention_apply(int64 *ids, int n, void *arg)
{
	Datum array =
		PointerGetDatum(construct_array((Datum *) ids, n, INT8OID, 8,
										FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

	return schedq_plan_run(&q_delete, &array, NULL, 0, SPI_OK_DELETE);
}

static void
retention_set_aside(int64 id, const char *error, void *arg)
{
	Datum values[2] = { Int64GetDatum(id), CStringGetTextDatum(error) };

	schedq_plan_run(&q_postpone_retention, values, NULL, 0, SPI_OK_UPDATE);
}

/* The ids of the first column of SPI_tuptable's n rows. */
static int64 *
reap_ids(int n)
{
	int64 *ids = palloc(sizeof(int64) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		bool isnull;

		ids[i] =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1, &isnull));
	}
	return ids;
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
	Datum	  value = TimestampTzGetDatum(now);
	ReapBatch batch = { 0 };
	int		  n;
	int		  reaped;

	n = schedq_plan_run(&q_expired, &value, NULL, 0, SPI_OK_SELECT);
	if (n == REAP_BATCH)
		*more = true;
	batch.ids = reap_ids(n);
	batch.attempts = palloc(sizeof(int32) * Max(n, 1));
	batch.timed_out = palloc(sizeof(bool) * Max(n, 1));
	batch.now = now;
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		batch.attempts[i] =
			DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 2, &isnull));
		batch.timed_out[i] =
			DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i],
									   SPI_tuptable->tupdesc, 3, &isnull));
		batch.timed_out[i] = batch.timed_out[i] && !isnull;
	}
	reaped = schedq_isolate_batch("reaper", batch.ids, n, reap_apply, reap_set_aside,
							&batch);
	schedq_metrics_count(METRIC_TASK_TIMEOUTS, batch.timeouts);
	schedq_metrics_count(METRIC_LEASE_EXPIRATIONS, batch.leases);

	schedq_sqlslots_escalate();
	(void) schedq_task_runs_reap();

	if (schedq_retention_s >= 0)
	{
		value = TimestampTzGetDatum(now -
									(int64) schedq_retention_s * USECS_PER_SEC);
		n = schedq_plan_run(&q_retention, &value, NULL, 0, SPI_OK_SELECT);
		if (n == RETENTION_BATCH)
			*more = true;
		(void) schedq_isolate_batch("retention", reap_ids(n), n, retention_apply,
							  retention_set_aside, NULL);
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
	reaped = schedq_reaper_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(reaped);
}

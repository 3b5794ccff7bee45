/*-------------------------------------------------------------------------
 * manage.c
 *	  Managing tasks: cancel, retry, and set_concurrency_limit.
 *
 * cancel and retry act on one task, and only for a caller that has the
 * privileges of the task's owner (see schedq_caller_acts_for).  They lock
 * the row first, so they serialize with claim, complete and the reaper,
 * and return false, changing nothing, when the task is not in a state
 * they apply to.  set_concurrency_limit changes a setting; EXECUTE on it
 * (like on pause_queue and set_budget) is what makes a role an admin.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "call.h"
#include "check.h"
#include "executor.h"
#include "metrics.h"
#include "plan.h"
#include "task.h"
#include "wake.h"

static SchedqQuery q_lock_task =
	SCHEDQ_QUERY("SELECT status, owner::oid FROM schedq.task"
				 " WHERE id = $1 FOR UPDATE",
				 INT8OID);
static SchedqQuery q_cancel =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'canceled', finished_at = now()"
				 " WHERE id = $1",
				 INT8OID);
static SchedqQuery q_retry_dedup = SCHEDQ_QUERY(
	"SELECT t.dedup_key FROM schedq.task t, schedq.task o"
	" WHERE t.id = $1 AND o.owner = t.owner AND o.dedup_key = t.dedup_key"
	" AND o.status IN " TASK_LIVE_SQL,
	INT8OID);
static SchedqQuery q_retry =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = CASE WHEN" TASK_UNGATED_SQL
				 "       THEN 'available' ELSE 'pending' END,"
				 "     retry_base = attempts, run_at = now(),"
				 "     claimed_by = NULL, lease_expires_at = NULL,"
				 "     deadline = NULL, parked = false, parked_on = NULL,"
				 "     result = NULL, finished_at = NULL"
				 " WHERE id = $1"
				 " RETURNING status," TASK_AVAILABLE_COLUMNS,
				 INT8OID);
static SchedqQuery q_limit_set =
	SCHEDQ_QUERY("INSERT INTO schedq.concurrency_limit (key, max_active)"
				 " VALUES ($1, $2) ON CONFLICT (key)"
				 " DO UPDATE SET max_active = EXCLUDED.max_active",
				 TEXTOID, INT4OID);
static SchedqQuery q_limit_drop =
	SCHEDQ_QUERY("DELETE FROM schedq.concurrency_limit WHERE key = $1",
				 TEXTOID);
static SchedqQuery q_limit_event =
	SCHEDQ_QUERY("INSERT INTO schedq.gate_event (concurrency_key) VALUES ($1)",
				 TEXTOID);

/*
 * Lock a task row and check that the caller may act on it.  Returns false
 * when there is no such task, else sets *status.
 */
static bool
manage_lock_task(SchedqCall *call, Datum task_id, SchedqTaskStatus *status)
{
	bool isnull;
	Oid	 owner;

	if (schedq_run(&q_lock_task, &task_id, NULL, 0, SPI_OK_SELECT) == 0)
		return false;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	if (!schedq_caller_acts_for(call, owner))
		ereport(
			ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			errmsg("permission denied for task " INT64_FORMAT,
				   DatumGetInt64(task_id)),
			errdetail(
				"Only roles with the privileges of the task's owner may change it."));
	*status = schedq_task_status(
		SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	return true;
}

PG_FUNCTION_INFO_V1(schedq_cancel);

/*
 * schedq.cancel(task_id): cancel a task that has not finished.  A running
 * task's grant becomes stale at once: its status is no longer 'running'.
 */
Datum
schedq_cancel(PG_FUNCTION_ARGS)
{
	SchedqCall		 call;
	Datum			 id;
	SchedqTaskStatus status;
	bool			 canceled = false;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("task_id must not be null"));
	id = PG_GETARG_DATUM(0);

	schedq_call_begin(&call);
	if (manage_lock_task(&call, id, &status) && TASK_STATUS_IS_LIVE(status))
	{
		if (status == TASK_RUNNING)
			schedq_executor_cancel_at_commit(DatumGetInt64(id));
		schedq_run(&q_cancel, &id, NULL, 0, SPI_OK_UPDATE);
		canceled = true;
	}
	schedq_call_end(&call);
	PG_RETURN_BOOL(canceled);
}

PG_FUNCTION_INFO_V1(schedq_retry);

/*
 * schedq.retry(task_id): run a finished task again, with a fresh allowance
 * of max_attempts attempts.  Attempt numbers keep counting up, so grants
 * from before stay stale.
 */
Datum
schedq_retry(PG_FUNCTION_ARGS)
{
	SchedqCall		 call;
	Datum			 id;
	SchedqTaskStatus status;
	bool			 retried = false;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("task_id must not be null"));
	id = PG_GETARG_DATUM(0);

	schedq_call_begin(&call);
	if (manage_lock_task(&call, id, &status) && !TASK_STATUS_IS_LIVE(status))
	{
		HeapTuple tuple;

		if (schedq_run(&q_retry_dedup, &id, NULL, 1, SPI_OK_SELECT) > 0)
			ereport(ERROR, errcode(ERRCODE_UNIQUE_VIOLATION),
					errmsg("cannot retry task " INT64_FORMAT
						   ": another live task holds dedup_key \"%s\"",
						   DatumGetInt64(id),
						   SPI_getvalue(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1)));
		schedq_run(&q_retry, &id, NULL, 0, SPI_OK_UPDATE_RETURNING);
		tuple = SPI_tuptable->vals[0];
		if (schedq_task_status(SPI_getvalue(tuple, SPI_tuptable->tupdesc, 1)) ==
			TASK_AVAILABLE)
			schedq_task_row_available_at_commit(tuple, SPI_tuptable->tupdesc,
												2);
		else
			schedq_wake_scheduler_at_commit();
		retried = true;
		schedq_count(METRIC_TASKS_RETRIED, 1);
	}
	schedq_call_end(&call);
	PG_RETURN_BOOL(retried);
}

PG_FUNCTION_INFO_V1(schedq_set_concurrency_limit);

/*
 * schedq.set_concurrency_limit(key, max_active): at most max_active tasks
 * with this concurrency_key available or running at once; NULL removes
 * the limit.  Enforced by the promotion loop.
 */
Datum
schedq_set_concurrency_limit(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Datum	   values[2];

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("key must not be null"));
	schedq_check_name("key", PG_GETARG_TEXT_PP(0));
	values[0] = PG_GETARG_DATUM(0);
	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) < 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_active must not be negative"));

	schedq_call_begin(&call);
	if (PG_ARGISNULL(1))
		schedq_run(&q_limit_drop, values, NULL, 0, SPI_OK_DELETE);
	else
	{
		values[1] = PG_GETARG_DATUM(1);
		schedq_run(&q_limit_set, values, NULL, 0, SPI_OK_INSERT);
	}
	/* tasks parked behind this key may go now */
	schedq_run(&q_limit_event, values, NULL, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	schedq_wake_scheduler_at_commit();
	PG_RETURN_VOID();
}

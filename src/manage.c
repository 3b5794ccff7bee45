/*-------------------------------------------------------------------------
 * manage.c
 *	  The managing side of the API: cancel, retry, pause_queue,
 *	  resume_queue, set_concurrency_limit and set_budget.
 *
 * cancel and retry act on one task, and only for a caller that has the
 * privileges of the task's owner (see schedq_caller_acts_for).  They lock
 * the row first, so they serialize with claim, complete and the reaper,
 * and return false, changing nothing, when the task is not in a state
 * they apply to.  The other functions change settings; EXECUTE on them is
 * what makes a role an admin.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "schedq.h"
#include "shmem.h"
#include "wake.h"

static SPIPlanPtr plan_lock_task = NULL;
static SPIPlanPtr plan_cancel = NULL;
static SPIPlanPtr plan_retry_dedup = NULL;
static SPIPlanPtr plan_retry = NULL;
static SPIPlanPtr plan_queue = NULL;
static SPIPlanPtr plan_limit_set = NULL;
static SPIPlanPtr plan_limit_drop = NULL;
static SPIPlanPtr plan_budget = NULL;
static SPIPlanPtr plan_limit_event = NULL;

/*
 * Raise the standard error for a NULL argument.
 */
static void
manage_require(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not be null", name));
}

/*
 * Lock a task row and check that the caller may act on it.  Returns its
 * status (palloc'd in the SPI context), or NULL when there is no such
 * task.
 */
static char *
manage_lock_task(SchedqCall *call, int64 task_id)
{
	static const Oid types[] = { INT8OID };
	Datum			 value = Int64GetDatum(task_id);
	bool			 isnull;
	Oid				 owner;

	if (schedq_execute(schedq_plan(&plan_lock_task,
								   "SELECT status, owner::oid FROM schedq.task"
								   " WHERE id = $1 FOR UPDATE",
								   1, types),
					   &value, NULL, 0, SPI_OK_SELECT) == 0)
		return NULL;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	if (!schedq_caller_acts_for(call, owner))
		ereport(
			ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			errmsg("permission denied for task " INT64_FORMAT, task_id),
			errdetail(
				"Only roles with the privileges of the task's owner may change it."));
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static bool
manage_is_terminal(const char *status)
{
	return strcmp(status, "done") == 0 || strcmp(status, "failed") == 0 ||
		   strcmp(status, "canceled") == 0 || strcmp(status, "skipped") == 0;
}

PG_FUNCTION_INFO_V1(schedq_cancel);

/*
 * schedq.cancel(task_id): cancel a task that has not finished.  A running
 * task's grant becomes stale at once: its status is no longer 'running'.
 */
Datum
schedq_cancel(PG_FUNCTION_ARGS)
{
	static const Oid types[] = { INT8OID };
	SchedqCall		 call;
	Datum			 id;
	char			*status;
	bool			 canceled = false;

	manage_require(fcinfo, 0, "task_id");
	id = PG_GETARG_DATUM(0);

	schedq_call_begin(&call);
	status = manage_lock_task(&call, DatumGetInt64(id));
	if (status != NULL && !manage_is_terminal(status))
	{
		if (strcmp(status, "running") == 0)
			schedq_cancel_executor_at_commit(DatumGetInt64(id));
		schedq_execute(
			schedq_plan(&plan_cancel,
						"UPDATE schedq.task"
						" SET status = 'canceled', finished_at = now()"
						" WHERE id = $1",
						1, types),
			&id, NULL, 0, SPI_OK_UPDATE);
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
	static const Oid types[] = { INT8OID };
	SchedqCall		 call;
	Datum			 id;
	char			*status;
	bool			 retried = false;

	manage_require(fcinfo, 0, "task_id");
	id = PG_GETARG_DATUM(0);

	schedq_call_begin(&call);
	status = manage_lock_task(&call, DatumGetInt64(id));
	if (status != NULL && manage_is_terminal(status))
	{
		if (schedq_execute(
				schedq_plan(
					&plan_retry_dedup,
					"SELECT t.dedup_key FROM schedq.task t, schedq.task o"
					" WHERE t.id = $1 AND o.dedup_key = t.dedup_key"
					" AND o.status IN ('pending', 'available', 'running')",
					1, types),
				&id, NULL, 1, SPI_OK_SELECT) > 0)
			ereport(ERROR, errcode(ERRCODE_UNIQUE_VIOLATION),
					errmsg("cannot retry task " INT64_FORMAT
						   ": another live task holds dedup_key \"%s\"",
						   DatumGetInt64(id),
						   SPI_getvalue(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1)));
		schedq_execute(
			schedq_plan(
				&plan_retry,
				"UPDATE schedq.task"
				" SET status = CASE WHEN lock_key IS NULL"
				"       AND concurrency_key IS NULL AND depends_on = '{}'"
				"       THEN 'available' ELSE 'pending' END,"
				"     retry_base = attempts, run_at = now(),"
				"     claimed_by = NULL, lease_expires_at = NULL,"
				"     deadline = NULL, parked = false, parked_on = NULL,"
				"     result = NULL, finished_at = NULL"
				" WHERE id = $1"
				" RETURNING status, queue, required_caps, priority, run_at, id",
				1, types),
			&id, NULL, 0, SPI_OK_UPDATE_RETURNING);
		if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								1),
				   "available") == 0)
		{
			HeapTuple tuple = SPI_tuptable->vals[0];
			TupleDesc desc = SPI_tuptable->tupdesc;
			bool	  isnull;

			schedq_wake_claimers_at_commit(SPI_getvalue(tuple, desc, 2),
										   DatumGetArrayTypeP(
											   SPI_getbinval(tuple, desc, 3,
															 &isnull)),
										   DatumGetInt32(
											   SPI_getbinval(tuple, desc, 4,
															 &isnull)),
										   DatumGetTimestampTz(
											   SPI_getbinval(tuple, desc, 5,
															 &isnull)),
										   DatumGetInt64(
											   SPI_getbinval(tuple, desc, 6,
															 &isnull)));
		}
		else
			schedq_wake_scheduler_at_commit();
		retried = true;
		schedq_count(METRIC_TASKS_RETRIED, 1);
	}
	schedq_call_end(&call);
	PG_RETURN_BOOL(retried);
}

/*
 * Set a queue's paused flag, creating its row if needed.
 */
static void
manage_set_paused(FunctionCallInfo fcinfo, bool paused)
{
	static const Oid types[] = { TEXTOID, BOOLOID };
	SchedqCall		 call;
	Datum			 values[2];

	manage_require(fcinfo, 0, "queue");
	values[0] = PG_GETARG_DATUM(0);
	values[1] = BoolGetDatum(paused);

	schedq_call_begin(&call);
	schedq_execute(
		schedq_plan(
			&plan_queue,
			"INSERT INTO schedq.queue (name, paused) VALUES ($1, $2)"
			" ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused",
			2, types),
		values, NULL, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	if (!paused)
		schedq_wake_all_claimers_at_commit();
}

PG_FUNCTION_INFO_V1(schedq_pause_queue);

/*
 * schedq.pause_queue(queue): no claim takes tasks from the queue until it
 * is resumed.  Running tasks are not affected.
 */
Datum
schedq_pause_queue(PG_FUNCTION_ARGS)
{
	manage_set_paused(fcinfo, true);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(schedq_resume_queue);

/*
 * schedq.resume_queue(queue): claims take from the queue again.
 */
Datum
schedq_resume_queue(PG_FUNCTION_ARGS)
{
	manage_set_paused(fcinfo, false);
	PG_RETURN_VOID();
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
	static const Oid types[] = { TEXTOID, INT4OID };
	SchedqCall		 call;
	Datum			 values[2];

	manage_require(fcinfo, 0, "key");
	values[0] = PG_GETARG_DATUM(0);
	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) < 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_active must not be negative"));

	schedq_call_begin(&call);
	if (PG_ARGISNULL(1))
		schedq_execute(
			schedq_plan(&plan_limit_drop,
						"DELETE FROM schedq.concurrency_limit WHERE key = $1",
						1, types),
			values, NULL, 0, SPI_OK_DELETE);
	else
	{
		values[1] = PG_GETARG_DATUM(1);
		schedq_execute(
			schedq_plan(&plan_limit_set,
						"INSERT INTO schedq.concurrency_limit (key, max_active)"
						" VALUES ($1, $2) ON CONFLICT (key)"
						" DO UPDATE SET max_active = EXCLUDED.max_active",
						2, types),
			values, NULL, 0, SPI_OK_INSERT);
	}
	/* tasks parked behind this key may go now */
	schedq_execute(
		schedq_plan(
			&plan_limit_event,
			"INSERT INTO schedq.gate_event (concurrency_key) VALUES ($1)", 1,
			types),
		values, NULL, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	schedq_wake_scheduler_at_commit();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(schedq_set_budget);

/*
 * schedq.set_budget(name, hard_limit, period): create or change a budget.
 * With a period, the budget starts empty again at every boundary of that
 * period (counted from 2000-01-01 UTC), which makes it a rate limit.
 * Changing the limit keeps what was used; changing the period starts a
 * new one.
 */
Datum
schedq_set_budget(PG_FUNCTION_ARGS)
{
	static const Oid types[] = { TEXTOID, NUMERICOID, INTERVALOID };
	SchedqCall		 call;
	Datum			 values[3];
	char			 nulls[3] = { ' ', ' ', PG_ARGISNULL(2) ? 'n' : ' ' };
	Numeric			 limit;

	manage_require(fcinfo, 0, "name");
	manage_require(fcinfo, 1, "hard_limit");
	if (VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)) == 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("name must not be empty"));
	limit = PG_GETARG_NUMERIC(1);
	if (numeric_is_nan(limit) || numeric_is_inf(limit) ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, NumericGetDatum(limit),
										 NumericGetDatum(int64_to_numeric(0)))))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("hard_limit must be a finite number not below zero"));
	if (!PG_ARGISNULL(2))
	{
		Interval *period = PG_GETARG_INTERVAL_P(2);

		if (period->month != 0)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("budget period must not contain months or years"),
					errhint("Use days instead, for example '30 days'."));
		if (schedq_interval_usecs(period) <= 0)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("budget period must be positive"));
		values[2] = PointerGetDatum(period);
	}
	values[0] = PG_GETARG_DATUM(0);
	values[1] = NumericGetDatum(limit);

	schedq_call_begin(&call);
	schedq_execute(
		schedq_plan(
			&plan_budget,
			"INSERT INTO schedq.budget AS b (name, hard_limit, period, period_start)"
			" VALUES ($1, $2, $3,"
			"   date_bin($3, now(), '2000-01-01 00:00:00+00'))"
			" ON CONFLICT (name) DO UPDATE"
			" SET hard_limit = EXCLUDED.hard_limit,"
			"     period = EXCLUDED.period,"
			"     used = CASE WHEN b.period IS NOT DISTINCT FROM EXCLUDED.period"
			"       THEN b.used ELSE 0 END,"
			"     period_start = EXCLUDED.period_start",
			3, types),
		values, nulls, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	schedq_budgets_changed_at_commit();
	schedq_wake_all_claimers_at_commit();
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 * api/manage.c
 *	  Managing tasks: cancel, retry, set_concurrency_limit, and the token
 *	  signing keys: rotate_grant_key.
 *
 * cancel and retry act on one task, and only for a caller that has the
 * privileges of the task's owner (store/task_manage.c).  They return
 * false, changing nothing, when the task is not in a state they apply
 * to.  set_concurrency_limit changes a setting; EXECUTE on it
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

#include "shared/call.h"
#include "base/check.h"
#include "shared/sqlslots.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/token.h"
#include "store/task.h"
#include "store/task_manage.h"
#include "shared/wake.h"

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
	if (schedq_task_manage_lock(&call, id, &status) &&
		TASK_STATUS_IS_LIVE(status))
	{
		if (status == TASK_RUNNING)
			schedq_sqlslots_cancel_at_commit(DatumGetInt64(id));
		schedq_task_manage_cancel(id);
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
	if (schedq_task_manage_lock(&call, id, &status) &&
		!TASK_STATUS_IS_LIVE(status))
	{
		schedq_task_manage_retry(id);
		retried = true;
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
		schedq_plan_run(&q_limit_drop, values, NULL, 0, SPI_OK_DELETE);
	else
	{
		values[1] = PG_GETARG_DATUM(1);
		schedq_plan_run(&q_limit_set, values, NULL, 0, SPI_OK_INSERT);
	}
	/* tasks parked behind this key may go now */
	schedq_plan_run(&q_limit_event, values, NULL, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	schedq_wake_scheduler_at_commit();
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(schedq_rotate_grant_key);

/*
 * schedq.rotate_grant_key(): add a new token signing key and drop every
 * key but it and the one before, which keeps verifying tokens in flight.
 */
Datum
schedq_rotate_grant_key(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	int32	   kid;

	schedq_call_begin(&call);
	kid = schedq_token_rotate_key();
	schedq_call_end(&call);
	PG_RETURN_INT32(kid);
}

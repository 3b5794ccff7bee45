/*-------------------------------------------------------------------------
 * store/task_manage.c
 *	  The statements of cancel and retry.
 *
 * Both act on one task, and only for a caller that has the privileges of
 * the task's owner (schedq_call_acts_for).  The row is locked first, so
 * they serialize with claim, complete and the reaper; the SQL functions
 * (api/manage.c) decide from the status it had what applies.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/wake.h"
#include "store/task.h"
#include "store/task_citus.h"
#include "store/task_manage.h"

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

/*
 * On a schedq.task that Citus distributes: the same lock and cancel,
 * naming the task's queue ($2), read first (store/task_citus.c), so that
 * each goes to one shard.
 */
static SchedqQuery q_lock_task_citus =
	SCHEDQ_QUERY("SELECT status, owner::oid FROM schedq.task"
				 " WHERE queue = $2 AND id = $1 FOR UPDATE",
				 INT8OID, TEXTOID);
static SchedqQuery q_cancel_citus =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'canceled', finished_at = now()"
				 " WHERE queue = $2 AND id = $1",
				 INT8OID, TEXTOID);

/* The queue of the task the last schedq_task_manage_lock locked on Citus. */
static Datum manage_queue;

/*
 * Lock a task row and check that the caller may act on it.  Returns false
 * when there is no such task, else sets *status.
 */
bool
schedq_task_manage_lock(SchedqCall *call, Datum task_id,
						SchedqTaskStatus *status)
{
	bool  isnull;
	Oid	  owner;
	Datum values[2] = { task_id, (Datum) 0 };
	char *queue;

	manage_queue = (Datum) 0;
	if (schedq_task_distributed())
	{
		/* owners are OIDs, which differ from node to node */
		if (!call->admin)
			ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("on a distributed schedq, only an admin (a role "
						   "with BYPASSRLS) may cancel or retry a task"));
		queue = schedq_task_citus_queue_of_task(DatumGetInt64(task_id));
		if (queue == NULL)
			return false;
		values[1] = manage_queue = CStringGetTextDatum(queue);
		if (schedq_plan_run(&q_lock_task_citus, values, NULL, 0,
							SPI_OK_SELECT) == 0)
			return false;
	}
	else if (schedq_plan_run(&q_lock_task, &task_id, NULL, 0, SPI_OK_SELECT) ==
			 0)
		return false;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	if (!schedq_call_acts_for(call, owner))
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

/*
 * Cancel a locked task that has not finished.
 */
void
schedq_task_manage_cancel(Datum task_id)
{
	Datum values[2] = { task_id, manage_queue };

	if (manage_queue != (Datum) 0)
		schedq_plan_run(&q_cancel_citus, values, NULL, 0, SPI_OK_UPDATE);
	else
		schedq_plan_run(&q_cancel, &task_id, NULL, 0, SPI_OK_UPDATE);
}

/*
 * Run a locked, finished task again with a fresh allowance of attempts:
 * 'available' when nothing gates it, else 'pending' for the scheduler.
 * An error when another live task of its owner holds its dedup_key.
 */
void
schedq_task_manage_retry(Datum task_id)
{
	HeapTuple tuple;

	/* its dedup check joins schedq.task with itself, across shards */
	if (manage_queue != (Datum) 0)
		ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("on a distributed schedq, retry is not supported"),
				errhint("Submit the task again."));
	if (schedq_plan_run(&q_retry_dedup, &task_id, NULL, 1, SPI_OK_SELECT) > 0)
		ereport(ERROR, errcode(ERRCODE_UNIQUE_VIOLATION),
				errmsg("cannot retry task " INT64_FORMAT
					   ": another live task holds dedup_key \"%s\"",
					   DatumGetInt64(task_id),
					   SPI_getvalue(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1)));
	schedq_plan_run(&q_retry, &task_id, NULL, 0, SPI_OK_UPDATE_RETURNING);
	tuple = SPI_tuptable->vals[0];
	if (schedq_task_status(SPI_getvalue(tuple, SPI_tuptable->tupdesc, 1)) ==
		TASK_AVAILABLE)
		schedq_task_row_available_at_commit(tuple, SPI_tuptable->tupdesc, 2);
	else
		schedq_wake_scheduler_at_commit();
	schedq_metrics_count(METRIC_TASKS_RETRIED, 1);
}

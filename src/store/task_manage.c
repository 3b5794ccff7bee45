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

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

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
				 " SET status = 'canceled', finished_at =" TASK_FINISHED_NOW_SQL
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
				 " SET status = 'canceled', finished_at =" TASK_FINISHED_NOW_SQL
				 " WHERE queue = $2 AND id = $1",
				 INT8OID, TEXTOID);

/*
 * retry's on Citus, where dedup keys are unique per owner and queue: the
 * locked task's key, owner, attempts and gates; the dedup check in its
 * queue; the update, with every value it sets computed here (Citus
 * 14.0.1's generic plan of a one-shard UPDATE that computes a value from
 * a parameter and a column fails its own assertion).  Each statement
 * reads one table and names the queue, so each goes to one shard.
 */
static SchedqQuery q_retry_read_citus =
	SCHEDQ_QUERY("SELECT dedup_key, owner::oid, attempts," TASK_UNGATED_SQL
				 " FROM schedq.task WHERE queue = $2 AND id = $1",
				 INT8OID, TEXTOID);
static SchedqQuery q_retry_dedup_citus =
	SCHEDQ_QUERY("SELECT FROM schedq.task"
				 " WHERE queue = $1 AND owner::oid = $2 AND dedup_key = $3"
				 "   AND status IN " TASK_LIVE_SQL " LIMIT 1",
				 TEXTOID, OIDOID, TEXTOID);
static SchedqQuery q_retry_citus =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = $3, retry_base = $4, run_at = $5,"
				 "     claimed_by = NULL, lease_expires_at = NULL,"
				 "     deadline = NULL, parked = false, parked_on = NULL,"
				 "     result = NULL, finished_at = NULL"
				 " WHERE queue = $2 AND id = $1"
				 " RETURNING status," TASK_AVAILABLE_COLUMNS,
				 INT8OID, TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID);

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

static void
retry_refuse_dedup(Datum task_id, const char *dedup_key)
{
	ereport(ERROR, errcode(ERRCODE_UNIQUE_VIOLATION),
			errmsg("cannot retry task " INT64_FORMAT
				   ": another live task holds dedup_key \"%s\"",
				   DatumGetInt64(task_id), dedup_key));
}

/*
 * retry on Citus, of the task schedq_task_manage_lock locked in the
 * queue manage_queue: the same checks and update as on one server, by
 * statements that each go to the queue's shard.  Leaves the updated row
 * in SPI_tuptable, as the single-server statement does.
 */
static void
retry_citus(Datum task_id)
{
	Datum	  values[5] = { task_id, manage_queue };
	HeapTuple tuple;
	TupleDesc desc;
	bool	  isnull;
	bool	  ungated;
	char	 *dedup_key;

	if (schedq_plan_run(&q_retry_read_citus, values, NULL, 1, SPI_OK_SELECT) !=
		1)
		elog(ERROR, "task " INT64_FORMAT " vanished while locked",
			 DatumGetInt64(task_id));
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	dedup_key = SPI_getvalue(tuple, desc, 1);
	values[2] = SPI_getbinval(tuple, desc, 3, &isnull); /* attempts */
	ungated = DatumGetBool(SPI_getbinval(tuple, desc, 4, &isnull));
	if (dedup_key != NULL)
	{
		Datum dedup[3] = { manage_queue, SPI_getbinval(tuple, desc, 2, &isnull),
						   CStringGetTextDatum(dedup_key) };

		if (schedq_plan_run(&q_retry_dedup_citus, dedup, NULL, 1,
							SPI_OK_SELECT) > 0)
			retry_refuse_dedup(task_id, dedup_key);
	}
	values[3] = values[2];
	values[2] = CStringGetTextDatum(
		schedq_task_status_names[ungated ? TASK_AVAILABLE : TASK_PENDING]);
	values[4] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	schedq_plan_run(&q_retry_citus, values, NULL, 0, SPI_OK_UPDATE_RETURNING);
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

	if (manage_queue != (Datum) 0)
		retry_citus(task_id);
	else
	{
		if (schedq_plan_run(&q_retry_dedup, &task_id, NULL, 1, SPI_OK_SELECT) >
			0)
			retry_refuse_dedup(task_id, SPI_getvalue(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 1));
		schedq_plan_run(&q_retry, &task_id, NULL, 0, SPI_OK_UPDATE_RETURNING);
	}
	tuple = SPI_tuptable->vals[0];
	if (schedq_task_status(SPI_getvalue(tuple, SPI_tuptable->tupdesc, 1)) ==
		TASK_AVAILABLE)
		schedq_task_row_available_at_commit(tuple, SPI_tuptable->tupdesc, 2);
	else
		schedq_wake_scheduler_at_commit();
	schedq_metrics_count(METRIC_TASKS_RETRIED, 1);
}

/*-------------------------------------------------------------------------
 * store/triggers.c
 *	  The triggers of schedq's tables.
 *
 *	- schedq._task_event(): the status trigger of schedq.task.  Every
 *	  transition that must raise an event sets finished_at (an end) or
 *	  run_at (a return to pending), and a claim sets neither, so claims
 *	  never evaluate it (AFTER UPDATE OF finished_at, run_at).
 *	- schedq._queue_changed(): the statement trigger of schedq.queue; any
 *	  change of it moves the queues generation, so that claims look at the
 *	  paused queues again once it commits (store/queues.c).
 *	- schedq._work_grant_changed(): the statement trigger of
 *	  schedq.work_grant, likewise for the work grants
 *	  (store/work_grants.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/rel.h"

#include "shared/plan.h"
#include "store/task_runs.h"
#include "shared/shm.h"
#include "store/task.h"
#include "shared/commit.h"

PG_FUNCTION_INFO_V1(schedq_task_event_trigger);

/*
 * The status trigger of schedq.task, for a task that holds a key, has
 * dependents or belongs to a run (the WHEN clause), when it leaves
 * 'available'/'running' for another status:
 *	- When it held a lock_key or a concurrency_key, or others depend on it,
 *	  record a gate event and wake the scheduler after commit.
 *	- When it ended and belongs to a run, apply the run's failure policy
 *	  and finish the run if it was the last (store/task_runs.c).
 */
Datum
schedq_task_event_trigger(PG_FUNCTION_ARGS)
{
	TriggerData		*trigdata = (TriggerData *) fcinfo->context;
	TupleDesc		 desc;
	HeapTuple		 oldtup;
	HeapTuple		 newtup;
	Datum			 values[3];
	char			 nulls[3];
	bool			 isnull;
	bool			 has_dependents;
	Datum			 task_id;
	Datum			 run_id;
	bool			 in_run;
	SchedqTaskStatus status;
	SchedqTaskStatus old_status;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "schedq._task_event() must be called as a trigger");

	desc = trigdata->tg_relation->rd_att;
	oldtup = trigdata->tg_trigtuple;
	newtup = trigdata->tg_newtuple;
	status = schedq_task_status(
		SPI_getvalue(newtup, desc, SPI_fnumber(desc, "status")));
	old_status = schedq_task_status(
		SPI_getvalue(oldtup, desc, SPI_fnumber(desc, "status")));
	if (status == old_status || status == TASK_AVAILABLE ||
		status == TASK_RUNNING)
		return PointerGetDatum(NULL);

	task_id = heap_getattr(oldtup, SPI_fnumber(desc, "id"), desc, &isnull);
	values[0] =
		heap_getattr(oldtup, SPI_fnumber(desc, "lock_key"), desc, &isnull);
	nulls[0] = isnull ? 'n' : ' ';
	values[1] = heap_getattr(oldtup, SPI_fnumber(desc, "concurrency_key"), desc,
							 &isnull);
	nulls[1] = isnull ? 'n' : ' ';
	has_dependents =
		DatumGetBool(heap_getattr(oldtup, SPI_fnumber(desc, "has_dependents"),
								  desc, &isnull));
	values[2] = task_id;
	nulls[2] = has_dependents ? ' ' : 'n';
	run_id = heap_getattr(newtup, SPI_fnumber(desc, "run_id"), desc, &isnull);
	in_run = !isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (nulls[0] == ' ' || nulls[1] == ' ' || has_dependents)
		schedq_task_gate_event(values, nulls);
	if (in_run && status != TASK_PENDING)
		schedq_task_runs_ended(run_id, task_id, status);
	SPI_finish();
	return PointerGetDatum(NULL);
}

PG_FUNCTION_INFO_V1(schedq_queue_changed_trigger);

/*
 * Statement trigger on schedq.queue (pause_queue, resume_queue, or DML by
 * hand): make claims look at the paused queues again once this commits.
 * Without the library preloaded no claim runs (a restore may, though).
 *
 * On a Citus cluster schedq.queue is a reference table, and the trigger
 * fires on its copies (schedq.queue_<shard id>) in transactions Citus
 * prepares, which a bump cannot be part of (shared/commit.h).  No claim
 * there needs one: a claim on a distributed schedq.task reads the queue's
 * paused flag every time (store/task_citus.c).
 */
Datum
schedq_queue_changed_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "schedq._queue_changed() must be called as a trigger");
	if (strcmp(RelationGetRelationName(trigdata->tg_relation), "queue") == 0)
		schedq_commit_generation_bump(GENERATION_QUEUES);
	return PointerGetDatum(NULL);
}

PG_FUNCTION_INFO_V1(schedq_work_grant_changed_trigger);

/*
 * Statement trigger on schedq.work_grant (grant_work, revoke_work, a
 * restore, or DML by hand): make claims look at the work grants again
 * once this commits (store/work_grants.c).
 */
Datum
schedq_work_grant_changed_trigger(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "schedq._work_grant_changed() must be called as a trigger");
	schedq_commit_generation_bump(GENERATION_WORK_GRANTS);
	return PointerGetDatum(NULL);
}

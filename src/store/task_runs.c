/*-------------------------------------------------------------------------
 * store/task_runs.c
 *	  Workflows: what applies a run's failure policy and finishes it when
 *	  one of its tasks ends, cancel_run's statements, and the reaper's
 *	  sweep for runs left running.
 *
 * A task of a run that ends fires the status trigger of schedq.task
 * (schedq._task_event(), store/triggers.c), which calls schedq_task_runs_ended():
 *	- locks the run row, so the ends of a run's tasks are judged one at a
 *	  time, each seeing the others' committed states;
 *	- when the task failed for good or was canceled: under 'halt' cancels
 *	  every live task of the run; under 'continue' skips its transitive
 *	  dependents (found through task_depends_on_idx, never by scanning the
 *	  run), each with a last_error naming the dependency that held it
 *	  back; either way the run can no longer end 'done' (had_failure);
 *	- finishes the run when no live task is left: 'failed' if anything
 *	  failed, was canceled or skipped, else 'done'.  cancel_run marks the
 *	  run 'canceled' first, so the triggers of the tasks it cancels find it
 *	  finished and do nothing.
 * A crash between the last task's end and that trigger cannot happen (same
 * transaction), but a run can still be left running (say, by a trigger
 * disabled by hand); the reaper finishes such runs.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "shared/call.h"
#include "shared/sqlslots.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "store/task_runs.h"
#include "store/task.h"

static SchedqQuery q_lock_run =
	SCHEDQ_QUERY("SELECT status, failure_policy, owner::oid FROM schedq.run"
				 " WHERE id = $1 FOR UPDATE",
				 INT8OID);
static SchedqQuery q_mark_failure =
	SCHEDQ_QUERY("UPDATE schedq.run SET had_failure = true"
				 " WHERE id = $1 AND NOT had_failure",
				 INT8OID);
/*
 * Skip the live transitive dependents of task $2, which ended as $3
 * ('failed' or 'was canceled'), naming in last_error the dependency that
 * held each back: "dependency 12 failed" for a direct dependent,
 * "dependency 13 was skipped: task 12 failed" for one further down (the
 * direct path first, when there are several).
 */
static SchedqQuery q_skip = SCHEDQ_QUERY(
	"WITH RECURSIVE d(id, via) AS ("
	"  SELECT t.id, $2::bigint FROM schedq.task t"
	"  WHERE t.depends_on @> ARRAY[$2::bigint]"
	"    AND t.depends_on <> '{}' AND t.run_id = $1"
	"  UNION"
	"  SELECT t.id, d.id FROM d, schedq.task t"
	"  WHERE t.depends_on @> ARRAY[d.id]"
	"    AND t.depends_on <> '{}' AND t.run_id = $1)"
	" UPDATE schedq.task t SET status = 'skipped',"
	"   finished_at =" TASK_FINISHED_NOW_SQL ","
	"   last_error = CASE WHEN s.via = $2"
	"     THEN 'dependency ' || $2 || ' ' || $3"
	"     ELSE 'dependency ' || s.via || ' was skipped: task ' || $2"
	"          || ' ' || $3 END"
	" FROM (SELECT DISTINCT ON (id) id, via FROM d"
	"       ORDER BY id, via <> $2, via) s"
	" WHERE t.id = s.id AND t.status IN " TASK_LIVE_SQL,
	INT8OID, INT8OID, TEXTOID);
static SchedqQuery q_any_live =
	SCHEDQ_QUERY("SELECT FROM schedq.task WHERE run_id = $1"
				 " AND status IN " TASK_LIVE_SQL " LIMIT 1",
				 INT8OID);
static SchedqQuery q_finish =
	SCHEDQ_QUERY("UPDATE schedq.run SET finished_at = now(),"
				 " status = CASE WHEN had_failure THEN 'failed' ELSE 'done' END"
				 " WHERE id = $1 AND status = 'running'",
				 INT8OID);
static SchedqQuery q_cancel_run =
	SCHEDQ_QUERY("UPDATE schedq.run SET status = 'canceled',"
				 " finished_at = now() WHERE id = $1",
				 INT8OID);
static SchedqQuery q_cancel_tasks =
	SCHEDQ_QUERY("UPDATE schedq.task t SET status = 'canceled',"
				 "  finished_at =" TASK_FINISHED_NOW_SQL
				 " FROM (SELECT id, status FROM schedq.task"
				 "       WHERE run_id = $1"
				 "         AND status IN " TASK_LIVE_SQL "       FOR UPDATE) o"
				 " WHERE t.id = o.id"
				 " RETURNING t.id, o.status = 'running'",
				 INT8OID);
static SchedqQuery q_orphans = SCHEDQ_QUERY0(
	"UPDATE schedq.run r SET finished_at = now(),"
	" status = CASE WHEN r.had_failure THEN 'failed' ELSE 'done' END"
	" WHERE r.id IN (SELECT o.id FROM schedq.run o"
	"   WHERE o.status = 'running' AND o.has_tasks"
	"     AND NOT EXISTS (SELECT FROM schedq.task t WHERE t.run_id = o.id"
	"       AND t.status IN " TASK_LIVE_SQL ")"
	"   LIMIT 100 FOR UPDATE SKIP LOCKED)");

/*
 * Note every task a statement canceled that was running, so that an
 * executor running it has its statement canceled after commit.
 */
static void
run_note_canceled(int n)
{
	for (int i = 0; i < n; i++)
	{
		bool isnull;
		bool was_running =
			DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i],
									   SPI_tuptable->tupdesc, 2, &isnull));

		if (was_running)
			schedq_sqlslots_cancel_at_commit(DatumGetInt64(
				SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
							  &isnull)));
	}
}

/*
 * Cancel every live task of a run, noting the running ones so that an
 * executor running one has its statement interrupted after commit.
 */
static void
run_cancel_live_tasks(Datum run_id)
{
	run_note_canceled(schedq_plan_run(&q_cancel_tasks, &run_id, NULL, 0,
									  SPI_OK_UPDATE_RETURNING));
}

/*
 * Cancel a run and every unfinished task of it, for a caller that may act
 * for its owner.  False, changing nothing, when the run is already
 * finished or does not exist.
 */
bool
schedq_task_runs_cancel(SchedqCall *call, Datum run_id)
{
	bool isnull;
	Oid	 owner;

	if (schedq_plan_run(&q_lock_run, &run_id, NULL, 0, SPI_OK_SELECT) == 0)
		return false;
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 3, &isnull));
	if (!schedq_call_acts_for(call, owner))
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied for run " INT64_FORMAT,
					   DatumGetInt64(run_id)));
	if (strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
			   "running") != 0)
		return false;
	schedq_plan_run(&q_cancel_run, &run_id, NULL, 0, SPI_OK_UPDATE);
	run_cancel_live_tasks(run_id);
	schedq_metrics_count(METRIC_RUNS_FINISHED, 1);
	return true;
}

/*
 * Finish a run if no live task of it is left.  The run row is locked.
 */
static void
run_finish_if_done(Datum run_id)
{
	if (schedq_plan_run(&q_any_live, &run_id, NULL, 1, SPI_OK_SELECT) > 0)
		return;
	if (schedq_plan_run(&q_finish, &run_id, NULL, 0, SPI_OK_UPDATE) > 0)
		schedq_metrics_count(METRIC_RUNS_FINISHED, 1);
}

/*
 * A task of run run_id ended with the given status (the status trigger,
 * store/triggers.c, calls this inside its SPI connection).  See the file header.
 */
void
schedq_task_runs_ended(Datum run_id, Datum task_id, SchedqTaskStatus status)
{
	char *policy;

	if (schedq_plan_run(&q_lock_run, &run_id, NULL, 0, SPI_OK_SELECT) == 0 ||
		strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
			   "running") != 0)
		return;
	policy = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

	if (status != TASK_DONE)
		schedq_plan_run(&q_mark_failure, &run_id, NULL, 0, SPI_OK_UPDATE);
	if (status == TASK_FAILED || status == TASK_CANCELED)
	{
		if (strcmp(policy, "halt") == 0)
			run_cancel_live_tasks(run_id);
		else
		{
			Datum values[3] = { run_id, task_id,
								CStringGetTextDatum(status == TASK_FAILED ?
														"failed" :
														"was canceled") };

			/* the transitive dependents, through the GIN index */
			schedq_plan_run(&q_skip, values, NULL, 0, SPI_OK_UPDATE);
		}
	}
	run_finish_if_done(run_id);
}

/*
 * The reaper's sweep: finish runs left running whose tasks have all
 * ended.  Returns how many.
 */
int
schedq_task_runs_reap(void)
{
	int n;

	n = schedq_plan_run(&q_orphans, NULL, NULL, 0, SPI_OK_UPDATE);
	schedq_metrics_count(METRIC_ORPHAN_RUNS_REAPED, n);
	schedq_metrics_count(METRIC_RUNS_FINISHED, n);
	return n;
}

/*-------------------------------------------------------------------------
 * store/task_ticks.c
 *	  The statement that fires periodic ticks: a task for each due tick
 *	  of schedq.periodic, in one statement with the schedules' moves.
 *
 * A schedule's state is its row in schedq.periodic: next_run is the tick
 * to fire next.  The statement locks the due rows (SKIP LOCKED), submits
 * a task for each whose last task is finished, counts a skip for each
 * whose last task is still live (a periodic task never overlaps itself),
 * and moves next_run to the first tick after max(the tick, now) -- so
 * ticks missed while the server was down fire once, not once each.  The
 * task and the new next_run commit together, guarded by the row lock, so
 * a tick fires at most once whatever crashes, restarts or failovers
 * happen.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "shared/plan.h"
#include "shared/wake.h"
#include "store/task.h"
#include "store/task_ticks.h"

#define PERIODIC_BATCH_SQL CppAsString2(TASK_TICKS_BATCH)

/*
 * Fire the due ticks at $1: of every due schedule when $2 is NULL, or of
 * that one.  No join in here: each step reads the due rows themselves (or
 * their ctids), so the plan stays linear in the due schedules whatever
 * the statistics say -- a schedule table analysed while empty must not
 * turn a thousand ticks into a million comparisons.  A tick's task takes
 * the id its schedule drew in advance (next_task_id), so the INSERT needs
 * nothing from the UPDATE and each task is inserted as soon as its
 * schedule row is locked; the schedules move on after.
 */
static SchedqQuery q_fire = SCHEDQ_QUERY(
	"WITH due AS ("
	"  SELECT p.ctid AS row, p.*, EXISTS (SELECT FROM schedq.task t"
	"    WHERE t.id = p.last_task_id AND t.status IN " TASK_LIVE_SQL ") AS busy"
	"  FROM schedq.periodic p"
	"  WHERE p.enabled AND p.next_run <= $1"
	"    AND ($2::text IS NULL OR p.name = $2)"
	"  ORDER BY p.next_run LIMIT " PERIODIC_BATCH_SQL
	"  FOR UPDATE SKIP LOCKED),"
	" ins AS ("
	"  INSERT INTO schedq.task (id, kind, payload, queue, priority, status,"
	"    run_at, max_attempts, timeout, lock_key, concurrency_key,"
	"    required_caps, budgets, cost, owner, periodic, created_at)"
	"  SELECT d.next_task_id, d.kind, d.payload, d.queue, d.priority,"
	"    CASE WHEN" TASK_NO_KEYS_SQL "THEN 'available' ELSE 'pending' END,"
	"    d.next_run, d.max_attempts, d.timeout, d.lock_key,"
	"    d.concurrency_key, d.required_caps, d.budgets, d.cost, d.owner,"
	"    d.name, clock_timestamp()"
	"  FROM due d WHERE NOT d.busy"
	"  RETURNING status," TASK_AVAILABLE_COLUMNS "),"
	" fired AS ("
	"  UPDATE schedq.periodic p SET last_task_id = p.next_task_id,"
	"    next_task_id = nextval('schedq.task_id_seq'),"
	"    last_run = p.next_run, fired = p.fired + 1, last_error = NULL,"
	"    next_run = schedq._next_run(p.schedule, p.timezone,"
	"                                greatest(p.next_run, $1))"
	"  WHERE p.ctid = ANY (ARRAY(SELECT d.row FROM due d WHERE NOT d.busy))),"
	" skipped AS ("
	"  UPDATE schedq.periodic p SET skipped = p.skipped + 1,"
	"    next_run = schedq._next_run(p.schedule, p.timezone,"
	"                                greatest(p.next_run, $1))"
	"  WHERE p.ctid = ANY (ARRAY(SELECT d.row FROM due d WHERE d.busy))"
	"  RETURNING p.name)"
	" SELECT false, ins.* FROM ins"
	" UNION ALL SELECT true, NULL, NULL, NULL, NULL, NULL, NULL FROM skipped",
	TIMESTAMPTZOID, TEXTOID);
/*
 * Fire the due ticks at `now`: of every due schedule when name is 0, or of
 * that one.  Returns the number of rows the statement returned and adds
 * to *fired and *skipped.
 */
int
schedq_task_ticks_fire(TimestampTz now, Datum name, int *fired, int *skipped)
{
	Datum values[2] = { TimestampTzGetDatum(now), name };
	char  nulls[2] = { ' ', name == (Datum) 0 ? 'n' : ' ' };
	int	  n;

	n = schedq_plan_run(&q_fire, values, nulls, 0, SPI_OK_SELECT);

	for (int i = 0; i < n; i++)
	{
		HeapTuple tuple = SPI_tuptable->vals[i];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool	  isnull;

		if (DatumGetBool(SPI_getbinval(tuple, desc, 1, &isnull)))
		{
			(*skipped)++;
			continue;
		}
		(*fired)++;
		if (schedq_task_status(SPI_getvalue(tuple, desc, 2)) == TASK_AVAILABLE)
			schedq_task_row_available_at_commit(tuple, desc, 3);
		else
			schedq_wake_scheduler_at_commit();
	}
	return n;
}

static SchedqQuery q_live_last =
	SCHEDQ_QUERY("SELECT t.id, t.status::text FROM schedq.periodic p"
				 " JOIN schedq.task t ON t.id = p.last_task_id"
				 " WHERE p.name = $1 AND t.status IN " TASK_LIVE_SQL,
				 TEXTOID);

/*
 * The task of a schedule's last tick when it is still live (pending,
 * available or running): its status, and its id in *id; else NULL.  The
 * caller holds the schedule's row lock, which the periodic pass takes
 * too, so no tick fires in between.
 */
const char *
schedq_task_ticks_live_last(Datum name, int64 *id)
{
	HeapTuple tuple;
	TupleDesc desc;
	bool	  isnull;

	if (schedq_plan_run(&q_live_last, &name, NULL, 0, SPI_OK_SELECT) == 0)
		return NULL;
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	*id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	return SPI_getvalue(tuple, desc, 2);
}

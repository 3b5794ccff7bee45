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
 *
 * On a distributed schedq (Citus) that one statement, which reads the
 * reference table schedq.periodic and writes the distributed schedq.task,
 * has no distributed plan.  There the coordinator's scheduler fires each
 * due schedule on its own, with statements Citus can route: the
 * schedule's row locked, its last task's status read by id from every
 * shard, the tick's task inserted into its queue's shard, and the row
 * moved on with values computed before the UPDATE.  The same promises
 * hold: the row lock guards the tick, and the task and the schedule's
 * move commit together (Citus commits every node the transaction wrote
 * on, in two phases).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
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

/*
 * A due schedule's row, locked, on a cluster: $1 its name, $2 the clock.
 * Its next tick after this one is computed here (the UPDATE that moves it
 * sets plain values).
 */
static SchedqQuery q_cluster_due = SCHEDQ_QUERY(
	"SELECT next_task_id, kind, payload, queue, priority, max_attempts,"
	"  timeout, lock_key, concurrency_key, required_caps, budgets, cost,"
	"  owner::oid, next_run, last_task_id, fired, skipped,"
	"  schedq._next_run(schedule, timezone, greatest(next_run, $2))"
	" FROM schedq.periodic WHERE name = $1 AND enabled AND next_run <= $2"
	" FOR UPDATE SKIP LOCKED",
	TEXTOID, TIMESTAMPTZOID);
/* The tick's task, in its queue's shard: $1 to $14 q_cluster_due's first
 * fourteen columns (the owner by name: OIDs differ from node to node), $15
 * its status, $16 the schedule's name, $17 the clock. */
static SchedqQuery q_cluster_insert = SCHEDQ_QUERY(
	"INSERT INTO schedq.task (id, kind, payload, queue, priority,"
	"  max_attempts, timeout, lock_key, concurrency_key, required_caps,"
	"  budgets, cost, owner, run_at, status, periodic, created_at)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,"
	"  $13::regrole, $14, $15, $16, $17)",
	INT8OID, TEXTOID, JSONBOID, TEXTOID, INT4OID, INT4OID, INTERVALOID, TEXTOID,
	TEXTOID, TEXTARRAYOID, TEXTARRAYOID, NUMERICOID, TEXTOID, TIMESTAMPTZOID,
	TEXTOID, TEXTOID, TIMESTAMPTZOID);
/* $1 name, $2 the task's id, $3 the next tick's, $4 this tick, $5 fired,
 * $6 the next tick */
static SchedqQuery q_cluster_fired = SCHEDQ_QUERY(
	"UPDATE schedq.periodic SET last_task_id = $2, next_task_id = $3,"
	"  last_run = $4, fired = $5, last_error = NULL, next_run = $6"
	" WHERE name = $1",
	TEXTOID, INT8OID, INT8OID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID);
/* $1 name, $2 skipped, $3 the next tick */
static SchedqQuery q_cluster_skipped =
	SCHEDQ_QUERY("UPDATE schedq.periodic SET skipped = $2, next_run = $3"
				 " WHERE name = $1",
				 TEXTOID, INT8OID, TIMESTAMPTZOID);
static SchedqQuery q_next_id =
	SCHEDQ_QUERY0("SELECT nextval('schedq.task_id_seq')");

/*
 * The status of task `id` on a cluster, read from every shard, when it is
 * live (pending, available or running); else NULL.
 */
static char *
ticks_cluster_live(int64 id)
{
	char *sql =
		psprintf("SELECT status FROM schedq.task WHERE id = " INT64_FORMAT
				 " AND status IN " TASK_LIVE_SQL,
				 id);

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the status of task " INT64_FORMAT, id);
	pfree(sql);
	return SPI_processed == 0 ?
			   NULL :
			   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * Fire schedule `name`'s tick due at `now` on a cluster (see the top of
 * the file), if it is due and no one else holds its row; adds to *fired or
 * *skipped.
 */
void
schedq_task_ticks_fire_cluster(TimestampTz now, Datum name, int *fired,
							   int *skipped)
{
	Datum	  due_args[2] = { name, TimestampTzGetDatum(now) };
	Datum	  row[17];
	char	  nulls[17];
	Datum	  moved[6];
	char	  moved_nulls[6] = { ' ', ' ', ' ', ' ', ' ', ' ' };
	TupleDesc desc;
	HeapTuple tuple;
	bool	  isnull;
	bool	  has_last;
	Datum	  last_task;
	char	 *owner;

	if (schedq_plan_run(&q_cluster_due, due_args, NULL, 0, SPI_OK_SELECT) == 0)
		return;
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	for (int i = 0; i < 14; i++)
	{
		row[i] = SPI_getbinval(tuple, desc, i + 1, &isnull);
		nulls[i] = isnull ? 'n' : ' ';
	}
	owner = GetUserNameFromId(DatumGetObjectId(row[12]), true);
	if (owner == NULL)
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("the owner of periodic task \"%s\" no longer exists",
					   TextDatumGetCString(name)));
	row[12] = CStringGetTextDatum(quote_identifier(owner));
	last_task = SPI_getbinval(tuple, desc, 15, &isnull);
	has_last = !isnull;

	/* the next tick: NULL when the schedule fires no more */
	moved[5] = SPI_getbinval(tuple, desc, 18, &isnull);
	moved_nulls[5] = isnull ? 'n' : ' ';
	moved[0] = name;

	if (has_last && ticks_cluster_live(DatumGetInt64(last_task)) != NULL)
	{
		/* its last task is still live: a periodic task never overlaps */
		moved[1] = Int64GetDatum(
			DatumGetInt64(SPI_getbinval(tuple, desc, 17, &isnull)) + 1);
		moved[2] = moved[5];
		moved_nulls[2] = moved_nulls[5];
		schedq_plan_run(&q_cluster_skipped, moved, moved_nulls, 0,
						SPI_OK_UPDATE);
		(*skipped)++;
		return;
	}
	moved[1] = row[0];	/* the task's id, drawn in advance */
	moved[3] = row[13]; /* this tick */
	moved[4] = Int64GetDatum(
		DatumGetInt64(SPI_getbinval(tuple, desc, 16, &isnull)) + 1);

	/* the tick's task: available unless a lock or concurrency key gates it */
	row[14] = CStringGetTextDatum(
		nulls[7] == 'n' && nulls[8] == 'n' ? "available" : "pending");
	row[15] = name;
	row[16] = TimestampTzGetDatum(GetCurrentTimestamp());
	nulls[14] = nulls[15] = nulls[16] = ' ';

	/* the id of the next tick's task */
	schedq_plan_run(&q_next_id, NULL, NULL, 0, SPI_OK_SELECT);
	moved[2] =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

	schedq_plan_run(&q_cluster_insert, row, nulls, 0, SPI_OK_INSERT);
	schedq_plan_run(&q_cluster_fired, moved, moved_nulls, 0, SPI_OK_UPDATE);
	(*fired)++;
}

static SchedqQuery q_last_id =
	SCHEDQ_QUERY("SELECT last_task_id FROM schedq.periodic WHERE name = $1",
				 TEXTOID);
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

	if (schedq_task_distributed())
	{
		Datum last;

		/* one table a statement: the schedule's row, then its task */
		if (schedq_plan_run(&q_last_id, &name, NULL, 0, SPI_OK_SELECT) == 0)
			return NULL;
		last = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
							 &isnull);
		if (isnull)
			return NULL;
		*id = DatumGetInt64(last);
		return ticks_cluster_live(*id);
	}
	if (schedq_plan_run(&q_live_last, &name, NULL, 0, SPI_OK_SELECT) == 0)
		return NULL;
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	*id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	return SPI_getvalue(tuple, desc, 2);
}

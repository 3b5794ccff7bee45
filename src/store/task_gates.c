/*-------------------------------------------------------------------------
 * store/task_gates.c
 *	  The statements of the promotion pass (pass/promote.c): gate events,
 *	  what they free, the due tasks, promoting and parking.
 *
 * Gates: run_at has come; every dependency is done; for a lock_key, the
 * task is first in key order (version, then id, tasks without a version
 * last) among the live tasks of its key and no task of the key is
 * available or running; for a concurrency_key with a limit, fewer than the
 * limit are available or running.  The pass judges; this file reads and
 * writes the rows: nothing here scans every pending task (see
 * docs/internals/promotion.md).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "shared/plan.h"
#include "store/task.h"
#include "store/task_gates.h"

#define PROMOTE_BATCH_SQL CppAsString2(TASK_GATES_BATCH)

/* The first live task of lock key `key` in key order: the key's head. */
#define LOCK_HEAD_SQL(key)                                                     \
	"(SELECT h.id FROM schedq.task h WHERE h.lock_key = " key                  \
	" AND h.status IN " TASK_LIVE_SQL " ORDER BY h.version, h.id LIMIT 1)"
/* Whether a task of lock key `key` is active (task_lock_active_idx). */
#define LOCK_HELD_SQL(key)                                                     \
	"EXISTS (SELECT FROM schedq.task a WHERE a.lock_key = " key                \
	" AND a.status IN " TASK_ACTIVE_SQL ")"
/* A lock key's state: its head, and whether it is held. */
#define LOCK_STATE_SQL(key) LOCK_HEAD_SQL(key) ", " LOCK_HELD_SQL(key)

static SchedqQuery q_events = SCHEDQ_QUERY0(
	"WITH e AS (DELETE FROM schedq.gate_event"
	"           RETURNING lock_key, concurrency_key, task_id)"
	" SELECT array_agg(DISTINCT lock_key) FILTER (WHERE lock_key IS NOT NULL),"
	"        array_agg(DISTINCT concurrency_key)"
	"          FILTER (WHERE concurrency_key IS NOT NULL),"
	"        array_agg(task_id) FILTER (WHERE task_id IS NOT NULL)"
	" FROM e");
/*
 * What the gate events free, to be judged now: the head of each lock key
 * ($1), and for each concurrency key ($2) as many of its parked tasks, in
 * claim order, as it has free slots -- its limit (none: a batch) less what
 * is active; at most a batch per key and pass (`waiter_of` names the key:
 * a key that filled a batch gets another event, so the rest follows next
 * pass).  Parked pending tasks only, locked, in the order the pass judges
 * them; a task that is both comes twice, side by side, as a waiter first
 * (the second row is skipped when a batch before changed the task).  With
 * each, the state of its lock key and, when $2 names it, of its
 * concurrency key.
 */
static SchedqQuery q_freed = SCHEDQ_QUERY(
	"WITH state AS MATERIALIZED ("
	"  SELECT c, (SELECT l.max_active"
	"             FROM schedq.concurrency_limit l WHERE l.key = c) AS max_active,"
	"     (SELECT count(*) FROM schedq.task a WHERE a.concurrency_key = c"
	"        AND a.status IN " TASK_ACTIVE_SQL ") AS active"
	"  FROM unnest($2::text[]) c),"
	" freed AS MATERIALIZED ("
	"  SELECT " LOCK_HEAD_SQL(
		"k") " AS id, NULL::text AS waiter_of"
			 "  FROM unnest($1::text[]) k"
			 "  UNION ALL"
			 "  SELECT x.id, s.c FROM state s, LATERAL ("
			 "    SELECT t.id FROM schedq.task t"
			 "    WHERE t.concurrency_key = s.c AND t.status = 'pending'"
			 "      AND t.parked AND t.parked_on = 'limit'"
			 "    ORDER BY t.priority DESC, t.run_at, t.id"
			 "    LIMIT least(greatest(COALESCE(s.max_active, " PROMOTE_BATCH_SQL
			 ")"
			 "                         - s.active, 0), " PROMOTE_BATCH_SQL
			 ")) x)"
			 " SELECT t.id, t.lock_key, t.concurrency_key, t.depends_on <> '{}',"
			 "        t.run_at, f.waiter_of,"
			 "        CASE WHEN f.waiter_of IS NULL THEN t.id"
			 "             ELSE " LOCK_HEAD_SQL(
				 "t.lock_key") " END,"
							   "        " LOCK_HELD_SQL(
								   "t.lock_key") ","
												 "        s.max_active, s.active"
												 " FROM freed f JOIN schedq.task t ON t.id = f.id"
												 " LEFT JOIN state s ON s.c = t.concurrency_key"
												 " WHERE t.status = 'pending' AND t.parked"
												 " ORDER BY t.priority DESC, t.run_at, t.id, f.waiter_of"
												 " FOR UPDATE OF t",
	TEXTARRAYOID, TEXTARRAYOID);
static SchedqQuery q_unpark_dependents =
	SCHEDQ_QUERY("UPDATE schedq.task SET parked = false, parked_on = NULL"
				 " WHERE depends_on && $1::bigint[] AND depends_on <> '{}'"
				 " AND status = 'pending' AND parked",
				 INT8ARRAYOID);
static SchedqQuery q_plain =
	SCHEDQ_QUERY("SELECT id FROM schedq.task"
				 " WHERE status = 'pending' AND NOT parked AND run_at <= $1"
				 "   AND" TASK_UNGATED_SQL
				 " ORDER BY run_at, id LIMIT " PROMOTE_BATCH_SQL
				 " FOR UPDATE SKIP LOCKED",
				 TIMESTAMPTZOID);
static SchedqQuery q_gated = SCHEDQ_QUERY(
	"SELECT id, lock_key, concurrency_key, depends_on <> '{}', run_at,"
	"       NULL::text, " LOCK_STATE_SQL(
		"t.lock_key") ","
					  "       NULL::integer, NULL::bigint FROM ("
					  "  SELECT * FROM schedq.task"
					  "  WHERE status = 'pending' AND NOT parked AND run_at <= $1"
					  "    AND" TASK_GATED_SQL
					  "  ORDER BY run_at, id LIMIT " PROMOTE_BATCH_SQL
					  "  FOR UPDATE SKIP LOCKED) t"
					  " ORDER BY t.priority DESC, t.run_at, t.id",
	TIMESTAMPTZOID);
static SchedqQuery q_concurrency_state = SCHEDQ_QUERY(
	"SELECT (SELECT max_active FROM schedq.concurrency_limit WHERE key = $1),"
	"       (SELECT count(*) FROM schedq.task WHERE concurrency_key = $1"
	"          AND status IN " TASK_ACTIVE_SQL ")",
	TEXTOID);
static SchedqQuery q_deps =
	SCHEDQ_QUERY("SELECT FROM schedq.task t, unnest(t.depends_on) d"
				 " JOIN schedq.task x ON x.id = d"
				 " WHERE t.id = $1 AND x.status <> 'done' LIMIT 1",
				 INT8OID);
static SchedqQuery q_promote =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'available', parked = false, parked_on = NULL"
				 " WHERE id = ANY ($1) AND status = 'pending'"
				 " RETURNING" TASK_AVAILABLE_COLUMNS,
				 INT8ARRAYOID);
/* A task the pass could not promote: parked until the scheduler restarts. */
static SchedqQuery q_set_aside =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET parked = true, parked_on = 'error', last_error = $2"
				 " WHERE id = $1 AND status = 'pending'",
				 INT8OID, TEXTOID);
static SchedqQuery q_park = SCHEDQ_QUERY(
	"UPDATE schedq.task t SET parked = true, parked_on = p.reason"
	" FROM unnest($1::bigint[], $2::text[]) p(id, reason)"
	" WHERE t.id = p.id AND t.status = 'pending'"
	"   AND (NOT t.parked OR t.parked_on IS DISTINCT FROM p.reason)",
	INT8ARRAYOID, TEXTARRAYOID);
static SchedqQuery q_unpark =
	SCHEDQ_QUERY("UPDATE schedq.task SET parked = false, parked_on = NULL"
				 " WHERE id = ANY ($1) AND status = 'pending' AND parked",
				 INT8ARRAYOID);
static SchedqQuery q_unpark_all = SCHEDQ_QUERY0(
	"UPDATE schedq.task SET parked = false, parked_on = NULL WHERE parked");
/* The same without waiting for a locked row: did it unpark them all? */
static SchedqQuery q_unpark_unlocked = SCHEDQ_QUERY0(
	"WITH u AS (UPDATE schedq.task SET parked = false, parked_on = NULL"
	"           WHERE id IN (SELECT id FROM schedq.task WHERE parked"
	"                        FOR UPDATE SKIP LOCKED)"
	"           RETURNING 1)"
	" SELECT (SELECT count(*) FROM u)"
	"        = (SELECT count(*) FROM schedq.task WHERE parked)");
static SchedqQuery q_limits_version = SCHEDQ_QUERY0(
	"SELECT coalesce(sum(hashtext(key || ':' || max_active)), 0)::bigint"
	"  FROM schedq.concurrency_limit");
static SchedqQuery q_next_due =
	SCHEDQ_QUERY("SELECT min(run_at) FROM schedq.task"
				 " WHERE status = 'pending' AND NOT parked AND run_at > $1",
				 TIMESTAMPTZOID);

/*
 * Take the gate events, all of them: the lock keys, the concurrency keys
 * and the finished tasks they name, as three arrays (NULL when none) in
 * keys[0], keys[1] and *finished.  False when there were none.
 */
bool
schedq_task_gates_take_events(Datum *keys, char *nulls, Datum *finished,
							  bool *finished_null)
{
	SPITupleTable *events;
	bool		   isnull;
	bool		   any = false;

	if (schedq_plan_run(&q_events, NULL, NULL, 0, SPI_OK_SELECT) == 0)
		return false;
	events = SPI_tuptable;
	for (int i = 0; i < 2; i++)
	{
		keys[i] =
			SPI_getbinval(events->vals[0], events->tupdesc, i + 1, &isnull);
		nulls[i] = isnull ? 'n' : ' ';
		any = any || !isnull;
	}
	*finished =
		SPI_getbinval(events->vals[0], events->tupdesc, 3, finished_null);
	return any || !*finished_null;
}

/*
 * Unpark the parked dependents of these finished tasks (int8[]), for the
 * due step to judge.
 */
void
schedq_task_gates_unpark_dependents(Datum finished)
{
	schedq_plan_run(&q_unpark_dependents, &finished, NULL, 0, SPI_OK_UPDATE);
}

/*
 * A cursor over what the events of these keys free (q_freed), in the
 * order the pass judges them; rows of TASK_GATES_ROW columns.
 */
Portal
schedq_task_gates_freed(Datum *keys, const char *nulls)
{
	return schedq_plan_cursor_open(&q_freed, keys, nulls);
}

/*
 * The due pending tasks no gate can hold, a batch of them, locked;
 * returns how many, their ids in *ids.
 */
int
schedq_task_gates_plain(TimestampTz now, int64 **ids)
{
	Datum value = TimestampTzGetDatum(now);
	int	  n = schedq_plan_run(&q_plain, &value, NULL, 0, SPI_OK_SELECT);

	*ids = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		(*ids)[i] =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1, &isnull));
	}
	return n;
}

/*
 * The due, unparked pending tasks that a gate may hold, a batch of them,
 * locked, in SPI_tuptable as TASK_GATES_ROW rows; returns how many.
 */
int
schedq_task_gates_gated(TimestampTz now)
{
	Datum value = TimestampTzGetDatum(now);

	return schedq_plan_run(&q_gated, &value, NULL, 0, SPI_OK_SELECT);
}

/*
 * A concurrency key's limit (-1: none) and how many of its tasks are
 * available or running.
 */
void
schedq_task_gates_concurrency(const char *key, int32 *limit, int64 *active)
{
	Datum value = CStringGetTextDatum(key);
	bool  isnull;
	Datum d;

	schedq_plan_run(&q_concurrency_state, &value, NULL, 0, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	*limit = isnull ? -1 : DatumGetInt32(d);
	*active = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 2, &isnull));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Are all of a task's dependencies done?  (A dependency deleted by
 * retention was done.)  The answer's tuple table is freed at once: a step
 * may ask this for every one of thousands of rows, and each table is a
 * memory context of its own until SPI_finish.
 */
bool
schedq_task_gates_deps_done(int64 id)
{
	Datum value = Int64GetDatum(id);
	bool  done = schedq_plan_run(&q_deps, &value, NULL, 1, SPI_OK_SELECT) == 0;

	SPI_freetuptable(SPI_tuptable);
	return done;
}

/*
 * Make these pending tasks available, arranging their wake-ups; lowers
 * *oldest to the earliest run_at promoted.  Returns how many.
 */
int
schedq_task_gates_promote(int64 *ids, int n, TimestampTz *oldest)
{
	Datum array =
		PointerGetDatum(construct_array((Datum *) ids, n, INT8OID, 8,
										FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	int done;

	done =
		schedq_plan_run(&q_promote, &array, NULL, 0, SPI_OK_UPDATE_RETURNING);
	for (int i = 0; i < done; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		bool		isnull;
		TimestampTz run_at = DatumGetTimestampTz(
			SPI_getbinval(tuple, SPI_tuptable->tupdesc, 4, &isnull));

		schedq_task_row_available_at_commit(tuple, SPI_tuptable->tupdesc, 1);
		if (run_at < *oldest)
			*oldest = run_at;
	}
	return done;
}

/* A task the pass could not promote: parked until the scheduler restarts. */
void
schedq_task_gates_set_aside(int64 id, const char *error)
{
	Datum values[2] = { Int64GetDatum(id), CStringGetTextDatum(error) };

	schedq_plan_run(&q_set_aside, values, NULL, 0, SPI_OK_UPDATE);
}

/* Park these pending tasks (int8 Datums) behind these gates (text). */
void
schedq_task_gates_park(Datum *ids, Datum *reasons, int n)
{
	Datum args[2];

	args[0] = PointerGetDatum(
		construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[1] = PointerGetDatum(
		construct_array(reasons, n, TEXTOID, -1, false, TYPALIGN_INT));
	schedq_plan_run(&q_park, args, NULL, 0, SPI_OK_UPDATE);
}

/* Unpark these pending tasks (int8 Datums): not yet due. */
void
schedq_task_gates_unpark(Datum *ids, int n)
{
	Datum array = PointerGetDatum(
		construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

	schedq_plan_run(&q_unpark, &array, NULL, 0, SPI_OK_UPDATE);
}

/*
 * The earliest run_at after `now` of a pending, unparked task, or
 * DT_NOEND.  Tasks already due but not promoted (locked by someone, or
 * waiting for dependencies) are not counted: they would make the
 * scheduler spin.
 */
TimestampTz
schedq_task_gates_next_due(TimestampTz now)
{
	Datum value = TimestampTzGetDatum(now);
	bool  isnull;
	Datum next;

	schedq_plan_run(&q_next_due, &value, NULL, 0, SPI_OK_SELECT);
	next =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? DT_NOEND : DatumGetTimestampTz(next);
}

/*
 * Unpark every parked task: the scheduler does this when it starts,
 * since gate events are unlogged and a crash may have lost some.
 */
void
schedq_task_gates_unpark_all(void)
{
	schedq_plan_run(&q_unpark_all, NULL, NULL, 0, SPI_OK_UPDATE);
}

/*
 * Unpark every parked task that no one else has locked; true when none
 * was left parked.  The scheduler of a Citus node does this for a shard it
 * enters the first time (pass/shards.c), where a row a client keeps
 * locked must not stop the node's passes.
 */
bool
schedq_task_gates_unpark_unlocked(void)
{
	bool isnull;

	schedq_plan_run(&q_unpark_unlocked, NULL, NULL, 0, SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * A value that changes with the concurrency limits (their keys and
 * maxima), to notice a change made on another node of a cluster.
 */
int64
schedq_task_gates_limits_version(void)
{
	bool isnull;

	schedq_plan_run(&q_limits_version, NULL, NULL, 0, SPI_OK_SELECT);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

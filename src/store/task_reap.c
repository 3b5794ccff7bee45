/*-------------------------------------------------------------------------
 * store/task_reap.c
 *	  The statements of the reaper (pass/reaper.c): expired attempts,
 *	  their leases extended or their rows set aside, and the finished
 *	  tasks retention deletes.
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
#include "store/task_reap.h"

#define REAP_BATCH_SQL		CppAsString2(TASK_REAP_BATCH)
#define RETENTION_BATCH_SQL CppAsString2(TASK_RETENTION_BATCH)

static SchedqQuery q_expired =
	SCHEDQ_QUERY("SELECT id, attempts, deadline <= $1 FROM schedq.task"
				 " WHERE status = 'running' AND lease_expires_at < $1"
				 " ORDER BY lease_expires_at LIMIT " REAP_BATCH_SQL
				 " FOR UPDATE SKIP LOCKED",
				 TIMESTAMPTZOID);
static SchedqQuery q_extend = SCHEDQ_QUERY(
	"UPDATE schedq.task SET lease_expires_at = least($3 + lease, deadline)"
	" WHERE id = $1 AND attempts = $2 AND status = 'running'",
	INT8OID, INT4OID, TIMESTAMPTZOID);
/*
 * $2: one finished status; each has its retention (task_finished_idx).
 * The plan is generic, and status = $2 alone does not prove the index's
 * predicate: without the list of finished statuses the plan read the
 * whole table, every pass, for each status.
 */
static SchedqQuery q_retention =
	SCHEDQ_QUERY("SELECT id FROM schedq.task"
				 " WHERE status = $2 AND status IN " TASK_FINISHED_SQL
				 "   AND finished_at < $1"
				 " ORDER BY finished_at LIMIT " RETENTION_BATCH_SQL
				 " FOR UPDATE SKIP LOCKED",
				 TIMESTAMPTZOID, TEXTOID);
static SchedqQuery q_delete =
	SCHEDQ_QUERY("DELETE FROM schedq.task WHERE id = ANY ($1)", INT8ARRAYOID);
/* A task the reaper could not take back: looked at again in an hour. */
static SchedqQuery q_postpone_expired =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET lease_expires_at = now() + interval '1 hour',"
				 "     last_error = $2"
				 " WHERE id = $1 AND status = 'running'",
				 INT8OID, TEXTOID);
/* A task retention could not delete: kept one more retention period. */
static SchedqQuery q_postpone_retention =
	SCHEDQ_QUERY("UPDATE schedq.task SET finished_at = now(), last_error = $2"
				 " WHERE id = $1",
				 INT8OID, TEXTOID);

/*
 * The expired attempts at `now`, a batch of them, locked (SKIP LOCKED):
 * their task ids, attempts, and whether each is past its deadline (timed
 * out) rather than its lease.  Returns how many.
 */
int
schedq_task_reap_expired(TimestampTz now, int64 **ids, int32 **attempts,
						 bool **timed_out)
{
	Datum value = TimestampTzGetDatum(now);
	int	  n = schedq_plan_run(&q_expired, &value, NULL, 0, SPI_OK_SELECT);

	*ids = palloc(sizeof(int64) * Max(n, 1));
	*attempts = palloc(sizeof(int32) * Max(n, 1));
	*timed_out = palloc(sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple tuple = SPI_tuptable->vals[i];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool	  isnull;

		(*ids)[i] = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		(*attempts)[i] = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
		(*timed_out)[i] =
			DatumGetBool(SPI_getbinval(tuple, desc, 3, &isnull)) && !isnull;
	}
	return n;
}

/* A live SQL executor still runs this attempt: extend its lease. */
void
schedq_task_reap_extend(int64 id, int32 attempt, TimestampTz now)
{
	Datum args[3] = { Int64GetDatum(id), Int32GetDatum(attempt),
					  TimestampTzGetDatum(now) };

	schedq_plan_run(&q_extend, args, NULL, 0, SPI_OK_UPDATE);
}

/* A task the reaper could not take back: looked at again in an hour. */
void
schedq_task_reap_postpone(int64 id, const char *error)
{
	Datum values[2] = { Int64GetDatum(id), CStringGetTextDatum(error) };

	schedq_plan_run(&q_postpone_expired, values, NULL, 0, SPI_OK_UPDATE);
}

/*
 * The tasks of a finished status that finished before `before`, a batch
 * of them, locked (SKIP LOCKED); their ids in *ids.  Returns how many.
 */
int
schedq_task_reap_finished(SchedqTaskStatus status, TimestampTz before,
						  int64 **ids)
{
	Datum values[2] = { TimestampTzGetDatum(before),
						CStringGetTextDatum(schedq_task_status_names[status]) };
	int	  n = schedq_plan_run(&q_retention, values, NULL, 0, SPI_OK_SELECT);

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

/* Delete these finished tasks; returns how many. */
int
schedq_task_reap_delete(int64 *ids, int n)
{
	Datum array =
		PointerGetDatum(construct_array((Datum *) ids, n, INT8OID, 8,
										FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

	return schedq_plan_run(&q_delete, &array, NULL, 0, SPI_OK_DELETE);
}

/* A task retention could not delete: kept one more retention period. */
void
schedq_task_reap_keep(int64 id, const char *error)
{
	Datum values[2] = { Int64GetDatum(id), CStringGetTextDatum(error) };

	schedq_plan_run(&q_postpone_retention, values, NULL, 0, SPI_OK_UPDATE);
}

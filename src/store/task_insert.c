/*-------------------------------------------------------------------------
 * store/task_insert.c
 *	  The insert of a task: its references checked, its status and
 *	  wake-up, the INSERT statement and its direct twin.
 *
 * A task with no gating constraint (no future run_at, no depends_on, no
 * lock_key, no concurrency_key) is inserted 'available' directly, as
 * promotion would have made it; any other starts 'pending' and is left to
 * the scheduler's promotion loop.
 *
 * dedup_key: the unique partial index task_dedup_idx holds at most one
 * live task per owner and key; INSERT ... ON CONFLICT DO NOTHING waits for
 * a concurrent inserter of the same key to finish, so concurrent submits
 * of one role with one key create one task and all return its id.  Keys
 * are per owner, so another role's key never conflicts and never shows;
 * on a schedq.task that Citus distributes, per owner and queue.
 * Such an insert always takes the statement; every other goes without the
 * executor where the table lets it (store/direct.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "shared/wake.h"
#include "store/direct_int.h"
#include "store/task.h"
#include "store/task_insert.h"

static SchedqQuery q_check_run = SCHEDQ_QUERY(
	"SELECT status, owner::oid FROM schedq.run WHERE id = $1 FOR SHARE",
	INT8OID);
static SchedqQuery q_run_has_tasks =
	SCHEDQ_QUERY("UPDATE schedq.run SET has_tasks = true"
				 " WHERE id = $1 AND NOT has_tasks",
				 INT8OID);
/*
 * The first dependency that does not exist for the caller ($3 admin, $4
 * caller: another role's task is not there for it, exactly as a missing
 * one), or is not in the task's run ($2).
 */
#define DEP_INVISIBLE                                                          \
	" (t.id IS NULL OR NOT ($3 OR pg_has_role($4, t.owner::oid, 'USAGE')))"
static SchedqQuery q_check_deps =
	SCHEDQ_QUERY("SELECT d," DEP_INVISIBLE " FROM unnest($1) d"
				 " LEFT JOIN schedq.task t ON t.id = d"
				 " WHERE" DEP_INVISIBLE " OR t.run_id IS DISTINCT FROM $2"
				 " LIMIT 1",
				 INT8ARRAYOID, INT8OID, BOOLOID, OIDOID);
static SchedqQuery q_mark_deps =
	SCHEDQ_QUERY("UPDATE schedq.task SET has_dependents = true"
				 " WHERE id = ANY ($1) AND NOT has_dependents",
				 INT8ARRAYOID);

/* The options (TASK_OPTIONS), then $17 status and $18 owner. */
#define TASK_INSERT                                                            \
	"INSERT INTO schedq.task (" TASK_OPTION_COLUMNS_SQL "status, owner)"       \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"    \
	" $15, $16, $17, $18::regrole)"
StaticAssertDecl(TASK_NUM_OPTIONS == 16, "TASK_INSERT names 16 options");
#define TASK_INSERT_TYPES                                                      \
	TEXTOID, JSONBOID, TEXTOID, INT4OID, TIMESTAMPTZOID, INT4OID, INTERVALOID, \
		TEXTOID, INT8OID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, NUMERICOID,     \
		INT8OID, INT8ARRAYOID, TEXTOID, TEXTOID, OIDOID

static SchedqQuery q_insert =
	SCHEDQ_QUERY(TASK_INSERT " RETURNING id", TASK_INSERT_TYPES);
static SchedqQuery q_insert_dedup =
	SCHEDQ_QUERY(TASK_INSERT " ON CONFLICT (owner, dedup_key)"
							 " WHERE dedup_key IS NOT NULL"
							 " AND status IN " TASK_LIVE_SQL
							 " DO NOTHING RETURNING id",
				 TASK_INSERT_TYPES);
static SchedqQuery q_find_dedup =
	SCHEDQ_QUERY("SELECT id FROM schedq.task"
				 " WHERE owner = $2::regrole AND dedup_key = $1"
				 "   AND status IN " TASK_LIVE_SQL,
				 TEXTOID, OIDOID);
/*
 * The same on a schedq.task that Citus distributes by queue: its dedup
 * index is (owner, dedup_key, queue) (schedq.distribute), so keys are
 * unique per owner and queue, and each statement names the queue, so
 * that it goes to the queue's shard.
 */
static SchedqQuery q_insert_dedup_citus =
	SCHEDQ_QUERY(TASK_INSERT " ON CONFLICT (owner, dedup_key, queue)"
							 " WHERE dedup_key IS NOT NULL"
							 " AND status IN " TASK_LIVE_SQL
							 " DO NOTHING RETURNING id",
				 TASK_INSERT_TYPES);
/*
 * The owner by name ($4), cast on the shard's node: Citus sends the
 * INSERT's owner there as a role name, which that node turns into its own
 * OID of the role, and a role's OIDs differ from node to node.
 */
static SchedqQuery q_find_dedup_citus =
	SCHEDQ_QUERY("SELECT id FROM schedq.task"
				 " WHERE queue = $3 AND owner = $4::regrole AND dedup_key = $1"
				 "   AND status IN " TASK_LIVE_SQL,
				 TEXTOID, OIDOID, TEXTOID, TEXTOID);

/*
 * Check the options that refer to other rows: budgets, the run and the
 * dependencies.  Locks the run row (FOR SHARE) so it cannot finish before
 * this task is in it.
 */
static void
insert_check_references(SchedqCall *call, SchedqTaskOptions *opts)
{
	ArrayType *deps = DatumGetArrayTypeP(opts->v[OPT_DEPENDS_ON]);
	bool	   isnull;

	schedq_task_check_budgets(opts->v[OPT_BUDGETS]);

	if (!opts->null[OPT_RUN_ID])
	{
		int64 run_id = DatumGetInt64(opts->v[OPT_RUN_ID]);
		char *status;
		Oid	  owner;

		if (schedq_plan_run(&q_check_run, &opts->v[OPT_RUN_ID], NULL, 0,
							SPI_OK_SELECT) == 0)
			ereport(ERROR, errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					errmsg("run " INT64_FORMAT " does not exist", run_id));
		status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		owner =
			DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
		if (!schedq_call_acts_for(call, owner))
			ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied for run " INT64_FORMAT, run_id));
		if (strcmp(status, "running") != 0)
			ereport(ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("run " INT64_FORMAT " is already finished", run_id),
					errdetail("Its status is \"%s\".", status));
		/* the run has a task now: the reaper may finish it once all end */
		schedq_plan_run(&q_run_has_tasks, &opts->v[OPT_RUN_ID], NULL, 0,
						SPI_OK_UPDATE);
	}

	if (ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > 0)
	{
		Datum values[4] = { opts->v[OPT_DEPENDS_ON], opts->v[OPT_RUN_ID],
							BoolGetDatum(call->admin),
							ObjectIdGetDatum(call->caller) };
		char  nulls[4] = { ' ', opts->null[OPT_RUN_ID] ? 'n' : ' ', ' ', ' ' };

		if (schedq_plan_run(&q_check_deps, values, nulls, 0, SPI_OK_SELECT) > 0)
		{
			char *dep =
				SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

			if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull)))
				ereport(ERROR, errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
						errmsg("dependency %s does not exist", dep));
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("dependency %s is not in the same run", dep),
					errdetail(
						"A task may only depend on tasks of its own run."));
		}
		/* so that finishing a dependency frees this task (pass/promote.c) */
		schedq_plan_run(&q_mark_deps, values, NULL, 0, SPI_OK_UPDATE);
	}
}

/*
 * The status a new task with these (checked) options starts in, with its
 * wake-up arranged: 'available' when nothing gates it, as promotion would
 * have made it, else 'pending' for the scheduler.
 */
static const char *
insert_status(const SchedqTaskOptions *opts)
{
	if (schedq_task_options_gated(opts))
	{
		schedq_wake_scheduler_at_commit();
		return schedq_task_status_names[TASK_PENDING];
	}
	schedq_task_available_at_commit(
		TextDatumGetCString(opts->v[OPT_QUEUE]),
		DatumGetArrayTypeP(opts->v[OPT_REQUIRED_CAPS]),
		DatumGetInt32(opts->v[OPT_PRIORITY]),
		DatumGetTimestampTz(opts->v[OPT_RUN_AT]),
		PG_INT64_MIN /* the id is not drawn yet: any bound will do */);
	return schedq_task_status_names[TASK_AVAILABLE];
}

/*
 * The parameters of TASK_INSERT for these options and status.
 */
static void
insert_params(SchedqCall *call, const SchedqTaskOptions *opts,
			  const char *status, Datum *values, char *nulls)
{
	for (int i = 0; i < TASK_NUM_OPTIONS; i++)
	{
		values[i] = opts->v[i];
		nulls[i] = opts->null[i] ? 'n' : ' ';
	}
	values[TASK_NUM_OPTIONS] = CStringGetTextDatum(status);
	nulls[TASK_NUM_OPTIONS] = ' ';
	values[TASK_NUM_OPTIONS + 1] = ObjectIdGetDatum(call->caller);
	nulls[TASK_NUM_OPTIONS + 1] = ' ';
}

/*
 * q_insert's twin: insert n tasks, element i with the checked options
 * *opts[i] and the status statuses[i], owned by owner, as n q_insert
 * statements would, without PostgreSQL's executor; their ids, drawn in order, go
 * to ids[i].  None may have a dedup_key.  False, with nothing done, when
 * the statements must do it.
 */
static bool
insert_direct(const SchedqTaskOptions *const *opts, const char *const *statuses,
			  int n, Oid owner, Datum *ids)
{
#define INSERT_CHUNK 1000
	SchedqDirectWrite	dw;
	SchedqDirectDecline why;
	TupleTableSlot	   *slots[INSERT_CHUNK];
	CommandId			cid;

	if (n == 0)
		return true;
	if (!schedq_direct_begin(&dw, CMD_INSERT, &why))
		return false;
	cid = GetCurrentCommandId(true);
	for (int i = 0; i < Min(n, INSERT_CHUNK); i++)
		slots[i] = i == 0 ? dw.slot : table_slot_create(dw.rel, NULL);

	for (int first = 0; first < n; first += INSERT_CHUNK)
	{
		int k = Min(n - first, INSERT_CHUNK);

		for (int i = 0; i < k; i++)
		{
			const SchedqTaskOptions *o = opts[first + i];
			TupleTableSlot			*slot = slots[i];
			bool					 set[TASK_NUM_COLUMNS] = { false };

			Assert(o->null[OPT_DEDUP_KEY]);
			ExecClearTuple(slot);
			/* every attribute NULL first: dropped ones stay so */
			memset(slot->tts_isnull, true,
				   sizeof(bool) * RelationGetDescr(dw.rel)->natts);
			for (int opt = 0; opt < TASK_NUM_OPTIONS; opt++)
			{
				int a = schedq_direct_att[schedq_task_option_columns[opt]] - 1;

				slot->tts_values[a] = o->v[opt];
				slot->tts_isnull[a] = o->null[opt];
				set[schedq_task_option_columns[opt]] = true;
			}
			slot->tts_values[schedq_direct_att[TASK_COL_STATUS] - 1] =
				CStringGetTextDatum(statuses[first + i]);
			slot->tts_isnull[schedq_direct_att[TASK_COL_STATUS] - 1] = false;
			set[TASK_COL_STATUS] = true;
			slot->tts_values[schedq_direct_att[TASK_COL_OWNER] - 1] =
				ObjectIdGetDatum(owner);
			slot->tts_isnull[schedq_direct_att[TASK_COL_OWNER] - 1] = false;
			set[TASK_COL_OWNER] = true;
			/* the rest as the INSERT has them, the id too */
			schedq_direct_defaults(&dw, slot, set);
			ExecStoreVirtualTuple(slot);
			ids[first + i] =
				slot->tts_values[schedq_direct_att[TASK_COL_ID] - 1];
		}
		if (k == 1)
			table_tuple_insert(dw.rel, slots[0], cid, 0, NULL);
		else
			table_multi_insert(dw.rel, slots, k, cid, 0, NULL);
		for (int i = 0; i < k; i++)
			schedq_direct_index_insert(&dw, slots[i], NULL, SCHEDQ_INDEXES_ALL);
	}
	for (int i = 1; i < Min(n, INSERT_CHUNK); i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	schedq_direct_end(&dw);
	return true;
#undef INSERT_CHUNK
}

/*
 * Insert n tasks without dedup_key (checked options, references checked),
 * in order; their ids go to ids[i].  Directly (store/direct.c), or with one
 * INSERT each where the direct path declines.
 */
void
schedq_task_insert(SchedqCall *call, const SchedqTaskOptions *const *opts,
				   int n, Datum *ids)
{
	const char **statuses = palloc(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		statuses[i] = insert_status(opts[i]);
	if (!insert_direct(opts, statuses, n, call->caller, ids))
		for (int i = 0; i < n; i++)
		{
			Datum values[TASK_NUM_OPTIONS + 2];
			char  nulls[TASK_NUM_OPTIONS + 2];
			bool  isnull;

			insert_params(call, opts[i], statuses[i], values, nulls);
			schedq_plan_run(&q_insert, values, nulls, 0,
							SPI_OK_INSERT_RETURNING);
			ids[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								   1, &isnull);
		}
	schedq_metrics_count(METRIC_TASKS_SUBMITTED, n);
}

/*
 * Insert one task, or find the live task holding its dedup_key.  Returns
 * the id.  The caller has checked the options.
 */
int64
schedq_task_insert_one(SchedqCall *call, SchedqTaskOptions *opts)
{
	Datum values[TASK_NUM_OPTIONS + 2];
	char  nulls[TASK_NUM_OPTIONS + 2];
	bool  isnull;
	bool  distributed;
	Datum owner_name = (Datum) 0;

	insert_check_references(call, opts);

	if (opts->null[OPT_DEDUP_KEY])
	{
		const SchedqTaskOptions *one = opts;
		Datum					 id;

		schedq_task_insert(call, &one, 1, &id);
		return DatumGetInt64(id);
	}

	/*
	 * With a dedup_key: insert unless a live task holds the key.  The
	 * holder may finish between the two statements, so try a few times.
	 */
	insert_params(call, opts, insert_status(opts), values, nulls);
	distributed = schedq_task_distributed();
	if (distributed)
		owner_name = CStringGetTextDatum(
			quote_identifier(GetUserNameFromId(call->caller, false)));
	for (int tries = 0; tries < 3; tries++)
	{
		if (schedq_plan_run(distributed ? &q_insert_dedup_citus :
										  &q_insert_dedup,
							values, nulls, 0, SPI_OK_INSERT_RETURNING) == 1)
		{
			schedq_metrics_count(METRIC_TASKS_SUBMITTED, 1);
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
		}
		if (schedq_plan_run(distributed ? &q_find_dedup_citus : &q_find_dedup,
							(Datum[]){ opts->v[OPT_DEDUP_KEY],
									   ObjectIdGetDatum(call->caller),
									   opts->v[OPT_QUEUE], owner_name },
							NULL, 0, SPI_OK_SELECT) == 1)
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
	}
	ereport(
		ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
		errmsg(
			"could not submit: the task holding dedup_key \"%s\" kept changing",
			TextDatumGetCString(opts->v[OPT_DEDUP_KEY])));
	pg_unreachable();
}

/*-------------------------------------------------------------------------
 * api/submit.c
 *	  schedq.submit, schedq.submit_sql and schedq.submit_many.
 *
 * All three check their arguments, then go through submit_one, which
 * inserts one row; submit_many inserts its elements that need no other
 * row (the common case) together, with submit_batch.  A task with no
 * gating constraint (no future run_at, no depends_on, no lock_key, no
 * concurrency_key) is inserted 'available' directly, as promotion would
 * have made it; any other starts 'pending' and is left to the scheduler's
 * promotion loop.
 *
 * dedup_key: the unique partial index task_dedup_idx holds at most one
 * live task per owner and key; INSERT ... ON CONFLICT DO NOTHING waits for
 * a concurrent inserter of the same key to finish, so concurrent submits
 * of one role with one key create one task and all return its id.  Keys
 * are per owner, so another role's key never conflicts and never shows.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "store/direct.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "store/task.h"
#include "shared/wake.h"

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

/* The options, then $17 status and $18 owner. */
#define TASK_INSERT                                                            \
	"INSERT INTO schedq.task (kind, payload, queue, priority, run_at,"         \
	" max_attempts, timeout, lock_key, version, concurrency_key,"              \
	" required_caps, budgets, cost, run_id, depends_on, dedup_key,"            \
	" status, owner)"                                                          \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"    \
	" $15, $16, $17, $18::regrole)"
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
 * Check the options that refer to other rows: budgets, the run and the
 * dependencies.  Locks the run row (FOR SHARE) so it cannot finish before
 * this task is in it.
 */
static void
submit_check_references(SchedqCall *call, SchedqTaskOptions *opts)
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
		/* so that finishing a dependency frees this task (promote.c) */
		schedq_plan_run(&q_mark_deps, values, NULL, 0, SPI_OK_UPDATE);
	}
}

/*
 * The status a new task with these (checked) options starts in, with its
 * wake-up arranged: 'available' when nothing gates it, as promotion would
 * have made it, else 'pending' for the scheduler.
 */
static const char *
submit_status(const SchedqTaskOptions *opts)
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
submit_insert_params(SchedqCall *call, const SchedqTaskOptions *opts,
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
 * Insert n tasks without dedup_key (checked options, references checked),
 * in order; their ids go to ids[i].  Directly (direct.c), or with one
 * INSERT each where the direct path declines.
 */
static void
submit_insert(SchedqCall *call, const SchedqTaskOptions *const *opts, int n,
			  Datum *ids)
{
	const char **statuses = palloc(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		statuses[i] = submit_status(opts[i]);
	if (!schedq_direct_insert(opts, statuses, n, call->caller, ids))
		for (int i = 0; i < n; i++)
		{
			Datum values[TASK_NUM_OPTIONS + 2];
			char  nulls[TASK_NUM_OPTIONS + 2];
			bool  isnull;

			submit_insert_params(call, opts[i], statuses[i], values, nulls);
			schedq_plan_run(&q_insert, values, nulls, 0, SPI_OK_INSERT_RETURNING);
			ids[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								   1, &isnull);
		}
	schedq_metrics_count(METRIC_TASKS_SUBMITTED, n);
}

/*
 * Insert one task, or find the live task holding its dedup_key.  Returns
 * the id.  The caller has checked the options.
 */
static int64
submit_one(SchedqCall *call, SchedqTaskOptions *opts)
{
	Datum values[TASK_NUM_OPTIONS + 2];
	char  nulls[TASK_NUM_OPTIONS + 2];
	bool  isnull;

	submit_check_references(call, opts);

	if (opts->null[OPT_DEDUP_KEY])
	{
		const SchedqTaskOptions *one = opts;
		Datum					 id;

		submit_insert(call, &one, 1, &id);
		return DatumGetInt64(id);
	}

	/*
	 * With a dedup_key: insert unless a live task holds the key.  The
	 * holder may finish between the two statements, so try a few times.
	 */
	submit_insert_params(call, opts, submit_status(opts), values, nulls);
	for (int tries = 0; tries < 3; tries++)
	{
		if (schedq_plan_run(&q_insert_dedup, values, nulls, 0,
					   SPI_OK_INSERT_RETURNING) == 1)
		{
			schedq_metrics_count(METRIC_TASKS_SUBMITTED, 1);
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
		}
		if (schedq_plan_run(&q_find_dedup,
					   (Datum[]){ opts->v[OPT_DEDUP_KEY],
								  ObjectIdGetDatum(call->caller) },
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

PG_FUNCTION_INFO_V1(schedq_submit);

/*
 * schedq.submit(kind, payload, queue, ...): one task; returns its id.
 */
Datum
schedq_submit(PG_FUNCTION_ARGS)
{
	SchedqTaskOptions opts;
	SchedqCall		  call;
	int64			  id;

	for (int i = 0; i < TASK_NUM_OPTIONS; i++)
	{
		opts.null[i] = PG_ARGISNULL(i);
		opts.v[i] = opts.null[i] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	opts.sql = false;
	schedq_task_options_check(&opts);

	schedq_call_begin(&call);
	id = submit_one(&call, &opts);
	schedq_call_end(&call);
	PG_RETURN_INT64(id);
}

PG_FUNCTION_INFO_V1(schedq_submit_sql);

/*
 * schedq.submit_sql(command, queue, ...): a SQL task for the built-in
 * executor (see schedq_task_options_add_sql).  Its other arguments are
 * those of submit from queue on.
 */
Datum
schedq_submit_sql(PG_FUNCTION_ARGS)
{
	SchedqTaskOptions opts;
	SchedqCall		  call;
	int64			  id;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("command must not be null"));
	schedq_task_options_init(&opts);
	for (int i = OPT_QUEUE; i < TASK_NUM_OPTIONS; i++)
	{
		opts.null[i] = PG_ARGISNULL(i - 1);
		opts.v[i] = opts.null[i] ? (Datum) 0 : PG_GETARG_DATUM(i - 1);
	}
	schedq_task_options_add_sql(&opts, text_to_cstring(PG_GETARG_TEXT_PP(0)));
	schedq_task_options_check(&opts);

	schedq_call_begin(&call);
	id = submit_one(&call, &opts);
	schedq_call_end(&call);
	PG_RETURN_INT64(id);
}

/* The elements, in array order; every one is an object (many_check). */
static SchedqQuery q_many = SCHEDQ_QUERY(
	"SELECT r.* FROM jsonb_to_recordset($1) AS r(kind text, payload jsonb,"
	"   queue text, priority integer, run_at timestamptz,"
	"   max_attempts integer, timeout interval, lock_key text,"
	"   version bigint, concurrency_key text, required_caps text[],"
	"   budgets text[], cost numeric, run_id bigint,"
	"   depends_on bigint[], dedup_key text)",
	JSONBOID);

/*
 * An error for the first element of tasks that is not an object or has a
 * key that is not an argument name of submit (its first such key, in the
 * object's key order, as jsonb_object_keys lists them).
 */
static void
many_check(Jsonb *tasks)
{
	JsonbIterator	  *it = JsonbIteratorInit(&tasks->root);
	JsonbValue		   elem;
	JsonbIteratorToken tok;
	int64			   ord = 0;

	while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
	{
		JsonbIterator	  *keys;
		JsonbValue		   key;
		JsonbIteratorToken ktok;

		if (tok != WJB_ELEM)
			continue;
		ord++;
		if (elem.type != jbvBinary ||
			!JsonContainerIsObject(elem.val.binary.data))
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("element " INT64_FORMAT
						   " of tasks is a JSON %s, not an object",
						   ord, JsonbTypeName(&elem)));
		keys = JsonbIteratorInit(elem.val.binary.data);
		while ((ktok = JsonbIteratorNext(&keys, &key, true)) != WJB_DONE)
		{
			bool known = false;

			if (ktok != WJB_KEY)
				continue;
			for (int i = 0; i < TASK_NUM_OPTIONS && !known; i++)
				known = strlen(schedq_task_option_names[i]) ==
							(size_t) key.val.string.len &&
						memcmp(schedq_task_option_names[i], key.val.string.val,
							   key.val.string.len) == 0;
			if (!known)
				ereport(
					ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("element " INT64_FORMAT
						   " of tasks has unknown key \"%s\"",
						   ord,
						   pnstrdup(key.val.string.val, key.val.string.len)),
					errhint(
						"The keys are the argument names of schedq.submit."));
		}
	}
}

/* Most elements inserted together by submit_batch. */
#define SUBMIT_BATCH_MAX 10000

/*
 * Does this element (checked options) need submit_one: a query of its
 * own, or a row another element may have made?
 */
static bool
submit_needs_one(const SchedqTaskOptions *opts)
{
	ArrayType *budgets = DatumGetArrayTypeP(opts->v[OPT_BUDGETS]);
	ArrayType *deps = DatumGetArrayTypeP(opts->v[OPT_DEPENDS_ON]);

	return !opts->null[OPT_DEDUP_KEY] || !opts->null[OPT_RUN_ID] ||
		   ArrayGetNItems(ARR_NDIM(budgets), ARR_DIMS(budgets)) > 0 ||
		   ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > 0;
}

/*
 * Insert the elements rows[0..n-1] of opts (checked, none needing
 * submit_one) together, in that order; their ids go to ids[rows[i]].
 */
static void
submit_batch(SchedqCall *call, SchedqTaskOptions *opts, const int *rows, int n,
			 Datum *ids)
{
	const SchedqTaskOptions **batch = palloc(sizeof(void *) * Max(n, 1));
	Datum					 *batch_ids = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		batch[i] = &opts[rows[i]];
	submit_insert(call, batch, n, batch_ids);
	for (int i = 0; i < n; i++)
		ids[rows[i]] = batch_ids[i];
}

/*
 * Most elements of one submit_many call.  Each costs a few kilobytes of
 * the backend's memory until the call ends (its row, its checked options,
 * its place in the batch arrays), so the count is bounded like every other
 * argument: 100,000 is twice the largest batch the benchmarks submit.
 */
#define SUBMIT_MANY_MAX 100000

PG_FUNCTION_INFO_V1(schedq_submit_many);

/*
 * schedq.submit_many(tasks jsonb): an array of objects whose keys are the
 * argument names of submit; absent keys and JSON nulls take submit's
 * defaults.  Returns the ids in the order of the array.  One statement,
 * so all or none of the tasks are submitted.
 *
 * Each element is checked in array order, as submit checks it.  The
 * elements that need no other row (no dedup_key, run_id, depends_on or
 * budgets: the common case) are inserted together by submit_batch; an
 * element that does goes through submit_one, after the batch of the
 * elements before it, so ids are drawn in array order and an element may
 * depend on (or share a dedup_key with) an earlier one of the same call.
 */
Datum
schedq_submit_many(PG_FUNCTION_ARGS)
{
	Jsonb			  *tasks = PG_GETARG_JSONB_P(0);
	ReturnSetInfo	  *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SchedqCall		   call;
	SPITupleTable	  *rows;
	Datum			   values[1];
	uint64			   n;
	SchedqTaskOptions *opts;
	Datum			  *ids;
	int				  *batch;
	int				   nbatch = 0;

	if (!JB_ROOT_IS_ARRAY(tasks) || JB_ROOT_IS_SCALAR(tasks))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("tasks must be a JSON array of objects"));
	if (JB_ROOT_COUNT(tasks) > SUBMIT_MANY_MAX)
		ereport(ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("submit_many takes at most %d tasks", SUBMIT_MANY_MAX),
				errdetail("tasks has %u elements.", JB_ROOT_COUNT(tasks)),
				errhint("Submit them in several calls."));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	schedq_call_begin(&call);
	many_check(tasks);
	values[0] = JsonbPGetDatum(tasks);
	n = schedq_plan_run(&q_many, values, NULL, 0, SPI_OK_SELECT);
	rows = SPI_tuptable; /* keep it: the inserts run more queries */
	opts = palloc((n + 1) * sizeof(SchedqTaskOptions));
	ids = palloc((n + 1) * sizeof(Datum));
	batch = palloc((n + 1) * sizeof(int));
	for (uint64 row = 0; row < n; row++)
	{
		SchedqTaskOptions *o = &opts[row];

		for (int i = 0; i < TASK_NUM_OPTIONS; i++)
			o->v[i] = SPI_getbinval(rows->vals[row], rows->tupdesc, i + 1,
									&o->null[i]);
		o->sql = false;
		schedq_task_options_defaults(o);
		schedq_task_options_check(o);
		if (!submit_needs_one(o))
		{
			batch[nbatch++] = (int) row;
			if (nbatch == SUBMIT_BATCH_MAX)
			{
				submit_batch(&call, opts, batch, nbatch, ids);
				nbatch = 0;
			}
			continue;
		}
		submit_batch(&call, opts, batch, nbatch, ids);
		nbatch = 0;
		ids[row] = Int64GetDatum(submit_one(&call, o));
	}
	submit_batch(&call, opts, batch, nbatch, ids);

	for (uint64 row = 0; row < n; row++)
	{
		bool isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &ids[row],
							 &isnull);
	}

	schedq_call_end(&call);
	return (Datum) 0;
}

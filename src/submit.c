/*-------------------------------------------------------------------------
 * submit.c
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
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "call.h"
#include "metrics.h"
#include "plan.h"
#include "task.h"
#include "wake.h"

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

		if (schedq_run(&q_check_run, &opts->v[OPT_RUN_ID], NULL, 0,
					   SPI_OK_SELECT) == 0)
			ereport(ERROR, errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					errmsg("run " INT64_FORMAT " does not exist", run_id));
		status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		owner =
			DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
		if (!schedq_caller_acts_for(call, owner))
			ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied for run " INT64_FORMAT, run_id));
		if (strcmp(status, "running") != 0)
			ereport(ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("run " INT64_FORMAT " is already finished", run_id),
					errdetail("Its status is \"%s\".", status));
		/* the run has a task now: the reaper may finish it once all end */
		schedq_run(&q_run_has_tasks, &opts->v[OPT_RUN_ID], NULL, 0,
				   SPI_OK_UPDATE);
	}

	if (ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > 0)
	{
		Datum values[4] = { opts->v[OPT_DEPENDS_ON], opts->v[OPT_RUN_ID],
							BoolGetDatum(call->admin),
							ObjectIdGetDatum(call->caller) };
		char  nulls[4] = { ' ', opts->null[OPT_RUN_ID] ? 'n' : ' ', ' ', ' ' };

		if (schedq_run(&q_check_deps, values, nulls, 0, SPI_OK_SELECT) > 0)
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
		schedq_run(&q_mark_deps, values, NULL, 0, SPI_OK_UPDATE);
	}
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
	bool  gated;
	bool  isnull;

	submit_check_references(call, opts);
	gated = schedq_task_options_gated(opts);

	for (int i = 0; i < TASK_NUM_OPTIONS; i++)
	{
		values[i] = opts->v[i];
		nulls[i] = opts->null[i] ? 'n' : ' ';
	}
	values[TASK_NUM_OPTIONS] = CStringGetTextDatum(
		schedq_task_status_names[gated ? TASK_PENDING : TASK_AVAILABLE]);
	nulls[TASK_NUM_OPTIONS] = ' ';
	values[TASK_NUM_OPTIONS + 1] = ObjectIdGetDatum(call->caller);
	nulls[TASK_NUM_OPTIONS + 1] = ' ';

	if (gated)
		schedq_wake_scheduler_at_commit();
	else
		schedq_task_available_at_commit(
			TextDatumGetCString(opts->v[OPT_QUEUE]),
			DatumGetArrayTypeP(opts->v[OPT_REQUIRED_CAPS]),
			DatumGetInt32(opts->v[OPT_PRIORITY]),
			DatumGetTimestampTz(opts->v[OPT_RUN_AT]),
			PG_INT64_MIN /* the id is not drawn yet: any bound will do */);

	if (opts->null[OPT_DEDUP_KEY])
	{
		schedq_run(&q_insert, values, nulls, 0, SPI_OK_INSERT_RETURNING);
		schedq_count(METRIC_TASKS_SUBMITTED, 1);
		return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	}

	/*
	 * With a dedup_key: insert unless a live task holds the key.  The
	 * holder may finish between the two statements, so try a few times.
	 */
	for (int tries = 0; tries < 3; tries++)
	{
		if (schedq_run(&q_insert_dedup, values, nulls, 0,
					   SPI_OK_INSERT_RETURNING) == 1)
		{
			schedq_count(METRIC_TASKS_SUBMITTED, 1);
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
		}
		if (schedq_run(&q_find_dedup,
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

/*
 * The batch path of submit_many: the elements that need no other row
 * (no dedup_key, run_id, depends_on or budgets) in one INSERT ... SELECT
 * over arrays of their checked options, one array per column, in array
 * order.  The arrays are unnested in the select list, in lockstep and
 * without a tuplestore, so the rows (and the ids drawn for them, and the
 * ids returned) come in array order.  required_caps, an array per
 * element, travels as its text (NULL for none).  The status is decided in
 * C, as submit_one decides it.  At most SUBMIT_BATCH_MAX elements go in
 * one statement, which bounds the size of its arrays.
 */
#define SUBMIT_BATCH_MAX 10000 /* most elements per statement */

enum
{
	MANY_KIND,
	MANY_PAYLOAD,
	MANY_QUEUE,
	MANY_PRIORITY,
	MANY_RUN_AT,
	MANY_MAX_ATTEMPTS,
	MANY_TIMEOUT,
	MANY_LOCK_KEY,
	MANY_VERSION,
	MANY_CONCURRENCY_KEY,
	MANY_REQUIRED_CAPS,
	MANY_COST,
	MANY_STATUS,
	MANY_NUM_COLUMNS
};

/* The option each column holds (-1: not an option). */
static const int many_column_option[MANY_NUM_COLUMNS] = {
	OPT_KIND,	 OPT_PAYLOAD,		  OPT_QUEUE,   OPT_PRIORITY,
	OPT_RUN_AT,	 OPT_MAX_ATTEMPTS,	  OPT_TIMEOUT, OPT_LOCK_KEY,
	OPT_VERSION, OPT_CONCURRENCY_KEY, -1,		   OPT_COST,
	-1,
};
static const Oid many_column_type[MANY_NUM_COLUMNS] = {
	TEXTOID, JSONBOID, TEXTOID, INT4OID, TIMESTAMPTZOID, INT4OID, INTERVALOID,
	TEXTOID, INT8OID,  TEXTOID, TEXTOID, NUMERICOID,	 TEXTOID,
};

static SchedqQuery q_insert_many = SCHEDQ_QUERY(
	"INSERT INTO schedq.task (kind, payload, queue, priority, run_at,"
	" max_attempts, timeout, lock_key, version, concurrency_key,"
	" required_caps, cost, status, owner)"
	" SELECT kind, payload, queue, priority, run_at, max_attempts, timeout,"
	"   lock_key, version, concurrency_key,"
	"   coalesce(required_caps::text[], '{}'), cost, status, $14::regrole"
	" FROM (SELECT unnest($1) kind, unnest($2) payload, unnest($3) queue,"
	"   unnest($4) priority, unnest($5) run_at, unnest($6) max_attempts,"
	"   unnest($7) timeout, unnest($8) lock_key, unnest($9) version,"
	"   unnest($10) concurrency_key, unnest($11) required_caps,"
	"   unnest($12) cost, unnest($13) status) u"
	" RETURNING id",
	TEXTARRAYOID, JSONBARRAYOID, TEXTARRAYOID, INT4ARRAYOID,
	TIMESTAMPTZARRAYOID, INT4ARRAYOID, INTERVALARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID, NUMERICARRAYOID, TEXTARRAYOID,
	OIDOID);

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
 * submit_one) with one statement, in that order; their ids go to
 * ids[rows[i]].  Arranges their wake-ups as submit_one does.
 */
static void
submit_batch(SchedqCall *call, SchedqTaskOptions *opts, const int *rows, int n,
			 Datum *ids)
{
	Datum values[MANY_NUM_COLUMNS + 1];
	bool  any_gated = false;
	bool  isnull;
	int	  lb = 1;

	if (n == 0)
		return;

	for (int c = 0; c < MANY_NUM_COLUMNS; c++)
	{
		Datum *elems = palloc(n * sizeof(Datum));
		bool  *nulls = palloc(n * sizeof(bool));
		int16  typlen;
		bool   typbyval;
		char   typalign;

		for (int i = 0; i < n; i++)
		{
			SchedqTaskOptions *o = &opts[rows[i]];
			int				   opt = many_column_option[c];

			nulls[i] = false;
			if (opt >= 0)
			{
				elems[i] = o->v[opt];
				nulls[i] = o->null[opt];
			}
			else if (c == MANY_STATUS)
			{
				bool gated = schedq_task_options_gated(o);

				elems[i] = CStringGetTextDatum(
					schedq_task_status_names[gated ? TASK_PENDING :
													 TASK_AVAILABLE]);
				if (gated)
					any_gated = true;
				else
					schedq_task_available_at_commit(
						TextDatumGetCString(o->v[OPT_QUEUE]),
						DatumGetArrayTypeP(o->v[OPT_REQUIRED_CAPS]),
						DatumGetInt32(o->v[OPT_PRIORITY]),
						DatumGetTimestampTz(o->v[OPT_RUN_AT]),
						PG_INT64_MIN /* the ids are not drawn yet */);
			}
			else
			{
				ArrayType *caps = DatumGetArrayTypeP(o->v[OPT_REQUIRED_CAPS]);

				Assert(c == MANY_REQUIRED_CAPS);
				nulls[i] = ArrayGetNItems(ARR_NDIM(caps), ARR_DIMS(caps)) == 0;
				if (!nulls[i])
					elems[i] = CStringGetTextDatum(
						OidOutputFunctionCall(F_ARRAY_OUT,
											  PointerGetDatum(caps)));
			}
		}
		get_typlenbyvalalign(many_column_type[c], &typlen, &typbyval,
							 &typalign);
		values[c] = PointerGetDatum(
			construct_md_array(elems, nulls, 1, &n, &lb, many_column_type[c],
							   typlen, typbyval, typalign));
	}
	values[MANY_NUM_COLUMNS] = ObjectIdGetDatum(call->caller);
	if (any_gated)
		schedq_wake_scheduler_at_commit();

	if (schedq_run(&q_insert_many, values, NULL, 0, SPI_OK_INSERT_RETURNING) !=
		n)
		elog(ERROR, "submit_many inserted " UINT64_FORMAT " tasks of %d",
			 SPI_processed, n);
	for (int i = 0; i < n; i++)
		ids[rows[i]] = SPI_getbinval(SPI_tuptable->vals[i],
									 SPI_tuptable->tupdesc, 1, &isnull);
	schedq_count(METRIC_TASKS_SUBMITTED, n);
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
	n = schedq_run(&q_many, values, NULL, 0, SPI_OK_SELECT);
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

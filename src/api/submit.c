/*-------------------------------------------------------------------------
 * api/submit.c
 *	  schedq.submit, schedq.submit_sql and schedq.submit_many.
 *
 * All three check their arguments, then insert through
 * store/task_insert.c; submit_many inserts its elements that need no other
 * row (the common case) together.
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
#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "store/direct.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "store/task.h"
#include "store/task_insert.h"
#include "shared/wake.h"

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
	id = schedq_task_insert_one(&call, &opts);
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
	id = schedq_task_insert_one(&call, &opts);
	schedq_call_end(&call);
	PG_RETURN_INT64(id);
}

/*
 * The elements, in array order, each a record of the options; every one
 * is an object (many_check).  Its text is made from TASK_OPTIONS on first
 * use (submit_many_query).
 */
static SchedqQuery q_many = SCHEDQ_QUERY(NULL, JSONBOID);

static SchedqQuery *
submit_many_query(void)
{
	if (q_many.sql == NULL)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfoString(&sql,
							   "SELECT r.* FROM jsonb_to_recordset($1) AS r(");
		for (int i = 0; i < TASK_NUM_OPTIONS; i++)
			appendStringInfo(&sql, "%s%s %s", i > 0 ? ", " : "",
							 schedq_task_option_names[i],
							 schedq_task_option_sqltypes[i]);
		appendStringInfoChar(&sql, ')');
		q_many.sql = MemoryContextStrdup(TopMemoryContext, sql.data);
		pfree(sql.data);
	}
	return &q_many;
}

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
	schedq_task_insert(call, batch, n, batch_ids);
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
	n = schedq_plan_run(submit_many_query(), values, NULL, 0, SPI_OK_SELECT);
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
		ids[row] = Int64GetDatum(schedq_task_insert_one(&call, o));
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

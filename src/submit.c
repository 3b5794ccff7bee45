/*-------------------------------------------------------------------------
 * submit.c
 *	  schedq.submit, schedq.submit_sql and schedq.submit_many.
 *
 * All three check their arguments, then go through submit_one, which
 * inserts one row.  A task with no gating constraint (no future run_at, no
 * depends_on, no lock_key, no concurrency_key) is inserted 'available'
 * directly, as promotion would have made it; any other starts 'pending'
 * and is left to the scheduler's promotion loop.
 *
 * dedup_key: the unique partial index task_dedup_idx holds at most one
 * live task per key; INSERT ... ON CONFLICT DO NOTHING waits for a
 * concurrent inserter of the same key to finish, so concurrent submits
 * with one key create one task and all return its id.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "schedq.h"
#include "shmem.h"
#include "wake.h"

/* The arguments of schedq.submit, in order; also the keys of submit_many. */
typedef enum TaskArg
{
	A_KIND,
	A_PAYLOAD,
	A_QUEUE,
	A_PRIORITY,
	A_RUN_AT,
	A_MAX_ATTEMPTS,
	A_TIMEOUT,
	A_LOCK_KEY,
	A_VERSION,
	A_CONCURRENCY_KEY,
	A_REQUIRED_CAPS,
	A_BUDGETS,
	A_COST,
	A_RUN_ID,
	A_DEPENDS_ON,
	A_DEDUP_KEY,
	NUM_TASK_ARGS
} TaskArg;

static const char *const task_arg_names[NUM_TASK_ARGS] = {
	"kind",	   "payload",		  "queue",		   "priority",
	"run_at",  "max_attempts",	  "timeout",	   "lock_key",
	"version", "concurrency_key", "required_caps", "budgets",
	"cost",	   "run_id",		  "depends_on",	   "dedup_key"
};

static const Oid task_arg_types[NUM_TASK_ARGS + 2] = {
	TEXTOID,	 JSONBOID, TEXTOID,		 INT4OID, TIMESTAMPTZOID, INT4OID,
	INTERVALOID, TEXTOID,  INT8OID,		 TEXTOID, TEXTARRAYOID,	  TEXTARRAYOID,
	NUMERICOID,	 INT8OID,  INT8ARRAYOID, TEXTOID, TEXTOID, /* $17 status */
	OIDOID												   /* $18 owner */
};

typedef struct TaskArgs
{
	Datum v[NUM_TASK_ARGS];
	bool  null[NUM_TASK_ARGS];
} TaskArgs;

static SPIPlanPtr plan_insert = NULL;
static SPIPlanPtr plan_insert_dedup = NULL;
static SPIPlanPtr plan_find_dedup = NULL;
static SPIPlanPtr plan_missing_budget = NULL;
static SPIPlanPtr plan_check_run = NULL;
static SPIPlanPtr plan_check_deps = NULL;
static SPIPlanPtr plan_mark_deps = NULL;
static SPIPlanPtr plan_run_has_tasks = NULL;
static SPIPlanPtr plan_many = NULL;
static SPIPlanPtr plan_many_check = NULL;

#define TASK_INSERT_COLUMNS                                                    \
	"INSERT INTO schedq.task (kind, payload, queue, priority, run_at,"         \
	" max_attempts, timeout, lock_key, version, concurrency_key,"              \
	" required_caps, budgets, cost, run_id, depends_on, dedup_key,"            \
	" status, owner)"                                                          \
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"    \
	" $15, $16, $17, $18::regrole)"

/*
 * Fill in what an omitted argument means.  submit() gets its defaults from
 * its SQL declaration; submit_many() gets them here, for absent keys and
 * JSON nulls alike.
 */
static void
submit_apply_defaults(TaskArgs *a)
{
	if (a->null[A_PAYLOAD])
		a->v[A_PAYLOAD] = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	if (a->null[A_QUEUE])
		a->v[A_QUEUE] = CStringGetTextDatum("default");
	if (a->null[A_PRIORITY])
		a->v[A_PRIORITY] = Int32GetDatum(0);
	if (a->null[A_RUN_AT])
		a->v[A_RUN_AT] =
			TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	if (a->null[A_MAX_ATTEMPTS])
		a->v[A_MAX_ATTEMPTS] = Int32GetDatum(5);
	if (a->null[A_REQUIRED_CAPS])
		a->v[A_REQUIRED_CAPS] = PointerGetDatum(construct_empty_array(TEXTOID));
	if (a->null[A_BUDGETS])
		a->v[A_BUDGETS] = PointerGetDatum(construct_empty_array(TEXTOID));
	if (a->null[A_COST])
		a->v[A_COST] = NumericGetDatum(int64_to_numeric(1));
	if (a->null[A_DEPENDS_ON])
		a->v[A_DEPENDS_ON] = PointerGetDatum(construct_empty_array(INT8OID));
	for (int i = A_PAYLOAD; i <= A_DEPENDS_ON; i++)
		if (i != A_TIMEOUT && i != A_LOCK_KEY && i != A_VERSION &&
			i != A_CONCURRENCY_KEY && i != A_RUN_ID)
			a->null[i] = false;
}

/*
 * Errors for a NULL where a value is needed.
 */
static void
submit_require(const TaskArgs *a, TaskArg arg)
{
	if (a->null[arg])
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not be null", task_arg_names[arg]));
}

/*
 * A one-dimensional array without NULL elements, or an error.
 */
static ArrayType *
submit_check_array(const TaskArgs *a, TaskArg arg)
{
	ArrayType *arr = DatumGetArrayTypeP(a->v[arg]);

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR, errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("%s must be a one-dimensional array",
					   task_arg_names[arg]));
	if (array_contains_nulls(arr))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not contain nulls", task_arg_names[arg]));
	return arr;
}

/*
 * An error unless the text argument is a non-empty string.
 */
static void
submit_check_name(const TaskArgs *a, TaskArg arg)
{
	submit_require(a, arg);
	if (VARSIZE_ANY_EXHDR(DatumGetPointer(a->v[arg])) == 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s must not be empty", task_arg_names[arg]));
}

/*
 * Check every argument that needs no query.
 */
static void
submit_check_args(TaskArgs *a)
{
	Size		payload_size;
	TimestampTz run_at;
	Numeric		cost;

	submit_check_name(a, A_KIND);
	submit_check_name(a, A_QUEUE);
	for (int i = A_PAYLOAD; i <= A_DEPENDS_ON; i++)
		if (i != A_TIMEOUT && i != A_LOCK_KEY && i != A_VERSION &&
			i != A_CONCURRENCY_KEY && i != A_RUN_ID)
			submit_require(a, i);

	payload_size = toast_raw_datum_size(a->v[A_PAYLOAD]) - VARHDRSZ;
	if (payload_size > (Size) schedq_max_payload_bytes)
		ereport(
			ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			errmsg("payload of %zu bytes exceeds schedq.max_payload (%d bytes)",
				   payload_size, schedq_max_payload_bytes));

	run_at = DatumGetTimestampTz(a->v[A_RUN_AT]);
	if (TIMESTAMP_NOT_FINITE(run_at))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("run_at must be finite"));

	if (DatumGetInt32(a->v[A_MAX_ATTEMPTS]) <= 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_attempts must be positive"));

	if (!a->null[A_TIMEOUT] &&
		schedq_interval_usecs(DatumGetIntervalP(a->v[A_TIMEOUT])) <= 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("timeout must be positive"));

	if (!a->null[A_LOCK_KEY])
		submit_check_name(a, A_LOCK_KEY);
	if (!a->null[A_VERSION] && a->null[A_LOCK_KEY])
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("version requires lock_key"));
	if (!a->null[A_CONCURRENCY_KEY])
		submit_check_name(a, A_CONCURRENCY_KEY);
	if (!a->null[A_DEDUP_KEY])
		submit_check_name(a, A_DEDUP_KEY);

	(void) submit_check_array(a, A_REQUIRED_CAPS);
	(void) submit_check_array(a, A_BUDGETS);
	(void) submit_check_array(a, A_DEPENDS_ON);

	cost = DatumGetNumeric(a->v[A_COST]);
	if (numeric_is_nan(cost) || numeric_is_inf(cost) ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, NumericGetDatum(cost),
										 NumericGetDatum(int64_to_numeric(0)))))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("cost must be a finite number not below zero"));
}

/*
 * Check the arguments that refer to other rows: budgets, the run and the
 * dependencies.  Locks the run row (FOR SHARE) so it cannot finish before
 * this task is in it.
 */
static void
submit_check_references(SchedqCall *call, TaskArgs *a)
{
	ArrayType *budgets = DatumGetArrayTypeP(a->v[A_BUDGETS]);
	ArrayType *deps = DatumGetArrayTypeP(a->v[A_DEPENDS_ON]);
	bool	   isnull;

	if (ArrayGetNItems(ARR_NDIM(budgets), ARR_DIMS(budgets)) > 0)
	{
		static const Oid types[] = { TEXTARRAYOID };

		if (schedq_execute(
				schedq_plan(&plan_missing_budget,
							"SELECT b FROM unnest($1) b"
							" WHERE NOT EXISTS (SELECT FROM schedq.budget"
							"   WHERE name = b) LIMIT 1",
							1, types),
				&a->v[A_BUDGETS], NULL, 0, SPI_OK_SELECT) > 0)
			ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
					errmsg("budget \"%s\" does not exist",
						   SPI_getvalue(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1)),
					errhint("Create it with schedq.set_budget()."));
	}

	if (!a->null[A_RUN_ID])
	{
		static const Oid types[] = { INT8OID };
		char			*status;
		Oid				 owner;

		if (schedq_execute(
				schedq_plan(&plan_check_run,
							"SELECT status, owner::oid FROM schedq.run"
							" WHERE id = $1 FOR SHARE",
							1, types),
				&a->v[A_RUN_ID], NULL, 0, SPI_OK_SELECT) == 0)
			ereport(ERROR, errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					errmsg("run " INT64_FORMAT " does not exist",
						   DatumGetInt64(a->v[A_RUN_ID])));
		status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		owner =
			DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
		if (!schedq_caller_acts_for(call, owner))
			ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied for run " INT64_FORMAT,
						   DatumGetInt64(a->v[A_RUN_ID])));
		if (strcmp(status, "running") != 0)
			ereport(ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("run " INT64_FORMAT " is already finished",
						   DatumGetInt64(a->v[A_RUN_ID])),
					errdetail("Its status is \"%s\".", status));
		/* the run has a task now: the reaper may finish it once all end */
		schedq_execute(schedq_plan(&plan_run_has_tasks,
								   "UPDATE schedq.run SET has_tasks = true"
								   " WHERE id = $1 AND NOT has_tasks",
								   1, (Oid[]){ INT8OID }),
					   &a->v[A_RUN_ID], NULL, 0, SPI_OK_UPDATE);
	}

	if (ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > 0)
	{
		static const Oid types[] = { INT8ARRAYOID, INT8OID };
		Datum			 values[2] = { a->v[A_DEPENDS_ON], a->v[A_RUN_ID] };
		char			 nulls[2] = { ' ', a->null[A_RUN_ID] ? 'n' : ' ' };

		if (schedq_execute(
				schedq_plan(
					&plan_check_deps,
					"SELECT d, t.id IS NULL, t.owner::oid FROM unnest($1) d"
					" LEFT JOIN schedq.task t ON t.id = d"
					" WHERE t.id IS NULL"
					"    OR t.run_id IS DISTINCT FROM $2 LIMIT 1",
					2, types),
				values, nulls, 0, SPI_OK_SELECT) > 0)
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
		schedq_execute(
			schedq_plan(&plan_mark_deps,
						"UPDATE schedq.task SET has_dependents = true"
						" WHERE id = ANY ($1) AND NOT has_dependents",
						1, types),
			values, NULL, 0, SPI_OK_UPDATE);
	}
}

/*
 * Insert one task, or find the live task holding its dedup_key.  Returns
 * the id.  The caller has checked the arguments.
 */
static int64
submit_one(SchedqCall *call, TaskArgs *a)
{
	Datum		values[NUM_TASK_ARGS + 2];
	char		nulls[NUM_TASK_ARGS + 2];
	TimestampTz run_at = DatumGetTimestampTz(a->v[A_RUN_AT]);
	ArrayType  *deps = DatumGetArrayTypeP(a->v[A_DEPENDS_ON]);
	bool		gated;
	bool		isnull;

	submit_check_references(call, a);

	gated = run_at > GetCurrentTransactionStartTimestamp() ||
			ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > 0 ||
			!a->null[A_LOCK_KEY] || !a->null[A_CONCURRENCY_KEY];

	for (int i = 0; i < NUM_TASK_ARGS; i++)
	{
		values[i] = a->v[i];
		nulls[i] = a->null[i] ? 'n' : ' ';
	}
	values[NUM_TASK_ARGS] =
		CStringGetTextDatum(gated ? "pending" : "available");
	nulls[NUM_TASK_ARGS] = ' ';
	values[NUM_TASK_ARGS + 1] = ObjectIdGetDatum(call->caller);
	nulls[NUM_TASK_ARGS + 1] = ' ';

	if (gated)
		schedq_wake_scheduler_at_commit();
	else
		schedq_wake_claimers_at_commit(
			TextDatumGetCString(a->v[A_QUEUE]),
			DatumGetArrayTypeP(a->v[A_REQUIRED_CAPS]),
			DatumGetInt32(a->v[A_PRIORITY]), run_at,
			PG_INT64_MIN /* the id is not drawn yet: any bound will do */);

	if (a->null[A_DEDUP_KEY])
	{
		schedq_execute(schedq_plan(&plan_insert,
								   TASK_INSERT_COLUMNS " RETURNING id",
								   NUM_TASK_ARGS + 2, task_arg_types),
					   values, nulls, 0, SPI_OK_INSERT_RETURNING);
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
		static const Oid types[] = { TEXTOID };

		if (schedq_execute(
				schedq_plan(
					&plan_insert_dedup,
					TASK_INSERT_COLUMNS
					" ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL"
					" AND status IN ('pending', 'available', 'running')"
					" DO NOTHING RETURNING id",
					NUM_TASK_ARGS + 2, task_arg_types),
				values, nulls, 0, SPI_OK_INSERT_RETURNING) == 1)
		{
			schedq_count(METRIC_TASKS_SUBMITTED, 1);
			return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1,
											   &isnull));
		}
		if (schedq_execute(
				schedq_plan(
					&plan_find_dedup,
					"SELECT id, owner::oid FROM schedq.task"
					" WHERE dedup_key = $1"
					" AND status IN ('pending', 'available', 'running')",
					1, types),
				&a->v[A_DEDUP_KEY], NULL, 0, SPI_OK_SELECT) == 1)
		{
			HeapTuple tuple = SPI_tuptable->vals[0];
			Oid		  owner = DatumGetObjectId(
					  SPI_getbinval(tuple, SPI_tuptable->tupdesc, 2, &isnull));

			if (!schedq_caller_acts_for(call, owner))
				ereport(
					ERROR, errcode(ERRCODE_UNIQUE_VIOLATION),
					errmsg("dedup_key \"%s\" is held by a task of another role",
						   TextDatumGetCString(a->v[A_DEDUP_KEY])));
			return DatumGetInt64(
				SPI_getbinval(tuple, SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	ereport(
		ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
		errmsg(
			"could not submit: the task holding dedup_key \"%s\" kept changing",
			TextDatumGetCString(a->v[A_DEDUP_KEY])));
	pg_unreachable();
}

PG_FUNCTION_INFO_V1(schedq_submit);

/*
 * schedq.submit(kind, payload, queue, ...): one task; returns its id.
 */
Datum
schedq_submit(PG_FUNCTION_ARGS)
{
	TaskArgs   a;
	SchedqCall call;
	int64	   id;

	for (int i = 0; i < NUM_TASK_ARGS; i++)
	{
		a.null[i] = PG_ARGISNULL(i);
		a.v[i] = a.null[i] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	submit_check_args(&a);

	schedq_call_begin(&call);
	id = submit_one(&call, &a);
	schedq_call_end(&call);
	PG_RETURN_INT64(id);
}

PG_FUNCTION_INFO_V1(schedq_submit_sql);

/*
 * schedq.submit_sql(command, queue, ...): a task of kind 'sql' whose
 * payload is {"command": command} and which requires the capability
 * 'sql', so that only the built-in executor (or a worker claiming with
 * that capability) ever receives it.
 */
Datum
schedq_submit_sql(PG_FUNCTION_ARGS)
{
	TaskArgs   a;
	SchedqCall call;
	char	  *command;
	Datum	  *caps;
	int		   ncaps;
	bool	   has_sql = false;
	int64	   id;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("command must not be null"));
	command = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (command[strspn(command, " \t\r\n")] == '\0')
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("command must not be empty"));

	/* The other arguments are those of submit from queue on. */
	for (int i = A_QUEUE; i < NUM_TASK_ARGS; i++)
	{
		a.null[i] = PG_ARGISNULL(i - 1);
		a.v[i] = a.null[i] ? (Datum) 0 : PG_GETARG_DATUM(i - 1);
	}
	a.null[A_KIND] = false;
	a.v[A_KIND] = CStringGetTextDatum("sql");

	a.null[A_PAYLOAD] = false;
	a.v[A_PAYLOAD] = schedq_sql_payload(command);

	submit_check_args(&a);

	deconstruct_array(DatumGetArrayTypeP(a.v[A_REQUIRED_CAPS]), TEXTOID, -1,
					  false, TYPALIGN_INT, &caps, NULL, &ncaps);
	for (int i = 0; i < ncaps; i++)
		if (strcmp(TextDatumGetCString(caps[i]), "sql") == 0)
			has_sql = true;
	if (!has_sql)
	{
		Datum *all = palloc((ncaps + 1) * sizeof(Datum));

		memcpy(all, caps, ncaps * sizeof(Datum));
		all[ncaps] = CStringGetTextDatum("sql");
		a.v[A_REQUIRED_CAPS] = PointerGetDatum(
			construct_array(all, ncaps + 1, TEXTOID, -1, false, TYPALIGN_INT));
	}

	schedq_call_begin(&call);
	id = submit_one(&call, &a);
	schedq_call_end(&call);
	PG_RETURN_INT64(id);
}

PG_FUNCTION_INFO_V1(schedq_submit_many);

/*
 * schedq.submit_many(tasks jsonb): an array of objects whose keys are the
 * argument names of submit; absent keys and JSON nulls take submit's
 * defaults.  Returns the ids in the order of the array.  One statement,
 * so all or none of the tasks are submitted.
 */
Datum
schedq_submit_many(PG_FUNCTION_ARGS)
{
	Jsonb			*tasks = PG_GETARG_JSONB_P(0);
	ReturnSetInfo	*rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SchedqCall		 call;
	SPITupleTable	*rows;
	Datum			 names;
	Datum			*name_datums;
	uint64			 n;
	static const Oid check_types[] = { JSONBOID, TEXTARRAYOID };

	if (!JB_ROOT_IS_ARRAY(tasks) || JB_ROOT_IS_SCALAR(tasks))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("tasks must be a JSON array of objects"));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	name_datums = palloc(NUM_TASK_ARGS * sizeof(Datum));
	for (int i = 0; i < NUM_TASK_ARGS; i++)
		name_datums[i] = CStringGetTextDatum(task_arg_names[i]);
	names = PointerGetDatum(construct_array(name_datums, NUM_TASK_ARGS, TEXTOID,
											-1, false, TYPALIGN_INT));

	schedq_call_begin(&call);

	{
		Datum values[2] = { JsonbPGetDatum(tasks), names };

		if (schedq_execute(
				schedq_plan(
					&plan_many_check,
					"SELECT e.ord, jsonb_typeof(e.elem), k.key"
					" FROM jsonb_array_elements($1) WITH ORDINALITY e(elem, ord)"
					" LEFT JOIN LATERAL (SELECT key FROM jsonb_object_keys("
					"     CASE jsonb_typeof(e.elem) WHEN 'object' THEN e.elem"
					"     ELSE '{}' END) key WHERE key <> ALL ($2) LIMIT 1) k ON true"
					" WHERE jsonb_typeof(e.elem) <> 'object' OR k.key IS NOT NULL"
					" ORDER BY e.ord LIMIT 1",
					2, check_types),
				values, NULL, 0, SPI_OK_SELECT) > 0)
		{
			HeapTuple tuple = SPI_tuptable->vals[0];
			TupleDesc desc = SPI_tuptable->tupdesc;
			char	 *ord = SPI_getvalue(tuple, desc, 1);
			char	 *key = SPI_getvalue(tuple, desc, 3);

			if (key == NULL)
				ereport(
					ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("element %s of tasks is a JSON %s, not an object",
						   ord, SPI_getvalue(tuple, desc, 2)));
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("element %s of tasks has unknown key \"%s\"", ord,
						   key),
					errhint(
						"The keys are the argument names of schedq.submit."));
		}
	}

	n = schedq_execute(
		schedq_plan(
			&plan_many,
			"SELECT r.* FROM jsonb_array_elements($1) WITH ORDINALITY e(elem, ord),"
			" LATERAL jsonb_to_record(e.elem) AS r(kind text, payload jsonb,"
			"   queue text, priority integer, run_at timestamptz,"
			"   max_attempts integer, timeout interval, lock_key text,"
			"   version bigint, concurrency_key text, required_caps text[],"
			"   budgets text[], cost numeric, run_id bigint,"
			"   depends_on bigint[], dedup_key text)"
			" ORDER BY e.ord",
			1, check_types),
		(Datum[]){ JsonbPGetDatum(tasks) }, NULL, 0, SPI_OK_SELECT);
	rows = SPI_tuptable; /* keep it: submit_one runs more queries */

	for (uint64 row = 0; row < n; row++)
	{
		TaskArgs a;
		Datum	 id;
		bool	 isnull = false;

		for (int i = 0; i < NUM_TASK_ARGS; i++)
			a.v[i] = SPI_getbinval(rows->vals[row], rows->tupdesc, i + 1,
								   &a.null[i]);
		submit_apply_defaults(&a);
		submit_check_args(&a);
		id = Int64GetDatum(submit_one(&call, &a));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &id, &isnull);
	}

	schedq_call_end(&call);
	return (Datum) 0;
}

/*
 * Check the task options a periodic schedule carries, by the rules of
 * submit (periodic.c).  Each argument is a Datum of the type submit takes;
 * the nullable ones may be (Datum) 0.  Inside schedq_call_begin.
 */
void
schedq_check_task_options(Datum kind, Datum payload, Datum queue,
						  Datum priority, Datum max_attempts, Datum timeout,
						  Datum lock_key, Datum concurrency_key,
						  Datum required_caps, Datum budgets, Datum cost)
{
	TaskArgs   a;
	ArrayType *arr;

	memset(&a, 0, sizeof(a));
	for (int i = 0; i < NUM_TASK_ARGS; i++)
		a.null[i] = true;
#define OPTION(arg, value)                                                     \
	(a.v[arg] = (value), a.null[arg] = (value) == (Datum) 0)
	OPTION(A_KIND, kind);
	OPTION(A_PAYLOAD, payload);
	OPTION(A_QUEUE, queue);
	OPTION(A_PRIORITY, priority);
	OPTION(A_MAX_ATTEMPTS, max_attempts);
	OPTION(A_TIMEOUT, timeout);
	OPTION(A_LOCK_KEY, lock_key);
	OPTION(A_CONCURRENCY_KEY, concurrency_key);
	OPTION(A_REQUIRED_CAPS, required_caps);
	OPTION(A_BUDGETS, budgets);
	OPTION(A_COST, cost);
#undef OPTION
	/* integers: 0 is a valid value whose Datum is 0 (the callers checked NULL) */
	a.null[A_PRIORITY] = false;
	a.null[A_MAX_ATTEMPTS] = false;
	a.v[A_RUN_AT] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	a.null[A_RUN_AT] = false;
	a.v[A_DEPENDS_ON] = PointerGetDatum(construct_empty_array(INT8OID));
	a.null[A_DEPENDS_ON] = false;
	submit_check_args(&a);

	arr = DatumGetArrayTypeP(a.v[A_BUDGETS]);
	if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) > 0 &&
		schedq_execute(
			schedq_plan(&plan_missing_budget,
						"SELECT b FROM unnest($1) b"
						" WHERE NOT EXISTS (SELECT FROM schedq.budget"
						"   WHERE name = b) LIMIT 1",
						1, (Oid[]){ TEXTARRAYOID }),
			&a.v[A_BUDGETS], NULL, 0, SPI_OK_SELECT) > 0)
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("budget \"%s\" does not exist",
					   SPI_getvalue(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1)),
				errhint("Create it with schedq.set_budget()."));
}

/*
 * The payload {"command": command} of a SQL task.
 */
Datum
schedq_sql_payload(const char *command)
{
	JsonbParseState *state = NULL;
	JsonbValue		 key, value;

	key.type = jbvString;
	key.val.string.val = "command";
	key.val.string.len = strlen("command");
	value.type = jbvString;
	value.val.string.val = (char *) command;
	value.val.string.len = strlen(command);
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	pushJsonbValue(&state, WJB_KEY, &key);
	pushJsonbValue(&state, WJB_VALUE, &value);
	return JsonbPGetDatum(
		JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL)));
}

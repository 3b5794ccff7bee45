/*-------------------------------------------------------------------------
 * store/task.c
 *	  The task table's knowledge (see store/task.h): status names, the options
 *	  of a task with their defaults and checks, and the effects of making
 *	  a task available.
 *
 * A task made available lowers the claim floor to its place in claim
 * order (store/floor.c) and, after commit, wakes one waiting claim that could
 * take it (shared/wake.c).  Every statement that makes tasks available goes
 * through schedq_task_available_at_commit: submit's fast path, promotion,
 * a retry, a periodic tick.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "base/check.h"
#include "base/cron.h"
#include "store/floor.h"
#include "shared/citus.h"
#include "shared/plan.h"
#include "base/settings.h"
#include "store/task.h"
#include "shared/wake.h"

const char *const schedq_task_status_names[TASK_NUM_STATUSES] = {
	[TASK_PENDING] = "pending", [TASK_AVAILABLE] = "available",
	[TASK_RUNNING] = "running", [TASK_DONE] = "done",
	[TASK_FAILED] = "failed",	[TASK_CANCELED] = "canceled",
	[TASK_SKIPPED] = "skipped",
};

#define TASK_COLUMN_NAME(sym, name, type, notnull) [TASK_COL_##sym] = #name,
const char *const schedq_task_column_names[TASK_NUM_COLUMNS] = { TASK_COLUMNS(
	TASK_COLUMN_NAME) };
#define TASK_COLUMN_TYPE(sym, name, type, notnull) [TASK_COL_##sym] = (type),
const Oid schedq_task_column_types[TASK_NUM_COLUMNS] = { TASK_COLUMNS(
	TASK_COLUMN_TYPE) };
#define TASK_COLUMN_NOTNULL(sym, name, type, notnull)                          \
	[TASK_COL_##sym] = (notnull),
const bool schedq_task_column_notnull[TASK_NUM_COLUMNS] = { TASK_COLUMNS(
	TASK_COLUMN_NOTNULL) };
#define TASK_OPTION_COLUMN(sym, column, sqltype) [OPT_##sym] = TASK_COL_##sym,
const SchedqTaskColumn schedq_task_option_columns[TASK_NUM_OPTIONS] = {
	TASK_OPTIONS(TASK_OPTION_COLUMN)
};
#define TASK_OPTION_NAME(sym, column, sqltype) [OPT_##sym] = #column,
const char *const schedq_task_option_names[TASK_NUM_OPTIONS] = { TASK_OPTIONS(
	TASK_OPTION_NAME) };
#define TASK_OPTION_SQLTYPE(sym, column, sqltype) [OPT_##sym] = (sqltype),
const char *const schedq_task_option_sqltypes[TASK_NUM_OPTIONS] = {
	TASK_OPTIONS(TASK_OPTION_SQLTYPE)
};

/* Options that may stay NULL: the others have a default. */
#define OPTION_NULLABLE(opt)                                                   \
	((opt) == OPT_TIMEOUT || (opt) == OPT_LOCK_KEY || (opt) == OPT_VERSION ||  \
	 (opt) == OPT_CONCURRENCY_KEY || (opt) == OPT_RUN_ID ||                    \
	 (opt) == OPT_DEDUP_KEY)

/*
 * The status of the given name; an error for anything else.
 */
SchedqTaskStatus
schedq_task_status(const char *name)
{
	for (int s = 0; s < TASK_NUM_STATUSES; s++)
		if (strcmp(name, schedq_task_status_names[s]) == 0)
			return (SchedqTaskStatus) s;
	elog(ERROR, "unknown task status \"%s\"", name);
	pg_unreachable();
}

/*
 * Every option NULL.
 */
void
schedq_task_options_init(SchedqTaskOptions *opts)
{
	for (int i = 0; i < TASK_NUM_OPTIONS; i++)
	{
		opts->v[i] = (Datum) 0;
		opts->null[i] = true;
	}
	opts->sql = false;
}

/*
 * Fill in what an omitted option means.  submit() gets its defaults from
 * its SQL declaration; submit_many() and schedules get them here.
 */
void
schedq_task_options_defaults(SchedqTaskOptions *opts)
{
	Datum *v = opts->v;

	if (opts->null[OPT_PAYLOAD])
		v[OPT_PAYLOAD] =
			DirectFunctionCall1(jsonb_in,
								CStringGetDatum(TASK_DEFAULT_PAYLOAD));
	if (opts->null[OPT_QUEUE])
		v[OPT_QUEUE] = CStringGetTextDatum(TASK_DEFAULT_QUEUE);
	if (opts->null[OPT_PRIORITY])
		v[OPT_PRIORITY] = Int32GetDatum(TASK_DEFAULT_PRIORITY);
	if (opts->null[OPT_RUN_AT])
		v[OPT_RUN_AT] =
			TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	if (opts->null[OPT_MAX_ATTEMPTS])
		v[OPT_MAX_ATTEMPTS] = Int32GetDatum(TASK_DEFAULT_MAX_ATTEMPTS);
	if (opts->null[OPT_REQUIRED_CAPS])
		v[OPT_REQUIRED_CAPS] = PointerGetDatum(construct_empty_array(TEXTOID));
	if (opts->null[OPT_BUDGETS])
		v[OPT_BUDGETS] = PointerGetDatum(construct_empty_array(TEXTOID));
	if (opts->null[OPT_COST])
		v[OPT_COST] = NumericGetDatum(int64_to_numeric(TASK_DEFAULT_COST));
	if (opts->null[OPT_DEPENDS_ON])
		v[OPT_DEPENDS_ON] = PointerGetDatum(construct_empty_array(INT8OID));
	for (int i = 0; i < TASK_NUM_OPTIONS; i++)
		if (!OPTION_NULLABLE(i) && i != OPT_KIND)
			opts->null[i] = false;
}

static void
option_require(const SchedqTaskOptions *opts, SchedqTaskOption opt)
{
	if (opts->null[opt])
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not be null", schedq_task_option_names[opt]));
}

/*
 * An error unless the text option is a non-empty name.
 */
static void
option_check_name(const SchedqTaskOptions *opts, SchedqTaskOption opt)
{
	option_require(opts, opt);
	if (VARSIZE_ANY_EXHDR(DatumGetPointer(opts->v[opt])) == 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s must not be empty", schedq_task_option_names[opt]));
	schedq_check_name(schedq_task_option_names[opt],
					  DatumGetTextPP(opts->v[opt]));
}

/*
 * Do the (checked) options name a task for the SQL executors: kind 'sql'
 * and the capability 'sql' among the required ones?
 */
static bool
task_options_name_sql(const SchedqTaskOptions *opts)
{
	Datum *caps;
	int	   ncaps;

	if (strcmp(TextDatumGetCString(opts->v[OPT_KIND]), TASK_SQL) != 0)
		return false;
	deconstruct_array(DatumGetArrayTypeP(opts->v[OPT_REQUIRED_CAPS]), TEXTOID,
					  -1, false, TYPALIGN_INT, &caps, NULL, &ncaps);
	for (int i = 0; i < ncaps; i++)
		if (strcmp(TextDatumGetCString(caps[i]), TASK_SQL) == 0)
			return true;
	return false;
}

/*
 * Check every option that needs no query.
 */
void
schedq_task_options_check(SchedqTaskOptions *opts)
{
	ArrayType *deps;
	Numeric	   cost;

	option_check_name(opts, OPT_KIND);
	option_check_name(opts, OPT_QUEUE);
	for (int i = OPT_PAYLOAD; i <= OPT_DEPENDS_ON; i++)
		if (!OPTION_NULLABLE(i))
			option_require(opts, i);

	schedq_check_jsonb_size("payload", opts->v[OPT_PAYLOAD]);
	schedq_check_run_at(DatumGetTimestampTz(opts->v[OPT_RUN_AT]));

	if (DatumGetInt32(opts->v[OPT_MAX_ATTEMPTS]) <= 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_attempts must be positive"));

	if (!opts->null[OPT_TIMEOUT])
		(void) schedq_check_interval("timeout",
									 DatumGetIntervalP(opts->v[OPT_TIMEOUT]),
									 false, SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);

	if (!opts->null[OPT_LOCK_KEY])
		option_check_name(opts, OPT_LOCK_KEY);
	if (!opts->null[OPT_VERSION] && opts->null[OPT_LOCK_KEY])
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("version requires lock_key"));
	if (!opts->null[OPT_CONCURRENCY_KEY])
		option_check_name(opts, OPT_CONCURRENCY_KEY);
	if (!opts->null[OPT_DEDUP_KEY])
		option_check_name(opts, OPT_DEDUP_KEY);

	schedq_check_names("required_caps",
					   DatumGetArrayTypeP(opts->v[OPT_REQUIRED_CAPS]),
					   SCHEDQ_MAX_NAMES);
	schedq_check_names("budgets", DatumGetArrayTypeP(opts->v[OPT_BUDGETS]),
					   SCHEDQ_MAX_NAMES);
	deps = DatumGetArrayTypeP(opts->v[OPT_DEPENDS_ON]);
	if (ARR_NDIM(deps) > 1)
		ereport(ERROR, errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("depends_on must be a one-dimensional array"));
	if (array_contains_nulls(deps))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("depends_on must not contain nulls"));
	if (ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > TASK_MAX_DEPENDS)
		ereport(ERROR, errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("depends_on must have at most %d elements",
					   TASK_MAX_DEPENDS));

	/*
	 * What the SQL executors run is made only by submit_sql and
	 * schedule_sql: their grants, their default timeout.
	 */
	if (!opts->sql && task_options_name_sql(opts))
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("a task of kind \"%s\" requiring the capability \"%s\" "
					   "is a SQL task",
					   TASK_SQL, TASK_SQL),
				errhint("Submit it with schedq.submit_sql or schedule it with "
						"schedq.schedule_sql."));

	cost = DatumGetNumeric(opts->v[OPT_COST]);
	if (numeric_is_nan(cost) || numeric_is_inf(cost) ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, NumericGetDatum(cost),
										 NumericGetDatum(int64_to_numeric(0)))))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("cost must be a finite number not below zero"));
}

/*
 * Make the options those of a SQL task for the built-in executor: kind
 * 'sql', payload {"command": command}, the capability 'sql' among the
 * required ones, so that only the SQL executors (or a worker claiming with that
 * capability) ever receives it, and schedq.sql_task_timeout as the timeout
 * when none is given, so that a forgotten command does not hold an
 * executor for ever.
 */
void
schedq_task_options_add_sql(SchedqTaskOptions *opts, const char *command)
{
	JsonbParseState *state = NULL;
	JsonbValue		 key, value;
	ArrayType		*arr;
	Datum			*caps;
	int				 ncaps;
	Datum			*all;

	if (command[strspn(command, " \t\r\n")] == '\0')
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("command must not be empty"));

	key.type = jbvString;
	key.val.string.val = "command";
	key.val.string.len = strlen("command");
	value.type = jbvString;
	value.val.string.val = (char *) command;
	value.val.string.len = strlen(command);
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	pushJsonbValue(&state, WJB_KEY, &key);
	pushJsonbValue(&state, WJB_VALUE, &value);
	opts->v[OPT_PAYLOAD] = JsonbPGetDatum(
		JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL)));
	opts->null[OPT_PAYLOAD] = false;
	opts->v[OPT_KIND] = CStringGetTextDatum(TASK_SQL);
	opts->null[OPT_KIND] = false;
	opts->sql = true;
	if (opts->null[OPT_TIMEOUT] && schedq_sql_task_timeout_s > 0)
	{
		Interval *timeout = palloc0(sizeof(Interval));

		timeout->time = (int64) schedq_sql_task_timeout_s * USECS_PER_SEC;
		opts->v[OPT_TIMEOUT] = IntervalPGetDatum(timeout);
		opts->null[OPT_TIMEOUT] = false;
	}

	/* a bad required_caps is left for schedq_task_options_check to report */
	if (opts->null[OPT_REQUIRED_CAPS])
		return;
	arr = DatumGetArrayTypeP(opts->v[OPT_REQUIRED_CAPS]);
	if (ARR_NDIM(arr) > 1 || array_contains_nulls(arr))
		return;
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &caps, NULL,
					  &ncaps);
	for (int i = 0; i < ncaps; i++)
		if (strcmp(TextDatumGetCString(caps[i]), TASK_SQL) == 0)
			return;
	all = palloc((ncaps + 1) * sizeof(Datum));
	memcpy(all, caps, ncaps * sizeof(Datum));
	all[ncaps] = CStringGetTextDatum(TASK_SQL);
	opts->v[OPT_REQUIRED_CAPS] = PointerGetDatum(
		construct_array(all, ncaps + 1, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Must a task with these (checked) options start 'pending', for the
 * promotion pass to judge?  Yes when its run_at is still to come or it
 * names a key or a dependency (the C form of TASK_UNGATED_SQL).
 */
bool
schedq_task_options_gated(const SchedqTaskOptions *opts)
{
	ArrayType *deps = DatumGetArrayTypeP(opts->v[OPT_DEPENDS_ON]);

	return DatumGetTimestampTz(opts->v[OPT_RUN_AT]) >
			   GetCurrentTransactionStartTimestamp() ||
		   ArrayGetNItems(ARR_NDIM(deps), ARR_DIMS(deps)) > 0 ||
		   !opts->null[OPT_LOCK_KEY] || !opts->null[OPT_CONCURRENCY_KEY];
}

static SchedqQuery q_missing_budget =
	SCHEDQ_QUERY("SELECT b FROM unnest($1) b"
				 " WHERE NOT EXISTS (SELECT FROM schedq.budget"
				 "   WHERE name = b) LIMIT 1",
				 TEXTARRAYOID);

/*
 * An error unless every named budget exists.  Inside the call bracket.
 */
void
schedq_task_check_budgets(Datum budgets)
{
	ArrayType *arr = DatumGetArrayTypeP(budgets);

	if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) > 0 &&
		schedq_plan_run(&q_missing_budget, &budgets, NULL, 0, SPI_OK_SELECT) >
			0)
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("budget \"%s\" does not exist",
					   SPI_getvalue(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1)),
				errhint("Create it with schedq.set_budget()."));
}

/*
 * A task of this queue with these required capabilities and this place in
 * claim order (a lower bound of it will do) is made available by this
 * transaction: lower the claim floor to it, and after commit wake one
 * waiting claim that could take it.
 */
void
schedq_task_available_at_commit(const char *queue, ArrayType *required_caps,
								int32 priority, TimestampTz run_at, int64 id)
{
	schedq_floor_lower_at_commit(priority, run_at, id);
	schedq_wake_claimers_at_commit(queue, required_caps, priority, run_at, id);
}

/*
 * The same for a row a statement returned, whose TASK_AVAILABLE_COLUMNS
 * start at first_column.
 */
void
schedq_task_row_available_at_commit(HeapTuple row, TupleDesc desc,
									int first_column)
{
	bool isnull;

	schedq_task_available_at_commit(SPI_getvalue(row, desc, first_column),
									DatumGetArrayTypeP(
										SPI_getbinval(row, desc,
													  first_column + 1,
													  &isnull)),
									DatumGetInt32(
										SPI_getbinval(row, desc,
													  first_column + 2,
													  &isnull)),
									DatumGetTimestampTz(
										SPI_getbinval(row, desc,
													  first_column + 3,
													  &isnull)),
									DatumGetInt64(
										SPI_getbinval(row, desc,
													  first_column + 4,
													  &isnull)));
}

static SchedqQuery q_gate_event =
	SCHEDQ_QUERY("INSERT INTO schedq.gate_event"
				 " (lock_key, concurrency_key, task_id) VALUES ($1, $2, $3)",
				 TEXTOID, TEXTOID, INT8OID);

/*
 * Record a gate event: values are its lock_key, concurrency_key and
 * task_id (nulls as SPI takes them, 'n' for NULL), and wake the scheduler
 * after commit.  The status trigger records one when a task holding a key,
 * or one that others depend on, leaves 'available'/'running'; so does a
 * complete that writes without the statement (store/direct.c).  SPI connected.
 */
void
schedq_task_gate_event(Datum *values, const char *nulls)
{
	schedq_plan_run(&q_gate_event, values, nulls, 0, SPI_OK_INSERT);
	schedq_wake_scheduler_at_commit();
}

/* Is schedq.task distributed by Citus in this database? */
bool
schedq_task_distributed(void)
{
	Oid nsp;

	/* on a shard (pass/shards.c), schedq.task names a plain table */
	if (schedq_plan_shard() != 0)
		return false;
	if (!OidIsValid(
			get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	nsp = get_namespace_oid("schedq", true);
	return OidIsValid(nsp) &&
		   schedq_citus_table(get_relname_relid("task", nsp));
}

/*
 * Refuse a call that cannot keep its promise on a distributed schedq, with
 * 0A000, before it changes anything: detail says why, hint what to do.
 */
void
schedq_task_refuse_distributed(const char *call, const char *detail,
							   const char *hint)
{
	if (schedq_task_distributed())
		ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("%s is not supported on a distributed schedq", call),
				errdetail_internal("%s", detail), errhint("%s", hint));
}

/*
 * Is schedq.task distributed, for a transaction of the scheduler's passes:
 * with the table locked first (AccessShareLock, to the transaction's end),
 * so that schedq.distribute(), which locks it exclusively, cannot make it
 * distributed between the answer and the passes' statements.
 */
bool
schedq_task_distributed_locked(void)
{
	Oid nsp = get_namespace_oid("schedq", true);
	Oid relid = OidIsValid(nsp) ? get_relname_relid("task", nsp) : InvalidOid;

	if (OidIsValid(relid))
		LockRelationOid(relid, AccessShareLock);
	return schedq_task_distributed();
}

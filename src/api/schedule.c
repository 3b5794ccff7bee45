/*-------------------------------------------------------------------------
 * api/schedule.c
 *	  Periodic tasks: schedule, schedule_sql, unschedule,
 *	  set_schedule_enabled, run_schedule_now and next_runs.
 *
 * A schedule is a row of schedq.periodic, owned by the role that created
 * it; its tasks are fired by the periodic pass (pass/periodic.c).  The
 * task options a schedule carries are checked by the rules of submit.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "base/check.h"
#include "base/cron.h"
#include "base/cron_start.h"
#include "shared/isolate.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "store/task.h"
#include "store/task_ticks.h"
#include "shared/wake.h"

#define NEXT_RUNS_MAX 10000

/*
 * The arguments of the statements that write a schedule: its columns in
 * schedule()'s order, its first run, the owner ($17: by OID, or by name on
 * a cluster) and whether the caller is an admin ($18).
 */
#define PERIODIC_WRITE_ARGS(owner_type)                                        \
	TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, BOOLOID, TEXTOID, INT4OID,   \
		INT4OID, INTERVALOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID,    \
		NUMERICOID, TIMESTAMPTZOID, owner_type, BOOLOID

static SchedqQuery q_upsert = SCHEDQ_QUERY(
	"INSERT INTO schedq.periodic AS p (name, schedule, kind, payload, timezone,"
	"  enabled, queue, priority, max_attempts, timeout, lock_key,"
	"  concurrency_key, required_caps, budgets, cost, next_run, owner)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
	"  $15, $16, $17::regrole)"
	" ON CONFLICT (name) DO UPDATE SET schedule = EXCLUDED.schedule,"
	"  kind = EXCLUDED.kind, payload = EXCLUDED.payload,"
	"  timezone = EXCLUDED.timezone, enabled = EXCLUDED.enabled,"
	"  queue = EXCLUDED.queue, priority = EXCLUDED.priority,"
	"  max_attempts = EXCLUDED.max_attempts, timeout = EXCLUDED.timeout,"
	"  lock_key = EXCLUDED.lock_key, concurrency_key = EXCLUDED.concurrency_key,"
	"  required_caps = EXCLUDED.required_caps, budgets = EXCLUDED.budgets,"
	"  cost = EXCLUDED.cost, next_run = EXCLUDED.next_run,"
	"  owner = EXCLUDED.owner, last_error = NULL, updated_at = now()"
	/* a row another role inserted meanwhile is that role's to replace */
	" WHERE $18 OR pg_has_role($17, p.owner::oid, 'USAGE')",
	PERIODIC_WRITE_ARGS(OIDOID));
/*
 * On a distributed schedq (schedq.periodic a reference table) Citus plans
 * no kept INSERT ... ON CONFLICT on it: the row, locked by q_owner, is
 * replaced, or a new one inserted.  $17 is the owner's name there, quoted
 * (a role's OID differs from node to node); $18 is not used.
 */
static SchedqQuery q_cluster_replace = SCHEDQ_QUERY(
	"UPDATE schedq.periodic SET schedule = $2, kind = $3, payload = $4,"
	"  timezone = $5, enabled = $6, queue = $7, priority = $8,"
	"  max_attempts = $9, timeout = $10, lock_key = $11,"
	"  concurrency_key = $12, required_caps = $13, budgets = $14,"
	"  cost = $15, next_run = $16, owner = $17::regrole, last_error = NULL,"
	"  updated_at = now()"
	" WHERE name = $1",
	PERIODIC_WRITE_ARGS(TEXTOID));
static SchedqQuery q_cluster_new = SCHEDQ_QUERY(
	"INSERT INTO schedq.periodic (name, schedule, kind, payload, timezone,"
	"  enabled, queue, priority, max_attempts, timeout, lock_key,"
	"  concurrency_key, required_caps, budgets, cost, next_run, owner)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
	"  $15, $16, $17::regrole)",
	PERIODIC_WRITE_ARGS(TEXTOID));
static SchedqQuery q_owner = SCHEDQ_QUERY(
	"SELECT owner::oid FROM schedq.periodic WHERE name = $1 FOR UPDATE",
	TEXTOID);
static SchedqQuery q_row = SCHEDQ_QUERY(
	"SELECT owner::oid, schedule, timezone, enabled FROM schedq.periodic"
	" WHERE name = $1 FOR UPDATE",
	TEXTOID);
static SchedqQuery q_set_enabled =
	SCHEDQ_QUERY("UPDATE schedq.periodic SET enabled = $2,"
				 "  next_run = COALESCE($3, next_run),"
				 "  last_error = CASE WHEN $2 THEN NULL ELSE last_error END,"
				 "  updated_at = now() WHERE name = $1",
				 TEXTOID, BOOLOID, TIMESTAMPTZOID);
static SchedqQuery q_run_row =
	SCHEDQ_QUERY("SELECT owner::oid, enabled, next_task_id FROM schedq.periodic"
				 " WHERE name = $1 FOR UPDATE",
				 TEXTOID);
static SchedqQuery q_run_now =
	SCHEDQ_QUERY("UPDATE schedq.periodic SET next_run = least(next_run, $2),"
				 "  updated_at = now() WHERE name = $1",
				 TEXTOID, TIMESTAMPTZOID);
static SchedqQuery q_delete =
	SCHEDQ_QUERY("DELETE FROM schedq.periodic WHERE name = $1", TEXTOID);
/*
 * Parse a schedule and its time zone and find its first run after
 * `after`.  Raises an error for a bad schedule, a bad time zone, or a
 * schedule that never fires.
 */
static TimestampTz
periodic_first_run(const char *schedule, const char *timezone,
				   TimestampTz after)
{
	SchedqSchedule sched;
	pg_tz		  *tz;
	TimestampTz	   next;

	schedq_cron_parse(schedule, &sched);
	tz = schedq_cron_timezone(timezone);
	if (!schedq_cron_start_next(&sched, tz, after, &next))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("schedule \"%s\" never fires", schedule),
				errdetail("No time after %s matches it.",
						  timestamptz_to_str(after)));
	return next;
}

/*
 * An error unless a schedule and its time zone are within the limits
 * (base/check.h), before either is parsed or quoted in a message.
 */
static void
periodic_check_schedule(text *schedule, text *timezone)
{
	schedq_check_text_size("schedule", schedule, SCHEDQ_MAX_SCHEDULE_BYTES);
	schedq_check_name("timezone", timezone);
}

PG_FUNCTION_INFO_V1(schedq_next_runs);

/*
 * schedq.next_runs(schedule, timezone, after, n): the next n runs.
 */
Datum
schedq_next_runs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char		  *schedule;
	char		  *timezone;
	TimestampTz	   after = PG_GETARG_TIMESTAMPTZ(2);
	int32		   n = PG_GETARG_INT32(3);
	SchedqSchedule sched;
	pg_tz		  *tz;

	periodic_check_schedule(PG_GETARG_TEXT_PP(0), PG_GETARG_TEXT_PP(1));
	schedule = text_to_cstring(PG_GETARG_TEXT_PP(0));
	timezone = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (n <= 0 || n > NEXT_RUNS_MAX)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("n must be between 1 and %d", NEXT_RUNS_MAX));
	if (TIMESTAMP_NOT_FINITE(after))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("after must be finite"));
	schedq_cron_parse(schedule, &sched);
	tz = schedq_cron_timezone(timezone);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int i = 0; i < n; i++)
	{
		TimestampTz next;
		Datum		value;
		bool		isnull = false;

		CHECK_FOR_INTERRUPTS();
		if (!schedq_cron_start_next(&sched, tz, after, &next) ||
			TIMESTAMP_NOT_FINITE(next))
			break;
		value = TimestampTzGetDatum(next);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value,
							 &isnull);
		after = next;
	}
	return (Datum) 0;
}

/* The columns of a schedule (schedule's arguments) and of its tasks. */
#define SCHEDULE_COLUMNS 15

static const int schedule_task_options[SCHEDULE_COLUMNS] = {
	-1, /* name */
	-1, /* schedule */
	OPT_KIND,
	OPT_PAYLOAD,
	-1, /* timezone */
	-1, /* enabled */
	OPT_QUEUE,
	OPT_PRIORITY,
	OPT_MAX_ATTEMPTS,
	OPT_TIMEOUT,
	OPT_LOCK_KEY,
	OPT_CONCURRENCY_KEY,
	OPT_REQUIRED_CAPS,
	OPT_BUDGETS,
	OPT_COST,
};

/*
 * Check the task options a schedule carries, by the rules of submit.
 * Inside the call bracket.
 */
static void
periodic_check_options(Datum *values, bool *nulls, bool sql)
{
	SchedqTaskOptions opts;

	schedq_task_options_init(&opts);
	opts.sql = sql;
	for (int i = 0; i < SCHEDULE_COLUMNS; i++)
		if (schedule_task_options[i] >= 0)
		{
			opts.v[schedule_task_options[i]] = values[i];
			opts.null[schedule_task_options[i]] = nulls[i];
		}
	/* what no schedule has: a run_at (each tick's own), dependencies */
	opts.v[OPT_RUN_AT] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	opts.null[OPT_RUN_AT] = false;
	opts.v[OPT_DEPENDS_ON] = PointerGetDatum(construct_empty_array(INT8OID));
	opts.null[OPT_DEPENDS_ON] = false;
	schedq_task_options_check(&opts);
	schedq_task_check_budgets(opts.v[OPT_BUDGETS]);
}

/*
 * Create or replace a schedule (sql: of a SQL task, by schedule_sql).
 * values[] holds, in order: name, schedule, kind, payload, timezone,
 * enabled, queue, priority, max_attempts, timeout, lock_key,
 * concurrency_key, required_caps, budgets, cost.
 */
static void
periodic_upsert(Datum *values, bool *nulls, bool sql)
{
	static const char *const required[] = {
		"name",	   "schedule", "kind",			"payload",		"timezone",
		"enabled", "queue",	   "priority",		"max_attempts", NULL,
		NULL,	   NULL,	   "required_caps", "budgets",		"cost"
	};
	Datum		args[SCHEDULE_COLUMNS + 3];
	char		argnulls[SCHEDULE_COLUMNS + 3];
	SchedqCall	call;
	char	   *name;
	TimestampTz next;
	bool		isnull;
	bool		exists;

	for (int i = 0; i < SCHEDULE_COLUMNS; i++)
		if (nulls[i] && required[i] != NULL)
			ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("%s must not be null", required[i]));
	name = TextDatumGetCString(values[0]);
	if (name[0] == '\0')
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("name must not be empty"));
	schedq_check_name("name", DatumGetTextPP(values[0]));
	periodic_check_schedule(DatumGetTextPP(values[1]),
							DatumGetTextPP(values[4]));
	next = periodic_first_run(TextDatumGetCString(values[1]),
							  TextDatumGetCString(values[4]),
							  GetCurrentTimestamp());

	schedq_call_begin(&call);
	periodic_check_options(values, nulls, sql);

	/* replacing another role's schedule takes that role's privileges */
	exists = schedq_plan_run(&q_owner, values, NULL, 0, SPI_OK_SELECT) > 0;
	if (exists &&
		!schedq_call_acts_for(&call, DatumGetObjectId(
										 SPI_getbinval(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 1,
													   &isnull))))
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied for periodic task \"%s\"", name));

	for (int i = 0; i < SCHEDULE_COLUMNS; i++)
	{
		args[i] = values[i];
		argnulls[i] = nulls[i] ? 'n' : ' ';
	}
	args[SCHEDULE_COLUMNS] = TimestampTzGetDatum(next);
	argnulls[SCHEDULE_COLUMNS] = ' ';
	args[SCHEDULE_COLUMNS + 1] = ObjectIdGetDatum(call.caller);
	argnulls[SCHEDULE_COLUMNS + 1] = ' ';
	args[SCHEDULE_COLUMNS + 2] = BoolGetDatum(call.admin);
	argnulls[SCHEDULE_COLUMNS + 2] = ' ';

	if (schedq_task_distributed())
	{
		/*
		 * A concurrent schedule() of the same new name fails here with
		 * 23505, changing nothing.
		 */
		args[SCHEDULE_COLUMNS + 1] = CStringGetTextDatum(
			quote_identifier(GetUserNameFromId(call.caller, false)));
		if (exists)
			schedq_plan_run(&q_cluster_replace, args, argnulls, 0,
							SPI_OK_UPDATE);
		else
			schedq_plan_run(&q_cluster_new, args, argnulls, 0, SPI_OK_INSERT);
	}

	/*
	 * The owner check above sees no row when another role is inserting
	 * the same name concurrently; ON CONFLICT then waits for it, and its
	 * WHERE refuses to replace that role's schedule.
	 */
	else if (schedq_plan_run(&q_upsert, args, argnulls, 0, SPI_OK_INSERT) == 0)
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied for periodic task \"%s\"", name));
	schedq_call_end(&call);
	schedq_wake_scheduler_at_commit();
}

PG_FUNCTION_INFO_V1(schedq_schedule);

/*
 * schedq.schedule(name, schedule, kind, payload, timezone, enabled, queue,
 * priority, max_attempts, timeout, lock_key, concurrency_key,
 * required_caps, budgets, cost): create or replace by name.
 */
Datum
schedq_schedule(PG_FUNCTION_ARGS)
{
	Datum values[SCHEDULE_COLUMNS];
	bool  nulls[SCHEDULE_COLUMNS];

	for (int i = 0; i < SCHEDULE_COLUMNS; i++)
	{
		nulls[i] = PG_ARGISNULL(i);
		values[i] = nulls[i] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	periodic_upsert(values, nulls, false);
	PG_RETURN_DATUM(values[0]);
}

PG_FUNCTION_INFO_V1(schedq_schedule_sql);

/*
 * schedq.schedule_sql(name, schedule, command, timezone, enabled, priority,
 * max_attempts, timeout): a periodic SQL task for the built-in executor,
 * run as the role that scheduled it, with every other option at its
 * default.
 */
Datum
schedq_schedule_sql(PG_FUNCTION_ARGS)
{
	SchedqTaskOptions opts;
	Datum			  values[SCHEDULE_COLUMNS];
	bool			  nulls[SCHEDULE_COLUMNS];

	if (PG_ARGISNULL(2))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("command must not be null"));
	schedq_task_options_init(&opts);
	schedq_task_options_defaults(&opts);
	schedq_task_options_add_sql(&opts, text_to_cstring(PG_GETARG_TEXT_PP(2)));
	for (int i = 0; i < SCHEDULE_COLUMNS; i++)
		if (schedule_task_options[i] >= 0)
		{
			values[i] = opts.v[schedule_task_options[i]];
			nulls[i] = opts.null[schedule_task_options[i]];
		}
	values[0] = PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0);
	values[1] = PG_GETARG_DATUM(1);
	nulls[1] = PG_ARGISNULL(1);
	values[4] = PG_GETARG_DATUM(3);
	nulls[4] = PG_ARGISNULL(3);
	/* enabled, priority, max_attempts, timeout, lock_key: as schedule's
	 * (a 1.1 catalog's schedule_sql has none of them), but a NULL timeout
	 * is a SQL task's default, schedq.sql_task_timeout */
	values[5] = BoolGetDatum(true);
	nulls[5] = false;
	for (int i = 0; i < 5 && PG_NARGS() >= 9; i++)
	{
		static const int column[] = { 5, 7, 8, 9, 10 };

		if (column[i] == 9 && PG_ARGISNULL(4 + i))
			continue;
		values[column[i]] = PG_GETARG_DATUM(4 + i);
		nulls[column[i]] = PG_ARGISNULL(4 + i);
	}
	periodic_upsert(values, nulls, true);
	PG_RETURN_DATUM(values[0]);
}

PG_FUNCTION_INFO_V1(schedq_unschedule);

/*
 * schedq.unschedule(name): remove a schedule.  Its tasks stay.
 */
Datum
schedq_unschedule(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Datum	   name;
	bool	   found = false;
	bool	   isnull;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("name must not be null"));
	name = PG_GETARG_DATUM(0);
	schedq_check_name("name", DatumGetTextPP(name));

	schedq_call_begin(&call);
	if (schedq_plan_run(&q_owner, &name, NULL, 0, SPI_OK_SELECT) > 0)
	{
		if (!schedq_call_acts_for(&call,
								  DatumGetObjectId(
									  SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 1,
													&isnull))))
			ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied for periodic task \"%s\"",
						   TextDatumGetCString(name)));
		found = schedq_plan_run(&q_delete, &name, NULL, 0, SPI_OK_DELETE) > 0;
	}
	schedq_call_end(&call);
	PG_RETURN_BOOL(found);
}

PG_FUNCTION_INFO_V1(schedq_set_schedule_enabled);

/*
 * schedq.set_schedule_enabled(name, enabled): enable or disable a schedule
 * and nothing else; its owner stays (schedule() would make the caller
 * the owner).  Enabling a disabled one starts it from now, as schedule()
 * does.  False when there is none by that name.
 */
Datum
schedq_set_schedule_enabled(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Datum	   args[3];
	char	   nulls[3] = { ' ', ' ', ' ' };
	bool	   enabled;
	bool	   found = false;
	bool	   isnull;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("name must not be null"));
	if (PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("enabled must not be null"));
	args[0] = PG_GETARG_DATUM(0);
	enabled = PG_GETARG_BOOL(1);
	args[1] = BoolGetDatum(enabled);
	schedq_check_name("name", DatumGetTextPP(args[0]));

	schedq_call_begin(&call);
	if (schedq_plan_run(&q_row, args, NULL, 0, SPI_OK_SELECT) > 0)
	{
		HeapTuple tuple = SPI_tuptable->vals[0];
		TupleDesc desc = SPI_tuptable->tupdesc;
		Oid owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 1, &isnull));

		if (!schedq_call_acts_for(&call, owner))
			ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied for periodic task \"%s\"",
						   TextDatumGetCString(args[0])));
		if (enabled && !DatumGetBool(SPI_getbinval(tuple, desc, 4, &isnull)))
		{
			/* from now on, as schedule() starts it */
			args[2] = TimestampTzGetDatum(
				periodic_first_run(SPI_getvalue(tuple, desc, 2),
								   SPI_getvalue(tuple, desc, 3),
								   GetCurrentTimestamp()));
		}
		else
		{
			/* the same next run (disabling, or enabling an enabled one) */
			args[2] = (Datum) 0;
			nulls[2] = 'n';
		}
		found =
			schedq_plan_run(&q_set_enabled, args, nulls, 0, SPI_OK_UPDATE) > 0;
	}
	schedq_call_end(&call);
	if (found && enabled)
		schedq_wake_scheduler_at_commit();
	PG_RETURN_BOOL(found);
}

PG_FUNCTION_INFO_V1(schedq_run_schedule_now);

/*
 * schedq.run_schedule_now(name): make the schedule's next tick due now
 * (the transaction's start) and wake the periodic pass; the tick after it
 * is the schedule's own next, as after any tick.  Returns the id the
 * tick's task takes (next_task_id).  Refused, changing nothing, for a
 * disabled schedule (55000) and while the task of its last tick is still
 * live (55006): a periodic task never overlaps itself, and a tick the
 * pass would skip must not be promised.  The row lock taken here is the
 * one the pass takes, so no tick fires between the check and the commit.
 */
Datum
schedq_run_schedule_now(PG_FUNCTION_ARGS)
{
	SchedqCall	call;
	Datum		args[2];
	HeapTuple	tuple;
	TupleDesc	desc;
	const char *busy;
	int64		busy_id = 0;
	int64		task_id;
	bool		isnull;
	char	   *name;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("name must not be null"));
	args[0] = PG_GETARG_DATUM(0);
	schedq_check_name("name", DatumGetTextPP(args[0]));
	name = TextDatumGetCString(args[0]);
	args[1] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());

	schedq_call_begin(&call);
	if (schedq_plan_run(&q_run_row, args, NULL, 0, SPI_OK_SELECT) == 0)
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("periodic task \"%s\" does not exist", name));
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	if (!schedq_call_acts_for(&call,
							  DatumGetObjectId(
								  SPI_getbinval(tuple, desc, 1, &isnull))))
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied for periodic task \"%s\"", name));
	if (!DatumGetBool(SPI_getbinval(tuple, desc, 2, &isnull)))
		ereport(ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("periodic task \"%s\" is disabled", name),
				errhint("Enable it with schedq.set_schedule_enabled."));
	task_id = DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
	busy = schedq_task_ticks_live_last(args[0], &busy_id);
	if (busy != NULL)
		ereport(ERROR, errcode(ERRCODE_OBJECT_IN_USE),
				errmsg("the last task of periodic task \"%s\" is still %s",
					   name, busy),
				errdetail("Its task %lld, of its last tick, is %s; a periodic "
						  "task never overlaps itself.",
						  (long long) busy_id, busy),
				errhint("Run it now once that task has finished."));
	schedq_plan_run(&q_run_now, args, NULL, 0, SPI_OK_UPDATE);
	schedq_call_end(&call);
	schedq_wake_scheduler_at_commit();
	PG_RETURN_INT64(task_id);
}

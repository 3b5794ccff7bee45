/*-------------------------------------------------------------------------
 * pass/periodic.c
 *	  The periodic pass the scheduler runs: fire every due tick.
 *
 * A schedule's state is its row in schedq.periodic: next_run is the tick
 * to fire next.  The pass fires every due tick in one statement: it locks
 * the due rows (SKIP LOCKED), submits a task for each whose last task is
 * finished, counts a skip for each whose last task is still live (a
 * periodic task never overlaps itself), and moves next_run to the first
 * tick after max(the tick, now) -- so ticks missed while the server was
 * down fire once, not once each.  The task and the new next_run commit
 * together, guarded by the row lock, so a tick fires at most once whatever
 * crashes, restarts or failovers happen.
 *
 * If that statement fails (a schedule whose time zone disappeared, say),
 * the due schedules are fired one by one in subtransactions: the bad one
 * records its error and moves on (or is disabled when its next run cannot
 * be computed); the others fire.
 *
 * On a distributed schedq only the coordinator's scheduler runs this pass
 * (the other nodes' find nothing due), and always one by one, with the
 * statements Citus can route (store/task_ticks.c).
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
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "shared/citus.h"
#include "base/check.h"
#include "base/cron.h"
#include "shared/isolate.h"
#include "shared/metrics.h"
#include "pass/periodic.h"
#include "store/task_ticks.h"
#include "shared/plan.h"
#include "store/task.h"
#include "shared/wake.h"

#define PERIODIC_BATCH_SQL CppAsString2(TASK_TICKS_BATCH)

static SchedqQuery q_due_names =
	SCHEDQ_QUERY("SELECT name FROM schedq.periodic"
				 " WHERE enabled AND next_run <= $1"
				 " ORDER BY next_run LIMIT " PERIODIC_BATCH_SQL,
				 TIMESTAMPTZOID);
static SchedqQuery q_fire_error = SCHEDQ_QUERY(
	"UPDATE schedq.periodic SET last_error = $2,"
	"  next_run = schedq._next_run(schedule, timezone, greatest(next_run, $3))"
	" WHERE name = $1",
	TEXTOID, TEXTOID, TIMESTAMPTZOID);
static SchedqQuery q_disable =
	SCHEDQ_QUERY("UPDATE schedq.periodic"
				 " SET enabled = false, last_error = $2"
				 " WHERE name = $1",
				 TEXTOID, TEXTOID);
/* @reboot schedules, armed for the tick of this start of the server */
static SchedqQuery q_arm_reboot =
	SCHEDQ_QUERY("UPDATE schedq.periodic SET next_run = $1"
				 " WHERE enabled AND next_run = 'infinity'"
				 "  AND lower(btrim(schedule)) IN ('@reboot', '@restart')"
				 "  AND coalesce(last_run, created_at) < $1",
				 TIMESTAMPTZOID);
static SchedqQuery q_next_due =
	SCHEDQ_QUERY("SELECT min(next_run) FROM schedq.periodic"
				 " WHERE enabled AND next_run > $1",
				 TIMESTAMPTZOID);

/* One step of the periodic pass, for schedq_isolate_try. */
typedef struct PeriodicStep
{
	TimestampTz now;
	bool		cluster; /* schedq.task is distributed */
	Datum		name;	 /* one schedule's, or 0: every due one */
	const char *error;	 /* periodic_skip_tick: why */
	int			fired;
	int			skipped;
} PeriodicStep;

static void
periodic_fire_step(void *arg)
{
	PeriodicStep *step = arg;

	if (step->cluster)
		schedq_task_ticks_fire_cluster(step->now, step->name, &step->fired,
									   &step->skipped);
	else
		(void) schedq_task_ticks_fire(step->now, step->name, &step->fired,
									  &step->skipped);
}

/*
 * Skip a schedule's due tick that could not fire, recording why.
 */
static void
periodic_skip_tick(void *arg)
{
	PeriodicStep *step = arg;
	Datum		  args[3] = { step->name, CStringGetTextDatum(step->error),
							  TimestampTzGetDatum(step->now) };

	schedq_plan_run(&q_fire_error, args, NULL, 0, SPI_OK_UPDATE);
}

/*
 * One periodic pass at time `now`.  Returns how many ticks fired; *more
 * is set when a batch was full.
 */
int
schedq_periodic_pass(TimestampTz now, bool *more)
{
	bool		 cluster = schedq_task_distributed();
	PeriodicStep all = { now, cluster, (Datum) 0, NULL, 0, 0 };
	int			 fired = 0;
	int			 skipped = 0;
	static bool	 reboot_armed = false;

	if (cluster)
	{
		char *sql;

		/* a cluster's ticks are its coordinator's, each fired once */
		if (!schedq_citus_coordinator())
			return 0;

		/*
		 * Citus serializes the writes of a reference table with a lock it
		 * takes on a worker, where this process's lock_timeout does not
		 * hold: a transaction left open after a schedule() would hold the
		 * scheduler itself.  Sent with the remote statements, it does.
		 */
		sql = psprintf("SET LOCAL lock_timeout = %s",
					   quote_literal_cstr(
						   GetConfigOption("lock_timeout", false, false)));

		if (SPI_execute("SET LOCAL citus.propagate_set_commands = 'local'",
						false, 0) != SPI_OK_UTILITY ||
			SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not set the periodic pass's lock_timeout");
		pfree(sql);
	}

	if (!reboot_armed)
	{
		Datum start = TimestampTzGetDatum(PgStartTime);

		schedq_plan_run(&q_arm_reboot, &start, NULL, 0, SPI_OK_UPDATE);
		reboot_armed = true;
	}
	if (!cluster && schedq_isolate_try(periodic_fire_step, &all) == NULL)
	{
		fired = all.fired;
		skipped = all.skipped;
	}
	else
	{
		/* one by one, so that a bad schedule stalls only itself */
		Datum		   value = TimestampTzGetDatum(now);
		SPITupleTable *due;
		int			   n;

		n = schedq_plan_run(&q_due_names, &value, NULL, 0, SPI_OK_SELECT);
		due = SPI_tuptable;
		for (int i = 0; i < n; i++)
		{
			bool		 isnull;
			PeriodicStep one = {
				now,
				cluster,
				SPI_getbinval(due->vals[i], due->tupdesc, 1, &isnull),
				NULL,
				0,
				0
			};
			char *error = schedq_isolate_try(periodic_fire_step, &one);

			if (error == NULL)
			{
				fired += one.fired;
				skipped += one.skipped;
				continue;
			}
			ereport(WARNING, errmsg("periodic task \"%s\" could not fire: %s",
									TextDatumGetCString(one.name), error));
			/* skip the tick; if even the next run cannot be found, disable */
			one.error = error;
			if (schedq_isolate_try(periodic_skip_tick, &one) != NULL)
			{
				Datum args[2] = { one.name, CStringGetTextDatum(error) };

				schedq_plan_run(&q_disable, args, NULL, 0, SPI_OK_UPDATE);
			}
		}
	}
	if (fired + skipped >= TASK_TICKS_BATCH)
		*more = true;
	schedq_metrics_count(METRIC_PERIODIC_FIRED, fired);
	schedq_metrics_count(METRIC_PERIODIC_SKIPPED_OVERLAP, skipped);
	return fired;
}

/*
 * The earliest next_run after `now` of an enabled schedule, or DT_NOEND.
 * Schedules due already but not fired (their row was locked by someone:
 * the pass skips it) are not counted: they would make the scheduler spin.
 * They are tried again at the scheduler's fallback interval.
 */
TimestampTz
schedq_periodic_next_due(TimestampTz now)
{
	Datum value = TimestampTzGetDatum(now);
	bool  isnull;
	Datum next;

	if (schedq_task_distributed() && !schedq_citus_coordinator())
		return DT_NOEND;
	schedq_plan_run(&q_next_due, &value, NULL, 0, SPI_OK_SELECT);
	next =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? DT_NOEND : DatumGetTimestampTz(next);
}

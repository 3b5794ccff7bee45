/*-------------------------------------------------------------------------
 * api/observe.c
 *	  What schedq shows of itself: schedq.metrics() and
 *	  schedq.scheduler_status().
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "shared/databases.h"
#include "shared/metrics.h"
#include "shared/shm.h"

/*
 * Return one row (name, value) per counter, of the cluster or of this
 * database.
 */
static void
observe_metrics(FunctionCallInfo fcinfo, bool cluster)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	uint64		   counters[SCHEDQ_NUM_METRICS];

	schedq_metrics_read(cluster, counters);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
	{
		Datum values[2];
		bool  nulls[2] = { false, false };

		values[0] = CStringGetTextDatum(schedq_metrics_names[i]);
		values[1] = Int64GetDatum((int64) counters[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

PG_FUNCTION_INFO_V1(schedq_metrics);

/*
 * schedq.metrics() of schedq 1.0: every counter of the whole cluster,
 * since the server started.
 */
Datum
schedq_metrics(PG_FUNCTION_ARGS)
{
	observe_metrics(fcinfo, true);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(schedq_metrics_1_1);

/*
 * schedq.metrics() from schedq 1.1: every counter of this database, since
 * the server started (zeros while nothing was counted here).
 */
Datum
schedq_metrics_1_1(PG_FUNCTION_ARGS)
{
	observe_metrics(fcinfo, false);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(schedq_scheduler_status);

/*
 * schedq.scheduler_status(): one row per database with a scheduler, and
 * one per database whose scheduler the launcher could not start for want
 * of a background worker slot (state 'no worker slot', no pid).
 */
Datum
schedq_scheduler_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SchedqDatabase copy[SCHEDQ_MAX_DATABASES];

	schedq_shm_require_preloaded();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	memcpy(copy, schedq_databases, sizeof(copy));
	LWLockRelease(schedq_shm->lock);

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
	{
		Datum values[6];
		bool  nulls[6] = { false, false, false, false, false, false };
		char *datname;

		/*
		 * A database waiting for a slot is shown when it has schedq (not
		 * one the launcher only wants to look into), or is this one.
		 */
		if (copy[i].dboid == InvalidOid ||
			(copy[i].pid == 0 && !schedq_databases_is_waiting(&copy[i]) &&
			 !(copy[i].no_worker_slot && copy[i].dboid == MyDatabaseId)))
			continue;
		datname = get_database_name(copy[i].dboid);
		if (datname == NULL)
			continue;
		values[0] = DirectFunctionCall1(namein, CStringGetDatum(datname));
		if (copy[i].pid != 0)
		{
			values[1] = Int32GetDatum(copy[i].pid);
			values[2] = CStringGetTextDatum(
				schedq_databases_state_names[copy[i].state]);
			values[3] = TimestampTzGetDatum(copy[i].last_tick);
			nulls[3] = copy[i].last_tick == 0;
			values[4] = Int32GetDatum(copy[i].sql_workers);
			values[5] = Int32GetDatum(copy[i].sql_workers_wanted);
		}
		else
		{
			values[2] = CStringGetTextDatum("no worker slot");
			nulls[1] = nulls[3] = nulls[4] = nulls[5] = true;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

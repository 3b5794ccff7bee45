/*-------------------------------------------------------------------------
 * observe.c
 *	  schedq.metrics() and schedq.scheduler_status(): what shared memory
 *	  knows, as rows.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "schedq.h"
#include "shmem.h"

static const char *const scheduler_state_names[] = {
	[SCHEDULER_NONE] = "stopped",	 [SCHEDULER_STARTING] = "starting",
	[SCHEDULER_IDLE] = "idle",		 [SCHEDULER_PROMOTING] = "promoting",
	[SCHEDULER_REAPING] = "reaping", [SCHEDULER_DISABLED] = "disabled",
};

PG_FUNCTION_INFO_V1(schedq_metrics);

/*
 * schedq.metrics(): every counter, since the server started.
 */
Datum
schedq_metrics(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	schedq_require_preloaded();
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
	{
		Datum values[2];
		bool  nulls[2] = { false, false };

		values[0] = CStringGetTextDatum(schedq_metric_names[i]);
		values[1] = Int64GetDatum(
			(int64) pg_atomic_read_u64(&schedq_shared->metrics[i]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(schedq_scheduler_status);

/*
 * schedq.scheduler_status(): one row per database with a scheduler.
 */
Datum
schedq_scheduler_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SchedqDatabase copy[SCHEDQ_MAX_DATABASES];

	schedq_require_preloaded();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	memcpy(copy, schedq_shared->databases, sizeof(copy));
	LWLockRelease(schedq_shared->lock);

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
	{
		Datum values[4];
		bool  nulls[4] = { false, false, false, false };
		char *datname;

		if (copy[i].dboid == InvalidOid || copy[i].pid == 0)
			continue;
		datname = get_database_name(copy[i].dboid);
		if (datname == NULL)
			continue;
		values[0] = DirectFunctionCall1(namein, CStringGetDatum(datname));
		values[1] = Int32GetDatum(copy[i].pid);
		values[2] = CStringGetTextDatum(scheduler_state_names[copy[i].state]);
		values[3] = TimestampTzGetDatum(copy[i].last_tick);
		nulls[3] = copy[i].last_tick == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

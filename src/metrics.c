/*-------------------------------------------------------------------------
 * metrics.c
 *	  schedq's counters, and schedq.metrics(), which shows them.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "metrics.h"
#include "shmem.h"

pg_atomic_uint64 *schedq_metrics_shared = NULL;

static const char *const metric_names[SCHEDQ_NUM_METRICS] = {
	[METRIC_TASKS_SUBMITTED] = "tasks_submitted",
	[METRIC_TASKS_PROMOTED] = "tasks_promoted",
	[METRIC_TASKS_CLAIMED] = "tasks_claimed",
	[METRIC_CLAIM_CONTENTION] = "claim_contention",
	[METRIC_CLAIM_WAKEUPS] = "claim_wakeups",
	[METRIC_TASKS_COMPLETED] = "tasks_completed",
	[METRIC_TASKS_FAILED] = "tasks_failed",
	[METRIC_TASKS_RETRIED] = "tasks_retried",
	[METRIC_LEASE_EXPIRATIONS] = "lease_expirations",
	[METRIC_TASK_TIMEOUTS] = "task_timeouts",
	[METRIC_PERIODIC_FIRED] = "periodic_fired",
	[METRIC_PERIODIC_SKIPPED_OVERLAP] = "periodic_skipped_overlap",
	[METRIC_RUNS_FINISHED] = "runs_finished",
	[METRIC_ORPHAN_RUNS_REAPED] = "orphan_runs_reaped",
	[METRIC_SCHEDULER_LAG_MS] = "scheduler_lag_ms",
	[METRIC_TASKS_SET_ASIDE] = "tasks_set_aside",
};

static Size
metrics_shmem_size(void)
{
	return sizeof(pg_atomic_uint64) * SCHEDQ_NUM_METRICS;
}

static void
metrics_shmem_init(void *part)
{
	pg_atomic_uint64 *counters = part;

	for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
		pg_atomic_init_u64(&counters[i], 0);
}

/*
 * Add the counters to shared memory; from _PG_init while preloading.
 */
void
schedq_metrics_init(void)
{
	schedq_shmem_add("schedq metrics", metrics_shmem_size,
					 (void **) &schedq_metrics_shared, metrics_shmem_init);
}

/*
 * Set a gauge.
 */
void
schedq_metric_set(SchedqMetric metric, uint64 value)
{
	if (schedq_metrics_shared != NULL)
		pg_atomic_write_u64(&schedq_metrics_shared[metric], value);
}

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

		values[0] = CStringGetTextDatum(metric_names[i]);
		values[1] = Int64GetDatum(
			(int64) pg_atomic_read_u64(&schedq_metrics_shared[i]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

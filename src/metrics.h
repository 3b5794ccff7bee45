/*-------------------------------------------------------------------------
 * metrics.h
 *	  schedq's counters, in shared memory: atomics, no lock.  Counters only
 *	  grow; scheduler_lag_ms is a gauge, written by whoever measured last.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_METRICS_H
#define SCHEDQ_METRICS_H

#include "port/atomics.h"

typedef enum SchedqMetric
{
	METRIC_TASKS_SUBMITTED,
	METRIC_TASKS_PROMOTED,
	METRIC_TASKS_CLAIMED,
	METRIC_CLAIM_CONTENTION,
	METRIC_CLAIM_WAKEUPS,
	METRIC_TASKS_COMPLETED,
	METRIC_TASKS_FAILED,
	METRIC_TASKS_RETRIED,
	METRIC_LEASE_EXPIRATIONS,
	METRIC_TASK_TIMEOUTS,
	METRIC_PERIODIC_FIRED,
	METRIC_PERIODIC_SKIPPED_OVERLAP,
	METRIC_RUNS_FINISHED,
	METRIC_ORPHAN_RUNS_REAPED,
	METRIC_SCHEDULER_LAG_MS,
	METRIC_TASKS_SET_ASIDE,
	SCHEDQ_NUM_METRICS
} SchedqMetric;

/* NULL when the library was not preloaded. */
extern pg_atomic_uint64 *schedq_metrics_shared;

extern void schedq_metrics_init(void);
extern void schedq_metric_set(SchedqMetric metric, uint64 value);

/* Add n to a counter; a no-op when the library was not preloaded. */
static inline void
schedq_count(SchedqMetric metric, uint64 n)
{
	if (schedq_metrics_shared != NULL && n > 0)
		pg_atomic_fetch_add_u64(&schedq_metrics_shared[metric], n);
}

#endif /* SCHEDQ_METRICS_H */

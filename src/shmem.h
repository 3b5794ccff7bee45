/*-------------------------------------------------------------------------
 * shmem.h
 *	  The shared memory of schedq: counters, and the generation number
 *	  that tells backends their cached grant keys are out of date.
 *
 * Locking: every field below is a pg_atomic_uint64 and needs no lock.
 * Counters only grow (scheduler_lag_ms is a gauge, written by whoever
 * measured last); key_generation is bumped after a key rotation commits.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SHMEM_H
#define SCHEDQ_SHMEM_H

#include "port/atomics.h"

typedef enum SchedqMetric
{
	METRIC_TASKS_SUBMITTED,
	METRIC_TASKS_PROMOTED,
	METRIC_TASKS_CLAIMED,
	METRIC_CLAIM_CONTENTION,
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
	SCHEDQ_NUM_METRICS
} SchedqMetric;

typedef struct SchedqSharedState
{
	pg_atomic_uint64 key_generation;
	pg_atomic_uint64 metrics[SCHEDQ_NUM_METRICS];
} SchedqSharedState;

extern SchedqSharedState *schedq_shared;
extern const char *const  schedq_metric_names[SCHEDQ_NUM_METRICS];

extern void schedq_shmem_install_hooks(void);

/* Add n to a counter; a no-op when the library was not preloaded. */
static inline void
schedq_count(SchedqMetric metric, uint64 n)
{
	if (schedq_shared != NULL && n > 0)
		pg_atomic_fetch_add_u64(&schedq_shared->metrics[metric], n);
}

#endif /* SCHEDQ_SHMEM_H */

/*-------------------------------------------------------------------------
 * shmem.c
 *	  Request and attach schedq's shared memory.
 *
 * The state is one fixed-size struct (see shmem.h for what protects what),
 * requested from shmem_request_hook and initialised under
 * AddinShmemInitLock by the first process that attaches.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "schedq.h"
#include "shmem.h"

SchedqSharedState *schedq_shared = NULL;

const char *const schedq_metric_names[SCHEDQ_NUM_METRICS] = {
	[METRIC_TASKS_SUBMITTED] = "tasks_submitted",
	[METRIC_TASKS_PROMOTED] = "tasks_promoted",
	[METRIC_TASKS_CLAIMED] = "tasks_claimed",
	[METRIC_CLAIM_CONTENTION] = "claim_contention",
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
};

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Ask the postmaster for our share of shared memory.
 */
static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(SchedqSharedState)));
}

/*
 * Attach to the shared state, creating and initialising it if this is the
 * first process to get here.
 */
static void
shmem_startup(void)
{
	bool found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	schedq_shared =
		ShmemInitStruct("schedq", sizeof(SchedqSharedState), &found);
	if (!found)
	{
		pg_atomic_init_u64(&schedq_shared->key_generation, 1);
		for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
			pg_atomic_init_u64(&schedq_shared->metrics[i], 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Chain our hooks in front of any already installed.  Called from
 * _PG_init while the library is being preloaded.
 */
void
schedq_shmem_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
}

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
};

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Ask the postmaster for our share of shared memory.
 */
static Size
shmem_size(void)
{
	return add_size(offsetof(SchedqSharedState, waiters),
					mul_size(MaxBackends, sizeof(SchedqWaiter)));
}

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(shmem_size()));
	RequestNamedLWLockTranche("schedq", 1);
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
	schedq_shared = ShmemInitStruct("schedq", shmem_size(), &found);
	if (!found)
	{
		memset(schedq_shared, 0, shmem_size());
		schedq_shared->lock = &(GetNamedLWLockTranche("schedq"))->lock;
		pg_atomic_init_u64(&schedq_shared->key_generation, 1);
		pg_atomic_init_u64(&schedq_shared->budget_generation, 1);
		pg_atomic_init_u64(&schedq_shared->queue_generation, 1);
		for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
			pg_atomic_init_u64(&schedq_shared->metrics[i], 0);
		pg_atomic_init_u32(&schedq_shared->nwaiters, 0);
		schedq_shared->max_waiters = MaxBackends;
		for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
			SpinLockInit(&schedq_shared->floors[i].mutex);
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

/*
 * The slot of a database, or NULL.  With create, a free slot is taken for
 * it (NULL if none is left).  Caller holds the schedq lock exclusively when
 * create is true, at least shared otherwise.
 */
SchedqDatabase *
schedq_database_slot(Oid dboid, bool create)
{
	SchedqDatabase *free_slot = NULL;

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
	{
		SchedqDatabase *db = &schedq_shared->databases[i];

		if (db->dboid == dboid)
			return db;
		if (db->dboid == InvalidOid && free_slot == NULL)
			free_slot = db;
	}
	if (create && free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(SchedqDatabase));
		free_slot->dboid = dboid;
		return free_slot;
	}
	return NULL;
}

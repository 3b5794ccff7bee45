/*-------------------------------------------------------------------------
 * shared/metrics.c
 *	  schedq's counters (shared/metrics.h); schedq.metrics() shows them
 *	  (api/observe.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/spin.h"

#include "shared/metrics.h"
#include "shared/databases.h"
#include "shared/shm.h"

/* The counters of one database; dboid is InvalidOid while free. */
typedef struct MetricsDatabase
{
	pg_atomic_uint32 dboid;
	pg_atomic_uint64 counters[SCHEDQ_NUM_METRICS];
} MetricsDatabase;

typedef struct MetricsShared
{
	slock_t			 mutex; /* taking and freeing a database's slot */
	pg_atomic_uint64 cluster[SCHEDQ_NUM_METRICS];
	MetricsDatabase	 databases[SCHEDQ_MAX_DATABASES];
} MetricsShared;

/* NULL when the library was not preloaded. */
static MetricsShared *metrics_shared = NULL;

/* This process's database slot, once taken (MyDatabaseId never changes). */
static MetricsDatabase *metrics_mine = NULL;

const char *const schedq_metrics_names[SCHEDQ_NUM_METRICS] = {
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
	[METRIC_READ_ONLY_MS] = "read_only_ms",
#define METRIC_DECLINE_NAME(sym, name)                                         \
	[METRIC_DIRECT_DECLINED_##sym] = "direct_declined_" #name,
	SCHEDQ_DIRECT_DECLINES(METRIC_DECLINE_NAME)
};

static Size
metrics_shmem_size(void)
{
	return sizeof(MetricsShared);
}

static void
metrics_shmem_init(void *part)
{
	MetricsShared *shared = part;

	SpinLockInit(&shared->mutex);
	for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
		pg_atomic_init_u64(&shared->cluster[i], 0);
	for (int d = 0; d < SCHEDQ_MAX_DATABASES; d++)
	{
		pg_atomic_init_u32(&shared->databases[d].dboid, InvalidOid);
		for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
			pg_atomic_init_u64(&shared->databases[d].counters[i], 0);
	}
}

/*
 * Add the counters to shared memory; from _PG_init while preloading.
 */
void
schedq_metrics_init(void)
{
	schedq_shm_add("schedq metrics", metrics_shmem_size,
				   (void **) &metrics_shared, metrics_shmem_init);
}

/*
 * The slot of database dboid, or NULL.  With create, a free slot is taken
 * for it (its counters zeroed); NULL when none is left.
 */
static MetricsDatabase *
metrics_database(Oid dboid, bool create)
{
	MetricsDatabase *found = NULL;
	MetricsDatabase *free_slot = NULL;

	for (int d = 0; d < SCHEDQ_MAX_DATABASES; d++)
	{
		if (pg_atomic_read_u32(&metrics_shared->databases[d].dboid) == dboid)
			return &metrics_shared->databases[d];
	}
	if (!create)
		return NULL;

	/* again under the mutex, so that two processes cannot take two slots */
	SpinLockAcquire(&metrics_shared->mutex);
	for (int d = 0; d < SCHEDQ_MAX_DATABASES && found == NULL; d++)
	{
		MetricsDatabase *db = &metrics_shared->databases[d];
		Oid				 oid = pg_atomic_read_u32(&db->dboid);

		if (oid == dboid)
			found = db;
		else if (oid == InvalidOid && free_slot == NULL)
			free_slot = db;
	}
	if (found == NULL && free_slot != NULL)
	{
		for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
			pg_atomic_write_u64(&free_slot->counters[i], 0);
		pg_atomic_write_u32(&free_slot->dboid, dboid);
		found = free_slot;
	}
	SpinLockRelease(&metrics_shared->mutex);
	return found;
}

/*
 * The counters of this process's database, or NULL (no database: the
 * launcher; or every slot taken).
 */
static MetricsDatabase *
metrics_my_database(void)
{
	if (metrics_mine != NULL &&
		pg_atomic_read_u32(&metrics_mine->dboid) == MyDatabaseId)
		return metrics_mine;
	if (!OidIsValid(MyDatabaseId))
		return NULL;
	metrics_mine = metrics_database(MyDatabaseId, true);
	return metrics_mine;
}

/*
 * Add n to a counter, for the cluster and for this database; a no-op when
 * the library was not preloaded.
 */
void
schedq_metrics_count(SchedqMetric metric, uint64 n)
{
	MetricsDatabase *db;

	if (metrics_shared == NULL || n == 0)
		return;
	pg_atomic_fetch_add_u64(&metrics_shared->cluster[metric], n);
	db = metrics_my_database();
	if (db != NULL)
		pg_atomic_fetch_add_u64(&db->counters[metric], n);
}

/*
 * Set a gauge, for the cluster and for this database.
 */
void
schedq_metrics_set(SchedqMetric metric, uint64 value)
{
	MetricsDatabase *db;

	if (metrics_shared == NULL)
		return;
	pg_atomic_write_u64(&metrics_shared->cluster[metric], value);
	db = metrics_my_database();
	if (db != NULL)
		pg_atomic_write_u64(&db->counters[metric], value);
}

/*
 * Free the slot of a dropped database (the launcher, once it sees the
 * database gone), so that its counters do not use up a slot.
 */
void
schedq_metrics_forget(Oid dboid)
{
	MetricsDatabase *db;

	if (metrics_shared == NULL || !OidIsValid(dboid))
		return;
	SpinLockAcquire(&metrics_shared->mutex);
	for (int d = 0; d < SCHEDQ_MAX_DATABASES; d++)
	{
		db = &metrics_shared->databases[d];
		if (pg_atomic_read_u32(&db->dboid) == dboid)
			pg_atomic_write_u32(&db->dboid, InvalidOid);
	}
	SpinLockRelease(&metrics_shared->mutex);
}

/*
 * The databases that have a slot now, into dboids (room for
 * SCHEDQ_MAX_DATABASES); returns how many.  For the launcher, which frees
 * the slots of those it finds dropped (launcher_scan_databases).
 */
int
schedq_metrics_databases(Oid *dboids)
{
	int n = 0;

	if (metrics_shared == NULL)
		return 0;
	for (int d = 0; d < SCHEDQ_MAX_DATABASES; d++)
	{
		Oid dboid = pg_atomic_read_u32(&metrics_shared->databases[d].dboid);

		if (OidIsValid(dboid))
			dboids[n++] = dboid;
	}
	return n;
}

/*
 * Read every counter, of the whole cluster (cluster) or of this database,
 * into values[SCHEDQ_NUM_METRICS] (zeros while nothing was counted here).
 * An error when the library was not preloaded.
 */
void
schedq_metrics_read(bool cluster, uint64 *values)
{
	MetricsDatabase	 *db;
	pg_atomic_uint64 *counters;

	schedq_shm_require_preloaded();
	db = cluster ? NULL : metrics_database(MyDatabaseId, false);
	counters = cluster	  ? metrics_shared->cluster :
			   db != NULL ? db->counters :
							NULL;
	for (int i = 0; i < SCHEDQ_NUM_METRICS; i++)
		values[i] = counters == NULL ? 0 : pg_atomic_read_u64(&counters[i]);
}

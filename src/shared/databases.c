/*-------------------------------------------------------------------------
 * shared/databases.c
 *	  The database slots in shared memory (shared/databases.h).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "shared/databases.h"
#include "shared/shm.h"

SchedqDatabase *schedq_databases = NULL;

const char *const schedq_databases_state_names[] = {
	[SCHEDULER_NONE] = "stopped",		 [SCHEDULER_STARTING] = "starting",
	[SCHEDULER_IDLE] = "idle",			 [SCHEDULER_PROMOTING] = "promoting",
	[SCHEDULER_REAPING] = "reaping",	 [SCHEDULER_DISABLED] = "disabled",
	[SCHEDULER_READ_ONLY] = "read-only",
};

static Size
databases_shmem_size(void)
{
	return sizeof(SchedqDatabase) * SCHEDQ_MAX_DATABASES;
}

/*
 * Add the slots to shared memory; from _PG_init while preloading.
 */
void
schedq_databases_init(void)
{
	schedq_shm_add("schedq databases", databases_shmem_size,
				   (void **) &schedq_databases, NULL);
}

/*
 * The slot of a database, or NULL.  With create, a free slot is taken for
 * it (NULL if none is left).  Caller holds the schedq lock exclusively when
 * create is true, at least shared otherwise.
 */
SchedqDatabase *
schedq_databases_slot(Oid dboid, bool create)
{
	SchedqDatabase *free_slot = NULL;

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
	{
		SchedqDatabase *db = &schedq_databases[i];

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

/*
 * Does this slot's database wait for a background worker slot for its
 * scheduler, as one known to have schedq (not a database the launcher
 * only wants to look into)?  Caller holds the schedq lock.
 */
bool
schedq_databases_is_waiting(const SchedqDatabase *db)
{
	return OidIsValid(db->dboid) && db->no_worker_slot && db->pid == 0 &&
		   (db->has_schedq || db->probe);
}

/*
 * How many databases other than `except` with schedq wait for a
 * background worker slot for their scheduler.  Caller holds the schedq
 * lock, shared at least.
 */
int
schedq_databases_waiting(Oid except)
{
	int n = 0;

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
		if (schedq_databases[i].dboid != except &&
			schedq_databases_is_waiting(&schedq_databases[i]))
			n++;
	return n;
}

/*-------------------------------------------------------------------------
 * shared/shm.c
 *	  Request and attach schedq's shared memory.
 *
 * Each module that keeps state in shared memory adds its part from
 * _PG_init (schedq_shm_add); this file requests them all from
 * shmem_request_hook and attaches them, by name, under AddinShmemInitLock
 * from shmem_startup_hook.  The first process to attach zeroes a part and
 * runs its init function.  The core part (shared/shm.h) is added here.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "shared/shm.h"

#define SHMEM_MAX_PARTS 8

typedef struct ShmemPart
{
	const char	 *name;
	SchedqShmSize size;
	void		**ptr;
	SchedqShmInit init;
} ShmemPart;

SchedqShared *schedq_shm = NULL;

static ShmemPart shmem_parts[SHMEM_MAX_PARTS];
static int		 shmem_nparts = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Add a module's part.  Called from _PG_init while preloading.
 */
void
schedq_shm_add(const char *name, SchedqShmSize size, void **ptr,
			   SchedqShmInit init)
{
	if (shmem_nparts >= SHMEM_MAX_PARTS)
		elog(ERROR, "too many schedq shared memory parts");
	shmem_parts[shmem_nparts++] = (ShmemPart){ name, size, ptr, init };
}

static Size
shmem_core_size(void)
{
	return sizeof(SchedqShared);
}

static void
shmem_core_init(void *part)
{
	((SchedqShared *) part)->lock = &(GetNamedLWLockTranche("schedq"))->lock;
}

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (int i = 0; i < shmem_nparts; i++)
		RequestAddinShmemSpace(MAXALIGN(shmem_parts[i].size()));
	RequestNamedLWLockTranche("schedq", 1);
}

static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (int i = 0; i < shmem_nparts; i++)
	{
		ShmemPart *part = &shmem_parts[i];
		bool	   found;

		*part->ptr = ShmemInitStruct(part->name, part->size(), &found);
		if (!found)
		{
			memset(*part->ptr, 0, part->size());
			if (part->init != NULL)
				part->init(*part->ptr);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Add the core part and chain our hooks in front of any already
 * installed.  Called from _PG_init while preloading, after every module
 * has added its part.
 */
void
schedq_shm_install_hooks(void)
{
	schedq_shm_add("schedq", shmem_core_size, (void **) &schedq_shm,
				   shmem_core_init);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
}

/*
 * Raise an error unless the library was preloaded, so that a function that
 * needs shared memory fails clearly instead of silently doing less.  This
 * is also what CREATE EXTENSION schedq says on a server without the
 * preload: its script ends by making the first token signing key.
 */
void
schedq_shm_require_preloaded(void)
{
	if (schedq_shm == NULL)
		ereport(
			ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg("schedq must be loaded via shared_preload_libraries"),
			errhint(
				"Add 'schedq' to shared_preload_libraries in postgresql.conf and restart the server: the setting takes effect only at a restart."));
}

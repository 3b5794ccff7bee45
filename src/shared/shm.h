/*-------------------------------------------------------------------------
 * shared/shm.h
 *	  schedq's shared memory: a registry through which each module asks
 *	  for its own part, and the core part every process uses -- the
 *	  schedq LWLock and the launcher.
 *
 * Locking of the core part: launcher_pid and launcher_latch are
 * protected by the schedq LWLock (lock).  Modules say in their own
 * headers what protects their parts; most use that lock.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SHMEM_H
#define SCHEDQ_SHMEM_H

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

typedef struct SchedqShared
{
	LWLock *lock;
	pid_t	launcher_pid;
	Latch  *launcher_latch;
} SchedqShared;

/* NULL until attached: the library was not preloaded. */
extern SchedqShared *schedq_shm;

/*
 * A module's part of shared memory: *ptr is set to it in every process
 * that attaches; init(part) runs once, in the first, on zeroed memory.
 */
typedef Size (*SchedqShmSize)(void);
typedef void (*SchedqShmInit)(void *part);

extern void schedq_shm_add(const char *name, SchedqShmSize size, void **ptr,
						   SchedqShmInit init);
extern void schedq_shm_install_hooks(void);

extern void schedq_shm_require_preloaded(void);

#endif /* SCHEDQ_SHMEM_H */

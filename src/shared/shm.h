/*-------------------------------------------------------------------------
 * shared/shm.h
 *	  schedq's shared memory: a registry through which each module asks
 *	  for its own part, and the core part every worker uses -- the schedq
 *	  LWLock, the launcher, and one slot per database with a scheduler.
 *
 * Locking of the core part: launcher_pid, launcher_latch and databases[]
 * are protected by the schedq LWLock (lock).  A database slot is created
 * by the launcher or by the backend that runs CREATE EXTENSION; its
 * scheduler fields (pid through sql_workers_wanted) are written by that
 * database's scheduler, no_worker_slot by the launcher.  Modules say in
 * their own headers what protects their parts.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SHMEM_H
#define SCHEDQ_SHMEM_H

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/* Most databases with a scheduler at once. */
#define SCHEDQ_MAX_DATABASES 64

/* What the scheduler of a database is doing, for scheduler_status(). */
typedef enum SchedqSchedulerState
{
	SCHEDULER_NONE = 0,	 /* no scheduler process */
	SCHEDULER_STARTING,	 /* started, checking the extension */
	SCHEDULER_IDLE,		 /* sleeping until the next due time */
	SCHEDULER_PROMOTING, /* in a promotion pass */
	SCHEDULER_REAPING,	 /* in a reaper pass */
	SCHEDULER_DISABLED	 /* schedq.enabled is off */
} SchedqSchedulerState;

typedef struct SchedqDatabase
{
	Oid			dboid;		/* InvalidOid: slot is free */
	bool		probe;		/* launcher: start a scheduler here again */
	bool		absent;		/* schedq is not installed here */
	TimestampTz hold_until; /* no scheduler before this (DROP DATABASE) */
	pid_t		pid;		/* the scheduler, or 0 */
	Latch	   *latch;		/* its latch */
	SchedqSchedulerState state;
	TimestampTz			 last_tick;
	int					 sql_workers;		 /* its SQL executors started */
	int					 sql_workers_wanted; /* how many it should have */
	bool				 no_worker_slot;	 /* the launcher found no background
										  * worker slot for a scheduler */
} SchedqDatabase;

typedef struct SchedqShared
{
	LWLock		  *lock;
	pid_t		   launcher_pid;
	Latch		  *launcher_latch;
	SchedqDatabase databases[SCHEDQ_MAX_DATABASES];
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

extern void			   schedq_shm_require_preloaded(void);
extern SchedqDatabase *schedq_shm_database_slot(Oid dboid, bool create);

#endif /* SCHEDQ_SHMEM_H */

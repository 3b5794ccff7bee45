/*-------------------------------------------------------------------------
 * shmem.h
 *	  The shared memory of schedq: counters, the grant key generation, one
 *	  slot per database with a scheduler, and the claims waiting for work.
 *
 * Locking:
 *	- metrics[], key_generation, budget_generation, queue_generation,
 *	  nwaiters: atomics, no lock.  budget_generation is bumped after a
 *	  set_budget commits; queue_generation before and after a change of
 *	  schedq.queue commits (work.c).  Counters only
 *	  grow (scheduler_lag_ms is a gauge, written by whoever measured last);
 *	  key_generation is bumped after a key rotation commits.
 *	- launcher_pid, launcher_latch, databases[], executors[], waiters[]:
 *	  the schedq LWLock.  An executor slot is written by its executor and
 *	  read by cancel (to interrupt its statement) and the reaper (to keep
 *	  its lease).  A database slot is created by the launcher or by the backend
 *	  that runs CREATE EXTENSION; its scheduler fields are written by that
 *	  database's scheduler; a waiter slot is written by its own backend and
 *	  by whoever wakes it.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SHMEM_H
#define SCHEDQ_SHMEM_H

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "floor.h"

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
	SCHEDQ_NUM_METRICS
} SchedqMetric;

/* Most databases with a scheduler at once. */
#define SCHEDQ_MAX_DATABASES 64
/* Most queue names a waiting claim filters on precisely; more match all. */
#define SCHEDQ_WAITER_QUEUES 4

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
} SchedqDatabase;

/* A claim sleeping until a task it could take becomes available. */
typedef struct SchedqWaiter
{
	Oid	   dboid; /* InvalidOid: not waiting */
	Latch *latch;
	bool   woken;						 /* a waker picked it; it is claiming */
	int	   nqueues;						 /* -1: every queue */
	uint32 queues[SCHEDQ_WAITER_QUEUES]; /* hashes of queue names */
	uint64 caps;  /* Bloom bits of the worker's capabilities */
	uint64 needs; /* Bloom bits a task must require (executors: sql) */
} SchedqWaiter;

/* Most SQL executors in the whole cluster. */
#define SCHEDQ_MAX_EXECUTORS 128

/* A built-in SQL executor, and the task it is running. */
typedef struct SchedqExecutor
{
	Oid	  dboid; /* InvalidOid: slot is free */
	pid_t pid;
	int64 task_id; /* 0: not running a task */
	int32 attempt;
} SchedqExecutor;

/*
 * A database's claim floor (floor.c).  Slots are taken once per database
 * and never given back.
 */
typedef struct SchedqClaimFloor
{
	Oid			   dboid; /* InvalidOid: slot is free */
	slock_t		   mutex;
	uint64		   generation;	  /* bumped by every lowering step */
	int			   committing;	  /* transactions between their two lowerings */
	bool		   valid;		  /* false: claims start at the head */
	SchedqClaimKey key;			  /* no available task sorts before it */
	TimestampTz	   probed_at;	  /* the last probe started */
	TimestampTz	   full_probe_at; /* the last probe from the head started */
} SchedqClaimFloor;

typedef struct SchedqSharedState
{
	LWLock			*lock;
	pid_t			 launcher_pid;
	Latch			*launcher_latch;
	pg_atomic_uint64 key_generation;
	pg_atomic_uint64 budget_generation;
	pg_atomic_uint64 queue_generation;
	pg_atomic_uint64 metrics[SCHEDQ_NUM_METRICS];
	pg_atomic_uint32 nwaiters;
	SchedqDatabase	 databases[SCHEDQ_MAX_DATABASES];
	SchedqExecutor	 executors[SCHEDQ_MAX_EXECUTORS];
	SchedqClaimFloor floors[SCHEDQ_MAX_DATABASES];
	int				 max_waiters;
	SchedqWaiter	 waiters[FLEXIBLE_ARRAY_MEMBER]; /* by MyBackendId - 1 */
} SchedqSharedState;

extern SchedqSharedState *schedq_shared;
extern const char *const  schedq_metric_names[SCHEDQ_NUM_METRICS];

extern void			   schedq_shmem_install_hooks(void);
extern SchedqDatabase *schedq_database_slot(Oid dboid, bool create);

/* Add n to a counter; a no-op when the library was not preloaded. */
static inline void
schedq_count(SchedqMetric metric, uint64 n)
{
	if (schedq_shared != NULL && n > 0)
		pg_atomic_fetch_add_u64(&schedq_shared->metrics[metric], n);
}

#endif /* SCHEDQ_SHMEM_H */

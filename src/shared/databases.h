/*-------------------------------------------------------------------------
 * shared/databases.h
 *	  One slot per database with a scheduler, in shared memory: what its
 *	  scheduler is doing, and what the launcher knows of it.
 *
 * Every field is under the schedq LWLock (shared/shm.h).  A slot is
 * created by the launcher or by the backend that runs CREATE EXTENSION;
 * its scheduler fields (pid through sql_workers_wanted, and read_only)
 * are written by that database's scheduler, no_worker_slot by the launcher, has_schedq by
 * the scheduler and by the backend that commits CREATE EXTENSION.  The
 * launcher starts a scheduler in every database it has not seen, to learn
 * whether schedq is there: a database waiting for a slot for it may not
 * have schedq at all, unless has_schedq or probe says so.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_DATABASES_H
#define SCHEDQ_DATABASES_H

#include "datatype/timestamp.h"
#include "storage/latch.h"

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
	SCHEDULER_DISABLED,	 /* schedq.enabled is off */
	SCHEDULER_READ_ONLY	 /* the server refuses writes: standing aside */
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
	bool				 has_schedq; /* schedq is installed here, as far as
									  * a scheduler or CREATE EXTENSION said */
	bool				 read_only;	 /* the scheduler found the server
									  * read-only: waiting claims and SQL
									  * executors give up */
} SchedqDatabase;

/* The names scheduler_status() shows, by SchedqSchedulerState. */
extern const char *const schedq_databases_state_names[];

/* SCHEDQ_MAX_DATABASES of them; NULL until attached. */
extern SchedqDatabase *schedq_databases;

extern void			   schedq_databases_init(void);
extern SchedqDatabase *schedq_databases_slot(Oid dboid, bool create);
extern bool			   schedq_databases_is_waiting(const SchedqDatabase *db);
extern int			   schedq_databases_waiting(Oid except);

#endif /* SCHEDQ_DATABASES_H */

/*-------------------------------------------------------------------------
 * process/bgworker.h
 *	  What every schedq background worker shares: how it is registered,
 *	  its session settings, the transaction bracket of one iteration, the
 *	  pace of its loop, and the locks that keep two of them from doing one
 *	  thing at once.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_WORKER_H
#define SCHEDQ_WORKER_H

#include "datatype/timestamp.h"
#include "postmaster/bgworker.h"
#include "storage/lock.h"

/* The lock_timeout of every schedq worker (see schedq_bgworker_settings). */
#define SCHEDQ_WORKER_LOCK_TIMEOUT_MS 1000

/* Shortest sleep of a loop whose iteration did nothing (SchedqPace). */
#define SCHEDQ_IDLE_FLOOR_MS 10

extern void schedq_bgworker_fill(BackgroundWorker *worker, const char *function,
							   const char *type, Oid dboid);
extern void schedq_bgworker_settings(void);
extern void schedq_bgworker_tick_begin(const char *activity);
extern void schedq_bgworker_tick_commit(void);
extern int	schedq_bgworker_slots_errhint(void);

/*
 * The pace of a worker's loop: how long it sleeps after an iteration.
 * Zero-initialise one per loop.
 */
typedef struct SchedqPace
{
	int backoff_ms; /* the last sleep of an iteration that was already
					 * late and did nothing; 0: none since progress */
} SchedqPace;

extern long schedq_bgworker_pace_ms(SchedqPace *pace, TimestampTz wake,
								 bool progress, int max_ms);

/* What a schedq lock of a database stands for. */
typedef enum SchedqLock
{
	SCHEDQ_LOCK_PROMOTE = 1,  /* a promotion pass (transaction level) */
	SCHEDQ_LOCK_SCHEDULER = 3 /* the database's scheduler (session level) */
} SchedqLock;

extern void schedq_lock_tag(LOCKTAG *tag, SchedqLock what);

#endif /* SCHEDQ_WORKER_H */

/*-------------------------------------------------------------------------
 * worker.h
 *	  What every schedq background worker shares: how it is registered,
 *	  its session settings, the transaction bracket of one iteration, and
 *	  the locks that keep two of them from doing one thing at once.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_WORKER_H
#define SCHEDQ_WORKER_H

#include "postmaster/bgworker.h"
#include "storage/lock.h"

extern void schedq_worker_fill(BackgroundWorker *worker, const char *function,
							   const char *type, Oid dboid);
extern void schedq_worker_settings(void);
extern void schedq_tick_begin(const char *activity);
extern void schedq_tick_commit(void);

/* What a schedq lock of a database stands for. */
typedef enum SchedqLock
{
	SCHEDQ_LOCK_PROMOTE = 1,  /* a promotion pass (transaction level) */
	SCHEDQ_LOCK_SCHEDULER = 3 /* the database's scheduler (session level) */
} SchedqLock;

extern void schedq_lock_tag(LOCKTAG *tag, SchedqLock what);

#endif /* SCHEDQ_WORKER_H */

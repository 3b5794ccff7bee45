/*-------------------------------------------------------------------------
 * shared/locks.h
 *	  The locks that keep two schedq processes from doing one thing at
 *	  once.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_LOCKS_H
#define SCHEDQ_LOCKS_H

#include "storage/lock.h"

/* What a schedq lock of a database stands for. */
typedef enum SchedqLock
{
	SCHEDQ_LOCK_PROMOTE = 1,  /* a promotion pass (transaction level) */
	SCHEDQ_LOCK_SCHEDULER = 3 /* the database's scheduler (session level) */
} SchedqLock;

extern void schedq_locks_tag(LOCKTAG *tag, SchedqLock what);

#endif /* SCHEDQ_LOCKS_H */

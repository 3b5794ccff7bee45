/*-------------------------------------------------------------------------
 * shared/locks.c
 *	  The tags of schedq's locks.
 *
 * schedq's locks are advisory locks that no SQL function can take
 * or wait for.  The SQL advisory lock functions (lockfuncs.c) put the
 * database in field1, the key in fields 2 and 3, and 1 (an int8 key) or 2
 * (two int4 keys) in field4; anyone may call them, so a lock in their
 * space could be held by any role, stopping the scheduler (a promotion
 * pass would wait forever, a new scheduler would find its lock taken and
 * leave).  Ours have field4 = SCHEDQ_LOCK_FIELD4, which they never use
 * (Citus uses 4 to 12).  pg_locks shows them as advisory locks with
 * classid SCHEDQ_LOCK_CLASS, objid the lock (SchedqLock) and objsubid
 * SCHEDQ_LOCK_FIELD4.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "shared/locks.h"

/* Advisory lock tags: (database, SCHEDQ_LOCK_CLASS, what, FIELD4). */
#define SCHEDQ_LOCK_CLASS  0x53510000 /* "SQ" */
#define SCHEDQ_LOCK_FIELD4 0x5351	  /* not 1 or 2: no SQL function's */

/*
 * The tag of a schedq lock of this database.
 */
void
schedq_locks_tag(LOCKTAG *tag, SchedqLock what)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, SCHEDQ_LOCK_CLASS, what,
						 SCHEDQ_LOCK_FIELD4);
}

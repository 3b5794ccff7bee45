/*-------------------------------------------------------------------------
 * direct.h
 *	  Writes to schedq.task without the SQL executor.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_DIRECT_H
#define SCHEDQ_DIRECT_H

#include "storage/itemptr.h"

#include "task.h"

/* What schedq_direct_complete did. */
typedef enum SchedqDirectOutcome
{
	DIRECT_DONE,	 /* the attempt was running and is now done */
	DIRECT_STALE,	 /* the attempt is not the running one: nothing changed */
	DIRECT_FALLBACK, /* not for this path: run the UPDATE statement */
} SchedqDirectOutcome;

extern SchedqDirectOutcome schedq_direct_complete(int64 task_id, int32 attempt,
												  int64 nonce, Datum result,
												  bool		  result_null,
												  ItemPointer hint);
extern bool schedq_direct_insert(const SchedqTaskOptions *const *opts,
								 const char *const *statuses, int n, Oid owner,
								 Datum *ids);

#endif /* SCHEDQ_DIRECT_H */

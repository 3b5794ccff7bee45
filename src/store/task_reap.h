/*-------------------------------------------------------------------------
 * store/task_reap.h
 *	  The statements of the reaper and of retention.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_REAP_H
#define SCHEDQ_TASK_REAP_H

#include "datatype/timestamp.h"

#include "store/task.h"

/* How many tasks one reaper pass takes back, and retention deletes, at once. */
#define TASK_REAP_BATCH		 500
#define TASK_RETENTION_BATCH 1000

extern int	schedq_task_reap_expired(TimestampTz now, int64 **ids,
									 int32 **attempts, bool **timed_out);
extern void schedq_task_reap_extend(int64 id, int32 attempt, TimestampTz now);
extern void schedq_task_reap_postpone(int64 id, const char *error);
extern int	schedq_task_reap_finished(SchedqTaskStatus status,
									  TimestampTz before, int64 **ids);
extern int	schedq_task_reap_delete(int64 *ids, int n);
extern void schedq_task_reap_keep(int64 id, const char *error);

#endif /* SCHEDQ_TASK_REAP_H */

/*-------------------------------------------------------------------------
 * store/task_manage.h
 *	  The statements of cancel and retry: one task, locked first, for a
 *	  caller with the privileges of its owner.  Inside a call bracket.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_MANAGE_H
#define SCHEDQ_TASK_MANAGE_H

#include "shared/call.h"
#include "store/task.h"

extern bool schedq_task_manage_lock(SchedqCall *call, Datum task_id,
									SchedqTaskStatus *status);
extern void schedq_task_manage_cancel(Datum task_id);
extern void schedq_task_manage_retry(Datum task_id);

#endif /* SCHEDQ_TASK_MANAGE_H */

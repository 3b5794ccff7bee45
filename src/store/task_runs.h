/*-------------------------------------------------------------------------
 * store/task_runs.h
 *	  Runs (workflows): what the status trigger and the reaper call.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_RUN_H
#define SCHEDQ_RUN_H

#include "store/task.h"

extern void schedq_task_runs_ended(Datum run_id, Datum task_id,
								  SchedqTaskStatus status);
extern int	schedq_task_runs_reap(void);

#endif /* SCHEDQ_RUN_H */

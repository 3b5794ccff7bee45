/*-------------------------------------------------------------------------
 * store/task_runs.h
 *	  Runs (workflows): what the status trigger, cancel_run and the
 *	  reaper call.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_RUNS_H
#define SCHEDQ_TASK_RUNS_H

#include "shared/call.h"
#include "store/task.h"

extern void schedq_task_runs_ended(Datum run_id, Datum task_id,
								   SchedqTaskStatus status);
extern int	schedq_task_runs_reap(void);
extern bool schedq_task_runs_cancel(SchedqCall *call, Datum run_id);

#endif /* SCHEDQ_TASK_RUNS_H */

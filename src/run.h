/*-------------------------------------------------------------------------
 * run.h
 *	  Runs (workflows): what the status trigger and the reaper call.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_RUN_H
#define SCHEDQ_RUN_H

#include "task.h"

extern void schedq_run_task_ended(Datum run_id, Datum task_id,
								  SchedqTaskStatus status);
extern int	schedq_reap_runs(void);

#endif /* SCHEDQ_RUN_H */

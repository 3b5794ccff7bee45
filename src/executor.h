/*-------------------------------------------------------------------------
 * executor.h
 *	  The built-in SQL executors: their pool (kept by each database's
 *	  scheduler), their slots in shared memory, and what others ask of
 *	  them.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_EXECUTOR_H
#define SCHEDQ_EXECUTOR_H

#include "fmgr.h"

extern PGDLLEXPORT void schedq_executor_main(Datum main_arg);

extern void	 schedq_executor_init(void);
extern int	 schedq_executors_keep(int *wanted, bool *no_slot);
extern bool	 schedq_executors_stop(Oid dboid);
extern bool	 schedq_executor_runs(int64 task_id, int32 attempt);
extern Datum schedq_executor_busy_tasks(void);
extern bool	 schedq_executor_interrupt(int64 task_id, int32 attempt);
extern void	 schedq_executors_escalate(void);
extern void	 schedq_executor_cancel_at_commit(int64 task_id);

#endif /* SCHEDQ_EXECUTOR_H */

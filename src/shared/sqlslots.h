/*-------------------------------------------------------------------------
 * shared/sqlslots.h
 *	  The SQL executors' slots in shared memory: what an executor
 *	  publishes of the attempt it runs, and what the reaper, cancel and
 *	  the utility hook ask of the executors.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SQLSLOTS_H
#define SCHEDQ_SQLSLOTS_H

#include "postgres.h"

extern void	 schedq_sqlslots_init(void);
extern void	 schedq_sqlslots_take(Oid dboid);
extern void	 schedq_sqlslots_publish(int64 task_id, int32 attempt);
extern bool	 schedq_sqlslots_stop(Oid dboid);
extern bool	 schedq_sqlslots_runs(int64 task_id, int32 attempt);
extern Datum schedq_sqlslots_busy_tasks(void);
extern int	 schedq_sqlslots_busy(Oid dboid);
extern bool	 schedq_sqlslots_interrupt(int64 task_id, int32 attempt);
extern void	 schedq_sqlslots_escalate(void);
extern void	 schedq_sqlslots_cancel_at_commit(int64 task_id);

#endif /* SCHEDQ_SQLSLOTS_H */

/*-------------------------------------------------------------------------
 * store/task_citus.h
 *	  The claim and complete on a schedq.task that Citus distributes by
 *	  queue (schedq.distribute).  Inside a call bracket.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_CITUS_H
#define SCHEDQ_TASK_CITUS_H

#include "store/task_claim.h"

extern int	 schedq_task_citus_claim(const SchedqClaimRequest *r,
									 SchedqClaimed			  *rows);
extern bool	 schedq_task_citus_look(const SchedqClaimRequest *r);
extern bool	 schedq_task_citus_still_there(const SchedqWakeTask		*wake,
										   const SchedqClaimRequest *r);
extern bool	 schedq_task_citus_complete(int64 task_id, int32 attempt,
										int64 nonce, Datum result,
										bool result_null);
extern char *schedq_task_citus_queue_of(int64 task_id, int32 attempt,
										int64 nonce);
extern char *schedq_task_citus_queue_of_task(int64 task_id);
extern void	 schedq_task_citus_require_local(Datum queue, const char *call);

/*
 * How often a wait on a distributed schedq looks again without a wake-up:
 * a task made available on its queue's node by other than a submit run
 * there (a submit routed from a transaction block on the coordinator, a
 * tick, a retry) wakes no one on that node.
 */
#define SCHEDQ_CITUS_RELOOK_USECS ((int64) 1000000)

#endif /* SCHEDQ_TASK_CITUS_H */

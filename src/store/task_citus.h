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
extern bool	 schedq_task_citus_complete(int64 task_id, int32 attempt,
										int64 nonce, Datum result,
										bool result_null);
extern char *schedq_task_citus_queue_of(int64 task_id, int32 attempt,
										int64 nonce);
extern char *schedq_task_citus_queue_of_task(int64 task_id);
extern bool	 schedq_task_citus_queue_local(Datum queue);

#endif /* SCHEDQ_TASK_CITUS_H */

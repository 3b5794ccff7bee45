/*-------------------------------------------------------------------------
 * wake.h
 *	  Wake-ups after commit: the scheduler of this database, and claims
 *	  waiting for a task.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_WAKE_H
#define SCHEDQ_WAKE_H

#include "utils/array.h"

extern void schedq_wake_init(void);

extern void schedq_wake_scheduler_at_commit(void);
extern void schedq_wake_scheduler_now(Oid dboid);
extern void schedq_wake_claimers_at_commit(const char *queue,
										   ArrayType  *required_caps);
extern void schedq_wake_all_claimers_at_commit(void);

extern void schedq_waiter_register(ArrayType *queues, ArrayType *caps,
								   bool only_needing_caps);
extern void schedq_waiter_unregister(void);

#endif /* SCHEDQ_WAKE_H */

/*-------------------------------------------------------------------------
 * shared/wake.h
 *	  Wake-ups after commit: the scheduler of this database, and claims
 *	  waiting for a task.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_WAKE_H
#define SCHEDQ_WAKE_H

#include "datatype/timestamp.h"
#include "utils/array.h"

/*
 * A task made available, as a wake-up names it: the hash of its queue's
 * name (the one hashtext() computes), Bloom bits of its required
 * capabilities, and its place in claim order as the waker knew it (the
 * id, or all three, may be lower bounds).
 */
typedef struct SchedqWakeTask
{
	uint32		queue;
	uint64		caps;
	int32		priority;
	TimestampTz run_at;
	int64		id;
} SchedqWakeTask;

extern void schedq_wake_init(void);

extern void schedq_wake_scheduler_at_commit(void);
extern void schedq_wake_scheduler_now(Oid dboid);
extern void schedq_wake_claimers_at_commit(const char *queue,
										   ArrayType  *required_caps,
										   int32 priority, TimestampTz run_at,
										   int64 id);
extern void schedq_wake_all_claimers_at_commit(void);
extern void schedq_wake_all_claimers_now(void);

extern void schedq_wake_register(ArrayType *queues, ArrayType *caps,
								 bool only_needing_caps);
extern const SchedqWakeTask *schedq_wake_woken_for(void);
extern void					 schedq_wake_check_writable(void);
extern bool schedq_wake_sleep(TimestampTz deadline, uint32 wait_event_info);
extern void schedq_wake_pass_on(void);
extern void schedq_wake_unregister(void);

#endif /* SCHEDQ_WAKE_H */

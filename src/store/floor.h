/*-------------------------------------------------------------------------
 * store/floor.h
 *	  The claim floor: where in claim order a claim may start looking.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_FLOOR_H
#define SCHEDQ_FLOOR_H

#include "datatype/timestamp.h"

/*
 * A position in claim order, compared column by column, ascending: the
 * key of task_available_idx (-priority, run_at, id).
 */
typedef struct SchedqClaimKey
{
	int64		prio; /* minus the priority */
	TimestampTz run_at;
	int64		id;
} SchedqClaimKey;

extern void schedq_floor_init(void);
extern void schedq_floor_probe_if_due(void);
extern void schedq_floor_get(SchedqClaimKey *key);
extern void schedq_floor_lower_at_commit(int32 priority, TimestampTz run_at,
										 int64 id);

#endif /* SCHEDQ_FLOOR_H */

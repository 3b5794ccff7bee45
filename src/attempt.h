/*-------------------------------------------------------------------------
 * attempt.h
 *	  The operations on a running attempt: fail (shared with the reaper),
 *	  and the claimed-row hint that claim leaves for complete.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_ATTEMPT_H
#define SCHEDQ_ATTEMPT_H

#include "storage/itemptr.h"

/* What schedq_fail_attempt did. */
typedef enum SchedqFailOutcome
{
	FAIL_STALE,		/* that attempt was no longer the running one */
	FAIL_RETRY_NOW, /* back to 'available' */
	FAIL_RETRY,		/* back to 'pending', for later */
	FAIL_FINAL		/* 'failed' for good */
} SchedqFailOutcome;

extern SchedqFailOutcome schedq_fail_attempt(int64 task_id, int32 attempt,
											 const int64 *nonce,
											 const char *error, int64 retry_us,
											 bool permanent);
extern void				 schedq_attempt_claimed_at(int64 task_id, int32 attempt,
												   ItemPointer tid);

#endif /* SCHEDQ_ATTEMPT_H */

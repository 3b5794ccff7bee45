/*-------------------------------------------------------------------------
 * store/task_attempt.h
 *	  The statements on a running attempt: heartbeat, complete and fail,
 *	  each guarded by (id, attempt, nonce, status 'running'), and what
 *	  verify_grant and the SQL executors read of one.  Inside a call
 *	  bracket (shared/call.h).
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_ATTEMPT_H
#define SCHEDQ_TASK_ATTEMPT_H

#include "datatype/timestamp.h"
#include "storage/itemptr.h"

#include "store/task.h"

/* What schedq_task_attempt_fail did. */
typedef enum SchedqFailOutcome
{
	FAIL_STALE,		/* that attempt was no longer the running one */
	FAIL_RETRY_NOW, /* back to 'available' */
	FAIL_RETRY,		/* back to 'pending', for later */
	FAIL_FINAL		/* 'failed' for good */
} SchedqFailOutcome;

/* The state of an attempt a token names, for verify_grant. */
typedef enum SchedqAttemptState
{
	ATTEMPT_STALE,	 /* not the running attempt */
	ATTEMPT_EXPIRED, /* running, its lease has passed */
	ATTEMPT_VALID	 /* running, within its lease */
} SchedqAttemptState;

extern void schedq_task_attempt_claimed_at(int64 task_id, int32 attempt,
										   ItemPointer tid);
/* What schedq.progress reports with a heartbeat. */
typedef struct SchedqProgress
{
	float4 value; /* 0 to 100 */
	bool   value_null;
	text  *note; /* or NULL */
} SchedqProgress;

extern bool schedq_task_attempt_heartbeat(int64 task_id, int32 attempt,
										  int64 nonce, const Interval *extend,
										  const SchedqProgress *progress,
										  TimestampTz		   *expires);
extern bool schedq_task_attempt_complete(int64 task_id, int32 attempt,
										 int64 nonce, Datum result,
										 bool result_null);
extern SchedqFailOutcome
schedq_task_attempt_fail(int64 task_id, int32 attempt, const int64 *nonce,
						 const char *error, int64 retry_us, bool permanent);
extern SchedqAttemptState schedq_task_attempt_state(int64 task_id,
													int32 attempt, int64 nonce);
extern bool				  schedq_task_attempt_owner(int64 task_id, Oid *owner,
													TimestampTz *deadline);

#endif /* SCHEDQ_TASK_ATTEMPT_H */

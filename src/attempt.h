/*-------------------------------------------------------------------------
 * attempt.h
 *	  The operations on a running attempt: fail (shared with the reaper),
 *	  completing the attempts of many tokens (shared with
 *	  complete_and_claim), and the claimed-row hint that claim leaves for
 *	  complete.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_ATTEMPT_H
#define SCHEDQ_ATTEMPT_H

#include "fmgr.h"
#include "storage/itemptr.h"

/*
 * The grants of a tokens argument (complete_many, complete_and_claim),
 * checked, with their results; completed is filled by
 * schedq_complete_tokens.
 */
typedef struct SchedqTokens
{
	int	   n;
	Datum *ids;			 /* int8 */
	Datum *attempts;	 /* int4 */
	Datum *nonces;		 /* int8 */
	Datum *results;		 /* jsonb, one per token, or NULL for none */
	bool  *result_nulls; /* with results */
	bool  *completed;	 /* one per token */
} SchedqTokens;

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
extern void schedq_tokens_read(FunctionCallInfo fcinfo, int tokens_arg,
							   int results_arg, const char *fn,
							   SchedqTokens *t);
extern int	schedq_complete_tokens(SchedqTokens *t);
extern void schedq_attempt_claimed_at(int64 task_id, int32 attempt,
									  ItemPointer tid);

#endif /* SCHEDQ_ATTEMPT_H */

/*-------------------------------------------------------------------------
 * api/attempt.h
 *	  What complete_and_claim shares with complete_many: reading a tokens
 *	  argument, and completing its attempts.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_API_ATTEMPT_H
#define SCHEDQ_API_ATTEMPT_H

#include "fmgr.h"

/*
 * The tokens of a tokens argument (complete_many, complete_and_claim),
 * checked, with their results; completed is filled by
 * schedq_attempt_complete_tokens.
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

extern void schedq_attempt_tokens_read(FunctionCallInfo fcinfo, int tokens_arg,
									   int results_arg, const char *fn,
									   SchedqTokens *t);
extern int	schedq_attempt_complete_tokens(SchedqTokens *t);

#endif /* SCHEDQ_API_ATTEMPT_H */

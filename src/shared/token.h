/*-------------------------------------------------------------------------
 * shared/token.h
 *	  Tokens: what claim hands out, signed, and what heartbeat, complete
 *	  and fail require.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TOKEN_H
#define SCHEDQ_TOKEN_H

#include "datatype/timestamp.h"

/* What a token names. */
typedef struct SchedqToken
{
	int64		task_id;
	int32		attempt;
	TimestampTz lease_expires;
	int64		nonce; /* the claim's: schedq.task.claim_nonce */
} SchedqToken;

/* What schedq_token_parse found. */
typedef enum SchedqTokenCheck
{
	TOKEN_OK,
	TOKEN_MALFORMED,
	TOKEN_BAD_SIGNATURE
} SchedqTokenCheck;

extern char			   *schedq_token_sign(const SchedqToken *token);
extern SchedqTokenCheck schedq_token_parse(const char  *text,
										   SchedqToken *token);
extern void	 schedq_token_require(const char *text, SchedqToken *token);
extern int32 schedq_token_rotate_key(void);

#endif /* SCHEDQ_TOKEN_H */

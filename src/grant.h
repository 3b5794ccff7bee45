/*-------------------------------------------------------------------------
 * grant.h
 *	  Grants: the signed tokens that claim hands out and that heartbeat,
 *	  complete and fail require.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_GRANT_H
#define SCHEDQ_GRANT_H

#include "datatype/timestamp.h"

typedef struct SchedqGrant
{
	int64		task_id;
	int32		attempt;
	TimestampTz lease_expires;
	int64		nonce; /* the claim's: schedq.task.claim_nonce */
} SchedqGrant;

extern char *schedq_grant_sign(const SchedqGrant *grant);
extern void	 schedq_grant_require(const char *token, SchedqGrant *grant);

#endif /* SCHEDQ_GRANT_H */

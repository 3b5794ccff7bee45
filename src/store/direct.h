/*-------------------------------------------------------------------------
 * store/direct.h
 *	  The direct writes' contract with the rest of schedq: a write that
 *	  is not for the direct path says why (SchedqDirectDecline), each
 *	  reason is counted in metrics() and its first occurrence in a backend
 *	  logged at DEBUG1, and schedq.direct_writes turns the path off.
 *	  docs/internals/direct-writes.md describes the protocol.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_DIRECT_H
#define SCHEDQ_DIRECT_H

#include "shared/metrics.h"

#define DIRECT_DECLINE_ENUM(sym, name) DIRECT_DECLINE_##sym,
typedef enum SchedqDirectDecline
{
	SCHEDQ_DIRECT_DECLINES(DIRECT_DECLINE_ENUM) DIRECT_NUM_DECLINES
} SchedqDirectDecline;
#undef DIRECT_DECLINE_ENUM

extern void schedq_direct_declined(SchedqDirectDecline why);

#endif /* SCHEDQ_DIRECT_H */

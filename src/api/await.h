/*-------------------------------------------------------------------------
 * api/await.h
 *	  What a waiting claim does with a wake-up it could not use.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_AWAIT_H
#define SCHEDQ_AWAIT_H

#include "store/task_claim.h"

extern void schedq_await_pass_on(const SchedqClaimRequest *r, bool distributed);

#endif /* SCHEDQ_AWAIT_H */

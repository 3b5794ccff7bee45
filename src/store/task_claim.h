/*-------------------------------------------------------------------------
 * store/task_claim.h
 *	  The claim: which tasks a worker may take (the claim rule), taking
 *	  them, and the looks of a waiting claim.  Inside a call bracket.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_CLAIM_H
#define SCHEDQ_TASK_CLAIM_H

#include "storage/itemptr.h"
#include "utils/array.h"
#include "utils/timestamp.h"

#include "shared/wake.h"
#include "store/floor.h"

/* Which queues a claim takes from. */
typedef enum SchedqClaimFilter
{
	CLAIM_ALL_QUEUES,
	CLAIM_ONE_QUEUE,
	CLAIM_SOME_QUEUES,
	CLAIM_SQL_TASKS, /* the built-in executors: SQL tasks only */
	CLAIM_NUM_FILTERS
} SchedqClaimFilter;

/* What one claim asks for, checked. */
typedef struct SchedqClaimRequest
{
	SchedqClaimFilter filter;
	ArrayType		 *queues; /* text[], or NULL for every queue */
	ArrayType		 *caps;	  /* text[] */
	Oid				  caller;
	bool			  admin; /* else the caller must act for the owner */
	int32			  n;
	Datum			  worker; /* text */
	Interval		 *lease;
	int64			  nonce; /* fences this claim's attempts (token.c) */
	TimestampTz		  now;	 /* the clock: a claim may have waited */
	SchedqClaimKey	  floor; /* where in claim order to start */
} SchedqClaimRequest;

/* A claimed task: schedq.claimed_task's columns but the token, then run_at. */
#define CLAIMED_COLUMNS 9
typedef struct SchedqClaimed
{
	Datum			v[CLAIMED_COLUMNS];
	bool			isnull[CLAIMED_COLUMNS];
	ItemPointerData tid; /* the claimed row version */
} SchedqClaimed;

/* The columns of SchedqClaimed. */
#define CLAIMED_ID				 0
#define CLAIMED_ATTEMPT			 1
#define CLAIMED_QUEUE			 2
#define CLAIMED_PRIORITY		 5
#define CLAIMED_LEASE_EXPIRES_AT 7
#define CLAIMED_RUN_AT			 8

extern int	schedq_task_claim(const SchedqClaimRequest *r, SchedqClaimed *rows);
extern void schedq_task_claim_rows_from_spi(int n, SchedqClaimed *rows);
extern bool schedq_task_claim_look(const SchedqClaimRequest *r);
extern bool schedq_task_claim_still_there(const SchedqWakeTask *wake);
extern int	schedq_task_claim_sql_ready(int limit);

#endif /* SCHEDQ_TASK_CLAIM_H */

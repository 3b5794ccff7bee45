/*-------------------------------------------------------------------------
 * store/direct.h
 *	  Writes to schedq.task without the SQL executor.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_DIRECT_H
#define SCHEDQ_DIRECT_H

#include "storage/itemptr.h"
#include "utils/array.h"
#include "utils/timestamp.h"

#include "store/task.h"

/* What schedq_direct_complete did. */
typedef enum SchedqDirectOutcome
{
	DIRECT_DONE,	 /* the attempt was running and is now done */
	DIRECT_STALE,	 /* the attempt is not the running one: nothing changed */
	DIRECT_DECLINED, /* not for this path: run the UPDATE statement */
} SchedqDirectOutcome;

/*
 * A claim without the executor: the tasks of one available index, from
 * the claim floor on, that pass the filters, locked with SKIP LOCKED and
 * made 'running'.
 */
typedef struct SchedqDirectClaim
{
	const char *index;	  /* task_available_idx, _queue_idx or _sql_idx */
	Datum		queue;	  /* text: task_available_queue_idx's queue */
	ArrayType  *queues;	  /* text[]: any of these queues, or NULL */
	ArrayType  *caps;	  /* text[]: a task's required_caps must be in it */
	bool		sql_only; /* kind 'sql' requiring 'sql', and not in busy */
	ArrayType  *busy;	  /* int8[] */
	Oid			caller;
	bool		admin; /* or the caller must have the owner's privileges */
	int			n;
	Datum		worker; /* text */
	Interval   *lease;
	TimestampTz now;
	int64		floor_prio; /* the claim floor: (-priority, run_at, id) */
	TimestampTz floor_run_at;
	int64		floor_id;
	int64		nonce;
} SchedqDirectClaim;

/* A claimed task: schedq.claimed_task's columns but the token, then run_at. */
#define CLAIMED_COLUMNS 9
typedef struct SchedqClaimed
{
	Datum			v[CLAIMED_COLUMNS];
	bool			isnull[CLAIMED_COLUMNS];
	ItemPointerData tid; /* the claimed row version */
} SchedqClaimed;

extern int schedq_direct_claim(const SchedqDirectClaim *c, SchedqClaimed *rows);
extern SchedqDirectOutcome schedq_direct_complete(int64 task_id, int32 attempt,
												  int64 nonce, Datum result,
												  bool		  result_null,
												  ItemPointer hint);
extern bool schedq_direct_insert(const SchedqTaskOptions *const *opts,
								 const char *const *statuses, int n, Oid owner,
								 Datum *ids);

#endif /* SCHEDQ_DIRECT_H */

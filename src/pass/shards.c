/*-------------------------------------------------------------------------
 * pass/shards.c
 *	  The scheduler's passes on a node of a Citus cluster that distributes
 *	  schedq.task (schedq.distribute): the same passes, run over each shard
 *	  of the table placed on this node, one after the other.
 *
 * Each node's scheduler owns the shards placed on it; no two schedulers
 * share a shard, and a shard moved away is skipped once the move has
 * switched its placement (store/task_shards.c takes Citus's shard
 * metadata lock first).  Inside a shard every statement of a pass names
 * the shard's table (shared/plan.c), so promotion, the reaper and
 * retention are the single server's code, on the rows of that shard.
 * What follows from it, and docs/scale-out.md states:
 *	- the gates hold within a shard: a lock key orders the tasks of its
 *	  queue (and of the other queues in that shard), a concurrency limit
 *	  counts the tasks of each shard on its own;
 *	- a shard whose metadata lock a move or split holds is skipped until the
 *	  next iteration, past the scheduler's lock_timeout;
 *	- the gate events of a shard can be lost to it: taken by a pass that
 *	  skipped it, or written on the node it moved away from.  So a shard
 *	  is first entered with every parked task of it unparked (as the
 *	  scheduler does at its start for the whole table), skipping rows
 *	  others hold locked (and then again at its next entry): when it
 *	  arrives on the node, again after it left and came back, after it
 *	  was skipped, and after any pass failed;
 *	- gate events are the node's (schedq.gate_event is a plain table on
 *	  every node, written by the status trigger of the shards here): they
 *	  are taken once and judged in every shard of the node.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "shared/isolate.h"
#include "shared/plan.h"
#include "pass/promote.h"
#include "pass/reaper.h"
#include "pass/shards.h"
#include "store/task_claim.h"
#include "store/task_gates.h"
#include "store/task_shards.h"

/* What one pass does in one shard. */
typedef void (*ShardPass)(void *arg);

/*
 * The shards entered since their parked tasks were last unparked, in
 * TopMemoryContext; one not listed gets its parked tasks unparked first.
 */
static int64 *shards_known = NULL;
static int	  shards_nknown = 0;
static int	  shards_maxknown = 0;

static int
shards_find(int64 shard)
{
	for (int i = 0; i < shards_nknown; i++)
		if (shards_known[i] == shard)
			return i;
	return -1;
}

static void
shards_remember(int64 shard)
{
	if (shards_nknown == shards_maxknown)
	{
		shards_maxknown = Max(64, shards_maxknown * 2);
		shards_known =
			shards_known == NULL ?
				MemoryContextAlloc(TopMemoryContext,
								   sizeof(int64) * shards_maxknown) :
				repalloc(shards_known, sizeof(int64) * shards_maxknown);
	}
	shards_known[shards_nknown++] = shard;
}

static void
shards_forget(int64 shard)
{
	int i = shards_find(shard);

	if (i >= 0)
		shards_known[i] = shards_known[--shards_nknown];
}

/*
 * Forget the shards no longer placed here: one that comes back gets its
 * parked tasks unparked again (its events stayed on the other node).
 */
static void
shards_keep_only(const int64 *shards, int n)
{
	for (int i = shards_nknown - 1; i >= 0; i--)
	{
		bool placed = false;

		for (int k = 0; k < n && !placed; k++)
			placed = shards[k] == shards_known[i];
		if (!placed)
			shards_known[i] = shards_known[--shards_nknown];
	}
}

/* Every shard gets its parked tasks unparked when next entered. */
void
schedq_shards_forget_all(void)
{
	shards_nknown = 0;
}

typedef struct ShardEnter
{
	int64 shard;
	bool  entered;
} ShardEnter;

static void
shard_enter_step(void *arg)
{
	ShardEnter *e = arg;

	e->entered = schedq_task_shards_enter(e->shard);
}

/*
 * Enter a shard, unless a move or split holds its metadata lock past the
 * scheduler's lock_timeout: then the shard waits for the next iteration,
 * and the other shards go on.
 */
static bool
shard_enter(int64 shard)
{
	ShardEnter e = { shard, false };
	ErrorData *edata = schedq_isolate_subxact(shard_enter_step, &e);

	if (edata == NULL)
		return e.entered;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	shards_forget(shard);
	ereport(DEBUG1, errmsg("schedq scheduler: shard " INT64_FORMAT
						   " of schedq.task skipped: %s",
						   shard, edata->message));
	FreeErrorData(edata);
	return false;
}

/* Run `pass` in each shard placed here; the shard is left on error too. */
static void
shards_each(ShardPass pass, void *arg)
{
	int64 *shards;
	int	   n = schedq_task_shards_local(&shards);
	int	   freed;

	shards_keep_only(shards, n);
	freed = schedq_plan_keep_shards(shards, n);
	if (freed > 0)
		ereport(LOG, errmsg("schedq scheduler: freed %d kept plans of shards "
							"of schedq.task no longer placed on this node",
							freed));
	for (int i = 0; i < n; i++)
	{
		if (!shard_enter(shards[i]))
		{
			shards_forget(shards[i]);
			continue;
		}
		PG_TRY();
		{
			if (shards_find(shards[i]) < 0 &&
				schedq_task_gates_unpark_unlocked())
				shards_remember(shards[i]);
			pass(arg);
		}
		PG_FINALLY();
		{
			schedq_task_shards_leave();
		}
		PG_END_TRY();
	}
	pfree(shards);
}

/* The arguments and results of a pass, for shards_each. */
typedef struct ShardPassArg
{
	TimestampTz		 now;
	int				 limit;
	bool			*more;
	int				 done;
	TimestampTz		 next_due;
	SchedqGateEvents events;
} ShardPassArg;

static void
shard_judge_events(void *arg)
{
	ShardPassArg *a = arg;

	a->done += schedq_promote_judge_events(&a->events, a->now, a->more);
}

/*
 * set_concurrency_limit writes its gate event on the node it runs on (the
 * coordinator, mostly), so the other nodes learn of a changed limit from
 * the reference table itself: when its contents change, every shard's
 * parked tasks are unparked, and judged again, at the shard's next entry.
 * Else a task parked on a limit that was raised stayed parked until a task
 * of its key finished in its shard, and forever when none ran there.
 */
static void
shards_notice_limits(void)
{
	static bool	 seen = false;
	static int64 version;
	int64		 now = schedq_task_gates_limits_version();

	if (seen && now != version)
		schedq_shards_forget_all();
	seen = true;
	version = now;
}

/*
 * Take the node's gate events and judge them in every shard.  The caller
 * holds the pass lock (schedq_promote_try_lock).
 */
int
schedq_shards_promote_events(TimestampTz now, bool *more)
{
	ShardPassArg a = { .now = now, .more = more };

	shards_notice_limits();
	if (!schedq_promote_take_events(&a.events))
		return 0;
	shards_each(shard_judge_events, &a);
	return a.done;
}

static void
shard_promote_due(void *arg)
{
	ShardPassArg *a = arg;

	a->done += schedq_promote_due(a->now, a->more);
}

/* Promote the due tasks of every shard. */
int
schedq_shards_promote_due(TimestampTz now, bool *more)
{
	ShardPassArg a = { .now = now, .more = more };

	shards_each(shard_promote_due, &a);
	return a.done;
}

static void
shard_reap(void *arg)
{
	ShardPassArg *a = arg;

	a->done += schedq_reaper_pass(a->now, a->more);
}

/* The reaper and retention in every shard. */
int
schedq_shards_reap(TimestampTz now, bool *more)
{
	ShardPassArg a = { .now = now, .more = more };

	shards_each(shard_reap, &a);
	return a.done;
}

static void
shard_next_due(void *arg)
{
	ShardPassArg *a = arg;

	a->next_due = Min(a->next_due, schedq_promote_next_due(a->now));
}

/* The earliest time a parked-free pending task of any shard comes due. */
TimestampTz
schedq_shards_next_due(TimestampTz now)
{
	ShardPassArg a = { .now = now, .next_due = DT_NOEND };

	shards_each(shard_next_due, &a);
	return a.next_due;
}

static void
shard_sql_ready(void *arg)
{
	ShardPassArg *a = arg;

	a->done += schedq_task_claim_sql_ready(a->limit - a->done);
}

/* How many SQL tasks of the shards here the executors could claim, at most limit. */
int
schedq_shards_sql_ready(int limit)
{
	ShardPassArg a = { .limit = limit };

	shards_each(shard_sql_ready, &a);
	return a.done;
}

/*
 * Run `step` in the shards placed here until it returns true, starting
 * one shard further each call, so that no shard's tasks wait behind
 * another's; returns whether one did.  For the SQL executors of this
 * node (process/sqlexec.c), each claim in one shard.  Leaves parked tasks
 * to the scheduler: it unparks nothing.
 */
bool
schedq_shards_until(bool (*step)(void *arg), void *arg)
{
	static uint32 first = 0;
	int64		 *shards;
	int			  n = schedq_task_shards_local(&shards);
	bool		  done = false;

	(void) schedq_plan_keep_shards(shards, n);
	first++;
	for (int k = 0; k < n && !done; k++)
	{
		int64 shard = shards[(first + k) % n];

		if (!shard_enter(shard))
			continue;
		PG_TRY();
		{
			done = step(arg);
		}
		PG_FINALLY();
		{
			schedq_task_shards_leave();
		}
		PG_END_TRY();
	}
	pfree(shards);
	return done;
}

/*-------------------------------------------------------------------------
 * pass/promote.c
 *	  The promotion pass: pending tasks become available once every gate
 *	  holds.  Only this pass moves a task from 'pending' to 'available'.
 *
 * Gates: run_at has come; every dependency is done; for a lock_key, the
 * task is first in key order (version, then id, tasks without a version
 * last) among the live tasks of its key and no task of the key is
 * available or running; for a concurrency_key with a limit, fewer than the
 * limit are available or running.  Tasks promoted earlier in the pass
 * count against the last two.
 *
 * A task the pass cannot promote (a row that breaks an index, say) is
 * set aside (shared/isolate.c): parked on 'error' with the error in last_error,
 * until the scheduler starts again; the other tasks are promoted.
 *
 * Nothing here scans every pending task.  A pass reads:
 *	- due, unparked pending tasks through task_pending_idx (run_at), in
 *	  batches: ungated ones are promoted in one statement; gated ones are
 *	  judged one by one, with per-key answers cached for the pass;
 *	- a gated task that is blocked by its lock_key, its concurrency limit or
 *	  a dependency is *parked*: it leaves task_pending_idx and is not looked
 *	  at again until a gate event names its key or its dependency;
 *	- gate events (schedq.gate_event) are written by the status trigger of
 *	  schedq.task (store/triggers.c) when a task holding a key, or one that
 *	  others depend on (has_dependents), leaves 'available'/'running', and
 *	  by set_concurrency_limit.  The pass consumes them first.  The head of
 *	  each lock key and as many tasks of each concurrency key as there are
 *	  free slots are judged at once, as the due tasks are: promoted, or
 *	  parked again behind the gate that holds them now (one row version
 *	  each, not an unpark and then a promotion); one not yet due is
 *	  unparked for its time.  The dependents of each finished task
 *	  (task_depends_on_idx) are unparked and judged with the due tasks.
 *	  An event committed after the pass consumed the events stays for the
 *	  next pass, so no parked task is forgotten.
 *
 * Passes are serialized by a transaction-level lock (shared/locks.h), so the
 * scheduler and schedq._promote_once() never run one at the same time.
 * The scheduler never waits for it (schedq_promote_try_lock): while a
 * session that ran _promote_once() keeps its transaction open, the
 * scheduler skips promotion and tries again soon.  It runs the two steps
 * of a pass -- gate events, then due tasks -- each on its own
 * (schedq_promote_events, schedq_promote_due), so that an events step
 * that cannot finish (a row it must unpark is locked by someone) does not
 * hold back the promotion of other tasks.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "shared/isolate.h"
#include "shared/metrics.h"
#include "pass/promote.h"
#include "store/task.h"
#include "store/task_gates.h"
#include "shared/locks.h"
#include "shared/locks.h"

/* How many tasks one pass handles in one batch. */
#define TASK_GATES_BATCH	 1000
#define TASK_GATES_BATCH_SQL CppAsString2(TASK_GATES_BATCH)

/*
 * What the pass knows about one key, cached for the pass.  Hashed by the
 * whole key: keys of any length that share a prefix are different keys.
 */
typedef struct KeyState
{
	const char *key;	/* hash key: "L:" or "C:" + the key, palloc'd */
	int64		head;	/* lock key: first live task in key order */
	bool		held;	/* lock key: a task of it is active, or was
						 * promoted in this pass */
	int32		limit;	/* concurrency key: -1 = no limit */
	int64		active; /* concurrency key: available + running */
} KeyState;

static uint32
key_hash(const void *key, Size keysize)
{
	const char *s = *(const char *const *) key;

	return string_hash(s, strlen(s) + 1);
}

static int
key_match(const void *key1, const void *key2, Size keysize)
{
	return strcmp(*(const char *const *) key1, *(const char *const *) key2);
}

/*
 * Take the pass lock, waiting for a pass running elsewhere.  (In the
 * scheduler it is already held: schedq_promote_try_lock.)
 */
static void
promote_lock(void)
{
	LOCKTAG tag;

	schedq_locks_tag(&tag, SCHEDQ_LOCK_PROMOTE);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * Take the pass lock unless another transaction holds it; returns whether
 * it is held now.  The scheduler takes it so, before each step of a pass,
 * and never waits.
 */
bool
schedq_promote_try_lock(void)
{
	LOCKTAG tag;

	schedq_locks_tag(&tag, SCHEDQ_LOCK_PROMOTE);
	return LockAcquire(&tag, ExclusiveLock, false, true) !=
		   LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Make the given pending tasks available (schedq_isolate_batch's apply):
 * arg is the oldest run_at promoted so far, for the lag gauge.
 */
static int
promote_apply(int64 *ids, int n, void *arg)
{
	return schedq_task_gates_promote(ids, n, (TimestampTz *) arg);
}

static void
promote_set_aside(int64 id, const char *error, void *arg)
{
	schedq_task_gates_set_aside(id, error);
}

/*
 * Promote due tasks that no gate can hold: no lock_key, no
 * concurrency_key, no dependencies.  Returns how many; *full when the
 * batch was full.
 */
static int
promote_plain(TimestampTz now, TimestampTz *oldest, bool *full)
{
	int64 *ids;
	int	   n = schedq_task_gates_plain(now, &ids);

	*full = n == TASK_GATES_BATCH;
	return schedq_isolate_batch("promotion", ids, n, promote_apply,
								promote_set_aside, oldest);
}

static KeyState *
promote_key(HTAB *keys, char kind, const char *key, bool *found)
{
	char	 *hkey = psprintf("%c:%s", kind, key);
	KeyState *ks = (KeyState *) hash_search(keys, &hkey, HASH_ENTER, found);

	if (*found)
		pfree(hkey);
	return ks;
}

/*
 * Does the lock-key gate let this task go?  It must be the head of its
 * key and the key must have nothing available or running (nor anything
 * promoted earlier in this pass).  The row's own columns 7 and 8 tell the
 * key's state when the pass has not seen the key yet.
 */
static bool
promote_lock_gate(HTAB *keys, const char *lock_key, int64 id, HeapTuple tuple,
				  TupleDesc desc)
{
	bool	  found;
	KeyState *ks = promote_key(keys, 'L', lock_key, &found);

	if (!found)
	{
		bool isnull;

		ks->head = DatumGetInt64(
			SPI_getbinval(tuple, desc, GATES_ROW_LOCK_HEAD, &isnull));
		ks->held = DatumGetBool(
			SPI_getbinval(tuple, desc, GATES_ROW_LOCK_HELD, &isnull));
	}
	return ks->head == id && !ks->held;
}

/*
 * Does the concurrency gate let this task go?  When the pass has not seen
 * the key yet, the row's columns 9 and 10 tell its limit and how many are
 * active, if the statement looked (q_freed); else they are asked for.
 */
static bool
promote_concurrency_gate(HTAB *keys, const char *concurrency_key,
						 HeapTuple tuple, TupleDesc desc)
{
	bool	  found;
	KeyState *ks = promote_key(keys, 'C', concurrency_key, &found);

	if (!found)
	{
		bool  limit_null;
		bool  active_null;
		Datum limit = SPI_getbinval(tuple, desc, GATES_ROW_LIMIT, &limit_null);
		Datum active =
			SPI_getbinval(tuple, desc, GATES_ROW_ACTIVE, &active_null);

		if (active_null)
			schedq_task_gates_concurrency(concurrency_key, &ks->limit,
										  &ks->active);
		else
		{
			ks->limit = limit_null ? -1 : DatumGetInt32(limit);
			ks->active = DatumGetInt64(active);
		}
	}
	return ks->limit < 0 || ks->active < ks->limit;
}

/*
 * Record a gate event for concurrency key `key` (once per step: the 'W'
 * entry's `held` says it is recorded), so that the
 * next pass looks at its waiters again, and ask for that pass at once.
 */
static void
promote_waiters_again(HTAB *keys, const char *key, bool *more)
{
	bool	  found;
	KeyState *w = promote_key(keys, 'W', key, &found);
	Datum	  values[3] = { 0, 0, 0 };

	if (found && w->held)
		return;
	if (!found)
		w->active = 0;
	w->held = true;
	values[1] = CStringGetTextDatum(key);
	schedq_task_gate_event(values, "n n");
	*more = true;
}

/*
 * Judging, for one step: what the step knows about each key (cached, and
 * what it promotes counts against its keys), and where it is in the rows.
 */
typedef struct Judge
{
	HTAB	   *keys;		 /* KeyState by kind and key */
	bool		have_prev;	 /* a row was judged */
	int64		prev;		 /* the task of the row before */
	bool		passed_over; /* task `prev` took no slot, nor waits for one */
	TimestampTz now;
	TimestampTz oldest; /* earliest run_at promoted */
	bool	   *more;	/* another pass should follow at once */
} Judge;

static void
judge_begin(Judge *j, TimestampTz now, bool *more)
{
	HASHCTL ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(KeyState);
	ctl.hash = key_hash;
	ctl.match = key_match;
	ctl.hcxt = CurrentMemoryContext;
	j->keys =
		hash_create("schedq promotion keys", 64, &ctl,
					HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	j->have_prev = false;
	j->prev = 0;
	j->passed_over = false;
	j->now = now;
	j->oldest = DT_NOEND;
	j->more = more;
}

/*
 * Judge gated pending tasks, given in the order the pass takes them
 * (priority, run_at, id; a task may come twice, side by side, also across
 * two calls): promote those every gate lets go, park those a gate holds
 * behind that gate, unpark those not yet due (task_pending_idx brings them
 * at their time).  Columns: id, lock_key, concurrency_key, whether it has
 * dependencies, run_at, the concurrency key whose free slot brought it
 * (q_freed) or NULL, its lock key's state (LOCK_STATE_SQL), and its
 * concurrency key's limit and active count or NULLs.  Returns how many it
 * promoted.
 */
static int
judge_rows(Judge *j, SPITupleTable *rows, int n)
{
	TupleDesc desc = rows->tupdesc;
	HTAB	 *keys = j->keys;
	bool	 *more = j->more;
	int64	 *promote = palloc(sizeof(int64) * Max(n, 1));
	Datum	 *park = palloc(sizeof(Datum) * Max(n, 1));
	Datum	 *reasons = palloc(sizeof(Datum) * Max(n, 1));
	Datum	 *unpark = palloc(sizeof(Datum) * Max(n, 1));
	int		  npromote = 0;
	int		  npark = 0;
	int		  nunpark = 0;
	int		  done;

	for (int i = 0; i < n; i++)
	{
		HeapTuple tuple = rows->vals[i];
		bool	  isnull;
		int64	  id =
			DatumGetInt64(SPI_getbinval(tuple, desc, GATES_ROW_ID, &isnull));
		char *lock_key = SPI_getvalue(tuple, desc, GATES_ROW_LOCK_KEY);
		char *concurrency_key =
			SPI_getvalue(tuple, desc, GATES_ROW_CONCURRENCY_KEY);
		bool has_deps = DatumGetBool(
			SPI_getbinval(tuple, desc, GATES_ROW_HAS_DEPS, &isnull));
		TimestampTz run_at = DatumGetTimestampTz(
			SPI_getbinval(tuple, desc, GATES_ROW_RUN_AT, &isnull));
		char	   *waiter_of = SPI_getvalue(tuple, desc, GATES_ROW_WAITER_OF);
		const char *reason = NULL;
		bool		found;

		/* a concurrency key that filled its batch: the rest next pass */
		if (waiter_of != NULL)
		{
			KeyState *w = promote_key(keys, 'W', waiter_of, &found);

			if (!found)
				w->held = false;
			w->active = found ? w->active + 1 : 1;
			if (w->active == TASK_GATES_BATCH)
				promote_waiters_again(keys, waiter_of, more);
		}
		if (j->have_prev && id == j->prev)
		{
			if (waiter_of != NULL && j->passed_over)
				promote_waiters_again(keys, waiter_of, more);
			continue;
		}
		j->have_prev = true;
		j->prev = id;

		/*
		 * A waiter brought by a free slot that it does not take, and that
		 * leaves the limit's waiters (parked on its key or its
		 * dependencies, or unparked until it is due), passes the slot on:
		 * else the key's other waiters would wait for a gate event that
		 * nothing active is left to raise.
		 */
		j->passed_over = true;
		if (run_at > j->now)
		{
			unpark[nunpark++] = Int64GetDatum(id);
			if (waiter_of != NULL)
				promote_waiters_again(keys, waiter_of, more);
			continue;
		}
		if (has_deps && !schedq_task_gates_deps_done(id))
			reason = "deps";
		else if (lock_key != NULL &&
				 !promote_lock_gate(keys, lock_key, id, tuple, desc))
			reason = "lock";
		else if (concurrency_key != NULL &&
				 !promote_concurrency_gate(keys, concurrency_key, tuple, desc))
			reason = "limit";
		if (reason != NULL)
		{
			reasons[npark] = CStringGetTextDatum(reason);
			park[npark++] = Int64GetDatum(id);
			j->passed_over = strcmp(reason, "limit") != 0;
			if (waiter_of != NULL && j->passed_over)
				promote_waiters_again(keys, waiter_of, more);
			continue;
		}
		j->passed_over = false;
		if (lock_key != NULL)
			promote_key(keys, 'L', lock_key, &found)->held = true;
		if (concurrency_key != NULL)
			promote_key(keys, 'C', concurrency_key, &found)->active++;
		promote[npromote++] = id;
		if (run_at < j->oldest)
			j->oldest = run_at;
	}

	done = schedq_isolate_batch("promotion", promote, npromote, promote_apply,
								promote_set_aside, &j->oldest);
	if (npark > 0)
		schedq_task_gates_park(park, reasons, npark);
	if (nunpark > 0)
		schedq_task_gates_unpark(unpark, nunpark);
	pfree(promote);
	pfree(park);
	pfree(reasons);
	pfree(unpark);
	return done;
}

/* End a step's judging: count what it promoted, and how late the oldest was. */
static void
judge_end(Judge *j, int promoted)
{
	if (promoted > 0)
	{
		schedq_metrics_count(METRIC_TASKS_PROMOTED, promoted);
		schedq_metrics_set(METRIC_SCHEDULER_LAG_MS,
						   (uint64) Max(0, (j->now - j->oldest) / 1000));
	}
	hash_destroy(j->keys);
}

/*
 * One promotion pass at time `now`: its two steps.  Returns how many tasks
 * it made available; *more is set when a batch was full and another pass
 * should follow at once.
 */
int
schedq_promote_pass(TimestampTz now, bool *more)
{
	int promoted = schedq_promote_events(now, more);

	return promoted + schedq_promote_due(now, more);
}

/*
 * The first step of a pass: consume the gate events; judge the parked
 * tasks they free, and unpark the dependents of finished tasks for the
 * second step.  Returns how many it made available.
 */
int
schedq_promote_events(TimestampTz now, bool *more)
{
	SchedqGateEvents events;

	promote_lock();
	if (!schedq_promote_take_events(&events))
		return 0;
	return schedq_promote_judge_events(&events, now, more);
}

/*
 * Take the gate events, all of them (the first half of
 * schedq_promote_events; the caller holds the pass lock).  False when
 * there were none.
 */
bool
schedq_promote_take_events(SchedqGateEvents *events)
{
	return schedq_task_gates_take_events(events->keys, events->nulls,
										 &events->finished,
										 &events->finished_null);
}

/*
 * Judge what taken gate events free (the second half of
 * schedq_promote_events): the dependents of the finished tasks are
 * unparked, the freed heads and waiters of their keys promoted or parked
 * again.  Returns how many were promoted.
 */
int
schedq_promote_judge_events(const SchedqGateEvents *events, TimestampTz now,
							bool *more)
{
	int promoted = 0;

	if (!events->finished_null)
		schedq_task_gates_unpark_dependents(events->finished);
	if (events->nulls[0] == ' ' || events->nulls[1] == ' ')
	{
		/*
		 * What the events free, a batch at a time: events that waited
		 * (the scheduler was off, say) may free any number of tasks.
		 */
		Portal portal =
			schedq_task_gates_freed((Datum *) events->keys, events->nulls);
		Judge j;

		judge_begin(&j, now, more);
		for (;;)
		{
			SPI_cursor_fetch(portal, true, TASK_GATES_BATCH);
			if (SPI_processed == 0)
				break;
			promoted += judge_rows(&j, SPI_tuptable, (int) SPI_processed);
			SPI_freetuptable(SPI_tuptable);
		}
		SPI_cursor_close(portal);
		judge_end(&j, promoted);
	}
	return promoted;
}

/*
 * The second step of a pass: promote the due tasks that every gate lets
 * go, park those a gate holds.  Returns how many it made available.
 */
int
schedq_promote_due(TimestampTz now, bool *more)
{
	Judge j;
	int	  promoted;
	int	  n;
	bool  full;

	promote_lock();
	judge_begin(&j, now, more);
	promoted = promote_plain(now, &j.oldest, &full);
	if (full)
		*more = true;

	/* the gated ones, a batch at a time */
	n = schedq_task_gates_gated(now);
	if (n == TASK_GATES_BATCH)
		*more = true;
	if (n > 0)
		promoted += judge_rows(&j, SPI_tuptable, n);

	judge_end(&j, promoted);
	return promoted;
}

/*
 * The earliest run_at after `now` of a pending, unparked task, or
 * DT_NOEND (store/task_gates.c).
 */
TimestampTz
schedq_promote_next_due(TimestampTz now)
{
	return schedq_task_gates_next_due(now);
}

/*
 * Unpark every parked task: the scheduler does this when it starts,
 * since gate events are unlogged and a crash may have lost some.
 */
void
schedq_promote_unpark_all(void)
{
	schedq_task_gates_unpark_all();
}

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
 * set aside (isolate.c): parked on 'error' with the error in last_error,
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
 *	  schedq.task (triggers.c) when a task holding a key, or one that
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
 * Passes are serialized by a transaction-level lock (worker.h), so the
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
#include "shared/plan.h"
#include "pass/promote.h"
#include "store/task.h"
#include "process/bgworker.h"

/* How many tasks one pass handles in one batch. */
#define PROMOTE_BATCH	  1000
#define PROMOTE_BATCH_SQL CppAsString2(PROMOTE_BATCH)

/* The first live task of lock key `key` in key order: the key's head. */
#define LOCK_HEAD_SQL(key)                                                     \
	"(SELECT h.id FROM schedq.task h WHERE h.lock_key = " key                  \
	" AND h.status IN " TASK_LIVE_SQL " ORDER BY h.version, h.id LIMIT 1)"
/* Whether a task of lock key `key` is active (task_lock_active_idx). */
#define LOCK_HELD_SQL(key)                                                     \
	"EXISTS (SELECT FROM schedq.task a WHERE a.lock_key = " key                \
	" AND a.status IN " TASK_ACTIVE_SQL ")"
/* A lock key's state: its head, and whether it is held. */
#define LOCK_STATE_SQL(key) LOCK_HEAD_SQL(key) ", " LOCK_HELD_SQL(key)

static SchedqQuery q_events = SCHEDQ_QUERY0(
	"WITH e AS (DELETE FROM schedq.gate_event"
	"           RETURNING lock_key, concurrency_key, task_id)"
	" SELECT array_agg(DISTINCT lock_key) FILTER (WHERE lock_key IS NOT NULL),"
	"        array_agg(DISTINCT concurrency_key)"
	"          FILTER (WHERE concurrency_key IS NOT NULL),"
	"        array_agg(task_id) FILTER (WHERE task_id IS NOT NULL)"
	" FROM e");
/*
 * What the gate events free, to be judged now: the head of each lock key
 * ($1), and for each concurrency key ($2) as many of its parked tasks, in
 * claim order, as it has free slots -- its limit (none: a batch) less what
 * is active; at most a batch per key and pass (`waiter_of` names the key:
 * a key that filled a batch gets another event, so the rest follows next
 * pass).  Parked pending tasks only, locked, in the order the pass judges
 * them; a task that is both comes twice, side by side, as a waiter first
 * (the second row is skipped when a batch before changed the task).  With
 * each, the state of its lock key and, when $2 names it, of its
 * concurrency key.
 */
static SchedqQuery q_freed = SCHEDQ_QUERY(
	"WITH state AS MATERIALIZED ("
	"  SELECT c, (SELECT l.max_active"
	"             FROM schedq.concurrency_limit l WHERE l.key = c) AS max_active,"
	"     (SELECT count(*) FROM schedq.task a WHERE a.concurrency_key = c"
	"        AND a.status IN " TASK_ACTIVE_SQL ") AS active"
	"  FROM unnest($2::text[]) c),"
	" freed AS MATERIALIZED ("
	"  SELECT " LOCK_HEAD_SQL(
		"k") " AS id, NULL::text AS waiter_of"
			 "  FROM unnest($1::text[]) k"
			 "  UNION ALL"
			 "  SELECT x.id, s.c FROM state s, LATERAL ("
			 "    SELECT t.id FROM schedq.task t"
			 "    WHERE t.concurrency_key = s.c AND t.status = 'pending'"
			 "      AND t.parked AND t.parked_on = 'limit'"
			 "    ORDER BY t.priority DESC, t.run_at, t.id"
			 "    LIMIT least(greatest(COALESCE(s.max_active, " PROMOTE_BATCH_SQL
			 ")"
			 "                         - s.active, 0), " PROMOTE_BATCH_SQL
			 ")) x)"
			 " SELECT t.id, t.lock_key, t.concurrency_key, t.depends_on <> '{}',"
			 "        t.run_at, f.waiter_of,"
			 "        CASE WHEN f.waiter_of IS NULL THEN t.id"
			 "             ELSE " LOCK_HEAD_SQL(
				 "t.lock_key") " END,"
							   "        " LOCK_HELD_SQL(
								   "t.lock_key") ","
												 "        s.max_active, s.active"
												 " FROM freed f JOIN schedq.task t ON t.id = f.id"
												 " LEFT JOIN state s ON s.c = t.concurrency_key"
												 " WHERE t.status = 'pending' AND t.parked"
												 " ORDER BY t.priority DESC, t.run_at, t.id, f.waiter_of"
												 " FOR UPDATE OF t",
	TEXTARRAYOID, TEXTARRAYOID);
static SchedqQuery q_unpark_dependents =
	SCHEDQ_QUERY("UPDATE schedq.task SET parked = false, parked_on = NULL"
				 " WHERE depends_on && $1::bigint[] AND depends_on <> '{}'"
				 " AND status = 'pending' AND parked",
				 INT8ARRAYOID);
static SchedqQuery q_plain =
	SCHEDQ_QUERY("SELECT id FROM schedq.task"
				 " WHERE status = 'pending' AND NOT parked AND run_at <= $1"
				 "   AND" TASK_UNGATED_SQL
				 " ORDER BY run_at, id LIMIT " PROMOTE_BATCH_SQL
				 " FOR UPDATE SKIP LOCKED",
				 TIMESTAMPTZOID);
static SchedqQuery q_gated = SCHEDQ_QUERY(
	"SELECT id, lock_key, concurrency_key, depends_on <> '{}', run_at,"
	"       NULL::text, " LOCK_STATE_SQL(
		"t.lock_key") ","
					  "       NULL::integer, NULL::bigint FROM ("
					  "  SELECT * FROM schedq.task"
					  "  WHERE status = 'pending' AND NOT parked AND run_at <= $1"
					  "    AND" TASK_GATED_SQL
					  "  ORDER BY run_at, id LIMIT " PROMOTE_BATCH_SQL
					  "  FOR UPDATE SKIP LOCKED) t"
					  " ORDER BY t.priority DESC, t.run_at, t.id",
	TIMESTAMPTZOID);
static SchedqQuery q_concurrency_state = SCHEDQ_QUERY(
	"SELECT (SELECT max_active FROM schedq.concurrency_limit WHERE key = $1),"
	"       (SELECT count(*) FROM schedq.task WHERE concurrency_key = $1"
	"          AND status IN " TASK_ACTIVE_SQL ")",
	TEXTOID);
static SchedqQuery q_deps =
	SCHEDQ_QUERY("SELECT FROM schedq.task t, unnest(t.depends_on) d"
				 " JOIN schedq.task x ON x.id = d"
				 " WHERE t.id = $1 AND x.status <> 'done' LIMIT 1",
				 INT8OID);
static SchedqQuery q_promote =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET status = 'available', parked = false, parked_on = NULL"
				 " WHERE id = ANY ($1) AND status = 'pending'"
				 " RETURNING" TASK_AVAILABLE_COLUMNS,
				 INT8ARRAYOID);
/* A task the pass could not promote: parked until the scheduler restarts. */
static SchedqQuery q_set_aside =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET parked = true, parked_on = 'error', last_error = $2"
				 " WHERE id = $1 AND status = 'pending'",
				 INT8OID, TEXTOID);
static SchedqQuery q_park = SCHEDQ_QUERY(
	"UPDATE schedq.task t SET parked = true, parked_on = p.reason"
	" FROM unnest($1::bigint[], $2::text[]) p(id, reason)"
	" WHERE t.id = p.id AND t.status = 'pending'"
	"   AND (NOT t.parked OR t.parked_on IS DISTINCT FROM p.reason)",
	INT8ARRAYOID, TEXTARRAYOID);
static SchedqQuery q_unpark =
	SCHEDQ_QUERY("UPDATE schedq.task SET parked = false, parked_on = NULL"
				 " WHERE id = ANY ($1) AND status = 'pending' AND parked",
				 INT8ARRAYOID);
static SchedqQuery q_next_due =
	SCHEDQ_QUERY("SELECT min(run_at) FROM schedq.task"
				 " WHERE status = 'pending' AND NOT parked AND run_at > $1",
				 TIMESTAMPTZOID);

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

	schedq_lock_tag(&tag, SCHEDQ_LOCK_PROMOTE);
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

	schedq_lock_tag(&tag, SCHEDQ_LOCK_PROMOTE);
	return LockAcquire(&tag, ExclusiveLock, false, true) !=
		   LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Make the given pending tasks available (schedq_isolate_batch's apply): arg is
 * the oldest run_at promoted so far, for the lag gauge.
 */
static int
promote_apply(int64 *ids, int n, void *arg)
{
	TimestampTz *oldest = arg;
	Datum		 array =
		PointerGetDatum(construct_array((Datum *) ids, n, INT8OID, 8,
										FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	int done;

	done = schedq_plan_run(&q_promote, &array, NULL, 0, SPI_OK_UPDATE_RETURNING);
	for (int i = 0; i < done; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		bool		isnull;
		TimestampTz run_at = DatumGetTimestampTz(
			SPI_getbinval(tuple, SPI_tuptable->tupdesc, 4, &isnull));

		schedq_task_row_available_at_commit(tuple, SPI_tuptable->tupdesc, 1);
		if (run_at < *oldest)
			*oldest = run_at;
	}
	return done;
}

static void
promote_set_aside(int64 id, const char *error, void *arg)
{
	Datum values[2] = { Int64GetDatum(id), CStringGetTextDatum(error) };

	schedq_plan_run(&q_set_aside, values, NULL, 0, SPI_OK_UPDATE);
}

/*
 * Promote due tasks that no gate can hold: no lock_key, no
 * concurrency_key, no dependencies.  Returns how many; *full when the
 * batch was full.
 */
static int
promote_plain(TimestampTz now, TimestampTz *oldest, bool *full)
{
	Datum  value = TimestampTzGetDatum(now);
	int	   n;
	int64 *ids;

	n = schedq_plan_run(&q_plain, &value, NULL, 0, SPI_OK_SELECT);
	*full = n == PROMOTE_BATCH;
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		ids[i] =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1, &isnull));
	}
	return schedq_isolate_batch("promotion", ids, n, promote_apply, promote_set_aside,
						  oldest);
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

		ks->head = DatumGetInt64(SPI_getbinval(tuple, desc, 7, &isnull));
		ks->held = DatumGetBool(SPI_getbinval(tuple, desc, 8, &isnull));
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
		Datum limit = SPI_getbinval(tuple, desc, 9, &limit_null);
		Datum active = SPI_getbinval(tuple, desc, 10, &active_null);
		bool  asked = active_null;

		if (asked)
		{
			Datum value = CStringGetTextDatum(concurrency_key);

			schedq_plan_run(&q_concurrency_state, &value, NULL, 0, SPI_OK_SELECT);
			limit = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								  1, &limit_null);
			active = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								   2, &active_null);
		}
		ks->limit = limit_null ? -1 : DatumGetInt32(limit);
		ks->active = DatumGetInt64(active);
		if (asked)
			SPI_freetuptable(SPI_tuptable);
	}
	return ks->limit < 0 || ks->active < ks->limit;
}

/*
 * Are all of a task's dependencies done?  (A dependency deleted by
 * retention was done.)  The answer's tuple table is freed at once: a step
 * may ask this for every one of thousands of rows, and each table is a
 * memory context of its own until SPI_finish.
 */
static bool
promote_deps_done(int64 id)
{
	Datum value = Int64GetDatum(id);
	bool  done = schedq_plan_run(&q_deps, &value, NULL, 1, SPI_OK_SELECT) == 0;

	SPI_freetuptable(SPI_tuptable);
	return done;
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
		int64	  id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		char	 *lock_key = SPI_getvalue(tuple, desc, 2);
		char	 *concurrency_key = SPI_getvalue(tuple, desc, 3);
		bool has_deps = DatumGetBool(SPI_getbinval(tuple, desc, 4, &isnull));
		TimestampTz run_at =
			DatumGetTimestampTz(SPI_getbinval(tuple, desc, 5, &isnull));
		char	   *waiter_of = SPI_getvalue(tuple, desc, 6);
		const char *reason = NULL;
		bool		found;

		/* a concurrency key that filled its batch: the rest next pass */
		if (waiter_of != NULL)
		{
			KeyState *w = promote_key(keys, 'W', waiter_of, &found);

			if (!found)
				w->held = false;
			w->active = found ? w->active + 1 : 1;
			if (w->active == PROMOTE_BATCH)
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
		if (has_deps && !promote_deps_done(id))
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
	{
		Datum args[2];

		args[0] =
			PointerGetDatum(construct_array(park, npark, INT8OID, 8,
											FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		args[1] = PointerGetDatum(
			construct_array(reasons, npark, TEXTOID, -1, false, TYPALIGN_INT));
		schedq_plan_run(&q_park, args, NULL, 0, SPI_OK_UPDATE);
	}
	if (nunpark > 0)
	{
		Datum array =
			PointerGetDatum(construct_array(unpark, nunpark, INT8OID, 8,
											FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));

		schedq_plan_run(&q_unpark, &array, NULL, 0, SPI_OK_UPDATE);
	}
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
	SPITupleTable *events;
	Datum		   keys[2];
	char		   nulls[2];
	Datum		   finished;
	bool		   isnull;
	int			   promoted = 0;

	promote_lock();
	if (schedq_plan_run(&q_events, NULL, NULL, 0, SPI_OK_SELECT) == 0)
		return 0;
	events = SPI_tuptable;
	finished = SPI_getbinval(events->vals[0], events->tupdesc, 3, &isnull);
	if (!isnull)
		schedq_plan_run(&q_unpark_dependents, &finished, NULL, 0, SPI_OK_UPDATE);
	for (int i = 0; i < 2; i++)
	{
		keys[i] =
			SPI_getbinval(events->vals[0], events->tupdesc, i + 1, &isnull);
		nulls[i] = isnull ? 'n' : ' ';
	}
	if (nulls[0] == ' ' || nulls[1] == ' ')
	{
		/*
		 * What the events free, a batch at a time: events that waited
		 * (the scheduler was off, say) may free any number of tasks.
		 */
		Portal portal = schedq_plan_cursor_open(&q_freed, keys, nulls);
		Judge  j;

		judge_begin(&j, now, more);
		for (;;)
		{
			SPI_cursor_fetch(portal, true, PROMOTE_BATCH);
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
	Datum value = TimestampTzGetDatum(now);
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
	n = schedq_plan_run(&q_gated, &value, NULL, 0, SPI_OK_SELECT);
	if (n == PROMOTE_BATCH)
		*more = true;
	if (n > 0)
		promoted += judge_rows(&j, SPI_tuptable, n);

	judge_end(&j, promoted);
	return promoted;
}

/*
 * The earliest run_at after `now` of a pending, unparked task, or
 * DT_NOEND.  Tasks already due but not promoted (locked by someone, or
 * waiting for dependencies) are not counted: they would make the
 * scheduler spin.
 */
TimestampTz
schedq_promote_next_due(TimestampTz now)
{
	Datum value = TimestampTzGetDatum(now);
	bool  isnull;
	Datum next;

	schedq_plan_run(&q_next_due, &value, NULL, 0, SPI_OK_SELECT);
	next =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? DT_NOEND : DatumGetTimestampTz(next);
}

/*
 * Unpark every parked task: the scheduler does this when it starts,
 * since gate events are unlogged and a crash may have lost some.
 */
void
schedq_promote_unpark_all(void)
{
	if (SPI_execute(
			"UPDATE schedq.task SET parked = false, parked_on = NULL WHERE parked",
			false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not unpark tasks");
}

PG_FUNCTION_INFO_V1(schedq_promote_once);

/*
 * schedq._promote_once(now): one promotion pass, as the scheduler runs it,
 * at the given time.  For tests and for manual use with the scheduler
 * disabled.  Returns how many tasks became available.
 */
Datum
schedq_promote_once(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	bool	   more = false;
	int		   promoted;

	schedq_call_begin(&call);
	promoted = schedq_promote_pass(PG_GETARG_TIMESTAMPTZ(0), &more);
	schedq_call_end(&call);
	PG_RETURN_INT32(promoted);
}

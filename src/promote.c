/*-------------------------------------------------------------------------
 * promote.c
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
 *	  by set_concurrency_limit.  The pass consumes them first and unparks
 *	  the head of each lock key, as many tasks of each concurrency key as
 *	  there are free slots, and the dependents of each finished task
 *	  (task_depends_on_idx).  An event committed after the pass consumed
 *	  the events stays for the next pass, so no parked task is forgotten.
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

#include "call.h"
#include "isolate.h"
#include "metrics.h"
#include "plan.h"
#include "promote.h"
#include "task.h"
#include "worker.h"

/* How many tasks one pass handles in one batch. */
#define PROMOTE_BATCH	  1000
#define PROMOTE_BATCH_SQL CppAsString2(PROMOTE_BATCH)

/* The first live task of lock key `key` in key order: the key's head. */
#define LOCK_HEAD_SQL(key)                                                     \
	"(SELECT h.id FROM schedq.task h WHERE h.lock_key = " key                  \
	" AND h.status IN " TASK_LIVE_SQL " ORDER BY h.version, h.id LIMIT 1)"

static SchedqQuery q_events = SCHEDQ_QUERY0(
	"WITH e AS (DELETE FROM schedq.gate_event"
	"           RETURNING lock_key, concurrency_key, task_id)"
	" SELECT array_agg(DISTINCT lock_key) FILTER (WHERE lock_key IS NOT NULL),"
	"        array_agg(DISTINCT concurrency_key)"
	"          FILTER (WHERE concurrency_key IS NOT NULL),"
	"        array_agg(task_id) FILTER (WHERE task_id IS NOT NULL)"
	" FROM e");
static SchedqQuery q_unpark_lock =
	SCHEDQ_QUERY("UPDATE schedq.task SET parked = false, parked_on = NULL"
				 " WHERE id IN (SELECT " LOCK_HEAD_SQL(
					 "k") "              FROM unnest($1::text[]) k)"
						  " AND status = 'pending' AND parked",
				 TEXTARRAYOID);
/*
 * Free slots of each key: its limit (none: a batch) less what is active.
 * At most a batch per key and pass; a key that filled a whole batch gets
 * another event, so the rest follows next pass.
 */
static SchedqQuery q_unpark_concurrency = SCHEDQ_QUERY(
	"WITH room AS ("
	"  SELECT c, COALESCE((SELECT l.max_active"
	"                      FROM schedq.concurrency_limit l WHERE l.key = c),"
	"                     " PROMOTE_BATCH_SQL ")"
	"     - (SELECT count(*) FROM schedq.task a WHERE a.concurrency_key = c"
	"        AND a.status IN " TASK_ACTIVE_SQL ") AS n"
	"  FROM unnest($1::text[]) c),"
	" freed AS ("
	"  SELECT room.c, x.id, room.n FROM room, LATERAL ("
	"    SELECT t.id FROM schedq.task t"
	"    WHERE t.concurrency_key = room.c AND t.status = 'pending'"
	"      AND t.parked AND t.parked_on = 'limit'"
	"    ORDER BY t.priority DESC, t.run_at, t.id"
	"    LIMIT least(greatest(room.n, 0), " PROMOTE_BATCH_SQL ")) x),"
	" unparked AS (UPDATE schedq.task t SET parked = false, parked_on = NULL"
	"   FROM freed WHERE t.id = freed.id RETURNING freed.c, freed.n)"
	" INSERT INTO schedq.gate_event (concurrency_key)"
	" SELECT c FROM unparked GROUP BY c"
	" HAVING count(*) = " PROMOTE_BATCH_SQL,
	TEXTARRAYOID);
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
	"SELECT id, lock_key, concurrency_key, depends_on <> '{}', run_at FROM ("
	"  SELECT * FROM schedq.task"
	"  WHERE status = 'pending' AND NOT parked AND run_at <= $1"
	"    AND" TASK_GATED_SQL "  ORDER BY run_at, id LIMIT " PROMOTE_BATCH_SQL
	"  FOR UPDATE SKIP LOCKED) t"
	" ORDER BY priority DESC, run_at, id",
	TIMESTAMPTZOID);
static SchedqQuery q_lock_state = SCHEDQ_QUERY(
	"SELECT " LOCK_HEAD_SQL(
		"$1") ","
			  "       EXISTS (SELECT FROM schedq.task a WHERE a.lock_key = $1"
			  "          AND a.status IN " TASK_ACTIVE_SQL ")",
	TEXTOID);
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
	SCHEDQ_QUERY("UPDATE schedq.task SET status = 'available'"
				 " WHERE id = ANY ($1) AND status = 'pending'"
				 " RETURNING" TASK_AVAILABLE_COLUMNS,
				 INT8ARRAYOID);
/* A task the pass could not promote: parked until the scheduler restarts. */
static SchedqQuery q_set_aside =
	SCHEDQ_QUERY("UPDATE schedq.task"
				 " SET parked = true, parked_on = 'error', last_error = $2"
				 " WHERE id = $1 AND status = 'pending'",
				 INT8OID, TEXTOID);
static SchedqQuery q_park =
	SCHEDQ_QUERY("UPDATE schedq.task t SET parked = true, parked_on = p.reason"
				 " FROM unnest($1::bigint[], $2::text[]) p(id, reason)"
				 " WHERE t.id = p.id AND t.status = 'pending'",
				 INT8ARRAYOID, TEXTARRAYOID);
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
 * Consume the gate events and unpark what they free.
 */
static void
promote_consume_events(bool *more)
{
	SPITupleTable *events;
	int			   n;
	Datum		   locks;
	Datum		   limits;
	Datum		   finished;
	bool		   isnull;

	n = schedq_run(&q_events, NULL, NULL, 0, SPI_OK_SELECT);
	if (n == 0)
		return;
	events = SPI_tuptable;
	locks = SPI_getbinval(events->vals[0], events->tupdesc, 1, &isnull);
	if (!isnull)
		schedq_run(&q_unpark_lock, &locks, NULL, 0, SPI_OK_UPDATE);

	finished = SPI_getbinval(events->vals[0], events->tupdesc, 3, &isnull);
	if (!isnull)
		schedq_run(&q_unpark_dependents, &finished, NULL, 0, SPI_OK_UPDATE);

	limits = SPI_getbinval(events->vals[0], events->tupdesc, 2, &isnull);
	if (!isnull)
	{
		schedq_run(&q_unpark_concurrency, &limits, NULL, 0, SPI_OK_INSERT);
		if (SPI_processed > 0)
			*more = true;
	}
}

/*
 * Make the given pending tasks available (schedq_isolate's apply): arg is
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

	done = schedq_run(&q_promote, &array, NULL, 0, SPI_OK_UPDATE_RETURNING);
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

	schedq_run(&q_set_aside, values, NULL, 0, SPI_OK_UPDATE);
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

	n = schedq_run(&q_plain, &value, NULL, 0, SPI_OK_SELECT);
	*full = n == PROMOTE_BATCH;
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		ids[i] =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1, &isnull));
	}
	return schedq_isolate("promotion", ids, n, promote_apply, promote_set_aside,
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
 * promoted earlier in this pass).
 */
static bool
promote_lock_gate(HTAB *keys, const char *lock_key, int64 id)
{
	bool	  found;
	KeyState *ks = promote_key(keys, 'L', lock_key, &found);

	if (!found)
	{
		Datum value = CStringGetTextDatum(lock_key);
		bool  isnull;

		schedq_run(&q_lock_state, &value, NULL, 0, SPI_OK_SELECT);
		ks->head =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1, &isnull));
		ks->held =
			DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 2, &isnull));
	}
	return ks->head == id && !ks->held;
}

/*
 * Does the concurrency gate let this task go?  Counts it if so.
 */
static bool
promote_concurrency_gate(HTAB *keys, const char *concurrency_key)
{
	bool	  found;
	KeyState *ks = promote_key(keys, 'C', concurrency_key, &found);

	if (!found)
	{
		Datum value = CStringGetTextDatum(concurrency_key);
		bool  isnull;

		schedq_run(&q_concurrency_state, &value, NULL, 0, SPI_OK_SELECT);
		ks->limit =
			DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1, &isnull));
		if (isnull)
			ks->limit = -1;
		ks->active =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 2, &isnull));
	}
	return ks->limit < 0 || ks->active < ks->limit;
}

/*
 * Are all of a task's dependencies done?  (A dependency deleted by
 * retention was done.)
 */
static bool
promote_deps_done(int64 id)
{
	Datum value = Int64GetDatum(id);

	return schedq_run(&q_deps, &value, NULL, 1, SPI_OK_SELECT) == 0;
}

/*
 * Judge a batch of due gated tasks; promote those every gate lets go and
 * park those a key blocks.  Returns how many were promoted.
 */
static int
promote_gated(TimestampTz now, TimestampTz *oldest, bool *more)
{
	Datum		   value = TimestampTzGetDatum(now);
	SPITupleTable *rows;
	HASHCTL		   ctl;
	HTAB		  *keys;
	int			   n;
	int64		  *promote;
	Datum		  *park;
	Datum		  *reasons;
	int			   npromote = 0;
	int			   npark = 0;
	int			   done = 0;

	n = schedq_run(&q_gated, &value, NULL, 0, SPI_OK_SELECT);
	if (n == 0)
		return 0;
	if (n == PROMOTE_BATCH)
		*more = true;
	rows = SPI_tuptable;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(KeyState);
	ctl.hash = key_hash;
	ctl.match = key_match;
	ctl.hcxt = CurrentMemoryContext;
	keys = hash_create("schedq promotion keys", 64, &ctl,
					   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	promote = palloc(sizeof(int64) * n);
	park = palloc(sizeof(Datum) * n);
	reasons = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
	{
		HeapTuple tuple = rows->vals[i];
		TupleDesc desc = rows->tupdesc;
		bool	  isnull;
		int64	  id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		char	 *lock_key = SPI_getvalue(tuple, desc, 2);
		char	 *concurrency_key = SPI_getvalue(tuple, desc, 3);
		bool has_deps = DatumGetBool(SPI_getbinval(tuple, desc, 4, &isnull));
		TimestampTz run_at =
			DatumGetTimestampTz(SPI_getbinval(tuple, desc, 5, &isnull));

		if (has_deps && !promote_deps_done(id))
		{
			reasons[npark] = CStringGetTextDatum("deps");
			park[npark++] = Int64GetDatum(id);
			continue;
		}
		if (lock_key != NULL && !promote_lock_gate(keys, lock_key, id))
		{
			reasons[npark] = CStringGetTextDatum("lock");
			park[npark++] = Int64GetDatum(id);
			continue;
		}
		if (concurrency_key != NULL &&
			!promote_concurrency_gate(keys, concurrency_key))
		{
			reasons[npark] = CStringGetTextDatum("limit");
			park[npark++] = Int64GetDatum(id);
			continue;
		}
		if (lock_key != NULL)
		{
			bool found;

			promote_key(keys, 'L', lock_key, &found)->held = true;
		}
		if (concurrency_key != NULL)
		{
			bool found;

			promote_key(keys, 'C', concurrency_key, &found)->active++;
		}
		promote[npromote++] = id;
		if (run_at < *oldest)
			*oldest = run_at;
	}

	done = schedq_isolate("promotion", promote, npromote, promote_apply,
						  promote_set_aside, oldest);
	if (npark > 0)
	{
		Datum args[2];

		args[0] =
			PointerGetDatum(construct_array(park, npark, INT8OID, 8,
											FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		args[1] = PointerGetDatum(
			construct_array(reasons, npark, TEXTOID, -1, false, TYPALIGN_INT));
		schedq_run(&q_park, args, NULL, 0, SPI_OK_UPDATE);
	}
	hash_destroy(keys);
	return done;
}

/*
 * One promotion pass at time `now`: its two steps.  Returns how many tasks
 * it made available; *more is set when a batch was full and another pass
 * should follow at once.
 */
int
schedq_promote_pass(TimestampTz now, bool *more)
{
	schedq_promote_events(more);
	return schedq_promote_due(now, more);
}

/*
 * The first step of a pass: consume the gate events and unpark what they
 * free.
 */
void
schedq_promote_events(bool *more)
{
	promote_lock();
	promote_consume_events(more);
}

/*
 * The second step of a pass: promote the due tasks that every gate lets
 * go, park those a gate holds.  Returns how many it made available.
 */
int
schedq_promote_due(TimestampTz now, bool *more)
{
	TimestampTz oldest = DT_NOEND;
	int			promoted;
	bool		full;

	promote_lock();
	promoted = promote_plain(now, &oldest, &full);
	if (full)
		*more = true;
	promoted += promote_gated(now, &oldest, more);

	if (promoted > 0)
	{
		schedq_count(METRIC_TASKS_PROMOTED, promoted);
		schedq_metric_set(METRIC_SCHEDULER_LAG_MS,
						  (uint64) Max(0, (now - oldest) / 1000));
	}
	return promoted;
}

/*
 * The earliest run_at after `now` of a pending, unparked task, or
 * DT_NOEND.  Tasks already due but not promoted (locked by someone, or
 * waiting for dependencies) are not counted: they would make the
 * scheduler spin.
 */
TimestampTz
schedq_next_due(TimestampTz now)
{
	Datum value = TimestampTzGetDatum(now);
	bool  isnull;
	Datum next;

	schedq_run(&q_next_due, &value, NULL, 0, SPI_OK_SELECT);
	next =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? DT_NOEND : DatumGetTimestampTz(next);
}

/*
 * Unpark every parked task: the scheduler does this when it starts,
 * since gate events are unlogged and a crash may have lost some.
 */
void
schedq_unpark_all(void)
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

/*-------------------------------------------------------------------------
 * pass/limit_floors.c
 *	  Limit floors: where the promotion pass starts reading a concurrency
 *	  key's parked waiters.
 *
 * Why: the pass reads a key's waiters in claim order from
 * task_parked_concurrency_idx, and every waiter it promotes leaves a dead
 * entry at the front of the key's range there, which every later scan
 * walks until VACUUM removes it.  Over a long drain of a limited key that
 * walk became most of what finding the freed tasks cost.
 *
 * A key's floor is a position in claim order (priority descending, run_at,
 * id) below which the key has no task parked on 'limit'; the scan starts
 * there.  It is a lower bound, never a guess:
 *	- only a pass parks a task on 'limit' (store/task_gates.c, q_park),
 *	  and passes are serialized by the pass lock;
 *	- a scan of a key's waiters, in a snapshot taken after every earlier
 *	  pass committed, sets the floor to the first waiter it returns, or to
 *	  a task this step parked on 'limit' before it, if one sorts lower;
 *	- a pass that parks a task on 'limit' lowers its key's floor to it;
 *	- the floors live in this process; a generation per database in
 *	  shared memory is bumped by every step of every pass, so a process
 *	  that finds it moved since its own last step (a pass ran elsewhere,
 *	  schedq._promote_once() say) forgets its floors.
 * A step that aborts leaves floors that are still lower bounds: its parks
 * are undone, and what its scan found held before them.  In the shards of
 * a cluster (pass/shards.c) no floor is kept: each shard is a table of its
 * own.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pass/limit_floors.h"
#include "shared/databases.h"
#include "shared/plan.h"
#include "shared/shm.h"

/* Keys kept at most; beyond, the floors are forgotten and start again. */
#define FLOORS_MAX 10000

/* A key's floor, and what this step parked of it. */
typedef struct LimitFloor
{
	const char *key;	  /* hash key, in floors_cxt */
	bool		known;	  /* the floor below holds */
	int32		priority; /* the floor, in claim order */
	TimestampTz run_at;
	int64		id;
	uint64		stamp;		   /* the step that parked the task below */
	int32		park_priority; /* the lowest it parked, in claim order */
	TimestampTz park_run_at;
	int64		park_id;
} LimitFloor;

/* Bumped by every step of a pass; SCHEDQ_MAX_DATABASES of them. */
static pg_atomic_uint64 *generations = NULL;

static MemoryContext floors_cxt = NULL;
static HTAB			*floors = NULL;
static uint64		 floors_generation = 0; /* this process's last step */
static bool			 floors_on = false;		/* kept in this step */

static Size
generations_size(void)
{
	return sizeof(pg_atomic_uint64) * SCHEDQ_MAX_DATABASES;
}

static void
generations_init(void *part)
{
	pg_atomic_uint64 *g = part;

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
		pg_atomic_init_u64(&g[i], 0);
}

/* Add the generations to shared memory; from _PG_init while preloading. */
void
schedq_limit_floors_init(void)
{
	schedq_shm_add("schedq pass generations", generations_size,
				   (void **) &generations, generations_init);
}

static uint32
floor_hash(const void *key, Size keysize)
{
	const char *s = *(const char *const *) key;

	return string_hash(s, strlen(s) + 1);
}

static int
floor_match(const void *key1, const void *key2, Size keysize)
{
	return strcmp(*(const char *const *) key1, *(const char *const *) key2);
}

static void
floors_forget(void)
{
	HASHCTL ctl;

	if (floors_cxt == NULL)
		floors_cxt =
			AllocSetContextCreate(TopMemoryContext, "schedq limit floors",
								  ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(floors_cxt);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(LimitFloor);
	ctl.hash = floor_hash;
	ctl.match = floor_match;
	ctl.hcxt = floors_cxt;
	floors =
		hash_create("schedq limit floors", 64, &ctl,
					HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
}

/*
 * A step of a pass begins; the caller holds the pass lock.  Forget the
 * floors if another process ran a step since this one's last, and bump
 * the generation.
 */
void
schedq_limit_floors_begin(void)
{
	pg_atomic_uint64 *g;

	floors_on = false;
	if (generations == NULL)
		return;
	g = &generations[MyDatabaseId % SCHEDQ_MAX_DATABASES];
	if (floors == NULL || pg_atomic_read_u64(g) != floors_generation ||
		hash_get_num_entries(floors) > FLOORS_MAX)
		floors_forget();
	floors_generation = pg_atomic_add_fetch_u64(g, 1);
	floors_on = schedq_plan_shard() == 0;
}

/* Is (p1, r1, i1) before (p2, r2, i2) in claim order? */
static bool
floor_before(int32 p1, TimestampTz r1, int64 i1, int32 p2, TimestampTz r2,
			 int64 i2)
{
	if (p1 != p2)
		return p1 > p2;
	if (r1 != r2)
		return r1 < r2;
	return i1 < i2;
}

static LimitFloor *
floor_entry(const char *key)
{
	bool		found;
	const char *k = key;
	LimitFloor *f = hash_search(floors, &k, HASH_ENTER, &found);

	if (!found)
	{
		f->key = MemoryContextStrdup(floors_cxt, key);
		f->known = false;
		f->stamp = 0;
	}
	return f;
}

/*
 * The floors of the concurrency keys `keys` (text[], or keys_null) as
 * q_freed's three arrays: priority (integer[]), run_at (timestamptz[]) and
 * id (bigint[]), each element (INT_MAX, -infinity, INT64_MIN) where a key
 * has none: from the start.
 */
void
schedq_limit_floors_args(Datum keys, bool keys_null, Datum *args, char *nulls)
{
	Datum *elems;
	bool  *elem_nulls;
	int	   n;
	Datum *prio;
	Datum *run_at;
	Datum *id;

	if (keys_null)
	{
		for (int i = 0; i < 3; i++)
		{
			args[i] = (Datum) 0;
			nulls[i] = 'n';
		}
		return;
	}
	deconstruct_array(DatumGetArrayTypeP(keys), TEXTOID, -1, false,
					  TYPALIGN_INT, &elems, &elem_nulls, &n);
	prio = palloc(sizeof(Datum) * Max(n, 1));
	run_at = palloc(sizeof(Datum) * Max(n, 1));
	id = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		LimitFloor *f = NULL;

		if (floors_on && !elem_nulls[i])
		{
			char *key = TextDatumGetCString(elems[i]);

			f = hash_search(floors, &key, HASH_FIND, NULL);
			pfree(key);
		}
		if (f != NULL && f->known)
		{
			prio[i] = Int32GetDatum(f->priority);
			run_at[i] = TimestampTzGetDatum(f->run_at);
			id[i] = Int64GetDatum(f->id);
		}
		else
		{
			prio[i] = Int32GetDatum(PG_INT32_MAX);
			run_at[i] = TimestampTzGetDatum(DT_NOBEGIN);
			id[i] = Int64GetDatum(PG_INT64_MIN);
		}
	}
	args[0] = PointerGetDatum(
		construct_array(prio, n, INT4OID, 4, true, TYPALIGN_INT));
	args[1] =
		PointerGetDatum(construct_array(run_at, n, TIMESTAMPTZOID, 8,
										FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(
		construct_array(id, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	for (int i = 0; i < 3; i++)
		nulls[i] = ' ';
}

/*
 * The first waiter of concurrency key `key` that this step's scan
 * returned, in claim order: nothing parked on 'limit' sorts before it,
 * nor before the lowest task this step has parked on 'limit' since.
 */
void
schedq_limit_floors_found(const char *key, int32 priority, TimestampTz run_at,
						  int64 id)
{
	LimitFloor *f;

	if (!floors_on)
		return;
	f = floor_entry(key);
	f->known = true;
	f->priority = priority;
	f->run_at = run_at;
	f->id = id;
	if (f->stamp == floors_generation &&
		floor_before(f->park_priority, f->park_run_at, f->park_id, priority,
					 run_at, id))
	{
		f->priority = f->park_priority;
		f->run_at = f->park_run_at;
		f->id = f->park_id;
	}
}

/* This step parks a task of concurrency key `key` on 'limit'. */
void
schedq_limit_floors_parked(const char *key, int32 priority, TimestampTz run_at,
						   int64 id)
{
	LimitFloor *f;

	if (!floors_on)
		return;
	f = floor_entry(key);
	if (f->stamp != floors_generation ||
		floor_before(priority, run_at, id, f->park_priority, f->park_run_at,
					 f->park_id))
	{
		f->stamp = floors_generation;
		f->park_priority = priority;
		f->park_run_at = run_at;
		f->park_id = id;
	}
	if (f->known &&
		floor_before(priority, run_at, id, f->priority, f->run_at, f->id))
	{
		f->priority = priority;
		f->run_at = run_at;
		f->id = id;
	}
}

/*-------------------------------------------------------------------------
 * store/floor.c
 *	  The claim floor: a position in claim order below which no task of
 *	  this database is available, so that claims start their index scan
 *	  there instead of at the head of task_available_idx.
 *
 * Why: every claim turns an 'available' entry of task_available_idx into
 * a dead one, and only VACUUM removes dead index pages.  A claim that
 * starts at the head walks every page of entries claimed since the last
 * VACUUM -- with a busy queue and autovacuum's one-minute naptime, that
 * walk is most of what a claim costs (and of what a hand-written SKIP
 * LOCKED queue costs).  Starting at the floor, it walks what was claimed
 * since the floor last moved.
 *
 * The floor (per database, in shared memory) is a lower bound, never a
 * guess: every task available to any snapshot a claim may use has a key
 * >= floor.  Two things move it:
 *
 *	- Lowering.  A transaction that makes tasks available (submit,
 *	  promotion, retry, a periodic tick: every caller of
 *	  schedq_task_available_at_commit) lowers the floor to its smallest key
 *	  before its commit becomes visible (XACT_EVENT_PRE_COMMIT) and again
 *	  after (XACT_EVENT_COMMIT), and counts itself as committing in
 *	  between.  Each of these steps bumps the generation.
 *
 *	- Probing.  Now and then (schedq.claim_floor_interval) a claim first
 *	  looks up the first available task from the floor on, in a fresh
 *	  READ COMMITTED snapshot of a transaction that has written nothing,
 *	  and sets the floor to its key -- only if no transaction was
 *	  committing when it read the generation and the generation has not
 *	  moved since.  So a task it did not see was either not available in
 *	  any committed state (its transaction was not yet at PRE_COMMIT: it
 *	  will lower the floor itself) or claimed for good.  A task locked by
 *	  an uncommitted claim is still available in the probe's snapshot,
 *	  so a claim that rolls back loses nothing.
 *
 * What bypasses the functions (an admin's UPDATE of schedq.task, COPY
 * into it, a PREPAREd transaction committed later) does not lower the
 * floor; for those, every probe at least a second after the last full
 * one starts from the head again and may lower the floor as well as
 * raise it.  So such a task waits at most about a second.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "store/floor.h"
#include "shared/plan.h"
#include "base/settings.h"
#include "shared/databases.h"
#include "shared/shm.h"
#include "shared/commit.h"

/*
 * A database's claim floor, in shared memory.  Slots are taken once per
 * database and never given back; a slot's fields are protected by its
 * mutex, dboid by the schedq LWLock.
 */
typedef struct SchedqClaimFloor
{
	Oid			   dboid; /* InvalidOid: slot is free */
	slock_t		   mutex;
	uint64		   generation;	  /* bumped by every lowering step */
	int			   committing;	  /* transactions between their two lowerings */
	bool		   valid;		  /* false: claims start at the head */
	SchedqClaimKey key;			  /* no available task sorts before it */
	TimestampTz	   probed_at;	  /* the last probe started */
	TimestampTz	   full_probe_at; /* the last probe from the head started */
} SchedqClaimFloor;

static SchedqClaimFloor *floors = NULL; /* SCHEDQ_MAX_DATABASES of them */

/* A probe from the head at least this often. */
#define FLOOR_FULL_PROBE_USECS USECS_PER_SEC

static const SchedqClaimKey floor_min = { PG_INT64_MIN, DT_NOBEGIN,
										  PG_INT64_MIN };
static const SchedqClaimKey floor_max = { PG_INT64_MAX, DT_NOEND,
										  PG_INT64_MAX };

/* This backend's floor slot, once found. */
static SchedqClaimFloor *floor_slot_cache = NULL;

/* This transaction's smallest key made available, if any. */
static bool			  floor_pending = false;
static bool			  floor_committing = false;
static SchedqClaimKey floor_pending_key;

static SchedqQuery q_probe =
	SCHEDQ_QUERY("SELECT -(t.priority::bigint), t.run_at, t.id"
				 " FROM schedq.task t WHERE t.status = 'available'"
				 "   AND (-(t.priority::bigint), t.run_at, t.id)"
				 "       >= ($1, $2, $3)"
				 " ORDER BY -(t.priority::bigint), t.run_at, t.id"
				 " LIMIT 1",
				 INT8OID, TIMESTAMPTZOID, INT8OID);

static Size
floor_shmem_size(void)
{
	return sizeof(SchedqClaimFloor) * SCHEDQ_MAX_DATABASES;
}

static void
floor_shmem_init(void *part)
{
	SchedqClaimFloor *f = part;

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
		SpinLockInit(&f[i].mutex);
}

/*
 * Add the floors to shared memory; from _PG_init while preloading.
 */
void
schedq_floor_init(void)
{
	schedq_shm_add("schedq claim floors", floor_shmem_size, (void **) &floors,
				   floor_shmem_init);
}

static int
floor_key_cmp(const SchedqClaimKey *a, const SchedqClaimKey *b)
{
	if (a->prio != b->prio)
		return a->prio < b->prio ? -1 : 1;
	if (a->run_at != b->run_at)
		return a->run_at < b->run_at ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return 0;
}

/*
 * This database's floor, taking a free slot the first time.  Slots are
 * never given back, so a slot never changes database under a backend;
 * NULL (no floor: claims start at the head) when all are taken.
 */
static SchedqClaimFloor *
floor_slot(void)
{
	SchedqClaimFloor *free_slot = NULL;

	if (floors == NULL)
		return NULL;
	if (floor_slot_cache != NULL)
		return floor_slot_cache;

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
	{
		SchedqClaimFloor *f = &floors[i];

		if (f->dboid == MyDatabaseId)
		{
			floor_slot_cache = f;
			break;
		}
		if (f->dboid == InvalidOid && free_slot == NULL)
			free_slot = f;
	}
	if (floor_slot_cache == NULL && free_slot != NULL)
	{
		/* valid = false: claims start at the head until the first probe */
		free_slot->dboid = MyDatabaseId;
		floor_slot_cache = free_slot;
	}
	LWLockRelease(schedq_shm->lock);
	return floor_slot_cache;
}

/*
 * Where this database's claims may start: the floor, or the head when
 * there is no floor yet.
 */
void
schedq_floor_get(SchedqClaimKey *key)
{
	SchedqClaimFloor *f =
		schedq_claim_floor_interval_ms < 0 ? NULL : floor_slot();

	*key = floor_min;
	if (f == NULL)
		return;
	SpinLockAcquire(&f->mutex);
	if (f->valid)
		*key = f->key;
	SpinLockRelease(&f->mutex);
}

/* Lower the floor to key; caller holds the mutex. */
static void
floor_lower(SchedqClaimFloor *f, const SchedqClaimKey *key)
{
	if (f->valid && floor_key_cmp(key, &f->key) < 0)
		f->key = *key;
}

static void
floor_pre_commit(void)
{
	SchedqClaimFloor *f = floor_slot();

	if (!floor_pending || f == NULL)
		return;
	SpinLockAcquire(&f->mutex);
	floor_lower(f, &floor_pending_key);
	f->committing++;
	f->generation++;
	SpinLockRelease(&f->mutex);
	floor_committing = true;
}

/*
 * The tasks show up at COMMIT PREPARED, in another backend; the next full
 * probe finds them.
 */
static void
floor_pre_prepare(void)
{
	SchedqClaimFloor *f = floor_slot();

	if (!floor_pending || f == NULL)
		return;
	SpinLockAcquire(&f->mutex);
	f->valid = false;
	f->generation++;
	SpinLockRelease(&f->mutex);
}

static void
floor_commit(void)
{
	SchedqClaimFloor *f = floor_slot();

	if (!floor_committing || f == NULL)
		return;
	SpinLockAcquire(&f->mutex);
	floor_lower(f, &floor_pending_key);
	f->generation++;
	SpinLockRelease(&f->mutex);
}

static void
floor_reset(void)
{
	SchedqClaimFloor *f = floor_slot();

	if (floor_committing && f != NULL)
	{
		SpinLockAcquire(&f->mutex);
		f->committing--;
		f->generation++;
		SpinLockRelease(&f->mutex);
	}
	floor_pending = false;
	floor_committing = false;
}

static SchedqCommitEffect floor_effect = { .pre_commit = floor_pre_commit,
										   .pre_prepare = floor_pre_prepare,
										   .commit = floor_commit,
										   .reset = floor_reset };

/*
 * This transaction makes a task available: lower the floor to its key
 * around the commit.
 */
void
schedq_floor_lower_at_commit(int32 priority, TimestampTz run_at, int64 id)
{
	SchedqClaimKey key = { -(int64) priority, run_at, id };

	schedq_commit_join(&floor_effect);
	if (!floor_pending || floor_key_cmp(&key, &floor_pending_key) < 0)
		floor_pending_key = key;
	floor_pending = true;
}

/*
 * Move the floor up to the first available task, if a probe is due and
 * this transaction can make one (see the file header).  Runs inside the
 * caller's SchedqCall bracket.
 */
void
schedq_floor_probe_if_due(void)
{
	SchedqClaimFloor *f;
	TimestampTz		  now;
	uint64			  generation;
	SchedqClaimKey	  from;
	SchedqClaimKey	  found = floor_max;
	Datum			  values[3];

	if (schedq_claim_floor_interval_ms < 0 ||
		XactIsoLevel != XACT_READ_COMMITTED ||
		TransactionIdIsValid(GetTopTransactionIdIfAny()) ||
		(f = floor_slot()) == NULL)
		return;

	now = GetCurrentTimestamp();
	SpinLockAcquire(&f->mutex);
	if (f->committing > 0 ||
		now < f->probed_at + schedq_claim_floor_interval_ms * (int64) 1000)
	{
		SpinLockRelease(&f->mutex);
		return;
	}
	generation = f->generation;
	from = floor_min;
	if (f->valid && now < f->full_probe_at + FLOOR_FULL_PROBE_USECS)
		from = f->key;
	else
		f->full_probe_at = now;
	f->probed_at = now;
	SpinLockRelease(&f->mutex);

	values[0] = Int64GetDatum(from.prio);
	values[1] = TimestampTzGetDatum(from.run_at);
	values[2] = Int64GetDatum(from.id);
	if (schedq_plan_run(&q_probe, values, NULL, 1, SPI_OK_SELECT) == 1)
	{
		HeapTuple tuple = SPI_tuptable->vals[0];
		TupleDesc desc = SPI_tuptable->tupdesc;
		bool	  isnull;

		found.prio = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		found.run_at =
			DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull));
		found.id = DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
	}

	SpinLockAcquire(&f->mutex);
	if (f->generation == generation)
	{
		f->key = found;
		f->valid = true;
	}
	SpinLockRelease(&f->mutex);
}

/*-------------------------------------------------------------------------
 * wake.c
 *	  Wake the right process after a commit, never before.
 *
 * A process woken before the commit would not see the new rows yet, so
 * everything here is recorded during the transaction and done by an
 * XACT_EVENT_COMMIT callback (which runs after the commit is visible) or
 * forgotten on abort:
 *
 *	- a submit of a pending task, a retry that goes back to pending, a gate
 *	  event: set the latch of this database's scheduler, so that it
 *	  promotes at once instead of at its next fallback poll;
 *	- a task made available (submit fast path, retry, promotion, resumed
 *	  queue): wake claims waiting in claim(wait => ...).
 *
 * A waiting claim registers itself in its slot of the waiters (one per
 * backend, in shared memory, under the schedq LWLock) with its
 * database, the hashes of its queue filter and Bloom bits of its
 * capabilities, then sleeps on its latch.  For each task made available, a
 * committing process wakes at most one waiter that could take it, so a
 * hundred waiting workers are not all woken for one task.  A woken waiter
 * claims; if another worker was quicker it registers and sleeps again.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"

#include "shmem.h"
#include "wake.h"
#include "xact.h"

/* Most queue names a waiting claim filters on precisely; more match all. */
#define WAKE_WAITER_QUEUES 4

/* A claim sleeping until a task it could take becomes available. */
typedef struct SchedqWaiter
{
	Oid	   dboid; /* InvalidOid: not waiting */
	Latch *latch;
	bool   woken;					   /* a waker picked it; it is claiming */
	int	   nqueues;					   /* -1: every queue */
	uint32 queues[WAKE_WAITER_QUEUES]; /* hashes of queue names */
	uint64 caps;  /* Bloom bits of the worker's capabilities */
	uint64 needs; /* Bloom bits a task must require (executors: sql) */
} SchedqWaiter;

/* In shared memory; waiters[] under the schedq LWLock, by MyBackendId - 1. */
typedef struct SchedqWaiters
{
	pg_atomic_uint32 nwaiters;
	int				 max_waiters;
	SchedqWaiter	 waiters[FLEXIBLE_ARRAY_MEMBER];
} SchedqWaiters;

static SchedqWaiters *wake_shared = NULL;

/* Tasks made available in this transaction, remembered by this many. */
#define WAKE_MAX_TASKS 64

typedef struct WakeTask
{
	uint32 queue;
	uint64 caps;
} WakeTask;

static bool		wake_scheduler = false;
static bool		wake_everyone = false;
static int		wake_ntasks = 0;
static WakeTask wake_tasks[WAKE_MAX_TASKS];
static bool		waiter_registered = false;

static Size
wake_shmem_size(void)
{
	return add_size(offsetof(SchedqWaiters, waiters),
					mul_size(MaxBackends, sizeof(SchedqWaiter)));
}

static void
wake_shmem_init(void *part)
{
	SchedqWaiters *w = part;

	pg_atomic_init_u32(&w->nwaiters, 0);
	w->max_waiters = MaxBackends;
}

/*
 * Add the waiters to shared memory; from _PG_init while preloading.
 */
void
schedq_wake_init(void)
{
	schedq_shmem_add("schedq waiters", wake_shmem_size, (void **) &wake_shared,
					 wake_shmem_init);
}

static uint32
wake_hash_name(const char *name, int len)
{
	return DatumGetUInt32(hash_any((const unsigned char *) name, len));
}

/*
 * Bloom bits of a set of capabilities: one bit of 64 for each.
 */
static uint64
wake_caps_bits(ArrayType *caps)
{
	Datum *elems;
	int	   n;
	uint64 bits = 0;

	deconstruct_array(caps, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
	for (int i = 0; i < n; i++)
	{
		text *t = DatumGetTextPP(elems[i]);

		bits |= UINT64CONST(1)
				<< (wake_hash_name(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) % 64);
	}
	return bits;
}

/*
 * Wake at most one waiting claim of this database that could take each
 * recorded task (or every waiter, if told to).
 */
static void
wake_claimers(void)
{
	if (pg_atomic_read_u32(&wake_shared->nwaiters) == 0)
		return;

	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	for (int t = 0; t < (wake_everyone ? 1 : wake_ntasks); t++)
	{
		for (int i = 0; i < wake_shared->max_waiters; i++)
		{
			SchedqWaiter *w = &wake_shared->waiters[i];
			bool		  match;

			if (w->dboid != MyDatabaseId || w->woken)
				continue;
			match = wake_everyone;
			if (!match && (wake_tasks[t].caps & ~w->caps) == 0 &&
				(w->needs & ~wake_tasks[t].caps) == 0)
			{
				match = w->nqueues < 0;
				for (int q = 0; q < w->nqueues && !match; q++)
					match = w->queues[q] == wake_tasks[t].queue;
			}
			if (!match)
				continue;
			w->woken = true;
			SetLatch(w->latch);
			if (!wake_everyone)
				break;
		}
	}
	LWLockRelease(schedq_shared->lock);
}

/*
 * Set the latch of a database's scheduler, if it has one.
 */
void
schedq_wake_scheduler_now(Oid dboid)
{
	SchedqDatabase *db;

	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	db = schedq_database_slot(dboid, false);
	if (db != NULL && db->latch != NULL)
		SetLatch(db->latch);
	LWLockRelease(schedq_shared->lock);
}

static void
wake_commit(void)
{
	if (wake_scheduler)
		schedq_wake_scheduler_now(MyDatabaseId);
	if (wake_everyone || wake_ntasks > 0)
		wake_claimers();
}

/* A prepared transaction's tasks wait for the fallback poll. */
static void
wake_reset(void)
{
	wake_scheduler = false;
	wake_everyone = false;
	wake_ntasks = 0;
}

static SchedqXactEffect wake_effect = { .commit = wake_commit,
										.reset = wake_reset };

/*
 * After commit, wake this database's scheduler.
 */
void
schedq_wake_scheduler_at_commit(void)
{
	schedq_xact_join(&wake_effect);
	wake_scheduler = true;
}

/*
 * A task of this queue with these required capabilities is made
 * available: after commit, wake one waiting claim that could take it.
 */
void
schedq_wake_claimers_at_commit(const char *queue, ArrayType *required_caps)
{
	schedq_xact_join(&wake_effect);
	if (wake_ntasks >= WAKE_MAX_TASKS)
	{
		wake_everyone = true;
		return;
	}
	wake_tasks[wake_ntasks].queue = wake_hash_name(queue, strlen(queue));
	wake_tasks[wake_ntasks].caps = wake_caps_bits(required_caps);
	wake_ntasks++;
}

/*
 * After commit, wake every waiting claim of this database: something that
 * is not one task changed (a queue resumed, a budget grew).
 */
void
schedq_wake_all_claimers_at_commit(void)
{
	schedq_xact_join(&wake_effect);
	wake_everyone = true;
}

static void
wake_waiter_exit(int code, Datum arg)
{
	schedq_waiter_unregister();
}

/*
 * Register this backend as a claim waiting for tasks of these queues
 * (NULL: every queue) that need no capability outside caps -- and, with
 * only_needing_caps (the SQL executors), only for tasks that require all
 * of them.  Registering again just clears the woken flag.
 */
void
schedq_waiter_register(ArrayType *queues, ArrayType *caps,
					   bool only_needing_caps)
{
	SchedqWaiter *w = &wake_shared->waiters[MyBackendId - 1];
	static bool	  exit_callback = false;

	if (!exit_callback)
	{
		before_shmem_exit(wake_waiter_exit, (Datum) 0);
		exit_callback = true;
	}

	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	if (!waiter_registered)
	{
		Datum *elems;
		int	   n = -1;

		if (queues != NULL)
			deconstruct_array(queues, TEXTOID, -1, false, TYPALIGN_INT, &elems,
							  NULL, &n);
		w->nqueues = (n > WAKE_WAITER_QUEUES) ? -1 : n;
		for (int i = 0; i < w->nqueues; i++)
		{
			text *t = DatumGetTextPP(elems[i]);

			w->queues[i] = wake_hash_name(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		}
		w->caps = wake_caps_bits(caps);
		w->needs = only_needing_caps ? w->caps : 0;
		w->latch = MyLatch;
		w->dboid = MyDatabaseId;
		pg_atomic_fetch_add_u32(&wake_shared->nwaiters, 1);
		waiter_registered = true;
	}
	w->woken = false;
	LWLockRelease(schedq_shared->lock);
}

/*
 * Stop waiting.  Safe to call when not registered.
 */
void
schedq_waiter_unregister(void)
{
	SchedqWaiter *w;

	if (!waiter_registered)
		return;
	w = &wake_shared->waiters[MyBackendId - 1];
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	w->dboid = InvalidOid;
	w->latch = NULL;
	pg_atomic_fetch_sub_u32(&wake_shared->nwaiters, 1);
	waiter_registered = false;
	LWLockRelease(schedq_shared->lock);
}

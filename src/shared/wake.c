/*-------------------------------------------------------------------------
 * shared/wake.c
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
 *	  queue): wake claims waiting in claim(wait => ...) or
 *	  schedq.await_task; a SQL task no waiting executor could take also
 *	  sets the scheduler's latch, which starts an executor for it
 *	  (executors are started on demand, process/sqlexec.c).
 *
 * A waiting claim registers itself in its slot of the waiters (one per
 * backend, in shared memory, under the schedq LWLock) with its
 * database, the hashes of its queue filter and Bloom bits of its
 * capabilities, then sleeps on its latch.  For each task made available, a
 * committing process wakes at most one waiter that could take it, so a
 * hundred waiting workers are not all woken for one task.  A woken waiter
 * looks again; if another worker was quicker it registers and sleeps
 * again.
 *
 * "Could take it" is a guess: hashes and Bloom bits can collide, a claim
 * filtering on many queues matches every queue, and the waiters' table
 * knows nothing of roles.  So the wake-up names its task, and a woken
 * waiter whose look finds nothing for itself passes it on
 * (schedq_wake_pass_on) while the task is still there for someone: to
 * the next waiter that could take it, in slot order after its own.  A
 * wake-up thus goes from slot to slot, each waiter tried at most once,
 * and ends at a waiter that takes the task, at one that finds the task
 * gone, or after the last slot: never in a loop.  A waiter that registers
 * after the commit needs no wake-up: it looks after registering, and sees
 * the task.  Likewise a waiter already woken (for another task) is passed
 * over: it has yet to look, and will see this task too.  Whether the task
 * is still there is for the waiter to ask (api/await.c); the SQL executors
 * never pass a wake-up on.
 *
 * A waiter gives up with an error (25006) when the server turns read-only
 * (docs/operations.md#read-only-servers-and-failover): it could claim
 * nothing there, and after a failover its workers belong on the new
 * primary.  It learns of it itself -- a reload (SIGHUP) sets its latch,
 * and it reads the configuration files then rather than after its
 * statement, so it sees default_transaction_read_only turn on -- or from
 * its database's scheduler, which marks its slot read-only when writes
 * are refused for another reason and wakes every waiter of the database
 * (schedq_wake_all_claimers_now).  It checks before each sleep and after
 * it (schedq_wake_check_writable): a waiter that registered just after
 * that wake-up sees the mark before it sleeps.
 *
 * Every field of a waiter is under the schedq LWLock; its own backend
 * writes the filter (nqueues, queues, caps, needs), wakers write woken,
 * for_task and wake.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "shared/metrics.h"
#include "shared/databases.h"
#include "shared/shm.h"
#include "shared/wake.h"
#include "shared/commit.h"

/* Most queue names a waiting claim filters on precisely; more match all. */
#define WAKE_WAITER_QUEUES 4

/* A claim sleeping until a task it could take becomes available. */
typedef struct SchedqWaiter
{
	Oid			   dboid; /* InvalidOid: not waiting */
	Latch		  *latch;
	bool		   woken;	 /* a waker picked it; it will look */
	bool		   for_task; /* woken for the task in wake, not for anything */
	SchedqWakeTask wake;
	int			   nqueues;					   /* -1: every queue */
	uint32		   queues[WAKE_WAITER_QUEUES]; /* hashes of queue names */
	uint64		   caps;  /* Bloom bits of the worker's capabilities */
	uint64		   needs; /* Bloom bits a task must require (executors: sql) */
} SchedqWaiter;

/* In shared memory; waiters[] under the schedq LWLock, by SCHEDQ_MY_PROC_INDEX. */
typedef struct SchedqWaiters
{
	pg_atomic_uint32 nwaiters;
	int				 max_waiters;
	SchedqWaiter	 waiters[FLEXIBLE_ARRAY_MEMBER];
} SchedqWaiters;

static SchedqWaiters *wake_shared = NULL;

/* Tasks made available in this transaction, remembered by this many. */
#define WAKE_MAX_TASKS 64

static bool			  wake_scheduler = false;
static bool			  wake_everyone = false;
static int			  wake_ntasks = 0;
static SchedqWakeTask wake_tasks[WAKE_MAX_TASKS];
static bool			  waiter_registered = false;

/*
 * The wake-up this backend took at its last registration: what its look
 * since then was for.
 */
static bool			  waiter_woken = false;
static SchedqWakeTask waiter_wake;

/*
 * Of this backend's wait (since its first registration): whether
 * default_transaction_read_only was on when it began, and whether it has
 * slept yet.
 */
static bool waiter_began_read_only = false;
static bool waiter_slept = false;

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
	schedq_shm_add("schedq waiters", wake_shmem_size, (void **) &wake_shared,
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
 * Could this waiter take that task, as far as the waiters' table knows?
 */
static bool
wake_matches(const SchedqWaiter *w, const SchedqWakeTask *t)
{
	if ((t->caps & ~w->caps) != 0 || (w->needs & ~t->caps) != 0)
		return false;
	if (w->nqueues < 0)
		return true;
	for (int q = 0; q < w->nqueues; q++)
		if (w->queues[q] == t->queue)
			return true;
	return false;
}

/*
 * Wake the first waiter of this database in slots from..max_waiters-1
 * that is not woken yet and could take the task.  Returns whether there
 * was one.  Caller holds the schedq LWLock exclusively.
 */
static bool
wake_one(const SchedqWakeTask *t, int from)
{
	for (int i = from; i < wake_shared->max_waiters; i++)
	{
		SchedqWaiter *w = &wake_shared->waiters[i];

		if (w->dboid != MyDatabaseId || w->woken || !wake_matches(w, t))
			continue;
		w->woken = true;
		w->for_task = true;
		w->wake = *t;
		SetLatch(w->latch);
		return true;
	}
	return false;
}

/*
 * The Bloom bit of the capability 'sql', which SQL tasks require.
 */
static uint64
wake_sql_bit(void)
{
	return UINT64CONST(1) << (wake_hash_name("sql", 3) % 64);
}

/*
 * Wake every waiter of this database not woken already.  Caller holds the
 * schedq LWLock exclusively.
 */
static void
wake_everyone_locked(void)
{
	for (int i = 0; i < wake_shared->max_waiters; i++)
	{
		SchedqWaiter *w = &wake_shared->waiters[i];

		if (w->dboid != MyDatabaseId || w->woken)
			continue;
		w->woken = true;
		w->for_task = false; /* nothing to pass on */
		SetLatch(w->latch);
	}
}

/*
 * Wake every waiting claim of this database now, not at a commit: for
 * the scheduler, when it has marked the database read-only.
 */
void
schedq_wake_all_claimers_now(void)
{
	if (wake_shared == NULL || pg_atomic_read_u32(&wake_shared->nwaiters) == 0)
		return;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	wake_everyone_locked();
	LWLockRelease(schedq_shm->lock);
}

/*
 * Wake at most one waiting claim of this database that could take each
 * recorded task (or every waiter, if told to).  Returns whether a task
 * that may be a SQL task found no waiter: then the scheduler should see
 * whether an executor must be started (SQL executors start on demand).
 */
static bool
wake_claimers(void)
{
	bool sql_unclaimed = false;

	if (pg_atomic_read_u32(&wake_shared->nwaiters) == 0)
	{
		if (wake_everyone)
			return true;
		for (int t = 0; t < wake_ntasks; t++)
			if ((wake_tasks[t].caps & wake_sql_bit()) != 0)
				return true;
		return false;
	}

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	if (wake_everyone)
	{
		sql_unclaimed = true;
		wake_everyone_locked();
	}
	else
	{
		for (int t = 0; t < wake_ntasks; t++)
			if (!wake_one(&wake_tasks[t], 0) &&
				(wake_tasks[t].caps & wake_sql_bit()) != 0)
				sql_unclaimed = true;
	}
	LWLockRelease(schedq_shm->lock);
	return sql_unclaimed;
}

/*
 * Set the latch of a database's scheduler, if it has one.
 */
void
schedq_wake_scheduler_now(Oid dboid)
{
	SchedqDatabase *db;

	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	db = schedq_databases_slot(dboid, false);
	if (db != NULL && db->latch != NULL)
		SetLatch(db->latch);
	LWLockRelease(schedq_shm->lock);
}

static void
wake_commit(void)
{
	bool scheduler = wake_scheduler;

	if ((wake_everyone || wake_ntasks > 0) && wake_claimers())
		scheduler = true;
	if (scheduler)
		schedq_wake_scheduler_now(MyDatabaseId);
}

/* A prepared transaction's tasks wait for the fallback poll. */
static void
wake_reset(void)
{
	wake_scheduler = false;
	wake_everyone = false;
	wake_ntasks = 0;
}

static SchedqCommitEffect wake_effect = { .commit = wake_commit,
										  .reset = wake_reset };

/*
 * After commit, wake this database's scheduler.
 */
void
schedq_wake_scheduler_at_commit(void)
{
	schedq_commit_join(&wake_effect);
	wake_scheduler = true;
}

/*
 * A task of this queue, with these required capabilities and this place
 * in claim order (the id, or all three, may be lower bounds), is made
 * available: after commit, wake one waiting claim that could take it.
 */
void
schedq_wake_claimers_at_commit(const char *queue, ArrayType *required_caps,
							   int32 priority, TimestampTz run_at, int64 id)
{
	SchedqWakeTask *t;

	schedq_commit_join(&wake_effect);
	if (wake_ntasks >= WAKE_MAX_TASKS)
	{
		wake_everyone = true;
		return;
	}
	t = &wake_tasks[wake_ntasks++];
	t->queue = wake_hash_name(queue, strlen(queue));
	t->caps = wake_caps_bits(required_caps);
	t->priority = priority;
	t->run_at = run_at;
	t->id = id;
}

/*
 * After commit, wake every waiting claim of this database: something that
 * is not one task changed (a queue resumed, a budget grew).
 */
void
schedq_wake_all_claimers_at_commit(void)
{
	schedq_commit_join(&wake_effect);
	wake_everyone = true;
}

static void
wake_waiter_exit(int code, Datum arg)
{
	schedq_wake_unregister();
}

/*
 * Register this backend as a claim waiting for tasks of these queues
 * (NULL: every queue) that need no capability outside caps -- and, with
 * only_needing_caps (the SQL executors), only for tasks that require all
 * of them.  Registering again takes the wake-up that came since the last
 * registration (see schedq_wake_woken_for) and makes the waiter ready
 * for the next.  Call it before each look.
 */
void
schedq_wake_register(ArrayType *queues, ArrayType *caps, bool only_needing_caps)
{
	SchedqWaiter *w = &wake_shared->waiters[SCHEDQ_MY_PROC_INDEX];
	static bool	  exit_callback = false;

	Assert(SCHEDQ_MY_PROC_INDEX >= 0 &&
		   SCHEDQ_MY_PROC_INDEX < wake_shared->max_waiters);

	if (!exit_callback)
	{
		before_shmem_exit(wake_waiter_exit, (Datum) 0);
		exit_callback = true;
	}

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
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
		w->woken = false;
		w->dboid = MyDatabaseId;
		pg_atomic_fetch_add_u32(&wake_shared->nwaiters, 1);
		waiter_registered = true;
		waiter_began_read_only = DefaultXactReadOnly;
		waiter_slept = false;
	}
	waiter_woken = w->woken && w->for_task;
	if (waiter_woken)
		waiter_wake = w->wake;
	w->woken = false;
	LWLockRelease(schedq_shm->lock);
}

/*
 * The task whose wake-up this waiter took at its last registration (the
 * one its look since then was for), or NULL.
 */
const SchedqWakeTask *
schedq_wake_woken_for(void)
{
	return waiter_woken ? &waiter_wake : NULL;
}

/*
 * This waiter's look found nothing it could take, and the task it was
 * woken for is still there for someone: pass the wake-up on to the next
 * waiter, after this one in slot order, that could take it.
 */
void
schedq_wake_pass_on(void)
{
	if (!waiter_registered || !waiter_woken)
		return;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	(void) wake_one(&waiter_wake, SCHEDQ_MY_PROC_INDEX + 1);
	LWLockRelease(schedq_shm->lock);
	waiter_woken = false;
}

/*
 * Stop waiting.  Safe to call when not registered.  A wake-up that came
 * after the last registration was never looked for: it goes on to the
 * next waiter, which looks and passes it on in turn if it must.
 */
void
schedq_wake_unregister(void)
{
	SchedqWaiter *w;

	if (!waiter_registered)
		return;
	w = &wake_shared->waiters[SCHEDQ_MY_PROC_INDEX];
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	w->dboid = InvalidOid;
	w->latch = NULL;
	if (w->woken && w->for_task)
		(void) wake_one(&w->wake, SCHEDQ_MY_PROC_INDEX + 1);
	w->woken = false;
	pg_atomic_fetch_sub_u32(&wake_shared->nwaiters, 1);
	waiter_registered = false;
	waiter_woken = false;
	LWLockRelease(schedq_shm->lock);
}

/*
 * Raise 25006 when this waiter (registered, or about to) can claim
 * nothing because the server is read-only: its transaction is (a hot
 * standby, READ ONLY, or default_transaction_read_only on when it began),
 * default_transaction_read_only has turned on since its wait began (a
 * reload pending is read first: the backend would otherwise read it only
 * after its statement), or its database's scheduler has marked the
 * database read-only (writes refused).  See the file header.
 */
void
schedq_wake_check_writable(void)
{
	SchedqDatabase *db;
	bool			refused;
	bool			turned;
	char		   *datname;

	schedq_shm_require_preloaded();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	db = schedq_databases_slot(MyDatabaseId, false);
	refused = db != NULL && db->read_only;
	LWLockRelease(schedq_shm->lock);
	/* before the first registration, a wait that has not begun */
	turned =
		waiter_registered && DefaultXactReadOnly && !waiter_began_read_only;

	if (!turned && !refused && !XactReadOnly)
		return;
	datname = get_database_name(MyDatabaseId);
	if (turned || refused)
		ereport(
			ERROR, errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			waiter_registered && waiter_slept ?
				errmsg("the server became read-only while waiting for a task") :
				errmsg("cannot wait for a task: the server is read-only"),
			DefaultXactReadOnly ?
				errdetail("default_transaction_read_only is on: no task can "
						  "be claimed here until it is off again.") :
				errdetail("Writes are refused: the scheduler of database "
						  "\"%s\" stands aside until they are accepted.",
						  datname ? datname : "?"),
			errhint(
				"Reconnect and wait again: after a failover, to the new primary (target_session_attrs=read-write)."));
	if (XactReadOnly)
		ereport(ERROR, errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("cannot wait for a task in a read-only transaction"),
				errdetail("A task that came could not be claimed in it."),
				errhint("Wait in a read-write transaction, on the primary."));
}

/*
 * Sleep as a registered waiter until woken or until the deadline.
 * Returns false, without sleeping, once the deadline has passed.  Raises
 * 25006, before or after sleeping, when the server is read-only
 * (schedq_wake_check_writable).
 */
bool
schedq_wake_sleep(TimestampTz deadline, uint32 wait_event_info)
{
	long timeout_ms =
		TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
	int rc;

	if (timeout_ms <= 0)
		return false;
	schedq_wake_check_writable();
	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   timeout_ms, wait_event_info);
	if (rc & WL_LATCH_SET)
		schedq_metrics_count(METRIC_CLAIM_WAKEUPS, 1);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	waiter_slept = true;
	schedq_wake_check_writable();
	return true;
}

/*-------------------------------------------------------------------------
 * shared/sqlslots.c
 *	  The SQL executors' slots in shared memory: which attempt each
 *	  executor runs, and what other processes ask of them.
 *
 * An executor (process/sqlexec.c) takes a slot when it starts and
 * publishes in it the attempt it runs (under the schedq LWLock).  While
 * the SQL executor lives, the reaper extends that attempt's lease instead of
 * taking it back (schedq_sqlslots_runs), and once the attempt is past its
 * deadline it interrupts the statement (SIGINT, schedq_sqlslots_interrupt)
 * but takes the attempt back only when no executor runs it any more: a
 * task is never run twice at once.  cancel() of a running task interrupts
 * the statement too, after its commit (schedq_sqlslots_cancel_at_commit).
 * A command may catch that interrupt and go on: an executor that still
 * runs the attempt schedq.sql_cancel_grace after it was first interrupted
 * is terminated (SIGTERM, which no command can catch) at the reaper's
 * next pass (schedq_sqlslots_escalate).  DROP DATABASE and its kin stop a
 * database's executors (process/hooks.c).  A crash restarts the cluster,
 * clearing the slots.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/array.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "shared/commit.h"
#include "shared/shm.h"
#include "shared/sqlslots.h"

/* Most SQL executors in the whole cluster. */
#define EXECUTOR_SLOTS 128

/* A built-in SQL executor, and the task it is running. */
typedef struct SchedqExecutor
{
	Oid			dboid; /* InvalidOid: slot is free */
	pid_t		pid;
	int64		task_id; /* 0: not running a task */
	int32		attempt;
	TimestampTz interrupted_at; /* first SIGINT for this attempt, or 0 */
	bool		terminating;	/* sent SIGTERM for this attempt */
} SchedqExecutor;

/* In shared memory, EXECUTOR_SLOTS of them, under the schedq LWLock. */
static SchedqExecutor *executors = NULL;

/* This process's slot, when it is an executor. */
static SchedqExecutor *executor_slot = NULL;

/*
 * Tasks this transaction canceled while they ran, to interrupt after its
 * commit, each with the nesting level of the subtransaction that noted it
 * (a rolled back savepoint takes its notes with it).  In
 * TopTransactionContext; NULL while there are none.
 */
typedef struct CancelNote
{
	int64 task_id;
	int	  level;
} CancelNote;

static CancelNote *cancel_notes = NULL;
static int		   cancel_nnotes = 0;
static int		   cancel_maxnotes = 0;

static Size
slots_shmem_size(void)
{
	return sizeof(SchedqExecutor) * EXECUTOR_SLOTS;
}

/*
 * Add the executor slots to shared memory; from _PG_init while preloading.
 */
void
schedq_sqlslots_init(void)
{
	schedq_shm_add("schedq executors", slots_shmem_size, (void **) &executors,
				   NULL);
}

/*
 * Ask every executor of a database to exit (SIGTERM).  Returns whether
 * any was still there.
 */
bool
schedq_sqlslots_stop(Oid dboid)
{
	bool any = false;

	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
		if (executors[i].dboid == dboid && executors[i].pid != 0)
		{
			(void) kill(executors[i].pid, SIGTERM);
			any = true;
		}
	LWLockRelease(schedq_shm->lock);
	return any;
}

/*
 * The live executor of this database running this attempt, or NULL.  The
 * caller holds the schedq LWLock.
 */
static SchedqExecutor *
slots_running(int64 task_id, int32 attempt)
{
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
	{
		SchedqExecutor *e = &executors[i];

		if (e->dboid == MyDatabaseId && e->pid != 0 && e->task_id == task_id &&
			e->attempt == attempt && kill(e->pid, 0) == 0)
			return e;
	}
	return NULL;
}

/*
 * The tasks the executors of this database are running, as an int8[]:
 * _claim_sql skips them, so that a task retried while an executor still
 * runs it (a canceled command that ignores the cancel) waits for it.
 */
Datum
schedq_sqlslots_busy_tasks(void)
{
	Datum *ids = palloc(sizeof(Datum) * EXECUTOR_SLOTS);
	int	   n = 0;

	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
		if (executors[i].dboid == MyDatabaseId && executors[i].pid != 0 &&
			executors[i].task_id != 0)
			ids[n++] = Int64GetDatum(executors[i].task_id);
	LWLockRelease(schedq_shm->lock);
	return PointerGetDatum(
		construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * How many executors of a database are running a task now.
 */
int
schedq_sqlslots_busy(Oid dboid)
{
	int n = 0;

	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
		if (executors[i].dboid == dboid && executors[i].pid != 0 &&
			executors[i].task_id != 0)
			n++;
	LWLockRelease(schedq_shm->lock);
	return n;
}

/*
 * Is a live executor of this database running this attempt?
 */
bool
schedq_sqlslots_runs(int64 task_id, int32 attempt)
{
	bool held;

	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	held = slots_running(task_id, attempt) != NULL;
	LWLockRelease(schedq_shm->lock);
	return held;
}

/*
 * Interrupt the statement of an executor, and note when it was first
 * interrupted in this attempt: schedq_sqlslots_escalate counts the grace
 * period from then.  The caller holds the schedq LWLock exclusively.
 */
static void
slots_interrupt(SchedqExecutor *e, TimestampTz now)
{
	if (e->interrupted_at == 0)
		e->interrupted_at = now;
	(void) kill(e->pid, SIGINT);
}

/*
 * If a live executor of this database runs this attempt, interrupt its
 * statement (the attempt is past its deadline) and return true.
 */
bool
schedq_sqlslots_interrupt(int64 task_id, int32 attempt)
{
	SchedqExecutor *e;

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	e = slots_running(task_id, attempt);
	if (e != NULL)
		slots_interrupt(e, GetCurrentTimestamp());
	LWLockRelease(schedq_shm->lock);
	return e != NULL;
}

/*
 * Terminate (SIGTERM) every executor of this database still running the
 * attempt whose statement it was asked to stop schedq.sql_cancel_grace
 * ago.  A command can catch the cancel of its statement, not that: the
 * executor exits, its transaction rolls back, its scheduler starts
 * another, and the reaper takes the attempt back.  Called by the reaper.
 */
void
schedq_sqlslots_escalate(void)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz limit = now - (TimestampTz) schedq_sql_cancel_grace_ms * 1000;
	pid_t		pids[EXECUTOR_SLOTS];
	int64		tasks[EXECUTOR_SLOTS];
	int			n = 0;

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
	{
		SchedqExecutor *e = &executors[i];

		if (e->dboid != MyDatabaseId || e->pid == 0 || e->task_id == 0 ||
			e->interrupted_at == 0 || e->interrupted_at > limit)
			continue;
		(void) kill(e->pid, SIGTERM);
		if (!e->terminating)
		{
			e->terminating = true;
			pids[n] = e->pid;
			tasks[n++] = e->task_id;
		}
	}
	LWLockRelease(schedq_shm->lock);

	for (int i = 0; i < n; i++)
		ereport(LOG,
				errmsg("terminating SQL executor %d: task " INT64_FORMAT
					   " ignored the cancel of its statement for %d ms",
					   (int) pids[i], tasks[i], schedq_sql_cancel_grace_ms));
}

static int
cancel_note_cmp(const void *a, const void *b)
{
	int64 x = ((const CancelNote *) a)->task_id;
	int64 y = ((const CancelNote *) b)->task_id;

	return (x > y) - (x < y);
}

/*
 * Interrupt the statement of every executor of this database running one
 * of the noted tasks.
 */
static void
cancel_commit(void)
{
	TimestampTz now;

	if (cancel_nnotes == 0)
		return;
	now = GetCurrentTimestamp();
	qsort(cancel_notes, cancel_nnotes, sizeof(CancelNote), cancel_note_cmp);
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
	{
		SchedqExecutor *e = &executors[i];
		CancelNote		key = { .task_id = e->task_id };

		if (e->dboid == MyDatabaseId && e->pid != 0 && e->task_id != 0 &&
			bsearch(&key, cancel_notes, cancel_nnotes, sizeof(CancelNote),
					cancel_note_cmp) != NULL)
			slots_interrupt(e, now);
	}
	LWLockRelease(schedq_shm->lock);
}

/* A subtransaction committed: its notes are its parent's now. */
static void
cancel_sub_commit(int level)
{
	for (int i = 0; i < cancel_nnotes; i++)
		if (cancel_notes[i].level >= level)
			cancel_notes[i].level = level - 1;
}

/* A subtransaction aborted: its cancels never happened. */
static void
cancel_sub_abort(int level)
{
	int kept = 0;

	for (int i = 0; i < cancel_nnotes; i++)
		if (cancel_notes[i].level < level)
			cancel_notes[kept++] = cancel_notes[i];
	cancel_nnotes = kept;
}

static void
cancel_reset(void)
{
	/* the array goes with TopTransactionContext */
	cancel_notes = NULL;
	cancel_nnotes = 0;
	cancel_maxnotes = 0;
}

static SchedqCommitEffect cancel_effect = { .commit = cancel_commit,
											.sub_commit = cancel_sub_commit,
											.sub_abort = cancel_sub_abort,
											.reset = cancel_reset };

/*
 * After commit, interrupt the statement of the SQL executor running this task
 * (it was canceled, or timed out, while running), unless the
 * subtransaction that asks this rolls back.  Every task is remembered:
 * cancels of other tasks, of other roles, are never interrupted.
 */
void
schedq_sqlslots_cancel_at_commit(int64 task_id)
{
	schedq_commit_join(&cancel_effect);
	if (cancel_nnotes == cancel_maxnotes)
	{
		int newmax = Max(16, cancel_maxnotes * 2);

		if (cancel_notes == NULL)
			cancel_notes = MemoryContextAlloc(TopTransactionContext,
											  newmax * sizeof(CancelNote));
		else
			cancel_notes = repalloc(cancel_notes, newmax * sizeof(CancelNote));
		cancel_maxnotes = newmax;
	}
	cancel_notes[cancel_nnotes].task_id = task_id;
	cancel_notes[cancel_nnotes].level = GetCurrentTransactionNestLevel();
	cancel_nnotes++;
}

/*
 * Leave the slot.  An on_shmem_exit callback: it runs after the
 * before_shmem_exit ones have rolled back the transaction of a task (its
 * locks released, its writes gone); pg_stat_activity may list the exiting
 * process a moment longer.  Until then the attempt is still this
 * executor's, and the reaper must not give it to another.
 */
static void
slots_leave(int code, Datum arg)
{
	if (executor_slot == NULL)
		return;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	if (executor_slot->pid == MyProcPid)
		memset(executor_slot, 0, sizeof(*executor_slot));
	LWLockRelease(schedq_shm->lock);
}

/*
 * Take a free slot for this executor of database dboid, to be left when
 * the process exits.  An error when every slot is taken.
 */
void
schedq_sqlslots_take(Oid dboid)
{
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	for (int i = 0; i < EXECUTOR_SLOTS && executor_slot == NULL; i++)
		if (executors[i].pid == 0)
		{
			executor_slot = &executors[i];
			memset(executor_slot, 0, sizeof(*executor_slot));
			executor_slot->dboid = dboid;
			executor_slot->pid = MyProcPid;
		}
	LWLockRelease(schedq_shm->lock);
	if (executor_slot == NULL)
		ereport(ERROR, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("schedq supports at most %d SQL executors",
					   EXECUTOR_SLOTS));
	on_shmem_exit(slots_leave, (Datum) 0);
}

/*
 * Publish the attempt this executor runs (0, 0: none).
 */
void
schedq_sqlslots_publish(int64 task_id, int32 attempt)
{
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	executor_slot->task_id = task_id;
	executor_slot->attempt = attempt;
	executor_slot->interrupted_at = 0;
	executor_slot->terminating = false;
	LWLockRelease(schedq_shm->lock);
	/* a cancel aimed at the task before this one is moot now */
	if (task_id == 0)
		QueryCancelPending = false;
}

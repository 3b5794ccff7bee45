/*-------------------------------------------------------------------------
 * executor.c
 *	  The built-in SQL executors: a pool of schedq.sql_workers background
 *	  workers per database, started and kept at strength by that
 *	  database's scheduler (schedq_executors_keep), running the tasks of
 *	  submit_sql and schedule_sql.
 *
 * An executor claims through the same schedq.claim as any worker, with
 * the capability 'sql' that only it presents.  Each task runs in its own
 * transaction, as the task's owner with that role's privileges and no
 * more: the executor switches its user id to the owner for the statement,
 * in a security-restricted operation (as REFRESH MATERIALIZED VIEW runs
 * as the view's owner), so the command can neither SET ROLE nor SET
 * SESSION AUTHORIZATION back to the executor's superuser.  The task's
 * timeout arms the statement timeout timer, which the command cannot lift.  The command and complete() commit
 * together; on error the transaction rolls back and fail() records the
 * error, retrying per the task's policy.  An owner that was dropped or
 * lost LOGIN fails the task for good.
 *
 * The executor publishes the task it runs in its slot in shared memory
 * (under the schedq LWLock): cancel() of that task interrupts the
 * statement (SIGINT after its commit), and the reaper extends its lease
 * instead of taking it back while the executor lives.  DROP DATABASE and
 * its kin stop a database's executors (utility.c).  A crash restarts the cluster, clearing that slot, so the reaper
 * then takes the attempt back when the lease expires: a task is never run
 * twice at once.
 *
 * Commands run inside a transaction, like a function body: statements
 * that cannot (VACUUM, CREATE INDEX CONCURRENTLY, ...) fail with
 * PostgreSQL's own error.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "executor.h"
#include "settings.h"
#include "shmem.h"
#include "task.h"
#include "wake.h"
#include "worker.h"
#include "xact.h"

/* Most SQL executors in the whole cluster, and per database. */
#define EXECUTOR_SLOTS		   128
#define EXECUTORS_PER_DATABASE 64

/* A built-in SQL executor, and the task it is running. */
typedef struct SchedqExecutor
{
	Oid	  dboid; /* InvalidOid: slot is free */
	pid_t pid;
	int64 task_id; /* 0: not running a task */
	int32 attempt;
} SchedqExecutor;

/* In shared memory, EXECUTOR_SLOTS of them, under the schedq LWLock. */
static SchedqExecutor *executors = NULL;

/* This executor's slot. */
static SchedqExecutor *executor_slot = NULL;

/* In a scheduler: the executors it keeps running. */
static BackgroundWorkerHandle *pool_handles[EXECUTORS_PER_DATABASE];
static TimestampTz			   pool_stopped_at[EXECUTORS_PER_DATABASE];

/* Tasks this transaction canceled while they ran, to interrupt. */
#define CANCEL_MAX_TASKS 64
static int	 cancel_ntasks = 0;
static int64 cancel_tasks[CANCEL_MAX_TASKS];
static bool	 cancel_overflow = false;

static Size
executor_shmem_size(void)
{
	return sizeof(SchedqExecutor) * EXECUTOR_SLOTS;
}

/*
 * Add the executor slots to shared memory; from _PG_init while preloading.
 */
void
schedq_executor_init(void)
{
	schedq_shmem_add("schedq executors", executor_shmem_size,
					 (void **) &executors, NULL);
}

/*
 * Keep schedq.sql_workers executors running for this scheduler's
 * database: start missing ones (one second after one stopped), stop extra
 * ones after a reload lowered it.  Called by the scheduler.  Returns how
 * many are started (or starting); *wanted is how many there should be,
 * and *no_slot is set when one could not be started because no background
 * worker slot was free (max_worker_processes), for the scheduler to say.
 */
int
schedq_executors_keep(int *wanted, bool *no_slot)
{
	TimestampTz now = GetCurrentTimestamp();
	int			want = Min(schedq_sql_workers, EXECUTORS_PER_DATABASE);
	int			started = 0;

	*wanted = want;
	*no_slot = false;

	for (int i = 0; i < EXECUTORS_PER_DATABASE; i++)
	{
		pid_t pid;

		if (pool_handles[i] != NULL &&
			GetBackgroundWorkerPid(pool_handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(pool_handles[i]);
			pool_handles[i] = NULL;
			pool_stopped_at[i] = now;
		}
		if (i >= want && pool_handles[i] != NULL)
			TerminateBackgroundWorker(pool_handles[i]);
		if (i < want && pool_handles[i] == NULL &&
			now >= pool_stopped_at[i] + USECS_PER_SEC)
		{
			BackgroundWorker worker;
			MemoryContext	 old = MemoryContextSwitchTo(TopMemoryContext);

			schedq_worker_fill(&worker, "schedq_executor_main",
							   "schedq sql executor", MyDatabaseId);
			snprintf(worker.bgw_name, BGW_MAXLEN,
					 "schedq sql executor %d for database %u", i + 1,
					 MyDatabaseId);
			/* an executor leaves when the scheduler that started it is gone */
			memcpy(worker.bgw_extra, &MyProcPid, sizeof(pid_t));
			if (!RegisterDynamicBackgroundWorker(&worker, &pool_handles[i]))
			{
				pool_handles[i] = NULL;
				pool_stopped_at[i] = now;
				*no_slot = true;
			}
			MemoryContextSwitchTo(old);
		}
		if (i < want && pool_handles[i] != NULL)
			started++;
	}
	return started;
}

/*
 * Ask every executor of a database to exit (SIGTERM).  Returns whether
 * any was still there.
 */
bool
schedq_executors_stop(Oid dboid)
{
	bool any = false;

	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
		if (executors[i].dboid == dboid && executors[i].pid != 0)
		{
			(void) kill(executors[i].pid, SIGTERM);
			any = true;
		}
	LWLockRelease(schedq_shared->lock);
	return any;
}

/*
 * Is a live executor of this database running this attempt?
 */
bool
schedq_executor_runs(int64 task_id, int32 attempt)
{
	bool held = false;

	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	for (int i = 0; i < EXECUTOR_SLOTS && !held; i++)
	{
		SchedqExecutor *e = &executors[i];

		held = e->dboid == MyDatabaseId && e->pid != 0 &&
			   e->task_id == task_id && e->attempt == attempt &&
			   kill(e->pid, 0) == 0;
	}
	LWLockRelease(schedq_shared->lock);
	return held;
}

/*
 * Interrupt the statement of every executor of this database running one
 * of the noted tasks (all of them, if more were noted than remembered).
 */
static void
cancel_commit(void)
{
	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	for (int i = 0; i < EXECUTOR_SLOTS; i++)
	{
		SchedqExecutor *e = &executors[i];
		bool			hit = cancel_overflow && e->task_id != 0;

		if (e->dboid != MyDatabaseId || e->pid == 0)
			continue;
		for (int t = 0; t < cancel_ntasks && !hit; t++)
			hit = e->task_id == cancel_tasks[t];
		if (hit)
			(void) kill(e->pid, SIGINT);
	}
	LWLockRelease(schedq_shared->lock);
}

static void
cancel_reset(void)
{
	cancel_ntasks = 0;
	cancel_overflow = false;
}

static SchedqXactEffect cancel_effect = { .commit = cancel_commit,
										  .reset = cancel_reset };

/*
 * After commit, interrupt the statement of the executor running this task
 * (it was canceled, or timed out, while running).
 */
void
schedq_executor_cancel_at_commit(int64 task_id)
{
	schedq_xact_join(&cancel_effect);
	if (cancel_ntasks < CANCEL_MAX_TASKS)
		cancel_tasks[cancel_ntasks++] = task_id;
	else
		cancel_overflow = true;
}

/* A claimed SQL task. */
typedef struct ExecutorTask
{
	int64 id;
	int32 attempt;
	char *token;
	char *command;
	Oid	  owner;
	int64 timeout_ms; /* 0: none */
} ExecutorTask;

static void
executor_exit(int code, Datum arg)
{
	if (executor_slot == NULL)
		return;
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	if (executor_slot->pid == MyProcPid)
		memset(executor_slot, 0, sizeof(*executor_slot));
	LWLockRelease(schedq_shared->lock);
}

static void
executor_publish(int64 task_id, int32 attempt)
{
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	executor_slot->task_id = task_id;
	executor_slot->attempt = attempt;
	LWLockRelease(schedq_shared->lock);
	/* a cancel aimed at the task before this one is moot now */
	if (task_id == 0)
		QueryCancelPending = false;
}

/*
 * Claim one SQL task.  Returns false when there is none.
 */
static bool
executor_claim(const char *worker, ExecutorTask *task)
{
	Datum arg = CStringGetTextDatum(worker);
	bool  found;

	schedq_tick_begin("schedq sql executor: claiming");
	if (!OidIsValid(get_extension_oid("schedq", true)))
		proc_exit(0);
	if (SPI_execute_with_args(
			"SELECT c.id, c.attempt, c.token, c.payload->>'command',"
			"  t.owner::oid, extract(epoch FROM t.timeout) * 1000"
			" FROM schedq._claim_sql($1) c"
			" JOIN schedq.task t ON t.id = c.id",
			1, (Oid[]){ TEXTOID }, &arg, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not claim");
	found = SPI_processed > 0;
	if (found)
	{
		HeapTuple	  tuple = SPI_tuptable->vals[0];
		TupleDesc	  desc = SPI_tuptable->tupdesc;
		bool		  isnull;
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		char		 *ms;

		task->id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		task->attempt = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
		task->token = pstrdup(SPI_getvalue(tuple, desc, 3));
		task->command = SPI_getvalue(tuple, desc, 4);
		task->command = pstrdup(task->command ? task->command : "");
		task->owner = DatumGetObjectId(SPI_getbinval(tuple, desc, 5, &isnull));
		ms = SPI_getvalue(tuple, desc, 6);
		task->timeout_ms = ms ? (int64) strtod(ms, NULL) : 0;
		MemoryContextSwitchTo(old);
	}
	schedq_tick_commit();
	return found;
}

/*
 * Record the end of an attempt: complete(token, result), or fail(token,
 * error, permanent).  Returns false when the attempt was no longer the
 * running one (complete or fail changed nothing).
 */
static bool
executor_report(ExecutorTask *task, const char *error, bool permanent,
				int64 rows)
{
	bool isnull;

	if (error == NULL)
	{
		Datum args[2] = { CStringGetTextDatum(task->token),
						  Int64GetDatum(rows) };

		if (SPI_execute_with_args(
				"SELECT schedq.complete($1, jsonb_build_object('rows', $2))", 2,
				(Oid[]){ TEXTOID, INT8OID }, args, NULL, false,
				0) != SPI_OK_SELECT)
			elog(ERROR, "could not complete");
		return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	}
	else
	{
		Datum args[3] = { CStringGetTextDatum(task->token),
						  CStringGetTextDatum(error), BoolGetDatum(permanent) };

		if (SPI_execute_with_args("SELECT schedq.fail($1, $2, permanent => $3)",
								  3, (Oid[]){ TEXTOID, TEXTOID, BOOLOID }, args,
								  NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not fail");
		return strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								   1),
					  "stale") != 0;
	}
}

/*
 * Why the owner cannot run its task, or NULL.
 */
static char *
executor_owner_problem(Oid owner)
{
	HeapTuple tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(owner));
	char	 *problem = NULL;

	if (!HeapTupleIsValid(tuple))
		return psprintf(
			"the role that submitted the task (OID %u) no longer exists",
			owner);
	if (!((Form_pg_authid) GETSTRUCT(tuple))->rolcanlogin)
		problem = psprintf(
			"role \"%s\" that submitted the task is not permitted to log in",
			NameStr(((Form_pg_authid) GETSTRUCT(tuple))->rolname));
	ReleaseSysCache(tuple);
	return problem;
}

/*
 * Run a claimed task as its owner, and record the outcome.
 *
 * The command's own settings (SET search_path, SET datestyle, ...) are
 * undone before the executor runs anything of its own, as REFRESH
 * MATERIALIZED VIEW undoes those of the view's owner: otherwise a command
 * could plant a search_path that the executor's next query, run as the
 * superuser, would resolve names through.  The command commits only
 * together with a complete() that accepted the attempt: when the task was
 * canceled or taken back meanwhile, the command's writes roll back.  The
 * task stays published (so the reaper keeps its lease) until that
 * transaction has ended.
 */
static void
executor_run(ExecutorTask *task)
{
	MemoryContext cxt = CurrentMemoryContext;
	char		 *error = NULL;
	int64		  rows = 0;
	char		 *problem;

	executor_publish(task->id, task->attempt);
	schedq_tick_begin(task->command);
	problem = executor_owner_problem(task->owner);
	if (problem != NULL)
	{
		/* a role problem will not go away by retrying */
		executor_report(task, problem, true, 0);
		schedq_tick_commit();
		executor_publish(0, 0);
		return;
	}

	PG_TRY();
	{
		Oid save_userid;
		int save_sec;
		int save_nestlevel;

		/*
		 * The task's timeout, as statement_timeout.  SPI does not arm that
		 * timer (the top-level query loop does), so arm it here; the
		 * command cannot lift it with SET.
		 */
		if (task->timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT,
								 (int) Min(task->timeout_ms, (int64) INT_MAX));
		GetUserIdAndSecContext(&save_userid, &save_sec);
		save_nestlevel = NewGUCNestLevel();
		SetUserIdAndSecContext(task->owner, save_sec |
												SECURITY_LOCAL_USERID_CHANGE |
												SECURITY_RESTRICTED_OPERATION);
		if (SPI_execute(task->command, false, 0) < 0)
			elog(ERROR, "could not run the command");
		rows = (int64) SPI_processed;
		disable_timeout(STATEMENT_TIMEOUT, false);
		AtEOXact_GUC(false, save_nestlevel);
		SetUserIdAndSecContext(save_userid, save_sec);
		if (!executor_report(task, NULL, false, rows))
			ereport(
				ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				errmsg(
					"the attempt was canceled or taken back while its command ran"));
		schedq_tick_commit();
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		disable_timeout(STATEMENT_TIMEOUT, false);
		AbortCurrentTransaction();
		error = edata->message;
	}
	PG_END_TRY();

	if (error != NULL)
	{
		schedq_tick_begin("schedq sql executor: recording an error");
		(void) executor_report(task, error, false, 0);
		schedq_tick_commit();
	}
	executor_publish(0, 0);
}

/*
 * Main of an executor; main_arg is the database OID, bgw_extra holds the
 * scheduler's pid: an executor leaves when its scheduler is gone.
 */
void
schedq_executor_main(Datum main_arg)
{
	Oid		   dboid = DatumGetObjectId(main_arg);
	pid_t	   scheduler_pid;
	char	  *worker;
	ArrayType *caps;
	Datum	   sql = CStringGetTextDatum(TASK_SQL);

	memcpy(&scheduler_pid, MyBgworkerEntry->bgw_extra, sizeof(pid_t));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, StatementCancelHandler);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("schedq sql executor");
	schedq_worker_settings();

	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < EXECUTOR_SLOTS && executor_slot == NULL; i++)
		if (executors[i].pid == 0)
		{
			executor_slot = &executors[i];
			memset(executor_slot, 0, sizeof(*executor_slot));
			executor_slot->dboid = dboid;
			executor_slot->pid = MyProcPid;
		}
	LWLockRelease(schedq_shared->lock);
	if (executor_slot == NULL)
		ereport(ERROR, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("schedq supports at most %d SQL executors",
					   EXECUTOR_SLOTS));
	before_shmem_exit(executor_exit, (Datum) 0);

	worker = MemoryContextStrdup(TopMemoryContext,
								 psprintf("schedq sql executor %d", MyProcPid));
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		caps = construct_array(&sql, 1, TEXTOID, -1, false, TYPALIGN_INT);
		MemoryContextSwitchTo(old);
	}

	for (;;)
	{
		ExecutorTask	task;
		SchedqDatabase *db;
		bool			orphan;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		LWLockAcquire(schedq_shared->lock, LW_SHARED);
		db = schedq_database_slot(dboid, false);
		orphan = db == NULL || db->pid != scheduler_pid;
		LWLockRelease(schedq_shared->lock);
		if (orphan)
			proc_exit(0); /* the scheduler that started us is gone */

		/* register before looking, so that a task made available after the look wakes us */
		schedq_waiter_register(NULL, caps, true);
		if (schedq_enabled && executor_claim(worker, &task))
		{
			schedq_waiter_unregister();
			executor_run(&task);
			continue;
		}
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 schedq_promote_interval_ms,
						 SCHEDQ_WAIT_EVENT("SchedqExecutorIdle"));
		ResetLatch(MyLatch);
	}
}

/*-------------------------------------------------------------------------
 * process/sqlexec.c
 *	  The built-in SQL executors: up to schedq.sql_workers background
 *	  workers per database, started by that database's scheduler when SQL
 *	  tasks are ready to run (schedq_sqlexec_keep), running the tasks of
 *	  submit_sql and schedule_sql, and leaving after
 *	  schedq.sql_idle_timeout without one: a database without SQL tasks
 *	  costs no executor.
 *
 * An executor claims through the same schedq.claim as any worker, with
 * the capability 'sql' that only it presents.  Each task runs in its own
 * transaction, as the task's owner with that role's privileges and no
 * more: the executor switches its user id to the owner for the statement,
 * in a security-restricted operation (as REFRESH MATERIALIZED VIEW runs
 * as the view's owner), so the command can neither SET ROLE nor SET
 * SESSION AUTHORIZATION back to the executor's superuser.  The task's
 * timeout arms the statement timeout timer, which the command cannot
 * lift.  The command and complete() commit
 * together; on error the transaction rolls back and fail() records the
 * error, retrying per the task's policy -- or for good at once, for the
 * errors no retry can cure (executor_error_is_final).  An owner that was dropped or
 * lost LOGIN fails the task for good.
 *
 * The executor publishes the attempt it runs in its slot in shared memory
 * (shared/sqlslots.c says what the reaper and cancel do with it: a task
 * is never run twice at once).  A command may catch the interrupt of its
 * statement (query_canceled in a PL/pgSQL exception block) and go on: it
 * is then terminated, and its scheduler starts another executor.
 *
 * Each iteration of an executor allocates in a memory context reset at
 * the start of the next: claims, commands, grants and error reports are
 * not kept.
 *
 * While the server is read-only (process/scheduler.c) an executor claims
 * nothing: it leaves quietly, and its scheduler starts none until the
 * server is writable again.
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
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "base/check.h"
#include "pass/shards.h"
#include "base/compat.h"
#include "process/sqlexec.h"
#include "shared/call.h"
#include "shared/sqlslots.h"
#include "store/task_attempt.h"
#include "shared/plan.h"
#include "base/settings.h"
#include "shared/databases.h"
#include "shared/shm.h"
#include "store/task.h"
#include "shared/wake.h"
#include "process/background.h"
#include "shared/commit.h"

/* lock_timeout as configured, before schedq's own (process/background.c). */
static char *executor_lock_timeout = NULL;

/* Most SQL executors per database. */
#define EXECUTORS_PER_DATABASE 64

/* In a scheduler: the executors it started, and when each started or stopped. */
static BackgroundWorkerHandle *pool_handles[EXECUTORS_PER_DATABASE];
static TimestampTz			   pool_started_at[EXECUTORS_PER_DATABASE];
static TimestampTz			   pool_stopped_at[EXECUTORS_PER_DATABASE];

/*
 * Start the executors this scheduler's database needs now: one for each
 * SQL task ready to run (`ready`, counted by the scheduler) that no idle
 * executor will take, up to schedq.sql_workers in all; an idle one exits
 * by itself after schedq.sql_idle_timeout.  Extra ones after a reload
 * lowered schedq.sql_workers are stopped.  None is started while a
 * database waits for a slot for its scheduler: schedulers come first
 * (and executors leave after their task then, schedq_sqlexec_main).
 *
 * A slot whose executor stopped within a second of its start waits a
 * second before it is used again, so an executor that cannot start (a
 * crash at start) is not started again and again.
 *
 * Returns how many are started (or starting); *wanted is how many there
 * should be now (those running a task and the ready tasks, at most
 * schedq.sql_workers), and *no_slot is set when one could not be started
 * because no background worker slot was free (max_worker_processes), for
 * the scheduler to say.
 */
int
schedq_sqlexec_keep(int ready, int *wanted, bool *no_slot)
{
	TimestampTz now = GetCurrentTimestamp();
	int			max = Min(schedq_sql_workers, EXECUTORS_PER_DATABASE);
	int			busy = schedq_sqlslots_busy(MyDatabaseId);
	int			started = 0;
	int			to_start;
	bool		waiting;

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
		if (i >= max && pool_handles[i] != NULL)
			TerminateBackgroundWorker(pool_handles[i]);
		if (i < max && pool_handles[i] != NULL)
			started++;
	}
	*wanted = Min(max, busy + ready);

	/* the idle ones (started, not running a task) take ready tasks first */
	to_start = Min(max - started, ready - Max(started - busy, 0));
	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	waiting = schedq_databases_waiting(InvalidOid) > 0;
	LWLockRelease(schedq_shm->lock);
	if (waiting && to_start > 0)
	{
		*no_slot = true;
		to_start = 0;
	}

	for (int i = 0; i < max && to_start > 0; i++)
	{
		BackgroundWorker worker;
		MemoryContext	 old;

		if (pool_handles[i] != NULL ||
			(pool_stopped_at[i] < pool_started_at[i] + USECS_PER_SEC &&
			 now < pool_stopped_at[i] + USECS_PER_SEC))
			continue;
		old = MemoryContextSwitchTo(TopMemoryContext);
		schedq_background_fill(&worker, "schedq_sqlexec_main",
							   "schedq sql executor", MyDatabaseId);
		snprintf(worker.bgw_name, BGW_MAXLEN,
				 "schedq sql executor %d for database %u", i + 1, MyDatabaseId);
		/* an executor leaves when the scheduler that started it is gone */
		memcpy(worker.bgw_extra, &MyProcPid, sizeof(pid_t));
		if (!RegisterDynamicBackgroundWorker(&worker, &pool_handles[i]))
		{
			pool_handles[i] = NULL;
			*no_slot = true;
			MemoryContextSwitchTo(old);
			break;
		}
		MemoryContextSwitchTo(old);
		pool_started_at[i] = now;
		started++;
		to_start--;
	}
	return started;
}

/* A claimed SQL task. */
typedef struct ExecutorTask
{
	int64		id;
	int32		attempt;
	char	   *token;
	char	   *command;
	Oid			owner;
	TimestampTz deadline; /* when the attempt times out; 0: never */
} ExecutorTask;

/* One claim of an executor: its worker name, and the task it claims. */
typedef struct ExecutorClaim
{
	const char	 *worker;
	ExecutorTask *task;
	MemoryContext cxt; /* where the task is copied */
} ExecutorClaim;

/*
 * Claim one SQL task, here: from schedq.task, or from the shard the
 * executor entered (schedq_shards_until).  Returns false when there is
 * none.
 */
static bool
executor_claim_here(void *arg)
{
	ExecutorClaim *c = arg;
	ExecutorTask  *task = c->task;
	Datum		   worker = CStringGetTextDatum(c->worker);
	SchedqCall	   call;
	HeapTuple	   tuple;
	TupleDesc	   desc;
	bool		   isnull;
	MemoryContext  old;

	if (SPI_execute_with_args(
			"SELECT c.id, c.attempt, c.token, c.payload->>'command'"
			" FROM schedq._claim_sql($1) c",
			1, (Oid[]){ TEXTOID }, &worker, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not claim");
	if (SPI_processed == 0)
		return false;
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(c->cxt);
	task->id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
	task->attempt = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
	task->token = pstrdup(SPI_getvalue(tuple, desc, 3));
	task->command = SPI_getvalue(tuple, desc, 4);
	task->command = pstrdup(task->command ? task->command : "");
	MemoryContextSwitchTo(old);

	/* its owner, and the deadline the claim set (a statement after it) */
	schedq_call_begin(&call);
	if (!schedq_task_attempt_owner(task->id, &task->owner, &task->deadline))
		elog(ERROR, "could not read the task an executor claimed");
	schedq_call_end(&call);
	return true;
}

/*
 * Claim one SQL task, copied into the caller's memory context (the
 * iteration's).  On a distributed schedq, from a shard of schedq.task
 * placed on this node, with the single server's statements on it (as the
 * scheduler's passes, pass/shards.c): the tasks of each node run there,
 * as their owner on that node.  Returns false when there is none.
 */
static bool
executor_claim(const char *worker, ExecutorTask *task)
{
	ExecutorClaim c = { worker, task, CurrentMemoryContext };
	bool		  found;

	schedq_background_tick_begin("schedq sql executor: claiming");
	if (!OidIsValid(get_extension_oid("schedq", true)))
		proc_exit(0);
	found = schedq_task_distributed() ?
				schedq_shards_until(executor_claim_here, &c) :
				executor_claim_here(&c);
	schedq_background_tick_commit();
	MemoryContextSwitchTo(c.cxt);
	return found;
}

/*
 * The server is read-only (its scheduler says so, or default_transaction_
 * read_only is on, or a claim was refused): leave quietly.  The scheduler
 * starts no executor until the server is writable again.
 */
static void
executor_leave_read_only(void)
{
	ereport(DEBUG1,
			errmsg("schedq sql executor exiting: the server is read-only"));
	proc_exit(0);
}

/*
 * executor_claim, but a claim refused because the server is read-only
 * (25006) makes the executor leave quietly rather than die with an ERROR
 * in the log (to be started again into the same refusal).
 */
static bool
executor_claim_writable(const char *worker, ExecutorTask *task)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		  found = false;
	bool		  refused = false;

	PG_TRY();
	{
		found = executor_claim(worker, task);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_READ_ONLY_SQL_TRANSACTION)
			PG_RE_THROW();
		FlushErrorState();
		AbortCurrentTransaction();
		refused = true;
	}
	PG_END_TRY();
	if (refused)
		executor_leave_read_only();
	MemoryContextSwitchTo(cxt);
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
 * Has the attempt reached its deadline?
 */
static bool
executor_timed_out(ExecutorTask *task)
{
	return task->deadline != 0 && GetCurrentTimestamp() >= task->deadline;
}

/*
 * Is an error of a command one that no retry can cure?  Errors of these
 * SQLSTATE classes depend on the command and the schema, not on the
 * moment, so the task fails for good at once instead of running its
 * remaining attempts into the same error (docs/guide/sql-tasks.md):
 *
 *	0A feature not supported        25 invalid transaction state
 *	22 data exception               26 invalid SQL statement name
 *	2B dependent objects exist      34 invalid cursor name
 *	3D invalid catalog name         3F invalid schema name
 *	42 syntax error or access rule violation
 *
 * Every other class is retried per the task's policy: among them 40
 * (serialization failure, deadlock), 53 (insufficient resources), 55
 * (object in use, lock not available), 57 (canceled, shut down), 08
 * (connection), 23 (a conflicting row may be gone), P0 (the command's own
 * RAISE, which may mean "not yet") and XX.
 */
static bool
executor_error_is_final(int sqlerrcode)
{
	static const char *const final_classes[] = { "0A", "22", "25", "26", "2B",
												 "34", "3D", "3F", "42" };
	const char				*state = unpack_sql_state(sqlerrcode);

	for (int i = 0; i < (int) lengthof(final_classes); i++)
		if (strncmp(state, final_classes[i], 2) == 0)
			return true;
	return false;
}

/*
 * Record that an attempt failed with `error`, for good when `final`.  The
 * message is cut to what
 * fail() takes (PostgreSQL quotes a bad value whole in some messages).  If
 * even that cannot be recorded (the task's row locked by someone past
 * lock_timeout, say), say so and go on: once this executor no longer
 * publishes the attempt, the reaper takes it back when its lease expires.
 * An executor never dies of one task's failure.
 */
static void
executor_record_error(ExecutorTask *task, const char *error, bool final)
{
	MemoryContext cxt = CurrentMemoryContext;
	int			  len = strlen(error);

	if (len > SCHEDQ_MAX_ERROR_BYTES)
		error =
			pnstrdup(error, pg_mbcliplen(error, len, SCHEDQ_MAX_ERROR_BYTES));
	PG_TRY();
	{
		schedq_background_tick_begin("schedq sql executor: recording an error");
		(void) executor_report(task, error, final, 0);
		schedq_background_tick_commit();
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		/* the server turned read-only while the task ran: no WARNING */
		ereport(
			edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION ? LOG :
																	 WARNING,
			errmsg(
				"schedq sql executor could not record the failure of task " INT64_FORMAT
				": %s",
				task->id, edata->message),
			errdetail("The attempt is taken back when its lease expires."));
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
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
 *
 * An attempt that reaches its deadline has timed out, however it ends: a
 * command that caught the cancel of its statement and finished, or that
 * was then canceled again, rolls back and fails with "timeout", as the
 * reaper records a timed-out attempt of any task.
 */
static void
executor_run(ExecutorTask *task)
{
	MemoryContext cxt = CurrentMemoryContext;
	char		 *error = NULL;
	bool		  final = false;
	int64		  rows = 0;
	char		 *problem;

	schedq_sqlslots_publish(task->id, task->attempt);
	schedq_background_tick_begin(task->command);
	problem = executor_owner_problem(task->owner);
	if (problem != NULL)
	{
		/* a role problem will not go away by retrying */
		executor_report(task, problem, true, 0);
		schedq_background_tick_commit();
		MemoryContextSwitchTo(cxt);
		schedq_sqlslots_publish(0, 0);
		return;
	}

	PG_TRY();
	{
		Oid save_userid;
		int save_sec;
		int save_nestlevel;

		/*
		 * The attempt's deadline, as statement_timeout.  SPI does not arm
		 * that timer (the top-level query loop does), so arm it here; the
		 * command cannot lift it with SET.
		 */
		if (task->deadline != 0)
			enable_timeout_at(STATEMENT_TIMEOUT, task->deadline);
		GetUserIdAndSecContext(&save_userid, &save_sec);
		save_nestlevel = NewGUCNestLevel();
		/*
		 * The command waits for locks as any session would: schedq's
		 * own bound on lock waits (process/background.c) is not the command's.
		 */
		/*
		 * Saved and restored with the nest level, as a function's SET
		 * clause is: set with PGC_S_OVERRIDE it would become the
		 * executor's default, and the executor's own queries after the
		 * command (complete, fail, the next claims) would wait without
		 * bound for a lock a task's owner holds.
		 */
		(void) set_config_option("lock_timeout", executor_lock_timeout,
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
		SetUserIdAndSecContext(task->owner, save_sec |
												SECURITY_LOCAL_USERID_CHANGE |
												SECURITY_RESTRICTED_OPERATION);
		if (SPI_execute(task->command, false, 0) < 0)
			elog(ERROR, "could not run the command");
		rows = (int64) SPI_processed;
		disable_timeout(STATEMENT_TIMEOUT, false);
		AtEOXact_GUC(false, save_nestlevel);
		SetUserIdAndSecContext(save_userid, save_sec);
		if (executor_timed_out(task))
			ereport(ERROR, errcode(ERRCODE_QUERY_CANCELED),
					errmsg("canceling statement due to statement timeout"));
		/* complete's statement starts now: the task's finished_at */
		SetCurrentStatementStartTimestamp();
		if (!executor_report(task, NULL, false, rows))
			ereport(
				ERROR, errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				errmsg(
					"the attempt was canceled or taken back while its command ran"));
		schedq_background_tick_commit();
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
		final = executor_error_is_final(edata->sqlerrcode);
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
			executor_timed_out(task))
			error = "timeout";
	}
	PG_END_TRY();

	if (error != NULL)
		executor_record_error(task, error, final);
	/*
	 * Session-level advisory locks the command took go with its task: the
	 * next task in this executor, of whatever role, must not inherit them.
	 */
	LockReleaseAll(USER_LOCKMETHOD, true);
	MemoryContextSwitchTo(cxt);
	schedq_sqlslots_publish(0, 0);
}

/*
 * Main of an executor; main_arg is the database OID, bgw_extra holds the
 * scheduler's pid: an executor leaves when its scheduler is gone.
 */
void
schedq_sqlexec_main(Datum main_arg)
{
	Oid			  dboid = DatumGetObjectId(main_arg);
	pid_t		  scheduler_pid;
	char		 *worker;
	ArrayType	 *caps;
	Datum		  sql = CStringGetTextDatum(TASK_SQL);
	MemoryContext loop_cxt;
	TimestampTz	  last_task; /* when it last ran a task, or started */
	bool		  ran_task = false;

	memcpy(&scheduler_pid, MyBgworkerEntry->bgw_extra, sizeof(pid_t));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, StatementCancelHandler);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("schedq sql executor");
	/* the server's lock_timeout, for the commands (executor_run) */
	executor_lock_timeout =
		MemoryContextStrdup(TopMemoryContext,
							GetConfigOption("lock_timeout", false, false));
	schedq_background_settings();

	schedq_sqlslots_take(dboid);

	worker = MemoryContextStrdup(TopMemoryContext,
								 psprintf("schedq sql executor %d", MyProcPid));
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		caps = construct_array(&sql, 1, TEXTOID, -1, false, TYPALIGN_INT);
		MemoryContextSwitchTo(old);
	}
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "schedq executor loop",
									 ALLOCSET_DEFAULT_SIZES);
	last_task = GetCurrentTimestamp();

	for (;;)
	{
		ExecutorTask	task;
		SchedqDatabase *db;
		bool			orphan;
		bool			yield;
		bool			read_only;
		long			idle_ms;
		long			timeout_ms = schedq_promote_interval_ms;

		/* what the last iteration allocated, its task included, goes */
		MemoryContextSwitchTo(loop_cxt);
		MemoryContextReset(loop_cxt);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		LWLockAcquire(schedq_shm->lock, LW_SHARED);
		db = schedq_databases_slot(dboid, false);
		orphan = db == NULL || db->pid != scheduler_pid;
		/* a database waits for a slot for its scheduler: leave it ours */
		yield = ran_task && schedq_databases_waiting(InvalidOid) > 0;
		read_only = db != NULL && db->read_only;
		LWLockRelease(schedq_shm->lock);
		if (orphan)
			proc_exit(0); /* the scheduler that started us is gone */
		if (read_only || DefaultXactReadOnly)
			executor_leave_read_only();
		if (yield)
		{
			ereport(LOG,
					errmsg("schedq sql executor exiting: a database waits for "
						   "a background worker slot for its scheduler"));
			proc_exit(0);
		}
		ran_task = false;

		/* register before looking, so that a task made available after the look wakes us */
		schedq_wake_register(NULL, caps, true);
		if (schedq_enabled && executor_claim_writable(worker, &task))
		{
			schedq_wake_unregister();
			executor_run(&task);
			last_task = GetCurrentTimestamp();
			ran_task = true;
			continue;
		}

		/*
		 * Idle: leave after schedq.sql_idle_timeout without a task.  A
		 * wake-up that comes meanwhile goes on to another executor
		 * (schedq_wake_unregister, at exit), and the scheduler, told of
		 * the exit, starts one if a task is left.
		 */
		idle_ms = (long) ((GetCurrentTimestamp() - last_task) / 1000);
		if (schedq_sql_idle_timeout_ms >= 0)
		{
			if (idle_ms >= schedq_sql_idle_timeout_ms)
			{
				ereport(DEBUG1,
						errmsg("schedq sql executor exiting after %ld ms "
							   "without a task",
							   idle_ms));
				proc_exit(0);
			}
			timeout_ms = Min(timeout_ms, schedq_sql_idle_timeout_ms - idle_ms);
		}
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(timeout_ms, 1),
						 SCHEDQ_WAIT_EVENT("SchedqExecutorIdle"));
		ResetLatch(MyLatch);
	}
}

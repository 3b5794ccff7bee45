/*-------------------------------------------------------------------------
 * process/background.c
 *	  What every schedq background process does the same way: how it is
 *	  registered, its session settings, the transaction bracket around
 *	  each iteration, and the pace of its loop.
 *
 * Pace: a loop sleeps until its next due time, but never less than
 * SCHEDQ_IDLE_FLOOR_MS after an iteration that did nothing, and when such
 * an iteration woke already late for what it thought was due (something
 * due that it cannot do: a row locked by someone else, say), it backs
 * off, doubling its sleep each time up to the loop's longest.  So no
 * mistake in a due-time computation can make a process spin.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/lwlock.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/settings.h"
#include "process/background.h"
#include "shared/databases.h"
#include "shared/shm.h"

/*
 * Fill in a schedq background process that connects to database dboid
 * (InvalidOid:
 * to none, as the launcher) and runs `function` of this library.  It is
 * not restarted by the postmaster: whoever starts it restarts it.
 */
void
schedq_background_fill(BackgroundWorker *worker, const char *function,
					   const char *type, Oid dboid)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags =
		BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker->bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker->bgw_library_name, "schedq", BGW_MAXLEN);
	strlcpy(worker->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker->bgw_type, type, BGW_MAXLEN);
	if (OidIsValid(dboid))
		snprintf(worker->bgw_name, BGW_MAXLEN, "%s for database %u", type,
				 dboid);
	else
		strlcpy(worker->bgw_name, type, BGW_MAXLEN);
	worker->bgw_main_arg = ObjectIdGetDatum(dboid);
	worker->bgw_notify_pid = MyProcPid;
}

/*
 * The hint of a message that a schedq background process could not be
 * started for want of a background worker slot; for use inside ereport().
 */
int
schedq_background_slots_errhint(void)
{
	return errhint(
		"Raise max_worker_processes (now %d; a restart is needed): schedq takes a background worker for its launcher, one for the scheduler of each database with schedq, and one for each SQL task running at once, at most schedq.sql_workers (now %d) per database. See docs/operations.md#sizing-max_worker_processes.",
		max_worker_processes, schedq_sql_workers);
}

/*
 * Say, at CREATE EXTENSION schedq, when this database will get no
 * scheduler, or its SQL tasks no executor, for want of background worker
 * slots: a WARNING naming the sizing rule (it goes to the server log
 * too).  The slots taken are counted from the background workers running
 * now that keep theirs (schedq's launcher and schedulers, other
 * extensions' workers, the logical replication launcher) and the
 * databases already waiting for one; parallel workers and SQL executors
 * come and go, and SQL executors give way to a waiting scheduler
 * (process/sqlexec.c), so they are not counted.  The launcher holds a
 * slot from the server's start, running or not.
 */
void
schedq_background_warn_no_room(void)
{
	int			   nbackends;
	int			   schedulers = 0;
	int			   others = 0;
	int			   waiting;
	int			   taken;
	int			   left;
	StringInfoData held;

	if (IsBinaryUpgrade)
		return;
	nbackends = pgstat_fetch_stat_numbackends();
	for (int i = 1; i <= nbackends; i++)
	{
		LocalPgBackendStatus *local = schedq_backend_status(i);
		PgBackendStatus		 *be;
		const char			 *type;

		if (local == NULL)
			continue;
		be = &local->backendStatus;
		if (be->st_backendType != B_BG_WORKER)
			continue;
		type = GetBackgroundWorkerTypeByPid(be->st_procpid);
		if (type == NULL || strcmp(type, "parallel worker") == 0 ||
			strcmp(type, "schedq sql executor") == 0 ||
			strcmp(type, "schedq launcher") == 0)
			continue;
		if (strcmp(type, "schedq scheduler") != 0)
			others++;
		else if (be->st_databaseid != MyDatabaseId)
			schedulers++;

		/*
		 * This database's own scheduler, if one runs, holds the slot it
		 * needs; it may also be the launcher's look into a new database,
		 * which leaves when it finds no schedq yet, and then this
		 * database's scheduler needs a slot as any other.  Either way
		 * it is not counted among the slots taken.
		 */
	}
	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	waiting = schedq_databases_waiting(MyDatabaseId);
	LWLockRelease(schedq_shm->lock);

	taken = 1 + schedulers + others + waiting;
	left = max_worker_processes - taken;
	if (left >= 2 || (left == 1 && schedq_sql_workers == 0))
		return;
	initStringInfo(&held);
	appendStringInfo(&held, "1 by the schedq launcher");
	if (schedulers > 0)
		appendStringInfo(&held,
						 ", %d by the schedq schedulers of other databases",
						 schedulers);
	if (others > 0)
		appendStringInfo(&held, ", %d by other background workers", others);
	if (waiting > 0)
		appendStringInfo(&held,
						 ", %d for databases with schedq waiting for one",
						 waiting);
	ereport(
		WARNING, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
		left < 1 ?
			errmsg(
				"database \"%s\" gets no schedq scheduler: every background worker slot is taken",
				get_database_name(MyDatabaseId)) :
			errmsg(
				"database \"%s\" gets its schedq scheduler, but no background worker slot is left for SQL executors",
				get_database_name(MyDatabaseId)),
		errdetail(
			"max_worker_processes is %d, and %d are held: %s. %s",
			max_worker_processes, taken, held.data,
			left < 1 ?
				"Until a slot is free, tasks here that wait for their time, a dependency or a key stay pending, SQL tasks do not run, and schedq.scheduler_status() shows this database as 'no worker slot'." :
				"No SQL task runs, in this database or another, until a slot is free."),
		errhint(
			"Set max_worker_processes to at least %d and restart the server: schedq takes a background worker for its launcher, one for the scheduler of each database with schedq, and one for each SQL task running at once, at most schedq.sql_workers (now %d) per database. See docs/operations.md#sizing-max_worker_processes.",
			taken + 1 + schedq_sql_workers, schedq_sql_workers));
}

/*
 * Session settings of a worker, once connected.
 */
void
schedq_background_settings(void)
{
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET,
					PGC_S_OVERRIDE);
	/* Its queries are short; JIT would only cost (see the README). */
	SetConfigOption("jit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * In a deadlock with a user's command (DROP EXTENSION while a pass
	 * runs, say), the background process should be the one to give up: it checks first,
	 * aborts, and is started again.
	 */
	SetConfigOption("deadlock_timeout", "100ms", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * Nor does a background process wait without bound for a lock someone else holds (a
	 * row in an idle transaction, a table locked by hand): it gives up with
	 * an error after this long.  The scheduler reports it and tries that
	 * pass again later, doing its other passes meanwhile (process/scheduler.c).
	 */
	SetConfigOption("lock_timeout", CppAsString2(SCHEDQ_WORKER_LOCK_TIMEOUT_MS),
					PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * Each statement sees what committed before it (a look after a lock
	 * wait must see what the lock holder did: pass/shards.c), whatever the
	 * database's or role's default.
	 */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * Every query of a background process is written for an index.  Its plans are
	 * generic and kept, and one made while a table was nearly empty would
	 * scan the table sequentially until the next ANALYZE.
	 */
	SetConfigOption("enable_seqscan", "off", PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * How long a loop should sleep, in milliseconds, until `wake` (rounded up:
 * waking a little early would find nothing due yet) after an iteration
 * that made progress or not.  An iteration that did nothing sleeps at
 * least SCHEDQ_IDLE_FLOOR_MS; one that did nothing although its wake time
 * had already passed backs off, doubling up to max_ms.
 */
long
schedq_background_pace_ms(SchedqPace *pace, TimestampTz wake, bool progress,
						  int max_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms = 0;

	if (wake > now)
		ms = (long) Min((wake - now + 999) / 1000, (int64) INT_MAX);
	if (progress)
	{
		pace->backoff_ms = 0;
		return Max(ms, 1);
	}
	if (ms >= SCHEDQ_IDLE_FLOOR_MS)
	{
		pace->backoff_ms = 0;
		return ms;
	}
	if (ms > 0)
		return SCHEDQ_IDLE_FLOOR_MS;
	/* late, and nothing done: what seemed due cannot be done now */
	if (pace->backoff_ms == 0)
		pace->backoff_ms = SCHEDQ_IDLE_FLOOR_MS;
	else
		pace->backoff_ms =
			Min(pace->backoff_ms * 2, Max(max_ms, SCHEDQ_IDLE_FLOOR_MS));
	return pace->backoff_ms;
}

/*
 * Open the transaction of one iteration: start it, connect to SPI, push a
 * snapshot, and show what the process does in pg_stat_activity.
 */
void
schedq_background_tick_begin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/*
 * Close it, in reverse order, and report the process idle.  Leaves the
 * caller in TopMemoryContext, as CommitTransactionCommand does.
 */
void
schedq_background_tick_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

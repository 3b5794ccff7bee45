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
 * mistake in a due-time computation can make a worker spin.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/settings.h"
#include "process/background.h"

/*
 * Fill in a schedq worker that connects to database dboid (InvalidOid:
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
 * The hint of a message that a schedq worker could not be started for
 * want of a background worker slot; for use inside ereport().
 */
int
schedq_background_slots_errhint(void)
{
	return errhint(
		"Raise max_worker_processes (now %d): schedq needs a background worker for its launcher, and for each database with schedq one for its scheduler and schedq.sql_workers (now %d) for its SQL executors.",
		max_worker_processes, schedq_sql_workers);
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
	 * runs, say), the worker should be the one to give up: it checks first,
	 * aborts, and is started again.
	 */
	SetConfigOption("deadlock_timeout", "100ms", PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * Nor does a worker wait without bound for a lock someone else holds (a
	 * row in an idle transaction, a table locked by hand): it gives up with
	 * an error after this long.  The scheduler reports it and tries that
	 * pass again later, doing its other passes meanwhile (scheduler.c).
	 */
	SetConfigOption("lock_timeout", CppAsString2(SCHEDQ_WORKER_LOCK_TIMEOUT_MS),
					PGC_SUSET, PGC_S_OVERRIDE);

	/*
	 * Every query of a worker is written for an index.  Its plans are
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
 * snapshot, and show what the worker does in pg_stat_activity.
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
 * Close it, in reverse order, and report the worker idle.  Leaves the
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

/*-------------------------------------------------------------------------
 * worker.c
 *	  What every schedq background worker does the same way: how it is
 *	  registered, its session settings, the transaction bracket around
 *	  each iteration, and the tags of schedq's locks.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/lock.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "worker.h"

/* Advisory lock tags: (database, SCHEDQ_LOCK_CLASS, what). */
#define SCHEDQ_LOCK_CLASS 0x53510000 /* "SQ" */

/*
 * Fill in a schedq worker that connects to database dboid (InvalidOid:
 * to none, as the launcher) and runs `function` of this library.  It is
 * not restarted by the postmaster: whoever starts it restarts it.
 */
void
schedq_worker_fill(BackgroundWorker *worker, const char *function,
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
 * The tag of a schedq lock of this database.
 */
void
schedq_lock_tag(LOCKTAG *tag, SchedqLock what)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, SCHEDQ_LOCK_CLASS, what, 2);
}

/*
 * Session settings of a worker, once connected.
 */
void
schedq_worker_settings(void)
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
	 * Every query of a worker is written for an index.  Its plans are
	 * generic and kept, and one made while a table was nearly empty would
	 * scan the table sequentially until the next ANALYZE.
	 */
	SetConfigOption("enable_seqscan", "off", PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * Open the transaction of one iteration: start it, connect to SPI, push a
 * snapshot, and show what the worker does in pg_stat_activity.
 */
void
schedq_tick_begin(const char *activity)
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
schedq_tick_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

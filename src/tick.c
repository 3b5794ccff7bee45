/*-------------------------------------------------------------------------
 * tick.c
 *	  What every schedq background worker does the same way: its session
 *	  settings, and the transaction bracket around each iteration.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "scheduler.h"

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

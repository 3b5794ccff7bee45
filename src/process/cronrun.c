/*-------------------------------------------------------------------------
 * process/cronrun.c
 *	  The background worker that runs one schedq_cron job in another
 *	  database (shared/cronrun.c starts it and waits for it): connected to
 *	  that database as the job's user, as a session of that user would be
 *	  (its LOGIN, the CONNECT privilege and the settings of ALTER ROLE and
 *	  ALTER DATABASE apply), it runs the command in one transaction, as the
 *	  SQL executor runs a task's, writes the outcome into the segment and
 *	  exits.  SIGTERM (the attempt ended: timeout, cancel) ends the
 *	  command and rolls it back.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "process/cronrun.h"
#include "shared/cronrun.h"

/*
 * Main of the worker; main_arg is the handle of the segment of its run.
 */
void
schedq_cronrun_main(Datum main_arg)
{
	dsm_segment	 *seg;
	CronRun		 *run;
	MemoryContext cxt;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		ereport(
			ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg(
				"the run of a schedq_cron job ended before its worker started"));
	run = (CronRun *) dsm_segment_address(seg);
	BackgroundWorkerInitializeConnectionByOid(run->dboid, run->roleid, 0);
	/* its application_name, as a session's (pg_stat_activity shows it) */
	SetConfigOption("application_name", MyBgworkerEntry->bgw_name, PGC_USERSET,
					PGC_S_SESSION);

	cxt = CurrentMemoryContext;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		SPI_connect();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, run->command);
		if (SPI_execute(run->command, false, 0) < 0)
			elog(ERROR, "could not run the command");
		run->rows = (int64) SPI_processed;
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData *edata;
		int		   len;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		len = pg_mbcliplen(edata->message, strlen(edata->message),
						   CRONRUN_MESSAGE_MAX);
		memcpy(run->message, edata->message, len);
		run->message[len] = '\0';
		run->sqlstate = edata->sqlerrcode;
		run->rows = 0;
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	pg_write_barrier();
	run->done = true;
	dsm_detach(seg);
	proc_exit(0);
}

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
 * The message of the command's error, in the caller's database's encoding
 * (the worker's database may have another): converted, or, where that
 * cannot be done, its non-ASCII bytes as '?', never bytes that would be
 * invalid there.  Outside a transaction (the command's was aborted); the
 * conversion's lookup runs in one of its own.
 */
static char *
cronrun_message(const char *message, int encoding)
{
	MemoryContext cxt = CurrentMemoryContext;
	char		 *out = NULL;

	PG_TRY();
	{
		StartTransactionCommand();
		out =
			(char *) pg_do_encoding_conversion((unsigned char *) message,
											   strlen(message),
											   GetDatabaseEncoding(), encoding);
		MemoryContextSwitchTo(cxt);
		out = pstrdup(out);
		CommitTransactionCommand();
		MemoryContextSwitchTo(cxt);
		if (!pg_verify_mbstr(encoding, out, strlen(out), true))
			out = NULL;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		AbortCurrentTransaction();
		out = NULL;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	if (out == NULL)
	{
		out = pstrdup(message);
		for (char *c = out; *c; c++)
			if (IS_HIGHBIT_SET(*c))
				*c = '?';
	}
	return out;
}

/*
 * Main of the worker; main_arg is the handle of the segment of its run.
 */
void
schedq_cronrun_main(Datum main_arg)
{
	dsm_segment	 *seg;
	CronRun		 *run;
	MemoryContext cxt;
	char		 *command;

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
	run->connected = true;
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
		/*
		 * The command, from the caller's database's encoding into this
		 * one's, and valid in it (as a client's query is): neither
		 * mojibake nor invalid bytes written here.
		 */
		command =
			(char *) pg_do_encoding_conversion((unsigned char *) run->command,
											   strlen(run->command),
											   run->encoding,
											   GetDatabaseEncoding());
		(void) pg_verify_mbstr(GetDatabaseEncoding(), command, strlen(command),
							   false);
		pgstat_report_activity(STATE_RUNNING, command);
		if (SPI_execute(command, false, 0) < 0)
			elog(ERROR, "could not run the command");
		run->rows = (int64) SPI_processed;
		SPI_finish();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData *edata;
		char	  *message;
		int		   len;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		message = cronrun_message(edata->message ? edata->message : "",
								  run->encoding);
		len = pg_encoding_mbcliplen(run->encoding, message, strlen(message),
									CRONRUN_MESSAGE_MAX);
		memcpy(run->message, message, len);
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

/*-------------------------------------------------------------------------
 * shared/cronrun.c
 *	  A schedq_cron job of another database (cron.schedule_in_database):
 *	  the SQL executor of the job's own database runs the job's task, and
 *	  its command starts a background worker connected to the other
 *	  database as the job's user (process/cronrun.c), hands it the command
 *	  in a dynamic shared memory segment and waits for it to exit.  This is
 *	  how pg_cron runs jobs with cron.use_background_workers: no password,
 *	  no pg_hba.conf entry, the CONNECT privilege and LOGIN checked as at a
 *	  connection.
 *
 * The run is the task's attempt, with all it promises: the command's error
 * is the attempt's error, with its SQLSTATE; the task's timeout, a cancel
 * or a lost lease end the wait with an error, and the worker is then
 * terminated and waited for, however long it takes to exit, before the
 * attempt ends, so that the next run does not start beside it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "shared/cronrun.h"

/* How often an ending attempt warns that its terminated worker lives on. */
#define CRONRUN_STOP_WARN_MS 10000

/*
 * On an error or exit while the worker runs: terminate it and wait, with
 * interrupts held, until it has exited, however long that takes (a
 * command that does not heed SIGTERM: a C function, a read of a FIFO),
 * with a WARNING every CRONRUN_STOP_WARN_MS.  The attempt ends only then,
 * and the next run of the job may start only then: never twice at once.
 */
static void
cronrun_stop(int code, Datum arg)
{
	BackgroundWorkerHandle *handle =
		(BackgroundWorkerHandle *) DatumGetPointer(arg);
	TimestampTz since = GetCurrentTimestamp();
	TimestampTz warn = TimestampTzPlusMilliseconds(since, CRONRUN_STOP_WARN_MS);
	pid_t		pid;

	TerminateBackgroundWorker(handle);
	HOLD_INTERRUPTS();
	while (GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED)
	{
		int rc;

		if (GetCurrentTimestamp() >= warn)
		{
			ereport(WARNING,
					errmsg("the background worker of a schedq_cron job (pid "
						   "%d) has not exited %ld ms after it was terminated",
						   (int) pid,
						   (long) ((GetCurrentTimestamp() - since) / 1000)),
					errdetail("The job's run ends, and its next may start, "
							  "when it has exited."));
			warn = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   CRONRUN_STOP_WARN_MS);
		}
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
					   100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (rc & WL_POSTMASTER_DEATH)
			break;
	}
	RESUME_INTERRUPTS();
}

/*
 * Run job `jobid`'s command in database dboid as role roleid, in a
 * background worker, and wait for it.  Returns the rows of the command's
 * last statement; raises the command's error as its own.  The caller has
 * checked the database and the role (api/cron_run.c).
 */
int64
schedq_cronrun_run(Oid dboid, Oid roleid, int64 jobid, const char *command)
{
	Size					len = strlen(command);
	dsm_segment			   *seg;
	CronRun				   *run;
	BackgroundWorker		worker;
	BackgroundWorkerHandle *handle;
	BgwHandleStatus			status;
	int64					rows;

	seg = dsm_create(offsetof(CronRun, command) + len + 1, 0);
	run = (CronRun *) dsm_segment_address(seg);
	memset(run, 0, offsetof(CronRun, command));
	run->dboid = dboid;
	run->roleid = roleid;
	run->jobid = jobid;
	run->encoding = GetDatabaseEncoding();
	memcpy(run->command, command, len + 1);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags =
		BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "schedq", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "schedq_cronrun_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN, "schedq cron job " INT64_FORMAT,
			 jobid);
	strlcpy(worker.bgw_type, "schedq cron job", BGW_MAXLEN);
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		ereport(
			ERROR, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			errmsg(
				"could not start a background worker to run job " INT64_FORMAT
				" in another database",
				jobid),
			errhint("Raise max_worker_processes: each running job of "
					"another database takes a background worker."));

	PG_ENSURE_ERROR_CLEANUP(cronrun_stop, PointerGetDatum(handle));
	{
		status = WaitForBackgroundWorkerShutdown(handle);
	}
	PG_END_ENSURE_ERROR_CLEANUP(cronrun_stop, PointerGetDatum(handle));

	if (status == BGWH_POSTMASTER_DIED)
		ereport(FATAL, errcode(ERRCODE_ADMIN_SHUTDOWN),
				errmsg("the postmaster exited while a schedq_cron job ran"));
	pg_read_barrier();
	if (!run->done && run->connected)
		ereport(ERROR, errcode(ERRCODE_ADMIN_SHUTDOWN),
				errmsg("job " INT64_FORMAT " did not finish: its background "
					   "worker exited before its command ended",
					   jobid),
				errhint("The server log says why (terminated, say)."));
	if (!run->done)
		ereport(ERROR, errcode(ERRCODE_CONNECTION_FAILURE),
				errmsg("job " INT64_FORMAT " did not run: its background "
					   "worker could not connect to the database",
					   jobid),
				errhint("The server log says why."));
	if (run->sqlstate != 0)
		ereport(ERROR, errcode(run->sqlstate),
				errmsg_internal("%s", run->message));
	rows = run->rows;
	dsm_detach(seg);
	return rows;
}

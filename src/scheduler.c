/*-------------------------------------------------------------------------
 * scheduler.c
 *	  The per-database scheduler: one background worker per database with
 *	  schedq installed, started by the launcher; and
 *	  schedq.scheduler_status(), which shows what each is doing.
 *
 * Each iteration is one transaction (worker.c's bracket): check that
 * schedq is still installed (exit for good if not), run the periodic pass
 * (due ticks fire first: they are the most time-sensitive), a promotion
 * pass, a reaper pass when one is due, and find the next due time.  Then
 * sleep on the latch until the earliest of: the next pending run_at, the
 * next periodic tick, the next reaper pass, schedq.promote_interval (the
 * fallback).  Commits that create work set the latch (wake.c), so a
 * submit is promoted at once and a task due in a second is promoted
 * within milliseconds of its run_at.  Between iterations it keeps the
 * database's SQL executors at strength (executor.c).
 *
 * Only one scheduler acts per database: it holds a session-level lock
 * (worker.h) for its lifetime, and a second one exits.  An ERROR ends the worker
 * (exit 1) and the launcher starts it again; every pass is idempotent.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "funcapi.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "executor.h"
#include "periodic.h"
#include "promote.h"
#include "reaper.h"
#include "scheduler.h"
#include "settings.h"
#include "shmem.h"
#include "worker.h"

static SchedqDatabase *scheduler_slot = NULL;

static const char *const scheduler_state_names[] = {
	[SCHEDULER_NONE] = "stopped",	 [SCHEDULER_STARTING] = "starting",
	[SCHEDULER_IDLE] = "idle",		 [SCHEDULER_PROMOTING] = "promoting",
	[SCHEDULER_REAPING] = "reaping", [SCHEDULER_DISABLED] = "disabled",
};

static void
scheduler_set_state(SchedqSchedulerState state)
{
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	scheduler_slot->state = state;
	if (state == SCHEDULER_IDLE || state == SCHEDULER_DISABLED)
		scheduler_slot->last_tick = GetCurrentTimestamp();
	LWLockRelease(schedq_shared->lock);
}

static void
scheduler_exit(int code, Datum arg)
{
	if (scheduler_slot == NULL)
		return;
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	if (scheduler_slot->pid == MyProcPid)
	{
		scheduler_slot->pid = 0;
		scheduler_slot->latch = NULL;
		scheduler_slot->state = SCHEDULER_NONE;
	}
	LWLockRelease(schedq_shared->lock);
}

/*
 * Leave for good: schedq is not installed in this database (any more).
 * The launcher starts a scheduler here again only after CREATE EXTENSION.
 */
static void
scheduler_not_installed(void)
{
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	scheduler_slot->absent = true;
	LWLockRelease(schedq_shared->lock);
	ereport(
		LOG,
		errmsg(
			"schedq scheduler exiting: extension \"schedq\" is not installed in database \"%s\"",
			get_database_name(MyDatabaseId)));
	proc_exit(0);
}

/*
 * Main of the scheduler worker; main_arg is the database OID.
 */
void
schedq_scheduler_main(Datum main_arg)
{
	Oid			  dboid = DatumGetObjectId(main_arg);
	TimestampTz	  next_reap = 0;
	MemoryContext loop_cxt;
	LOCKTAG		  tag;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("schedq scheduler");
	schedq_worker_settings();

	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	scheduler_slot = schedq_database_slot(dboid, true);
	LWLockRelease(schedq_shared->lock);
	if (scheduler_slot == NULL)
		ereport(ERROR, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("schedq supports at most %d databases",
					   SCHEDQ_MAX_DATABASES));

	/* One scheduler per database: a second one leaves at once. */
	schedq_lock_tag(&tag, SCHEDQ_LOCK_SCHEDULER);
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		ereport(
			LOG,
			errmsg(
				"schedq scheduler exiting: another scheduler serves database %u",
				dboid));
		proc_exit(1);
	}

	before_shmem_exit(scheduler_exit, (Datum) 0);
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	scheduler_slot->pid = MyProcPid;
	scheduler_slot->latch = MyLatch;
	scheduler_slot->state = SCHEDULER_STARTING;
	scheduler_slot->absent = false;
	LWLockRelease(schedq_shared->lock);

	/* Gate events are unlogged: after a crash, look at every task again. */
	schedq_tick_begin("schedq scheduler: starting");
	if (!OidIsValid(get_extension_oid("schedq", true)))
		scheduler_not_installed();
	/* a CREATE EXTENSION's request to start one is answered */
	LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
	scheduler_slot->probe = false;
	LWLockRelease(schedq_shared->lock);
	schedq_unpark_all();
	schedq_tick_commit();

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "schedq scheduler loop",
									 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		TimestampTz wake = now + (int64) schedq_promote_interval_ms * 1000;
		bool		more = false;
		long		timeout_ms;

		MemoryContextSwitchTo(loop_cxt);
		if (schedq_enabled)
		{
			scheduler_set_state(SCHEDULER_PROMOTING);
			schedq_tick_begin("schedq scheduler: promoting");
			if (!OidIsValid(get_extension_oid("schedq", true)))
				scheduler_not_installed();
			(void) schedq_periodic_pass(now, &more);
			(void) schedq_promote_pass(now, &more);
			if (now >= next_reap)
			{
				scheduler_set_state(SCHEDULER_REAPING);
				(void) schedq_reap_pass(now, &more);
				next_reap = now + (int64) schedq_reaper_interval_ms * 1000;
			}
			{
				/* Min() evaluates its arguments twice: query once */
				TimestampTz next_due = schedq_next_due(now);
				TimestampTz next_tick = schedq_periodic_next_due();

				wake = Min(wake, Min(next_reap, Min(next_due, next_tick)));
			}
			schedq_tick_commit();
			scheduler_set_state(SCHEDULER_IDLE);
		}
		else
			scheduler_set_state(SCHEDULER_DISABLED);
		MemoryContextSwitchTo(loop_cxt);
		MemoryContextReset(loop_cxt);
		schedq_executors_keep();

		/* round up: waking a little early would find nothing due yet */
		timeout_ms =
			more ? 0 : Max(1, (wake - GetCurrentTimestamp() + 999) / 1000);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout_ms, SCHEDQ_WAIT_EVENT("SchedqSchedulerMain"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}

PG_FUNCTION_INFO_V1(schedq_scheduler_status);

/*
 * schedq.scheduler_status(): one row per database with a scheduler.
 */
Datum
schedq_scheduler_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SchedqDatabase copy[SCHEDQ_MAX_DATABASES];

	schedq_require_preloaded();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(schedq_shared->lock, LW_SHARED);
	memcpy(copy, schedq_shared->databases, sizeof(copy));
	LWLockRelease(schedq_shared->lock);

	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
	{
		Datum values[4];
		bool  nulls[4] = { false, false, false, false };
		char *datname;

		if (copy[i].dboid == InvalidOid || copy[i].pid == 0)
			continue;
		datname = get_database_name(copy[i].dboid);
		if (datname == NULL)
			continue;
		values[0] = DirectFunctionCall1(namein, CStringGetDatum(datname));
		values[1] = Int32GetDatum(copy[i].pid);
		values[2] = CStringGetTextDatum(scheduler_state_names[copy[i].state]);
		values[3] = TimestampTzGetDatum(copy[i].last_tick);
		nulls[3] = copy[i].last_tick == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

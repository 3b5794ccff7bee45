/*-------------------------------------------------------------------------
 * process/launcher.c
 *	  The cluster launcher: starts one scheduler for each database where
 *	  schedq is installed, and starts it again when it stops.
 *
 * The launcher connects to no database; it reads pg_database (a shared
 * catalog) every second, which costs no connection.  It cannot see
 * pg_extension of other databases, so it learns where schedq is installed
 * from the schedulers themselves:
 *
 *	- a database it has not seen yet (at launcher start, or new in
 *	  pg_database) gets a scheduler; one that finds no schedq marks its slot
 *	  'absent' and exits 0;
 *	- an absent database gets a scheduler again only when a backend there
 *	  commits CREATE EXTENSION schedq (the utility hook sets 'probe' in its
 *	  slot and the launcher's latch), so databases without schedq are not
 *	  connected to again and again;
 *	- a scheduler that stopped for any other reason (an error, a crash, a
 *	  SIGTERM) is started again after SCHEDQ_RESTART_DELAY, unless its slot
 *	  is held (DROP DATABASE in progress) or the database is gone;
 *	- a scheduler that cannot start because no background worker slot is
 *	  free (max_worker_processes) is tried again at every scan; the first
 *	  failure is logged as a WARNING, and the database's slot says 'no
 *	  worker slot' (scheduler_status()) until one starts.
 *
 * Per database, in the launcher's memory:
 *
 *	 NEW --start--> STARTED --stopped, slot absent--> ABSENT --probe--> STARTED
 *	                   |  ^
 *	                   |  +--restart delay passed, not held-- STOPPED
 *	                   +--stopped, not absent-------------------^
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "process/launcher.h"
#include "shared/metrics.h"
#include "shared/databases.h"
#include "shared/shm.h"
#include "process/background.h"
#include "shared/commit.h"

#define LAUNCHER_SCAN_MS		1000
#define SCHEDQ_RESTART_DELAY_MS 1000

typedef enum LauncherDbState
{
	LDB_STARTED, /* a scheduler was started */
	LDB_STOPPED, /* it stopped; start again after the delay */
	LDB_ABSENT	 /* no schedq there; wait for a probe */
} LauncherDbState;

typedef struct LauncherDb
{
	Oid						dboid; /* hash key */
	LauncherDbState			state;
	BackgroundWorkerHandle *handle;
	TimestampTz				stopped_at;
	bool					seen;	 /* still in pg_database at the last scan */
	NameData				datname; /* as of the last scan */
	bool					no_slot; /* the last start found no worker slot */
	bool has_schedq; /* its slot said so (kept when the slot is freed) */
} LauncherDb;

static HTAB *launcher_dbs = NULL;

static void
launcher_exit(int code, Datum arg)
{
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	if (schedq_shm->launcher_pid == MyProcPid)
	{
		schedq_shm->launcher_pid = 0;
		schedq_shm->launcher_latch = NULL;
	}
	LWLockRelease(schedq_shm->lock);
}

/*
 * Note in a database's slot whether the launcher found no background
 * worker slot for its scheduler, for scheduler_status().
 */
static void
launcher_set_no_slot(LauncherDb *db, bool no_slot)
{
	SchedqDatabase *slot;

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	slot = schedq_databases_slot(db->dboid, no_slot);
	if (slot != NULL)
	{
		slot->no_worker_slot = no_slot;
		slot->has_schedq |= db->has_schedq;
	}
	LWLockRelease(schedq_shm->lock);
}

/*
 * Start a scheduler for a database.  Returns false when no background
 * worker slot is free (we try again on the next scan).  Says so once, not
 * at every try.
 */
static bool
launcher_start_scheduler(LauncherDb *db)
{
	BackgroundWorker worker;

	schedq_background_fill(&worker, "schedq_scheduler_main", "schedq scheduler",
						   db->dboid);
	if (!RegisterDynamicBackgroundWorker(&worker, &db->handle))
	{
		db->handle = NULL;
		if (!db->no_slot)
		{
			ereport(
				WARNING, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg(
					"could not start the schedq scheduler of database \"%s\": no background worker slot is free",
					NameStr(db->datname)),
				errdetail(
					"The launcher tries again every second; schedq.scheduler_status() shows the database as 'no worker slot' meanwhile."),
				schedq_background_slots_errhint());
			db->no_slot = true;
			launcher_set_no_slot(db, true);
		}
		return false;
	}
	if (db->no_slot)
	{
		ereport(LOG, errmsg("started the schedq scheduler of database \"%s\"",
							NameStr(db->datname)));
		db->no_slot = false;
		launcher_set_no_slot(db, false);
	}
	db->state = LDB_STARTED;
	return true;
}

/*
 * Mark every database of pg_database as seen, adding new ones.  Frees the
 * slots (a scheduler's, the metrics') of the databases that are no longer
 * in pg_database.
 */
static void
launcher_scan_databases(void)
{
	Relation		rel;
	TableScanDesc	scan;
	HeapTuple		tuple;
	HASH_SEQ_STATUS status;
	LauncherDb	   *db;
	Oid				counted[SCHEDQ_MAX_DATABASES];
	bool			exists[SCHEDQ_MAX_DATABASES] = { false };
	int				ncounted;
	Oid				slotted[SCHEDQ_MAX_DATABASES];
	bool			slot_exists[SCHEDQ_MAX_DATABASES] = { false };
	int				nslotted = 0;

	/*
	 * The databases with metrics slots and with scheduler slots, read
	 * before the scan's snapshot: each slot was taken for a database then
	 * in pg_database (a process counted there; a scheduler, a probe or a
	 * database command was there), so one the scan does not find was
	 * dropped.  Their slots are freed below, whether or not this launcher
	 * had the database in its list: dropping alone frees neither a slot
	 * DROP DATABASE still holds when the launcher notices the drop, nor one
	 * of a database it never scanned (a template, one that takes no
	 * connections, one made and dropped between two scans).
	 */
	ncounted = schedq_metrics_databases(counted);
	LWLockAcquire(schedq_shm->lock, LW_SHARED);
	for (int i = 0; i < SCHEDQ_MAX_DATABASES; i++)
		if (OidIsValid(schedq_databases[i].dboid))
			slotted[nslotted++] = schedq_databases[i].dboid;
	LWLockRelease(schedq_shm->lock);

	hash_seq_init(&status, launcher_dbs);
	while ((db = hash_seq_search(&status)) != NULL)
		db->seen = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);
		bool			 found;

		for (int i = 0; i < ncounted; i++)
			if (counted[i] == form->oid)
				exists[i] = true;
		for (int i = 0; i < nslotted; i++)
			if (slotted[i] == form->oid)
				slot_exists[i] = true;
		if (form->datistemplate || !form->datallowconn)
			continue;
		db = hash_search(launcher_dbs, &form->oid, HASH_ENTER, &found);
		if (!found)
		{
			db->state = LDB_STOPPED; /* start at once */
			db->handle = NULL;
			db->stopped_at = 0;
			db->no_slot = false;
			db->has_schedq = false;
		}
		db->seen = true;
		db->datname = form->datname;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();

	for (int i = 0; i < ncounted; i++)
		if (!exists[i])
			schedq_metrics_forget(counted[i]);
	for (int i = 0; i < nslotted; i++)
	{
		SchedqDatabase *slot;

		if (slot_exists[i])
			continue;
		LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
		slot = schedq_databases_slot(slotted[i], false);
		if (slot != NULL && slot->pid == 0)
			slot->dboid = InvalidOid;
		LWLockRelease(schedq_shm->lock);
	}
}

/*
 * Bring each database's scheduler to where it should be.  Returns the
 * time of the next thing to do; *started is set when a scheduler was
 * started.
 */
static TimestampTz
launcher_reconcile(bool *started)
{
	TimestampTz		now = GetCurrentTimestamp();
	TimestampTz		next = now + (int64) LAUNCHER_SCAN_MS * 1000;
	HASH_SEQ_STATUS status;
	LauncherDb	   *db;

	hash_seq_init(&status, launcher_dbs);
	while ((db = hash_seq_search(&status)) != NULL)
	{
		SchedqDatabase *slot;
		bool			probe = false;
		bool			running_elsewhere = false;
		TimestampTz		hold_until = 0;

		if (db->state == LDB_STARTED)
		{
			pid_t pid;

			if (GetBackgroundWorkerPid(db->handle, &pid) != BGWH_STOPPED)
			{
				/* running: a probe (CREATE EXTENSION IF NOT EXISTS) is answered */
				LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
				slot = schedq_databases_slot(db->dboid, false);
				if (slot != NULL && slot->pid != 0)
					slot->probe = false;
				LWLockRelease(schedq_shm->lock);
				continue;
			}
			pfree(db->handle);
			db->handle = NULL;
			db->state = LDB_STOPPED;
			db->stopped_at = now;
		}

		/*
		 * Read what the slot says, and free it when it has nothing left to
		 * say: only a running scheduler, a pending probe or a hold needs
		 * one, so dropped databases and databases without schedq do not
		 * use up the SCHEDQ_MAX_DATABASES slots.
		 */
		LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
		slot = schedq_databases_slot(db->dboid, false);
		if (slot != NULL)
		{
			db->has_schedq = slot->has_schedq;
			if (slot->absent)
			{
				db->state = LDB_ABSENT;
				slot->absent = false;
			}
			probe = slot->probe;
			hold_until = slot->hold_until;
			/* a scheduler this launcher did not start (it was restarted) */
			running_elsewhere = slot->pid != 0 && kill(slot->pid, 0) == 0;
			if (slot->pid == 0 && !probe && hold_until <= now &&
				(!slot->no_worker_slot || !db->seen))
				slot->dboid = InvalidOid;
		}
		LWLockRelease(schedq_shm->lock);

		if (!db->seen)
		{
			/* dropped: its scheduler, if any, is gone with it */
			if (db->handle != NULL)
				pfree(db->handle);
			schedq_metrics_forget(db->dboid);
			hash_search(launcher_dbs, &db->dboid, HASH_REMOVE, NULL);
			continue;
		}
		if (running_elsewhere)
			continue;
		if (db->state == LDB_ABSENT && !probe)
			continue;
		if (hold_until > now)
		{
			next = Min(next, hold_until);
			continue;
		}
		if (db->state == LDB_STOPPED &&
			now < db->stopped_at + (int64) SCHEDQ_RESTART_DELAY_MS * 1000)
		{
			next = Min(next,
					   db->stopped_at + (int64) SCHEDQ_RESTART_DELAY_MS * 1000);
			continue;
		}
		if (!launcher_start_scheduler(db))
			continue;
		*started = true;
		if (probe)
		{
			LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
			slot = schedq_databases_slot(db->dboid, false);
			if (slot != NULL)
				slot->probe = false;
			LWLockRelease(schedq_shm->lock);
		}
	}
	return next;
}

/*
 * Main of the launcher.
 */
void
schedq_launcher_main(Datum main_arg)
{
	HASHCTL	   ctl;
	SchedqPace pace = { 0 };

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("schedq launcher");

	before_shmem_exit(launcher_exit, (Datum) 0);
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	schedq_shm->launcher_pid = MyProcPid;
	schedq_shm->launcher_latch = MyLatch;
	LWLockRelease(schedq_shm->lock);

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(LauncherDb);
	ctl.hcxt = TopMemoryContext;
	launcher_dbs = hash_create("schedq launcher databases", 16, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	for (;;)
	{
		TimestampTz next;
		bool		started = false;
		long		timeout_ms;

		launcher_scan_databases();
		next = launcher_reconcile(&started);
		timeout_ms =
			schedq_background_pace_ms(&pace, next, started, LAUNCHER_SCAN_MS);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout_ms, SCHEDQ_WAIT_EVENT("SchedqLauncherMain"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}

/*
 * Register the launcher; called from _PG_init while preloading.
 */
void
schedq_launcher_register(void)
{
	BackgroundWorker worker;

	schedq_background_fill(&worker, "schedq_launcher_main", "schedq launcher",
						   InvalidOid);
	/* registered with the postmaster, which restarts it */
	worker.bgw_restart_time = 1;
	worker.bgw_notify_pid = 0;
	RegisterBackgroundWorker(&worker);
}

/* This transaction runs CREATE EXTENSION schedq. */
static void
launcher_probe_commit(void)
{
	SchedqDatabase *db;

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	db = schedq_databases_slot(MyDatabaseId, true);
	if (db != NULL)
	{
		db->probe = true;
		db->has_schedq = true;
	}
	if (schedq_shm->launcher_latch != NULL)
		SetLatch(schedq_shm->launcher_latch);
	LWLockRelease(schedq_shm->lock);
}

static void
launcher_probe_reset(void)
{
}

static SchedqCommitEffect launcher_probe_effect = {
	.commit = launcher_probe_commit, .reset = launcher_probe_reset
};

/*
 * After commit, have the launcher start a scheduler in this database
 * (it is not watching databases without schedq).
 */
void
schedq_launcher_probe_at_commit(void)
{
	schedq_commit_join(&launcher_probe_effect);
}

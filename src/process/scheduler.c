/*-------------------------------------------------------------------------
 * process/scheduler.c
 *	  The per-database scheduler: one background worker per database with
 *	  schedq installed, started by the launcher; and
 *	  schedq.scheduler_status(), which shows what each is doing.
 *
 * Each iteration is one transaction (process/background.c's bracket): check that
 * schedq is still installed (exit for good if not), then run the passes:
 * the periodic pass (due ticks fire first: they are the most
 * time-sensitive), the promotion pass in its two steps (gate events, then
 * due tasks), a reaper pass when one is due, and find the next due time.
 * Then sleep on the latch until the earliest of: the next pending run_at,
 * the next periodic tick, the next reaper pass, schedq.promote_interval
 * (the fallback).  Commits that create work set the latch (shared/wake.c), so a
 * submit is promoted at once and a task due in a second is promoted
 * within milliseconds of its run_at.  Each iteration also counts the SQL
 * tasks ready to run; between iterations it starts an executor for each
 * one no idle executor will take (process/sqlexec.c), and says so when it
 * cannot for want of background worker slots.  A SQL task made available
 * while no executor waits sets its latch (shared/wake.c), and so does an
 * executor's exit (the postmaster tells the process that started it).
 *
 * Nothing another session does can stop it:
 *	- each pass runs in a subtransaction of its own.  One that fails (a
 *	  lock timeout on a row someone holds in an idle transaction -- the
 *	  background processes run with a lock_timeout, process/background.c --, a deadlock with DROP
 *	  EXTENSION, a bug) is rolled back and reported as a WARNING, and the
 *	  other passes go on; the failed one is tried again after a back-off
 *	  that doubles from PASS_BACKOFF_FIRST_MS to PASS_BACKOFF_MAX_MS.  An
 *	  error outside the passes rolls the iteration back, and the next one
 *	  comes after the same kind of back-off.  The scheduler does not exit
 *	  on an error: the launcher would start it again a second later, into
 *	  the same error.
 *	- it never waits for the promotion lock (pass/promote.c): while a session
 *	  that ran _promote_once() keeps its transaction open, promotion is
 *	  skipped and tried again after PROMOTE_BUSY_RETRY_MS.
 *	- its locks are out of any SQL function's reach (shared/locks.c).
 *	- its loop keeps a pace (process/background.c): an iteration that did nothing
 *	  sleeps at least SCHEDQ_IDLE_FLOOR_MS, and backs off when something
 *	  it thought due could not be done, so a due time that stays due (a
 *	  schedule row locked by someone, say) cannot make it spin.
 *
 * It stands aside while the server is read-only: default_transaction_read_only
 * is on (pg_auto_failover fences a new primary so for a while after a
 * failover), or a pass was refused with 25006 (read_only_sql_transaction)
 * however the server came to refuse writes.  Then no pass runs and no SQL
 * executor starts; the database's slot is marked read-only, which sends
 * the waiting claims away with 25006 and the idle executors home
 * (shared/wake.c, process/sqlexec.c); scheduler_status() shows
 * 'read-only', metrics() counts the time in read_only_ms, and the log
 * says so once on the way in and once on the way out.  A reload sets the
 * latch, so the iteration after default_transaction_read_only goes off
 * resumes the passes; after a refusal, an iteration tries again each
 * schedq.promote_interval, silently while it is refused.  A
 * default_transaction_read_only of the database (ALTER DATABASE ... SET)
 * is read at connection only: the scheduler leaves when it is reset, to
 * be started again (scheduler_check_database_setting).
 *
 * Only one scheduler acts per database: it holds a session-level lock
 * (process/background.h) for its lifetime, and a second one exits.  Every pass is
 * idempotent.
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
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "process/sqlexec.h"
#include "shared/isolate.h"
#include "pass/periodic.h"
#include "pass/promote.h"
#include "pass/reaper.h"
#include "pass/shards.h"
#include "process/scheduler.h"
#include "base/settings.h"
#include "shared/databases.h"
#include "shared/shm.h"
#include "store/task.h"
#include "store/task_claim.h"
#include "base/version.h"
#include "process/background.h"
#include "shared/locks.h"
#include "shared/metrics.h"
#include "shared/wake.h"

/* The wait before a failed pass (or iteration) runs again: doubling. */
#define PASS_BACKOFF_FIRST_MS 100
#define PASS_BACKOFF_MAX_MS	  10000
/* The wait before promotion is tried again while its lock is taken. */
#define PROMOTE_BUSY_RETRY_MS 100

/* What one iteration did, and when the next is due. */
typedef struct SchedulerTick
{
	TimestampTz now;		  /* the time the passes run at */
	TimestampTz wake;		  /* when the next iteration is due */
	bool		more;		  /* a batch was full: go again at once */
	int			done;		  /* ticks fired, tasks promoted, attempts reaped */
	bool		promote_busy; /* another session holds the promotion lock */
	int			sql_ready;	  /* SQL tasks the executors could claim now */
	bool		refused;	  /* a write was refused: the server is read-only */
	bool		node;		  /* schedq.task is distributed (pass/shards.c) */
	bool		became_node;  /* it became so meanwhile: skip the rest */
} SchedulerTick;

/* One pass of an iteration, run in a subtransaction of its own. */
typedef void (*SchedulerStep)(SchedulerTick *tick);

typedef struct SchedulerPass
{
	const char	 *what; /* for messages */
	SchedulerStep step;
	TimestampTz	  retry_at;	  /* after a failure: not before this */
	int			  backoff_ms; /* the wait after its last failure; 0: none */
} SchedulerPass;

static SchedqDatabase *scheduler_slot = NULL;
static char			  *scheduler_dbname = NULL;

/*
 * Loop state that an error thrown out of an iteration must not lose (so
 * not locals of the loop, which longjmp may leave indeterminate).
 */
static TimestampTz scheduler_next_reap = 0;
static bool		   scheduler_unpark_needed = true;
static int		   scheduler_backoff_ms = 0;		  /* of failed iterations */
static bool		   scheduler_executors_short = false; /* said so already */
static bool		   scheduler_said_distributed = false; /* said so already */

/*
 * While the server is read-only: since when (0: it is not), up to when
 * that time is counted in read_only_ms, and the last refusal's message.
 */
static TimestampTz scheduler_read_only_since = 0;
static TimestampTz scheduler_read_only_counted = 0;
static char		   scheduler_refusal[256];

/*
 * Publish what the scheduler does.  While the server is read-only, an
 * iteration that tries whether writes are accepted again shows no state
 * of its own: 'read-only' stays until one succeeds.
 */
static void
scheduler_set_state(SchedqSchedulerState state)
{
	if (scheduler_read_only_since != 0 && state != SCHEDULER_DISABLED)
		state = SCHEDULER_READ_ONLY;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->state = state;
	if (state == SCHEDULER_IDLE || state == SCHEDULER_DISABLED ||
		state == SCHEDULER_READ_ONLY)
		scheduler_slot->last_tick = GetCurrentTimestamp();
	LWLockRelease(schedq_shm->lock);
}

/* Count the time read-only up to now in read_only_ms, whole ms at a time. */
static void
scheduler_count_read_only(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		ms;

	if (scheduler_read_only_since == 0 || now <= scheduler_read_only_counted)
		return;
	ms = (now - scheduler_read_only_counted) / 1000;
	schedq_metrics_count(METRIC_READ_ONLY_MS, (uint64) ms);
	scheduler_read_only_counted += ms * 1000;
}

/*
 * The server is read-only (why: for the log): stand aside, saying so
 * once.  The database's slot is marked, and every waiting claim of the
 * database woken to see the mark (shared/wake.c).
 */
static void
scheduler_read_only_enter(const char *why)
{
	if (scheduler_read_only_since != 0)
	{
		scheduler_count_read_only();
		scheduler_set_state(SCHEDULER_READ_ONLY);
		return;
	}
	scheduler_read_only_since = GetCurrentTimestamp();
	scheduler_read_only_counted = scheduler_read_only_since;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->read_only = true;
	LWLockRelease(schedq_shm->lock);
	scheduler_set_state(SCHEDULER_READ_ONLY);
	schedq_wake_all_claimers_now();
	ereport(LOG,
			errmsg("schedq scheduler: the server is read-only (%s); database "
				   "\"%s\" runs no pass and starts no SQL executor until it "
				   "is writable",
				   why, scheduler_dbname));
}

/* The server accepts writes again (or the scheduler is disabled). */
static void
scheduler_read_only_leave(void)
{
	if (scheduler_read_only_since == 0)
		return;
	scheduler_count_read_only();
	ereport(LOG, errmsg("schedq scheduler: the server is no longer read-only; "
						"database \"%s\" resumes after %.1f s",
						scheduler_dbname,
						(double) (GetCurrentTimestamp() -
								  scheduler_read_only_since) /
							USECS_PER_SEC));
	scheduler_read_only_since = 0;
	/* the reaper first: leases expired meanwhile */
	scheduler_next_reap = 0;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->read_only = false;
	LWLockRelease(schedq_shm->lock);
}

/*
 * Is default_transaction_read_only on only by a setting of this database
 * or this role (ALTER DATABASE ... SET, ALTER ROLE ... SET) that is gone
 * now?  Those are read once, at connection, and no reload reads them
 * again: the scheduler then leaves, and the launcher starts another,
 * which reads them anew.  Runs a transaction of its own.
 */
static void
scheduler_check_database_setting(void)
{
	bool isnull;
	bool gone;

	schedq_background_tick_begin("schedq scheduler: read-only");
	if (SPI_execute(
			"SELECT s.source IN ('database', 'user', 'database user')"
			"   AND NOT EXISTS (SELECT FROM pg_catalog.pg_db_role_setting d,"
			"                   unnest(d.setconfig) c"
			"     WHERE d.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database"
			"                                  WHERE datname = current_database()))"
			"       AND d.setrole IN (0, (SELECT oid FROM pg_catalog.pg_roles"
			"                              WHERE rolname = session_user))"
			"       AND c LIKE 'default\\_transaction\\_read\\_only=%'"
			"       AND split_part(c, '=', 2)::boolean)"
			"  FROM pg_catalog.pg_settings s"
			" WHERE s.name = 'default_transaction_read_only'",
			true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read default_transaction_read_only");
	gone = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	schedq_background_tick_commit();
	if (!gone || isnull)
		return;
	scheduler_read_only_leave();
	ereport(DEBUG1,
			errmsg("schedq scheduler exiting: default_transaction_read_only "
				   "of database \"%s\" was reset; the launcher starts "
				   "another",
				   scheduler_dbname));
	proc_exit(0);
}

static void
scheduler_exit(int code, Datum arg)
{
	if (scheduler_slot == NULL)
		return;
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	if (scheduler_slot->pid == MyProcPid)
	{
		scheduler_slot->pid = 0;
		scheduler_slot->latch = NULL;
		scheduler_slot->state = SCHEDULER_NONE;
		scheduler_slot->sql_workers = 0;
		scheduler_slot->sql_workers_wanted = 0;
		scheduler_slot->read_only = false;
	}
	LWLockRelease(schedq_shm->lock);
}

/*
 * Leave for good: schedq is not installed in this database (any more).
 * The launcher starts a scheduler here again only after CREATE EXTENSION.
 */
/*
 * Say once, in the log, that this database's schedq is older than the
 * library (the scheduler works on it all the same: it uses only what every
 * version has), and once again when an ALTER EXTENSION UPDATE has brought
 * it level.  Called in each iteration's transaction.
 */
static void
scheduler_check_version(void)
{
	static int logged = 0;
	int		   installed = schedq_version_installed();

	if (installed == logged || installed <= 0)
		return;
	if (installed < SCHEDQ_LIBRARY_VERSION)
		ereport(
			LOG,
			errmsg(
				"schedq scheduler: database \"%s\" has schedq %s, older than the library's %s; working on it as it is",
				scheduler_dbname, schedq_version_string(installed),
				schedq_version_string(SCHEDQ_LIBRARY_VERSION)),
			errhint("ALTER EXTENSION schedq UPDATE"));
	else if (logged != 0)
		ereport(LOG,
				errmsg("schedq scheduler: database \"%s\" now has schedq %s",
					   scheduler_dbname, schedq_version_string(installed)));
	logged = installed;
}

static void
scheduler_not_installed(void)
{
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->absent = true;
	scheduler_slot->has_schedq = false;
	LWLockRelease(schedq_shm->lock);
	ereport(
		LOG,
		errmsg(
			"schedq scheduler exiting: extension \"schedq\" is not installed in database \"%s\"",
			scheduler_dbname));
	proc_exit(0);
}

/* The next wait of a back-off: the first, or twice the last, at most the most. */
static int
scheduler_backoff(int last_ms)
{
	return last_ms == 0 ? PASS_BACKOFF_FIRST_MS :
						  Min(last_ms * 2, PASS_BACKOFF_MAX_MS);
}

/* Every task parked: gate events are unlogged, and a crash may lose some. */
static void
step_unpark(SchedulerTick *tick)
{
	if (tick->node)
		schedq_shards_forget_all(); /* each is unparked as it is entered */
	else
		schedq_promote_unpark_all();
}

/* Is schedq.task distributed (by Citus)?  Said once (pass/shards.c). */
static bool
scheduler_distributed(void)
{
	if (!schedq_task_distributed_locked())
		return false;
	if (!scheduler_said_distributed)
		ereport(LOG,
				errmsg("schedq scheduler: schedq.task is distributed by Citus; "
					   "in database \"%s\" the scheduler promotes and reaps "
					   "the tasks of the shards placed on this node",
					   scheduler_dbname),
				errhint("See docs/scale-out.md#the-scheduler-on-each-node."));
	scheduler_said_distributed = true;
	return true;
}

static void
step_periodic(SchedulerTick *tick)
{
	tick->done += schedq_periodic_pass(tick->now, &tick->more);
}

static void
step_events(SchedulerTick *tick)
{
	if (!schedq_promote_try_lock())
	{
		tick->promote_busy = true;
		return;
	}
	tick->done += tick->node ?
					  schedq_shards_promote_events(tick->now, &tick->more) :
					  schedq_promote_events(tick->now, &tick->more);
}

static void
step_promote(SchedulerTick *tick)
{
	if (!schedq_promote_try_lock())
	{
		tick->promote_busy = true;
		return;
	}
	tick->done += tick->node ?
					  schedq_shards_promote_due(tick->now, &tick->more) :
					  schedq_promote_due(tick->now, &tick->more);
}

static void
step_reap(SchedulerTick *tick)
{
	tick->done += tick->node ? schedq_shards_reap(tick->now, &tick->more) :
							   schedq_reaper_pass(tick->now, &tick->more);
}

/* How many SQL tasks wait for an executor, up to the most there may be. */
static void
step_sql_ready(SchedulerTick *tick)
{
	tick->sql_ready = tick->node ?
						  schedq_shards_sql_ready(schedq_sql_workers) :
						  schedq_task_claim_sql_ready(schedq_sql_workers);
}

static void
step_next_due(SchedulerTick *tick)
{
	/* Min() evaluates its arguments twice: query once */
	TimestampTz next_due = tick->node ? schedq_shards_next_due(tick->now) :
										schedq_promote_next_due(tick->now);
	TimestampTz next_tick = schedq_periodic_next_due(tick->now);

	tick->wake = Min(tick->wake, Min(next_due, next_tick));
}

static SchedulerPass pass_unpark = { "unparking every task", step_unpark };
static SchedulerPass pass_periodic = { "the periodic pass", step_periodic };
static SchedulerPass pass_events = { "the promotion pass (gate events)",
									 step_events };
static SchedulerPass pass_promote = { "the promotion pass (due tasks)",
									  step_promote };
static SchedulerPass pass_reap = { "the reaper pass", step_reap };
static SchedulerPass pass_next = { "finding the next due time", step_next_due };
static SchedulerPass pass_sql = { "counting the SQL tasks ready to run",
								  step_sql_ready };

/*
 * Run a pass in a subtransaction, unless it is backing off after a
 * failure.  On error, undo it, report the error as a WARNING and back
 * off; the caller goes on with the other passes.  Returns whether it ran
 * and succeeded.  What the pass adds to *tick counts only if it did.
 */
typedef struct SchedulerStepArg
{
	SchedulerPass *pass;
	SchedulerTick *result;
} SchedulerStepArg;

static void
scheduler_step(void *arg)
{
	SchedulerStepArg *s = arg;

	s->pass->step(s->result);
}

static bool
scheduler_try(SchedulerPass *pass, SchedulerTick *tick)
{
	SchedulerTick	 result = *tick;
	SchedulerStepArg arg = { pass, &result };
	ErrorData		*edata;

	/* once a write was refused, the iteration's other passes would be too */
	if (tick->refused || tick->became_node)
		return false;
	if (tick->now < pass->retry_at)
	{
		tick->wake = Min(tick->wake, pass->retry_at);
		return false;
	}

	edata = schedq_isolate_subxact(scheduler_step, &arg);
	if (edata == NULL)
	{
		*tick = result;
		pass->backoff_ms = 0;
		return true;
	}
	if (edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
	{
		/* not the pass's fault: the server is read-only, no WARNING */
		tick->refused = true;
		strlcpy(scheduler_refusal, edata->message, sizeof(scheduler_refusal));
		FreeErrorData(edata);
		return false;
	}
	if (!tick->node && schedq_task_distributed())
	{
		/* distributed meanwhile (a worker's metadata sync takes no lock) */
		tick->became_node = true;
		tick->more = true;
		FreeErrorData(edata);
		return false;
	}
	if (tick->node)
		schedq_shards_forget_all(); /* its unparks may be rolled back */
	pass->backoff_ms = scheduler_backoff(pass->backoff_ms);
	pass->retry_at = GetCurrentTimestamp() + (int64) pass->backoff_ms * 1000;
	tick->wake = Min(tick->wake, pass->retry_at);
	ereport(WARNING, errcode(edata->sqlerrcode),
			errmsg("schedq scheduler: %s failed: %s", pass->what,
				   edata->message),
			edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			errhint("It is tried again in %d ms; the other passes go on.",
					pass->backoff_ms));
	FreeErrorData(edata);
	return false;
}

/*
 * One iteration: its transaction and its passes.
 */
static void
scheduler_iterate(SchedulerTick *tick)
{
	bool unparked = false;

	scheduler_set_state(SCHEDULER_PROMOTING);
	schedq_background_tick_begin("schedq scheduler: promoting");
	if (!OidIsValid(get_extension_oid("schedq", true)))
		scheduler_not_installed();
	scheduler_check_version();
	tick->node = scheduler_distributed();
	if (scheduler_unpark_needed)
		unparked = scheduler_try(&pass_unpark, tick);
	(void) scheduler_try(&pass_periodic, tick); /* a cluster: coordinator */
	(void) scheduler_try(&pass_events, tick);
	(void) scheduler_try(&pass_promote, tick);
	if (tick->promote_busy)
		tick->wake =
			Min(tick->wake, tick->now + (int64) PROMOTE_BUSY_RETRY_MS * 1000);
	if (tick->now >= scheduler_next_reap)
	{
		scheduler_set_state(SCHEDULER_REAPING);
		(void) scheduler_try(&pass_reap, tick);
		scheduler_next_reap =
			tick->now + (int64) schedq_reaper_interval_ms * 1000;
	}
	tick->wake = Min(tick->wake, scheduler_next_reap);
	(void) scheduler_try(&pass_next, tick);
	if (schedq_sql_workers > 0)
		(void) scheduler_try(&pass_sql, tick);
	schedq_background_tick_commit();
	if (unparked)
		scheduler_unpark_needed = false;
	scheduler_set_state(SCHEDULER_IDLE);
}

/*
 * An error escaped an iteration (outside its passes): roll the iteration
 * back, report the error as a WARNING, and return how long to wait before
 * the next one.  A refused write (25006) is no failure: it sets
 * tick->refused, and the next iteration comes at the usual time.  Called
 * from PG_CATCH.
 */
static int
scheduler_recover(MemoryContext cxt, SchedulerTick *tick)
{
	ErrorData *edata;

	HOLD_INTERRUPTS();
	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	RESUME_INTERRUPTS();
	pgstat_report_activity(STATE_IDLE, NULL);
	MemoryContextSwitchTo(cxt);

	if (edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
	{
		tick->refused = true;
		strlcpy(scheduler_refusal, edata->message, sizeof(scheduler_refusal));
		FreeErrorData(edata);
		return schedq_promote_interval_ms;
	}
	scheduler_backoff_ms = scheduler_backoff(scheduler_backoff_ms);
	schedq_shards_forget_all(); /* the iteration's unparks were undone */
	ereport(WARNING, errcode(edata->sqlerrcode),
			errmsg("schedq scheduler: an iteration failed: %s", edata->message),
			edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			errhint("The next one comes in %d ms.", scheduler_backoff_ms));
	FreeErrorData(edata);
	scheduler_set_state(SCHEDULER_IDLE);
	return scheduler_backoff_ms;
}

/*
 * Start the SQL executors the ready SQL tasks need, publish how many run
 * and how many are wanted, and say so, once, when some cannot start for
 * want of a background worker slot.
 */
static void
scheduler_keep_executors(int sql_ready)
{
	int	 wanted;
	bool no_slot;
	int	 started = schedq_sqlexec_keep(sql_ready, &wanted, &no_slot);

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->sql_workers = started;
	scheduler_slot->sql_workers_wanted = wanted;
	LWLockRelease(schedq_shm->lock);

	if (no_slot && !scheduler_executors_short)
	{
		ereport(
			WARNING, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			errmsg(
				"could not start a schedq SQL executor for database \"%s\": no background worker slot is free",
				scheduler_dbname),
			errdetail("%d of its %d SQL executors are running.", started,
					  wanted),
			schedq_background_slots_errhint());
		scheduler_executors_short = true;
	}
	else if (scheduler_executors_short && started >= wanted)
	{
		ereport(LOG,
				errmsg("the schedq SQL executors database \"%s\" wants are "
					   "running (%d)",
					   scheduler_dbname, started));
		scheduler_executors_short = false;
	}
}

/*
 * Main of the scheduler worker; main_arg is the database OID.
 */
void
schedq_scheduler_main(Datum main_arg)
{
	Oid			  dboid = DatumGetObjectId(main_arg);
	MemoryContext loop_cxt;
	LOCKTAG		  tag;
	SchedqPace	  pace = { 0 };

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("schedq scheduler");
	schedq_background_settings();

	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot = schedq_databases_slot(dboid, true);
	LWLockRelease(schedq_shm->lock);
	if (scheduler_slot == NULL)
		ereport(ERROR, errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("schedq supports at most %d databases",
					   SCHEDQ_MAX_DATABASES));

	/* One scheduler per database: a second one leaves at once. */
	schedq_locks_tag(&tag, SCHEDQ_LOCK_SCHEDULER);
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
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->pid = MyProcPid;
	scheduler_slot->latch = MyLatch;
	scheduler_slot->state = SCHEDULER_STARTING;
	scheduler_slot->absent = false;
	scheduler_slot->read_only = false;
	scheduler_slot->sql_workers = 0;
	scheduler_slot->sql_workers_wanted = 0;
	LWLockRelease(schedq_shm->lock);

	schedq_background_tick_begin("schedq scheduler: starting");
	/* its name, for messages: a RENAME stops the scheduler first */
	scheduler_dbname = get_database_name(dboid);
	scheduler_dbname =
		MemoryContextStrdup(TopMemoryContext,
							scheduler_dbname ? scheduler_dbname : "?");
	if (!OidIsValid(get_extension_oid("schedq", true)))
		scheduler_not_installed();
	/* a CREATE EXTENSION's request to start one is answered */
	LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
	scheduler_slot->probe = false;
	scheduler_slot->has_schedq = true;
	LWLockRelease(schedq_shm->lock);
	{
		/* if this fails, the iterations try again */
		SchedulerTick start = { .now = GetCurrentTimestamp(),
								.node = scheduler_distributed() };
		bool		  unparked =
			!DefaultXactReadOnly && scheduler_try(&pass_unpark, &start);

		schedq_background_tick_commit();
		scheduler_unpark_needed = !unparked;
	}

	loop_cxt = AllocSetContextCreate(TopMemoryContext, "schedq scheduler loop",
									 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		SchedulerTick tick;
		long		  timeout_ms;

		MemoryContextSwitchTo(loop_cxt);
		memset(&tick, 0, sizeof(tick));
		tick.now = GetCurrentTimestamp();
		tick.wake = tick.now + (int64) schedq_promote_interval_ms * 1000;
		if (!schedq_enabled)
		{
			scheduler_read_only_leave();
			scheduler_set_state(SCHEDULER_DISABLED);
		}
		else if (DefaultXactReadOnly)
		{
			scheduler_read_only_enter("default_transaction_read_only is on");
			PG_TRY();
			{
				scheduler_check_database_setting();
			}
			PG_CATCH();
			{
				(void) scheduler_recover(loop_cxt, &tick);
			}
			PG_END_TRY();
		}
		else
		{
			PG_TRY();
			{
				scheduler_iterate(&tick);
				scheduler_backoff_ms = 0;
			}
			PG_CATCH();
			{
				int backoff_ms = scheduler_recover(loop_cxt, &tick);

				tick.more = false;
				tick.done = 0;
				tick.wake = GetCurrentTimestamp() + (int64) backoff_ms * 1000;
			}
			PG_END_TRY();
			MemoryContextSwitchTo(loop_cxt);
			if (tick.refused)
			{
				/* nothing it did counts; try again in a while */
				memset(&tick, 0, sizeof(tick));
				tick.wake = GetCurrentTimestamp() +
							(int64) schedq_promote_interval_ms * 1000;
				scheduler_read_only_enter(
					psprintf("a write was refused: %s", scheduler_refusal));
			}
			else
				scheduler_read_only_leave();
			if (scheduler_read_only_since == 0 &&
				scheduler_slot->state == SCHEDULER_READ_ONLY)
				scheduler_set_state(SCHEDULER_IDLE);
		}
		MemoryContextSwitchTo(loop_cxt);
		MemoryContextReset(loop_cxt);
		scheduler_keep_executors(tick.sql_ready);

		/* at once only after progress: a full batch was processed */
		timeout_ms =
			tick.more ?
				0 :
				schedq_background_pace_ms(&pace, tick.wake, tick.done > 0,
										  schedq_promote_interval_ms);
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

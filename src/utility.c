/*-------------------------------------------------------------------------
 * utility.c
 *	  The utility hook: tell the launcher and the schedulers about the
 *	  commands that concern them.
 *
 *	- CREATE EXTENSION schedq: after commit, ask the launcher to start a
 *	  scheduler in this database (it is not watching databases without
 *	  schedq).
 *	- DROP EXTENSION schedq: after commit, wake this database's scheduler,
 *	  which finds the extension gone and exits for good.
 *	- DROP DATABASE (with or without FORCE), ALTER DATABASE ... RENAME TO,
 *	  ALTER DATABASE ... SET TABLESPACE and CREATE DATABASE ... TEMPLATE
 *	  need a database nobody is connected to: before running them, hold the database's slot (so the
 *	  launcher starts nothing there), stop its scheduler and wait for it to
 *	  exit.  Afterwards the hold is shortened; if the database still exists
 *	  the launcher starts a scheduler again.  (PostgreSQL 19 offers
 *	  BGWORKER_INTERRUPTIBLE for this; until then the hook does it.)
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "executor.h"
#include "launcher.h"
#include "shmem.h"
#include "utility.h"
#include "wake.h"

/* How long DROP DATABASE waits for the scheduler to leave. */
#define HOOK_STOP_WAIT_MS 10000
/* How long the launcher keeps away from a database being dropped. */
#define HOOK_HOLD_MS 60000

static ProcessUtility_hook_type prev_utility_hook = NULL;

/*
 * Hold a database's slot until `until` and stop its scheduler, waiting
 * for it to exit.
 */
static void
hook_stop_scheduler(Oid dboid, TimestampTz until)
{
	TimestampTz give_up =
		GetCurrentTimestamp() + (int64) HOOK_STOP_WAIT_MS * 1000;

	for (;;)
	{
		SchedqDatabase *db;
		pid_t			pid = 0;
		bool			executors;

		LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
		db = schedq_database_slot(dboid, false);
		if (db != NULL)
		{
			db->hold_until = until;
			pid = db->pid;
		}
		LWLockRelease(schedq_shared->lock);
		/* its SQL executors are connected to it too */
		executors = schedq_executors_stop(dboid);
		if ((pid == 0 && !executors) || GetCurrentTimestamp() >= give_up)
			return;
		if (pid != 0)
			(void) kill(pid, SIGTERM);
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 SCHEDQ_WAIT_EVENT("SchedqStopScheduler"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

static bool
hook_names_schedq(List *objects)
{
	ListCell *lc;

	foreach (lc, objects)
	{
		Node *obj = lfirst(lc);

		if (IsA(obj, String) && strcmp(strVal(obj), "schedq") == 0)
			return true;
	}
	return false;
}

/*
 * The database a command needs to itself, or InvalidOid.
 */
static Oid
hook_exclusive_database(Node *parsetree)
{
	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			return get_database_oid(((DropdbStmt *) parsetree)->dbname, true);
		case T_CreatedbStmt:
		{
			ListCell *lc;

			/* the template is copied only while nobody is connected */
			foreach (lc, ((CreatedbStmt *) parsetree)->options)
			{
				DefElem *opt = lfirst(lc);

				if (strcmp(opt->defname, "template") == 0)
					return get_database_oid(defGetString(opt), true);
			}
		}
		break;
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				return get_database_oid(((RenameStmt *) parsetree)->subname,
										true);
			break;
		case T_AlterDatabaseStmt:
		{
			AlterDatabaseStmt *stmt = (AlterDatabaseStmt *) parsetree;
			ListCell		  *lc;

			foreach (lc, stmt->options)
				if (strcmp(((DefElem *) lfirst(lc))->defname, "tablespace") ==
					0)
					return get_database_oid(stmt->dbname, true);
		}
		break;
		default:
			break;
	}
	return InvalidOid;
}

static void
schedq_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			   ProcessUtilityContext context, ParamListInfo params,
			   QueryEnvironment *queryEnv, DestReceiver *dest,
			   QueryCompletion *qc)
{
	Node *parsetree = pstmt->utilityStmt;
	Oid	  exclusive_db = InvalidOid;

	if (schedq_shared != NULL)
	{
		exclusive_db = hook_exclusive_database(parsetree);
		if (OidIsValid(exclusive_db))
			hook_stop_scheduler(exclusive_db, GetCurrentTimestamp() +
												  (int64) HOOK_HOLD_MS * 1000);

		if (IsA(parsetree, CreateExtensionStmt) &&
			strcmp(((CreateExtensionStmt *) parsetree)->extname, "schedq") == 0)
		{
			schedq_launcher_probe_at_commit();
		}
		if (IsA(parsetree, DropStmt) &&
			((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION &&
			hook_names_schedq(((DropStmt *) parsetree)->objects))
			schedq_wake_scheduler_at_commit();
	}

	PG_TRY();
	{
		if (prev_utility_hook)
			prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
							  queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		/* let the launcher come back soon, if the database is still there */
		if (OidIsValid(exclusive_db))
		{
			SchedqDatabase *db;

			LWLockAcquire(schedq_shared->lock, LW_EXCLUSIVE);
			db = schedq_database_slot(exclusive_db, false);
			if (db != NULL)
				db->hold_until = GetCurrentTimestamp() + USECS_PER_SEC;
			LWLockRelease(schedq_shared->lock);
		}
	}
	PG_END_TRY();
}

/*
 * Install the hook; called from _PG_init.
 */
void
schedq_utility_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = schedq_utility;
}

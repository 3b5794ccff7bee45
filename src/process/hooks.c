/*-------------------------------------------------------------------------
 * process/hooks.c
 *	  The utility hook: tell the launcher and the schedulers about the
 *	  commands that concern them.
 *
 *	- CREATE EXTENSION schedq (or another that installs it, CASCADE):
 *	  after commit, ask the launcher to start a scheduler in this database
 *	  (it is not watching databases without schedq); and say at once, with
 *	  a WARNING, when no background worker slot is left for it
 *	  (process/background.c).
 *	- DROP EXTENSION schedq: after commit, wake this database's scheduler,
 *	  which finds the extension gone and exits for good.
 *	- DROP EXTENSION schedq_cron: first delete its jobs, whose trigger
 *	  removes their schedq periodic tasks (they would fire on otherwise).
 *	- DROP DATABASE (with or without FORCE), ALTER DATABASE ... RENAME TO,
 *	  ALTER DATABASE ... SET TABLESPACE and CREATE DATABASE ... TEMPLATE
 *	  need a database nobody is connected to: before running them, hold
 *	  the database's slot (so the launcher starts nothing there), stop its
 *	  scheduler and its SQL executors and wait for them to exit.
 *	  Afterwards the hold is shortened; if the database still exists the
 *	  launcher starts a scheduler again.  (PostgreSQL 19 offers
 *	  BGWORKER_INTERRUPTIBLE for this; until then the hook does it.)
 *
 * The processes are stopped only when the command will go ahead: the hook
 * runs before PostgreSQL checks anything, so it makes PostgreSQL 15's own
 * checks of each command first (dbcommands.c: dropdb, createdb,
 * RenameDatabase, movedb; PreventInTransactionBlock) -- the database
 * exists; the user owns it (for a template, or has the right to copy it);
 * has CREATEDB where the command needs it; the command is not inside a
 * transaction block or a function where it cannot run; the database is
 * not the current one where that is refused; a new name is free -- and
 * leaves any failing command to PostgreSQL, which raises its own error.
 * Otherwise any role could stop a database's processes, again and again,
 * with a command bound to fail.  Only what can still fail after these
 * checks (other sessions connected, an I/O error) stops the processes of a
 * database for nothing; the launcher starts them again within seconds.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_tablespace.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "commands/tablespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "replication/slot.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "base/compat.h"
#include "shared/sqlslots.h"
#include "process/launcher.h"
#include "shared/databases.h"
#include "shared/shm.h"
#include "process/hooks.h"
#include "process/background.h"
#include "shared/wake.h"

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

		LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
		db = schedq_databases_slot(dboid, false);
		if (db != NULL)
		{
			db->hold_until = until;
			pid = db->pid;
		}
		LWLockRelease(schedq_shm->lock);
		/* its SQL executors are connected to it too */
		executors = schedq_sqlslots_stop(dboid);
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
hook_names_extension(List *objects, const char *name)
{
	ListCell *lc;

	foreach (lc, objects)
	{
		Node *obj = lfirst(lc);

		if (IsA(obj, String) && strcmp(strVal(obj), name) == 0)
			return true;
	}
	return false;
}

/*
 * DROP EXTENSION schedq_cron by a superuser: its jobs' schedq periodic
 * tasks go first (deleting the jobs runs its trigger, which unschedules
 * each), in the same transaction as the drop.
 */
static void
hook_drop_cron_jobs(void)
{
	if (!OidIsValid(get_extension_oid("schedq_cron", true)) || !superuser())
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("DELETE FROM cron.job", false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not remove the jobs of schedq_cron");
	SPI_finish();
}

/*
 * Could a command that PreventInTransactionBlock() guards run here?
 * (Its conditions in PostgreSQL 15, without raising its errors.)
 */
static bool
hook_may_run_outside_block(ProcessUtilityContext context)
{
#ifdef XACT_FLAGS_PIPELINING
	/* in a pipeline that started an implicit transaction (newer minors) */
	if ((MyXactFlags & XACT_FLAGS_PIPELINING) != 0)
		return false;
#endif
	return context == PROCESS_UTILITY_TOPLEVEL && !IsTransactionBlock() &&
		   !IsSubTransaction();
}

/*
 * May the current role create databases?  What have_createdb_privilege
 * says; asked of pg_authid here because not every minor release exports
 * that function (15.18 does not, 15.20 does), and a library built against
 * one must load in the other.
 */
static bool
utility_has_createdb(void)
{
	HeapTuple tuple;
	bool	  createdb = false;

	if (superuser())
		return true;
	tuple = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (HeapTupleIsValid(tuple))
	{
		createdb = ((Form_pg_authid) GETSTRUCT(tuple))->rolcreatedb;
		ReleaseSysCache(tuple);
	}
	return createdb;
}

/*
 * What pg_database says of a database: false if there is none by that
 * name.
 */
static bool
hook_database(const char *name, Oid *dboid, Oid *owner, bool *istemplate,
			  Oid *tablespace)
{
	HeapTuple		 tuple;
	Form_pg_database form;

	*dboid = get_database_oid(name, true);
	if (!OidIsValid(*dboid))
		return false;
	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(*dboid));
	if (!HeapTupleIsValid(tuple))
		return false;
	form = (Form_pg_database) GETSTRUCT(tuple);
	*owner = form->datdba;
	*istemplate = form->datistemplate;
	*tablespace = form->dattablespace;
	ReleaseSysCache(tuple);
	return true;
}

/*
 * The database DROP DATABASE will drop, or InvalidOid if PostgreSQL will
 * refuse it (dropdb).
 */
static Oid
hook_dropdb(DropdbStmt *stmt, ProcessUtilityContext context)
{
	Oid		  dboid;
	Oid		  owner;
	bool	  istemplate;
	Oid		  tablespace;
	int		  nslots;
	int		  nactive;
	ListCell *lc;

	if (!hook_may_run_outside_block(context))
		return InvalidOid;
	foreach (lc, stmt->options)
		if (strcmp(((DefElem *) lfirst(lc))->defname, "force") != 0)
			return InvalidOid;
	if (!hook_database(stmt->dbname, &dboid, &owner, &istemplate, &tablespace))
		return InvalidOid;
	if (!has_privs_of_role(GetUserId(), owner) || istemplate ||
		dboid == MyDatabaseId)
		return InvalidOid;
	(void) ReplicationSlotsCountDBSlots(dboid, &nslots, &nactive);
	if (nactive > 0 || CountDBSubscriptions(dboid) > 0)
		return InvalidOid;
	return dboid;
}

/*
 * The template CREATE DATABASE will copy, or InvalidOid if PostgreSQL
 * will refuse the command (createdb).
 */
static Oid
hook_createdb(CreatedbStmt *stmt, ProcessUtilityContext context)
{
	const char *template = "template1";
	const char *owner_name = NULL;
	bool		have_template = false;
	Oid			dboid;
	Oid			owner;
	bool		istemplate;
	Oid			tablespace;
	ListCell   *lc;

	if (!hook_may_run_outside_block(context))
		return InvalidOid;
	foreach (lc, stmt->options)
	{
		DefElem *opt = lfirst(lc);

		if (strcmp(opt->defname, "template") == 0)
		{
			if (have_template)
				return InvalidOid; /* conflicting options */
			have_template = true;
			if (opt->arg != NULL)
				template = defGetString(opt);
		}
		else if (strcmp(opt->defname, "owner") == 0 && opt->arg != NULL)
			owner_name = defGetString(opt);
	}
	if (!utility_has_createdb())
		return InvalidOid;
	if (owner_name != NULL)
	{
		Oid new_owner = get_role_oid(owner_name, true);

		if (!OidIsValid(new_owner) ||
			!is_member_of_role(GetUserId(), new_owner))
			return InvalidOid;
	}
	if (!hook_database(template, &dboid, &owner, &istemplate, &tablespace))
		return InvalidOid;
	/* a database that is not a template is copied by its owner only */
	if (!istemplate && !has_privs_of_role(GetUserId(), owner))
		return InvalidOid;
	if (OidIsValid(get_database_oid(stmt->dbname, true)))
		return InvalidOid;
	return dboid;
}

/*
 * The database ALTER DATABASE ... RENAME TO will rename, or InvalidOid if
 * PostgreSQL will refuse it (RenameDatabase).  It may run in a
 * transaction block.
 */
static Oid
hook_rename(RenameStmt *stmt)
{
	Oid	 dboid;
	Oid	 owner;
	bool istemplate;
	Oid	 tablespace;

	if (!hook_database(stmt->subname, &dboid, &owner, &istemplate, &tablespace))
		return InvalidOid;
	if (!has_privs_of_role(GetUserId(), owner) || !utility_has_createdb())
		return InvalidOid;
	if (OidIsValid(get_database_oid(stmt->newname, true)) ||
		dboid == MyDatabaseId)
		return InvalidOid;
	return dboid;
}

/*
 * The database ALTER DATABASE ... SET TABLESPACE will move, or InvalidOid
 * if PostgreSQL will refuse it or has nothing to do (AlterDatabase,
 * movedb).
 */
static Oid
hook_movedb(AlterDatabaseStmt *stmt, DefElem *option,
			ProcessUtilityContext context)
{
	Oid			dboid;
	Oid			owner;
	bool		istemplate;
	Oid			tablespace;
	Oid			target;
	const char *target_name;

	/* SET TABLESPACE takes no other option; nor may it be given twice */
	if (list_length(stmt->options) != 1 || option->arg == NULL ||
		!hook_may_run_outside_block(context))
		return InvalidOid;
	if (!hook_database(stmt->dbname, &dboid, &owner, &istemplate, &tablespace))
		return InvalidOid;
	if (!has_privs_of_role(GetUserId(), owner) || dboid == MyDatabaseId)
		return InvalidOid;
	target_name = defGetString(option);
	target = get_tablespace_oid(target_name, true);
	if (!OidIsValid(target) ||
		schedq_tablespace_aclcheck(target, GetUserId(), ACL_CREATE) !=
			ACLCHECK_OK ||
		target == GLOBALTABLESPACE_OID)
		return InvalidOid;
	/* moving to where it is does nothing, and needs nobody to leave */
	if (target == tablespace)
		return InvalidOid;
	return dboid;
}

/*
 * The database a command needs to itself, if PostgreSQL will run it (see
 * the file header), or InvalidOid.
 */
static Oid
hook_exclusive_database(Node *parsetree, ProcessUtilityContext context)
{
	switch (nodeTag(parsetree))
	{
		case T_DropdbStmt:
			return hook_dropdb((DropdbStmt *) parsetree, context);
		case T_CreatedbStmt:
			/* the template is copied only while nobody is connected */
			return hook_createdb((CreatedbStmt *) parsetree, context);
		case T_RenameStmt:
			if (((RenameStmt *) parsetree)->renameType == OBJECT_DATABASE)
				return hook_rename((RenameStmt *) parsetree);
			break;
		case T_AlterDatabaseStmt:
		{
			AlterDatabaseStmt *stmt = (AlterDatabaseStmt *) parsetree;
			ListCell		  *lc;

			foreach (lc, stmt->options)
			{
				DefElem *opt = lfirst(lc);

				if (strcmp(opt->defname, "tablespace") == 0)
					return hook_movedb(stmt, opt, context);
			}
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
	bool  creates_schedq = false;

	if (schedq_shm != NULL)
	{
		exclusive_db = hook_exclusive_database(parsetree, context);
		if (OidIsValid(exclusive_db))
			hook_stop_scheduler(exclusive_db, GetCurrentTimestamp() +
												  (int64) HOOK_HOLD_MS * 1000);

		/*
		 * schedq itself, or an extension that may require it (CASCADE
		 * installs schedq with schedq_cron): after the command, see
		 * whether schedq is new here.
		 */
		if (IsA(parsetree, CreateExtensionStmt) &&
			!OidIsValid(get_extension_oid("schedq", true)))
			creates_schedq = true;
		if (IsA(parsetree, DropStmt) &&
			((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION &&
			hook_names_extension(((DropStmt *) parsetree)->objects, "schedq"))
			schedq_wake_scheduler_at_commit();
	}
	if (IsA(parsetree, DropStmt) &&
		((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION &&
		hook_names_extension(((DropStmt *) parsetree)->objects, "schedq_cron"))
		hook_drop_cron_jobs();

	PG_TRY();
	{
		if (prev_utility_hook)
			prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
							  queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
		/* say now if this database will get no scheduler */
		if (creates_schedq && OidIsValid(get_extension_oid("schedq", true)))
		{
			schedq_launcher_probe_at_commit();
			schedq_background_warn_no_room();
		}
	}
	PG_FINALLY();
	{
		/* let the launcher come back soon, if the database is still there */
		if (OidIsValid(exclusive_db))
		{
			SchedqDatabase *db;

			LWLockAcquire(schedq_shm->lock, LW_EXCLUSIVE);
			db = schedq_databases_slot(exclusive_db, false);
			if (db != NULL)
				db->hold_until = GetCurrentTimestamp() + USECS_PER_SEC;
			LWLockRelease(schedq_shm->lock);
		}
	}
	PG_END_TRY();
}

/*
 * Install the hook; called from _PG_init.
 */
void
schedq_hooks_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = schedq_utility;
}

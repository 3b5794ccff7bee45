/*-------------------------------------------------------------------------
 * shared/call.c
 *	  The bracket around every SQL-callable function's queries: the
 *	  caller/owner switch, the pinned search path, and no JIT inside.
 *
 * Every SQL-callable function of schedq records its caller, then runs its
 * own queries as the owner of the schedq tables (a superuser, since the
 * extension is not trusted), the way ri_triggers.c runs its checks as the
 * table owner.  Roles therefore need EXECUTE on the functions and nothing
 * on the tables; which tasks a caller may touch is decided in the queries
 * from the recorded caller.  Inside the bracket the search path is
 * pg_catalog (and pg_temp, last; schedq_search_path_push in compat.h, the
 * mechanism CREATE EXTENSION scripts run under), so no caller's
 * search_path ever resolves a name or an operator in these queries, and
 * the plan cache sees the same path on every call.  Transaction or
 * subtransaction abort pops it.
 *
 * For the same reason JIT is turned off by a planner hook rather than by
 * "SET jit = off" on each function: a plan made inside the bracket is
 * never JIT-compiled.  These queries are short, and a compile of a
 * generic plan estimated on a large table cost 280 ms per claim.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "jit/jit.h"
#include "miscadmin.h"
#include "optimizer/planner.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "shared/call.h"
#include "base/compat.h"
#include "shared/shm.h"
#include "shared/commit.h"

static planner_hook_type prev_planner_hook = NULL;

/*
 * How many calls are inside the bracket in this backend.  An error that
 * unwinds a call leaves it raised until the transaction ends, so a caller
 * that catches the error has no JIT for the rest of its transaction.
 */
static int call_depth = 0;

static PlannedStmt *
call_planner(Query *parse, const char *query_string, int cursorOptions,
			 ParamListInfo boundParams)
{
	PlannedStmt *stmt =
		(prev_planner_hook ?
			 prev_planner_hook :
			 standard_planner)(parse, query_string, cursorOptions, boundParams);

	if (call_depth > 0)
		stmt->jitFlags = PGJIT_NONE;
	return stmt;
}

static void
call_reset(void)
{
	call_depth = 0;
}

static SchedqCommitEffect call_effect = { .reset = call_reset };

/*
 * Install the planner hook (from _PG_init, when preloading).
 */
void
schedq_call_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = call_planner;
}

/*
 * The role that owns the schedq tables in this database.
 */
static Oid
call_tables_owner(void)
{
	Oid nsp = get_namespace_oid("schedq", true);
	Oid relid = OidIsValid(nsp) ? get_relname_relid("task", nsp) : InvalidOid;
	HeapTuple tuple;
	Oid		  owner;

	if (!OidIsValid(relid))
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg(
					"extension \"schedq\" is not installed in this database"));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Remember the caller, switch to the tables' owner, pin the search path
 * and connect to SPI.
 * Must be paired with schedq_call_end on the success path; an error
 * unwinds both through transaction abort.
 */
void
schedq_call_begin(SchedqCall *call)
{
	Oid owner;

	schedq_shm_require_preloaded();
	call->caller = GetUserId();
	call->admin = has_bypassrls_privilege(call->caller);
	owner = call_tables_owner();
	GetUserIdAndSecContext(&call->save_userid, &call->save_sec_context);
	SetUserIdAndSecContext(owner, call->save_sec_context |
									  SECURITY_LOCAL_USERID_CHANGE);
	call->save_search_path = schedq_search_path_push();
	schedq_commit_join(&call_effect);
	call_depth++;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

/*
 * Disconnect from SPI and become the caller again.
 */
void
schedq_call_end(SchedqCall *call)
{
	SPI_finish();
	call_depth--;
	schedq_search_path_pop(call->save_search_path);
	SetUserIdAndSecContext(call->save_userid, call->save_sec_context);
}

/*
 * May the caller act on a task or run owned by the given role?  It may
 * when it has that role's privileges (it is the role, a member of it with
 * INHERIT, or a superuser), or when it is an admin: a role with BYPASSRLS,
 * which also sees every row of schedq.task.
 */
bool
schedq_call_acts_for(SchedqCall *call, Oid owner)
{
	return call->admin || has_privs_of_role(call->caller, owner);
}

/*-------------------------------------------------------------------------
 * spi.c
 *	  The bracket around every SQL-callable function's queries, and the
 *	  per-backend cache of prepared plans.
 *
 * Every SQL-callable function of schedq records its caller, then runs its
 * own queries as the owner of the schedq tables (a superuser, since the
 * extension is not trusted), the way ri_triggers.c runs its checks as the
 * table owner.  Roles therefore need EXECUTE on the functions and nothing
 * on the tables; which tasks a caller may touch is decided in the queries
 * from the recorded caller.  Inside the bracket the search path is
 * pg_catalog alone (PushOverrideSearchPath, the mechanism CREATE EXTENSION
 * scripts run under), so no caller's search_path ever resolves a name or
 * an operator in these queries, and the plan cache sees the same path on
 * every call.  It costs far less than a SET clause on every function, and
 * transaction or subtransaction abort pops it.
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

#include "schedq.h"

/* pg_catalog alone: what every query of schedq is parsed with. */
static OverrideSearchPath spi_search_path = { .schemas = NIL,
											  .addCatalog = true,
											  .addTemp = false };

static planner_hook_type prev_planner_hook = NULL;

/*
 * How many calls are inside the bracket in this backend.  An error that
 * unwinds a call leaves it raised until the transaction ends, so a caller
 * that catches the error has no JIT for the rest of its transaction.
 */
static int spi_call_depth = 0;

static PlannedStmt *
spi_planner(Query *parse, const char *query_string, int cursorOptions,
			ParamListInfo boundParams)
{
	PlannedStmt *stmt =
		(prev_planner_hook ?
			 prev_planner_hook :
			 standard_planner)(parse, query_string, cursorOptions, boundParams);

	if (spi_call_depth > 0)
		stmt->jitFlags = PGJIT_NONE;
	return stmt;
}

static void
spi_xact_callback(XactEvent event, void *arg)
{
	spi_call_depth = 0;
}

/*
 * Install the planner hook (from _PG_init, when preloading).
 */
void
schedq_install_planner_hook(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = spi_planner;
	RegisterXactCallback(spi_xact_callback, NULL);
}

/*
 * The role that owns the schedq tables in this database.
 */
static Oid
spi_tables_owner(void)
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

	schedq_require_preloaded();
	call->caller = GetUserId();
	call->admin = has_bypassrls_privilege(call->caller);
	owner = spi_tables_owner();
	GetUserIdAndSecContext(&call->save_userid, &call->save_sec_context);
	SetUserIdAndSecContext(owner, call->save_sec_context |
									  SECURITY_LOCAL_USERID_CHANGE);
	PushOverrideSearchPath(&spi_search_path);
	spi_call_depth++;
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
	spi_call_depth--;
	PopOverrideSearchPath();
	SetUserIdAndSecContext(call->save_userid, call->save_sec_context);
}

/*
 * May the caller act on a task or run owned by the given role?  It may
 * when it has that role's privileges (it is the role, a member of it with
 * INHERIT, or a superuser), or when it is an admin: a role with BYPASSRLS,
 * which also sees every row of schedq.task.
 */
bool
schedq_caller_acts_for(SchedqCall *call, Oid owner)
{
	return call->admin || has_privs_of_role(call->caller, owner);
}

/*
 * Prepare a query once per backend and keep its plan in *cache.  The plan
 * cache re-plans it by itself after DDL, including DROP and CREATE
 * EXTENSION.  Always a generic plan: these queries are short index scans
 * whose shape does not depend on the values, and planning them afresh on
 * every call (what the plan cache would choose for the LIMIT $1 of claim)
 * costs more than running them.
 */
SPIPlanPtr
schedq_plan(SPIPlanPtr *cache, const char *sql, int nargs, const Oid *argtypes)
{
	if (*cache == NULL)
	{
		SPIPlanPtr plan = SPI_prepare_cursor(sql, nargs, (Oid *) argtypes,
											 CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		*cache = plan;
	}
	return *cache;
}

/*
 * Execute a kept plan and check that it returned the expected SPI result
 * code.  Returns the number of rows processed.  Never read-only: every
 * query takes a new snapshot, so it sees what earlier calls in the same
 * statement did (a claim and a complete in one SELECT, say).
 */
int
schedq_execute(SPIPlanPtr plan, Datum *values, const char *nulls, long count,
			   int expected)
{
	int ret = SPI_execute_plan(plan, values, nulls, false, count);

	if (ret != expected)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(ret));
	return (int) SPI_processed;
}

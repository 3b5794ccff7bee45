/*-------------------------------------------------------------------------
 * api/work.c
 *	  schedq.grant_work and schedq.revoke_work: which roles' tasks a worker
 *	  role may claim and finish without being a member of them.
 *
 * Who may grant: a role that may act for the owner (it has the owner's
 * privileges, or BYPASSRLS): the owner consents to its tasks being worked
 * on, and no role hands out another's.  Who may revoke: the same, or the
 * worker itself, which may always stop working for a role.  What a grant
 * gives is written in store/work_grants.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/syscache.h"

#include "shared/call.h"
#include "store/work_grants.h"

/*
 * The role argument argno (regrole), which must name an existing role;
 * NULL, when allowed, is the caller.
 */
static Oid
work_role_arg(FunctionCallInfo fcinfo, int argno, const char *what,
			  bool null_is_caller)
{
	Oid role;

	if (PG_ARGISNULL(argno))
	{
		if (null_is_caller)
			return GetUserId();
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not be null", what));
	}
	role = PG_GETARG_OID(argno);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("role with OID %u does not exist", role));
	return role;
}

/* The worker and owner arguments of grant_work and revoke_work. */
static void
work_args(FunctionCallInfo fcinfo, Oid *worker, Oid *owner)
{
	*worker = work_role_arg(fcinfo, 0, "worker", false);
	*owner = work_role_arg(fcinfo, 1, "owner", true);
	if (*worker == *owner)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("worker and owner are the same role"),
				errdetail("A role may always work on its own tasks."));
}

PG_FUNCTION_INFO_V1(schedq_grant_work);

/*
 * schedq.grant_work(worker, owner): worker may claim and finish the tasks
 * of owner (default: the caller).  False when it already might by a work
 * grant.
 */
Datum
schedq_grant_work(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Oid		   worker;
	Oid		   owner;
	bool	   added;

	work_args(fcinfo, &worker, &owner);
	schedq_call_begin(&call);
	if (!schedq_call_acts_for(&call, owner))
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied to grant work on the tasks of role "
					   "\"%s\"",
					   GetUserNameFromId(owner, false)),
				errdetail("Only a role with the privileges of \"%s\", or a "
						  "role with BYPASSRLS, may.",
						  GetUserNameFromId(owner, false)));
	added = schedq_work_grants_add(worker, owner, call.caller);
	schedq_call_end(&call);
	PG_RETURN_BOOL(added);
}

PG_FUNCTION_INFO_V1(schedq_revoke_work);

/*
 * schedq.revoke_work(worker, owner): take back grant_work.  False when
 * there was no such grant.  A worker the owner's member keeps working for
 * it: membership is the owner's privileges.
 */
Datum
schedq_revoke_work(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Oid		   worker;
	Oid		   owner;
	bool	   removed;

	work_args(fcinfo, &worker, &owner);
	schedq_call_begin(&call);
	if (!schedq_call_acts_for(&call, owner) &&
		!has_privs_of_role(call.caller, worker))
		ereport(ERROR, errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied to revoke work on the tasks of role "
					   "\"%s\"",
					   GetUserNameFromId(owner, false)),
				errdetail("Only a role with the privileges of \"%s\" or of "
						  "\"%s\", or a role with BYPASSRLS, may.",
						  GetUserNameFromId(owner, false),
						  GetUserNameFromId(worker, false)));
	removed = schedq_work_grants_remove(worker, owner);
	schedq_call_end(&call);
	PG_RETURN_BOOL(removed);
}

/*-------------------------------------------------------------------------
 * api/cron_run.c
 *	  cron._run_in_database, for schedq_cron (sql/schedq_cron--1.0.sql):
 *	  run a job's command in another database, as its user, and return the
 *	  rows of its last statement (shared/cronrun.c).  Only the extension's
 *	  owner may call it: cron._run_elsewhere, which a job's run calls,
 *	  checks who runs what before it does.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "fmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "shared/cronrun.h"

PG_FUNCTION_INFO_V1(schedq_cron_run_in_database);

/*
 * cron._run_in_database(database text, username text, command text,
 * jobid bigint) returns bigint
 */
Datum
schedq_cron_run_in_database(PG_FUNCTION_ARGS)
{
	char	 *database;
	char	 *username;
	Oid		  dboid;
	Oid		  roleid;
	HeapTuple tuple;
	bool	  allowconn;
	bool	  canlogin;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) ||
		PG_ARGISNULL(3))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg(
					"database, username, command and jobid must not be null"));
	database = text_to_cstring(PG_GETARG_TEXT_PP(0));
	username = text_to_cstring(PG_GETARG_TEXT_PP(1));

	dboid = get_database_oid(database, true);
	if (!OidIsValid(dboid))
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_DATABASE),
				errmsg("database \"%s\" does not exist", database));
	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_DATABASE),
				errmsg("database \"%s\" does not exist", database));
	allowconn = ((Form_pg_database) GETSTRUCT(tuple))->datallowconn;
	ReleaseSysCache(tuple);
	if (!allowconn)
		ereport(ERROR, errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("database \"%s\" is not currently accepting connections",
					   database));

	tuple = SearchSysCache1(AUTHNAME, CStringGetDatum(username));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR, errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("role \"%s\" does not exist", username));
	roleid = ((Form_pg_authid) GETSTRUCT(tuple))->oid;
	canlogin = ((Form_pg_authid) GETSTRUCT(tuple))->rolcanlogin;
	ReleaseSysCache(tuple);
	if (!canlogin)
		ereport(ERROR, errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				errmsg("role \"%s\" is not permitted to log in", username));

	PG_RETURN_INT64(schedq_cronrun_run(dboid, roleid, PG_GETARG_INT64(3),
									   text_to_cstring(PG_GETARG_TEXT_PP(2))));
}

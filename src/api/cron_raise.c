/*-------------------------------------------------------------------------
 * api/cron_raise.c
 *	  cron._error, for schedq_cron (sql/schedq_cron--1.0.sql): raise an
 *	  error as pg_cron raises it, with its SQLSTATE, message and hint and
 *	  without the PL/pgSQL context of the function that raises it, so that
 *	  pg_cron's users and scripts see pg_cron's messages.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(schedq_cron_raise_error);

/*
 * cron._error(sqlstate, message, detail, hint): never returns.
 */
Datum
schedq_cron_raise_error(PG_FUNCTION_ARGS)
{
	char	   *state;
	const char *message;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("sqlstate and message must not be null"));
	state = text_to_cstring(PG_GETARG_TEXT_PP(0));
	message = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strlen(state) != 5 ||
		strspn(state, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 5)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("sqlstate must be five digits or upper-case letters"));

	/* pg_cron's errors carry no context: neither do these */
	error_context_stack = NULL;
	ereport(ERROR,
			errcode(MAKE_SQLSTATE(state[0], state[1], state[2], state[3],
								  state[4])),
			errmsg_internal("%s", message),
			PG_ARGISNULL(2) ?
				0 :
				errdetail_internal("%s", text_to_cstring(PG_GETARG_TEXT_PP(2))),
			PG_ARGISNULL(3) ?
				0 :
				errhint("%s", text_to_cstring(PG_GETARG_TEXT_PP(3))));
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 * api/run.c
 *	  Workflows: schedq.create_run and schedq.cancel_run.
 *
 * A run groups tasks that may depend on each other; its failure policy
 * and its end are applied as its tasks end (store/task_runs.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "base/check.h"
#include "shared/call.h"
#include "shared/plan.h"
#include "store/task_runs.h"

static SchedqQuery q_create =
	SCHEDQ_QUERY("INSERT INTO schedq.run (name, failure_policy, owner)"
				 " VALUES ($1, $2, $3::regrole) RETURNING id",
				 TEXTOID, TEXTOID, OIDOID);
PG_FUNCTION_INFO_V1(schedq_create_run);

/*
 * schedq.create_run(name, failure_policy): a new run, owned by the caller.
 */
Datum
schedq_create_run(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Datum	   values[3];
	char	   nulls[3] = { PG_ARGISNULL(0) ? 'n' : ' ', ' ', ' ' };
	char	  *policy;
	bool	   isnull;
	int64	   id;

	if (PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("failure_policy must not be null"));
	if (!PG_ARGISNULL(0))
		schedq_check_name("name", PG_GETARG_TEXT_PP(0));
	schedq_check_name("failure_policy", PG_GETARG_TEXT_PP(1));
	policy = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(policy, "halt") != 0 && strcmp(policy, "continue") != 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("invalid failure_policy \"%s\"", policy),
				errhint("The policies are \"halt\" and \"continue\"."));
	values[0] = PG_ARGISNULL(0) ? (Datum) 0 : PG_GETARG_DATUM(0);
	values[1] = PG_GETARG_DATUM(1);

	schedq_call_begin(&call);
	values[2] = ObjectIdGetDatum(call.caller);
	schedq_plan_run(&q_create, values, nulls, 0, SPI_OK_INSERT_RETURNING);
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									 SPI_tuptable->tupdesc, 1, &isnull));
	schedq_call_end(&call);
	PG_RETURN_INT64(id);
}

PG_FUNCTION_INFO_V1(schedq_cancel_run);

/*
 * schedq.cancel_run(run_id): cancel the run and every unfinished task of
 * it.  False, changing nothing, when the run is already finished.
 */
Datum
schedq_cancel_run(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	bool	   canceled;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("run_id must not be null"));
	schedq_call_begin(&call);
	canceled = schedq_task_runs_cancel(&call, PG_GETARG_DATUM(0));
	schedq_call_end(&call);
	PG_RETURN_BOOL(canceled);
}

/*-------------------------------------------------------------------------
 * api/budget.c
 *	  schedq.set_budget.
 *
 * A budget is a row of schedq.budget: a hard limit on the summed cost of
 * the tasks claimed against it, optionally per period.  claim admits a
 * task against its budgets (store/budgets.c); a change of the budgets
 * moves the budgets generation, and every backend asks again whether
 * there are any (on a distributed schedq, where schedq.budget is a
 * reference table, every claim asks).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "shared/call.h"
#include "base/check.h"
#include "base/cron.h"
#include "shared/plan.h"
#include "shared/wake.h"
#include "shared/commit.h"

static SchedqQuery q_set = SCHEDQ_QUERY(
	"INSERT INTO schedq.budget AS b (name, hard_limit, period, period_start)"
	" VALUES ($1, $2, $3,"
	"   date_bin($3, now(), '2000-01-01 00:00:00+00'))"
	" ON CONFLICT (name) DO UPDATE"
	" SET hard_limit = EXCLUDED.hard_limit,"
	"     period = EXCLUDED.period,"
	"     used = CASE WHEN b.period IS NOT DISTINCT FROM EXCLUDED.period"
	"       THEN b.used ELSE 0 END,"
	"     period_start = EXCLUDED.period_start",
	TEXTOID, NUMERICOID, INTERVALOID);

PG_FUNCTION_INFO_V1(schedq_set_budget);

/*
 * schedq.set_budget(name, hard_limit, period): create or change a budget.
 * With a period, the budget starts empty again at every boundary of that
 * period (counted from 2000-01-01 UTC), which makes it a rate limit.
 * Changing the limit keeps what was used; changing the period starts a
 * new one.
 */
Datum
schedq_set_budget(PG_FUNCTION_ARGS)
{
	SchedqCall call;
	Datum	   values[3];
	char	   nulls[3] = { ' ', ' ', PG_ARGISNULL(2) ? 'n' : ' ' };
	Numeric	   limit;

	if (PG_ARGISNULL(0))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("name must not be null"));
	if (PG_ARGISNULL(1))
		ereport(ERROR, errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("hard_limit must not be null"));
	if (VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)) == 0)
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("name must not be empty"));
	schedq_check_name("name", PG_GETARG_TEXT_PP(0));
	limit = PG_GETARG_NUMERIC(1);
	if (numeric_is_nan(limit) || numeric_is_inf(limit) ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, NumericGetDatum(limit),
										 NumericGetDatum(int64_to_numeric(0)))))
		ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("hard_limit must be a finite number not below zero"));
	if (!PG_ARGISNULL(2))
	{
		Interval *period = PG_GETARG_INTERVAL_P(2);

		if (period->month != 0)
			ereport(ERROR, errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("budget period must not contain months or years"),
					errhint("Use days instead, for example '30 days'."));
		(void) schedq_check_interval("budget period", period, false,
									 SCHEDQ_MAX_INTERVAL_USECS,
									 SCHEDQ_MAX_INTERVAL_TEXT);
		values[2] = PointerGetDatum(period);
	}
	values[0] = PG_GETARG_DATUM(0);
	values[1] = NumericGetDatum(limit);
	schedq_call_begin(&call);
	schedq_plan_run(&q_set, values, nulls, 0, SPI_OK_INSERT);
	schedq_call_end(&call);
	schedq_commit_generation_bump(GENERATION_BUDGETS);
	schedq_wake_all_claimers_at_commit();
	PG_RETURN_VOID();
}

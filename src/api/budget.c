/*-------------------------------------------------------------------------
 * api/budget.c
 *	  Budgets: schedq.set_budget, the admission of a claimed task's cost,
 *	  and each backend's cached answer to "are there budgets at all?".
 *
 * A budget is a row of schedq.budget: a hard limit on the summed cost of
 * the tasks claimed against it, optionally per period.  claim admits a
 * task that names budgets only if each has room (schedq_budget_admit),
 * charging them in the same statement.  While a database has no budget,
 * claim skips all of this; every backend caches that fact until the
 * budgets generation moves (xact.h).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "api/budget.h"
#include "shared/call.h"
#include "lib/check.h"
#include "lib/cron.h"
#include "shared/plan.h"
#include "shared/wake.h"
#include "shared/commit.h"

/* Whether this database has budgets, as of budgets_generation. */
static uint64 budgets_generation = 0;
static bool	  budgets_exist = true;

/*
 * Does this database have any budget?  Asked again only after a change of
 * the budgets has committed somewhere.
 */
bool
schedq_budget_any(void)
{
	uint64 generation = schedq_commit_generation(GENERATION_BUDGETS);

	if (generation != budgets_generation)
	{
		if (SPI_execute("SELECT FROM schedq.budget LIMIT 1", false, 1) !=
			SPI_OK_SELECT)
			elog(ERROR, "could not look for budgets");
		budgets_exist = SPI_processed > 0;
		budgets_generation = generation;
	}
	return budgets_exist;
}

static SchedqQuery q_admit = SCHEDQ_QUERY(
	"WITH locked AS ("
	"   SELECT b.name, b.period_start + b.period <= now() AS refill,"
	"          b.used, b.hard_limit, b.period"
	"   FROM schedq.budget b WHERE b.name = ANY ($1)"
	"   ORDER BY b.name FOR UPDATE),"
	" verdict AS ("
	"   SELECT count(*) = (SELECT count(DISTINCT x) FROM unnest($1) x)"
	"      AND bool_and(CASE WHEN refill THEN 0 ELSE used END + $2"
	"                   <= hard_limit) AS ok"
	"   FROM locked),"
	" charge AS ("
	"   UPDATE schedq.budget b"
	"   SET used = CASE WHEN l.refill THEN 0 ELSE l.used END + $2,"
	"       period_start = CASE WHEN l.refill"
	"         THEN date_bin(l.period, now(), '2000-01-01 00:00:00+00')"
	"         ELSE b.period_start END"
	"   FROM locked l, verdict v"
	"   WHERE b.name = l.name AND v.ok)"
	" SELECT COALESCE(ok, false) FROM verdict",
	TEXTARRAYOID, NUMERICOID);

/*
 * Charge one task's cost to each of its budgets, all or nothing.  The
 * budget rows are locked in name order, so concurrent claims serialize on
 * them without deadlocking, and the room is checked on the locked
 * (latest) values.  A budget whose period has passed starts empty again.
 */
bool
schedq_budget_admit(Datum budgets, Datum cost)
{
	Datum values[2] = { budgets, cost };
	bool  isnull;

	schedq_plan_run(&q_admit, values, NULL, 0, SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
}

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

/*-------------------------------------------------------------------------
 * shared/plan.c
 *	  Prepare each query of schedq once per backend, keep its plan, and
 *	  run it.
 *
 * The plan cache re-plans a kept plan by itself after DDL, including DROP
 * and CREATE EXTENSION.  Plans are always generic: these queries are
 * short index scans whose shape does not depend on the values, and
 * planning them afresh on every call (what the plan cache would choose for
 * the LIMIT $1 of claim) costs more than running them.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"

#include "shared/plan.h"

/* The query's kept plan, prepared on first use. */
static SPIPlanPtr
plan_kept(SchedqQuery *query)
{
	if (query->plan == NULL)
	{
		SPIPlanPtr plan = SPI_prepare_cursor(query->sql, query->nargs,
											 (Oid *) query->argtypes,
											 CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		query->plan = plan;
	}
	return query->plan;
}

/*
 * Run a query with its kept plan, preparing it on first use, and check
 * that it returned the expected SPI result code.  Returns the number of
 * rows processed.  Never read-only: every query takes a new snapshot, so
 * it sees what earlier calls in the same statement did (a claim and a
 * complete in one SELECT, say).
 */
int
schedq_plan_run(SchedqQuery *query, Datum *values, const char *nulls,
				long count, int expected)
{
	int ret;

	ret = SPI_execute_plan(plan_kept(query), values, nulls, false, count);
	if (ret != expected)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(ret));
	return (int) SPI_processed;
}

/*
 * Open a cursor on the query's kept plan, for results too large to hold at
 * once: fetch them with SPI_cursor_fetch, close with SPI_cursor_close.
 */
Portal
schedq_plan_cursor_open(SchedqQuery *query, Datum *values, const char *nulls)
{
	return SPI_cursor_open(NULL, plan_kept(query), values, nulls, false);
}

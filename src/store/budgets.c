/*-------------------------------------------------------------------------
 * store/budgets.c
 *	  What a claim asks of the budgets: the admission of a claimed task's
 *	  cost, and each backend's cached answer to "are there budgets at
 *	  all?".
 *
 * claim admits a task that names budgets only if each has room
 * (schedq_budgets_admit), charging them in the same statement.  While a
 * database has no budget, claim skips all of this; every backend caches
 * that fact until the budgets generation moves (shared/commit.h).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/numeric.h"

#include "shared/commit.h"
#include "shared/plan.h"
#include "store/budgets.h"

/* Whether this database has budgets, as of budgets_generation. */
static uint64 budgets_generation = 0;
static bool	  budgets_exist = true;

/*
 * Does this database have any budget?  Asked again only after a change of
 * the budgets has committed somewhere.
 */
bool
schedq_budgets_any(void)
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
schedq_budgets_admit(Datum budgets, Datum cost)
{
	Datum values[2] = { budgets, cost };
	bool  isnull;

	schedq_plan_run(&q_admit, values, NULL, 0, SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
}

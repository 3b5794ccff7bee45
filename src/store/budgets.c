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
 *
 * On a distributed schedq (docs/scale-out.md) schedq.budget is a reference
 * table, and both differ:
 *	- Citus changes it on the other nodes in prepared transactions, which
 *	  move no generation there: whether budgets exist is read afresh by
 *	  every claim;
 *	- Citus plans no data-modifying CTE over it: the budgets are locked by
 *	  one statement, the verdict is taken here, and each is charged by an
 *	  UPDATE of its own, a plain value per column.  Citus runs the locking
 *	  SELECT on one copy, under a lock of the whole table that it takes on
 *	  one node for every row lock of a reference table; the UPDATEs lock
 *	  every copy.  So the admissions of every budget, and set_budget, take
 *	  turns across the cluster, each until its claim commits, on every
 *	  node, in two phases.  A budget already full, or missing, is seen
 *	  first, without a lock, in this node's copy: a task it holds back
 *	  takes no lock.
 *	  (api/claim's waits roll back a claim that took nothing,
 *	  store/task_citus.c, so that a refused admission holds nothing.)
 * A refusal after the lock, for want of room, is a claim's contention
 * (metric claim_contention), counted here on a cluster.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "shared/commit.h"
#include "shared/metrics.h"
#include "shared/plan.h"
#include "store/budgets.h"
#include "store/task.h"

/* Whether this database has budgets, as of budgets_generation. */
static uint64 budgets_generation = 0;
static bool	  budgets_exist = true;

/*
 * Does this database have any budget?  Asked again only after a change of
 * the budgets has committed somewhere; on a cluster (schedq.budget a
 * reference table: a distributed schedq, or a claim on a shard), always.
 */
bool
schedq_budgets_any(bool cluster)
{
	uint64 generation = schedq_commit_generation(GENERATION_BUDGETS);

	if (generation != budgets_generation || cluster)
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
 * The same on a cluster, in statements Citus plans (the header): lock and
 * judge ($1 the budgets, $2 the cost), then charge each ($1 name, $2 what
 * it has used now, $3 its period's start).
 */
static SchedqQuery q_admit_lock = SCHEDQ_QUERY(
	"SELECT b.name," BUDGET_USED_NOW_SQL " + $2,"
	"       CASE WHEN b.period_start + b.period <= now()"
	"            THEN date_bin(b.period, now(), '2000-01-01 00:00:00+00')"
	"            ELSE b.period_start END," BUDGET_USED_NOW_SQL
	"       + $2 <= b.hard_limit"
	" FROM schedq.budget b WHERE b.name = ANY ($1)"
	" ORDER BY b.name FOR UPDATE",
	TEXTARRAYOID, NUMERICOID);
/* How many budgets of $1 have room for $2?  Read without a lock. */
static SchedqQuery q_admit_room =
	SCHEDQ_QUERY("SELECT count(*) FROM schedq.budget b WHERE b.name = ANY ($1)"
				 " AND" BUDGET_USED_NOW_SQL " + $2 <= b.hard_limit",
				 TEXTARRAYOID, NUMERICOID);
static SchedqQuery q_admit_charge = SCHEDQ_QUERY(
	"UPDATE schedq.budget SET used = $2, period_start = $3 WHERE name = $1",
	TEXTOID, NUMERICOID, TIMESTAMPTZOID);

/* How many different names the text array holds. */
static int
budgets_distinct(Datum budgets)
{
	Datum *names;
	int	   n;
	int	   distinct = 0;

	deconstruct_array_builtin(DatumGetArrayTypeP(budgets), TEXTOID, &names,
							  NULL, &n);
	for (int i = 0; i < n; i++)
	{
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = DatumGetBool(DirectFunctionCall2Coll(texteq, C_COLLATION_OID,
														names[i], names[j]));
		distinct += seen ? 0 : 1;
	}
	return distinct;
}

static bool
budgets_admit_cluster(Datum budgets, Datum cost)
{
	Datum		   values[3] = { budgets, cost, (Datum) 0 };
	char		   nulls[3] = { ' ', ' ', ' ' };
	SPITupleTable *locked;
	int			   distinct = budgets_distinct(budgets);
	int			   found;
	bool		   isnull;

	/*
	 * A budget that is full or does not exist (no room) is passed over
	 * without locking every node.
	 */
	schedq_plan_run(&q_admit_room, values, NULL, 1, SPI_OK_SELECT);
	if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1, &isnull)) !=
		distinct)
		return false;
	found = schedq_plan_run(&q_admit_lock, values, NULL, 0, SPI_OK_SELECT);
	locked = SPI_tuptable;
	if (found != distinct)
		return false; /* a budget deleted since */
	for (int i = 0; i < found; i++)
	{
		if (!DatumGetBool(
				SPI_getbinval(locked->vals[i], locked->tupdesc, 4, &isnull)))
		{
			/* another claim used the room since the unlocked read */
			schedq_metrics_count(METRIC_CLAIM_CONTENTION, 1);
			return false;
		}
	}
	for (int i = 0; i < found; i++)
	{
		for (int c = 0; c < 3; c++)
		{
			values[c] =
				SPI_getbinval(locked->vals[i], locked->tupdesc, c + 1, &isnull);
			nulls[c] = isnull ? 'n' : ' ';
		}
		if (schedq_plan_run(&q_admit_charge, values, nulls, 0, SPI_OK_UPDATE) !=
			1)
			elog(ERROR, "could not charge a locked budget");
	}
	return true;
}

/*
 * Charge one task's cost to each of its budgets, all or nothing.  The
 * budget rows are locked in name order, so concurrent claims serialize on
 * them without deadlocking, and the room is checked on the locked
 * (latest) values.  A budget whose period has passed starts empty again.
 * cluster: as for schedq_budgets_any.
 */
bool
schedq_budgets_admit(Datum budgets, Datum cost, bool cluster)
{
	Datum values[2] = { budgets, cost };
	bool  isnull;

	if (cluster)
		return budgets_admit_cluster(budgets, cost);
	schedq_plan_run(&q_admit, values, NULL, 0, SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
}

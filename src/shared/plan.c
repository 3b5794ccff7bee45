/*-------------------------------------------------------------------------
 * shared/plan.c
 *	  Prepare each query of schedq once per backend, keep its plan, and
 *	  run it.
 *
 * The plan cache re-plans a kept plan by itself after DDL, including DROP
 * and CREATE EXTENSION.  Plans are generic: these queries are short index
 * scans whose shape does not depend on the values, and planning them
 * afresh on every call (what the plan cache would choose for the LIMIT $1
 * of claim) costs more than running them.  The exception is a query
 * declared with SCHEDQ_QUERY_CUSTOM (plan.h), planned for each run: Citus
 * plans some statements only with their values.
 *
 * On a node of a Citus cluster, schedq.task is an empty shell and its rows
 * are in shards, plain tables named schedq.task_<shard id>.  The
 * scheduler runs its passes over each shard placed on its node
 * (pass/shards.c): while a shard is chosen (schedq_plan_use_shard), every
 * query runs with "schedq.task" in its text naming that shard, each with
 * a kept plan of its own per shard.  With none chosen (always, on one
 * server), queries run as written.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "shared/plan.h"

/* The chosen shard of schedq.task; 0: the table itself. */
static int64 plan_shard = 0;

/* The kept plans of queries on shards, by query and shard. */
typedef struct ShardPlanKey
{
	const SchedqQuery *query;
	int64			   shard;
} ShardPlanKey;

typedef struct ShardPlan
{
	ShardPlanKey key;
	SPIPlanPtr	 plan;
} ShardPlan;

static HTAB *shard_plans = NULL;

/* The query's text with each "schedq.task" naming shard `shard`. */
static char *
plan_shard_text(const char *sql, int64 shard)
{
	static const char table[] = "schedq.task";
	StringInfoData	  buf;
	const char		 *p = sql;
	const char		 *hit;

	initStringInfo(&buf);
	while ((hit = strstr(p, table)) != NULL)
	{
		const char *after = hit + strlen(table);

		appendBinaryStringInfo(&buf, p, after - p);
		/* schedq.task_id_seq, say, is another name */
		if (*after != '_' && !isalnum((unsigned char) *after))
			appendStringInfo(&buf, "_" INT64_FORMAT, shard);
		p = after;
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

/* Prepare `sql` and keep its plan. */
static SPIPlanPtr
plan_prepare(const char *sql, const SchedqQuery *query)
{
	SPIPlanPtr plan =
		SPI_prepare_cursor(sql, query->nargs, (Oid *) query->argtypes,
						   query->custom ? CURSOR_OPT_CUSTOM_PLAN :
										   CURSOR_OPT_GENERIC_PLAN);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/* The query's kept plan on the chosen shard, prepared on first use. */
static SPIPlanPtr
plan_kept_shard(SchedqQuery *query)
{
	ShardPlanKey key;
	ShardPlan	*entry;
	bool		 found;

	if (shard_plans == NULL)
	{
		HASHCTL ctl;

		ctl.keysize = sizeof(ShardPlanKey);
		ctl.entrysize = sizeof(ShardPlan);
		ctl.hcxt = TopMemoryContext;
		shard_plans = hash_create("schedq shard plans", 64, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.query = query;
	key.shard = plan_shard;
	entry = hash_search(shard_plans, &key, HASH_ENTER, &found);
	if (!found)
		entry->plan = NULL;
	if (entry->plan == NULL)
	{
		char *sql = plan_shard_text(query->sql, plan_shard);

		entry->plan = plan_prepare(sql, query);
		pfree(sql);
	}
	return entry->plan;
}

/*
 * Run the queries that follow on shard `shard` of schedq.task (0: on the
 * table itself).  Returns the shard chosen before.
 */
int64
schedq_plan_use_shard(int64 shard)
{
	int64 before = plan_shard;

	plan_shard = shard;
	return before;
}

/*
 * Free the kept plans of every shard but shards[0..n-1], the ones placed
 * on this node: a shard moved away leaves no plans behind.  Returns how
 * many it freed.
 */
int
schedq_plan_keep_shards(const int64 *shards, int n)
{
	HASH_SEQ_STATUS seq;
	ShardPlan	   *entry;
	int				freed = 0;

	if (shard_plans == NULL)
		return 0;
	hash_seq_init(&seq, shard_plans);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		bool placed = false;

		for (int i = 0; i < n && !placed; i++)
			placed = shards[i] == entry->key.shard;
		if (placed)
			continue;
		if (entry->plan != NULL)
		{
			SPI_freeplan(entry->plan);
			freed++;
		}
		/* dynahash allows removing the entry just returned */
		(void) hash_search(shard_plans, &entry->key, HASH_REMOVE, NULL);
	}
	return freed;
}

/* The chosen shard of schedq.task; 0 when none is. */
int64
schedq_plan_shard(void)
{
	return plan_shard;
}

/* The query's kept plan, prepared on first use. */
static SPIPlanPtr
plan_kept(SchedqQuery *query)
{
	if (plan_shard != 0)
		return plan_kept_shard(query);
	if (query->plan == NULL)
		query->plan = plan_prepare(query->sql, query);
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

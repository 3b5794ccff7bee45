/*-------------------------------------------------------------------------
 * store/task_shards.c
 *	  The shards of a schedq.task that Citus distributes, as placed on this
 *	  node: which they are, and entering one for the scheduler's passes.
 *
 * On each node of a cluster, schedq's scheduler runs its passes over the
 * shards of schedq.task placed on that node (pass/shards.c), with each
 * statement naming the shard's own table (shared/plan.c).  A pass that
 * writes a shard directly must not race a shard move or split: Citus
 * takes the shard's metadata lock in ExclusiveLock before it switches a
 * shard's placements (and drops the old one), and in ShareLock for every
 * modification it routes.  Entering a shard takes it the same way, in
 * ShareLock until the transaction ends, and then looks again whether the
 * shard is still placed here: if a move finished in the meantime, the
 * shard is skipped.  While the pass holds it, a move waits before its
 * switch; what the pass wrote is in the placement the move copies from.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lockdefs.h"
#include "utils/lsyscache.h"

#include "shared/plan.h"
#include "store/task_shards.h"

/* $1 schedq.task's OID; $2 one shard, or NULL for every one */
static SchedqQuery q_local =
	SCHEDQ_QUERY("SELECT s.shardid FROM pg_catalog.pg_dist_shard s"
				 " JOIN pg_catalog.pg_dist_placement p USING (shardid)"
				 " WHERE s.logicalrelid = $1"
				 "   AND ($2 IS NULL OR s.shardid = $2)"
				 "   AND p.groupid = (SELECT groupid"
				 "                    FROM pg_catalog.pg_dist_local_group)"
				 " ORDER BY s.shardid",
				 OIDOID, INT8OID);
static SchedqQuery q_lock =
	SCHEDQ_QUERY("SELECT pg_catalog.lock_shard_metadata($1, ARRAY[$2])",
				 INT4OID, INT8OID);

/* schedq.task's OID: the distributed table's own */
static Oid
shards_task_relid(void)
{
	return get_relname_relid("task", get_namespace_oid("schedq", false));
}

/*
 * The shards of schedq.task placed on this node, in shard order, in
 * *shards; returns how many.
 */
int
schedq_task_shards_local(int64 **shards)
{
	Datum values[2] = { ObjectIdGetDatum(shards_task_relid()), (Datum) 0 };
	int	  n;

	Assert(schedq_plan_shard() == 0);
	n = schedq_plan_run(&q_local, values, " n", 0, SPI_OK_SELECT);
	*shards = palloc(sizeof(int64) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool isnull;

		(*shards)[i] =
			DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 1, &isnull));
	}
	return n;
}

/*
 * Enter a shard: take its metadata lock as Citus's modifications do, and,
 * if it is still placed here, run the queries that follow on it.  Returns
 * false, entering nothing, when it is not (moved away).
 */
bool
schedq_task_shards_enter(int64 shard)
{
	Datum lock[2] = { Int32GetDatum(ShareLock), Int64GetDatum(shard) };
	Datum values[2] = { ObjectIdGetDatum(shards_task_relid()),
						Int64GetDatum(shard) };

	Assert(schedq_plan_shard() == 0);
	schedq_plan_run(&q_lock, lock, NULL, 0, SPI_OK_SELECT);
	if (schedq_plan_run(&q_local, values, NULL, 0, SPI_OK_SELECT) == 0)
		return false;
	(void) schedq_plan_use_shard(shard);
	return true;
}

/* Leave the shard entered: queries run on schedq.task itself again. */
void
schedq_task_shards_leave(void)
{
	(void) schedq_plan_use_shard(0);
}

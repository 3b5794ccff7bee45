/*-------------------------------------------------------------------------
 * shared/plan.h
 *	  Kept SPI plans: each query of schedq is prepared once per backend.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_PLAN_H
#define SCHEDQ_PLAN_H

#include "executor/spi.h"

/*
 * A query and its kept plan.  Declare one static SchedqQuery per query
 * text, next to the text, so that no two texts share a plan cache slot.
 */
typedef struct SchedqQuery
{
	const char *sql;
	int			nargs;
	const Oid  *argtypes;
	SPIPlanPtr	plan;	/* NULL until first used */
	bool		custom; /* planned again for each run, with its values */
} SchedqQuery;

#define SCHEDQ_QUERY(sql, ...)                                                 \
	{                                                                          \
		(sql), lengthof(((const Oid[]){ __VA_ARGS__ })),                       \
			(const Oid[]){ __VA_ARGS__ }, NULL, false                          \
	}
/*
 * A query whose plan is made for each run with the values of that run:
 * Citus plans a statement on a shard that also reads a reference table
 * only so (its generic plan fails: "could not create distributed plan").
 */
#define SCHEDQ_QUERY_CUSTOM(sql, ...)                                          \
	{                                                                          \
		(sql), lengthof(((const Oid[]){ __VA_ARGS__ })),                       \
			(const Oid[]){ __VA_ARGS__ }, NULL, true                           \
	}
#define SCHEDQ_QUERY0(sql)                                                     \
	{                                                                          \
		(sql), 0, NULL, NULL, false                                            \
	}

extern int schedq_plan_run(SchedqQuery *query, Datum *values, const char *nulls,
						   long count, int expected);
extern int64  schedq_plan_use_shard(int64 shard);
extern int64  schedq_plan_shard(void);
extern int	  schedq_plan_keep_shards(const int64 *shards, int n);
extern Portal schedq_plan_cursor_open(SchedqQuery *query, Datum *values,
									  const char *nulls);

#endif /* SCHEDQ_PLAN_H */

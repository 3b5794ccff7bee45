/*-------------------------------------------------------------------------
 * pass/shards.h
 *	  The scheduler's passes on a node of a Citus cluster: over each shard
 *	  of schedq.task placed on the node; and the SQL executors' claims.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SHARDS_H
#define SCHEDQ_SHARDS_H

#include "datatype/timestamp.h"

extern int		   schedq_shards_promote_events(TimestampTz now, bool *more);
extern int		   schedq_shards_promote_due(TimestampTz now, bool *more);
extern int		   schedq_shards_reap(TimestampTz now, bool *more);
extern TimestampTz schedq_shards_next_due(TimestampTz now);
extern int		   schedq_shards_sql_ready(int limit);
extern bool		   schedq_shards_until(bool (*step)(void *arg), void *arg);
extern void		   schedq_shards_forget_all(void);

#endif /* SCHEDQ_SHARDS_H */

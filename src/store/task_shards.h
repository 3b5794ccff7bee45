/*-------------------------------------------------------------------------
 * store/task_shards.h
 *	  The shards of a schedq.task that Citus distributes, as placed on this
 *	  node; the scheduler's passes run over each (pass/shards.c).
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_SHARDS_H
#define SCHEDQ_TASK_SHARDS_H

extern int	schedq_task_shards_local(int64 **shards);
extern bool schedq_task_shards_enter(int64 shard);
extern void schedq_task_shards_leave(void);

#endif /* SCHEDQ_TASK_SHARDS_H */

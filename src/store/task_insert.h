/*-------------------------------------------------------------------------
 * store/task_insert.h
 *	  Inserting tasks: what submit, submit_sql and submit_many write.
 *	  Inside a call bracket.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_TASK_INSERT_H
#define SCHEDQ_TASK_INSERT_H

#include "shared/call.h"
#include "store/task.h"

extern void	 schedq_task_insert(SchedqCall					   *call,
								const SchedqTaskOptions *const *opts, int n,
								Datum *ids);
extern int64 schedq_task_insert_one(SchedqCall *call, SchedqTaskOptions *opts);

#endif /* SCHEDQ_TASK_INSERT_H */

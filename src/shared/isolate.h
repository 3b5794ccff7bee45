/*-------------------------------------------------------------------------
 * shared/isolate.h
 *	  Subtransactions for the passes: try a step, and find the one row a
 *	  batch fails on.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_ISOLATE_H
#define SCHEDQ_ISOLATE_H

#include "utils/elog.h"

/* A step run in a subtransaction; arg is the caller's. */
typedef void (*SchedqStep)(void *arg);

extern ErrorData *schedq_isolate_subxact(SchedqStep step, void *arg);
extern char		 *schedq_isolate_try(SchedqStep step, void *arg);

/*
 * A pass's work on a set of task ids: apply does it to ids[0..n-1] and
 * returns how many it worked on; set_aside records that one task could not
 * be worked on, and why.
 */
typedef int (*SchedqApply)(int64 *ids, int n, void *arg);
typedef void (*SchedqSetAside)(int64 id, const char *error, void *arg);

extern int schedq_isolate_batch(const char *pass, int64 *ids, int n,
								SchedqApply apply, SchedqSetAside set_aside,
								void *arg);

#endif /* SCHEDQ_ISOLATE_H */

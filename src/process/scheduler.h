/*-------------------------------------------------------------------------
 * process/scheduler.h
 *	  The per-database scheduler, a background worker.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SCHEDULER_H
#define SCHEDQ_SCHEDULER_H

#include "fmgr.h"

extern PGDLLEXPORT void schedq_scheduler_main(Datum main_arg);

#endif /* SCHEDQ_SCHEDULER_H */

/*-------------------------------------------------------------------------
 * process/cronrun.h
 *	  The background worker that runs a schedq_cron job in another database.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_PROCESS_CRONRUN_H
#define SCHEDQ_PROCESS_CRONRUN_H

#include "postgres.h"

extern PGDLLEXPORT void schedq_cronrun_main(Datum main_arg);

#endif /* SCHEDQ_PROCESS_CRONRUN_H */

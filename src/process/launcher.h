/*-------------------------------------------------------------------------
 * process/launcher.h
 *	  The cluster launcher, a background worker that starts a scheduler
 *	  for each database with schedq.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_LAUNCHER_H
#define SCHEDQ_LAUNCHER_H

#include "fmgr.h"

extern PGDLLEXPORT void schedq_launcher_main(Datum main_arg);
extern void				schedq_launcher_register(void);
extern void				schedq_launcher_probe_at_commit(void);

#endif /* SCHEDQ_LAUNCHER_H */

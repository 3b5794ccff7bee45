/*-------------------------------------------------------------------------
 * process/sqlexec.h
 *	  The built-in SQL executors: their main, and their pool, which each
 *	  database's scheduler keeps.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SQLEXEC_H
#define SCHEDQ_SQLEXEC_H

#include "fmgr.h"

extern PGDLLEXPORT void schedq_sqlexec_main(Datum main_arg);

extern int schedq_sqlexec_keep(int ready, int *wanted, bool *no_slot);

#endif /* SCHEDQ_SQLEXEC_H */

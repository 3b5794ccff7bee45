/*-------------------------------------------------------------------------
 * shared/cronrun.h
 *	  A schedq_cron job of another database: its command run there by a
 *	  background worker connected to that database as the job's user.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CRONRUN_H
#define SCHEDQ_CRONRUN_H

#include "postgres.h"

/* The longest error message a run brings back; longer ones are cut. */
#define CRONRUN_MESSAGE_MAX 2000

/*
 * What the backend that runs a job and its worker share, in a dynamic
 * shared memory segment: the backend writes the request, the worker the
 * outcome (done set last), and the backend reads it once the worker has
 * exited.
 */
typedef struct CronRun
{
	Oid	  dboid;
	Oid	  roleid;
	int64 jobid;
	int	  encoding; /* the caller's database's: the command's, the message's */
	/* the outcome */
	bool  connected; /* the worker connected to the database */
	bool  done;		 /* the worker ran the command (or tried to) */
	int	  sqlstate;	 /* its error's, or 0 */
	int64 rows;		 /* the last statement's rows, without an error */
	char  message[CRONRUN_MESSAGE_MAX + 1];
	char  command[FLEXIBLE_ARRAY_MEMBER];
} CronRun;

extern int64 schedq_cronrun_run(Oid dboid, Oid roleid, int64 jobid,
								const char *command);

#endif /* SCHEDQ_CRONRUN_H */

/*-------------------------------------------------------------------------
 * shim.h
 *	  What the fuzz harness needs from shim.c, the stand-ins for the
 *	  PostgreSQL backend functions that src/cron.c calls.
 *
 * shim.c implements, outside any server: palloc and friends over a
 * per-input arena, the ereport machinery (an ERROR longjmps to the
 * harness), date2j, a small interval_in reached through
 * DirectFunctionCall3Coll, schedq_cron_interval_usecs (same logic as
 * src/schedq.c), and a tiny model of PostgreSQL's time zone API with a few
 * rule-based zones.  pg_strcasecmp and pg_strncasecmp come from libpgport.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_FUZZ_SHIM_H
#define SCHEDQ_FUZZ_SHIM_H

#include "postgres.h"

#include <setjmp.h>

#include "pgtime.h"

/*
 * The error raised last (ereport(ERROR) in the code under test).  Its
 * strings live in the arena: read them before fuzz_arena_reset().
 */
typedef struct FuzzError
{
	int			elevel;
	int			sqlerrcode;
	const char *message;
	const char *detail;
	const char *hint;
	const char *filename;
	int			lineno;
	const char *funcname;
} FuzzError;

extern FuzzError fuzz_last_error;

/*
 * Where errfinish() longjmps for elevel >= ERROR.  NULL means no catcher:
 * the error is reported and the process aborts (the fuzzer sees a crash).
 */
extern jmp_buf *fuzz_error_jmp;

/* Free everything palloc'd since the last reset. */
extern void fuzz_arena_reset(void);
/* Chunks palloc'd and not yet freed. */
extern size_t fuzz_arena_chunks(void);

/* The zones of the model, for the harness's loops and checks. */
extern int	fuzz_tz_count(void);
extern const char *fuzz_tz_name(int i);
/* The UTC offsets (seconds east) a zone can have: one or two. */
extern int	fuzz_tz_offsets(const pg_tz *tz, long *offsets);
/* Check the model against known transitions; abort()s on a mismatch. */
extern void fuzz_tz_selftest(void);

#endif							/* SCHEDQ_FUZZ_SHIM_H */

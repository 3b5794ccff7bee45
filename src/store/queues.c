/*-------------------------------------------------------------------------
 * store/queues.c
 *	  Each backend's cached answer to "is any queue paused?".
 *
 * While no queue of a database is paused, claim leaves out its anti-join
 * with schedq.queue.  Every change of schedq.queue moves the queues
 * generation (shared/commit.h) through the queue_changed trigger
 * (store/triggers.c), and a claim reads the generation before it looks: a
 * claim that starts after such a commit returned looks again, and sees
 * it; only a claim overlapping the commit may act on the state before it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"

#include "shared/commit.h"
#include "store/queues.h"

/* Whether any queue of this database is paused, as of queues_generation. */
static uint64 queues_generation = 0;
static bool	  paused_exist = true;

/*
 * Is any queue of this database paused?
 */
bool
schedq_queues_any_paused(void)
{
	uint64 generation = schedq_commit_generation(GENERATION_QUEUES);

	if (generation != queues_generation)
	{
		if (SPI_execute("SELECT FROM schedq.queue WHERE paused LIMIT 1", false,
						1) != SPI_OK_SELECT)
			elog(ERROR, "could not look for paused queues");
		paused_exist = SPI_processed > 0;
		queues_generation = generation;
	}
	return paused_exist;
}

/*-------------------------------------------------------------------------
 * shared/commit.c
 *	  Run the effects that joined a transaction when it ends, and keep the
 *	  generation counters (see shared/commit.h).
 *
 * One transaction callback serves every effect.  Effects run in the order
 * they joined; each runs pre_commit (PRE_COMMIT), pre_prepare
 * (PRE_PREPARE), commit (COMMIT, after the commit is visible) and reset
 * (the end, however it came), and leaves the transaction after reset.  One
 * subtransaction callback runs sub_commit and sub_abort, with the nesting
 * level of the subtransaction that ends.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "port/atomics.h"

#include "shared/shm.h"
#include "shared/commit.h"

#define XACT_MAX_EFFECTS 16

static SchedqCommitEffect *xact_effects[XACT_MAX_EFFECTS];
static int				   xact_neffects = 0;
static bool				   xact_callback_registered = false;

/* Generations in shared memory, and what this transaction bumps. */
static pg_atomic_uint64 *generations = NULL;
static bool				 generation_bumped[NUM_GENERATIONS];

/* For PREPARE's error: what the transaction did. */
static const char *const generation_changes[NUM_GENERATIONS] = {
	[GENERATION_GRANT_KEYS] = "rotated the token signing key",
	[GENERATION_BUDGETS] = "changed a budget",
	[GENERATION_QUEUES] = "paused or resumed a queue",
	[GENERATION_WORK_GRANTS] = "granted or revoked work",
};

static void
xact_callback(XactEvent event, void *arg)
{
	int n = xact_neffects;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			for (int i = 0; i < n; i++)
				if (xact_effects[i]->pre_commit)
					xact_effects[i]->pre_commit();
			return;
		case XACT_EVENT_PRE_PREPARE:
			for (int i = 0; i < n; i++)
				if (xact_effects[i]->pre_prepare)
					xact_effects[i]->pre_prepare();
			return;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			for (int i = 0; i < n; i++)
				if (xact_effects[i]->commit)
					xact_effects[i]->commit();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	for (int i = 0; i < n; i++)
	{
		xact_effects[i]->reset();
		xact_effects[i]->joined = false;
	}
	xact_neffects = 0;
}

static void
xact_sub_callback(SubXactEvent event, SubTransactionId subid,
				  SubTransactionId parent_subid, void *arg)
{
	/* still the level of the subtransaction that ends */
	int level = GetCurrentTransactionNestLevel();

	for (int i = 0; i < xact_neffects; i++)
	{
		if (event == SUBXACT_EVENT_COMMIT_SUB && xact_effects[i]->sub_commit)
			xact_effects[i]->sub_commit(level);
		else if (event == SUBXACT_EVENT_ABORT_SUB && xact_effects[i]->sub_abort)
			xact_effects[i]->sub_abort(level);
	}
}

/*
 * Have the effect run at the end of the current transaction.
 */
void
schedq_commit_join(SchedqCommitEffect *effect)
{
	if (effect->joined)
		return;
	if (!xact_callback_registered)
	{
		RegisterXactCallback(xact_callback, NULL);
		RegisterSubXactCallback(xact_sub_callback, NULL);
		xact_callback_registered = true;
	}
	if (xact_neffects >= XACT_MAX_EFFECTS)
		elog(ERROR, "too many schedq effects in one transaction");
	xact_effects[xact_neffects++] = effect;
	effect->joined = true;
}

static void
generation_bump_all(void)
{
	for (int g = 0; g < NUM_GENERATIONS; g++)
		if (generation_bumped[g])
			pg_atomic_fetch_add_u64(&generations[g], 1);
}

static void
generation_refuse_prepare(void)
{
	for (int g = 0; g < NUM_GENERATIONS; g++)
		if (generation_bumped[g])
			ereport(ERROR, errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("cannot PREPARE a transaction that %s",
						   generation_changes[g]));
}

static void
generation_reset(void)
{
	/* after the end, committed or not: a reader may have cached the change */
	generation_bump_all();
	memset(generation_bumped, 0, sizeof(generation_bumped));
}

static SchedqCommitEffect generation_effect = {
	.pre_commit = generation_bump_all,
	.pre_prepare = generation_refuse_prepare,
	.reset = generation_reset,
};

static Size
generation_shmem_size(void)
{
	return sizeof(pg_atomic_uint64) * NUM_GENERATIONS;
}

static void
generation_shmem_init(void *part)
{
	pg_atomic_uint64 *counters = part;

	for (int g = 0; g < NUM_GENERATIONS; g++)
		pg_atomic_init_u64(&counters[g], 1);
}

/*
 * Add the generations to shared memory; from _PG_init while preloading.
 */
void
schedq_commit_init(void)
{
	schedq_shm_add("schedq generations", generation_shmem_size,
				   (void **) &generations, generation_shmem_init);
}

/*
 * The current value of a generation; never 0, which callers may use for
 * "nothing cached".
 */
uint64
schedq_commit_generation(SchedqGeneration generation)
{
	return pg_atomic_read_u64(&generations[generation]);
}

/*
 * This transaction changes what the generation stands for.  A no-op when
 * the library was not preloaded (nobody caches anything then).
 */
void
schedq_commit_generation_bump(SchedqGeneration generation)
{
	if (generations == NULL)
		return;
	generation_bumped[generation] = true;
	schedq_commit_join(&generation_effect);
}

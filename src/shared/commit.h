/*-------------------------------------------------------------------------
 * shared/commit.h
 *	  Effects at the end of a transaction, and generation counters that
 *	  tell every backend to look again after a commit.
 *
 * A module that must act when the transaction ends (wake a process after
 * the commit, publish a change) describes its effect once, as a static
 * SchedqCommitEffect, and joins the current transaction whenever it records
 * something to do.  Joining is cheap and idempotent.  An effect whose
 * records must follow savepoints notes GetCurrentTransactionNestLevel()
 * with each, and has sub_commit and sub_abort.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_COMMIT_H
#define SCHEDQ_COMMIT_H

typedef struct SchedqCommitEffect
{
	/* Before the commit becomes visible; may raise an error.  Or NULL. */
	void (*pre_commit)(void);
	/* Before PREPARE TRANSACTION; raise an error to refuse it.  Or NULL. */
	void (*pre_prepare)(void);
	/* After the commit is visible to everyone; must not fail.  Or NULL. */
	void (*commit)(void);

	/*
	 * The subtransaction at nesting level `level` committed into its
	 * parent: what was recorded at that level or deeper now belongs to
	 * level - 1.  Or NULL (then what a subtransaction records stands even
	 * if it aborts).
	 */
	void (*sub_commit)(int level);
	/* It aborted: forget what was recorded at `level` or deeper.  Or NULL. */
	void (*sub_abort)(int level);
	/* Last, however the transaction ended: forget what was recorded. */
	void (*reset)(void);
	bool joined; /* shared/commit.c's: joined the current transaction */
} SchedqCommitEffect;

extern void schedq_commit_join(SchedqCommitEffect *effect);

/*
 * Generations: shared counters that change after a commit that changed
 * what they stand for, so that a backend caching a derived fact (whether
 * any budget exists, say) knows to look again.  Bumped just before the
 * commit becomes visible and again after the transaction ends; a reader
 * reads the generation before it looks, so a look that starts after the
 * commit returned always sees it.  A transaction that bumps one cannot be
 * prepared: its commit would come from a session that bumps nothing.
 */
typedef enum SchedqGeneration
{
	GENERATION_GRANT_KEYS,
	GENERATION_BUDGETS,
	GENERATION_QUEUES,
	GENERATION_WORK_GRANTS,
	NUM_GENERATIONS
} SchedqGeneration;

extern void	  schedq_commit_init(void);
extern uint64 schedq_commit_generation(SchedqGeneration generation);
extern void	  schedq_commit_generation_bump(SchedqGeneration generation);

#endif /* SCHEDQ_COMMIT_H */

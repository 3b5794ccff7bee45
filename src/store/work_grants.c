/*-------------------------------------------------------------------------
 * store/work_grants.c
 *	  schedq.work_grant: the roles whose tasks a worker may claim and
 *	  finish without being a member of them; and each backend's cached
 *	  answer to "whose tasks may this caller work on by grant?".
 *
 * A claim takes the tasks of the owners its caller has the privileges of
 * (membership, the row-level security rule) and of the owners some role
 * the caller has the privileges of was granted work for.  Membership
 * would let a worker act as the owner everywhere; a work grant lets it
 * claim, and with the claim's token finish, the owner's tasks, and
 * nothing else.
 *
 * The claim needs the granted owners at every call, so a backend keeps
 * them, for one caller, as of a generation: every change of
 * schedq.work_grant moves GENERATION_WORK_GRANTS through its statement
 * trigger (store/triggers.c), and a change of role membership (which
 * decides which grants reach the caller) drops the cache through a
 * syscache callback.  A claim that starts after such a commit returned
 * looks again, as with the paused queues (store/queues.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "shared/commit.h"
#include "shared/plan.h"
#include "store/work_grants.h"

/* The owners the cached caller may work for by grant. */
static Oid	  cached_caller = InvalidOid;
static uint64 cached_generation = 0;
static Oid	 *cached_owners = NULL;
static int	  cached_nowners = 0;
static bool	  callbacks_registered = false;
/* Counts invalidations, so that one during a look is not lost. */
static uint64 invalidations = 0;

static SchedqQuery q_owners =
	SCHEDQ_QUERY("SELECT DISTINCT owner::oid FROM schedq.work_grant"
				 " WHERE pg_has_role($1, worker::oid, 'USAGE') ORDER BY 1",
				 OIDOID);
static SchedqQuery q_grant =
	SCHEDQ_QUERY("INSERT INTO schedq.work_grant (worker, owner, granted_by)"
				 " VALUES ($1, $2, $3) ON CONFLICT (worker, owner) DO NOTHING",
				 REGROLEOID, REGROLEOID, REGROLEOID);
static SchedqQuery q_revoke =
	SCHEDQ_QUERY("DELETE FROM schedq.work_grant WHERE worker = $1"
				 " AND owner = $2",
				 REGROLEOID, REGROLEOID);

/* A role's membership, or a role, changed: look again at the next claim. */
static void
work_grants_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	cached_caller = InvalidOid;
	invalidations++;
}

/*
 * Does this database's catalog have schedq.work_grant (version 1.2 on)?
 * A database not yet updated has no work grants.
 */
static bool
work_grants_table_exists(void)
{
	Oid nsp = get_namespace_oid("schedq", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("work_grant", nsp));
}

/*
 * The owners the caller may work for by a work grant, sorted; *n of them.
 * Inside the call bracket (shared/call.h): SPI is connected.  The array
 * is the backend's cache: the caller must not change or keep it.
 */
const Oid *
schedq_work_grants_owners(Oid caller, int *n)
{
	uint64 generation = schedq_commit_generation(GENERATION_WORK_GRANTS);

	if (!callbacks_registered)
	{
		CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, work_grants_invalidate,
									  (Datum) 0);
		CacheRegisterSyscacheCallback(AUTHOID, work_grants_invalidate,
									  (Datum) 0);
		callbacks_registered = true;
	}
	while (caller != cached_caller || generation != cached_generation)
	{
		Datum  arg = ObjectIdGetDatum(caller);
		int	   found = 0;
		Oid	  *owners = NULL;
		uint64 seen = invalidations;

		if (work_grants_table_exists())
		{
			found = schedq_plan_run(&q_owners, &arg, NULL, 0, SPI_OK_SELECT);
			owners = MemoryContextAlloc(TopMemoryContext,
										sizeof(Oid) * Max(found, 1));
			for (int i = 0; i < found; i++)
			{
				bool isnull;

				owners[i] = DatumGetObjectId(
					SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
								  1, &isnull));
			}
		}
		if (cached_owners)
			pfree(cached_owners);
		cached_owners = owners;
		cached_nowners = found;
		/* a membership that changed during the look: look again */
		cached_caller = invalidations == seen ? caller : InvalidOid;
		cached_generation = generation;
	}
	*n = cached_nowners;
	return cached_owners;
}

/*
 * The same owners as an oid[] in the current memory context, for a claim
 * statement's parameter; (Datum) 0 when there are none.
 */
Datum
schedq_work_grants_array(Oid caller)
{
	int		   n;
	const Oid *owners = schedq_work_grants_owners(caller, &n);
	Datum	  *elems;

	if (n == 0)
		return (Datum) 0;
	elems = palloc(sizeof(Datum) * n);

	for (int i = 0; i < n; i++)
		elems[i] = ObjectIdGetDatum(owners[i]);
	return PointerGetDatum(
		construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * Record that worker may work for owner, granted by grantor.  False when
 * it already might.
 */
bool
schedq_work_grants_add(Oid worker, Oid owner, Oid grantor)
{
	Datum values[3] = { ObjectIdGetDatum(worker), ObjectIdGetDatum(owner),
						ObjectIdGetDatum(grantor) };

	return schedq_plan_run(&q_grant, values, NULL, 0, SPI_OK_INSERT) == 1;
}

/*
 * Take back what schedq_work_grants_add recorded.  False when there was
 * nothing to take back.
 */
bool
schedq_work_grants_remove(Oid worker, Oid owner)
{
	Datum values[2] = { ObjectIdGetDatum(worker), ObjectIdGetDatum(owner) };

	return schedq_plan_run(&q_revoke, values, NULL, 0, SPI_OK_DELETE) == 1;
}

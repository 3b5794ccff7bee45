/*-------------------------------------------------------------------------
 * shared/isolate.c
 *	  Subtransactions for the passes: a pass never dies of one bad row.
 *
 * A pass (promotion, reaper, retention) first picks the ids of the tasks
 * it will work on, then applies its work to all of them at once.  If
 * that fails -- a row that breaks an index, a value no statement expected,
 * whatever a superuser's DML left behind -- the work is undone and tried
 * again on each half, down to the single task that fails; that task is
 * set aside with the error (each pass says how: parked, postponed), the
 * error is logged once, and every other task of the batch gets its work.
 * So one bad row costs a pass about 2 log2(n) subtransactions, and the
 * database's other tasks keep flowing.
 *
 * schedq_isolate_subxact is the subtransaction bracket itself, as PL/pgSQL's
 * exception blocks use it: on error, the subtransaction is rolled back
 * and the error returned instead of raised; the scheduler runs each of
 * its passes so.  schedq_isolate_try is the same for work on rows: what is not a
 * row's fault -- a query cancel, a shutdown request, a lock timeout, a
 * deadlock or serialization failure, all of which pass, or a server that
 * refuses writes (read-only: the scheduler then stands aside) -- is raised
 * again, for the pass as a whole to be retried.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "shared/isolate.h"
#include "shared/metrics.h"

/*
 * Run step(arg) in a subtransaction.  Returns NULL when it succeeded, or
 * the error that rolled it back (in the caller's memory context).
 */
ErrorData *
schedq_isolate_subxact(SchedqStep step, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData	 *edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		step(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_END_TRY();
	return edata;
}

/*
 * As schedq_isolate_subxact, for a step that works on rows: returns the message
 * of an error that may be the rows' fault, and raises again one that is
 * not (see the file header).
 */
char *
schedq_isolate_try(SchedqStep step, void *arg)
{
	ErrorData *edata = schedq_isolate_subxact(step, arg);

	if (edata == NULL)
		return NULL;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
		edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN ||
		edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED ||
		edata->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
		edata->sqlerrcode == ERRCODE_READ_ONLY_SQL_TRANSACTION)
		ReThrowError(edata);
	return edata->message;
}

typedef struct IsolateStep
{
	SchedqApply	   apply;
	SchedqSetAside set_aside;
	int64		  *ids;
	int			   n;
	const char	  *error;
	void		  *arg;
	int			   done;
} IsolateStep;

static void
isolate_apply(void *arg)
{
	IsolateStep *s = arg;

	s->done = s->apply(s->ids, s->n, s->arg);
}

static void
isolate_set_aside(void *arg)
{
	IsolateStep *s = arg;

	s->set_aside(s->ids[0], s->error, s->arg);
}

static int
isolate_range(const char *pass, IsolateStep *whole, int64 *ids, int n)
{
	IsolateStep step = *whole;
	char	   *error;

	CHECK_FOR_INTERRUPTS();
	step.ids = ids;
	step.n = n;
	error = schedq_isolate_try(isolate_apply, &step);
	if (error == NULL)
		return step.done;
	if (n > 1)
		return isolate_range(pass, whole, ids, n / 2) +
			   isolate_range(pass, whole, ids + n / 2, n - n / 2);

	ereport(WARNING,
			errmsg("schedq %s pass set task " INT64_FORMAT " aside: %s", pass,
				   ids[0], error));
	schedq_metrics_count(METRIC_TASKS_SET_ASIDE, 1);
	step.error = error;
	error = schedq_isolate_try(isolate_set_aside, &step);
	if (error != NULL)
		ereport(WARNING,
				errmsg("schedq %s pass could not set task " INT64_FORMAT
					   " aside: %s",
					   pass, ids[0], error));
	return 0;
}

/*
 * Apply a pass's work to ids[0..n-1], setting aside each task it fails on
 * (see the file header).  Returns how many tasks the work was done to.
 * Inside the pass's transaction and SPI connection.
 */
int
schedq_isolate_batch(const char *pass, int64 *ids, int n, SchedqApply apply,
					 SchedqSetAside set_aside, void *arg)
{
	IsolateStep whole = { apply, set_aside, ids, n, NULL, arg, 0 };

	if (n == 0)
		return 0;
	return isolate_range(pass, &whole, ids, n);
}

/*-------------------------------------------------------------------------
 * schedq.c
 *	  Library entry point: module magic, and what _PG_init sets up.
 *
 * schedq must be in shared_preload_libraries: its shared memory and its
 * background workers can only be set up by the postmaster.  Loaded any
 * other way, it still defines its settings so that postgresql.conf entries
 * are valid, and every SQL function that needs shared memory says so.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "call.h"
#include "executor.h"
#include "floor.h"
#include "launcher.h"
#include "metrics.h"
#include "settings.h"
#include "shmem.h"
#include "utility.h"
#include "wake.h"
#include "xact.h"

PG_MODULE_MAGIC;

void _PG_init(void);

/*
 * Define the settings and, when preloading, add each module's part of
 * shared memory, install the hooks and register the launcher.
 */
void
_PG_init(void)
{
	schedq_settings_define();
	if (!process_shared_preload_libraries_in_progress)
		return;

	schedq_metrics_init();
	schedq_xact_init();
	schedq_floor_init();
	schedq_wake_init();
	schedq_executor_init();
	schedq_shmem_install_hooks();

	schedq_call_init();
	schedq_utility_init();
	if (!IsBinaryUpgrade)
		schedq_launcher_register();
}

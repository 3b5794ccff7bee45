/*-------------------------------------------------------------------------
 * process/schedq.c
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

#include "shared/call.h"
#include "shared/databases.h"
#include "shared/sqlslots.h"
#include "store/floor.h"
#include "process/launcher.h"
#include "shared/metrics.h"
#include "base/settings.h"
#include "shared/shm.h"
#include "process/hooks.h"
#include "shared/wake.h"
#include "shared/commit.h"

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
	schedq_commit_init();
	schedq_floor_init();
	schedq_wake_init();
	schedq_sqlslots_init();
	schedq_databases_init();
	schedq_shm_install_hooks();

	schedq_call_init();
	schedq_hooks_init();
	if (!IsBinaryUpgrade)
		schedq_launcher_register();
}

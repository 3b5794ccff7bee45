/*-------------------------------------------------------------------------
 * base/settings.c
 *	  Define schedq's configuration parameters.
 *
 * They are defined whether or not the library is preloaded, so that
 * postgresql.conf entries are valid either way.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "base/settings.h"

bool schedq_enabled = true;
int	 schedq_promote_interval_ms = 1000;
int	 schedq_reaper_interval_ms = 1000;
int	 schedq_default_lease_s = 30;
int	 schedq_sql_workers = 2;
int	 schedq_sql_idle_timeout_ms = 60 * 1000;
int	 schedq_retention_s = 7 * 24 * 3600;
int	 schedq_failed_retention_s = 30 * 24 * 3600;
int	 schedq_max_payload_bytes = 1024 * 1024;
int	 schedq_claim_floor_interval_ms = 10;
int	 schedq_sql_task_timeout_s = 3600;
int	 schedq_sql_cancel_grace_ms = 10 * 1000;
bool schedq_direct_writes = true;

/*
 * Define every schedq.* parameter and reserve the prefix.
 */
void
schedq_settings_define(void)
{
	DefineCustomBoolVariable("schedq.enabled",
							 "Whether schedq's background workers act.", NULL,
							 &schedq_enabled, true, PGC_SIGHUP, 0, NULL, NULL,
							 NULL);
	DefineCustomIntVariable(
		"schedq.promote_interval",
		"Longest the scheduler sleeps between promotion passes.",
		"Submits and due times wake the scheduler at once; this is only a fallback.",
		&schedq_promote_interval_ms, 1000, 10, 3600 * 1000, PGC_SIGHUP,
		GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("schedq.reaper_interval",
							"Time between passes of the reaper.", NULL,
							&schedq_reaper_interval_ms, 1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("schedq.default_lease",
							"Lease given by a claim that names none.", NULL,
							&schedq_default_lease_s, 30, 1, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"schedq.sql_workers", "Most built-in SQL executors per database.",
		"They are started when SQL tasks are ready to run and exit after "
		"schedq.sql_idle_timeout without one.",
		&schedq_sql_workers, 2, 0, 64, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"schedq.sql_idle_timeout",
		"How long a SQL executor waits without a SQL task before it exits.",
		"-1 keeps it until the server stops.", &schedq_sql_idle_timeout_ms,
		60 * 1000, -1, 24 * 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"schedq.retention",
		"How long done, canceled and skipped tasks are kept; -1 keeps them forever.",
		"Failed tasks are kept for schedq.failed_retention.",
		&schedq_retention_s, 7 * 24 * 3600, -1, INT_MAX, PGC_SIGHUP, GUC_UNIT_S,
		NULL, NULL, NULL);
	DefineCustomIntVariable(
		"schedq.failed_retention",
		"How long failed tasks are kept; -1 keeps them forever.",
		"Done, canceled and skipped tasks are kept for schedq.retention.",
		&schedq_failed_retention_s, 30 * 24 * 3600, -1, INT_MAX, PGC_SIGHUP,
		GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("schedq.max_payload",
							"Largest payload a task may carry.", NULL,
							&schedq_max_payload_bytes, 1024 * 1024, 0,
							1024 * 1024 * 1024, PGC_SUSET, GUC_UNIT_BYTE, NULL,
							NULL, NULL);
	DefineCustomIntVariable(
		"schedq.claim_floor_interval",
		"How often a claim moves the claim floor up to the first available task.",
		"-1 turns the floor off: every claim starts at the head of the "
		"available tasks.",
		&schedq_claim_floor_interval_ms, 10, -1, 3600 * 1000, PGC_SUSET,
		GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"schedq.sql_task_timeout",
		"Timeout of a SQL task submitted or scheduled without one.",
		"0 gives such tasks no timeout.", &schedq_sql_task_timeout_s, 3600, 0,
		INT_MAX, PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"schedq.sql_cancel_grace",
		"How long a SQL executor may ignore the cancel of its statement.",
		"After that the SQL executor is terminated, and started again.",
		&schedq_sql_cancel_grace_ms, 10 * 1000, 0, 3600 * 1000, PGC_SIGHUP,
		GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable(
		"schedq.direct_writes",
		"Whether schedq writes its task table without the SQL executor "
		"where it may.",
		"Off, every submit, claim and complete runs its SQL statement; "
		"for diagnosis.",
		&schedq_direct_writes, true, PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("schedq");
}

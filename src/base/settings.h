/*-------------------------------------------------------------------------
 * base/settings.h
 *	  schedq's configuration parameters (schedq.*), as C variables.  Each
 *	  name ends in its unit.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_SETTINGS_H
#define SCHEDQ_SETTINGS_H

extern bool schedq_enabled;
extern int	schedq_promote_interval_ms;
extern int	schedq_reaper_interval_ms;
extern int	schedq_default_lease_s;
extern int	schedq_sql_workers;
extern int	schedq_sql_idle_timeout_ms;
extern int	schedq_retention_s;
extern int	schedq_failed_retention_s;
extern int	schedq_max_payload_bytes;
extern int	schedq_claim_floor_interval_ms;
extern int	schedq_sql_task_timeout_s;
extern int	schedq_sql_cancel_grace_ms;
extern bool schedq_direct_writes;

extern void schedq_settings_define(void);

#endif /* SCHEDQ_SETTINGS_H */

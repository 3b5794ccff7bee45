/*-------------------------------------------------------------------------
 * base/cron_systemd.h
 *	  systemd calendar events, parsed for base/cron.c.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_CRON_SYSTEMD_H
#define SCHEDQ_CRON_SYSTEMD_H

#include "base/cron_field.h"

extern void schedq_cron_systemd_parse(const char *text, char **tokens, int n,
									  SchedqSchedule *s);

#endif /* SCHEDQ_CRON_SYSTEMD_H */

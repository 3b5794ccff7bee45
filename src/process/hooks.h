/*-------------------------------------------------------------------------
 * process/hooks.h
 *	  The utility hook, which follows the commands that concern schedq's
 *	  workers.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_UTILITY_H
#define SCHEDQ_UTILITY_H

extern void schedq_hooks_init(void);

#endif /* SCHEDQ_UTILITY_H */

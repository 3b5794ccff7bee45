/*-------------------------------------------------------------------------
 * process/hooks.h
 *	  The utility hook, which follows the commands that concern schedq's
 *	  background processes.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_HOOKS_H
#define SCHEDQ_HOOKS_H

extern void schedq_hooks_init(void);

#endif /* SCHEDQ_HOOKS_H */

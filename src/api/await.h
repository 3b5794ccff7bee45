/*-------------------------------------------------------------------------
 * api/await.h
 *	  What a waiting claim does with a wake-up it could not use.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_AWAIT_H
#define SCHEDQ_AWAIT_H

extern void schedq_await_pass_on(void);

#endif /* SCHEDQ_AWAIT_H */

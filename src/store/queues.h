/*-------------------------------------------------------------------------
 * store/queues.h
 *	  Whether any queue is paused, for claims.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_QUEUES_H
#define SCHEDQ_QUEUES_H

extern bool schedq_queues_any_paused(void);

#endif /* SCHEDQ_QUEUES_H */

/*-------------------------------------------------------------------------
 * api/queue.h
 *	  Paused queues: whether a database has any.
 *-------------------------------------------------------------------------
 */
#ifndef SCHEDQ_QUEUE_H
#define SCHEDQ_QUEUE_H

extern bool schedq_queue_any_paused(void);

#endif /* SCHEDQ_QUEUE_H */

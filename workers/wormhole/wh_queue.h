/*
 * wh_queue.h - the batch pool and the double-buffered queue per writer.
 *
 * Pool. Every batch of a run comes from one pool of a fixed number of
 * batches, which bounds the run's memory: a reader that finds the pool empty
 * waits (the writers are the slow side). A batch handed to k writer queues
 * carries refs = k and returns to the pool when the last writer releases it.
 *
 * Queue. One per writer; all of the writer's channels drain it. Producers
 * (reader threads) append to the "fill" side under the fill lock; consumers
 * take from the "drain" side under the drain lock, and when the drain side is
 * empty a consumer swaps the two sides while holding both locks (drain lock
 * first, then fill lock: the only order in which both are taken). So readers
 * and writers contend only at a swap, not per batch.
 *
 * Call order: init -> push and pop (any number, from any threads) -> close (no more pushes;
 * pops drain what is left, then return NULL) -> destroy after every thread
 * ended. wh_queue_cancel wakes every waiter; waits then return at once.
 */
#ifndef WH_QUEUE_H
#define WH_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "wh.h"

typedef struct wh_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    wh_batch **free;
    wh_batch **all; /* every batch, free or not */
    size_t nfree, total;
    int cancelled;
    atomic_uint_fast64_t wait_ns; /* time readers spent waiting for a batch */
} wh_pool;

/* total batches of cap_rows rows and cap_bytes soft bytes each. */
void wh_pool_init(wh_pool *p, size_t total, size_t cap_rows, size_t cap_bytes);
/* Frees every batch, returned or not (call after every thread ended). */
void wh_pool_destroy(wh_pool *p);
/* A free batch, reset for ncols columns; blocks while none is free. NULL once
 * cancelled. */
wh_batch *wh_pool_get(wh_pool *p, size_t ncols);
/* Drop one reference; the batch returns to the pool at zero. */
void wh_pool_release(wh_pool *p, wh_batch *b);
void wh_pool_cancel(wh_pool *p);

typedef struct wh_queue {
    pthread_mutex_t fill_lock, drain_lock;
    pthread_cond_t not_full, not_empty; /* both under fill_lock */
    wh_batch **fill, **drain;
    size_t nfill, ndrain, drain_pos, cap;
    int closed, cancelled;
    atomic_uint_fast64_t push_wait_ns; /* producers waiting for room */
    atomic_uint_fast64_t pop_wait_ns;  /* consumers waiting for a batch */
} wh_queue;

void wh_queue_init(wh_queue *q, size_t cap);
void wh_queue_destroy(wh_queue *q);
/* Append b; blocks while the fill side holds cap batches. ORR_ECANCELLED
 * (b not queued) once cancelled. */
orr_status wh_queue_push(wh_queue *q, wh_batch *b);
/* Next batch, blocking; NULL when the queue is closed and empty, or cancelled. */
wh_batch *wh_queue_pop(wh_queue *q);
void wh_queue_close(wh_queue *q);
void wh_queue_cancel(wh_queue *q);

/* Monotonic nanoseconds. */
uint64_t wh_now_ns(void);

#endif

/* wh_queue.c - batch pool and double-buffered writer queue (see wh_queue.h). */
#include "wh_queue.h"

#include <stdlib.h>
#include <time.h>

#include "orr_alloc.h"

uint64_t wh_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void wh_pool_init(wh_pool *p, size_t total, size_t cap_rows, size_t cap_bytes)
{
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->free = orr_xcalloc(total, sizeof(*p->free));
    p->all = orr_xcalloc(total, sizeof(*p->all));
    for (size_t i = 0; i < total; i++)
        p->all[i] = p->free[i] = wh_batch_new(cap_rows, cap_bytes);
    p->nfree = p->total = total;
    p->cancelled = 0;
    atomic_init(&p->wait_ns, 0);
}

void wh_pool_destroy(wh_pool *p)
{
    for (size_t i = 0; i < p->total; i++)
        wh_batch_free(p->all[i]);
    free(p->all);
    free(p->free);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
}

wh_batch *wh_pool_get(wh_pool *p, size_t ncols)
{
    pthread_mutex_lock(&p->lock);
    if (p->nfree == 0 && !p->cancelled) {
        uint64_t t0 = wh_now_ns();
        while (p->nfree == 0 && !p->cancelled)
            pthread_cond_wait(&p->cond, &p->lock);
        atomic_fetch_add(&p->wait_ns, wh_now_ns() - t0);
    }
    wh_batch *b = NULL;
    if (!p->cancelled)
        b = p->free[--p->nfree];
    pthread_mutex_unlock(&p->lock);
    if (b) {
        wh_batch_reset(b, ncols);
        atomic_store(&b->refs, 1);
    }
    return b;
}

void wh_pool_release(wh_pool *p, wh_batch *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    pthread_mutex_lock(&p->lock);
    p->free[p->nfree++] = b;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

void wh_pool_cancel(wh_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->cancelled = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

void wh_queue_init(wh_queue *q, size_t cap)
{
    pthread_mutex_init(&q->fill_lock, NULL);
    pthread_mutex_init(&q->drain_lock, NULL);
    pthread_cond_init(&q->not_full, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    q->cap = cap ? cap : 1;
    q->fill = orr_xcalloc(q->cap, sizeof(*q->fill));
    q->drain = orr_xcalloc(q->cap, sizeof(*q->drain));
    q->nfill = q->ndrain = q->drain_pos = 0;
    q->closed = q->cancelled = 0;
    atomic_init(&q->push_wait_ns, 0);
    atomic_init(&q->pop_wait_ns, 0);
}

void wh_queue_destroy(wh_queue *q)
{
    free(q->fill);
    free(q->drain);
    pthread_mutex_destroy(&q->fill_lock);
    pthread_mutex_destroy(&q->drain_lock);
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
}

orr_status wh_queue_push(wh_queue *q, wh_batch *b)
{
    pthread_mutex_lock(&q->fill_lock);
    if (q->nfill >= q->cap && !q->cancelled) {
        uint64_t t0 = wh_now_ns();
        while (q->nfill >= q->cap && !q->cancelled)
            pthread_cond_wait(&q->not_full, &q->fill_lock);
        atomic_fetch_add(&q->push_wait_ns, wh_now_ns() - t0);
    }
    if (q->cancelled) {
        pthread_mutex_unlock(&q->fill_lock);
        return ORR_ECANCELLED;
    }
    q->fill[q->nfill++] = b;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->fill_lock);
    return ORR_OK;
}

wh_batch *wh_queue_pop(wh_queue *q)
{
    wh_batch *b = NULL;
    pthread_mutex_lock(&q->drain_lock);
    if (q->drain_pos == q->ndrain) {
        /* Drain side empty: swap with the fill side, waiting for one. */
        pthread_mutex_lock(&q->fill_lock);
        if (q->nfill == 0 && !q->closed && !q->cancelled) {
            uint64_t t0 = wh_now_ns();
            while (q->nfill == 0 && !q->closed && !q->cancelled)
                pthread_cond_wait(&q->not_empty, &q->fill_lock);
            atomic_fetch_add(&q->pop_wait_ns, wh_now_ns() - t0);
        }
        if (!q->cancelled && q->nfill > 0) {
            wh_batch **t = q->drain;
            q->drain = q->fill;
            q->fill = t;
            q->ndrain = q->nfill;
            q->drain_pos = 0;
            q->nfill = 0;
            pthread_cond_broadcast(&q->not_full);
        }
        pthread_mutex_unlock(&q->fill_lock);
    }
    if (!q->cancelled && q->drain_pos < q->ndrain)
        b = q->drain[q->drain_pos++];
    pthread_mutex_unlock(&q->drain_lock);
    return b;
}

void wh_queue_close(wh_queue *q)
{
    pthread_mutex_lock(&q->fill_lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->fill_lock);
}

void wh_queue_cancel(wh_queue *q)
{
    pthread_mutex_lock(&q->fill_lock);
    q->cancelled = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->fill_lock);
}

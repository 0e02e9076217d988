/* sort_chan.c - packs and queues between the parse stage and the writers (see sort_chan.h). */
#include "sort_chan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_clock.h"

#define CHAN_HUGE_PAGE ((size_t)2 << 20)

void sort_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void sort_queue_init(sort_queue *q)
{
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    sort_cond_init(&q->cv);
}

void sort_queue_destroy(sort_queue *q)
{
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}

void sort_queue_push(sort_queue *q, sort_pack *p)
{
    p->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    q->n++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

sort_pack *sort_queue_pop(sort_queue *q, int wait_ms)
{
    struct timespec dl = orr_clock_after(CLOCK_MONOTONIC, wait_ms);
    pthread_mutex_lock(&q->mu);
    while (!q->head && wait_ms > 0) {
        if (pthread_cond_timedwait(&q->cv, &q->mu, &dl) == ETIMEDOUT)
            break;
    }
    sort_pack *p = q->head;
    if (p) {
        q->head = p->next;
        if (!q->head)
            q->tail = NULL;
        q->n--;
        p->next = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return p;
}

size_t sort_queue_len(sort_queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->n;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void sort_pool_fill(sort_queue *pool, int n, size_t pack_bytes, sort_slab *slab)
{
    memset(slab, 0, sizeof *slab);
    /* A piece holds pack_bytes, the NUL orr_buf keeps room for, and stays
     * 64-byte aligned. */
    size_t piece = (pack_bytes + 1 + 63) & ~(size_t)63;
    char *start = NULL;
    if (pack_bytes > 0 && n > 0 && piece <= (SIZE_MAX / 2 - CHAN_HUGE_PAGE) / (size_t)n) {
        /* One huge page more, to start the pieces on a huge page boundary
         * whatever alignment the kernel gives a large mapping. */
        size_t use = (piece * (size_t)n + CHAN_HUGE_PAGE - 1) & ~(CHAN_HUGE_PAGE - 1);
        size_t len = use + CHAN_HUGE_PAGE;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            start =
                (char *)(((uintptr_t)m + CHAN_HUGE_PAGE - 1) & ~(uintptr_t)(CHAN_HUGE_PAGE - 1));
            (void)madvise(start, use, MADV_HUGEPAGE); /* best effort: off, or not built in */
            slab->base = m;
            slab->len = len;
        }
    }
    for (int i = 0; i < n; i++) {
        sort_pack *k = orr_xcalloc(1, sizeof *k);
        k->pooled = 1;
        if (start) {
            k->slab = 1;
            k->data.data = start + (size_t)i * piece;
            k->data.cap = piece;
        }
        sort_queue_push(pool, k);
    }
}

void sort_pool_drain(sort_queue *pool, sort_slab *slab)
{
    sort_pack *k;
    while ((k = sort_queue_pop(pool, 0)) != NULL) {
        if (!k->slab)
            orr_buf_free(&k->data);
        free(k);
    }
    if (slab->base)
        munmap(slab->base, slab->len);
    memset(slab, 0, sizeof *slab);
}

/* A record that does not fit the pack's piece of the mapping: the pack
 * moves to a heap buffer, which it keeps. */
static void chan_pack_leave_slab(sort_pack *p, size_t extra)
{
    orr_buf b = ORR_BUF_INIT;
    orr_buf_reserve(&b, p->data.len + extra);
    memcpy(b.data, p->data.data, p->data.len);
    b.len = p->data.len;
    p->data = b;
    p->slab = 0;
}

void sort_pack_add(sort_pack *p, sort_unit *u, uint32_t split, uint32_t partition, sort_off off,
                   const void *rec, uint32_t len)
{
    sort_pent h = {u, off, partition, split, len, 0};
    size_t need = sort_pack_need(len), pad = need - sizeof h - len;
    if (p->slab && p->data.len + need + 1 > p->data.cap)
        chan_pack_leave_slab(p, need);
    orr_buf_reserve(&p->data, need);
    memcpy(p->data.data + p->data.len, &h, sizeof h);
    memcpy(p->data.data + p->data.len + sizeof h, rec, len);
    memset(p->data.data + p->data.len + sizeof h + len, 0, pad);
    p->data.len += sizeof h + len + pad;
    p->n++;
}

const sort_pent *sort_pack_next(const sort_pack *p, size_t *cursor, const char **rec)
{
    if (*cursor >= p->data.len)
        return NULL;
    const sort_pent *h = (const sort_pent *)(const void *)(p->data.data + *cursor);
    *rec = p->data.data + *cursor + sizeof *h;
    *cursor += sort_pack_need(h->len);
    return h;
}

void sort_pack_clear(sort_pack *p)
{
    orr_buf_reset(&p->data);
    p->n = 0;
    p->nstamps = 0;
    p->batch = 0;
    p->kind = SORT_PACK_DATA;
}

void sort_pack_stamp(sort_pack *p, uint32_t partition, sort_off next)
{
    for (size_t i = 0; i < p->nstamps; i++) {
        if (p->stamps[i].partition == partition) {
            if (sort_off_cmp(next, p->stamps[i].next) > 0)
                p->stamps[i].next = next;
            return;
        }
    }
    if (p->nstamps < SORT_MAX_PARTITIONS) {
        p->stamps[p->nstamps].partition = partition;
        p->stamps[p->nstamps].next = next;
        p->nstamps++;
    }
}

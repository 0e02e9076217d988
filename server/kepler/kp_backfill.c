/*
 * kp_backfill.c - pacing of backfills (see kp_backfill.h).
 *
 * Notes are (backfill, cycle, N) triples of open instances, many per cycle.
 * Sealing sorts them by backfill and cycle and keeps, per backfill, the N-th
 * distinct open cycle as its bound (none when fewer are open): an instance
 * is admitted when its cycle is at or before the bound. Cost per pass: one
 * sort of the notes (the open instances of paced backfills), then a binary
 * search per waiting instance.
 */
#include "kp_backfill.h"

#include <stdlib.h>

#include "orr_alloc.h"

typedef struct kp_bf_note {
    int64_t bf_id, cycle_ms;
    int32_t max_cycles;
} kp_bf_note_t;

typedef struct kp_bf_bound {
    int64_t bf_id, last_cycle_ms; /* INT64_MAX: fewer than N cycles are open */
} kp_bf_bound;

struct kp_bf {
    kp_bf_note_t *notes;
    size_t n, cap;
    kp_bf_bound *bounds;
    size_t n_bounds, cap_bounds;
};

kp_bf *kp_bf_create(void)
{
    return orr_xcalloc(1, sizeof(kp_bf));
}

void kp_bf_destroy(kp_bf *g)
{
    if (!g)
        return;
    free(g->notes);
    free(g->bounds);
    free(g);
}

void kp_bf_reset(kp_bf *g)
{
    g->n = 0;
    g->n_bounds = 0;
}

void kp_bf_note(kp_bf *g, int64_t bf_id, int64_t cycle_ms, int32_t max_cycles)
{
    if (max_cycles <= 0 || bf_id <= 0)
        return;
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 64;
        g->notes = orr_xrealloc(g->notes, g->cap * sizeof *g->notes);
    }
    g->notes[g->n++] = (kp_bf_note_t){bf_id, cycle_ms, max_cycles};
}

static int note_cmp(const void *a, const void *b)
{
    const kp_bf_note_t *x = a, *y = b;
    if (x->bf_id != y->bf_id)
        return x->bf_id < y->bf_id ? -1 : 1;
    return x->cycle_ms < y->cycle_ms ? -1 : x->cycle_ms > y->cycle_ms;
}

void kp_bf_seal(kp_bf *g)
{
    g->n_bounds = 0;
    if (g->n == 0)
        return;
    qsort(g->notes, g->n, sizeof *g->notes, note_cmp);
    for (size_t i = 0; i < g->n;) {
        int64_t id = g->notes[i].bf_id;
        int32_t max = g->notes[i].max_cycles;
        int64_t bound = INT64_MAX, prev = 0;
        int32_t distinct = 0;
        size_t j = i;
        for (; j < g->n && g->notes[j].bf_id == id; j++) {
            if (distinct == 0 || g->notes[j].cycle_ms != prev) {
                distinct++;
                prev = g->notes[j].cycle_ms;
                if (distinct == max)
                    bound = prev;
            }
        }
        if (g->n_bounds == g->cap_bounds) {
            g->cap_bounds = g->cap_bounds ? g->cap_bounds * 2 : 16;
            g->bounds = orr_xrealloc(g->bounds, g->cap_bounds * sizeof *g->bounds);
        }
        g->bounds[g->n_bounds++] = (kp_bf_bound){id, bound};
        i = j;
    }
}

int kp_bf_admit(const kp_bf *g, int64_t bf_id, int64_t cycle_ms)
{
    size_t lo = 0, hi = g->n_bounds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->bounds[mid].bf_id < bf_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == g->n_bounds || g->bounds[lo].bf_id != bf_id)
        return 1;
    return cycle_ms <= g->bounds[lo].last_cycle_ms;
}

/*
 * hl_evwin.c - the shared window of passed events (contract in hl_evwin.h).
 *
 * A ring of at most cap events in id order; each event's strings live in
 * one allocation of their own (kind, executor, payload, back to back). One
 * mutex guards it all; a fetch in flight is one flag, and its end bumps a
 * generation the waiting streams sleep on.
 */
#include "hl_evwin.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_clock.h"

struct hl_evwin {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    hl_evwin_ev *ring;
    size_t cap, head, n; /* ring[head] is the oldest of n */
    int64_t lo, hi;      /* covered ids (lo, hi]; -1, -1: nothing yet */
    int fetching;        /* a stream fetches */
    uint64_t gen;        /* fetches ended */
    hl_evwin_fetch last; /* how the last one ended */
    uint64_t taken;      /* events handed out from the window */
};

hl_evwin *hl_evwin_create(size_t cap)
{
    hl_evwin *w = orr_xcalloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->cap = cap ? cap : 1;
    w->ring = orr_xcalloc(w->cap, sizeof *w->ring);
    w->lo = w->hi = -1;
    return w;
}

static hl_evwin_ev *at(hl_evwin *w, size_t i)
{
    return &w->ring[(w->head + i) % w->cap];
}

static void drop_all(hl_evwin *w)
{
    for (size_t i = 0; i < w->n; i++)
        free((void *)at(w, i)->kind);
    w->n = w->head = 0;
}

void hl_evwin_free(hl_evwin *w)
{
    if (!w)
        return;
    drop_all(w);
    free(w->ring);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Append ev (id above every id held); the oldest leaves when full. */
static void push(hl_evwin *w, const hl_evwin_ev *ev)
{
    if (w->n == w->cap) { /* the oldest goes: the window starts at its id */
        hl_evwin_ev *old = at(w, 0);
        w->lo = old->id;
        free((void *)old->kind);
        w->head = (w->head + 1) % w->cap;
        w->n--;
    }
    size_t lk = strlen(ev->kind) + 1, le = strlen(ev->executor) + 1,
           lp = strlen(ev->payload_json) + 1;
    char *s = orr_xmalloc(lk + le + lp);
    memcpy(s, ev->kind, lk);
    memcpy(s + lk, ev->executor, le);
    memcpy(s + lk + le, ev->payload_json, lp);
    hl_evwin_ev *e = at(w, w->n++);
    *e = *ev;
    e->kind = s;
    e->executor = s + lk;
    e->payload_json = s + lk + le;
}

static int holds_after(const hl_evwin *w, int64_t cursor)
{
    return w->hi >= 0 && cursor >= w->lo && cursor < w->hi;
}

int hl_evwin_next(hl_evwin *w, int64_t cursor, int wait_ms, hl_evwin_fetch *f)
{
    pthread_mutex_lock(&w->mu);
    int how, waited = 0;
    for (;;) {
        if (holds_after(w, cursor)) {
            how = HL_EVWIN_HAVE;
            break;
        }
        if (w->hi >= 0 && cursor < w->lo) {
            how = HL_EVWIN_ALONE;
            break;
        }
        if (waited) { /* the fetch waited for brought nothing after cursor */
            how = HL_EVWIN_NONE;
            break;
        }
        if (!w->fetching) { /* at (or past) the end: this stream fetches */
            w->fetching = 1;
            how = HL_EVWIN_FETCH;
            break;
        }
        uint64_t gen = w->gen;
        struct timespec until = orr_clock_after(CLOCK_MONOTONIC, wait_ms);
        int rc = 0;
        while (w->gen == gen && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
        if (w->gen == gen) {
            how = HL_EVWIN_NONE; /* still fetching: wait for a notification */
            break;
        }
        waited = 1; /* it ended: take what it passed, or read alone if behind */
    }
    *f = w->last;
    if (how == HL_EVWIN_FETCH && cursor != w->hi)
        f->judge = 0; /* the last fetch's gap was elsewhere */
    pthread_mutex_unlock(&w->mu);
    return how;
}

size_t hl_evwin_copy(hl_evwin *w, orr_arena *a, int64_t cursor, size_t max, hl_evwin_ev *out,
                     int64_t *to)
{
    pthread_mutex_lock(&w->mu);
    *to = cursor;
    size_t k = 0;
    if (holds_after(w, cursor)) {
        size_t lo = 0, hi = w->n; /* the first held event with an id above cursor */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (at(w, mid)->id <= cursor)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < w->n && k < max; i++, k++) {
            const hl_evwin_ev *e = at(w, i);
            out[k] = *e;
            out[k].kind = orr_arena_strdup(a, e->kind);
            out[k].executor = orr_arena_strdup(a, e->executor);
            out[k].payload_json = orr_arena_strdup(a, e->payload_json);
        }
        if (lo + k < w->n) /* max taken: the rest later */
            *to = k ? out[k - 1].id : cursor;
        else
            *to = w->hi; /* all of it, and the gaps passed after the last */
        w->taken += k;
    }
    pthread_mutex_unlock(&w->mu);
    return k;
}

void hl_evwin_put(hl_evwin *w, int lead, int64_t from, int64_t to, const hl_evwin_ev *evs, size_t n,
                  const hl_evwin_fetch *f)
{
    pthread_mutex_lock(&w->mu);
    if (to > from && (w->hi < 0 || to > w->hi)) {
        if (w->hi < 0 || from > w->hi || from < w->lo) { /* not joined to it: start anew */
            drop_all(w);
            w->lo = w->hi = from;
        }
        for (size_t i = 0; i < n; i++)
            if (evs[i].id > w->hi && evs[i].id <= to)
                push(w, &evs[i]);
        w->hi = to;
    }
    if (lead) {
        w->fetching = 0;
        w->last = *f;
        w->gen++;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

uint64_t hl_evwin_taken(hl_evwin *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t t = w->taken;
    pthread_mutex_unlock(&w->mu);
    return t;
}

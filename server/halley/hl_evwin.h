/*
 * hl_evwin.h - the newest events WatchEvents passed, kept in memory, so the
 * streams of one halleyd read each event from PostgreSQL once.
 *
 * Each stream used to read the events table itself after every
 * notification: keplerd has one stream, each executord two and each
 * galaxyd three, so every event was read many times over. Now the
 * streams that are live (their cursor at the window's end) take turns: one
 * fetches (reads PostgreSQL and judges a gap in the ids exactly as a stream
 * did alone, hl_api_events.c), the others wait for that fetch and take what
 * it passed from the window. A stream behind the window (a replay from an
 * old id) reads PostgreSQL alone, as before; its rows extend the window
 * when they reach past the window's end.
 *
 * The window covers the ids (lo, hi]: every id in that range was passed by
 * a reader, so its event is in the window or it was a gap passed for good
 * (rolled back, or judged so). Committed events never change, so what one
 * stream passed is what any other would have read. The oldest events leave
 * the window when it is full (lo moves up).
 *
 * Thread-safe; every stream of the process shares one window.
 */
#ifndef HL_EVWIN_H
#define HL_EVWIN_H

#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"

typedef struct hl_evwin hl_evwin;

/* The window's size in events: a few seconds of a busy day's events. */
#define HL_EVWIN_EVENTS 4096

/* One event as the table holds it. */
typedef struct hl_evwin_ev {
    int64_t id, task_id, instance_id, created_at_ms;
    const char *kind, *executor, *payload_json;
} hl_evwin_ev;

/* How the last fetch ended, for the streams that take its events. */
typedef struct hl_evwin_fetch {
    uint64_t seq; /* hl_events_seq before it read: wait for the counter to pass it */
    int gap;      /* it stopped at a gap (poll again soon) */
    int more;     /* it read a full batch: there may be more at once */
    int judge;    /* the next fetch judges the gap (reads the oldest writer) */
} hl_evwin_fetch;

enum {
    HL_EVWIN_HAVE,  /* ids after the cursor are in the window: hl_evwin_copy */
    HL_EVWIN_FETCH, /* the caller fetches now, then hl_evwin_put(lead 1) */
    HL_EVWIN_ALONE, /* the cursor is behind the window: read PostgreSQL alone */
    HL_EVWIN_NONE,  /* another's fetch brought nothing after the cursor: wait */
};

hl_evwin *hl_evwin_create(size_t cap);
void hl_evwin_free(hl_evwin *w);

/* What a stream at cursor does next (HL_EVWIN_*). When another stream
 * fetches, waits for it up to wait_ms. *f: how the last fetch ended (for
 * FETCH, judge says whether to judge the gap at once). */
int hl_evwin_next(hl_evwin *w, int64_t cursor, int wait_ms, hl_evwin_fetch *f);

/* Up to max events after cursor, their strings copied into a; returns how
 * many. *to is the cursor after them: the window's end once all were taken
 * (gaps included), else the last one's id; cursor itself when the window
 * has moved past it meanwhile (the next hl_evwin_next says ALONE). */
size_t hl_evwin_copy(hl_evwin *w, orr_arena *a, int64_t cursor, size_t max, hl_evwin_ev *out,
                     int64_t *to);

/* A reader passed the ids (from, to], holding the events evs[0..n) (all the
 * rows it passed, not only those its filters sent). lead: the end of the
 * fetch hl_evwin_next gave it, with f how it ended (from = to when it
 * failed); the streams waiting for it wake. */
void hl_evwin_put(hl_evwin *w, int lead, int64_t from, int64_t to, const hl_evwin_ev *evs, size_t n,
                  const hl_evwin_fetch *f);

/* Reads of the table saved: events streams took from the window. */
uint64_t hl_evwin_taken(hl_evwin *w);

#endif

/*
 * orr_watch.h - one subscriber of halleyd's event stream (WatchEvents) with
 * resume and back-off, for any daemon that reacts to events.
 *
 * A thread keeps a WatchEvents call open with the start marker asked for.
 * Each time a stream is in place (its "watch.start" marker arrived) it calls
 * ops->on_start: the moment to load the state the events will keep current
 * (anything that changed before is in that load; anything after arrives as
 * an event). Then every event goes to ops->on_event, in id order. When the
 * stream ends (halleyd restarts, the network drops), ops->on_lost says
 * events may be missed; the thread reopens the stream from the last event
 * seen (back-off 200 ms doubling to 5 s, back to 200 ms once a stream is in
 * place), and calls on_start again. When halleyd answers that the resume
 * point has expired (its retention removed events not yet seen), events
 * were missed for good: ops->on_resync says so, and the stream is opened
 * again from the newest event. If on_start returns non-zero (its load
 * failed), the stream is closed and reopened after the back-off, so a load
 * is retried until it succeeds.
 *
 * Which callback does what is the subscriber's choice: one that holds all
 * its state reloads it in on_start (galaxyd's sessions, executord's sweep
 * of what is dispatched to it, its package scan); one that keeps state of
 * its own between streams and only needs to hear of a gap leaves on_start
 * NULL and rebuilds on on_resync (keplerd).
 *
 * The callbacks run on the watcher's thread, one at a time; the watch.start
 * marker itself never reaches on_event.
 */
#ifndef ORR_WATCH_H
#define ORR_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"
#include "orr_status.h"

typedef struct orr_watch orr_watch;

typedef struct orr_watch_ops {
    /* the stream is in place: load state; 0 = loaded. May be NULL. */
    int (*on_start)(void *cls);
    void (*on_event)(void *cls, const Orrery__Halley__V1__Event *ev);
    /* the stream ended; it is being reopened. May be NULL. */
    void (*on_lost)(void *cls);
    /* the resume point expired: events were missed; the next stream starts
     * from the newest event. Called before that stream opens. May be NULL. */
    void (*on_resync)(void *cls);
} orr_watch_ops;

typedef struct orr_watch_opts {
    const char *const *kinds; /* exact kinds or "prefix.*"; NULL/0 = all */
    size_t nkinds;
    const char *executor; /* NULL = any */
    const char *name;     /* for log lines ("galaxyd sessions") */
} orr_watch_opts;

/* Start the watcher thread on client c (which must outlive the watcher).
 * ORR_ENOMEM or ORR_EINTERNAL (thread) on failure; the stream itself is
 * opened (and reopened) in the background. */
orr_status orr_watch_start(orr_rpc_client *c, const orr_watch_opts *o, const orr_watch_ops *ops,
                           void *cls, orr_watch **out, orr_err *err);
/* 1 while a stream is in place and its on_start succeeded. */
int orr_watch_synced(const orr_watch *w);
/* Stop the thread (within about 300 ms) and free. NULL is fine. */
void orr_watch_stop(orr_watch *w);

#endif

/* orr_watch.c - halleyd's event stream kept open, resumed and re-synced (see orr_watch.h). */
#include "orr_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_log.h"

#define ORR_WATCH_BACKOFF_MIN_MS 200
#define ORR_WATCH_BACKOFF_MAX_MS 5000
#define ORR_WATCH_POLL_MS        300

struct orr_watch {
    orr_rpc_client *client;
    orr_watch_ops ops;
    void *cls;
    char **kinds;
    size_t nkinds;
    char *executor;
    char *name;
    pthread_t thread;
    atomic_int stopping;
    atomic_int synced;
};

/* Sleep ms in slices, returning early once the watcher stops. */
static void orr_watch_sleep(orr_watch *w, int ms)
{
    while (ms > 0 && !atomic_load(&w->stopping)) {
        int step = ms > 100 ? 100 : ms;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

static void orr_watch_lost(orr_watch *w)
{
    if (atomic_exchange(&w->synced, 0) && w->ops.on_lost)
        w->ops.on_lost(w->cls);
}

static void *orr_watch_run(void *arg)
{
    orr_watch *w = arg;
    int64_t last_id = 0;
    int backoff = ORR_WATCH_BACKOFF_MIN_MS;
    while (!atomic_load(&w->stopping)) {
        Orrery__Halley__V1__WatchEventsRequest rq = ORRERY__HALLEY__V1__WATCH_EVENTS_REQUEST__INIT;
        rq.kinds = w->kinds;
        rq.n_kinds = w->nkinds;
        rq.executor = w->executor ? w->executor : (char *)"";
        rq.from_id = last_id;
        rq.from_latest = last_id == 0;
        rq.start_marker = 1;
        orr_rpc_stream *st = NULL;
        orr_err e;
        orr_err_clear(&e);
        orr_status s = orr_rpc_stream_open(w->client, "WatchEvents", &rq.base, 0, &st, &e);
        while (s == ORR_OK && !atomic_load(&w->stopping)) {
            ProtobufCMessage *msg = NULL;
            s = orr_rpc_stream_next(st, &msg, ORR_WATCH_POLL_MS, &e);
            if (s == ORR_ETIMEOUT) {
                s = ORR_OK;
                continue;
            }
            if (s != ORR_OK)
                break;
            Orrery__Halley__V1__Event *ev = (Orrery__Halley__V1__Event *)msg;
            if (ev->id > last_id)
                last_id = ev->id;
            if (strcmp(ev->kind, "watch.start") == 0) {
                if (w->ops.on_start && w->ops.on_start(w->cls) != 0) {
                    s = orr_err_set(&e, ORR_EUNAVAIL, NULL, "loading the state failed");
                } else {
                    atomic_store(&w->synced, 1);
                    backoff = ORR_WATCH_BACKOFF_MIN_MS;
                }
            } else if (w->ops.on_event) {
                w->ops.on_event(w->cls, ev);
            }
            protobuf_c_message_free_unpacked(msg, NULL);
        }
        orr_rpc_stream_close(st);
        orr_watch_lost(w);
        if (atomic_load(&w->stopping))
            break;
        ORR_WARN("event stream ended, reopening", "watcher=%s last_id=%lld err=%s", w->name,
                 (long long)last_id, orr_log_q(s == ORR_EOF ? "end of stream" : e.msg));
        if (s == ORR_ESTATE) { /* resume point expired: start from now; on_start reloads */
            last_id = 0;
            if (w->ops.on_resync)
                w->ops.on_resync(w->cls);
        }
        orr_watch_sleep(w, backoff);
        backoff = backoff * 2 > ORR_WATCH_BACKOFF_MAX_MS ? ORR_WATCH_BACKOFF_MAX_MS : backoff * 2;
    }
    return NULL;
}

static void orr_watch_free(orr_watch *w)
{
    for (size_t i = 0; i < w->nkinds; i++)
        free(w->kinds[i]);
    free(w->kinds);
    free(w->executor);
    free(w->name);
    free(w);
}

orr_status orr_watch_start(orr_rpc_client *c, const orr_watch_opts *o, const orr_watch_ops *ops,
                           void *cls, orr_watch **out, orr_err *err)
{
    orr_watch *w = orr_xcalloc(1, sizeof *w);
    w->client = c;
    w->ops = *ops;
    w->cls = cls;
    w->name = orr_xstrdup(o->name ? o->name : "events");
    w->executor = o->executor ? orr_xstrdup(o->executor) : NULL;
    w->kinds = orr_xcalloc(o->nkinds ? o->nkinds : 1, sizeof *w->kinds);
    for (size_t i = 0; i < o->nkinds; i++)
        w->kinds[w->nkinds++] = orr_xstrdup(o->kinds[i]);
    if (pthread_create(&w->thread, NULL, orr_watch_run, w) != 0) {
        orr_watch_free(w);
        return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot start the event watcher thread");
    }
    *out = w;
    return ORR_OK;
}

int orr_watch_synced(const orr_watch *w)
{
    return w && atomic_load(&w->synced);
}

void orr_watch_stop(orr_watch *w)
{
    if (!w)
        return;
    atomic_store(&w->stopping, 1);
    pthread_join(w->thread, NULL);
    orr_watch_free(w);
}

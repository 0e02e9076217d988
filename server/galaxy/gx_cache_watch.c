/* gx_cache_watch.c - response-cache invalidation from halleyd's events (see
 * gx_cache_watch.h). */
#include "gx_cache_watch.h"

#include <stdlib.h>

#include "orr_alloc.h"
#include "orr_log.h"
#include "orr_watch.h"

struct gx_cache_watch {
    gx_server *server;
    orr_watch *watch;
};

/* The stream is in place: what changed while it was not is unknown. */
static int gx_cw_on_start(void *cls)
{
    gx_cache_watch *w = cls;
    gx_cache_invalidate(w->server);
    gx_cache_set_synced(w->server, 1);
    return 0;
}

static void gx_cw_on_event(void *cls, const Orrery__Halley__V1__Event *ev)
{
    (void)ev;
    gx_cache_watch *w = cls;
    gx_cache_invalidate(w->server);
}

static void gx_cw_on_lost(void *cls)
{
    gx_cache_watch *w = cls;
    gx_cache_set_synced(w->server, 0);
    ORR_WARN("event stream lost: cached answers live at most the fallback bound until it is back",
             "watcher=%s", "cache");
}

static void gx_cw_on_resync(void *cls)
{
    gx_cache_watch *w = cls;
    gx_cache_set_synced(w->server, 0);
    gx_cache_invalidate(w->server);
}

orr_status gx_cache_watch_start(orr_rpc_client *c, gx_server *s, gx_cache_watch **out, orr_err *err)
{
    gx_cache_watch *w = orr_xcalloc(1, sizeof *w);
    w->server = s;
    orr_watch_opts o = {.kinds = NULL, .nkinds = 0, .name = "galaxyd cache"};
    orr_watch_ops ops = {.on_start = gx_cw_on_start,
                         .on_event = gx_cw_on_event,
                         .on_lost = gx_cw_on_lost,
                         .on_resync = gx_cw_on_resync};
    orr_status st = orr_watch_start(c, &o, &ops, w, &w->watch, err);
    if (st != ORR_OK) {
        free(w);
        return st;
    }
    *out = w;
    return ORR_OK;
}

int gx_cache_watch_synced(const gx_cache_watch *w)
{
    return w && orr_watch_synced(w->watch);
}

void gx_cache_watch_stop(gx_cache_watch *w)
{
    if (!w)
        return;
    orr_watch_stop(w->watch);
    gx_cache_set_synced(w->server, 0);
    free(w);
}

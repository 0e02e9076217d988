/*
 * gx_cache_watch.h - keeps galaxyd's response cache in step with halleyd's
 * event stream, so a change made anywhere (another galaxyd, keplerd, an
 * executor) makes this galaxyd's cached answers stale as soon as its event
 * arrives.
 *
 * Every event halleyd streams is a committed change: each one bumps the
 * cache generation (gx_cache_invalidate), so the next lookup misses and
 * reads the new state. The cache's TTL stays the bound for what the stream
 * cannot vouch for: while the stream is not in place (not yet opened, lost,
 * reopening) the server caps every entry's life at the fallback bound
 * (gx_cache_set_synced), and each (re)start of the stream invalidates once,
 * since events may have been missed in between.
 */
#ifndef GX_CACHE_WATCH_H
#define GX_CACHE_WATCH_H

#include "gx_http.h"
#include "orr_rpc.h"
#include "orr_status.h"

typedef struct gx_cache_watch gx_cache_watch;

/* Start watching halleyd (client c, which must outlive the watch) for
 * server s (which must outlive it too: stop the watch first). */
orr_status gx_cache_watch_start(orr_rpc_client *c, gx_server *s, gx_cache_watch **out,
                                orr_err *err);
/* 1 while the stream is in place. */
int gx_cache_watch_synced(const gx_cache_watch *w);
/* Stop and free. NULL is fine. */
void gx_cache_watch_stop(gx_cache_watch *w);

#endif

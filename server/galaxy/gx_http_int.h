/*
 * gx_http_int.h - what the three parts of galaxyd's HTTP layer share:
 * gx_http.c (the server: requests, routing, limits, metrics),
 * gx_http_cache.c (the response cache and its refresher thread) and
 * gx_http_static.c (files of the UI). Not for handlers: they use gx_http.h.
 */
#ifndef GX_HTTP_INT_H
#define GX_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "gx_http.h"
#include "orr_http.h"

#define GX_LAT_BUCKETS 10

/* Per-route counters. Index nroutes is "static", nroutes+1 is "unmatched". */
struct gx_route_stats {
    atomic_uint_fast64_t by_class[6]; /* 1xx..5xx, [0] unused */
    atomic_uint_fast64_t lat[GX_LAT_BUCKETS + 1];
    atomic_uint_fast64_t lat_sum_us;
};

struct gx_cache_slot {
    pthread_rwlock_t lock;
    uint64_t hash;
    char *key; /* malloc'd; NULL when empty */
    char *body;
    size_t len, cap;
    uint64_t gen;
    int64_t t0_ms;
    atomic_int_fast64_t refresh_ms; /* when one request took the early refresh; 0 = none */
};

struct gx_server {
    orr_http *http;
    gx_server_opts o;
    int port;
    struct gx_route_stats *stats;
    atomic_int in_flight;
    atomic_uint_fast64_t cache_gen;
    atomic_int cache_synced; /* an event stream keeps the cache in step */
    atomic_uint_fast64_t cache_hits, cache_misses, cache_stores, cache_invalidations;
    atomic_uint_fast64_t cache_refreshes;
    struct gx_cache_slot cache[GX_CACHE_SLOTS];
    /* Background refreshes: a bounded queue and one thread. */
    pthread_mutex_t rq_mu;
    pthread_cond_t rq_cv;
    struct gx_refresh_job *rq_head, *rq_tail;
    int rq_len, rq_stop, rq_started;
    pthread_t rq_thread;
};

/* The response cache's part of a server (gx_http_cache.c). init before the
 * server starts; start after (the refresher thread); destroy after it
 * stopped (drops queued refreshes and frees the entries). */
void gx_cache_init(gx_server *s);
void gx_cache_start(gx_server *s);
void gx_cache_destroy(gx_server *s);

/* Serve a file from static_dir when the request names one (gx_http_static.c).
 * Returns 1 if it answered into resp. */
int gx_static_serve(gx_server *s, gx_req *req, gx_resp *resp);

#endif

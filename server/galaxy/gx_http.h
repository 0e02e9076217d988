/*
 * gx_http.h - galaxyd's HTTP layer on libmicrohttpd: requests, responses,
 * routing, static files, metrics.
 *
 * A request is served in three steps on one of MHD's pool threads:
 *   1. headers arrive: a gx_req with its own arena is created; a body larger
 *      than max_body (by Content-Length or by counting) is drained, never
 *      stored, and answered 413;
 *   2. the body is accumulated in the arena;
 *   2a. before that, the path and every query argument must be clean text
 *      (valid UTF-8, no control character; a %00 counts as one): else 400
 *      naming the parameter, before any handler or halleyd sees it;
 *   3. the route table is searched ("GET /api/v1/tasks/{id}"): no path match
 *      is 404, a path match with another method is 405; the route's handler
 *      fills a gx_resp, which is sent with the security headers every answer
 *      carries (CSP, nosniff, frame-ancestors, referrer policy).
 * The arena is destroyed when MHD reports the request completed.
 *
 * Handlers may block (they call halleyd); the MHD thread pool is sized for it.
 *
 * Response cache: a handler whose answer depends only on its request and the
 * caller's visibility may call gx_cache_get() first and gx_cache_put() after
 * a 200. The key is method, path, every query argument (length-prefixed, in
 * arrival order) and the caller's role and teams. An entry is served for at
 * most cache_ttl_ms after the moment its fetch began, and never after a
 * request with another method than GET/HEAD finished on this server (a write
 * through this galaxyd is seen by the next read at once; writes made
 * elsewhere as soon as halleyd's event of them arrives, see gx_cache_watch.h,
 * and within the TTL). While no event stream is in step
 * (gx_cache_set_synced(s, 0), the state at start) an entry lives at most
 * GX_CACHE_FALLBACK_MS, whatever the TTL. Past half the TTL one request per entry queues
 * a background refresh (the handler is replayed on the server's refresher
 * thread with the same method, path, query and caller) and is itself served
 * from the entry, so readers of a hot key never wait on halleyd.
 * Errors are JSON: {"error":{"code","message","field"}} with the HTTP status
 * mapped from orr_status (gx_http_status()).
 */
#ifndef GX_HTTP_H
#define GX_HTTP_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "orr_arena.h"
#include "orr_buf.h"
#include "orr_status.h"

struct MHD_Connection;
typedef struct gx_server gx_server;
typedef struct gx_route gx_route;

#define GX_MAX_PARAMS  4
#define GX_MAX_HEADERS 8

/* Who is calling, once authentication ran (see gx_auth.h). */
typedef enum gx_role {
    GX_ROLE_NONE = 0, /* route is public */
    GX_ROLE_VIEWER,
    GX_ROLE_DEVELOPER,
    GX_ROLE_ADMIN,
} gx_role;

typedef struct gx_principal {
    int64_t user_id;
    const char *name;
    gx_role role;
    const char *const *teams; /* NULL-terminated, in the request arena */
    const char *sid;          /* session id of a session token; NULL otherwise */
    int64_t exp_ms;           /* when the session token expires (0 = not a session token) */
} gx_principal;

typedef struct gx_req {
    orr_arena *arena;
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const char *params[GX_MAX_PARAMS]; /* {name} captures of the route, in order */
    int nparams;
    const char *body; /* NUL-terminated, in the arena; NULL when empty or spooled */
    size_t body_len;
    /* Routes the server spools (gx_server_opts.spool_max): the body is in body_fd (an unlinked
     * temporary file at offset 0, closed by the server after the handler) instead of body;
     * body_spooled says so. */
    int body_spooled;
    int body_fd;
    const gx_route *route;
    gx_principal who;   /* role GX_ROLE_NONE until authenticated */
    void *app;          /* the application context given to gx_server_start */
    const char *peer;   /* the connection's peer address, "127.0.0.1" */
    const char *client; /* the client's address: peer, or from X-Forwarded-For when the peer is
                         * a trusted proxy (gx_client_addr) */
    gx_server *server;
    const char *cache_key; /* set by gx_cache_get, in the arena */
    uint64_t cache_gen;    /* cache generation when the lookup ran */
    int64_t cache_t0_ms;   /* monotonic ms when the lookup ran */
    /* A background cache refresh replays a request without a connection
     * (conn NULL): its query arguments are these name/value pairs, in
     * arrival order; it has no headers or cookies. */
    int cache_refresh;
    const char **qargs;
    int nqargs;
} gx_req;

/* Streaming body (Server-Sent Events): called by MHD for more bytes; see gx_sse.h. */
typedef ssize_t (*gx_stream_fn)(void *cls, uint64_t pos, char *buf, size_t max);
typedef void (*gx_stream_free_fn)(void *cls);

typedef struct gx_resp {
    int status;
    orr_buf body;
    const char *content_type;
    const char *hname[GX_MAX_HEADERS];
    const char *hvalue[GX_MAX_HEADERS];
    int nheaders;
    int fd; /* >= 0: send this file (size fd_size) instead of body; closed by the server */
    uint64_t fd_size;
    gx_stream_fn stream; /* non-NULL: a streamed body of unknown size */
    gx_stream_free_fn stream_free;
    void *stream_cls;
} gx_resp;

typedef void (*gx_handler)(gx_req *req, gx_resp *resp);

struct gx_route {
    const char *method;  /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *pattern; /* "/api/v1/tasks/{id}"; ending in slash-star matches any rest */
    gx_handler fn;
    gx_role min_role; /* GX_ROLE_NONE = no login needed */
    const char *summary;
};

/* Called for every routed request before its handler, when the route needs a
 * role: fills req->who or answers (401/403) and returns non-zero to stop. */
typedef int (*gx_auth_fn)(gx_req *req, gx_resp *resp);

typedef struct gx_server_opts {
    const char *listen; /* "127.0.0.1:8080"; port 0 picks one */
    int threads;        /* MHD pool threads */
    size_t max_body;    /* bytes; larger bodies get 413 */
    /* Non-NULL: for a route it answers non-zero, the body (up to that many
     * bytes, instead of max_body) goes to a temporary file in spool_dir
     * (NULL = $TMPDIR or /tmp), never to memory, and the caller is
     * authenticated before any of it is stored. */
    size_t (*spool_max)(void *app, const gx_route *rt);
    const char *spool_dir;
    const char *static_dir; /* served under "/" for paths no route matches; NULL = none */
    const gx_route *routes;
    size_t nroutes;
    gx_auth_fn auth;
    void *app;
    const char *trusted_proxies; /* proxies whose X-Forwarded-For is believed ("" = none) */
    int cache_ttl_ms;       /* response cache staleness bound; 0 = GX_CACHE_TTL_MS, < 0 = off */
    size_t cache_max_entry; /* largest cached body; 0 = GX_CACHE_MAX_ENTRY */
    void (*on_write)(void *app); /* after each request other than GET/HEAD; may be NULL */
} gx_server_opts;

#ifndef GX_CACHE_TTL_MS /* a build may set it; -1 turns the cache off by default */
#define GX_CACHE_TTL_MS 250
#endif
#define GX_CACHE_FALLBACK_MS 250 /* an entry's life while events are not in step */
#define GX_CACHE_MAX_ENTRY   (256u << 10)
#define GX_CACHE_SLOTS       64 /* bodies held at most: slots x max entry (16 MiB) */

/* Start serving in MHD's threads. ORR_EIO if the address cannot be bound. */
orr_status gx_server_start(const gx_server_opts *o, gx_server **out, orr_err *err);
int gx_server_port(const gx_server *s);
/* Stop accepting, finish requests, free. */
void gx_server_stop(gx_server *s);
/* Prometheus text: requests by route/method/status, latency histogram, in-flight. */
void gx_server_metrics(gx_server *s, orr_buf *out);
/* Resume a suspended connection (streams); safe from any thread. */
void gx_server_resume(struct MHD_Connection *conn);

/* ------------------------------------------------------------ response cache */

/* Look the request up in the server's response cache. 1: a fresh answer was
 * copied into resp (status, content type, body); 0: not cached, stale or the
 * cache is off (and always for a background refresh); the handler computes
 * the answer and may gx_cache_put() it. Call after authentication (the key
 * holds req->who's role and teams) and first in the handler: a handler that
 * uses the cache must answer from the request alone (no headers, cookies or
 * side effects), since a refresh replays it without a connection. */
int gx_cache_get(gx_req *req, gx_resp *resp);
/* Remember resp for the key of the preceding gx_cache_get(). Only a 200 with
 * an in-memory body no larger than cache_max_entry is kept; anything else is
 * ignored. The entry ages from the lookup, not from now. */
void gx_cache_put(gx_req *req, const gx_resp *resp);
/* Make every cached answer stale (runs after each non-GET request). */
void gx_cache_invalidate(gx_server *s);
/* 1: an event stream keeps the cache in step (entries live cache_ttl_ms);
 * 0: they live at most GX_CACHE_FALLBACK_MS. Safe from any thread. */
void gx_cache_set_synced(gx_server *s, int synced);
/* Counters for metrics and tests. */
typedef struct gx_cache_stats {
    uint64_t hits, misses, stores, invalidations, refreshes;
} gx_cache_stats;
void gx_cache_get_stats(gx_server *s, gx_cache_stats *out);

/* ------------------------------------------------------------ helpers */

/* HTTP status for an orr_status (EINVAL 400, ENOTFOUND 404, EEXIST/ESTATE/
 * ECONFLICT 409, EAUTH 401, EPERM 403, ETOOBIG 413, EUNAVAIL 503, ETIMEOUT 504,
 * anything else 500). */
int gx_http_status(orr_status s);

/* Set a JSON body (steals the reference to v). */
void gx_resp_json(gx_resp *r, int status, json_t *v);
/* JSON error body from err; the status is gx_http_status(err->code). */
void gx_resp_err(gx_resp *r, const orr_err *err);
/* Shorthand: code + field + printf message. */
void gx_resp_fail(gx_resp *r, orr_status code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void gx_resp_header(gx_resp *r, const char *name, const char *value);

/* Request accessors; strings live in the request arena or in MHD's memory
 * for the request's lifetime. NULL when absent. */
const char *gx_req_header(gx_req *r, const char *name);
const char *gx_req_query(gx_req *r, const char *name);
const char *gx_req_cookie(gx_req *r, const char *name);
const char *gx_req_param(gx_req *r, int i);

/* Parse the body as a JSON object; on failure answer 400 (naming the
 * problem) into resp and return NULL. The result is freed with the request. */
json_t *gx_req_json(gx_req *r, gx_resp *resp);

/* Integer query parameter with bounds, read strictly (gx_parse_int: no '+',
 * spaces or leading zeros); missing = def. On a bad value answers 400 naming
 * the parameter and returns non-zero. */
int gx_req_query_int(gx_req *r, gx_resp *resp, const char *name, int64_t def, int64_t min,
                     int64_t max, int64_t *out);

/* Boolean query parameter: true/1, false/0, missing = def. On anything else
 * answers 400 naming the parameter and returns -1. */
int gx_req_query_bool(gx_req *r, gx_resp *resp, const char *name, int def);

/* Enumerated query parameter: *out = the matching entry of the NULL-ended
 * allowed list, or NULL when missing; 0. On any other value answers 400
 * naming the parameter and the allowed values, and returns -1. */
int gx_req_query_enum(gx_req *r, gx_resp *resp, const char *name, const char *const *allowed,
                      const char **out);

/* Route matching, exposed for tests and for the OpenAPI check: 1 if path
 * matches pattern, captures in params (arena copies). */
int gx_route_match(const char *pattern, const char *path, orr_arena *a,
                   const char *params[GX_MAX_PARAMS], int *nparams);

/* Map a URL path to a file under root: refuses "..", ".", empty or hidden
 * segments, backslashes and NUL; returns an arena path or NULL. */
const char *gx_static_path(orr_arena *a, const char *root, const char *url_path);

#endif

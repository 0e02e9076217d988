/*
 * gx_http.c - galaxyd's HTTP layer (see gx_http.h for the request steps).
 *
 * Threading: MHD runs an epoll thread pool (MHD_USE_EPOLL_INTERNAL_THREAD with
 * MHD_OPTION_THREAD_POOL_SIZE). Every callback of one connection runs on the
 * same pool thread, so a gx_req is never shared. Metrics are atomics.
 *
 * Response cache: GX_CACHE_SLOTS direct-mapped slots (FNV-1a of the key),
 * each under its own rwlock so hits on one hot key read in parallel. An
 * entry is usable while its generation equals the server's and it is younger
 * than the TTL; both are taken at lookup time, before the handler fetched
 * the data, so an entry can only be older than the TTL says, never newer
 * than the writes that finished before its lookup. Past half the TTL the
 * first request to see an entry (a compare-and-set on the slot) queues a
 * replay of itself for the refresher thread and is served from the entry
 * like every other reader, so no pool thread waits on halleyd for a hot key;
 * when the bounded queue is full that request fetches itself instead. A slot collision simply
 * replaces the older entry; memory is at most slots x max entry.
 */
#include "gx_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gx_input.h"
#include "orr_json.h"
#include "orr_log.h"

#define GX_LAT_BUCKETS 10
static const double gx_lat_bounds_s[GX_LAT_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                       0.025,  0.05,  0.1,    0.5,   2.5};

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
    struct MHD_Daemon *mhd;
    gx_server_opts o;
    int port;
    struct gx_route_stats *stats;
    atomic_int in_flight;
    atomic_uint_fast64_t cache_gen;
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

#define GX_REFRESH_QUEUE_MAX 16

/* A request to replay, with everything it needs in its own arena. */
struct gx_refresh_job {
    struct gx_refresh_job *next;
    orr_arena *arena;
    const gx_route *route;
    const char *method, *path;
    const char **qargs;
    int nqargs;
    gx_principal who;
    struct gx_cache_slot *slot;
};

/* Per-connection request state, MHD's *con_cls. */
struct gx_conn {
    gx_req req;
    orr_buf body;
    int too_big;
    size_t limit;     /* body bytes allowed: max_body, or the route's spool_max */
    int spool_fd;     /* >= 0 while a spooled body is being received */
    size_t spooled;   /* bytes written to spool_fd */
    int spool_failed; /* a write to the spool failed: answer 503 at the end */
    int refused;      /* early authentication answered already: early holds it */
    gx_resp early;
    struct timespec start;
    int stats_index;
    int counted;
};

static const char gx_csp[] = "default-src 'self'; img-src 'self' data:; style-src 'self' "
                             "'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; "
                             "base-uri 'none'; form-action 'self'";

int gx_http_status(orr_status s)
{
    switch (s) {
    case ORR_OK:
        return 200;
    case ORR_EINVAL:
        return 400;
    case ORR_ENOTFOUND:
        return 404;
    case ORR_EEXIST:
    case ORR_ESTATE:
    case ORR_ECONFLICT:
        return 409;
    case ORR_EAUTH:
        return 401;
    case ORR_EPERM:
        return 403;
    case ORR_ETOOBIG:
        return 413;
    case ORR_EUNAVAIL:
        return 503;
    case ORR_ETIMEOUT:
        return 504;
    default:
        return 500;
    }
}

void gx_resp_json(gx_resp *r, int status, json_t *v)
{
    r->status = status;
    r->content_type = "application/json";
    orr_buf_reset(&r->body);
    orr_json_dump_buf(v, &r->body);
    json_decref(v);
}

void gx_resp_err(gx_resp *r, const orr_err *err)
{
    gx_resp_json(r, gx_http_status(err->code), orr_json_error_body(err));
}

void gx_resp_fail(gx_resp *r, orr_status code, const char *field, const char *fmt, ...)
{
    orr_err e;
    orr_err_set(&e, code, field, NULL);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
    va_end(ap);
    gx_resp_err(r, &e);
}

void gx_resp_header(gx_resp *r, const char *name, const char *value)
{
    if (r->nheaders < GX_MAX_HEADERS) {
        r->hname[r->nheaders] = name;
        r->hvalue[r->nheaders] = value;
        r->nheaders++;
    }
}

const char *gx_req_header(gx_req *r, const char *name)
{
    return r->conn ? MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name) : NULL;
}

const char *gx_req_query(gx_req *r, const char *name)
{
    if (r->conn)
        return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
    for (int i = 0; i < r->nqargs; i++)
        if (r->qargs[2 * i] && strcmp(r->qargs[2 * i], name) == 0)
            return r->qargs[2 * i + 1];
    return NULL;
}

const char *gx_req_cookie(gx_req *r, const char *name)
{
    return r->conn ? MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name) : NULL;
}

const char *gx_req_param(gx_req *r, int i)
{
    return i >= 0 && i < r->nparams ? r->params[i] : NULL;
}

static void gx_json_decref_cb(void *p)
{
    json_decref((json_t *)p);
}

json_t *gx_req_json(gx_req *r, gx_resp *resp)
{
    orr_err e;
    json_t *v = NULL;
    if (!r->body || r->body_len == 0) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "a JSON object body is required");
        return NULL;
    }
    const char *ct = gx_req_header(r, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0 ||
        (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        gx_resp_fail(resp, ORR_EINVAL, "Content-Type", "must be application/json (got %s)",
                     ct ? "another type" : "none");
        resp->status = 415;
        return NULL;
    }
    if (orr_json_parse(r->body, r->body_len, &v, &e) != ORR_OK) {
        e.field[0] = '\0';
        snprintf(e.field, sizeof(e.field), "body");
        gx_resp_err(resp, &e);
        return NULL;
    }
    orr_arena_on_cleanup(r->arena, gx_json_decref_cb, v);
    if (!json_is_object(v)) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "must be a JSON object");
        return NULL;
    }
    return v;
}

int gx_req_query_int(gx_req *r, gx_resp *resp, const char *name, int64_t def, int64_t min,
                     int64_t max, int64_t *out)
{
    const char *s = gx_req_query(r, name);
    if (!s) {
        *out = def;
        return 0;
    }
    int64_t v;
    if (gx_parse_int(s, &v) != 0 || v < min || v > max) {
        gx_resp_fail(resp, ORR_EINVAL, name, "must be an integer between %lld and %lld",
                     (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int gx_req_query_bool(gx_req *r, gx_resp *resp, const char *name, int def)
{
    const char *v = gx_req_query(r, name);
    if (!v)
        return def;
    if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0)
        return 1;
    if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        return 0;
    gx_resp_fail(resp, ORR_EINVAL, name, "must be true or false (or 1 or 0)");
    return -1;
}

int gx_req_query_enum(gx_req *r, gx_resp *resp, const char *name, const char *const *allowed,
                      const char **out)
{
    const char *v = gx_req_query(r, name);
    *out = NULL;
    if (!v)
        return 0;
    for (const char *const *a = allowed; *a; a++) {
        if (strcmp(*a, v) == 0) {
            *out = *a;
            return 0;
        }
    }
    orr_buf list = {0};
    for (const char *const *a = allowed; *a; a++)
        orr_buf_appendf(&list, "%s%s", a == allowed ? "" : ", ", *a);
    gx_resp_fail(resp, ORR_EINVAL, name, "must be one of: %s", list.data ? list.data : "");
    orr_buf_free(&list);
    return -1;
}

int gx_route_match(const char *pattern, const char *path, orr_arena *a,
                   const char *params[GX_MAX_PARAMS], int *nparams)
{
    const char *p = pattern, *s = path;
    int n = 0;
    while (*p) {
        if (p[0] == '/' && p[1] == '*' && p[2] == '\0')
            return *s == '/' || *s == '\0';
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close)
                return 0;
            size_t len = strcspn(s, "/");
            if (len == 0 || n >= GX_MAX_PARAMS)
                return 0;
            if (params)
                params[n] = orr_arena_strndup(a, s, len);
            n++;
            s += len;
            p = close + 1;
            continue;
        }
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
    if (*s != '\0')
        return 0;
    if (nparams)
        *nparams = n;
    return 1;
}

const char *gx_static_path(orr_arena *a, const char *root, const char *url_path)
{
    if (!url_path || url_path[0] != '/')
        return NULL;
    if (strchr(url_path, '\\') || strstr(url_path, "//"))
        return NULL;
    /* Check every segment: no "", ".", "..", or hidden names. */
    const char *seg = url_path + 1;
    while (*seg) {
        size_t len = strcspn(seg, "/");
        if (len == 0 || seg[0] == '.')
            return NULL;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)seg[i] < 0x20)
                return NULL;
        seg += len;
        if (*seg == '/')
            seg++;
    }
    return orr_arena_sprintf(a, "%s%s", root, url_path);
}

static const char *gx_mime(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
    };
    const char *dot = strrchr(path, '.');
    if (dot)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* Open a regular file for the static handler; -1 if absent or not regular. */
static int gx_open_regular(const char *path, uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Serve a file from static_dir. "/" -> "/index.html"; a path with no file
 * under /app/ falls back to /app/index.html (the UI routes in the browser).
 * Returns 1 if it answered. */
static int gx_serve_static(gx_server *s, gx_req *req, gx_resp *resp)
{
    if (!s->o.static_dir || (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0))
        return 0;
    const char *url = strcmp(req->path, "/") == 0 ? "/index.html" : req->path;
    const char *file = gx_static_path(req->arena, s->o.static_dir, url);
    if (!file)
        return 0;
    uint64_t size = 0;
    int fd = gx_open_regular(file, &size);
    if (fd < 0 && strncmp(url, "/app/", 5) == 0 && !strrchr(strrchr(url, '/'), '.')) {
        file = orr_arena_sprintf(req->arena, "%s/app/index.html", s->o.static_dir);
        fd = gx_open_regular(file, &size);
    }
    if (fd < 0)
        return 0;
    resp->status = 200;
    resp->fd = fd;
    resp->fd_size = size;
    resp->content_type = gx_mime(file);
    if (strstr(file, "/assets/"))
        gx_resp_header(resp, "Cache-Control", "public, max-age=31536000, immutable");
    else
        gx_resp_header(resp, "Cache-Control", "no-cache");
    return 1;
}

/* ------------------------------------------------------------ response cache */

static int64_t gx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t gx_fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Length-prefixed pieces keep the key unambiguous whatever the values hold. */
static void gx_key_piece(orr_buf *k, const char *s)
{
    if (s)
        orr_buf_appendf(k, "%zu:%s", strlen(s), s);
    else
        orr_buf_append_byte(k, '~');
}

static enum MHD_Result gx_key_arg(void *cls, enum MHD_ValueKind kind, const char *name,
                                  const char *value)
{
    (void)kind;
    orr_buf *k = cls;
    gx_key_piece(k, name);
    orr_buf_append_byte(k, '=');
    gx_key_piece(k, value);
    orr_buf_append_byte(k, '&');
    return MHD_YES;
}

static const char *gx_cache_key(gx_req *req)
{
    orr_buf k = ORR_BUF_INIT;
    gx_key_piece(&k, req->method);
    gx_key_piece(&k, req->path);
    orr_buf_append_byte(&k, '?');
    if (req->conn)
        MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, gx_key_arg, &k);
    else
        for (int i = 0; i < req->nqargs; i++)
            gx_key_arg(&k, MHD_GET_ARGUMENT_KIND, req->qargs[2 * i], req->qargs[2 * i + 1]);
    orr_buf_appendf(&k, "|role=%d|teams=", (int)req->who.role);
    for (const char *const *t = req->who.teams; t && *t; t++) {
        gx_key_piece(&k, *t);
        orr_buf_append_byte(&k, ',');
    }
    const char *key = orr_arena_strndup(req->arena, k.data, k.len);
    orr_buf_free(&k);
    return key;
}

struct gx_args_copy {
    orr_arena *a;
    const char **v;
    int n, cap;
};

static enum MHD_Result gx_copy_arg(void *cls, enum MHD_ValueKind kind, const char *name,
                                   const char *value)
{
    (void)kind;
    struct gx_args_copy *c = cls;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        const char **v = orr_arena_alloc(c->a, sizeof(*v) * 2 * (size_t)cap);
        if (c->n)
            memcpy(v, c->v, sizeof(*v) * 2 * (size_t)c->n);
        c->v = v;
        c->cap = cap;
    }
    c->v[2 * c->n] = name ? orr_arena_strdup(c->a, name) : NULL;
    c->v[2 * c->n + 1] = value ? orr_arena_strdup(c->a, value) : NULL;
    c->n++;
    return MHD_YES;
}

/* Queue a replay of req for its cache slot. 0 if queued; -1 when the queue
 * is full or the server is stopping (the caller then fetches itself). */
static int gx_refresh_queue(gx_req *req, struct gx_cache_slot *slot)
{
    gx_server *s = req->server;
    if (!s->rq_started || !req->route || !req->conn)
        return -1;
    pthread_mutex_lock(&s->rq_mu);
    int room = !s->rq_stop && s->rq_len < GX_REFRESH_QUEUE_MAX;
    pthread_mutex_unlock(&s->rq_mu);
    if (!room)
        return -1;
    orr_arena *a = orr_arena_create(0);
    struct gx_refresh_job *j = orr_arena_calloc(a, 1, sizeof(*j));
    j->arena = a;
    j->route = req->route;
    j->slot = slot;
    j->method = orr_arena_strdup(a, req->method);
    j->path = orr_arena_strdup(a, req->path);
    struct gx_args_copy ac = {.a = a};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, gx_copy_arg, &ac);
    j->qargs = ac.v;
    j->nqargs = ac.n;
    j->who.user_id = req->who.user_id;
    j->who.role = req->who.role;
    j->who.name = req->who.name ? orr_arena_strdup(a, req->who.name) : NULL;
    size_t nt = 0;
    for (const char *const *t = req->who.teams; t && *t; t++)
        nt++;
    const char **teams = orr_arena_calloc(a, nt + 1, sizeof(*teams));
    for (size_t i = 0; i < nt; i++)
        teams[i] = orr_arena_strdup(a, req->who.teams[i]);
    j->who.teams = teams;
    pthread_mutex_lock(&s->rq_mu);
    if (s->rq_stop || s->rq_len >= GX_REFRESH_QUEUE_MAX) {
        pthread_mutex_unlock(&s->rq_mu);
        orr_arena_destroy(a);
        return -1;
    }
    if (s->rq_tail)
        s->rq_tail->next = j;
    else
        s->rq_head = j;
    s->rq_tail = j;
    s->rq_len++;
    pthread_cond_signal(&s->rq_cv);
    pthread_mutex_unlock(&s->rq_mu);
    return 0;
}

/* Replay one queued request through its handler, off any MHD thread. */
static void gx_refresh_run(gx_server *s, struct gx_refresh_job *j)
{
    gx_req req;
    memset(&req, 0, sizeof(req));
    req.arena = j->arena;
    req.method = j->method;
    req.path = j->path;
    req.route = j->route;
    req.who = j->who;
    req.app = s->o.app;
    req.peer = "refresh";
    req.server = s;
    req.cache_refresh = 1;
    req.qargs = j->qargs;
    req.nqargs = j->nqargs;
    if (gx_route_match(j->route->pattern, j->path, j->arena, req.params, &req.nparams)) {
        gx_resp resp;
        memset(&resp, 0, sizeof(resp));
        resp.fd = -1;
        resp.status = 500;
        j->route->fn(&req, &resp);
        if (resp.fd >= 0)
            close(resp.fd);
        if (resp.stream_free)
            resp.stream_free(resp.stream_cls);
        orr_buf_free(&resp.body);
        atomic_fetch_add(&s->cache_refreshes, 1);
    }
    /* A refresh that stored nothing lets the next reader try again. */
    atomic_store(&j->slot->refresh_ms, 0);
    orr_arena_destroy(j->arena);
}

static void *gx_refresher(void *arg)
{
    gx_server *s = arg;
    pthread_mutex_lock(&s->rq_mu);
    for (;;) {
        while (!s->rq_head && !s->rq_stop)
            pthread_cond_wait(&s->rq_cv, &s->rq_mu);
        if (s->rq_stop)
            break;
        struct gx_refresh_job *j = s->rq_head;
        s->rq_head = j->next;
        if (!s->rq_head)
            s->rq_tail = NULL;
        s->rq_len--;
        pthread_mutex_unlock(&s->rq_mu);
        gx_refresh_run(s, j);
        pthread_mutex_lock(&s->rq_mu);
    }
    /* Stopping: drop what is left. */
    while (s->rq_head) {
        struct gx_refresh_job *j = s->rq_head;
        s->rq_head = j->next;
        orr_arena_destroy(j->arena);
    }
    s->rq_tail = NULL;
    s->rq_len = 0;
    pthread_mutex_unlock(&s->rq_mu);
    return NULL;
}

int gx_cache_get(gx_req *req, gx_resp *resp)
{
    gx_server *s = req->server;
    if (!s || s->o.cache_ttl_ms <= 0)
        return 0;
    req->cache_gen = atomic_load(&s->cache_gen);
    req->cache_t0_ms = gx_now_ms();
    req->cache_key = gx_cache_key(req);
    if (req->cache_refresh)
        return 0;
    uint64_t h = gx_fnv1a(req->cache_key, strlen(req->cache_key));
    struct gx_cache_slot *sl = &s->cache[h % GX_CACHE_SLOTS];
    int hit = 0, refresh = 0;
    int64_t now = req->cache_t0_ms, ttl = s->o.cache_ttl_ms;
    pthread_rwlock_rdlock(&sl->lock);
    if (sl->key && sl->hash == h && sl->gen == req->cache_gen && now - sl->t0_ms < ttl &&
        strcmp(sl->key, req->cache_key) == 0) {
        hit = 1;
        /* Past half its life, one request (and only one) refreshes the entry
         * while the others keep being served from it. */
        int_fast64_t taken = atomic_load(&sl->refresh_ms);
        if (now - sl->t0_ms >= ttl / 2 && (taken == 0 || now - taken >= ttl) &&
            atomic_compare_exchange_strong(&sl->refresh_ms, &taken, now))
            refresh = 1;
        orr_buf_reset(&resp->body);
        orr_buf_append(&resp->body, sl->body, sl->len);
    }
    pthread_rwlock_unlock(&sl->lock);
    /* The refresh goes to the background; if it cannot, this request fetches. */
    if (refresh && gx_refresh_queue(req, sl) != 0) {
        orr_buf_reset(&resp->body);
        hit = 0;
    }
    if (hit) {
        resp->status = 200;
        resp->content_type = "application/json";
        atomic_fetch_add(&s->cache_hits, 1);
    } else {
        atomic_fetch_add(&s->cache_misses, 1);
    }
    return hit;
}

void gx_cache_put(gx_req *req, const gx_resp *resp)
{
    gx_server *s = req->server;
    if (!s || !req->cache_key || s->o.cache_ttl_ms <= 0 || resp->status != 200 || resp->fd >= 0 ||
        resp->stream || resp->nheaders || !resp->content_type ||
        strcmp(resp->content_type, "application/json") != 0 ||
        resp->body.len > s->o.cache_max_entry)
        return;
    size_t klen = strlen(req->cache_key);
    uint64_t h = gx_fnv1a(req->cache_key, klen);
    struct gx_cache_slot *sl = &s->cache[h % GX_CACHE_SLOTS];
    pthread_rwlock_wrlock(&sl->lock);
    int same = sl->key && sl->hash == h && strcmp(sl->key, req->cache_key) == 0;
    /* Keep a newer answer for the same key (a slower, older fetch ends later). */
    if (same &&
        (sl->gen > req->cache_gen || (sl->gen == req->cache_gen && sl->t0_ms > req->cache_t0_ms)))
        goto out;
    if (!same) {
        char *k = malloc(klen + 1);
        if (!k)
            goto out;
        memcpy(k, req->cache_key, klen + 1);
        free(sl->key);
        sl->key = k;
        sl->hash = h;
    }
    if (sl->cap < resp->body.len) {
        size_t cap = resp->body.len + resp->body.len / 4;
        char *b = realloc(sl->body, cap ? cap : 1);
        if (!b) {
            free(sl->key);
            sl->key = NULL;
            goto out;
        }
        sl->body = b;
        sl->cap = cap;
    }
    if (resp->body.len)
        memcpy(sl->body, resp->body.data, resp->body.len);
    sl->len = resp->body.len;
    sl->gen = req->cache_gen;
    sl->t0_ms = req->cache_t0_ms;
    atomic_store(&sl->refresh_ms, 0);
    atomic_fetch_add(&s->cache_stores, 1);
out:
    pthread_rwlock_unlock(&sl->lock);
}

void gx_cache_invalidate(gx_server *s)
{
    atomic_fetch_add(&s->cache_gen, 1);
    atomic_fetch_add(&s->cache_invalidations, 1);
}

void gx_cache_get_stats(gx_server *s, gx_cache_stats *out)
{
    out->hits = atomic_load(&s->cache_hits);
    out->misses = atomic_load(&s->cache_misses);
    out->stores = atomic_load(&s->cache_stores);
    out->invalidations = atomic_load(&s->cache_invalidations);
    out->refreshes = atomic_load(&s->cache_refreshes);
}

/* Path parameters by the name the pattern gives them: {id} and {version}
 * are ids (gx_parse_id), {name} a name (gx_name_ok); others are the
 * handler's. 0, or a 400 naming the parameter in resp and -1. */
static int gx_check_params(const char *pattern, const char *const *params, int n, gx_resp *resp)
{
    const char *p = pattern;
    for (int i = 0; i < n && (p = strchr(p, '{')); i++) {
        const char *end = strchr(p, '}');
        if (!end)
            break;
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(end - p - 1), p + 1);
        p = end + 1;
        int64_t id;
        if ((strcmp(name, "id") == 0 || strcmp(name, "version") == 0) &&
            gx_parse_id(params[i], &id) != 0) {
            gx_resp_fail(resp, ORR_EINVAL, name,
                         "must be an id: digits only, no sign, spaces or leading zero");
            return -1;
        }
        if (strcmp(name, "name") == 0 && !gx_name_ok(params[i])) {
            gx_resp_fail(resp, ORR_EINVAL, name,
                         "must be 1-128 characters of A-Z a-z 0-9 _ . -, starting with a letter "
                         "or digit");
            return -1;
        }
    }
    return 0;
}

static void gx_route_request(gx_server *s, struct gx_conn *c, gx_resp *resp)
{
    gx_req *req = &c->req;
    int path_matched = 0;
    orr_buf allow = {0};
    for (size_t i = 0; i < s->o.nroutes; i++) {
        const gx_route *rt = &s->o.routes[i];
        const char *params[GX_MAX_PARAMS];
        int n = 0;
        if (!gx_route_match(rt->pattern, req->path, req->arena, params, &n))
            continue;
        path_matched = 1;
        if (strcmp(rt->method, req->method) != 0) {
            if (!allow.data || !strstr(allow.data, rt->method))
                orr_buf_appendf(&allow, "%s%s", allow.len ? ", " : "", rt->method);
            continue;
        }
        orr_buf_free(&allow);
        c->stats_index = (int)i;
        req->route = rt;
        memcpy(req->params, params, sizeof(params));
        req->nparams = n;
        if (rt->min_role != GX_ROLE_NONE && s->o.auth && s->o.auth(req, resp) != 0)
            return;
        if (gx_check_params(rt->pattern, req->params, n, resp) != 0)
            return;
        rt->fn(req, resp);
        /* A write went through: what was cached before it may be stale. */
        if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
            gx_cache_invalidate(s);
        return;
    }
    if (path_matched) {
        gx_resp_fail(resp, ORR_EINVAL, "method", "method %s not allowed here", req->method);
        resp->status = 405;
        gx_resp_header(resp, "Allow", orr_arena_strdup(req->arena, allow.data ? allow.data : ""));
        orr_buf_free(&allow);
        return;
    }
    orr_buf_free(&allow);
    if (strncmp(req->path, "/api/", 5) != 0 && gx_serve_static(s, req, resp)) {
        c->stats_index = (int)s->o.nroutes;
        return;
    }
    gx_resp_fail(resp, ORR_ENOTFOUND, "path", "no such resource: %s", req->path);
}

static void gx_add_common_headers(struct MHD_Response *r)
{
    MHD_add_response_header(r, "Content-Security-Policy", gx_csp);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
}

/* 1 if resp already sets header name (case-insensitive). */
static int gx_resp_has(const gx_resp *resp, const char *name)
{
    for (int i = 0; i < resp->nheaders; i++)
        if (strcasecmp(resp->hname[i], name) == 0)
            return 1;
    return 0;
}

static enum MHD_Result gx_send(struct MHD_Connection *conn, const char *path, gx_resp *resp)
{
    struct MHD_Response *r;
    if (resp->stream) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, resp->stream,
                                              resp->stream_cls, resp->stream_free);
    } else if (resp->fd >= 0) {
        r = MHD_create_response_from_fd64(resp->fd_size, resp->fd);
        resp->fd = -1; /* MHD owns it now */
    } else {
        size_t len;
        char *body = orr_buf_detach(&resp->body, &len);
        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!r)
            free(body);
    }
    if (!r)
        return MHD_NO;
    gx_add_common_headers(r);
    if (resp->content_type)
        MHD_add_response_header(r, "Content-Type", resp->content_type);
    for (int i = 0; i < resp->nheaders; i++)
        MHD_add_response_header(r, resp->hname[i], resp->hvalue[i]);
    /* API answers carry callers' data: never stored by a browser or proxy,
     * unless the handler chose otherwise (e.g. the OpenAPI document). */
    if (path && strncmp(path, "/api/", 5) == 0 && !gx_resp_has(resp, "Cache-Control"))
        MHD_add_response_header(r, "Cache-Control", "no-store");
    if (resp->status == 401 && !gx_resp_has(resp, "WWW-Authenticate"))
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"orrery\"");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    return ret;
}

static void gx_resp_init(gx_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    resp->fd = -1;
    resp->status = 500;
}

/* The route of method + path when it spools its body (*max set), else NULL. */
static const gx_route *gx_spool_route(gx_server *s, const char *method, const char *path,
                                      orr_arena *a, size_t *max)
{
    if (!s->o.spool_max)
        return NULL;
    for (size_t i = 0; i < s->o.nroutes; i++) {
        const gx_route *rt = &s->o.routes[i];
        const char *params[GX_MAX_PARAMS];
        int n = 0;
        if (strcmp(rt->method, method) == 0 && (*max = s->o.spool_max(s->o.app, rt)) > 0 &&
            gx_route_match(rt->pattern, path, a, params, &n))
            return rt;
    }
    return NULL;
}

/* An unlinked temporary file for a spooled body; -1 on failure. */
static int gx_spool_open(gx_server *s)
{
    const char *dir = s->o.spool_dir;
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/galaxyd-body-XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int gx_spool_write(struct gx_conn *c, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(c->spool_fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        n -= (size_t)w;
        c->spooled += (size_t)w;
    }
    return 0;
}

/* Query arguments: the first that is not clean text answers 400 naming it. */
struct gx_text_check {
    gx_resp *resp;
    int bad;
};

static enum MHD_Result gx_check_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct gx_text_check *tc = cls;
    const char *why = gx_text_problem(key, key_size);
    if (why) {
        gx_resp_fail(tc->resp, ORR_EINVAL, "query", "a query parameter name holds %s", why);
        tc->bad = 1;
        return MHD_NO;
    }
    if (value && (why = gx_text_problem(value, value_size))) {
        /* The name is clean text now; it names the field. */
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(key_size < 127 ? key_size : 127), key);
        gx_resp_fail(tc->resp, ORR_EINVAL, name, "holds %s", why);
        tc->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

/* 0 when the request's path and every query argument are clean text
 * (gx_text_problem); otherwise a 400 in resp and -1. */
static int gx_check_request_text(struct MHD_Connection *conn, const char *url, gx_resp *resp)
{
    const char *why = gx_text_problem(url, strlen(url));
    if (why) {
        gx_resp_fail(resp, ORR_EINVAL, "path", "the path holds %s", why);
        return -1;
    }
    struct gx_text_check tc = {resp, 0};
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, gx_check_arg, &tc);
    return tc.bad ? -1 : 0;
}

static int gx_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* MHD's unescaper for the path and query: %XX decoded; %00 becomes DEL
 * (0x7F), since a NUL would silently cut the string ("x%00" naming "x"),
 * while DEL is a control character that gx_text_problem refuses. Other
 * bytes and malformed escapes are kept as they are. */
static size_t gx_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    char *w = s;
    for (const char *r = s; *r; r++) {
        int hi, lo;
        if (r[0] == '%' && (hi = gx_hexval(r[1])) >= 0 && (lo = gx_hexval(r[2])) >= 0) {
            int c = hi * 16 + lo;
            *w++ = (char)(c == 0 ? 0x7f : c);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* Request size limits (docs/api.md, "Request limits"). libmicrohttpd parses
 * the query into its per-connection memory pool before galaxyd sees the
 * request, and a query of thousands of arguments exhausts the pool: the
 * connection then got no answer at all. So the raw request target is looked
 * at first (the URI log callback runs before that parse): an oversize one
 * has its query cut off (the string after the '?' is ended at once, so
 * nothing is parsed) and is marked, and gx_access answers it 414 in JSON. The pool
 * (GX_MHD_POOL) is sized so that requests within the limits always fit;
 * headers beyond the pool are refused by libmicrohttpd itself with 431. */
#define GX_MAX_TARGET        8192 /* bytes of path and query */
#define GX_MAX_ARGS          256  /* query arguments */
#define GX_MAX_HEADERS_BYTES (16 * 1024)
#define GX_MAX_HEADER_COUNT  100
#define GX_MHD_POOL          (128 * 1024)

static char gx_oversize_mark; /* con_cls of a request whose target was cut */

static void *gx_uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    size_t len = strlen(uri), args = 0;
    const char *q = strchr(uri, '?');
    for (const char *p = q; p && *p; p++)
        args += *p == '&' || *p == '?';
    if (len <= GX_MAX_TARGET && args <= GX_MAX_ARGS)
        return NULL;
    /* The buffer is libmicrohttpd's own read buffer, writable; it is handed
     * over as const only by the callback's type. libmicrohttpd has found the
     * '?' already and parses the C string after it: end that string. */
    if (q)
        ((char *)q)[1] = '\0';
    return &gx_oversize_mark;
}

/* 0 when the headers are within the limits, else a 431 in resp and -1. */
struct gx_hdr_count {
    size_t bytes, n;
};

static enum MHD_Result gx_count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                       size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)key;
    (void)value;
    struct gx_hdr_count *hc = cls;
    hc->n++;
    hc->bytes += key_size + value_size + 4;
    return MHD_YES;
}

static int gx_check_headers(struct MHD_Connection *conn, gx_resp *resp)
{
    struct gx_hdr_count hc = {0, 0};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, gx_count_header, &hc);
    if (hc.n <= GX_MAX_HEADER_COUNT && hc.bytes <= GX_MAX_HEADERS_BYTES)
        return 0;
    gx_resp_fail(resp, ORR_ETOOBIG, "headers",
                 "request headers too large: at most %d headers and %d bytes", GX_MAX_HEADER_COUNT,
                 GX_MAX_HEADERS_BYTES);
    resp->status = 431;
    return -1;
}

static enum MHD_Result gx_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    (void)version;
    gx_server *s = cls;
    struct gx_conn *c = *con_cls;
    int oversize = *con_cls == (void *)&gx_oversize_mark;
    if (oversize)
        c = NULL;
    if (!c) {
        c = calloc(1, sizeof(*c));
        if (!c)
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &c->start);
        c->req.arena = orr_arena_create(0);
        c->req.conn = conn;
        c->req.method = orr_arena_strdup(c->req.arena, method);
        c->req.path = orr_arena_strdup(c->req.arena, url);
        c->req.app = s->o.app;
        c->req.server = s;
        c->stats_index = (int)s->o.nroutes + 1;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char addr[INET6_ADDRSTRLEN] = "unknown";
        if (ci && ci->client_addr) {
            const struct sockaddr *sa = ci->client_addr;
            if (sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof(addr));
            else if (sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr,
                          sizeof(addr));
        }
        c->req.peer = orr_arena_strdup(c->req.arena, addr);
        char client[INET6_ADDRSTRLEN];
        gx_client_addr(addr, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-For"),
                       s->o.trusted_proxies, client, sizeof client);
        c->req.client = orr_arena_strdup(c->req.arena, client);
        c->spool_fd = -1;
        c->req.body_fd = -1;
        c->limit = s->o.max_body;
        gx_resp_init(&c->early);
        if (oversize) {
            gx_resp_fail(&c->early, ORR_ETOOBIG, "path",
                         "request target too long: at most %d bytes and %d query arguments",
                         GX_MAX_TARGET, GX_MAX_ARGS);
            c->early.status = 414;
        }
        /* Sizes, then path and query text, are checked before any handler
         * sees the request: the body (if any) is drained and the 4xx sent
         * at the end. */
        if (oversize || gx_check_headers(conn, &c->early) != 0 ||
            gx_check_request_text(conn, url, &c->early) != 0) {
            c->refused = 1;
            atomic_fetch_add(&s->in_flight, 1);
            c->counted = 1;
            *con_cls = c;
            return MHD_YES;
        }
        size_t spool_max = 0;
        const gx_route *sp = gx_spool_route(s, method, url, c->req.arena, &spool_max);
        if (sp) {
            c->limit = spool_max;
            /* Nobody stores a byte before they are known: authenticate now. */
            if (sp->min_role != GX_ROLE_NONE && s->o.auth) {
                c->req.route = sp;
                if (s->o.auth(&c->req, &c->early) != 0)
                    c->refused = 1;
            }
            if (!c->refused && (c->spool_fd = gx_spool_open(s)) < 0)
                c->spool_failed = 1;
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > c->limit)
            c->too_big = 1;
        atomic_fetch_add(&s->in_flight, 1);
        c->counted = 1;
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_data_size) {
        /* Drain without storing once the limit is passed, the caller was
         * refused or the spool failed; answer at the end. */
        size_t have = c->spool_fd >= 0 ? c->spooled : c->body.len;
        if (!c->too_big && have + *upload_data_size > c->limit)
            c->too_big = 1;
        if (c->too_big || c->refused || c->spool_failed) {
            /* nothing kept */
        } else if (c->spool_fd >= 0) {
            if (gx_spool_write(c, upload_data, *upload_data_size) != 0)
                c->spool_failed = 1;
        } else {
            orr_buf_append(&c->body, upload_data, *upload_data_size);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    gx_resp resp;
    gx_resp_init(&resp);
    if (c->refused) {
        resp = c->early;
        gx_resp_init(&c->early);
    } else if (c->too_big) {
        gx_resp_fail(&resp, ORR_ETOOBIG, "body", "request body larger than %zu bytes", c->limit);
    } else if (c->spool_failed) {
        gx_resp_fail(&resp, ORR_EUNAVAIL, "body", "cannot store the request body: %s",
                     strerror(errno));
    } else if (c->spool_fd >= 0) {
        c->req.body_spooled = 1;
        c->req.body_fd = c->spool_fd;
        c->req.body_len = c->spooled;
        if (lseek(c->spool_fd, 0, SEEK_SET) != 0) {
            gx_resp_fail(&resp, ORR_EUNAVAIL, "body", "cannot read the request body back");
        } else {
            gx_route_request(s, c, &resp);
        }
    } else {
        if (c->body.len) {
            c->req.body = orr_arena_strndup(c->req.arena, c->body.data, c->body.len);
            c->req.body_len = c->body.len;
        }
        orr_buf_free(&c->body);
        gx_route_request(s, c, &resp);
    }
    enum MHD_Result ret = gx_send(conn, c->req.path, &resp);
    if (resp.fd >= 0)
        close(resp.fd);
    orr_buf_free(&resp.body);
    int cls_idx = resp.status / 100;
    if (cls_idx >= 1 && cls_idx <= 5)
        atomic_fetch_add(&s->stats[c->stats_index].by_class[cls_idx], 1);
    return ret;
}

static void gx_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    gx_server *s = cls;
    struct gx_conn *c = *con_cls;
    if (!c || *con_cls == (void *)&gx_oversize_mark) /* never reached gx_access */
        return;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double secs =
        (double)(end.tv_sec - c->start.tv_sec) + (double)(end.tv_nsec - c->start.tv_nsec) / 1e9;
    struct gx_route_stats *st = &s->stats[c->stats_index];
    int b = 0;
    while (b < GX_LAT_BUCKETS && secs > gx_lat_bounds_s[b])
        b++;
    atomic_fetch_add(&st->lat[b], 1);
    atomic_fetch_add(&st->lat_sum_us, (uint64_t)(secs * 1e6));
    if (c->counted)
        atomic_fetch_sub(&s->in_flight, 1);
    orr_buf_free(&c->body);
    if (c->spool_fd >= 0)
        close(c->spool_fd);
    orr_buf_free(&c->early.body);
    orr_arena_destroy(c->req.arena);
    free(c);
    *con_cls = NULL;
}

static orr_status gx_parse_listen(const char *listen, struct sockaddr_in *sa, orr_err *err)
{
    char host[64];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof(host))
        return orr_err_set(err, ORR_EINVAL, "galaxy.listen", "must be HOST:PORT, got \"%s\"",
                           listen);
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return orr_err_set(err, ORR_EINVAL, "galaxy.listen", "bad port in \"%s\"", listen);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return orr_err_set(err, ORR_EINVAL, "galaxy.listen", "bad IPv4 address in \"%s\"", listen);
    return ORR_OK;
}

orr_status gx_server_start(const gx_server_opts *o, gx_server **out, orr_err *err)
{
    struct sockaddr_in sa;
    orr_status rc = gx_parse_listen(o->listen, &sa, err);
    if (rc != ORR_OK)
        return rc;
    gx_server *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->o = *o;
    if (s->o.threads <= 0)
        s->o.threads = 4;
    if (!s->o.max_body)
        s->o.max_body = 1 << 20;
    if (s->o.cache_ttl_ms == 0)
        s->o.cache_ttl_ms = GX_CACHE_TTL_MS;
    if (!s->o.cache_max_entry)
        s->o.cache_max_entry = GX_CACHE_MAX_ENTRY;
    for (int i = 0; i < GX_CACHE_SLOTS; i++)
        pthread_rwlock_init(&s->cache[i].lock, NULL);
    pthread_mutex_init(&s->rq_mu, NULL);
    pthread_cond_init(&s->rq_cv, NULL);
    s->stats = calloc(o->nroutes + 2, sizeof(*s->stats));
    if (!s->stats)
        abort();
    s->mhd = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        gx_access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)s->o.threads, MHD_OPTION_NOTIFY_COMPLETED, gx_completed, s,
        MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_UNESCAPE_CALLBACK, gx_unescape, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, gx_uri_seen, NULL, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)GX_MHD_POOL, MHD_OPTION_END);
    /* MHD_OPTION_LISTENING_ADDRESS_REUSE is left out on purpose: by default
     * libmicrohttpd sets SO_REUSEADDR, so a restart rebinds at once while the
     * old connections sit in TIME_WAIT; 0 would clear it and 1 would add
     * SO_REUSEPORT, letting a second galaxyd share the port unnoticed. */
    if (!s->mhd) {
        for (int i = 0; i < GX_CACHE_SLOTS; i++)
            pthread_rwlock_destroy(&s->cache[i].lock);
        pthread_mutex_destroy(&s->rq_mu);
        pthread_cond_destroy(&s->rq_cv);
        free(s->stats);
        free(s);
        return orr_err_set(err, ORR_EIO, "galaxy.listen", "cannot listen on %s", o->listen);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : 0;
    if (s->o.cache_ttl_ms > 0 && pthread_create(&s->rq_thread, NULL, gx_refresher, s) == 0)
        s->rq_started = 1;
    *out = s;
    return ORR_OK;
}

int gx_server_port(const gx_server *s)
{
    return s->port;
}

void gx_server_stop(gx_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->mhd);
    if (s->rq_started) {
        pthread_mutex_lock(&s->rq_mu);
        s->rq_stop = 1;
        pthread_cond_signal(&s->rq_cv);
        pthread_mutex_unlock(&s->rq_mu);
        pthread_join(s->rq_thread, NULL);
    }
    pthread_mutex_destroy(&s->rq_mu);
    pthread_cond_destroy(&s->rq_cv);
    for (int i = 0; i < GX_CACHE_SLOTS; i++) {
        free(s->cache[i].key);
        free(s->cache[i].body);
        pthread_rwlock_destroy(&s->cache[i].lock);
    }
    free(s->stats);
    free(s);
}

void gx_server_resume(struct MHD_Connection *conn)
{
    MHD_resume_connection(conn);
}

/* One metric family at a time: Prometheus wants each family's lines together. */
static void gx_metrics_counts(orr_buf *out, const char *method, const char *pattern,
                              struct gx_route_stats *st)
{
    for (int k = 1; k <= 5; k++) {
        uint64_t n = atomic_load(&st->by_class[k]);
        if (n)
            orr_buf_appendf(out,
                            "galaxy_http_requests_total{method=\"%s\",route=\"%s\",code=\"%dxx\"} "
                            "%llu\n",
                            method, pattern, k, (unsigned long long)n);
    }
}

static void gx_metrics_latency(orr_buf *out, const char *method, const char *pattern,
                               struct gx_route_stats *st)
{
    uint64_t cum = 0;
    for (int b = 0; b <= GX_LAT_BUCKETS; b++) {
        cum += atomic_load(&st->lat[b]);
        char le[32];
        if (b < GX_LAT_BUCKETS)
            snprintf(le, sizeof(le), "%g", gx_lat_bounds_s[b]);
        else
            snprintf(le, sizeof(le), "+Inf");
        orr_buf_appendf(out,
                        "galaxy_http_request_seconds_bucket{method=\"%s\",route=\"%s\",le=\"%s\"} "
                        "%llu\n",
                        method, pattern, le, (unsigned long long)cum);
    }
    orr_buf_appendf(out, "galaxy_http_request_seconds_sum{method=\"%s\",route=\"%s\"} %.6f\n",
                    method, pattern, (double)atomic_load(&st->lat_sum_us) / 1e6);
    orr_buf_appendf(out, "galaxy_http_request_seconds_count{method=\"%s\",route=\"%s\"} %llu\n",
                    method, pattern, (unsigned long long)cum);
}

void gx_server_metrics(gx_server *s, orr_buf *out)
{
    size_t n = s->o.nroutes;
    orr_buf_append_str(out, "# HELP galaxy_http_requests_total HTTP requests by route and "
                            "status class.\n# TYPE galaxy_http_requests_total counter\n");
    for (size_t i = 0; i < n; i++)
        gx_metrics_counts(out, s->o.routes[i].method, s->o.routes[i].pattern, &s->stats[i]);
    gx_metrics_counts(out, "GET", "static", &s->stats[n]);
    gx_metrics_counts(out, "ANY", "unmatched", &s->stats[n + 1]);
    orr_buf_append_str(out, "# HELP galaxy_http_request_seconds HTTP request latency.\n"
                            "# TYPE galaxy_http_request_seconds histogram\n");
    for (size_t i = 0; i < n; i++)
        gx_metrics_latency(out, s->o.routes[i].method, s->o.routes[i].pattern, &s->stats[i]);
    gx_metrics_latency(out, "GET", "static", &s->stats[n]);
    gx_metrics_latency(out, "ANY", "unmatched", &s->stats[n + 1]);
    orr_buf_appendf(out,
                    "# HELP galaxy_http_in_flight Requests being served.\n"
                    "# TYPE galaxy_http_in_flight gauge\ngalaxy_http_in_flight %d\n",
                    atomic_load(&s->in_flight));
    gx_cache_stats cs;
    gx_cache_get_stats(s, &cs);
    orr_buf_appendf(out,
                    "# HELP galaxy_http_cache_total Response cache lookups and changes.\n"
                    "# TYPE galaxy_http_cache_total counter\n"
                    "galaxy_http_cache_total{event=\"hit\"} %llu\n"
                    "galaxy_http_cache_total{event=\"miss\"} %llu\n"
                    "galaxy_http_cache_total{event=\"store\"} %llu\n"
                    "galaxy_http_cache_total{event=\"invalidate\"} %llu\n"
                    "galaxy_http_cache_total{event=\"refresh\"} %llu\n",
                    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
                    (unsigned long long)cs.stores, (unsigned long long)cs.invalidations,
                    (unsigned long long)cs.refreshes);
}

/*
 * gx_http_cache.c - galaxyd's response cache (contract in gx_http.h).
 *
 * GX_CACHE_SLOTS direct-mapped slots (FNV-1a of the key),
 * each under its own rwlock so hits on one hot key read in parallel. An
 * entry is usable while its generation equals the server's and it is younger
 * than the TTL; both are taken at lookup time, before the handler fetched
 * the data, so an entry can only be older than the TTL says, never newer
 * than the writes that finished before its lookup. Past half the TTL the
 * first request to see an entry (a compare-and-set on the slot) queues a
 * replay of itself for the refresher thread and is served from the entry
 * like every other reader, so no pool thread waits on halleyd for a hot key;
 * when the bounded queue is full that request fetches itself instead. A slot
 * collision simply replaces the older entry; memory is at most slots x max
 * entry. While no event stream keeps the cache in step (gx_cache_set_synced)
 * the TTL is capped at GX_CACHE_FALLBACK_MS.
 */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gx_http_int.h"
#include "orr_hash.h"

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

static int64_t gx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
    uint64_t h = orr_hash_fnv1a_str(req->cache_key);
    struct gx_cache_slot *sl = &s->cache[h % GX_CACHE_SLOTS];
    int hit = 0, refresh = 0;
    int64_t now = req->cache_t0_ms, ttl = s->o.cache_ttl_ms;
    if (!atomic_load(&s->cache_synced) && ttl > GX_CACHE_FALLBACK_MS)
        ttl = GX_CACHE_FALLBACK_MS;
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
    uint64_t h = orr_hash_fnv1a(req->cache_key, klen);
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

void gx_cache_set_synced(gx_server *s, int synced)
{
    atomic_store(&s->cache_synced, synced ? 1 : 0);
}

void gx_cache_get_stats(gx_server *s, gx_cache_stats *out)
{
    out->hits = atomic_load(&s->cache_hits);
    out->misses = atomic_load(&s->cache_misses);
    out->stores = atomic_load(&s->cache_stores);
    out->invalidations = atomic_load(&s->cache_invalidations);
    out->refreshes = atomic_load(&s->cache_refreshes);
}

void gx_cache_init(gx_server *s)
{
    for (int i = 0; i < GX_CACHE_SLOTS; i++)
        pthread_rwlock_init(&s->cache[i].lock, NULL);
    pthread_mutex_init(&s->rq_mu, NULL);
    pthread_cond_init(&s->rq_cv, NULL);
}

void gx_cache_start(gx_server *s)
{
    if (s->o.cache_ttl_ms > 0 && pthread_create(&s->rq_thread, NULL, gx_refresher, s) == 0)
        s->rq_started = 1;
}

void gx_cache_destroy(gx_server *s)
{
    if (s->rq_started) {
        pthread_mutex_lock(&s->rq_mu);
        s->rq_stop = 1;
        pthread_cond_signal(&s->rq_cv);
        pthread_mutex_unlock(&s->rq_mu);
        pthread_join(s->rq_thread, NULL);
        s->rq_started = 0;
    }
    pthread_mutex_destroy(&s->rq_mu);
    pthread_cond_destroy(&s->rq_cv);
    for (int i = 0; i < GX_CACHE_SLOTS; i++) {
        free(s->cache[i].key);
        free(s->cache[i].body);
        pthread_rwlock_destroy(&s->cache[i].lock);
    }
}

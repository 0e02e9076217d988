/* gx_session.c - ended sessions, kept from halleyd's events (see gx_session.h).
 *
 * The set is an open-addressed table of (sid, expiry) keyed by the sid's
 * first 8 bytes (the ids are random), grown by doubling at half load; a
 * rebuild (the load at each stream start, or a growth) drops what expired.
 */
#include "gx_session.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_alloc.h"
#include "orr_log.h"
#include "orr_watch.h"

struct gx_sess_slot {
    char sid[33]; /* "" = empty */
    int64_t exp_ms;
};

struct gx_sessions {
    pthread_mutex_t mu;
    struct gx_sess_slot *slots;
    size_t cap, used;
    orr_rpc_client *halley;
    int rpc_timeout_ms;
    orr_watch *watch;
    struct gx_tokcache *tokcache; /* emptied on "user.updated" (under mu) */
};

/* Empty the API-token cache given, if any. */
static void gx_sess_flush_tokens(gx_sessions *s)
{
    pthread_mutex_lock(&s->mu);
    struct gx_tokcache *c = s->tokcache;
    pthread_mutex_unlock(&s->mu);
    gx_tokcache_flush(c);
}

void gx_sessions_set_tokcache(gx_sessions *s, struct gx_tokcache *c)
{
    pthread_mutex_lock(&s->mu);
    s->tokcache = c;
    pthread_mutex_unlock(&s->mu);
}

static int64_t gx_sess_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t gx_sess_hash(const char *sid)
{
    uint64_t h = 0;
    for (int i = 0; i < 16 && sid[i]; i++)
        h = h * 16 + (uint64_t)(sid[i] <= '9' ? sid[i] - '0' : sid[i] - 'a' + 10);
    return (size_t)h;
}

/* Insert into a table of cap slots (a power of two) that has room. */
static void gx_sess_put(struct gx_sess_slot *slots, size_t cap, const char *sid, int64_t exp_ms)
{
    for (size_t i = gx_sess_hash(sid) & (cap - 1);; i = (i + 1) & (cap - 1)) {
        if (!slots[i].sid[0] || strcmp(slots[i].sid, sid) == 0) {
            memcpy(slots[i].sid, sid, 33);
            slots[i].exp_ms = exp_ms;
            return;
        }
    }
}

/* Rebuild into a table of cap slots with what has not expired; caller locks. */
static void gx_sess_rebuild(gx_sessions *s, size_t cap, int64_t now)
{
    struct gx_sess_slot *n = orr_xcalloc(cap, sizeof *n);
    size_t used = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].sid[0] && s->slots[i].exp_ms > now) {
            gx_sess_put(n, cap, s->slots[i].sid, s->slots[i].exp_ms);
            used++;
        }
    free(s->slots);
    s->slots = n;
    s->cap = cap;
    s->used = used;
}

/* Add one ended session; caller locks. */
static void gx_sess_add(gx_sessions *s, const char *sid, int64_t exp_ms)
{
    if (strlen(sid) != 32)
        return;
    int64_t now = gx_sess_now_ms();
    if (exp_ms <= now)
        return;
    if ((s->used + 1) * 2 > s->cap) {
        size_t cap = s->cap;
        gx_sess_rebuild(s, cap, now); /* drop the expired first */
        while ((s->used + 1) * 2 > cap)
            cap *= 2;
        if (cap != s->cap)
            gx_sess_rebuild(s, cap, now);
    }
    size_t before = 0;
    for (size_t i = gx_sess_hash(sid) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (strcmp(s->slots[i].sid, sid) == 0) {
            before = 1;
            break;
        }
        if (!s->slots[i].sid[0])
            break;
    }
    gx_sess_put(s->slots, s->cap, sid, exp_ms);
    if (!before)
        s->used++;
}

static int gx_sess_has(gx_sessions *s, const char *sid, int64_t now)
{
    for (size_t i = gx_sess_hash(sid) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slots[i].sid[0])
            return 0;
        if (strcmp(s->slots[i].sid, sid) == 0)
            return s->slots[i].exp_ms > now;
    }
}

/* ------------------------------------------------------------ the watcher */

static int gx_sess_on_start(void *cls)
{
    gx_sessions *s = cls;
    HL(ListRevokedSessionsRequest) rq = HL_INIT(LIST_REVOKED_SESSIONS_REQUEST);
    HL(ListRevokedSessionsResponse) *rs = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (orr_rpc_call_unary(s->halley, "ListRevokedSessions", &rq.base, (ProtobufCMessage **)&rs,
                           s->rpc_timeout_ms, &e) != ORR_OK) {
        ORR_WARN("cannot load ended sessions; sessions are checked with halleyd meanwhile",
                 "err=%s", orr_log_q(e.msg));
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < rs->n_sessions; i++)
        gx_sess_add(s, rs->sessions[i]->session_id, rs->sessions[i]->expires_at_ms);
    size_t n = s->used;
    pthread_mutex_unlock(&s->mu);
    protobuf_c_message_free_unpacked(&rs->base, NULL);
    gx_sess_flush_tokens(s); /* user changes may have been missed meanwhile */
    ORR_INFO("ended sessions loaded", "count=%zu", n);
    return 0;
}

static void gx_sess_on_event(void *cls, const HL(Event) * ev)
{
    gx_sessions *s = cls;
    if (strcmp(ev->kind, "user.updated") == 0) {
        gx_sess_flush_tokens(s);
        return;
    }
    if (strcmp(ev->kind, "session.revoked") != 0)
        return;
    json_t *p = json_loads(ev->payload_json ? ev->payload_json : "", 0, NULL);
    json_t *list = json_object_get(p, "sessions");
    size_t i;
    json_t *x;
    pthread_mutex_lock(&s->mu);
    json_array_foreach(list, i, x)
    {
        const char *sid = json_string_value(json_object_get(x, "sid"));
        json_t *exp = json_object_get(x, "exp_ms");
        if (sid && json_is_integer(exp))
            gx_sess_add(s, sid, (int64_t)json_integer_value(exp));
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(p);
}

static void gx_sess_on_lost(void *cls)
{
    (void)cls;
    ORR_WARN("event stream lost: sessions are checked with halleyd until it is back", "watcher=%s",
             "sessions");
}

orr_status gx_sessions_start(orr_rpc_client *c, int rpc_timeout_ms, gx_sessions **out, orr_err *err)
{
    gx_sessions *s = orr_xcalloc(1, sizeof *s);
    s->cap = 256;
    s->slots = orr_xcalloc(s->cap, sizeof *s->slots);
    pthread_mutex_init(&s->mu, NULL);
    s->halley = c;
    s->rpc_timeout_ms = rpc_timeout_ms;
    static const char *const kinds[] = {"session.revoked", "user.updated"};
    orr_watch_opts o = {.kinds = kinds, .nkinds = 2, .name = "galaxyd sessions"};
    orr_watch_ops ops = {
        .on_start = gx_sess_on_start, .on_event = gx_sess_on_event, .on_lost = gx_sess_on_lost};
    orr_status st = orr_watch_start(c, &o, &ops, s, &s->watch, err);
    if (st != ORR_OK) {
        pthread_mutex_destroy(&s->mu);
        free(s->slots);
        free(s);
        return st;
    }
    *out = s;
    return ORR_OK;
}

void gx_sessions_stop(gx_sessions *s)
{
    if (!s)
        return;
    orr_watch_stop(s->watch);
    pthread_mutex_destroy(&s->mu);
    free(s->slots);
    free(s);
}

int gx_sessions_synced(const gx_sessions *s)
{
    return s && orr_watch_synced(s->watch);
}

void gx_sessions_ended(gx_sessions *s, const char *sid, int64_t exp_ms)
{
    pthread_mutex_lock(&s->mu);
    gx_sess_add(s, sid, exp_ms);
    pthread_mutex_unlock(&s->mu);
}

orr_status gx_sessions_check(gx_sessions *s, const char *sid, int64_t now_ms, orr_err *err)
{
    pthread_mutex_lock(&s->mu);
    int ended = gx_sess_has(s, sid, now_ms);
    pthread_mutex_unlock(&s->mu);
    if (ended)
        return orr_err_set(err, ORR_EAUTH, "authorization", "session ended; log in again");
    if (orr_watch_synced(s->watch))
        return ORR_OK;
    /* Not in step with halleyd's events: ask. */
    HL(CheckSessionRequest) rq = HL_INIT(CHECK_SESSION_REQUEST);
    rq.session_id = (char *)sid;
    HL(CheckSessionResponse) *rs = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (orr_rpc_call_unary(s->halley, "CheckSession", &rq.base, (ProtobufCMessage **)&rs,
                           s->rpc_timeout_ms, &e) != ORR_OK)
        return orr_err_set(err, ORR_EUNAVAIL, NULL,
                           "cannot check the session with the metadata service; retry shortly");
    int active = rs->active;
    protobuf_c_message_free_unpacked(&rs->base, NULL);
    return active ? ORR_OK
                  : orr_err_set(err, ORR_EAUTH, "authorization", "session ended; log in again");
}

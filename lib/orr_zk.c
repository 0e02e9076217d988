/*
 * orr_zk.c - ZooKeeper client (contract in orr_zk.h).
 *
 * Locks and threads:
 *   rw   read-held by every synchronous call while it uses zh; write-held by
 *        orr_zk_renew/orr_zk_close while zh is replaced (so no call uses a
 *        closed client). Never taken on a client thread.
 *   mu   the session state (zh, connected, expired, ids, notify) and the
 *        connection wait (cv). The session watcher takes it; nobody holds it
 *        across a ZooKeeper call or zookeeper_close.
 *   lmu  the listeners; held while they are called (on the client's event
 *        thread), so after orr_zk_unlisten a listener is never called.
 * zookeeper_init runs with mu held, so the watcher of a new client sees zh
 * stored before it looks; events of a client that is no longer z->zh (being
 * closed) are dropped.
 */
#include "orr_zk.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_log.h"

#define ZK_LISTENERS_MAX 4
#define ZK_PATH_MAX      1024
#define ZK_DATA_MAX      (1 << 20)
#define ZK_READ_FIRST    (64 * 1024)

typedef struct zk__listener {
    orr_zk_listener fn;
    void *ctx;
} zk__listener;

struct orr_zk {
    pthread_rwlock_t rw;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t lmu;
    zhandle_t *zh;
    char *hosts;
    int session_ms, wait_ms, manual_renew;
    atomic_int connected;
    int expired;
    atomic_int timeout_ms;   /* negotiated, or requested before */
    atomic_llong session_id; /* 0 before the first connection */
    orr_zk_notify notify;    /* orr_zk_get_watch */
    void *notify_ctx;
    zk__listener ls[ZK_LISTENERS_MAX + 1]; /* [0] = opts.on_event */
    /* fencing */
    atomic_int gen;             /* bumped by every new session */
    atomic_llong last_ack_ms;   /* send time of the last answered probe; 0 none */
    atomic_llong last_probe_ms; /* send time of the last probe */
};

typedef struct zk__probe {
    orr_zk *z;
    int gen;
    int64_t sent_ms;
} zk__probe;

int64_t orr_zk_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void zk__deliver(orr_zk *z, orr_zk_event ev, const char *path)
{
    pthread_mutex_lock(&z->lmu);
    for (int i = 0; i < ZK_LISTENERS_MAX + 1; i++)
        if (z->ls[i].fn)
            z->ls[i].fn(z->ls[i].ctx, ev, path);
    pthread_mutex_unlock(&z->lmu);
}

/* The client's global watcher: session events. */
static void zk__session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    orr_zk *z = ctx;
    if (type != ZOO_SESSION_EVENT)
        return; /* node watches are set with zk__node_watcher */
    pthread_mutex_lock(&z->mu);
    if (zh != z->zh) { /* a client being closed */
        pthread_mutex_unlock(&z->mu);
        return;
    }
    orr_zk_event ev;
    if (state == ZOO_CONNECTED_STATE) {
        int t = zoo_recv_timeout(zh);
        if (t > 0)
            atomic_store(&z->timeout_ms, t);
        const clientid_t *id = zoo_client_id(zh);
        atomic_store(&z->session_id, id ? (long long)id->client_id : 0);
        atomic_store(&z->connected, 1);
        ev = ORR_ZK_CONNECTED;
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        atomic_store(&z->connected, 0);
        z->expired = 1;
        ev = ORR_ZK_EXPIRED;
    } else {
        atomic_store(&z->connected, 0);
        ev = ORR_ZK_DISCONNECTED;
    }
    orr_zk_notify fn = ev == ORR_ZK_CONNECTED ? NULL : z->notify; /* watches die with a session */
    void *fctx = z->notify_ctx;
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
    zk__deliver(z, ev, NULL);
    if (fn)
        fn(fctx);
}

/* The watcher of every watch set by a call: a node or its children changed.
 * Session events also reach it; zk__session_watcher reports those. */
static void zk__node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)state;
    orr_zk *z = ctx;
    orr_zk_event ev;
    if (type == ZOO_CREATED_EVENT)
        ev = ORR_ZK_CREATED;
    else if (type == ZOO_DELETED_EVENT)
        ev = ORR_ZK_DELETED;
    else if (type == ZOO_CHANGED_EVENT)
        ev = ORR_ZK_CHANGED;
    else if (type == ZOO_CHILD_EVENT)
        ev = ORR_ZK_CHILDREN;
    else
        return;
    pthread_mutex_lock(&z->mu);
    int current = zh == z->zh;
    orr_zk_notify fn = z->notify;
    void *fctx = z->notify_ctx;
    pthread_mutex_unlock(&z->mu);
    if (!current)
        return;
    zk__deliver(z, ev, path);
    if (fn)
        fn(fctx);
}

/* Caller holds mu (and rw for writing, or is the only user). */
static int zk__init_locked(orr_zk *z)
{
    atomic_store(&z->connected, 0);
    z->expired = 0;
    atomic_store(&z->session_id, 0);
    atomic_fetch_add(&z->gen, 1);
    atomic_store(&z->last_ack_ms, 0);
    z->zh = zookeeper_init(z->hosts, zk__session_watcher, z->session_ms, NULL, z, 0);
    return z->zh != NULL;
}

/* Replace the client by a new one; with only_stale, only if there is none or
 * its session expired (checked under the write lock, so callers that all
 * found it stale open one new session between them, not one each). */
static orr_status zk__renew(orr_zk *z, int only_stale, orr_err *err)
{
    pthread_rwlock_wrlock(&z->rw);
    pthread_mutex_lock(&z->mu);
    if (only_stale && z->zh && !z->expired) {
        pthread_mutex_unlock(&z->mu);
        pthread_rwlock_unlock(&z->rw);
        return ORR_OK;
    }
    zhandle_t *old = z->zh;
    z->zh = NULL;
    atomic_store(&z->connected, 0);
    pthread_mutex_unlock(&z->mu);
    if (old)
        zookeeper_close(old);
    pthread_mutex_lock(&z->mu);
    int ok = zk__init_locked(z);
    int e = errno;
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
    pthread_rwlock_unlock(&z->rw);
    if (!ok)
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "cannot start a ZooKeeper client for %s: %s",
                           z->hosts, strerror(e));
    return ORR_OK;
}

orr_status orr_zk_renew(orr_zk *z, orr_err *err)
{
    return zk__renew(z, 0, err);
}

orr_status orr_zk_start(const char *hosts, const orr_zk_opts *o, orr_zk **out, orr_err *err)
{
    static atomic_int quiet;
    *out = NULL;
    if (!hosts || !*hosts)
        return orr_err_set(err, ORR_EINVAL, "zk", "no ZooKeeper hosts given (host:port,...)");
    if (!atomic_exchange(&quiet, 1))
        zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    orr_zk *z = orr_xcalloc(1, sizeof(*z));
    z->hosts = orr_xstrdup(hosts);
    pthread_rwlock_init(&z->rw, NULL);
    pthread_mutex_init(&z->mu, NULL);
    pthread_cond_init(&z->cv, NULL);
    pthread_mutex_init(&z->lmu, NULL);
    z->session_ms = o && o->session_ms > 0 ? o->session_ms : 10000;
    z->wait_ms = o && o->wait_ms > 0 ? o->wait_ms : 2000;
    z->manual_renew = o ? o->manual_renew : 0;
    if (o && o->on_event) {
        z->ls[0].fn = o->on_event;
        z->ls[0].ctx = o->ctx;
    }
    atomic_store(&z->timeout_ms, z->session_ms);
    *out = z;
    pthread_mutex_lock(&z->mu);
    int ok = zk__init_locked(z);
    int e = errno;
    pthread_mutex_unlock(&z->mu);
    if (!ok)
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "cannot start a ZooKeeper client for %s: %s",
                           hosts, strerror(e));
    return ORR_OK;
}

orr_status orr_zk_open(const char *hosts, int timeout_ms, orr_zk **out, orr_err *err)
{
    orr_zk_opts o = {.wait_ms = timeout_ms};
    orr_status rc = orr_zk_start(hosts, &o, out, err);
    if (rc == ORR_EINVAL)
        return rc;
    return orr_zk_wait(*out, (*out)->wait_ms, err);
}

void orr_zk_close(orr_zk *z)
{
    if (!z)
        return;
    pthread_rwlock_wrlock(&z->rw);
    pthread_mutex_lock(&z->mu);
    zhandle_t *zh = z->zh;
    z->zh = NULL;
    atomic_store(&z->connected, 0);
    pthread_mutex_unlock(&z->mu);
    if (zh)
        zookeeper_close(zh);
    pthread_rwlock_unlock(&z->rw);
    pthread_mutex_destroy(&z->lmu);
    pthread_cond_destroy(&z->cv);
    pthread_mutex_destroy(&z->mu);
    pthread_rwlock_destroy(&z->rw);
    free(z->hosts);
    free(z);
}

orr_status orr_zk_wait(orr_zk *z, int timeout_ms, orr_err *err)
{
    pthread_mutex_lock(&z->mu);
    int stale = !z->zh || z->expired;
    pthread_mutex_unlock(&z->mu);
    if (stale && !z->manual_renew) {
        orr_status rc = zk__renew(z, 1, err);
        if (rc != ORR_OK)
            return rc;
    }
    struct timespec until = orr_clock_after(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&z->mu);
    while (!atomic_load(&z->connected) && z->zh && !z->expired)
        if (pthread_cond_timedwait(&z->cv, &z->mu, &until) == ETIMEDOUT)
            break;
    int ok = atomic_load(&z->connected), expired = z->expired;
    pthread_mutex_unlock(&z->mu);
    if (ok)
        return ORR_OK;
    if (expired)
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "the ZooKeeper session expired");
    return orr_err_set(err, ORR_EUNAVAIL, "zk", "ZooKeeper %s not reachable", z->hosts);
}

orr_zk_state orr_zk_state_now(orr_zk *z)
{
    pthread_mutex_lock(&z->mu);
    orr_zk_state s = !z->zh                       ? ORR_ZK_NONE
                     : z->expired                 ? ORR_ZK_GONE
                     : atomic_load(&z->connected) ? ORR_ZK_LIVE
                                                  : ORR_ZK_CONNECTING;
    pthread_mutex_unlock(&z->mu);
    return s;
}

int orr_zk_connected(orr_zk *z)
{
    return atomic_load(&z->connected);
}

int orr_zk_timeout_ms(orr_zk *z)
{
    return atomic_load(&z->timeout_ms);
}

int64_t orr_zk_session_id(orr_zk *z)
{
    return atomic_load(&z->session_id);
}

orr_status orr_zk_listen(orr_zk *z, orr_zk_listener fn, void *ctx)
{
    orr_status rc = ORR_ETOOBIG;
    pthread_mutex_lock(&z->lmu);
    for (int i = 1; i < ZK_LISTENERS_MAX + 1 && rc != ORR_OK; i++)
        if (!z->ls[i].fn) {
            z->ls[i].fn = fn;
            z->ls[i].ctx = ctx;
            rc = ORR_OK;
        }
    pthread_mutex_unlock(&z->lmu);
    return rc;
}

void orr_zk_unlisten(orr_zk *z, orr_zk_listener fn, void *ctx)
{
    pthread_mutex_lock(&z->lmu);
    for (int i = 1; i < ZK_LISTENERS_MAX + 1; i++)
        if (z->ls[i].fn == fn && z->ls[i].ctx == ctx) {
            z->ls[i].fn = NULL;
            z->ls[i].ctx = NULL;
            break;
        }
    pthread_mutex_unlock(&z->lmu);
}

/* ------------------------------------------------------------------ calls */

static orr_status zk__map(int rc, const char *path, orr_err *err)
{
    switch (rc) {
    case ZOK:
        return ORR_OK;
    case ZNONODE:
        return orr_err_set(err, ORR_ENOTFOUND, "zk", "no node %s", path);
    case ZNODEEXISTS:
        return orr_err_set(err, ORR_EEXIST, "zk", "node %s exists", path);
    case ZBADVERSION:
        return orr_err_set(err, ORR_ECONFLICT, "zk", "node %s changed meanwhile", path);
    case ZNOTEMPTY:
        return orr_err_set(err, ORR_ESTATE, "zk", "node %s has children", path);
    case ZBADARGUMENTS:
    case ZNOCHILDRENFOREPHEMERALS:
        return orr_err_set(err, ORR_EINVAL, "zk", "ZooKeeper %s: %s", path, zerror(rc));
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING:
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "ZooKeeper: %s", zerror(rc));
    default:
        return orr_err_set(err, ORR_EIO, "zk", "ZooKeeper %s: %s", path, zerror(rc));
    }
}

/* Check path, wait for a session and read-lock the client: *zh is usable
 * until zk__end. */
static orr_status zk__begin(orr_zk *z, const char *path, zhandle_t **zh, orr_err *err)
{
    orr_status rc = orr_zk_path_check(path, err);
    if (rc != ORR_OK)
        return rc;
    if ((rc = orr_zk_wait(z, z->wait_ms, err)) != ORR_OK)
        return rc;
    pthread_rwlock_rdlock(&z->rw);
    *zh = z->zh;
    if (!*zh) {
        pthread_rwlock_unlock(&z->rw);
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "no ZooKeeper session");
    }
    return ORR_OK;
}

static void zk__end(orr_zk *z)
{
    pthread_rwlock_unlock(&z->rw);
}

static void zk__stat(orr_zk_stat *out, const struct Stat *st)
{
    if (!out)
        return;
    out->version = st->version;
    out->owner = st->ephemeralOwner;
    out->num_children = st->numChildren;
    out->data_length = st->dataLength;
}

orr_status orr_zk_exists(orr_zk *z, const char *path, int watch, orr_zk_stat *st, orr_err *err)
{
    zhandle_t *zh;
    orr_status rc = zk__begin(z, path, &zh, err);
    if (rc != ORR_OK)
        return rc;
    struct Stat s;
    int zrc = zoo_wexists(zh, path, watch ? zk__node_watcher : NULL, z, &s);
    zk__end(z);
    if (zrc == ZOK)
        zk__stat(st, &s);
    return zk__map(zrc, path, err);
}

orr_status orr_zk_read(orr_zk *z, const char *path, int watch, orr_buf *out, orr_zk_stat *st,
                       orr_err *err)
{
    zhandle_t *zh;
    orr_status rc = zk__begin(z, path, &zh, err);
    if (rc != ORR_OK)
        return rc;
    watcher_fn w = watch ? zk__node_watcher : NULL;
    int cap = ZK_READ_FIRST, len = 0, zrc = ZNONODE;
    char *buf = orr_xmalloc((size_t)cap);
    struct Stat s;
    for (int round = 0; round < 4; round++) {
        len = cap;
        zrc = zoo_wget(zh, path, w, z, buf, &len, &s);
        if (zrc == ZOK && s.dataLength > len && s.dataLength <= ZK_DATA_MAX) {
            cap = s.dataLength; /* larger than the first guess: read again */
            free(buf);
            buf = orr_xmalloc((size_t)cap);
            continue;
        }
        if (zrc != ZNONODE || !watch)
            break;
        zrc = zoo_wexists(zh, path, w, z, &s); /* watch for its creation */
        if (zrc != ZOK)
            break;
        zrc = ZNONODE; /* created meanwhile: read it */
    }
    zk__end(z);
    if (zrc == ZOK && s.dataLength > len)
        rc = orr_err_set(err, ORR_ETOOBIG, "zk", "node %s holds %d bytes", path, (int)s.dataLength);
    else
        rc = zk__map(zrc, path, err);
    if (rc == ORR_OK) {
        if (len > 0)
            orr_buf_append(out, buf, (size_t)len);
        zk__stat(st, &s);
    }
    free(buf);
    return rc;
}

orr_status orr_zk_list(orr_zk *z, const char *path, int watch, orr_arena *a, char ***names,
                       size_t *n, orr_err *err)
{
    *names = NULL;
    *n = 0;
    zhandle_t *zh;
    orr_status rc = zk__begin(z, path, &zh, err);
    if (rc != ORR_OK)
        return rc;
    struct String_vector sv = {0, NULL};
    int zrc = zoo_wget_children(zh, path, watch ? zk__node_watcher : NULL, z, &sv);
    zk__end(z);
    rc = zk__map(zrc, path, err);
    if (rc == ORR_OK) {
        *names = orr_arena_calloc(a, (size_t)sv.count + 1, sizeof(char *));
        for (int i = 0; i < sv.count; i++)
            (*names)[i] = orr_arena_strdup(a, sv.data[i]);
        *n = (size_t)sv.count;
    }
    if (zrc == ZOK)
        deallocate_String_vector(&sv);
    return rc;
}

static orr_status zk__len(size_t len, const char *path, orr_err *err)
{
    if (len > ZK_DATA_MAX)
        return orr_err_set(err, ORR_ETOOBIG, "zk", "%zu bytes are too many for node %s", len, path);
    return ORR_OK;
}

orr_status orr_zk_create(orr_zk *z, const char *path, const void *data, size_t len, int flags,
                         orr_arena *a, char **created, orr_err *err)
{
    if (created)
        *created = NULL;
    orr_status rc = zk__len(len, path, err);
    if (rc != ORR_OK)
        return rc;
    zhandle_t *zh;
    if ((rc = zk__begin(z, path, &zh, err)) != ORR_OK)
        return rc;
    int zflags = (flags & ORR_ZK_EPHEMERAL ? ZOO_EPHEMERAL : 0) |
                 (flags & ORR_ZK_SEQUENTIAL ? ZOO_SEQUENCE : 0);
    char name[ZK_PATH_MAX + 16];
    int zrc = zoo_create(zh, path, data, data ? (int)len : -1, &ZOO_OPEN_ACL_UNSAFE, zflags, name,
                         (int)sizeof name);
    zk__end(z);
    rc = zk__map(zrc, path, err);
    if (rc == ORR_OK && created)
        *created = orr_arena_strdup(a, name);
    return rc;
}

orr_status orr_zk_set(orr_zk *z, const char *path, const void *data, size_t len, int version,
                      orr_err *err)
{
    orr_status rc = zk__len(len, path, err);
    if (rc != ORR_OK)
        return rc;
    zhandle_t *zh;
    if ((rc = zk__begin(z, path, &zh, err)) != ORR_OK)
        return rc;
    int zrc = zoo_set(zh, path, data, data ? (int)len : -1, version);
    zk__end(z);
    return zk__map(zrc, path, err);
}

orr_status orr_zk_delete(orr_zk *z, const char *path, int version, orr_err *err)
{
    zhandle_t *zh;
    orr_status rc = zk__begin(z, path, &zh, err);
    if (rc != ORR_OK)
        return rc;
    int zrc = zoo_delete(zh, path, version);
    zk__end(z);
    return zk__map(zrc, path, err);
}

/* Create every proper prefix of path ("/a", "/a/b" for "/a/b/c"), and path
 * itself with self. */
static orr_status zk__mkparents(orr_zk *z, const char *path, int self, orr_err *err)
{
    orr_status rc = orr_zk_path_check(path, err);
    if (rc != ORR_OK)
        return rc;
    size_t plen = strlen(path);
    char prefix[ZK_PATH_MAX + 1];
    for (size_t i = 1; i <= plen; i++) {
        if (i < plen ? path[i] != '/' : !self)
            continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        rc = orr_zk_create(z, prefix, NULL, 0, 0, NULL, NULL, err);
        if (rc != ORR_OK && rc != ORR_EEXIST)
            return rc;
    }
    orr_err_clear(err);
    return ORR_OK;
}

orr_status orr_zk_mkdirs(orr_zk *z, const char *path, orr_err *err)
{
    return zk__mkparents(z, path, 1, err);
}

orr_status orr_zk_put(orr_zk *z, const char *path, const void *data, size_t len, orr_err *err)
{
    orr_status rc = zk__mkparents(z, path, 0, err);
    if (rc != ORR_OK)
        return rc;
    rc = orr_zk_set(z, path, data, len, -1, err);
    if (rc == ORR_ENOTFOUND) {
        rc = orr_zk_create(z, path, data, len, 0, NULL, NULL, err);
        if (rc == ORR_EEXIST) /* created in between by someone else */
            rc = orr_zk_set(z, path, data, len, -1, err);
    }
    return rc;
}

orr_status orr_zk_claim(orr_zk *z, const char *path, const void *data, size_t len, orr_err *err)
{
    orr_status rc = zk__mkparents(z, path, 0, err);
    if (rc != ORR_OK)
        return rc;
    for (int i = 0; i < 3; i++) {
        rc = orr_zk_create(z, path, data, len, ORR_ZK_EPHEMERAL, NULL, NULL, err);
        if (rc != ORR_EEXIST)
            return rc;
        orr_zk_stat st;
        if (orr_zk_exists(z, path, 0, &st, err) != ORR_OK)
            continue;
        if (st.owner == orr_zk_session_id(z))
            return orr_zk_set(z, path, data, len, -1, err);
        /* A node of an older session (a former life of ours): replace it. */
        ORR_WARN("replacing a stale ephemeral node", "path=%s owner=%llx", orr_log_q(path),
                 (unsigned long long)st.owner);
        orr_zk_delete(z, path, -1, err);
    }
    return rc;
}

orr_status orr_zk_children(orr_zk *z, const char *path, orr_arena *a, char ***names, size_t *n,
                           orr_err *err)
{
    return orr_zk_list(z, path, 0, a, names, n, err);
}

orr_status orr_zk_get(orr_zk *z, const char *path, orr_buf *out, orr_err *err)
{
    return orr_zk_read(z, path, 0, out, NULL, err);
}

orr_status orr_zk_get_watch(orr_zk *z, const char *path, orr_buf *out, orr_zk_notify fn, void *ctx,
                            orr_err *err)
{
    pthread_mutex_lock(&z->mu);
    z->notify = fn;
    z->notify_ctx = ctx;
    pthread_mutex_unlock(&z->mu);
    return orr_zk_read(z, path, 1, out, NULL, err);
}

/* ---------------------------------------------------------------- fencing */

int orr_zk_probe_every_ms(int t)
{
    return t / 8 < 100 ? 100 : t / 8 > 1000 ? 1000 : t / 8;
}

int64_t orr_zk_safe_until_at(int64_t last_ack_ms, int t)
{
    if (last_ack_ms == 0)
        return 0;
    int margin = t / 4 < 1000 ? 1000 : t / 4;
    if (margin > t / 2)
        margin = t / 2;
    return last_ack_ms + t - margin;
}

static void zk__probe_done(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    zk__probe *p = (zk__probe *)data;
    /* Any answer of the server (the node "/" exists) counts; connection loss
     * and closing do not. */
    if ((rc == ZOK || rc == ZNONODE) && p->gen == atomic_load(&p->z->gen)) {
        long long prev = atomic_load(&p->z->last_ack_ms);
        while (p->sent_ms > prev &&
               !atomic_compare_exchange_weak(&p->z->last_ack_ms, &prev, p->sent_ms)) {
        }
    }
    free(p);
}

void orr_zk_probe(orr_zk *z)
{
    if (!z || !atomic_load(&z->connected))
        return;
    int64_t now = orr_zk_now_ms();
    if (now - atomic_load(&z->last_probe_ms) < orr_zk_probe_every_ms(atomic_load(&z->timeout_ms)))
        return;
    if (pthread_rwlock_tryrdlock(&z->rw) != 0)
        return; /* a new session is being opened */
    zk__probe *p = orr_xmalloc(sizeof *p);
    p->z = z;
    p->gen = atomic_load(&z->gen);
    p->sent_ms = now;
    int rc = z->zh ? zoo_aexists(z->zh, "/", 0, zk__probe_done, p) : ZINVALIDSTATE;
    pthread_rwlock_unlock(&z->rw);
    if (rc != ZOK)
        free(p);
    else
        atomic_store(&z->last_probe_ms, now);
}

int64_t orr_zk_safe_until(orr_zk *z, int *timeout_ms)
{
    int t = atomic_load(&z->timeout_ms);
    if (timeout_ms)
        *timeout_ms = t;
    return orr_zk_safe_until_at(atomic_load(&z->last_ack_ms), t);
}

/* ------------------------------------------------------------------ paths */

orr_status orr_zk_path_check(const char *path, orr_err *err)
{
    if (!path || path[0] != '/')
        return orr_err_set(err, ORR_EINVAL, "zk", "path %s must start with '/'",
                           path ? path : "(null)");
    size_t len = strlen(path);
    if (len > ZK_PATH_MAX)
        return orr_err_set(err, ORR_EINVAL, "zk", "path longer than %d bytes", ZK_PATH_MAX);
    if (len == 1)
        return ORR_OK;
    if (path[len - 1] == '/')
        return orr_err_set(err, ORR_EINVAL, "zk", "path %s ends with '/'", path);
    for (const char *s = path; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return orr_err_set(err, ORR_EINVAL, "zk", "path holds a control character");
    for (const char *c = path + 1;;) {
        const char *end = strchr(c, '/');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (n == 0)
            return orr_err_set(err, ORR_EINVAL, "zk", "path %s has an empty component", path);
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return orr_err_set(err, ORR_EINVAL, "zk", "path %s has a relative component", path);
        if (!end)
            break;
        c = end + 1;
    }
    return ORR_OK;
}

char *orr_zk_path_join(orr_arena *a, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    if (dl > 0 && dir[dl - 1] == '/')
        dl--;
    return orr_arena_sprintf(a, "%.*s/%s", (int)dl, dir, name);
}

const char *orr_zk_path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

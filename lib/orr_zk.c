/* orr_zk.c - synchronous ZooKeeper reader (see orr_zk.h). */
#include "orr_zk.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

struct orr_zk {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    zhandle_t *zh;
    char *hosts;
    int timeout_ms;
    int connected;
    orr_zk_notify notify; /* orr_zk_get_watch */
    void *notify_ctx;
};

static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)path;
    orr_zk *z = ctx;
    if (type != ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&z->mu);
    z->connected = state == ZOO_CONNECTED_STATE;
    orr_zk_notify fn = z->connected ? NULL : z->notify; /* watches die with a session */
    void *fctx = z->notify_ctx;
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
    if (fn)
        fn(fctx);
}

/* A node watch fired (changed, deleted, created). */
static void zk_node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)type;
    (void)state;
    (void)path;
    orr_zk *z = ctx;
    pthread_mutex_lock(&z->mu);
    orr_zk_notify fn = z->notify;
    void *fctx = z->notify_ctx;
    pthread_mutex_unlock(&z->mu);
    if (fn)
        fn(fctx);
}

/* Caller holds mu. Opens a session if there is none (or it expired) and waits. */
static orr_status zk_ensure(orr_zk *z, orr_err *err)
{
    if (z->zh && zoo_state(z->zh) == ZOO_EXPIRED_SESSION_STATE) {
        zookeeper_close(z->zh);
        z->zh = NULL;
        z->connected = 0;
    }
    if (!z->zh) {
        z->zh = zookeeper_init(z->hosts, zk_watcher, 10000, NULL, z, 0);
        if (!z->zh)
            return orr_err_set(err, ORR_EUNAVAIL, "zk", "cannot start a ZooKeeper client for %s",
                               z->hosts);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += z->timeout_ms / 1000;
    until.tv_nsec += (long)(z->timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!z->connected)
        if (pthread_cond_timedwait(&z->cv, &z->mu, &until) == ETIMEDOUT)
            break;
    if (!z->connected)
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "ZooKeeper %s not reachable", z->hosts);
    return ORR_OK;
}

orr_status orr_zk_open(const char *hosts, int timeout_ms, orr_zk **out, orr_err *err)
{
    static int quiet;
    if (!quiet) {
        zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
        quiet = 1;
    }
    orr_zk *z = calloc(1, sizeof(*z));
    if (!z)
        abort();
    pthread_mutex_init(&z->mu, NULL);
    pthread_cond_init(&z->cv, NULL);
    z->hosts = strdup(hosts);
    if (!z->hosts)
        abort();
    z->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
    *out = z;
    pthread_mutex_lock(&z->mu);
    orr_status rc = zk_ensure(z, err);
    pthread_mutex_unlock(&z->mu);
    return rc;
}

void orr_zk_close(orr_zk *z)
{
    if (!z)
        return;
    if (z->zh)
        zookeeper_close(z->zh);
    pthread_cond_destroy(&z->cv);
    pthread_mutex_destroy(&z->mu);
    free(z->hosts);
    free(z);
}

static orr_status zk_map(int rc, const char *path, orr_err *err)
{
    switch (rc) {
    case ZOK:
        return ORR_OK;
    case ZNONODE:
        return orr_err_set(err, ORR_ENOTFOUND, "zk", "no node %s", path);
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
        return orr_err_set(err, ORR_EUNAVAIL, "zk", "ZooKeeper: %s", zerror(rc));
    default:
        return orr_err_set(err, ORR_EIO, "zk", "ZooKeeper %s: %s", path, zerror(rc));
    }
}

orr_status orr_zk_children(orr_zk *z, const char *path, orr_arena *a, char ***names, size_t *n,
                           orr_err *err)
{
    *names = NULL;
    *n = 0;
    pthread_mutex_lock(&z->mu);
    orr_status rc = zk_ensure(z, err);
    zhandle_t *zh = z->zh;
    pthread_mutex_unlock(&z->mu);
    if (rc != ORR_OK)
        return rc;
    struct String_vector sv = {0, NULL};
    int zrc = zoo_get_children(zh, path, 0, &sv);
    rc = zk_map(zrc, path, err);
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

/* Read path into out; with watch, also leave a one-shot watch on it (on its
 * creation when it does not exist). */
static orr_status zk_read(orr_zk *z, const char *path, orr_buf *out, int watch, orr_err *err)
{
    pthread_mutex_lock(&z->mu);
    orr_status rc = zk_ensure(z, err);
    zhandle_t *zh = z->zh;
    pthread_mutex_unlock(&z->mu);
    if (rc != ORR_OK)
        return rc;
    int cap = 1 << 20;
    char *buf = malloc((size_t)cap);
    if (!buf)
        abort();
    int len = cap, zrc = ZNONODE;
    for (int round = 0; round < 3 && zrc == ZNONODE; round++) {
        len = cap;
        if (!watch) {
            zrc = zoo_get(zh, path, 0, buf, &len, NULL);
            break;
        }
        zrc = zoo_wget(zh, path, zk_node_watcher, z, buf, &len, NULL);
        if (zrc != ZNONODE)
            break;
        zrc = zoo_wexists(zh, path, zk_node_watcher, z, NULL); /* watch for its creation */
        if (zrc == ZOK)
            zrc = ZNONODE; /* created meanwhile: read it */
        else
            break;
    }
    rc = zk_map(zrc, path, err);
    if (rc == ORR_OK && len > 0 && len <= cap)
        orr_buf_append(out, buf, (size_t)len);
    free(buf);
    return rc;
}

orr_status orr_zk_get(orr_zk *z, const char *path, orr_buf *out, orr_err *err)
{
    return zk_read(z, path, out, 0, err);
}

orr_status orr_zk_get_watch(orr_zk *z, const char *path, orr_buf *out, orr_zk_notify fn, void *ctx,
                            orr_err *err)
{
    pthread_mutex_lock(&z->mu);
    z->notify = fn;
    z->notify_ctx = ctx;
    pthread_mutex_unlock(&z->mu);
    return zk_read(z, path, out, 1, err);
}

/*
 * kp_elect.c - ZooKeeper leader election and executor discovery (see
 * kp_elect.h).
 *
 * Flow of the kp_elect thread, once per wake-up (a watcher fired, or 1 s):
 *   1. no handle, or the session expired: close it, open a new one (the
 *      election node of the old session is gone with it);
 *   2. not connected: nothing (leadership was already dropped by the
 *      session watcher);
 *   3. campaign: make sure our node exists, list the election children,
 *      lead if ours is the lowest, else watch the predecessor;
 *   4. executors: when flagged (or every few seconds) list children of
 *      /orrery/executors with a watch, read each one's data with a watch, and
 *      publish a new snapshot.
 */
#include "kp_elect.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "orr_log.h"

#define ELECT_PREFIX  "n_"
#define EXEC_DATA_MAX (64 * 1024)

struct kp_elect {
    char *hosts, *id;
    int session_ms;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t zhmu; /* held while zh is replaced, and by watermark calls */
    int stop;
    zhandle_t *zh;
    /* flags set by watchers (under mu) */
    int expired, dirty_election, dirty_exec;
    atomic_int connected;
    char mynode[256];
    atomic_uint_fast64_t epoch_now;
    uint64_t epoch_counter;
    int64_t last_exec_list_ms;
    /* executor snapshot (under mu) */
    kp_exec *ex;
    size_t n_ex;
    uint64_t ex_version, ex_counter;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void elect_drop(kp_elect *e, const char *why)
{
    uint64_t was = atomic_exchange(&e->epoch_now, 0);
    if (was)
        ORR_WARN("kepler leadership lost", "id=%s epoch=%llu reason=%s", orr_log_q(e->id),
                 (unsigned long long)was, why);
}

static void elect_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    kp_elect *e = ctx;
    if (type == ZOO_SESSION_EVENT) {
        if (state == ZOO_CONNECTED_STATE) {
            atomic_store(&e->connected, 1);
        } else {
            /* stop acting first: a disconnected leader may already be replaced */
            atomic_store(&e->connected, 0);
            elect_drop(e, state == ZOO_EXPIRED_SESSION_STATE ? "session expired"
                                                             : "session disconnected");
        }
    }
    pthread_mutex_lock(&e->mu);
    if (type == ZOO_SESSION_EVENT && state == ZOO_EXPIRED_SESSION_STATE) {
        e->expired = 1;
        e->ex_version = 0;
    }
    if (type == ZOO_SESSION_EVENT) {
        e->dirty_election = e->dirty_exec = 1;
    } else if (path && strncmp(path, KP_ZK_EXECUTORS, strlen(KP_ZK_EXECUTORS)) == 0) {
        e->dirty_exec = 1;
    } else {
        e->dirty_election = 1;
    }
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void ensure_path(zhandle_t *zh, const char *path)
{
    int rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    if (rc != ZOK && rc != ZNODEEXISTS)
        ORR_WARN("zookeeper create failed", "path=%s error=%s", path, orr_log_q(zerror(rc)));
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void campaign(kp_elect *e)
{
    zhandle_t *zh = e->zh;
    struct Stat st;
    if (e->mynode[0] && zoo_exists(zh, e->mynode, 0, &st) == ZNONODE)
        e->mynode[0] = '\0';
    if (!e->mynode[0]) {
        ensure_path(zh, KP_ZK_ROOT);
        ensure_path(zh, KP_ZK_KEPLER);
        ensure_path(zh, KP_ZK_ELECTION);
        char created[256];
        int rc =
            zoo_create(zh, KP_ZK_ELECTION "/" ELECT_PREFIX, e->id, (int)strlen(e->id),
                       &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, created, sizeof created);
        if (rc != ZOK) {
            ORR_WARN("election node not created", "error=%s", orr_log_q(zerror(rc)));
            return;
        }
        snprintf(e->mynode, sizeof e->mynode, "%s", created);
        ORR_INFO("joined kepler election", "id=%s node=%s", orr_log_q(e->id), e->mynode);
    }
    for (int round = 0; round < 5; round++) {
        struct String_vector kids = {0, NULL};
        int rc = zoo_get_children(zh, KP_ZK_ELECTION, 0, &kids);
        if (rc != ZOK) {
            ORR_WARN("election listing failed", "error=%s", orr_log_q(zerror(rc)));
            return;
        }
        if (kids.count > 1)
            qsort(kids.data, (size_t)kids.count, sizeof(char *), str_cmp);
        const char *mine = strrchr(e->mynode, '/') + 1;
        int pos = -1;
        for (int i = 0; i < kids.count; i++)
            if (strcmp(kids.data[i], mine) == 0)
                pos = i;
        char pred[300] = "";
        if (pos > 0)
            snprintf(pred, sizeof pred, "%s/%s", KP_ZK_ELECTION, kids.data[pos - 1]);
        deallocate_String_vector(&kids);
        if (pos < 0) {
            e->mynode[0] = '\0'; /* our node vanished: join again next time */
            elect_drop(e, "election node missing");
            return;
        }
        if (pos == 0) {
            if (atomic_load(&e->connected) && atomic_load(&e->epoch_now) == 0) {
                uint64_t ep = ++e->epoch_counter;
                atomic_store(&e->epoch_now, ep);
                ORR_INFO("kepler leadership gained", "id=%s node=%s epoch=%llu", orr_log_q(e->id),
                         e->mynode, (unsigned long long)ep);
            }
            return;
        }
        elect_drop(e, "another node leads");
        rc = zoo_wexists(zh, pred, elect_watcher, e, &st);
        if (rc == ZOK)
            return; /* woken when the predecessor goes */
        if (rc != ZNONODE) {
            ORR_WARN("election watch failed", "error=%s", orr_log_q(zerror(rc)));
            return;
        }
        /* predecessor left meanwhile: look again */
    }
}

static void list_executors(kp_elect *e)
{
    zhandle_t *zh = e->zh;
    ensure_path(zh, KP_ZK_ROOT);
    ensure_path(zh, KP_ZK_EXECUTORS);
    struct String_vector kids = {0, NULL};
    int rc = zoo_wget_children(zh, KP_ZK_EXECUTORS, elect_watcher, e, &kids);
    if (rc != ZOK) {
        ORR_WARN("executor listing failed", "error=%s", orr_log_q(zerror(rc)));
        return;
    }
    kp_exec *ex = calloc((size_t)(kids.count ? kids.count : 1), sizeof *ex);
    char *buf = malloc(EXEC_DATA_MAX);
    if (!ex || !buf)
        abort();
    size_t n = 0;
    for (int i = 0; i < kids.count; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", KP_ZK_EXECUTORS, kids.data[i]);
        int len = EXEC_DATA_MAX - 1;
        struct Stat st;
        rc = zoo_wget(zh, path, elect_watcher, e, buf, &len, &st);
        if (rc != ZOK || len < 0)
            continue; /* gone meanwhile; the child watch fires again */
        orr_err err;
        if (kp_exec_parse(&ex[n], kids.data[i], buf, (size_t)len, &err) != ORR_OK) {
            ORR_WARN("executor node ignored", "node=%s field=%s error=%s", orr_log_q(path),
                     orr_log_q(err.field), orr_log_q(err.msg));
            continue;
        }
        n++;
    }
    deallocate_String_vector(&kids);
    free(buf);
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n_ex; i++)
        kp_exec_clear(&e->ex[i]);
    free(e->ex);
    e->ex = ex;
    e->n_ex = n;
    e->ex_version = ++e->ex_counter;
    pthread_mutex_unlock(&e->mu);
    e->last_exec_list_ms = now_ms();
}

static void *elect_main(void *arg)
{
    kp_elect *e = arg;
    int64_t last_campaign = 0;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        if (!e->stop && !e->dirty_election && !e->dirty_exec && !e->expired) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&e->cv, &e->mu, &ts);
        }
        int stop = e->stop, expired = e->expired, de = e->dirty_election, dx = e->dirty_exec;
        e->expired = e->dirty_election = e->dirty_exec = 0;
        pthread_mutex_unlock(&e->mu);
        if (stop)
            break;
        if (!e->zh || expired) {
            pthread_mutex_lock(&e->zhmu);
            if (e->zh)
                zookeeper_close(e->zh);
            e->mynode[0] = '\0';
            atomic_store(&e->connected, 0);
            e->zh = zookeeper_init(e->hosts, elect_watcher, e->session_ms, NULL, e, 0);
            pthread_mutex_unlock(&e->zhmu);
            if (!e->zh) {
                ORR_WARN("zookeeper client failed to start", "hosts=%s errno=%d",
                         orr_log_q(e->hosts), errno);
                struct timespec d = {1, 0};
                nanosleep(&d, NULL);
            }
            continue;
        }
        if (zoo_state(e->zh) != ZOO_CONNECTED_STATE || !atomic_load(&e->connected))
            continue;
        int64_t t = now_ms();
        if (de || t - last_campaign >= 1000) {
            campaign(e);
            last_campaign = t;
        }
        if (dx || t - e->last_exec_list_ms >= 5000)
            list_executors(e);
    }
    return NULL;
}

orr_status kp_elect_start(const char *hosts, int session_ms, const char *id, kp_elect **out,
                          orr_err *err)
{
    *out = NULL;
    if (!hosts || !*hosts)
        return orr_err_set(err, ORR_EINVAL, "kepler.zk", "is required (host:port,...)");
    if (!id || !*id || strlen(id) > 200)
        return orr_err_set(err, ORR_EINVAL, "kepler.id", "must be 1-200 bytes");
    kp_elect *e = calloc(1, sizeof *e);
    if (!e)
        abort();
    e->hosts = strdup(hosts);
    e->id = strdup(id);
    e->session_ms = session_ms;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->zhmu, NULL);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    if (pthread_create(&e->th, NULL, elect_main, e) != 0) {
        free(e->hosts);
        free(e->id);
        free(e);
        return orr_err_set(err, ORR_EIO, "kepler.zk", "cannot start the election thread");
    }
    *out = e;
    return ORR_OK;
}

void kp_elect_stop(kp_elect *e)
{
    if (!e)
        return;
    atomic_store(&e->epoch_now, 0);
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->th, NULL);
    if (e->zh) {
        if (e->mynode[0])
            zoo_delete(e->zh, e->mynode, -1);
        zookeeper_close(e->zh);
    }
    for (size_t i = 0; i < e->n_ex; i++)
        kp_exec_clear(&e->ex[i]);
    free(e->ex);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->zhmu);
    pthread_cond_destroy(&e->cv);
    free(e->hosts);
    free(e->id);
    free(e);
}

int kp_elect_connected(kp_elect *e)
{
    return atomic_load(&e->connected);
}

uint64_t kp_elect_leader_epoch(kp_elect *e)
{
    if (!atomic_load(&e->connected))
        return 0;
    return atomic_load(&e->epoch_now);
}

uint64_t kp_elect_executors(kp_elect *e, kp_exec **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&e->mu);
    uint64_t v = e->ex_version;
    if (v) {
        *out = calloc(e->n_ex ? e->n_ex : 1, sizeof **out);
        if (!*out)
            abort();
        for (size_t i = 0; i < e->n_ex; i++) {
            kp_exec *d = &(*out)[i];
            const kp_exec *s = &e->ex[i];
            *d = *s;
            d->labels = NULL;
            d->n_labels = 0;
            if (s->n_labels) {
                d->labels = calloc(s->n_labels, sizeof *d->labels);
                if (!d->labels)
                    abort();
                for (size_t j = 0; j < s->n_labels; j++) {
                    d->labels[j].key = strdup(s->labels[j].key);
                    d->labels[j].value = strdup(s->labels[j].value);
                }
                d->n_labels = s->n_labels;
            }
        }
        *n = e->n_ex;
    }
    pthread_mutex_unlock(&e->mu);
    return v;
}

static orr_status watermark_get(kp_elect *e, int64_t *ms)
{
    zhandle_t *zh = e->zh;
    if (!zh || !atomic_load(&e->connected))
        return ORR_EUNAVAIL;
    char buf[64];
    int len = sizeof buf - 1;
    struct Stat st;
    int rc = zoo_get(zh, KP_ZK_WATERMARK, 0, buf, &len, &st);
    if (rc == ZNONODE || (rc == ZOK && len <= 0))
        return ORR_ENOTFOUND;
    if (rc != ZOK)
        return ORR_EUNAVAIL;
    buf[len] = '\0';
    *ms = strtoll(buf, NULL, 10);
    return ORR_OK;
}

static orr_status watermark_set(kp_elect *e, int64_t ms)
{
    zhandle_t *zh = e->zh;
    if (!zh || !atomic_load(&e->connected))
        return ORR_EUNAVAIL;
    char buf[64], val[32];
    int n = snprintf(val, sizeof val, "%lld", (long long)ms);
    for (int tries = 0; tries < 3; tries++) {
        int len = sizeof buf - 1;
        struct Stat st;
        int rc = zoo_get(zh, KP_ZK_WATERMARK, 0, buf, &len, &st);
        if (rc == ZNONODE) {
            rc = zoo_create(zh, KP_ZK_WATERMARK, val, n, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL,
                            0);
            if (rc == ZOK)
                return ORR_OK;
            continue;
        }
        if (rc != ZOK)
            return ORR_EUNAVAIL;
        buf[len > 0 ? len : 0] = '\0';
        if (strtoll(buf, NULL, 10) >= ms)
            return ORR_OK;
        rc = zoo_set(zh, KP_ZK_WATERMARK, val, n, st.version);
        if (rc == ZOK)
            return ORR_OK;
        if (rc != ZBADVERSION)
            return ORR_EUNAVAIL;
    }
    return ORR_ECONFLICT;
}

orr_status kp_elect_watermark_get(kp_elect *e, int64_t *ms)
{
    pthread_mutex_lock(&e->zhmu);
    orr_status s = watermark_get(e, ms);
    pthread_mutex_unlock(&e->zhmu);
    return s;
}

orr_status kp_elect_watermark_set(kp_elect *e, int64_t ms)
{
    pthread_mutex_lock(&e->zhmu);
    orr_status s = watermark_set(e, ms);
    pthread_mutex_unlock(&e->zhmu);
    return s;
}

/*
 * kp_elect.c - keplerd's election and executor discovery over lib/orr_zk
 * (see kp_elect.h).
 *
 * Flow of the kp_elect thread, once per wake-up (a listener fired, or 1 s):
 *   1. no client, or the session expired: open a new session (the election
 *      node of the old session is gone with it);
 *   2. not connected: nothing (leadership was already dropped by the
 *      election's session listener);
 *   3. campaign: one orr_zk_elect_step (join, lead or watch the
 *      predecessor);
 *   4. executors: when flagged (or every few seconds) list children of
 *      /orrery/executors with a watch, read each one's data with a watch, and
 *      publish a new snapshot.
 */
#include "kp_elect.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_arena.h"
#include "orr_buf.h"
#include "orr_log.h"
#include "orr_sdnotify.h"
#include "orr_zk.h"
#include "orr_zk_elect.h"

/* How long a ZooKeeper call waits for a connection before it fails. */
#define KP_ZK_WAIT_MS 1000

struct kp_elect {
    atomic_int notified_ready; /* READY=1 sent to systemd */
    char *id;
    orr_zk *zk;
    orr_zk_elect *el;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    /* flags set by the listener (under mu) */
    int expired, dirty_election, dirty_exec;
    int64_t last_exec_list_ms;
    /* executor snapshot (under mu) */
    kp_exec *ex;
    size_t n_ex;
    uint64_t ex_version, ex_counter;
};

static void kp_elect_listener(void *ctx, orr_zk_event ev, const char *path)
{
    kp_elect *e = ctx;
    pthread_mutex_lock(&e->mu);
    if (ev == ORR_ZK_EXPIRED) {
        e->expired = 1;
        e->ex_version = 0;
    }
    if (!path)
        e->dirty_election = e->dirty_exec = 1;
    else if (strncmp(path, KP_ZK_EXECUTORS, strlen(KP_ZK_EXECUTORS)) == 0)
        e->dirty_exec = 1;
    else
        e->dirty_election = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void kp_elect_changed(void *ctx, orr_zk_elect_change c, const char *node, uint64_t epoch,
                             const char *why)
{
    kp_elect *e = ctx;
    if (c == ORR_ZK_ELECT_JOINED) {
        ORR_INFO("joined kepler election", "id=%s node=%s", orr_log_q(e->id), node);
        /* Ready for systemd once in the election (leading or standing by);
         * a rejoin after an expired session says nothing new. */
        if (!atomic_exchange(&e->notified_ready, 1))
            orr_sdnotify_ready("keplerd in the election");
    } else if (c == ORR_ZK_ELECT_GAINED)
        ORR_INFO("kepler leadership gained", "id=%s node=%s epoch=%llu", orr_log_q(e->id), node,
                 (unsigned long long)epoch);
    else
        ORR_WARN("kepler leadership lost", "id=%s epoch=%llu reason=%s", orr_log_q(e->id),
                 (unsigned long long)epoch, why);
}

static void list_executors(kp_elect *e)
{
    orr_err err;
    if (orr_zk_mkdirs(e->zk, KP_ZK_EXECUTORS, &err) != ORR_OK)
        ORR_WARN("zookeeper create failed", "path=%s error=%s", KP_ZK_EXECUTORS,
                 orr_log_q(err.msg));
    orr_arena *a = orr_arena_create(4096);
    char **kids;
    size_t nk;
    if (orr_zk_list(e->zk, KP_ZK_EXECUTORS, 1, a, &kids, &nk, &err) != ORR_OK) {
        ORR_WARN("executor listing failed", "error=%s", orr_log_q(err.msg));
        orr_arena_destroy(a);
        return;
    }
    kp_exec *ex = orr_xcalloc(nk ? nk : 1, sizeof *ex);
    size_t n = 0;
    orr_buf buf = ORR_BUF_INIT;
    for (size_t i = 0; i < nk; i++) {
        const char *path = orr_zk_path_join(a, KP_ZK_EXECUTORS, kids[i]);
        orr_buf_reset(&buf);
        if (orr_zk_read(e->zk, path, 1, &buf, NULL, &err) != ORR_OK)
            continue; /* gone meanwhile; the child watch fires again */
        if (kp_exec_parse(&ex[n], kids[i], buf.data ? buf.data : "", buf.len, &err) != ORR_OK) {
            ORR_WARN("executor node ignored", "node=%s field=%s error=%s", orr_log_q(path),
                     orr_log_q(err.field), orr_log_q(err.msg));
            continue;
        }
        n++;
    }
    orr_buf_free(&buf);
    orr_arena_destroy(a);
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n_ex; i++)
        kp_exec_clear(&e->ex[i]);
    free(e->ex);
    e->ex = ex;
    e->n_ex = n;
    e->ex_version = ++e->ex_counter;
    pthread_mutex_unlock(&e->mu);
    e->last_exec_list_ms = orr_zk_now_ms();
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
        orr_zk_state st = orr_zk_state_now(e->zk);
        if (expired || st == ORR_ZK_NONE || st == ORR_ZK_GONE) {
            orr_err err;
            if (orr_zk_renew(e->zk, &err) != ORR_OK) {
                ORR_WARN("zookeeper client failed to start", "error=%s", orr_log_q(err.msg));
                struct timespec d = {1, 0};
                nanosleep(&d, NULL);
            }
            continue;
        }
        if (!orr_zk_connected(e->zk))
            continue;
        int64_t t = orr_zk_now_ms();
        if (de || t - last_campaign >= 1000) {
            orr_err err;
            if (orr_zk_elect_step(e->el, &err) != ORR_OK)
                ORR_WARN("election step failed", "id=%s error=%s", orr_log_q(e->id),
                         orr_log_q(err.msg));
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
    kp_elect *e = orr_xcalloc(1, sizeof *e);
    e->id = orr_xstrdup(id);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    orr_zk_opts o = {.session_ms = session_ms,
                     .wait_ms = KP_ZK_WAIT_MS,
                     .manual_renew = 1,
                     .on_event = kp_elect_listener,
                     .ctx = e};
    orr_err zerr;
    orr_status rc = orr_zk_start(hosts, &o, &e->zk, &zerr);
    if (rc == ORR_EUNAVAIL) /* the thread tries again */
        ORR_WARN("zookeeper client failed to start", "error=%s", orr_log_q(zerr.msg));
    else if (rc != ORR_OK) {
        orr_err_set(err, rc, "kepler.zk", "%s", zerr.msg);
        goto fail;
    }
    if ((rc = orr_zk_elect_new(e->zk, KP_ZK_ELECTION, id, kp_elect_changed, e, &e->el, err)) !=
        ORR_OK)
        goto fail;
    if (pthread_create(&e->th, NULL, elect_main, e) != 0) {
        rc = orr_err_set(err, ORR_EIO, "kepler.zk", "cannot start the election thread");
        goto fail;
    }
    *out = e;
    return ORR_OK;
fail:
    orr_zk_elect_free(e->el);
    orr_zk_close(e->zk);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e->id);
    free(e);
    return rc;
}

void kp_elect_stop(kp_elect *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->th, NULL);
    orr_zk_elect_leave(e->el);
    orr_zk_elect_free(e->el);
    orr_zk_close(e->zk);
    for (size_t i = 0; i < e->n_ex; i++)
        kp_exec_clear(&e->ex[i]);
    free(e->ex);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->id);
    free(e);
}

int kp_elect_connected(kp_elect *e)
{
    return orr_zk_connected(e->zk);
}

uint64_t kp_elect_leader_epoch(kp_elect *e)
{
    return orr_zk_elect_epoch(e->el);
}

uint64_t kp_elect_executors(kp_elect *e, kp_exec **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&e->mu);
    uint64_t v = e->ex_version;
    if (v) {
        *out = orr_xcalloc(e->n_ex ? e->n_ex : 1, sizeof **out);
        for (size_t i = 0; i < e->n_ex; i++) {
            kp_exec *d = &(*out)[i];
            const kp_exec *s = &e->ex[i];
            *d = *s;
            d->labels = NULL;
            d->n_labels = 0;
            if (s->n_labels) {
                d->labels = orr_xcalloc(s->n_labels, sizeof *d->labels);
                for (size_t j = 0; j < s->n_labels; j++) {
                    d->labels[j].key = orr_xstrdup(s->labels[j].key);
                    d->labels[j].value = orr_xstrdup(s->labels[j].value);
                }
                d->n_labels = s->n_labels;
            }
        }
        *n = e->n_ex;
    }
    pthread_mutex_unlock(&e->mu);
    return v;
}

/* The stored watermark: ORR_OK (*ms, *version), ORR_ENOTFOUND, ORR_EUNAVAIL. */
static orr_status watermark_read(kp_elect *e, int64_t *ms, int *version)
{
    orr_buf b = ORR_BUF_INIT;
    orr_zk_stat st;
    orr_err err;
    orr_status rc = orr_zk_read(e->zk, KP_ZK_WATERMARK, 0, &b, &st, &err);
    if (rc == ORR_OK) {
        *ms = b.len ? strtoll(b.data, NULL, 10) : 0;
        *version = st.version;
        if (!b.len)
            rc = ORR_ENOTFOUND;
    } else if (rc != ORR_ENOTFOUND) {
        rc = ORR_EUNAVAIL;
    }
    orr_buf_free(&b);
    return rc;
}

orr_status kp_elect_watermark_get(kp_elect *e, int64_t *ms)
{
    if (!orr_zk_connected(e->zk))
        return ORR_EUNAVAIL;
    int version;
    return watermark_read(e, ms, &version);
}

orr_status kp_elect_watermark_set(kp_elect *e, int64_t ms)
{
    if (!orr_zk_connected(e->zk))
        return ORR_EUNAVAIL;
    char val[32];
    int n = snprintf(val, sizeof val, "%lld", (long long)ms);
    for (int tries = 0; tries < 3; tries++) {
        int64_t stored = 0;
        int version = -1;
        orr_err err;
        orr_status rc = watermark_read(e, &stored, &version);
        if (rc == ORR_ENOTFOUND && version < 0) { /* no node */
            if (orr_zk_create(e->zk, KP_ZK_WATERMARK, val, (size_t)n, 0, NULL, NULL, &err) ==
                ORR_OK)
                return ORR_OK;
            continue;
        }
        if (rc == ORR_EUNAVAIL)
            return ORR_EUNAVAIL;
        if (rc == ORR_OK && stored >= ms)
            return ORR_OK;
        rc = orr_zk_set(e->zk, KP_ZK_WATERMARK, val, (size_t)n, version, &err);
        if (rc == ORR_OK)
            return ORR_OK;
        if (rc != ORR_ECONFLICT)
            return ORR_EUNAVAIL;
    }
    return ORR_ECONFLICT;
}

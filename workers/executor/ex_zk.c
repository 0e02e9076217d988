/*
 * ex_zk.c - ephemeral registration in ZooKeeper (contract in ex_zk.h).
 */
#include "ex_zk.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "ex_cgroup.h"
#include "orr_log.h"

struct ex_zk {
    zhandle_t *zh;
    char hosts[512];
    char path[512];
    int session_ms;
    atomic_int connected;
    atomic_int expired;
    int registered;
    pthread_mutex_t mu;
    char *card;     /* latest card */
    int card_dirty; /* card changed since it was written */
    /* fencing; mu also guards zh against ex_zk_reconnect while probing */
    atomic_int timeout_ms;      /* negotiated session timeout */
    atomic_int gen;             /* session generation: bumped by open_session */
    atomic_llong last_ack_ms;   /* send time of the last answered probe; 0 none */
    atomic_llong last_probe_ms; /* send time of the last probe */
};

typedef struct zk__probe {
    ex_zk *z;
    int gen;
    int64_t sent_ms;
} zk__probe;

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    ex_zk *z = ctx;
    if (type != ZOO_SESSION_EVENT)
        return;
    if (state == ZOO_CONNECTED_STATE) {
        int t = zoo_recv_timeout(zh);
        if (t > 0)
            atomic_store(&z->timeout_ms, t);
        atomic_store(&z->connected, 1);
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        atomic_store(&z->connected, 0);
        atomic_store(&z->expired, 1);
    } else {
        atomic_store(&z->connected, 0);
    }
}

static orr_status open_session(ex_zk *z, orr_err *err)
{
    atomic_store(&z->connected, 0);
    atomic_store(&z->expired, 0);
    atomic_fetch_add(&z->gen, 1);
    atomic_store(&z->last_ack_ms, 0);
    z->registered = 0;
    zhandle_t *zh = zookeeper_init(z->hosts, watcher, z->session_ms, NULL, z, 0);
    pthread_mutex_lock(&z->mu);
    z->zh = zh;
    pthread_mutex_unlock(&z->mu);
    if (!zh)
        return orr_err_set(err, ORR_EINVAL, "executor.zk", "cannot create a ZooKeeper client: %s",
                           strerror(errno));
    return ORR_OK;
}

orr_status ex_zk_start(const char *hosts, const char *path, int session_ms, ex_zk **out,
                       orr_err *err)
{
    if (!hosts || !*hosts)
        return orr_err_set(err, ORR_EINVAL, "executor.zk", "must be set (host:port)");
    ex_zk *z = calloc(1, sizeof *z);
    if (!z)
        return orr_err_set(err, ORR_ENOMEM, NULL, "out of memory");
    snprintf(z->hosts, sizeof z->hosts, "%s", hosts);
    snprintf(z->path, sizeof z->path, "%s", path);
    z->session_ms = session_ms;
    atomic_store(&z->timeout_ms, session_ms);
    pthread_mutex_init(&z->mu, NULL);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    orr_status s = open_session(z, err);
    if (s != ORR_OK) {
        pthread_mutex_destroy(&z->mu);
        free(z);
        return s;
    }
    *out = z;
    return ORR_OK;
}

void ex_zk_set_card(ex_zk *z, const char *json)
{
    char *copy = strdup(json);
    if (!copy)
        abort();
    pthread_mutex_lock(&z->mu);
    free(z->card);
    z->card = copy;
    z->card_dirty = 1;
    pthread_mutex_unlock(&z->mu);
}

/* Create every parent of path as a persistent node. */
static int create_parents(ex_zk *z)
{
    char p[512];
    snprintf(p, sizeof p, "%s", z->path);
    for (char *s = p + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = 0;
        int rc = zoo_create(z->zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        *s = '/';
        if (rc != ZOK && rc != ZNODEEXISTS)
            return rc;
    }
    return ZOK;
}

static int register_node(ex_zk *z, const char *card)
{
    int rc = create_parents(z);
    if (rc != ZOK)
        return rc;
    for (int i = 0; i < 3; i++) {
        rc = zoo_create(z->zh, z->path, card, (int)strlen(card), &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL, NULL, 0);
        if (rc != ZNODEEXISTS)
            return rc;
        struct Stat st;
        if (zoo_exists(z->zh, z->path, 0, &st) != ZOK)
            continue;
        if (st.ephemeralOwner == zoo_client_id(z->zh)->client_id)
            return zoo_set(z->zh, z->path, card, (int)strlen(card), -1);
        /* A node of an older session (our previous life): replace it. */
        ORR_WARN("replacing a stale executor node", "path=%s owner=%llx", z->path,
                 (unsigned long long)st.ephemeralOwner);
        zoo_delete(z->zh, z->path, -1);
    }
    return rc;
}

ex_zk_state ex_zk_tick(ex_zk *z)
{
    if (atomic_load(&z->expired))
        return EX_ZK_EXPIRED;
    if (!z->zh) {
        orr_err err;
        if (open_session(z, &err) != ORR_OK)
            return EX_ZK_DOWN;
    }
    if (!atomic_load(&z->connected))
        return z->registered ? EX_ZK_REGISTERED : EX_ZK_DOWN;
    pthread_mutex_lock(&z->mu);
    char *card = z->card ? strdup(z->card) : strdup("{}");
    int dirty = z->card_dirty;
    z->card_dirty = 0;
    pthread_mutex_unlock(&z->mu);
    if (!card)
        abort();
    int rc = ZOK;
    if (!z->registered) {
        rc = register_node(z, card);
        if (rc == ZOK) {
            z->registered = 1;
            ORR_INFO("registered in zookeeper", "path=%s", z->path);
        }
    } else if (dirty) {
        rc = zoo_set(z->zh, z->path, card, (int)strlen(card), -1);
        if (rc == ZNONODE) /* someone removed it: put it back */
            z->registered = 0;
    }
    if (rc != ZOK) {
        ORR_WARN("zookeeper write failed", "path=%s err=%s", z->path, orr_log_q(zerror(rc)));
        pthread_mutex_lock(&z->mu);
        z->card_dirty = 1;
        pthread_mutex_unlock(&z->mu);
    }
    free(card);
    return z->registered ? EX_ZK_REGISTERED : EX_ZK_DOWN;
}

static void probe_done(int rc, const struct Stat *st, const void *data)
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

void ex_zk_probe(ex_zk *z)
{
    if (!z || !atomic_load(&z->connected))
        return;
    int t = atomic_load(&z->timeout_ms);
    int every = t / 8 < 100 ? 100 : t / 8 > 1000 ? 1000 : t / 8;
    int64_t now = ex_now_ms();
    if (now - atomic_load(&z->last_probe_ms) < every)
        return;
    zk__probe *p = malloc(sizeof *p);
    if (!p)
        return;
    p->z = z;
    p->gen = atomic_load(&z->gen);
    p->sent_ms = now;
    pthread_mutex_lock(&z->mu);
    int rc = z->zh ? zoo_aexists(z->zh, "/", 0, probe_done, p) : ZINVALIDSTATE;
    pthread_mutex_unlock(&z->mu);
    if (rc != ZOK)
        free(p);
    else
        atomic_store(&z->last_probe_ms, now);
}

int64_t ex_zk_safe_until(ex_zk *z, int *timeout_ms)
{
    int t = atomic_load(&z->timeout_ms);
    if (timeout_ms)
        *timeout_ms = t;
    int64_t ack = atomic_load(&z->last_ack_ms);
    if (ack == 0)
        return 0;
    int margin = t / 4 < 1000 ? 1000 : t / 4;
    if (margin > t / 2)
        margin = t / 2;
    return ack + t - margin;
}

void ex_zk_reconnect(ex_zk *z)
{
    pthread_mutex_lock(&z->mu);
    if (z->zh)
        zookeeper_close(z->zh);
    z->zh = NULL;
    pthread_mutex_unlock(&z->mu);
    orr_err err;
    if (open_session(z, &err) != ORR_OK)
        ORR_ERROR("zookeeper reconnect failed", "err=%s", orr_log_q(err.msg));
    pthread_mutex_lock(&z->mu);
    z->card_dirty = 1;
    pthread_mutex_unlock(&z->mu);
}

void ex_zk_stop(ex_zk *z)
{
    if (!z)
        return;
    if (z->zh)
        zookeeper_close(z->zh);
    pthread_mutex_destroy(&z->mu);
    free(z->card);
    free(z);
}

/*
 * ex_zk.c - the executor's ephemeral registration over lib/orr_zk (contract
 * in ex_zk.h).
 */
#include "ex_zk.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_log.h"
#include "orr_zk.h"

/* How long a ZooKeeper call of the tick waits for a connection. */
#define EX_ZK_WAIT_MS 1000

struct ex_zk {
    orr_zk *zk;
    char path[512];
    atomic_int expired; /* set by the listener; cleared by ex_zk_reconnect */
    int registered;
    pthread_mutex_t mu;
    char *card;     /* latest card */
    int card_dirty; /* card changed since it was written */
};

static void ex_zk_listener(void *ctx, orr_zk_event ev, const char *path)
{
    (void)path;
    ex_zk *z = ctx;
    if (ev == ORR_ZK_EXPIRED)
        atomic_store(&z->expired, 1);
}

orr_status ex_zk_start(const char *hosts, const char *path, int session_ms, ex_zk **out,
                       orr_err *err)
{
    if (!hosts || !*hosts)
        return orr_err_set(err, ORR_EINVAL, "executor.zk", "must be set (host:port)");
    ex_zk *z = orr_xcalloc(1, sizeof *z);
    snprintf(z->path, sizeof z->path, "%s", path);
    pthread_mutex_init(&z->mu, NULL);
    orr_zk_opts o = {.session_ms = session_ms,
                     .wait_ms = EX_ZK_WAIT_MS,
                     .manual_renew = 1,
                     .on_event = ex_zk_listener,
                     .ctx = z};
    orr_err zerr;
    if (orr_zk_start(hosts, &o, &z->zk, &zerr) != ORR_OK) {
        orr_zk_close(z->zk);
        pthread_mutex_destroy(&z->mu);
        free(z);
        return orr_err_set(err, ORR_EINVAL, "executor.zk", "cannot create a ZooKeeper client: %s",
                           zerr.msg);
    }
    *out = z;
    return ORR_OK;
}

void ex_zk_set_card(ex_zk *z, const char *json)
{
    char *copy = orr_xstrdup(json);
    pthread_mutex_lock(&z->mu);
    free(z->card);
    z->card = copy;
    z->card_dirty = 1;
    pthread_mutex_unlock(&z->mu);
}

ex_zk_state ex_zk_tick(ex_zk *z)
{
    if (atomic_load(&z->expired))
        return EX_ZK_EXPIRED;
    if (orr_zk_state_now(z->zk) == ORR_ZK_NONE) {
        orr_err err;
        if (orr_zk_renew(z->zk, &err) != ORR_OK)
            return EX_ZK_DOWN;
    }
    if (!orr_zk_connected(z->zk))
        return z->registered ? EX_ZK_REGISTERED : EX_ZK_DOWN;
    pthread_mutex_lock(&z->mu);
    char *card = orr_xstrdup(z->card ? z->card : "{}");
    int dirty = z->card_dirty;
    z->card_dirty = 0;
    pthread_mutex_unlock(&z->mu);
    orr_status rc = ORR_OK;
    orr_err err;
    if (!z->registered) {
        rc = orr_zk_claim(z->zk, z->path, card, strlen(card), &err);
        if (rc == ORR_OK) {
            z->registered = 1;
            ORR_INFO("registered in zookeeper", "path=%s", z->path);
        }
    } else if (dirty) {
        rc = orr_zk_set(z->zk, z->path, card, strlen(card), -1, &err);
        if (rc == ORR_ENOTFOUND) /* someone removed it: put it back */
            z->registered = 0;
    }
    if (rc != ORR_OK) {
        ORR_WARN("zookeeper write failed", "path=%s err=%s", z->path, orr_log_q(err.msg));
        pthread_mutex_lock(&z->mu);
        z->card_dirty = 1;
        pthread_mutex_unlock(&z->mu);
    }
    free(card);
    return z->registered ? EX_ZK_REGISTERED : EX_ZK_DOWN;
}

void ex_zk_probe(ex_zk *z)
{
    if (z)
        orr_zk_probe(z->zk);
}

int64_t ex_zk_safe_until(ex_zk *z, int *timeout_ms)
{
    return orr_zk_safe_until(z->zk, timeout_ms);
}

void ex_zk_reconnect(ex_zk *z)
{
    z->registered = 0;
    orr_err err;
    if (orr_zk_renew(z->zk, &err) != ORR_OK)
        ORR_ERROR("zookeeper reconnect failed", "err=%s", orr_log_q(err.msg));
    atomic_store(&z->expired, 0); /* after: the old session says nothing more */
    pthread_mutex_lock(&z->mu);
    z->card_dirty = 1;
    pthread_mutex_unlock(&z->mu);
}

void ex_zk_stop(ex_zk *z)
{
    if (!z)
        return;
    orr_zk_close(z->zk);
    pthread_mutex_destroy(&z->mu);
    free(z->card);
    free(z);
}

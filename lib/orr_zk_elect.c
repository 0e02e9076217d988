/*
 * orr_zk_elect.c - leader election on ZooKeeper (contract and recipe in
 * orr_zk_elect.h).
 *
 * A step, on the owner's thread:
 *   1. our node of an earlier session, or one that vanished, is forgotten;
 *   2. no node: create DIR (and parents) and DIR/n_ (ephemeral sequential);
 *   3. list DIR: lowest -> lead (a new epoch unless already leading); not
 *      lowest -> not leader, and a watch on the predecessor; if that one
 *      went meanwhile, list again (at most 5 rounds a step).
 * The session listener only drops leadership (an atomic store); the epoch is
 * read lock-free and is 0 whenever the session is not connected or is not
 * the one that created our node (a renewed session).
 */
#include "orr_zk_elect.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_arena.h"

#define ELECT_PREFIX  "n_"
#define ELECT_NODEMAX 1100

struct orr_zk_elect {
    orr_zk *zk;
    char *dir, *id;
    orr_zk_elect_fn fn;
    void *ctx;
    pthread_mutex_t mu; /* mynode, for orr_zk_elect_node */
    char mynode[ELECT_NODEMAX];
    atomic_llong node_session; /* the session that created mynode */
    atomic_uint_fast64_t epoch_now;
    uint64_t epoch_counter;
};

static void elect__drop(orr_zk_elect *el, const char *why)
{
    uint64_t was = atomic_exchange(&el->epoch_now, 0);
    if (was && el->fn)
        el->fn(el->ctx, ORR_ZK_ELECT_LOST, NULL, was, why);
}

static void elect__listener(void *ctx, orr_zk_event ev, const char *path)
{
    (void)path;
    orr_zk_elect *el = ctx;
    /* stop acting first: a disconnected leader may already be replaced */
    if (ev == ORR_ZK_EXPIRED)
        elect__drop(el, "session expired");
    else if (ev == ORR_ZK_DISCONNECTED)
        elect__drop(el, "session disconnected");
}

static void elect__set_node(orr_zk_elect *el, const char *node, int64_t session)
{
    pthread_mutex_lock(&el->mu);
    snprintf(el->mynode, sizeof el->mynode, "%s", node);
    atomic_store(&el->node_session, session);
    pthread_mutex_unlock(&el->mu);
}

orr_status orr_zk_elect_new(orr_zk *zk, const char *dir, const char *id, orr_zk_elect_fn fn,
                            void *ctx, orr_zk_elect **out, orr_err *err)
{
    *out = NULL;
    orr_status rc = orr_zk_path_check(dir, err);
    if (rc != ORR_OK)
        return rc;
    if (strlen(dir) + sizeof ELECT_PREFIX + 12 > ELECT_NODEMAX)
        return orr_err_set(err, ORR_EINVAL, "zk", "election path %s is too long", dir);
    if (!id || !*id || strlen(id) > 200)
        return orr_err_set(err, ORR_EINVAL, "id", "must be 1-200 bytes");
    orr_zk_elect *el = orr_xcalloc(1, sizeof *el);
    el->zk = zk;
    el->dir = orr_xstrdup(dir);
    el->id = orr_xstrdup(id);
    el->fn = fn;
    el->ctx = ctx;
    pthread_mutex_init(&el->mu, NULL);
    if ((rc = orr_zk_listen(zk, elect__listener, el)) != ORR_OK) {
        orr_err_set(err, rc, "zk", "no room for another ZooKeeper listener");
        orr_zk_elect_free(el);
        return rc;
    }
    *out = el;
    return ORR_OK;
}

static int elect__cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int orr_zk_elect_rank(char **names, size_t n, const char *mine, const char **pred)
{
    *pred = NULL;
    if (n > 1)
        qsort(names, n, sizeof(char *), elect__cmp);
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], mine) == 0) {
            *pred = i > 0 ? names[i - 1] : NULL;
            return (int)i;
        }
    return -1;
}

/* Make sure we have a node of the current session. */
static orr_status elect__join(orr_zk_elect *el, orr_arena *a, orr_err *err)
{
    int64_t session = orr_zk_session_id(el->zk);
    if (el->mynode[0] && atomic_load(&el->node_session) != session) {
        elect__set_node(el, "", 0); /* went with the old session */
        elect__drop(el, "session renewed");
    }
    if (el->mynode[0]) {
        orr_status rc = orr_zk_exists(el->zk, el->mynode, 0, NULL, err);
        if (rc == ORR_ENOTFOUND)
            elect__set_node(el, "", 0);
        else if (rc != ORR_OK)
            return rc;
    }
    if (el->mynode[0])
        return ORR_OK;
    orr_status rc = orr_zk_mkdirs(el->zk, el->dir, err);
    if (rc != ORR_OK)
        return rc;
    char *created;
    rc = orr_zk_create(el->zk, orr_zk_path_join(a, el->dir, ELECT_PREFIX), el->id, strlen(el->id),
                       ORR_ZK_EPHEMERAL | ORR_ZK_SEQUENTIAL, a, &created, err);
    if (rc != ORR_OK)
        return rc;
    elect__set_node(el, created, session);
    if (el->fn)
        el->fn(el->ctx, ORR_ZK_ELECT_JOINED, created, 0, NULL);
    return ORR_OK;
}

orr_status orr_zk_elect_step(orr_zk_elect *el, orr_err *err)
{
    if (!orr_zk_connected(el->zk))
        return ORR_OK;
    orr_arena *a = orr_arena_create(4096);
    orr_status rc = elect__join(el, a, err);
    if (rc != ORR_OK)
        goto done;
    for (int round = 0; round < 5; round++) {
        char **kids;
        size_t n;
        if ((rc = orr_zk_list(el->zk, el->dir, 0, a, &kids, &n, err)) != ORR_OK)
            goto done;
        const char *pred;
        int rank = orr_zk_elect_rank(kids, n, orr_zk_path_base(el->mynode), &pred);
        if (rank < 0) {
            elect__set_node(el, "", 0); /* our node vanished: join again next time */
            elect__drop(el, "election node missing");
            goto done;
        }
        if (rank == 0) {
            if (orr_zk_connected(el->zk) && atomic_load(&el->epoch_now) == 0) {
                uint64_t ep = ++el->epoch_counter;
                atomic_store(&el->epoch_now, ep);
                if (el->fn)
                    el->fn(el->ctx, ORR_ZK_ELECT_GAINED, el->mynode, ep, NULL);
            }
            goto done;
        }
        elect__drop(el, "another node leads");
        rc = orr_zk_exists(el->zk, orr_zk_path_join(a, el->dir, pred), 1, NULL, err);
        if (rc != ORR_ENOTFOUND)
            goto done; /* OK: woken when the predecessor goes */
        rc = ORR_OK;   /* the predecessor left meanwhile: look again */
    }
done:
    orr_arena_destroy(a);
    return rc;
}

uint64_t orr_zk_elect_epoch(orr_zk_elect *el)
{
    if (!orr_zk_connected(el->zk))
        return 0;
    uint64_t ep = atomic_load(&el->epoch_now);
    /* leadership belongs to the session of our node, not to a renewed one */
    if (ep && atomic_load(&el->node_session) != orr_zk_session_id(el->zk))
        return 0;
    return ep;
}

const char *orr_zk_elect_node(orr_zk_elect *el, char *buf, size_t n)
{
    pthread_mutex_lock(&el->mu);
    snprintf(buf, n, "%s", el->mynode);
    pthread_mutex_unlock(&el->mu);
    return buf;
}

void orr_zk_elect_leave(orr_zk_elect *el)
{
    atomic_store(&el->epoch_now, 0);
    if (el->mynode[0] && atomic_load(&el->node_session) == orr_zk_session_id(el->zk) &&
        orr_zk_connected(el->zk)) {
        orr_err err;
        orr_zk_delete(el->zk, el->mynode, -1, &err);
    }
    elect__set_node(el, "", 0);
}

void orr_zk_elect_free(orr_zk_elect *el)
{
    if (!el)
        return;
    orr_zk_unlisten(el->zk, elect__listener, el);
    pthread_mutex_destroy(&el->mu);
    free(el->dir);
    free(el->id);
    free(el);
}

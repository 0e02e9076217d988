/* gx_paused.c - the paused-workflow map kept from halleyd's events (see
 * gx_paused.h). One version counter: every event of interest and every
 * change of the stream bumps it; a map is kept with the version read before
 * it was asked for and served only while the version is unchanged. Each bump
 * is followed by an invalidation of the response cache (when one is set):
 * an answer built from the old map may have been cached meanwhile. */
#include "gx_paused.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "orr_alloc.h"
#include "orr_watch.h"

struct gx_paused {
    orr_watch *watch;
    atomic_uint_fast64_t gen;
    pthread_mutex_t mu;
    json_t *map; /* under mu; NULL = none */
    uint64_t map_gen;
    gx_server *cache; /* under mu; answers built from a map (may be NULL) */
};

/* The version first, then the response cache: a request whose answer is
 * cached after this invalidation began after it, so it reads the new
 * version and asks halleyd; one cached before is made stale here. */
static void gx_paused_bump(gx_paused *p)
{
    atomic_fetch_add(&p->gen, 1);
    pthread_mutex_lock(&p->mu);
    if (p->cache)
        gx_cache_invalidate(p->cache);
    pthread_mutex_unlock(&p->mu);
}

static int gx_paused_on_start(void *cls)
{
    gx_paused_bump(cls);
    return 0;
}

static void gx_paused_on_event(void *cls, const Orrery__Halley__V1__Event *ev)
{
    (void)ev;
    gx_paused_bump(cls);
}

static void gx_paused_on_lost(void *cls)
{
    gx_paused_bump(cls);
}

orr_status gx_paused_start(orr_rpc_client *c, gx_paused **out, orr_err *err)
{
    gx_paused *p = orr_xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    atomic_store(&p->gen, 1);
    static const char *const kinds[] = {"workflow.*", "task.*"};
    orr_watch_opts o = {.kinds = kinds, .nkinds = 2, .name = "galaxyd paused workflows"};
    orr_watch_ops ops = {.on_start = gx_paused_on_start,
                         .on_event = gx_paused_on_event,
                         .on_lost = gx_paused_on_lost,
                         .on_resync = gx_paused_on_lost};
    orr_status st = orr_watch_start(c, &o, &ops, p, &p->watch, err);
    if (st != ORR_OK) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return st;
    }
    *out = p;
    return ORR_OK;
}

void gx_paused_stop(gx_paused *p)
{
    if (!p)
        return;
    orr_watch_stop(p->watch);
    json_decref(p->map);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

json_t *gx_paused_get(gx_paused *p, uint64_t *gen)
{
    *gen = 0;
    if (!p)
        return NULL;
    /* The version first, then the stream: an event or a loss after this
     * read bumps the version, so a map asked for now is kept as stale. */
    uint64_t g = atomic_load(&p->gen);
    if (!orr_watch_synced(p->watch))
        return NULL;
    *gen = g;
    json_t *out = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->map && p->map_gen == g)
        out = json_deep_copy(p->map);
    pthread_mutex_unlock(&p->mu);
    return out;
}

void gx_paused_keep(gx_paused *p, uint64_t gen, const json_t *map)
{
    if (!p || !gen || gen != atomic_load(&p->gen))
        return;
    json_t *copy = json_deep_copy(map);
    pthread_mutex_lock(&p->mu);
    if (gen == atomic_load(&p->gen)) {
        json_decref(p->map);
        p->map = copy;
        p->map_gen = gen;
        copy = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    json_decref(copy);
}

void gx_paused_set_cache(gx_paused *p, gx_server *s)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->cache = s;
    pthread_mutex_unlock(&p->mu);
}

void gx_paused_forget(gx_paused *p)
{
    if (p)
        gx_paused_bump(p);
}

void gx_paused_mark(json_t *obj, const json_t *map, int64_t task_id)
{
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)task_id);
    json_t *p = map ? json_object_get(map, key) : NULL;
    json_object_set_new(obj, "paused", p ? json_deep_copy(p) : json_null());
}

void gx_paused_mark_all(json_t *items, const json_t *map, const char *id_key)
{
    size_t i;
    json_t *x;
    json_array_foreach(items, i, x)
    {
        json_t *id = json_object_get(x, id_key);
        if (json_is_integer(id))
            gx_paused_mark(x, map, json_integer_value(id));
    }
}

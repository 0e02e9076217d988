/*
 * kp_store.c - instance records in slabs, two hash maps (see kp_store.h).
 */
#include "kp_store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

#define SLAB 4096

struct kp_store {
    kp_map by_id;  /* id -> kp_inst* (markers under their negative id) */
    kp_map by_key; /* key2(task, sched) -> kp_inst* */
    kp_inst **slabs;
    size_t n_slabs;
    kp_inst *free_list;
    int64_t next_marker;
};

kp_store *kp_store_create(void)
{
    return orr_xcalloc(1, sizeof(kp_store));
}

void kp_store_clear(kp_store *s)
{
    kp_map_free(&s->by_id);
    kp_map_free(&s->by_key);
    s->free_list = NULL;
    for (size_t i = 0; i < s->n_slabs; i++) {
        kp_inst *slab = s->slabs[i];
        for (size_t j = 0; j < SLAB; j++) {
            slab[j].next_free = s->free_list;
            s->free_list = &slab[j];
        }
    }
}

void kp_store_destroy(kp_store *s)
{
    if (!s)
        return;
    kp_map_free(&s->by_id);
    kp_map_free(&s->by_key);
    for (size_t i = 0; i < s->n_slabs; i++)
        free(s->slabs[i]);
    free(s->slabs);
    free(s);
}

kp_inst *kp_store_get(const kp_store *s, int64_t id)
{
    return id ? kp_map_get(&s->by_id, id) : NULL;
}

kp_inst *kp_store_by_key(const kp_store *s, int64_t task_id, int64_t sched_ms)
{
    kp_inst *r = kp_map_get(&s->by_key, kp_map_key2(task_id, sched_ms));
    /* the composite key is a hash: confirm */
    if (r && (r->task_id != task_id || r->sched_ms != sched_ms))
        return NULL;
    return r;
}

static kp_inst *store_alloc(kp_store *s)
{
    if (!s->free_list) {
        kp_inst *slab = orr_xcalloc(SLAB, sizeof *slab);
        kp_inst **ns = orr_xrealloc(s->slabs, (s->n_slabs + 1) * sizeof *ns);
        s->slabs = ns;
        s->slabs[s->n_slabs++] = slab;
        for (size_t j = SLAB; j-- > 0;) {
            slab[j].next_free = s->free_list;
            s->free_list = &slab[j];
        }
    }
    kp_inst *r = s->free_list;
    s->free_list = r->next_free;
    memset(r, 0, sizeof *r);
    return r;
}

void kp_store_remove(kp_store *s, kp_inst *r)
{
    kp_map_del(&s->by_id, r->id);
    int64_t key = kp_map_key2(r->task_id, r->sched_ms);
    if (kp_map_get(&s->by_key, key) == r)
        kp_map_del(&s->by_key, key);
    r->next_free = s->free_list;
    s->free_list = r;
}

kp_inst *kp_store_add(kp_store *s, int64_t id, int64_t task_id, int64_t sched_ms, kp_state state)
{
    if (id) {
        kp_inst *have = kp_store_get(s, id);
        if (have)
            return have;
    }
    kp_inst *old = kp_store_by_key(s, task_id, sched_ms);
    if (old && old->id < 0)
        kp_store_remove(s, old);
    else if (old && id == 0)
        return old;
    kp_inst *r = store_alloc(s);
    r->id = id ? id : --s->next_marker;
    r->task_id = task_id;
    r->sched_ms = sched_ms;
    r->state = id ? (uint8_t)state : KP_ST_ABSENT;
    r->exec = "";
    kp_map_put(&s->by_id, r->id, r);
    kp_map_put(&s->by_key, kp_map_key2(task_id, sched_ms), r);
    return r;
}

size_t kp_store_count(const kp_store *s)
{
    return s->by_id.len;
}

kp_inst *kp_store_next(const kp_store *s, size_t *pos)
{
    while (*pos < s->by_id.cap) {
        kp_map_slot *sl = &s->by_id.slots[(*pos)++];
        if (sl->key)
            return sl->val;
    }
    return NULL;
}

/* Executor ids are few and long-lived: a global list, never freed. */
static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static char **interned;
static size_t n_interned, cap_interned;

const char *kp_intern(const char *str)
{
    if (!str || !*str)
        return "";
    pthread_mutex_lock(&intern_mu);
    for (size_t i = 0; i < n_interned; i++)
        if (strcmp(interned[i], str) == 0) {
            pthread_mutex_unlock(&intern_mu);
            return interned[i];
        }
    if (n_interned == cap_interned) {
        cap_interned = cap_interned ? cap_interned * 2 : 16;
        interned = orr_xrealloc(interned, cap_interned * sizeof *interned);
    }
    char *d = orr_xstrdup(str);
    interned[n_interned++] = d;
    pthread_mutex_unlock(&intern_mu);
    return d;
}

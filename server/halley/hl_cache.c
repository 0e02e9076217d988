/*
 * hl_cache.c - chained hash table of task snapshots under one rwlock.
 *
 * Each entry is one allocation holding the struct and its strings. When the
 * table is full it is emptied (tasks are few and reads refill it), which
 * keeps the code free of an eviction list.
 */
#include "hl_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

#define HL_CACHE_BUCKETS 4096

typedef struct hl_entry {
    struct hl_entry *next;
    hl_cached_task t;
} hl_entry;

struct hl_cache {
    pthread_rwlock_t lock;
    hl_entry *buckets[HL_CACHE_BUCKETS];
    size_t entries, max_entries;
    int enabled;
    _Atomic uint64_t gen;
    _Atomic uint64_t hits, misses;
};

static size_t hl__bucket(int64_t id)
{
    uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 52) % HL_CACHE_BUCKETS;
}

hl_cache *hl_cache_create(size_t max_entries)
{
    hl_cache *c = orr_xcalloc(1, sizeof *c);
    pthread_rwlock_init(&c->lock, NULL);
    c->max_entries = max_entries;
    c->enabled = max_entries > 0;
    return c;
}

static void hl__clear_locked(hl_cache *c)
{
    for (size_t i = 0; i < HL_CACHE_BUCKETS; i++) {
        hl_entry *e = c->buckets[i];
        while (e) {
            hl_entry *n = e->next;
            free(e);
            e = n;
        }
        c->buckets[i] = NULL;
    }
    c->entries = 0;
}

void hl_cache_destroy(hl_cache *c)
{
    if (!c)
        return;
    hl__clear_locked(c);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

uint64_t hl_cache_gen(hl_cache *c)
{
    return atomic_load(&c->gen);
}

int hl_cache_get(hl_cache *c, int64_t id, orr_arena *a, hl_cached_task *out)
{
    int hit = 0;
    pthread_rwlock_rdlock(&c->lock);
    for (hl_entry *e = c->buckets[hl__bucket(id)]; e; e = e->next) {
        if (e->t.id != id)
            continue;
        *out = e->t;
        out->name = orr_arena_strdup(a, e->t.name);
        out->team = orr_arena_strdup(a, e->t.team);
        out->type = orr_arena_strdup(a, e->t.type);
        out->spec_json = orr_arena_strdup(a, e->t.spec_json);
        out->schedule = orr_arena_strdup(a, e->t.schedule);
        out->timezone = orr_arena_strdup(a, e->t.timezone);
        out->created_by = orr_arena_strdup(a, e->t.created_by);
        out->comment = orr_arena_strdup(a, e->t.comment);
        hit = 1;
        break;
    }
    pthread_rwlock_unlock(&c->lock);
    atomic_fetch_add(hit ? &c->hits : &c->misses, 1);
    return hit;
}

static char *hl__pack(char **p, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = *p;
    memcpy(d, s, n);
    *p += n;
    return d;
}

void hl_cache_put(hl_cache *c, const hl_cached_task *t, uint64_t gen)
{
    const char *comment = t->comment ? t->comment : "";
    const char *strs[] = {t->name,     t->team,     t->type,       t->spec_json,
                          t->schedule, t->timezone, t->created_by, comment};
    size_t need = sizeof(hl_entry);
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        need += strlen(strs[i]) + 1;
    hl_entry *e = orr_xmalloc(need);
    char *p = (char *)(e + 1);
    e->t = *t;
    e->t.name = hl__pack(&p, t->name);
    e->t.team = hl__pack(&p, t->team);
    e->t.type = hl__pack(&p, t->type);
    e->t.spec_json = hl__pack(&p, t->spec_json);
    e->t.schedule = hl__pack(&p, t->schedule);
    e->t.timezone = hl__pack(&p, t->timezone);
    e->t.created_by = hl__pack(&p, t->created_by);
    e->t.comment = hl__pack(&p, comment);

    pthread_rwlock_wrlock(&c->lock);
    if (!c->enabled || atomic_load(&c->gen) != gen) {
        pthread_rwlock_unlock(&c->lock);
        free(e);
        return;
    }
    size_t b = hl__bucket(t->id);
    for (hl_entry **pp = &c->buckets[b]; *pp; pp = &(*pp)->next) {
        if ((*pp)->t.id == t->id) {
            hl_entry *old = *pp;
            e->next = old->next;
            *pp = e;
            free(old);
            pthread_rwlock_unlock(&c->lock);
            return;
        }
    }
    if (c->entries >= c->max_entries)
        hl__clear_locked(c);
    e->next = c->buckets[b];
    c->buckets[b] = e;
    c->entries++;
    pthread_rwlock_unlock(&c->lock);
}

void hl_cache_invalidate(hl_cache *c, int64_t id)
{
    pthread_rwlock_wrlock(&c->lock);
    atomic_fetch_add(&c->gen, 1);
    for (hl_entry **pp = &c->buckets[hl__bucket(id)]; *pp; pp = &(*pp)->next) {
        if ((*pp)->t.id == id) {
            hl_entry *old = *pp;
            *pp = old->next;
            free(old);
            c->entries--;
            break;
        }
    }
    pthread_rwlock_unlock(&c->lock);
}

void hl_cache_set_enabled(hl_cache *c, int enabled)
{
    pthread_rwlock_wrlock(&c->lock);
    atomic_fetch_add(&c->gen, 1);
    hl__clear_locked(c);
    c->enabled = enabled && c->max_entries > 0;
    pthread_rwlock_unlock(&c->lock);
}

void hl_cache_get_stats(hl_cache *c, hl_cache_stats *out)
{
    pthread_rwlock_rdlock(&c->lock);
    out->entries = c->entries;
    pthread_rwlock_unlock(&c->lock);
    out->hits = atomic_load(&c->hits);
    out->misses = atomic_load(&c->misses);
}

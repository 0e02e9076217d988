/*
 * hl_cache.h - read-through cache of tasks' current versions, by task id.
 *
 * Task versions are immutable rows, but "current version" and "active" move;
 * entries are dropped on every task.* event (from this replica's own writes
 * at once, from other replicas' through LISTEN) and the whole cache is
 * cleared and disabled while the LISTEN connection is down, since events may
 * be missed then.
 *
 * A reader that missed takes hl_cache_gen() BEFORE reading PostgreSQL and
 * passes it to hl_cache_put(): the put is dropped if any invalidation
 * happened in between, so a stale row can never be cached after the event
 * that made it stale. Thread-safe (one rwlock).
 */
#ifndef HL_CACHE_H
#define HL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"

typedef struct hl_cached_task {
    int64_t id;
    const char *name, *team, *type;
    int active;
    int32_t version, current_version;
    const char *spec_json, *schedule, *timezone, *created_by;
    int64_t created_at_ms;
    const char *comment;   /* the version's comment (NULL = "") */
    int32_t restored_from; /* a rollback: the version it restores (0 = none) */
} hl_cached_task;

typedef struct hl_cache hl_cache;

/* max_entries 0 disables caching. Never NULL (OOM aborts). */
hl_cache *hl_cache_create(size_t max_entries);
void hl_cache_destroy(hl_cache *c);

uint64_t hl_cache_gen(hl_cache *c);
/* 1 and *out filled (strings copied into a) on a hit; 0 on a miss. */
int hl_cache_get(hl_cache *c, int64_t id, orr_arena *a, hl_cached_task *out);
/* Store a copy of t unless gen is stale or the cache is disabled. */
void hl_cache_put(hl_cache *c, const hl_cached_task *t, uint64_t gen);
void hl_cache_invalidate(hl_cache *c, int64_t id);
/* Drop everything; enabled = 0 keeps it empty until enabled again. */
void hl_cache_set_enabled(hl_cache *c, int enabled);

typedef struct hl_cache_stats {
    uint64_t hits, misses;
    size_t entries;
} hl_cache_stats;
void hl_cache_get_stats(hl_cache *c, hl_cache_stats *out);

#endif

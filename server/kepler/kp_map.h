/*
 * kp_map.h - an open-addressing hash map from a non-zero int64 key to a
 * pointer, used by keplerd's index and instance store.
 *
 * Linear probing; deletion shifts the following entries back, so there are
 * no tombstones and lookups stay short. The table doubles at 50% load.
 * Values are borrowed: the map never frees them. Not thread-safe.
 */
#ifndef KP_MAP_H
#define KP_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kp_map_slot {
    int64_t key; /* 0 = empty */
    void *val;
} kp_map_slot;

typedef struct kp_map {
    kp_map_slot *slots;
    size_t cap; /* power of two, or 0 before the first put */
    size_t len;
} kp_map;

#define KP_MAP_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* The value under key, or NULL. key must not be 0. */
void *kp_map_get(const kp_map *m, int64_t key);
/* Set key -> val (replacing any value). Aborts on out-of-memory. */
void kp_map_put(kp_map *m, int64_t key, void *val);
/* Remove key; returns the value it had, or NULL. */
void *kp_map_del(kp_map *m, int64_t key);
/* Free the table (not the values). */
void kp_map_free(kp_map *m);
/* A 64-bit mix of two keys (never 0), for composite keys. */
int64_t kp_map_key2(int64_t a, int64_t b);

#endif

/*
 * kp_map.c - open-addressing int64 -> pointer map (see kp_map.h).
 */
#include "kp_map.h"

#include <stdio.h>
#include <stdlib.h>

#include "orr_alloc.h"

static uint64_t map_hash(int64_t key)
{
    uint64_t x = (uint64_t)key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

int64_t kp_map_key2(int64_t a, int64_t b)
{
    uint64_t h = map_hash(a) * 31u + map_hash(b ^ 0x5bd1e995);
    h = map_hash((int64_t)h);
    return h ? (int64_t)h : 1;
}

void *kp_map_get(const kp_map *m, int64_t key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = map_hash(key) & mask;; i = (i + 1) & mask) {
        if (m->slots[i].key == key)
            return m->slots[i].val;
        if (m->slots[i].key == 0)
            return NULL;
    }
}

static void map_grow(kp_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    kp_map_slot *ns = orr_xcalloc(ncap, sizeof *ns);
    for (size_t j = 0; j < m->cap; j++) {
        if (m->slots[j].key == 0)
            continue;
        size_t i = map_hash(m->slots[j].key) & (ncap - 1);
        while (ns[i].key != 0)
            i = (i + 1) & (ncap - 1);
        ns[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

void kp_map_put(kp_map *m, int64_t key, void *val)
{
    if ((m->len + 1) * 2 > m->cap)
        map_grow(m);
    size_t mask = m->cap - 1;
    size_t i = map_hash(key) & mask;
    while (m->slots[i].key != 0 && m->slots[i].key != key)
        i = (i + 1) & mask;
    if (m->slots[i].key == 0)
        m->len++;
    m->slots[i].key = key;
    m->slots[i].val = val;
}

void *kp_map_del(kp_map *m, int64_t key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = map_hash(key) & mask;
    while (m->slots[i].key != key) {
        if (m->slots[i].key == 0)
            return NULL;
        i = (i + 1) & mask;
    }
    void *val = m->slots[i].val;
    /* backward-shift deletion: move later entries of the run into the hole */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->slots[j].key != 0; j = (j + 1) & mask) {
        size_t home = map_hash(m->slots[j].key) & mask;
        /* j may move to hole if home is not in (hole, j] cyclically */
        int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!in_range) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = 0;
    m->slots[hole].val = NULL;
    m->len--;
    return val;
}

void kp_map_free(kp_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->len = 0;
}

/*
 * orr_arena.c - region allocator (see orr_arena.h).
 *
 * Blocks form a singly linked list, newest first. A request larger than a
 * quarter of the block size gets a block of its own, so big allocations do
 * not waste the tail of the current block. Cleanups are a linked list stored
 * in the arena itself.
 */
#include "orr_arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

#define ARENA_ALIGN         alignof(max_align_t)
#define ARENA_DEFAULT_BLOCK 8192

struct arena_block {
    struct arena_block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

struct arena_cleanup {
    struct arena_cleanup *next;
    void (*fn)(void *);
    void *arg;
};

struct orr_arena {
    struct arena_block *head;
    struct arena_cleanup *cleanups;
    size_t block_size;
    size_t used;
};

static struct arena_block *arena_block_new(size_t size)
{
    struct arena_block *b = orr_xmalloc(sizeof(*b) + size);
    b->next = NULL;
    b->size = size;
    b->used = 0;
    return b;
}

orr_arena *orr_arena_create(size_t block_size)
{
    orr_arena *a = orr_xmalloc(sizeof(*a));
    a->block_size = block_size ? block_size : ARENA_DEFAULT_BLOCK;
    a->head = arena_block_new(a->block_size);
    a->cleanups = NULL;
    a->used = 0;
    return a;
}

static void arena_run_cleanups(orr_arena *a)
{
    /* Cleanup records live in the arena's blocks, so read next before calling. */
    struct arena_cleanup *c = a->cleanups;
    a->cleanups = NULL;
    while (c) {
        struct arena_cleanup *next = c->next;
        c->fn(c->arg);
        c = next;
    }
}

void orr_arena_destroy(orr_arena *a)
{
    if (!a)
        return;
    arena_run_cleanups(a);
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

void orr_arena_reset(orr_arena *a)
{
    arena_run_cleanups(a);
    /* Keep the oldest block (the one of block_size), free the rest. */
    struct arena_block *b = a->head, *keep = NULL;
    while (b) {
        struct arena_block *next = b->next;
        if (!next && b->size == a->block_size) {
            keep = b;
        } else {
            free(b);
        }
        b = next;
    }
    if (!keep)
        keep = arena_block_new(a->block_size);
    keep->next = NULL;
    keep->used = 0;
    a->head = keep;
    a->used = 0;
}

void *orr_arena_alloc(orr_arena *a, size_t n)
{
    size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need < n)
        orr_oom(n);
    if (need == 0)
        need = ARENA_ALIGN;
    struct arena_block *b = a->head;
    if (b->size - b->used < need) {
        if (need > a->block_size / 4) {
            /* Dedicated block, linked behind the current one so the current
             * block's free tail stays usable. */
            struct arena_block *big = arena_block_new(need);
            big->used = need;
            big->next = b->next;
            b->next = big;
            a->used += need;
            return big->data;
        }
        b = arena_block_new(a->block_size);
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used += need;
    return p;
}

void *orr_arena_calloc(orr_arena *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        orr_oom(SIZE_MAX);
    void *p = orr_arena_alloc(a, count * size);
    memset(p, 0, count * size);
    return p;
}

char *orr_arena_strndup(orr_arena *a, const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *p = orr_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *orr_arena_strdup(orr_arena *a, const char *s)
{
    return s ? orr_arena_strndup(a, s, strlen(s)) : NULL;
}

void *orr_arena_memdup(orr_arena *a, const void *p, size_t n)
{
    void *q = orr_arena_alloc(a, n);
    if (n)
        memcpy(q, p, n);
    return q;
}

char *orr_arena_vsprintf(orr_arena *a, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return orr_arena_strdup(a, "");
    char *p = orr_arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *orr_arena_sprintf(orr_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = orr_arena_vsprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

void orr_arena_on_cleanup(orr_arena *a, void (*fn)(void *), void *arg)
{
    struct arena_cleanup *c = orr_arena_alloc(a, sizeof(*c));
    c->fn = fn;
    c->arg = arg;
    c->next = a->cleanups;
    a->cleanups = c;
}

size_t orr_arena_used(const orr_arena *a)
{
    return a->used;
}

/*
 * orr_alloc.c - allocation that never returns NULL: the orr_x* functions log
 * one fatal line and abort on failure (the policy is in orr_alloc.h).
 */
#include "orr_alloc.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_log.h"

/* Successful calls left before an injected failure; negative = never. */
static atomic_long alloc_fail_countdown = -1;

void orr_alloc_fail_after(long n)
{
    atomic_store(&alloc_fail_countdown, n < 0 ? -1 : n);
}

/* 1 when the fault injection says this call must fail. */
static int alloc_injected_failure(void)
{
    long left = atomic_load_explicit(&alloc_fail_countdown, memory_order_relaxed);
    while (left >= 0) {
        if (atomic_compare_exchange_weak(&alloc_fail_countdown, &left, left - 1))
            return left == 0;
    }
    return 0;
}

_Noreturn void orr_oom(size_t bytes)
{
    orr_log(ORR_LOG_FATAL, "out of memory", "bytes=%zu", bytes);
    abort();
}

void *orr_xmalloc(size_t n)
{
    void *p = alloc_injected_failure() ? NULL : malloc(n ? n : 1);
    if (!p)
        orr_oom(n);
    return p;
}

void *orr_xcalloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        orr_oom(SIZE_MAX);
    void *p = alloc_injected_failure() ? NULL : calloc(count ? count : 1, size ? size : 1);
    if (!p)
        orr_oom(count * size);
    return p;
}

void *orr_xrealloc(void *p, size_t n)
{
    void *q = alloc_injected_failure() ? NULL : realloc(p, n ? n : 1);
    if (!q)
        orr_oom(n);
    return q;
}

char *orr_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = orr_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

char *orr_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = orr_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void *orr_xcheck(void *p)
{
    if (!p)
        orr_oom(0);
    return p;
}

void orr_alloc_keep_heap(size_t mmap_bytes, size_t trim_bytes)
{
    /* Setting either turns off glibc's own adjustment of both. */
    mallopt(M_MMAP_THRESHOLD, (int)mmap_bytes);
    mallopt(M_TRIM_THRESHOLD, (int)trim_bytes);
}

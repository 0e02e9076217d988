/*
 * orr_alloc.h - the one allocation-failure policy of Orrery.
 *
 * Two ways to fail, chosen by where the size comes from:
 *
 *  - The program's own bookkeeping (a struct, a node, a table that grows
 *    with what the process holds, a copy of a string already in memory):
 *    allocate with orr_xmalloc / orr_xcalloc / orr_xrealloc / orr_xstrdup.
 *    They never return NULL: on failure they log one fatal line (logfmt,
 *    `msg="out of memory" bytes=N`) and abort(). A process that cannot get
 *    a few hundred bytes can do nothing useful; its supervisor restarts it
 *    and Orrery's state lives in PostgreSQL and ZooKeeper, not in the heap
 *    (the same stance as Redis and PostgreSQL's palloc). No caller writes
 *    `if (!p)` after these.
 *
 *  - A size that comes from input (a length field in a file or a message, a
 *    count a user sent, a body of unknown size): first check it against the
 *    module's limit and refuse with ORR_ETOOBIG or ORR_EINVAL; if the
 *    allocation of an accepted size still fails, return ORR_ENOMEM with
 *    plain malloc/calloc/realloc, so one hostile or oversized request is
 *    refused and the daemon keeps serving everyone else. Parsers and
 *    decoders of untrusted bytes (tar, lzop, packs, RPC frames, TZif) follow
 *    this rule.
 *
 * Pointers from allocators that are not ours (jansson's json_object(),
 * libcurl, strndup) take the first rule through orr_xcheck(): the result, or
 * a fatal line and abort() when it is NULL. A bare `if (!p) abort();` is not
 * written anywhere: it dies without saying why.
 *
 * Thread-safe. Memory from the orr_x* functions is released with free().
 */
#ifndef ORR_ALLOC_H
#define ORR_ALLOC_H

#include <stddef.h>

/* malloc(n); n == 0 gives a unique pointer. Never NULL: aborts on failure. */
void *orr_xmalloc(size_t n);
/* calloc(count, size), zeroed; aborts on failure and when count * size overflows. */
void *orr_xcalloc(size_t count, size_t size);
/* realloc(p, n) (p may be NULL; n == 0 keeps a unique pointer, it does not free).
 * Never NULL: aborts on failure, p is then lost with the process. */
void *orr_xrealloc(void *p, size_t n);
/* A malloc'd copy of s, which must not be NULL. Aborts on failure. */
char *orr_xstrdup(const char *s);
/* A malloc'd copy of at most n bytes of s, always NUL-terminated. Aborts on failure. */
char *orr_xstrndup(const char *s, size_t n);

/* p, or (p == NULL) the fatal line and abort(): for pointers from other
 * libraries' allocators, e.g. `json_t *o = orr_xcheck(json_object());`. */
void *orr_xcheck(void *p);

/* Log `level=fatal msg="out of memory" bytes=N` and abort(). For a module
 * whose own allocator (an arena, a buffer) found it cannot go on. */
_Noreturn void orr_oom(size_t bytes);

/* Keep freed memory in the process's heap, for a daemon whose units of
 * work allocate and free the same large buffers over and over (a stream's
 * packs, a page of a thousand rows): a block smaller than mmap_bytes comes
 * from the heap, and up to trim_bytes of free space at the top of each of
 * the allocator's heaps is kept instead of being given back. By default
 * glibc maps a block of 128 KiB or more on its own and unmaps it when freed,
 * and hands back a heap's free top past 128 KiB (both limits grow only
 * with the blocks the program frees), so the next unit of work faults the
 * same pages in again one by one: on a virtual machine the largest cost of
 * a large answer. The price is memory: each heap may keep up to trim_bytes
 * free. glibc ignores an mmap_bytes above 32 MiB (on 64-bit) and keeps its
 * default; both must fit an int. Call it first thing in main(), before any
 * thread starts. */
void orr_alloc_keep_heap(size_t mmap_bytes, size_t trim_bytes);

/* Fault injection for tests: after n further successful orr_x* calls (all
 * threads together), the next one fails as if the system had no memory.
 * n < 0 (the default) turns it off; it turns itself off after the one failure.
 * Never called by production code. */
void orr_alloc_fail_after(long n);

#endif

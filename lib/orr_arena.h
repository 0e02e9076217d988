/*
 * orr_arena.h - region allocator: one arena per unit of work.
 *
 * An RPC call, an HTTP request, a record batch or a dispatch round allocates
 * from its arena and frees everything at once with orr_arena_destroy() or
 * orr_arena_reset(). Cleanup callbacks (close an fd, PQclear a result) run in
 * reverse order of registration on reset/destroy, so resources that are not
 * memory follow the same lifetime.
 *
 * Allocation never fails silently: on out-of-memory the process aborts with a
 * message (the project treats OOM as fatal, as Redis and PostgreSQL do).
 * Not thread-safe: an arena belongs to one thread at a time.
 */
#ifndef ORR_ARENA_H
#define ORR_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct orr_arena orr_arena;

/* New arena whose blocks are at least block_size bytes (0 = 8 KiB). Never NULL. */
orr_arena *orr_arena_create(size_t block_size);
/* Run cleanups, free every block. NULL is a no-op. */
void orr_arena_destroy(orr_arena *a);
/* Run cleanups and forget every allocation, keeping the first block for reuse. */
void orr_arena_reset(orr_arena *a);

/* n bytes aligned to max_align_t; memory is not zeroed. n == 0 gives a valid pointer. */
void *orr_arena_alloc(orr_arena *a, size_t n);
/* n bytes, zeroed. */
void *orr_arena_calloc(orr_arena *a, size_t count, size_t size);
/* Copies of strings/bytes living in the arena. strdup(NULL) returns NULL. */
char *orr_arena_strdup(orr_arena *a, const char *s);
char *orr_arena_strndup(orr_arena *a, const char *s, size_t n);
void *orr_arena_memdup(orr_arena *a, const void *p, size_t n);
char *orr_arena_sprintf(orr_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *orr_arena_vsprintf(orr_arena *a, const char *fmt, va_list ap);

/* Register fn(arg) to run on reset/destroy (LIFO). */
void orr_arena_on_cleanup(orr_arena *a, void (*fn)(void *), void *arg);

/* Bytes handed out since create/reset (for tests and metrics). */
size_t orr_arena_used(const orr_arena *a);

#endif

/*
 * gx_ratelimit.h - growing delays after failed logins, in bounded tables.
 *
 * Policy (docs/api.md, "Security"): a failed login is counted against keys
 * the caller chooses (galaxyd uses the pair account+client, the client
 * alone, and the account alone). Each key may fail `free_failures` times;
 * every further failure makes it wait base_delay, then twice that, and so
 * on up to max_delay, before its next attempt is heard. A key that has
 * not failed for forget_after starts afresh; a success clears it. Nothing
 * is ever locked: a delay bounds how fast guesses can be made, and a caller
 * who is not the one failing (another client, or a client that logged in
 * as that account before: gx_ratelimit_remember) is not slowed by it.
 *
 * A table has a fixed number of slots (keys hashed, 8-way probing, the
 * stalest slot evicted), so memory is bounded whatever callers send; one
 * mutex. Each galaxyd keeps its own tables; behind nginx the delays hold
 * per copy.
 */
#ifndef GX_RATELIMIT_H
#define GX_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct gx_ratelimit gx_ratelimit;

typedef struct gx_ratelimit_policy {
    int free_failures;       /* failures allowed without a delay */
    int64_t base_delay_ms;   /* the first delay; doubles with each further failure */
    int64_t max_delay_ms;    /* delays never exceed this */
    int64_t forget_after_ms; /* a key quiet this long starts afresh (remembered keys expire) */
} gx_ratelimit_policy;

/* A table of `slots` keys (0 = 4096). Never NULL (aborts when out of memory). */
gx_ratelimit *gx_ratelimit_create(const gx_ratelimit_policy *p, size_t slots);
void gx_ratelimit_destroy(gx_ratelimit *rl);
/* Times are milliseconds of a clock the caller keeps (galaxyd: CLOCK_MONOTONIC). */
/* Milliseconds until key may try again; 0 = now. */
int64_t gx_ratelimit_blocked(gx_ratelimit *rl, const char *key, int64_t now_ms);
/* Count one failure for key; returns the milliseconds it must now wait (0
 * while within its free failures). */
int64_t gx_ratelimit_fail(gx_ratelimit *rl, const char *key, int64_t now_ms);
/* Forget key's failures (a successful login). */
void gx_ratelimit_clear(gx_ratelimit *rl, const char *key);
/* Remember key as known-good for forget_after_s (a client that logged in as
 * an account); gx_ratelimit_known says whether it still is. */
void gx_ratelimit_remember(gx_ratelimit *rl, const char *key, int64_t now_ms);
int gx_ratelimit_known(gx_ratelimit *rl, const char *key, int64_t now_ms);

#endif

/*
 * gx_ratelimit.h - failed-login limiter, per user name and per client address.
 *
 * A fixed table of keys (hashed), each with a count of failures in the
 * current window. Past `max_failures` within `window_s` a key is blocked
 * until its window ends. Bounded memory: the table has a fixed number of
 * slots; a new key evicts the oldest window. Thread-safe (one mutex).
 * Each galaxyd keeps its own table; behind nginx the limit holds per copy.
 */
#ifndef GX_RATELIMIT_H
#define GX_RATELIMIT_H

#include <stdint.h>
#include <time.h>

typedef struct gx_ratelimit gx_ratelimit;

gx_ratelimit *gx_ratelimit_create(int max_failures, int window_s, size_t slots);
void gx_ratelimit_destroy(gx_ratelimit *rl);
/* Seconds until key may try again; 0 = allowed now. */
int gx_ratelimit_blocked(gx_ratelimit *rl, const char *key, time_t now);
/* Count one failure for key. */
void gx_ratelimit_fail(gx_ratelimit *rl, const char *key, time_t now);
/* Forget key (a successful login clears the user's count). */
void gx_ratelimit_clear(gx_ratelimit *rl, const char *key);

#endif

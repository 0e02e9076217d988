/*
 * gx_input.h - checks and conversions of what API callers send, with no
 * dependency on Halley or HTTP (so they are fuzzed on their own):
 * ISO-8601 times, object names that are safe in paths, and masking a secret
 * in a message before it is answered or logged.
 */
#ifndef GX_INPUT_H
#define GX_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

/* Parse "2026-11-30T10:00:00Z" / "...T10:00:00.5+02:00" / "2026-11-30" (UTC
 * midnight) into epoch milliseconds. ORR_EINVAL (*ms untouched) for anything
 * else, including dates before 1970 and impossible days. */
orr_status gx_parse_time(const char *s, int64_t *ms);

/* 1 if s is 1..128 characters of [A-Za-z0-9_.-] and not "." or "..": safe
 * as one segment of a file or ZooKeeper path. 0 otherwise (NULL included). */
int gx_name_ok(const char *s);

/* Replace, in place, every occurrence of secret in msg by "***" (by as many
 * '*' when the secret is shorter than 3 bytes), until none is left. msg only
 * shrinks. An empty secret, or one made only of '*', changes nothing. */
void gx_scrub_secret(char *msg, const char *secret);

#endif

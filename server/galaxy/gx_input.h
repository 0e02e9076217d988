/*
 * gx_input.h - checks and conversions of what API callers send, with no
 * dependency on Halley or HTTP (so they are fuzzed on their own):
 * ISO-8601 times, object names that are safe in paths, strict ids and
 * integers, text that is valid UTF-8 without control characters, and
 * masking a secret in a message before it is answered or logged.
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

/* 1 if s follows the one name rule of orr_name.h with at most 128 bytes
 * (1..128 of [A-Za-z0-9_.-], the first a letter or digit: never "." or
 * ".."), so it is safe as one segment of a file or ZooKeeper path. 0
 * otherwise (NULL included). */
int gx_name_ok(const char *s);

/* Strict decimal id of an object: 1..19 ASCII digits, the first not '0',
 * at most INT64_MAX; no sign, no spaces, nothing else. 0 and *out set when
 * it is one; -1 (*out untouched) otherwise, NULL included. Every id in a
 * path or a query is read with this, so "+1", " 1", "01" and "1 " address
 * nothing. */
int gx_parse_id(const char *s, int64_t *out);

/* Strict decimal integer: "0", or an optional '-' then 1..19 digits not
 * starting with '0', within int64; no '+', no spaces. 0 / -1 as above. */
int gx_parse_int(const char *s, int64_t *out);

/* NULL when s[0..n) is text a caller may send in a path or query: valid
 * UTF-8 (shortest form, no surrogates, at most U+10FFFF) with no control
 * character (U+0000..U+001F, U+007F..U+009F). Otherwise a short reason
 * ("invalid UTF-8", "control character") in static storage. */
const char *gx_text_problem(const char *s, size_t n);

/* The client's address of a request that reached galaxyd from peer with
 * X-Forwarded-For xff (NULL = none). trusted is a list of proxy addresses
 * separated by commas or spaces (NULL or "" = none). Walking from the peer
 * towards the client (xff from its right end), each hop that is a trusted
 * proxy is passed over; the first that is not is the client. So the header
 * counts only when the peer is a trusted proxy, and only the entries that
 * trusted proxies wrote. An entry that is not an IP address ends the walk
 * at the hop before it. Writes the address to out (at most n bytes with
 * the NUL) and returns out. */
const char *gx_client_addr(const char *peer, const char *xff, const char *trusted, char *out,
                           size_t n);

/* Replace, in place, every occurrence of secret in msg by "***" (by as many
 * '*' when the secret is shorter than 3 bytes), until none is left. msg only
 * shrinks. An empty secret, or one made only of '*', changes nothing. */
void gx_scrub_secret(char *msg, const char *secret);

#endif

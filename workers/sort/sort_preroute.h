/*
 * sort_preroute.h - records routed by a parse stage: a hand-off pack with
 * per-record times (lib/orr_pack.h, ORR_PACK_F_TIMES) names its unit in its
 * key as "<interface>@<bucket start, seconds>" and carries each record's
 * data time, so the write stage takes the route from the pack instead of
 * parsing the record again.
 *
 *   parse stage: parse + route -> key "iface@bucket", time per record
 *   write stage: src_redis puts them on the batch entries (sort_entry.ulen,
 *                upos, ubucket, utime_ms) -> sort_preroute -> sort_route
 *
 * The route is still checked against the write stage's spec, cheaply:
 * the interface must be a valid name (and listed, with strict interfaces;
 * the constant one when the spec has one) and the time must fall in the
 * bucket. A record that fails any check is parsed as if the pack carried
 * no route, so a pack from a parse stage with another spec lands where the
 * write stage's own routing puts it.
 */
#ifndef SORT_PREROUTE_H
#define SORT_PREROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "sort_format.h"
#include "sort_spec.h"

/* Split a routed pack's key "<iface>@<bucket>" (the last '@'; the bucket a
 * decimal integer, maybe negative). 0 with *iface_len and *bucket, -1 when
 * the key is not of that form. */
int sort_preroute_key(const char *key, size_t len, size_t *iface_len, int64_t *bucket);

/* The route of a record the parse stage routed to (iface, bucket) with data
 * time time_ms, checked against spec s. 0 with *out (out->iface points at
 * iface, or at the spec's constant interface), -1: parse the record. */
int sort_preroute(const sort_spec *s, const char *iface, size_t len, int64_t bucket,
                  int64_t time_ms, sort_route *out);

#endif

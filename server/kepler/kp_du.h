/*
 * kp_du.h - data-unit dependencies: which data units of a sort stream an
 * instance waits for, and keplerd's cache of which units are reconciled.
 *
 * A task names a data unit upstream as {"kind": "data_unit", "stream",
 * "business", "interface"}. A data unit is (stream, business, interface,
 * bucket); the bucket grid (size "15m" | "hour" | "day", aligned in the
 * stream's fixed-offset zone "time.timezone") comes from the stream's spec.
 *
 * Readiness rule. The data period of an instance at schedule time t is its
 * cycle: [t, next fire of its cron after t); for a task without a schedule
 * (manual, backfill) it is the instant t. The instance waits for every
 * bucket that overlaps its data period, each reconciled:
 *   - a cycle coarser than the bucket (a daily task on an hourly stream)
 *     waits for all the buckets inside it (24);
 *   - a cycle as fine as or finer than the bucket (an hourly task on a
 *     daily stream) waits for the one bucket containing t;
 * the same cross-cycle mapping kp_deps.h applies to task upstreams.
 *
 * The cache (kp_du_cache) holds, per (stream, business, interface), the
 * sorted bucket starts known reconciled (from "data_unit.reconciled" events
 * and from ListDataUnits) and the span of buckets that were listed from
 * Halley: a bucket inside that span and not marked is pending (an event will
 * tell when it is reconciled); a bucket outside it is unknown and must be
 * listed first. Reconciliation is never taken back, so marks stay until
 * pruned by age. Not thread-safe: the scheduler thread owns the cache.
 */
#ifndef KP_DU_H
#define KP_DU_H

#include <stddef.h>
#include <stdint.h>

#include "orr_cron.h"
#include "orr_tz.h"
#include "orr_status.h"

/* Most buckets one data-unit dependency may map to (a monthly task on a
 * 15-minute stream needs 31 * 96 = 2976). */
#define KP_DU_MAX_BUCKETS 3000

typedef struct kp_du_grid {
    int64_t size_s; /* 900, 3600 or 86400 */
    int32_t tz_s;   /* the stream zone's offset east of UTC, seconds */
} kp_du_grid;

/* Read the bucket grid from a sort stream's spec_json: "bucket" (required:
 * "15m", "hour", "day") and "time"."timezone" ("UTC", "Z", "+08:00",
 * "-0530"; absent = UTC). ORR_EINVAL with err->field the JSON path
 * ("stream.bucket", "stream.time.timezone") on bad or missing values. */
orr_status kp_du_grid_parse(const char *spec_json, kp_du_grid *g, orr_err *err);

/* Start (epoch seconds) of the bucket containing t. */
int64_t kp_du_bucket_start(const kp_du_grid *g, int64_t t);

/* The bucket starts (seconds, ascending) of the data period of an instance
 * at t of a task with cron dc in zone dtz (dc NULL: no schedule). ORR_OK
 * with *n >= 1; ORR_ETOOBIG when more than max buckets map (the first max
 * are written). */
orr_status kp_du_buckets(const orr_cron *dc, const orr_tz *dtz, const kp_du_grid *g, int64_t t,
                         int64_t *out, size_t max, size_t *n);

typedef enum kp_du_state {
    KP_DU_RECONCILED, /* marked reconciled */
    KP_DU_PENDING,    /* listed and not reconciled (yet) */
    KP_DU_UNKNOWN,    /* never listed: read it from Halley first */
} kp_du_state;

typedef struct kp_du_cache kp_du_cache;

/* Aborts on out-of-memory. Free with kp_du_cache_destroy. */
kp_du_cache *kp_du_cache_create(void);
void kp_du_cache_destroy(kp_du_cache *c);

/* Record that a unit is reconciled (idempotent). */
void kp_du_mark(kp_du_cache *c, const char *stream, const char *business, const char *interface,
                int64_t bucket_ms);
/* Record that the buckets in [from_ms, to_ms) were listed from Halley (the
 * reconciled ones among them marked with kp_du_mark): the others are
 * pending. Extends the listed span when it touches the last one, else
 * replaces it. */
void kp_du_listed(kp_du_cache *c, const char *stream, const char *business, const char *interface,
                  int64_t from_ms, int64_t to_ms);
kp_du_state kp_du_get(const kp_du_cache *c, const char *stream, const char *business,
                      const char *interface, int64_t bucket_ms);
/* Forget every listed span (each bucket is read again when next needed) and
 * drop marks of buckets older than before_ms. The periodic sweep's repair:
 * an event missed by the stream is caught at the next read. */
void kp_du_forget(kp_du_cache *c, int64_t before_ms);

/* The verdict over buckets[0..n) (seconds) of one dependency: 1 when every
 * one is reconciled; 0 otherwise, with *unknown set when some were never
 * listed (the caller lists [*from_ms, *to_ms) and asks again). */
int kp_du_met(const kp_du_cache *c, const char *stream, const char *business, const char *interface,
              const int64_t *buckets, size_t n, int64_t size_s, int *unknown, int64_t *from_ms,
              int64_t *to_ms);

#endif

/*
 * orr_metrics.h - metrics every Orrery daemon exposes: counters, gauges and
 * histograms (lock-free updates), the Prometheus text exposition (format
 * 0.0.4) and one HTTP endpoint serving GET /metrics and GET /healthz.
 *
 * Three parts:
 *
 *  1. A registry (orr_metrics) of series. A series is a family name, its
 *     HELP text, its type and an optional label set; registering the same
 *     name and labels again returns the same series, so code may look a
 *     series up where it counts. Updates are atomic and never block; a
 *     registered series lives as long as the registry.
 *
 *  2. The exposition writer (orr_metrics_writer): families are written
 *     whole, each opened by orr_metrics_family() with its # HELP and # TYPE
 *     lines; samples can only be written under an open family, so every
 *     family has both lines. Label values are escaped as the format wants
 *     (backslash, double quote, newline). Collectors (callbacks added to the
 *     registry) use the writer at scrape time for values that live
 *     elsewhere (a connection pool, an RPC server's table, a snapshot).
 *
 *  3. The endpoint (orr_metrics_server): libmicrohttpd through orr_http on
 *     its own address. /metrics answers the registry's exposition;
 *     /healthz answers the JSON object the daemon's health callback builds,
 *     200 when it says healthy and 503 when not; other paths 404, methods
 *     other than GET and HEAD 405.
 *
 * Names must match [a-zA-Z_:][a-zA-Z0-9_:]* and label names
 * [a-zA-Z_][a-zA-Z0-9_]*: a bad one is a programming error (logged, abort).
 */
#ifndef ORR_METRICS_H
#define ORR_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

typedef enum orr_metric_type {
    ORR_METRIC_COUNTER,
    ORR_METRIC_GAUGE,
    ORR_METRIC_HISTOGRAM,
} orr_metric_type;

typedef struct orr_metrics orr_metrics;
typedef struct orr_counter orr_counter;
typedef struct orr_gauge orr_gauge;
typedef struct orr_histogram orr_histogram;
typedef struct orr_metrics_writer orr_metrics_writer;

/* ------------------------------------------------------------ registry */

/* A new, empty registry. Never NULL (allocation failure aborts). */
orr_metrics *orr_metrics_create(void);
/* Free the registry and every series in it. NULL is a no-op. No other
 * thread may use it or its series any more. */
void orr_metrics_destroy(orr_metrics *m);

/* The series name{labels} of a family, made on first use. labels is a
 * NULL-terminated list of name, value pairs (values copied), or NULL.
 * help is the family's HELP text (the first registration's is kept).
 * Registering a name again with another type, or a histogram with other
 * bounds, is a programming error (logged, abort). Thread-safe. */
orr_counter *orr_metrics_counter(orr_metrics *m, const char *name, const char *help,
                                 const char *const *labels);
orr_gauge *orr_metrics_gauge(orr_metrics *m, const char *name, const char *help,
                             const char *const *labels);
/* bounds: n strictly increasing finite upper bounds (copied); the +Inf
 * bucket is implicit. */
orr_histogram *orr_metrics_histogram(orr_metrics *m, const char *name, const char *help,
                                     const char *const *labels, const double *bounds, size_t n);

void orr_counter_add(orr_counter *c, uint64_t n);
void orr_counter_inc(orr_counter *c);
uint64_t orr_counter_get(const orr_counter *c);

void orr_gauge_set(orr_gauge *g, double v);
void orr_gauge_add(orr_gauge *g, double d); /* d may be negative */
double orr_gauge_get(const orr_gauge *g);

/* Count v in the first bucket whose bound is >= v (and in _sum, _count). */
void orr_histogram_observe(orr_histogram *h, double v);
/* Snapshot for tests: the non-cumulative count of bucket i (i == n is +Inf),
 * the count and the sum. */
uint64_t orr_histogram_bucket(const orr_histogram *h, size_t i);
uint64_t orr_histogram_count(const orr_histogram *h);
double orr_histogram_sum(const orr_histogram *h);

/* Values computed at scrape time: fn writes whole families with the
 * writer. Called in the order added, after the registry's own series, on
 * the scraping thread; it must not call back into the registry's
 * registration functions. */
typedef void (*orr_metrics_collect_fn)(void *ctx, orr_metrics_writer *w);
void orr_metrics_add_collector(orr_metrics *m, orr_metrics_collect_fn fn, void *ctx);

/* Append the whole exposition (registry series, then collectors) to out. */
void orr_metrics_render(orr_metrics *m, orr_buf *out);

/* ------------------------------------------------------------ writer */

/* A writer appending to out; for code that renders families by itself
 * (collectors get one already made). */
struct orr_metrics_writer {
    orr_buf *out;
    char family[128]; /* the open family; "" before the first */
    orr_metric_type type;
};
void orr_metrics_writer_init(orr_metrics_writer *w, orr_buf *out);

/* Open a family: writes its # HELP (escaped) and # TYPE lines. help must be
 * non-empty. A family must be opened once per exposition. */
void orr_metrics_family(orr_metrics_writer *w, const char *name, orr_metric_type type,
                        const char *help);
/* One sample of the open counter or gauge family: name{labels} v. labels
 * as for the registry (NULL-terminated pairs, or NULL). */
void orr_metrics_sample(orr_metrics_writer *w, const char *const *labels, double v);
/* A counter or gauge family of one sample without labels. */
void orr_metrics_single(orr_metrics_writer *w, const char *name, orr_metric_type type,
                        const char *help, double v);
/* One series of the open histogram family from per-bucket (not cumulative)
 * counts: counts[0..n] where counts[n] is the +Inf bucket; writes _bucket
 * (cumulative, le as the bound), _sum and _count. */
void orr_metrics_histogram_sample(orr_metrics_writer *w, const char *const *labels,
                                  const double *bounds, const uint64_t *counts, size_t n,
                                  double sum);

/* ------------------------------------------------------------ endpoint */

typedef struct orr_metrics_server orr_metrics_server;

/* The daemon's health: append one JSON object (its members say what was
 * checked, e.g. {"status":"ok","db":true}) to body; return 1 when healthy
 * (200), 0 when not (503). Called on the server's thread, per request. */
typedef int (*orr_health_fn)(void *ctx, orr_buf *body);

/* Serve /metrics from m and /healthz from health (NULL: always healthy,
 * {"status":"ok"}) on listen (orr_http_parse_listen; field names the
 * setting in errors). ORR_EINVAL for a bad address, ORR_EIO when it cannot
 * be bound. m stays the caller's; it must outlive the server. */
orr_status orr_metrics_serve(orr_metrics *m, const char *listen, const char *field,
                             orr_health_fn health, void *health_ctx, orr_metrics_server **out,
                             orr_err *err);
/* The bound port. */
int orr_metrics_server_port(const orr_metrics_server *s);
/* Stop serving and free. NULL is a no-op. */
void orr_metrics_server_stop(orr_metrics_server *s);

#endif

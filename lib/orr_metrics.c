/*
 * orr_metrics.c - counters, gauges, histograms, the Prometheus text
 * exposition and the /metrics + /healthz endpoint (see orr_metrics.h).
 *
 * The registry is a list of families, each a list of series, appended under
 * one mutex and never shrunk until the registry is freed; values are
 * atomics, so an update never takes the mutex. A gauge and a histogram's
 * sum are doubles kept as their bits in a 64-bit atomic and added with a
 * compare-and-swap loop. A histogram's _count is written as the sum of its
 * buckets as read, so _count always equals the +Inf bucket in one scrape.
 */
#include "orr_metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_http.h"

struct orr_counter {
    atomic_uint_fast64_t v;
};

struct orr_gauge {
    atomic_uint_fast64_t bits;
};

struct orr_histogram {
    size_t n;
    const double *bounds;          /* the family's */
    atomic_uint_fast64_t *buckets; /* n + 1 */
    atomic_uint_fast64_t sum_bits;
};

struct met_series {
    struct met_series *next;
    char *labels; /* escaped `a="b",c="d"`, "" for none */
    union {
        orr_counter c;
        orr_gauge g;
        orr_histogram h;
    } u;
};

struct met_family {
    struct met_family *next;
    char *name, *help;
    orr_metric_type type;
    double *bounds;
    size_t nbounds;
    struct met_series *first, *last;
};

struct met_collector {
    orr_metrics_collect_fn fn;
    void *ctx;
};

struct orr_metrics {
    pthread_mutex_t mu;
    struct met_family *first, *last;
    struct met_collector *coll;
    size_t ncoll;
};

static void *met__alloc(size_t n)
{
    return orr_xcalloc(1, n ? n : 1);
}

static uint64_t met__bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double met__double(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static void met__add_double(atomic_uint_fast64_t *bits, double d)
{
    uint_fast64_t old = atomic_load(bits);
    while (!atomic_compare_exchange_weak(bits, &old, met__bits(met__double(old) + d)))
        ;
}

static int met__name_ok(const char *s, int colon)
{
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || (colon && *s == ':')))
            return 0;
    return 1;
}

/* A misuse by the calling code (a bad name, a type clash): always checked,
 * since a malformed exposition would fail every scrape later. */
static void met__require(int ok, const char *what, const char *name)
{
    if (ok)
        return;
    fprintf(stderr, "orr_metrics: %s: \"%s\"\n", what, name ? name : "(null)");
    abort();
}

/* Label value or HELP text with the exposition's escapes. */
static void met__escape(orr_buf *o, const char *s, int quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            orr_buf_append_str(o, "\\\\");
        else if (*s == '\n')
            orr_buf_append_str(o, "\\n");
        else if (quote && *s == '"')
            orr_buf_append_str(o, "\\\"");
        else
            orr_buf_append_byte(o, *s);
    }
}

/* `a="b",c="d"` of NULL-terminated pairs, appended to o. */
static void met__labels(orr_buf *o, const char *const *labels)
{
    for (size_t i = 0; labels && labels[i]; i += 2) {
        met__require(met__name_ok(labels[i], 0), "bad label name", labels[i]);
        if (i)
            orr_buf_append_byte(o, ',');
        orr_buf_appendf(o, "%s=\"", labels[i]);
        met__escape(o, labels[i + 1] ? labels[i + 1] : "", 1);
        orr_buf_append_byte(o, '"');
    }
}

static void met__number(orr_buf *o, double v)
{
    if (isnan(v)) {
        orr_buf_append_str(o, "NaN");
    } else if (isinf(v)) {
        orr_buf_append_str(o, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        orr_buf_appendf(o, "%lld", (long long)v);
    } else {
        char b[40];
        snprintf(b, sizeof b, "%.15g", v);
        if (strtod(b, NULL) != v)
            snprintf(b, sizeof b, "%.17g", v);
        orr_buf_append_str(o, b);
    }
}

/* name[suffix]{labels[,le="x"]} value */
static void met__line(orr_metrics_writer *w, const char *suffix, const char *labels,
                      const double *le, int u64, uint64_t iv, double dv)
{
    orr_buf *o = w->out;
    orr_buf_append_str(o, w->family);
    orr_buf_append_str(o, suffix);
    if ((labels && *labels) || le) {
        orr_buf_append_byte(o, '{');
        if (labels && *labels)
            orr_buf_append_str(o, labels);
        if (le) {
            if (labels && *labels)
                orr_buf_append_byte(o, ',');
            orr_buf_append_str(o, "le=\"");
            met__number(o, *le);
            orr_buf_append_byte(o, '"');
        }
        orr_buf_append_byte(o, '}');
    }
    orr_buf_append_byte(o, ' ');
    if (u64)
        orr_buf_appendf(o, "%llu", (unsigned long long)iv);
    else
        met__number(o, dv);
    orr_buf_append_byte(o, '\n');
}

/* ------------------------------------------------------------ writer */

void orr_metrics_writer_init(orr_metrics_writer *w, orr_buf *out)
{
    memset(w, 0, sizeof(*w));
    w->out = out;
}

void orr_metrics_family(orr_metrics_writer *w, const char *name, orr_metric_type type,
                        const char *help)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    met__require(met__name_ok(name, 1) && strlen(name) < sizeof w->family, "bad metric name", name);
    met__require(help && *help, "metric without HELP text", name);
    snprintf(w->family, sizeof w->family, "%s", name);
    w->type = type;
    orr_buf_appendf(w->out, "# HELP %s ", name);
    met__escape(w->out, help && *help ? help : name, 0);
    orr_buf_appendf(w->out, "\n# TYPE %s %s\n", name, types[type]);
}

void orr_metrics_sample(orr_metrics_writer *w, const char *const *labels, double v)
{
    met__require(w->family[0] && w->type != ORR_METRIC_HISTOGRAM,
                 "sample outside an open counter or gauge family", w->family);
    orr_buf lb = ORR_BUF_INIT;
    met__labels(&lb, labels);
    met__line(w, "", lb.data, NULL, 0, 0, v);
    orr_buf_free(&lb);
}

void orr_metrics_single(orr_metrics_writer *w, const char *name, orr_metric_type type,
                        const char *help, double v)
{
    orr_metrics_family(w, name, type, help);
    orr_metrics_sample(w, NULL, v);
}

/* One histogram series from already escaped labels. */
static void met__histogram(orr_metrics_writer *w, const char *labels, const double *bounds,
                           const uint64_t *counts, size_t n, double sum)
{
    uint64_t cum = 0;
    for (size_t i = 0; i < n; i++) {
        cum += counts[i];
        met__line(w, "_bucket", labels, &bounds[i], 1, cum, 0);
    }
    cum += counts[n];
    double inf = INFINITY;
    met__line(w, "_bucket", labels, &inf, 1, cum, 0);
    met__line(w, "_sum", labels, NULL, 0, 0, sum);
    met__line(w, "_count", labels, NULL, 1, cum, 0);
}

void orr_metrics_histogram_sample(orr_metrics_writer *w, const char *const *labels,
                                  const double *bounds, const uint64_t *counts, size_t n,
                                  double sum)
{
    met__require(w->family[0] && w->type == ORR_METRIC_HISTOGRAM,
                 "histogram sample outside an open histogram family", w->family);
    orr_buf lb = ORR_BUF_INIT;
    met__labels(&lb, labels);
    met__histogram(w, lb.data, bounds, counts, n, sum);
    orr_buf_free(&lb);
}

/* ------------------------------------------------------------ registry */

orr_metrics *orr_metrics_create(void)
{
    orr_metrics *m = met__alloc(sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void orr_metrics_destroy(orr_metrics *m)
{
    if (!m)
        return;
    for (struct met_family *f = m->first, *fn; f; f = fn) {
        fn = f->next;
        for (struct met_series *s = f->first, *sn; s; s = sn) {
            sn = s->next;
            if (f->type == ORR_METRIC_HISTOGRAM)
                free(s->u.h.buckets);
            free(s->labels);
            free(s);
        }
        free(f->name);
        free(f->help);
        free(f->bounds);
        free(f);
    }
    free(m->coll);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* The series of name{labels}, made if new. Called with m->mu held. */
static struct met_series *met__series(orr_metrics *m, const char *name, const char *help,
                                      orr_metric_type type, const char *const *labels,
                                      const double *bounds, size_t nb)
{
    met__require(met__name_ok(name, 1) && strlen(name) < 100, "bad metric name", name);
    struct met_family *f = m->first;
    while (f && strcmp(f->name, name) != 0)
        f = f->next;
    if (!f) {
        f = met__alloc(sizeof(*f));
        f->name = orr_xstrdup(name);
        f->help = orr_xstrdup(help && *help ? help : name);
        f->type = type;
        if (type == ORR_METRIC_HISTOGRAM) {
            for (size_t i = 1; i < nb; i++)
                met__require(bounds[i] > bounds[i - 1], "histogram bounds not increasing", name);
            f->bounds = met__alloc(nb * sizeof(double));
            if (nb)
                memcpy(f->bounds, bounds, nb * sizeof(double));
            f->nbounds = nb;
        }
        if (m->last)
            m->last->next = f;
        else
            m->first = f;
        m->last = f;
    }
    met__require(f->type == type, "metric registered again with another type", name);
    met__require(
        type != ORR_METRIC_HISTOGRAM ||
            (f->nbounds == nb && (!nb || memcmp(f->bounds, bounds, nb * sizeof(double)) == 0)),
        "histogram registered again with other bounds", name);
    orr_buf lb = ORR_BUF_INIT;
    met__labels(&lb, labels);
    const char *text = lb.data ? lb.data : "";
    struct met_series *s = f->first;
    while (s && strcmp(s->labels, text) != 0)
        s = s->next;
    if (!s) {
        s = met__alloc(sizeof(*s));
        s->labels = orr_xstrdup(text);
        if (type == ORR_METRIC_HISTOGRAM) {
            s->u.h.n = f->nbounds;
            s->u.h.bounds = f->bounds;
            s->u.h.buckets = met__alloc((f->nbounds + 1) * sizeof(atomic_uint_fast64_t));
            for (size_t i = 0; i <= f->nbounds; i++)
                atomic_init(&s->u.h.buckets[i], 0);
            atomic_init(&s->u.h.sum_bits, met__bits(0.0));
        } else if (type == ORR_METRIC_GAUGE) {
            atomic_init(&s->u.g.bits, met__bits(0.0));
        } else {
            atomic_init(&s->u.c.v, 0);
        }
        if (f->last)
            f->last->next = s;
        else
            f->first = s;
        f->last = s;
    }
    orr_buf_free(&lb);
    return s;
}

orr_counter *orr_metrics_counter(orr_metrics *m, const char *name, const char *help,
                                 const char *const *labels)
{
    pthread_mutex_lock(&m->mu);
    struct met_series *s = met__series(m, name, help, ORR_METRIC_COUNTER, labels, NULL, 0);
    pthread_mutex_unlock(&m->mu);
    return &s->u.c;
}

orr_gauge *orr_metrics_gauge(orr_metrics *m, const char *name, const char *help,
                             const char *const *labels)
{
    pthread_mutex_lock(&m->mu);
    struct met_series *s = met__series(m, name, help, ORR_METRIC_GAUGE, labels, NULL, 0);
    pthread_mutex_unlock(&m->mu);
    return &s->u.g;
}

orr_histogram *orr_metrics_histogram(orr_metrics *m, const char *name, const char *help,
                                     const char *const *labels, const double *bounds, size_t n)
{
    pthread_mutex_lock(&m->mu);
    struct met_series *s = met__series(m, name, help, ORR_METRIC_HISTOGRAM, labels, bounds, n);
    pthread_mutex_unlock(&m->mu);
    return &s->u.h;
}

void orr_counter_add(orr_counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}

void orr_counter_inc(orr_counter *c)
{
    atomic_fetch_add_explicit(&c->v, 1, memory_order_relaxed);
}

uint64_t orr_counter_get(const orr_counter *c)
{
    return atomic_load((atomic_uint_fast64_t *)&c->v);
}

void orr_gauge_set(orr_gauge *g, double v)
{
    atomic_store(&g->bits, met__bits(v));
}

void orr_gauge_add(orr_gauge *g, double d)
{
    met__add_double(&g->bits, d);
}

double orr_gauge_get(const orr_gauge *g)
{
    return met__double(atomic_load((atomic_uint_fast64_t *)&g->bits));
}

void orr_histogram_observe(orr_histogram *h, double v)
{
    size_t i = 0;
    while (i < h->n && !(v <= h->bounds[i]))
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    met__add_double(&h->sum_bits, v);
}

uint64_t orr_histogram_bucket(const orr_histogram *h, size_t i)
{
    return i <= h->n ? atomic_load(&h->buckets[i]) : 0;
}

uint64_t orr_histogram_count(const orr_histogram *h)
{
    uint64_t n = 0;
    for (size_t i = 0; i <= h->n; i++)
        n += atomic_load(&h->buckets[i]);
    return n;
}

double orr_histogram_sum(const orr_histogram *h)
{
    return met__double(atomic_load((atomic_uint_fast64_t *)&h->sum_bits));
}

void orr_metrics_add_collector(orr_metrics *m, orr_metrics_collect_fn fn, void *ctx)
{
    pthread_mutex_lock(&m->mu);
    struct met_collector *c = orr_xrealloc(m->coll, (m->ncoll + 1) * sizeof(*c));
    c[m->ncoll++] = (struct met_collector){fn, ctx};
    m->coll = c;
    pthread_mutex_unlock(&m->mu);
}

void orr_metrics_render(orr_metrics *m, orr_buf *out)
{
    orr_metrics_writer w;
    orr_metrics_writer_init(&w, out);
    pthread_mutex_lock(&m->mu);
    for (struct met_family *f = m->first; f; f = f->next) {
        orr_metrics_family(&w, f->name, f->type, f->help);
        for (struct met_series *s = f->first; s; s = s->next) {
            if (f->type == ORR_METRIC_COUNTER) {
                met__line(&w, "", s->labels, NULL, 1, orr_counter_get(&s->u.c), 0);
            } else if (f->type == ORR_METRIC_GAUGE) {
                met__line(&w, "", s->labels, NULL, 0, 0, orr_gauge_get(&s->u.g));
            } else {
                uint64_t stack[32], *counts = stack;
                if (f->nbounds + 1 > 32)
                    counts = met__alloc((f->nbounds + 1) * sizeof(uint64_t));
                for (size_t i = 0; i <= f->nbounds; i++)
                    counts[i] = atomic_load(&s->u.h.buckets[i]);
                met__histogram(&w, s->labels, f->bounds, counts, f->nbounds,
                               orr_histogram_sum(&s->u.h));
                if (counts != stack)
                    free(counts);
            }
        }
    }
    size_t n = m->ncoll;
    struct met_collector *c = n ? met__alloc(n * sizeof(*c)) : NULL;
    if (n)
        memcpy(c, m->coll, n * sizeof(*c));
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < n; i++) {
        orr_metrics_writer_init(&w, out);
        c[i].fn(c[i].ctx, &w);
    }
    free(c);
}

/* ------------------------------------------------------------ endpoint */

struct orr_metrics_server {
    orr_http *http;
    orr_metrics *m;
    orr_health_fn health;
    void *health_ctx;
};

static enum MHD_Result met__answer(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload,
                                   size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    orr_metrics_server *s = cls;
    if (*con_cls == NULL) { /* headers only so far */
        *con_cls = s;
        return MHD_YES;
    }
    if (*upload_size) { /* a body is drained, never kept */
        *upload_size = 0;
        return MHD_YES;
    }
    orr_buf body = ORR_BUF_INIT;
    unsigned code = 200;
    const char *type = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        code = 405;
        orr_buf_append_str(&body, "method not allowed: GET /metrics or /healthz\n");
    } else if (strcmp(url, "/metrics") == 0) {
        type = "text/plain; version=0.0.4; charset=utf-8";
        orr_metrics_render(s->m, &body);
    } else if (strcmp(url, "/healthz") == 0) {
        type = "application/json";
        if (s->health) {
            code = s->health(s->health_ctx, &body) ? 200 : 503;
        } else {
            orr_buf_append_str(&body, "{\"status\":\"ok\"}");
        }
        orr_buf_append_byte(&body, '\n');
    } else {
        code = 404;
        orr_buf_append_str(&body, "not found: GET /metrics or /healthz\n");
    }
    enum MHD_Result r = orr_http_reply(conn, code, type, body.data ? body.data : "", body.len);
    orr_buf_free(&body);
    return r;
}

orr_status orr_metrics_serve(orr_metrics *m, const char *listen, const char *field,
                             orr_health_fn health, void *health_ctx, orr_metrics_server **out,
                             orr_err *err)
{
    *out = NULL;
    orr_metrics_server *s = met__alloc(sizeof(*s));
    s->m = m;
    s->health = health;
    s->health_ctx = health_ctx;
    orr_http_opts ho = {
        .listen = listen,
        .field = field,
        .handler = met__answer,
        .handler_cls = s,
        .connection_limit = 64,
        .timeout_s = 10,
    };
    orr_status rc = orr_http_start(&ho, &s->http, err);
    if (rc != ORR_OK) {
        free(s);
        return rc;
    }
    *out = s;
    return ORR_OK;
}

int orr_metrics_server_port(const orr_metrics_server *s)
{
    return s ? orr_http_port(s->http) : 0;
}

void orr_metrics_server_stop(orr_metrics_server *s)
{
    if (!s)
        return;
    orr_http_stop(s->http);
    free(s);
}

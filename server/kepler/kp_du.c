/*
 * kp_du.c - data-unit bucket mapping and the reconciled-unit cache (see
 * kp_du.h).
 *
 * The cache is a short array of units (one per distinct stream, business,
 * interface named by some task), each with its reconciled bucket starts in
 * an ascending int64 array held in an orr_buf, so lookups are binary
 * searches and a mark is one sorted insert.
 */
#include "kp_du.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"

/* ------------------------------------------------------------ the grid */

static int du_digits(const char *p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* "UTC", "Z", "+HH:MM", "-HHMM", "+HH" -> seconds east of UTC; -1 bad. */
static int du_offset(const char *s, int32_t *out)
{
    if (strcmp(s, "UTC") == 0 || strcmp(s, "Z") == 0) {
        *out = 0;
        return 0;
    }
    size_t len = strlen(s);
    int h = 0, m = 0;
    if ((s[0] != '+' && s[0] != '-') || du_digits(s + 1, 2, &h) != 0)
        return -1;
    if (len == 6 && s[3] == ':') {
        if (du_digits(s + 4, 2, &m) != 0)
            return -1;
    } else if (len == 5) {
        if (du_digits(s + 3, 2, &m) != 0)
            return -1;
    } else if (len != 3) {
        return -1;
    }
    if (h > 14 || m > 59)
        return -1;
    int32_t v = (int32_t)(h * 3600 + m * 60);
    *out = s[0] == '-' ? -v : v;
    return 0;
}

orr_status kp_du_grid_parse(const char *spec_json, kp_du_grid *g, orr_err *err)
{
    json_t *doc = NULL;
    orr_status st =
        orr_json_parse(spec_json ? spec_json : "", spec_json ? strlen(spec_json) : 0, &doc, err);
    if (st != ORR_OK)
        return st;
    const char *bucket = NULL, *zone = "UTC";
    json_t *time = NULL;
    if (!json_is_object(doc)) {
        st = orr_err_set(err, ORR_EINVAL, "stream", "must be an object");
        goto out;
    }
    if ((st = orr_json_get_str(doc, "stream", "bucket", 1, &bucket, err)) != ORR_OK ||
        (st = orr_json_get_obj(doc, "stream", "time", 0, &time, err)) != ORR_OK)
        goto out;
    if (time && !json_is_object(time)) {
        st = orr_err_set(err, ORR_EINVAL, "stream.time", "must be an object");
        goto out;
    }
    if (time && (st = orr_json_get_str(time, "stream.time", "timezone", 0, &zone, err)) != ORR_OK)
        goto out;
    if (strcmp(bucket, "15m") == 0)
        g->size_s = 900;
    else if (strcmp(bucket, "hour") == 0)
        g->size_s = 3600;
    else if (strcmp(bucket, "day") == 0)
        g->size_s = 86400;
    else {
        st = orr_err_set(err, ORR_EINVAL, "stream.bucket", "\"%.40s\" is not 15m, hour or day",
                         bucket);
        goto out;
    }
    if (du_offset(zone, &g->tz_s) != 0)
        st = orr_err_set(err, ORR_EINVAL, "stream.time.timezone",
                         "\"%.40s\" is not UTC or a fixed offset (+08:00, -0530)", zone);
out:
    json_decref(doc);
    return st;
}

static int64_t du_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t kp_du_bucket_start(const kp_du_grid *g, int64_t t)
{
    return du_floor_div(t + g->tz_s, g->size_s) * g->size_s - g->tz_s;
}

orr_status kp_du_buckets(const orr_cron *dc, const orr_tz *dtz, const kp_du_grid *g, int64_t t,
                         int64_t *out, size_t max, size_t *n)
{
    *n = 0;
    int64_t end = t + 1;
    if (dc && (orr_cron_next(dc, dtz, t, &end) != ORR_OK || end <= t))
        end = t + 1; /* the task's last cycle: the instant t alone */
    for (int64_t b = kp_du_bucket_start(g, t); b < end; b += g->size_s) {
        if (*n == max)
            return ORR_ETOOBIG;
        out[(*n)++] = b;
    }
    return ORR_OK;
}

/* ------------------------------------------------------------ the cache */

typedef struct du_unit {
    char *stream, *business, *interface;
    orr_buf marks;                  /* int64_t bucket_ms, ascending, unique */
    int64_t listed_from, listed_to; /* [from, to); from == to: none */
} du_unit;

struct kp_du_cache {
    orr_buf units; /* du_unit[], one per distinct (stream, business, interface) */
};

static char *du_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(orr_xcalloc(1, n), s, n);
}

static size_t du_count(const kp_du_cache *c)
{
    return c->units.len / sizeof(du_unit);
}

static du_unit *du_at(const kp_du_cache *c, size_t i)
{
    return (du_unit *)(void *)c->units.data + i;
}

kp_du_cache *kp_du_cache_create(void)
{
    return orr_xcalloc(1, sizeof(kp_du_cache));
}

void kp_du_cache_destroy(kp_du_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < du_count(c); i++) {
        du_unit *u = du_at(c, i);
        free(u->stream);
        free(u->business);
        free(u->interface);
        orr_buf_free(&u->marks);
    }
    orr_buf_free(&c->units);
    free(c);
}

static du_unit *du_find(const kp_du_cache *c, const char *stream, const char *business,
                        const char *interface)
{
    for (size_t i = 0; i < du_count(c); i++) {
        du_unit *u = du_at(c, i);
        if (strcmp(u->stream, stream) == 0 && strcmp(u->business, business) == 0 &&
            strcmp(u->interface, interface) == 0)
            return u;
    }
    return NULL;
}

static du_unit *du_get(kp_du_cache *c, const char *stream, const char *business,
                       const char *interface)
{
    du_unit *u = du_find(c, stream, business, interface);
    if (u)
        return u;
    du_unit nu;
    memset(&nu, 0, sizeof nu);
    nu.stream = du_strdup(stream);
    nu.business = du_strdup(business);
    nu.interface = du_strdup(interface);
    orr_buf_append(&c->units, &nu, sizeof nu);
    return du_at(c, du_count(c) - 1);
}

/* Index of the first mark >= v. */
static size_t du_lower(const du_unit *u, int64_t v)
{
    const int64_t *m = (const int64_t *)(const void *)u->marks.data;
    size_t lo = 0, hi = u->marks.len / sizeof(int64_t);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int du_marked(const du_unit *u, int64_t v)
{
    size_t n = u->marks.len / sizeof(int64_t), i = du_lower(u, v);
    int64_t x;
    if (i >= n)
        return 0;
    memcpy(&x, u->marks.data + i * sizeof x, sizeof x);
    return x == v;
}

void kp_du_mark(kp_du_cache *c, const char *stream, const char *business, const char *interface,
                int64_t bucket_ms)
{
    du_unit *u = du_get(c, stream, business, interface);
    if (du_marked(u, bucket_ms))
        return;
    size_t at = du_lower(u, bucket_ms) * sizeof(int64_t), tail = u->marks.len - at;
    orr_buf_append(&u->marks, &bucket_ms, sizeof bucket_ms); /* grows by one */
    memmove(u->marks.data + at + sizeof bucket_ms, u->marks.data + at, tail);
    memcpy(u->marks.data + at, &bucket_ms, sizeof bucket_ms);
}

void kp_du_listed(kp_du_cache *c, const char *stream, const char *business, const char *interface,
                  int64_t from_ms, int64_t to_ms)
{
    if (to_ms <= from_ms)
        return;
    du_unit *u = du_get(c, stream, business, interface);
    if (u->listed_from < u->listed_to && from_ms <= u->listed_to && to_ms >= u->listed_from) {
        if (from_ms < u->listed_from)
            u->listed_from = from_ms;
        if (to_ms > u->listed_to)
            u->listed_to = to_ms;
    } else {
        u->listed_from = from_ms;
        u->listed_to = to_ms;
    }
}

kp_du_state kp_du_get(const kp_du_cache *c, const char *stream, const char *business,
                      const char *interface, int64_t bucket_ms)
{
    const du_unit *u = du_find(c, stream, business, interface);
    if (!u)
        return KP_DU_UNKNOWN;
    if (du_marked(u, bucket_ms))
        return KP_DU_RECONCILED;
    if (bucket_ms >= u->listed_from && bucket_ms < u->listed_to)
        return KP_DU_PENDING;
    return KP_DU_UNKNOWN;
}

void kp_du_forget(kp_du_cache *c, int64_t before_ms)
{
    for (size_t i = 0; i < du_count(c); i++) {
        du_unit *u = du_at(c, i);
        u->listed_from = u->listed_to = 0;
        size_t k = du_lower(u, before_ms) * sizeof(int64_t);
        if (k)
            orr_buf_consume(&u->marks, k);
    }
}

int kp_du_met(const kp_du_cache *c, const char *stream, const char *business, const char *interface,
              const int64_t *buckets, size_t n, int64_t size_s, int *unknown, int64_t *from_ms,
              int64_t *to_ms)
{
    int met = 1;
    *unknown = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ms = buckets[i] * 1000;
        kp_du_state s = kp_du_get(c, stream, business, interface, ms);
        if (s == KP_DU_RECONCILED)
            continue;
        met = 0;
        if (s == KP_DU_UNKNOWN) {
            if (!*unknown || ms < *from_ms)
                *from_ms = ms;
            if (!*unknown || ms + size_s * 1000 > *to_ms)
                *to_ms = ms + size_s * 1000;
            *unknown = 1;
        }
    }
    return met;
}

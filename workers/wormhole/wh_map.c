/*
 * wh_map.c - writers' column mappings and value casts (see wh_map.h).
 *
 * Casts work on the canonical text form of wh.h and produce it: an integer
 * is digits, a bool "t"/"f", a timestamp "YYYY-MM-DD HH:MM:SS[.f]" in UTC, a
 * timestamptz the same with "+00", bytes "\x" and hex. What each cast
 * accepts is in docs/wormhole.md ("Column mapping"). A mapped batch is built
 * row by row in the writer thread's own batch, so a cast allocates nothing
 * per row once the batch and the scratch buffer have grown.
 */
#include "wh_map.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_json.h"

typedef struct wh_map_entry {
    const char *target;
    const char *source;   /* NULL for a constant */
    const char *constant; /* NULL with is_const: the constant NULL */
    int is_const;
    int has_cast;
    wh_cast_to cast;
    size_t src_col; /* after bind */
    wh_kind src_kind;
} wh_map_entry;

struct wh_map {
    char path[48];
    size_t n;
    wh_map_entry *e;
    wh_schema schema; /* what the writer receives */
    json_t *spec;     /* keeps the strings above alive */
};

/* ---- casts ------------------------------------------------------------- */

static const struct {
    const char *name;
    wh_kind kind;
    int bytes;
} wh_casts[] = {
    {"text", WH_K_TEXT, 0},           {"int", WH_K_INT, 4},
    {"bigint", WH_K_INT, 8},          {"numeric", WH_K_NUMERIC, 0},
    {"float", WH_K_FLOAT, 0},         {"bool", WH_K_BOOL, 0},
    {"date", WH_K_DATE, 0},           {"time", WH_K_TIME, 0},
    {"timestamp", WH_K_TIMESTAMP, 0}, {"timestamptz", WH_K_TIMESTAMPTZ, 0},
    {"bytes", WH_K_BYTES, 0},         {"json", WH_K_JSON, 0},
};

int wh_cast_parse(const char *name, wh_cast_to *out)
{
    for (size_t i = 0; i < sizeof(wh_casts) / sizeof(wh_casts[0]); i++)
        if (strcmp(wh_casts[i].name, name) == 0) {
            out->kind = wh_casts[i].kind;
            out->bytes = wh_casts[i].bytes;
            return 0;
        }
    return -1;
}

const char *wh_cast_names(void)
{
    return "text, int, bigint, numeric, float, bool, date, time, timestamp, timestamptz, bytes, "
           "json";
}

static const char *wh_cast_name(const wh_cast_to *c)
{
    if (c->kind == WH_K_INT)
        return c->bytes == 8 ? "bigint" : "int";
    return wh_kind_name(c->kind);
}

/* Trim ASCII blanks; the value is copied to a NUL-ended scratch string. */
static const char *wh_trim(const char *p, size_t len, char *buf, size_t n)
{
    while (len && isspace((unsigned char)*p)) {
        p++;
        len--;
    }
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    if (len >= n)
        return NULL;
    memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

static int wh_bool_word(const char *s)
{
    static const char *const yes[] = {"t", "true", "y", "yes", "on", "1"};
    static const char *const no[] = {"f", "false", "n", "no", "off", "0"};
    for (size_t i = 0; i < 6; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* A decimal number: [+-] digits [. digits] [e [+-] digits]. */
static int wh_is_decimal(const char *s, int *has_frac, int *has_exp)
{
    const char *p = s;
    int digits = 0;
    *has_frac = *has_exp = 0;
    if (*p == '+' || *p == '-')
        p++;
    while (isdigit((unsigned char)*p)) {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            if (*p != '0')
                *has_frac = 1;
            p++;
            digits++;
        }
    }
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
        *has_exp = 1;
    }
    return *p == 0;
}

static int wh_cast_int(const wh_cast_to *to, wh_kind from, const char *s, orr_buf *out,
                       const char **reason)
{
    if (from == WH_K_BOOL) {
        int b = wh_bool_word(s);
        if (b < 0)
            return *reason = "is not a boolean", 0;
        orr_buf_append_byte(out, b ? '1' : '0');
        return 1;
    }
    int frac, exp;
    if (!wh_is_decimal(s, &frac, &exp))
        return *reason = "is not an integer", 0;
    if (frac)
        return *reason = "has a fraction (an integer cannot hold it)", 0;
    long long v;
    if (exp) {
        errno = 0;
        double d = strtod(s, NULL);
        if (errno || d != floor(d) || d < -9.2e18 || d > 9.2e18)
            return *reason = "is out of the integer's range", 0;
        v = (long long)d;
    } else {
        char *end;
        errno = 0;
        v = strtoll(s, &end, 10); /* stops at a ".000" fraction */
        if (errno == ERANGE)
            return *reason = "is out of the bigint range", 0;
    }
    if (to->bytes == 4 && (v < INT32_MIN || v > INT32_MAX))
        return *reason = "is out of the int range (-2147483648..2147483647)", 0;
    orr_buf_appendf(out, "%lld", v);
    return 1;
}

static int wh_cast_numeric(const wh_cast_to *to, wh_kind from, const char *s, orr_buf *out,
                           const char **reason)
{
    int frac, exp;
    if (from == WH_K_BOOL) {
        int b = wh_bool_word(s);
        if (b < 0)
            return *reason = "is not a boolean", 0;
        orr_buf_append_byte(out, b ? '1' : '0');
        return 1;
    }
    if (!strcasecmp(s, "nan") || !strcasecmp(s, "infinity") || !strcasecmp(s, "-infinity") ||
        !strcasecmp(s, "inf") || !strcasecmp(s, "-inf")) {
        if (to->kind == WH_K_NUMERIC && strcasecmp(s, "nan") != 0)
            return *reason = "is infinite (numeric cannot hold it)", 0;
        orr_buf_append_str(out, !strcasecmp(s, "nan") ? "NaN"
                                : s[0] == '-'         ? "-Infinity"
                                                      : "Infinity");
        return 1;
    }
    if (!wh_is_decimal(s, &frac, &exp))
        return *reason = "is not a number", 0;
    if (to->kind == WH_K_FLOAT) {
        errno = 0;
        double d = strtod(s, NULL);
        if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
            return *reason = "is out of the float range", 0;
    }
    orr_buf_append_str(out, s[0] == '+' ? s + 1 : s);
    return 1;
}

static int wh_days_in(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return d[m - 1];
}

typedef struct wh_ts {
    int y, mo, d, h, mi, s;
    char frac[8]; /* ".ffffff" or "" */
    int has_time;
    int has_zone;
    int zone_min; /* offset east of UTC */
    int bc;
} wh_ts;

static int wh_num(const char **p, int min_digits, int max_digits, int *out)
{
    int v = 0, k = 0;
    while (k < max_digits && isdigit((unsigned char)**p)) {
        v = v * 10 + (**p - '0');
        (*p)++;
        k++;
    }
    *out = v;
    return k >= min_digits;
}

/* "YYYY-MM-DD[( |T)HH:MM[:SS[.f]]][Z|+HH[:MM]|-HH[:MM]][ BC]" */
static int wh_parse_ts(const char *s, wh_ts *t)
{
    memset(t, 0, sizeof(*t));
    const char *p = s;
    if (!wh_num(&p, 4, 7, &t->y) || *p++ != '-' || !wh_num(&p, 1, 2, &t->mo) || *p++ != '-' ||
        !wh_num(&p, 1, 2, &t->d))
        return 0;
    if (t->mo < 1 || t->mo > 12 || t->d < 1 || t->d > wh_days_in(t->y, t->mo) || t->y < 1)
        return 0;
    if (*p == ' ' || *p == 'T') {
        const char *q = p + 1;
        if (isdigit((unsigned char)*q)) {
            p = q;
            if (!wh_num(&p, 1, 2, &t->h) || *p++ != ':' || !wh_num(&p, 2, 2, &t->mi))
                return 0;
            if (*p == ':') {
                p++;
                if (!wh_num(&p, 2, 2, &t->s))
                    return 0;
                if (*p == '.') {
                    size_t k = 0;
                    t->frac[k++] = *p++;
                    while (isdigit((unsigned char)*p)) {
                        if (k < 7)
                            t->frac[k++] = *p;
                        p++;
                    }
                    t->frac[k] = 0;
                    if (k == 1)
                        t->frac[0] = 0;
                }
            }
            if (t->h > 24 || t->mi > 59 || t->s > 60 || (t->h == 24 && (t->mi || t->s)))
                return 0;
            t->has_time = 1;
            if (*p == 'Z' || *p == 'z') {
                p++;
                t->has_zone = 1;
            } else if (*p == '+' || *p == '-') {
                int sign = *p++ == '-' ? -1 : 1, zh, zm = 0;
                if (!wh_num(&p, 2, 2, &zh))
                    return 0;
                if (*p == ':')
                    p++;
                if (isdigit((unsigned char)*p) && !wh_num(&p, 2, 2, &zm))
                    return 0;
                t->has_zone = 1;
                t->zone_min = sign * (zh * 60 + zm);
            }
        }
    }
    if (strcmp(p, " BC") == 0) {
        t->bc = 1;
        p += 3;
    }
    return *p == 0;
}

/* Move t to UTC when it carries a zone that is not UTC. */
static int wh_ts_to_utc(wh_ts *t)
{
    if (!t->has_zone || t->zone_min == 0)
        return 1;
    if (t->bc)
        return 0;
    struct tm tm = {0};
    tm.tm_year = t->y - 1900;
    tm.tm_mon = t->mo - 1;
    tm.tm_mday = t->d;
    tm.tm_hour = t->h;
    tm.tm_min = t->mi;
    tm.tm_sec = t->s;
    time_t u = timegm(&tm) - (time_t)t->zone_min * 60;
    if (!gmtime_r(&u, &tm))
        return 0;
    t->y = tm.tm_year + 1900;
    t->mo = tm.tm_mon + 1;
    t->d = tm.tm_mday;
    t->h = tm.tm_hour;
    t->mi = tm.tm_min;
    t->s = tm.tm_sec;
    t->zone_min = 0;
    return t->y >= 1;
}

static int wh_cast_time_kinds(const wh_cast_to *to, wh_kind from, const char *s, orr_buf *out,
                              const char **reason)
{
    if (!strcmp(s, "infinity") || !strcmp(s, "-infinity")) {
        if (to->kind == WH_K_TIME)
            return *reason = "is infinite (a time of day cannot be)", 0;
        orr_buf_append_str(out, s);
        return 1;
    }
    wh_ts t;
    if (to->kind == WH_K_TIME && from != WH_K_TIMESTAMP && from != WH_K_TIMESTAMPTZ) {
        /* A time of day on its own: HH:MM[:SS[.f]]. */
        char buf[80];
        snprintf(buf, sizeof(buf), "2000-01-01 %s", s);
        if (!wh_parse_ts(buf, &t) || !t.has_time)
            return *reason = "is not a time of day", 0;
        orr_buf_appendf(out, "%02d:%02d:%02d%s", t.h, t.mi, t.s, t.frac);
        return 1;
    }
    if (!wh_parse_ts(s, &t))
        return *reason = "is not a date or timestamp", 0;
    /* A zone-less value read as timestamptz is in UTC already. */
    if (to->kind != WH_K_DATE || from == WH_K_TIMESTAMPTZ) {
        if (!wh_ts_to_utc(&t))
            return *reason = "cannot be moved to UTC", 0;
    }
    const char *bc = t.bc ? " BC" : "";
    switch (to->kind) {
    case WH_K_DATE:
        orr_buf_appendf(out, "%04d-%02d-%02d%s", t.y, t.mo, t.d, bc);
        return 1;
    case WH_K_TIME:
        orr_buf_appendf(out, "%02d:%02d:%02d%s", t.h, t.mi, t.s, t.frac);
        return 1;
    case WH_K_TIMESTAMP:
        orr_buf_appendf(out, "%04d-%02d-%02d %02d:%02d:%02d%s%s", t.y, t.mo, t.d, t.h, t.mi, t.s,
                        t.frac, bc);
        return 1;
    default:
        orr_buf_appendf(out, "%04d-%02d-%02d %02d:%02d:%02d%s+00%s", t.y, t.mo, t.d, t.h, t.mi, t.s,
                        t.frac, bc);
        return 1;
    }
}

static int wh_is_hex_bytes(const char *p, size_t len)
{
    if (len < 2 || p[0] != '\\' || p[1] != 'x' || (len - 2) % 2)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (!isxdigit((unsigned char)p[i]))
            return 0;
    return 1;
}

static int wh_cast_json(wh_kind from, const char *p, size_t len, orr_buf *out, const char **reason)
{
    char buf[64];
    const char *s;
    switch (from) {
    case WH_K_JSON:
        orr_buf_append(out, p, len);
        return 1;
    case WH_K_BOOL:
        s = wh_trim(p, len, buf, sizeof(buf));
        if (!s || wh_bool_word(s) < 0)
            return *reason = "is not a boolean", 0;
        orr_buf_append_str(out, wh_bool_word(s) ? "true" : "false");
        return 1;
    default:
        break;
    }
    json_error_t je;
    json_t *v = json_loadb(p, len, JSON_DECODE_ANY, &je);
    if (!v)
        return *reason = "is not valid JSON", 0;
    json_decref(v);
    orr_buf_append(out, p, len);
    return 1;
}

int wh_cast_value(const wh_cast_to *to, wh_kind from, const char *p, size_t len, orr_buf *out,
                  const char **reason)
{
    char buf[128];
    const char *s;
    switch (to->kind) {
    case WH_K_TEXT:
        orr_buf_append(out, p, len);
        return 1;
    case WH_K_BYTES:
        if (from == WH_K_BYTES || wh_is_hex_bytes(p, len)) {
            orr_buf_append(out, p, len);
            return 1;
        }
        orr_buf_append_str(out, "\\x");
        for (size_t i = 0; i < len; i++)
            orr_buf_appendf(out, "%02x", (unsigned char)p[i]);
        return 1;
    case WH_K_JSON:
        return wh_cast_json(from, p, len, out, reason);
    default:
        break;
    }
    if (!(s = wh_trim(p, len, buf, sizeof(buf))))
        return *reason = "is too long for the cast", 0;
    switch (to->kind) {
    case WH_K_INT:
        return wh_cast_int(to, from, s, out, reason);
    case WH_K_NUMERIC:
    case WH_K_FLOAT:
        return wh_cast_numeric(to, from, s, out, reason);
    case WH_K_BOOL: {
        int b = wh_bool_word(s);
        if (b < 0 && (from == WH_K_INT || from == WH_K_NUMERIC || from == WH_K_FLOAT)) {
            int frac, exp;
            if (wh_is_decimal(s, &frac, &exp))
                b = strtod(s, NULL) != 0;
        }
        if (b < 0)
            return *reason = "is not a boolean", 0;
        orr_buf_append_byte(out, b ? 't' : 'f');
        return 1;
    }
    case WH_K_DATE:
    case WH_K_TIME:
    case WH_K_TIMESTAMP:
    case WH_K_TIMESTAMPTZ:
        return wh_cast_time_kinds(to, from, s, out, reason);
    default:
        return *reason = "has no cast", 0;
    }
}

/* ---- parsing ----------------------------------------------------------- */

void wh_map_free(wh_map *m)
{
    if (!m)
        return;
    free(m->e);
    wh_schema_free(&m->schema);
    json_decref(m->spec);
    free(m);
}

static orr_status wh_map_entry_parse(const json_t *o, const char *p, wh_map_entry *e, orr_err *err)
{
    static const char *const keys[] = {"target", "source", "cast", "constant", NULL};
    char q[160];
    orr_status rc;
    const char *cast = NULL;
    if (!json_is_object(o))
        return orr_err_set(err, ORR_EINVAL, p, "must be an object");
    if ((rc = orr_json_allow_keys(o, p, keys, err)) ||
        (rc = orr_json_get_str(o, p, "target", 1, &e->target, err)) ||
        (rc = orr_json_get_str(o, p, "source", 0, &e->source, err)) ||
        (rc = orr_json_get_str(o, p, "cast", 0, &cast, err)))
        return rc;
    if (!e->target[0])
        return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), p, "target"),
                           "must not be empty");
    json_t *k = json_object_get(o, "constant");
    if (k) {
        if (!json_is_string(k) && !json_is_null(k))
            return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), p, "constant"),
                               "must be a string or null");
        e->is_const = 1;
        e->constant = json_is_string(k) ? json_string_value(k) : NULL;
    }
    if (e->is_const == (e->source != NULL))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), p, "source"),
                           "give source or constant (one of them)");
    if (e->source && !e->source[0])
        return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), p, "source"),
                           "must not be empty");
    if (cast) {
        if (e->is_const)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), p, "cast"),
                               "a constant is written as given (no cast)");
        if (wh_cast_parse(cast, &e->cast) != 0)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), p, "cast"),
                               "unknown cast \"%s\" (one of %s)", cast, wh_cast_names());
        e->has_cast = 1;
    }
    return ORR_OK;
}

orr_status wh_map_parse(const json_t *spec, const char *path, wh_map **out, json_t **plugin_spec,
                        orr_err *err)
{
    char p[96], q[128];
    *out = NULL;
    *plugin_spec = NULL;
    json_t *a = json_object_get(spec, "mapping");
    if (!a)
        return ORR_OK;
    orr_json_path(p, sizeof(p), path, "mapping");
    if (!json_is_array(a) || json_array_size(a) == 0)
        return orr_err_set(err, ORR_EINVAL, p, "must be a non-empty array");
    if (json_object_get(spec, "columns"))
        return orr_err_set(err, ORR_EINVAL, orr_json_path(q, sizeof(q), path, "columns"),
                           "give mapping or columns, not both");
    wh_map *m = orr_xcalloc(1, sizeof(*m));
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->spec = json_deep_copy(spec);
    json_object_del(m->spec, "mapping");
    a = json_object_get(spec, "mapping");
    m->n = json_array_size(a);
    m->e = orr_xcalloc(m->n, sizeof(*m->e));
    orr_status rc = ORR_OK;
    json_t *targets = json_array();
    for (size_t i = 0; i < m->n; i++) {
        orr_json_index_path(q, sizeof(q), p, i);
        if ((rc = wh_map_entry_parse(json_array_get(a, i), q, &m->e[i], err)))
            goto fail;
        for (size_t k = 0; k < i; k++)
            if (strcmp(m->e[k].target, m->e[i].target) == 0) {
                char t[160];
                rc = orr_err_set(err, ORR_EINVAL, orr_json_path(t, sizeof(t), q, "target"),
                                 "column %s is already the target of mapping[%zu]", m->e[i].target,
                                 k);
                goto fail;
            }
        json_array_append_new(targets, json_string(m->e[i].target));
    }
    /* A SQL store loads the targets by name; a file writer names its
     * columns after the schema it receives. */
    const char *type = json_string_value(json_object_get(spec, "type"));
    if (!type || strcmp(type, "file") != 0)
        json_object_set(m->spec, "columns", targets);
    json_decref(targets);
    /* The strings of the entries point into spec, which the job keeps. */
    *plugin_spec = json_incref(m->spec);
    *out = m;
    return ORR_OK;
fail:
    json_decref(targets);
    wh_map_free(m);
    return rc;
}

json_t *wh_map_reader_spec(const json_t *reader, const json_t *writers)
{
    const char *type = json_string_value(json_object_get(reader, "type"));
    if (!type || strcmp(type, "file") == 0 || json_object_get(reader, "columns"))
        return NULL;
    json_t *cols = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(writers, i, w)
    {
        json_t *a = json_object_get(w, "mapping"), *e;
        size_t k;
        json_array_foreach(a, k, e)
        {
            const char *s = json_string_value(json_object_get(e, "source"));
            if (!s || !s[0])
                continue;
            size_t j;
            json_t *c;
            int seen = 0;
            json_array_foreach(cols, j, c) seen |= strcmp(json_string_value(c), s) == 0;
            if (!seen)
                json_array_append_new(cols, json_string(s));
        }
    }
    if (json_array_size(cols) == 0) {
        json_decref(cols);
        return NULL;
    }
    json_t *r = json_deep_copy(reader);
    json_object_set_new(r, "columns", cols);
    return r;
}

/* ---- binding and applying ---------------------------------------------- */

orr_status wh_map_bind(wh_map *m, const wh_schema *src, orr_err *err)
{
    char q[160];
    wh_schema_free(&m->schema);
    for (size_t i = 0; i < m->n; i++) {
        wh_map_entry *e = &m->e[i];
        if (e->is_const) {
            wh_col *c = wh_schema_add(&m->schema, e->target, "constant", WH_K_TEXT);
            (void)c;
            continue;
        }
        size_t k;
        for (k = 0; k < src->ncols; k++)
            if (strcmp(src->cols[k].name, e->source) == 0)
                break;
        if (k == src->ncols) {
            snprintf(q, sizeof(q), "%s.mapping[%zu].source", m->path, i);
            wh_schema_free(&m->schema);
            return orr_err_set(err, ORR_EINVAL, q, "column %s is not read from the source",
                               e->source);
        }
        e->src_col = k;
        e->src_kind = src->cols[k].kind;
        wh_col *c = wh_schema_add(&m->schema, e->target, NULL, WH_K_TEXT);
        *c = src->cols[k];
        snprintf(c->name, sizeof(c->name), "%s", e->target);
        if (e->has_cast &&
            !(e->cast.kind == c->kind && (e->cast.kind != WH_K_INT || e->cast.bytes >= c->size))) {
            /* A type text no store uses: writers check every cast value. */
            snprintf(c->type, sizeof(c->type), "cast %s", wh_cast_name(&e->cast));
            c->kind = e->cast.kind;
            c->size = e->cast.kind == WH_K_INT ? e->cast.bytes : 0;
            c->scale = 0;
            c->is_unsigned = 0;
        }
    }
    return ORR_OK;
}

const wh_schema *wh_map_schema(const wh_map *m)
{
    return &m->schema;
}

size_t wh_map_count(const wh_map *m)
{
    return m->n;
}

const char *wh_map_target(const wh_map *m, size_t k)
{
    return k < m->n ? m->e[k].target : NULL;
}

orr_status wh_map_apply(const wh_map *m, wh_ctx *ctx, const char *side, const wh_batch *in,
                        wh_batch *out, orr_err *err)
{
    orr_buf tmp = ORR_BUF_INIT;
    char reason[400];
    orr_status rc = ORR_OK;
    wh_batch_reset(out, m->n);
    out->shard = in->shard;
    out->src_bytes = in->src_bytes;
    for (size_t r = 0; r < in->nrows; r++) {
        wh_batch_row_begin(out, in->rownum[r]);
        int bad = 0;
        for (size_t i = 0; i < m->n && !bad; i++) {
            const wh_map_entry *e = &m->e[i];
            if (e->is_const) {
                if (e->constant)
                    wh_batch_put(out, e->constant, strlen(e->constant));
                else
                    wh_batch_put_null(out);
                continue;
            }
            int64_t len;
            const char *v = wh_batch_val(in, r, e->src_col, &len);
            if (!v) {
                wh_batch_put_null(out);
                continue;
            }
            if (!e->has_cast) {
                wh_batch_put(out, v, (size_t)len);
                continue;
            }
            const char *why = NULL;
            orr_buf_reset(&tmp);
            if (!wh_cast_value(&e->cast, e->src_kind, v, (size_t)len, &tmp, &why)) {
                snprintf(reason, sizeof(reason), "%s.mapping[%zu] (column %s, cast %s): value %s",
                         m->path, i, e->target, wh_cast_name(&e->cast), why);
                bad = 1;
                break;
            }
            wh_batch_put(out, tmp.data ? tmp.data : "", tmp.len);
        }
        if (bad) {
            wh_batch_row_abort(out);
            if (wh_ctx_dirty(ctx, side, in, r, reason) != ORR_OK) {
                rc = orr_err_set(err, ORR_ETOOBIG, "max_dirty_rows", "too many dirty rows");
                break;
            }
            continue;
        }
        if (wh_batch_row_end(out) != ORR_OK) {
            rc = orr_err_set(err, ORR_ETOOBIG, m->path, "a mapped batch passed 4 GiB");
            break;
        }
    }
    orr_buf_free(&tmp);
    return rc;
}

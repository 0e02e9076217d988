/*
 * orr_tz.c - TZif reader, POSIX TZ rule expansion, local<->UTC mapping, the
 * zone cache, and the calendar/ISO-8601 helpers (see orr_tz.h).
 *
 * A zone is one allocation: the struct, then the transition table (at[i], the
 * instant from which off[i] is in force; ascending), then the name. off0 is in
 * force before at[0]. The table holds the file's transitions followed by those
 * generated from the footer rule through ORR_TZ_LAST_YEAR, with no-op entries
 * (same offset as the one before) removed, so a lookup is one binary search.
 *
 * In local coordinates, segment j (from at[j] to at[j+1], offset o_j) covers
 * the wall times [at[j] + o_j, at[j+1] + o_j). A wall time covered by no
 * segment is in a gap; one covered by two is in a fold. Offsets are bounded
 * by 26 hours, so the segments that can cover a wall time W start within
 * W +- 26 h: orr_tz_local_to_utc() visits only those.
 */
#include "orr_tz.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TZ_MAX_OFFSET (26 * 3600)
#define TZ_MAX_FILE   (1 << 20)
#define TZ_MAX_TIMES  100000
#define TZ_TIME_LIMIT (INT64_C(1) << 60) /* |transition| bound; real files use -2^59 */
#define TZ_FIELD      "timezone"
#define TZ_FIRST_YEAR 1800 /* footer rules are not expanded before this year */

struct orr_tz {
    const char *name;
    int32_t off0;
    size_t n;
    int64_t *at;
    int32_t *off;
    struct orr_tz *next; /* cache chain */
};

static orr_tz tz_utc_zone = {"UTC", 0, 0, NULL, NULL, NULL};

static pthread_mutex_t tz_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static orr_tz *tz_cache;

/* ------------------------------------------------------------------ calendar */

int orr_tz_is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int orr_tz_days_in_month(int64_t y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && orr_tz_is_leap(y))
        return 29;
    return dim[(m - 1) % 12];
}

/* Shift the year to start in March, so the leap day is the last day of a
 * "year"; count 400-year eras of 146097 days. */
int64_t orr_tz_days_from_civil(int64_t y, int m, int d)
{
    if (m <= 2)
        y--;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = m > 2 ? m - 3 : m + 9;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void orr_tz_civil_from_days(int64_t z, int64_t *year, int *month, int *day)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = yoe + era * 400 + (m <= 2);
    *month = m;
    *day = d;
}

int orr_tz_weekday(int64_t days)
{
    int64_t w = (days + 4) % 7; /* 1970-01-01 was a Thursday */
    return (int)(w < 0 ? w + 7 : w);
}

static int64_t tz_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* -------------------------------------------------------------- lookups */

/* Index of the last transition at or before t, or -1. */
static ptrdiff_t tz_segment(const orr_tz *tz, int64_t t)
{
    size_t lo = 0, hi = tz->n; /* answer + 1 in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tz->at[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static int32_t tz_seg_off(const orr_tz *tz, ptrdiff_t j)
{
    return j < 0 ? tz->off0 : tz->off[j];
}

const char *orr_tz_name(const orr_tz *tz)
{
    return tz->name;
}

int32_t orr_tz_offset(const orr_tz *tz, int64_t t)
{
    return tz_seg_off(tz, tz_segment(tz, t));
}

static int64_t tz_sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

void orr_tz_local_to_utc(const orr_tz *tz, int64_t w, orr_tz_map *out)
{
    memset(out, 0, sizeof(*out));
    int gap = 0;
    int64_t limit = tz_sat_add(w, TZ_MAX_OFFSET + 1);
    ptrdiff_t n = (ptrdiff_t)tz->n;
    for (ptrdiff_t j = tz_segment(tz, tz_sat_add(w, -TZ_MAX_OFFSET - 1)); j < n; j++) {
        if (j >= 0 && tz->at[j] > limit)
            break;
        int32_t o = tz_seg_off(tz, j);
        int after_start = j < 0 || tz->at[j] + o <= w;
        int before_end = j + 1 >= n || w < tz->at[j + 1] + o;
        if (after_start && before_end) {
            if (out->n == 0)
                out->fold_end = j + 1 < n ? tz->at[j + 1] + o : INT64_MAX;
            if (out->n < 2)
                out->utc[out->n++] = w - o;
        } else if (!after_start && !gap && tz->at[j] + tz_seg_off(tz, j - 1) <= w) {
            gap = 1;
            out->gap_end = tz->at[j];
        }
    }
    if (out->n == 0 && !gap) {
        /* Unreachable for a well-formed table; answer something monotonic. */
        out->n = 1;
        out->utc[0] = w - orr_tz_offset(tz, w);
    }
    if (out->n != 2)
        out->fold_end = 0;
}

/* ------------------------------------------------------------ POSIX TZ */

struct tz_rule {
    char kind; /* 'J' (1-365, no Feb 29), 'N' (0-365), 'M' (month.week.day) */
    int a, b, c;
    int32_t time; /* local seconds after midnight; may be negative or > 24 h */
};

struct tz_posix {
    int32_t std_off, dst_off; /* seconds east of UTC */
    int has_dst;
    struct tz_rule start, end;
};

static int tz_num(const char **p, int maxdigits, int *out)
{
    int v = 0, nd = 0;
    while (**p >= '0' && **p <= '9' && nd < maxdigits) {
        v = v * 10 + (**p - '0');
        (*p)++;
        nd++;
    }
    if (nd == 0)
        return -1;
    *out = v;
    return 0;
}

/* [+-]hh[:mm[:ss]] as seconds; maxh bounds the hours. */
static int tz_hms(const char **p, int maxh, int32_t *out)
{
    int sign = 1, h, m = 0, s = 0;
    if (**p == '+' || **p == '-') {
        sign = **p == '-' ? -1 : 1;
        (*p)++;
    }
    if (tz_num(p, 3, &h) || h > maxh)
        return -1;
    if (**p == ':') {
        (*p)++;
        if (tz_num(p, 2, &m) || m > 59)
            return -1;
        if (**p == ':') {
            (*p)++;
            if (tz_num(p, 2, &s) || s > 59)
                return -1;
        }
    }
    *out = sign * (h * 3600 + m * 60 + s);
    return 0;
}

static int tz_abbr(const char **p)
{
    const char *s = *p;
    if (*s == '<') {
        s++;
        while (*s && *s != '>') {
            if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
                  (*s >= '0' && *s <= '9') || *s == '+' || *s == '-'))
                return -1;
            s++;
        }
        if (*s != '>' || s - *p < 4)
            return -1;
        *p = s + 1;
        return 0;
    }
    while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))
        s++;
    if (s - *p < 3)
        return -1;
    *p = s;
    return 0;
}

static int tz_rule(const char **p, struct tz_rule *r)
{
    r->time = 7200;
    if (**p == 'J') {
        (*p)++;
        r->kind = 'J';
        if (tz_num(p, 3, &r->a) || r->a < 1 || r->a > 365)
            return -1;
    } else if (**p == 'M') {
        (*p)++;
        r->kind = 'M';
        if (tz_num(p, 2, &r->a) || r->a < 1 || r->a > 12 || *(*p)++ != '.')
            return -1;
        if (tz_num(p, 1, &r->b) || r->b < 1 || r->b > 5 || *(*p)++ != '.')
            return -1;
        if (tz_num(p, 1, &r->c) || r->c > 6)
            return -1;
    } else {
        r->kind = 'N';
        if (tz_num(p, 3, &r->a) || r->a > 365)
            return -1;
    }
    if (**p == '/') {
        (*p)++;
        if (tz_hms(p, 167, &r->time))
            return -1;
    }
    return 0;
}

/* Parse a POSIX TZ string as found in TZif footers. 0 on success. */
static int tz_posix_parse(const char *s, struct tz_posix *pz)
{
    memset(pz, 0, sizeof(*pz));
    int32_t v;
    if (tz_abbr(&s) || tz_hms(&s, 24, &v))
        return -1;
    pz->std_off = -v;
    if (*s == '\0')
        return 0;
    if (tz_abbr(&s))
        return -1;
    pz->has_dst = 1;
    pz->dst_off = pz->std_off + 3600;
    if (*s != ',' && *s != '\0') {
        if (tz_hms(&s, 24, &v))
            return -1;
        pz->dst_off = -v;
    }
    if (*s++ != ',' || tz_rule(&s, &pz->start) || *s++ != ',' || tz_rule(&s, &pz->end))
        return -1;
    return *s == '\0' ? 0 : -1;
}

/* The local instant (wall seconds) at which rule r fires in year y. */
static int64_t tz_rule_local(const struct tz_rule *r, int64_t y)
{
    int64_t days;
    if (r->kind == 'J') {
        days = orr_tz_days_from_civil(y, 1, 1) + r->a - 1;
        if (orr_tz_is_leap(y) && r->a >= 60)
            days++;
    } else if (r->kind == 'N') {
        days = orr_tz_days_from_civil(y, 1, 1) + r->a;
    } else {
        int64_t first = orr_tz_days_from_civil(y, r->a, 1);
        int day = 1 + (r->c - orr_tz_weekday(first) + 7) % 7 + 7 * (r->b - 1);
        while (day > orr_tz_days_in_month(y, r->a))
            day -= 7;
        days = first + day - 1;
    }
    return days * 86400 + r->time;
}

/* ---------------------------------------------------------------- TZif */

struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chr;
};

static uint32_t tz_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t tz_be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)tz_be32(p) << 32 | tz_be32(p + 4));
}

/* Read a 44-byte header at p; returns the version (1-4) or -1. */
static int tzif_header(const uint8_t *p, size_t len, struct tzif_counts *c)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0)
        return -1;
    int version = p[4] == 0 ? 1 : (p[4] >= '2' && p[4] <= '4') ? p[4] - '0' : -1;
    c->isut = tz_be32(p + 20);
    c->isstd = tz_be32(p + 24);
    c->leap = tz_be32(p + 28);
    c->time = tz_be32(p + 32);
    c->type = tz_be32(p + 36);
    c->chr = tz_be32(p + 40);
    return version;
}

static size_t tzif_block_len(const struct tzif_counts *c, size_t tsz)
{
    return (size_t)c->time * (tsz + 1) + (size_t)c->type * 6 + c->chr +
           (size_t)c->leap * (tsz + 4) + c->isstd + c->isut;
}

static orr_status tz_bad(orr_err *err, const char *name, const char *what)
{
    return orr_err_set(err, ORR_EINVAL, TZ_FIELD, "time zone \"%.100s\": malformed TZif data: %s",
                       name, what);
}

/* Append transition (t, o) to the table being built, keeping it ascending:
 * an entry at the same instant as the last one replaces its offset. */
static void tz_push(orr_tz *tz, size_t cap, int64_t t, int32_t o)
{
    if (tz->n > 0 && t < tz->at[tz->n - 1])
        return;
    if (tz->n > 0 && t == tz->at[tz->n - 1]) {
        tz->off[tz->n - 1] = o;
        return;
    }
    if (tz->n < cap) {
        tz->at[tz->n] = t;
        tz->off[tz->n] = o;
        tz->n++;
    }
}

orr_status orr_tz_parse(const char *name, const void *data, size_t len, orr_tz **out, orr_err *err)
{
    const uint8_t *p = data;
    struct tzif_counts c;
    *out = NULL;
    int version = tzif_header(p, len, &c);
    if (version < 0)
        return tz_bad(err, name, "bad magic or version");
    size_t tsz = 4, pos = 44;
    if (version >= 2) {
        size_t skip = tzif_block_len(&c, 4);
        if (c.time > TZ_MAX_TIMES || c.type > 256 || c.chr > 65536 || c.leap > 65536 ||
            skip > len - 44)
            return tz_bad(err, name, "truncated version 1 block");
        pos = 44 + skip;
        if (tzif_header(p + pos, len - pos, &c) != version)
            return tz_bad(err, name, "bad second header");
        pos += 44;
        tsz = 8;
    }
    if (c.time > TZ_MAX_TIMES || c.type == 0 || c.type > 256 || c.chr > 65536)
        return tz_bad(err, name, "counts out of range");
    if (c.leap != 0)
        return orr_err_set(err, ORR_EINVAL, TZ_FIELD,
                           "time zone \"%.100s\" counts leap seconds; use a zone without them",
                           name);
    if ((c.isstd != 0 && c.isstd != c.type) || (c.isut != 0 && c.isut != c.type))
        return tz_bad(err, name, "indicator counts do not match the type count");
    size_t blen = tzif_block_len(&c, tsz);
    if (blen > len - pos)
        return tz_bad(err, name, "truncated data block");
    const uint8_t *times = p + pos;
    const uint8_t *idx = times + (size_t)c.time * tsz;
    const uint8_t *types = idx + c.time;

    struct tz_posix pz;
    int has_footer = 0;
    if (version >= 2) {
        const char *f = (const char *)p + pos + blen;
        size_t flen = len - pos - blen;
        const char *nl = flen > 1 && f[0] == '\n' ? memchr(f + 1, '\n', flen - 1) : NULL;
        if (!nl)
            return tz_bad(err, name, "missing footer");
        char footer[128];
        size_t fl = (size_t)(nl - f - 1);
        if (fl >= sizeof(footer))
            return tz_bad(err, name, "footer too long");
        memcpy(footer, f + 1, fl);
        footer[fl] = '\0';
        if (fl > 0) {
            if (memchr(footer, '\0', fl) || tz_posix_parse(footer, &pz) != 0)
                return tz_bad(err, name, "bad POSIX TZ footer");
            has_footer = 1;
        }
    }
    for (uint32_t i = 0; i < c.type; i++) {
        int32_t o = (int32_t)tz_be32(types + 6 * i);
        if (o < -TZ_MAX_OFFSET || o > TZ_MAX_OFFSET || types[6 * i + 4] > 1)
            return tz_bad(err, name, "bad local time type");
    }

    /* Capacity: file transitions plus two per expanded year. */
    int64_t first_year = TZ_FIRST_YEAR;
    if (c.time > 0) {
        int64_t last = tsz == 8 ? tz_be64(times + (c.time - 1) * 8)
                                : (int32_t)tz_be32(times + (c.time - 1) * 4);
        int64_t y;
        int m, d;
        if (last > -TZ_TIME_LIMIT && last < TZ_TIME_LIMIT) {
            orr_tz_civil_from_days(tz_floor_div(last, 86400), &y, &m, &d);
            first_year = y - 1 > TZ_FIRST_YEAR ? y - 1 : TZ_FIRST_YEAR;
        }
    }
    size_t years = has_footer && pz.has_dst && first_year <= ORR_TZ_LAST_YEAR
                       ? (size_t)(ORR_TZ_LAST_YEAR - first_year + 1)
                       : 0;
    size_t cap = c.time + 2 * years;
    size_t nlen = strlen(name) + 1;
    size_t size = sizeof(orr_tz) + cap * sizeof(int64_t) + cap * sizeof(int32_t) + nlen;
    orr_tz *tz = calloc(1, size); /* sized from the file: refused, not fatal */
    if (!tz)
        return orr_err_set(err, ORR_ENOMEM, TZ_FIELD, "time zone \"%s\": out of memory (%zu bytes)",
                           name, size);
    tz->at = (int64_t *)(tz + 1);
    tz->off = (int32_t *)(tz->at + cap);
    char *nm = (char *)(tz->off + cap);
    memcpy(nm, name, nlen);
    tz->name = nm;
    tz->off0 = (int32_t)tz_be32(types);

    for (uint32_t i = 0; i < c.time; i++) {
        int64_t t = tsz == 8 ? tz_be64(times + 8 * i) : (int32_t)tz_be32(times + 4 * i);
        if (idx[i] >= c.type || t <= -TZ_TIME_LIMIT || t >= TZ_TIME_LIMIT ||
            (tz->n > 0 && t <= tz->at[tz->n - 1])) {
            free(tz);
            return tz_bad(err, name, "bad transition");
        }
        tz->at[tz->n] = t;
        tz->off[tz->n] = (int32_t)tz_be32(types + 6 * idx[i]);
        tz->n++;
    }
    if (has_footer && c.time == 0)
        tz->off0 = pz.std_off;
    if (years) {
        int64_t last = tz->n ? tz->at[tz->n - 1] : INT64_MIN;
        for (int64_t y = first_year; y <= ORR_TZ_LAST_YEAR; y++) {
            int64_t s = tz_rule_local(&pz.start, y) - pz.std_off;
            int64_t e = tz_rule_local(&pz.end, y) - pz.dst_off;
            int64_t t1 = s < e ? s : e, t2 = s < e ? e : s;
            int32_t o1 = s < e ? pz.dst_off : pz.std_off, o2 = s < e ? pz.std_off : pz.dst_off;
            if (t1 > last)
                tz_push(tz, cap, t1, o1);
            if (t2 > last)
                tz_push(tz, cap, t2, o2);
        }
    }
    /* Drop transitions that change nothing. */
    size_t w = 0;
    for (size_t i = 0; i < tz->n; i++) {
        int32_t prev = w ? tz->off[w - 1] : tz->off0;
        if (tz->off[i] == prev)
            continue;
        tz->at[w] = tz->at[i];
        tz->off[w] = tz->off[i];
        w++;
    }
    tz->n = w;
    *out = tz;
    return ORR_OK;
}

void orr_tz_free(orr_tz *tz)
{
    if (tz && tz != &tz_utc_zone)
        free(tz);
}

const orr_tz *orr_tz_utc(void)
{
    return &tz_utc_zone;
}

static int tz_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200 || name[0] == '/' || name[n - 1] == '/' || strstr(name, "..") ||
        strstr(name, "//"))
        return 0;
    for (const char *s = name; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '/' || *s == '_' || *s == '-' || *s == '+' || *s == '.'))
            return 0;
    return 1;
}

static orr_status tz_read_file(const char *name, orr_tz **out, orr_err *err)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", ORR_TZ_DIR, name);
    orr_status rc = ORR_OK;
    uint8_t *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return orr_err_set(err, ORR_ENOTFOUND, TZ_FIELD, "unknown time zone \"%s\"", name);
        return orr_err_set(err, ORR_EIO, TZ_FIELD, "time zone \"%s\": %s", name, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = orr_err_set(err, ORR_ENOTFOUND, TZ_FIELD, "unknown time zone \"%s\"", name);
        goto done;
    }
    if (st.st_size > TZ_MAX_FILE) {
        rc = orr_err_set(err, ORR_EINVAL, TZ_FIELD, "time zone \"%s\": file too large", name);
        goto done;
    }
    size_t len = (size_t)st.st_size, got = 0;
    buf = malloc(len ? len : 1);
    if (!buf) {
        rc = orr_err_set(err, ORR_ENOMEM, TZ_FIELD, "time zone \"%s\": out of memory (%zu bytes)",
                         name, len);
        goto done;
    }
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = orr_err_set(err, ORR_EIO, TZ_FIELD, "time zone \"%s\": short read", name);
            goto done;
        }
        got += (size_t)r;
    }
    rc = orr_tz_parse(name, buf, len, out, err);
done:
    free(buf);
    close(fd);
    return rc;
}

orr_status orr_tz_load(const char *name, const orr_tz **out, orr_err *err)
{
    *out = NULL;
    if (!name || !tz_name_ok(name))
        return orr_err_set(err, ORR_EINVAL, TZ_FIELD, "invalid time zone name \"%.100s\"",
                           name ? name : "");
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
        *out = &tz_utc_zone;
        return ORR_OK;
    }
    orr_status rc = ORR_OK;
    pthread_mutex_lock(&tz_cache_lock);
    for (orr_tz *z = tz_cache; z; z = z->next) {
        if (strcmp(z->name, name) == 0) {
            *out = z;
            goto unlock;
        }
    }
    orr_tz *z = NULL;
    rc = tz_read_file(name, &z, err);
    if (rc == ORR_OK) {
        z->next = tz_cache;
        tz_cache = z;
        *out = z;
    }
unlock:
    pthread_mutex_unlock(&tz_cache_lock);
    return rc;
}

void orr_tz_cache_clear(void)
{
    pthread_mutex_lock(&tz_cache_lock);
    while (tz_cache) {
        orr_tz *z = tz_cache;
        tz_cache = z->next;
        free(z);
    }
    pthread_mutex_unlock(&tz_cache_lock);
}

/* ----------------------------------------------------------- ISO-8601 */

static int iso_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

orr_status orr_tz_parse_iso8601(const char *s, int64_t *out, orr_err *err)
{
    const char *p = s;
    int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, sign = 0;
    if (iso_digits(&p, 4, &y) || *p++ != '-' || iso_digits(&p, 2, &mo) || *p++ != '-' ||
        iso_digits(&p, 2, &d))
        goto bad;
    if (mo < 1 || mo > 12 || d < 1 || d > orr_tz_days_in_month(y, mo))
        return orr_err_set(err, ORR_EINVAL, NULL, "\"%.60s\": no such date", s);
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (iso_digits(&p, 2, &h) || *p++ != ':' || iso_digits(&p, 2, &mi))
            goto bad;
        if (*p == ':') {
            p++;
            if (iso_digits(&p, 2, &sec))
                goto bad;
            if (*p == '.' || *p == ',') {
                p++;
                if (*p < '0' || *p > '9')
                    goto bad;
                while (*p >= '0' && *p <= '9')
                    p++;
            }
        }
        if (h > 23 || mi > 59 || sec > 59)
            return orr_err_set(err, ORR_EINVAL, NULL, "\"%.60s\": no such time of day", s);
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            sign = *p++ == '-' ? -1 : 1;
            if (iso_digits(&p, 2, &oh))
                goto bad;
            if (*p == ':')
                p++; /* "+HH:MM": minutes are then required */
            if ((*p || p[-1] == ':') && iso_digits(&p, 2, &om))
                goto bad;
            if (oh > 23 || om > 59)
                return orr_err_set(err, ORR_EINVAL, NULL, "\"%.60s\": bad UTC offset", s);
        }
    }
    if (*p != '\0')
        goto bad;
    *out = orr_tz_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
           (int64_t)sign * (oh * 3600 + om * 60);
    return ORR_OK;
bad:
    return orr_err_set(err, ORR_EINVAL, NULL,
                       "\"%.60s\" is not an ISO-8601 date-time (e.g. 2026-03-29T00:30:00Z)", s);
}

char *orr_tz_format_utc(int64_t t, char *buf, size_t n)
{
    int64_t days = tz_floor_div(t, 86400), rem = t - days * 86400, y;
    int m, d;
    orr_tz_civil_from_days(days, &y, &m, &d);
    snprintf(buf, n, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d, (int)(rem / 3600),
             (int)(rem / 60 % 60), (int)(rem % 60));
    return buf;
}

/*
 * wh_types.c - value kinds, schemas, shard lists, and the check of one
 * canonical value against a target column (what makes a row "dirty" before
 * a store refuses it in the middle of a load).
 */
#include "orr_alloc.h"
#include "wh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const wh_kind_names[] = {
    [WH_K_TEXT] = "text",
    [WH_K_INT] = "int",
    [WH_K_NUMERIC] = "numeric",
    [WH_K_FLOAT] = "float",
    [WH_K_BOOL] = "bool",
    [WH_K_DATE] = "date",
    [WH_K_TIME] = "time",
    [WH_K_TIMESTAMP] = "timestamp",
    [WH_K_TIMESTAMPTZ] = "timestamptz",
    [WH_K_BYTES] = "bytes",
    [WH_K_JSON] = "json",
    [WH_K_ARRAY] = "array",
    [WH_K_OTHER] = "other",
};

const char *wh_kind_name(wh_kind k)
{
    if ((unsigned)k >= sizeof(wh_kind_names) / sizeof(wh_kind_names[0]))
        return "other";
    return wh_kind_names[k];
}

int wh_kind_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(wh_kind_names) / sizeof(wh_kind_names[0]); i++)
        if (strcmp(wh_kind_names[i], name) == 0)
            return (int)i;
    return -1;
}

wh_col *wh_schema_add(wh_schema *s, const char *name, const char *type, wh_kind kind)
{
    wh_col *v = orr_xrealloc(s->cols, (s->ncols + 1) * sizeof(*v));
    s->cols = v;
    wh_col *c = &v[s->ncols++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->type, sizeof(c->type), "%s", type ? type : wh_kind_name(kind));
    c->kind = kind;
    return c;
}

void wh_schema_free(wh_schema *s)
{
    free(s->cols);
    s->cols = NULL;
    s->ncols = 0;
}

static char *wh_strdup_or_null(const char *s)
{
    if (!s)
        return NULL;
    return orr_xstrdup(s);
}

void wh_shards_add(wh_shards *s, const char *pred, const char *table, const char *path)
{
    wh_shard *v = orr_xrealloc(s->v, (s->n + 1) * sizeof(*v));
    s->v = v;
    wh_shard *sh = &v[s->n];
    sh->id = s->n++;
    sh->pred = wh_strdup_or_null(pred);
    sh->table = wh_strdup_or_null(table);
    sh->path = wh_strdup_or_null(path);
}

void wh_shards_free(wh_shards *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].pred);
        free(s->v[i].table);
        free(s->v[i].path);
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* ---- value checks ----------------------------------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Count UTF-8 characters; -1 if the bytes are not valid UTF-8 or hold NUL. */
static int64_t utf8_chars(const unsigned char *s, size_t n)
{
    int64_t chars = 0;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t k;
        uint32_t cp;
        if (c == 0)
            return -1;
        if (c < 0x80) {
            i++;
            chars++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            k = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3;
            cp = c & 0x07;
        } else {
            return -1;
        }
        if (i + k >= n)
            return -1;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return -1;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return -1;
        i += k + 1;
        chars++;
    }
    return chars;
}

static int check_int(const wh_col *c, const char *p, size_t n)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    if (i == n)
        return 0;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (!is_digit(p[i]))
            return 0;
        uint64_t dig = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - dig) / 10)
            return 0;
        v = v * 10 + dig;
    }
    int bytes = c->size ? c->size : 8;
    if (c->is_unsigned) {
        if (neg && v != 0)
            return 0;
        return bytes >= 8 || v <= ((uint64_t)1 << (bytes * 8)) - 1;
    }
    uint64_t lim = (uint64_t)1 << (bytes * 8 - 1); /* |min| */
    return neg ? v <= lim : v < lim;
}

static int check_numeric(const wh_col *c, const char *p, size_t n)
{
    /* PostgreSQL: NaN fits any numeric, infinities only one without a
     * precision. */
    if ((n == 3 && strncasecmp(p, "NaN", 3) == 0))
        return 1;
    if ((n == 8 && strncasecmp(p, "Infinity", 8) == 0) ||
        (n == 9 && (strncasecmp(p, "-Infinity", 9) == 0 || strncasecmp(p, "+Infinity", 9) == 0)))
        return c->size == 0;
    size_t i = 0;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        i++;
    size_t int_digits = 0, frac_digits = 0;
    int leading = 1;
    for (; i < n && is_digit(p[i]); i++) {
        if (leading && p[i] == '0')
            continue;
        leading = 0;
        int_digits++;
    }
    size_t seen_int = i;
    if (i < n && p[i] == '.') {
        i++;
        for (; i < n && is_digit(p[i]); i++)
            frac_digits++;
    }
    if (seen_int == 0 && frac_digits == 0)
        return 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        /* Exponents are rare in exchanged data: accept the syntax, skip the
         * precision check. */
        i++;
        if (i < n && (p[i] == '-' || p[i] == '+'))
            i++;
        if (i == n || !is_digit(p[i]))
            return 0;
        while (i < n && is_digit(p[i]))
            i++;
        return i == n;
    }
    if (i != n)
        return 0;
    if (c->size > 0 && int_digits > (size_t)(c->size - c->scale))
        return 0;
    return 1;
}

static int check_float(const char *p, size_t n)
{
    char tmp[64];
    if (n == 0 || n >= sizeof(tmp))
        return 0;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    if (strcasecmp(tmp, "NaN") == 0 || strcasecmp(tmp, "Infinity") == 0 ||
        strcasecmp(tmp, "-Infinity") == 0)
        return 1;
    char *end;
    (void)strtod(tmp, &end);
    return end == tmp + n && !(tmp[0] == ' ');
}

static int check_bool(const char *p, size_t n)
{
    static const char *const ok[] = {"t",  "f",  "true", "false", "1", "0", "yes",
                                     "no", "on", "off",  "y",     "n", NULL};
    for (const char *const *o = ok; *o; o++)
        if (strlen(*o) == n && strncasecmp(*o, p, n) == 0)
            return 1;
    return 0;
}

static int num2(const char *p)
{
    return is_digit(p[0]) && is_digit(p[1]) ? (p[0] - '0') * 10 + (p[1] - '0') : -1;
}

/* YYYY-MM-DD at p (the year 4 to 7 digits); returns bytes used or 0, the
 * year, month and day in *y, *m, *d. */
static size_t scan_ymd(const char *p, size_t n, int *y, int *m, int *d)
{
    size_t i = 0;
    while (i < n && is_digit(p[i]) && i < 7)
        i++;
    if (i < 4 || i + 6 > n || p[i] != '-' || p[i + 3] != '-')
        return 0;
    char ybuf[8];
    memcpy(ybuf, p, i);
    ybuf[i] = 0;
    *y = atoi(ybuf);
    *m = num2(p + i + 1);
    *d = num2(p + i + 4);
    return i + 6;
}

/* The date at p is a real day: month and day in range, February 29 only in
 * a leap year (proleptic Gregorian; year y BC is year 1 - y). */
static int valid_day(int y, int m, int d, int bc)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
        return 0;
    if (bc && y == 0)
        return 0; /* there is no year 0 BC */
    int ay = bc ? 1 - y : y;
    if (m == 2 && d == 29 && !((ay % 4 == 0 && ay % 100 != 0) || ay % 400 == 0))
        return 0;
    return 1;
}

/* PostgreSQL's range of dates and timestamps: from 4714-11-24 BC to year
 * 5874897 (date) or 294276 (timestamp). Year 0 is refused like PostgreSQL
 * refuses it. */
static int in_pg_range(int y, int m, int d, int bc, int is_date)
{
    if (bc)
        return y < 4714 || (y == 4714 && (m > 11 || (m == 11 && d >= 24)));
    if (y == 0)
        return 0;
    return y <= (is_date ? 5874897 : 294276);
}

static int is_infinity(const char *p, size_t n)
{
    return (n == 8 && strncasecmp(p, "infinity", 8) == 0) ||
           (n == 9 && (strncasecmp(p, "-infinity", 9) == 0 || strncasecmp(p, "+infinity", 9) == 0));
}

/* A trailing " BC" (the era PostgreSQL prints for dates before year 1):
 * returns 1 and shortens *n when present. */
static int strip_bc(const char *p, size_t *n)
{
    if (*n >= 3 && strncasecmp(p + *n - 3, " BC", 3) == 0) {
        *n -= 3;
        return 1;
    }
    if (*n >= 3 && strncasecmp(p + *n - 3, " AD", 3) == 0)
        *n -= 3;
    return 0;
}

static int check_date(const char *p, size_t n)
{
    if (is_infinity(p, n))
        return 1;
    int bc = strip_bc(p, &n);
    int y, m, d;
    if (scan_ymd(p, n, &y, &m, &d) != n)
        return 0;
    return valid_day(y, m, d, bc) && in_pg_range(y, m, d, bc, 1);
}

/* HH:MM[:SS[.f...]] at p; returns bytes used or 0. */
static size_t scan_time(const char *p, size_t n)
{
    if (n < 5 || p[2] != ':')
        return 0;
    int h = num2(p), m = num2(p + 3);
    if (h < 0 || h > 24 || m < 0 || m > 59)
        return 0;
    size_t i = 5;
    if (i + 3 <= n && p[i] == ':') {
        int s = num2(p + i + 1);
        if (s < 0 || s > 60)
            return 0;
        i += 3;
        if (i < n && p[i] == '.') {
            i++;
            size_t f = i;
            while (i < n && is_digit(p[i]))
                i++;
            if (i == f)
                return 0;
        }
    }
    return i;
}

/* Optional zone: Z, +HH, +HH:MM, +HHMM. */
static int scan_zone(const char *p, size_t n)
{
    if (n == 0)
        return 1;
    if (n == 1 && (p[0] == 'Z' || p[0] == 'z'))
        return 1;
    if (p[0] != '+' && p[0] != '-')
        return 0;
    if (n == 3)
        return num2(p + 1) >= 0;
    if (n == 6)
        return num2(p + 1) >= 0 && p[3] == ':' && num2(p + 4) >= 0;
    if (n == 5)
        return num2(p + 1) >= 0 && num2(p + 3) >= 0;
    if (n == 9)
        return num2(p + 1) >= 0 && p[3] == ':' && num2(p + 4) >= 0 && p[6] == ':' &&
               num2(p + 7) >= 0;
    return 0;
}

static int check_timestamp(const char *p, size_t n, int tz)
{
    if (is_infinity(p, n))
        return 1;
    int bc = strip_bc(p, &n);
    int y, m, dd;
    size_t d = scan_ymd(p, n, &y, &m, &dd);
    if (!d || !valid_day(y, m, dd, bc) || !in_pg_range(y, m, dd, bc, 0))
        return 0;
    if (d == n)
        return 1;
    if (p[d] != ' ' && p[d] != 'T')
        return 0;
    size_t t = scan_time(p + d + 1, n - d - 1);
    if (!t)
        return 0;
    size_t rest = d + 1 + t;
    (void)tz; /* a zone on a timestamp without one is ignored by the stores */
    return scan_zone(p + rest, n - rest);
}

/* time or timetz: HH:MM[:SS[.f]] and an optional zone (PostgreSQL ignores
 * a zone given for a time without one). A MariaDB TIME (its type does not
 * say "time zone" as PostgreSQL's do) is a duration from -838:59:59 to
 * 838:59:59[.ffffff]; a zone after it is the writer's to judge. */
static int check_time(const wh_col *c, const char *p, size_t n)
{
    if (strncmp(c->type, "time", 4) == 0 && !strstr(c->type, "time zone")) {
        size_t i = 0;
        if (i < n && p[i] == '-')
            i++;
        size_t h0 = i;
        while (i < n && is_digit(p[i]) && i - h0 < 3)
            i++;
        if (i - h0 < 2 || i - h0 > 3 || i + 6 > n || p[i] != ':' || p[i + 3] != ':')
            return 0;
        char hb[4] = {0};
        memcpy(hb, p + h0, i - h0);
        int h = atoi(hb), m = num2(p + i + 1), sec = num2(p + i + 4);
        if (h > 838 || m < 0 || m > 59 || sec < 0 || sec > 59)
            return 0;
        size_t j = i + 6;
        if (j < n && p[j] == '.') {
            size_t f = ++j;
            while (j < n && is_digit(p[j]))
                j++;
            if (j == f || j - f > 6)
                return 0;
        }
        /* 838:59:59 is the end: no fraction past it. */
        if (h == 838 && m == 59 && sec == 59 && j > i + 7 && strspn(p + i + 7, "0") != j - i - 7)
            return 0;
        return scan_zone(p + j, n - j); /* a zone: the writer keeps only UTC */
    }
    size_t t = scan_time(p, n);
    return t && scan_zone(p + t, n - t);
}

static int check_bytes(const char *p, size_t n)
{
    if (n >= 2 && p[0] == '\\' && p[1] == 'x') {
        if ((n - 2) % 2)
            return 0;
        for (size_t i = 2; i < n; i++) {
            char c = p[i];
            if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                return 0;
        }
        return 1;
    }
    /* The escape form: text where a backslash is doubled or starts three
     * octal digits. */
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\\')
            continue;
        if (i + 1 < n && p[i + 1] == '\\') {
            i++;
            continue;
        }
        if (i + 3 < n && p[i + 1] >= '0' && p[i + 1] <= '3' && p[i + 2] >= '0' && p[i + 2] <= '7' &&
            p[i + 3] >= '0' && p[i + 3] <= '7') {
            i += 3;
            continue;
        }
        return 0;
    }
    return utf8_chars((const unsigned char *)p, n) >= 0;
}

int wh_value_check(const wh_col *c, const char *p, int64_t len, const char **reason)
{
    if (len < 0) {
        if (c->not_null) {
            *reason = "NULL in a NOT NULL column";
            return 0;
        }
        return 1;
    }
    size_t n = (size_t)len;
    switch (c->kind) {
    case WH_K_INT:
        if (!check_int(c, p, n)) {
            *reason = "not an integer of the column's range";
            return 0;
        }
        return 1;
    case WH_K_NUMERIC:
        if (!check_numeric(c, p, n)) {
            *reason = "not a number of the column's precision";
            return 0;
        }
        return 1;
    case WH_K_FLOAT:
        if (!check_float(p, n)) {
            *reason = "not a floating-point number";
            return 0;
        }
        return 1;
    case WH_K_BOOL:
        if (!check_bool(p, n)) {
            *reason = "not a boolean";
            return 0;
        }
        return 1;
    case WH_K_DATE:
        if (!check_date(p, n)) {
            *reason = "not a date (YYYY-MM-DD[ BC], infinity, -infinity)";
            return 0;
        }
        return 1;
    case WH_K_TIME:
        if (!check_time(c, p, n)) {
            *reason = "not a time (HH:MM:SS[.ffffff][+zone])";
            return 0;
        }
        return 1;
    case WH_K_TIMESTAMP:
    case WH_K_TIMESTAMPTZ:
        if (!check_timestamp(p, n, c->kind == WH_K_TIMESTAMPTZ)) {
            *reason = "not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff][+zone][ BC])";
            return 0;
        }
        return 1;
    case WH_K_BYTES:
        if (!check_bytes(p, n)) {
            *reason = "not bytes (\\x and an even number of hex digits)";
            return 0;
        }
        return 1;
    default:
        break;
    }
    int64_t chars = utf8_chars((const unsigned char *)p, n);
    if (chars < 0) {
        *reason = "not valid UTF-8 text (or holds a NUL byte)";
        return 0;
    }
    if (c->kind == WH_K_TEXT && c->size > 0 && chars > c->size) {
        *reason = "text longer than the column allows";
        return 0;
    }
    return 1;
}

/* ---- bit strings ------------------------------------------------------ */

int wh_bits_valid(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != '0' && p[i] != '1')
            return 0;
    return 1;
}

size_t wh_bits_significant(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] == '0')
        i++;
    return n - i;
}

void wh_bits_from_bytes(const unsigned char *v, size_t nbytes, size_t nbits, char *out)
{
    /* The value is big-endian in nbytes; its low nbits bits are the string. */
    for (size_t i = 0; i < nbits; i++) {
        size_t bit = nbits - 1 - i; /* bit number from the least significant */
        size_t byte = bit / 8;
        out[i] = byte < nbytes && (v[nbytes - 1 - byte] >> (bit % 8)) & 1 ? '1' : '0';
    }
}

size_t wh_bits_to_hex(const char *p, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    size_t nbytes = (n + 7) / 8, pad = nbytes * 8 - n, o = 0;
    out[o++] = '\\';
    out[o++] = 'x';
    for (size_t b = 0; b < nbytes; b++) {
        unsigned v = 0;
        for (size_t k = 0; k < 8; k++) {
            size_t pos = b * 8 + k; /* in the padded string */
            v = (v << 1) | (pos >= pad && p[pos - pad] == '1');
        }
        out[o++] = hx[v >> 4];
        out[o++] = hx[v & 15];
    }
    return o;
}

int wh_bits_to_int(const char *p, size_t n, int bytes, char *out, size_t *outlen)
{
    if (wh_bits_significant(p, n) > (size_t)(bytes * 8 - 1))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 1) | (uint64_t)(p[i] == '1');
    *outlen = (size_t)snprintf(out, 24, "%llu", (unsigned long long)v);
    return 1;
}

/*
 * orr_cron.c - cron parser and next-fire computation (see orr_cron.h).
 *
 * Parsing copies the expression into a stack buffer, splits it into fields
 * in place, walks each field's list items, and sets bits; nothing is
 * allocated except the one block orr_cron_parse() returns.
 *
 * Next fire works in two steps:
 *   1. cron_next_local(): the first matching wall time >= a lower bound, by
 *      walking year -> month -> day -> hour -> minute -> second. Each level
 *      finds its next allowed value with a bit scan; when a level runs out,
 *      the level above advances by one and everything below resets. The day
 *      level uses a per-month mask (day_mask) that folds in L, L-n, nW, LW,
 *      xL, x#n and the day-of-month/day-of-week combination rule.
 *   2. orr_cron_next(): map that wall time to UTC (gap -> gap end, fold ->
 *      first occurrence). The map is monotonic, so the first wall time whose
 *      instant is after the query is the answer. The only wall times after
 *      local(query) whose instant is not after it are first-pass times of a
 *      fold whose second pass contains the query; the search then resumes at
 *      the fold's end. Scheduled times inside one gap share the instant at
 *      which the gap ends, so a later query starting there skips them: the gap
 *      fires once.
 */
#include "orr_cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, F_YEAR, F_COUNT };

static const char *const cron_field_names[F_COUNT] = {
    "second", "minute", "hour", "day-of-month", "month", "day-of-week", "year",
};

static const char *const cron_months[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                            "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const cron_days[7] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

#define CRON_DOM_ALL  0xFFFFFFFEu /* bits 1-31 */
#define CRON_DOW_ALL  0x7Fu
#define CRON_NYEARS   (ORR_CRON_YEAR_MAX - ORR_CRON_YEAR_MIN + 1)
#define CRON_MAX_ITER 200000 /* safety net; the walk needs ~10 steps a year */

/* Parser state for one expression. */
struct cron_parser {
    orr_cron *c;
    orr_err *err;
    int unix_dialect;
    int f;            /* field being parsed (F_*) */
    int lo, hi;       /* the field's external range */
    const char *text; /* the field's text */
};

static char cron_up(char ch)
{
    return (ch >= 'a' && ch <= 'z') ? (char)(ch - 'a' + 'A') : ch;
}

static int cron_is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int cron_is_alpha(char ch)
{
    ch = cron_up(ch);
    return ch >= 'A' && ch <= 'Z';
}

static int cron_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

static orr_status cron_fail(struct cron_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static orr_status cron_fail(struct cron_parser *p, const char *fmt, ...)
{
    char msg[sizeof(p->err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return orr_err_set(p->err, ORR_EINVAL, cron_field_names[p->f], "%s", msg);
}

/* Internal bit for external value v of the current field. */
static void cron_set(struct cron_parser *p, int v)
{
    orr_cron *c = p->c;
    switch (p->f) {
    case F_SEC:
        c->sec |= UINT64_C(1) << v;
        break;
    case F_MIN:
        c->min |= UINT64_C(1) << v;
        break;
    case F_HOUR:
        c->hour |= UINT32_C(1) << v;
        break;
    case F_DOM:
        c->dom |= UINT32_C(1) << v;
        break;
    case F_MON:
        c->mon |= (uint16_t)(1u << v);
        break;
    case F_DOW:
        c->dow |= (uint8_t)(1u << (p->unix_dialect ? v % 7 : v - 1));
        break;
    default:
        c->year[(v - ORR_CRON_YEAR_MIN) / 64] |= UINT64_C(1) << ((v - ORR_CRON_YEAR_MIN) % 64);
        break;
    }
}

/* 0 = Sunday for an external day-of-week value. */
static int cron_weekday(const struct cron_parser *p, int v)
{
    return p->unix_dialect ? v % 7 : v - 1;
}

/* Read a plain number (for L-n, #n, steps): up to 9 digits. */
static int cron_digits(const char **s, int *out)
{
    const char *t = *s;
    long v = 0;
    while (cron_is_digit(*t) && t - *s < 10) {
        v = v * 10 + (*t - '0');
        t++;
    }
    if (t == *s || cron_is_digit(*t) || t - *s > 9)
        return -1;
    *out = (int)v;
    *s = t;
    return 0;
}

/* A value of the current field: a number in range or a name. */
static orr_status cron_value(struct cron_parser *p, const char *item, const char **s, int *v)
{
    const char *t = *s;
    if (cron_is_digit(*t)) {
        const char *e = t;
        while (cron_is_digit(*e))
            e++;
        int n;
        if (cron_digits(s, &n) != 0 || n < p->lo || n > p->hi)
            return cron_fail(p, "\"%.*s\" out of range %d-%d", (int)(e - t > 20 ? 20 : e - t), t,
                             p->lo, p->hi);
        *v = n;
        return ORR_OK;
    }
    if (cron_is_alpha(*t)) {
        const char *e = t;
        while (cron_is_alpha(*e))
            e++;
        int len = (int)(e - t > 20 ? 20 : e - t);
        const char *const *names = p->f == F_MON ? cron_months : p->f == F_DOW ? cron_days : NULL;
        int count = p->f == F_MON ? 12 : 7;
        if (!names)
            return cron_fail(p, "\"%.*s\" is not a number", len, t);
        for (int i = 0; names && e - t >= 3 && i < count; i++) {
            if (cron_up(t[0]) == names[i][0] && cron_up(t[1]) == names[i][1] &&
                cron_up(t[2]) == names[i][2]) {
                *v = p->f == F_MON ? i + 1 : (p->unix_dialect ? i : i + 1);
                *s = t + 3;
                return ORR_OK;
            }
        }
        return cron_fail(p, "unknown %s name \"%.*s\" (use %s)", p->f == F_MON ? "month" : "day",
                         len, t, p->f == F_MON ? "JAN-DEC" : "SUN-SAT");
    }
    if (*t == '\0')
        return cron_fail(p, "missing value in \"%s\"", item);
    return cron_fail(p, "unexpected \"%c\" in \"%s\"", *t, item);
}

static orr_status cron_trailing(struct cron_parser *p, const char *s, const char *item)
{
    if (*s == '\0')
        return ORR_OK;
    return cron_fail(p, "unexpected \"%.20s\" in \"%s\"", s, item);
}

/* L, L-n, LW in day-of-month; s points after the L. */
static orr_status cron_dom_last(struct cron_parser *p, const char *s, const char *item)
{
    if (*s == '\0') {
        p->c->dom_last |= 1u;
        return ORR_OK;
    }
    if (cron_up(*s) == 'W' && s[1] == '\0') {
        p->c->flags |= ORR_CRON_F_DOM_LW;
        return ORR_OK;
    }
    if (*s != '-')
        return cron_fail(p, "unexpected \"%.20s\" after L in \"%s\" (use L, L-n or LW)", s, item);
    s++;
    int n;
    if (cron_digits(&s, &n) != 0 || n > 30)
        return cron_fail(p, "\"%s\": days before the last must be 0-30", item);
    p->c->dom_last |= UINT32_C(1) << n;
    return cron_trailing(p, s, item);
}

/* One list item of the current field. */
static orr_status cron_item(struct cron_parser *p, const char *item)
{
    const char *s = item;
    int a, b, step = 1, ranged = 0;
    orr_status rc;
    if (*s == '\0')
        return cron_fail(p, "empty item in list \"%s\"", p->text);
    if (*s == '*') {
        a = p->lo;
        b = p->hi;
        ranged = 1;
        s++;
    } else if (p->f == F_DOM && cron_up(*s) == 'L') {
        return cron_dom_last(p, s + 1, item);
    } else if (p->f == F_DOW && cron_up(*s) == 'L' && s[1] == '\0') {
        p->c->dow |= 1u << 6; /* L alone: the last day of the week */
        return ORR_OK;
    } else {
        if ((rc = cron_value(p, item, &s, &a)) != ORR_OK)
            return rc;
        b = a;
        if (*s == '-') {
            s++;
            if ((rc = cron_value(p, item, &s, &b)) != ORR_OK)
                return rc;
            ranged = 1;
        } else if (p->f == F_DOM && cron_up(*s) == 'W') {
            p->c->dom_w |= UINT32_C(1) << a;
            return cron_trailing(p, s + 1, item);
        } else if (p->f == F_DOW && cron_up(*s) == 'L') {
            p->c->dow_last |= (uint8_t)(1u << cron_weekday(p, a));
            return cron_trailing(p, s + 1, item);
        } else if (p->f == F_DOW && *s == '#') {
            s++;
            int n;
            if (cron_digits(&s, &n) != 0 || n < 1 || n > 5)
                return cron_fail(p, "\"%s\": occurrence after # must be 1-5", item);
            p->c->dow_nth[cron_weekday(p, a)] |= (uint8_t)(1u << n);
            return cron_trailing(p, s, item);
        }
    }
    if (*s == '/') {
        s++;
        const char *st = s;
        int span = p->hi - p->lo + 1;
        if (cron_digits(&s, &step) != 0 || step < 1 || step > span) {
            while (cron_is_digit(*s))
                s++;
            if (s == st)
                return cron_fail(p, "missing step after \"/\" in \"%s\"", item);
            return cron_fail(p, "step \"%.*s\" in \"%s\" out of range 1-%d",
                             (int)(s - st > 20 ? 20 : s - st), st, item, span);
        }
        if (!ranged)
            b = p->hi;
    }
    if ((rc = cron_trailing(p, s, item)) != ORR_OK)
        return rc;
    /* a..b, wrapping past the maximum when a > b. */
    int span = p->hi - p->lo + 1;
    int len = (b - a + span) % span + 1;
    for (int k = 0; k < len; k += step)
        cron_set(p, p->lo + (a - p->lo + k) % span);
    return ORR_OK;
}

static orr_status cron_field(struct cron_parser *p, int f, const char *text)
{
    static const int lo[F_COUNT] = {0, 0, 0, 1, 1, 1, ORR_CRON_YEAR_MIN};
    static const int hi[F_COUNT] = {59, 59, 23, 31, 12, 7, ORR_CRON_YEAR_MAX};
    p->f = f;
    p->lo = f == F_DOW && p->unix_dialect ? 0 : lo[f];
    p->hi = hi[f];
    p->text = text;
    if (strchr(text, '?')) {
        if (f != F_DOM && f != F_DOW)
            return cron_fail(p, "\"?\" is only allowed in day-of-month and day-of-week");
        if (strcmp(text, "?") != 0)
            return cron_fail(p, "\"?\" must be the whole field, not part of \"%s\"", text);
        if (f == F_DOM) {
            p->c->dom = CRON_DOM_ALL;
            p->c->flags |= ORR_CRON_F_DOM_STAR;
        } else {
            p->c->dow = CRON_DOW_ALL;
            p->c->flags |= ORR_CRON_F_DOW_STAR;
        }
        return ORR_OK;
    }
    char item[ORR_CRON_MAX_LEN + 1];
    for (const char *s = text;;) {
        size_t n = strcspn(s, ",");
        memcpy(item, s, n);
        item[n] = '\0';
        orr_status rc = cron_item(p, item);
        if (rc != ORR_OK)
            return rc;
        if (s[n] == '\0')
            return ORR_OK;
        s += n + 1;
    }
}

static const struct {
    const char *name, *expr;
} cron_macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

orr_status orr_cron_parse_into(const char *expr, orr_cron *c, orr_err *err)
{
    struct cron_parser p = {c, err, 0, F_SEC, 0, 0, ""};
    char buf[ORR_CRON_MAX_LEN + 1];
    char *fields[8];
    int nf = 0;
    memset(c, 0, sizeof(*c));
    if (!expr)
        return orr_err_set(err, ORR_EINVAL, "expression", "missing cron expression");
    size_t len = strnlen(expr, ORR_CRON_MAX_LEN + 1);
    if (len > ORR_CRON_MAX_LEN)
        return orr_err_set(err, ORR_EINVAL, "expression", "longer than %d bytes", ORR_CRON_MAX_LEN);
    memcpy(buf, expr, len + 1);
    char *s = buf;
    while (cron_is_space(*s))
        s++;
    if (*s == '@') {
        char *e = s;
        while (*e && !cron_is_space(*e))
            e++;
        size_t n = (size_t)(e - s);
        while (cron_is_space(*e))
            e++;
        const char *m = NULL;
        for (size_t i = 0; *e == '\0' && i < sizeof(cron_macros) / sizeof(cron_macros[0]); i++)
            if (strlen(cron_macros[i].name) == n && strncasecmp(s, cron_macros[i].name, n) == 0)
                m = cron_macros[i].expr;
        if (!m)
            return orr_err_set(err, ORR_EINVAL, "expression",
                               "unknown macro \"%.40s\" (use @yearly, @monthly, @weekly, @daily "
                               "or @hourly)",
                               s);
        snprintf(buf, sizeof(buf), "%s", m);
        s = buf;
    }
    while (*s) {
        if (nf == 8)
            break;
        fields[nf++] = s;
        while (*s && !cron_is_space(*s))
            s++;
        if (*s)
            *s++ = '\0';
        while (cron_is_space(*s))
            s++;
    }
    if (nf < 5 || nf > 7)
        return orr_err_set(err, ORR_EINVAL, "expression",
                           "expected 5 fields (Unix: minute hour day-of-month month "
                           "day-of-week) or 6-7 (Quartz: second minute hour day-of-month month "
                           "day-of-week [year]), got %s%d",
                           nf == 8 ? "more than " : "", nf == 8 ? 7 : nf);
    p.unix_dialect = nf == 5;
    int first = p.unix_dialect ? F_MIN : F_SEC;
    if (p.unix_dialect) {
        c->flags |= ORR_CRON_F_UNIX;
        c->sec = 1;
    }
    for (int i = 0; i < nf; i++) {
        orr_status rc = cron_field(&p, first + i, fields[i]);
        if (rc != ORR_OK)
            return rc;
    }
    if (nf != 7) { /* every year: bits 0 .. CRON_NYEARS-1 */
        for (int w = 0; w < 4; w++)
            c->year[w] = CRON_NYEARS >= 64 * (w + 1) ? ~UINT64_C(0)
                         : CRON_NYEARS > 64 * w      ? (UINT64_C(1) << (CRON_NYEARS - 64 * w)) - 1
                                                     : 0;
    }
    int dom_q = strcmp(fields[3 - (p.unix_dialect ? 1 : 0)], "?") == 0;
    int dow_q = strcmp(fields[5 - (p.unix_dialect ? 1 : 0)], "?") == 0;
    p.f = F_DOW;
    if (dom_q && dow_q)
        return cron_fail(&p, "\"?\" cannot be used in both day-of-month and day-of-week");
    if (p.unix_dialect) {
        /* Vixie cron: a field starting with "*" is unconstrained for the
         * OR rule, even when a step follows the star. */
        if (fields[2][0] == '*')
            c->flags |= ORR_CRON_F_DOM_STAR;
        if (fields[4][0] == '*')
            c->flags |= ORR_CRON_F_DOW_STAR;
    } else if (!dom_q && !dow_q) {
        return cron_fail(&p, "one of day-of-month and day-of-week must be \"?\" (e.g. \"0 0 12 * "
                             "* ?\" or \"0 0 12 ? * MON\")");
    }
    return ORR_OK;
}

orr_status orr_cron_parse(const char *expr, orr_cron **out, orr_err *err)
{
    orr_cron c;
    *out = NULL;
    orr_status rc = orr_cron_parse_into(expr, &c, err);
    if (rc != ORR_OK)
        return rc;
    *out = orr_xmalloc(sizeof(c));
    **out = c;
    return ORR_OK;
}

void orr_cron_free(orr_cron *c)
{
    free(c);
}

int orr_cron_is_unix(const orr_cron *c)
{
    return (c->flags & ORR_CRON_F_UNIX) != 0;
}

/* ------------------------------------------------------------ next fire */

/* The lowest set bit of mask at or above from, with from <= maxbit; -1 if none. */
static int cron_next_bit(uint64_t mask, int from, int maxbit)
{
    if (from > maxbit)
        return -1;
    uint64_t m = mask >> from;
    return m ? from + __builtin_ctzll(m) : -1;
}

static int cron_next_year(const orr_cron *c, int64_t y)
{
    if (y < ORR_CRON_YEAR_MIN || y > ORR_CRON_YEAR_MAX)
        return -1;
    int i = (int)(y - ORR_CRON_YEAR_MIN);
    for (int w = i / 64; w < 4; w++) {
        uint64_t m = c->year[w];
        if (w == i / 64)
            m &= ~UINT64_C(0) << (i % 64);
        if (m) {
            int v = w * 64 + __builtin_ctzll(m);
            return v < CRON_NYEARS ? ORR_CRON_YEAR_MIN + v : -1;
        }
    }
    return -1;
}

/* The days of month (y, m) that match, as bits 1-31. */
static uint32_t cron_day_mask(const orr_cron *c, int64_t y, int m)
{
    int nd = orr_tz_days_in_month(y, m);
    uint32_t valid = (uint32_t)(((UINT64_C(1) << (nd + 1)) - 1) & ~UINT64_C(1));
    int wd1 = orr_tz_weekday(orr_tz_days_from_civil(y, m, 1)); /* weekday of the 1st */
    int wdl = (wd1 + nd - 1) % 7;                              /* of the last day */

    uint32_t dm = c->dom & valid;
    for (uint32_t b = c->dom_last; b; b &= b - 1) {
        int d = nd - __builtin_ctz(b);
        if (d >= 1)
            dm |= UINT32_C(1) << d;
    }
    for (uint32_t b = c->dom_w; b; b &= b - 1) {
        int d = __builtin_ctz(b);
        if (d > nd)
            continue;
        int wd = (wd1 + d - 1) % 7;
        if (wd == 6)
            d = d == 1 ? 3 : d - 1;
        else if (wd == 0)
            d = d == nd ? d - 2 : d + 1;
        dm |= UINT32_C(1) << d;
    }
    if (c->flags & ORR_CRON_F_DOM_LW) {
        int d = nd - (wdl == 6 ? 1 : wdl == 0 ? 2 : 0);
        dm |= UINT32_C(1) << d;
    }

    uint32_t wm = 0;
    if ((c->dow & CRON_DOW_ALL) == CRON_DOW_ALL) {
        wm = valid;
    } else {
        for (int d = 1, wd = wd1; d <= nd; d++, wd = wd == 6 ? 0 : wd + 1)
            if (c->dow & (1u << wd))
                wm |= UINT32_C(1) << d;
    }
    for (int wd = 0; wd < 7; wd++) {
        if (c->dow_last & (1u << wd))
            wm |= UINT32_C(1) << (nd - (wdl - wd + 7) % 7);
        for (uint32_t b = c->dow_nth[wd]; b; b &= b - 1) {
            int d = 1 + (wd - wd1 + 7) % 7 + 7 * (__builtin_ctz(b) - 1);
            if (d <= nd)
                wm |= UINT32_C(1) << d;
        }
    }

    int star = c->flags & (ORR_CRON_F_DOM_STAR | ORR_CRON_F_DOW_STAR);
    if ((c->flags & ORR_CRON_F_UNIX) && !star)
        return dm | wm;
    return dm & wm;
}

static int64_t cron_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The first matching wall time >= lb into *w: 1 found, 0 none before the end
 * of ORR_CRON_YEAR_MAX. */
static int cron_next_local(const orr_cron *c, int64_t lb, int64_t *w)
{
    int64_t days = cron_floor_div(lb, 86400), rem = lb - days * 86400, y;
    int mo, d, h = (int)(rem / 3600), mi = (int)(rem / 60 % 60), s = (int)(rem % 60);
    orr_tz_civil_from_days(days, &y, &mo, &d);
    if (y < ORR_CRON_YEAR_MIN) {
        y = ORR_CRON_YEAR_MIN;
        mo = d = 1;
        h = mi = s = 0;
    }
    int64_t mask_y = -1;
    int mask_m = -1;
    uint32_t dmask = 0;
    for (int iter = 0; iter < CRON_MAX_ITER; iter++) {
        int64_t ny = cron_next_year(c, y);
        if (ny < 0)
            return 0;
        if (ny != y) {
            y = ny;
            mo = d = 1;
            h = mi = s = 0;
        }
        int nm = cron_next_bit(c->mon, mo, 12);
        if (nm < 0) {
            y++;
            mo = d = 1;
            h = mi = s = 0;
            continue;
        }
        if (nm != mo) {
            mo = nm;
            d = 1;
            h = mi = s = 0;
        }
        if (mask_y != y || mask_m != mo) {
            dmask = cron_day_mask(c, y, mo);
            mask_y = y;
            mask_m = mo;
        }
        int nd = cron_next_bit(dmask, d, 31);
        if (nd < 0) {
            if (++mo > 12) {
                mo = 1;
                y++;
            }
            d = 1;
            h = mi = s = 0;
            continue;
        }
        if (nd != d) {
            d = nd;
            h = mi = s = 0;
        }
        int nh = cron_next_bit(c->hour, h, 23);
        if (nh < 0) {
            d++;
            h = mi = s = 0;
            continue;
        }
        if (nh != h) {
            h = nh;
            mi = s = 0;
        }
        int nmi = cron_next_bit(c->min, mi, 59);
        if (nmi < 0) {
            h++;
            mi = s = 0;
            continue;
        }
        if (nmi != mi) {
            mi = nmi;
            s = 0;
        }
        int ns = cron_next_bit(c->sec, s, 59);
        if (ns < 0) {
            mi++;
            s = 0;
            continue;
        }
        *w = orr_tz_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + ns;
        return 1;
    }
    return 0;
}

orr_status orr_cron_check(const char *expr, const char *zone, int64_t after_utc, orr_err *err)
{
    orr_cron c;
    const orr_tz *tz = NULL;
    orr_err e; /* the inner error, re-labelled into err */
    orr_status rc;
    int64_t next;
    char at[32];
    int has_expr = expr && expr[0];
    orr_err_clear(&e);
    if (has_expr && orr_cron_parse_into(expr, &c, &e) != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, "schedule", "%.60s: %.300s", e.field, e.msg);
    if ((rc = orr_tz_load(zone ? zone : "UTC", &tz, &e)) != ORR_OK)
        return orr_err_set(err, rc == ORR_EIO ? ORR_EIO : ORR_EINVAL, "timezone", "%s", e.msg);
    if (has_expr && orr_cron_next(&c, tz, after_utc, &next) != ORR_OK)
        return orr_err_set(
            err, ORR_EINVAL, "schedule", "never fires after %s (searched through %d in %s)",
            orr_tz_format_utc(after_utc, at, sizeof at), ORR_CRON_YEAR_MAX, orr_tz_name(tz));
    return ORR_OK;
}

orr_status orr_cron_next(const orr_cron *c, const orr_tz *tz, int64_t after_utc, int64_t *next_utc)
{
    /* Beyond these bounds no wall time of years 1970-2199 can follow. */
    const int64_t lo = -INT64_C(86400) * 2, hi = INT64_C(7289654400); /* 2201-01-01 */
    if (!tz)
        tz = orr_tz_utc();
    if (after_utc >= hi)
        return ORR_ENOTFOUND;
    int64_t a = after_utc < lo ? lo : after_utc;
    int64_t lb = a + orr_tz_offset(tz, a) + 1;
    for (int i = 0; i < 64; i++) {
        int64_t w;
        if (!cron_next_local(c, lb, &w))
            return ORR_ENOTFOUND;
        orr_tz_map m;
        orr_tz_local_to_utc(tz, w, &m);
        int64_t t = m.n == 0 ? m.gap_end : m.utc[0];
        if (t > after_utc) {
            *next_utc = t;
            return ORR_OK;
        }
        /* w is in the first pass of a fold whose second pass holds after_utc. */
        lb = m.n == 2 && m.fold_end > w ? m.fold_end : w + 1;
    }
    return ORR_EINTERNAL;
}

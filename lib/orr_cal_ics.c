/*
 * orr_cal_ics.c - the days an iCalendar file's events cover (see
 * orr_cal_ics.h).
 *
 * One pass over the unfolded content lines: a VEVENT's properties are
 * collected, and at its END the event is expanded. A rule is expanded day by
 * day from DTSTART: a day is an occurrence when it lies in a period the
 * INTERVAL selects and passes every BYxxx filter (with RFC 5545's defaults
 * taken from DTSTART when a rule has none); COUNT counts from DTSTART, so
 * occurrences before from_day still use up the count.
 */
#include "orr_cal_ics.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_tz.h"

#define ICS_MAX_LINE 8192
#define ICS_MAX_LIST 64

typedef enum { F_NONE, F_DAILY, F_WEEKLY, F_MONTHLY, F_YEARLY } ics_freq;

typedef struct {
    ics_freq freq;
    int interval;
    long count;      /* 0 = none */
    int64_t until;   /* last day, INT64_MAX = none */
    int bymonth[13]; /* bymonth[m] */
    int n_bymonth;
    int bymday[ICS_MAX_LIST], n_bymday;
    int byday_wd[ICS_MAX_LIST], byday_ord[ICS_MAX_LIST], n_byday; /* wd 0 = Sunday */
} ics_rule;

typedef struct {
    int in_event;
    int line_start; /* of DTSTART, for errors after END */
    int has_start, has_end, start_is_date, end_is_date;
    int64_t start, end; /* days */
    int64_t start_tod, end_tod;
    int64_t dur_days;
    int has_dur;
    int has_rule;
    ics_rule rule;
    int64_t exdate[ICS_MAX_LIST];
    int n_exdate;
    char summary[256];
} ics_event;

static orr_status line_err(orr_err *err, int line, const char *fmt, const char *what)
{
    return orr_err_set(err, ORR_EINVAL, "body", "line %d: %s%.80s", line, fmt, what ? what : "");
}

/* "YYYYMMDD" or "YYYYMMDDTHHMMSS[Z]": day, and seconds into it (-1 for a date). */
static int parse_dt(const char *v, int64_t *day, int64_t *tod)
{
    size_t n = strlen(v);
    for (size_t i = 0; i < 8; i++)
        if (i >= n || !isdigit((unsigned char)v[i]))
            return -1;
    int y = (v[0] - '0') * 1000 + (v[1] - '0') * 100 + (v[2] - '0') * 10 + (v[3] - '0');
    int m = (v[4] - '0') * 10 + (v[5] - '0'), d = (v[6] - '0') * 10 + (v[7] - '0');
    if (y < 1 || m < 1 || m > 12 || d < 1 || d > orr_tz_days_in_month(y, m))
        return -1;
    *day = orr_tz_days_from_civil(y, m, d);
    *tod = -1;
    if (n == 8)
        return 0;
    if (n < 15 || n > 16 || v[8] != 'T' || (n == 16 && v[15] != 'Z'))
        return -1;
    for (size_t i = 9; i < 15; i++)
        if (!isdigit((unsigned char)v[i]))
            return -1;
    int hh = (v[9] - '0') * 10 + (v[10] - '0'), mm = (v[11] - '0') * 10 + (v[12] - '0');
    int ss = (v[13] - '0') * 10 + (v[14] - '0');
    if (hh > 23 || mm > 59 || ss > 60)
        return -1;
    *tod = hh * 3600 + mm * 60 + ss;
    return 0;
}

/* "P1D", "PT2H", "P1W", "P1DT12H": whole seconds. */
static int parse_duration(const char *v, int64_t *secs)
{
    const char *p = v;
    int64_t total = 0;
    if (*p == '+')
        p++;
    if (*p++ != 'P')
        return -1;
    int in_time = 0, any = 0;
    while (*p) {
        if (*p == 'T') {
            in_time = 1;
            p++;
            continue;
        }
        if (!isdigit((unsigned char)*p))
            return -1;
        int64_t n = 0;
        while (isdigit((unsigned char)*p) && n < 100000000)
            n = n * 10 + (*p++ - '0');
        char u = *p++;
        if (u == 'W' && !in_time)
            total += n * 7 * 86400;
        else if (u == 'D' && !in_time)
            total += n * 86400;
        else if (u == 'H' && in_time)
            total += n * 3600;
        else if (u == 'M' && in_time)
            total += n * 60;
        else if (u == 'S' && in_time)
            total += n;
        else
            return -1;
        any = 1;
    }
    if (!any)
        return -1;
    *secs = total;
    return 0;
}

static int weekday_code(const char *s)
{
    static const char *const names[] = {"SU", "MO", "TU", "WE", "TH", "FR", "SA"};
    for (int i = 0; i < 7; i++)
        if (strncmp(s, names[i], 2) == 0 && s[2] == '\0')
            return i;
    return -1;
}

static orr_status parse_rule(char *v, ics_rule *r, int line, orr_err *err)
{
    memset(r, 0, sizeof *r);
    r->interval = 1;
    r->until = INT64_MAX;
    char *save = NULL;
    for (char *part = strtok_r(v, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(part, '=');
        if (!eq)
            return line_err(err, line, "RRULE: part without '=': ", part);
        *eq = '\0';
        char *val = eq + 1;
        if (strcmp(part, "FREQ") == 0) {
            r->freq = strcmp(val, "DAILY") == 0     ? F_DAILY
                      : strcmp(val, "WEEKLY") == 0  ? F_WEEKLY
                      : strcmp(val, "MONTHLY") == 0 ? F_MONTHLY
                      : strcmp(val, "YEARLY") == 0  ? F_YEARLY
                                                    : F_NONE;
            if (r->freq == F_NONE)
                return line_err(err, line, "RRULE: FREQ not supported (DAILY to YEARLY): ", val);
        } else if (strcmp(part, "INTERVAL") == 0) {
            char *end;
            long n = strtol(val, &end, 10);
            if (*end || n < 1 || n > 1000)
                return line_err(err, line, "RRULE: INTERVAL must be 1-1000: ", val);
            r->interval = (int)n;
        } else if (strcmp(part, "COUNT") == 0) {
            char *end;
            long n = strtol(val, &end, 10);
            if (*end || n < 1 || n > 1000000)
                return line_err(err, line, "RRULE: COUNT must be 1-1000000: ", val);
            r->count = n;
        } else if (strcmp(part, "UNTIL") == 0) {
            int64_t tod;
            if (parse_dt(val, &r->until, &tod) != 0)
                return line_err(err, line, "RRULE: UNTIL is not a date: ", val);
        } else if (strcmp(part, "BYMONTH") == 0 || strcmp(part, "BYMONTHDAY") == 0 ||
                   strcmp(part, "BYDAY") == 0) {
            char *s2 = NULL;
            for (char *it = strtok_r(val, ",", &s2); it; it = strtok_r(NULL, ",", &s2)) {
                char *end;
                if (part[2] == 'M' && part[7] == '\0') { /* BYMONTH */
                    long m = strtol(it, &end, 10);
                    if (*end || m < 1 || m > 12)
                        return line_err(err, line, "RRULE: BYMONTH must be 1-12: ", it);
                    r->bymonth[m] = 1;
                    r->n_bymonth++;
                } else if (part[2] == 'M') { /* BYMONTHDAY */
                    long d = strtol(it, &end, 10);
                    if (*end || d == 0 || d < -31 || d > 31 || r->n_bymday == ICS_MAX_LIST)
                        return line_err(err, line,
                                        "RRULE: BYMONTHDAY must be 1-31 or -31--1: ", it);
                    r->bymday[r->n_bymday++] = (int)d;
                } else { /* BYDAY */
                    long ord = 0;
                    size_t l = strlen(it);
                    if (l > 2) {
                        char wd[3] = {it[l - 2], it[l - 1], 0};
                        it[l - 2] = '\0';
                        ord = strtol(it, &end, 10);
                        if (*end || ord == 0 || ord < -53 || ord > 53)
                            return line_err(err, line,
                                            "RRULE: BYDAY ordinal must be 1-53 or -53--1: ", it);
                        memcpy(it, wd, 3);
                    }
                    int w = weekday_code(it);
                    if (w < 0 || r->n_byday == ICS_MAX_LIST)
                        return line_err(err, line, "RRULE: BYDAY must be MO to SU: ", it);
                    r->byday_wd[r->n_byday] = w;
                    r->byday_ord[r->n_byday++] = (int)ord;
                }
            }
        } else if (strcmp(part, "WKST") == 0) {
            if (weekday_code(val) < 0)
                return line_err(err, line, "RRULE: WKST must be MO to SU: ", val);
        } else {
            return line_err(err, line, "RRULE: part not supported: ", part);
        }
    }
    if (r->freq == F_NONE)
        return line_err(err, line, "RRULE: FREQ is missing", NULL);
    return ORR_OK;
}

static int month_index(int64_t day)
{
    int64_t y;
    int m, d;
    orr_tz_civil_from_days(day, &y, &m, &d);
    return (int)(y * 12 + m - 1);
}

/* Does day pass the rule's filters (its period aside)? */
static int rule_matches(const ics_rule *r, int64_t start, int64_t day)
{
    int64_t y, sy;
    int m, d, sm, sd;
    orr_tz_civil_from_days(day, &y, &m, &d);
    orr_tz_civil_from_days(start, &sy, &sm, &sd);
    int wd = orr_tz_weekday(day);
    int dim = orr_tz_days_in_month(y, m);
    if (r->n_bymonth && !r->bymonth[m])
        return 0;
    if (r->n_bymday) {
        int ok = 0;
        for (int i = 0; i < r->n_bymday && !ok; i++)
            ok = r->bymday[i] > 0 ? r->bymday[i] == d : dim + 1 + r->bymday[i] == d;
        if (!ok)
            return 0;
    }
    if (r->n_byday) {
        int ok = 0;
        int in_year = r->freq == F_YEARLY && !r->n_bymonth;
        int64_t yday = day - orr_tz_days_from_civil(y, 1, 1);
        int ylen = orr_tz_is_leap(y) ? 366 : 365;
        for (int i = 0; i < r->n_byday && !ok; i++) {
            if (r->byday_wd[i] != wd)
                continue;
            int o = r->byday_ord[i];
            if (o == 0 || r->freq == F_DAILY || r->freq == F_WEEKLY)
                ok = 1;
            else if (in_year)
                ok = o > 0 ? yday / 7 + 1 == o : (ylen - 1 - yday) / 7 + 1 == -o;
            else
                ok = o > 0 ? (d - 1) / 7 + 1 == o : (dim - d) / 7 + 1 == -o;
        }
        if (!ok)
            return 0;
    }
    /* RFC 5545 defaults from DTSTART */
    if (r->freq == F_WEEKLY && !r->n_byday && wd != orr_tz_weekday(start))
        return 0;
    if (r->freq == F_MONTHLY && !r->n_byday && !r->n_bymday && d != sd)
        return 0;
    if (r->freq == F_YEARLY && !r->n_byday && !r->n_bymday) {
        if (d != sd || (!r->n_bymonth && m != sm))
            return 0;
    }
    return 1;
}

static int rule_period_ok(const ics_rule *r, int64_t start, int64_t day)
{
    switch (r->freq) {
    case F_DAILY:
        return (day - start) % r->interval == 0;
    case F_WEEKLY: {
        /* weeks start on Monday */
        int64_t ws = start - (orr_tz_weekday(start) + 6) % 7;
        int64_t wdy = day - (orr_tz_weekday(day) + 6) % 7;
        return ((wdy - ws) / 7) % r->interval == 0;
    }
    case F_MONTHLY:
        return (month_index(day) - month_index(start)) % r->interval == 0;
    case F_YEARLY:
        return (month_index(day) / 12 - month_index(start) / 12) % r->interval == 0;
    default:
        return 0;
    }
}

static orr_status emit_span(const ics_event *e, int64_t first, int64_t span, int64_t from,
                            int64_t to, orr_ics_day_fn fn, void *ctx, orr_err *err)
{
    for (int i = 0; i < e->n_exdate; i++)
        if (e->exdate[i] == first)
            return ORR_OK;
    for (int64_t d = first; d < first + span; d++)
        if (d >= from && d <= to && fn(ctx, d, e->summary, err) != 0)
            return err && err->code != ORR_OK ? err->code : ORR_EINVAL;
    return ORR_OK;
}

static orr_status expand_event(const ics_event *e, int64_t from, int64_t to, orr_ics_day_fn fn,
                               void *ctx, orr_err *err)
{
    if (!e->has_start)
        return line_err(err, e->line_start, "VEVENT without DTSTART", NULL);
    int64_t span = 1;
    if (e->has_end) {
        if (e->start_is_date && e->end_is_date)
            span = e->end - e->start;
        else {
            int64_t s = e->start * 86400 + (e->start_tod < 0 ? 0 : e->start_tod);
            int64_t t = e->end * 86400 + (e->end_tod < 0 ? 0 : e->end_tod);
            span = t <= s ? 1 : (t - 1) / 86400 - e->start + 1;
        }
    } else if (e->has_dur) {
        int64_t s = e->start_tod < 0 ? 0 : e->start_tod;
        span = e->dur_days <= 0 ? 1 : (s + e->dur_days - 1) / 86400 + 1;
    }
    if (span < 1)
        return line_err(err, e->line_start, "DTEND is before DTSTART", NULL);
    if (span > 366)
        return line_err(err, e->line_start, "an event longer than 366 days", NULL);
    if (!e->has_rule)
        return emit_span(e, e->start, span, from, to, fn, ctx, err);
    const ics_rule *r = &e->rule;
    long n = 0;
    int64_t last = r->until < to ? r->until : to;
    /* without COUNT nothing before the range matters */
    int64_t d0 = !r->count && from - span > e->start ? from - span : e->start;
    for (int64_t d = d0; d <= last; d++) {
        if (!rule_period_ok(r, e->start, d) || !rule_matches(r, e->start, d))
            continue;
        if (r->count && n >= r->count)
            break;
        n++;
        if (n > ORR_ICS_MAX_OCCURRENCES && d >= from)
            return line_err(err, e->line_start, "RRULE: more than 5000 occurrences in the range",
                            NULL);
        orr_status s = emit_span(e, d, span, from, to, fn, ctx, err);
        if (s != ORR_OK)
            return s;
    }
    return ORR_OK;
}

/* Split "NAME;PARAM=x:VALUE": name upper-cased in place; *params; *value. */
static int split_prop(char *l, char **params, char **value)
{
    char *colon = NULL;
    int quoted = 0;
    for (char *p = l; *p; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == ':' && !quoted) {
            colon = p;
            break;
        }
    }
    if (!colon)
        return -1;
    *colon = '\0';
    *value = colon + 1;
    char *semi = strchr(l, ';');
    *params = semi ? semi + 1 : l + strlen(l);
    if (semi)
        *semi = '\0';
    for (char *p = l; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return l[0] ? 0 : -1;
}

static orr_status handle_prop(ics_event *e, int *depth, int *seen_cal, char *l, int line,
                              int64_t from, int64_t to, orr_ics_day_fn fn, void *ctx, orr_err *err)
{
    char *params, *v;
    if (split_prop(l, &params, &v) != 0)
        return line_err(err, line, "not a property NAME:VALUE", NULL);
    if (strcmp(l, "BEGIN") == 0) {
        if (*depth == 0 && strcmp(v, "VCALENDAR") != 0)
            return line_err(err, line, "the file must start with BEGIN:VCALENDAR, not ", v);
        if (*depth == 0)
            *seen_cal = 1;
        if (++*depth > 8)
            return line_err(err, line, "components nested too deep", NULL);
        if (strcmp(v, "VEVENT") == 0) {
            if (e->in_event)
                return line_err(err, line, "VEVENT inside VEVENT", NULL);
            memset(e, 0, sizeof *e);
            e->in_event = *depth;
            e->line_start = line;
        }
        return ORR_OK;
    }
    if (*depth == 0)
        return line_err(err, line, "the file must start with BEGIN:VCALENDAR", NULL);
    if (strcmp(l, "END") == 0) {
        if (e->in_event == *depth) {
            if (strcmp(v, "VEVENT") != 0)
                return line_err(err, line, "END does not match BEGIN:VEVENT: ", v);
            e->in_event = 0;
            orr_status s = expand_event(e, from, to, fn, ctx, err);
            if (s != ORR_OK)
                return s;
        }
        --*depth;
        return ORR_OK;
    }
    if (e->in_event != *depth)
        return ORR_OK; /* a property of VCALENDAR, VALARM, VTIMEZONE ...: not needed */
    int64_t day, tod;
    if (strcmp(l, "DTSTART") == 0 || strcmp(l, "DTEND") == 0) {
        if (parse_dt(v, &day, &tod) != 0)
            return line_err(err, line,
                            l[2] == 'S' ? "DTSTART: not a date or date-time: "
                                        : "DTEND: not a date or date-time: ",
                            v);
        if (l[2] == 'S') {
            e->has_start = 1;
            e->start = day;
            e->start_tod = tod;
            e->start_is_date = tod < 0;
            e->line_start = line;
        } else {
            e->has_end = 1;
            e->end = day;
            e->end_tod = tod;
            e->end_is_date = tod < 0;
        }
    } else if (strcmp(l, "DURATION") == 0) {
        if (parse_duration(v, &e->dur_days) != 0)
            return line_err(err, line, "DURATION: not a duration: ", v);
        e->has_dur = 1;
    } else if (strcmp(l, "RRULE") == 0) {
        if (e->has_rule)
            return line_err(err, line, "more than one RRULE in an event", NULL);
        orr_status s = parse_rule(v, &e->rule, line, err);
        if (s != ORR_OK)
            return s;
        e->has_rule = 1;
    } else if (strcmp(l, "EXDATE") == 0) {
        char *save = NULL;
        for (char *it = strtok_r(v, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
            if (parse_dt(it, &day, &tod) != 0)
                return line_err(err, line, "EXDATE: not a date or date-time: ", it);
            if (e->n_exdate == ICS_MAX_LIST)
                return line_err(err, line, "EXDATE: more than 64 dates in an event", NULL);
            e->exdate[e->n_exdate++] = day;
        }
    } else if (strcmp(l, "SUMMARY") == 0) {
        /* unescape \, \; \n \\ */
        size_t o = 0;
        for (const char *p = v; *p && o + 1 < sizeof e->summary; p++) {
            if (*p == '\\' && p[1]) {
                p++;
                e->summary[o++] = *p == 'n' || *p == 'N' ? ' ' : *p;
            } else
                e->summary[o++] = *p;
        }
        e->summary[o] = '\0';
    }
    (void)params;
    return ORR_OK;
}

orr_status orr_ics_days(const char *text, size_t len, int64_t from_day, int64_t to_day,
                        orr_ics_day_fn fn, void *ctx, orr_err *err)
{
    if (len > ORR_ICS_MAX_BYTES)
        return orr_err_set(err, ORR_EINVAL, "body", "more than %d bytes", ORR_ICS_MAX_BYTES);
    char *l = orr_xmalloc(ICS_MAX_LINE + 1);
    ics_event *e = orr_xcalloc(1, sizeof *e);
    size_t n = 0;
    int line = 1, lstart = 1, depth = 0, seen_cal = 0;
    orr_status s = ORR_OK;
    size_t i = 0;
    while (i <= len && s == ORR_OK) {
        /* read one physical line */
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t k = j;
        if (k > i && text[k - 1] == '\r')
            k--;
        int folded = k > i && (text[i] == ' ' || text[i] == '\t');
        if (!folded && n > 0) {
            l[n] = '\0';
            s = handle_prop(e, &depth, &seen_cal, l, lstart, from_day, to_day, fn, ctx, err);
            n = 0;
        }
        if (s != ORR_OK)
            break;
        size_t from = folded ? i + 1 : i;
        if (!folded)
            lstart = line;
        for (size_t p = from; p < k; p++) {
            if (text[p] == '\0') {
                s = line_err(err, line, "a NUL byte", NULL);
                break;
            }
            if (n == ICS_MAX_LINE) {
                s = line_err(err, lstart, "a content line longer than 8192 bytes", NULL);
                break;
            }
            l[n++] = text[p];
        }
        if (j >= len)
            break;
        i = j + 1;
        line++;
    }
    if (s == ORR_OK && n > 0) {
        l[n] = '\0';
        s = handle_prop(e, &depth, &seen_cal, l, lstart, from_day, to_day, fn, ctx, err);
    }
    if (s == ORR_OK && !seen_cal)
        s = line_err(err, 1, "no BEGIN:VCALENDAR", NULL);
    else if (s == ORR_OK && depth != 0)
        s = line_err(err, line, "END:VCALENDAR missing at the end of the file", NULL);
    free(l);
    free(e);
    return s;
}

/*
 * orr_cal.h - business calendars: which local dates are business days, and a
 * task's cron fire times adjusted to them. Shared by keplerd (materialising
 * instances, `cron-next --calendar`), galaxyd (the designer's preview, the
 * calendar REST API) and halleyd (checks).
 *
 * A calendar is a time zone, a set of business weekdays (ISO 1 = Monday ...
 * 7 = Sunday; Monday to Friday by default) and dated exceptions: a day
 * "excluded" is never a business day, a day "included" always is. So a
 * business day is (its weekday in weekdays and not excluded) or included.
 * Days are local civil dates in the calendar's zone, counted as days since
 * 1970-01-01 (orr_tz_days_from_civil).
 *
 * Policies, per task, for a cron fire time whose local date is not a
 * business day:
 *   skip      the fire time is dropped;
 *   next      it moves to the same local wall time of the next business day;
 *   previous  it moves to the same local wall time of the previous one.
 * Fire times that land on the same instant after moving are one fire time
 * (a daily task with "next" runs once on Monday, not three times).
 * A moved wall time that a spring-forward gap skips fires when the gap ends;
 * one shown twice fires at its first occurrence (as orr_cron does).
 *
 * Memory: an orr_cal is one malloc'd struct with two sorted day arrays,
 * freed by orr_cal_free(); once built it is immutable and may be shared
 * between threads. Searches look at most ORR_CAL_SEARCH_DAYS days ahead or
 * back: a calendar without a business day in that span has no fire times.
 */
#ifndef ORR_CAL_H
#define ORR_CAL_H

#include <stddef.h>
#include <stdint.h>

#include "orr_cron.h"
#include "orr_status.h"
#include "orr_tz.h"

/* How far orr_cal_next / orr_cal_classify look for a business day. */
#define ORR_CAL_SEARCH_DAYS 1100
/* At most this many dated exceptions in one calendar. */
#define ORR_CAL_MAX_DAYS 20000
/* Mask of Monday to Friday (bit d = ISO weekday d). */
#define ORR_CAL_WEEKDAYS_DEFAULT 0x3e

typedef struct orr_cal orr_cal;

typedef enum { ORR_CAL_SKIP = 0, ORR_CAL_NEXT = 1, ORR_CAL_PREVIOUS = 2 } orr_cal_policy;
typedef enum { ORR_CAL_NONE = 0, ORR_CAL_EXCLUDED = 1, ORR_CAL_INCLUDED = 2 } orr_cal_kind;
typedef enum { ORR_CAL_KEPT = 0, ORR_CAL_SKIPPED = 1, ORR_CAL_MOVED = 2 } orr_cal_outcome;

/* A new calendar in zone (NULL or "" = UTC) with business weekdays given as
 * a mask (bit d = ISO weekday d, 1-7; 0 is allowed: only included days are
 * business days). ORR_OK and *out (orr_cal_free it); ORR_EINVAL with field
 * "timezone" or "weekdays"; ORR_ENOTFOUND for an unknown zone; ORR_ENOMEM. */
orr_status orr_cal_new(const char *zone, unsigned weekdays, orr_cal **out, orr_err *err);
/* NULL is a no-op. */
void orr_cal_free(orr_cal *c);
/* Mark day (days since 1970-01-01) excluded or included, or clear it with
 * ORR_CAL_NONE. ORR_EINVAL (field "days") past ORR_CAL_MAX_DAYS; ORR_ENOMEM. */
orr_status orr_cal_set_day(orr_cal *c, int64_t day, orr_cal_kind kind, orr_err *err);
/* The mark of a day (ORR_CAL_NONE when it has none). */
orr_cal_kind orr_cal_day_kind(const orr_cal *c, int64_t day);
/* 1 if day is a business day. */
int orr_cal_is_business_day(const orr_cal *c, int64_t day);
const orr_tz *orr_cal_tz(const orr_cal *c);
unsigned orr_cal_weekdays(const orr_cal *c);

/* A calendar from its JSON form, as the REST API answers it:
 *   {"timezone": "Europe/Berlin", "weekdays": [1,2,3,4,5],
 *    "days": [{"day": "2026-12-25", "kind": "excluded", "note": "..."}]}
 * (every member optional; other members are ignored). ORR_OK and *out;
 * ORR_EINVAL with err->field naming the member ("days[3].day"). */
orr_status orr_cal_from_json(const char *text, size_t len, orr_cal **out, orr_err *err);

/* "YYYY-MM-DD" to days since 1970-01-01; ORR_EINVAL (field "day") otherwise. */
orr_status orr_cal_parse_date(const char *s, int64_t *day, orr_err *err);
/* day as "YYYY-MM-DD" into buf (n >= 11); returns buf. */
char *orr_cal_format_date(int64_t day, char *buf, size_t n);
/* "skip", "next", "previous" (NULL or "" = skip); ORR_EINVAL otherwise. */
orr_status orr_cal_policy_parse(const char *s, orr_cal_policy *p, orr_err *err);
const char *orr_cal_policy_name(orr_cal_policy p);
const char *orr_cal_outcome_name(orr_cal_outcome o);
/* The local date (days since 1970-01-01) of the UTC instant t in c's zone. */
int64_t orr_cal_local_day(const orr_cal *c, int64_t t);

/* What the policy does with one cron fire time f (UTC seconds): KEPT (*to =
 * f), SKIPPED (*to = 0) or MOVED (*to = the new instant). A move that finds
 * no business day within ORR_CAL_SEARCH_DAYS is SKIPPED. */
orr_cal_outcome orr_cal_classify(const orr_cal *c, orr_cal_policy p, int64_t f, int64_t *to);

/* The first calendar-adjusted fire time of cron strictly after after_utc:
 * the smallest policy-adjusted cron fire time > after_utc (with c NULL, the
 * cron's own next fire time). ORR_OK and *next_utc; ORR_ENOTFOUND when there
 * is none within ORR_CAL_SEARCH_DAYS business-day search or the cron's range.
 * Pure: allocates nothing, thread-safe. */
orr_status orr_cal_next(const orr_cron *cron, const orr_tz *cron_tz, const orr_cal *c,
                        orr_cal_policy p, int64_t after_utc, int64_t *next_utc);

#endif

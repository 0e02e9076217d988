/*
 * orr_cron.h - cron expressions: parser and next-fire computation. The one
 * engine behind the scheduler, the API's schedule preview and the check that
 * refuses a task whose schedule cannot fire.
 *
 * Two dialects, told apart by the number of fields:
 *
 *   Quartz, 6 or 7 fields:  second minute hour day-of-month month day-of-week [year]
 *   Unix (Vixie), 5 fields: minute hour day-of-month month day-of-week
 *                           (second is 0), or one of @yearly @annually
 *                           @monthly @weekly @daily @midnight @hourly
 *
 * Field syntax (both dialects): "*", a value, a range "a-b" (a > b wraps round,
 * e.g. hour 22-2), a step "/s" after "*", after a range "a-b" or after a
 * value a (then from a to the field's maximum: minute "5/15" is 5,20,35,50),
 * and comma lists of all of these. Names are case-insensitive: JAN-DEC in month,
 * SUN-SAT in day-of-week. Ranges: second and minute 0-59, hour 0-23,
 * day-of-month 1-31, month 1-12, year 1970-2199, day-of-week 1-7 with
 * 1 = SUN in Quartz, 0-7 with 0 and 7 = SUN in Unix.
 *
 * Special day syntax, usable as list items:
 *   day-of-month  L (last day), L-n (n days before the last, n 0-30),
 *                 LW (last weekday Mon-Fri), nW (the weekday nearest to day n,
 *                 never leaving the month: 1W on a Saturday is Monday the 3rd,
 *                 31W on a Sunday is Friday the 29th; months without day n are
 *                 skipped)
 *   day-of-week   xL (the last weekday x of the month: Quartz 6L = last Friday),
 *                 x#n (the n-th weekday x, n 1-5; months without it are
 *                 skipped), L alone (= the last day of the week, Saturday)
 *   "?"           means "no constraint", only in day-of-month or day-of-week.
 * The Unix dialect accepts these too (numbering its weekdays from 0 = SUN).
 *
 * How day-of-month and day-of-week combine:
 *   Quartz: exactly one of them must be "?"; the other one decides.
 *   Unix: as Vixie cron, if either field starts with "*" (or is "?") a day
 *   must match both; otherwise a day matching EITHER field fires
 *   ("0 0 1,15 * MON" = the 1st, the 15th and every Monday).
 *
 * Errors: orr_cron_parse() returns ORR_EINVAL with err->field naming the field
 * ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year",
 * or "expression" for the shape of the whole) and err->msg quoting the bad
 * token, e.g. field "day-of-month", msg "\"32\" out of range 1-31".
 *
 * Next fire, in a zone (orr_tz.h): matching wall times are walked in local time,
 * field by field (year, month, day, hour, minute, second), jumping with bit
 * scans; each is mapped to UTC:
 *   - a wall time skipped by a spring-forward gap fires at the instant the gap
 *     ends, once, however many scheduled wall times fall into the gap;
 *   - a wall time shown twice by a fall-back fires once, at its first
 *     occurrence (wall times of the second pass do not fire again).
 * Local years 1970-2199 are searched; past them the answer is ORR_ENOTFOUND,
 * so an expression that never fires ("0 0 0 30 2 ?") ends the search.
 *
 * Memory: a parsed expression is one fixed-size block with no pointers;
 * orr_cron_parse_into() fills a caller-owned struct (no allocation at all).
 * A parsed expression is immutable: share it between threads freely.
 */
#ifndef ORR_CRON_H
#define ORR_CRON_H

#include <stdint.h>

#include "orr_tz.h"
#include "orr_status.h"

#define ORR_CRON_YEAR_MIN 1970
#define ORR_CRON_YEAR_MAX 2199
/* Longest expression accepted, in bytes. */
#define ORR_CRON_MAX_LEN 1024

/* The parsed form: bitsets per field. Public only so that callers can embed it
 * (orr_cron_parse_into); read it through the functions below. */
typedef struct orr_cron {
    uint64_t sec;       /* bits 0-59 */
    uint64_t min;       /* bits 0-59 */
    uint64_t year[4];   /* bit y - ORR_CRON_YEAR_MIN */
    uint32_t hour;      /* bits 0-23 */
    uint32_t dom;       /* bits 1-31: plain days */
    uint32_t dom_w;     /* bits 1-31: nW */
    uint32_t dom_last;  /* bits 0-30: L-n (L is L-0) */
    uint16_t mon;       /* bits 1-12 */
    uint8_t dow;        /* bits 0-6, 0 = Sunday: plain weekdays */
    uint8_t dow_last;   /* bits 0-6: xL */
    uint8_t dow_nth[7]; /* per weekday, bits 1-5: x#n */
    uint8_t flags;      /* ORR_CRON_F_* */
} orr_cron;

#define ORR_CRON_F_UNIX     0x01 /* 5-field dialect */
#define ORR_CRON_F_DOM_STAR 0x02 /* day-of-month is unconstrained ("?"; Unix: starts with "*") */
#define ORR_CRON_F_DOW_STAR 0x04 /* day-of-week likewise */
#define ORR_CRON_F_DOM_LW   0x08 /* LW */

/* Parse expr (Quartz 6/7 fields or Unix 5 fields, auto-detected; fields
 * separated by spaces or tabs). Returns ORR_OK and a new expression in *out,
 * to be freed with orr_cron_free(); on ORR_EINVAL *out is NULL and err names the
 * field and the bad token. Never allocates more than the one block. */
orr_status orr_cron_parse(const char *expr, orr_cron **out, orr_err *err);
/* The same into caller-owned storage; on failure *c is unspecified. */
orr_status orr_cron_parse_into(const char *expr, orr_cron *c, orr_err *err);
/* NULL is a no-op. */
void orr_cron_free(orr_cron *c);

/* The first fire time strictly after after_utc (seconds since the epoch),
 * with wall times read in zone tz (NULL = UTC). ORR_OK and *next_utc;
 * ORR_ENOTFOUND when no fire time exists up to the end of local year
 * ORR_CRON_YEAR_MAX. Pure function of its arguments: thread-safe, allocates
 * nothing, and bounded in time (months are skipped whole, days by bit scans). */
orr_status orr_cron_next(const orr_cron *c, const orr_tz *tz, int64_t after_utc, int64_t *next_utc);

/* 1 if the expression is in the Unix 5-field dialect. */
int orr_cron_is_unix(const orr_cron *c);

/* Check a schedule the way the scheduler will run it, for a service that must
 * refuse a task it could not schedule: expr must parse (an empty expr is "no
 * schedule" and passes), the zone named zone must load (NULL = UTC; "" is a bad
 * name), and a parsed expr must have a fire time strictly after after_utc in
 * that zone, up to the end of local year ORR_CRON_YEAR_MAX ("0 0 0 30 2 ?"
 * never does; neither does a year list that lies wholly in the past).
 * Returns ORR_OK; ORR_EINVAL with err->field "schedule" (err->msg "<cron
 * field>: <what is wrong>", as from orr_cron_parse, or "never fires after
 * <time>") or "timezone" (err->msg from orr_tz_load, an unknown zone included);
 * ORR_EIO when the zone file exists but cannot be read. Blocks only to read a
 * zone file the first time (orr_tz_load's cache); thread-safe. */
orr_status orr_cron_check(const char *expr, const char *zone, int64_t after_utc, orr_err *err);

#endif

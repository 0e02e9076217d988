/*
 * orr_tz.h - the calendar and time-zone layer shared by every binary that reads
 * wall clocks (the scheduler's cron, the sort engine's buckets, the API's
 * schedule checks and previews).
 *
 * An orr_tz is one IANA zone, read from its TZif file (RFC 8536, versions 1-3)
 * under /usr/share/zoneinfo. It answers two questions without touching the
 * process-wide TZ state (no setenv/tzset/mktime), so every thread may share it:
 *
 *   orr_tz_offset()       the UTC offset in force at a UTC instant;
 *   orr_tz_local_to_utc() the UTC instants that show a given local wall time:
 *                         one normally, none in a spring-forward gap (the
 *                         answer then says when the gap ends), two in a
 *                         fall-back fold (the answer says where the fold ends).
 *
 * Times are int64 seconds. A "UTC instant" counts from 1970-01-01T00:00:00Z; a
 * "local wall time" is the same count for the civil date-time read off a wall
 * clock in the zone, as if that clock were in UTC (so local = utc + offset).
 *
 * Loading: the 64-bit (v2+) data is used when present, else the 32-bit v1
 * data. Transitions after the last one in the file come from the footer's
 * POSIX TZ string (e.g. "CET-1CEST,M3.5.0,M10.5.0/3"); they are expanded into
 * the table up to the end of ORR_TZ_LAST_YEAR at load time, so every lookup is
 * a binary search. Past that year the last offset holds. Files with leap
 * seconds ("right/" zones) are refused: Orrery's clock is POSIX time.
 *
 * Lifetime: orr_tz_load() caches zones for the life of the process; a loaded
 * zone is immutable, never freed (except by orr_tz_cache_clear()) and safe to
 * use from any thread. "UTC" (and "Etc/UTC") are built in and need no file.
 *
 * The calendar helpers (proleptic Gregorian, any year) and the ISO-8601
 * reader/writer used with them live here too.
 */
#ifndef ORR_TZ_H
#define ORR_TZ_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

/* Rules from a zone's POSIX footer are expanded through the end of this year. */
#define ORR_TZ_LAST_YEAR 2400
/* Where orr_tz_load() looks for TZif files. */
#define ORR_TZ_DIR "/usr/share/zoneinfo"

typedef struct orr_tz orr_tz;

/* What a local wall time maps to (see orr_tz_local_to_utc). */
typedef struct orr_tz_map {
    int n;            /* 0: in a gap; 1: unique; 2: in a fold (repeated) */
    int64_t utc[2];   /* the n instants, ascending */
    int64_t gap_end;  /* n == 0: the UTC instant at which the gap ends */
    int64_t fold_end; /* n == 2: the local wall time at which the first pass
                         ends (local times below it, from the fold's start,
                         are shown twice) */
} orr_tz_map;

/* The zone named name ("Europe/Berlin", "UTC"). The name must be a relative
 * path of letters, digits and "._+-/" without ".." or a leading "/".
 * Returns ORR_OK and a shared, immutable zone in *out (do not free it);
 * ORR_EINVAL for a bad name or a malformed file, ORR_ENOTFOUND when no such
 * zone file exists, ORR_EIO when it cannot be read; err->field is "timezone".
 * Thread-safe; the first load of a zone reads its file, later ones hit a cache. */
orr_status orr_tz_load(const char *name, const orr_tz **out, orr_err *err);

/* The built-in UTC zone. Never NULL. */
const orr_tz *orr_tz_utc(void);

/* Build a zone from the bytes of a TZif file (for tests and fuzzing; not
 * cached). On success *out is owned by the caller: orr_tz_free() it. On
 * failure (ORR_EINVAL, err names what is wrong) *out is NULL. */
orr_status orr_tz_parse(const char *name, const void *data, size_t len, orr_tz **out, orr_err *err);
/* Free a zone from orr_tz_parse(). NULL is a no-op. Never pass a cached zone. */
void orr_tz_free(orr_tz *tz);
/* Drop every cached zone. Only for tests and process exit: pointers handed out
 * by orr_tz_load() become invalid. */
void orr_tz_cache_clear(void);

/* The zone's name as loaded. */
const char *orr_tz_name(const orr_tz *tz);
/* Seconds east of UTC in force at the UTC instant t. */
int32_t orr_tz_offset(const orr_tz *tz, int64_t t);
/* The instants showing local wall time local; see orr_tz_map. Never fails. */
void orr_tz_local_to_utc(const orr_tz *tz, int64_t local, orr_tz_map *out);

/* --- calendar (proleptic Gregorian) --- */

int orr_tz_is_leap(int64_t year);
/* 28..31; month 1-12. */
int orr_tz_days_in_month(int64_t year, int month);
/* Days since 1970-01-01 of year-month-day (month 1-12, day 1-31). */
int64_t orr_tz_days_from_civil(int64_t year, int month, int day);
/* The civil date of a day count since 1970-01-01. */
void orr_tz_civil_from_days(int64_t days, int64_t *year, int *month, int *day);
/* 0 = Sunday ... 6 = Saturday. */
int orr_tz_weekday(int64_t days);

/* Parse an ISO-8601 date-time: YYYY-MM-DDTHH:MM[:SS[.fff]] followed by "Z",
 * "+HH:MM", "-HH:MM", "+HHMM", "+HH" or nothing (nothing means UTC); "t" or a
 * space may stand for "T"; fractions are truncated. Years 0000-9999.
 * ORR_OK and *out; ORR_EINVAL (message says what is wrong) otherwise. */
orr_status orr_tz_parse_iso8601(const char *s, int64_t *out, orr_err *err);
/* Write t as "YYYY-MM-DDTHH:MM:SSZ" into buf (n >= 21 for years 0-9999);
 * returns buf. */
char *orr_tz_format_utc(int64_t t, char *buf, size_t n);

#endif

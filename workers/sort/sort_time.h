/*
 * sort_time.h - record time fields, stream time zones and data-time buckets.
 *
 * A stream declares how its time field is written (epoch seconds or
 * milliseconds, "%Y-%m-%d %H:%M:%S", "%Y%m%d%H%M%S" or ISO-8601) and a time
 * zone: UTC, a fixed offset ("+08:00", "-0530") or an IANA zone name
 * ("Europe/Berlin", "Asia/Shanghai") read through lib's orr_tz layer, whose
 * daylight-saving rules are honoured. Wall-clock texts without an offset are
 * read in the stream's zone; ISO-8601 texts that carry "Z" or an offset use
 * their own. A wall time shown twice (a fall-back fold) is the earlier
 * instant; a wall time that does not exist (a spring-forward gap) is read
 * with the offset in force before the gap (02:30 in Berlin's gap is 03:30
 * CEST), as mktime does.
 *
 * Buckets (15 minutes, hour, day) are aligned on the stream's wall clock, so
 * a "day" bucket starts at local midnight and a DST day lasts 23 or 25 hours.
 * A bucket holds every instant whose wall time falls in [L, L + size) for its
 * local start L; labels are L: YYYYMMDDHHMM (15m), YYYYMMDDHH (hour),
 * YYYYMMDD (day). Around a DST change:
 *   - a bucket's start is the first instant showing L, or, when L lies in a
 *     gap, the instant the gap ends (a bucket wholly inside a gap has no
 *     instants and shares its start with the next one, whose label wins);
 *   - in a fold the repeated wall times belong to one bucket, so Berlin's
 *     hour bucket "02" on the fall-back day spans two real hours, and a 15m
 *     bucket inside the fold covers two separate quarter hours;
 *   - sort_bucket_end() is the end of the bucket's last instant (when it may
 *     be closed), sort_bucket_next() the start of the following bucket; with
 *     fixed offsets both are start + size.
 *
 * Everything here is pure computation: no allocation, no locale, no libc
 * time functions (thread-safe, fast enough for every record). Zones come
 * from orr_tz_load(), which caches them for the life of the process.
 */
#ifndef SORT_TIME_H
#define SORT_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "orr_tz.h"
#include "orr_status.h"

typedef enum sort_time_fmt {
    SORT_TF_EPOCH_S = 0, /* "epoch_s": integer seconds since 1970 UTC */
    SORT_TF_EPOCH_MS,    /* "epoch_ms": integer milliseconds */
    SORT_TF_YMD_HMS,     /* "%Y-%m-%d %H:%M:%S" */
    SORT_TF_COMPACT,     /* "%Y%m%d%H%M%S" */
    SORT_TF_ISO8601,     /* 2024-05-01T10:00:00[.fff][Z|+hh:mm|+hhmm] */
} sort_time_fmt;

typedef enum sort_bucket_kind {
    SORT_BUCKET_15M = 0,
    SORT_BUCKET_HOUR,
    SORT_BUCKET_DAY,
} sort_bucket_kind;

/* A stream's time zone: an IANA zone when zone is set, else a fixed offset.
 * Plain value; the zone is shared and immutable (never freed). */
typedef struct sort_tz {
    int32_t fixed;     /* seconds east of UTC (zone == NULL) */
    const orr_tz *zone; /* named zone, or NULL */
} sort_tz;

/* A fixed-offset zone (seconds east of UTC). */
sort_tz sort_tz_fixed(int32_t offset_s);

/* Longest bucket label plus NUL. */
#define SORT_LABEL_MAX 16

/* Parse a time format name ("epoch_s", "epoch_ms", "%Y-%m-%d %H:%M:%S",
 * "%Y%m%d%H%M%S", "iso8601"). ORR_EINVAL for anything else. */
orr_status sort_time_fmt_parse(const char *name, sort_time_fmt *out);
/* Parse "15m", "hour" or "day". ORR_EINVAL for anything else. */
orr_status sort_bucket_parse(const char *name, sort_bucket_kind *out);
/* Parse "UTC", "Z", a fixed offset "+hh:mm", "-hhmm", "+hh" (|offset| < 24h)
 * or an IANA zone name into *out. ORR_EINVAL for a malformed name,
 * ORR_ENOTFOUND for a well-formed name with no zone file, ORR_EIO when the
 * file cannot be read; err (may be NULL) then has field "timezone" and says
 * why. *out is untouched on failure. */
orr_status sort_tz_parse(const char *name, sort_tz *out, orr_err *err);
/* Seconds east of UTC in force at the UTC instant utc_s. */
int32_t sort_tz_offset_at(sort_tz tz, int64_t utc_s);
/* The UTC instant of local wall time local_s (seconds, read as if UTC) in tz,
 * with the fold and gap rules above. */
int64_t sort_tz_local_to_utc(sort_tz tz, int64_t local_s);

/* Text of len bytes (not NUL-terminated) in format f, zone tz
 * to milliseconds since the epoch. ORR_EINVAL when the text is not a valid
 * time of that format (bad digit, month 13, Feb 30, trailing bytes...). */
orr_status sort_time_parse_text(const char *p, size_t len, sort_time_fmt f, sort_tz tz,
                                int64_t *epoch_ms);
/* An integer time field (binary formats): seconds or milliseconds by f.
 * ORR_EINVAL for a wall-clock format or an out-of-range value. */
orr_status sort_time_from_int(int64_t v, sort_time_fmt f, int64_t *epoch_ms);

/* Nominal bucket length in seconds (wall-clock length; see above for DST). */
int64_t sort_bucket_seconds(sort_bucket_kind k);
/* Start (seconds since the epoch) of the bucket holding epoch_ms in zone tz;
 * never after epoch_ms. */
int64_t sort_bucket_start(int64_t epoch_ms, sort_bucket_kind k, sort_tz tz);
/* For a bucket start start_s (from sort_bucket_start): the end of its last
 * instant (a bucket may close once time reaches it), and the start of the
 * next bucket (> start_s). */
int64_t sort_bucket_end(int64_t start_s, sort_bucket_kind k, sort_tz tz);
int64_t sort_bucket_next(int64_t start_s, sort_bucket_kind k, sort_tz tz);
/* Label of the bucket starting at start_s into buf (>= SORT_LABEL_MAX). */
void sort_bucket_label(int64_t start_s, sort_bucket_kind k, sort_tz tz, char *buf);
/* Inverse of sort_bucket_label: 0 and *start_s on success, -1 if label is not
 * a label of kind k. */
int sort_bucket_from_label(const char *label, sort_bucket_kind k, sort_tz tz, int64_t *start_s);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t sort_days_from_civil(int64_t y, unsigned m, unsigned d);
void sort_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif

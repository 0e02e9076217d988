/*
 * sort_time.h - record time fields, stream time zones and data-time buckets.
 *
 * A stream declares how its time field is written (epoch seconds or
 * milliseconds, "%Y-%m-%d %H:%M:%S", "%Y%m%d%H%M%S" or ISO-8601) and a time
 * zone. In this version a time zone is UTC or a fixed offset ("+08:00",
 * "-0530"); named zones with daylight-saving rules are not supported yet.
 * Wall-clock texts without an offset are read in the stream's zone; ISO-8601
 * texts that carry "Z" or an offset use their own.
 *
 * Buckets (15 minutes, hour, day) are aligned in the stream's zone, so a
 * "day" bucket of a +08:00 stream starts at local midnight. Labels are the
 * local start time: YYYYMMDDHHMM (15m), YYYYMMDDHH (hour), YYYYMMDD (day).
 *
 * Everything here is pure computation: no allocation, no locale, no libc
 * time functions (thread-safe, fast enough for every record).
 */
#ifndef SORT_TIME_H
#define SORT_TIME_H

#include <stddef.h>
#include <stdint.h>

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

/* Longest bucket label plus NUL. */
#define SORT_LABEL_MAX 16

/* Parse a time format name ("epoch_s", "epoch_ms", "%Y-%m-%d %H:%M:%S",
 * "%Y%m%d%H%M%S", "iso8601"). ORR_EINVAL for anything else. */
orr_status sort_time_fmt_parse(const char *name, sort_time_fmt *out);
/* Parse "15m", "hour" or "day". ORR_EINVAL for anything else. */
orr_status sort_bucket_parse(const char *name, sort_bucket_kind *out);
/* Parse "UTC", "Z" or a fixed offset "+hh:mm", "-hhmm", "+hh" into seconds
 * east of UTC (|offset| < 24h). ORR_EINVAL for anything else. */
orr_status sort_tz_parse(const char *name, int32_t *offset_s);

/* Text of len bytes (not NUL-terminated) in format f, zone tz (seconds east)
 * to milliseconds since the epoch. ORR_EINVAL when the text is not a valid
 * time of that format (bad digit, month 13, Feb 30, trailing bytes...). */
orr_status sort_time_parse_text(const char *p, size_t len, sort_time_fmt f, int32_t tz,
                                int64_t *epoch_ms);
/* An integer time field (binary formats): seconds or milliseconds by f.
 * ORR_EINVAL for a wall-clock format or an out-of-range value. */
orr_status sort_time_from_int(int64_t v, sort_time_fmt f, int64_t *epoch_ms);

/* Bucket length in seconds. */
int64_t sort_bucket_seconds(sort_bucket_kind k);
/* Start (seconds since the epoch) of the bucket holding epoch_ms in zone tz. */
int64_t sort_bucket_start(int64_t epoch_ms, sort_bucket_kind k, int32_t tz);
/* Label of the bucket starting at start_s into buf (>= SORT_LABEL_MAX). */
void sort_bucket_label(int64_t start_s, sort_bucket_kind k, int32_t tz, char *buf);
/* Inverse of sort_bucket_label: 0 and *start_s on success, -1 if label is not
 * a label of kind k. */
int sort_bucket_from_label(const char *label, sort_bucket_kind k, int32_t tz, int64_t *start_s);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t sort_days_from_civil(int64_t y, unsigned m, unsigned d);
void sort_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif

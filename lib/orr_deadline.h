/*
 * orr_deadline.h - a task's deadlines ("deadlines": {"start_by", "finish_by"}
 * of the task spec): parsed once, then resolved against a schedule time.
 *
 * A deadline is either a duration after the schedule time ("30m", "2h",
 * "1d", as the spec's other durations: digits + ms|s|m|h|d) or a local
 * clock time "HH:MM" (00:00 to 23:59): the first such wall time at or after
 * the schedule time in the task's time zone. A clock time that a DST gap
 * skips resolves to the end of the gap; one a fold repeats, to its first
 * pass. halleyd checks specs with orr_deadline_parse (a save is refused
 * naming the field), keplerd's leader resolves them for every instance.
 *
 * Pure functions, no allocation: safe from any thread.
 */
#ifndef ORR_DEADLINE_H
#define ORR_DEADLINE_H

#include <stdint.h>

#include "orr_status.h"
#include "orr_tz.h"

/* The longest duration a deadline may name: 31 days. */
#define ORR_DEADLINE_MAX_MS (31LL * 86400 * 1000)

typedef enum orr_deadline_kind {
    ORR_DL_NONE = 0,
    ORR_DL_AFTER, /* ms after the schedule time */
    ORR_DL_CLOCK, /* a local clock time: ms = minutes of the day * 60000 */
} orr_deadline_kind;

typedef struct orr_deadline {
    orr_deadline_kind kind;
    int64_t ms;
} orr_deadline;

/* Parse "30m" or "06:00" into *out. ORR_EINVAL with err->field = field and
 * a message a user can act on (a bad form, a zero or too long duration);
 * *out is then ORR_DL_NONE. */
orr_status orr_deadline_parse(const char *s, const char *field, orr_deadline *out, orr_err *err);

/* The UTC instant (ms) deadline d falls on for an instance scheduled at
 * sched_ms in zone tz (NULL = UTC); INT64_MAX for ORR_DL_NONE. Never
 * earlier than sched_ms. */
int64_t orr_deadline_at(const orr_deadline *d, int64_t sched_ms, const orr_tz *tz);

#endif

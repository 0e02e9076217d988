/*
 * orr_cal_ics.h - the dates an iCalendar (RFC 5545) file's events cover, to
 * import holidays into a business calendar.
 *
 * What is read: VCALENDAR > VEVENT blocks (other components are passed over)
 * with DTSTART (a DATE, or a DATE-TIME: its date as written, in the event's
 * own zone), DTEND or DURATION (all-day events end on the day before DTEND;
 * timed ones on the date of their last second; neither: one day), SUMMARY,
 * EXDATE, and RRULE with FREQ DAILY, WEEKLY, MONTHLY or YEARLY, INTERVAL,
 * COUNT, UNTIL, BYMONTH, BYMONTHDAY (negative from the month's end) and
 * BYDAY (with an ordinal in MONTHLY and YEARLY rules: 1MO, -1FR). A rule is
 * expanded over [from_day, to_day] only, and at most ORR_ICS_MAX_OCCURRENCES
 * times per event. Long lines folded with a leading space or tab are unfolded.
 *
 * Errors name the line: ORR_EINVAL with err->field "body" and err->msg
 * "line 12: DTSTART: \"2026-13-01\" is not a date" (the physical line where
 * the property starts). A rule part this reader does not support (BYSETPOS,
 * BYWEEKNO, BYYEARDAY, FREQ below DAILY) is an error too, never ignored.
 */
#ifndef ORR_CAL_ICS_H
#define ORR_CAL_ICS_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

#define ORR_ICS_MAX_OCCURRENCES 5000
#define ORR_ICS_MAX_BYTES       (4 << 20)

/* Called once per covered day (days since 1970-01-01), in file order (one
 * day may come more than once); summary is the event's SUMMARY or "".
 * Return 0 to go on, anything else to stop with ORR_EINVAL (err set by the
 * callback). */
typedef int (*orr_ics_day_fn)(void *ctx, int64_t day, const char *summary, orr_err *err);

/* Parse text (len bytes, at most ORR_ICS_MAX_BYTES) and call fn for every day
 * covered by an event in [from_day, to_day]. ORR_OK; ORR_EINVAL as above.
 * Allocates only while it runs; thread-safe. */
orr_status orr_ics_days(const char *text, size_t len, int64_t from_day, int64_t to_day,
                        orr_ics_day_fn fn, void *ctx, orr_err *err);

#endif

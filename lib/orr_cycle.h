/*
 * orr_cycle.h - cycle mapping between dependent tasks: which fire times of
 * an upstream task one instance of a downstream task waits for, and the
 * inverse (which downstream cycles wait for one upstream instance). Pure
 * functions over orr_cron and orr_tz, no I/O; keplerd decides with them and
 * halleyd shows an instance's upstreams and downstreams with them, so both
 * say the same thing.
 *
 * Mapping (times in seconds; a task's cycle is one fire time of its cron).
 * For a downstream instance D at schedule time t with upstream U:
 *
 *   cycle "same", or U has no cron   exactly t;
 *   D has no cron (manual/backfill)  U's latest fire time <= t;
 *   otherwise                        every fire time of U in [t, next_D(t)),
 *                                    the span D's cycle covers; if there is
 *                                    none (U is coarser), U's latest fire
 *                                    time <= t.
 * So an hourly task on a daily one waits for that day's run (the latest daily
 * fire <= its hour), a daily task on an hourly one waits for all 24 hours of
 * its day, and equal schedules map cycle to cycle.
 * Self: the latest fire time of D strictly before t (none: nothing to wait).
 */
#ifndef ORR_CYCLE_H
#define ORR_CYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "orr_cron.h"
#include "orr_status.h"
#include "orr_tz.h"

/* Most upstream cycles one dependency may map to (a daily task on a
 * minutely one needs 1440). */
#define ORR_CYCLE_MAX 1500

/* The upstream fire times (seconds, ascending) an instance at t waits for.
 * dc/dtz: the downstream's cron and zone (dc NULL: no schedule); uc/utz the
 * upstream's (uc NULL: no schedule). ORR_OK with *n >= 1 (0 only when U has a
 * cron that never fired before t and never fires in the span); ORR_ETOOBIG
 * when more than max cycles map (the first max are written). */
orr_status orr_cycle_upstream(const orr_cron *dc, const orr_tz *dtz, const orr_cron *uc,
                              const orr_tz *utz, int same, int64_t t, int64_t *out, size_t max,
                              size_t *n);

/* The inverse: the downstream cycles (seconds, ascending) whose mapping
 * above includes the upstream's cycle s. When D has no cron (and the mapping
 * is not "same" and U has a cron) its cycles cannot be listed: *n is 0 and
 * [s, *span_end) is the range of D schedule times that map to s (*span_end
 * INT64_MAX when U never fires again); otherwise *span_end is 0. ORR_ETOOBIG
 * when more than max cycles map (the first max are written). */
orr_status orr_cycle_downstream(const orr_cron *dc, const orr_tz *dtz, const orr_cron *uc,
                                const orr_tz *utz, int same, int64_t s, int64_t *out, size_t max,
                                size_t *n, int64_t *span_end);

/* The latest fire time of c strictly before t (searching back up to 800
 * days): ORR_OK and *prev, or ORR_ENOTFOUND. */
orr_status orr_cycle_prev_fire(const orr_cron *c, const orr_tz *tz, int64_t t, int64_t *prev);

#endif

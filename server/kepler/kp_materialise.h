/*
 * kp_materialise.h - which fire times of a task get instances.
 *
 * A task has a "materialised up to" time M: every fire time <= M already has
 * an instance (creation is idempotent on task + schedule time in halleyd, so
 * doing one twice is harmless). Materialising up to now means the fire times
 * f with M < f <= now, no older than now - horizon:
 *   catch_up "all"     every one of them (at most max per call: the caller
 *                      comes back for the rest, M having moved);
 *   catch_up "latest"  only the last one; the others are skipped for good.
 * kp_materialise_plan() is the pure part; the scheduler sends the times to
 * CreateInstances in batches and then moves M.
 */
#ifndef KP_MATERIALISE_H
#define KP_MATERIALISE_H

#include <stddef.h>
#include <stdint.h>

#include "kp_index.h"

/* Fire times (ms, ascending) of t after from_ms up to now_ms, not before
 * now_ms - horizon_ms, under t's catch-up policy; at most max. *upto_ms is
 * the new "materialised up to" once these exist (now_ms when everything due
 * was planned, else the last planned time). *next_ms is the first fire time
 * after *upto_ms (INT64_MAX when none). Returns the number of times. */
/* The first fire time of t strictly after ms (INT64_MAX when none): its
 * cron's, adjusted to its business calendar when it names one
 * (orr_cal_next); a task whose calendar is not known (yet) has none, so
 * nothing is materialised against a calendar it has not read. */
int64_t kp_task_next_fire_ms(const kp_task *t, int64_t ms);

size_t kp_materialise_plan(const kp_task *t, int64_t from_ms, int64_t now_ms, int64_t horizon_ms,
                           int64_t *out, size_t max, int64_t *upto_ms, int64_t *next_ms);

#endif

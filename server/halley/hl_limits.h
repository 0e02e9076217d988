/*
 * hl_limits.h - per task type sandbox limits: a default and a maximum of
 * each of memory, cpu, pids and run_time, and their check against a task
 * spec. Pure functions (no I/O) apart from hl_limits_apply_db.
 *
 * Limits document (task_type_limits.limits, PutTypeLimits):
 *   {"memory":   {"default": "512m", "max": "4g"},   sizes: "256m", "2g", bytes
 *    "cpu":      {"default": 1, "max": 4},           cores, > 0
 *    "pids":     {"default": 256, "max": 4096},      processes
 *    "run_time": {"default": "1h", "max": "6h"}}     durations: "90s", "30m", "3h"
 * every part and every bound optional; a default never above its maximum.
 *
 * In a task spec, memory/cpu/pids are spec.limits.{memory,cpu,pids} and
 * run_time is spec.timeout.
 */
#ifndef HL_LIMITS_H
#define HL_LIMITS_H

#include <jansson.h>

#include "hl_db.h"
#include "orr_arena.h"
#include "orr_status.h"

/* Check a limits document. ORR_OK, or ORR_EINVAL naming the field
 * ("limits.memory.max", as in the REST body). */
orr_status hl_limits_check(const char *limits_json, orr_err *err);

/* Hold spec (a parsed task spec, changed in place) to the limits document
 * limits_json (already checked; text that does not parse is no limit): a
 * value above a maximum is ORR_EINVAL naming the spec field
 * ("spec.limits.memory", "spec.timeout"); a missing value gets the
 * default. ORR_OK otherwise. */
orr_status hl_limits_apply(const char *limits_json, json_t *spec, orr_err *err);

/* hl_limits_apply with the limits stored for type (none stored: ORR_OK, no
 * change), read on c (the caller's transaction). ORR_EUNAVAIL when the read
 * fails. Defined in hl_api_resources.c. */
orr_status hl_limits_apply_db(hl_conn *c, orr_arena *a, const char *type, json_t *spec,
                              orr_err *err);

#endif

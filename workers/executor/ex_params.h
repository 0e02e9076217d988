/*
 * ex_params.h - named parameters at run time: the values of one attempt
 * (the task version's defaults, overridden by the instance's own params,
 * and the built-ins) substituted into every string of the task's config
 * before the runner reads it (orr_subst holds the language).
 *
 * Substitution happens here, in executord, because only the attempt knows
 * all the built-ins (its attempt number, the version it runs); halleyd
 * checks the same language at save time, so a spec that was saved expands.
 */
#ifndef EX_PARAMS_H
#define EX_PARAMS_H

#include <jansson.h>
#include <stdint.h>

#include "orr_status.h"

/* What one attempt substitutes. Borrowed strings. */
typedef struct ex_params_run {
    const json_t *spec;      /* the task version's spec (its "parameters") */
    const char *params_json; /* the instance's overrides ("" or NULL = none) */
    const char *task;        /* task name */
    int64_t task_id, instance_id;
    int attempt, version;
    int64_t schedule_time_ms;
    const char *timezone; /* the task's zone ("" or NULL = UTC) */
} ex_params_run;

/* Expand every string of config in place. ORR_EINVAL naming the string's
 * path under "config" ("config.command") for a substitution that cannot be
 * made, or "params" for overrides that are not an object of strings;
 * ORR_ETOOBIG for an expansion above orr_subst's limit; ORR_EIO when the
 * time zone cannot be loaded. Thread-safe. */
orr_status ex_params_apply(json_t *config, const ex_params_run *run, orr_err *err);

#endif

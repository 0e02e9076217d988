/*
 * ex_params.c - the values of one attempt's parameters, substituted into
 * its config (see ex_params.h).
 *
 * A declared parameter's value is the instance's override of it, else its
 * default ("" when it has none). The built-ins come first in the lookup, so
 * no parameter can shadow one (halleyd refuses such names at save anyway). An override of a name
 * the version does not declare is ignored here: the instance may have been
 * rerun under a newer version that dropped it.
 */
#include "ex_params.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "orr_subst.h"
#include "orr_tz.h"

#define EX_PARAMS_MAX 64

orr_status ex_params_apply(json_t *config, const ex_params_run *run, orr_err *err)
{
    orr_subst_var vars[EX_PARAMS_MAX + 8];
    size_t n = 0;
    char task_id[24], instance_id[24], attempt[16], version[16];
    snprintf(task_id, sizeof task_id, "%" PRId64, run->task_id);
    snprintf(instance_id, sizeof instance_id, "%" PRId64, run->instance_id);
    snprintf(attempt, sizeof attempt, "%d", run->attempt);
    snprintf(version, sizeof version, "%d", run->version);
    json_t *over = NULL;
    orr_status s = ORR_OK;
    if (run->params_json && *run->params_json) {
        over = json_loads(run->params_json, 0, NULL);
        if (!json_is_object(over)) {
            s = orr_err_set(err, ORR_EINVAL, "params", "not a JSON object");
            goto out;
        }
    }
    vars[n++] = (orr_subst_var){"task", run->task ? run->task : ""};
    vars[n++] = (orr_subst_var){"task_id", task_id};
    vars[n++] = (orr_subst_var){"instance_id", instance_id};
    vars[n++] = (orr_subst_var){"attempt", attempt};
    vars[n++] = (orr_subst_var){"version", version};
    const json_t *decl = json_object_get(run->spec, "parameters");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)decl, k, v)
    {
        if (n == EX_PARAMS_MAX + 5)
            break;
        const char *val = json_string_value(json_object_get(v, "default"));
        json_t *o = over ? json_object_get(over, k) : NULL;
        if (o) {
            if (!json_is_string(o)) {
                s = orr_err_set(err, ORR_EINVAL, "params", "%s: not a string", k);
                goto out;
            }
            val = json_string_value(o);
        }
        vars[n++] = (orr_subst_var){k, val ? val : ""};
    }
    const orr_tz *tz = NULL;
    if ((s = orr_tz_load(run->timezone && *run->timezone ? run->timezone : "UTC", &tz, err)) !=
        ORR_OK)
        goto out;
    int64_t ms = run->schedule_time_ms;
    orr_subst_env env = {vars, n, ms >= 0 ? ms / 1000 : (ms - 999) / 1000, tz};
    s = orr_subst_expand_json(config, "config", &env, err);
out:
    if (over)
        json_decref(over);
    return s;
}

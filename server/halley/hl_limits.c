/*
 * hl_limits.c - per task type sandbox limits and their check against task
 * specs (see hl_limits.h).
 */
#include "hl_limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_config.h"

typedef enum { LIM_SIZE, LIM_CORES, LIM_COUNT, LIM_DURATION } lim_kind;

static const struct {
    const char *name;  /* in the limits document */
    const char *field; /* in a task spec */
    lim_kind kind;
} lim_parts[] = {
    {"memory", "spec.limits.memory", LIM_SIZE},
    {"cpu", "spec.limits.cpu", LIM_CORES},
    {"pids", "spec.limits.pids", LIM_COUNT},
    {"run_time", "spec.timeout", LIM_DURATION},
};
#define LIM_N (sizeof lim_parts / sizeof lim_parts[0])

/* The value v of a limit of kind as a number (bytes, cores, processes,
 * milliseconds). 0 when v is not a valid value of that kind. */
static int lim_value(lim_kind kind, const json_t *v, double *out)
{
    int64_t n;
    switch (kind) {
    case LIM_SIZE:
        if (json_is_integer(v) && json_integer_value(v) > 0) {
            *out = (double)json_integer_value(v);
            return 1;
        }
        if (json_is_string(v) && orr_config_parse_size(json_string_value(v), &n) == ORR_OK &&
            n > 0) {
            *out = (double)n;
            return 1;
        }
        return 0;
    case LIM_CORES:
        if (json_is_number(v) && json_number_value(v) > 0 && json_number_value(v) <= 1024) {
            *out = json_number_value(v);
            return 1;
        }
        return 0;
    case LIM_COUNT:
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 1000000) {
            *out = (double)json_integer_value(v);
            return 1;
        }
        return 0;
    case LIM_DURATION:
        if (json_is_string(v) && orr_config_parse_duration(json_string_value(v), &n) == ORR_OK &&
            n > 0) {
            *out = (double)n;
            return 1;
        }
        return 0;
    }
    return 0;
}

static const char *lim_hint(lim_kind kind)
{
    switch (kind) {
    case LIM_SIZE:
        return "a size such as \"512m\" or \"4g\" (or bytes)";
    case LIM_CORES:
        return "a number of cores above 0, at most 1024";
    case LIM_COUNT:
        return "an integer from 1 to 1000000";
    case LIM_DURATION:
        return "a duration such as \"30m\" or \"6h\"";
    }
    return "";
}

orr_status hl_limits_check(const char *limits_json, orr_err *err)
{
    json_t *doc = json_loads(limits_json ? limits_json : "", JSON_REJECT_DUPLICATES, NULL);
    orr_status s = ORR_OK;
    char f[96];
    if (!json_is_object(doc)) {
        s = orr_err_set(err, ORR_EINVAL, "limits", "must be a JSON object");
        goto done;
    }
    const char *key;
    json_t *part;
    json_object_foreach(doc, key, part)
    {
        size_t i = 0;
        while (i < LIM_N && strcmp(lim_parts[i].name, key) != 0)
            i++;
        snprintf(f, sizeof f, "limits.%.40s", key);
        if (i == LIM_N) {
            s = orr_err_set(err, ORR_EINVAL, f, "unknown limit: memory, cpu, pids or run_time");
            goto done;
        }
        if (!json_is_object(part)) {
            s = orr_err_set(err, ORR_EINVAL, f, "must be an object {\"default\", \"max\"}");
            goto done;
        }
        const char *bk;
        json_t *bv;
        double val[2] = {0, 0};
        int have[2] = {0, 0};
        json_object_foreach(part, bk, bv)
        {
            int which = strcmp(bk, "default") == 0 ? 0 : strcmp(bk, "max") == 0 ? 1 : -1;
            snprintf(f, sizeof f, "limits.%s.%.40s", lim_parts[i].name, bk);
            if (which < 0) {
                s = orr_err_set(err, ORR_EINVAL, f, "unknown bound: default or max");
                goto done;
            }
            if (!lim_value(lim_parts[i].kind, bv, &val[which])) {
                s = orr_err_set(err, ORR_EINVAL, f, "must be %s", lim_hint(lim_parts[i].kind));
                goto done;
            }
            have[which] = 1;
        }
        if (have[0] && have[1] && val[0] > val[1]) {
            snprintf(f, sizeof f, "limits.%s.default", lim_parts[i].name);
            s = orr_err_set(err, ORR_EINVAL, f, "is above the maximum");
            goto done;
        }
    }
done:
    json_decref(doc);
    return s;
}

orr_status hl_limits_apply(const char *limits_json, json_t *spec, orr_err *err)
{
    json_t *doc = json_loads(limits_json ? limits_json : "", 0, NULL);
    orr_status s = ORR_OK;
    if (!json_is_object(doc) || !json_is_object(spec))
        goto done;
    const char *type = json_string_value(json_object_get(spec, "type"));
    for (size_t i = 0; i < LIM_N; i++) {
        json_t *part = json_object_get(doc, lim_parts[i].name);
        if (!json_is_object(part))
            continue;
        json_t *dflt = json_object_get(part, "default"), *max = json_object_get(part, "max");
        int is_timeout = lim_parts[i].kind == LIM_DURATION;
        json_t *holder = is_timeout ? spec : json_object_get(spec, "limits");
        const char *key = is_timeout ? "timeout" : lim_parts[i].name;
        json_t *have = json_is_object(holder) ? json_object_get(holder, key) : NULL;
        if (have) {
            double hv, mv;
            if (!lim_value(lim_parts[i].kind, have, &hv)) {
                s = orr_err_set(err, ORR_EINVAL, lim_parts[i].field, "must be %s",
                                lim_hint(lim_parts[i].kind));
                goto done;
            }
            if (max && lim_value(lim_parts[i].kind, max, &mv) && hv > mv) {
                char *m = json_dumps(max, JSON_ENCODE_ANY);
                s = orr_err_set(err, ORR_EINVAL, lim_parts[i].field,
                                "is above the maximum for %s tasks (%s)", type ? type : "these",
                                m ? m : "?");
                free(m);
                goto done;
            }
            continue;
        }
        if (!dflt)
            continue;
        if (!json_is_object(holder)) {
            holder = json_object();
            json_object_set_new(spec, "limits", holder);
        }
        json_object_set(holder, key, dflt);
    }
done:
    json_decref(doc);
    return s;
}

/*
 * kp_deps.c - cycle mapping and dependency verdicts (see kp_deps.h).
 */
#include "kp_deps.h"

#include <string.h>

static const char *const state_names[] = {
    "unknown", "waiting", "ready",     "dispatched", "running",        "success",
    "failed",  "killed",  "timed_out", "suspended",  "marked_success",
};

kp_state kp_state_parse(const char *name)
{
    if (!name)
        return KP_ST_UNKNOWN;
    for (int i = 1; i <= KP_ST_MARKED_SUCCESS; i++)
        if (strcmp(name, state_names[i]) == 0)
            return (kp_state)i;
    return KP_ST_UNKNOWN;
}

const char *kp_state_name(kp_state s)
{
    if (s == KP_ST_ABSENT)
        return "absent";
    if ((int)s < 0 || s > KP_ST_MARKED_SUCCESS)
        return "unknown";
    return state_names[s];
}

int kp_state_finished(kp_state s)
{
    return s == KP_ST_SUCCESS || s == KP_ST_FAILED || s == KP_ST_KILLED || s == KP_ST_TIMED_OUT ||
           s == KP_ST_MARKED_SUCCESS;
}

orr_status kp_deps_prev_fire(const orr_cron *c, const orr_tz *tz, int64_t t, int64_t *prev)
{
    for (int64_t w = 60; w <= 800LL * 86400; w *= 4) {
        int64_t f;
        if (orr_cron_next(c, tz, t - w - 1, &f) != ORR_OK || f >= t)
            continue;
        /* f is the first fire in [t - w, t): walk to the last one before t */
        for (;;) {
            int64_t g;
            if (orr_cron_next(c, tz, f, &g) != ORR_OK || g >= t)
                break;
            f = g;
        }
        *prev = f;
        return ORR_OK;
    }
    return ORR_ENOTFOUND;
}

orr_status kp_deps_cycles(const orr_cron *dc, const orr_tz *dtz, const orr_cron *uc, const orr_tz *utz,
                          int same, int64_t t, int64_t *out, size_t max, size_t *n)
{
    *n = 0;
    if (same || !uc) {
        if (max > 0)
            out[(*n)++] = t;
        return ORR_OK;
    }
    if (dc) {
        int64_t end;
        if (orr_cron_next(dc, dtz, t, &end) != ORR_OK)
            end = t + 1; /* D's last cycle: the span is t alone */
        int64_t f;
        orr_status st = orr_cron_next(uc, utz, t - 1, &f);
        while (st == ORR_OK && f < end) {
            if (*n == max)
                return ORR_ETOOBIG;
            out[(*n)++] = f;
            st = orr_cron_next(uc, utz, f, &f);
        }
        if (*n > 0)
            return ORR_OK;
    }
    int64_t p;
    if (kp_deps_prev_fire(uc, utz, t + 1, &p) == ORR_OK && max > 0)
        out[(*n)++] = p;
    return ORR_OK;
}

kp_verdict kp_deps_eval(kp_dep_kind kind, const kp_dep_obs *obs, size_t n, int past_deadline)
{
    if (kind == KP_DEP_DATA_UNIT)
        return KP_DEPS_MET;
    if (kind == KP_DEP_WEAK && past_deadline)
        return KP_DEPS_MET;
    for (size_t i = 0; i < n; i++) {
        kp_state s = obs[i].state;
        if (s == KP_ST_ABSENT)
            continue;
        if (kind == KP_DEP_WEAK) {
            if (!kp_state_finished(s) || obs[i].retry_pending)
                return KP_DEPS_WAIT;
        } else if (s != KP_ST_SUCCESS && s != KP_ST_MARKED_SUCCESS) {
            return KP_DEPS_WAIT;
        }
    }
    return KP_DEPS_MET;
}

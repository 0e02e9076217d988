/*
 * kp_deps.c - dependency verdicts (the cycle mapping is lib/orr_cycle) (see kp_deps.h).
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

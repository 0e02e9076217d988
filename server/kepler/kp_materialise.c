/*
 * kp_materialise.c - planning fire times to materialise (see kp_materialise.h).
 */
#include "kp_materialise.h"

#include "orr_cal.h"
#include "orr_cron.h"

int64_t kp_task_next_fire_ms(const kp_task *t, int64_t ms)
{
    if (!t->has_cron)
        return INT64_MAX;
    int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    int64_t f;
    if (!t->calendar[0]) {
        if (orr_cron_next(&t->cron, t->tz, s, &f) != ORR_OK)
            return INT64_MAX;
    } else if (!t->cal || orr_cal_next(&t->cron, t->tz, t->cal, t->cal_policy, s, &f) != ORR_OK) {
        return INT64_MAX;
    }
    return f * 1000;
}

static int64_t next_after_ms(const kp_task *t, int64_t ms)
{
    return kp_task_next_fire_ms(t, ms);
}

size_t kp_materialise_plan(const kp_task *t, int64_t from_ms, int64_t now_ms, int64_t horizon_ms,
                           int64_t *out, size_t max, int64_t *upto_ms, int64_t *next_ms)
{
    size_t n = 0;
    *upto_ms = from_ms > now_ms ? from_ms : now_ms;
    if (!t->has_cron || max == 0) {
        *next_ms = INT64_MAX;
        return 0;
    }
    int64_t lo = from_ms;
    if (horizon_ms > 0 && lo < now_ms - horizon_ms)
        lo = now_ms - horizon_ms - 1;
    int64_t f = next_after_ms(t, lo);
    if (!t->catch_up_all) {
        int64_t last = INT64_MAX;
        while (f != INT64_MAX && f <= now_ms) {
            last = f;
            f = next_after_ms(t, f);
        }
        if (last != INT64_MAX)
            out[n++] = last;
        *next_ms = f;
        return n;
    }
    while (f != INT64_MAX && f <= now_ms) {
        if (n == max) {
            *upto_ms = out[n - 1];
            *next_ms = f;
            return n;
        }
        out[n++] = f;
        f = next_after_ms(t, f);
    }
    *next_ms = f;
    return n;
}

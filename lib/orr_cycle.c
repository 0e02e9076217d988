/*
 * orr_cycle.c - cycle mapping between dependent tasks (see orr_cycle.h).
 */
#include "orr_cycle.h"

orr_status orr_cycle_prev_fire(const orr_cron *c, const orr_tz *tz, int64_t t, int64_t *prev)
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

orr_status orr_cycle_upstream(const orr_cron *dc, const orr_tz *dtz, const orr_cron *uc,
                              const orr_tz *utz, int same, int64_t t, int64_t *out, size_t max,
                              size_t *n)
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
    if (orr_cycle_prev_fire(uc, utz, t + 1, &p) == ORR_OK && max > 0)
        out[(*n)++] = p;
    return ORR_OK;
}

/* Does the mapping of D's cycle t include s? */
static int cycle_maps_to(const orr_cron *dc, const orr_tz *dtz, const orr_cron *uc,
                         const orr_tz *utz, int64_t t, int64_t s)
{
    int64_t buf[ORR_CYCLE_MAX];
    size_t n;
    /* ETOOBIG still writes the first ORR_CYCLE_MAX: s is looked up in those */
    (void)orr_cycle_upstream(dc, dtz, uc, utz, 0, t, buf, ORR_CYCLE_MAX, &n);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == s)
            return 1;
    return 0;
}

orr_status orr_cycle_downstream(const orr_cron *dc, const orr_tz *dtz, const orr_cron *uc,
                                const orr_tz *utz, int same, int64_t s, int64_t *out, size_t max,
                                size_t *n, int64_t *span_end)
{
    *n = 0;
    *span_end = 0;
    if (same || !uc) {
        if (max > 0)
            out[(*n)++] = s;
        return ORR_OK;
    }
    int64_t next_u;
    if (orr_cron_next(uc, utz, s, &next_u) != ORR_OK)
        next_u = INT64_MAX;
    if (!dc) {
        *span_end = next_u;
        return ORR_OK;
    }
    /* The candidates: D's latest cycle <= s (whose span holds s), then every
     * D cycle in (s, next_u) (those map to U's latest fire <= them when their
     * span holds no U fire). Each is checked against the forward mapping. */
    int64_t t;
    if (orr_cycle_prev_fire(dc, dtz, s + 1, &t) != ORR_OK &&
        orr_cron_next(dc, dtz, s, &t) != ORR_OK)
        return ORR_OK;
    for (size_t seen = 0; t < next_u && seen < 4 * (size_t)ORR_CYCLE_MAX; seen++) {
        if (cycle_maps_to(dc, dtz, uc, utz, t, s)) {
            if (*n == max)
                return ORR_ETOOBIG;
            out[(*n)++] = t;
        }
        if (orr_cron_next(dc, dtz, t, &t) != ORR_OK)
            break;
    }
    return ORR_OK;
}

/*
 * kp_retry.c - retry policy (see kp_retry.h).
 */
#include "kp_retry.h"

int kp_retry_wanted(const kp_retry_policy *p, kp_state s, int attempt)
{
    if (s != KP_ST_FAILED && s != KP_ST_TIMED_OUT)
        return 0;
    return attempt >= 1 && attempt <= p->max;
}

int64_t kp_retry_delay_ms(const kp_retry_policy *p, int attempt)
{
    int64_t d = p->delay_ms;
    if (p->backoff == KP_BACKOFF_EXPONENTIAL) {
        for (int i = 1; i < attempt && d < KP_RETRY_MAX_DELAY_MS; i++)
            d *= 2;
    }
    return d > KP_RETRY_MAX_DELAY_MS ? KP_RETRY_MAX_DELAY_MS : d;
}

/*
 * kp_retry.h - retry policy: whether a failed or timed-out attempt gets
 * another one, and after what delay. Pure functions.
 *
 * Attempts are numbered from 1. With retries.max = m an instance runs at most
 * 1 + m attempts. The delay before attempt a+1 (after attempt a failed) is
 * retries.delay for "fixed", and delay * 2^(a-1) for "exponential", capped at
 * KP_RETRY_MAX_DELAY_MS. An executor_lost failure is retried under the same
 * policy (the attempt did run somewhere).
 */
#ifndef KP_RETRY_H
#define KP_RETRY_H

#include <stdint.h>

#include "kp_deps.h"
#include "kp_index.h"

#define KP_RETRY_MAX_DELAY_MS (24LL * 3600 * 1000)

/* 1 if an instance in state s after attempt `attempt` gets another attempt. */
int kp_retry_wanted(const kp_retry_policy *p, kp_state s, int attempt);
/* Milliseconds to wait after attempt `attempt` (>= 1) failed. */
int64_t kp_retry_delay_ms(const kp_retry_policy *p, int attempt);

#endif

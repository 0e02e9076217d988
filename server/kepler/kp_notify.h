/*
 * kp_notify.h - keplerd's alert sender: a thread of its own that, while
 * this keplerd leads, claims due deliveries from halleyd's outbox
 * (ClaimDeliveries, with a lease), sends them through lib/orr_notify with
 * up to `inflight` transfers at once on one curl multi handle, and reports
 * each outcome (FinishDelivery: delivered, pending again at a back-off
 * time, or failed). A slow or dead channel only holds its own transfer: the
 * scheduler's thread never waits on it.
 *
 * Delivery is at least once: a keplerd killed mid-send leaves its claims
 * 'sending' until their lease runs out, and the next leader claims and
 * sends them again with the same dedup key (docs/kepler.md, "Alert
 * delivery").
 */
#ifndef KP_NOTIFY_H
#define KP_NOTIFY_H

#include <stdint.h>

#include "kp_sched.h"
#include "orr_status.h"

typedef struct kp_notify_opts {
    const char *halley;      /* halleyd target */
    const char *token;       /* service token (ClaimDeliveries needs it) */
    const char *worker;      /* this sender's name in claims ("kepler:<id>") */
    int inflight;            /* transfers at once (1..256) */
    int64_t lease_ms;        /* claim lease (>= 2000); a transfer runs at most
                                lease_ms - 1000 */
    int64_t poll_ms;         /* how often an idle sender looks for due
                                deliveries (>= 10) */
    int64_t backoff_ms;      /* first retry's wait, doubled per attempt (0 = 1 s) */
    const char *ca_file;     /* PEM CA bundle for TLS, NULL or "" = system's */
    const char *console_url; /* base of the console's links, "" = none */
    kp_sched_status *status; /* sends while status->epoch != 0 */
} kp_notify_opts;

/* Counters, read from any thread (/metrics). */
typedef struct kp_notify_stats {
    _Atomic uint64_t delivered, retried, failed, claimed;
} kp_notify_stats;

typedef struct kp_notify kp_notify;

/* Start the sender thread. ORR_EINVAL for bad options, ORR_EIO when the RPC
 * client cannot be made. *out is stopped and freed by kp_notify_stop. */
orr_status kp_notify_start(const kp_notify_opts *o, kp_notify **out, orr_err *err);

/* The sender's counters (valid until kp_notify_stop). */
const kp_notify_stats *kp_notify_stats_of(const kp_notify *n);

/* Stop: transfers still running are abandoned and handed back to the
 * outbox at once (pending, due now), then the thread ends. NULL is a no-op.
 * Blocks up to a few seconds (one RPC per handed-back delivery). */
void kp_notify_stop(kp_notify *n);

#endif

/*
 * kp_sched.h - keplerd's scheduler: the `keplerd run` loop.
 *
 * Runs until *stop turns non-zero. While this process leads (kp_elect.h) it
 * materialises instances from cron, resolves dependencies, takes pool
 * tokens, dispatches to executors, retries, times out, and repairs by a
 * periodic sweep; as a standby it only follows the event stream. Design
 * notes are at the top of kp_sched.c.
 */
#ifndef KP_SCHED_H
#define KP_SCHED_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "orr_status.h"

/* What the running scheduler shows its daemon (for /healthz and /metrics):
 * published by the loop at least every 200 ms, read from any thread. */
typedef struct kp_sched_status {
    atomic_int running;                    /* 1 once the clients started, 0 after the stop */
    atomic_int zk_connected;               /* the ZooKeeper session is connected */
    atomic_uint_fast64_t epoch;            /* leadership epoch; 0 = standing by */
    atomic_uint_fast64_t dispatched_total; /* instances dispatched by this process */
} kp_sched_status;

typedef struct kp_sched_opts {
    const char *halley;     /* halleyd target, "127.0.0.1:7070" */
    const char *token;      /* service token */
    const char *zk;         /* ZooKeeper hosts */
    const char *id;         /* this keplerd's id (election node data, actor) */
    const char *default_tz; /* zone of specs that name none */
    int64_t sweep_ms;
    int64_t session_ms;
    int64_t horizon_ms;         /* oldest fire time ever materialised: now - horizon */
    int64_t default_timeout_ms; /* tasks without "timeout" */
    int64_t weak_deadline_ms;   /* weak deps count as met this long after the
                                   schedule time (0 = never) */
    int64_t cache_keep_ms;      /* finished instances stay cached this long */
    kp_sched_status *status;    /* NULL, or published here while running */
} kp_sched_opts;

/* Run the scheduler until *stop. Returns ORR_OK on a requested stop;
 * ORR_EINVAL (err names the option) for bad options; ORR_EIO when the RPC
 * client or ZooKeeper client cannot start. Blocks. */
orr_status kp_sched_run(const kp_sched_opts *o, volatile sig_atomic_t *stop, orr_err *err);

#endif

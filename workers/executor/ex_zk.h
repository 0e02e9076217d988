/*
 * ex_zk.h - the executor's ZooKeeper registration: one ephemeral node
 * /orrery/executors/<id> whose data is the executor's JSON card (id, host,
 * http_port, slots, used_slots, labels, started_at).
 *
 * Built on lib/orr_zk.h (a session renewed only by ex_zk_reconnect). The
 * client's own thread only sets flags; all work happens in ex_zk_tick(),
 * called from the daemon's main loop:
 *   connected and not registered -> orr_zk_claim: the parents (persistent)
 *                                   and the node (a stale node of an older
 *                                   session of ours is replaced)
 *   registered and card changed  -> orr_zk_set
 *   session expired              -> returns EX_ZK_EXPIRED; the daemon kills
 *                                   what it runs, then calls ex_zk_reconnect()
 *
 * Fencing (ex_zk_probe, ex_zk_safe_until): the server ends a session when it
 * has heard nothing from it for the negotiated timeout T, and the node goes
 * with it; keplerd then fails the executor's instances and retries them
 * elsewhere. orr_zk_probe/orr_zk_safe_until (orr_zk.h, "Fencing") tell until
 * when the session is certainly alive; past it the executor cannot be sure
 * and must kill what it runs. Both use a monotonic clock (the one of
 * ex_now_ms): the server's and ours run at the same rate.
 */
#ifndef EX_ZK_H
#define EX_ZK_H

#include <stdint.h>

#include "orr_status.h"

typedef struct ex_zk ex_zk;

typedef enum ex_zk_state {
    EX_ZK_DOWN = 0,   /* not connected (yet, or for the moment) */
    EX_ZK_REGISTERED, /* the node exists with the latest card */
    EX_ZK_EXPIRED,    /* the session is gone: kill, then ex_zk_reconnect */
} ex_zk_state;

/* Start connecting to hosts ("127.0.0.1:2181") for node path. Returns at
 * once; ORR_EINVAL if the client cannot be created. */
orr_status ex_zk_start(const char *hosts, const char *path, int session_ms, ex_zk **out,
                       orr_err *err);
/* Set the card (JSON text, copied); written at the next tick. Thread-safe. */
void ex_zk_set_card(ex_zk *z, const char *json);
/* Do pending work (see above). Returns the state after it. Main thread only. */
ex_zk_state ex_zk_tick(ex_zk *z);
/* Send a probe request if connected and none was sent for the probe interval
 * (see above). Never blocks. Thread-safe. */
void ex_zk_probe(ex_zk *z);
/* Monotonic ms (ex_now_ms clock) until which the current session is certainly
 * alive; 0 while no probe of the current session was answered. *timeout_ms
 * (may be NULL) gets the negotiated session timeout or the requested one
 * before the first connection. Thread-safe. */
int64_t ex_zk_safe_until(ex_zk *z, int *timeout_ms);
/* Close the expired session and open a new one. */
void ex_zk_reconnect(ex_zk *z);
/* Close (the node goes away with the session) and free. NULL is a no-op. */
void ex_zk_stop(ex_zk *z);

#endif

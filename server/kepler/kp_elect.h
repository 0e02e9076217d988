/*
 * kp_elect.h - keplerd's ZooKeeper side: leader election and executor
 * discovery, on the shared client (lib/orr_zk.h, lib/orr_zk_elect.h).
 *
 * Election: the recipe of orr_zk_elect.h under /orrery/kepler/election
 * (ephemeral sequential n_<seq>, data: this keplerd's id; the lowest leads,
 * the others watch their predecessor). A leader whose session is
 * disconnected or expired is NOT leader from that instant
 * (kp_elect_leader_epoch() returns 0 before anything else happens), so a
 * deposed leader stops writing before the session can expire on the server
 * and a standby take over. halleyd's compare-and-set on every transition
 * remains the fence for a write already in flight.
 *
 * Epochs: each time this process gains leadership the epoch grows; the
 * scheduler rebuilds its state from Halley when it sees a new epoch.
 *
 * Executors: children of /orrery/executors and their JSON data (see
 * kp_dispatch.h), watched; kp_elect_executors() hands out the latest
 * snapshot and its version. Until the first listing of a session is done the
 * snapshot version is 0 (the scheduler then neither dispatches nor declares
 * any executor lost).
 *
 * Threads: the ZooKeeper client's own threads run the listeners, which only
 * set flags; one kp_elect thread does every election and listing call and
 * opens a new session after an expiry. All functions here are thread-safe.
 */
#ifndef KP_ELECT_H
#define KP_ELECT_H

#include <stddef.h>
#include <stdint.h>

#include "kp_dispatch.h"
#include "orr_status.h"

#define KP_ZK_ROOT      "/orrery"
#define KP_ZK_KEPLER    "/orrery/kepler"
#define KP_ZK_ELECTION  "/orrery/kepler/election"
#define KP_ZK_WATERMARK "/orrery/kepler/materialised"
#define KP_ZK_EXECUTORS "/orrery/executors"

typedef struct kp_elect kp_elect;

/* Connect to hosts ("127.0.0.1:2181") with session timeout session_ms and
 * start campaigning as id. Returns at once (connection is asynchronous);
 * ORR_EINVAL for bad arguments, ORR_EIO if the client cannot start. */
orr_status kp_elect_start(const char *hosts, int session_ms, const char *id, kp_elect **out,
                          orr_err *err);
/* Leave the election (delete the node), close the session, free. NULL ok. */
void kp_elect_stop(kp_elect *e);

/* 1 while the ZooKeeper session is connected, else 0. */
int kp_elect_connected(kp_elect *e);

/* 0 when not the leader right now; else the epoch of this leadership. */
uint64_t kp_elect_leader_epoch(kp_elect *e);

/* Copy the executor snapshot: *out is a new array of *n records (free each
 * with kp_exec_clear, then free the array). Returns the snapshot version (0:
 * no listing yet in this session; *out NULL, *n 0). */
uint64_t kp_elect_executors(kp_elect *e, kp_exec **out, size_t *n);

/* Read the global materialisation watermark (ms); ORR_ENOTFOUND if never
 * written, ORR_EUNAVAIL without a session. */
orr_status kp_elect_watermark_get(kp_elect *e, int64_t *ms);
/* Store it (only if larger than the stored one). Only the leader should. */
orr_status kp_elect_watermark_set(kp_elect *e, int64_t ms);

#endif

/*
 * orr_zk_elect.h - leader election on ZooKeeper (the sequential-node recipe).
 *
 * Recipe: every contender creates an ephemeral sequential node DIR/n_<seq>
 * (data: its id). The lowest sequence leads; every other one watches only
 * its predecessor and looks again when that one goes (no herd). A leader
 * whose session is disconnected or expired is NOT leader from that instant
 * (orr_zk_elect_epoch() answers 0 before anything else happens), so a
 * deposed leader stops acting before its session can expire on the server
 * and another contender take over. What the leader writes elsewhere still
 * needs its own fence (a compare-and-set) for a write already in flight.
 *
 * Epochs: each time this contender gains leadership its epoch grows (1, 2,
 * ...), also after a mere reconnection; a caller that keeps state as leader
 * rebuilds it when it sees a new epoch.
 *
 * Driving: the election makes no call on its own. Its owner calls
 * orr_zk_elect_step() from one thread when a watch under DIR fired, when the
 * session (re)connected, and now and then (keplerd: every second); the step
 * makes sure our node exists, lists DIR, leads or watches the predecessor.
 * The election listens to the session itself (orr_zk_listen) to drop
 * leadership at once. The handle may renew its session meanwhile (the old
 * node went with the old session; the next step joins again).
 *
 * Changes (joined, gained, lost) are reported to opts' fn, for the owner's
 * log: from the step's thread, or for a loss by the session also from a
 * client thread (quick, no call into the handle).
 */
#ifndef ORR_ZK_ELECT_H
#define ORR_ZK_ELECT_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"
#include "orr_zk.h"

typedef struct orr_zk_elect orr_zk_elect;

typedef enum orr_zk_elect_change {
    ORR_ZK_ELECT_JOINED, /* our node was created: node */
    ORR_ZK_ELECT_GAINED, /* we lead: node, epoch */
    ORR_ZK_ELECT_LOST,   /* we no longer lead: epoch (the one that ended), why */
} orr_zk_elect_change;

typedef void (*orr_zk_elect_fn)(void *ctx, orr_zk_elect_change c, const char *node, uint64_t epoch,
                                const char *why);

/* Stand in the election under dir (an absolute path; created with its
 * parents) as id (1-200 bytes, the node's data) on zk. fn/ctx may be NULL.
 * ORR_EINVAL for a bad dir or id, ORR_ETOOBIG if zk has no room for another
 * listener. Makes no call yet. Free with orr_zk_elect_free before zk. */
orr_status orr_zk_elect_new(orr_zk *zk, const char *dir, const char *id, orr_zk_elect_fn fn,
                            void *ctx, orr_zk_elect **out, orr_err *err);
/* One campaign step (see the top); does nothing while zk is not connected.
 * ORR_OK, or the failure of the ZooKeeper call that stopped it (the next
 * step tries again). Blocks on ZooKeeper calls; one thread at a time. */
orr_status orr_zk_elect_step(orr_zk_elect *el, orr_err *err);
/* 0 when not the leader right now; else the epoch of this leadership.
 * Lock-free, any thread. */
uint64_t orr_zk_elect_epoch(orr_zk_elect *el);
/* The path of our node ("" when none), copied into buf. */
const char *orr_zk_elect_node(orr_zk_elect *el, char *buf, size_t n);
/* Leave the election: stop leading and delete our node (if the session
 * still has it). Blocks on one ZooKeeper call. The next step joins again. */
void orr_zk_elect_leave(orr_zk_elect *el);
/* Stop listening and free (without leaving: closing the session does that
 * too). NULL ok. */
void orr_zk_elect_free(orr_zk_elect *el);

/* The ordering rule alone: children of DIR (any order) and our node's name.
 * Returns our rank (0 = we lead) and sets *pred to the predecessor's name
 * (NULL for rank 0); -1 if ours is not among them. Names compare as strings
 * (the 10-digit counter of n_ keeps that the numeric order). */
int orr_zk_elect_rank(char **names, size_t n, const char *mine, const char **pred);

#endif

/*
 * orr_zk.h - a small synchronous ZooKeeper reader for daemons that only look
 * (galaxyd lists live executors and finds their log servers).
 *
 * Wraps the multi-threaded C client (libzookeeper_mt). orr_zk_open() waits
 * until the session is connected or the timeout passes; later calls on a
 * session that was lost reconnect once before failing. Thread-safe: calls
 * from several threads share the one session (the client serialises them).
 * Daemons that register nodes or take part in elections keep their own
 * session logic (workers/executor/ex_zk.c, server/kepler/kp_elect.c).
 */
#ifndef ORR_ZK_H
#define ORR_ZK_H

#include "orr_arena.h"
#include "orr_buf.h"
#include "orr_status.h"

typedef struct orr_zk orr_zk;

/* Connect to hosts ("127.0.0.1:2181,..."), waiting at most timeout_ms.
 * ORR_EUNAVAIL (with the hosts in err) if no session came up; *out is then
 * still a usable handle that retries on the next call. Free with orr_zk_close. */
orr_status orr_zk_open(const char *hosts, int timeout_ms, orr_zk **out, orr_err *err);
void orr_zk_close(orr_zk *zk);

/* Children of path: *names (arena array of arena strings) and *n.
 * ORR_ENOTFOUND if path does not exist, ORR_EUNAVAIL without a session. */
orr_status orr_zk_children(orr_zk *zk, const char *path, orr_arena *a, char ***names, size_t *n,
                           orr_err *err);
/* Data of path appended to out (at most 1 MiB). Same errors. */
orr_status orr_zk_get(orr_zk *zk, const char *path, orr_buf *out, orr_err *err);

/* Called from a ZooKeeper client thread when a watched node may have
 * changed: quick, and no call back into the handle. */
typedef void (*orr_zk_notify)(void *ctx);

/* As orr_zk_get, and leaves a one-shot watch on path: fn(ctx) is called
 * once the node is changed or deleted (or, after ORR_ENOTFOUND, created),
 * or when the session is lost; read again to see what changed and to watch
 * again. One fn/ctx per handle (the last one given wins). */
orr_status orr_zk_get_watch(orr_zk *zk, const char *path, orr_buf *out, orr_zk_notify fn, void *ctx,
                            orr_err *err);

#endif

/*
 * orr_zk.h - Orrery's ZooKeeper client: sessions, nodes, watches and the
 * fencing probe. Every ZooKeeper call of the project goes through lib/
 * (this module and the election recipe in orr_zk_elect.h).
 *
 * Wraps the multi-threaded C client (libzookeeper_mt). Who uses it today:
 * galaxyd (live executors, stream publishing), sortd (its spec, watched),
 * keplerd (election, executor discovery, the watermark), executord (its
 * ephemeral card and the fencing probe).
 *
 * Sessions. orr_zk_start() returns at once; the client connects in the
 * background and keeps reconnecting after a connection loss. Session events
 * (connected, disconnected, expired) and watch events go to the listeners
 * (opts.on_event, orr_zk_listen), called on a client thread: they must be
 * quick and must not call into the handle. After the server expired the
 * session (its ephemeral nodes and watches are gone), the handle opens a new
 * one on the next call (the default), or, with opts.manual_renew, answers
 * ORR_EUNAVAIL until the owner calls orr_zk_renew(): a holder of ephemeral
 * nodes that must stop acting on them first (executord kills what it runs).
 *
 * Calls on nodes are synchronous and thread-safe (several threads share the
 * session; the client serialises them). Each waits at most opts.wait_ms for
 * a connected session. Errors, in err->field "zk":
 *   ORR_ENOTFOUND  no such node (or no parent, for a create)
 *   ORR_EEXIST     create: the node exists
 *   ORR_ECONFLICT  set/delete: the node's version is not the expected one
 *   ORR_EINVAL     a malformed path (orr_zk_path_check), or a request the
 *                  server refuses as such (children of an ephemeral node)
 *   ORR_EUNAVAIL   no session: not reachable, connection lost, expired
 *   ORR_EIO        anything else the server answers
 *
 * Fencing. A request sent at time t and answered proves the server heard from
 * the session at or after t, so the session lives at least until t + T (T =
 * the negotiated session timeout). orr_zk_probe() keeps such a request in
 * flight (every T/8, 100 ms..1 s); orr_zk_safe_until() is the send time of
 * the last answered one + T - margin (margin = T/4, at least 1 s, at most
 * T/2), on the monotonic clock of orr_zk_now_ms(). Past it the holder cannot
 * be sure its session (and its ephemeral nodes) still exist.
 */
#ifndef ORR_ZK_H
#define ORR_ZK_H

#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_buf.h"
#include "orr_status.h"

typedef struct orr_zk orr_zk;

typedef enum orr_zk_event {
    ORR_ZK_CONNECTED,    /* the session is (again) connected; path NULL */
    ORR_ZK_DISCONNECTED, /* connection lost, the client reconnects; path NULL */
    ORR_ZK_EXPIRED,      /* the server ended the session; path NULL */
    ORR_ZK_CREATED,      /* a watched node was created */
    ORR_ZK_DELETED,      /* a watched node was deleted */
    ORR_ZK_CHANGED,      /* a watched node's data changed */
    ORR_ZK_CHILDREN,     /* a watched node's children changed */
} orr_zk_event;

/* Where the session stands (orr_zk_state). */
typedef enum orr_zk_state {
    ORR_ZK_NONE,       /* no client: it could not be started (hosts did not resolve) */
    ORR_ZK_CONNECTING, /* not connected (yet, or for the moment) */
    ORR_ZK_LIVE,       /* connected */
    ORR_ZK_GONE,       /* expired; a new session comes with the next call or orr_zk_renew */
} orr_zk_state;

/* A listener: ev, and for a watch event the node's path (NULL for session
 * events). Called on a client thread; quick, and no call into the handle. */
typedef void (*orr_zk_listener)(void *ctx, orr_zk_event ev, const char *path);

typedef struct orr_zk_opts {
    int session_ms;           /* requested session timeout; 0 = 10000 */
    int wait_ms;              /* how long a call waits for a connection; 0 = 2000 */
    int manual_renew;         /* 1: after an expiry, only orr_zk_renew opens a new session */
    orr_zk_listener on_event; /* may be NULL */
    void *ctx;
} orr_zk_opts;

/* Start a client for hosts ("127.0.0.1:2181,...", a "/chroot" suffix
 * allowed). Returns at once. ORR_EINVAL (*out NULL) for an empty hosts;
 * ORR_EUNAVAIL if the client could not be started (unresolvable hosts):
 * *out is then still a handle in state ORR_ZK_NONE that tries again on the
 * next call (automatic renewal) or at orr_zk_renew. opts may be NULL
 * (defaults). Free with orr_zk_close. */
orr_status orr_zk_start(const char *hosts, const orr_zk_opts *opts, orr_zk **out, orr_err *err);
/* orr_zk_start with defaults and wait_ms = timeout_ms, then wait that long
 * for the connection: ORR_EUNAVAIL (naming the hosts) if none came up, *out
 * still a usable handle that retries on the next call. */
orr_status orr_zk_open(const char *hosts, int timeout_ms, orr_zk **out, orr_err *err);
/* Close the session (its ephemeral nodes go with it) and free. NULL ok.
 * Not from a listener. */
void orr_zk_close(orr_zk *zk);

/* Wait at most timeout_ms for a connected session (opening a new one first
 * if the last expired and renewal is automatic). ORR_EUNAVAIL if none. */
orr_status orr_zk_wait(orr_zk *zk, int timeout_ms, orr_err *err);
/* Close the current session, if any, and start a new one (returns at once;
 * calls wait for it). ORR_EUNAVAIL if the client could not be started (the
 * handle stays in ORR_ZK_NONE). Not from a listener. */
orr_status orr_zk_renew(orr_zk *zk, orr_err *err);
/* Where the session stands right now (see orr_zk_state). */
orr_zk_state orr_zk_state_now(orr_zk *zk);
/* 1 when the session is connected right now (lock-free). */
int orr_zk_connected(orr_zk *zk);
/* The negotiated session timeout (ms), or the requested one before the
 * first connection. */
int orr_zk_timeout_ms(orr_zk *zk);
/* The id of the session as the server knows it (the owner of its ephemeral
 * nodes); 0 before the first connection of the current session. */
int64_t orr_zk_session_id(orr_zk *zk);

/* Add a listener (besides opts.on_event): ORR_ETOOBIG past 4. Remove it with
 * orr_zk_unlisten, after which it is not called any more. Not from a
 * listener. */
orr_status orr_zk_listen(orr_zk *zk, orr_zk_listener fn, void *ctx);
void orr_zk_unlisten(orr_zk *zk, orr_zk_listener fn, void *ctx);

/* ------------------------------------------------------------------ nodes */

typedef struct orr_zk_stat {
    int32_t version; /* of the data: the expected version of set/delete */
    int64_t owner;   /* session id owning an ephemeral node; 0 = persistent */
    int32_t num_children;
    int32_t data_length;
} orr_zk_stat;

#define ORR_ZK_EPHEMERAL  1 /* goes with the session that created it */
#define ORR_ZK_SEQUENTIAL 2 /* the server appends a 10-digit counter to the name */

/* Does path exist? ORR_OK (and *st, may be NULL) or ORR_ENOTFOUND. With
 * watch, a one-shot watch reports its creation, change or deletion. */
orr_status orr_zk_exists(orr_zk *zk, const char *path, int watch, orr_zk_stat *st, orr_err *err);
/* Data of path appended to out (at most 1 MiB, ORR_ETOOBIG beyond), its stat
 * in *st (may be NULL). With watch, a one-shot watch on the node: on its
 * change or deletion, or, after ORR_ENOTFOUND, on its creation. */
orr_status orr_zk_read(orr_zk *zk, const char *path, int watch, orr_buf *out, orr_zk_stat *st,
                       orr_err *err);
/* Children of path: *names (arena array of arena strings, NULL-terminated,
 * in the server's order) and *n. With watch, a one-shot watch on the list. */
orr_status orr_zk_list(orr_zk *zk, const char *path, int watch, orr_arena *a, char ***names,
                       size_t *n, orr_err *err);
/* Create path with data (len bytes; data NULL = no data) and flags
 * (ORR_ZK_EPHEMERAL, ORR_ZK_SEQUENTIAL). *created (may be NULL; arena
 * string) gets the name the server gave it. ORR_EEXIST, ORR_ENOTFOUND (no
 * parent). */
orr_status orr_zk_create(orr_zk *zk, const char *path, const void *data, size_t len, int flags,
                         orr_arena *a, char **created, orr_err *err);
/* Replace path's data if its version is version (-1: any). ORR_ENOTFOUND,
 * ORR_ECONFLICT. */
orr_status orr_zk_set(orr_zk *zk, const char *path, const void *data, size_t len, int version,
                      orr_err *err);
/* Delete path if its version is version (-1: any). ORR_ENOTFOUND,
 * ORR_ECONFLICT, ORR_ESTATE (it has children). */
orr_status orr_zk_delete(orr_zk *zk, const char *path, int version, orr_err *err);

/* Create path and every missing parent as empty persistent nodes; nodes that
 * exist are fine. */
orr_status orr_zk_mkdirs(orr_zk *zk, const char *path, orr_err *err);
/* Store data at path as a persistent node: parents created, the node
 * created or its data replaced (a concurrent creator is fine). */
orr_status orr_zk_put(orr_zk *zk, const char *path, const void *data, size_t len, orr_err *err);
/* Make path an ephemeral node of this session holding data: parents created;
 * if it is already ours its data is replaced; a node of another session at
 * path (a former life of the caller, whose session has not expired yet) is
 * deleted and created anew. Only for a path the caller alone may own. */
orr_status orr_zk_claim(orr_zk *zk, const char *path, const void *data, size_t len, orr_err *err);

/* The reader style of the first callers (galaxyd, sortd): */
/* orr_zk_list without a watch. */
orr_status orr_zk_children(orr_zk *zk, const char *path, orr_arena *a, char ***names, size_t *n,
                           orr_err *err);
/* orr_zk_read without a watch and without the stat. */
orr_status orr_zk_get(orr_zk *zk, const char *path, orr_buf *out, orr_err *err);

/* Called from a ZooKeeper client thread when a watched node may have
 * changed: quick, and no call back into the handle. */
typedef void (*orr_zk_notify)(void *ctx);

/* orr_zk_read with a watch, and fn(ctx) is called once the node is changed
 * or deleted (or, after ORR_ENOTFOUND, created), or when the session is
 * lost; read again to see what changed and to watch again. One fn/ctx per
 * handle (the last one given wins); the listeners see the same events. */
orr_status orr_zk_get_watch(orr_zk *zk, const char *path, orr_buf *out, orr_zk_notify fn, void *ctx,
                            orr_err *err);

/* ---------------------------------------------------------------- fencing */

/* Milliseconds on the monotonic clock the fencing calls use. */
int64_t orr_zk_now_ms(void);
/* Send a probe if connected and none was sent for the probe interval (see
 * the top). Never blocks. Thread-safe. */
void orr_zk_probe(orr_zk *zk);
/* Monotonic ms until which the current session is certainly alive; 0 while
 * no probe of the current session was answered. *timeout_ms (may be NULL)
 * gets orr_zk_timeout_ms(). Thread-safe. */
int64_t orr_zk_safe_until(orr_zk *zk, int *timeout_ms);
/* The fencing arithmetic alone: last_ack + t - margin(t); 0 if last_ack is 0. */
int64_t orr_zk_safe_until_at(int64_t last_ack_ms, int timeout_ms);
/* The probe interval for a session timeout: t/8 within 100..1000 ms. */
int orr_zk_probe_every_ms(int timeout_ms);

/* ------------------------------------------------------------------ paths */

/* ORR_OK if path is an absolute ZooKeeper path: "/" or "/a/b" with no empty,
 * "." or ".." component, no trailing '/', no control characters, at most
 * 1024 bytes. Else ORR_EINVAL naming the fault. */
orr_status orr_zk_path_check(const char *path, orr_err *err);
/* dir + "/" + name (dir "/" gives "/name"), in a. */
char *orr_zk_path_join(orr_arena *a, const char *dir, const char *name);
/* The last component of path ("/a/b" -> "b"; "/" -> ""): a pointer into path. */
const char *orr_zk_path_base(const char *path);

#endif

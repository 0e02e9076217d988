/*
 * orr_rpc_server.c - the gRPC server half of orr_rpc (see orr_rpc.h).
 *
 * Threads and queues
 *   One completion queue (CQ) is shared by `threads` worker threads, each
 *   looping on grpc_completion_queue_next(). A slow unary handler therefore
 *   holds only its own worker: events of other calls go to the others (with
 *   the gate below, after one to two periods of handoff_us). Every
 *   method of the table is registered with gRPC (payload read with the call,
 *   which saves one CQ round trip per call) and keeps a few
 *   grpc_server_request_registered_call() slots armed; a few generic
 *   grpc_server_request_call() slots catch unknown paths. Each new call
 *   re-arms its slot at once. Streaming handlers block while they wait for events,
 *   so each runs on a thread of its own (at most max_streams, beyond that
 *   RESOURCE_EXHAUSTED); their batch completions still arrive on the shared
 *   CQ and a worker hands them over through the call's mutex/condvar.
 *
 * The gate (opts->handoff_us > 0)
 *   gRPC's epoll1 poller lets one thread at a time wait in epoll; when it
 *   wakes with an event it first wakes another waiting thread to take over
 *   the waiting, then returns. With many workers on a CQ that is a wake-up
 *   of a second thread per event, on top of the one the event needs. The
 *   gate lets one worker of a CQ (the poller) wait in
 *   grpc_completion_queue_next; it handles what it takes itself and goes
 *   back to waiting, and the other workers sleep on a futex of the gate. A
 *   watchdog thread lets one of them in once no worker of the CQ has waited
 *   for handoff_us (the poller is busy with a slow handler). A worker that
 *   finds another one polling when it is done goes to sleep. So calls that
 *   are quick cost no hand-off, and a slow one holds the others back by
 *   handoff_us at most. The watchdog sleeps without a timer while every CQ
 *   has its poller waiting; the first event taken wakes it.
 *
 * Per-call state machine (every arrow is one CQ event, tags in `struct
 * srv_tag`):
 *
 *   NEW ─┬─ unknown method ──────────────────────────┐
 *        ├─ bad/missing bearer token ────────────────┤ status batch
 * *        └─ request (registered slot: came with NEW; │
 *           generic: RECV_MESSAGE batch -> RECV)     │
 *                              ───┬─ size/decode err ─┤ (SEND_INITIAL_MD,
 *                                 ├─ unary handler ───┤  [SEND_MESSAGE],
 *                                 │                   ├> SEND_STATUS,
 *                                 │                   │  RECV_CLOSE) -> FINISH
 *                                 │                   │  -> release
 *                                 └─ stream thread: RECV_CLOSE (-> CLOSE),
 *                                    handler, SEND_MESSAGE* (-> SEND each),
 *                                    SEND_STATUS (-> SEND), wait CLOSE,
 *                                    join list -> release
 *
 * Bidi and client-streaming calls use the same stream handler: the first
 * client message arrives as its request (read with the call, as for every
 * registered method), and the handler pulls the rest itself.
 * orr_rpc_stream_recv() starts one RECV_MESSAGE batch (-> MSG) and waits on
 * the call's condvar; a worker delivers the MSG event (message, or NULL
 * when the client half-closed = EOF, or failure = cancelled). On a
 * server-streaming call the client has half-closed already: EOF. A recv that
 * times out leaves its batch armed and the next recv waits for it, so at
 * most one RECV_MESSAGE is ever out. Sends and receives alternate on the
 * handler's thread; gRPC allows a SEND_MESSAGE and a RECV_MESSAGE batch to
 * be out at once, and both are started by that one thread. After the status
 * batch the thread waits for CLOSE and for any read still out (the status
 * ends the stream, which completes it) before the context is released.
 *
 *   stream thread: RECV_CLOSE, then per client message
 *     RECV_MESSAGE (-> MSG) ... SEND_MESSAGE* (-> SEND each) ...
 *     until MSG brings EOF; SEND_STATUS (-> SEND), wait CLOSE (+ MSG) -> release
 *
 * Invariants
 *   - At most one batch of a call is started at a time from one thread: the
 *     worker owns a unary call; the stream thread owns a streaming or bidi
 *     call after it starts (its RECV_CLOSE batch is receive-only and runs
 *     alongside; so does a bidi call's single RECV_MESSAGE batch). Workers
 *     only complete batches: they flip flags under the call's mutex.
 *   - Every call context comes from s->pool and goes back exactly once;
 *     s->live counts those out of the pool (armed slots included).
 *   - Destroy: stop flag, the gates opened (every sleeping worker let in,
 *     the watchdog joined), grpc_server_shutdown_and_notify, cancel all calls;
 *     workers keep draining until the shutdown tag arrived and live == 0;
 *     stream threads are joined; then the CQ is shut down and the workers
 *     joined. Nothing is left behind for the leak checker.
 *
 * Per-call memory: a context (arena included) reused from a free list; the
 * request is unpacked into the arena; nothing else is allocated by Orrery on
 * the unary path apart from what gRPC needs.
 */
#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_futex.h"
#include "orr_rpc.h"
#include "orr_rpc_codec.h"

#include <errno.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_hash.h"
#include "orr_log.h"

#define SRV_DEFAULT_THREADS     8
#define SRV_DEFAULT_MAX_STREAMS 256
#define SRV_DEFAULT_MAX_MSG     (4u * 1024 * 1024)
#define SRV_POOL_KEEP           512 /* idle contexts kept for reuse */
#define SRV_N_BUCKETS           12
#define SRV_GENERIC_SLOTS       4 /* armed slots for unregistered paths */
#define SRV_MIN_HANDOFF_US      50

const uint64_t orr_rpc_latency_bounds_us[SRV_N_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000,
};

enum srv_tag_kind { TAG_NEW, TAG_RECV, TAG_FINISH, TAG_SEND, TAG_CLOSE, TAG_MSG, TAG_SHUTDOWN };

struct srv_tag {
    enum srv_tag_kind kind;
    orr_rpc_call *call;
};

struct srv_method {
    char *path; /* "/pkg.Service/Method" */
    size_t path_len;
    const char *name;
    const char *svc_name;   /* full service name, e.g. "grpc.health.v1.Health" */
    const char *stats_name; /* name, or "svc/name" when an earlier service has a name */
    const ProtobufCMethodDescriptor *md;
    orr_rpc_unary_fn unary;
    orr_rpc_stream_fn stream;
    int handler_auth; /* the handler checks the bearer token itself */
    int public;       /* needs no token at all (standard services) */
    void *ctx;        /* passed to the handler */
    void *reg;        /* grpc_server_register_method handle */
    _Atomic uint64_t calls;
    _Atomic uint64_t errors;
    _Atomic uint64_t buckets[SRV_N_BUCKETS + 1]; /* not cumulative; last = above all */
    _Atomic uint64_t sum_ns;
};

struct orr_rpc_call {
    orr_rpc_server *srv;
    orr_rpc_call *next; /* free list / finished-stream list */
    grpc_call *call;
    struct srv_method *armed;  /* method of a registered slot; NULL = generic slot */
    int cqi;                   /* index of the CQ the call is bound to */
    grpc_call_details details; /* generic slots only */
    gpr_timespec deadline;
    grpc_metadata_array md;
    grpc_byte_buffer *recv_bb;
    grpc_byte_buffer *send_bb;
    grpc_slice status_details;
    grpc_metadata trailer[2]; /* orr-field, grpc-status-details-bin */
    int has_details;
    int n_trailer;
    int close_cancelled; /* filled by RECV_CLOSE_ON_SERVER */
    int md_sent;         /* initial metadata went out (streams) */
    int is_stream;
    orr_status status; /* final status, for the stats */
    struct srv_method *m;
    orr_arena *arena;
    const char *peer;
    struct timespec t0;
    const ProtobufCMessage *req;
    struct srv_tag t_new, t_recv, t_finish, t_send, t_close, t_msg;
    /* streaming: the stream thread waits here for worker-delivered events */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int send_pending;
    int send_ok;
    int close_done;
    atomic_int cancelled;
    /* bidi: one RECV_MESSAGE batch at a time, started by the stream thread */
    grpc_byte_buffer *msg_bb;
    int msg_pending; /* a RECV_MESSAGE batch is out */
    int msg_done;    /* it completed; msg_ok/msg_bb hold its result */
    int msg_ok;
    int msg_eof; /* the client half-closed (or the read failed): no more reads */
};

/* One gate per CQ (see "The gate" above). */
struct srv_gate {
    atomic_uint polling;  /* 1 while a worker holds the right to wait on the CQ */
    atomic_uint taken;    /* events taken by the CQ's pollers */
    _Atomic uint32_t seq; /* futex word the other workers sleep on */
    atomic_int parked;    /* workers asleep (or about to be) on seq */
};

struct orr_rpc_server {
    grpc_server *server;
    grpc_completion_queue **cqs;
    int n_cqs;
    void *ctx;
    int port;
    int n_threads;
    int max_streams;
    int n_armed; /* registered slots per method */
    size_t max_msg;
    char *auth; /* the service token, or NULL */
    size_t auth_len;
    struct srv_method *methods;
    size_t n_methods;
    struct srv_method **slots; /* open-addressing table by path */
    size_t n_slots;
    pthread_t *workers;
    int n_workers;
    struct srv_gate *gates; /* one per CQ; NULL = no gate */
    int handoff_us;
    pthread_t watchdog;
    int has_watchdog;
    _Atomic uint32_t watch_word; /* futex word the watchdog sleeps on */
    atomic_int watch_asleep;     /* it sleeps until the next event taken */
    /* orr_rpc_server_worker_stats: events the workers took, the time they
     * spent on them, and the wake-ups past a gate; padded onto cache lines
     * of their own, away from the flags every worker reads at each event
     * (padding, not alignment: the server comes from malloc) */
    struct {
        char before[64];
        atomic_uint_fast64_t events;
        atomic_uint_fast64_t busy_ns;
        atomic_uint_fast64_t let_ins;
        char after[64];
    } work;
    int started;
    atomic_int stopping;
    struct srv_tag t_shutdown;
    /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    orr_rpc_call *pool;
    size_t pool_len;
    size_t live;
    int n_streams;
    orr_rpc_call *finished; /* stream threads to join */
    struct {
        void *p;
        void (*free_fn)(void *);
    } owned[8]; /* freed with the server (orr_rpc_server_own) */
    int n_owned;
    int shutdown_done;
};

/* ------------------------------------------------------------ helpers */

static struct srv_method *srv_lookup(orr_rpc_server *s, grpc_slice path)
{
    const void *p = GRPC_SLICE_START_PTR(path);
    size_t n = GRPC_SLICE_LENGTH(path);
    size_t mask = s->n_slots - 1;
    for (size_t i = orr_hash_fnv1a(p, n) & mask;; i = (i + 1) & mask) {
        struct srv_method *m = s->slots[i];
        if (!m)
            return NULL;
        if (m->path_len == n && memcmp(m->path, p, n) == 0)
            return m;
    }
}

/* Compares in time that depends only on the expected length. */
static int srv_ct_equal(const unsigned char *got, size_t got_len, const unsigned char *want,
                        size_t want_len)
{
    unsigned diff = got_len != want_len;
    for (size_t i = 0; i < want_len; i++)
        diff |= (unsigned)(want[i] ^ (i < got_len ? got[i] : 0));
    return diff == 0;
}

/* The token of the call's first `authorization` header if it is a bearer
 * credential (orr_rpc_parse_bearer); 0 otherwise. */
static int srv_call_bearer(const orr_rpc_call *c, const char **tok, size_t *len)
{
    for (size_t i = 0; i < c->md.count; i++) {
        const grpc_metadata *e = &c->md.metadata[i];
        if (GRPC_SLICE_LENGTH(e->key) == 13 &&
            memcmp(GRPC_SLICE_START_PTR(e->key), "authorization", 13) == 0)
            return orr_rpc_parse_bearer((const char *)GRPC_SLICE_START_PTR(e->value),
                                        GRPC_SLICE_LENGTH(e->value), tok, len);
    }
    return 0;
}

static int srv_auth_ok(orr_rpc_server *s, orr_rpc_call *c)
{
    if (!s->auth || (c->m && (c->m->handler_auth || c->m->public)))
        return 1;
    const char *tok;
    size_t len;
    if (!srv_call_bearer(c, &tok, &len))
        return 0;
    return srv_ct_equal((const unsigned char *)tok, len, (const unsigned char *)s->auth,
                        s->auth_len);
}

static uint64_t srv_elapsed_ns(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ns = (int64_t)(t1.tv_sec - t0->tv_sec) * 1000000000 + (t1.tv_nsec - t0->tv_nsec);
    return ns > 0 ? (uint64_t)ns : 0;
}

static void srv_stats_record(orr_rpc_call *c)
{
    struct srv_method *m = c->m;
    if (!m)
        return;
    uint64_t ns = srv_elapsed_ns(&c->t0);
    uint64_t us = ns / 1000;
    size_t b = 0;
    while (b < SRV_N_BUCKETS && us > orr_rpc_latency_bounds_us[b])
        b++;
    atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed);
    if (c->status != ORR_OK)
        atomic_fetch_add_explicit(&m->errors, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_ns, ns, memory_order_relaxed);
}

/* ------------------------------------------------------------ context pool */

static orr_rpc_call *srv_ctx_new(orr_rpc_server *s)
{
    orr_rpc_call *c = orr_xcalloc(1, sizeof(*c));
    c->srv = s;
    c->arena = orr_arena_create(0);
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->t_new = (struct srv_tag){TAG_NEW, c};
    c->t_recv = (struct srv_tag){TAG_RECV, c};
    c->t_finish = (struct srv_tag){TAG_FINISH, c};
    c->t_send = (struct srv_tag){TAG_SEND, c};
    c->t_close = (struct srv_tag){TAG_CLOSE, c};
    c->t_msg = (struct srv_tag){TAG_MSG, c};
    return c;
}

static void srv_ctx_free(orr_rpc_call *c)
{
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    orr_arena_destroy(c->arena);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static orr_rpc_call *srv_ctx_get(orr_rpc_server *s)
{
    pthread_mutex_lock(&s->mu);
    orr_rpc_call *c = s->pool;
    if (c) {
        s->pool = c->next;
        s->pool_len--;
    }
    s->live++;
    pthread_mutex_unlock(&s->mu);
    if (!c)
        c = srv_ctx_new(s);
    c->next = NULL;
    return c;
}

/* Drop everything the call holds and return the context to the pool. */
static void srv_ctx_put(orr_rpc_server *s, orr_rpc_call *c)
{
    if (c->call) {
        grpc_call_unref(c->call);
        c->call = NULL;
    }
    grpc_call_details_destroy(&c->details);
    grpc_call_details_init(&c->details);
    grpc_metadata_array_destroy(&c->md);
    grpc_metadata_array_init(&c->md);
    if (c->recv_bb) {
        grpc_byte_buffer_destroy(c->recv_bb);
        c->recv_bb = NULL;
    }
    if (c->send_bb) {
        grpc_byte_buffer_destroy(c->send_bb);
        c->send_bb = NULL;
    }
    if (c->msg_bb) {
        grpc_byte_buffer_destroy(c->msg_bb);
        c->msg_bb = NULL;
    }
    c->msg_pending = c->msg_done = c->msg_ok = c->msg_eof = 0;
    if (c->has_details)
        grpc_slice_unref(c->status_details);
    for (int i = 0; i < c->n_trailer; i++)
        grpc_slice_unref(c->trailer[i].value);
    c->has_details = c->n_trailer = 0;
    c->close_cancelled = c->md_sent = c->is_stream = 0;
    c->send_pending = c->send_ok = c->close_done = 0;
    atomic_store(&c->cancelled, 0);
    c->status = ORR_OK;
    c->m = NULL;
    c->armed = NULL;
    c->peer = NULL;
    c->req = NULL;
    orr_arena_reset(c->arena);

    int keep;
    pthread_mutex_lock(&s->mu);
    keep = s->pool_len < SRV_POOL_KEEP;
    if (keep) {
        c->next = s->pool;
        s->pool = c;
        s->pool_len++;
    }
    s->live--;
    if (atomic_load(&s->stopping))
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!keep)
        srv_ctx_free(c);
}

/* Join finished stream threads and recycle their contexts. */
static void srv_reap(orr_rpc_server *s)
{
    pthread_mutex_lock(&s->mu);
    orr_rpc_call *list = s->finished;
    s->finished = NULL;
    pthread_mutex_unlock(&s->mu);
    while (list) {
        orr_rpc_call *c = list;
        list = c->next;
        pthread_join(c->thread, NULL);
        srv_ctx_put(s, c);
    }
}

/* Arm one slot: for method m (its request arrives with the call), or a
 * generic one (m NULL) that catches paths nobody registered. */
static void srv_arm(orr_rpc_server *s, struct srv_method *m, int cqi)
{
    orr_rpc_call *c = srv_ctx_get(s);
    grpc_call_error e;
    grpc_completion_queue *cq = s->cqs[cqi];
    c->armed = m;
    c->cqi = cqi;
    if (m)
        e = grpc_server_request_registered_call(s->server, m->reg, &c->call, &c->deadline, &c->md,
                                                &c->recv_bb, cq, cq, &c->t_new);
    else
        e = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, cq, cq, &c->t_new);
    if (e != GRPC_CALL_OK) {
        ORR_WARN("rpc request_call failed", "error=%s", orr_log_q(grpc_call_error_to_string(e)));
        srv_ctx_put(s, c);
    }
}

/* ------------------------------------------------------------ sending */

/* Fill a SEND_STATUS_FROM_SERVER op for st/err; slices live in c. */
static void srv_status_op(orr_rpc_call *c, orr_status st, const orr_err *err, grpc_op *op)
{
    op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    op->data.send_status_from_server.status = orr_rpc_status_to_grpc(st);
    if (st == ORR_OK)
        return;
    char buf[sizeof(err->field) + sizeof(err->msg) + 4];
    if (err->code == st || err->msg[0] || err->field[0])
        orr_err_str(err, buf, sizeof(buf));
    else
        snprintf(buf, sizeof(buf), "%s", orr_status_msg(st));
    if (!buf[0])
        snprintf(buf, sizeof(buf), "%s", orr_status_msg(st));
    c->status_details = grpc_slice_from_copied_string(buf);
    c->has_details = 1;
    op->data.send_status_from_server.status_details = &c->status_details;
    if (err->field[0]) {
        /* a metadata value must be printable ASCII */
        char field[sizeof(err->field)];
        size_t i;
        for (i = 0; err->field[i] && i + 1 < sizeof(field); i++) {
            unsigned char ch = (unsigned char)err->field[i];
            field[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
        }
        field[i] = '\0';
        c->trailer[0].key = grpc_slice_from_static_string(ORR_RPC_FIELD_KEY);
        c->trailer[0].value = grpc_slice_from_copied_string(field);
        c->n_trailer = 1;
        /* the standard form of the same: google.rpc.Status with a BadRequest
         * naming the field (a -bin value may hold any bytes) */
        uint8_t det[sizeof(buf) + sizeof(err->field) + sizeof(err->msg) + 128];
        size_t dn = orr_rpc_status_details((int)orr_rpc_status_to_grpc(st), buf, err->field,
                                           err->msg[0] ? err->msg : buf, det, sizeof(det));
        if (dn) {
            c->trailer[1].key = grpc_slice_from_static_string(ORR_RPC_STATUS_DETAILS_KEY);
            c->trailer[1].value = grpc_slice_from_copied_buffer((const char *)det, dn);
            c->n_trailer = 2;
        }
        op->data.send_status_from_server.trailing_metadata_count = (size_t)c->n_trailer;
        op->data.send_status_from_server.trailing_metadata = c->trailer;
    }
}

/* Final batch of a unary call (or of a call refused before its handler):
 * initial metadata, the response if any, status, RECV_CLOSE -> TAG_FINISH. */
static void srv_finish(orr_rpc_call *c, orr_status st, const orr_err *err, grpc_byte_buffer *resp)
{
    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    c->status = st;
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (st == ORR_OK && resp) {
        c->send_bb = resp;
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = resp;
    }
    srv_status_op(c, st, err, &ops[n++]);
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->close_cancelled;
    if (grpc_call_start_batch(c->call, ops, n, &c->t_finish, NULL) != GRPC_CALL_OK) {
        srv_stats_record(c);
        srv_ctx_put(c->srv, c);
    }
}

static void srv_finish_msg(orr_rpc_call *c, orr_status st, const char *field, const char *msg)
{
    orr_err err;
    orr_err_set(&err, st, field, "%s", msg);
    srv_finish(c, st, &err, NULL);
}

/* Start a batch from a stream thread and wait for the worker to deliver it. */
static int srv_batch_wait(orr_rpc_call *c, const grpc_op *ops, size_t n)
{
    pthread_mutex_lock(&c->mu);
    c->send_pending = 1;
    pthread_mutex_unlock(&c->mu);
    if (grpc_call_start_batch(c->call, ops, n, &c->t_send, NULL) != GRPC_CALL_OK) {
        pthread_mutex_lock(&c->mu);
        c->send_pending = 0;
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    pthread_mutex_lock(&c->mu);
    while (c->send_pending)
        pthread_cond_wait(&c->cv, &c->mu);
    int ok = c->send_ok;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* ------------------------------------------------------------ streams */

static void *srv_stream_main(void *arg)
{
    orr_rpc_call *c = arg;
    orr_rpc_server *s = c->srv;
    pthread_setname_np(pthread_self(), "orr-rpc-stream");
    grpc_op close_op;
    memset(&close_op, 0, sizeof(close_op));
    close_op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    close_op.data.recv_close_on_server.cancelled = &c->close_cancelled;
    if (grpc_call_start_batch(c->call, &close_op, 1, &c->t_close, NULL) != GRPC_CALL_OK) {
        pthread_mutex_lock(&c->mu);
        c->close_done = 1;
        atomic_store(&c->cancelled, 1);
        pthread_mutex_unlock(&c->mu);
    }

    orr_err err;
    orr_err_clear(&err);
    orr_status st = c->m->stream(c, c->req, &err, c->m->ctx);
    if (st == ORR_EINTERNAL)
        ORR_WARN("rpc stream failed", "method=%s msg=%s", c->m->name, orr_log_q(err.msg));

    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    if (!c->md_sent)
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    c->md_sent = 1;
    c->status = st;
    srv_status_op(c, st, &err, &ops[n++]);
    srv_batch_wait(c, ops, n);

    /* A read the handler left behind ends with the call (the status closes
     * the stream); only then may the context go back to the pool. */
    pthread_mutex_lock(&c->mu);
    while (!c->close_done || (c->msg_pending && !c->msg_done))
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    srv_stats_record(c);

    pthread_mutex_lock(&s->mu);
    c->next = s->finished;
    s->finished = c;
    s->n_streams--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void srv_start_stream(orr_rpc_server *s, orr_rpc_call *c)
{
    srv_reap(s);
    pthread_mutex_lock(&s->mu);
    int stopping = atomic_load(&s->stopping);
    int full = s->n_streams >= s->max_streams;
    if (!stopping && !full)
        s->n_streams++;
    pthread_mutex_unlock(&s->mu);
    if (stopping) {
        srv_finish_msg(c, ORR_EUNAVAIL, NULL, "server is stopping");
        return;
    }
    if (full) {
        orr_err err;
        orr_err_set(&err, ORR_ETOOBIG, NULL, "too many open streams (limit %d)", s->max_streams);
        srv_finish(c, ORR_ETOOBIG, &err, NULL);
        return;
    }
    c->is_stream = 1;
    int rc = pthread_create(&c->thread, NULL, srv_stream_main, c);
    if (rc != 0) {
        pthread_mutex_lock(&s->mu);
        s->n_streams--;
        pthread_mutex_unlock(&s->mu);
        c->is_stream = 0;
        orr_err err;
        orr_err_set(&err, ORR_ETOOBIG, NULL, "cannot start a stream thread: %s", strerror(rc));
        srv_finish(c, ORR_ETOOBIG, &err, NULL);
    }
}

/* ------------------------------------------------------------ events */

static void srv_on_recv(orr_rpc_server *s, orr_rpc_call *c, int ok);
static int srv_deadline_passed(const orr_rpc_call *c);

static void srv_on_new(orr_rpc_server *s, orr_rpc_call *c, int ok)
{
    if (!ok) { /* server shutting down: the slot was never used */
        srv_ctx_put(s, c);
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &c->t0);
    if (!atomic_load(&s->stopping))
        srv_arm(s, c->armed, c->cqi);

    if (c->armed) {
        c->m = c->armed;
    } else {
        c->deadline = c->details.deadline;
        c->m = srv_lookup(s, c->details.method);
    }
    if (!c->m) {
        char path[256];
        size_t n = GRPC_SLICE_LENGTH(c->details.method);
        if (n >= sizeof(path))
            n = sizeof(path) - 1;
        memcpy(path, GRPC_SLICE_START_PTR(c->details.method), n);
        path[n] = '\0';
        orr_err err;
        orr_err_set(&err, ORR_EUNIMPL, NULL, "method %s is not implemented", path);
        grpc_op ops[3];
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[1].data.send_status_from_server.status = orr_rpc_status_to_grpc(err.code);
        c->status_details = grpc_slice_from_copied_string(err.msg);
        c->has_details = 1;
        ops[1].data.send_status_from_server.status_details = &c->status_details;
        ops[2].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[2].data.recv_close_on_server.cancelled = &c->close_cancelled;
        if (grpc_call_start_batch(c->call, ops, 3, &c->t_finish, NULL) != GRPC_CALL_OK)
            srv_ctx_put(s, c);
        return;
    }
    if (!srv_auth_ok(s, c)) {
        srv_finish_msg(c, ORR_EAUTH, "authorization", "missing or wrong bearer token");
        return;
    }
    if (c->armed) { /* the request came with the call */
        srv_on_recv(s, c, 1);
        return;
    }
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv_bb;
    if (grpc_call_start_batch(c->call, &op, 1, &c->t_recv, NULL) != GRPC_CALL_OK) {
        c->status = ORR_EINTERNAL;
        srv_stats_record(c);
        srv_ctx_put(s, c);
    }
}

static void srv_on_recv(orr_rpc_server *s, orr_rpc_call *c, int ok)
{
    if (!ok || !c->recv_bb) {
        srv_finish_msg(c, ORR_EINVAL, "request", "no request message received");
        return;
    }
    orr_err err;
    orr_err_clear(&err);
    ProtobufCMessage *req = NULL;
    orr_status st =
        orr_rpc_decode_bb(c->m->md->input, c->recv_bb, s->max_msg, c->arena, &req, &err);
    grpc_byte_buffer_destroy(c->recv_bb);
    c->recv_bb = NULL;
    if (st != ORR_OK) {
        srv_finish(c, st, &err, NULL);
        return;
    }
    c->req = req;
    if (c->m->stream) {
        srv_start_stream(s, c);
        return;
    }

    ProtobufCMessage *resp = NULL;
    st = c->m->unary(c, req, &resp, &err, c->m->ctx);
    grpc_byte_buffer *bb = NULL;
    if (st == ORR_OK) {
        orr_err_clear(&err);
        if (orr_rpc_pack(resp, c->m->md->output, "response", &bb, &err) != ORR_OK) {
            ORR_WARN("rpc handler returned a bad response", "method=%s msg=%s", c->m->name,
                     orr_log_q(err.msg));
            st = orr_err_set(&err, ORR_EINTERNAL, NULL, "the server built a bad response");
        }
    } else if (srv_deadline_passed(c)) {
        /* the handler gave up because the client's time ran out: say so the
         * way gRPC clients expect, whatever code the handler chose */
        st = orr_err_set(&err, ORR_ETIMEOUT, NULL, "deadline exceeded while handling the call");
    } else if (st == ORR_EINTERNAL) {
        ORR_WARN("rpc handler failed", "method=%s msg=%s", c->m->name, orr_log_q(err.msg));
    }
    srv_finish(c, st, &err, bb);
}

static void srv_on_send(orr_rpc_call *c, int ok)
{
    pthread_mutex_lock(&c->mu);
    c->send_pending = 0;
    c->send_ok = ok;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void srv_on_msg(orr_rpc_call *c, int ok)
{
    pthread_mutex_lock(&c->mu);
    c->msg_done = 1;
    c->msg_ok = ok;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void srv_on_close(orr_rpc_call *c)
{
    pthread_mutex_lock(&c->mu);
    c->close_done = 1;
    if (c->close_cancelled)
        atomic_store(&c->cancelled, 1);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------ the gate */

/* Wait until this worker may wait on the CQ of g: at once if nobody else
 * may, else asleep until the watchdog (or the server's stop) lets it in. */
static void srv_gate_enter(orr_rpc_server *s, struct srv_gate *g)
{
    for (;;) {
        uint32_t seen = atomic_load(&g->seq);
        if (atomic_load(&s->stopping))
            return; /* the gate stays open while the server drains */
        unsigned idle = 0;
        if (atomic_compare_exchange_strong(&g->polling, &idle, 1))
            return;
        atomic_fetch_add(&g->parked, 1);
        orr_futex_wait(&g->seq, seen, NULL);
        atomic_fetch_sub(&g->parked, 1);
    }
}

/* The poller took an event: nobody waits on the CQ until it is back or the
 * watchdog lets another worker in. Wakes the watchdog if it sleeps untimed. */
static void srv_gate_took(orr_rpc_server *s, struct srv_gate *g)
{
    atomic_fetch_add(&g->taken, 1); /* before polling falls: see the watchdog */
    atomic_store(&g->polling, 0);
    if (atomic_load(&s->watch_asleep) && atomic_exchange(&s->watch_asleep, 0)) {
        atomic_fetch_add(&s->watch_word, 1);
        orr_futex_wake(&s->watch_word, 1);
    }
}

/* Let one sleeping worker in, if nobody waits on the CQ of g. */
static void srv_gate_let_in(orr_rpc_server *s, struct srv_gate *g)
{
    if (!atomic_load(&g->polling) && atomic_load(&g->parked) > 0) {
        atomic_fetch_add(&g->seq, 1);
        orr_futex_wake(&g->seq, 1);
        atomic_fetch_add_explicit(&s->work.let_ins, 1, memory_order_relaxed);
    }
}

/* Let every sleeping worker in: the server stops. */
static void srv_gate_open(orr_rpc_server *s)
{
    for (int q = 0; s->gates && q < s->n_cqs; q++) {
        atomic_fetch_add(&s->gates[q].seq, 1);
        orr_futex_wake(&s->gates[q].seq, INT_MAX);
    }
    atomic_fetch_add(&s->watch_word, 1);
    orr_futex_wake(&s->watch_word, 1);
}

static int srv_gates_all_polling(orr_rpc_server *s)
{
    for (int q = 0; q < s->n_cqs; q++)
        if (!atomic_load(&s->gates[q].polling))
            return 0;
    return 1;
}

/* Sleep one whole period (woken early only by the server's stop). */
static void srv_watch_period(orr_rpc_server *s)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct timespec end = orr_clock_add_us(now, s->handoff_us);
    for (;;) {
        uint32_t w = atomic_load(&s->watch_word);
        if (atomic_load(&s->stopping))
            return;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = (end.tv_sec - now.tv_sec) * 1000000000L + (end.tv_nsec - now.tv_nsec);
        if (left <= 0)
            return;
        struct timespec rel = {left / 1000000000L, left % 1000000000L};
        orr_futex_wait(&s->watch_word, w, &rel);
    }
}

/* Every handoff_us: a CQ whose poller took an event at least one period ago
 * and has not been back since gets a sleeping worker let in. */
static void *srv_watchdog(void *arg)
{
    orr_rpc_server *s = arg;
    pthread_setname_np(pthread_self(), "orr-rpc-watch");
    unsigned *last = orr_xcalloc((size_t)s->n_cqs, sizeof(*last));
    while (!atomic_load(&s->stopping)) {
        if (srv_gates_all_polling(s)) {
            /* idle, or every poller back in time: sleep until an event */
            uint32_t w = atomic_load(&s->watch_word);
            atomic_store(&s->watch_asleep, 1);
            if (srv_gates_all_polling(s) && !atomic_load(&s->stopping))
                orr_futex_wait(&s->watch_word, w, NULL);
            atomic_store(&s->watch_asleep, 0);
            for (int q = 0; q < s->n_cqs; q++)
                last[q] = atomic_load(&s->gates[q].taken);
        }
        srv_watch_period(s);
        for (int q = 0; q < s->n_cqs; q++) {
            struct srv_gate *g = &s->gates[q];
            /* polling falls to 0 only after taken rose (srv_gate_took): no
             * poller now and taken unchanged since the last look mean
             * nobody waited for the whole period */
            int idle = !atomic_load(&g->polling);
            unsigned t = atomic_load(&g->taken);
            if (idle && t == last[q])
                srv_gate_let_in(s, g);
            last[q] = t;
        }
    }
    free(last);
    return NULL;
}

struct srv_worker_arg {
    orr_rpc_server *s;
    int q; /* the worker's CQ */
};

/* Handle one event a worker took from its CQ. */
static void srv_handle(orr_rpc_server *s, const grpc_event *ev)
{
    struct srv_tag *t = ev->tag;
    switch (t->kind) {
    case TAG_NEW:
        srv_on_new(s, t->call, ev->success);
        break;
    case TAG_RECV:
        srv_on_recv(s, t->call, ev->success);
        break;
    case TAG_FINISH:
        srv_stats_record(t->call);
        srv_ctx_put(s, t->call);
        break;
    case TAG_SEND:
        srv_on_send(t->call, ev->success);
        break;
    case TAG_CLOSE:
        srv_on_close(t->call);
        break;
    case TAG_MSG:
        srv_on_msg(t->call, ev->success);
        break;
    case TAG_SHUTDOWN:
        pthread_mutex_lock(&s->mu);
        s->shutdown_done = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        break;
    }
}

static void *srv_worker(void *arg)
{
    struct srv_worker_arg *wa = arg;
    orr_rpc_server *s = wa->s;
    grpc_completion_queue *cq = s->cqs[wa->q];
    struct srv_gate *g = s->gates ? &s->gates[wa->q] : NULL;
    free(wa);
    pthread_setname_np(pthread_self(), "orr-rpc-worker");
    for (;;) {
        if (g)
            srv_gate_enter(s, g);
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        struct timespec took;
        clock_gettime(CLOCK_MONOTONIC, &took);
        if (g)
            srv_gate_took(s, g);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        srv_handle(s, &ev);
        atomic_fetch_add_explicit(&s->work.events, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->work.busy_ns, srv_elapsed_ns(&took), memory_order_relaxed);
    }
    return NULL;
}

/* ------------------------------------------------------------ public API */

/* Append the n methods of svc to the table (ctx for their handlers, public:
 * no token needed) and rebuild the path index. Only before start: armed
 * slots point into s->methods. */
static orr_status srv_build_table(orr_rpc_server *s, const ProtobufCServiceDescriptor *svc,
                                  const orr_rpc_method *methods, size_t n, void *ctx, int public,
                                  orr_err *err)
{
    size_t base = s->n_methods, total = base + n;
    struct srv_method *all = orr_xrealloc(s->methods, (total ? total : 1) * sizeof(*all));
    s->methods = all;
    memset(all + base, 0, n * sizeof(*all));
    free(s->slots);
    s->n_slots = 8;
    while (s->n_slots < 2 * total)
        s->n_slots *= 2;
    s->slots = orr_xcalloc(s->n_slots, sizeof(*s->slots));
    for (size_t i = 0; i < n; i++) {
        const orr_rpc_method *in = &methods[i];
        char field[64];
        snprintf(field, sizeof(field), "methods[%zu]", i);
        const ProtobufCMethodDescriptor *md =
            in->name ? protobuf_c_service_descriptor_get_method_by_name(svc, in->name) : NULL;
        if (!md)
            return orr_err_set(err, ORR_EINVAL, field, "service %s has no method %s", svc->name,
                               in->name ? in->name : "(null)");
        if (!in->unary == !in->stream)
            return orr_err_set(err, ORR_EINVAL, field,
                               "method %s: set exactly one of unary and stream", in->name);
        struct srv_method *m = &all[base + i];
        size_t len = strlen(svc->name) + strlen(md->name) + 3;
        m->path = orr_xmalloc(len);
        snprintf(m->path, len, "/%s/%s", svc->name, md->name);
        m->path_len = strlen(m->path);
        m->name = md->name;
        m->svc_name = svc->name;
        m->stats_name = md->name;
        for (size_t k = 0; k < base + i; k++)
            if (strcmp(all[k].name, md->name) == 0)
                m->stats_name = m->path + 1;
        m->md = md;
        m->unary = in->unary;
        m->stream = in->stream;
        m->ctx = ctx;
        m->public = public;
        s->n_methods = base + i + 1;
    }
    for (size_t i = 0; i < s->n_methods; i++) {
        struct srv_method *m = &all[i];
        size_t mask = s->n_slots - 1;
        size_t j = orr_hash_fnv1a(m->path, m->path_len) & mask;
        while (s->slots[j]) {
            if (strcmp(s->slots[j]->path, m->path) == 0) {
                char field[64];
                snprintf(field, sizeof(field), "methods[%zu]", i >= base ? i - base : i);
                return orr_err_set(err, ORR_EINVAL, field, "method %s listed twice", m->name);
            }
            j = (j + 1) & mask;
        }
        s->slots[j] = m;
    }
    return ORR_OK;
}

static void srv_free(orr_rpc_server *s)
{
    for (size_t i = 0; i < s->n_methods; i++)
        free(s->methods[i].path);
    free(s->methods);
    free(s->slots);
    while (s->pool) {
        orr_rpc_call *c = s->pool;
        s->pool = c->next;
        srv_ctx_free(c);
    }
    free(s->workers);
    free(s->gates);
    free(s->cqs);
    free(s->auth);
    for (int i = s->n_owned - 1; i >= 0; i--)
        s->owned[i].free_fn(s->owned[i].p);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* Plaintext without tls; else the server's key pair, and with a CA the
 * clients' certificates required and checked against it. */
static grpc_server_credentials *srv_credentials(const orr_rpc_tls *tls)
{
    if (!tls || !tls->cert_pem || !tls->key_pem)
        return grpc_insecure_server_credentials_create();
    grpc_ssl_pem_key_cert_pair pair = {.private_key = tls->key_pem, .cert_chain = tls->cert_pem};
    int mutual = tls->ca_pem && tls->ca_pem[0];
    return grpc_ssl_server_credentials_create_ex(
        mutual ? tls->ca_pem : NULL, &pair, 1,
        mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
               : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
        NULL);
}

orr_status orr_rpc_server_create(const ProtobufCServiceDescriptor *svc,
                                 const orr_rpc_method *methods, size_t n_methods, void *ctx,
                                 const orr_rpc_server_opts *opts, orr_rpc_server **out,
                                 orr_err *err)
{
    *out = NULL;
    if (!svc || !opts || !opts->listen || (n_methods && !methods))
        return orr_err_set(err, ORR_EINVAL, "listen", "service, options and listen are required");
    orr_rpc_server *s = orr_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->ctx = ctx;
    s->n_threads = opts->threads > 0 ? opts->threads : SRV_DEFAULT_THREADS;
    s->max_streams = opts->max_streams > 0 ? opts->max_streams : SRV_DEFAULT_MAX_STREAMS;
    s->max_msg = opts->max_msg_bytes > 0 ? opts->max_msg_bytes : SRV_DEFAULT_MAX_MSG;
    s->n_cqs = opts->queues > 0 ? opts->queues : 1;
    if (s->n_cqs > s->n_threads)
        s->n_cqs = s->n_threads;
    int per_cq = s->n_threads / s->n_cqs;
    if (opts->handoff_us > 0 && per_cq > 1) {
        /* a shorter period would keep the watchdog awake for little */
        s->handoff_us =
            opts->handoff_us < SRV_MIN_HANDOFF_US ? SRV_MIN_HANDOFF_US : opts->handoff_us;
        s->gates = orr_xcalloc((size_t)s->n_cqs, sizeof(*s->gates));
    }
    s->n_armed = per_cq < 4 ? 4 : per_cq > 16 ? 16 : per_cq;
    s->t_shutdown = (struct srv_tag){TAG_SHUTDOWN, NULL};
    if (opts->token && opts->token[0]) {
        s->auth_len = strlen(opts->token);
        s->auth = orr_xstrdup(opts->token);
    }
    orr_status st = srv_build_table(s, svc, methods, n_methods, ctx, 0, err);
    for (size_t k = 0; st == ORR_OK && opts->handler_auth && opts->handler_auth[k]; k++) {
        size_t i = 0;
        while (i < s->n_methods && strcmp(s->methods[i].name, opts->handler_auth[k]) != 0)
            i++;
        if (i == s->n_methods)
            st =
                orr_err_set(err, ORR_EINVAL, "handler_auth", "no method %s", opts->handler_auth[k]);
        else
            s->methods[i].handler_auth = 1;
    }
    if (st != ORR_OK) {
        srv_free(s);
        return st;
    }

    orr_rpc_grpc_init();
    grpc_arg args[7];
    int max_recv = s->max_msg > INT_MAX ? INT_MAX : (int)s->max_msg;
    args[0] =
        (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ALLOW_REUSEPORT, .value.integer = 0};
    args[1] = (grpc_arg){.type = GRPC_ARG_INTEGER,
                         .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                         .value.integer = max_recv};
    args[2] = (grpc_arg){
        .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_KEEPALIVE_TIME_MS, .value.integer = 30000};
    args[3] = (grpc_arg){
        .type = GRPC_ARG_INTEGER, .key = GRPC_ARG_KEEPALIVE_TIMEOUT_MS, .value.integer = 10000};
    args[4] = (grpc_arg){.type = GRPC_ARG_INTEGER,
                         .key = GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                         .value.integer = 5000};
    args[5] = (grpc_arg){.type = GRPC_ARG_INTEGER,
                         .key = GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                         .value.integer = 1};
    args[6] =
        (grpc_arg){.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ENABLE_CHANNELZ, .value.integer = 0};
    grpc_channel_args ca = {.num_args = 7, .args = args};
    s->server = grpc_server_create(&ca, NULL);
    for (size_t i = 0; i < s->n_methods; i++)
        s->methods[i].reg = grpc_server_register_method(
            s->server, s->methods[i].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    s->cqs = orr_xcalloc((size_t)s->n_cqs, sizeof(*s->cqs));
    for (int i = 0; i < s->n_cqs; i++) {
        s->cqs[i] = grpc_completion_queue_create_for_next(NULL);
        grpc_server_register_completion_queue(s->server, s->cqs[i], NULL);
    }
    grpc_server_credentials *creds = srv_credentials(opts->tls);
    s->port = grpc_server_add_http2_port(s->server, opts->listen, creds);
    grpc_server_credentials_release(creds);
    if (s->port <= 0) {
        st = orr_err_set(err, ORR_EIO, "listen", "cannot listen on %s", opts->listen);
        orr_rpc_server_destroy(s);
        return st;
    }
    *out = s;
    return ORR_OK;
}

orr_status orr_rpc_server_add_service(orr_rpc_server *s, const ProtobufCServiceDescriptor *svc,
                                      const orr_rpc_method *methods, size_t n_methods, void *ctx,
                                      int public, orr_err *err)
{
    if (s->started)
        return orr_err_set(err, ORR_ESTATE, NULL, "add services before the server starts");
    if (!svc || (n_methods && !methods))
        return orr_err_set(err, ORR_EINVAL, "service", "a service and its methods are required");
    size_t first = s->n_methods;
    orr_status st = srv_build_table(s, svc, methods, n_methods, ctx, public, err);
    for (size_t i = first; i < s->n_methods; i++)
        s->methods[i].reg = grpc_server_register_method(
            s->server, s->methods[i].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    return st;
}

int orr_rpc_server_own_fn(orr_rpc_server *s, void *p, void (*free_fn)(void *))
{
    if (s->n_owned >= (int)(sizeof(s->owned) / sizeof(s->owned[0])))
        return -1;
    s->owned[s->n_owned].p = p;
    s->owned[s->n_owned].free_fn = free_fn ? free_fn : free;
    s->n_owned++;
    return 0;
}

int orr_rpc_server_own(orr_rpc_server *s, void *p)
{
    return orr_rpc_server_own_fn(s, p, free);
}

size_t orr_rpc_server_services(const orr_rpc_server *s, const char **out, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < s->n_methods; i++) {
        size_t j = 0; /* listed already? (tables are small) */
        while (j < i && strcmp(s->methods[j].svc_name, s->methods[i].svc_name) != 0)
            j++;
        if (j < i)
            continue;
        if (count < n)
            out[count] = s->methods[i].svc_name;
        count++;
    }
    return count;
}

int orr_rpc_server_port(const orr_rpc_server *s)
{
    return s->port;
}

orr_status orr_rpc_server_start(orr_rpc_server *s)
{
    if (s->started)
        return ORR_OK;
    s->workers = orr_xcalloc((size_t)s->n_threads, sizeof(*s->workers));
    grpc_server_start(s->server);
    s->started = 1;
    for (int q = 0; q < s->n_cqs; q++) {
        for (size_t m = 0; m < s->n_methods; m++)
            for (int i = 0; s->methods[m].reg && i < s->n_armed; i++)
                srv_arm(s, &s->methods[m], q);
        for (int i = 0; i < SRV_GENERIC_SLOTS; i++)
            srv_arm(s, NULL, q);
    }
    for (int i = 0; i < s->n_threads; i++) {
        struct srv_worker_arg *wa = malloc(sizeof(*wa));
        int rc = wa ? 0 : ENOMEM;
        if (wa) {
            *wa = (struct srv_worker_arg){s, i % s->n_cqs};
            rc = pthread_create(&s->workers[i], NULL, srv_worker, wa);
            if (rc != 0)
                free(wa);
        }
        if (rc != 0) {
            /* a queue without a worker would hang its calls and the shutdown */
            fprintf(stderr, "level=fatal msg=\"cannot start rpc worker thread\" error=\"%s\"\n",
                    strerror(rc));
            abort();
        }
        s->n_workers++;
    }
    if (s->gates) {
        int rc = pthread_create(&s->watchdog, NULL, srv_watchdog, s);
        if (rc != 0) {
            /* without it a slow handler would hold every call of its CQ */
            fprintf(stderr, "level=fatal msg=\"cannot start rpc watchdog thread\" error=\"%s\"\n",
                    strerror(rc));
            abort();
        }
        s->has_watchdog = 1;
    }
    ORR_INFO("rpc server listening", "port=%d threads=%d queues=%d handoff_us=%d", s->port,
             s->n_workers, s->n_cqs, s->handoff_us);
    return ORR_OK;
}

/* Never started (no workers, no armed slot): wait on the calling thread for
 * the shutdown tag, which goes to the first CQ. */
static void srv_drain_here(orr_rpc_server *s)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int done = s->shutdown_done && s->live == 0;
        pthread_mutex_unlock(&s->mu);
        if (done)
            return;
        grpc_event ev = grpc_completion_queue_next(
            s->cqs[0],
            gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(100, GPR_TIMESPAN)),
            NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        struct srv_tag *t = ev.tag;
        if (t->kind == TAG_SHUTDOWN) {
            pthread_mutex_lock(&s->mu);
            s->shutdown_done = 1;
            pthread_mutex_unlock(&s->mu);
        } else if (t->kind == TAG_NEW && !ev.success) {
            srv_ctx_put(s, t->call);
        } else if (t->kind == TAG_NEW) {
            t->call->status = ORR_EUNAVAIL;
            grpc_call_cancel(t->call->call, NULL);
            srv_ctx_put(s, t->call);
        } else if (t->kind == TAG_FINISH) {
            srv_ctx_put(s, t->call);
        }
    }
}

void orr_rpc_server_destroy(orr_rpc_server *s)
{
    if (!s)
        return;
    if (s->server) {
        atomic_store(&s->stopping, 1);
        srv_gate_open(s);
        if (s->has_watchdog)
            pthread_join(s->watchdog, NULL);
        grpc_server_shutdown_and_notify(s->server, s->cqs[0], &s->t_shutdown);
        grpc_server_cancel_all_calls(s->server);
        if (s->n_workers > 0) {
            pthread_mutex_lock(&s->mu);
            while (!(s->shutdown_done && s->live == 0)) {
                if (s->finished) {
                    pthread_mutex_unlock(&s->mu);
                    srv_reap(s);
                    pthread_mutex_lock(&s->mu);
                    continue;
                }
                pthread_cond_wait(&s->cv, &s->mu);
            }
            pthread_mutex_unlock(&s->mu);
        } else {
            srv_drain_here(s);
        }
        grpc_server_destroy(s->server);
        for (int q = 0; q < s->n_cqs; q++)
            grpc_completion_queue_shutdown(s->cqs[q]);
        for (int i = 0; i < s->n_workers; i++)
            pthread_join(s->workers[i], NULL);
        for (int q = 0; q < s->n_cqs; q++) {
            if (s->n_workers == 0)
                while (
                    grpc_completion_queue_next(s->cqs[q], gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL)
                        .type != GRPC_QUEUE_SHUTDOWN)
                    ;
            grpc_completion_queue_destroy(s->cqs[q]);
        }
        grpc_shutdown();
    }
    srv_free(s);
}

/* ------------------------------------------------------------ call helpers */

orr_arena *orr_rpc_call_arena(orr_rpc_call *call)
{
    return call->arena;
}

const char *orr_rpc_call_method(const orr_rpc_call *call)
{
    return call->m ? call->m->name : "";
}

const char *orr_rpc_call_bearer(orr_rpc_call *call)
{
    const char *tok;
    size_t n;
    if (!srv_call_bearer(call, &tok, &n))
        return "";
    char *out = orr_arena_alloc(call->arena, n + 1);
    memcpy(out, tok, n);
    out[n] = 0;
    return out;
}

const char *orr_rpc_call_peer(const orr_rpc_call *call)
{
    orr_rpc_call *c = (orr_rpc_call *)call; /* the peer is cached on first use */
    if (!c->peer) {
        char *p = grpc_call_get_peer(c->call);
        c->peer = orr_arena_strdup(c->arena, p ? p : "");
        gpr_free(p);
    }
    return c->peer;
}

void orr_rpc_call_blocking(orr_rpc_call *call)
{
    orr_rpc_server *s = call->srv;
    if (s->gates && !call->is_stream)
        srv_gate_let_in(s, &s->gates[call->cqi]);
}

static int srv_deadline_passed(const orr_rpc_call *c)
{
    gpr_timespec now = gpr_now(c->deadline.clock_type);
    return gpr_time_cmp(now, c->deadline) >= 0;
}

int orr_rpc_call_cancelled(orr_rpc_call *call)
{
    if (atomic_load(&call->srv->stopping) || atomic_load(&call->cancelled))
        return 1;
    return call->is_stream ? 0 : srv_deadline_passed(call);
}

int orr_rpc_call_wait_cancelled(orr_rpc_call *call, int wait_ms)
{
    struct timespec until = orr_clock_after(CLOCK_MONOTONIC, wait_ms); /* < 0: not read */
    if (!call->is_stream) {
        /* no close event on a unary call: poll deadline and stop flag */
        for (;;) {
            if (orr_rpc_call_cancelled(call))
                return 1;
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (wait_ms >= 0 && (now.tv_sec > until.tv_sec ||
                                 (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec)))
                return 0;
            struct timespec slice = {0, 5 * 1000000L};
            nanosleep(&slice, NULL);
        }
    }
    pthread_mutex_lock(&call->mu);
    int rc = 0;
    while (!atomic_load(&call->cancelled) && !atomic_load(&call->srv->stopping) && rc == 0) {
        if (wait_ms < 0)
            pthread_cond_wait(&call->cv, &call->mu);
        else
            rc = pthread_cond_timedwait(&call->cv, &call->mu, &until);
    }
    pthread_mutex_unlock(&call->mu);
    return orr_rpc_call_cancelled(call);
}

orr_status orr_rpc_stream_send(orr_rpc_call *call, const ProtobufCMessage *msg)
{
    if (!call->is_stream)
        return ORR_EINVAL;
    if (orr_rpc_call_cancelled(call))
        return ORR_ECANCELLED;
    grpc_byte_buffer *bb = NULL;
    orr_err err;
    if (orr_rpc_pack(msg, call->m->md->output, "message", &bb, &err) != ORR_OK) {
        ORR_WARN("rpc stream message refused", "method=%s msg=%s", call->m->name,
                 orr_log_q(err.msg));
        return ORR_EINVAL;
    }
    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    if (!call->md_sent)
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = bb;
    call->md_sent = 1;
    int ok = srv_batch_wait(call, ops, n);
    grpc_byte_buffer_destroy(bb);
    if (!ok) {
        atomic_store(&call->cancelled, 1);
        return ORR_ECANCELLED;
    }
    return ORR_OK;
}

orr_status orr_rpc_stream_recv(orr_rpc_call *call, ProtobufCMessage **msg, int wait_ms,
                               orr_err *err)
{
    *msg = NULL;
    if (!call->is_stream)
        return orr_err_set(err, ORR_EINVAL, "call", "only a streaming handler receives messages");
    if (call->msg_eof)
        return orr_err_set(err, ORR_EOF, NULL, "the client sends no more messages");
    if (orr_rpc_call_cancelled(call))
        return orr_err_set(err, ORR_ECANCELLED, NULL, "the call was cancelled");
    if (!call->msg_pending) {
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &call->msg_bb;
        pthread_mutex_lock(&call->mu);
        call->msg_pending = 1;
        call->msg_done = 0;
        pthread_mutex_unlock(&call->mu);
        if (grpc_call_start_batch(call->call, &op, 1, &call->t_msg, NULL) != GRPC_CALL_OK) {
            pthread_mutex_lock(&call->mu);
            call->msg_pending = 0;
            pthread_mutex_unlock(&call->mu);
            call->msg_eof = 1;
            atomic_store(&call->cancelled, 1);
            return orr_err_set(err, ORR_ECANCELLED, NULL, "the call was cancelled");
        }
    }
    struct timespec until = orr_clock_after(CLOCK_MONOTONIC, wait_ms); /* < 0: not read */
    pthread_mutex_lock(&call->mu);
    int rc = 0;
    while (!call->msg_done && !atomic_load(&call->cancelled) &&
           !atomic_load(&call->srv->stopping) && rc == 0) {
        if (wait_ms < 0)
            pthread_cond_wait(&call->cv, &call->mu);
        else
            rc = pthread_cond_timedwait(&call->cv, &call->mu, &until);
    }
    int done = call->msg_done, ok = call->msg_ok;
    if (done)
        call->msg_pending = call->msg_done = 0;
    pthread_mutex_unlock(&call->mu);
    if (!done) { /* the read stays out: the next call waits for the same one */
        if (orr_rpc_call_cancelled(call))
            return orr_err_set(err, ORR_ECANCELLED, NULL, "the call was cancelled");
        return orr_err_set(err, ORR_ETIMEOUT, NULL, "no message within %d ms", wait_ms);
    }
    grpc_byte_buffer *bb = call->msg_bb;
    call->msg_bb = NULL;
    if (!ok || !bb) {
        /* gRPC ends the messages of a client that cancelled as it does those
         * of one that half-closed; only a close event seen already (or the
         * server stopping) tells the two apart here */
        call->msg_eof = 1;
        if (bb)
            grpc_byte_buffer_destroy(bb);
        if (!ok || orr_rpc_call_cancelled(call)) {
            atomic_store(&call->cancelled, 1);
            return orr_err_set(err, ORR_ECANCELLED, NULL, "the call was cancelled");
        }
        return orr_err_set(err, ORR_EOF, NULL, "the client sends no more messages");
    }
    orr_status st = orr_rpc_decode_bb(call->m->md->input, bb, call->srv->max_msg, NULL, msg, err);
    grpc_byte_buffer_destroy(bb);
    return st;
}

void orr_rpc_server_worker_stats(orr_rpc_server *s, orr_rpc_worker_stats *out)
{
    out->events = atomic_load_explicit(&s->work.events, memory_order_relaxed);
    out->busy_s = (double)atomic_load_explicit(&s->work.busy_ns, memory_order_relaxed) / 1e9;
    out->let_ins = atomic_load_explicit(&s->work.let_ins, memory_order_relaxed);
    out->queues = s->n_cqs;
    out->gated = s->gates != NULL;
}

size_t orr_rpc_server_stats(orr_rpc_server *s, orr_rpc_method_stats *out, size_t n)
{
    for (size_t i = 0; i < s->n_methods && i < n; i++) {
        struct srv_method *m = &s->methods[i];
        orr_rpc_method_stats *o = &out[i];
        o->name = m->stats_name;
        o->calls = atomic_load_explicit(&m->calls, memory_order_relaxed);
        o->errors = atomic_load_explicit(&m->errors, memory_order_relaxed);
        uint64_t cum = 0;
        for (size_t b = 0; b < SRV_N_BUCKETS; b++) {
            cum += atomic_load_explicit(&m->buckets[b], memory_order_relaxed);
            o->latency_le_us[b] = cum;
        }
        o->latency_sum_s = (double)atomic_load_explicit(&m->sum_ns, memory_order_relaxed) / 1e9;
    }
    return s->n_methods;
}

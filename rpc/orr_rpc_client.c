/*
 * orr_rpc_client.c - the gRPC client half of orr_rpc (see orr_rpc.h).
 *
 * One channel per client, plaintext or TLS (orr_rpc_client_set_tls), short reconnect backoff
 * (100 ms .. 1 s) so a restarted server is reached again quickly, keepalive
 * pings while calls are open. Every method path is registered on the channel
 * once (grpc_channel_register_call), so a call allocates no path slice.
 *
 * Unary: one batch of six ops (SEND_INITIAL_METADATA with the bearer token
 * and WAIT_FOR_READY, SEND_MESSAGE, SEND_CLOSE_FROM_CLIENT,
 * RECV_INITIAL_METADATA, RECV_MESSAGE, RECV_STATUS_ON_CLIENT) plucked from a
 * pluck CQ borrowed from a per-client free list (a CQ serves one call at a
 * time, so threads never share one). WAIT_FOR_READY makes the deadline, not
 * the connection state, bound the wait: a call made while the channel
 * reconnects succeeds if the server is back in time.
 *
 * Call sets: the same batch per call, tagged with the call's state, on one
 * `next` CQ of the set's own; orr_rpc_set_next() takes whichever call ends
 * first, so one thread keeps many calls in flight.
 *
 * Streams: each stream has its own `next` CQ. Open starts the send batch and
 * a RECV_STATUS batch; each orr_rpc_stream_next() keeps one RECV_MESSAGE
 * batch pending and waits up to wait_ms on the CQ. The stream ends when the
 * message batch reports no message and the status has arrived (in either
 * order). Close cancels if needed and drains every pending batch before the
 * CQ is destroyed.
 *
 * The driver (orr_rpc_client_drive): one thread of the process waits on one
 * `next` CQ for every driven client's unary calls and streams, and hands
 * each completion to the thread that waits for it through a futex (a call)
 * or the stream's own mailbox. gRPC's epoll poller lets one thread at a time
 * wait in epoll for the whole process; a thread that wakes from it with
 * work first hands the waiting to another thread waiting on any CQ, which
 * costs a wake-up and its context switches, often several per call when
 * many threads call at once and stream threads wait beside them. With the
 * driver the only thread waiting in gRPC is the driver, so a call costs one
 * wake-up of the driver (from epoll) and one of the caller (its futex).
 * Worth it in a process with many calling threads (galaxyd); a process with
 * one caller waits in gRPC itself as before. Call sets keep their own CQ
 * either way.
 */
#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_futex.h"
#include "orr_rpc.h"
#include "orr_rpc_codec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLI_MAX_RECV (64 * 1024 * 1024)

/* A completion the driver hands on: done runs on the driver's thread. */
struct drv_tag {
    void (*done)(struct drv_tag *t, int ok);
};

struct cli_method {
    const ProtobufCMethodDescriptor *md;
    char *path;
    void *reg; /* grpc_channel_register_call handle */
};

struct cli_cq {
    struct cli_cq *next;
    grpc_completion_queue *cq;
};

struct orr_rpc_client {
    const ProtobufCServiceDescriptor *svc;
    grpc_channel *ch;
    char *target;
    char *auth; /* "Bearer <token>" or NULL */
    int tls;    /* the channel uses TLS */
    struct cli_method *methods;
    size_t n_methods;
    pthread_mutex_t mu;
    struct cli_cq *free_cqs;
    grpc_completion_queue *drv_cq; /* the driver's, once driven; else NULL */
};

/* A driven stream's completions as the driver hands them on, in order. */
struct stream_box {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    void *tags[4];     /* at most three batches are ever pending */
    int oks[4];
    int head, n;
};

/* One of a driven stream's three batches: its driver tag and the tag
 * orr_rpc_stream_next() knows it by. */
struct stream_dtag {
    struct drv_tag base;
    struct orr_rpc_stream *st;
    void *tag;
};

struct orr_rpc_stream {
    orr_rpc_client *c;
    const ProtobufCMethodDescriptor *md;
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_metadata auth_md;
    grpc_metadata_array init_md;
    grpc_metadata_array trail_md;
    grpc_byte_buffer *send_bb;
    grpc_byte_buffer *recv_bb;
    grpc_status_code status;
    grpc_slice details;
    int start_pending, msg_pending, status_pending;
    int eof, status_done, finished;
    orr_err final; /* valid once finished */
    char tag_start, tag_msg, tag_status;
    /* driven (cq NULL): the batches' driver tags and the mailbox */
    struct stream_dtag dt_start, dt_msg, dt_status;
    struct stream_box box;
};

/* ------------------------------------------------------------ helpers */

static gpr_timespec cli_deadline(int timeout_ms)
{
    if (timeout_ms <= 0)
        return gpr_inf_future(GPR_CLOCK_MONOTONIC);
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                        gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
}

static const struct cli_method *cli_method(orr_rpc_client *c, const char *name, orr_err *err)
{
    const ProtobufCMethodDescriptor *md =
        name ? protobuf_c_service_descriptor_get_method_by_name(c->svc, name) : NULL;
    if (!md) {
        orr_err_set(err, ORR_EINVAL, "method", "service %s has no method %s", c->svc->name,
                    name ? name : "(null)");
        return NULL;
    }
    return &c->methods[md - c->svc->methods];
}

static grpc_completion_queue *cli_cq_get(orr_rpc_client *c)
{
    pthread_mutex_lock(&c->mu);
    struct cli_cq *n = c->free_cqs;
    if (n)
        c->free_cqs = n->next;
    pthread_mutex_unlock(&c->mu);
    if (n) {
        grpc_completion_queue *cq = n->cq;
        free(n);
        return cq;
    }
    return grpc_completion_queue_create_for_pluck(NULL);
}

static void cli_cq_put(orr_rpc_client *c, grpc_completion_queue *cq)
{
    struct cli_cq *n = malloc(sizeof(*n));
    if (!n) {
        grpc_completion_queue_shutdown(cq);
        grpc_completion_queue_destroy(cq);
        return;
    }
    n->cq = cq;
    pthread_mutex_lock(&c->mu);
    n->next = c->free_cqs;
    c->free_cqs = n;
    pthread_mutex_unlock(&c->mu);
}

/* Fill the initial metadata op: bearer token, wait for ready. */
static void cli_md_op(orr_rpc_client *c, grpc_metadata *md, grpc_op *op)
{
    op->op = GRPC_OP_SEND_INITIAL_METADATA;
    op->flags =
        GRPC_INITIAL_METADATA_WAIT_FOR_READY | GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
    if (c->auth) {
        memset(md, 0, sizeof(*md));
        md->key = grpc_slice_from_static_string("authorization");
        md->value = grpc_slice_from_static_string(c->auth);
        op->data.send_initial_metadata.count = 1;
        op->data.send_initial_metadata.metadata = md;
    }
}

/* Turn a received status into an orr_status + err. */
static orr_status cli_status(orr_rpc_client *c, grpc_status_code code, grpc_slice details,
                             const grpc_metadata_array *trail, orr_err *err)
{
    orr_status st = orr_rpc_status_from_grpc(code);
    if (st == ORR_OK)
        return ORR_OK;
    char field[sizeof(err->field)] = "";
    for (size_t i = 0; i < trail->count; i++) {
        const grpc_metadata *m = &trail->metadata[i];
        size_t kl = GRPC_SLICE_LENGTH(m->key);
        if (kl == strlen(ORR_RPC_FIELD_KEY) &&
            memcmp(GRPC_SLICE_START_PTR(m->key), ORR_RPC_FIELD_KEY, kl) == 0) {
            size_t vl = GRPC_SLICE_LENGTH(m->value);
            if (vl >= sizeof(field))
                vl = sizeof(field) - 1;
            memcpy(field, GRPC_SLICE_START_PTR(m->value), vl);
            field[vl] = '\0';
            break;
        }
    }
    const char *msg = (const char *)GRPC_SLICE_START_PTR(details);
    size_t ml = GRPC_SLICE_LENGTH(details);
    size_t fl = strlen(field);
    /* the server sends "field: message"; keep the message part */
    if (fl && ml >= fl + 2 && memcmp(msg, field, fl) == 0 && msg[fl] == ':' && msg[fl + 1] == ' ') {
        msg += fl + 2;
        ml -= fl + 2;
    }
    if (st == ORR_ETIMEOUT &&
        grpc_channel_check_connectivity_state(c->ch, 0) != GRPC_CHANNEL_READY) {
        return orr_err_set(
            err, ORR_EUNAVAIL, NULL, "server %s not reachable before the deadline%s", c->target,
            c->tls ? " (over TLS: a failed handshake is logged with its reason)" : "");
    }
    if (ml == 0)
        return orr_err_set(err, st, field, "%s", orr_status_msg(st));
    return orr_err_set(err, st, field, "%.*s", (int)(ml > 380 ? 380 : ml), msg);
}

/* ------------------------------------------------------------ the driver */

/* The process's driver: its CQ and thread, shared by every driven client
 * (refs), started by the first and stopped with the last. */
static pthread_mutex_t drv_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int refs;
    grpc_completion_queue *cq;
    pthread_t thread;
} drv;

static void *drv_main(void *arg)
{
    grpc_completion_queue *cq = arg;
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            return NULL;
        if (ev.type == GRPC_OP_COMPLETE) {
            struct drv_tag *t = ev.tag;
            t->done(t, ev.success);
        }
    }
}

orr_status orr_rpc_client_drive(orr_rpc_client *c, orr_err *err)
{
    if (c->drv_cq)
        return ORR_OK;
    pthread_mutex_lock(&drv_mu);
    if (drv.refs == 0) {
        grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
        int rc = pthread_create(&drv.thread, NULL, drv_main, cq);
        if (rc != 0) {
            pthread_mutex_unlock(&drv_mu);
            grpc_completion_queue_shutdown(cq);
            grpc_completion_queue_destroy(cq);
            return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot start the RPC driver: %s",
                               strerror(rc));
        }
        pthread_setname_np(drv.thread, "orr-rpc-driver"); /* named before anyone looks */
        drv.cq = cq;
    }
    drv.refs++;
    c->drv_cq = drv.cq;
    pthread_mutex_unlock(&drv_mu);
    return ORR_OK;
}

/* A driven client goes: the last one stops the driver. The driver stops
 * only once nothing driven is pending, so every driven stream must be
 * closed and every call ended before the last driven client goes
 * (orr_rpc.h); galaxyd stops its watches before it destroys its clients. */
static void drv_release(orr_rpc_client *c)
{
    if (!c->drv_cq)
        return;
    c->drv_cq = NULL;
    pthread_mutex_lock(&drv_mu);
    if (--drv.refs == 0) {
        grpc_completion_queue_shutdown(drv.cq);
        pthread_join(drv.thread, NULL);
        grpc_completion_queue_destroy(drv.cq);
        drv.cq = NULL;
    }
    pthread_mutex_unlock(&drv_mu);
}

/* A driven unary call's wait: the caller sleeps on state, the driver sets
 * it to 1 (ok) or 2 (failed) and wakes it. The wake may come after the
 * caller went on (it saw the state without sleeping) and its stack word
 * was reused or unmapped. That is harmless: FUTEX_WAKE never reads the
 * word, and whatever it wakes by mistake (a later call's wait at the same
 * address, a lock or condition variable) checks its own word and waits
 * again. */
struct cli_wait {
    struct drv_tag base;
    _Atomic uint32_t state;
};

static void cli_wait_done(struct drv_tag *t, int ok)
{
    struct cli_wait *w = (struct cli_wait *)t;
    atomic_store_explicit(&w->state, ok ? 1u : 2u, memory_order_release);
    orr_futex_wake(&w->state, 1);
}

/* The call's end: 1 when its batch succeeded. */
static int cli_wait_end(struct cli_wait *w)
{
    uint32_t v;
    while ((v = atomic_load_explicit(&w->state, memory_order_acquire)) == 0)
        orr_futex_wait(&w->state, 0, NULL);
    return v == 1;
}

/* ------------------------------------------------------------ client */

/* One element of an address list: "a.b.c.d:port" (4) or "[v6]:port" (6),
 * the address as inet_pton reads it and the port 1-65535; 0 for anything
 * else (a host name, no port, an octet over 255). */
static int cli_addr_family(const char *s, size_t n)
{
    char host[64];
    const char *colon;
    int fam;
    if (n == 0 || n >= sizeof host + 8)
        return 0;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || close + 1 >= s + n || close[1] != ':')
            return 0;
        colon = close + 1;
        fam = 6;
        if ((size_t)(close - s - 1) >= sizeof host)
            return 0;
        memcpy(host, s + 1, (size_t)(close - s - 1));
        host[close - s - 1] = '\0';
    } else {
        colon = NULL;
        for (size_t i = 0; i < n; i++)
            if (s[i] == ':')
                colon = s + i;
        if (!colon || (size_t)(colon - s) >= sizeof host)
            return 0;
        fam = 4;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
    }
    unsigned char addr[16];
    if (inet_pton(fam == 4 ? AF_INET : AF_INET6, host, addr) != 1)
        return 0;
    size_t plen = (size_t)(s + n - colon - 1);
    if (plen == 0 || plen > 5)
        return 0;
    long port = 0;
    for (const char *p = colon + 1; p < s + n; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        port = port * 10 + (*p - '0');
    }
    return port >= 1 && port <= 65535 ? fam : 0;
}

/* The gRPC target for a configured address. "host:port" or a URI with a
 * scheme ("dns:", "ipv4:", "unix:" ...) pass unchanged. A comma-separated
 * list of IP addresses ("10.0.0.2:7070,10.0.0.3:7070") becomes
 * "ipv4:10.0.0.2:7070,10.0.0.3:7070" (or "ipv6:..."): one channel over all
 * of them with pick_first, gRPC's default policy: calls go to the first
 * address that answers, and when its connection fails the channel connects
 * to the next one, calls waiting meanwhile (WAIT_FOR_READY). A list must
 * hold IP addresses of one family: NULL and err set otherwise. */
static char *cli_target(const char *in, orr_err *err)
{
    if (!strchr(in, ',') || strncmp(in, "ipv4:", 5) == 0 || strncmp(in, "ipv6:", 5) == 0)
        return orr_xstrdup(in);
    int fam = 0;
    for (const char *p = in;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int f = cli_addr_family(p, n);
        if (f == 0 || (fam && f != fam)) {
            orr_err_set(err, ORR_EINVAL, "target",
                        "an address list takes IP addresses of one family, each with its port "
                        "(10.0.0.2:7070,10.0.0.3:7070 or [fd00::2]:7070,[fd00::3]:7070); got "
                        "'%.*s'",
                        (int)(n > 200 ? 200 : n), p);
            return NULL;
        }
        fam = f;
        if (!end)
            break;
        p = end + 1;
    }
    char *out = NULL;
    if (asprintf(&out, "ipv%d:%s", fam, in) < 0)
        orr_oom(strlen(in) + 6);
    return out;
}

/* The process's client TLS (orr_rpc_client_set_tls), copied. */
static pthread_mutex_t cli_tls_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int on;
    char *ca, *cert, *key, *server_name;
} cli_tls;

static char *cli_dup(const char *s)
{
    return s && s[0] ? orr_xstrdup(s) : NULL;
}

void orr_rpc_client_set_tls(const orr_rpc_tls *tls)
{
    pthread_mutex_lock(&cli_tls_mu);
    free(cli_tls.ca);
    free(cli_tls.cert);
    free(cli_tls.server_name);
    if (cli_tls.key) {
        memset(cli_tls.key, 0, strlen(cli_tls.key));
        free(cli_tls.key);
    }
    cli_tls.on = tls != NULL;
    cli_tls.ca = tls ? cli_dup(tls->ca_pem) : NULL;
    cli_tls.cert = tls ? cli_dup(tls->cert_pem) : NULL;
    cli_tls.key = tls ? cli_dup(tls->key_pem) : NULL;
    cli_tls.server_name = tls ? cli_dup(tls->server_name) : NULL;
    pthread_mutex_unlock(&cli_tls_mu);
}

/* Plaintext, or TLS trusting the set CA (with the client's own key pair
 * when one is set). *server_name: a copy of the name to check the server's
 * certificate against, or NULL. */
static grpc_channel_credentials *cli_credentials(int *tls, char **server_name)
{
    pthread_mutex_lock(&cli_tls_mu);
    *tls = cli_tls.on;
    *server_name = cli_tls.on && cli_tls.server_name ? orr_xstrdup(cli_tls.server_name) : NULL;
    grpc_channel_credentials *creds;
    if (!cli_tls.on) {
        creds = grpc_insecure_credentials_create();
    } else {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = cli_tls.key, .cert_chain = cli_tls.cert};
        creds = grpc_ssl_credentials_create_ex(
            cli_tls.ca, cli_tls.cert && cli_tls.key ? &pair : NULL, NULL, NULL);
    }
    pthread_mutex_unlock(&cli_tls_mu);
    return creds;
}

orr_status orr_rpc_client_create(const ProtobufCServiceDescriptor *svc, const char *target,
                                 const char *token, orr_rpc_client **out, orr_err *err)
{
    *out = NULL;
    if (!svc || !target || !target[0])
        return orr_err_set(err, ORR_EINVAL, "target", "service and target are required");
    char *grpc_target = cli_target(target, err);
    if (!grpc_target)
        return ORR_EINVAL;
    orr_rpc_client *c = orr_xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->svc = svc;
    c->target = orr_xstrdup(target);
    c->methods = orr_xcalloc(svc->n_methods, sizeof(*c->methods));
    if (token && token[0] && asprintf(&c->auth, "Bearer %s", token) < 0)
        orr_oom(strlen(token) + 8);

    orr_rpc_grpc_init();
    char *server_name = NULL;
    grpc_channel_credentials *creds = cli_credentials(&c->tls, &server_name);
    if (c->tls && !server_name && grpc_target[0] == 'i' && strchr(grpc_target, ',')) {
        /* gRPC would check every certificate against the whole list */
        grpc_channel_credentials_release(creds);
        grpc_shutdown();
        free(grpc_target);
        orr_rpc_client_destroy(c);
        return orr_err_set(err, ORR_EINVAL, "target",
                           "a list of addresses over TLS needs the name every server's "
                           "certificate holds (halley_tls_server_name)");
    }
    grpc_arg args[9];
    const struct {
        const char *key;
        int value;
    } ints[] = {
        {GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100},
        {GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100},
        {GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000},
        {GRPC_ARG_KEEPALIVE_TIME_MS, 30000},
        {GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000},
        {GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0},
        {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, CLI_MAX_RECV},
        {GRPC_ARG_ENABLE_CHANNELZ, 0},
    };
    for (size_t i = 0; i < 8; i++)
        args[i] = (grpc_arg){
            .type = GRPC_ARG_INTEGER, .key = (char *)ints[i].key, .value.integer = ints[i].value};
    grpc_channel_args ca = {.num_args = 8, .args = args};
    if (server_name)
        args[ca.num_args++] = (grpc_arg){.type = GRPC_ARG_STRING,
                                         .key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG,
                                         .value.string = server_name};
    c->ch = grpc_channel_create(grpc_target, creds, &ca);
    grpc_channel_credentials_release(creds);
    free(grpc_target);
    free(server_name);

    for (unsigned i = 0; i < svc->n_methods; i++) {
        struct cli_method *m = &c->methods[i];
        m->md = &svc->methods[i];
        if (asprintf(&m->path, "/%s/%s", svc->name, m->md->name) < 0)
            orr_oom(strlen(svc->name) + strlen(m->md->name) + 3);
        c->n_methods = i + 1;
        m->reg = grpc_channel_register_call(c->ch, m->path, NULL, NULL);
    }
    *out = c;
    return ORR_OK;
}

void orr_rpc_client_destroy(orr_rpc_client *c)
{
    if (!c)
        return;
    while (c->free_cqs) {
        struct cli_cq *n = c->free_cqs;
        c->free_cqs = n->next;
        grpc_completion_queue_shutdown(n->cq);
        grpc_completion_queue_destroy(n->cq);
        free(n);
    }
    drv_release(c);
    if (c->ch) {
        grpc_channel_destroy(c->ch);
        grpc_shutdown();
    }
    for (size_t i = 0; i < c->n_methods; i++)
        free(c->methods[i].path);
    free(c->methods);
    free(c->auth);
    free(c->target);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* One unary call's state, from its start to its end: the six-op batch
 * (see the top) and what it receives. */
struct cli_unary {
    const struct cli_method *m;
    grpc_call *call;
    grpc_byte_buffer *send_bb, *recv_bb;
    grpc_metadata auth_md;
    grpc_metadata_array init_md, trail_md;
    grpc_status_code status;
    grpc_slice details;
    void *tag;                     /* the caller's, for a call of a set */
    struct cli_unary *next, *prev; /* a set's calls in flight, or its free list */
};

/* Encode req and start the call on cq with u as its batch's tag. On
 * failure nothing is left to release. */
static orr_status cli_unary_start(orr_rpc_client *c, const struct cli_method *m,
                                  const ProtobufCMessage *req, grpc_completion_queue *cq,
                                  int timeout_ms, struct cli_unary *u, void *tag, orr_err *err)
{
    u->m = m;
    u->send_bb = NULL;
    u->recv_bb = NULL;
    orr_status st = orr_rpc_pack(req, m->md->input, "request", &u->send_bb, err);
    if (st != ORR_OK)
        return st;
    u->call = grpc_channel_create_registered_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, m->reg,
                                                  cli_deadline(timeout_ms), NULL);
    grpc_metadata_array_init(&u->init_md);
    grpc_metadata_array_init(&u->trail_md);
    u->status = GRPC_STATUS_UNKNOWN;
    u->details = grpc_empty_slice();

    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    cli_md_op(c, &u->auth_md, &ops[0]);
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = u->send_bb;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &u->init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &u->recv_bb;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &u->trail_md;
    ops[5].data.recv_status_on_client.status = &u->status;
    ops[5].data.recv_status_on_client.status_details = &u->details;

    grpc_call_error ce = grpc_call_start_batch(u->call, ops, 6, tag, NULL);
    if (ce == GRPC_CALL_OK)
        return ORR_OK;
    grpc_byte_buffer_destroy(u->send_bb);
    grpc_slice_unref(u->details);
    grpc_metadata_array_destroy(&u->init_md);
    grpc_metadata_array_destroy(&u->trail_md);
    grpc_call_unref(u->call);
    return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot start call: %s",
                       grpc_call_error_to_string(ce));
}

/* The call's batch completed (ok: the CQ's verdict): its status, the
 * decoded answer in *resp, and everything of the call released. */
static orr_status cli_unary_end(orr_rpc_client *c, struct cli_unary *u, int ok, orr_arena *arena,
                                ProtobufCMessage **resp, orr_err *err)
{
    orr_status st;
    if (!ok) {
        st = orr_err_set(err, ORR_EINTERNAL, NULL, "completion queue failed");
        goto out;
    }
    st = cli_status(c, u->status, u->details, &u->trail_md, err);
    if (st != ORR_OK)
        goto out;
    if (!u->recv_bb) {
        st = orr_err_set(err, ORR_EINTERNAL, "response", "server sent no message");
        goto out;
    }
    st = orr_rpc_decode_bb(u->m->md->output, u->recv_bb, CLI_MAX_RECV, arena, resp, err);
    if (st != ORR_OK)
        st = orr_err_set(err, ORR_EINTERNAL, "response", "cannot decode as %s",
                         u->m->md->output->name);

out:
    if (u->recv_bb)
        grpc_byte_buffer_destroy(u->recv_bb);
    grpc_byte_buffer_destroy(u->send_bb);
    grpc_slice_unref(u->details);
    grpc_metadata_array_destroy(&u->init_md);
    grpc_metadata_array_destroy(&u->trail_md);
    grpc_call_unref(u->call);
    return st;
}

orr_status orr_rpc_call_unary(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                              ProtobufCMessage **resp, int timeout_ms, orr_err *err)
{
    return orr_rpc_call_unary_in(c, method, req, NULL, resp, timeout_ms, err);
}

orr_status orr_rpc_call_unary_in(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                                 orr_arena *arena, ProtobufCMessage **resp, int timeout_ms,
                                 orr_err *err)
{
    *resp = NULL;
    orr_err_clear(err);
    const struct cli_method *m = cli_method(c, method, err);
    if (!m)
        return ORR_EINVAL;
    struct cli_unary u;
    if (c->drv_cq) {
        struct cli_wait w = {.base.done = cli_wait_done, .state = 0};
        orr_status st = cli_unary_start(c, m, req, c->drv_cq, timeout_ms, &u, &w.base, err);
        if (st == ORR_OK)
            st = cli_unary_end(c, &u, cli_wait_end(&w), arena, resp, err);
        return st;
    }
    grpc_completion_queue *cq = cli_cq_get(c);
    orr_status st = cli_unary_start(c, m, req, cq, timeout_ms, &u, &u, err);
    if (st == ORR_OK) {
        grpc_event ev =
            grpc_completion_queue_pluck(cq, &u, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        st = cli_unary_end(c, &u, ev.type == GRPC_OP_COMPLETE, arena, resp, err);
    }
    cli_cq_put(c, cq);
    return st;
}

/* ------------------------------------------------------------ call sets */

struct orr_rpc_set {
    orr_rpc_client *c;
    grpc_completion_queue *cq;
    size_t in_flight;
    struct cli_unary *live; /* the calls in flight (for destroy's cancel) */
    struct cli_unary *free; /* ended calls' states, reused */
};

orr_rpc_set *orr_rpc_set_create(orr_rpc_client *c)
{
    orr_rpc_set *s = orr_xcalloc(1, sizeof(*s));
    s->c = c;
    s->cq = grpc_completion_queue_create_for_next(NULL);
    return s;
}

orr_status orr_rpc_set_start(orr_rpc_set *s, const char *method, const ProtobufCMessage *req,
                             int timeout_ms, void *tag, orr_err *err)
{
    orr_err_clear(err);
    const struct cli_method *m = cli_method(s->c, method, err);
    if (!m)
        return ORR_EINVAL;
    struct cli_unary *u = s->free;
    if (u)
        s->free = u->next;
    else
        u = orr_xcalloc(1, sizeof(*u));
    orr_status st = cli_unary_start(s->c, m, req, s->cq, timeout_ms, u, u, err);
    if (st != ORR_OK) {
        u->next = s->free;
        s->free = u;
        return st;
    }
    u->tag = tag;
    u->prev = NULL;
    u->next = s->live;
    if (s->live)
        s->live->prev = u;
    s->live = u;
    s->in_flight++;
    return ORR_OK;
}

size_t orr_rpc_set_in_flight(const orr_rpc_set *s)
{
    return s->in_flight;
}

int orr_rpc_set_next(orr_rpc_set *s, int wait_ms, void **tag, orr_status *st,
                     ProtobufCMessage **resp, orr_err *err)
{
    *resp = NULL;
    *tag = NULL;
    orr_err_clear(err);
    if (s->in_flight == 0)
        return -1;
    gpr_timespec until = wait_ms < 0 ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
                                     : gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                    gpr_time_from_millis(wait_ms, GPR_TIMESPAN));
    grpc_event ev = grpc_completion_queue_next(s->cq, until, NULL);
    if (ev.type != GRPC_OP_COMPLETE)
        return 0; /* GRPC_QUEUE_TIMEOUT: the queue is shut down only by destroy */
    struct cli_unary *u = ev.tag;
    if (u->prev)
        u->prev->next = u->next;
    else
        s->live = u->next;
    if (u->next)
        u->next->prev = u->prev;
    s->in_flight--;
    *tag = u->tag;
    /* a batch with RECV_STATUS_ON_CLIENT reports its outcome in the status,
     * as for orr_rpc_call_unary */
    *st = cli_unary_end(s->c, u, 1, NULL, resp, err);
    u->next = s->free;
    s->free = u;
    return 1;
}

void orr_rpc_set_destroy(orr_rpc_set *s)
{
    if (!s)
        return;
    /* Cancel what is in flight and take each completion: a call's state
     * may be freed only after its batch completed. */
    ProtobufCMessage *resp;
    void *tag;
    orr_status st;
    orr_err err;
    for (struct cli_unary *u = s->live; u; u = u->next)
        grpc_call_cancel(u->call, NULL);
    while (s->in_flight) {
        if (orr_rpc_set_next(s, -1, &tag, &st, &resp, &err) == 1 && resp)
            protobuf_c_message_free_unpacked(resp, NULL);
    }
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(s->cq);
    while (s->free) {
        struct cli_unary *u = s->free;
        s->free = u->next;
        free(u);
    }
    free(s);
}

/* ------------------------------------------------------------ streams */

/* The driver's hand-off of a driven stream's batch (see the top). */
static void stream_dtag_done(struct drv_tag *t, int ok)
{
    struct stream_dtag *d = (struct stream_dtag *)t;
    struct stream_box *b = &d->st->box;
    pthread_mutex_lock(&b->mu);
    int i = (b->head + b->n) % 4;
    b->tags[i] = d->tag;
    b->oks[i] = ok;
    b->n++;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void stream_dtag_init(orr_rpc_stream *st, struct stream_dtag *d, void *tag)
{
    d->base.done = stream_dtag_done;
    d->st = st;
    d->tag = tag;
}

/* The stream's next completion, from its CQ or (driven) its mailbox; a
 * GRPC_QUEUE_TIMEOUT event past until (its CQ) or dl (the mailbox, on
 * CLOCK_MONOTONIC; NULL: no limit). */
static grpc_event stream_wait(orr_rpc_stream *st, gpr_timespec until, const struct timespec *dl)
{
    if (st->cq)
        return grpc_completion_queue_next(st->cq, until, NULL);
    struct stream_box *b = &st->box;
    grpc_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = GRPC_QUEUE_TIMEOUT;
    pthread_mutex_lock(&b->mu);
    while (b->n == 0) {
        if (!dl)
            pthread_cond_wait(&b->cv, &b->mu);
        else if (pthread_cond_timedwait(&b->cv, &b->mu, dl) == ETIMEDOUT && b->n == 0)
            goto out;
    }
    ev.type = GRPC_OP_COMPLETE;
    ev.tag = b->tags[b->head];
    ev.success = b->oks[b->head];
    b->head = (b->head + 1) % 4;
    b->n--;
out:
    pthread_mutex_unlock(&b->mu);
    return ev;
}

orr_status orr_rpc_stream_open(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                               int timeout_ms, orr_rpc_stream **out, orr_err *err)
{
    *out = NULL;
    orr_err_clear(err);
    const struct cli_method *m = cli_method(c, method, err);
    if (!m)
        return ORR_EINVAL;
    orr_rpc_stream *st = orr_xcalloc(1, sizeof(*st));
    orr_status rc = orr_rpc_pack(req, m->md->input, "request", &st->send_bb, err);
    if (rc != ORR_OK) {
        free(st);
        return rc;
    }
    st->c = c;
    st->md = m->md;
    st->details = grpc_empty_slice();
    grpc_metadata_array_init(&st->init_md);
    grpc_metadata_array_init(&st->trail_md);
    void *tag_start = &st->tag_start, *tag_status = &st->tag_status;
    if (c->drv_cq) {
        pthread_mutex_init(&st->box.mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&st->box.cv, &ca);
        pthread_condattr_destroy(&ca);
        stream_dtag_init(st, &st->dt_start, &st->tag_start);
        stream_dtag_init(st, &st->dt_msg, &st->tag_msg);
        stream_dtag_init(st, &st->dt_status, &st->tag_status);
        tag_start = &st->dt_start.base;
        tag_status = &st->dt_status.base;
    } else {
        st->cq = grpc_completion_queue_create_for_next(NULL);
    }
    st->call = grpc_channel_create_registered_call(c->ch, NULL, GRPC_PROPAGATE_DEFAULTS,
                                                   st->cq ? st->cq : c->drv_cq, m->reg,
                                                   cli_deadline(timeout_ms), NULL);

    grpc_op ops[4];
    memset(ops, 0, sizeof(ops));
    cli_md_op(c, &st->auth_md, &ops[0]);
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = st->send_bb;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &st->init_md;
    if (grpc_call_start_batch(st->call, ops, 4, tag_start, NULL) == GRPC_CALL_OK)
        st->start_pending = 1;
    grpc_op sop;
    memset(&sop, 0, sizeof(sop));
    sop.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    sop.data.recv_status_on_client.trailing_metadata = &st->trail_md;
    sop.data.recv_status_on_client.status = &st->status;
    sop.data.recv_status_on_client.status_details = &st->details;
    if (grpc_call_start_batch(st->call, &sop, 1, tag_status, NULL) == GRPC_CALL_OK)
        st->status_pending = 1;
    if (!st->start_pending || !st->status_pending) {
        orr_rpc_stream_close(st);
        return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot start the stream");
    }
    *out = st;
    return ORR_OK;
}

static void stream_finish(orr_rpc_stream *st)
{
    st->finished = 1;
    orr_err_clear(&st->final);
    orr_status rc = cli_status(st->c, st->status, st->details, &st->trail_md, &st->final);
    if (rc == ORR_OK)
        orr_err_set(&st->final, ORR_EOF, NULL, "end of stream");
}

orr_status orr_rpc_stream_next(orr_rpc_stream *st, ProtobufCMessage **msg, int wait_ms,
                               orr_err *err)
{
    *msg = NULL;
    orr_err_clear(err);
    if (st->finished)
        goto done;
    if (!st->msg_pending && !st->eof) {
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &st->recv_bb;
        void *tag = st->cq ? (void *)&st->tag_msg : (void *)&st->dt_msg.base;
        if (grpc_call_start_batch(st->call, &op, 1, tag, NULL) != GRPC_CALL_OK)
            return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot read from the stream");
        st->msg_pending = 1;
    }
    gpr_timespec until = wait_ms < 0 ? gpr_inf_future(GPR_CLOCK_MONOTONIC) : cli_deadline(wait_ms);
    if (wait_ms == 0)
        until = gpr_now(GPR_CLOCK_MONOTONIC);
    struct timespec dl = {0, 0}; /* a driven stream's deadline */
    if (!st->cq && wait_ms >= 0)
        dl = orr_clock_after(CLOCK_MONOTONIC, wait_ms);
    for (;;) {
        grpc_event ev = stream_wait(st, until, wait_ms < 0 ? NULL : &dl);
        if (ev.type == GRPC_QUEUE_TIMEOUT)
            return orr_err_set(err, ORR_ETIMEOUT, NULL, "no message within %d ms", wait_ms);
        if (ev.type != GRPC_OP_COMPLETE)
            return orr_err_set(err, ORR_EINTERNAL, NULL, "stream queue shut down");
        if (ev.tag == &st->tag_start) {
            st->start_pending = 0;
        } else if (ev.tag == &st->tag_status) {
            st->status_pending = 0;
            st->status_done = 1;
        } else if (ev.tag == &st->tag_msg) {
            st->msg_pending = 0;
            if (st->recv_bb) {
                orr_status rc =
                    orr_rpc_decode_bb(st->md->output, st->recv_bb, CLI_MAX_RECV, NULL, msg, err);
                grpc_byte_buffer_destroy(st->recv_bb);
                st->recv_bb = NULL;
                if (rc == ORR_OK)
                    return ORR_OK;
                /* a message we cannot read ends the stream */
                grpc_call_cancel(st->call, NULL);
                st->eof = 1;
                st->finished = 1;
                orr_err_set(&st->final, ORR_EINTERNAL, "message", "cannot decode as %s",
                            st->md->output->name);
                goto done;
            }
            st->eof = 1;
        }
        if (st->eof && st->status_done) {
            stream_finish(st);
            goto done;
        }
    }
done:
    if (err)
        *err = st->final;
    return st->final.code;
}

void orr_rpc_stream_close(orr_rpc_stream *st)
{
    if (!st)
        return;
    if (st->start_pending || st->msg_pending || st->status_pending)
        grpc_call_cancel(st->call, NULL);
    while (st->start_pending || st->msg_pending || st->status_pending) {
        grpc_event ev = stream_wait(st, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            break;
        if (ev.tag == &st->tag_start)
            st->start_pending = 0;
        else if (ev.tag == &st->tag_msg)
            st->msg_pending = 0;
        else if (ev.tag == &st->tag_status)
            st->status_pending = 0;
    }
    if (st->recv_bb)
        grpc_byte_buffer_destroy(st->recv_bb);
    grpc_call_unref(st->call);
    if (st->cq) {
        grpc_completion_queue_shutdown(st->cq);
        while (grpc_completion_queue_next(st->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(st->cq);
    } else {
        pthread_mutex_destroy(&st->box.mu);
        pthread_cond_destroy(&st->box.cv);
    }
    grpc_byte_buffer_destroy(st->send_bb);
    grpc_slice_unref(st->details);
    grpc_metadata_array_destroy(&st->init_md);
    grpc_metadata_array_destroy(&st->trail_md);
    free(st);
}

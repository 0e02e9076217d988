/*
 * test_rpc.c - the RPC runtime over loopback (port 0) with the Echo service.
 *
 * One shared server + client (token "s3cret") serve most tests; tests that
 * need other options (size limit, stream limit, restart, destroy in flight)
 * start their own. Raw gRPC core calls check what travels on the wire
 * (status codes, trailing metadata, unknown paths, undecodable bytes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "echo_service.h"
#include "orr_rpc.h"
#include "orr_rpc_codec.h"

#define TOKEN "s3cret"
#define SVC   (&orrery__test__v1__echo__descriptor)

static echo_state g_state;
static orr_rpc_server *g_srv;
static orr_rpc_client *g_cli;
static char g_target[64];

/* ------------------------------------------------------------ helpers */

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Set for the third run: servers made by the fixtures keep their workers
 * behind the gate (orr_rpc_server_opts.handoff_us). */
static int g_handoff_us;

static orr_rpc_server *start_server(const char *listen, echo_state *st, size_t max_msg,
                                    int max_streams, int queues)
{
    orr_rpc_server_opts o = {.listen = listen,
                             .threads = 4,
                             .token = TOKEN,
                             .max_msg_bytes = max_msg,
                             .max_streams = max_streams,
                             .queues = queues,
                             .handoff_us = g_handoff_us};
    orr_rpc_server *s = NULL;
    orr_err err;
    orr_status rc = orr_rpc_server_create(SVC, echo_methods, 3, st, &o, &s, &err);
    if (rc != ORR_OK)
        fprintf(stderr, "server_create: %s %s: %s\n", orr_status_name(rc), err.field, err.msg);
    assert_int_equal(rc, ORR_OK);
    assert_true(orr_rpc_server_port(s) > 0);
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    return s;
}

/* Set for the second run of the tests: every client is driven
 * (orr_rpc_client_drive), so each test checks the driver's hand-off too. */
static int g_driven;

static orr_rpc_client *make_client(int port, const char *token)
{
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    orr_rpc_client *c = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_client_create(SVC, target, token, &c, &err), ORR_OK);
    if (g_driven)
        assert_int_equal(orr_rpc_client_drive(c, &err), ORR_OK);
    return c;
}

static orr_status say(orr_rpc_client *c, const char *text, uint32_t sleep, size_t blob,
                      int timeout_ms, Orrery__Test__V1__SayReply **out, orr_err *err)
{
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    req.text = (char *)text;
    req.sleep_ms = sleep;
    uint8_t *pad = NULL;
    if (blob) {
        pad = calloc(1, blob);
        req.blob.data = pad;
        req.blob.len = blob;
    }
    ProtobufCMessage *resp = NULL;
    orr_status rc = orr_rpc_call_unary(c, "Say", &req.base, &resp, timeout_ms, err);
    free(pad);
    if (out)
        *out = (Orrery__Test__V1__SayReply *)resp;
    else if (resp)
        protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

/* A raw gRPC call with the core API: what a foreign client would see. */
struct raw_result {
    grpc_status_code status;
    char details[512];
    char field[128];
    size_t resp_len;
};

static void raw_call(int port, const char *path, const void *bytes, size_t n, const char *auth,
                     struct raw_result *r)
{
    memset(r, 0, sizeof(*r));
    grpc_init();
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(target, creds, NULL);
    grpc_channel_credentials_release(creds);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(5000, GPR_TIMESPAN));
    grpc_call *call =
        grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                 grpc_slice_from_static_string(path), NULL, deadline, NULL);
    grpc_slice payload = grpc_slice_from_copied_buffer(bytes, n);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&payload, 1);
    grpc_slice_unref(payload);
    grpc_metadata md;
    memset(&md, 0, sizeof(md));
    md.key = grpc_slice_from_static_string("authorization");
    md.value = grpc_slice_from_copied_string(auth ? auth : "");
    grpc_metadata_array init_md, trail_md;
    grpc_metadata_array_init(&init_md);
    grpc_metadata_array_init(&trail_md);
    grpc_byte_buffer *recv = NULL;
    grpc_slice details;
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = auth ? 1 : 0;
    ops[0].data.send_initial_metadata.metadata = &md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
    ops[5].data.recv_status_on_client.status = &r->status;
    ops[5].data.recv_status_on_client.status_details = &details;
    assert_int_equal(grpc_call_start_batch(call, ops, 6, call, NULL), GRPC_CALL_OK);
    grpc_event ev =
        grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    assert_int_equal(ev.type, GRPC_OP_COMPLETE);
    snprintf(r->details, sizeof(r->details), "%.*s", (int)GRPC_SLICE_LENGTH(details),
             (const char *)GRPC_SLICE_START_PTR(details));
    for (size_t i = 0; i < trail_md.count; i++) {
        grpc_slice k = trail_md.metadata[i].key, v = trail_md.metadata[i].value;
        if (GRPC_SLICE_LENGTH(k) == 9 && memcmp(GRPC_SLICE_START_PTR(k), "orr-field", 9) == 0)
            snprintf(r->field, sizeof(r->field), "%.*s", (int)GRPC_SLICE_LENGTH(v),
                     (const char *)GRPC_SLICE_START_PTR(v));
    }
    if (recv) {
        r->resp_len = grpc_byte_buffer_length(recv);
        grpc_byte_buffer_destroy(recv);
    }
    grpc_slice_unref(details);
    grpc_slice_unref(md.value);
    grpc_metadata_array_destroy(&init_md);
    grpc_metadata_array_destroy(&trail_md);
    grpc_byte_buffer_destroy(send);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    grpc_shutdown();
}

/* ------------------------------------------------------------ fixtures */

static int group_setup(void **state)
{
    (void)state;
    orr_rpc_server_opts o = {
        .listen = "127.0.0.1:0", .threads = 4, .token = TOKEN, .handoff_us = g_handoff_us};
    orr_err err;
    if (orr_rpc_server_create(SVC, echo_methods, 3, &g_state, &o, &g_srv, &err) != ORR_OK)
        return -1;
    if (orr_rpc_server_start(g_srv) != ORR_OK)
        return -1;
    snprintf(g_target, sizeof(g_target), "127.0.0.1:%d", orr_rpc_server_port(g_srv));
    if (orr_rpc_client_create(SVC, g_target, TOKEN, &g_cli, &err) != ORR_OK)
        return -1;
    return g_driven && orr_rpc_client_drive(g_cli, &err) != ORR_OK ? -1 : 0;
}

static int group_setup_driven(void **state)
{
    g_driven = 1;
    return group_setup(state);
}

static int group_setup_gated(void **state)
{
    g_driven = 1;
    g_handoff_us = 500;
    return group_setup(state);
}

static int group_teardown(void **state)
{
    (void)state;
    orr_rpc_client_destroy(g_cli);
    orr_rpc_server_destroy(g_srv);
    return 0;
}

/* ------------------------------------------------------------ tests */

static void test_unary_roundtrip(void **state)
{
    (void)state;
    Orrery__Test__V1__SayReply *r = NULL;
    orr_err err;
    unsigned long before = atomic_load(&g_state.say_calls);
    assert_int_equal(say(g_cli, "hello orrery", 0, 0, 2000, &r, &err), ORR_OK);
    assert_non_null(r);
    assert_string_equal(r->text, "hello orrery");
    assert_non_null(strstr(r->peer, "127.0.0.1"));
    assert_int_equal(r->calls, before + 1);
    protobuf_c_message_free_unpacked(&r->base, NULL);

    /* stats: Say counted (once its final batch completed on the server, which
     * may be just after the client saw the reply), buckets cumulative */
    orr_rpc_method_stats st[4];
    long t0 = now_ms();
    do {
        assert_int_equal(orr_rpc_server_stats(g_srv, st, 4), 3);
    } while (st[0].calls < 1 && now_ms() - t0 < 2000 && (sleep_ms(2), 1));
    assert_string_equal(st[0].name, "Say");
    assert_true(st[0].calls >= 1);
    for (int b = 1; b < 12; b++)
        assert_true(st[0].latency_le_us[b] >= st[0].latency_le_us[b - 1]);
    assert_true(st[0].latency_le_us[11] <= st[0].calls);
    assert_true(st[0].latency_le_us[11] >= 1);
    assert_true(st[0].latency_sum_s > 0);
}

/* An answer decoded into an arena: readable, every byte of it taken from
 * the arena (its use grows by at least the strings), gone with the arena
 * (a leak or a stray free of it would show under ASan); a failed call
 * leaves no answer. */
static void test_unary_in_arena(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(0);
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    char text[600];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    req.text = text;
    ProtobufCMessage *resp = NULL;
    orr_err err;
    size_t before = orr_arena_used(a);
    assert_int_equal(orr_rpc_call_unary_in(g_cli, "Say", &req.base, a, &resp, 2000, &err), ORR_OK);
    Orrery__Test__V1__SayReply *r = (Orrery__Test__V1__SayReply *)resp;
    assert_non_null(r);
    assert_string_equal(r->text, text);
    assert_non_null(strstr(r->peer, "127.0.0.1"));
    assert_true(orr_arena_used(a) >= before + sizeof *r + sizeof text + strlen(r->peer));
    Orrery__Test__V1__FailRequest fq = ORRERY__TEST__V1__FAIL_REQUEST__INIT;
    fq.code = ORR_ENOTFOUND;
    resp = (ProtobufCMessage *)1;
    assert_int_equal(orr_rpc_call_unary_in(g_cli, "Fail", &fq.base, a, &resp, 2000, &err),
                     ORR_ENOTFOUND);
    assert_null(resp);
    orr_arena_destroy(a);
}

static void test_status_mapping(void **state)
{
    (void)state;
    static const struct {
        orr_status code;
        grpc_status_code wire;
        orr_status back;
    } cases[] = {
        {ORR_EINVAL, GRPC_STATUS_INVALID_ARGUMENT, ORR_EINVAL},
        {ORR_ENOTFOUND, GRPC_STATUS_NOT_FOUND, ORR_ENOTFOUND},
        {ORR_EEXIST, GRPC_STATUS_ALREADY_EXISTS, ORR_EEXIST},
        {ORR_ESTATE, GRPC_STATUS_FAILED_PRECONDITION, ORR_ESTATE},
        {ORR_ECONFLICT, GRPC_STATUS_ABORTED, ORR_ECONFLICT},
        {ORR_EAUTH, GRPC_STATUS_UNAUTHENTICATED, ORR_EAUTH},
        {ORR_EPERM, GRPC_STATUS_PERMISSION_DENIED, ORR_EPERM},
        {ORR_EUNAVAIL, GRPC_STATUS_UNAVAILABLE, ORR_EUNAVAIL},
        {ORR_ETIMEOUT, GRPC_STATUS_DEADLINE_EXCEEDED, ORR_ETIMEOUT},
        {ORR_ETOOBIG, GRPC_STATUS_RESOURCE_EXHAUSTED, ORR_ETOOBIG},
        {ORR_ECANCELLED, GRPC_STATUS_CANCELLED, ORR_ECANCELLED},
        {ORR_ENOMEM, GRPC_STATUS_INTERNAL, ORR_EINTERNAL},
        {ORR_EIO, GRPC_STATUS_INTERNAL, ORR_EINTERNAL},
        {ORR_EAGAIN, GRPC_STATUS_INTERNAL, ORR_EINTERNAL},
        {ORR_EOF, GRPC_STATUS_INTERNAL, ORR_EINTERNAL},
        {ORR_EINTERNAL, GRPC_STATUS_INTERNAL, ORR_EINTERNAL},
        {ORR_EUNIMPL, GRPC_STATUS_UNIMPLEMENTED, ORR_EUNIMPL},
    };
    assert_int_equal(sizeof(cases) / sizeof(cases[0]), ORR__STATUS_COUNT - 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char field[64], msg[64];
        snprintf(field, sizeof(field), "spec.items[%zu].name", i);
        snprintf(msg, sizeof(msg), "case %zu went wrong", i);
        assert_int_equal(orr_rpc_status_to_grpc(cases[i].code), cases[i].wire);

        /* through the orr client: code, field and message come back */
        Orrery__Test__V1__FailRequest req = ORRERY__TEST__V1__FAIL_REQUEST__INIT;
        req.code = (int32_t)cases[i].code;
        req.field = field;
        req.message = msg;
        ProtobufCMessage *resp = NULL;
        orr_err err;
        orr_status rc = orr_rpc_call_unary(g_cli, "Fail", &req.base, &resp, 2000, &err);
        assert_int_equal(rc, cases[i].back);
        assert_int_equal(err.code, cases[i].back);
        assert_null(resp);
        assert_string_equal(err.field, field);
        assert_string_equal(err.msg, msg);

        /* on the wire: the gRPC status, "field: message", orr-field */
        uint8_t buf[256];
        size_t n = protobuf_c_message_pack(&req.base, buf);
        char auth[64];
        snprintf(auth, sizeof(auth), "Bearer %s", TOKEN);
        struct raw_result r;
        raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Fail", buf, n, auth, &r);
        assert_int_equal(r.status, cases[i].wire);
        assert_string_equal(r.field, field);
        char want[160];
        snprintf(want, sizeof(want), "%s: %s", field, msg);
        assert_string_equal(r.details, want);
    }
    /* without a field: no field comes back */
    Orrery__Test__V1__FailRequest req = ORRERY__TEST__V1__FAIL_REQUEST__INIT;
    req.code = ORR_ENOTFOUND;
    req.message = "task 42 does not exist";
    ProtobufCMessage *resp = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_call_unary(g_cli, "Fail", &req.base, &resp, 2000, &err),
                     ORR_ENOTFOUND);
    assert_string_equal(err.field, "");
    assert_string_equal(err.msg, "task 42 does not exist");
    /* the reverse mapping of codes without an orr_status */
    assert_int_equal(orr_rpc_status_from_grpc(GRPC_STATUS_UNIMPLEMENTED), ORR_EUNIMPL);
    assert_int_equal(orr_rpc_status_from_grpc(GRPC_STATUS_UNKNOWN), ORR_EINTERNAL);
    assert_int_equal(orr_rpc_status_from_grpc(GRPC_STATUS_OUT_OF_RANGE), ORR_EINVAL);
    /* Fail with code 0 succeeds */
    req.code = 0;
    assert_int_equal(orr_rpc_call_unary(g_cli, "Fail", &req.base, &resp, 2000, &err), ORR_OK);
    assert_non_null(resp);
    assert_ptr_equal(resp->descriptor, &orrery__test__v1__fail_reply__descriptor);
    protobuf_c_message_free_unpacked(resp, NULL);
}

static void test_auth(void **state)
{
    (void)state;
    unsigned long before = atomic_load(&g_state.say_calls);
    const char *tokens[] = {NULL, "wrong", "s3cre", "s3crett", ""};
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        orr_rpc_client *c = make_client(orr_rpc_server_port(g_srv), tokens[i]);
        orr_err err;
        assert_int_equal(say(c, "let me in", 0, 0, 2000, NULL, &err), ORR_EAUTH);
        assert_string_equal(err.field, "authorization");
        orr_rpc_client_destroy(c);
    }
    /* a raw call with a non-bearer form of the right token */
    struct raw_result r;
    uint8_t req[] = {0x0a, 0x02, 'h', 'i'};
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Say", req, sizeof(req), TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_UNAUTHENTICATED);
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Say", req, sizeof(req),
             "Bearer " TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_OK);
    assert_true(r.resp_len > 2);
    /* the handler ran for the good raw call only */
    assert_int_equal(atomic_load(&g_state.say_calls), before + 1);
}

/* Say that answers with the caller's bearer token (handler-checked auth). */
static orr_status bearer_say(orr_rpc_call *call, const ProtobufCMessage *req,
                             ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    (void)req;
    (void)ctx;
    const char *tok = orr_rpc_call_bearer(call);
    if (strcmp(tok, "worker") != 0)
        return orr_err_set(err, ORR_EPERM, "authorization", "not the worker token");
    orr_arena *a = orr_rpc_call_arena(call);
    Orrery__Test__V1__SayReply *r = orr_arena_alloc(a, sizeof(*r));
    orrery__test__v1__say_reply__init(r);
    r->text = (char *)tok;
    r->peer = "";
    *resp = &r->base;
    return ORR_OK;
}

static void test_handler_auth(void **state)
{
    (void)state;
    orr_rpc_method methods[] = {{.name = "Say", .unary = bearer_say}, echo_methods[1]};
    const char *const own[] = {"Say", NULL};
    orr_rpc_server_opts o = {
        .listen = "127.0.0.1:0", .threads = 2, .token = TOKEN, .handler_auth = own};
    orr_rpc_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_server_create(SVC, methods, 2, NULL, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    int port = orr_rpc_server_port(s);
    /* the runtime lets Say through; the handler sees the bearer token */
    orr_rpc_client *c = make_client(port, "worker");
    Orrery__Test__V1__SayReply *r = NULL;
    assert_int_equal(say(c, "x", 0, 0, 2000, &r, &err), ORR_OK);
    assert_string_equal(r->text, "worker");
    protobuf_c_message_free_unpacked(&r->base, NULL);
    orr_rpc_client_destroy(c);
    /* the service token is just another token for Say: the handler refuses */
    c = make_client(port, TOKEN);
    assert_int_equal(say(c, "x", 0, 0, 2000, NULL, &err), ORR_EPERM);
    orr_rpc_client_destroy(c);
    c = make_client(port, NULL);
    assert_int_equal(say(c, "x", 0, 0, 2000, NULL, &err), ORR_EPERM);
    orr_rpc_client_destroy(c);
    /* a non-bearer header reads as no token */
    struct raw_result rr;
    uint8_t req[] = {0x0a, 0x02, 'h', 'i'};
    raw_call(port, "/orrery.test.v1.Echo/Say", req, sizeof(req), "worker", &rr);
    assert_int_equal(rr.status, GRPC_STATUS_PERMISSION_DENIED);
    /* other methods still need the service token */
    raw_call(port, "/orrery.test.v1.Echo/Count", req, sizeof(req), "Bearer worker", &rr);
    assert_int_equal(rr.status, GRPC_STATUS_UNAUTHENTICATED);
    orr_rpc_server_destroy(s);
    /* naming a method the table does not have is refused */
    const char *const bad[] = {"Shout", NULL};
    o.handler_auth = bad;
    s = NULL;
    assert_int_equal(orr_rpc_server_create(SVC, methods, 2, NULL, &o, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "handler_auth");
    assert_null(s);
}

static void test_unknown_method(void **state)
{
    (void)state;
    struct raw_result r;
    uint8_t junk[] = {1, 2, 3, 4};
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Nope", junk, sizeof(junk),
             "Bearer " TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_UNIMPLEMENTED);
    raw_call(orr_rpc_server_port(g_srv), "/orrery.other.Svc/Say", junk, sizeof(junk), NULL, &r);
    assert_int_equal(r.status, GRPC_STATUS_UNIMPLEMENTED);
    /* in the service but not in the table */
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Unserved", junk, sizeof(junk),
             "Bearer " TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_UNIMPLEMENTED);
    assert_non_null(strstr(r.details, "Unserved"));

    orr_err err;
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    req.text = "x";
    ProtobufCMessage *resp = NULL;
    assert_int_equal(orr_rpc_call_unary(g_cli, "Unserved", &req.base, &resp, 2000, &err),
                     ORR_EUNIMPL);
    /* a name the client's service lacks: refused locally */
    assert_int_equal(orr_rpc_call_unary(g_cli, "Nope", &req.base, &resp, 2000, &err), ORR_EINVAL);
    assert_string_equal(err.field, "method");
    /* a request of the wrong type: refused locally */
    Orrery__Test__V1__FailRequest wrong = ORRERY__TEST__V1__FAIL_REQUEST__INIT;
    assert_int_equal(orr_rpc_call_unary(g_cli, "Say", &wrong.base, &resp, 2000, &err), ORR_EINVAL);
    assert_string_equal(err.field, "request");
    assert_null(resp);
}

static void test_bad_protobuf(void **state)
{
    (void)state;
    unsigned long before = atomic_load(&g_state.say_calls);
    static const uint8_t bad1[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}; /* length past the end */
    static const uint8_t bad2[] = {0x10, 0x80, 0x80};                   /* truncated varint */
    static const uint8_t bad3[] = {0x0f};                               /* wire type 7 */
    static const uint8_t bad4[] = {0x00, 0x01};                         /* field number 0 */
    const struct {
        const uint8_t *p;
        size_t n;
    } cases[] = {
        {bad1, sizeof(bad1)}, {bad2, sizeof(bad2)}, {bad3, sizeof(bad3)}, {bad4, sizeof(bad4)}};
    for (size_t i = 0; i < 4; i++) {
        struct raw_result r;
        raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Say", cases[i].p, cases[i].n,
                 "Bearer " TOKEN, &r);
        assert_int_equal(r.status, GRPC_STATUS_INVALID_ARGUMENT);
        assert_string_equal(r.field, "request");
        assert_non_null(strstr(r.details, "cannot decode"));
    }
    assert_int_equal(atomic_load(&g_state.say_calls), before);
    /* the server is still fine */
    orr_err err;
    assert_int_equal(say(g_cli, "still alive", 0, 0, 2000, NULL, &err), ORR_OK);
}

static void test_missing_field(void **state)
{
    (void)state;
    orr_err err;
    assert_int_equal(say(g_cli, "", 0, 0, 2000, NULL, &err), ORR_EINVAL);
    assert_string_equal(err.field, "text");
    assert_string_equal(err.msg, "must not be empty");
    /* an empty message decodes (every field at its default) */
    struct raw_result r;
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Say", "", 0, "Bearer " TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_INVALID_ARGUMENT);
    assert_string_equal(r.field, "text");
}

static void test_bad_response(void **state)
{
    (void)state;
    int codes[] = {ECHO_FAIL_NULL_RESPONSE, ECHO_FAIL_WRONG_TYPE};
    for (int i = 0; i < 2; i++) {
        Orrery__Test__V1__FailRequest req = ORRERY__TEST__V1__FAIL_REQUEST__INIT;
        req.code = codes[i];
        ProtobufCMessage *resp = NULL;
        orr_err err;
        assert_int_equal(orr_rpc_call_unary(g_cli, "Fail", &req.base, &resp, 2000, &err),
                         ORR_EINTERNAL);
        assert_null(resp);
    }
    orr_err err;
    assert_int_equal(say(g_cli, "after bad responses", 0, 0, 2000, NULL, &err), ORR_OK);
}

static void test_oversize(void **state)
{
    (void)state;
    echo_state es;
    memset(&es, 0, sizeof(es));
    orr_rpc_server *s = start_server("127.0.0.1:0", &es, 1024, 0, 0);
    orr_rpc_client *c = make_client(orr_rpc_server_port(s), TOKEN);
    orr_err err;
    assert_int_equal(say(c, "fits", 0, 900, 2000, NULL, &err), ORR_OK);
    assert_int_equal(say(c, "too big", 0, 4096, 2000, NULL, &err), ORR_ETOOBIG);
    assert_int_equal(say(c, "way too big", 0, 5 * 1024 * 1024, 5000, NULL, &err), ORR_ETOOBIG);
    assert_int_equal(atomic_load(&es.say_calls), 1);
    assert_int_equal(say(c, "fits again", 0, 10, 2000, NULL, &err), ORR_OK);
    orr_rpc_client_destroy(c);
    orr_rpc_server_destroy(s);
}

static void test_deadline(void **state)
{
    (void)state;
    orr_err err;
    long t0 = now_ms();
    assert_int_equal(say(g_cli, "slow", 3000, 0, 150, NULL, &err), ORR_ETIMEOUT);
    long took = now_ms() - t0;
    assert_true(took >= 140);
    assert_true(took < 2000);
    /* a call that fits in its deadline */
    assert_int_equal(say(g_cli, "quick", 20, 0, 3000, NULL, &err), ORR_OK);
}

static void test_stream_count(void **state)
{
    (void)state;
    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.n = 25;
    orr_rpc_stream *st = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_stream_open(g_cli, "Count", &req.base, 5000, &st, &err), ORR_OK);
    for (uint32_t i = 0; i < 25; i++) {
        ProtobufCMessage *m = NULL;
        assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_OK);
        assert_ptr_equal(m->descriptor, &orrery__test__v1__count_reply__descriptor);
        assert_int_equal(((Orrery__Test__V1__CountReply *)m)->i, i);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    ProtobufCMessage *m = NULL;
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_EOF);
    assert_null(m);
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_EOF);
    orr_rpc_stream_close(st);
}

static void test_stream_error_and_wait(void **state)
{
    (void)state;
    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.n = 2;
    req.interval_ms = 400;
    req.fail_code = ORR_ESTATE;
    orr_rpc_stream *st = NULL;
    orr_err err;
    ProtobufCMessage *m = NULL;
    assert_int_equal(orr_rpc_stream_open(g_cli, "Count", &req.base, 5000, &st, &err), ORR_OK);
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_OK);
    protobuf_c_message_free_unpacked(m, NULL);
    /* the next message is 400 ms away: a short wait times out, the stream lives on */
    assert_int_equal(orr_rpc_stream_next(st, &m, 50, &err), ORR_ETIMEOUT);
    assert_null(m);
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_OK);
    assert_int_equal(((Orrery__Test__V1__CountReply *)m)->i, 1);
    protobuf_c_message_free_unpacked(m, NULL);
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_ESTATE);
    assert_string_equal(err.field, "fail_code");
    orr_rpc_stream_close(st);

    /* a stream without the token */
    orr_rpc_client *c = make_client(orr_rpc_server_port(g_srv), NULL);
    assert_int_equal(orr_rpc_stream_open(c, "Count", &req.base, 5000, &st, &err), ORR_OK);
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_EAUTH);
    orr_rpc_stream_close(st);
    orr_rpc_client_destroy(c);
}

/* A wait of 0 ms takes what has arrived and never blocks; a wait of
 * < 0 ms waits as long as it takes. The stream sends its first message at
 * once and then nothing until it is cancelled (its handler waits up to a
 * minute between messages, and wakes at the cancel). */
static void test_stream_wait_zero_and_forever(void **state)
{
    (void)state;
    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.until_cancelled = 1;
    req.interval_ms = 60000;
    orr_rpc_stream *st = NULL;
    orr_err err;
    ProtobufCMessage *m = NULL;
    assert_int_equal(orr_rpc_stream_open(g_cli, "Count", &req.base, 0, &st, &err), ORR_OK);
    assert_int_equal(orr_rpc_stream_next(st, &m, -1, &err), ORR_OK);
    assert_int_equal(((Orrery__Test__V1__CountReply *)m)->i, 0);
    protobuf_c_message_free_unpacked(m, NULL);
    m = NULL;
    long t0 = now_ms();
    for (int i = 0; i < 3; i++)
        assert_int_equal(orr_rpc_stream_next(st, &m, 0, &err), ORR_ETIMEOUT);
    assert_null(m);
    assert_true(now_ms() - t0 < 30000); /* far below the minute the next message is away */
    unsigned long before = atomic_load(&g_state.streams_cancelled);
    orr_rpc_stream_close(st);
    /* the close reached the handler, which counts it before this test ends
     * (the next test counts cancels too) */
    t0 = now_ms();
    while (atomic_load(&g_state.streams_cancelled) == before && now_ms() - t0 < 10000)
        sleep_ms(5);
    assert_int_equal(atomic_load(&g_state.streams_cancelled), before + 1);
}

static void test_stream_cancel(void **state)
{
    (void)state;
    unsigned long before = atomic_load(&g_state.streams_cancelled);
    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.until_cancelled = 1;
    req.interval_ms = 20;
    orr_rpc_stream *st = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_stream_open(g_cli, "Count", &req.base, 0, &st, &err), ORR_OK);
    for (int i = 0; i < 3; i++) {
        ProtobufCMessage *m = NULL;
        assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_OK);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    orr_rpc_stream_close(st);
    long t0 = now_ms();
    while (atomic_load(&g_state.streams_cancelled) == before && now_ms() - t0 < 5000)
        sleep_ms(10);
    assert_int_equal(atomic_load(&g_state.streams_cancelled), before + 1);
    /* close without reading anything */
    assert_int_equal(orr_rpc_stream_open(g_cli, "Count", &req.base, 0, &st, &err), ORR_OK);
    orr_rpc_stream_close(st);
}

static void test_max_streams(void **state)
{
    (void)state;
    echo_state es;
    memset(&es, 0, sizeof(es));
    orr_rpc_server *s = start_server("127.0.0.1:0", &es, 0, 1, 2);
    orr_rpc_client *c = make_client(orr_rpc_server_port(s), TOKEN);
    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.until_cancelled = 1;
    orr_rpc_stream *a = NULL, *b = NULL;
    orr_err err;
    ProtobufCMessage *m = NULL;
    assert_int_equal(orr_rpc_stream_open(c, "Count", &req.base, 0, &a, &err), ORR_OK);
    assert_int_equal(orr_rpc_stream_next(a, &m, 3000, &err), ORR_OK);
    protobuf_c_message_free_unpacked(m, NULL);
    assert_int_equal(orr_rpc_stream_open(c, "Count", &req.base, 0, &b, &err), ORR_OK);
    assert_int_equal(orr_rpc_stream_next(b, &m, 3000, &err), ORR_ETOOBIG);
    /* unary calls still flow while the stream holds its thread */
    assert_int_equal(say(c, "unary beside a stream", 0, 0, 2000, NULL, &err), ORR_OK);
    orr_rpc_stream_close(b);
    orr_rpc_stream_close(a);
    orr_rpc_client_destroy(c);
    orr_rpc_server_destroy(s);
}

struct restart_arg {
    int port;
    echo_state *es;
    orr_rpc_server *srv;
};

static void *restart_later(void *p)
{
    struct restart_arg *ra = p;
    sleep_ms(300);
    char listen[64];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", ra->port);
    orr_rpc_server_opts o = {.listen = listen, .threads = 2, .token = TOKEN};
    orr_err err;
    if (orr_rpc_server_create(SVC, echo_methods, 3, ra->es, &o, &ra->srv, &err) == ORR_OK)
        orr_rpc_server_start(ra->srv);
    return NULL;
}

static void test_reconnect(void **state)
{
    (void)state;
    echo_state es;
    memset(&es, 0, sizeof(es));
    orr_rpc_server *s = start_server("127.0.0.1:0", &es, 0, 0, 0);
    int port = orr_rpc_server_port(s);
    orr_rpc_client *c = make_client(port, TOKEN);
    orr_err err;
    assert_int_equal(say(c, "first life", 0, 0, 2000, NULL, &err), ORR_OK);
    orr_rpc_server_destroy(s);

    /* nobody listens: the call ends at its deadline, reported unavailable */
    assert_int_equal(say(c, "nobody home", 0, 0, 300, NULL, &err), ORR_EUNAVAIL);

    /* the server comes back on the same port while a call waits */
    struct restart_arg ra = {.port = port, .es = &es};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, restart_later, &ra), 0);
    long t0 = now_ms();
    assert_int_equal(say(c, "second life", 0, 0, 5000, NULL, &err), ORR_OK);
    assert_true(now_ms() - t0 < 4000);
    pthread_join(th, NULL);
    assert_non_null(ra.srv);
    assert_int_equal(orr_rpc_server_port(ra.srv), port);
    assert_int_equal(say(c, "and again", 0, 0, 2000, NULL, &err), ORR_OK);
    assert_int_equal(atomic_load(&es.say_calls), 3);
    orr_rpc_client_destroy(c);
    orr_rpc_server_destroy(ra.srv);
}

/* A list of two servers: calls go to the first; when it goes away they
 * move to the second without failing; a list whose first address has no
 * server works from the start; a list with a host name is refused. */
static void test_address_list_failover(void **state)
{
    (void)state;
    echo_state ea, eb;
    memset(&ea, 0, sizeof(ea));
    memset(&eb, 0, sizeof(eb));
    orr_rpc_server *a = start_server("127.0.0.1:0", &ea, 0, 0, 0);
    orr_rpc_server *b = start_server("127.0.0.1:0", &eb, 0, 0, 0);
    char target[96];
    snprintf(target, sizeof(target), "127.0.0.1:%d,127.0.0.1:%d", orr_rpc_server_port(a),
             orr_rpc_server_port(b));
    orr_rpc_client *c = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_client_create(SVC, target, TOKEN, &c, &err), ORR_OK);
    if (g_driven)
        assert_int_equal(orr_rpc_client_drive(c, &err), ORR_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(say(c, "to a", 0, 0, 5000, NULL, &err), ORR_OK);
    assert_int_equal(atomic_load(&ea.say_calls), 3);
    assert_int_equal(atomic_load(&eb.say_calls), 0);
    int port_a = orr_rpc_server_port(a);
    orr_rpc_server_destroy(a);
    for (int i = 0; i < 3; i++)
        assert_int_equal(say(c, "to b", 0, 0, 5000, NULL, &err), ORR_OK);
    assert_int_equal(atomic_load(&eb.say_calls), 3);
    orr_rpc_client_destroy(c);

    /* the first address has nobody listening (a's old port) */
    snprintf(target, sizeof(target), "127.0.0.1:%d,127.0.0.1:%d", port_a, orr_rpc_server_port(b));
    assert_int_equal(orr_rpc_client_create(SVC, target, TOKEN, &c, &err), ORR_OK);
    if (g_driven)
        assert_int_equal(orr_rpc_client_drive(c, &err), ORR_OK);
    assert_int_equal(say(c, "first is gone", 0, 0, 5000, NULL, &err), ORR_OK);
    assert_int_equal(atomic_load(&eb.say_calls), 4);
    orr_rpc_client_destroy(c);
    orr_rpc_server_destroy(b);

    const char *bad[] = {"halley-a:7070,halley-b:7070",   "127.0.0.1:7070,",
                         "127.0.0.1,127.0.0.2:1",         "127.0.0.1:7070,[::1]:7070",
                         "127.0.0.1:123456,127.0.0.1:1",  "127.0.0.1:99999,127.0.0.2:7070",
                         "10.0.0.256:7070,10.0.0.2:7070", "10.0.0.2:0,10.0.0.3:7070",
                         "10.0.0:7070,10.0.0.3:7070",     "[fd00::zz]:7070,[fd00::3]:7070"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = NULL;
        assert_int_equal(orr_rpc_client_create(SVC, bad[i], TOKEN, &c, &err), ORR_EINVAL);
        assert_null(c);
        assert_string_equal(err.field, "target");
    }
}

#define CONC_THREADS 8
#define CONC_CALLS   500

struct conc_arg {
    int id;
    int ok;
};

static void *conc_main(void *p)
{
    struct conc_arg *a = p;
    for (int i = 0; i < CONC_CALLS; i++) {
        char text[32];
        snprintf(text, sizeof(text), "t%d-%d", a->id, i);
        Orrery__Test__V1__SayReply *r = NULL;
        orr_err err;
        if (say(g_cli, text, 0, 0, 10000, &r, &err) == ORR_OK) {
            if (strcmp(r->text, text) == 0)
                a->ok++;
            protobuf_c_message_free_unpacked(&r->base, NULL);
        }
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    pthread_t th[CONC_THREADS];
    struct conc_arg args[CONC_THREADS];
    orr_rpc_method_stats before[3], after[3];
    orr_rpc_server_stats(g_srv, before, 3);
    for (int i = 0; i < CONC_THREADS; i++) {
        args[i] = (struct conc_arg){.id = i};
        assert_int_equal(pthread_create(&th[i], NULL, conc_main, &args[i]), 0);
    }
    for (int i = 0; i < CONC_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].ok, CONC_CALLS);
    }
    long t0 = now_ms();
    do {
        orr_rpc_server_stats(g_srv, after, 3);
    } while (after[0].calls - before[0].calls < CONC_THREADS * CONC_CALLS && now_ms() - t0 < 2000 &&
             (sleep_ms(2), 1));
    assert_int_equal(after[0].calls - before[0].calls, CONC_THREADS * CONC_CALLS);
    assert_int_equal(after[0].errors, before[0].errors);
}

struct flight_arg {
    orr_rpc_client *c;
    orr_status rc;
};

static void *flight_unary(void *p)
{
    struct flight_arg *a = p;
    orr_err err;
    a->rc = say(a->c, "in flight", 2000, 0, 8000, NULL, &err);
    return NULL;
}

static void test_destroy_in_flight(void **state)
{
    (void)state;
    echo_state es;
    memset(&es, 0, sizeof(es));
    orr_rpc_server *s = start_server("127.0.0.1:0", &es, 0, 0, 2); /* 2 workers per queue */
    orr_rpc_client *c = make_client(orr_rpc_server_port(s), TOKEN);
    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.until_cancelled = 1;
    orr_rpc_stream *st[2];
    orr_err err;
    for (int i = 0; i < 2; i++) {
        ProtobufCMessage *m = NULL;
        assert_int_equal(orr_rpc_stream_open(c, "Count", &req.base, 0, &st[i], &err), ORR_OK);
        assert_int_equal(orr_rpc_stream_next(st[i], &m, 3000, &err), ORR_OK);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    pthread_t th[4];
    struct flight_arg fa[4];
    for (int i = 0; i < 4; i++) {
        fa[i] = (struct flight_arg){.c = c, .rc = ORR_OK};
        assert_int_equal(pthread_create(&th[i], NULL, flight_unary, &fa[i]), 0);
    }
    long t0 = now_ms();
    /* a queue's two workers may both hold sleeping calls while a third call
     * of that queue waits: at least two handlers are mid-sleep */
    while (atomic_load(&es.say_calls) < 2 && now_ms() - t0 < 5000)
        sleep_ms(5);
    assert_true(atomic_load(&es.say_calls) >= 2);
    orr_rpc_server_destroy(s); /* handlers are mid-sleep, streams open */
    assert_true(now_ms() - t0 < 5000);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_not_equal(fa[i].rc, ORR_OK);
    }
    for (int i = 0; i < 2; i++) {
        orr_status rc;
        ProtobufCMessage *m = NULL;
        int n = 0;
        /* messages already in flight may still arrive, then the end */
        while ((rc = orr_rpc_stream_next(st[i], &m, 5000, &err)) == ORR_OK && n++ < 10000)
            protobuf_c_message_free_unpacked(m, NULL);
        assert_int_not_equal(rc, ORR_ETIMEOUT);
        assert_int_not_equal(rc, ORR_EOF);
        orr_rpc_stream_close(st[i]);
    }
    assert_int_equal(atomic_load(&es.streams_finished), 2);
    assert_int_equal(atomic_load(&es.streams_cancelled), 2);
    orr_rpc_client_destroy(c);
}

/* A call set: many calls in flight from one thread, each back once with
 * its own tag, answer or error; destroy cancels what is still out. */
static void test_call_set(void **state)
{
    (void)state;
    enum { N = 40 };
    orr_rpc_set *set = orr_rpc_set_create(g_cli);
    char texts[N][16];
    int seen[N + 1];
    memset(seen, 0, sizeof(seen));
    orr_err err;
    for (int i = 0; i <= N; i++) {
        Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
        if (i < N) {
            snprintf(texts[i], sizeof texts[i], "call %d", i);
            req.text = texts[i];
        } else {
            req.text = ""; /* INVALID_ARGUMENT on "text" */
        }
        assert_int_equal(orr_rpc_set_start(set, "Say", &req.base, 5000, &seen[i], &err), ORR_OK);
    }
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    req.text = "x";
    assert_int_equal(orr_rpc_set_start(set, "Nope", &req.base, 5000, NULL, &err), ORR_EINVAL);
    assert_string_equal(err.field, "method");
    assert_int_equal(orr_rpc_set_in_flight(set), N + 1);

    void *tag;
    orr_status st;
    ProtobufCMessage *resp;
    int ended = 0, r;
    while ((r = orr_rpc_set_next(set, 10000, &tag, &st, &resp, &err)) == 1) {
        int i = (int)((int *)tag - seen);
        assert_true(i >= 0 && i <= N);
        seen[i]++;
        ended++;
        if (i < N) {
            assert_int_equal(st, ORR_OK);
            assert_string_equal(((Orrery__Test__V1__SayReply *)resp)->text, texts[i]);
            protobuf_c_message_free_unpacked(resp, NULL);
        } else {
            assert_int_equal(st, ORR_EINVAL);
            assert_null(resp);
            assert_string_equal(err.field, "text");
        }
    }
    assert_int_equal(r, -1); /* none left in flight, none timed out */
    assert_int_equal(ended, N + 1);
    for (int i = 0; i <= N; i++)
        assert_int_equal(seen[i], 1);

    /* A call the handler holds for its longest sleep: not ended at once, and
     * destroy cancels it instead of waiting the sleep out. */
    req.text = "held";
    req.sleep_ms = 10000;
    assert_int_equal(orr_rpc_set_start(set, "Say", &req.base, 0, NULL, &err), ORR_OK);
    assert_int_equal(orr_rpc_set_next(set, 0, &tag, &st, &resp, &err), 0);
    long t0 = now_ms();
    orr_rpc_set_destroy(set);
    assert_true(now_ms() - t0 < 9000);
    /* the client goes on as before */
    assert_int_equal(say(g_cli, "after the set", 0, 0, 5000, NULL, &err), ORR_OK);
}

/* Threads of this process named as the driver's. */
static int driver_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread ended meanwhile */
        if (fgets(comm, sizeof comm, f) && strcmp(comm, "orr-rpc-driver\n") == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Driven clients share the process's one driver: started by the first,
 * kept while any is left, stopped with the last; a client's calls and
 * streams go on while another driven client comes and goes. */
static void test_driver_shared(void **state)
{
    (void)state;
    int base = driver_threads();
    assert_int_equal(base, g_driven); /* the group's own client, when driven */
    orr_rpc_client *c1 = make_client(orr_rpc_server_port(g_srv), TOKEN);
    orr_rpc_client *c2 = make_client(orr_rpc_server_port(g_srv), TOKEN);
    orr_err err;
    assert_int_equal(orr_rpc_client_drive(c1, &err), ORR_OK);
    assert_int_equal(orr_rpc_client_drive(c1, &err), ORR_OK); /* once is enough */
    assert_int_equal(orr_rpc_client_drive(c2, &err), ORR_OK);
    assert_int_equal(driver_threads(), 1);

    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.n = 3;
    orr_rpc_stream *st = NULL;
    assert_int_equal(orr_rpc_stream_open(c2, "Count", &req.base, 5000, &st, &err), ORR_OK);
    ProtobufCMessage *m = NULL;
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_OK);
    protobuf_c_message_free_unpacked(m, NULL);
    assert_int_equal(say(c1, "one", 0, 0, 2000, NULL, &err), ORR_OK);
    orr_rpc_client_destroy(c1);
    assert_int_equal(driver_threads(), 1);
    /* c2's stream and calls go on through the same driver */
    for (uint32_t i = 1; i < 3; i++) {
        assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_OK);
        assert_int_equal(((Orrery__Test__V1__CountReply *)m)->i, i);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    assert_int_equal(orr_rpc_stream_next(st, &m, 3000, &err), ORR_EOF);
    orr_rpc_stream_close(st);
    assert_int_equal(say(c2, "two", 0, 0, 2000, NULL, &err), ORR_OK);
    orr_rpc_client_destroy(c2);
    /* joined before destroy returned; its /proc entry may outlive the join
     * by a moment */
    long t0 = now_ms();
    while (driver_threads() != base && now_ms() - t0 < 5000)
        sleep_ms(5);
    assert_int_equal(driver_threads(), base);
    if (g_driven)
        assert_int_equal(say(g_cli, "still driven", 0, 0, 2000, NULL, &err), ORR_OK);
}

static void test_create_errors(void **state)
{
    (void)state;
    orr_rpc_server *s = NULL;
    orr_err err;
    orr_rpc_server_opts o = {.listen = "127.0.0.1:0"};
    orr_rpc_method bad_name[] = {{.name = "Shout", .unary = echo_methods[0].unary}};
    assert_int_equal(orr_rpc_server_create(SVC, bad_name, 1, NULL, &o, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "methods[0]");
    assert_null(s);
    orr_rpc_method both[] = {
        echo_methods[0],
        {.name = "Count", .unary = echo_methods[0].unary, .stream = echo_methods[1].stream}};
    assert_int_equal(orr_rpc_server_create(SVC, both, 2, NULL, &o, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "methods[1]");
    orr_rpc_method twice[] = {echo_methods[0], echo_methods[0]};
    assert_int_equal(orr_rpc_server_create(SVC, twice, 2, NULL, &o, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "methods[1]");

    /* the port of the shared server is taken: no silent SO_REUSEPORT */
    char listen[64];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", orr_rpc_server_port(g_srv));
    o.listen = listen;
    assert_int_equal(orr_rpc_server_create(SVC, echo_methods, 3, NULL, &o, &s, &err), ORR_EIO);
    assert_string_equal(err.field, "listen");
    assert_null(s);

    /* created, never started, destroyed */
    o.listen = "127.0.0.1:0";
    assert_int_equal(orr_rpc_server_create(SVC, echo_methods, 3, NULL, &o, &s, &err), ORR_OK);
    orr_rpc_server_destroy(s);

    orr_rpc_client *c = NULL;
    assert_int_equal(orr_rpc_client_create(SVC, "", NULL, &c, &err), ORR_EINVAL);
    assert_null(c);
}

static int probe_calls;
static int probe_serving(const char *service, void *ctx)
{
    (void)ctx;
    probe_calls++;
    return strcmp(service, "") == 0 ? ORR_RPC_HEALTH_SERVING : ORR_RPC_HEALTH_UNKNOWN;
}

/* A second, public service beside a token-guarded one. */
static void test_add_service(void **state)
{
    (void)state;
    orr_rpc_server_opts o = {.listen = "127.0.0.1:0", .threads = 2, .token = TOKEN};
    orr_rpc_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_server_create(SVC, echo_methods, 3, &g_state, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_add_health(s, probe_serving, NULL, 100, &err), ORR_OK);
    /* the same paths twice are refused */
    assert_int_equal(orr_rpc_server_add_service(s, SVC, echo_methods, 1, NULL, 1, &err),
                     ORR_EINVAL);
    assert_string_equal(err.field, "methods[0]");
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    assert_int_equal(orr_rpc_server_add_health(s, probe_serving, NULL, 100, &err), ORR_ESTATE);
    int port = orr_rpc_server_port(s);
    struct raw_result r;
    /* HealthCheckRequest{service: ""} is the empty message */
    raw_call(port, "/grpc.health.v1.Health/Check", "", 0, NULL, &r);
    assert_int_equal(r.status, GRPC_STATUS_OK);
    assert_int_equal(r.resp_len, 2); /* status = SERVING: 08 01 */
    uint8_t unknown[] = {0x0a, 0x01, 'x'};
    raw_call(port, "/grpc.health.v1.Health/Check", unknown, sizeof(unknown), NULL, &r);
    assert_int_equal(r.status, GRPC_STATUS_NOT_FOUND);
    assert_string_equal(r.field, "service");
    /* the guarded service still wants its token */
    uint8_t req[] = {0x0a, 0x02, 'h', 'i'};
    raw_call(port, "/orrery.test.v1.Echo/Say", req, sizeof(req), NULL, &r);
    assert_int_equal(r.status, GRPC_STATUS_UNAUTHENTICATED);
    assert_true(probe_calls >= 2);
    orr_rpc_server_destroy(s);
}

/* RFC 7235 credentials: scheme in any case, 1*SP, a token; nothing else. */
static void test_bearer_parse(void **state)
{
    (void)state;
    struct {
        const char *v;
        const char *tok; /* NULL = refused */
    } cases[] = {
        {"Bearer abc", "abc"},
        {"bearer abc", "abc"},
        {"BEARER abc", "abc"},
        {"bEaReR abc", "abc"},
        {"Bearer    abc", "abc"},
        {"Bearer abc  \t", "abc"},
        {"Bearer a b", "a b"},
        {"Bearer", NULL},
        {"Bearer ", NULL},
        {"Bearer    ", NULL},
        {"Bearerabc", NULL},
        {"Bearer\tabc", NULL},
        {" Bearer abc", NULL},
        {"Basic abc", NULL},
        {"Bearers abc", NULL},
        {"", NULL},
        {"abc", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *tok = NULL;
        size_t n = 0;
        int ok = orr_rpc_parse_bearer(cases[i].v, strlen(cases[i].v), &tok, &n);
        if (!cases[i].tok) {
            assert_int_equal(ok, 0);
            continue;
        }
        assert_int_equal(ok, 1);
        assert_int_equal(n, strlen(cases[i].tok));
        assert_memory_equal(tok, cases[i].tok, n);
    }
    /* end to end: the runtime takes any letter case and spacing */
    struct raw_result r;
    uint8_t req[] = {0x0a, 0x02, 'h', 'i'};
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Say", req, sizeof(req),
             "bEARER   " TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_OK);
    raw_call(orr_rpc_server_port(g_srv), "/orrery.test.v1.Echo/Say", req, sizeof(req),
             "Bearer" TOKEN, &r);
    assert_int_equal(r.status, GRPC_STATUS_UNAUTHENTICATED);
}

/* google.rpc.Status bytes, checked field by field on the wire format. */
static void test_status_details_bytes(void **state)
{
    (void)state;
    uint8_t b[1024];
    size_t n = orr_rpc_status_details(3, "id: bad", "id", "bad", b, sizeof(b));
    const char *url = ORR_RPC_BAD_REQUEST_TYPE;
    size_t ul = strlen(url);
    /* code, message, then one Any with the type URL and a BadRequest */
    uint8_t want[256];
    size_t k = 0;
    want[k++] = 0x08, want[k++] = 3;
    want[k++] = 0x12, want[k++] = 7;
    memcpy(want + k, "id: bad", 7), k += 7;
    size_t viol = 2 + 2 + 2 + 3, badreq = 2 + viol, any = 2 + ul + 2 + badreq;
    want[k++] = 0x1a, want[k++] = (uint8_t)any;
    want[k++] = 0x0a, want[k++] = (uint8_t)ul;
    memcpy(want + k, url, ul), k += ul;
    want[k++] = 0x12, want[k++] = (uint8_t)badreq;
    want[k++] = 0x0a, want[k++] = (uint8_t)viol;
    want[k++] = 0x0a, want[k++] = 2, want[k++] = 'i', want[k++] = 'd';
    want[k++] = 0x12, want[k++] = 3, want[k++] = 'b', want[k++] = 'a', want[k++] = 'd';
    assert_int_equal(n, k);
    assert_memory_equal(b, want, k);
    /* too small a buffer: 0, never an overflow */
    for (size_t cap = 0; cap < k; cap++)
        assert_int_equal(orr_rpc_status_details(3, "id: bad", "id", "bad", b, cap), 0);
    /* lengths above 127 take two-byte varints */
    char longf[200];
    memset(longf, 'f', sizeof(longf) - 1);
    longf[sizeof(longf) - 1] = 0;
    n = orr_rpc_status_details(10, longf, longf, longf, b, sizeof(b));
    assert_true(n > 3 * 199);
    assert_int_equal(b[0], 0x08);
    assert_int_equal(b[1], 10);
    assert_int_equal(b[2], 0x12);
    assert_int_equal(b[3], 0x80 | (199 & 0x7f));
    assert_int_equal(b[4], 199 >> 7);
}

/* ------------------------------------------------------------ bidi (Chat) */

/* What the Chat handler saw; tests poll these. */
static atomic_int chat_eof, chat_cancelled, chat_timeouts, chat_done, chat_bad;

/* Replies "<n>:<text>" to the n-th message. Special texts: "bye" ends the
 * call at once (the client's side still open); "wait" first waits 50 ms for
 * a message that does not come (ORR_ETIMEOUT) and replies "timeout". */
static orr_status chat_reply(orr_rpc_call *call, const Orrery__Test__V1__SayRequest *m, int n,
                             int *bye)
{
    char text[300];
    if (strcmp(m->text, "bye") == 0) {
        *bye = 1;
        return ORR_OK;
    }
    if (strcmp(m->text, "wait") == 0) {
        ProtobufCMessage *none = NULL;
        orr_err e;
        if (orr_rpc_stream_recv(call, &none, 50, &e) != ORR_ETIMEOUT || none)
            return ORR_EINTERNAL;
        atomic_fetch_add(&chat_timeouts, 1);
        snprintf(text, sizeof(text), "timeout");
    } else {
        snprintf(text, sizeof(text), "%d:%.200s", n, m->text);
    }
    Orrery__Test__V1__SayReply r = ORRERY__TEST__V1__SAY_REPLY__INIT;
    r.text = text;
    return orr_rpc_stream_send(call, &r.base);
}

static orr_status chat(orr_rpc_call *call, const ProtobufCMessage *req, orr_err *err, void *ctx)
{
    (void)ctx;
    int n = 1, bye = 0;
    orr_status st = chat_reply(call, (const void *)req, n, &bye);
    while (st == ORR_OK && !bye) {
        ProtobufCMessage *m = NULL;
        st = orr_rpc_stream_recv(call, &m, -1, err);
        if (st == ORR_EOF) {
            atomic_store(&chat_eof, 1);
            st = ORR_OK;
            break;
        }
        if (st == ORR_ECANCELLED)
            atomic_fetch_add(&chat_cancelled, 1);
        if (st == ORR_EINVAL)
            atomic_store(&chat_bad, 1);
        if (st != ORR_OK)
            break;
        st = chat_reply(call, (const void *)m, ++n, &bye);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    atomic_fetch_add(&chat_done, 1);
    return st;
}

static const orr_rpc_method chat_methods[] = {{.name = "Chat", .stream = chat}};

static orr_rpc_server *start_chat_server(void)
{
    orr_rpc_server_opts o = {.listen = "127.0.0.1:0", .threads = 2, .token = TOKEN};
    orr_rpc_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_server_create(SVC, echo_methods, 3, &g_state, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_add_service(s, SVC, chat_methods, 1, NULL, 0, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    atomic_store(&chat_eof, 0);
    atomic_store(&chat_cancelled, 0);
    atomic_store(&chat_timeouts, 0);
    atomic_store(&chat_done, 0);
    atomic_store(&chat_bad, 0);
    return s;
}

static void wait_flag(atomic_int *flag, int want, const char *what)
{
    long deadline = now_ms() + 10000;
    while (atomic_load(flag) < want) {
        if (now_ms() > deadline) {
            fprintf(stderr, "timed out waiting for %s\n", what);
            fail();
        }
        sleep_ms(2);
    }
}

/* A bidi call with the core API, one op batch at a time on a pluck queue. */
struct bidi {
    grpc_channel *ch;
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_metadata md;
    grpc_metadata_array init_md;
    int got_md;
    long tag;
};

static int bidi_batch(struct bidi *b, grpc_op *ops, size_t n)
{
    void *tag = (void *)(++b->tag);
    assert_int_equal(grpc_call_start_batch(b->call, ops, n, tag, NULL), GRPC_CALL_OK);
    grpc_event ev = grpc_completion_queue_pluck(
        b->cq, tag,
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(10000, GPR_TIMESPAN)),
        NULL);
    assert_int_equal(ev.type, GRPC_OP_COMPLETE);
    return ev.success;
}

static void bidi_open(struct bidi *b, int port)
{
    memset(b, 0, sizeof(*b));
    grpc_init();
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    b->ch = grpc_channel_create(target, creds, NULL);
    grpc_channel_credentials_release(creds);
    b->cq = grpc_completion_queue_create_for_pluck(NULL);
    b->call = grpc_channel_create_call(
        b->ch, NULL, GRPC_PROPAGATE_DEFAULTS, b->cq,
        grpc_slice_from_static_string("/orrery.test.v1.Echo/Chat"), NULL,
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(20000, GPR_TIMESPAN)),
        NULL);
    b->md.key = grpc_slice_from_static_string("authorization");
    b->md.value = grpc_slice_from_static_string("Bearer " TOKEN);
    grpc_metadata_array_init(&b->init_md);
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_INITIAL_METADATA;
    op.data.send_initial_metadata.count = 1;
    op.data.send_initial_metadata.metadata = &b->md;
    assert_true(bidi_batch(b, &op, 1));
}

static void bidi_send_raw(struct bidi *b, const void *bytes, size_t n)
{
    grpc_slice sl = grpc_slice_from_copied_buffer(bytes, n);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = bb;
    bidi_batch(b, &op, 1); /* may fail once the server has finished */
    grpc_byte_buffer_destroy(bb);
}

static void bidi_send(struct bidi *b, const char *text)
{
    Orrery__Test__V1__SayRequest req = ORRERY__TEST__V1__SAY_REQUEST__INIT;
    req.text = (char *)text;
    uint8_t buf[256];
    size_t n = orrery__test__v1__say_request__pack(&req, buf);
    bidi_send_raw(b, buf, n);
}

/* The next reply's text into out; 0 when the server sends no more. */
static int bidi_recv(struct bidi *b, char *out, size_t cap)
{
    grpc_byte_buffer *bb = NULL;
    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    if (!b->got_md) {
        ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[n++].data.recv_initial_metadata.recv_initial_metadata = &b->init_md;
        b->got_md = 1;
    }
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n++].data.recv_message.recv_message = &bb;
    bidi_batch(b, ops, n);
    if (!bb)
        return 0;
    grpc_byte_buffer_reader rd;
    assert_true(grpc_byte_buffer_reader_init(&rd, bb));
    grpc_slice flat = grpc_byte_buffer_reader_readall(&rd);
    grpc_byte_buffer_reader_destroy(&rd);
    Orrery__Test__V1__SayReply *r = orrery__test__v1__say_reply__unpack(
        NULL, GRPC_SLICE_LENGTH(flat), GRPC_SLICE_START_PTR(flat));
    assert_non_null(r);
    snprintf(out, cap, "%s", r->text);
    orrery__test__v1__say_reply__free_unpacked(r, NULL);
    grpc_slice_unref(flat);
    grpc_byte_buffer_destroy(bb);
    return 1;
}

static void bidi_half_close(struct bidi *b)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    bidi_batch(b, &op, 1);
}

static grpc_status_code bidi_status(struct bidi *b)
{
    grpc_status_code st = GRPC_STATUS_UNKNOWN;
    grpc_slice details;
    grpc_metadata_array trail;
    grpc_metadata_array_init(&trail);
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    op.data.recv_status_on_client.trailing_metadata = &trail;
    op.data.recv_status_on_client.status = &st;
    op.data.recv_status_on_client.status_details = &details;
    assert_true(bidi_batch(b, &op, 1));
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&trail);
    return st;
}

static void bidi_close(struct bidi *b)
{
    grpc_call_unref(b->call);
    grpc_metadata_array_destroy(&b->init_md);
    grpc_completion_queue_shutdown(b->cq);
    while (
        grpc_completion_queue_pluck(b->cq, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
        GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(b->cq);
    grpc_channel_destroy(b->ch);
    grpc_shutdown();
}

/* Messages both ways on one call, answered in order; the client's
 * half-close reaches the handler as ORR_EOF and the call ends OK. */
static void test_bidi_chat(void **state)
{
    (void)state;
    orr_rpc_server *s = start_chat_server();
    struct bidi b;
    char text[300];
    bidi_open(&b, orr_rpc_server_port(s));
    const char *words[] = {"alpha", "beta", "gamma", "delta"};
    for (int i = 0; i < 4; i++) {
        bidi_send(&b, words[i]);
        assert_true(bidi_recv(&b, text, sizeof(text)));
        char want[64];
        snprintf(want, sizeof(want), "%d:%s", i + 1, words[i]);
        assert_string_equal(text, want);
    }
    /* a read that times out stays armed: the next message still arrives */
    bidi_send(&b, "wait");
    assert_true(bidi_recv(&b, text, sizeof(text)));
    assert_string_equal(text, "timeout");
    bidi_send(&b, "after");
    assert_true(bidi_recv(&b, text, sizeof(text)));
    assert_string_equal(text, "6:after");
    assert_int_equal(atomic_load(&chat_eof), 0);
    bidi_half_close(&b);
    assert_false(bidi_recv(&b, text, sizeof(text)));
    assert_int_equal(bidi_status(&b), GRPC_STATUS_OK);
    assert_int_equal(atomic_load(&chat_eof), 1);
    assert_int_equal(atomic_load(&chat_timeouts), 1);
    bidi_close(&b);
    orr_rpc_server_destroy(s);
}

/* The handler ends while the client's side is still open: the client gets
 * the status, and the server releases the call (destroy does not hang). */
static void test_bidi_server_ends_first(void **state)
{
    (void)state;
    orr_rpc_server *s = start_chat_server();
    struct bidi b;
    char text[64];
    bidi_open(&b, orr_rpc_server_port(s));
    bidi_send(&b, "hello");
    assert_true(bidi_recv(&b, text, sizeof(text)));
    bidi_send(&b, "bye");
    assert_false(bidi_recv(&b, text, sizeof(text)));
    assert_int_equal(bidi_status(&b), GRPC_STATUS_OK);
    wait_flag(&chat_done, 1, "the handler to return");
    /* the call's stats are recorded once its last batch completed */
    orr_rpc_method_stats st[8];
    long deadline = now_ms() + 10000;
    for (;;) {
        size_t n = orr_rpc_server_stats(s, st, 8);
        assert_int_equal(n, 4);
        assert_string_equal(st[3].name, "Chat");
        if (st[3].calls == 1)
            break;
        assert_true(now_ms() < deadline);
        sleep_ms(2);
    }
    bidi_close(&b);
    orr_rpc_server_destroy(s);
}

/* A client that cancels wakes a handler blocked in orr_rpc_stream_recv
 * (ORR_ECANCELLED or ORR_EOF), a server that stops too (ORR_ECANCELLED);
 * undecodable bytes in a later
 * message are ORR_EINVAL and end the call INVALID_ARGUMENT. */
static void test_bidi_cancel_and_bad_bytes(void **state)
{
    (void)state;
    orr_rpc_server *s = start_chat_server();
    struct bidi b;
    char text[64];
    bidi_open(&b, orr_rpc_server_port(s));
    bidi_send(&b, "one");
    assert_true(bidi_recv(&b, text, sizeof(text)));
    grpc_call_cancel(b.call, NULL);
    wait_flag(&chat_done, 1, "the handler to return after the client cancel");
    /* gRPC may end a cancelled client's messages like a half-close */
    assert_int_equal(atomic_load(&chat_eof) + atomic_load(&chat_cancelled), 1);
    bidi_close(&b);

    bidi_open(&b, orr_rpc_server_port(s));
    bidi_send(&b, "one");
    assert_true(bidi_recv(&b, text, sizeof(text)));
    static const uint8_t junk[] = {0x0a, 0x7f, 'x'}; /* length beyond the end */
    bidi_send_raw(&b, junk, sizeof(junk));
    assert_false(bidi_recv(&b, text, sizeof(text)));
    assert_int_equal(bidi_status(&b), GRPC_STATUS_INVALID_ARGUMENT);
    assert_int_equal(atomic_load(&chat_bad), 1);
    bidi_close(&b);

    /* destroy with a handler waiting for a message that never comes */
    bidi_open(&b, orr_rpc_server_port(s));
    bidi_send(&b, "one");
    assert_true(bidi_recv(&b, text, sizeof(text)));
    int before = atomic_load(&chat_done), cancelled = atomic_load(&chat_cancelled);
    orr_rpc_server_destroy(s);
    assert_int_equal(atomic_load(&chat_done), before + 1);
    assert_int_equal(atomic_load(&chat_cancelled), cancelled + 1);
    assert_int_not_equal(bidi_status(&b), GRPC_STATUS_OK);
    bidi_close(&b);
}

/* recv on a unary call is refused; services are listed once each. */
static orr_status recv_in_unary(orr_rpc_call *call, const ProtobufCMessage *req,
                                ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    (void)req;
    (void)resp;
    (void)ctx;
    ProtobufCMessage *m = NULL;
    orr_err e;
    orr_status st = orr_rpc_stream_recv(call, &m, 0, &e);
    return orr_err_set(err, ORR_EINVAL, e.field, "recv gave %s", orr_status_name(st));
}

static void test_recv_unary_and_services(void **state)
{
    (void)state;
    orr_rpc_server_opts o = {.listen = "127.0.0.1:0", .threads = 2};
    orr_rpc_server *s = NULL;
    orr_err err;
    static const orr_rpc_method m[] = {{.name = "Say", .unary = recv_in_unary}};
    assert_int_equal(orr_rpc_server_create(SVC, m, 1, NULL, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_add_health(s, probe_serving, NULL, 100, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_add_service(s, SVC, chat_methods, 1, NULL, 0, &err), ORR_OK);
    const char *names[4];
    assert_int_equal(orr_rpc_server_services(s, NULL, 0), 2);
    assert_int_equal(orr_rpc_server_services(s, names, 4), 2);
    assert_string_equal(names[0], "orrery.test.v1.Echo");
    assert_string_equal(names[1], "grpc.health.v1.Health");
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    struct raw_result r;
    uint8_t req[] = {0x0a, 0x02, 'h', 'i'};
    raw_call(orr_rpc_server_port(s), "/orrery.test.v1.Echo/Say", req, sizeof(req), NULL, &r);
    assert_int_equal(r.status, GRPC_STATUS_INVALID_ARGUMENT);
    assert_string_equal(r.field, "call");
    assert_non_null(strstr(r.details, "EINVAL"));
    orr_rpc_server_destroy(s);
}

/* Behind the gate, one worker waits for calls and runs the quick ones
 * itself: calls made one after another run on that one thread while no
 * call lasts the (long) hand-off time. A worker that reaches the gate for
 * the first time while the waiter runs a call may take over, once each, so
 * up to threads - 1 changes of thread are allowed (without the gate about
 * two in three calls change). Streams still flow. */
static void test_gate_one_worker(void **state)
{
    (void)state;
    echo_state es;
    memset(&es, 0, sizeof(es));
    orr_rpc_server_opts o = {
        .listen = "127.0.0.1:0", .threads = 4, .token = TOKEN, .handoff_us = 60 * 1000 * 1000};
    orr_rpc_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_server_create(SVC, echo_methods, 3, &es, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    orr_rpc_client *c = make_client(orr_rpc_server_port(s), TOKEN);
    long prev = 0;
    int changes = 0;
    for (int i = 0; i < 200; i++) {
        assert_int_equal(say(c, "one", 0, 0, 5000, NULL, &err), ORR_OK);
        long tid = atomic_load(&es.say_tid);
        changes += i > 0 && tid != prev;
        prev = tid;
    }
    assert_int_equal(atomic_load(&es.say_calls), 200);
    assert_true(changes <= o.threads - 1);
    /* each call's arrival was an event taken and handled; nobody was let in */
    orr_rpc_worker_stats ws;
    orr_rpc_server_worker_stats(s, &ws);
    assert_true(ws.events >= 200);
    assert_true(ws.busy_s > 0);
    assert_int_equal(ws.let_ins, 0);
    assert_int_equal(ws.queues, 1);
    assert_int_equal(ws.gated, 1);

    Orrery__Test__V1__CountRequest req = ORRERY__TEST__V1__COUNT_REQUEST__INIT;
    req.n = 10;
    orr_rpc_stream *st = NULL;
    assert_int_equal(orr_rpc_stream_open(c, "Count", &req.base, 5000, &st, &err), ORR_OK);
    for (uint32_t i = 0; i < 10; i++) {
        ProtobufCMessage *m = NULL;
        assert_int_equal(orr_rpc_stream_next(st, &m, 5000, &err), ORR_OK);
        assert_int_equal(((Orrery__Test__V1__CountReply *)m)->i, i);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    orr_rpc_stream_close(st);
    orr_rpc_client_destroy(c);
    orr_rpc_server_destroy(s);
}

struct held_call {
    int port;
    orr_status rc;
};

static void *held_call_main(void *arg)
{
    struct held_call *h = arg;
    orr_rpc_client *c = make_client(h->port, TOKEN);
    orr_err err;
    h->rc = say(c, "hold", 0, 0, 60000, NULL, &err);
    orr_rpc_client_destroy(c);
    return NULL;
}

/* A handler that does not return until told holds the worker that waited
 * for its call: the watchdog lets another worker in, so the next calls are
 * served. Then the held call is let go and ends well. */
static void test_gate_lets_in(void **state)
{
    (void)state;
    echo_state es;
    memset(&es, 0, sizeof(es));
    orr_rpc_server_opts o = {
        .listen = "127.0.0.1:0", .threads = 2, .token = TOKEN, .handoff_us = 1000};
    orr_rpc_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_server_create(SVC, echo_methods, 3, &es, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    atomic_store(&es.hold, 1);
    struct held_call h = {.port = orr_rpc_server_port(s), .rc = ORR_EINTERNAL};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, held_call_main, &h), 0);
    long t0 = now_ms();
    while (atomic_load(&es.say_calls) < 1 && now_ms() - t0 < 20000)
        sleep_ms(1);
    /* the held call is in its handler (a progress counter, read first) */
    if (atomic_load(&es.say_calls) != 1) {
        atomic_store(&es.hold, 0);
        pthread_join(t, NULL);
        orr_rpc_server_destroy(s);
        fail_msg("the held call never reached its handler");
    }
    long held_tid = atomic_load(&es.say_tid);
    long held_from = now_ms();

    /* the results are checked after the held call is let go, so a failure
     * leaves no thread behind */
    orr_rpc_client *c = make_client(orr_rpc_server_port(s), TOKEN);
    orr_status next[3];
    for (int i = 0; i < 3; i++)
        next[i] = say(c, "next", 0, 0, 30000, NULL, &err);
    unsigned long calls = atomic_load(&es.say_calls);
    long next_tid = atomic_load(&es.say_tid);
    sleep_ms(50); /* the hold lasts at least 50 ms, however fast the rest was */
    long held_ms = now_ms() - held_from; /* at least this, less 1 ms of rounding */
    atomic_store(&es.hold, 0);
    pthread_join(t, NULL);
    /* the worker that held the call counted the whole hold as busy once it
     * was back from the handler (a counter read until it shows, bounded) */
    orr_rpc_worker_stats ws;
    for (long t1 = now_ms();; sleep_ms(1)) {
        orr_rpc_server_worker_stats(s, &ws);
        if (ws.busy_s * 1000 >= (double)(held_ms - 1) || now_ms() - t1 >= 20000)
            break;
    }
    orr_rpc_client_destroy(c);
    orr_rpc_server_destroy(s);
    for (int i = 0; i < 3; i++)
        assert_int_equal(next[i], ORR_OK);
    assert_int_equal(calls, 4);
    assert_true(next_tid != held_tid);
    assert_int_equal(h.rc, ORR_OK);
    assert_true(held_ms >= 50);
    assert_true(ws.busy_s * 1000 >= (double)(held_ms - 1));
    assert_true(ws.events >= 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_roundtrip),
        cmocka_unit_test(test_unary_in_arena),
        cmocka_unit_test(test_status_mapping),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_handler_auth),
        cmocka_unit_test(test_bearer_parse),
        cmocka_unit_test(test_add_service),
        cmocka_unit_test(test_status_details_bytes),
        cmocka_unit_test(test_unknown_method),
        cmocka_unit_test(test_bad_protobuf),
        cmocka_unit_test(test_missing_field),
        cmocka_unit_test(test_bad_response),
        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_stream_count),
        cmocka_unit_test(test_stream_error_and_wait),
        cmocka_unit_test(test_stream_wait_zero_and_forever),
        cmocka_unit_test(test_stream_cancel),
        cmocka_unit_test(test_max_streams),
        cmocka_unit_test(test_reconnect),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_destroy_in_flight),
        cmocka_unit_test(test_call_set),
        cmocka_unit_test(test_create_errors),
        cmocka_unit_test(test_address_list_failover),
        cmocka_unit_test(test_bidi_chat),
        cmocka_unit_test(test_bidi_server_ends_first),
        cmocka_unit_test(test_bidi_cancel_and_bad_bytes),
        cmocka_unit_test(test_recv_unary_and_services),
        cmocka_unit_test(test_driver_shared),
        cmocka_unit_test(test_gate_one_worker),
        cmocka_unit_test(test_gate_lets_in),
    };
    /* three times: each caller waiting in gRPC itself, then every client
     * driven, then driven clients and the fixtures' servers behind the gate */
    int failed =
        cmocka_run_group_tests_name("callers wait in gRPC", tests, group_setup, group_teardown);
    failed +=
        cmocka_run_group_tests_name("clients driven", tests, group_setup_driven, group_teardown);
    return failed +
           cmocka_run_group_tests_name("servers gated", tests, group_setup_gated, group_teardown);
}

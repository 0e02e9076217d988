/*
 * echo_service.c - handlers of orrery.test.v1.Echo (see echo_service.h).
 *
 * Say echoes the text (empty text = INVALID_ARGUMENT naming "text"; "hold"
 * waits while echo_state.hold is set), Count
 * streams numbers, Fail returns whatever status the request asks for.
 * Responses live in the call arena.
 */
#include "echo_service.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ECHO_MAX_SLEEP_MS  10000
#define ECHO_MAX_STREAM_MS 60000

static orr_status echo_say(orr_rpc_call *call, const ProtobufCMessage *req_msg,
                           ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    echo_state *es = ctx;
    const Orrery__Test__V1__SayRequest *req = (const Orrery__Test__V1__SayRequest *)req_msg;
    atomic_store(&es->say_tid, (long)syscall(SYS_gettid));
    unsigned long n = atomic_fetch_add(&es->say_calls, 1) + 1;
    if (!req->text || !req->text[0])
        return orr_err_set(err, ORR_EINVAL, "text", "must not be empty");
    while (strcmp(req->text, "hold") == 0 && atomic_load(&es->hold))
        if (orr_rpc_call_wait_cancelled(call, 1))
            return orr_err_set(err, ORR_ECANCELLED, NULL, "cancelled while held");
    int ms = req->sleep_ms > ECHO_MAX_SLEEP_MS ? ECHO_MAX_SLEEP_MS : (int)req->sleep_ms;
    if (ms && orr_rpc_call_wait_cancelled(call, ms))
        return orr_err_set(err, ORR_ECANCELLED, NULL, "cancelled while sleeping");
    orr_arena *a = orr_rpc_call_arena(call);
    Orrery__Test__V1__SayReply *r = orr_arena_alloc(a, sizeof(*r));
    orrery__test__v1__say_reply__init(r);
    r->text = orr_arena_strdup(a, req->text);
    r->peer = orr_arena_strdup(a, orr_rpc_call_peer(call));
    r->calls = n;
    *resp = &r->base;
    return ORR_OK;
}

static orr_status echo_count(orr_rpc_call *call, const ProtobufCMessage *req_msg, orr_err *err,
                             void *ctx)
{
    echo_state *es = ctx;
    const Orrery__Test__V1__CountRequest *req = (const Orrery__Test__V1__CountRequest *)req_msg;
    atomic_fetch_add(&es->count_calls, 1);
    orr_status st = ORR_OK;
    int waited_ms = 0;
    for (uint32_t i = 0; req->until_cancelled || i < req->n; i++) {
        Orrery__Test__V1__CountReply r = ORRERY__TEST__V1__COUNT_REPLY__INIT;
        r.i = i;
        st = orr_rpc_stream_send(call, &r.base);
        if (st != ORR_OK)
            break;
        int last = !req->until_cancelled && i + 1 >= req->n;
        if (!last && (req->interval_ms || req->until_cancelled)) {
            int ms = req->interval_ms ? (int)req->interval_ms : 10;
            if (orr_rpc_call_wait_cancelled(call, ms)) {
                st = ORR_ECANCELLED;
                break;
            }
            waited_ms += ms;
            if (waited_ms > ECHO_MAX_STREAM_MS)
                break;
        }
    }
    if (orr_rpc_call_cancelled(call))
        atomic_fetch_add(&es->streams_cancelled, 1);
    atomic_fetch_add(&es->streams_finished, 1);
    if (st != ORR_OK)
        return orr_err_set(err, st, NULL, "stream ended early");
    if (req->fail_code)
        return orr_err_set(err, (orr_status)req->fail_code, "fail_code", "asked to fail");
    return ORR_OK;
}

static orr_status echo_fail(orr_rpc_call *call, const ProtobufCMessage *req_msg,
                            ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    echo_state *es = ctx;
    const Orrery__Test__V1__FailRequest *req = (const Orrery__Test__V1__FailRequest *)req_msg;
    atomic_fetch_add(&es->fail_calls, 1);
    orr_arena *a = orr_rpc_call_arena(call);
    if (req->code == ECHO_FAIL_NULL_RESPONSE) {
        *resp = NULL;
        return ORR_OK;
    }
    if (req->code == ECHO_FAIL_WRONG_TYPE) {
        Orrery__Test__V1__CountReply *r = orr_arena_alloc(a, sizeof(*r));
        orrery__test__v1__count_reply__init(r);
        *resp = &r->base;
        return ORR_OK;
    }
    if (req->code == 0) {
        Orrery__Test__V1__FailReply *r = orr_arena_alloc(a, sizeof(*r));
        orrery__test__v1__fail_reply__init(r);
        *resp = &r->base;
        return ORR_OK;
    }
    return orr_err_set(err, (orr_status)req->code, req->field[0] ? req->field : NULL, "%s",
                       req->message);
}

const orr_rpc_method echo_methods[3] = {
    {.name = "Say", .unary = echo_say},
    {.name = "Count", .stream = echo_count},
    {.name = "Fail", .unary = echo_fail},
};

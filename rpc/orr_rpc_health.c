/*
 * orr_rpc_health.c - grpc.health.v1.Health on an orr_rpc server (see
 * orr_rpc_server_add_health in orr_rpc.h).
 *
 * The server's owner supplies a probe; Check asks it once, Watch asks it
 * every poll interval and sends the status whenever it differs from the last
 * one sent (the first answer is sent at once). Watch sleeps with
 * orr_rpc_call_wait_cancelled, so it ends as soon as the client leaves or
 * the server stops.
 */
#include <stdlib.h>

#include "health.pb-c.h"
#include "orr_alloc.h"
#include "orr_rpc.h"

typedef struct rpc_health {
    orr_rpc_health_fn probe;
    void *ctx;
    int poll_ms;
} rpc_health;

static orr_status rpc_health_check(orr_rpc_call *call, const ProtobufCMessage *req,
                                   ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    rpc_health *h = ctx;
    const Grpc__Health__V1__HealthCheckRequest *rq = (const void *)req;
    int st = h->probe(rq->service, h->ctx);
    if (st != ORR_RPC_HEALTH_SERVING && st != ORR_RPC_HEALTH_NOT_SERVING)
        return orr_err_set(err, ORR_ENOTFOUND, "service", "unknown service \"%.200s\"",
                           rq->service);
    Grpc__Health__V1__HealthCheckResponse *o =
        orr_arena_alloc(orr_rpc_call_arena(call), sizeof(*o));
    grpc__health__v1__health_check_response__init(o);
    o->status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)st;
    *resp = &o->base;
    return ORR_OK;
}

static orr_status rpc_health_watch(orr_rpc_call *call, const ProtobufCMessage *req, orr_err *err,
                                   void *ctx)
{
    (void)err;
    rpc_health *h = ctx;
    const Grpc__Health__V1__HealthCheckRequest *rq = (const void *)req;
    int last = -1;
    while (!orr_rpc_call_cancelled(call)) {
        int st = h->probe(rq->service, h->ctx);
        if (st != ORR_RPC_HEALTH_SERVING && st != ORR_RPC_HEALTH_NOT_SERVING)
            st = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
        if (st != last) {
            Grpc__Health__V1__HealthCheckResponse o = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
            o.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)st;
            if (orr_rpc_stream_send(call, &o.base) != ORR_OK)
                return ORR_ECANCELLED;
            last = st;
        }
        orr_rpc_call_wait_cancelled(call, h->poll_ms);
    }
    return ORR_ECANCELLED;
}

orr_status orr_rpc_server_add_health(orr_rpc_server *s, orr_rpc_health_fn probe, void *ctx,
                                     int poll_ms, orr_err *err)
{
    if (!probe)
        return orr_err_set(err, ORR_EINVAL, "probe", "a probe is required");
    rpc_health *h = orr_xmalloc(sizeof(*h));
    *h = (rpc_health){probe, ctx, poll_ms > 0 ? poll_ms : 500};
    if (orr_rpc_server_own(s, h) != 0) {
        free(h);
        return orr_err_set(err, ORR_ETOOBIG, NULL, "the server owns too many contexts");
    }
    static const orr_rpc_method methods[] = {
        {"Check", rpc_health_check, NULL},
        {"Watch", NULL, rpc_health_watch},
    };
    return orr_rpc_server_add_service(s, &grpc__health__v1__health__descriptor, methods, 2, h, 1,
                                      err);
}

/*
 * orr_rpc.h - Orrery's RPC runtime on the gRPC C core and protobuf-c.
 *
 * Server: one dispatch table maps each method of a protobuf-c service
 * descriptor ("/orrery.halley.v1.Halley/GetTask") to a handler. A pool of
 * worker threads serves calls; each call gets an arena that lives until the
 * call ends. Requests are unpacked with the method's input descriptor; bytes
 * that do not decode, an unknown method, a message above max_msg_bytes or a
 * missing/wrong `authorization: Bearer <token>` are answered with the proper
 * gRPC status without reaching the handler.
 *
 * Status mapping (orr_status -> gRPC):
 *   EINVAL->INVALID_ARGUMENT  ENOTFOUND->NOT_FOUND  EEXIST->ALREADY_EXISTS
 *   ESTATE->FAILED_PRECONDITION  ECONFLICT->ABORTED  EAUTH->UNAUTHENTICATED
 *   EPERM->PERMISSION_DENIED  EUNAVAIL->UNAVAILABLE  ETIMEOUT->DEADLINE_EXCEEDED
 *   ETOOBIG->RESOURCE_EXHAUSTED  ECANCELLED->CANCELLED  others->INTERNAL
 * The status message is "field: message" when a field is named, and the field
 * also travels as trailing metadata "orr-field". A unary handler that fails
 * once the call's deadline has passed is answered DEADLINE_EXCEEDED.
 *
 * Threads: unary handlers run on the worker threads (`threads`), so a slow
 * handler holds one worker; streaming handlers get a thread each.
 *
 * Client: a channel to a target with a service token; unary calls with a
 * deadline; server-streaming reads; gRPC reconnects the channel by itself.
 */
#ifndef ORR_RPC_H
#define ORR_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_status.h"

/* ---------------------------------------------------------------- server */

typedef struct orr_rpc_server orr_rpc_server;
typedef struct orr_rpc_call orr_rpc_call;

/* Unary handler. req was unpacked for this call (freed by the runtime after
 * the handler returns). On ORR_OK set *resp to a message of the method's
 * output type, allocated in orr_rpc_call_arena(call) (or anywhere that
 * outlives the call; the runtime only packs it). On failure return the code
 * and fill err (field + message); *resp is ignored. */
typedef orr_status (*orr_rpc_unary_fn)(orr_rpc_call *call, const ProtobufCMessage *req,
                                       ProtobufCMessage **resp, orr_err *err, void *ctx);

/* Server-streaming handler: send any number of messages with
 * orr_rpc_stream_send(), then return the final status. It should return soon
 * after orr_rpc_call_cancelled() turns true (client gone or server stopping). */
typedef orr_status (*orr_rpc_stream_fn)(orr_rpc_call *call, const ProtobufCMessage *req,
                                        orr_err *err, void *ctx);

typedef struct orr_rpc_method {
    const char *name;       /* method name as in the .proto, e.g. "GetTask" */
    orr_rpc_unary_fn unary; /* exactly one of unary/stream is set */
    orr_rpc_stream_fn stream;
} orr_rpc_method;

typedef struct orr_rpc_server_opts {
    const char *listen;   /* "127.0.0.1:7070"; port 0 picks a free one */
    int threads;          /* worker threads (default 8) */
    int max_streams;      /* concurrent streaming calls allowed (default 256) */
    const char *token;    /* required bearer token; NULL or "" = no auth */
    size_t max_msg_bytes; /* largest request accepted (default 4 MiB) */
    int queues;           /* completion queues the workers are spread over
                             (default 1, at most threads). More queues mean
                             fewer thread hand-offs, but a call waits behind
                             slow handlers of its own queue's workers. */
    /* NULL-terminated names of methods the runtime lets through without the
       service token (may be NULL): their handler checks the caller itself,
       with orr_rpc_call_bearer. A name that is no method is ORR_EINVAL. */
    const char *const *handler_auth;
} orr_rpc_server_opts;

/* Create a server for svc. Methods of svc not in the table answer
 * UNIMPLEMENTED; a table entry naming no method of svc is ORR_EINVAL.
 * ctx is passed to every handler. Binds the port (ORR_EIO if it cannot). */
orr_status orr_rpc_server_create(const ProtobufCServiceDescriptor *svc,
                                 const orr_rpc_method *methods, size_t n_methods, void *ctx,
                                 const orr_rpc_server_opts *opts, orr_rpc_server **out,
                                 orr_err *err);
/* Serve one more service on s (before orr_rpc_server_start; ORR_ESTATE
 * after): methods as for orr_rpc_server_create, ctx for their handlers;
 * public != 0: they need no service token (the standard health and
 * reflection services, as stock servers have them). A path served twice is
 * ORR_EINVAL. On failure the server is unchanged apart from memory it frees
 * at destroy. */
orr_status orr_rpc_server_add_service(orr_rpc_server *s, const ProtobufCServiceDescriptor *svc,
                                      const orr_rpc_method *methods, size_t n_methods, void *ctx,
                                      int public, orr_err *err);
/* Hand p (malloc'd) to the server, which frees it at destroy: for handler
 * contexts that must live as long as the server. -1 when full (at most 4). */
int orr_rpc_server_own(orr_rpc_server *s, void *p);

/* grpc.health.v1.Health (Check and Watch) on s: probe(service, ctx) answers
 * ORR_RPC_HEALTH_SERVING, ORR_RPC_HEALTH_NOT_SERVING, or
 * ORR_RPC_HEALTH_UNKNOWN for a service it does not know (Check: NOT_FOUND;
 * Watch: SERVICE_UNKNOWN, and the stream stays open). Watch probes every
 * poll_ms (<= 0: 500) and sends each change. probe runs on RPC threads and
 * may block up to a short while. Public (no token). Before start. */
enum { ORR_RPC_HEALTH_SERVING = 1, ORR_RPC_HEALTH_NOT_SERVING = 2, ORR_RPC_HEALTH_UNKNOWN = 3 };
typedef int (*orr_rpc_health_fn)(const char *service, void *ctx);
orr_status orr_rpc_server_add_health(orr_rpc_server *s, orr_rpc_health_fn probe, void *ctx,
                                     int poll_ms, orr_err *err);

/* The bound port (useful with port 0). */
int orr_rpc_server_port(const orr_rpc_server *s);
/* Start serving in background threads; returns at once. */
orr_status orr_rpc_server_start(orr_rpc_server *s);
/* Stop accepting, cancel streaming calls, wait for handlers, free everything. */
void orr_rpc_server_destroy(orr_rpc_server *s);

/* Per-call helpers, valid only inside a handler. */
orr_arena *orr_rpc_call_arena(orr_rpc_call *call);
const char *orr_rpc_call_method(const orr_rpc_call *call); /* "GetTask" */
const char *orr_rpc_call_peer(const orr_rpc_call *call);
int orr_rpc_call_cancelled(orr_rpc_call *call);
/* The token of the call's `authorization: Bearer <token>` header, in the
 * call's arena; "" when the header is missing or not a bearer token. */
const char *orr_rpc_call_bearer(orr_rpc_call *call);
/* Wait up to wait_ms (< 0: no limit) for the call to be cancelled; returns
 * orr_rpc_call_cancelled(call). Lets a streaming handler sleep between polls
 * of its own event source yet wake at once when the client leaves. On a
 * unary call it sleeps in short slices until the deadline or server stop. */
int orr_rpc_call_wait_cancelled(orr_rpc_call *call, int wait_ms);
/* Send one message on a server-streaming call. Blocks until gRPC accepted it.
 * ORR_ECANCELLED if the client went away. */
orr_status orr_rpc_stream_send(orr_rpc_call *call, const ProtobufCMessage *msg);

/* Per-method counters for metrics: calls, errors and a latency histogram
 * (from the call's arrival to its last batch completing). Calls refused for
 * a bad token or bad bytes count as errors of their method; unknown paths
 * are not counted. */
typedef struct orr_rpc_method_stats {
    const char *name;
    uint64_t calls;
    uint64_t errors;
    uint64_t latency_le_us[12]; /* cumulative buckets, bounds in orr_rpc_latency_bounds_us */
    double latency_sum_s;
} orr_rpc_method_stats;
extern const uint64_t orr_rpc_latency_bounds_us[12];
/* Copy up to n method stats into out; returns the number of methods. */
size_t orr_rpc_server_stats(orr_rpc_server *s, orr_rpc_method_stats *out, size_t n);

/* ---------------------------------------------------------------- client */

typedef struct orr_rpc_client orr_rpc_client;
typedef struct orr_rpc_stream orr_rpc_stream;

/* target: "127.0.0.1:7070". token: sent as bearer (NULL = none). Never blocks;
 * connection happens on the first call. Thread-safe: calls may run from many
 * threads at once. */
orr_status orr_rpc_client_create(const ProtobufCServiceDescriptor *svc, const char *target,
                                 const char *token, orr_rpc_client **out, orr_err *err);
void orr_rpc_client_destroy(orr_rpc_client *c);

/* Unary call of method (by name) with a deadline (timeout_ms <= 0: none).
 * The call waits for the channel to (re)connect within its deadline. A method
 * name that svc does not have is ORR_EINVAL (field "method") without I/O. On ORR_OK *resp is a new
 * message of the output type: free it with protobuf_c_message_free_unpacked(
 * *resp, NULL). On failure err holds the server's status (mapped back to an
 * orr_status), field and message; ORR_EUNAVAIL when the server cannot be
 * reached; ORR_ETIMEOUT past the deadline. */
orr_status orr_rpc_call_unary(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                              ProtobufCMessage **resp, int timeout_ms, orr_err *err);

/* Open a server-streaming call (timeout_ms 0 = no deadline). */
orr_status orr_rpc_stream_open(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                               int timeout_ms, orr_rpc_stream **out, orr_err *err);
/* Next message: ORR_OK with *msg (free with protobuf_c_message_free_unpacked),
 * ORR_EOF when the server finished with OK, ORR_ETIMEOUT if nothing arrived
 * within wait_ms (< 0: no limit; the stream stays usable), or the call's
 * error status. After EOF or an error every later call returns the same.
 * A stream is used by one thread at a time. */
orr_status orr_rpc_stream_next(orr_rpc_stream *st, ProtobufCMessage **msg, int wait_ms,
                               orr_err *err);
/* Cancel (if still open) and free. */
void orr_rpc_stream_close(orr_rpc_stream *st);

#endif

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
 * handler holds one worker; streaming handlers (server-streaming and bidi)
 * get a thread each.
 *
 * Method kinds: unary handlers (one request, one response) and stream
 * handlers. A stream handler serves server-streaming methods (one request,
 * any number of responses) and, with orr_rpc_stream_recv(), bidi and
 * client-streaming ones: the first client message is its request, the rest
 * it receives until the client half-closes:
 *
 *     answer(req);
 *     for (;;) {
 *         st = orr_rpc_stream_recv(call, &msg, -1, err);
 *         if (st == ORR_EOF) return ORR_OK;      client half-closed
 *         if (st != ORR_OK) return st;           cancelled, bad bytes
 *         answer(msg) with orr_rpc_stream_send() any number of times;
 *         protobuf_c_message_free_unpacked(msg, NULL);
 *     }
 *
 * (A client that half-closes without sending any message is answered
 * INVALID_ARGUMENT before the handler runs, as on every method.) Only the
 * handler's own thread calls recv and send on its call, so the runtime
 * never starts two batches of one call from two threads at once.
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

/* Stream handler (server-streaming, bidi or client-streaming method): req is
 * the first client message (freed by the runtime after the handler returns);
 * further ones come from orr_rpc_stream_recv(). Send any number of messages
 * with orr_rpc_stream_send(), then return the final status (a bidi client
 * may still be sending then: the rest is dropped). Runs on a thread of its
 * own, counted against max_streams. It should return soon after
 * orr_rpc_call_cancelled() turns true (client gone or server stopping). */
typedef orr_status (*orr_rpc_stream_fn)(orr_rpc_call *call, const ProtobufCMessage *req,
                                        orr_err *err, void *ctx);

typedef struct orr_rpc_method {
    const char *name;       /* method name as in the .proto, e.g. "GetTask" */
    orr_rpc_unary_fn unary; /* exactly one of unary/stream is set */
    orr_rpc_stream_fn stream;
} orr_rpc_method;

/* TLS material, PEM text (not file names). A server uses cert_pem, key_pem
 * and optionally ca_pem (the CA client certificates must be signed by); a
 * client uses ca_pem (the CA it trusts; NULL = the system's roots) and
 * optionally cert_pem + key_pem (its own certificate, for mutual TLS). */
typedef struct orr_rpc_tls {
    const char *ca_pem;
    const char *cert_pem;
    const char *key_pem;
    /* client only: the name every server's certificate must hold, instead of
     * the address dialled (NULL or "" = the address); needed with a list */
    const char *server_name;
} orr_rpc_tls;

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
    int handoff_us;       /* > 0: one worker of a queue at a time waits for
                             events and handles what it takes itself; another
                             is let in once none has waited for a whole
                             period of handoff_us (at least 50; a slow
                             handler waits one to two periods). Spares gRPC's
                             hand-off of the waiting at each event. 0 = every
                             idle worker waits at once (the default). */
    /* NULL-terminated names of methods the runtime lets through without the
       service token (may be NULL): their handler checks the caller itself,
       with orr_rpc_call_bearer. A name that is no method is ORR_EINVAL. */
    const char *const *handler_auth;
    /* TLS (may be NULL = plaintext): cert_pem and key_pem are the server's
       certificate chain and private key; ca_pem, if set, turns on mutual TLS
       (every client must present a certificate signed by it). */
    const struct orr_rpc_tls *tls;
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
 * contexts that must live as long as the server. -1 when full (at most 8,
 * both functions together). _fn: the server calls free_fn(p) instead of
 * free(p) (NULL = free); owned things are freed in reverse order. */
int orr_rpc_server_own(orr_rpc_server *s, void *p);
int orr_rpc_server_own_fn(orr_rpc_server *s, void *p, void (*free_fn)(void *));

/* Full names of the services s serves ("orrery.halley.v1.Halley"), each
 * once, in the order they were added: up to n into out (static strings of
 * the service descriptors). Returns how many there are. Services whose
 * table was empty are not listed. */
size_t orr_rpc_server_services(const orr_rpc_server *s, const char **out, size_t n);

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

/* Server reflection (grpc.reflection.v1alpha.ServerReflection and the same
 * protocol as grpc.reflection.v1.ServerReflection) on s, so stock clients
 * (grpcurl, grpc_cli) can discover and call it without its .proto files.
 * set[0..len) is a serialized google.protobuf.FileDescriptorSet of every
 * .proto s serves, the reflection .proto included (protoc --include_imports
 * --descriptor_set_out), typically embedded in the binary with
 * orr_descriptor_set() in rpc/CMakeLists.txt; it must outlive s (it is not
 * copied). Answers: list_services from s's own table at call time (so every
 * served service, reflection included); file_by_filename and
 * file_containing_symbol (messages, nested ones too, enums, services and
 * methods "pkg.Svc.Method") with the file's FileDescriptorProto followed by
 * those of all its dependencies; all_extension_numbers_of_type with an empty
 * list for a known message; NOT_FOUND error_response for anything unknown and
 * for file_containing_extension (no extensions). Public (no token). Before
 * start. ORR_EINVAL (field "descriptor_set") if set does not parse. */
orr_status orr_rpc_server_add_reflection(orr_rpc_server *s, const uint8_t *set, size_t len,
                                         orr_err *err);

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

/* The handler is about to wait long (for other calls, or a commit): if its
 * worker held its queue's turn to wait for events (handoff_us), another
 * worker is let in now instead of after handoff_us. Cheap when it is not
 * needed; a no-op on servers without the gate and on streaming calls. */
void orr_rpc_call_blocking(orr_rpc_call *call);
/* The token of the call's `authorization: Bearer <token>` header, in the
 * call's arena; "" when the header is missing or not a bearer token. */
const char *orr_rpc_call_bearer(orr_rpc_call *call);
/* Wait up to wait_ms (< 0: no limit) for the call to be cancelled; returns
 * orr_rpc_call_cancelled(call). Lets a streaming handler sleep between polls
 * of its own event source yet wake at once when the client leaves. On a
 * unary call it sleeps in short slices until the deadline or server stop. */
int orr_rpc_call_wait_cancelled(orr_rpc_call *call, int wait_ms);
/* Send one message on a streaming call. Blocks until gRPC
 * accepted it. ORR_ECANCELLED if the client went away. */
orr_status orr_rpc_stream_send(orr_rpc_call *call, const ProtobufCMessage *msg);
/* Receive the next client message of a streaming call (only from its
 * handler; the first one was the handler's req).
 * ORR_OK: *msg is a message of the method's input type, owned by the caller
 * (free with protobuf_c_message_free_unpacked(*msg, NULL)). ORR_EOF: the
 * client half-closed (no more messages; every later call says the same).
 * ORR_ETIMEOUT: nothing arrived within wait_ms (< 0: no limit); the read
 * stays armed and the next call waits for the same message. ORR_ECANCELLED:
 * the client went away or the server is stopping. ORR_EINVAL (field
 * "request"): the bytes do not decode (return it: the call ends with
 * INVALID_ARGUMENT); ORR_EINVAL (field "call") on a unary call. On a
 * server-streaming call the client has half-closed: ORR_EOF.
 * Messages above max_msg_bytes end the call (RESOURCE_EXHAUSTED, seen here
 * as ORR_ECANCELLED). A client that cancels may be reported as ORR_EOF
 * (gRPC ends its messages the same way): the handler's status then goes
 * nowhere and orr_rpc_call_cancelled() turns true soon after. err is filled
 * on every status but ORR_OK. */
orr_status orr_rpc_stream_recv(orr_rpc_call *call, ProtobufCMessage **msg, int wait_ms,
                               orr_err *err);

/* Per-method counters for metrics: calls, errors and a latency histogram
 * (from the call's arrival to its last batch completing). Calls refused for
 * a bad token or bad bytes count as errors of their method; unknown paths
 * are not counted. */
typedef struct orr_rpc_method_stats {
    const char *name; /* unique: "Check", or "pkg.Svc/Check" when a method of an
                         earlier service has that name already */
    uint64_t calls;
    uint64_t errors;
    uint64_t latency_le_us[12]; /* cumulative buckets, bounds in orr_rpc_latency_bounds_us */
    double latency_sum_s;
} orr_rpc_method_stats;
extern const uint64_t orr_rpc_latency_bounds_us[12];
/* Copy up to n method stats into out; returns the number of methods. */
size_t orr_rpc_server_stats(orr_rpc_server *s, orr_rpc_method_stats *out, size_t n);

/* What the workers did, since the server started: the events they took
 * from their queues, the time they spent handling them (summed over the
 * workers: from the event's return out of the wait to the next wait, a
 * handler's waits for its database included), and the sleeping workers
 * woken past a queue's gate (by the watchdog, or at once by
 * orr_rpc_call_blocking; a woken worker that finds another waiting sleeps
 * again). With the gate (handoff_us), busy time growing about as fast as
 * the wall clock per queue means its one waiting worker is seldom back to
 * wait: calls queue behind it. Above that, let-in workers ran beside it. */
typedef struct orr_rpc_worker_stats {
    uint64_t events;
    double busy_s;
    uint64_t let_ins;
    int queues; /* completion queues */
    int gated;  /* 1 with the gate */
} orr_rpc_worker_stats;
void orr_rpc_server_worker_stats(orr_rpc_server *s, orr_rpc_worker_stats *out);

/* ---------------------------------------------------------------- client */

typedef struct orr_rpc_client orr_rpc_client;
typedef struct orr_rpc_stream orr_rpc_stream;

/* target: "127.0.0.1:7070", or a list of IP addresses of several servers
 * ("10.0.0.2:7070,10.0.0.3:7070": calls go to the first that answers and move
 * to the next when its connection fails; a list holding a host name is
 * ORR_EINVAL). token: sent as bearer (NULL = none). Never blocks;
 * connection happens on the first call. Thread-safe: calls may run from many
 * threads at once. */
orr_status orr_rpc_client_create(const ProtobufCServiceDescriptor *svc, const char *target,
                                 const char *token, orr_rpc_client **out, orr_err *err);
void orr_rpc_client_destroy(orr_rpc_client *c);

/* Drive c's unary calls and streams from the process's one driver thread
 * (started with the first driven client, stopped with the last): callers
 * then wait on a futex, not in gRPC, so only the driver waits in gRPC's
 * poller and no call hands the polling to another thread. For a process
 * with many threads calling at once; call it from the thread that created
 * c, before c's first call. A failure to start the thread: ORR_EINTERNAL,
 * c stays undriven and usable. Close every stream of every driven client
 * before the last driven client is destroyed: the driver stops only when
 * nothing driven is pending, and that destroy waits for it. */
orr_status orr_rpc_client_drive(orr_rpc_client *c, orr_err *err);

/* The TLS every client created afterwards in this process uses (copied;
 * NULL = plaintext again, the default). A daemon calls it once at start,
 * before it makes its clients: all of them talk to halleyd. A TLS failure
 * (an untrusted or unnamed server, a refused client certificate) makes the
 * call fail with ORR_EUNAVAIL or ORR_ETIMEOUT, the reason logged by the
 * gRPC core. */
void orr_rpc_client_set_tls(const orr_rpc_tls *tls);

/* Unary call of method (by name) with a deadline (timeout_ms <= 0: none).
 * The call waits for the channel to (re)connect within its deadline. A method
 * name that svc does not have is ORR_EINVAL (field "method") without I/O. On ORR_OK *resp is a new
 * message of the output type: free it with protobuf_c_message_free_unpacked(
 * *resp, NULL). On failure err holds the server's status (mapped back to an
 * orr_status), field and message; ORR_EUNAVAIL when the server cannot be
 * reached; ORR_ETIMEOUT past the deadline. */
orr_status orr_rpc_call_unary(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                              ProtobufCMessage **resp, int timeout_ms, orr_err *err);
/* The same, with the answer's memory taken from arena (NULL: the heap, as
 * above): it lives as long as the arena and is never freed on its own. A
 * list of many rows then costs no malloc and free per field. */
orr_status orr_rpc_call_unary_in(orr_rpc_client *c, const char *method, const ProtobufCMessage *req,
                                 orr_arena *arena, ProtobufCMessage **resp, int timeout_ms,
                                 orr_err *err);

/* A set of unary calls in flight at once on one client, completed on one
 * queue: start any number, take each as it ends. For a caller with many
 * independent calls to make (a load generator, a dispatcher) without a
 * thread blocked in each. A set is used by one thread at a time; several
 * sets may share a client. Destroy a set before its client: calls in flight
 * use the client's channel and token. */
typedef struct orr_rpc_set orr_rpc_set;
orr_rpc_set *orr_rpc_set_create(orr_rpc_client *c);
/* Start method with req (copied out at once: req may go after the call)
 * and a deadline as in orr_rpc_call_unary. tag comes back with the call's
 * end. A method svc lacks or a message that cannot be encoded: ORR_EINVAL;
 * a call gRPC refuses to start: ORR_EINTERNAL; nothing is in flight then. */
orr_status orr_rpc_set_start(orr_rpc_set *s, const char *method, const ProtobufCMessage *req,
                             int timeout_ms, void *tag, orr_err *err);
size_t orr_rpc_set_in_flight(const orr_rpc_set *s);
/* Wait up to wait_ms (< 0: no limit) for a call of the set to end: 1 with
 * its tag, its status in *st and, on ORR_OK, its answer in *resp (free
 * with protobuf_c_message_free_unpacked), err as orr_rpc_call_unary sets
 * it; 0 when none ended in time; -1 when none is in flight. Calls end in
 * any order. */
int orr_rpc_set_next(orr_rpc_set *s, int wait_ms, void **tag, orr_status *st,
                     ProtobufCMessage **resp, orr_err *err);
/* Cancel the calls still in flight, wait for their ends, free the set
 * (not the client). */
void orr_rpc_set_destroy(orr_rpc_set *s);

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

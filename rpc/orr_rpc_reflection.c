/*
 * orr_rpc_reflection.c - gRPC server reflection on an orr_rpc server (see
 * orr_rpc_server_add_reflection in orr_rpc.h).
 *
 * ServerReflectionInfo is a bidi stream: the handler answers its first
 * request, reads the next ones with orr_rpc_stream_recv until the client
 * half-closes and answers each at once, in order. Files come from an index of the server's
 * FileDescriptorSet (orr_rpc_desc.c) built when the service is added; answers point into the set
 * (no copies). Each answer is built in an arena of its own, freed once it is sent, so a long-lived
 * stream does not grow.
 *
 * grpc.reflection.v1 is the same protocol as v1alpha under a newer package
 * name, with the same wire format: it is served by the same handler through
 * a service descriptor written here whose method uses the v1alpha message
 * descriptors (only the path differs).
 */
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_rpc.h"
#include "orr_rpc_desc.h"
#include "reflection.pb-c.h"

#define REFL_NOT_FOUND        5 /* gRPC status codes of error_response */
#define REFL_INVALID_ARGUMENT 3

typedef Grpc__Reflection__V1alpha__ServerReflectionRequest refl_req;
typedef Grpc__Reflection__V1alpha__ServerReflectionResponse refl_resp;

typedef struct rpc_refl {
    orr_rpc_server *srv;
    orr_rpc_desc *desc;
} rpc_refl;

static void rpc_refl_free(void *p)
{
    rpc_refl *r = p;
    orr_rpc_desc_free(r->desc);
    free(r);
}

static void rpc_refl_error(orr_arena *a, refl_resp *o, int code, const char *what, const char *name)
{
    Grpc__Reflection__V1alpha__ErrorResponse *e = orr_arena_alloc(a, sizeof(*e));
    grpc__reflection__v1alpha__error_response__init(e);
    e->error_code = code;
    e->error_message = orr_arena_sprintf(a, "%s %.200s not found", what, name);
    o->message_response_case =
        GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    o->error_response = e;
}

/* The file's FileDescriptorProto and those of all its dependencies. */
static void rpc_refl_files(const rpc_refl *r, orr_arena *a, refl_resp *o, long file)
{
    size_t n = orr_rpc_desc_count(r->desc);
    size_t *idx = orr_arena_alloc(a, n * sizeof(*idx));
    size_t k = orr_rpc_desc_closure(r->desc, (size_t)file, idx, n);
    Grpc__Reflection__V1alpha__FileDescriptorResponse *fr = orr_arena_alloc(a, sizeof(*fr));
    grpc__reflection__v1alpha__file_descriptor_response__init(fr);
    fr->file_descriptor_proto = orr_arena_alloc(a, (k ? k : 1) * sizeof(ProtobufCBinaryData));
    for (size_t i = 0; i < k; i++) {
        ProtobufCBinaryData *b = &fr->file_descriptor_proto[i];
        b->data = (uint8_t *)orr_rpc_desc_bytes(r->desc, idx[i], &b->len);
    }
    fr->n_file_descriptor_proto = k;
    o->message_response_case =
        GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    o->file_descriptor_response = fr;
}

static void rpc_refl_list(const rpc_refl *r, orr_arena *a, refl_resp *o)
{
    size_t n = orr_rpc_server_services(r->srv, NULL, 0);
    const char **names = orr_arena_alloc(a, (n ? n : 1) * sizeof(*names));
    n = orr_rpc_server_services(r->srv, names, n);
    Grpc__Reflection__V1alpha__ListServiceResponse *l = orr_arena_alloc(a, sizeof(*l));
    grpc__reflection__v1alpha__list_service_response__init(l);
    l->service = orr_arena_alloc(a, (n ? n : 1) * sizeof(*l->service));
    for (size_t i = 0; i < n; i++) {
        Grpc__Reflection__V1alpha__ServiceResponse *sr = orr_arena_alloc(a, sizeof(*sr));
        grpc__reflection__v1alpha__service_response__init(sr);
        sr->name = (char *)names[i];
        l->service[i] = sr;
    }
    l->n_service = n;
    o->message_response_case =
        GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
    o->list_services_response = l;
}

/* Fill o, the answer to q; everything new lives in a. */
static void rpc_refl_answer(const rpc_refl *r, orr_arena *a, refl_req *q, refl_resp *o)
{
    long f;
    int kind = 0;
    o->valid_host = q->host;
    o->original_request = q;
    switch (q->message_request_case) {
    case GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        rpc_refl_list(r, a, o);
        break;
    case GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        f = orr_rpc_desc_file_by_name(r->desc, q->file_by_filename);
        if (f < 0)
            rpc_refl_error(a, o, REFL_NOT_FOUND, "file", q->file_by_filename);
        else
            rpc_refl_files(r, a, o, f);
        break;
    case GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        f = orr_rpc_desc_file_by_symbol(r->desc, q->file_containing_symbol, NULL);
        if (f < 0)
            rpc_refl_error(a, o, REFL_NOT_FOUND, "symbol", q->file_containing_symbol);
        else
            rpc_refl_files(r, a, o, f);
        break;
    case GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        f = orr_rpc_desc_file_by_symbol(r->desc, q->all_extension_numbers_of_type, &kind);
        if (f < 0 || kind != ORR_RPC_DESC_MESSAGE) {
            rpc_refl_error(a, o, REFL_NOT_FOUND, "message type", q->all_extension_numbers_of_type);
        } else {
            Grpc__Reflection__V1alpha__ExtensionNumberResponse *e = orr_arena_alloc(a, sizeof(*e));
            grpc__reflection__v1alpha__extension_number_response__init(e);
            e->base_type_name = q->all_extension_numbers_of_type;
            o->message_response_case =
                GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
            o->all_extension_numbers_response = e;
        }
        break;
    case GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION: {
        const Grpc__Reflection__V1alpha__ExtensionRequest *x = q->file_containing_extension;
        const char *type = x && x->containing_type ? x->containing_type : "";
        rpc_refl_error(
            a, o, REFL_NOT_FOUND, "extension of",
            orr_arena_sprintf(a, "%.200s number %d", type, x ? (int)x->extension_number : 0));
        break;
    }
    default: {
        Grpc__Reflection__V1alpha__ErrorResponse *e = orr_arena_alloc(a, sizeof(*e));
        grpc__reflection__v1alpha__error_response__init(e);
        e->error_code = REFL_INVALID_ARGUMENT;
        e->error_message = "the request names no message_request";
        o->message_response_case =
            GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
        o->error_response = e;
        break;
    }
    }
}

/* Answer one request; ORR_OK or the send's failure. */
static orr_status rpc_refl_one(orr_rpc_call *call, const rpc_refl *r, const ProtobufCMessage *m)
{
    orr_arena *a = orr_arena_create(0);
    refl_resp o = GRPC__REFLECTION__V1ALPHA__SERVER_REFLECTION_RESPONSE__INIT;
    rpc_refl_answer(r, a, (refl_req *)m, &o);
    orr_status st = orr_rpc_stream_send(call, &o.base);
    orr_arena_destroy(a);
    return st;
}

static orr_status rpc_refl_info(orr_rpc_call *call, const ProtobufCMessage *req, orr_err *err,
                                void *ctx)
{
    const rpc_refl *r = ctx;
    orr_status st = rpc_refl_one(call, r, req);
    while (st == ORR_OK) {
        ProtobufCMessage *m = NULL;
        st = orr_rpc_stream_recv(call, &m, -1, err);
        if (st == ORR_EOF)
            return ORR_OK;
        if (st != ORR_OK)
            return st;
        st = rpc_refl_one(call, r, m);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    return orr_err_set(err, st, NULL, "the client went away");
}

static const ProtobufCMethodDescriptor rpc_refl_v1_methods[] = {
    {"ServerReflectionInfo", &grpc__reflection__v1alpha__server_reflection_request__descriptor,
     &grpc__reflection__v1alpha__server_reflection_response__descriptor},
};
static const unsigned rpc_refl_v1_by_name[] = {0};
static const ProtobufCServiceDescriptor rpc_refl_v1_descriptor = {
    PROTOBUF_C__SERVICE_DESCRIPTOR_MAGIC,
    "grpc.reflection.v1.ServerReflection",
    "ServerReflection",
    "Grpc__Reflection__V1__ServerReflection",
    "grpc.reflection.v1",
    1,
    rpc_refl_v1_methods,
    rpc_refl_v1_by_name,
};

orr_status orr_rpc_server_add_reflection(orr_rpc_server *s, const uint8_t *set, size_t len,
                                         orr_err *err)
{
    if (!set && len)
        return orr_err_set(err, ORR_EINVAL, "descriptor_set", "no descriptor set");
    rpc_refl *r = orr_xcalloc(1, sizeof(*r));
    r->srv = s;
    orr_status st = orr_rpc_desc_load(set, len, &r->desc, err);
    if (st != ORR_OK) {
        free(r);
        return st;
    }
    if (orr_rpc_server_own_fn(s, r, rpc_refl_free) != 0) {
        rpc_refl_free(r);
        return orr_err_set(err, ORR_ETOOBIG, NULL, "the server owns too many contexts");
    }
    static const orr_rpc_method methods[] = {
        {.name = "ServerReflectionInfo", .stream = rpc_refl_info},
    };
    st = orr_rpc_server_add_service(s, &grpc__reflection__v1alpha__server_reflection__descriptor,
                                    methods, 1, r, 1, err);
    if (st == ORR_OK)
        st = orr_rpc_server_add_service(s, &rpc_refl_v1_descriptor, methods, 1, r, 1, err);
    return st;
}

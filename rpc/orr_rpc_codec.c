/*
 * orr_rpc_codec.c - status mapping and protobuf-c <-> gRPC byte buffers
 * (see orr_rpc_codec.h).
 *
 * Decoding is the one place where bytes from the network meet protobuf-c, so
 * it is kept small and fuzzed (tests/fuzz/rpc/). protobuf-c bounds every
 * length by the bytes actually present, so an arena allocation here is at
 * most a small multiple of the input size, which max_bytes already bounds.
 */
#include "orr_rpc_codec.h"

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <string.h>

grpc_status_code orr_rpc_status_to_grpc(orr_status s)
{
    switch (s) {
    case ORR_OK:
        return GRPC_STATUS_OK;
    case ORR_EINVAL:
        return GRPC_STATUS_INVALID_ARGUMENT;
    case ORR_ENOTFOUND:
        return GRPC_STATUS_NOT_FOUND;
    case ORR_EEXIST:
        return GRPC_STATUS_ALREADY_EXISTS;
    case ORR_ESTATE:
        return GRPC_STATUS_FAILED_PRECONDITION;
    case ORR_ECONFLICT:
        return GRPC_STATUS_ABORTED;
    case ORR_EAUTH:
        return GRPC_STATUS_UNAUTHENTICATED;
    case ORR_EPERM:
        return GRPC_STATUS_PERMISSION_DENIED;
    case ORR_EUNAVAIL:
        return GRPC_STATUS_UNAVAILABLE;
    case ORR_ETIMEOUT:
        return GRPC_STATUS_DEADLINE_EXCEEDED;
    case ORR_ETOOBIG:
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    case ORR_ECANCELLED:
        return GRPC_STATUS_CANCELLED;
    case ORR_EUNIMPL:
        return GRPC_STATUS_UNIMPLEMENTED;
    default:
        return GRPC_STATUS_INTERNAL;
    }
}

orr_status orr_rpc_status_from_grpc(grpc_status_code c)
{
    switch (c) {
    case GRPC_STATUS_OK:
        return ORR_OK;
    case GRPC_STATUS_INVALID_ARGUMENT:
    case GRPC_STATUS_OUT_OF_RANGE:
        return ORR_EINVAL;
    case GRPC_STATUS_NOT_FOUND:
        return ORR_ENOTFOUND;
    case GRPC_STATUS_ALREADY_EXISTS:
        return ORR_EEXIST;
    case GRPC_STATUS_FAILED_PRECONDITION:
        return ORR_ESTATE;
    case GRPC_STATUS_ABORTED:
        return ORR_ECONFLICT;
    case GRPC_STATUS_UNAUTHENTICATED:
        return ORR_EAUTH;
    case GRPC_STATUS_PERMISSION_DENIED:
        return ORR_EPERM;
    case GRPC_STATUS_UNAVAILABLE:
        return ORR_EUNAVAIL;
    case GRPC_STATUS_DEADLINE_EXCEEDED:
        return ORR_ETIMEOUT;
    case GRPC_STATUS_RESOURCE_EXHAUSTED:
        return ORR_ETOOBIG;
    case GRPC_STATUS_CANCELLED:
        return ORR_ECANCELLED;
    case GRPC_STATUS_UNIMPLEMENTED:
        return ORR_EUNIMPL;
    default:
        return ORR_EINTERNAL;
    }
}

static void *codec_arena_alloc(void *data, size_t size)
{
    return orr_arena_alloc(data, size);
}

static void codec_arena_free(void *data, void *p)
{
    (void)data;
    (void)p;
}

void orr_rpc_arena_allocator(orr_arena *arena, ProtobufCAllocator *alloc)
{
    alloc->alloc = codec_arena_alloc;
    alloc->free = codec_arena_free;
    alloc->allocator_data = arena;
}

orr_status orr_rpc_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                          size_t max_bytes, orr_arena *arena, ProtobufCMessage **out, orr_err *err)
{
    *out = NULL;
    if (len > max_bytes)
        return orr_err_set(err, ORR_ETOOBIG, "request",
                           "message of %zu bytes exceeds the limit of %zu bytes", len, max_bytes);
    ProtobufCAllocator alloc;
    if (arena)
        orr_rpc_arena_allocator(arena, &alloc);
    static const uint8_t empty[1];
    ProtobufCMessage *m =
        protobuf_c_message_unpack(desc, arena ? &alloc : NULL, len, len ? data : empty);
    if (!m)
        return orr_err_set(err, ORR_EINVAL, "request", "cannot decode as %s", desc->name);
    *out = m;
    return ORR_OK;
}

orr_status orr_rpc_decode_bb(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb,
                             size_t max_bytes, orr_arena *arena, ProtobufCMessage **out,
                             orr_err *err)
{
    *out = NULL;
    size_t len = grpc_byte_buffer_length(bb);
    if (len > max_bytes)
        return orr_err_set(err, ORR_ETOOBIG, "request",
                           "message of %zu bytes exceeds the limit of %zu bytes", len, max_bytes);
    grpc_byte_buffer_reader rd;
    if (!grpc_byte_buffer_reader_init(&rd, bb))
        return orr_err_set(err, ORR_EINVAL, "request", "cannot decompress the message");
    grpc_slice flat = grpc_byte_buffer_reader_readall(&rd);
    grpc_byte_buffer_reader_destroy(&rd);
    orr_status st = orr_rpc_decode(desc, GRPC_SLICE_START_PTR(flat), GRPC_SLICE_LENGTH(flat),
                                   max_bytes, arena, out, err);
    grpc_slice_unref(flat);
    return st;
}

orr_status orr_rpc_pack(const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *want,
                        const char *what, grpc_byte_buffer **out, orr_err *err)
{
    *out = NULL;
    if (!msg)
        return orr_err_set(err, ORR_EINVAL, what, "no message");
    if (msg->descriptor != want)
        return orr_err_set(err, ORR_EINVAL, what, "message is a %s, expected a %s",
                           msg->descriptor ? msg->descriptor->name : "?", want->name);
    if (!protobuf_c_message_check(msg))
        return orr_err_set(err, ORR_EINVAL, what, "%s: missing required field", want->name);
    size_t n = protobuf_c_message_get_packed_size(msg);
    grpc_slice s = grpc_slice_malloc(n);
    size_t packed = protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
    if (packed != n) {
        grpc_slice_unref(s);
        return orr_err_set(err, ORR_EINTERNAL, what, "packed %zu bytes, expected %zu", packed, n);
    }
    *out = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return ORR_OK;
}

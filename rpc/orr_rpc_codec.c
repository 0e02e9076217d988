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

/* ------------------------------------------------------------ google.rpc.Status */

static size_t codec_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A small writer that stops (ok = 0) instead of overflowing. */
struct codec_w {
    uint8_t *p;
    size_t n, cap;
    int ok;
};

static void codec_put_varint(struct codec_w *w, uint64_t v)
{
    do {
        if (w->n >= w->cap) {
            w->ok = 0;
            return;
        }
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        w->p[w->n++] = v ? (uint8_t)(b | 0x80) : b;
    } while (v);
}

static void codec_put_bytes(struct codec_w *w, unsigned tag, const void *b, size_t len)
{
    codec_put_varint(w, tag);
    codec_put_varint(w, len);
    if (!w->ok || w->cap - w->n < len) {
        w->ok = 0;
        return;
    }
    if (len)
        memcpy(w->p + w->n, b, len);
    w->n += len;
}

/* Size of a length-delimited field (tag < 128) holding len bytes. */
static size_t codec_field_len(size_t len)
{
    return 1 + codec_varint_len(len) + len;
}

size_t orr_rpc_status_details(int code, const char *message, const char *field,
                              const char *description, uint8_t *out, size_t cap)
{
    size_t ml = message ? strlen(message) : 0, fl = field ? strlen(field) : 0;
    size_t dl = description ? strlen(description) : 0;
    size_t tl = strlen(ORR_RPC_BAD_REQUEST_TYPE);
    /* FieldViolation{1: field, 2: description} */
    size_t viol = (fl ? codec_field_len(fl) : 0) + (dl ? codec_field_len(dl) : 0);
    size_t badreq = codec_field_len(viol);                 /* BadRequest{1: violation} */
    size_t any = codec_field_len(tl) + codec_field_len(badreq); /* Any{1: url, 2: value} */
    struct codec_w w = {out, 0, cap, 1};
    if (code) {
        codec_put_varint(&w, 0x08); /* Status.code */
        codec_put_varint(&w, (uint64_t)(int64_t)code);
    }
    if (ml)
        codec_put_bytes(&w, 0x12, message, ml); /* Status.message */
    codec_put_varint(&w, 0x1a);                 /* Status.details */
    codec_put_varint(&w, any);
    codec_put_bytes(&w, 0x0a, ORR_RPC_BAD_REQUEST_TYPE, tl); /* Any.type_url */
    codec_put_varint(&w, 0x12);                              /* Any.value */
    codec_put_varint(&w, badreq);
    codec_put_varint(&w, 0x0a); /* BadRequest.field_violations */
    codec_put_varint(&w, viol);
    if (fl)
        codec_put_bytes(&w, 0x0a, field, fl);
    if (dl)
        codec_put_bytes(&w, 0x12, description, dl);
    return w.ok ? w.n : 0;
}

int orr_rpc_parse_bearer(const char *v, size_t len, const char **tok, size_t *tok_len)
{
    static const char scheme[] = "bearer";
    size_t sl = sizeof(scheme) - 1;
    if (len < sl + 2)
        return 0;
    for (size_t i = 0; i < sl; i++) {
        char ch = v[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (ch != scheme[i])
            return 0;
    }
    size_t i = sl;
    if (v[i] != ' ')
        return 0;
    while (i < len && v[i] == ' ')
        i++;
    size_t end = len;
    while (end > i && (v[end - 1] == ' ' || v[end - 1] == '\t'))
        end--;
    if (end == i)
        return 0;
    *tok = v + i;
    *tok_len = end - i;
    return 1;
}

/* ------------------------------------------------------------ arena allocator */

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

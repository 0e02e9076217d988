/*
 * fuzz_rpc_decode.c - fuzz target for the request decoding path of orr_rpc:
 * bytes received for a method -> size check -> protobuf-c unpack into the
 * call arena (orr_rpc_decode_bb / orr_rpc_decode).
 *
 * Input: byte 0 picks the message type (low 3 bits) and a tight 64-byte
 * limit (bit 3); byte 1 says where to split the rest into two slices, so the
 * flattening of a multi-slice byte buffer is exercised too. A decoded message
 * must pack again, and (without unknown fields) decode to the same size.
 */
#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "echo.pb-c.h"
#include "orr_rpc_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const fuzz_types[8] = {
    &orrery__test__v1__say_request__descriptor,
    &orrery__test__v1__count_request__descriptor,
    &orrery__test__v1__fail_request__descriptor,
    &orrery__test__v1__rich__descriptor,
    &orrery__test__v1__say_reply__descriptor,
    &orrery__test__v1__rich__descriptor,
    &orrery__test__v1__count_reply__descriptor,
    &orrery__test__v1__rich__counters_entry__descriptor,
};

static void fuzz_check_roundtrip(const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    if (protobuf_c_message_pack(m, buf) != n)
        abort();
    /* protobuf-c keeps unknown fields and packs them back in canonical form,
     * which it may then refuse (a field-0 key spelled 0x80 0x00 comes back as
     * 0x00): re-decoding is only required of messages without them */
    if (m->n_unknown_fields) {
        free(buf);
        return;
    }
    ProtobufCMessage *again = NULL;
    if (orr_rpc_decode(m->descriptor, buf, n, n, NULL, &again, NULL) != ORR_OK)
        abort();
    if (protobuf_c_message_get_packed_size(again) != n)
        abort();
    protobuf_c_message_free_unpacked(again, NULL);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const ProtobufCMessageDescriptor *desc = fuzz_types[data[0] & 7];
    size_t max = (data[0] & 8) ? 64 : 4u * 1024 * 1024;
    const uint8_t *p = data + 2;
    size_t n = size - 2;
    size_t cut = n ? data[1] % (n + 1) : 0;

    orr_arena *arena = orr_arena_create(0);
    orr_err err;

    /* flat path */
    ProtobufCMessage *m = NULL;
    orr_status st = orr_rpc_decode(desc, p, n, max, arena, &m, &err);
    if (st == ORR_OK) {
        if (!m || m->descriptor != desc)
            abort();
        fuzz_check_roundtrip(m);
    } else if ((st != ORR_EINVAL && st != ORR_ETOOBIG) || m || err.field[0] == '\0') {
        abort();
    }
    if ((n > max) != (st == ORR_ETOOBIG))
        abort();

    /* the same bytes as a two-slice byte buffer */
    grpc_slice parts[2] = {grpc_slice_from_copied_buffer((const char *)p, cut),
                           grpc_slice_from_copied_buffer((const char *)p + cut, n - cut)};
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(parts, 2);
    grpc_slice_unref(parts[0]);
    grpc_slice_unref(parts[1]);
    ProtobufCMessage *m2 = NULL;
    orr_status st2 = orr_rpc_decode_bb(desc, bb, max, arena, &m2, &err);
    grpc_byte_buffer_destroy(bb);
    if (st2 != st)
        abort();
    if (st2 == ORR_OK &&
        protobuf_c_message_get_packed_size(m2) != protobuf_c_message_get_packed_size(m))
        abort();

    orr_arena_destroy(arena);
    return 0;
}

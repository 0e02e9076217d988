/*
 * orr_rpc_codec.h - the byte-level half of orr_rpc, shared by server, client
 * and the fuzz target: status mapping, request decoding with the size check,
 * and packing protobuf-c messages into gRPC byte buffers.
 *
 * Internal to rpc/ (and its tests); daemons use orr_rpc.h only.
 */
#ifndef ORR_RPC_CODEC_H
#define ORR_RPC_CODEC_H

#include <grpc/byte_buffer.h>
#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_status.h"

/* Trailing metadata key carrying the field an error is about. */
#define ORR_RPC_FIELD_KEY "orr-field"
/* Standard trailing metadata key carrying a serialized google.rpc.Status. */
#define ORR_RPC_STATUS_DETAILS_KEY "grpc-status-details-bin"
/* type_url of the one detail orr_rpc sends. */
#define ORR_RPC_BAD_REQUEST_TYPE "type.googleapis.com/google.rpc.BadRequest"

/* orr_status -> gRPC status, as listed in orr_rpc.h (unknown codes: INTERNAL). */
grpc_status_code orr_rpc_status_to_grpc(orr_status s);
/* gRPC status -> orr_status; the inverse of the above, plus UNKNOWN,
 * UNIMPLEMENTED, DATA_LOSS -> EINTERNAL and OUT_OF_RANGE -> EINVAL. */
orr_status orr_rpc_status_from_grpc(grpc_status_code c);

/* Encode a google.rpc.Status {code, message, details = [Any{type_url
 * ORR_RPC_BAD_REQUEST_TYPE, value = BadRequest{field_violations =
 * [FieldViolation{field, description}]}}]} (the public google/rpc/status.proto
 * and error_details.proto wire format) into out[0..cap). Returns the number of
 * bytes written, or 0 if cap is too small. message, field and description may
 * be NULL (empty). Pure; never allocates. */
size_t orr_rpc_status_details(int code, const char *message, const char *field,
                              const char *description, uint8_t *out, size_t cap);

/* Parse an authorization header value as an RFC 7235 Bearer credential: the
 * scheme "Bearer" in any letter case, one or more spaces, then a non-empty
 * token (trailing spaces and tabs are ignored, as HTTP trims field values).
 * Returns 1 and sets *tok / *tok_len (pointing into v) on success, 0 when v
 * is no bearer credential. */
int orr_rpc_parse_bearer(const char *v, size_t len, const char **tok, size_t *tok_len);

/* A protobuf-c allocator that takes memory from arena and never frees
 * (the arena frees everything at once). Fill *alloc; it refers to arena. */
void orr_rpc_arena_allocator(orr_arena *arena, ProtobufCAllocator *alloc);

/* Decode one request of type desc from data[0..len).
 * len > max_bytes: ORR_ETOOBIG (field "request"), nothing is decoded.
 * Bytes that are not a valid desc message: ORR_EINVAL, field "request",
 * message "cannot decode as <type>". On ORR_OK *out lives in arena (NULL
 * arena = the default allocator; free with protobuf_c_message_free_unpacked).
 * Never crashes on any input. */
orr_status orr_rpc_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                          size_t max_bytes, orr_arena *arena, ProtobufCMessage **out, orr_err *err);

/* Flatten a received byte buffer (decompressing if needed) and decode it as
 * orr_rpc_decode() does. The size check is made before flattening. */
orr_status orr_rpc_decode_bb(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb,
                             size_t max_bytes, orr_arena *arena, ProtobufCMessage **out,
                             orr_err *err);

/* Pack msg into a new byte buffer (caller: grpc_byte_buffer_destroy).
 * msg must be of type want (ORR_EINVAL otherwise, field = what) and pass
 * protobuf_c_message_check (ORR_EINVAL "missing required field"). */
orr_status orr_rpc_pack(const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *want,
                        const char *what, grpc_byte_buffer **out, orr_err *err);

/* grpc_init() with abseil's mutex deadlock detection off first
 * (orr_rpc_absl.cc); server and client call it instead of grpc_init(). */
void orr_rpc_grpc_init(void);

#endif

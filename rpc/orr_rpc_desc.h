/*
 * orr_rpc_desc.h - a small, bounds-checked protobuf wire reader and an index
 * of a serialized google.protobuf.FileDescriptorSet, for server reflection
 * (orr_rpc_reflection.c).
 *
 * The set comes from `protoc --descriptor_set_out --include_imports` and is
 * embedded in the binary; orr_rpc_desc_load() splits it into its files
 * (serialized FileDescriptorProto bytes, pointing into the set: no copies)
 * and indexes every symbol a reflection client may ask for: messages (nested
 * ones too), enums, services and methods ("pkg.Svc.Method"). Only the fields
 * needed for that are read; everything else is skipped by wire type.
 *
 * Internal to rpc/ (and its tests); daemons use orr_rpc.h only.
 */
#ifndef ORR_RPC_DESC_H
#define ORR_RPC_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

/* ------------------------------------------------------------ wire reader */

enum { ORR_RPC_PB_VARINT = 0, ORR_RPC_PB_I64 = 1, ORR_RPC_PB_LEN = 2, ORR_RPC_PB_I32 = 5 };

typedef struct orr_rpc_pb {
    const uint8_t *p, *end;
} orr_rpc_pb;

typedef struct orr_rpc_pb_field {
    uint32_t num;        /* field number (>= 1) */
    int wire;            /* ORR_RPC_PB_* */
    uint64_t v;          /* VARINT, I64, I32: the value */
    const uint8_t *data; /* LEN: the bytes (inside the reader's buffer) */
    size_t len;
} orr_rpc_pb_field;

/* Start reading data[0..len). */
void orr_rpc_pb_init(orr_rpc_pb *r, const uint8_t *data, size_t len);
/* Read the next field into *f: 1 when one was read, 0 at the clean end of
 * the buffer, -1 when the bytes are malformed (truncated varint or value,
 * a varint over 10 bytes, field number 0, groups or unknown wire types).
 * Never reads outside the buffer. After -1 the reader stays at -1. */
int orr_rpc_pb_next(orr_rpc_pb *r, orr_rpc_pb_field *f);

/* ------------------------------------------------------------ descriptor set */

enum orr_rpc_desc_kind {
    ORR_RPC_DESC_MESSAGE = 1,
    ORR_RPC_DESC_ENUM,
    ORR_RPC_DESC_SERVICE,
    ORR_RPC_DESC_METHOD,
};

typedef struct orr_rpc_desc orr_rpc_desc;

/* Index the serialized FileDescriptorSet set[0..len), which must outlive the
 * index (file bytes point into it). Malformed bytes, a file without a name, a
 * name holding a NUL byte or nesting deeper than 32 levels: ORR_EINVAL (field
 * "descriptor_set") with *out NULL. A dependency not in the set is left
 * unresolved (not an error). ORR_ENOMEM on allocation failure.
 * Free with orr_rpc_desc_free. */
orr_status orr_rpc_desc_load(const uint8_t *set, size_t len, orr_rpc_desc **out, orr_err *err);
/* NULL is a no-op. */
void orr_rpc_desc_free(orr_rpc_desc *d);

/* Number of files; the name and serialized bytes of file i (< count). */
size_t orr_rpc_desc_count(const orr_rpc_desc *d);
const char *orr_rpc_desc_name(const orr_rpc_desc *d, size_t i);
const uint8_t *orr_rpc_desc_bytes(const orr_rpc_desc *d, size_t i, size_t *len);

/* Index of the file named name ("halley.proto"), or -1. */
long orr_rpc_desc_file_by_name(const orr_rpc_desc *d, const char *name);
/* Index of the file defining the fully qualified symbol (no leading dot:
 * "orrery.halley.v1.Task", "orrery.halley.v1.Halley.GetTask"), or -1; its
 * kind in *kind when kind is not NULL. */
long orr_rpc_desc_file_by_symbol(const orr_rpc_desc *d, const char *symbol, int *kind);
/* File i followed by every file it depends on, directly or not, each once:
 * writes up to cap indices to out and returns how many there are (at most
 * orr_rpc_desc_count; a cap that large always suffices). */
size_t orr_rpc_desc_closure(const orr_rpc_desc *d, size_t i, size_t *out, size_t cap);

#endif

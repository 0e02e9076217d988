/*
 * orr_pack.h - packs: a batch of records for one data unit, compressed (LZ4
 * or Snappy), as the parse stage of the sort engine hands them to the write
 * stage.
 *
 * Encoded layout (integers big-endian):
 *
 *   offset  size  field
 *   0       4     magic "ORPK"
 *   4       1     version (1)
 *   5       1     flags: any of ORR_PACK_F_OFFSETS (0x02), ORR_PACK_F_TIMES
 *                 (0x04) and ORR_PACK_F_LZ4 (0x08), or 0; other bits
 *                 reserved (a reader refuses them)
 *   6       2     unit key length K (1..ORR_PACK_MAX_KEY)
 *   8       K     unit key bytes
 *   8+K     4     source partition
 *   12+K    8     first offset
 *   20+K    8     last offset (>= first offset)
 *   28+K    4     record count
 *   32+K    4     raw body length (uncompressed, <= ORR_PACK_MAX_RAW)
 *   36+K    4     compressed body length (the rest of the pack)
 *   40+K    4     CRC-32C of every byte before this field and of the body
 *   44+K    ...   body: one LZ4 block with ORR_PACK_F_LZ4, else a Snappy
 *                 stream; raw, the records, each a varint length
 *                 (unsigned LEB128, at most 5 bytes) and that many bytes;
 *                 with ORR_PACK_F_OFFSETS each record is preceded by a
 *                 varint (at most 10 bytes) offset delta: the record's
 *                 source offset minus the previous record's (the first
 *                 record's minus first_offset, so 0); the last record's
 *                 offset must be last_offset
 *
 * Record offsets: with ORR_PACK_F_OFFSETS every record carries its own
 * source offset (sparse offsets, e.g. the records of one unit taken from an
 * interleaved partition); without it record i has offset first_offset + i
 * (consecutive offsets, as Kafka numbers messages). Offsets never decrease
 * inside a pack.
 *
 * Record times: with ORR_PACK_F_TIMES every record carries a signed 64-bit
 * time given by the sender (the sort engine's parse stage puts each
 * record's data time there, and the routed unit in the key, so the write
 * stage needs not parse the record again). Packs without the flag are
 * read as before; a reader older than the flag refuses such a pack naming
 * "flags". The version stays 1: the flag is the only change.
 *
 * Body codec: with ORR_PACK_F_LZ4 the body is one LZ4 block (liblz4's
 * block format, no frame), else a Snappy stream as before the flag. On
 * the sort engine's records LZ4 compresses about 1.3x and decodes about 3x
 * as fast as Snappy, to the same size (docs/benchmarks.md, "Packs in LZ4").
 * The sender chooses by setting the flag; every reader decodes both. A
 * reader older than the flag refuses an LZ4 pack naming "flags", so a
 * sender keeps Snappy until its readers are upgraded.
 *
 * Call order:
 *   sender:   orr_pack_builder_init -> orr_pack_add* -> orr_pack_encode ->
 *             orr_pack_builder_reset (reuse) ... -> orr_pack_builder_free
 *   receiver: orr_pack_decode -> orr_pack_iter_init -> orr_pack_next*
 *
 * The builder appends records to one orr_buf (no allocation per record once
 * the buffer has grown); the decoder checks every length, the count, the
 * framing of every record and the checksum before it returns, so iterating
 * a decoded view cannot fail and never reads outside the body.
 */
#ifndef ORR_PACK_H
#define ORR_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

#define ORR_PACK_VERSION   1
#define ORR_PACK_MAX_KEY   1024u
#define ORR_PACK_MAX_RAW   (256u * 1024u * 1024u) /* raw body bytes in one pack */
#define ORR_PACK_HEAD_MIN  44u                    /* header bytes without the key */
#define ORR_PACK_F_OFFSETS 0x02u                  /* per-record offset deltas */
#define ORR_PACK_F_TIMES   0x04u                  /* per-record time deltas */
#define ORR_PACK_F_LZ4     0x08u                  /* body is an LZ4 block, not Snappy */

typedef struct orr_pack_builder {
    char key[ORR_PACK_MAX_KEY]; /* unit key */
    size_t key_len;
    uint32_t partition;
    uint64_t first_offset; /* offset of the first record added (caller may change) */
    uint64_t last_offset;  /* offset of the last record added (caller may change) */
    uint32_t count;
    uint8_t flags;     /* ORR_PACK_F_*: set after init, kept by reset */
    int64_t last_time; /* time of the last record added (ORR_PACK_F_TIMES) */
    orr_buf body;      /* raw body: [offset delta] [time delta] varint length + bytes */
} orr_pack_builder;

/* Start an empty pack for unit key (1..ORR_PACK_MAX_KEY bytes, copied) read
 * from partition. ORR_EINVAL (field "key") for a bad key. Call once per
 * builder; use orr_pack_builder_reset to start the next pack. */
orr_status orr_pack_builder_init(orr_pack_builder *b, const void *key, size_t key_len,
                                 uint32_t partition, orr_err *err);

/* Start a new pack in the same builder, keeping its memory. key may be NULL
 * to keep the key; otherwise as for init. */
orr_status orr_pack_builder_reset(orr_pack_builder *b, const void *key, size_t key_len,
                                  uint32_t partition, orr_err *err);

/* Append one record read at offset. The first record sets first_offset and
 * every record sets last_offset. ORR_ETOOBIG (field "record") when the pack
 * would pass ORR_PACK_MAX_RAW or 2^32-1 records: encode it and start another.
 * With ORR_PACK_F_OFFSETS the offset is stored per record and must not be
 * below the previous record's (ORR_EINVAL, field "offset"); without it the
 * caller promises consecutive offsets. */
orr_status orr_pack_add(orr_pack_builder *b, uint64_t offset, const void *rec, size_t len,
                        orr_err *err);

/* As orr_pack_add, with the record's time (stored only with
 * ORR_PACK_F_TIMES; orr_pack_add gives time 0). */
orr_status orr_pack_add_timed(orr_pack_builder *b, uint64_t offset, int64_t time, const void *rec,
                              size_t len, orr_err *err);

/* Raw body bytes so far (to decide when a pack is full). */
size_t orr_pack_raw_len(const orr_pack_builder *b);

/* Append the encoded pack to out, its body in LZ4 when the builder's flags
 * have ORR_PACK_F_LZ4, else in Snappy. The builder is unchanged. ORR_EINVAL
 * when first_offset > last_offset, ORR_EINTERNAL if the codec fails. */
orr_status orr_pack_encode(const orr_pack_builder *b, orr_buf *out, orr_err *err);

/* Free the builder's memory. */
void orr_pack_builder_free(orr_pack_builder *b);

/* A decoded pack. key points into the encoded bytes, body into the scratch
 * buffer given to orr_pack_decode: both must outlive the view. */
typedef struct orr_pack_view {
    const char *key;
    size_t key_len;
    uint32_t partition;
    uint64_t first_offset, last_offset;
    uint32_t count;
    uint8_t flags;
    const uint8_t *body;
    size_t body_len;
} orr_pack_view;

/* Check and decode one pack of exactly len bytes. The raw body goes into
 * scratch (reset first, reused across calls: no allocation once it has
 * grown). Bad input gives ORR_EINVAL naming the field (magic, version, flags,
 * key_length, offsets, raw_length, body_length, checksum, body, count) and
 * never a read outside data. */
orr_status orr_pack_decode(const void *data, size_t len, orr_buf *scratch, orr_pack_view *out,
                           orr_err *err);

typedef struct orr_pack_iter {
    const uint8_t *p, *end;
    uint8_t flags;
    uint64_t off; /* offset of the next record */
    int64_t time; /* time of the last record returned (ORR_PACK_F_TIMES; else 0) */
} orr_pack_iter;

void orr_pack_iter_init(orr_pack_iter *it, const orr_pack_view *v);

/* Next record of a decoded view, not copied: 1 with rec/len set, 0 at the end. */
int orr_pack_next(orr_pack_iter *it, const void **rec, size_t *len);
/* As orr_pack_next, also giving the record's source offset (see "Record
 * offsets" above). */
int orr_pack_next_at(orr_pack_iter *it, uint64_t *offset, const void **rec, size_t *len);
/* As orr_pack_next_at, also giving the record's time (0 without
 * ORR_PACK_F_TIMES). */
int orr_pack_next_timed(orr_pack_iter *it, uint64_t *offset, int64_t *time, const void **rec,
                        size_t *len);

/* CRC-32C (Castagnoli) of n bytes, continuing from crc (start with 0). */
uint32_t orr_crc32c(uint32_t crc, const void *data, size_t n);
/* The same in software (tables) whatever the CPU has: what orr_crc32c
 * falls back to, and checks it. */
uint32_t orr_crc32c_table(uint32_t crc, const void *data, size_t n);
/* 1 when orr_crc32c uses the CPU's crc32 instruction, 0 with the tables. */
int orr_crc32c_hardware(void);

#endif

/*
 * fuzz_pack_decode.c - libFuzzer target: any bytes as a pack.
 *
 * A pack that decodes must iterate to exactly its record count with every
 * record inside the decoded body, read with and without its per-record
 * times (ORR_PACK_F_TIMES), the same records and offsets both ways, and
 * time 0 for a pack without times; anything else must be a clean
 * ORR_EINVAL. Each input is tried twice: as it is, and with its checksum
 * made right, so that mutations of the body reach the codecs (Snappy, and
 * LZ4 under ORR_PACK_F_LZ4) instead of stopping at the checksum.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orr_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size)
{
    orr_buf scratch = ORR_BUF_INIT;
    orr_pack_view v;
    orr_err err;
    orr_status s = orr_pack_decode(data, size, &scratch, &v, &err);
    if (s == ORR_OK) {
        orr_pack_iter it, it2;
        orr_pack_iter_init(&it, &v);
        orr_pack_iter_init(&it2, &v);
        const void *rec, *rec2;
        size_t len, len2, sum = 0;
        uint64_t off, off2;
        int64_t t;
        uint32_t count = 0;
        while (orr_pack_next_timed(&it, &off, &t, &rec, &len)) {
            const uint8_t *p = rec;
            if (p < v.body || p + len > v.body + v.body_len)
                abort();
            if (!orr_pack_next_at(&it2, &off2, &rec2, &len2) || rec2 != rec || len2 != len ||
                off2 != off)
                abort();
            if ((v.flags & ORR_PACK_F_OFFSETS) && (off < v.first_offset || off > v.last_offset))
                abort();
            if (!(v.flags & ORR_PACK_F_TIMES) && t != 0)
                abort();
            if (len)
                sum += p[len - 1];
            count++;
        }
        if (orr_pack_next_at(&it2, &off2, &rec2, &len2))
            abort();
        if (count != v.count || v.first_offset > v.last_offset || v.key_len == 0)
            abort();
        (void)sum;
    } else if (s != ORR_EINVAL) {
        abort();
    }
    orr_buf_free(&scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    size_t k = size >= 8 ? (size_t)data[6] << 8 | data[7] : 0;
    if (k == 0 || k > ORR_PACK_MAX_KEY || size <= ORR_PACK_HEAD_MIN + k)
        return 0;
    uint8_t *copy = malloc(size);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    size_t hl = ORR_PACK_HEAD_MIN + k;
    uint32_t crc = orr_crc32c(orr_crc32c(0, copy, 40 + k), copy + hl, size - hl);
    for (int i = 0; i < 4; i++)
        copy[40 + k + (size_t)i] = (uint8_t)(crc >> (24 - 8 * i));
    check(copy, size);
    free(copy);
    return 0;
}

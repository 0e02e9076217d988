/*
 * fuzz_pack_decode.c - libFuzzer target: any bytes as a pack.
 *
 * A pack that decodes must iterate to exactly its record count with every
 * record inside the decoded body; anything else must be a clean ORR_EINVAL.
 */
#include <stdint.h>
#include <stdlib.h>

#include "orr_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    orr_buf scratch = ORR_BUF_INIT;
    orr_pack_view v;
    orr_err err;
    orr_status s = orr_pack_decode(data, size, &scratch, &v, &err);
    if (s == ORR_OK) {
        orr_pack_iter it;
        orr_pack_iter_init(&it, &v);
        const void *rec;
        size_t len, sum = 0;
        uint32_t count = 0;
        while (orr_pack_next(&it, &rec, &len)) {
            const uint8_t *p = rec;
            if (p < v.body || p + len > v.body + v.body_len)
                abort();
            if (len)
                sum += p[len - 1];
            count++;
        }
        if (count != v.count || v.first_offset > v.last_offset || v.key_len == 0)
            abort();
        (void)sum;
    } else if (s != ORR_EINVAL) {
        abort();
    }
    orr_buf_free(&scratch);
    return 0;
}

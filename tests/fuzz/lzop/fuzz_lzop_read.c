/*
 * fuzz_lzop_read.c - libFuzzer target: any bytes as an lzop file.
 *
 * Opens the input with the memory reader and decodes it to the end, half of
 * the time block by block and half through small orr_lzop_read calls. The
 * reader must return an error or the data, never crash or read outside the
 * input, and must stay at its error or end once reached.
 */
#include <stdint.h>
#include <stdlib.h>

#include "orr_lzop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    orr_lzop_reader *r = NULL;
    orr_err err;
    if (orr_lzop_reader_open_mem(data, size, "fuzz", &r, &err) != ORR_OK)
        return 0;
    int by_block = size > 0 && (data[size - 1] & 1);
    orr_status s = ORR_OK;
    size_t total = 0;
    for (int i = 0; i < 100000 && s == ORR_OK; i++) {
        if (by_block) {
            const void *p;
            size_t n;
            s = orr_lzop_read_block(r, &p, &n, &err);
            if (s == ORR_OK) {
                if (n == 0 || n > ORR_LZOP_MAX_BLOCK)
                    abort();
                total += ((const uint8_t *)p)[n - 1]; /* touch the last byte */
            }
        } else {
            uint8_t buf[777];
            size_t n;
            s = orr_lzop_read(r, buf, sizeof(buf), &n, &err);
            if (s == ORR_OK && (n == 0 || n > sizeof(buf)))
                abort();
            total += n;
        }
    }
    /* a finished or failed reader keeps answering the same way */
    uint8_t one;
    size_t n;
    if (s != ORR_OK && orr_lzop_read(r, &one, 1, &n, &err) == ORR_OK)
        abort();
    orr_lzop_reader_close(r);
    (void)total;
    return 0;
}

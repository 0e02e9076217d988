/*
 * fuzz_wh_text.c - the delimited-text parser must never read outside its
 * input, must make progress, and must give the same records whether it sees
 * the input at once or in growing windows (as the file reader feeds it).
 * Every parsed field must survive a COPY text encode + parse round trip.
 *
 * Input: byte 0 picks the format (CSV with ',' or ';', escaped text with tab
 * or '|'), byte 1 the window step; the rest is the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wh_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_COLS 8

typedef struct fz_sum {
    uint64_t records, bad, fields, bytes, nulls, hash;
} fz_sum;

static void fz_roundtrip(const wh_batch *b, size_t row, orr_buf *tmp, wh_batch *check)
{
    for (size_t c = 0; c < b->ncols; c++) {
        int64_t len;
        const char *v = wh_batch_val(b, row, c, &len);
        orr_buf_reset(tmp);
        wh_copy_encode(tmp, v, len);
        wh_batch_reset(check, 1);
        wh_batch_row_begin(check, 1);
        wh_copy_parse(tmp->data, tmp->len, check);
        if (wh_batch_row_end(check) != ORR_OK)
            abort();
        int64_t len2;
        const char *v2 = wh_batch_val(check, 0, 0, &len2);
        if (len2 != len || (len > 0 && memcmp(v, v2, (size_t)len) != 0))
            abort();
    }
}

/* Parse text with windows growing by step (step 0: all at once). */
static fz_sum fz_parse(const wh_textfmt *f, const char *text, size_t n, size_t step, int check)
{
    fz_sum s = {0, 0, 0, 0, 0, 0};
    wh_batch *b = wh_batch_new(1, 1 << 20);
    wh_batch *one = wh_batch_new(1, 1 << 20);
    orr_buf tmp = ORR_BUF_INIT;
    size_t pos = 0, avail = step ? (step < n ? step : n) : n;
    size_t guard = 0;
    while (pos < n) {
        if (++guard > 4 * n + 16)
            abort(); /* no progress */
        int eof = avail == n;
        size_t used = 0;
        const char *why = NULL;
        wh_batch_reset(b, FZ_COLS);
        wh_batch_row_begin(b, 1);
        int rc = wh_text_record(f, text + pos, avail - pos, eof, b, &used, &why);
        if (rc == WH_REC_MORE) {
            if (eof)
                abort(); /* at eof every record is whole or bad */
            avail = avail + step < n ? avail + step : n;
            continue;
        }
        if (used == 0 || used > avail - pos)
            abort();
        pos += used;
        if (avail < pos)
            avail = pos;
        if (rc == WH_REC_BAD) {
            s.bad++;
            continue;
        }
        size_t fields = b->cur > FZ_COLS ? FZ_COLS : b->cur;
        s.records++;
        s.fields += b->cur;
        for (size_t c = 0; c < fields; c++) {
            const wh_field *fd = &b->f[c];
            if (fd->len < 0) {
                s.nulls++;
                continue;
            }
            s.bytes += (uint64_t)fd->len;
            for (int32_t i = 0; i < fd->len; i++)
                s.hash = s.hash * 31 + (unsigned char)b->data.data[fd->off + (uint32_t)i];
        }
        if (check && b->cur == FZ_COLS && wh_batch_row_end(b) == ORR_OK)
            fz_roundtrip(b, 0, &tmp, one);
    }
    orr_buf_free(&tmp);
    wh_batch_free(b);
    wh_batch_free(one);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    wh_textfmt f;
    switch (data[0] & 3) {
    case 0:
        wh_textfmt_csv(&f, ',');
        break;
    case 1:
        wh_textfmt_csv(&f, ';');
        break;
    case 2:
        wh_textfmt_escaped(&f, '\t');
        break;
    default:
        wh_textfmt_escaped(&f, '|');
        break;
    }
    size_t step = 1 + data[1] % 13;
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    fz_sum whole = fz_parse(&f, text, n, 0, 1);
    fz_sum parts = fz_parse(&f, text, n, step, 0);
    if (memcmp(&whole, &parts, sizeof(whole)) != 0)
        abort();
    return 0;
}

/*
 * pack_codecs.c - the hand-off's pack bodies in LZ4 beside Snappy, through
 * orr_pack_encode and orr_pack_decode as the parse and write stages call
 * them.
 *
 *   bench_pack_codecs FILE [PACK_KB] [ROUNDS]
 *
 * Reads at most 256 MiB of newline-ended records from FILE (sort_gen's
 * output, as tests/bench/sort/handoff.sh makes it), cuts them into packs of
 * PACK_KB KiB of records (default 256: the sink's default pack_size), each
 * record with its offset and a time (ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES,
 * as the hand-off sink sends them), and ROUNDS times (default 3, at most
 * 20) encodes and decodes every pack, Snappy then LZ4, alternating. Prints
 * per codec the medians of raw MB/s for encoding and for decoding and the
 * encoded size over the raw size, then LZ4's rates over Snappy's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_buf.h"
#include "orr_pack.h"

#define MAX_INPUT  (256u << 20)
#define MAX_ROUNDS 20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round of one codec over the whole input: encode every pack into enc,
 * then decode every pack and walk its records. Returns 0, or -1 on a
 * failure (printed). */
static int one_round(const char *in, size_t n, size_t pack_bytes, uint8_t codec, double *enc_s,
                     double *dec_s, size_t *enc_bytes)
{
    orr_pack_builder b;
    orr_err err;
    orr_buf enc = ORR_BUF_INIT, scratch = ORR_BUF_INIT;
    size_t *ends = NULL, npacks = 0, cap = 0;
    int rc = -1;
    if (orr_pack_builder_init(&b, "if_click@1764633600", 19, 0, &err) != ORR_OK)
        goto fail;
    b.flags = ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES | codec;
    double t0 = now_s();
    uint64_t off = 0;
    size_t added = 0;
    for (size_t p = 0; p < n;) {
        const char *nl = memchr(in + p, '\n', n - p);
        size_t len = nl ? (size_t)(nl - (in + p)) : n - p;
        if (orr_pack_add_timed(&b, off, 1764633600000 + (int64_t)(off % 3600000), in + p, len,
                               &err) != ORR_OK)
            goto fail;
        off += 1 + len;
        p += len + 1;
        added++;
        if (orr_pack_raw_len(&b) >= pack_bytes || p >= n) {
            if (orr_pack_encode(&b, &enc, &err) != ORR_OK)
                goto fail;
            if (npacks == cap) {
                cap = cap ? cap * 2 : 1024;
                size_t *grown = realloc(ends, cap * sizeof *ends);
                if (!grown)
                    goto out;
                ends = grown;
            }
            ends[npacks++] = enc.len;
            if (orr_pack_builder_reset(&b, NULL, 0, 0, &err) != ORR_OK)
                goto fail;
        }
    }
    *enc_s = now_s() - t0;
    *enc_bytes = enc.len;
    t0 = now_s();
    size_t start = 0, records = 0;
    for (size_t i = 0; i < npacks; i++) {
        orr_pack_view v;
        if (orr_pack_decode(enc.data + start, ends[i] - start, &scratch, &v, &err) != ORR_OK)
            goto fail;
        orr_pack_iter it;
        orr_pack_iter_init(&it, &v);
        uint64_t o;
        int64_t t;
        const void *rec;
        size_t len;
        while (orr_pack_next_timed(&it, &o, &t, &rec, &len))
            records++;
        start = ends[i];
    }
    *dec_s = now_s() - t0;
    if (records != added) {
        fprintf(stderr, "bench_pack_codecs: %zu records decoded, %zu added\n", records, added);
        goto out;
    }
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "bench_pack_codecs: %s: %s\n", err.field, err.msg);
out:
    free(ends);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
    orr_pack_builder_free(&b);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: bench_pack_codecs FILE [PACK_KB] [ROUNDS]\n");
        return 2;
    }
    long kb = argc > 2 ? strtol(argv[2], NULL, 10) : 256;
    long rounds = argc > 3 ? strtol(argv[3], NULL, 10) : 3;
    if (kb < 4 || kb > 65536 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench_pack_codecs: PACK_KB must be 4..65536, ROUNDS 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    char *in = malloc(MAX_INPUT);
    size_t n = in ? fread(in, 1, MAX_INPUT, f) : 0;
    fclose(f);
    while (n > 0 && in[n - 1] != '\n') /* whole records only */
        n--;
    if (n == 0) {
        fprintf(stderr, "bench_pack_codecs: no whole record in %s\n", argv[1]);
        free(in);
        return 1;
    }
    static const char *const names[2] = {"snappy", "lz4"};
    static const uint8_t codecs[2] = {0, ORR_PACK_F_LZ4};
    double enc_mb[2][MAX_ROUNDS], dec_mb[2][MAX_ROUNDS];
    size_t size[2] = {0, 0};
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < 2; c++) {
            double es, ds;
            if (one_round(in, n, (size_t)kb << 10, codecs[c], &es, &ds, &size[c]) != 0) {
                free(in);
                return 1;
            }
            enc_mb[c][r] = (double)n / es / 1e6;
            dec_mb[c][r] = (double)n / ds / 1e6;
        }
    printf("input %.1f MB of records, packs of %ld KiB, %ld round(s)\n", (double)n / 1e6, kb,
           rounds);
    double e[2], d[2];
    for (int c = 0; c < 2; c++) {
        e[c] = median(enc_mb[c], (int)rounds);
        d[c] = median(dec_mb[c], (int)rounds);
        printf("%-7s encode %7.0f MB/s  decode %7.0f MB/s  size %.3f of raw\n", names[c], e[c],
               d[c], (double)size[c] / (double)n);
    }
    printf("lz4 / snappy  encode %.2fx  decode %.2fx\n", e[1] / e[0], d[1] / d[0]);
    free(in);
    return 0;
}

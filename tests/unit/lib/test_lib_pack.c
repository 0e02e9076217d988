/*
 * test_lib_pack.c - packs: round trips (empty, varint edges, 100k records),
 * CRC-32C check value, and every kind of damaged pack failing cleanly with
 * the field named; per-record times (ORR_PACK_F_TIMES). Every pack test runs
 * twice, once per body codec (Snappy, then LZ4: the groups at the end); an
 * LZ4 pack decodes to the same records as a Snappy one of the same builder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <lz4.h>

#include "orr_buf.h"
#include "orr_pack.h"

static const char unit_key[] = "biz42/if_click/2026113010";

/* ORR_PACK_F_LZ4 in the "lz4" group, 0 in the "snappy" group: each test ORs
 * it into its builders' flags. */
static uint8_t codec;

static int group_snappy(void **state)
{
    (void)state;
    codec = 0;
    return 0;
}

static int group_lz4(void **state)
{
    (void)state;
    codec = ORR_PACK_F_LZ4;
    return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Recompute the checksum of an encoded pack after a test changed it. */
static void reseal(uint8_t *p, size_t len)
{
    size_t k = (size_t)p[6] << 8 | p[7];
    size_t hl = ORR_PACK_HEAD_MIN + k;
    uint32_t crc = orr_crc32c(orr_crc32c(0, p, 40 + k), p + hl, len - hl);
    put_be32(p + 40 + k, crc);
}

static void test_crc32c_check_value(void **state)
{
    (void)state;
    assert_int_equal(orr_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(orr_crc32c(0, "", 0), 0);
    /* piecewise equals whole, across the 8-byte fast path */
    const char *s = "The quick brown fox jumps over the lazy dog, twice over.";
    size_t n = strlen(s);
    for (size_t cut = 0; cut <= n; cut++)
        assert_int_equal(orr_crc32c(orr_crc32c(0, s, cut), s + cut, n - cut), orr_crc32c(0, s, n));
    assert_int_equal(orr_crc32c_table(0, "123456789", 9), 0xe3069283u);
}

/* The CPU's instruction (where orr_crc32c uses it) and the tables agree on
 * every length 0..300 at every alignment 0..7, continuing from any value.
 * On a CPU without the instruction both are the tables: said, not hidden. */
static void test_crc32c_paths_agree(void **state)
{
    (void)state;
    if (!orr_crc32c_hardware())
        print_message("no crc32 instruction here: both paths are the tables\n");
    uint8_t buf[320];
    uint32_t x = 0x9e3779b9u;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t at = 0; at < 8; at++)
        for (size_t n = 0; n + at <= 308; n++) {
            uint32_t seed = (uint32_t)(n * 2654435761u);
            assert_int_equal(orr_crc32c(seed, buf + at, n), orr_crc32c_table(seed, buf + at, n));
        }
}

static void test_roundtrip_edges(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 127, 128, 129, 16383, 16384, 100000, 3};
    size_t nrec = sizeof(lens) / sizeof(lens[0]);
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, unit_key, strlen(unit_key), 7, &err), ORR_OK);
    b.flags |= codec;
    uint8_t *recs[sizeof(lens) / sizeof(lens[0])];
    for (size_t i = 0; i < nrec; i++) {
        recs[i] = malloc(lens[i] + 1);
        for (size_t j = 0; j < lens[i]; j++)
            recs[i][j] = (uint8_t)(i * 31 + j);
        assert_int_equal(orr_pack_add(&b, 1000 + i * 10, recs[i], lens[i], &err), ORR_OK);
    }
    orr_buf enc = ORR_BUF_INIT, scratch = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    orr_pack_view v;
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    assert_int_equal(v.key_len, strlen(unit_key));
    assert_memory_equal(v.key, unit_key, v.key_len);
    assert_int_equal(v.partition, 7);
    assert_int_equal(v.first_offset, 1000);
    assert_int_equal(v.last_offset, 1000 + (nrec - 1) * 10);
    assert_int_equal(v.count, nrec);
    assert_int_equal(v.body_len, orr_pack_raw_len(&b));
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    const void *rec;
    size_t len, i = 0;
    while (orr_pack_next(&it, &rec, &len)) {
        assert_true(i < nrec);
        assert_int_equal(len, lens[i]);
        if (len)
            assert_memory_equal(rec, recs[i], len);
        /* records are views into the decoded body, not copies */
        assert_true((const uint8_t *)rec >= v.body &&
                    (const uint8_t *)rec + len <= v.body + v.body_len);
        i++;
    }
    assert_int_equal(i, nrec);
    /* a second pack appended to the same output decodes on its own */
    size_t first_len = enc.len;
    assert_int_equal(orr_pack_builder_reset(&b, "other", 5, 8, &err), ORR_OK);
    assert_int_equal(orr_pack_add(&b, 5, "x", 1, &err), ORR_OK);
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    assert_int_equal(orr_pack_decode(enc.data + first_len, enc.len - first_len, &scratch, &v, &err),
                     ORR_OK);
    assert_int_equal(v.count, 1);
    assert_int_equal(v.partition, 8);
    assert_memory_equal(v.key, "other", 5);
    for (i = 0; i < nrec; i++)
        free(recs[i]);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
    orr_pack_builder_free(&b);
}

static void test_empty_pack(void **state)
{
    (void)state;
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, "u", 1, 0, &err), ORR_OK);
    b.flags |= codec;
    /* an empty pack may still say which offsets it covers */
    b.first_offset = 40;
    b.last_offset = 90;
    orr_buf enc = ORR_BUF_INIT, scratch = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    orr_pack_view v;
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    assert_int_equal(v.count, 0);
    assert_int_equal(v.body_len, 0);
    assert_int_equal(v.first_offset, 40);
    assert_int_equal(v.last_offset, 90);
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    const void *rec;
    size_t len;
    assert_int_equal(orr_pack_next(&it, &rec, &len), 0);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
    orr_pack_builder_free(&b);
}

static void test_100k_records(void **state)
{
    (void)state;
    const uint32_t n = 100000;
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, unit_key, strlen(unit_key), 3, &err), ORR_OK);
    b.flags |= codec;
    char line[400];
    rng_state = 12345;
    for (uint32_t i = 0; i < n; i++) {
        int k = snprintf(line, sizeof(line), "%u|user%llu|/page/%llu|2026-11-30T10:%02u|%.*s", i,
                         (unsigned long long)(rng() % 5000), (unsigned long long)(rng() % 300),
                         i % 60, (int)(rng() % 150),
                         "lorem ipsum dolor sit amet consectetur "
                         "adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore "
                         "magna aliqua ut enim ad minim veniam quis nostrud");
        assert_int_equal(orr_pack_add(&b, 500000 + i, line, (size_t)k, &err), ORR_OK);
    }
    size_t cap_before = b.body.cap;
    orr_buf enc = ORR_BUF_INIT, scratch = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    assert_true(enc.len < orr_pack_raw_len(&b) / 2); /* text compresses */
    orr_pack_view v;
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    assert_int_equal(v.count, n);
    assert_int_equal(v.first_offset, 500000);
    assert_int_equal(v.last_offset, 500000 + n - 1);
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    const void *rec;
    size_t len;
    uint32_t i = 0;
    rng_state = 12345;
    while (orr_pack_next(&it, &rec, &len)) {
        int k = snprintf(line, sizeof(line), "%u|user%llu|/page/%llu|2026-11-30T10:%02u|%.*s", i,
                         (unsigned long long)(rng() % 5000), (unsigned long long)(rng() % 300),
                         i % 60, (int)(rng() % 150),
                         "lorem ipsum dolor sit amet consectetur "
                         "adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore "
                         "magna aliqua ut enim ad minim veniam quis nostrud");
        assert_int_equal(len, (size_t)k);
        assert_memory_equal(rec, line, len);
        i++;
    }
    assert_int_equal(i, n);
    /* reset keeps the memory for the next pack */
    assert_int_equal(orr_pack_builder_reset(&b, NULL, 0, 4, &err), ORR_OK);
    assert_int_equal(b.count, 0);
    assert_int_equal(orr_pack_raw_len(&b), 0);
    assert_int_equal(b.body.cap, cap_before);
    assert_int_equal(b.key_len, strlen(unit_key));
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
    orr_pack_builder_free(&b);
}

static orr_buf small_pack(void)
{
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, unit_key, strlen(unit_key), 2, &err), ORR_OK);
    b.flags |= codec;
    assert_int_equal(orr_pack_add(&b, 10, "alpha|1", 7, &err), ORR_OK);
    assert_int_equal(orr_pack_add(&b, 11, "", 0, &err), ORR_OK);
    assert_int_equal(orr_pack_add(&b, 12, "gamma|333333333333333", 21, &err), ORR_OK);
    orr_buf enc = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    orr_pack_builder_free(&b);
    return enc;
}

static void test_corrupt_bytes(void **state)
{
    (void)state;
    orr_buf enc = small_pack(), scratch = ORR_BUF_INIT;
    uint8_t *p = (uint8_t *)enc.data;
    orr_pack_view v;
    orr_err err;
    /* every changed byte and every cut is caught */
    for (size_t i = 0; i < enc.len; i++) {
        for (int m = 0; m < 3; m++) {
            uint8_t keep = p[i];
            p[i] ^= m == 0 ? 0x01 : m == 1 ? 0x80 : 0xff;
            orr_status s = orr_pack_decode(p, enc.len, &scratch, &v, &err);
            p[i] = keep;
            if (s != ORR_EINVAL)
                fail_msg("byte %zu changed: status %d", i, s);
        }
    }
    for (size_t cut = 0; cut < enc.len; cut++)
        assert_int_equal(orr_pack_decode(p, cut, &scratch, &v, &err), ORR_EINVAL);
    orr_buf_append_byte(&enc, 0);
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body_length");
    assert_int_equal(orr_pack_decode(NULL, 0, &scratch, &v, &err), ORR_EINVAL);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
}

/* Packs with a good checksum but a bad field: the decoder names the field. */
static void test_bad_fields(void **state)
{
    (void)state;
    orr_buf enc = small_pack(), scratch = ORR_BUF_INIT;
    size_t k = strlen(unit_key);
    uint8_t *g = malloc(enc.len);
    orr_pack_view v;
    orr_err err;
    struct {
        size_t at;
        uint32_t value;
        int width;
        const char *field;
    } cases[] = {
        {0, 0x4f52504cu, 4, "magic"},
        {4, 2, 1, "version"},
        {5, 1, 1, "flags"},
        {6, 0, 2, "key_length"},
        {6, 2000, 2, "key_length"},
        {6, (uint32_t)(enc.len), 2, "length"},
        {12 + k, 0xffffffffu, 4, "offsets"}, /* first offset's high half */
        {28 + k, 4, 4, "body"},              /* one record more than there is */
        {28 + k, 2, 4, "count"},             /* one record less */
        {28 + k, 1000, 4, "count"},          /* more records than raw bytes */
        {32 + k, 30, 4, "body"},             /* raw length the body does not have */
        {32 + k, ORR_PACK_MAX_RAW + 1, 4, "raw_length"},
        {36 + k, 3, 4, "body_length"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(g, enc.data, enc.len);
        uint32_t x = cases[i].value;
        for (int j = cases[i].width - 1; j >= 0; j--, x >>= 8)
            g[cases[i].at + (size_t)j] = (uint8_t)x;
        if (strcmp(cases[i].field, "key_length") != 0 && strcmp(cases[i].field, "length") != 0)
            reseal(g, enc.len);
        assert_int_equal(orr_pack_decode(g, enc.len, &scratch, &v, &err), ORR_EINVAL);
        if (strcmp(err.field, cases[i].field) != 0)
            fail_msg("case %zu: field %s, expected %s (%s)", i, err.field, cases[i].field, err.msg);
    }
    /* a body that is not Snappy (or LZ4) at all */
    memcpy(g, enc.data, enc.len);
    memset(g + ORR_PACK_HEAD_MIN + k, 0xff, enc.len - ORR_PACK_HEAD_MIN - k);
    reseal(g, enc.len);
    assert_int_equal(orr_pack_decode(g, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body");
    /* a wrong checksum */
    memcpy(g, enc.data, enc.len);
    g[40 + k] ^= 1;
    assert_int_equal(orr_pack_decode(g, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "checksum");
    free(g);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
}

static void test_builder_errors(void **state)
{
    (void)state;
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, "", 0, 1, &err), ORR_EINVAL);
    assert_string_equal(err.field, "key");
    char big[ORR_PACK_MAX_KEY + 1];
    memset(big, 'k', sizeof(big));
    assert_int_equal(orr_pack_builder_init(&b, big, sizeof(big), 1, &err), ORR_EINVAL);
    assert_int_equal(orr_pack_builder_init(&b, big, ORR_PACK_MAX_KEY, 1, &err), ORR_OK);
    /* checked before a byte is read */
    assert_int_equal(orr_pack_add(&b, 1, "x", (size_t)ORR_PACK_MAX_RAW + 1, &err), ORR_ETOOBIG);
    assert_string_equal(err.field, "record");
    assert_int_equal(b.count, 0);
    assert_int_equal(orr_pack_add(&b, 9, "x", 1, &err), ORR_OK);
    b.first_offset = 10; /* after last */
    orr_buf enc = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_EINVAL);
    assert_string_equal(err.field, "offsets");
    assert_int_equal(enc.len, 0);
    assert_int_equal(orr_pack_builder_reset(&b, "", 0, 1, &err), ORR_EINVAL);
    orr_pack_builder_free(&b);
    /* a freed builder refuses records instead of crashing */
    assert_int_equal(orr_pack_add(&b, 1, "x", 1, &err), ORR_EINVAL);
    orr_buf_free(&enc);
}

/* Per-record times (ORR_PACK_F_TIMES): round trip over the int64 edges
 * with sparse offsets; iterating without asking for times still works;
 * a pack without the flag gives time 0; a cut time delta and an unknown
 * flag bit fail naming the field. */
static void test_times_roundtrip(void **state)
{
    (void)state;
    static const int64_t times[] = {
        1764633600123, 1764633600123, 1764633599000, 0,  -1, INT64_MIN,
        INT64_MAX,     INT64_MIN,     1764637199999, 42,
    };
    const size_t nt = sizeof times / sizeof times[0];
    orr_pack_builder b;
    orr_err err;
    orr_buf enc = ORR_BUF_INIT, scratch = ORR_BUF_INIT;
    assert_int_equal(orr_pack_builder_init(&b, "if_click@1764633600", 19, 7, &err), ORR_OK);
    b.flags = ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES | codec;
    for (int round = 0; round < 2; round++) { /* the second after a reset: times restart */
        uint64_t off = 1000;
        for (size_t i = 0; i < nt; i++) {
            char rec[32];
            int n = snprintf(rec, sizeof rec, "r%zu", i);
            assert_int_equal(orr_pack_add_timed(&b, off, times[i], rec, (size_t)n, &err), ORR_OK);
            off += 1 + i * 1000;
        }
        orr_buf_reset(&enc);
        assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
        assert_int_equal(((const uint8_t *)enc.data)[5],
                         ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES | codec);
        orr_pack_view v;
        assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
        assert_int_equal(v.count, nt);
        assert_int_equal(v.flags, ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES | codec);
        assert_int_equal(v.key_len, 19);
        assert_memory_equal(v.key, "if_click@1764633600", 19);
        orr_pack_iter it;
        orr_pack_iter_init(&it, &v);
        uint64_t o, want = 1000;
        int64_t t;
        const void *rec;
        size_t len;
        for (size_t i = 0; i < nt; i++) {
            char exp[32];
            int n = snprintf(exp, sizeof exp, "r%zu", i);
            assert_true(orr_pack_next_timed(&it, &o, &t, &rec, &len));
            assert_int_equal(o, want);
            assert_true(t == times[i]);
            assert_int_equal(len, (size_t)n);
            assert_memory_equal(rec, exp, len);
            want += 1 + i * 1000;
        }
        assert_false(orr_pack_next_timed(&it, &o, &t, &rec, &len));
        /* the same pack read without times */
        orr_pack_iter_init(&it, &v);
        size_t k = 0;
        while (orr_pack_next_at(&it, &o, &rec, &len))
            k++;
        assert_int_equal(k, nt);
        assert_int_equal(orr_pack_builder_reset(&b, NULL, 0, 7, &err), ORR_OK);
    }
    /* without the flag: time 0, and no time bytes in the body */
    orr_pack_builder c;
    assert_int_equal(orr_pack_builder_init(&c, "u", 1, 0, &err), ORR_OK);
    c.flags |= codec;
    assert_int_equal(orr_pack_add_timed(&c, 5, 123456, "abc", 3, &err), ORR_OK);
    assert_int_equal(orr_pack_raw_len(&c), 4);
    orr_buf_reset(&enc);
    assert_int_equal(orr_pack_encode(&c, &enc, &err), ORR_OK);
    orr_pack_view v;
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    uint64_t o;
    int64_t t = -7;
    const void *rec;
    size_t len;
    assert_true(orr_pack_next_timed(&it, &o, &t, &rec, &len));
    assert_int_equal(o, 5);
    assert_true(t == 0);
    /* a time delta cut short: the last byte of the body says "more" */
    orr_pack_builder_free(&c);
    assert_int_equal(orr_pack_builder_init(&c, "u", 1, 0, &err), ORR_OK);
    c.flags = ORR_PACK_F_TIMES | codec;
    assert_int_equal(orr_pack_add_timed(&c, 0, 1, "", 0, &err), ORR_OK);
    assert_int_equal(orr_pack_raw_len(&c), 2); /* time delta 2 (zigzag of 1), length 0 */
    c.body.data[0] = (char)0x82;               /* the time varint swallows the length */
    orr_buf_reset(&enc);
    assert_int_equal(orr_pack_encode(&c, &enc, &err), ORR_OK);
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body");
    /* an unknown flag bit beside the known ones */
    orr_buf_reset(&enc);
    c.body.data[0] = 0x02;
    assert_int_equal(orr_pack_encode(&c, &enc, &err), ORR_OK);
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    ((uint8_t *)enc.data)[5] |= 0x10;
    reseal((uint8_t *)enc.data, enc.len);
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "flags");
    orr_pack_builder_free(&b);
    orr_pack_builder_free(&c);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
}

/* The same builder in both codecs: the same records come back; the LZ4
 * pack says so in its flags. An LZ4 body that decodes to fewer or more
 * bytes than the header's raw length, or that is longer than any LZ4 block
 * of that raw length can be, fails naming "body". */
static void test_lz4_against_snappy(void **state)
{
    (void)state;
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, unit_key, strlen(unit_key), 5, &err), ORR_OK);
    b.flags = ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES;
    char rec[256];
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(rec, sizeof rec, "2026-12-01 10:%02d:%02d\tif_click\tuser%d\t%u",
                         i / 60 % 60, i % 60, i % 97, (unsigned)(rng() % 100000));
        assert_int_equal(
            orr_pack_add_timed(&b, (uint64_t)i * 3, 1764583200000 + i, rec, (size_t)n, &err),
            ORR_OK);
    }
    orr_buf sn = ORR_BUF_INIT, lz = ORR_BUF_INIT, s1 = ORR_BUF_INIT, s2 = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &sn, &err), ORR_OK);
    b.flags |= ORR_PACK_F_LZ4;
    assert_int_equal(orr_pack_encode(&b, &lz, &err), ORR_OK);
    size_t hl = ORR_PACK_HEAD_MIN + strlen(unit_key);
    assert_true(lz.len - hl < orr_pack_raw_len(&b) / 2); /* text compresses */
    orr_pack_view a, c;
    assert_int_equal(orr_pack_decode(sn.data, sn.len, &s1, &a, &err), ORR_OK);
    assert_int_equal(orr_pack_decode(lz.data, lz.len, &s2, &c, &err), ORR_OK);
    assert_int_equal(a.flags, ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES);
    assert_int_equal(c.flags, ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES | ORR_PACK_F_LZ4);
    assert_int_equal(a.body_len, c.body_len);
    assert_memory_equal(a.body, c.body, a.body_len);
    orr_pack_iter ia, ic;
    orr_pack_iter_init(&ia, &a);
    orr_pack_iter_init(&ic, &c);
    uint64_t oa, oc;
    int64_t ta, tc;
    const void *ra, *rc;
    size_t la, lc, n = 0;
    while (orr_pack_next_timed(&ia, &oa, &ta, &ra, &la)) {
        assert_true(orr_pack_next_timed(&ic, &oc, &tc, &rc, &lc));
        assert_int_equal(oa, oc);
        assert_true(ta == tc && ta == 1764583200000 + (int64_t)n);
        assert_int_equal(la, lc);
        assert_memory_equal(ra, rc, la);
        n++;
    }
    assert_false(orr_pack_next_timed(&ic, &oc, &tc, &rc, &lc));
    assert_int_equal(n, 2000);

    size_t k = strlen(unit_key);
    uint8_t *g = malloc(lz.len + 64);
    uint32_t raw = (uint32_t)orr_pack_raw_len(&b);
    /* raw length one more, and one less, than the block holds */
    for (int d = -1; d <= 1; d += 2) {
        memcpy(g, lz.data, lz.len);
        put_be32(g + 32 + k, raw + (uint32_t)d);
        reseal(g, lz.len);
        assert_int_equal(orr_pack_decode(g, lz.len, &s2, &c, &err), ORR_EINVAL);
        assert_string_equal(err.field, "body");
    }
    /* the block cut short (its length and checksum made to agree) */
    memcpy(g, lz.data, lz.len);
    put_be32(g + 36 + k, (uint32_t)(lz.len - hl - 7));
    reseal(g, lz.len - 7);
    assert_int_equal(orr_pack_decode(g, lz.len - 7, &s2, &c, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body");
    /* trailing bytes after a whole block */
    memcpy(g, lz.data, lz.len);
    memset(g + lz.len, 0, 5);
    put_be32(g + 36 + k, (uint32_t)(lz.len - hl + 5));
    reseal(g, lz.len + 5);
    assert_int_equal(orr_pack_decode(g, lz.len + 5, &s2, &c, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body");
    /* a body longer than any LZ4 block of that raw length, and a tiny body
     * claiming far more raw bytes than it can hold */
    {
        size_t bound = (size_t)LZ4_compressBound((int)raw) + 1;
        uint8_t *pad = calloc(1, hl + bound);
        memcpy(pad, lz.data, lz.len);
        put_be32(pad + 36 + k, (uint32_t)bound);
        reseal(pad, hl + bound);
        assert_int_equal(orr_pack_decode(pad, hl + bound, &s2, &c, &err), ORR_EINVAL);
        assert_string_equal(err.field, "body");
        memcpy(pad, lz.data, hl);
        memset(pad + hl, 0, 8);
        put_be32(pad + 32 + k, 10000000);
        put_be32(pad + 36 + k, 8);
        reseal(pad, hl + 8);
        orr_buf s3 = ORR_BUF_INIT;
        assert_int_equal(orr_pack_decode(pad, hl + 8, &s3, &c, &err), ORR_EINVAL);
        assert_string_equal(err.field, "body");
        assert_true(s3.cap < 10000000); /* refused before the buffer grew */
        orr_buf_free(&s3);
        free(pad);
    }
    /* a Snappy body under the LZ4 flag */
    orr_buf t = ORR_BUF_INIT;
    orr_buf_append(&t, sn.data, sn.len);
    ((uint8_t *)t.data)[5] |= ORR_PACK_F_LZ4;
    reseal((uint8_t *)t.data, t.len);
    assert_int_equal(orr_pack_decode(t.data, t.len, &s2, &c, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body");
    free(g);
    orr_buf_free(&t);
    orr_buf_free(&sn);
    orr_buf_free(&lz);
    orr_buf_free(&s1);
    orr_buf_free(&s2);
    orr_pack_builder_free(&b);
}

int main(void)
{
    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_crc32c_check_value),
        cmocka_unit_test(test_crc32c_paths_agree),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_lz4_against_snappy),
    };
    const struct CMUnitTest per_codec[] = {
        cmocka_unit_test(test_roundtrip_edges), cmocka_unit_test(test_empty_pack),
        cmocka_unit_test(test_100k_records),    cmocka_unit_test(test_corrupt_bytes),
        cmocka_unit_test(test_bad_fields),      cmocka_unit_test(test_times_roundtrip),
    };
    int failed = cmocka_run_group_tests_name("pack", common, NULL, NULL);
    failed += cmocka_run_group_tests_name("snappy", per_codec, group_snappy, NULL);
    failed += cmocka_run_group_tests_name("lz4", per_codec, group_lz4, NULL);
    return failed;
}

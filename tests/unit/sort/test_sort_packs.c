/*
 * test_sort_packs.c - what the Redis pack hand-off relies on: packs with
 * per-record (sparse) offsets round trip and are checked, packs without them
 * number records from first_offset, the spec's "packs" switch, and the
 * duplicate filter (sort_unit_accept) that drops a producer's replay, and
 * the unit table's lookup. Also the writers' data packs: sort_pack_need is
 * what a record adds to one (the files sink sends a pack before a record
 * would take it past pack_size), and the pool whose buffers are pieces of
 * one mapping: a record larger than its piece moves the pack to the heap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "orr_pack.h"
#include "sort_chan.h"
#include "sort_spec.h"
#include "sort_unit.h"

static void reseal(uint8_t *p, size_t len)
{
    size_t k = (size_t)p[6] << 8 | p[7];
    size_t hl = ORR_PACK_HEAD_MIN + k;
    uint32_t crc = orr_crc32c(orr_crc32c(0, p, 40 + k), p + hl, len - hl);
    for (int i = 3; i >= 0; i--, crc >>= 8)
        p[40 + k + (size_t)i] = (uint8_t)crc;
}

static const uint64_t sparse[] = {7, 7, 9, 1000, 1000000, UINT64_C(5000000000)};

static orr_buf sparse_pack(void)
{
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, "if1/2024050100", 14, 3, &err), ORR_OK);
    b.flags = ORR_PACK_F_OFFSETS;
    char rec[32];
    for (size_t i = 0; i < sizeof sparse / sizeof sparse[0]; i++) {
        int n = snprintf(rec, sizeof rec, "rec-%zu", i);
        assert_int_equal(orr_pack_add(&b, sparse[i], rec, (size_t)n, &err), ORR_OK);
    }
    orr_buf enc = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    orr_pack_builder_free(&b);
    return enc;
}

static void test_sparse_offsets_round_trip(void **state)
{
    (void)state;
    orr_buf enc = sparse_pack(), scratch = ORR_BUF_INIT;
    orr_pack_view v;
    orr_err err;
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    assert_int_equal(v.flags, ORR_PACK_F_OFFSETS);
    assert_int_equal(v.partition, 3);
    assert_int_equal(v.first_offset, 7);
    assert_true(v.last_offset == UINT64_C(5000000000));
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    uint64_t off;
    const void *rec;
    size_t len, i = 0;
    char want[32];
    while (orr_pack_next_at(&it, &off, &rec, &len)) {
        assert_true(i < sizeof sparse / sizeof sparse[0]);
        assert_true(off == sparse[i]);
        int n = snprintf(want, sizeof want, "rec-%zu", i);
        assert_int_equal(len, (size_t)n);
        assert_memory_equal(rec, want, len);
        i++;
    }
    assert_int_equal(i, sizeof sparse / sizeof sparse[0]);
    /* orr_pack_next skips the deltas too */
    orr_pack_iter_init(&it, &v);
    assert_true(orr_pack_next(&it, &rec, &len));
    assert_memory_equal(rec, "rec-0", 5);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
}

static void test_sparse_offsets_checked(void **state)
{
    (void)state;
    orr_buf enc = sparse_pack(), scratch = ORR_BUF_INIT;
    orr_pack_view v;
    orr_err err;
    size_t k = 14;
    /* the header's last offset no longer matches the last record's */
    enc.data[20 + k + 7] ^= 1;
    reseal((uint8_t *)enc.data, enc.len);
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "offsets");
    enc.data[20 + k + 7] ^= 1;
    /* the first offset moved after the first record's */
    enc.data[12 + k + 7] = 8;
    reseal((uint8_t *)enc.data, enc.len);
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "offsets");
    /* offsets going back are refused by the builder */
    orr_pack_builder b;
    assert_int_equal(orr_pack_builder_init(&b, "u", 1, 0, &err), ORR_OK);
    b.flags = ORR_PACK_F_OFFSETS;
    assert_int_equal(orr_pack_add(&b, 10, "a", 1, &err), ORR_OK);
    assert_int_equal(orr_pack_add(&b, 9, "b", 1, &err), ORR_EINVAL);
    assert_string_equal(err.field, "offset");
    orr_pack_builder_free(&b);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
}

static void test_dense_offsets(void **state)
{
    (void)state;
    orr_pack_builder b;
    orr_err err;
    assert_int_equal(orr_pack_builder_init(&b, "stream", 6, 0, &err), ORR_OK);
    for (uint64_t o = 100; o < 105; o++)
        assert_int_equal(orr_pack_add(&b, o, "x", 1, &err), ORR_OK);
    orr_buf enc = ORR_BUF_INIT, scratch = ORR_BUF_INIT;
    assert_int_equal(orr_pack_encode(&b, &enc, &err), ORR_OK);
    orr_pack_view v;
    assert_int_equal(orr_pack_decode(enc.data, enc.len, &scratch, &v, &err), ORR_OK);
    assert_int_equal(v.flags, 0);
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    uint64_t off, want = 100;
    const void *rec;
    size_t len;
    while (orr_pack_next_at(&it, &off, &rec, &len))
        assert_true(off == want++);
    assert_true(want == 105);
    orr_pack_builder_free(&b);
    orr_buf_free(&enc);
    orr_buf_free(&scratch);
}

static const char *spec_text =
    "{\"name\": \"s\", \"business\": \"b\","
    " \"source\": {\"type\": \"redis\", \"key\": \"k\", \"packs\": %s},"
    " \"format\": {\"type\": \"kv\"}, \"interface\": {\"field\": \"if\"},"
    " \"time\": {\"field\": \"t\", \"format\": \"epoch_s\"}, \"bucket\": \"hour\"}";

static orr_status parse_with(const char *packs, sort_spec **out, orr_err *err)
{
    char text[1024];
    snprintf(text, sizeof text, spec_text, packs);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

static void test_spec_packs(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(parse_with("true", &s, &err), ORR_OK);
    assert_int_equal(s->source.packs, 1);
    sort_spec_free(s);
    assert_int_equal(parse_with("false", &s, &err), ORR_OK);
    assert_int_equal(s->source.packs, 0);
    sort_spec_free(s);
    assert_int_equal(parse_with("\"yes\"", &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "spec.source.packs");
}

/* A spec with packs on and an empty unit table of it (the caller frees
 * both: sort_units_free, sort_spec_free). */
static sort_spec *units_open(sort_units *t)
{
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(parse_with("true", &s, &err), ORR_OK);
    sort_units_init(t, s);
    return s;
}

static void test_accept_drops_replays(void **state)
{
    (void)state;
    sort_units t;
    sort_spec *s = units_open(&t);
    sort_unit *u = sort_units_get(&t, "if1", 3, 1714521600);
    sort_unit *w = sort_units_get(&t, "if2", 3, 1714521600);
    sort_off o5 = {0, 5}, o7 = {0, 7}, o6 = {0, 6};
    assert_int_equal(sort_unit_accept(&t, u, 0, 0, o5), 1);
    assert_int_equal(sort_unit_accept(&t, u, 0, 0, o7), 1);
    assert_int_equal(sort_unit_accept(&t, u, 0, 0, o7), 0); /* sent again */
    assert_int_equal(sort_unit_accept(&t, u, 0, 0, o6), 0); /* older */
    assert_int_equal(sort_unit_accept(&t, u, 0, 1, o6), 1); /* another partition */
    assert_int_equal(sort_unit_accept(&t, u, 1, 0, o6), 1); /* another split */
    assert_int_equal(sort_unit_accept(&t, w, 0, 0, o5), 1); /* another unit */
    sort_off last;
    assert_int_equal(sort_unit_landed_last(u, 0, 0, &last), 1);
    assert_int_equal(sort_off_cmp(last, o7), 0);
    sort_units_free(&t);
    sort_spec_free(s);
}

/* The unit table finds each (interface, bucket) again, through its growth,
 * for names of every length around the lookup hash's 8-byte steps, names
 * that differ only in their last byte or only in length, and the same name
 * in other buckets; units keep their stable hash. */
static void test_units_lookup(void **state)
{
    (void)state;
    sort_units t;
    sort_spec *s = units_open(&t);
    enum { NAMES = 700, BUCKETS = 3 };
    static sort_unit *made[NAMES][BUCKETS];
    char name[64];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < NAMES; i++) {
            /* lengths 1..25; "a", "aa", ... share prefixes; the last byte varies */
            size_t len = 1 + (size_t)(i % 25);
            memset(name, 'a', len);
            name[len - 1] = (char)('a' + i / 25);
            for (int b = 0; b < BUCKETS; b++) {
                int64_t start = 1714521600 + (int64_t)b * 3600;
                if (pass == 0) {
                    assert_null(sort_units_find(&t, name, len, start));
                    made[i][b] = sort_units_get(&t, name, len, start);
                } else {
                    assert_ptr_equal(sort_units_find(&t, name, len, start), made[i][b]);
                    assert_ptr_equal(sort_units_get(&t, name, len, start), made[i][b]);
                }
                assert_int_equal(made[i][b]->iface_len, len);
                assert_memory_equal(made[i][b]->iface, name, len);
                assert_int_equal(made[i][b]->bucket_start, start);
                assert_true(made[i][b]->hash == sort_unit_hash(name, len, start));
            }
        }
    assert_int_equal(t.n, (size_t)NAMES * BUCKETS);
    assert_null(sort_units_find(&t, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 30, 1714521600));
    assert_null(sort_units_find(&t, "a", 1, 1714521600 + BUCKETS * 3600));
    sort_units_free(&t);
    sort_spec_free(s);
}

static void test_data_pack_need(void **state)
{
    (void)state;
    static const uint32_t lens[] = {0, 1, 7, 8, 9, 15, 16, 100, 4095, 70000};
    char rec[70000];
    memset(rec, 'r', sizeof rec);
    sort_pack p;
    memset(&p, 0, sizeof p);
    size_t want = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t need = sort_pack_need(lens[i]);
        assert_true(need >= lens[i] && need % 8 == 0);
        sort_pack_add(&p, NULL, 0, 0, (sort_off){0, i}, rec, lens[i]);
        want += need;
        assert_int_equal(p.data.len, want);
    }
    /* and every record reads back with its length */
    size_t cur = 0, i = 0;
    const char *r;
    const sort_pent *e;
    while ((e = sort_pack_next(&p, &cur, &r)) != NULL) {
        assert_int_equal(e->len, lens[i]);
        assert_int_equal(e->off.lo, i);
        i++;
    }
    assert_int_equal(i, sizeof lens / sizeof lens[0]);
    orr_buf_free(&p.data);
}

static void test_pool_slab(void **state)
{
    (void)state;
    enum { PACK = 4096 };
    static char rec[3 * PACK];
    memset(rec, 'q', sizeof rec);
    sort_queue pool;
    sort_queue_init(&pool);
    sort_slab slab;
    sort_pool_fill(&pool, 3, PACK, &slab);
    assert_non_null(slab.base);
    assert_int_equal(sort_queue_len(&pool), 3);
    sort_pack *a = sort_queue_pop(&pool, 0), *b = sort_queue_pop(&pool, 0);
    assert_true(a->pooled && a->slab && b->slab);
    /* the first piece starts on a huge page boundary */
    assert_int_equal((uintptr_t)a->data.data % ((uintptr_t)2 << 20), 0);
    /* pieces do not overlap: each holds a full pack and its NUL */
    assert_true(b->data.data >= a->data.data + PACK + 1 || a->data.data >= b->data.data + PACK + 1);
    char *piece = a->data.data;
    size_t need = sort_pack_need(100), n = 0;
    while (a->data.len + need <= PACK) { /* as the files sink fills a pack */
        sort_pack_add(a, NULL, 0, 0, (sort_off){0, n}, rec, 100);
        n++;
    }
    assert_true(a->slab);
    assert_ptr_equal(a->data.data, piece);
    memset(b->data.data, 'x', PACK + 1); /* a neighbour filled to the end */
    /* A record larger than the piece: the pack leaves the mapping, keeps
     * what it held, and stays pooled. */
    sort_pack_add(a, NULL, 0, 0, (sort_off){0, n}, rec, 2 * PACK);
    assert_false(a->slab);
    assert_true(a->pooled);
    assert_ptr_not_equal(a->data.data, piece);
    size_t cur = 0, i = 0;
    const char *r;
    const sort_pent *e;
    while ((e = sort_pack_next(a, &cur, &r)) != NULL) {
        assert_int_equal(e->off.lo, i);
        assert_int_equal(e->len, i < n ? 100 : 2 * PACK);
        assert_int_equal(r[0], 'q');
        assert_int_equal(r[e->len - 1], 'q');
        i++;
    }
    assert_int_equal(i, n + 1);
    sort_pack_clear(a);
    sort_pack_clear(b);
    sort_queue_push(&pool, a);
    sort_queue_push(&pool, b);
    sort_pool_drain(&pool, &slab); /* frees a's heap buffer (ASan checks) */
    assert_null(slab.base);
    assert_int_equal(sort_queue_len(&pool), 0);
    /* Without a pack size the buffers are the heap's from the start. */
    sort_pool_fill(&pool, 2, 0, &slab);
    assert_null(slab.base);
    a = sort_queue_pop(&pool, 0);
    assert_false(a->slab);
    sort_pack_add(a, NULL, 0, 0, (sort_off){0, 0}, rec, 10);
    sort_queue_push(&pool, a);
    sort_pool_drain(&pool, &slab);
    sort_queue_destroy(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_offsets_round_trip),
        cmocka_unit_test(test_sparse_offsets_checked),
        cmocka_unit_test(test_dense_offsets),
        cmocka_unit_test(test_spec_packs),
        cmocka_unit_test(test_accept_drops_replays),
        cmocka_unit_test(test_units_lookup),
        cmocka_unit_test(test_data_pack_need),
        cmocka_unit_test(test_pool_slab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_rpc_desc.c - the protobuf wire reader and FileDescriptorSet index of
 * server reflection (rpc/orr_rpc_desc.c).
 *
 * Sets are built here byte by byte (a tiny encoder following the public
 * descriptor.proto field numbers), so each test knows exactly what the
 * index must find. Every prefix and many single-byte corruptions of a valid
 * set must load or be refused, never read out of bounds (run under ASan in
 * CI). The set embedded in halleyd is indexed as well.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "orr_rpc_desc.h"
#include "orr_rpc_halley_descriptors.h"

/* ------------------------------------------------------------ encoder */

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static void put_varint(buf *o, uint64_t v)
{
    do {
        assert_true(o->n < sizeof(o->b));
        uint8_t c = v & 0x7f;
        v >>= 7;
        o->b[o->n++] = c | (v ? 0x80 : 0);
    } while (v);
}

static void put_bytes(buf *o, uint32_t field, const void *p, size_t n)
{
    put_varint(o, (uint64_t)field << 3 | 2);
    put_varint(o, n);
    assert_true(o->n + n <= sizeof(o->b));
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put_str(buf *o, uint32_t field, const char *s)
{
    put_bytes(o, field, s, strlen(s));
}

static void put_msg(buf *o, uint32_t field, const buf *m)
{
    put_bytes(o, field, m->b, m->n);
}

/* a.proto: package p; imports b.proto and missing.proto;
 *   message M { message N {} enum E {} }  enum TopE {}
 *   service S { rpc Do; rpc Undo; }  plus an int field to skip.
 * b.proto: package p.q; imports c.proto; message B {}
 * c.proto: no package; imports a.proto (a cycle); message C {} */
static void build_set(buf *set)
{
    buf a = {0}, b = {0}, c = {0}, t;
    put_str(&a, 1, "a.proto");
    put_str(&a, 2, "p");
    put_str(&a, 3, "b.proto");
    put_str(&a, 3, "missing.proto");
    buf m = {0}, n = {0}, e = {0};
    put_str(&n, 1, "N");
    put_str(&e, 1, "E");
    put_str(&m, 1, "M");
    put_msg(&m, 3, &n);
    put_msg(&m, 4, &e);
    put_msg(&a, 4, &m);
    t = (buf){0};
    put_str(&t, 1, "TopE");
    put_msg(&a, 5, &t);
    buf svc = {0}, do_ = {0}, undo = {0};
    put_str(&svc, 1, "S");
    put_str(&do_, 1, "Do");
    put_str(&undo, 1, "Undo");
    put_msg(&svc, 2, &do_);
    put_msg(&svc, 2, &undo);
    put_msg(&a, 6, &svc);
    put_varint(&a, 10 << 3 | 0); /* an unrelated varint field */
    put_varint(&a, 300);
    put_str(&b, 1, "b.proto");
    put_str(&b, 2, "p.q");
    put_str(&b, 3, "c.proto");
    t = (buf){0};
    put_str(&t, 1, "B");
    put_msg(&b, 4, &t);
    put_str(&c, 1, "c.proto");
    put_str(&c, 3, "a.proto");
    t = (buf){0};
    put_str(&t, 1, "C");
    put_msg(&c, 4, &t);
    *set = (buf){0};
    put_msg(set, 1, &a);
    put_msg(set, 1, &b);
    put_msg(set, 1, &c);
}

/* ------------------------------------------------------------ tests */

static void test_wire_reader(void **state)
{
    (void)state;
    orr_rpc_pb r;
    orr_rpc_pb_field f;
    /* field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64 */
    const uint8_t ok[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h', 'i', 0x1d, 1, 0, 0,
                          0,    0x21, 2,    0,    0,    0,   0,   0,    0, 0};
    orr_rpc_pb_init(&r, ok, sizeof(ok));
    assert_int_equal(orr_rpc_pb_next(&r, &f), 1);
    assert_int_equal(f.num, 1);
    assert_int_equal(f.wire, ORR_RPC_PB_VARINT);
    assert_int_equal(f.v, 150);
    assert_int_equal(orr_rpc_pb_next(&r, &f), 1);
    assert_int_equal(f.num, 2);
    assert_int_equal(f.len, 2);
    assert_memory_equal(f.data, "hi", 2);
    assert_int_equal(orr_rpc_pb_next(&r, &f), 1);
    assert_int_equal(f.wire, ORR_RPC_PB_I32);
    assert_int_equal(f.v, 1);
    assert_int_equal(orr_rpc_pb_next(&r, &f), 1);
    assert_int_equal(f.wire, ORR_RPC_PB_I64);
    assert_int_equal(f.v, 2);
    assert_int_equal(orr_rpc_pb_next(&r, &f), 0);
    assert_int_equal(orr_rpc_pb_next(&r, &f), 0);

    const struct {
        const char *what;
        uint8_t b[12];
        size_t n;
    } bad[] = {
        {"length beyond the end", {0x12, 0x05, 'a'}, 3},
        {"truncated varint", {0x08, 0x80}, 2},
        {"varint over 10 bytes",
         {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
         12},
        {"field number 0", {0x00, 0x01}, 2},
        {"start group", {0x0b}, 1},
        {"end group", {0x0c}, 1},
        {"wire type 7", {0x0f, 0x00}, 2},
        {"truncated fixed64", {0x09, 1, 2, 3}, 4},
        {"truncated fixed32", {0x0d, 1}, 2},
        {"truncated key", {0x80}, 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        orr_rpc_pb_init(&r, bad[i].b, bad[i].n);
        int rc;
        while ((rc = orr_rpc_pb_next(&r, &f)) == 1)
            ;
        if (rc != -1)
            fail_msg("%s: read as valid", bad[i].what);
        assert_int_equal(orr_rpc_pb_next(&r, &f), -1); /* stays failed */
    }
    orr_rpc_pb_init(&r, NULL, 0);
    assert_int_equal(orr_rpc_pb_next(&r, &f), -1);
    orr_rpc_pb_init(&r, ok, 0);
    assert_int_equal(orr_rpc_pb_next(&r, &f), 0);
}

static void test_index(void **state)
{
    (void)state;
    buf set;
    build_set(&set);
    orr_rpc_desc *d = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_desc_load(set.b, set.n, &d, &err), ORR_OK);
    assert_int_equal(orr_rpc_desc_count(d), 3);
    assert_string_equal(orr_rpc_desc_name(d, 0), "a.proto");
    size_t len;
    const uint8_t *bytes = orr_rpc_desc_bytes(d, 1, &len);
    assert_true(bytes > set.b && bytes + len <= set.b + set.n); /* points into the set */
    assert_int_equal(bytes[0], 0x0a);

    assert_int_equal(orr_rpc_desc_file_by_name(d, "c.proto"), 2);
    assert_int_equal(orr_rpc_desc_file_by_name(d, "missing.proto"), -1);
    assert_int_equal(orr_rpc_desc_file_by_name(d, ""), -1);

    const struct {
        const char *sym;
        long file;
        int kind;
    } syms[] = {
        {"p.M", 0, ORR_RPC_DESC_MESSAGE},     {"p.M.N", 0, ORR_RPC_DESC_MESSAGE},
        {"p.M.E", 0, ORR_RPC_DESC_ENUM},      {"p.TopE", 0, ORR_RPC_DESC_ENUM},
        {"p.S", 0, ORR_RPC_DESC_SERVICE},     {"p.S.Do", 0, ORR_RPC_DESC_METHOD},
        {"p.S.Undo", 0, ORR_RPC_DESC_METHOD}, {"p.q.B", 1, ORR_RPC_DESC_MESSAGE},
        {"C", 2, ORR_RPC_DESC_MESSAGE},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        int kind = 0;
        long f = orr_rpc_desc_file_by_symbol(d, syms[i].sym, &kind);
        if (f != syms[i].file || kind != syms[i].kind)
            fail_msg("%s: file %ld kind %d", syms[i].sym, f, kind);
    }
    const char *absent[] = {"M", "p", "p.S.Redo", "p.M.N.X", ".p.M", "p.M.", "", "q.B", "p.C"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        if (orr_rpc_desc_file_by_symbol(d, absent[i], NULL) != -1)
            fail_msg("%s found", absent[i]);

    /* a -> b -> c -> a (cycle), a -> missing (skipped): each file once */
    size_t out[3];
    assert_int_equal(orr_rpc_desc_closure(d, 0, out, 3), 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 2);
    assert_int_equal(orr_rpc_desc_closure(d, 1, out, 3), 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 0);
    assert_int_equal(orr_rpc_desc_closure(d, 2, out, 1), 3); /* cap too small: count only */
    assert_int_equal(out[0], 2);
    assert_int_equal(orr_rpc_desc_closure(d, 3, out, 3), 0); /* no such file */
    orr_rpc_desc_free(d);

    /* an empty set is a valid set with nothing in it */
    assert_int_equal(orr_rpc_desc_load(set.b, 0, &d, &err), ORR_OK);
    assert_int_equal(orr_rpc_desc_count(d), 0);
    assert_int_equal(orr_rpc_desc_file_by_symbol(d, "p.M", NULL), -1);
    orr_rpc_desc_free(d);
    orr_rpc_desc_free(NULL);
}

static void test_refused(void **state)
{
    (void)state;
    orr_rpc_desc *d = (orr_rpc_desc *)1;
    orr_err err;
    buf set = {0}, f = {0}, m = {0};
    /* a file without a name */
    put_str(&f, 2, "p");
    put_msg(&set, 1, &f);
    assert_int_equal(orr_rpc_desc_load(set.b, set.n, &d, &err), ORR_EINVAL);
    assert_null(d);
    assert_string_equal(err.field, "descriptor_set");
    /* a name holding a NUL byte */
    set = (buf){0};
    f = (buf){0};
    put_bytes(&f, 1, "a\0b", 3);
    put_msg(&set, 1, &f);
    assert_int_equal(orr_rpc_desc_load(set.b, set.n, &d, &err), ORR_EINVAL);
    /* a message without a name */
    set = (buf){0};
    f = (buf){0};
    put_str(&f, 1, "x.proto");
    put_str(&m, 2, "not a name");
    put_msg(&f, 4, &m);
    put_msg(&set, 1, &f);
    assert_int_equal(orr_rpc_desc_load(set.b, set.n, &d, &err), ORR_EINVAL);
    /* messages nested 40 deep: refused, not a deep recursion */
    buf *lv = calloc(41, sizeof(buf));
    assert_non_null(lv);
    put_str(&lv[0], 1, "Z");
    for (int i = 1; i <= 40; i++) {
        put_str(&lv[i], 1, "Z");
        put_msg(&lv[i], 3, &lv[i - 1]);
    }
    set = (buf){0};
    f = (buf){0};
    put_str(&f, 1, "deep.proto");
    put_msg(&f, 4, &lv[40]);
    put_msg(&set, 1, &f);
    free(lv);
    assert_int_equal(orr_rpc_desc_load(set.b, set.n, &d, &err), ORR_EINVAL);
    assert_null(d);
}

/* Every prefix and every single-byte change of a valid set loads or is
 * refused: no crash, no read outside (the copy is exactly as long as the
 * input, so ASan sees any overrun). */
static void test_corruptions(void **state)
{
    (void)state;
    buf set;
    build_set(&set);
    orr_err err;
    int loaded = 0, refused = 0;
    for (size_t n = 0; n <= set.n; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, set.b, n);
        orr_rpc_desc *d = NULL;
        orr_status st = orr_rpc_desc_load(copy, n, &d, &err);
        assert_true(st == ORR_OK || st == ORR_EINVAL);
        if (st == ORR_OK) {
            loaded++;
            size_t out[8];
            for (size_t i = 0; i < orr_rpc_desc_count(d); i++)
                assert_true(orr_rpc_desc_closure(d, i, out, 8) <= orr_rpc_desc_count(d));
            orr_rpc_desc_free(d);
        } else {
            refused++;
        }
        free(copy);
    }
    assert_true(loaded >= 2 && refused > 0); /* empty, the whole set; most prefixes fail */
    static const uint8_t vals[] = {0x00, 0x01, 0x07, 0x0a, 0x12, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < set.n; i++) {
        for (size_t k = 0; k < sizeof(vals); k++) {
            uint8_t *copy = malloc(set.n);
            memcpy(copy, set.b, set.n);
            copy[i] = vals[k];
            orr_rpc_desc *d = NULL;
            orr_status st = orr_rpc_desc_load(copy, set.n, &d, &err);
            assert_true(st == ORR_OK || st == ORR_EINVAL);
            if (st == ORR_OK) {
                (void)orr_rpc_desc_file_by_symbol(d, "p.S.Do", NULL);
                orr_rpc_desc_free(d);
            }
            free(copy);
        }
    }
}

/* The set halleyd embeds: built by protoc from the .proto files it serves. */
static void test_halley_set(void **state)
{
    (void)state;
    orr_rpc_desc *d = NULL;
    orr_err err;
    assert_int_equal(
        orr_rpc_desc_load(orr_rpc_halley_descriptors, orr_rpc_halley_descriptors_len, &d, &err),
        ORR_OK);
    long h = orr_rpc_desc_file_by_name(d, "halley.proto");
    assert_true(h >= 0);
    int kind = 0;
    assert_int_equal(orr_rpc_desc_file_by_symbol(d, "orrery.halley.v1.Halley", &kind), h);
    assert_int_equal(kind, ORR_RPC_DESC_SERVICE);
    assert_int_equal(orr_rpc_desc_file_by_symbol(d, "orrery.halley.v1.Halley.GetTask", &kind), h);
    assert_int_equal(kind, ORR_RPC_DESC_METHOD);
    assert_int_equal(orr_rpc_desc_file_by_symbol(d, "orrery.halley.v1.GetTaskRequest", &kind), h);
    assert_int_equal(kind, ORR_RPC_DESC_MESSAGE);
    assert_true(orr_rpc_desc_file_by_symbol(d, "grpc.health.v1.Health", NULL) >= 0);
    assert_true(orr_rpc_desc_file_by_symbol(
                    d, "grpc.reflection.v1alpha.ServerReflection.ServerReflectionInfo", NULL) >= 0);
    assert_true(orr_rpc_desc_file_by_symbol(d, "grpc.reflection.v1.ServerReflection", NULL) >= 0);
    assert_int_equal(orr_rpc_desc_file_by_name(d, "grpc/reflection/v1/reflection.proto") >= 0, 1);
    orr_rpc_desc_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_reader), cmocka_unit_test(test_index),
        cmocka_unit_test(test_refused),     cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_halley_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_lib_hash.c - the one hash (FNV-1a 64) against the published test vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_hash.h"

/* Vectors from the FNV reference (draft-eastlake-fnv, fnv_test_str). */
static void test_vectors(void **state)
{
    (void)state;
    assert_true(orr_hash_fnv1a("", 0) == 0xcbf29ce484222325ULL);
    assert_true(orr_hash_fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(orr_hash_fnv1a("foobar", 6) == 0x85944171f73967e8ULL);
    assert_true(orr_hash_fnv1a_str("foobar") == 0x85944171f73967e8ULL);
    assert_true(orr_hash_fnv1a_str("") == ORR_HASH_FNV_BASIS);
}

static void test_pieces_continue(void **state)
{
    (void)state;
    uint64_t whole = orr_hash_fnv1a("foobar", 6);
    uint64_t h = orr_hash_fnv1a("foo", 3);
    assert_true(h != whole);
    assert_true(orr_hash_fnv1a_add(h, "bar", 3) == whole);
    assert_true(orr_hash_fnv1a_add(whole, NULL, 0) == whole);
    /* Bytes above 0x7f hash as unsigned. */
    assert_true(orr_hash_fnv1a("\xff", 1) == ((ORR_HASH_FNV_BASIS ^ 0xffu) * ORR_HASH_FNV_PRIME));
}

static void test_mix_spreads_low_bits(void **state)
{
    (void)state;
    assert_true(orr_hash_mix(0) == 0);
    /* Keys that differ in one input bit land in all 16 low-bit buckets. */
    int seen[16] = {0};
    for (uint64_t i = 0; i < 64; i++)
        seen[orr_hash_mix(1ULL << i) & 15] = 1;
    for (int b = 0; b < 16; b++)
        assert_int_equal(seen[b], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_pieces_continue),
        cmocka_unit_test(test_mix_spreads_low_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

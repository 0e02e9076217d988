/* test_wh_pgraw.c - the PostgreSQL pass-through's parse of binary COPY
 * messages (pg_raw.c): header, tuples kept back to back, NULLs, the
 * trailer, and every malformed message refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pg_common.h"

/* A tuple of up to 3 fields (NULL: SQL NULL) appended at out[*n]. */
static void tuple(char *out, size_t *n, int nf, const char *const *v)
{
    out[(*n)++] = (char)(nf >> 8);
    out[(*n)++] = (char)nf;
    for (int i = 0; i < nf; i++) {
        int32_t len = v[i] ? (int32_t)strlen(v[i]) : -1;
        uint32_t u = (uint32_t)len;
        out[(*n)++] = (char)(u >> 24);
        out[(*n)++] = (char)(u >> 16);
        out[(*n)++] = (char)(u >> 8);
        out[(*n)++] = (char)u;
        if (len > 0) {
            memcpy(out + *n, v[i], (size_t)len);
            *n += (size_t)len;
        }
    }
}

static void test_header_tuples_trailer(void **state)
{
    (void)state;
    char m[256];
    size_t n = wh_pg_raw_header(m), hdr = n;
    const char *a[2] = {"abc", NULL}, *b2[2] = {"", "xy"};
    tuple(m, &n, 2, a);
    size_t first = n - hdr;
    wh_batch *b = wh_batch_new(8, 1024);
    wh_batch_reset(b, 2);
    wh_pg_raw st = {0};
    const char *why = NULL;
    assert_int_equal(wh_pg_raw_parse(&st, m, n, b, &why), 1);
    /* the next message: one tuple, then the trailer */
    size_t k = 0;
    tuple(m, &k, 2, b2);
    size_t second = k;
    m[k++] = (char)0xff;
    m[k++] = (char)0xff;
    assert_int_equal(wh_pg_raw_parse(&st, m, k, b, &why), 1);
    assert_true(st.ended);
    assert_int_equal(b->nrows, 2);
    /* the batch's bytes are the tuples back to back, header and trailer left out */
    assert_int_equal(b->data.len, first + second);
    int64_t len;
    const char *v = wh_batch_val(b, 0, 0, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "abc", 3);
    assert_null(wh_batch_val(b, 0, 1, &len));
    v = wh_batch_val(b, 1, 0, &len);
    assert_non_null(v);
    assert_int_equal(len, 0);
    v = wh_batch_val(b, 1, 1, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(v, "xy", 2);
    assert_int_equal(b->rownum[1], 2);
    wh_batch_free(b);
}

static void test_malformed(void **state)
{
    (void)state;
    char m[256];
    size_t n = wh_pg_raw_header(m);
    const char *a[3] = {"abc", "d", "e"};
    size_t hdr = n;
    tuple(m, &n, 3, a);
    wh_batch *b = wh_batch_new(8, 1024);
    const char *why = NULL;
    /* no signature */
    wh_pg_raw st = {0};
    wh_batch_reset(b, 3);
    assert_int_equal(wh_pg_raw_parse(&st, m + 1, n - 1, b, &why), -1);
    assert_non_null(why);
    /* a header only: no rows */
    memset(&st, 0, sizeof(st));
    assert_int_equal(wh_pg_raw_parse(&st, m, hdr, b, &why), 0);
    /* every cut of the tuple is refused, and leaves the batch as it was */
    for (size_t cut = hdr + 1; cut < n; cut++) {
        memset(&st, 0, sizeof(st));
        wh_batch_reset(b, 3);
        why = NULL;
        assert_int_equal(wh_pg_raw_parse(&st, m, cut, b, &why), -1);
        assert_non_null(why);
        assert_int_equal(b->nrows, 0);
        assert_int_equal(b->data.len, 0);
    }
    /* another number of fields than the batch's columns */
    memset(&st, 0, sizeof(st));
    wh_batch_reset(b, 2);
    assert_int_equal(wh_pg_raw_parse(&st, m, n, b, &why), -1);
    /* a header with an unknown critical flag */
    memset(&st, 0, sizeof(st));
    wh_batch_reset(b, 3);
    m[11] = 1;
    assert_int_equal(wh_pg_raw_parse(&st, m, n, b, &why), -1);
    m[11] = 0;
    /* a field length below -1 */
    memset(&st, 0, sizeof(st));
    m[hdr + 2] = (char)0xff;
    m[hdr + 5] = (char)0xfe;
    assert_int_equal(wh_pg_raw_parse(&st, m, n, b, &why), -1);
    wh_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_tuples_trailer),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

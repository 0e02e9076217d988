/*
 * test_kp_why.c - "why is it waiting" without I/O: the blocker text
 * (items, the bounded size and its "more" item, JSON string quoting) and
 * its fingerprint, and why no executor takes an instance (drained, labels,
 * slots, busy), with the drained executor never chosen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kp_dispatch.h"
#include "kp_why.h"

static void test_text(void **state)
{
    (void)state;
    kp_why w;
    kp_why_begin(&w);
    kp_why_end(&w);
    assert_string_equal(w.buf, "[]");
    char q[64];
    kp_why_begin(&w);
    kp_why_item(&w, "\"kind\":\"pool\",\"pool\":%s,\"tokens\":%d", kp_why_q(q, sizeof q, "p\"1\\"),
                2);
    kp_why_item(&w, "\"kind\":\"not_due\"");
    kp_why_end(&w);
    assert_string_equal(
        w.buf, "[{\"kind\":\"pool\",\"pool\":\"p\\\"1\\\\\",\"tokens\":2},{\"kind\":\"not_due\"}]");
    assert_int_equal(w.len, strlen(w.buf));
    json_t *j = json_loads(w.buf, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_array_size(j), 2);
    json_decref(j);
    /* the same text, the same fingerprint; another text, another one; never 0 */
    uint32_t h = kp_why_hash(w.buf, w.len);
    assert_int_equal(h, kp_why_hash(w.buf, w.len));
    assert_int_not_equal(h, kp_why_hash("[]", 2));
    assert_int_not_equal(kp_why_hash("", 0), 0);
    /* control characters are escaped; a cut never splits a UTF-8 sequence */
    assert_string_equal(kp_why_q(q, sizeof q, "a\nb"), "\"a\\u000ab\"");
    char small[6];
    kp_why_q(small, sizeof small, "ab\xc3\xa9z");
    j = json_loads(small, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    json_decref(j);
}

static void test_bounded(void **state)
{
    (void)state;
    kp_why w;
    kp_why_begin(&w);
    for (int i = 0; i < 1000; i++)
        kp_why_item(&w, "\"kind\":\"upstream\",\"task\":\"task-%04d\",\"state\":\"running\"", i);
    kp_why_end(&w);
    assert_true(w.len < KP_WHY_MAX);
    assert_true(w.n > 10 && w.more > 0 && w.n + w.more == 1000);
    json_t *j = json_loads(w.buf, 0, NULL);
    assert_non_null(j);
    json_t *last = json_array_get(j, json_array_size(j) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "kind")), "more");
    assert_int_equal(json_integer_value(json_object_get(last, "count")), w.more);
    json_decref(j);
}

static void test_explain(void **state)
{
    (void)state;
    kp_exec ex[2];
    orr_err err;
    const char *a = "{\"id\":\"a\",\"slots\":2,\"labels\":{\"zone\":\"x\"}}";
    const char *b = "{\"id\":\"b\",\"slots\":8,\"labels\":{\"zone\":\"y\"}}";
    assert_int_equal(kp_exec_parse(&ex[0], "a", a, strlen(a), &err), ORR_OK);
    assert_int_equal(kp_exec_parse(&ex[1], "b", b, strlen(b), &err), ORR_OK);
    kp_label x = {"zone", "x"}, z = {"zone", "z"};
    assert_int_equal(kp_dispatch_explain(ex, 2, 1, &x, 1), KP_EXEC_FITS);
    assert_int_equal(kp_dispatch_explain(ex, 2, 1, &z, 1), KP_EXEC_NO_LABELS);
    assert_int_equal(kp_dispatch_explain(ex, 2, 3, &x, 1), KP_EXEC_TOO_BIG);
    ex[0].used = 2;
    assert_int_equal(kp_dispatch_explain(ex, 2, 1, &x, 1), KP_EXEC_NO_FREE_SLOT);
    assert_int_equal(kp_dispatch_choose(ex, 2, 1, &x, 1), -1);
    ex[0].used = 0;
    /* drained: never chosen, and said so */
    ex[0].drained = 1;
    assert_int_equal(kp_dispatch_choose(ex, 2, 1, &x, 1), -1);
    assert_int_equal(kp_dispatch_explain(ex, 2, 1, &x, 1), KP_EXEC_DRAINED);
    assert_int_equal(kp_dispatch_choose(ex, 2, 1, NULL, 0), 1);
    assert_string_equal(kp_exec_why_name(KP_EXEC_DRAINED), "drained");
    ex[0].alive = ex[1].alive = 0;
    assert_int_equal(kp_dispatch_explain(ex, 2, 1, NULL, 0), KP_EXEC_NONE_LIVE);
    kp_exec_clear(&ex[0]);
    kp_exec_clear(&ex[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_explain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

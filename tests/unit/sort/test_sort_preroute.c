/* test_sort_preroute.c - unit tests of routed hand-off packs on the write
 * stage's side: the pack key "iface@bucket", and a carried route checked
 * against the spec (it must equal what parsing the record gives, and
 * anything the spec would not route that way is refused, so the record is
 * parsed instead). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sort_format.h"
#include "sort_preroute.h"
#include "sort_spec.h"

static sort_spec *spec_of(const char *iface, const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\":\"s\",\"business\":\"b\","
             "\"source\":{\"type\":\"file\",\"path\":\"/data/in\"},"
             "\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\",\"fields\":[\"id\",\"ts\","
             "\"if\"]},\"interface\":%s,\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\"},"
             "\"bucket\":\"hour\"%s}",
             iface, extra);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    sort_spec *s = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (sort_spec_parse(doc, "spec", &s, &err) != ORR_OK)
        fail_msg("spec: %s %s", err.field, err.msg);
    json_decref(doc);
    return s;
}

static void test_key(void **state)
{
    (void)state;
    size_t il = 0;
    int64_t b = 0;
    assert_int_equal(sort_preroute_key("if_1@1764633600", 15, &il, &b), 0);
    assert_int_equal(il, 4);
    assert_true(b == 1764633600);
    assert_int_equal(sort_preroute_key("a@b@-3600", 9, &il, &b), 0); /* the last '@' */
    assert_int_equal(il, 3);
    assert_true(b == -3600);
    static const char *const bad[] = {
        "@123", "if", "if@", "if@-", "if@12x", "if@+5", "if@1234567890123456789"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (sort_preroute_key(bad[i], strlen(bad[i]), &il, &b) != -1)
            fail_msg("key %s was taken", bad[i]);
}

/* A carried route equals the one parsing gives. */
static void test_same_as_parsing(void **state)
{
    (void)state;
    sort_spec *s = spec_of("{\"field\":\"if\"}", "");
    const sort_format_ops *fmt = sort_format_find("delimited");
    sort_val vals[SORT_MAX_FIELDS];
    static const char *const recs[] = {"1|1764633600000|if1", "2|1764637199999|if_2",
                                       "3|1764637200000|if.3", "4|-1|neg"};
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
        sort_reject_reason why;
        sort_route want, got;
        assert_int_equal(fmt->parse(s, recs[i], strlen(recs[i]), vals, &why), 0);
        assert_int_equal(sort_record_route(s, vals, &want, &why), 0);
        assert_int_equal(
            sort_preroute(s, want.iface, want.iface_len, want.bucket_start, want.time_ms, &got), 0);
        assert_int_equal(got.iface_len, want.iface_len);
        assert_memory_equal(got.iface, want.iface, want.iface_len);
        assert_true(got.time_ms == want.time_ms);
        assert_true(got.bucket_start == want.bucket_start);
        /* a time outside the carried bucket: refused (the record is parsed) */
        assert_int_equal(sort_preroute(s, want.iface, want.iface_len, want.bucket_start + 3600,
                                       want.time_ms, &got),
                         -1);
    }
    /* a name the spec would reject */
    sort_route r;
    assert_int_equal(sort_preroute(s, "a/b", 3, 1764633600, 1764633600000, &r), -1);
    assert_int_equal(sort_preroute(s, "..", 2, 1764633600, 1764633600000, &r), -1);
    assert_int_equal(sort_preroute(s, "", 0, 1764633600, 1764633600000, &r), -1);
    sort_spec_free(s);
}

static void test_spec_rules(void **state)
{
    (void)state;
    sort_route r;
    sort_spec *s =
        spec_of("{\"field\":\"if\"}", ",\"interfaces\":[\"known\"],\"strict_interfaces\":true");
    assert_int_equal(sort_preroute(s, "known", 5, 1764633600, 1764633600001, &r), 0);
    assert_int_equal(sort_preroute(s, "other", 5, 1764633600, 1764633600001, &r), -1);
    sort_spec_free(s);
    s = spec_of("{\"const\":\"fixed\"}", "");
    assert_int_equal(sort_preroute(s, "fixed", 5, 1764633600, 1764633600001, &r), 0);
    assert_ptr_equal(r.iface, s->iface_const);
    assert_int_equal(sort_preroute(s, "other", 5, 1764633600, 1764633600001, &r), -1);
    sort_spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_same_as_parsing),
        cmocka_unit_test(test_spec_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

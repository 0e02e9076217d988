/* test_gx_route.c - route patterns, static path safety, status mapping, login limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gx_http.h"
#include "gx_ratelimit.h"

static void test_route_match(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(0);
    const char *p[GX_MAX_PARAMS];
    int n = -1;
    assert_true(gx_route_match("/api/v1/tasks", "/api/v1/tasks", a, p, &n));
    assert_int_equal(n, 0);
    assert_false(gx_route_match("/api/v1/tasks", "/api/v1/tasks/", a, p, &n));
    assert_false(gx_route_match("/api/v1/tasks", "/api/v1/task", a, p, &n));
    assert_true(gx_route_match("/api/v1/tasks/{id}", "/api/v1/tasks/42", a, p, &n));
    assert_int_equal(n, 1);
    assert_string_equal(p[0], "42");
    assert_false(gx_route_match("/api/v1/tasks/{id}", "/api/v1/tasks/", a, p, &n));
    assert_false(gx_route_match("/api/v1/tasks/{id}", "/api/v1/tasks/4/x", a, p, &n));
    assert_true(gx_route_match("/api/v1/instances/{id}/actions/{action}",
                               "/api/v1/instances/7/actions/rerun", a, p, &n));
    assert_int_equal(n, 2);
    assert_string_equal(p[0], "7");
    assert_string_equal(p[1], "rerun");
    assert_true(gx_route_match("/app/*", "/app/tasks/3", a, p, &n));
    assert_true(gx_route_match("/app/*", "/app", a, p, &n));
    assert_false(gx_route_match("/app/*", "/apple", a, p, &n));
    orr_arena_destroy(a);
}

static void test_static_path_refuses_traversal(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(0);
    assert_string_equal(gx_static_path(a, "/srv/static", "/app/index.html"),
                        "/srv/static/app/index.html");
    assert_string_equal(gx_static_path(a, "/srv/static", "/app/assets/x.js"),
                        "/srv/static/app/assets/x.js");
    const char *bad[] = {"/../etc/passwd",
                         "/app/../../etc/passwd",
                         "/app/./x",
                         "/.env",
                         "/app/.git/config",
                         "//etc/passwd",
                         "/app\\..\\x",
                         "relative",
                         "/app/x\x01y",
                         "/app//x",
                         "/.."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (gx_static_path(a, "/srv/static", bad[i]))
            fail_msg("accepted %s", bad[i]);
    assert_null(gx_static_path(a, "/srv/static", NULL));
    orr_arena_destroy(a);
}

static void test_status_mapping(void **state)
{
    (void)state;
    assert_int_equal(gx_http_status(ORR_EINVAL), 400);
    assert_int_equal(gx_http_status(ORR_EAUTH), 401);
    assert_int_equal(gx_http_status(ORR_EPERM), 403);
    assert_int_equal(gx_http_status(ORR_ENOTFOUND), 404);
    assert_int_equal(gx_http_status(ORR_ECONFLICT), 409);
    assert_int_equal(gx_http_status(ORR_ESTATE), 409);
    assert_int_equal(gx_http_status(ORR_ETOOBIG), 413);
    assert_int_equal(gx_http_status(ORR_EUNAVAIL), 503);
    assert_int_equal(gx_http_status(ORR_EINTERNAL), 500);
}

static void test_ratelimit(void **state)
{
    (void)state;
    gx_ratelimit_policy p = {
        .free_failures = 3, .base_delay_ms = 1000, .max_delay_ms = 8000, .forget_after_ms = 60000};
    gx_ratelimit *rl = gx_ratelimit_create(&p, 64);
    int64_t t = 1000000;
    /* Free failures: no wait. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gx_ratelimit_blocked(rl, "alice", t), 0);
        assert_int_equal(gx_ratelimit_fail(rl, "alice", t), 0);
    }
    /* Then the delay doubles with each heard failure, up to the cap. */
    int64_t want[] = {1000, 2000, 4000, 8000, 8000};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(gx_ratelimit_fail(rl, "alice", t), want[i]);
        assert_int_equal(gx_ratelimit_blocked(rl, "alice", t), want[i]);
        assert_int_equal(gx_ratelimit_blocked(rl, "alice", t + want[i] - 1), 1);
        assert_int_equal(gx_ratelimit_blocked(rl, "alice", t + want[i]), 0);
        t += want[i];
    }
    /* Another key is not slowed down; a success clears; quiet keys are forgotten. */
    assert_int_equal(gx_ratelimit_blocked(rl, "bob", t), 0);
    gx_ratelimit_clear(rl, "alice");
    assert_int_equal(gx_ratelimit_blocked(rl, "alice", t), 0);
    assert_int_equal(gx_ratelimit_fail(rl, "alice", t), 0);
    for (int i = 0; i < 3; i++)
        gx_ratelimit_fail(rl, "dave", t);
    assert_int_equal(gx_ratelimit_fail(rl, "dave", t + 60000 + 1000),
                     0); /* forgotten: free again */
    /* Remembered keys expire after forget_after. */
    gx_ratelimit_remember(rl, "erin", t);
    assert_true(gx_ratelimit_known(rl, "erin", t + 59000));
    assert_false(gx_ratelimit_known(rl, "erin", t + 61000));
    /* Many keys in a tiny table: bounded, never crashes, recent keys still counted. */
    char key[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "addr:%d", i);
        gx_ratelimit_fail(rl, key, t + i);
    }
    for (int i = 0; i < 4; i++)
        gx_ratelimit_fail(rl, "carol", t + 20000);
    assert_true(gx_ratelimit_blocked(rl, "carol", t + 20001) > 0);
    gx_ratelimit_destroy(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_match),
        cmocka_unit_test(test_static_path_refuses_traversal),
        cmocka_unit_test(test_status_mapping),
        cmocka_unit_test(test_ratelimit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

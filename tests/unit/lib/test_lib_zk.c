/* test_lib_zk.c - the ZooKeeper client's parts that need no server: paths, the
 * election's ordering rule, the fencing arithmetic, arguments, and a client
 * whose server does not answer. (Against a real ZooKeeper:
 * tests/integration/lib/it_zk.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_arena.h"
#include "orr_zk.h"
#include "orr_zk_elect.h"

static void test_path_check(void **state)
{
    (void)state;
    orr_err err;
    const char *good[] = {"/", "/orrery", "/orrery/executors/ex-1", "/a/b.c/..d/n_0000000001"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_int_equal(orr_zk_path_check(good[i], &err), ORR_OK);
    const char *bad[] = {"",      "orrery", "/orrery/", "//orrery",
                         "/a//b", "/a/./b", "/a/..",    "/a/\nb"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        orr_err_clear(&err);
        assert_int_equal(orr_zk_path_check(bad[i], &err), ORR_EINVAL);
        assert_string_equal(err.field, "zk");
        assert_true(err.msg[0] != '\0');
    }
    assert_int_equal(orr_zk_path_check(NULL, &err), ORR_EINVAL);
    char longp[1100];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(orr_zk_path_check(longp, &err), ORR_EINVAL);
}

static void test_path_join_base(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(1024);
    assert_string_equal(orr_zk_path_join(a, "/orrery/executors", "ex-1"), "/orrery/executors/ex-1");
    assert_string_equal(orr_zk_path_join(a, "/", "orrery"), "/orrery");
    assert_string_equal(orr_zk_path_join(a, "/a/", "n_"), "/a/n_");
    assert_string_equal(orr_zk_path_base("/orrery/kepler/election/n_0000000003"), "n_0000000003");
    assert_string_equal(orr_zk_path_base("/orrery"), "orrery");
    assert_string_equal(orr_zk_path_base("/"), "");
    orr_arena_destroy(a);
}

static void test_elect_rank(void **state)
{
    (void)state;
    char a[] = "n_0000000012", b[] = "n_0000000003", c[] = "n_0000000010";
    char *names[] = {a, b, c};
    const char *pred = "x";
    /* the lowest leads, whatever order the server lists them in */
    assert_int_equal(orr_zk_elect_rank(names, 3, "n_0000000003", &pred), 0);
    assert_null(pred);
    /* every other one watches only the one just below it */
    assert_int_equal(orr_zk_elect_rank(names, 3, "n_0000000012", &pred), 2);
    assert_string_equal(pred, "n_0000000010");
    assert_int_equal(orr_zk_elect_rank(names, 3, "n_0000000010", &pred), 1);
    assert_string_equal(pred, "n_0000000003");
    /* ours is gone (the session that made it ended) */
    assert_int_equal(orr_zk_elect_rank(names, 3, "n_0000000011", &pred), -1);
    assert_null(pred);
    assert_int_equal(orr_zk_elect_rank(NULL, 0, "n_0000000001", &pred), -1);
}

static void test_fencing_arithmetic(void **state)
{
    (void)state;
    /* no answered probe: never safe */
    assert_int_equal(orr_zk_safe_until_at(0, 10000), 0);
    /* T = 10 s: margin T/4 = 2.5 s */
    assert_int_equal(orr_zk_safe_until_at(5000, 10000), 5000 + 10000 - 2500);
    /* T = 3 s: margin at least 1 s */
    assert_int_equal(orr_zk_safe_until_at(5000, 3000), 5000 + 3000 - 1000);
    /* T = 1.5 s: margin at most T/2 */
    assert_int_equal(orr_zk_safe_until_at(5000, 1500), 5000 + 1500 - 750);
    /* probes every T/8, within 100 ms .. 1 s */
    assert_int_equal(orr_zk_probe_every_ms(4000), 500);
    assert_int_equal(orr_zk_probe_every_ms(400), 100);
    assert_int_equal(orr_zk_probe_every_ms(40000), 1000);
}

static void test_start_arguments(void **state)
{
    (void)state;
    orr_zk *zk = (orr_zk *)1;
    orr_err err;
    assert_int_equal(orr_zk_start("", NULL, &zk, &err), ORR_EINVAL);
    assert_null(zk);
    assert_int_equal(orr_zk_start(NULL, NULL, &zk, &err), ORR_EINVAL);
    assert_null(zk);
    orr_zk_close(NULL);
    orr_zk_elect_free(NULL);
}

static void noop_listener(void *ctx, orr_zk_event ev, const char *path)
{
    (void)ctx;
    (void)ev;
    (void)path;
}

/* Port 1 of the loopback refuses connections: the client keeps trying. */
static void test_no_server(void **state)
{
    (void)state;
    orr_zk *zk;
    orr_err err;
    orr_zk_opts o = {.session_ms = 4000, .wait_ms = 50};
    assert_int_equal(orr_zk_start("127.0.0.1:1", &o, &zk, &err), ORR_OK);
    assert_int_equal(orr_zk_state_now(zk), ORR_ZK_CONNECTING);
    assert_int_equal(orr_zk_connected(zk), 0);
    assert_int_equal(orr_zk_session_id(zk), 0);
    assert_int_equal(orr_zk_timeout_ms(zk), 4000);
    int t = 0;
    assert_int_equal(orr_zk_safe_until(zk, &t), 0);
    assert_int_equal(t, 4000);
    orr_zk_probe(zk); /* not connected: sends nothing, never blocks */
    /* a malformed path is refused before any wait */
    orr_buf b = ORR_BUF_INIT;
    assert_int_equal(orr_zk_read(zk, "orrery", 0, &b, NULL, &err), ORR_EINVAL);
    /* a good one waits wait_ms for a session, then gives up */
    assert_int_equal(orr_zk_read(zk, "/orrery", 0, &b, NULL, &err), ORR_EUNAVAIL);
    assert_string_equal(err.field, "zk");
    assert_non_null(strstr(err.msg, "127.0.0.1:1"));
    assert_int_equal(orr_zk_wait(zk, 10, &err), ORR_EUNAVAIL);
    assert_int_equal(orr_zk_put(zk, "/orrery/streams/s", "{}", 2, &err), ORR_EUNAVAIL);
    assert_int_equal(b.len, 0);
    /* four listeners at most */
    int ctx[5];
    for (int i = 0; i < 4; i++)
        assert_int_equal(orr_zk_listen(zk, noop_listener, &ctx[i]), ORR_OK);
    assert_int_equal(orr_zk_listen(zk, noop_listener, &ctx[4]), ORR_ETOOBIG);
    orr_zk_unlisten(zk, noop_listener, &ctx[2]);
    /* an election on a handle without a session: no leader, the step waits */
    orr_zk_elect *el;
    assert_int_equal(orr_zk_elect_new(zk, "/orrery/x/election", "me", NULL, NULL, &el, &err),
                     ORR_OK);
    assert_int_equal(orr_zk_elect_step(el, &err), ORR_OK);
    assert_int_equal(orr_zk_elect_epoch(el), 0);
    char node[64];
    assert_string_equal(orr_zk_elect_node(el, node, sizeof node), "");
    orr_zk_elect_free(el);
    assert_int_equal(orr_zk_elect_new(zk, "election", "me", NULL, NULL, &el, &err), ORR_EINVAL);
    assert_int_equal(orr_zk_elect_new(zk, "/e", "", NULL, NULL, &el, &err), ORR_EINVAL);
    /* a manual renew starts a new client at once */
    assert_int_equal(orr_zk_renew(zk, &err), ORR_OK);
    assert_int_equal(orr_zk_state_now(zk), ORR_ZK_CONNECTING);
    orr_zk_close(zk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_check),      cmocka_unit_test(test_path_join_base),
        cmocka_unit_test(test_elect_rank),      cmocka_unit_test(test_fencing_arithmetic),
        cmocka_unit_test(test_start_arguments), cmocka_unit_test(test_no_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_kp_sched_logic.c - the pure parts of keplerd's scheduling (the cycle
 * mapping is tested in test_lib_cycle.c): strong/weak/self verdicts, retry
 * delays, the catch-up plan, executor choice, task spec parsing, cycle
 * detection and the hash map under the index and the store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_cron.h"
#include "kp_deps.h"
#include "kp_dispatch.h"
#include "kp_index.h"
#include "kp_map.h"
#include "kp_materialise.h"
#include "kp_retry.h"
#include "kp_store.h"
#include "orr_tz.h"

static int64_t iso(const char *s)
{
    int64_t t = 0;
    orr_err err;
    if (orr_tz_parse_iso8601(s, &t, &err) != ORR_OK)
        fail_msg("bad date in test: %s", s);
    return t;
}

/* ------------------------------------------------------------ verdicts */

static void test_verdicts(void **state)
{
    (void)state;
    kp_dep_obs ok2[2] = {{KP_ST_SUCCESS, 0}, {KP_ST_MARKED_SUCCESS, 0}};
    kp_dep_obs failed[2] = {{KP_ST_SUCCESS, 0}, {KP_ST_FAILED, 0}};
    kp_dep_obs retrying[1] = {{KP_ST_FAILED, 1}};
    kp_dep_obs running[1] = {{KP_ST_RUNNING, 0}};
    kp_dep_obs absent[2] = {{KP_ST_ABSENT, 0}, {KP_ST_SUCCESS, 0}};
    kp_dep_obs unknown[1] = {{KP_ST_UNKNOWN, 0}};
    assert_int_equal(kp_deps_eval(KP_DEP_STRONG, ok2, 2, 0), KP_DEPS_MET);
    assert_int_equal(kp_deps_eval(KP_DEP_STRONG, failed, 2, 0), KP_DEPS_WAIT);
    assert_int_equal(kp_deps_eval(KP_DEP_STRONG, failed, 2, 1), KP_DEPS_WAIT);
    assert_int_equal(kp_deps_eval(KP_DEP_WEAK, failed, 2, 0), KP_DEPS_MET);
    assert_int_equal(kp_deps_eval(KP_DEP_WEAK, retrying, 1, 0), KP_DEPS_WAIT);
    assert_int_equal(kp_deps_eval(KP_DEP_WEAK, running, 1, 0), KP_DEPS_WAIT);
    assert_int_equal(kp_deps_eval(KP_DEP_WEAK, running, 1, 1), KP_DEPS_MET);
    assert_int_equal(kp_deps_eval(KP_DEP_STRONG, absent, 2, 0), KP_DEPS_MET);
    assert_int_equal(kp_deps_eval(KP_DEP_STRONG, unknown, 1, 0), KP_DEPS_WAIT);
    assert_int_equal(kp_deps_eval(KP_DEP_SELF, failed + 1, 1, 0), KP_DEPS_WAIT);
    assert_int_equal(kp_deps_eval(KP_DEP_SELF, ok2, 1, 0), KP_DEPS_MET);
    assert_int_equal(kp_state_parse("timed_out"), KP_ST_TIMED_OUT);
    assert_int_equal(kp_state_parse("nope"), KP_ST_UNKNOWN);
    assert_string_equal(kp_state_name(KP_ST_MARKED_SUCCESS), "marked_success");
}

/* ------------------------------------------------------------ retries */

static void test_retry(void **state)
{
    (void)state;
    kp_retry_policy fixed = {3, 10000, KP_BACKOFF_FIXED};
    kp_retry_policy expo = {5, 1000, KP_BACKOFF_EXPONENTIAL};
    assert_true(kp_retry_wanted(&fixed, KP_ST_FAILED, 1));
    assert_true(kp_retry_wanted(&fixed, KP_ST_TIMED_OUT, 3));
    assert_false(kp_retry_wanted(&fixed, KP_ST_FAILED, 4));
    assert_false(kp_retry_wanted(&fixed, KP_ST_KILLED, 1));
    assert_false(kp_retry_wanted(&fixed, KP_ST_SUCCESS, 1));
    assert_int_equal(kp_retry_delay_ms(&fixed, 1), 10000);
    assert_int_equal(kp_retry_delay_ms(&fixed, 3), 10000);
    assert_int_equal(kp_retry_delay_ms(&expo, 1), 1000);
    assert_int_equal(kp_retry_delay_ms(&expo, 2), 2000);
    assert_int_equal(kp_retry_delay_ms(&expo, 4), 8000);
    kp_retry_policy huge = {100, 3600000, KP_BACKOFF_EXPONENTIAL};
    assert_int_equal(kp_retry_delay_ms(&huge, 90), KP_RETRY_MAX_DELAY_MS);
    kp_retry_policy none = {0, 0, KP_BACKOFF_FIXED};
    assert_false(kp_retry_wanted(&none, KP_ST_FAILED, 1));
}

/* ------------------------------------------------------------ catch-up */

static void test_catch_up(void **state)
{
    (void)state;
    kp_task t;
    memset(&t, 0, sizeof t);
    orr_err err;
    assert_int_equal(kp_task_parse(&t, "{\"schedule\":\"0 * * * *\",\"catch_up\":\"all\"}", "UTC",
                                   3600000, &err),
                     ORR_OK);
    int64_t out[100], upto, next;
    int64_t from = iso("2024-03-05T02:30:00Z") * 1000, now = iso("2024-03-05T07:10:00Z") * 1000;
    size_t n = kp_materialise_plan(&t, from, now, 0, out, 100, &upto, &next);
    assert_int_equal(n, 5); /* 03,04,05,06,07 */
    assert_int_equal(out[0], iso("2024-03-05T03:00:00Z") * 1000);
    assert_int_equal(out[4], iso("2024-03-05T07:00:00Z") * 1000);
    assert_int_equal(upto, now);
    assert_int_equal(next, iso("2024-03-05T08:00:00Z") * 1000);
    /* at most max per call; the rest on the next call from upto */
    n = kp_materialise_plan(&t, from, now, 0, out, 2, &upto, &next);
    assert_int_equal(n, 2);
    assert_int_equal(upto, iso("2024-03-05T04:00:00Z") * 1000);
    assert_int_equal(next, iso("2024-03-05T05:00:00Z") * 1000);
    /* a horizon drops the oldest cycles */
    n = kp_materialise_plan(&t, from, now, 2 * 3600000, out, 100, &upto, &next);
    assert_int_equal(n, 2); /* 06, 07 */
    assert_int_equal(out[0], iso("2024-03-05T06:00:00Z") * 1000);
    /* latest: only the last missed cycle */
    t.catch_up_all = 0;
    n = kp_materialise_plan(&t, from, now, 0, out, 100, &upto, &next);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], iso("2024-03-05T07:00:00Z") * 1000);
    assert_int_equal(next, iso("2024-03-05T08:00:00Z") * 1000);
    /* nothing due */
    n = kp_materialise_plan(&t, now, now + 1000, 0, out, 100, &upto, &next);
    assert_int_equal(n, 0);
    kp_task_clear(&t);
}

/* A business calendar on materialisation: a skipped day has no fire time, a
 * moved one lands on the next business day once; an unknown calendar holds
 * every fire time; the spec's calendar fields are read and checked. */
static void test_materialise_calendar(void **state)
{
    (void)state;
    kp_task t;
    memset(&t, 0, sizeof t);
    orr_err err;
    assert_int_equal(kp_task_parse(&t,
                                   "{\"schedule\":\"0 6 * * *\",\"calendar\":\"shops\","
                                   "\"calendar_policy\":\"next\"}",
                                   "UTC", 3600000, &err),
                     ORR_OK);
    assert_string_equal(t.calendar, "shops");
    assert_int_equal(t.cal_policy, ORR_CAL_NEXT);
    int64_t out[100], upto, next;
    int64_t from = iso("2026-12-23T12:00:00Z") * 1000, now = iso("2026-12-29T12:00:00Z") * 1000;
    /* not read yet: nothing */
    assert_int_equal(kp_materialise_plan(&t, from, now, 0, out, 100, &upto, &next), 0);
    assert_true(next == INT64_MAX);
    orr_cal *cal;
    assert_int_equal(orr_cal_new("UTC", ORR_CAL_WEEKDAYS_DEFAULT, &cal, &err), ORR_OK);
    int64_t xmas;
    assert_int_equal(orr_cal_parse_date("2026-12-25", &xmas, &err), ORR_OK);
    assert_int_equal(orr_cal_set_day(cal, xmas, ORR_CAL_EXCLUDED, &err), ORR_OK);
    t.cal = cal;
    size_t n = kp_materialise_plan(&t, from, now, 0, out, 100, &upto, &next);
    assert_int_equal(n, 3); /* the 24th; 25th to 27th all on the 28th; the 29th */
    assert_int_equal(out[0], iso("2026-12-24T06:00:00Z") * 1000);
    assert_int_equal(out[1], iso("2026-12-28T06:00:00Z") * 1000);
    assert_int_equal(out[2], iso("2026-12-29T06:00:00Z") * 1000);
    assert_int_equal(next, iso("2026-12-30T06:00:00Z") * 1000);
    t.cal_policy = ORR_CAL_SKIP;
    n = kp_materialise_plan(&t, from, now, 0, out, 100, &upto, &next);
    assert_int_equal(n, 3); /* 24th, 28th, 29th */
    assert_int_equal(out[1], iso("2026-12-28T06:00:00Z") * 1000);
    kp_task_clear(&t);
    orr_cal_free(cal);

    memset(&t, 0, sizeof t);
    assert_int_equal(kp_task_parse(&t, "{\"schedule\":\"0 6 * * *\",\"calendar_policy\":\"x\"}",
                                   "UTC", 3600000, &err),
                     ORR_EINVAL);
    assert_string_equal(err.field, "spec.calendar_policy");
}

/* ------------------------------------------------------------ executors */

static void test_choose(void **state)
{
    (void)state;
    kp_exec ex[3];
    orr_err err;
    const char *a = "{\"id\":\"a\",\"slots\":4,\"labels\":{\"zone\":\"x\",\"gpu\":\"yes\"}}";
    const char *b = "{\"id\":\"b\",\"slots\":8,\"labels\":{\"zone\":\"x\"}}";
    const char *c = "{\"slots\":2}";
    assert_int_equal(kp_exec_parse(&ex[0], "node-a", a, strlen(a), &err), ORR_OK);
    assert_int_equal(kp_exec_parse(&ex[1], "node-b", b, strlen(b), &err), ORR_OK);
    assert_int_equal(kp_exec_parse(&ex[2], "node-c", c, strlen(c), &err), ORR_OK);
    assert_string_equal(ex[2].id, "node-c");
    kp_label zone = {"zone", "x"}, gpu = {"gpu", "yes"}, other = {"zone", "y"};
    /* no labels: fewest used wins; ties by id */
    assert_int_equal(kp_dispatch_choose(ex, 3, 1, NULL, 0), 0);
    ex[0].used = 3;
    ex[1].used = 1;
    ex[2].used = 2;
    assert_int_equal(kp_dispatch_choose(ex, 3, 1, NULL, 0), 1);
    /* labels must all match */
    assert_int_equal(kp_dispatch_choose(ex, 3, 1, &zone, 1), 1);
    kp_label both[2] = {zone, gpu};
    assert_int_equal(kp_dispatch_choose(ex, 3, 1, both, 2), 0);
    assert_int_equal(kp_dispatch_choose(ex, 3, 1, &other, 1), -1);
    /* slots must fit */
    assert_int_equal(kp_dispatch_choose(ex, 3, 2, both, 2), -1);
    assert_int_equal(kp_dispatch_choose(ex, 3, 7, NULL, 0), 1);
    assert_int_equal(kp_dispatch_choose(ex, 3, 8, NULL, 0), -1);
    /* a dead executor is never chosen */
    ex[1].alive = 0;
    assert_int_equal(kp_dispatch_choose(ex, 3, 1, &zone, 1), 0);
    for (int i = 0; i < 3; i++)
        kp_exec_clear(&ex[i]);
    /* bad data names the field */
    assert_int_equal(kp_exec_parse(&ex[0], "n", "{\"slots\":\"x\"}", 13, &err), ORR_EINVAL);
    assert_string_equal(err.field, "executor.slots");
    assert_int_equal(kp_exec_parse(&ex[0], "n", "{\"id\":\"n\"}", 10, &err), ORR_EINVAL);
    assert_string_equal(err.field, "executor.slots");
    assert_int_equal(kp_exec_parse(&ex[0], "n", "[1", 2, &err), ORR_EINVAL);
    const char *badl = "{\"slots\":1,\"labels\":{\"a\":1}}";
    assert_int_equal(kp_exec_parse(&ex[0], "n", badl, strlen(badl), &err), ORR_EINVAL);
    assert_string_equal(err.field, "executor.labels.a");
}

/* ------------------------------------------------------------ specs */

static void test_spec_parse(void **state)
{
    (void)state;
    const char *spec =
        "{\"name\":\"etl.daily\",\"team\":\"data\",\"type\":\"shell\",\"schedule\":\"0 2 * * *\","
        "\"timezone\":\"Europe/Berlin\",\"catch_up\":\"latest\",\"upstreams\":["
        "{\"kind\":\"strong\",\"task\":\"a\"},{\"kind\":\"weak\",\"task\":\"b\",\"cycle\":\"same\"}"
        ","
        "{\"kind\":\"self\"}],\"pools\":{\"db\":2},\"slots\":3,\"max_parallel\":2,"
        "\"priority\":5,\"retries\":{\"max\":2,\"delay\":\"30s\",\"backoff\":\"exponential\"},"
        "\"timeout\":\"90m\",\"labels\":{\"zone\":\"x\"},\"config\":{\"command\":\"true\"}}";
    kp_task t;
    memset(&t, 0, sizeof t);
    orr_err err;
    assert_int_equal(kp_task_parse(&t, spec, "UTC", 3 * 3600000, &err), ORR_OK);
    assert_string_equal(t.name, "etl.daily");
    assert_true(t.has_cron);
    assert_string_equal(orr_tz_name(t.tz), "Europe/Berlin");
    assert_int_equal(t.catch_up_all, 0);
    assert_int_equal(t.n_deps, 3);
    assert_int_equal(t.deps[0].kind, KP_DEP_STRONG);
    assert_string_equal(t.deps[0].task, "a");
    assert_int_equal(t.deps[1].kind, KP_DEP_WEAK);
    assert_int_equal(t.deps[1].cycle_same, 1);
    assert_int_equal(t.deps[2].kind, KP_DEP_SELF);
    assert_int_equal(t.n_pools, 1);
    assert_string_equal(t.pools[0].pool, "db");
    assert_int_equal(t.pools[0].tokens, 2);
    assert_int_equal(t.slots, 3);
    assert_int_equal(t.max_parallel, 2);
    assert_int_equal(t.priority, 5);
    assert_int_equal(t.retry.max, 2);
    assert_int_equal(t.retry.delay_ms, 30000);
    assert_int_equal(t.retry.backoff, KP_BACKOFF_EXPONENTIAL);
    assert_int_equal(t.timeout_ms, 90 * 60000);
    assert_int_equal(t.n_labels, 1);
    kp_task_clear(&t);

    /* defaults */
    assert_int_equal(kp_task_parse(&t, "{\"name\":\"m\"}", "UTC", 3 * 3600000, &err), ORR_OK);
    assert_false(t.has_cron);
    assert_int_equal(t.timeout_ms, 3 * 3600000);
    assert_int_equal(t.slots, 1);
    assert_int_equal(t.catch_up_all, 1);
    kp_task_clear(&t);

    struct {
        const char *spec, *field;
    } bad[] = {
        {"{\"schedule\":\"0 25 * * *\"}", "spec.schedule"},
        {"{\"timezone\":\"Mars/Olympus\"}", "spec.timezone"},
        {"{\"timeout\":\"soon\"}", "spec.timeout"},
        {"{\"retries\":{\"delay\":\"5y\"}}", "spec.retries.delay"},
        {"{\"retries\":{\"backoff\":\"random\"}}", "spec.retries.backoff"},
        {"{\"catch_up\":\"some\"}", "spec.catch_up"},
        {"{\"upstreams\":[{\"kind\":\"strong\"}]}", "spec.upstreams[0].task"},
        {"{\"upstreams\":[{\"kind\":\"sideways\",\"task\":\"a\"}]}", "spec.upstreams[0].kind"},
        {"{\"pools\":{\"db\":0}}", "spec.pools.db"},
        {"{\"slots\":0}", "spec.slots"},
        {"{\"labels\":{\"a\":3}}", "spec.labels.a"},
        {"[]", "spec"},
        {"{", "spec"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&t, 0, sizeof t);
        assert_int_equal(kp_task_parse(&t, bad[i].spec, "UTC", 1000, &err), ORR_EINVAL);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("spec %s: field %s, want %s", bad[i].spec, err.field, bad[i].field);
    }
}

/* ------------------------------------------------------------ cycles in the DAG */

static kp_task mk(int64_t id, const char *name, const char *spec)
{
    kp_task t;
    memset(&t, 0, sizeof t);
    t.id = id;
    snprintf(t.name, sizeof t.name, "%s", name);
    orr_err err;
    if (kp_task_parse(&t, spec, "UTC", 1000, &err) != ORR_OK)
        fail_msg("spec %s: %s %s", spec, err.field, err.msg);
    return t;
}

static void test_index_cycles(void **state)
{
    (void)state;
    kp_index *ix = kp_index_create();
    kp_task t = mk(1, "a", "{\"upstreams\":[{\"kind\":\"strong\",\"task\":\"c\"}]}");
    kp_index_put(ix, &t);
    t = mk(2, "b", "{\"upstreams\":[{\"kind\":\"strong\",\"task\":\"a\"}]}");
    kp_index_put(ix, &t);
    t = mk(3, "c", "{\"upstreams\":[{\"kind\":\"weak\",\"task\":\"b\"}]}");
    kp_index_put(ix, &t);
    t = mk(4, "d",
           "{\"upstreams\":[{\"kind\":\"strong\",\"task\":\"a\"},"
           "{\"kind\":\"strong\",\"task\":\"ghost\"}]}");
    kp_index_put(ix, &t);
    char msg[200];
    assert_int_equal(kp_index_link(ix, msg, sizeof msg), 3);
    /* the cycle is named, every node on it */
    assert_non_null(strstr(msg, "a"));
    assert_non_null(strstr(msg, "b"));
    assert_non_null(strstr(msg, "c"));
    assert_non_null(strstr(msg, " -> "));
    assert_true(kp_index_get(ix, 1)->in_cycle);
    assert_false(kp_index_get(ix, 4)->in_cycle);
    /* downstream lists and resolution */
    kp_task *a = kp_index_get(ix, 1);
    assert_int_equal(a->n_downstream, 2);
    kp_task *d = kp_index_get(ix, 4);
    assert_int_equal(d->deps[0].upstream_id, 1);
    assert_int_equal(d->deps[1].upstream_id, 0); /* unresolved */
    /* break the cycle: c loses its upstream */
    t = mk(3, "c", "{}");
    kp_index_put(ix, &t);
    assert_int_equal(kp_index_link(ix, msg, sizeof msg), 0);
    assert_false(kp_index_get(ix, 1)->in_cycle);
    kp_index_remove(ix, 2);
    assert_null(kp_index_get(ix, 2));
    assert_int_equal(kp_index_count(ix), 3);
    assert_non_null(kp_index_by_name(ix, "d"));
    kp_index_destroy(ix);

    /* the explicit-graph form names the path */
    size_t edges[3][2] = {{0, 1}, {1, 2}, {2, 0}}, path[4], len;
    assert_int_equal(kp_dag_find_cycle(3, (const size_t(*)[2])edges, 3, path, &len), 1);
    assert_int_equal(len, 4);
    assert_int_equal(path[0], path[3]);
    size_t dag[2][2] = {{0, 1}, {1, 2}};
    assert_int_equal(kp_dag_find_cycle(3, (const size_t(*)[2])dag, 2, path, &len), 0);
}

/* ------------------------------------------------------------ map and store */

static void test_map_and_store(void **state)
{
    (void)state;
    kp_map m = KP_MAP_INIT;
    for (int64_t i = 1; i <= 20000; i++)
        kp_map_put(&m, i * 7919, (void *)(intptr_t)i);
    for (int64_t i = 1; i <= 20000; i += 2)
        assert_int_equal((intptr_t)kp_map_del(&m, i * 7919), i);
    assert_int_equal(m.len, 10000);
    for (int64_t i = 1; i <= 20000; i++) {
        void *v = kp_map_get(&m, i * 7919);
        if (i % 2)
            assert_null(v);
        else
            assert_int_equal((intptr_t)v, i);
    }
    kp_map_free(&m);

    kp_store *s = kp_store_create();
    kp_inst *a = kp_store_add(s, 0, 5, 1000, KP_ST_ABSENT);
    assert_true(a->id < 0);
    assert_ptr_equal(kp_store_by_key(s, 5, 1000), a);
    kp_inst *r = kp_store_add(s, 42, 5, 1000, KP_ST_WAITING);
    assert_int_equal(r->id, 42);
    assert_int_equal(r->state, KP_ST_WAITING);
    assert_ptr_equal(kp_store_by_key(s, 5, 1000), r); /* the marker was replaced */
    assert_int_equal(kp_store_count(s), 1);
    assert_ptr_equal(kp_store_add(s, 42, 5, 1000, KP_ST_READY), r);
    for (int64_t i = 100; i < 10100; i++)
        kp_store_add(s, i, 6, i * 1000, KP_ST_WAITING);
    assert_int_equal(kp_store_count(s), 10001);
    size_t pos = 0, seen = 0;
    while (kp_store_next(s, &pos))
        seen++;
    assert_int_equal(seen, 10001);
    kp_store_remove(s, kp_store_get(s, 500));
    assert_null(kp_store_get(s, 500));
    assert_null(kp_store_by_key(s, 6, 500000));
    assert_ptr_equal(kp_intern("exec-1"), kp_intern("exec-1"));
    assert_string_equal(kp_intern(NULL), "");
    kp_store_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdicts),     cmocka_unit_test(test_retry),
        cmocka_unit_test(test_catch_up),     cmocka_unit_test(test_materialise_calendar),
        cmocka_unit_test(test_choose),       cmocka_unit_test(test_spec_parse),
        cmocka_unit_test(test_index_cycles), cmocka_unit_test(test_map_and_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

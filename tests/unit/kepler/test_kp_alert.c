/*
 * test_kp_alert.c - keplerd's alert evaluation without I/O: rule matching
 * by scope (task, workflow, team, executor, "*") and event, params, what a
 * transition means (a final failure, a retry, a timeout, a kill, a
 * recovery), the dedup keys, the deadline heap's order, and the data-unit
 * deadlines (which buckets are due, what a unit's state raises).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kp_alert.h"
#include "kp_deps.h"
#include "kp_index.h"

static void add(kp_alert_rules *rs, int64_t id, const char *kind, const char *scope,
                const char *ev1, const char *ev2, const char *params)
{
    const char *evs[2] = {ev1, ev2};
    orr_err err;
    assert_int_equal(
        kp_alert_rules_add(rs, id, "r", "t", kind, scope, NULL, evs, ev2 ? 2 : 1, params, &err),
        ORR_OK);
}

static void test_match_scopes(void **state)
{
    (void)state;
    kp_alert_rules *rs = kp_alert_rules_create();
    add(rs, 1, "task", "load", "failed", NULL, NULL);
    add(rs, 2, "workflow", "daily", "failed", "retried", NULL);
    add(rs, 3, "team", "fin", "killed", NULL, NULL);
    add(rs, 4, "task", "*", "recovered", NULL, NULL);
    add(rs, 5, "executor", "*", "executor_lost", NULL, NULL);
    add(rs, 6, "task", "other", "failed", "no_such_event", "{\"each_attempt\":true}");
    assert_int_equal(kp_alert_rules_count(rs), 6);
    const char *wfs[] = {"hourly", "daily"};
    kp_alert_subject sub = {.task = "load", .team = "fin", .workflows = wfs, .n_workflows = 2};
    const kp_alert_rule *out[8];
    assert_int_equal(kp_alert_match(rs, KP_AE_FAILED, &sub, out, 8), 2);
    assert_int_equal(out[0]->id, 1);
    assert_int_equal(out[1]->id, 2);
    assert_int_equal(kp_alert_match(rs, KP_AE_RETRIED, &sub, out, 8), 1);
    assert_int_equal(out[0]->id, 2);
    assert_int_equal(kp_alert_match(rs, KP_AE_KILLED, &sub, out, 8), 1);
    assert_int_equal(kp_alert_match(rs, KP_AE_RECOVERED, &sub, out, 8), 1);
    assert_int_equal(out[0]->id, 4);
    /* a task of another team and workflow */
    kp_alert_subject other = {.task = "other", .team = "ops"};
    assert_int_equal(kp_alert_match(rs, KP_AE_FAILED, &other, out, 8), 1);
    assert_int_equal(out[0]->id, 6);
    assert_true(out[0]->each_attempt);
    assert_int_equal(kp_alert_match(rs, KP_AE_KILLED, &other, out, 8), 0);
    /* executors match executor rules only */
    kp_alert_subject ex = {.executor = "host-1"};
    assert_int_equal(kp_alert_match(rs, KP_AE_EXECUTOR_LOST, &ex, out, 8), 1);
    assert_int_equal(kp_alert_match(rs, KP_AE_EXECUTOR_LOST, &sub, out, 8), 0);
    /* no rule for an event: nothing, and the union says so */
    assert_false(kp_alert_rules_events(rs) & KP_AE_BIT(KP_AE_DEADLINE_FINISH));
    assert_int_equal(kp_alert_match(rs, KP_AE_DEADLINE_FINISH, &sub, out, 8), 0);
    /* more matches than room: counted, max written */
    assert_int_equal(kp_alert_match(rs, KP_AE_FAILED, &sub, out, 1), 2);
    kp_alert_rules_clear(rs);
    assert_int_equal(kp_alert_match(rs, KP_AE_FAILED, &sub, out, 8), 0);
    kp_alert_rules_destroy(rs);
}

static void test_rule_refusals(void **state)
{
    (void)state;
    kp_alert_rules *rs = kp_alert_rules_create();
    const char *evs[] = {"failed"};
    orr_err err;
    assert_int_equal(kp_alert_rules_add(rs, 1, "r", "t", "planet", "*", NULL, evs, 1, NULL, &err),
                     ORR_EINVAL);
    assert_string_equal(err.field, "scope_kind");
    assert_int_equal(kp_alert_rules_add(rs, 1, "r", "t", "task", "*", NULL, evs, 1, "[1]", &err),
                     ORR_EINVAL);
    assert_string_equal(err.field, "params");
    assert_int_equal(kp_alert_rules_add(rs, 1, "r", "t", "task", "*", NULL, evs, 1,
                                        "{\"pool_starved_minutes\":2,\"dirty_rows\":50}", &err),
                     ORR_OK);
    const kp_alert_rule *out[1];
    kp_alert_subject sub = {.task = "x"};
    assert_int_equal(kp_alert_match(rs, KP_AE_FAILED, &sub, out, 1), 1);
    assert_int_equal(out[0]->pool_starved_ms, 120000);
    assert_int_equal(out[0]->dirty_rows, 50);
    assert_string_equal(out[0]->severity, "warning");
    kp_alert_rules_destroy(rs);
}

static void test_units(void **state)
{
    (void)state;
    /* stream rules: by name or "*", their deadline param (60 min by default) */
    kp_alert_rules *rs = kp_alert_rules_create();
    add(rs, 1, "stream", "clicks", "unit_late", "unit_unreconciled",
        "{\"unit_deadline_minutes\":0}");
    add(rs, 2, "stream", "*", "unit_unreconciled", NULL, NULL);
    add(rs, 3, "task", "*", "unit_late", NULL, NULL);
    const kp_alert_rule *out[4];
    kp_alert_subject clicks = {.stream = "clicks"}, views = {.stream = "views"};
    assert_int_equal(kp_alert_match(rs, KP_AE_UNIT_LATE, &clicks, out, 4), 1);
    assert_int_equal(out[0]->id, 1);
    assert_int_equal(out[0]->unit_deadline_ms, 0);
    assert_int_equal(kp_alert_match(rs, KP_AE_UNIT_UNRECONCILED, &clicks, out, 4), 2);
    assert_int_equal(kp_alert_match(rs, KP_AE_UNIT_LATE, &views, out, 4), 0);
    assert_int_equal(kp_alert_match(rs, KP_AE_UNIT_UNRECONCILED, &views, out, 4), 1);
    assert_int_equal(out[0]->unit_deadline_ms, 3600000);
    kp_alert_rules_destroy(rs);

    /* what a unit raises once its deadline passed */
    assert_int_equal(kp_alert_unit_verdict(0, 0, 0, 0), KP_AE_UNIT_LATE);
    assert_int_equal(kp_alert_unit_verdict(1, 0, 0, 1), KP_AE_UNIT_LATE); /* empty */
    assert_int_equal(kp_alert_unit_verdict(1, 10, 0, 0), KP_AE_UNIT_UNRECONCILED);
    assert_int_equal(kp_alert_unit_verdict(1, 0, 1, 0), KP_AE_UNIT_UNRECONCILED);
    assert_int_equal(kp_alert_unit_verdict(1, 10, 1, 1), -1);

    char b[160];
    assert_string_equal(
        kp_alert_unit_key(b, sizeof b, KP_AE_UNIT_LATE, "clicks", "b1", "login", 900000),
        "unit_late:clicks:b1:login:900000");
    assert_string_equal(
        kp_alert_unit_key(b, sizeof b, KP_AE_UNIT_UNRECONCILED, "clicks", "b1", "pay", 0),
        "unit_unreconciled:clicks:b1:pay:0");

    /* 15-minute buckets, deadline 10 min, now 10:32 (ms from midnight):
     * the 10:00 bucket ends 10:15, due 10:25: the last due; 10:15's is 10:40 */
    const int64_t M = 60000, day = 86400000, base = 100 * day;
    int64_t first = -1, last = -1, next = -1;
    size_t n = kp_alert_unit_window(900, 0, 10 * M, base + 632 * M, day, &first, &last, &next);
    assert_int_equal(last, base + 600 * M);
    assert_int_equal(next, base + 640 * M);
    /* a day of deadlines: 96 buckets, the first due after now - 1 day */
    assert_int_equal(n, 96);
    assert_int_equal(first, last - 95 * 15 * M);
    assert_true(first + 15 * M + 10 * M > base + 632 * M - day);
    assert_true(first + 10 * M <= base + 632 * M - day);
    /* exactly at a deadline: that bucket is due */
    n = kp_alert_unit_window(900, 0, 10 * M, base + 640 * M, day, &first, &last, &next);
    assert_int_equal(last, base + 615 * M);
    assert_int_equal(next, base + 655 * M);
    /* a zone 5:30 east: hour buckets start at hh:30 UTC */
    n = kp_alert_unit_window(3600, 19800, 0, base + 632 * M, 2 * 3600000, &first, &last, &next);
    assert_int_equal(last, base + 570 * M); /* 09:30-10:30, due 10:30 */
    assert_int_equal(first, base + 510 * M);
    assert_int_equal(n, 2);
    assert_int_equal(next, base + 630 * M + 60 * M);
    /* a window shorter than the time since the last deadline: none */
    first = last = -1;
    assert_int_equal(
        kp_alert_unit_window(86400, 0, 0, base + 632 * M, 60 * M, &first, &last, &next), 0);
    assert_int_equal(first, -1);
    assert_int_equal(next, base + day);
}

static void test_classify(void **state)
{
    (void)state;
    /* failed with a retry to come: retried; the last: failed */
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_FAILED, 1, 1, 0),
                     KP_AE_BIT(KP_AE_RETRIED));
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_FAILED, 3, 0, 0),
                     KP_AE_BIT(KP_AE_FAILED));
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_TIMED_OUT, 1, 0, 0),
                     KP_AE_BIT(KP_AE_TIMED_OUT) | KP_AE_BIT(KP_AE_FAILED));
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_KILLED, 1, 1, 0),
                     KP_AE_BIT(KP_AE_KILLED));
    /* success: a recovery after a failed attempt or a failed run only */
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_SUCCESS, 1, 0, 0), 0);
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_SUCCESS, 2, 0, 0),
                     KP_AE_BIT(KP_AE_RECOVERED));
    assert_int_equal(kp_alert_classify(KP_ST_RUNNING, KP_ST_SUCCESS, 1, 0, 1),
                     KP_AE_BIT(KP_AE_RECOVERED));
    assert_int_equal(kp_alert_classify(KP_ST_READY, KP_ST_DISPATCHED, 1, 0, 1), 0);
}

static void test_keys(void **state)
{
    (void)state;
    char b[160];
    assert_string_equal(kp_alert_key(b, sizeof b, KP_AE_FAILED, KP_AS_TASK, "load", 7, 1000, 99),
                        "failed:task:7:1000");
    assert_string_equal(
        kp_alert_key(b, sizeof b, KP_AE_FAILED, KP_AS_WORKFLOW, "daily", 7, 1000, 99),
        "failed:workflow:daily:1000");
    assert_string_equal(kp_alert_key(b, sizeof b, KP_AE_RETRIED, KP_AS_TEAM, "fin", 7, 5, 99),
                        "retried:team:fin:5");
    assert_string_equal(
        kp_alert_key(b, sizeof b, KP_AE_DEADLINE_FINISH, KP_AS_WORKFLOW, "daily", 7, 5, 99),
        "deadline_finish:99");
    assert_string_equal(
        kp_alert_key(b, sizeof b, KP_AE_EXECUTOR_LOST, KP_AS_EXECUTOR, "h1", 0, 42, 0),
        "executor_lost:h1:42");
    assert_string_equal(kp_alert_key(b, 8, KP_AE_FAILED, KP_AS_TASK, NULL, 7, 1000, 99), "failed:");
}

static void test_heap(void **state)
{
    (void)state;
    kp_dl_heap h = {0};
    assert_int_equal(kp_dl_next(&h), INT64_MAX);
    /* pushed in a scrambled order, popped by due time */
    for (int i = 0; i < 200; i++)
        kp_dl_push(&h, (int64_t)((i * 37) % 200) * 10, i + 1, i & 1);
    kp_dl_entry e;
    assert_int_equal(kp_dl_pop_due(&h, -1, &e), 0);
    int64_t last = -1;
    size_t n = 0;
    while (kp_dl_pop_due(&h, 995, &e)) {
        assert_true(e.due_ms >= last);
        assert_true(e.due_ms <= 995);
        last = e.due_ms;
        n++;
    }
    assert_int_equal(n, 100);
    assert_int_equal(kp_dl_next(&h), 1000);
    kp_dl_clear(&h);
    assert_int_equal(kp_dl_pop_due(&h, INT64_MAX, &e), 0);
    kp_dl_free(&h);
}

static void test_spec_deadlines(void **state)
{
    (void)state;
    kp_task t;
    orr_err err;
    memset(&t, 0, sizeof t);
    assert_int_equal(kp_task_parse(&t,
                                   "{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\","
                                   "\"deadlines\":{\"start_by\":\"30m\",\"finish_by\":\"07:30\"},"
                                   "\"config\":{\"command\":\"x\"}}",
                                   "UTC", 3600000, &err),
                     ORR_OK);
    assert_int_equal(t.start_by.kind, ORR_DL_AFTER);
    assert_int_equal(t.start_by.ms, 30 * 60000);
    assert_int_equal(t.finish_by.kind, ORR_DL_CLOCK);
    kp_task_clear(&t);
    assert_int_equal(kp_task_parse(&t,
                                   "{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\","
                                   "\"config\":{\"command\":\"x\"}}",
                                   "UTC", 3600000, &err),
                     ORR_OK);
    assert_int_equal(t.start_by.kind, ORR_DL_NONE);
    assert_int_equal(t.finish_by.kind, ORR_DL_NONE);
    kp_task_clear(&t);
    assert_int_equal(kp_task_parse(&t,
                                   "{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\","
                                   "\"deadlines\":{\"finish_by\":\"25:00\"},"
                                   "\"config\":{\"command\":\"x\"}}",
                                   "UTC", 3600000, &err),
                     ORR_EINVAL);
    assert_string_equal(err.field, "spec.deadlines.finish_by");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_scopes), cmocka_unit_test(test_rule_refusals),
        cmocka_unit_test(test_classify),     cmocka_unit_test(test_keys),
        cmocka_unit_test(test_heap),         cmocka_unit_test(test_spec_deadlines),
        cmocka_unit_test(test_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_gx_instance_json.c - the instance list written without a jansson tree
 * (gx_instances_write) gives the very bytes the tree gave: gx_instance_json
 * and gx_paused_mark of each row, the {"items", "next_page_token"} object,
 * dumped by orr_json_dump_buf, on
 *   - rows chosen for their edges: quotes, backslashes, every control
 *     character, UTF-8 of 2-4 bytes, invalid UTF-8 (the key left out), empty
 *     and absent strings, times at 0, before 1970, the last second of 9999
 *     and after it, negative and extreme integers, paused tasks;
 *   - rows that carry what only GetInstance carries (params, upstreams);
 *   - 3,000 rows of random bytes and numbers (fixed seed);
 * plus a few answers spelled out, so the shape itself is pinned too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gx_app.h"
#include "orr_json.h"

/* The list answer as galaxyd built it before (a jansson tree, dumped). */
static char *old_list(const HL(ListInstancesResponse) * rs, const json_t *paused)
{
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_instances; i++)
        json_array_append_new(items, gx_instance_json(rs->instances[i]));
    gx_paused_mark_all(items, paused, "task_id");
    json_t *out = json_object();
    json_object_set_new(out, "items", items);
    json_object_set_new(out, "next_page_token",
                        rs->next_page_token && *rs->next_page_token
                            ? json_string(rs->next_page_token)
                            : json_null());
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(out, &b);
    json_decref(out);
    return orr_buf_detach(&b, NULL);
}

static char *new_list(const HL(ListInstancesResponse) * rs, const json_t *paused)
{
    orr_buf b = ORR_BUF_INIT;
    orr_buf_append_str(&b, "x"); /* written after what the buffer holds */
    gx_instances_write(&b, rs, paused);
    char *s = strdup(b.data + 1);
    orr_buf_free(&b);
    return s;
}

static void same(const HL(ListInstancesResponse) * rs, const json_t *paused)
{
    char *a = old_list(rs, paused), *b = new_list(rs, paused);
    if (strcmp(a, b) != 0)
        fail_msg("tree:   %s\nwriter: %s", a, b);
    free(a);
    free(b);
}

static json_t *paused_map(void)
{
    json_t *m = json_object();
    json_object_set_new(m, "7",
                        json_pack("{s:s,s:s,s:s}", "workflow", "etl \"nightly\"", "by", "user:ann",
                                  "at", "2026-11-30T10:00:00Z"));
    json_object_set_new(m, "-3", json_pack("{s:s,s:s,s:n}", "workflow", "w", "by", "", "at"));
    return m;
}

static HL(Instance)
    row(int64_t id, int64_t task_id, const char *name, const char *reason, const char *executor)
{
    HL(Instance) in = HL_INIT(INSTANCE);
    in.id = id;
    in.task_id = task_id;
    in.task_name = (char *)name;
    in.reason = (char *)reason;
    in.executor = (char *)executor;
    return in;
}

static void test_edges(void **state)
{
    (void)state;
    char ctl[40];
    for (int i = 0; i < 32; i++)
        ctl[i] = (char)(i + 1 < 32 ? i + 1 : 0x7f);
    ctl[32] = 0;
    static char empty[] = "";
    HL(Instance) r[16];
    r[0] = row(1, 7, "etl.\"daily\"\\x", "exit 1\nsee log\t(line 3)\r\f\b", "ex-1");
    r[0].state = HL_STATE(FAILED);
    r[0].has_exit_code = 1;
    r[0].exit_code = -9;
    r[0].schedule_time_ms = 1767225600000;
    r[0].created_at_ms = 1;
    r[0].updated_at_ms = 951782400999; /* 2000-02-29 */
    r[0].started_at_ms = -5;
    r[0].finished_at_ms = 253402300799999; /* 9999-12-31T23:59:59 */
    r[0].run_now = 1;
    r[1] = row(INT64_MAX, -3, ctl, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 </script>", empty);
    r[1].backfill_id = INT64_MIN;
    r[1].backfill_cycle_ms = 253402300800000; /* year 10000 */
    r[1].backfill_cycles = -1;
    r[1].attempt = INT32_MAX;
    r[1].priority = INT32_MIN;
    r[1].task_version = 3;
    r[1].state = (HL(InstanceState))99;
    r[1].ignore_upstreams = 1;
    r[2] = row(3, 7, NULL, NULL, NULL);
    r[3] = row(4, 8, "bad \xc3(", "overlong \xc0\xaf", "surrogate \xed\xa0\x80");
    r[4] = row(5, 8, "cut \xe2\x82", "big \xf4\x90\x80\x80", "lone \x80");
    r[5] = row(6, 8, "ok", "f5 \xf5\x80\x80\x80", "\xf0\x8f\xbf\xbf");
    r[6] = row(7, 7, "p", "", "ex");
    r[6].params_json = "{\"day\":\"2026-01-01\"}";
    r[7] = row(8, 7, "u", "r", "");
    HL(DepState) d = HL_INIT(DEP_STATE), *dp = &d;
    d.task_id = 2;
    d.task_name = "up";
    d.kind = "same_cycle";
    d.schedule_time_ms = 1767225600000;
    d.state = HL_STATE(SUCCESS);
    r[7].n_upstreams = 1;
    r[7].upstreams = &dp;
    HL(Instance) * ptrs[16];
    for (int i = 0; i < 8; i++)
        ptrs[i] = &r[i];
    HL(ListInstancesResponse) rs = HL_INIT(LIST_INSTANCES_RESPONSE);
    json_t *paused = paused_map(), *none = json_object();
    for (size_t n = 0; n <= 8; n++) {
        rs.n_instances = n;
        rs.instances = ptrs;
        rs.next_page_token = empty;
        same(&rs, paused);
        same(&rs, none);
        same(&rs, NULL);
        rs.next_page_token = "eyJrIjpbIjEyIl19";
        same(&rs, paused);
        rs.next_page_token = "bad \xff";
        same(&rs, paused);
        rs.next_page_token = NULL;
        same(&rs, paused);
    }
    json_decref(paused);
    json_decref(none);
}

/* The shape itself, spelled out. */
static void test_spelled_out(void **state)
{
    (void)state;
    HL(Instance) in = row(12, 7, "a\"b\\c", "x\n\x01\x1f\xc3\xa9/", "");
    in.task_version = 2;
    in.schedule_time_ms = 1767229200000;
    in.state = HL_STATE(SUCCESS);
    in.attempt = 1;
    in.has_exit_code = 1;
    in.backfill_id = 4;
    in.backfill_cycle_ms = 1767225600500;
    in.backfill_cycles = 2;
    HL(Instance) *p = &in;
    HL(ListInstancesResponse) rs = HL_INIT(LIST_INSTANCES_RESPONSE);
    rs.n_instances = 1;
    rs.instances = &p;
    rs.next_page_token = "t";
    json_t *paused = paused_map();
    char *got = new_list(&rs, paused);
    assert_string_equal(
        got,
        "{\"items\":[{\"id\":12,\"task_id\":7,\"task_name\":\"a\\\"b\\\\c\",\"task_version\":2,"
        "\"schedule_time\":\"2026-01-01T01:00:00Z\",\"state\":\"success\",\"attempt\":1,"
        "\"executor\":null,\"priority\":0,\"created_at\":null,\"updated_at\":null,"
        "\"started_at\":null,\"finished_at\":null,"
        "\"reason\":\"x\\n\\u0001\\u001F\xc3\xa9/\",\"exit_code\":0,\"run_now\":false,"
        "\"ignore_upstreams\":false,\"backfill\":{\"id\":4,\"cycle\":\"2026-01-01T00:00:00Z\","
        "\"max_cycles\":2},\"paused\":{\"workflow\":\"etl \\\"nightly\\\"\",\"by\":\"user:ann\","
        "\"at\":\"2026-11-30T10:00:00Z\"}}],\"next_page_token\":\"t\"}");
    free(got);
    rs.n_instances = 0;
    rs.next_page_token = "";
    got = new_list(&rs, paused);
    assert_string_equal(got, "{\"items\":[],\"next_page_token\":null}");
    free(got);
    same(&rs, paused);
    same(&rs, NULL);
    json_decref(paused);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Random bytes, biased towards the ones that need care. */
static char *rnd_str(char *buf, size_t cap)
{
    static const char *const pieces[] = {"\"",
                                         "\\",
                                         "\n",
                                         "\x01",
                                         "\x7f",
                                         "\xc3\xa9",
                                         "\xe2\x82\xac",
                                         "\xf0\x9f\x98\x80",
                                         "\xc3",
                                         "\xed\xa0\x80",
                                         "\xf4\x90\x80\x80",
                                         "\x80",
                                         "abc",
                                         "/",
                                         " ",
                                         "%_"};
    size_t n = rnd() % 12, len = 0;
    if (rnd() % 50 == 0)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *p;
        char one[2] = {(char)(1 + rnd() % 255), 0};
        p = rnd() % 4 ? pieces[rnd() % (sizeof pieces / sizeof pieces[0])] : one;
        size_t pl = strlen(p);
        if (len + pl + 1 > cap)
            break;
        memcpy(buf + len, p, pl);
        len += pl;
    }
    buf[len] = 0;
    return buf;
}

static int64_t rnd_ms(void)
{
    switch (rnd() % 6) {
    case 0:
        return 0;
    case 1:
        return -(int64_t)(rnd() % 100000000000);
    case 2:
        return (int64_t)(rnd() % 10000000000000000); /* to year ~318,857 */
    default:
        return (int64_t)(rnd() % 253402300800000);
    }
}

static void test_random(void **state)
{
    (void)state;
    enum { N = 30, ROUNDS = 100 };
    static char strs[N][4][64];
    HL(Instance) r[N], *ptrs[N];
    json_t *paused = paused_map();
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < N; i++) {
            r[i] = row((int64_t)rnd(), (int64_t)(rnd() % 10) - 3, rnd_str(strs[i][0], 64),
                       rnd_str(strs[i][1], 64), rnd_str(strs[i][2], 64));
            r[i].task_version = (int32_t)rnd();
            r[i].schedule_time_ms = rnd_ms();
            r[i].state = (HL(InstanceState))(rnd() % 12);
            r[i].attempt = (int32_t)rnd();
            r[i].priority = (int32_t)rnd();
            r[i].created_at_ms = rnd_ms();
            r[i].updated_at_ms = rnd_ms();
            r[i].started_at_ms = rnd_ms();
            r[i].finished_at_ms = rnd_ms();
            r[i].has_exit_code = (protobuf_c_boolean)(rnd() % 2);
            r[i].exit_code = (int32_t)rnd();
            r[i].run_now = (protobuf_c_boolean)(rnd() % 2);
            r[i].ignore_upstreams = (protobuf_c_boolean)(rnd() % 2);
            r[i].backfill_id = rnd() % 2 ? (int64_t)rnd() : 0;
            r[i].backfill_cycle_ms = rnd_ms();
            r[i].backfill_cycles = (int32_t)rnd();
            ptrs[i] = &r[i];
        }
        HL(ListInstancesResponse) rs = HL_INIT(LIST_INSTANCES_RESPONSE);
        rs.n_instances = N;
        rs.instances = ptrs;
        rs.next_page_token = rnd_str(strs[0][3], 64);
        same(&rs, paused);
        same(&rs, NULL);
    }
    json_decref(paused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_spelled_out),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

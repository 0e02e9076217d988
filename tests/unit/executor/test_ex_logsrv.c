/*
 * test_ex_logsrv.c - the live log server over real HTTP (libcurl): token,
 * path validation, offsets, following a growing log until its attempt ends.
 * (The copy of a finished log to the blob store is lib/orr_blob's put_file:
 * tests/unit/lib/test_lib_blob.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "ex_logsrv.h"
#include "orr_buf.h"

#define TOKEN "s3cret-token"

static char g_dir[128];
static ex_logsrv *g_srv;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    orr_buf_append(ud, p, sz * n);
    return sz * n;
}

/* GET path with the token (or tok); returns the status, body into out. */
static long get(const char *path, const char *tok, orr_buf *out)
{
    CURL *c = curl_easy_init();
    char url[256], auth[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", ex_logsrv_port(g_srv), path);
    struct curl_slist *h = NULL;
    if (tok) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
        h = curl_slist_append(h, auth);
    }
    orr_buf_reset(out);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

static void write_log(int64_t inst, int attempt, const char *text, const char *mode)
{
    char path[300];
    ex_log_path(path, sizeof path, g_dir, inst, attempt);
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_token_is_required(void **state)
{
    (void)state;
    write_log(1, 1, "secret output\n", "w");
    orr_buf b = ORR_BUF_INIT;
    assert_int_equal(get("/logs/1/1", NULL, &b), 401);
    assert_null(strstr(orr_buf_cstr(&b), "secret"));
    assert_int_equal(get("/logs/1/1", "wrong", &b), 401);
    assert_int_equal(get("/logs/1/1", TOKEN "x", &b), 401);
    assert_int_equal(get("/logs/1/1", "s3cret-toke", &b), 401);
    assert_int_equal(get("/logs/1/1", TOKEN, &b), 200);
    assert_string_equal(orr_buf_cstr(&b), "secret output\n");
    orr_buf_free(&b);
}

static void test_paths_and_params_are_validated(void **state)
{
    (void)state;
    write_log(2, 3, "0123456789", "w");
    orr_buf b = ORR_BUF_INIT;
    assert_int_equal(get("/logs/2/3?offset=4", TOKEN, &b), 200);
    assert_string_equal(orr_buf_cstr(&b), "456789");
    assert_int_equal(get("/logs/2/3?offset=400", TOKEN, &b), 200);
    assert_int_equal(b.len, 0);
    assert_int_equal(get("/logs/2/4", TOKEN, &b), 404);
    assert_int_equal(get("/logs/9/1", TOKEN, &b), 404);
    assert_int_equal(get("/logs/x/1", TOKEN, &b), 400);
    assert_int_equal(get("/logs/2/3x", TOKEN, &b), 400);
    assert_int_equal(get("/logs/2/-3", TOKEN, &b), 400);
    assert_int_equal(get("/logs/2/3/4", TOKEN, &b), 400);
    assert_int_equal(get("/logs/2/..%2f..%2fetc%2fpasswd", TOKEN, &b), 400);
    assert_int_equal(get("/logs/1234567890123456789/1", TOKEN, &b), 400);
    assert_int_equal(get("/logs/2/3?offset=-1", TOKEN, &b), 400);
    assert_int_equal(get("/logs/2/3?follow=yes", TOKEN, &b), 400);
    assert_int_equal(get("/other", TOKEN, &b), 404);
    orr_buf_free(&b);
}

typedef struct writer {
    int64_t inst;
    int attempt;
} writer;

static void *append_then_end(void *arg)
{
    writer *w = arg;
    for (int i = 0; i < 5; i++) {
        char line[32];
        snprintf(line, sizeof line, "line %d\n", i);
        write_log(w->inst, w->attempt, line, "a");
        ex_sleep_ms(200);
    }
    ex_logsrv_end(g_srv, w->inst, w->attempt);
    return NULL;
}

static void test_follow_streams_until_attempt_ends(void **state)
{
    (void)state;
    write_log(3, 1, "start\n", "w");
    ex_logsrv_begin(g_srv, 3, 1);
    writer w = {3, 1};
    pthread_t th;
    pthread_create(&th, NULL, append_then_end, &w);
    orr_buf b = ORR_BUF_INIT;
    int64_t t0 = ex_now_ms();
    assert_int_equal(get("/logs/3/1?follow=1", TOKEN, &b), 200);
    int64_t took = ex_now_ms() - t0;
    pthread_join(th, NULL);
    assert_string_equal(orr_buf_cstr(&b), "start\nline 0\nline 1\nline 2\nline 3\nline 4\n");
    assert_true(took >= 800); /* it waited for the writer */
    assert_true(took < 10000);

    /* Follow from an offset of a finished attempt ends at once. */
    assert_int_equal(get("/logs/3/1?follow=1&offset=6", TOKEN, &b), 200);
    assert_string_equal(orr_buf_cstr(&b), "line 0\nline 1\nline 2\nline 3\nline 4\n");
    orr_buf_free(&b);
}

static void test_start_refuses_bad_options(void **state)
{
    (void)state;
    ex_logsrv *s = NULL;
    orr_err err;
    assert_int_equal(ex_logsrv_start("127.0.0.1:0", "", g_dir, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "executor.log_token");
    assert_int_equal(ex_logsrv_start("localhost", TOKEN, g_dir, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, "executor.listen");
    assert_int_equal(ex_logsrv_start("1.2.3:80", TOKEN, g_dir, &s, &err), ORR_EINVAL);
    char taken[64];
    snprintf(taken, sizeof taken, "127.0.0.1:%d", ex_logsrv_port(g_srv));
    assert_int_equal(ex_logsrv_start(taken, TOKEN, g_dir, &s, &err), ORR_EIO);
}

static int setup_all(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/orr-ex-logs-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    orr_err err;
    return ex_logsrv_start("127.0.0.1:0", TOKEN, g_dir, &g_srv, &err) == ORR_OK ? 0 : -1;
}

static int teardown_all(void **state)
{
    (void)state;
    ex_logsrv_stop(g_srv);
    curl_global_cleanup();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_is_required),
        cmocka_unit_test(test_paths_and_params_are_validated),
        cmocka_unit_test(test_follow_streams_until_attempt_ends),
        cmocka_unit_test(test_start_refuses_bad_options),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}

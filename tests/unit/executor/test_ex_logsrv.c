/*
 * test_ex_logsrv.c - the live log server over real HTTP (libcurl): token,
 * path validation, offsets, following a growing log until its attempt ends;
 * POST /v1/<op> handed whole to the mounted handler (token, 404 unmounted,
 * 413 past the limit); and the capture (ex_logcap.h) whose line index
 * /lines serves, with the turns its follower gives logs due at once.
 * (The copy of a finished log to the blob store is lib/orr_blob's put_file:
 * tests/unit/lib/test_lib_blob.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "ex_logcap.h"
#include "ex_logsrv.h"
#include "orr_buf.h"
#include "orr_logidx.h"

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

/* POST body (len bytes) to path with tok; returns the status. */
static long post(const char *path, const char *tok, const char *body, size_t len, orr_buf *out)
{
    CURL *c = curl_easy_init();
    char url[256], auth[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", ex_logsrv_port(g_srv), path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (tok) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
        h = curl_slist_append(h, auth);
    }
    orr_buf_reset(out);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
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

static unsigned echo_post(void *arg, const char *op, const char *body, size_t len, orr_buf *out)
{
    (*(int *)arg)++;
    orr_buf_appendf(out, "{\"op\":\"%s\",\"len\":%zu,\"nul\":%d}", op, len, body[len] == 0);
    return 201;
}

static void test_post_goes_to_the_mounted_handler(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    int calls = 0;
    assert_int_equal(post("/v1/meta", TOKEN, "{}", 2, &b), 404); /* nothing mounted */
    ex_logsrv_mount(g_srv, echo_post, &calls);
    assert_int_equal(post("/v1/meta", NULL, "{}", 2, &b), 401);
    assert_int_equal(post("/v1/meta", "wrong", "{}", 2, &b), 401);
    assert_int_equal(calls, 0);
    assert_int_equal(post("/v1/meta", TOKEN, "{\"a\":1}", 7, &b), 201);
    assert_string_equal(orr_buf_cstr(&b), "{\"op\":\"meta\",\"len\":7,\"nul\":1}");
    assert_int_equal(calls, 1);
    /* Larger than the limit: refused, the handler never sees it. */
    size_t big = EX_POST_MAX + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, 'x', big);
    assert_int_equal(post("/v1/preview", TOKEN, huge, big, &b), 413);
    free(huge);
    assert_int_equal(calls, 1);
    /* GET of /v1 is no log path. */
    assert_int_equal(get("/v1/meta", TOKEN, &b), 404);
    ex_logsrv_mount(g_srv, NULL, NULL);
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

/* Output followed by the capture: the log is the bytes as written, the
 * index has one record per line (a line over 64 KiB, an empty line, a last
 * line without newline, a note appended after), stamps never go back, and
 * /lines answers the records overlapping a byte range. */
static void test_capture_stamps_each_line(void **state)
{
    (void)state;
    char path[300], idx[320];
    ex_log_path(path, sizeof path, g_dir, 7, 1);
    ex_logcap *cap = NULL;
    orr_err err;
    assert_int_equal(ex_logcap_start(path, &cap, &err), ORR_OK);
    orr_buf want = ORR_BUF_INIT;
    orr_buf_append_str(&want, "first\n\n");
    for (int i = 0; i < 70000; i++)
        orr_buf_append_byte(&want, (char)('a' + i % 26));
    orr_buf_append_str(&want, "\nlast without newline");
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    size_t half = want.len / 2;
    assert_int_equal(write(fd, want.data, half), (ssize_t)half);
    assert_int_equal(write(fd, want.data + half, want.len - half), (ssize_t)(want.len - half));
    close(fd);
    ex_logcap_finish(cap);
    ex_log_append(path, "\n[note]\n", 8);
    orr_buf_append_str(&want, "\n[note]\n");

    orr_buf b = ORR_BUF_INIT;
    assert_int_equal(get("/logs/7/1", TOKEN, &b), 200);
    assert_int_equal(b.len, want.len);
    assert_memory_equal(b.data, want.data, want.len);

    /* where each line starts */
    uint64_t starts[] = {0, 6, 7, 70008, 70029};
    FILE *f = fopen(ex_log_index_path(idx, sizeof idx, path), "rb");
    assert_non_null(f);
    unsigned char raw[ORR_LOGIDX_REC];
    int64_t prev = 0;
    size_t n = 0;
    while (fread(raw, 1, sizeof raw, f) == sizeof raw) {
        orr_logidx_rec r;
        orr_logidx_decode(raw, &r);
        assert_true(n < 5);
        assert_true(r.offset == starts[n]);
        assert_true(r.ms >= prev && r.ms > 1700000000000LL);
        prev = r.ms;
        n++;
    }
    fclose(f);
    assert_int_equal(n, 5);

    assert_int_equal(get("/logs/7/1/lines?from=10&to=70020", TOKEN, &b), 200);
    assert_int_equal(b.len, 2 * ORR_LOGIDX_REC); /* the long line and the one after */
    orr_logidx_rec r;
    orr_logidx_decode((const unsigned char *)b.data, &r);
    assert_true(r.offset == 7);
    assert_int_equal(get("/logs/7/1/lines?from=0&to=0", TOKEN, &b), 200);
    assert_int_equal(b.len, ORR_LOGIDX_REC);
    assert_int_equal(get("/logs/7/1/lines?from=5", TOKEN, &b), 400);
    assert_int_equal(get("/logs/7/1/lines?from=9&to=5", TOKEN, &b), 400);
    assert_int_equal(get("/logs/7/1/other", TOKEN, &b), 400);
    assert_int_equal(get("/logs/9/1/lines?from=0&to=1", TOKEN, &b), 404); /* no such log */
    orr_buf_free(&b);
    orr_buf_free(&want);
}

/* A run that writes nothing makes no index file; the log server answers
 * its lines as none (200, empty), and the first line makes the index. */
static void test_silent_run_makes_no_index(void **state)
{
    (void)state;
    char path[300], idx[320];
    ex_log_path(path, sizeof path, g_dir, 8, 1);
    ex_log_index_path(idx, sizeof idx, path);
    ex_logcap *cap = NULL;
    orr_err err;
    assert_int_equal(ex_logcap_start(path, &cap, &err), ORR_OK);
    ex_logcap_finish(cap);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_int_equal(access(idx, F_OK), -1); /* no index: nothing was written */
    orr_buf b = ORR_BUF_INIT;
    assert_int_equal(get("/logs/8/1/lines?from=0&to=10", TOKEN, &b), 200);
    assert_int_equal(b.len, 0);
    /* a later note is a line: it makes the index with its record */
    ex_log_append(path, "[note]\n", 7);
    assert_int_equal(stat(idx, &st), 0);
    assert_int_equal(st.st_size, ORR_LOGIDX_REC);
    assert_int_equal(get("/logs/8/1/lines?from=0&to=10", TOKEN, &b), 200);
    assert_int_equal(b.len, ORR_LOGIDX_REC);
    orr_buf_free(&b);
}

/* Records in an index file (0 when there is none). */
static long idx_records(const char *idx)
{
    struct stat st;
    return stat(idx, &st) == 0 ? (long)(st.st_size / ORR_LOGIDX_REC) : 0;
}

/* Waits (at most 30 s) until the index idx holds n records; their count. */
static long wait_records(const char *idx, long n)
{
    struct timespec pause = {0, 2 * 1000 * 1000};
    for (int t = 0; t < 15000 && idx_records(idx) < n; t++)
        nanosleep(&pause, NULL);
    return idx_records(idx);
}

/* Several runs at once share the one follower: each line is indexed while
 * its capture is live, driven by inotify alone (the sweep is off: a line
 * the events did not bring would never come before the finish), and each
 * index holds its own log's lines (each log's lines have their own
 * length). With watch = 0 the same holds for logs read every 20 ms. */
static void follow_together(int watch)
{
    enum { N = 6 };
    char path[N][300], idx[N][320];
    ex_logcap *cap[N];
    int fd[N];
    orr_err err;
    ex_logcap_tune(0, watch);
    for (int i = 0; i < N; i++) {
        ex_log_path(path[i], sizeof path[i], g_dir, 20 + i + (watch ? 0 : N), 1);
        ex_log_index_path(idx[i], sizeof idx[i], path[i]);
        assert_int_equal(ex_logcap_start(path[i], &cap[i], &err), ORR_OK);
        fd[i] = open(path[i], O_WRONLY | O_APPEND);
        assert_true(fd[i] >= 0);
    }
    for (int line = 1; line <= 2; line++) {
        for (int i = 0; i < N; i++) {
            char text[64];
            int n = snprintf(text, sizeof text, "run %d line %d %.*s\n", i, line, i, "xxxxxx");
            assert_int_equal(write(fd[i], text, (size_t)n), n);
        }
        for (int i = 0; i < N; i++)
            assert_int_equal(wait_records(idx[i], line), line);
    }
    /* finished in another order than started; the last line of each has
     * no newline and is written just before its finish */
    for (int i = N - 1; i >= 0; i--) {
        assert_int_equal(write(fd[i], "tail", 4), 4);
        close(fd[i]);
        ex_logcap_finish(cap[i]);
        assert_int_equal(idx_records(idx[i]), 3);
        FILE *f = fopen(idx[i], "rb");
        assert_non_null(f);
        unsigned char raw[ORR_LOGIDX_REC];
        uint64_t want = 0;
        while (fread(raw, 1, sizeof raw, f) == sizeof raw) {
            orr_logidx_rec r;
            orr_logidx_decode(raw, &r);
            assert_true(r.offset == want);
            want += (uint64_t)(14 + i); /* "run i line k " and i x's, newline */
        }
        fclose(f);
    }
    ex_logcap_tune(1000, 1);
}

static void test_captures_are_followed_live_together(void **state)
{
    (void)state;
    follow_together(1);
}

static void test_captures_without_a_watch_are_polled(void **state)
{
    (void)state;
    follow_together(0);
}

/* The turns of logs that are due at once (observed through
 * ex_logcap_observe). Each piece the follower reads of a log with turns
 * left makes that log due again at once: the observer appends the log's
 * next line before the follower goes on, so every log always has bytes
 * waiting and only the order of turns decides which is read next. */
enum { TURN_LOGS = 3, TURN_PIECES = 20 };
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char path[TURN_LOGS][300];
    int fd[TURN_LOGS];
    int gate;    /* 1: the first piece waits here until the test opens it */
    int at_gate; /* a piece waits at the gate */
    int pieces[TURN_LOGS];
    int order_ok;    /* no log got a turn more than one ahead of another */
    char order[256]; /* the logs' letters in the order their pieces came */
    size_t norder;
} g_turns = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void on_turn(const char *path, ssize_t n, void *arg)
{
    (void)arg;
    int k = 0;
    while (k < TURN_LOGS && strcmp(path, g_turns.path[k]) != 0)
        k++;
    if (k == TURN_LOGS || n <= 0)
        return;
    pthread_mutex_lock(&g_turns.mu);
    if (g_turns.gate) {
        g_turns.at_gate = 1;
        pthread_cond_broadcast(&g_turns.cv);
        while (g_turns.gate)
            pthread_cond_wait(&g_turns.cv, &g_turns.mu);
    }
    int got = ++g_turns.pieces[k];
    for (int o = 0; o < TURN_LOGS; o++)
        if (g_turns.pieces[o] < got - 1)
            g_turns.order_ok = 0;
    if (g_turns.norder + 1 < sizeof g_turns.order)
        g_turns.order[g_turns.norder++] = (char)('A' + k);
    char text[32];
    int len = snprintf(text, sizeof text, "%c line %d\n", 'A' + k, got + 1);
    if (got < TURN_PIECES && write(g_turns.fd[k], text, (size_t)len) != len)
        g_turns.order_ok = 0;
    pthread_cond_broadcast(&g_turns.cv);
    pthread_mutex_unlock(&g_turns.mu);
}

/* Whether this process can watch a file with inotify (the follower's
 * turns are only in a known order when its logs are watched: a polled log
 * is due 20 ms after a read that found nothing). */
static int inotify_works(void)
{
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0)
        return 0;
    int wd = inotify_add_watch(fd, g_dir, IN_MODIFY);
    close(fd);
    return wd >= 0;
}

/* Logs due at once take turns, a piece each: while three logs always have
 * bytes waiting, none is read twice before each other has been read once.
 * The first piece (of A) is held at a gate until B and C have lines too.
 * No check stops the test while the follower waits at the gate: each
 * failure is noted, the gate opened and the captures finished first. */
static void test_due_logs_take_turns(void **state)
{
    (void)state;
    if (!inotify_works())
        skip(); /* polled logs' turns depend on the 20 ms between reads */
    orr_err err;
    ex_logcap *cap[TURN_LOGS] = {0};
    char idx[TURN_LOGS][320];
    int started = 0, wrote = 1;
    ex_logcap_tune(0, 1);
    g_turns.gate = 1;
    g_turns.order_ok = 1;
    for (int k = 0; k < TURN_LOGS; k++) {
        ex_log_path(g_turns.path[k], sizeof g_turns.path[k], g_dir, 40 + k, 1);
        ex_log_index_path(idx[k], sizeof idx[k], g_turns.path[k]);
        g_turns.fd[k] = -1;
        if (ex_logcap_start(g_turns.path[k], &cap[k], &err) != ORR_OK)
            break;
        started++;
        g_turns.fd[k] = open(g_turns.path[k], O_WRONLY | O_APPEND);
    }
    int ready = started == TURN_LOGS;
    for (int k = 0; k < TURN_LOGS; k++)
        ready &= g_turns.fd[k] >= 0;
    ex_logcap_observe(on_turn, NULL);
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 30;
    int reached = 0, done = 0;
    if (ready && write(g_turns.fd[0], "A line 1\n", 9) == 9) {
        pthread_mutex_lock(&g_turns.mu);
        while (!g_turns.at_gate && pthread_cond_timedwait(&g_turns.cv, &g_turns.mu, &limit) == 0) {
        }
        reached = g_turns.at_gate;
        pthread_mutex_unlock(&g_turns.mu);
    }
    for (int k = 1; reached && k < TURN_LOGS; k++) {
        char text[16];
        int len = snprintf(text, sizeof text, "%c line 1\n", 'A' + k);
        wrote &= write(g_turns.fd[k], text, (size_t)len) == len;
    }
    pthread_mutex_lock(&g_turns.mu);
    g_turns.gate = 0;
    pthread_cond_broadcast(&g_turns.cv);
    while (reached && wrote && !done) {
        done = 1;
        for (int k = 0; k < TURN_LOGS; k++)
            done &= g_turns.pieces[k] >= TURN_PIECES;
        if (!done && pthread_cond_timedwait(&g_turns.cv, &g_turns.mu, &limit) != 0)
            break;
    }
    int ok = g_turns.order_ok;
    g_turns.order[g_turns.norder] = 0;
    pthread_mutex_unlock(&g_turns.mu);
    ex_logcap_observe(NULL, NULL); /* returns once no call of on_turn runs */
    for (int k = 0; k < TURN_LOGS; k++) {
        ex_logcap_finish(cap[k]);
        if (g_turns.fd[k] >= 0)
            close(g_turns.fd[k]);
    }
    ex_logcap_tune(1000, 1);
    if (!ready || !reached || !wrote || !done || !ok)
        fail_msg("captures ready %d, the first piece at the gate %d, lines written %d, every log "
                 "read %d times %d, in turns %d: %s",
                 ready, reached, wrote, TURN_PIECES, done, ok, g_turns.order);
    for (int k = 0; k < TURN_LOGS; k++)
        assert_int_equal(idx_records(idx[k]), TURN_PIECES);
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
        cmocka_unit_test(test_capture_stamps_each_line),
        cmocka_unit_test(test_silent_run_makes_no_index),
        cmocka_unit_test(test_captures_are_followed_live_together),
        cmocka_unit_test(test_captures_without_a_watch_are_polled),
        cmocka_unit_test(test_due_logs_take_turns),
        cmocka_unit_test(test_start_refuses_bad_options),
        cmocka_unit_test(test_post_goes_to_the_mounted_handler),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}

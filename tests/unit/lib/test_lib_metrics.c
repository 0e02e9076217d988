/*
 * test_lib_metrics.c - the metrics registry and exposition: every family has
 * # HELP and # TYPE, label values and help text are escaped, numbers are
 * written as the format reads them, histogram buckets are cumulative with
 * _count equal to the +Inf bucket, updates from many threads are all
 * counted, and the endpoint serves /metrics and /healthz (200 and 503) on a
 * real loopback socket. When promtool is installed, the rendered text also
 * passes `promtool check metrics`.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_metrics.h"

static const double bounds[] = {0.005, 0.01, 0.1, 1, 2.5};

static void collect(void *ctx, orr_metrics_writer *w)
{
    int *calls = ctx;
    (*calls)++;
    orr_metrics_single(w, "t_pool_size", ORR_METRIC_GAUGE, "Connections in the pool.", 8);
    orr_metrics_family(w, "t_rpc_seconds", ORR_METRIC_HISTOGRAM, "RPC latency.");
    static const uint64_t counts[] = {1, 0, 2, 0, 0, 1};
    orr_metrics_histogram_sample(w, (const char *const[]){"method", "GetTask", NULL}, bounds,
                                 counts, 5, 3.25);
}

static orr_metrics *sample_registry(int *calls)
{
    orr_metrics *m = orr_metrics_create();
    orr_counter *c = orr_metrics_counter(m, "t_requests_total", "Requests served.",
                                         (const char *const[]){"code", "2xx", NULL});
    orr_counter_add(c, 41);
    orr_counter_inc(c);
    orr_counter_inc(orr_metrics_counter(m, "t_requests_total", "ignored: first help stays",
                                        (const char *const[]){"code", "5xx", NULL}));
    /* The same name and labels give the same series. */
    assert_ptr_equal(
        orr_metrics_counter(m, "t_requests_total", "x", (const char *const[]){"code", "2xx", NULL}),
        c);
    orr_gauge *g = orr_metrics_gauge(m, "t_in_flight", "Requests being served.", NULL);
    orr_gauge_set(g, 3);
    orr_gauge_add(g, -1.5);
    orr_gauge_set(orr_metrics_gauge(m, "t_label_escapes", "Help with \\ and\nnewline.",
                                    (const char *const[]){"v", "a\"b\\c\nd", NULL}),
                  1);
    orr_histogram *h =
        orr_metrics_histogram(m, "t_latency_seconds", "Request latency.", NULL, bounds, 5);
    orr_histogram_observe(h, 0.001); /* first bucket */
    orr_histogram_observe(h, 0.005); /* on the bound: first bucket */
    orr_histogram_observe(h, 0.05);  /* third */
    orr_histogram_observe(h, 100);   /* +Inf */
    orr_metrics_add_collector(m, collect, calls);
    return m;
}

static void test_exposition(void **state)
{
    (void)state;
    int calls = 0;
    orr_metrics *m = sample_registry(&calls);
    orr_buf out = ORR_BUF_INIT;
    orr_metrics_render(m, &out);
    assert_int_equal(calls, 1);
    const char *t = orr_buf_cstr(&out);
    static const char *const want[] = {
        "# HELP t_requests_total Requests served.\n# TYPE t_requests_total counter\n"
        "t_requests_total{code=\"2xx\"} 42\nt_requests_total{code=\"5xx\"} 1\n",
        "# HELP t_in_flight Requests being served.\n# TYPE t_in_flight gauge\nt_in_flight 1.5\n",
        "# HELP t_label_escapes Help with \\\\ and\\nnewline.\n",
        "t_label_escapes{v=\"a\\\"b\\\\c\\nd\"} 1\n",
        "# TYPE t_latency_seconds histogram\n"
        "t_latency_seconds_bucket{le=\"0.005\"} 2\n"
        "t_latency_seconds_bucket{le=\"0.01\"} 2\n"
        "t_latency_seconds_bucket{le=\"0.1\"} 3\n"
        "t_latency_seconds_bucket{le=\"1\"} 3\n"
        "t_latency_seconds_bucket{le=\"2.5\"} 3\n"
        "t_latency_seconds_bucket{le=\"+Inf\"} 4\n"
        "t_latency_seconds_sum 100.056\n"
        "t_latency_seconds_count 4\n",
        "# HELP t_pool_size Connections in the pool.\n# TYPE t_pool_size gauge\nt_pool_size 8\n",
        "t_rpc_seconds_bucket{method=\"GetTask\",le=\"0.005\"} 1\n",
        "t_rpc_seconds_bucket{method=\"GetTask\",le=\"0.1\"} 3\n",
        "t_rpc_seconds_bucket{method=\"GetTask\",le=\"+Inf\"} 4\n",
        "t_rpc_seconds_sum{method=\"GetTask\"} 3.25\nt_rpc_seconds_count{method=\"GetTask\"} 4\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(t, want[i]))
            fail_msg("missing:\n%s\nin:\n%s", want[i], t);
    /* Every family once, each with HELP right before TYPE. */
    int families = 0;
    for (const char *p = t; (p = strstr(p, "# TYPE ")); p++)
        families++;
    assert_int_equal(families, 6);
    for (const char *p = t; (p = strstr(p, "# TYPE ")); p++) {
        const char *line = p;
        assert_true(line > t);
        const char *prev = line - 1;
        while (prev > t && prev[-1] != '\n')
            prev--;
        assert_memory_equal(prev, "# HELP ", 7);
    }
    orr_buf_free(&out);
    orr_metrics_destroy(m);
    orr_metrics_destroy(NULL);
}

static void test_histogram_buckets(void **state)
{
    (void)state;
    orr_metrics *m = orr_metrics_create();
    orr_histogram *h = orr_metrics_histogram(m, "t_h", "h", NULL, bounds, 5);
    static const double v[] = {-1, 0, 0.005, 0.0050001, 0.01, 0.5, 1, 1.0001, 2.5, 3, 1e300};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        orr_histogram_observe(h, v[i]);
    /* Upper bounds are inclusive: le means "less than or equal". */
    assert_int_equal(orr_histogram_bucket(h, 0), 3); /* -1, 0, 0.005 */
    assert_int_equal(orr_histogram_bucket(h, 1), 2); /* 0.0050001, 0.01 */
    assert_int_equal(orr_histogram_bucket(h, 2), 0);
    assert_int_equal(orr_histogram_bucket(h, 3), 2); /* 0.5, 1 */
    assert_int_equal(orr_histogram_bucket(h, 4), 2); /* 1.0001, 2.5 */
    assert_int_equal(orr_histogram_bucket(h, 5), 2); /* +Inf: 3, 1e300 */
    assert_int_equal(orr_histogram_count(h), 11);
    /* A histogram without bounds has the +Inf bucket alone. */
    orr_histogram *h0 = orr_metrics_histogram(m, "t_h0", "h0", NULL, NULL, 0);
    orr_histogram_observe(h0, 7);
    orr_buf out = ORR_BUF_INIT;
    orr_metrics_render(m, &out);
    assert_non_null(strstr(orr_buf_cstr(&out), "t_h0_bucket{le=\"+Inf\"} 1\nt_h0_sum 7\n"
                                               "t_h0_count 1\n"));
    assert_non_null(strstr(orr_buf_cstr(&out), "t_h_bucket{le=\"2.5\"} 9\n"));
    assert_non_null(strstr(orr_buf_cstr(&out), "t_h_count 11\n"));
    orr_buf_free(&out);
    orr_metrics_destroy(m);
}

#define THREADS 8
#define ROUNDS  20000

struct hammer {
    orr_metrics *m;
    int id;
};

static void *hammer_main(void *arg)
{
    struct hammer *hm = arg;
    char who[16];
    snprintf(who, sizeof who, "%d", hm->id % 2);
    for (int i = 0; i < ROUNDS; i++) {
        /* Looked up where counted, as callers may: registration races too. */
        orr_counter_inc(
            orr_metrics_counter(hm->m, "t_c", "c", (const char *const[]){"half", who, NULL}));
        orr_gauge_add(orr_metrics_gauge(hm->m, "t_g", "g", NULL), 0.5);
        orr_histogram_observe(orr_metrics_histogram(hm->m, "t_h", "h", NULL, bounds, 5),
                              (i % 4) * 0.25);
    }
    return NULL;
}

static void *scrape_main(void *arg)
{
    orr_metrics *m = arg;
    for (int i = 0; i < 50; i++) {
        orr_buf out = ORR_BUF_INIT;
        orr_metrics_render(m, &out);
        orr_buf_free(&out);
    }
    return NULL;
}

static void test_concurrency(void **state)
{
    (void)state;
    orr_metrics *m = orr_metrics_create();
    pthread_t th[THREADS], scraper;
    struct hammer hm[THREADS];
    for (int i = 0; i < THREADS; i++) {
        hm[i] = (struct hammer){m, i};
        assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &hm[i]), 0);
    }
    assert_int_equal(pthread_create(&scraper, NULL, scrape_main, m), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_join(scraper, NULL);
    uint64_t total = orr_counter_get(orr_metrics_counter(
                         m, "t_c", "c", (const char *const[]){"half", "0", NULL})) +
                     orr_counter_get(orr_metrics_counter(m, "t_c", "c",
                                                         (const char *const[]){"half", "1", NULL}));
    assert_int_equal(total, (uint64_t)THREADS * ROUNDS);
    assert_true(orr_gauge_get(orr_metrics_gauge(m, "t_g", "g", NULL)) == 0.5 * THREADS * ROUNDS);
    orr_histogram *h = orr_metrics_histogram(m, "t_h", "h", NULL, bounds, 5);
    assert_int_equal(orr_histogram_count(h), (uint64_t)THREADS * ROUNDS);
    /* 0 -> bucket 0; 0.25 and 0.5 -> bucket 3 (le 1); 0.75 -> bucket 3. */
    assert_int_equal(orr_histogram_bucket(h, 0), (uint64_t)THREADS * ROUNDS / 4);
    assert_int_equal(orr_histogram_bucket(h, 3), (uint64_t)THREADS * ROUNDS * 3 / 4);
    assert_true(orr_histogram_sum(h) == 0.375 * THREADS * ROUNDS);
    orr_metrics_destroy(m);
}

/* `promtool check metrics` on the text, when promtool is installed: its
 * exit status (0 = clean), or -1 when there is no promtool. */
static int promtool_check(const char *text)
{
    if (access("/usr/bin/promtool", X_OK) != 0)
        return -1;
    FILE *p = popen("/usr/bin/promtool check metrics >/dev/null 2>&1", "w");
    assert_non_null(p);
    fputs(text, p);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void test_promtool_accepts(void **state)
{
    (void)state;
    int calls = 0;
    orr_metrics *m = sample_registry(&calls);
    orr_buf out = ORR_BUF_INIT;
    orr_metrics_render(m, &out);
    int rc = promtool_check(orr_buf_cstr(&out));
    if (rc < 0)
        skip();
    assert_int_equal(rc, 0);
    /* and the checker does find a family without HELP */
    assert_int_not_equal(promtool_check("# TYPE t_bare_total counter\nt_bare_total 1\n"), 0);
    orr_buf_free(&out);
    orr_metrics_destroy(m);
}

static int health_flag;

static int health(void *ctx, orr_buf *body)
{
    (void)ctx;
    orr_buf_appendf(body, "{\"status\":\"%s\",\"db\":%s}", health_flag ? "ok" : "degraded",
                    health_flag ? "true" : "false");
    return health_flag;
}

static void http_get(int port, const char *method, const char *path, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: x\r\n\r\n", method, path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    size_t len = 0;
    ssize_t k;
    while (len + 1 < cap && (k = read(fd, out + len, cap - 1 - len)) > 0)
        len += (size_t)k;
    out[len] = 0;
    close(fd);
}

static void test_endpoint(void **state)
{
    (void)state;
    int calls = 0;
    orr_metrics *m = sample_registry(&calls);
    orr_metrics_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_metrics_serve(m, "nonsense", "x.metrics_listen", NULL, NULL, &s, &err),
                     ORR_EINVAL);
    assert_null(s);
    assert_string_equal(err.field, "x.metrics_listen");
    assert_int_equal(
        orr_metrics_serve(m, "127.0.0.1:0", "x.metrics_listen", health, NULL, &s, &err), ORR_OK);
    int port = orr_metrics_server_port(s);
    assert_true(port > 0);
    static char buf[65536];
    http_get(port, "GET", "/metrics", buf, sizeof buf);
    assert_non_null(strstr(buf, " 200 OK\r\n"));
    assert_non_null(strstr(buf, "text/plain; version=0.0.4"));
    assert_non_null(strstr(buf, "t_requests_total{code=\"2xx\"} 42\n"));
    health_flag = 1;
    http_get(port, "GET", "/healthz", buf, sizeof buf);
    assert_non_null(strstr(buf, " 200 OK\r\n"));
    assert_non_null(strstr(buf, "application/json"));
    assert_non_null(strstr(buf, "{\"status\":\"ok\",\"db\":true}\n"));
    health_flag = 0;
    http_get(port, "GET", "/healthz", buf, sizeof buf);
    assert_non_null(strstr(buf, " 503 "));
    assert_non_null(strstr(buf, "\"db\":false"));
    http_get(port, "GET", "/other", buf, sizeof buf);
    assert_non_null(strstr(buf, " 404 "));
    http_get(port, "POST", "/metrics", buf, sizeof buf);
    assert_non_null(strstr(buf, " 405 "));
    orr_metrics_server_stop(s);
    orr_metrics_server_stop(NULL);

    /* Without a health callback the daemon is healthy when it answers. */
    assert_int_equal(orr_metrics_serve(m, "127.0.0.1:0", "x", NULL, NULL, &s, &err), ORR_OK);
    http_get(orr_metrics_server_port(s), "GET", "/healthz", buf, sizeof buf);
    assert_non_null(strstr(buf, " 200 OK\r\n"));
    assert_non_null(strstr(buf, "{\"status\":\"ok\"}\n"));
    orr_metrics_server_stop(s);
    orr_metrics_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exposition),  cmocka_unit_test(test_histogram_buckets),
        cmocka_unit_test(test_concurrency), cmocka_unit_test(test_promtool_accepts),
        cmocka_unit_test(test_endpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

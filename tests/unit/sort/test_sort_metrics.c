/*
 * test_sort_metrics.c - sortd's Prometheus endpoint: a published snapshot is
 * served at GET /metrics on a real loopback socket; other paths are 404; a
 * bad listen address is refused naming the setting.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sort_metrics.h"

/* One HTTP/1.0 GET; the whole answer (headers and body) into out. */
static void http_get(int port, const char *path, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    size_t len = 0;
    ssize_t k;
    while (len + 1 < cap && (k = read(fd, out + len, cap - 1 - len)) > 0)
        len += (size_t)k;
    out[len] = 0;
    close(fd);
}

static void test_metrics_served(void **state)
{
    (void)state;
    sort_metrics *m = NULL;
    orr_err err;
    assert_int_equal(sort_metrics_start("127.0.0.1:0", &m, &err), ORR_OK);
    int port = sort_metrics_port(m);
    assert_true(port > 0);
    static char buf[65536];
    http_get(port, "/metrics", buf, sizeof buf);
    assert_non_null(strstr(buf, "200 OK"));
    assert_null(strstr(buf, "sortd_records_in_total")); /* nothing published yet */

    sort_pipe_stats st;
    memset(&st, 0, sizeof st);
    st.records_in = 1234;
    st.records_out = 1200;
    st.rejects[SORT_REJ_BAD_TIME] = 34;
    st.w.open_units = 7;
    st.w.bytes_lzo = 987654;
    st.lag[2] = 55;
    st.has_lag[2] = 1;
    st.ho_packs = 321;
    st.ho_waits = 4;
    st.rebalances_assigned = 2;
    sort_metrics_publish(m, "clicks", &st);
    http_get(port, "/metrics", buf, sizeof buf);
    assert_non_null(strstr(buf, "text/plain; version=0.0.4"));
    assert_non_null(strstr(buf, "sortd_records_in_total{stream=\"clicks\"} 1234\n"));
    assert_non_null(strstr(buf, "sortd_records_out_total{stream=\"clicks\"} 1200\n"));
    assert_non_null(
        strstr(buf, "sortd_records_rejected_total{stream=\"clicks\",reason=\"bad_time\"} 34\n"));
    assert_non_null(strstr(buf, "sortd_open_units{stream=\"clicks\"} 7\n"));
    assert_non_null(strstr(buf, "sortd_bytes_written_total{stream=\"clicks\"} 987654\n"));
    assert_non_null(strstr(buf, "sortd_lag{stream=\"clicks\",partition=\"2\"} 55\n"));
    assert_null(strstr(buf, "partition=\"1\""));
    assert_non_null(strstr(buf, "sortd_handoff_packs_total{stream=\"clicks\"} 321\n"));
    assert_non_null(strstr(buf, "sortd_handoff_waits_total{stream=\"clicks\"} 4\n"));
    assert_non_null(strstr(buf, "sortd_rebalances_total{stream=\"clicks\"} 2\n"));
    assert_non_null(strstr(buf, "# TYPE sortd_open_units gauge"));

    http_get(port, "/other", buf, sizeof buf);
    assert_non_null(strstr(buf, "404"));
    sort_metrics_stop(m);
    sort_metrics_stop(NULL);
}

static void test_metrics_bad_listen(void **state)
{
    (void)state;
    sort_metrics *m = NULL;
    orr_err err;
    static const char *const bad[] = {
        "nohostport", "127.0.0.1:99999", "host.example:80", "1.2.3.4:x", "[::1", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sort_metrics_start(bad[i], &m, &err), ORR_EINVAL);
        assert_null(m);
        assert_string_equal(err.field, "metrics_listen");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_served),
        cmocka_unit_test(test_metrics_bad_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

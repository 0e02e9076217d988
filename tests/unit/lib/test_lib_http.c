/*
 * test_lib_http.c - the shared HTTP set-up: listen addresses of every form and
 * the refusals naming the setting; a server on a real loopback socket (IPv4
 * and IPv6) answering with orr_http_reply; a taken port refused (no
 * SO_REUSEPORT); the limits a caller sets are applied.
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

#include "orr_http.h"

static void test_parse_forms(void **state)
{
    (void)state;
    orr_http_addr a;
    orr_err err;
    char ip[INET6_ADDRSTRLEN];

    assert_int_equal(orr_http_parse_listen("127.0.0.1:8080", "x.listen", &a, &err), ORR_OK);
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a.ss;
    assert_int_equal(s4->sin_family, AF_INET);
    assert_int_equal(ntohs(s4->sin_port), 8080);
    assert_int_equal(a.port, 8080);
    assert_int_equal(a.len, sizeof(struct sockaddr_in));
    assert_string_equal(inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip), "127.0.0.1");

    assert_int_equal(orr_http_parse_listen(":0", "x.listen", &a, &err), ORR_OK);
    assert_int_equal(s4->sin_addr.s_addr, htonl(INADDR_ANY));
    assert_int_equal(a.port, 0);

    assert_int_equal(orr_http_parse_listen("localhost:65535", "x.listen", &a, &err), ORR_OK);
    assert_int_equal(s4->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    assert_int_equal(a.port, 65535);

    assert_int_equal(orr_http_parse_listen("0.0.0.0:7", "x.listen", &a, &err), ORR_OK);
    assert_int_equal(s4->sin_addr.s_addr, htonl(INADDR_ANY));

    assert_int_equal(orr_http_parse_listen("[::1]:9170", "x.listen", &a, &err), ORR_OK);
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a.ss;
    assert_int_equal(s6->sin6_family, AF_INET6);
    assert_int_equal(ntohs(s6->sin6_port), 9170);
    assert_int_equal(a.len, sizeof(struct sockaddr_in6));
    assert_string_equal(inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip), "::1");

    assert_int_equal(orr_http_parse_listen("[::]:1", "x.listen", &a, &err), ORR_OK);
    assert_int_equal(s6->sin6_family, AF_INET6);
}

static void test_parse_refusals(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "8080",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:65536",
        "1.2.3.4:x",
        "1.2.3:80",
        "host.example:80",
        "::1:80",
        "[::1]80",
        "[::1",
        "[nothex]:80",
        "1.2.3.4:-1",
        "1.2.3.4:+80",
        "1.2.3.4:80 ",
        "[1.2.3.4]:80",
        "127.0.0.1:99999999999999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        orr_http_addr a;
        orr_err err;
        orr_err_clear(&err);
        assert_int_equal(orr_http_parse_listen(bad[i], "x.listen", &a, &err), ORR_EINVAL);
        assert_string_equal(err.field, "x.listen");
        assert_non_null(strstr(err.msg, "HOST:PORT"));
    }
    orr_http_addr a;
    orr_err err;
    assert_int_equal(orr_http_parse_listen(NULL, "x.listen", &a, &err), ORR_EINVAL);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)method;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    char body[300];
    int n = snprintf(body, sizeof body, "path=%s\n", url);
    return orr_http_reply(conn, strcmp(url, "/missing") == 0 ? 404 : 200, "text/plain", body,
                          (size_t)n);
}

/* One HTTP/1.0 GET to family's loopback; the whole answer into out. */
static void http_get(int family, int port, const char *path, char *out, size_t cap)
{
    int fd = socket(family, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    if (family == AF_INET6) {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
        sa.sin6_addr = in6addr_loopback;
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    } else {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    }
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

static void test_serve_v4_and_taken_port(void **state)
{
    (void)state;
    orr_http *h = NULL, *h2 = NULL;
    orr_err err;
    orr_http_opts o = {.listen = "127.0.0.1:0", .field = "x.listen", .handler = answer};
    assert_int_equal(orr_http_start(&o, &h, &err), ORR_OK);
    int port = orr_http_port(h);
    assert_true(port > 0);
    char buf[4096];
    http_get(AF_INET, port, "/hello", buf, sizeof buf);
    assert_non_null(strstr(buf, " 200 OK\r\n"));
    assert_non_null(strstr(buf, "Content-Type: text/plain"));
    assert_non_null(strstr(buf, "X-Content-Type-Options: nosniff"));
    assert_non_null(strstr(buf, "\r\n\r\npath=/hello\n"));
    http_get(AF_INET, port, "/missing", buf, sizeof buf);
    assert_non_null(strstr(buf, " 404 "));

    /* The port is this process's alone. */
    char taken[64];
    snprintf(taken, sizeof taken, "127.0.0.1:%d", port);
    o.listen = taken;
    assert_int_equal(orr_http_start(&o, &h2, &err), ORR_EIO);
    assert_null(h2);
    assert_string_equal(err.field, "x.listen");
    orr_http_stop(h);
    /* Once stopped, the port can be bound again at once (SO_REUSEADDR). */
    assert_int_equal(orr_http_start(&o, &h2, &err), ORR_OK);
    assert_int_equal(orr_http_port(h2), port);
    orr_http_stop(h2);
    orr_http_stop(NULL);
}

static void test_serve_v6_pool(void **state)
{
    (void)state;
    orr_http *h = NULL;
    orr_err err;
    orr_http_opts o = {.listen = "[::1]:0",
                       .handler = answer,
                       .threads = 2,
                       .connection_limit = 8,
                       .timeout_s = 5,
                       .memory_limit = 64 * 1024};
    assert_int_equal(orr_http_start(&o, &h, &err), ORR_OK);
    char buf[4096];
    http_get(AF_INET6, orr_http_port(h), "/six", buf, sizeof buf);
    assert_non_null(strstr(buf, "path=/six\n"));
    orr_http_stop(h);
}

static void test_bad_address_names_default_field(void **state)
{
    (void)state;
    orr_http *h = (orr_http *)&h;
    orr_err err;
    orr_http_opts o = {.listen = "nowhere", .handler = answer};
    assert_int_equal(orr_http_start(&o, &h, &err), ORR_EINVAL);
    assert_null(h);
    assert_string_equal(err.field, "listen");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_forms),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_serve_v4_and_taken_port),
        cmocka_unit_test(test_serve_v6_pool),
        cmocka_unit_test(test_bad_address_names_default_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

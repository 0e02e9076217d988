/* test_gx_server.c - galaxyd's HTTP core over real loopback HTTP (libcurl):
 * routing, JSON errors, 405/404/413, security headers, static files and
 * traversal attempts, auth hook, metrics text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "gx_http.h"

static char root[64];
static char sdir[256];
static gx_server *srv;

static void h_echo(gx_req *req, gx_resp *resp)
{
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    json_t *out = json_object();
    json_object_set(out, "got", body);
    json_object_set_new(out, "id", json_string(gx_req_param(req, 0) ? gx_req_param(req, 0) : ""));
    gx_resp_json(resp, 200, out);
}

static void h_item(gx_req *req, gx_resp *resp)
{
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 50, 1, 500, &limit))
        return;
    json_t *out = json_pack("{s:s,s:I}", "id", gx_req_param(req, 0), "limit", (json_int_t)limit);
    gx_resp_json(resp, 200, out);
}

static void h_secret(gx_req *req, gx_resp *resp)
{
    gx_resp_json(resp, 200, json_pack("{s:s}", "who", req->who.name));
}

static int auth_hook(gx_req *req, gx_resp *resp)
{
    const char *h = gx_req_header(req, "Authorization");
    if (!h || strcmp(h, "Bearer good") != 0) {
        gx_resp_fail(resp, ORR_EAUTH, "authorization", "login required");
        return 1;
    }
    req->who.name = "tester";
    req->who.role = GX_ROLE_VIEWER;
    return 0;
}

static const gx_route routes[] = {
    {"POST", "/api/v1/echo/{id}", h_echo, GX_ROLE_NONE, "echo"},
    {"GET", "/api/v1/items/{key}", h_item, GX_ROLE_NONE, "item"},
    {"GET", "/api/v1/secret", h_secret, GX_ROLE_VIEWER, "secret"},
};

struct reply {
    long status;
    char body[8192];
    size_t len;
    char headers[8192];
    size_t hlen;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct reply *r = ud;
    size_t k = sz * n;
    size_t room = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct reply *r = ud;
    size_t k = sz * n;
    size_t room = sizeof(r->headers) - 1 - r->hlen;
    memcpy(r->headers + r->hlen, p, k < room ? k : room);
    r->hlen += k < room ? k : room;
    r->headers[r->hlen] = '\0';
    return k;
}

static void do_req(const char *method, const char *path, const char *body, size_t body_len,
                   const char *auth, struct reply *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = curl_easy_init();
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", gx_server_port(srv), path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (auth) {
        char line[256];
        snprintf(line, sizeof(line), "Authorization: %s", auth);
        h = curl_slist_append(h, line);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
    }
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void write_file(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(root, sizeof(root), "/tmp/orr-gx-test-XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[256];
    snprintf(p, sizeof(p), "%s/static", root);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/static/app", root);
    mkdir(p, 0755);
    write_file("static/index.html", "<html>home</html>");
    write_file("static/app/index.html", "<html>app</html>");
    write_file("static/app/main.js", "console.log(1)");
    write_file("static/.hidden", "hidden");
    write_file("outside.txt", "outside-secret");
    snprintf(sdir, sizeof(sdir), "%s/static", root);
    gx_server_opts o = {.listen = "127.0.0.1:0",
                        .threads = 2,
                        .max_body = 1024,
                        .static_dir = sdir,
                        .routes = routes,
                        .nroutes = sizeof(routes) / sizeof(routes[0]),
                        .auth = auth_hook};
    orr_err e;
    assert_int_equal(gx_server_start(&o, &srv, &e), ORR_OK);
    assert_true(gx_server_port(srv) > 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gx_server_stop(srv);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    assert_int_equal(system(cmd), 0);
    curl_global_cleanup();
    return 0;
}

static void test_routes_and_errors(void **state)
{
    (void)state;
    struct reply r;
    do_req("POST", "/api/v1/echo/9", "{\"a\":1}", 7, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"got\":{\"a\":1},\"id\":\"9\"}");
    assert_non_null(strstr(r.headers, "Content-Type: application/json"));
    assert_non_null(strstr(r.headers, "X-Content-Type-Options: nosniff"));
    assert_non_null(strstr(r.headers, "frame-ancestors 'none'"));

    do_req("POST", "/api/v1/echo/9", "{\"a\":", 5, NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"code\":\"EINVAL\""));
    assert_non_null(strstr(r.body, "\"field\":\"body\""));

    do_req("POST", "/api/v1/echo/9", "[1,2]", 5, NULL, &r);
    assert_int_equal(r.status, 400);

    do_req("GET", "/api/v1/echo/9", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 405);

    do_req("GET", "/api/v1/nothing", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "\"code\":\"ENOTFOUND\""));

    do_req("GET", "/api/v1/items/abc?limit=20", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"id\":\"abc\",\"limit\":20}");
    do_req("GET", "/api/v1/items/abc?limit=0", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"field\":\"limit\""));
    do_req("GET", "/api/v1/items/abc?limit=1x", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 400);
    do_req("GET", "/api/v1/items/abc?limit=%2B20", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 400);

    /* {id} is an id by name: read strictly before the handler runs. */
    const char *bad_ids[] = {"abc", "01", "%2B1", "-1", "0", "1%20", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/api/v1/echo/%s", bad_ids[i]);
        do_req("POST", path, "{}", 2, NULL, &r);
        assert_int_equal(r.status, 400);
        assert_non_null(strstr(r.body, "\"field\":\"id\""));
    }
    /* Text in the path and query: valid UTF-8, no control character. */
    do_req("GET", "/api/v1/items/a%00b", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 400);
    do_req("GET", "/api/v1/items/abc?limit=%FF", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"field\":\"limit\""));
    do_req("GET", "/api/v1/items/%C3%A9t%C3%A9?limit=2", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
}

static void test_body_too_large(void **state)
{
    (void)state;
    char *big = malloc(100000);
    memset(big, ' ', 100000);
    big[0] = '{';
    big[99999] = '}';
    struct reply r;
    do_req("POST", "/api/v1/echo/1", big, 100000, NULL, &r);
    assert_int_equal(r.status, 413);
    assert_non_null(strstr(r.body, "\"code\":\"ETOOBIG\""));
    free(big);
    /* The server still answers normally afterwards. */
    do_req("POST", "/api/v1/echo/2", "{}", 2, NULL, &r);
    assert_int_equal(r.status, 200);
}

static void test_auth_hook(void **state)
{
    (void)state;
    struct reply r;
    do_req("GET", "/api/v1/secret", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 401);
    do_req("GET", "/api/v1/secret", NULL, 0, "Bearer bad", &r);
    assert_int_equal(r.status, 401);
    do_req("GET", "/api/v1/secret", NULL, 0, "Bearer good", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"who\":\"tester\"}");
}

static void test_static_files(void **state)
{
    (void)state;
    struct reply r;
    do_req("GET", "/", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "<html>home</html>");
    assert_non_null(strstr(r.headers, "text/html"));
    do_req("GET", "/app/main.js", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "text/javascript"));
    /* UI routes fall back to the app's index. */
    do_req("GET", "/app/tasks/42", NULL, 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "<html>app</html>");
    /* Traversal and hidden files never leave the static folder. */
    const char *bad[] = {"/../outside.txt",
                         "/app/../../outside.txt",
                         "/%2e%2e/outside.txt",
                         "/app/%2e%2e/%2e%2e/outside.txt",
                         "/.hidden",
                         "/app/..%2f..%2foutside.txt"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        do_req("GET", bad[i], NULL, 0, NULL, &r);
        if (strstr(r.body, "outside-secret") || strstr(r.body, "hidden") == r.body)
            fail_msg("%s leaked a file", bad[i]);
        assert_true(r.status == 404 || r.status == 400);
    }
}

static void test_metrics(void **state)
{
    (void)state;
    struct reply r;
    do_req("GET", "/api/v1/items/x", NULL, 0, NULL, &r);
    orr_buf m = ORR_BUF_INIT;
    /* Completion is reported after the response is sent: give MHD a moment. */
    for (int i = 0; i < 50; i++) {
        orr_buf_reset(&m);
        gx_server_metrics(srv, &m);
        if (strstr(m.data, "galaxy_http_request_seconds_count{method=\"GET\",route=\"/api/v1/"
                           "items/{key}\"} 0") == NULL)
            break;
        usleep(10000);
    }
    assert_non_null(strstr(m.data, "galaxy_http_requests_total{method=\"GET\",route=\"/api/v1/"
                                   "items/{key}\",code=\"2xx\"}"));
    assert_non_null(strstr(m.data, "# TYPE galaxy_http_request_seconds histogram"));
    assert_non_null(strstr(m.data, "le=\"+Inf\""));
    orr_buf_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_and_errors), cmocka_unit_test(test_body_too_large),
        cmocka_unit_test(test_auth_hook),         cmocka_unit_test(test_static_files),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_gx_cache.c - galaxyd's response cache and verified-token cache, over
 * real loopback HTTP (libcurl) against gx_server:
 *   - the key holds path, every query argument and the caller's role/teams;
 *   - a write (any non-GET) makes everything cached stale at once;
 *   - no answer is ever served older than the TTL, counted from before the
 *     handler computed it, and past half the TTL the refresh runs in the
 *     background while readers are still answered from the entry;
 *   - errors are never cached, and a negative TTL turns the cache off;
 *   - while no event stream keeps the cache in step, an entry lives at most
 *     the fallback bound whatever the TTL;
 *   - a remembered token is still refused once expired or under another
 *     secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "gx_http.h"
#include "gx_jwt.h"
#include "gx_paused.h"
#include "halley.pb-c.h"
#include "orr_rpc.h"

static atomic_int calls;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Answers the call number, when it computed, and what it was asked. */
static void h_count(gx_req *req, gx_resp *resp)
{
    if (gx_cache_get(req, resp))
        return;
    int n = atomic_fetch_add(&calls, 1) + 1;
    const char *x = gx_req_query(req, "x");
    if (x && strcmp(x, "bad") == 0) {
        gx_resp_fail(resp, ORR_EINVAL, "x", "bad on purpose");
        return;
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:i,s:I,s:s}", "n", n, "at", (json_int_t)mono_ms(), "x", x ? x : ""));
    gx_cache_put(req, resp);
}

static void h_write(gx_req *req, gx_resp *resp)
{
    (void)req;
    gx_resp_json(resp, 200, json_pack("{s:b}", "ok", 1));
}

/* "Bearer <role>[:<team>]" */
static int auth_hook(gx_req *req, gx_resp *resp)
{
    const char *h = gx_req_header(req, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0) {
        gx_resp_fail(resp, ORR_EAUTH, "authorization", "login required");
        return 1;
    }
    const char *colon = strchr(h + 7, ':');
    char role[32];
    snprintf(role, sizeof(role), "%.*s", (int)(colon ? colon - (h + 7) : (long)strlen(h + 7)),
             h + 7);
    req->who.role = strcmp(role, "admin") == 0 ? GX_ROLE_ADMIN : GX_ROLE_VIEWER;
    req->who.name = "tester";
    const char **teams = orr_arena_calloc(req->arena, 2, sizeof(*teams));
    if (colon)
        teams[0] = orr_arena_strdup(req->arena, colon + 1);
    req->who.teams = teams;
    return 0;
}

static const gx_route routes[] = {
    {"GET", "/api/v1/count", h_count, GX_ROLE_VIEWER, "count"},
    {"POST", "/api/v1/write", h_write, GX_ROLE_VIEWER, "write"},
};

struct reply {
    long status;
    char body[4096];
    size_t len;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct reply *r = ud;
    size_t k = sz * n, room = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

static json_t *call(gx_server *s, const char *method, const char *path, const char *who,
                    long *status)
{
    char url[512], auth[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", gx_server_port(s), path);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", who);
    struct reply r = {0};
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (status)
        *status = r.status;
    json_t *v = json_loads(r.body, 0, NULL);
    assert_non_null(v);
    return v;
}

/* The handler's call number behind GET path as who (expects 200). */
static int n_of(gx_server *s, const char *path, const char *who)
{
    long st;
    json_t *v = call(s, "GET", path, who, &st);
    assert_int_equal(st, 200);
    int n = (int)json_integer_value(json_object_get(v, "n"));
    json_decref(v);
    return n;
}

static gx_server *start(int ttl_ms)
{
    gx_server_opts o = {.listen = "127.0.0.1:0",
                        .threads = 2,
                        .routes = routes,
                        .nroutes = sizeof(routes) / sizeof(routes[0]),
                        .auth = auth_hook,
                        .cache_ttl_ms = ttl_ms};
    gx_server *s = NULL;
    orr_err e;
    assert_int_equal(gx_server_start(&o, &s, &e), ORR_OK);
    gx_cache_set_synced(s, 1); /* as when halleyd's events keep it in step */
    atomic_store(&calls, 0);
    return s;
}

static void test_key(void **state)
{
    (void)state;
    gx_server *s = start(60000);
    int a = n_of(s, "/api/v1/count?x=1", "viewer:etl");
    assert_int_equal(n_of(s, "/api/v1/count?x=1", "viewer:etl"), a); /* hit */
    int b = n_of(s, "/api/v1/count?x=2", "viewer:etl");              /* other query */
    assert_int_not_equal(b, a);
    int c = n_of(s, "/api/v1/count?x=1", "admin:etl"); /* other role */
    assert_int_not_equal(c, a);
    assert_int_not_equal(c, b);
    int d = n_of(s, "/api/v1/count?x=1", "viewer:ads"); /* other team */
    assert_int_not_equal(d, a);
    /* "x=1&2" as one value is not x=1 plus an argument "2". */
    int e1 = n_of(s, "/api/v1/count?x=1%262", "viewer:etl");
    int e2 = n_of(s, "/api/v1/count?x=1&2", "viewer:etl");
    assert_int_not_equal(e1, e2);
    assert_int_equal(n_of(s, "/api/v1/count?x=1", "viewer:etl"), a);
    gx_cache_stats st;
    gx_cache_get_stats(s, &st);
    assert_true(st.hits >= 2);
    gx_server_stop(s);
}

static void test_write_invalidates(void **state)
{
    (void)state;
    gx_server *s = start(60000);
    int a = n_of(s, "/api/v1/count", "viewer");
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), a);
    long st;
    json_decref(call(s, "POST", "/api/v1/write", "viewer", &st));
    assert_int_equal(st, 200);
    int b = n_of(s, "/api/v1/count", "viewer");
    assert_int_not_equal(b, a);
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), b);
    gx_server_stop(s);
}

static void test_errors_not_cached_and_off(void **state)
{
    (void)state;
    gx_server *s = start(60000);
    long st;
    for (int i = 0; i < 3; i++) {
        json_decref(call(s, "GET", "/api/v1/count?x=bad", "viewer", &st));
        assert_int_equal(st, 400);
    }
    assert_int_equal(atomic_load(&calls), 3);
    gx_server_stop(s);
    s = start(-1);
    int a = n_of(s, "/api/v1/count", "viewer");
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), a + 1);
    gx_server_stop(s);
}

/* For 1.2 s and at least 40 reads with a 200 ms TTL (steady, with pauses
 * past the TTL): no answer is older than the TTL, the handler runs a handful
 * of times (not per read), and the entry is renewed in the background. The
 * read count, not only the clock, ends the loop, so a slow machine still
 * makes enough reads; the bound on handler runs follows the time it took. */
static void test_staleness_bound(void **state)
{
    (void)state;
    const int ttl = 200;
    gx_server *s = start(ttl);
    int64_t start = mono_ms(), end = start + 1200;
    int reads = 0, seen_max = 0;
    while (mono_ms() < end || reads < 40) {
        int64_t sent = mono_ms();
        long st;
        json_t *v = call(s, "GET", "/api/v1/count", "viewer", &st);
        assert_int_equal(st, 200);
        int64_t at = json_integer_value(json_object_get(v, "at"));
        int n = (int)json_integer_value(json_object_get(v, "n"));
        json_decref(v);
        if (sent - at >= ttl)
            fail_msg("answer computed at %lld served to a read sent at %lld (ttl %d ms)",
                     (long long)at, (long long)sent, ttl);
        if (n > seen_max)
            seen_max = n;
        reads++;
        /* Mostly steady reads; now and then a pause longer than the TTL, after
         * which the entry must not be served at all. */
        usleep(reads % 30 == 29 ? (useconds_t)(ttl + 30) * 1000 : 5000);
    }
    int64_t took = mono_ms() - start;
    gx_cache_stats cs;
    gx_cache_get_stats(s, &cs);
    gx_server_stop(s);
    assert_true(seen_max >= 3);               /* it was renewed */
    assert_true(atomic_load(&calls) < reads); /* but not per read */
    assert_true(atomic_load(&calls) <= took / (ttl / 2) + reads / 30 + 2);
    assert_true(cs.refreshes >= 1);
}

/* Not in step with events: a 60 s TTL is capped at GX_CACHE_FALLBACK_MS. The
 * second read is sent after a pause longer than that bound, so it must not
 * be the cached answer; back in step, the entry is served again. */
static void test_fallback_when_not_synced(void **state)
{
    (void)state;
    gx_server *s = start(60000);
    gx_cache_set_synced(s, 0);
    int a = n_of(s, "/api/v1/count", "viewer");
    usleep((GX_CACHE_FALLBACK_MS + 50) * 1000);
    int b = n_of(s, "/api/v1/count", "viewer");
    assert_int_not_equal(b, a);
    gx_cache_set_synced(s, 1);
    usleep((GX_CACHE_FALLBACK_MS + 50) * 1000);
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), b); /* the TTL again */
    gx_server_stop(s);
}

/* An answer built from the paused-workflow map may be cached after the
 * response cache's own event made it stale and before the map's event
 * arrives (two streams): so dropping the map makes the cache stale as
 * well. Built here without events: an entry is cached, the map is dropped
 * (gx_paused_forget, as after a write), the next read must be computed
 * again; with the server unset, a drop no longer touches it. The watcher
 * dials an address where nothing listens: it never comes in step, which
 * changes nothing here. */
static void test_paused_drop_invalidates(void **state)
{
    (void)state;
    gx_server *s = start(60000);
    orr_rpc_client *c = NULL;
    orr_err e;
    assert_int_equal(
        orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, "127.0.0.1:1", "t", &c, &e),
        ORR_OK);
    gx_paused *p = NULL;
    assert_int_equal(gx_paused_start(c, &p, &e), ORR_OK);
    gx_paused_set_cache(p, s);
    int a = n_of(s, "/api/v1/count", "viewer");
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), a); /* cached */
    gx_cache_stats before, after;
    gx_cache_get_stats(s, &before);
    gx_paused_forget(p);
    gx_cache_get_stats(s, &after);
    assert_true(after.invalidations > before.invalidations);
    int b = n_of(s, "/api/v1/count", "viewer");
    assert_int_not_equal(b, a);
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), b); /* cached again */
    gx_paused_set_cache(p, NULL);
    gx_paused_forget(p);
    assert_int_equal(n_of(s, "/api/v1/count", "viewer"), b); /* untouched */
    gx_server_stop(s);
    gx_paused_stop(p);
    orr_rpc_client_destroy(c);
}

static void test_token_cache(void **state)
{
    (void)state;
    static const unsigned char secret[] = "0123456789abcdef0123456789abcdef-cache";
    static const unsigned char other[] = "another-secret-another-secret-another!";
    static const char *const teams[] = {"etl", NULL};
    const time_t now = 1800000000;
    gx_principal who = {.user_id = 9, .name = "carol", .role = GX_ROLE_ADMIN, .teams = teams};
    char *tok = NULL;
    orr_err e;
    assert_int_equal(gx_jwt_issue(secret, sizeof(secret) - 1, &who, 60, now, &tok, &e), ORR_OK);
    orr_arena *a = orr_arena_create(0);
    gx_principal got;
    for (int i = 0; i < 3; i++) { /* the 2nd and 3rd come from the cache */
        memset(&got, 0, sizeof(got));
        assert_int_equal(gx_jwt_verify(secret, sizeof(secret) - 1, tok, now + 1, a, &got, &e),
                         ORR_OK);
        assert_int_equal(got.user_id, 9);
        assert_string_equal(got.name, "carol");
        assert_int_equal(got.role, GX_ROLE_ADMIN);
        assert_string_equal(got.teams[0], "etl");
        assert_null(got.teams[1]);
    }
    assert_int_equal(gx_jwt_verify(other, sizeof(other) - 1, tok, now + 1, a, &got, &e), ORR_EAUTH);
    assert_int_equal(gx_jwt_verify(secret, sizeof(secret) - 1, tok, now + 60, a, &got, &e),
                     ORR_EAUTH);
    assert_non_null(strstr(e.msg, "expired"));
    /* A token one character longer or shorter is another token. */
    size_t n = strlen(tok);
    tok[n - 1] = '\0';
    assert_int_equal(gx_jwt_verify(secret, sizeof(secret) - 1, tok, now + 1, a, &got, &e),
                     ORR_EAUTH);
    gx_jwt_cache_clear();
    orr_arena_destroy(a);
    free(tok);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_write_invalidates),
        cmocka_unit_test(test_errors_not_cached_and_off),
        cmocka_unit_test(test_staleness_bound),
        cmocka_unit_test(test_fallback_when_not_synced),
        cmocka_unit_test(test_paused_drop_invalidates),
        cmocka_unit_test(test_token_cache),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}

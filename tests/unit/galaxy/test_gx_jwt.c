/* test_gx_jwt.c - session tokens: our own checks of algorithm, expiry and claims. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jwt.h>

#include "gx_jwt.h"

static const unsigned char secret[] = "0123456789abcdef0123456789abcdef-test";
#define SECRET_LEN (sizeof(secret) - 1)
static const time_t now = 1800000000;

static char *issue(int64_t ttl)
{
    static const char *const teams[] = {"etl", "ads", NULL};
    gx_principal who = {.user_id = 7, .name = "alice", .role = GX_ROLE_DEVELOPER, .teams = teams};
    char *tok = NULL;
    orr_err e;
    assert_int_equal(gx_jwt_issue(secret, SECRET_LEN, &who, ttl, now, &tok, &e), ORR_OK);
    return tok;
}

static void test_round_trip(void **state)
{
    (void)state;
    char *tok = issue(3600);
    orr_arena *a = orr_arena_create(0);
    gx_principal who;
    orr_err e;
    assert_int_equal(gx_jwt_verify(secret, SECRET_LEN, tok, now + 10, a, &who, &e), ORR_OK);
    assert_int_equal(who.user_id, 7);
    assert_string_equal(who.name, "alice");
    assert_int_equal(who.role, GX_ROLE_DEVELOPER);
    assert_string_equal(who.teams[0], "etl");
    assert_string_equal(who.teams[1], "ads");
    assert_null(who.teams[2]);
    orr_arena_destroy(a);
    free(tok);
}

static void expect_refused(const char *tok, time_t at, const char *why)
{
    orr_arena *a = orr_arena_create(0);
    gx_principal who;
    orr_err e;
    assert_int_equal(gx_jwt_verify(secret, SECRET_LEN, tok, at, a, &who, &e), ORR_EAUTH);
    if (!strstr(e.msg, why))
        fail_msg("reason \"%s\" lacks \"%s\"", e.msg, why);
    orr_arena_destroy(a);
}

static void test_expired_and_tampered(void **state)
{
    (void)state;
    char *tok = issue(60);
    expect_refused(tok, now + 60, "expired");
    expect_refused(tok, now + 100000, "expired");
    /* Flip one character of the signature. */
    char *bad = strdup(tok);
    size_t n = strlen(bad);
    bad[n - 2] = bad[n - 2] == 'A' ? 'B' : 'A';
    expect_refused(bad, now, "signature");
    free(bad);
    /* Another secret. */
    orr_arena *a = orr_arena_create(0);
    gx_principal who;
    orr_err e;
    static const unsigned char other[] = "another-secret-another-secret-another";
    assert_int_equal(gx_jwt_verify(other, sizeof(other) - 1, tok, now, a, &who, &e), ORR_EAUTH);
    orr_arena_destroy(a);
    expect_refused("", now, "malformed");
    expect_refused("not.a.jwt", now, "");
    free(tok);
}

/* A token made by libjwt itself with a chosen algorithm and grants. */
static char *forge(jwt_alg_t alg, int with_exp)
{
    jwt_t *j;
    assert_int_equal(jwt_new(&j), 0);
    jwt_add_grant(j, "sub", "1");
    jwt_add_grant(j, "name", "mallory");
    jwt_add_grant(j, "role", "admin");
    if (with_exp)
        jwt_add_grant_int(j, "exp", (long)(now + 3600));
    if (alg == JWT_ALG_NONE)
        assert_int_equal(jwt_set_alg(j, JWT_ALG_NONE, NULL, 0), 0);
    else
        assert_int_equal(jwt_set_alg(j, alg, secret, (int)SECRET_LEN), 0);
    char *s = jwt_encode_str(j);
    jwt_free(j);
    return s;
}

static void test_algorithm_pinned(void **state)
{
    (void)state;
    char *hs384 = forge(JWT_ALG_HS384, 1);
    expect_refused(hs384, now, "HS256");
    free(hs384);
    char *none = forge(JWT_ALG_NONE, 1);
    expect_refused(none, now, "");
    free(none);
    char *noexp = forge(JWT_ALG_HS256, 0);
    expect_refused(noexp, now, "expiry");
    free(noexp);
    char *ok = forge(JWT_ALG_HS256, 1);
    orr_arena *a = orr_arena_create(0);
    gx_principal who;
    orr_err e;
    assert_int_equal(gx_jwt_verify(secret, SECRET_LEN, ok, now, a, &who, &e), ORR_OK);
    assert_int_equal(who.role, GX_ROLE_ADMIN);
    assert_null(who.teams[0]);
    orr_arena_destroy(a);
    free(ok);
}

static void test_short_secret(void **state)
{
    (void)state;
    gx_principal who = {.user_id = 1, .name = "x", .role = GX_ROLE_VIEWER, .teams = NULL};
    char *tok = NULL;
    orr_err e;
    assert_int_equal(gx_jwt_issue((const unsigned char *)"short", 5, &who, 60, now, &tok, &e),
                     ORR_EINVAL);
    assert_null(tok);
    assert_int_equal(gx_role_parse("admin"), GX_ROLE_ADMIN);
    assert_int_equal(gx_role_parse("root"), GX_ROLE_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_expired_and_tampered),
        cmocka_unit_test(test_algorithm_pinned),
        cmocka_unit_test(test_short_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

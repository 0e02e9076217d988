/* test_lib_config.c - config file + environment: values, precedence, and errors that
 * name the file, the line and the key. */
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

#include "orr_config.h"

static const orr_cfg_key schema[] = {
    {"halley", "listen", ORR_CFG_STRING, "127.0.0.1:7070", 0, 0, 0, "gRPC listen address"},
    {"halley", "pool_size", ORR_CFG_INT, "8", 0, 1, 256, "PostgreSQL connections"},
    {"halley", "token", ORR_CFG_SECRET, NULL, 1, 0, 0, "service token"},
    {"halley", "tls", ORR_CFG_BOOL, "false", 0, 0, 0, NULL},
    {"halley", "event_retention", ORR_CFG_DURATION, "24h", 0, 0, 0, NULL},
    {"halley", "max_msg", ORR_CFG_SIZE, "4m", 0, 0, 0, NULL},
};
#define NSCHEMA (sizeof(schema) / sizeof(schema[0]))

static char path[256];

static void write_file(const char *text)
{
    snprintf(path, sizeof(path), "/tmp/orr-test-config-%d.conf", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static orr_status load(const char *text, char *const *env, orr_config **cfg, orr_err *e)
{
    write_file(text);
    orr_err_clear(e);
    orr_status rc = orr_config_load(schema, NSCHEMA, path, env, cfg, e);
    unlink(path);
    return rc;
}

static char *const no_env[] = {NULL};

static void test_values_and_defaults(void **state)
{
    (void)state;
    orr_config *cfg;
    orr_err e;
    assert_int_equal(load("# comment\n\n[halley]\n  pool_size = 16  \ntoken = \"s3cret\"\n"
                          "tls = yes\nevent_retention = 90m\nmax_msg = 64k\n[log]\nlevel = debug\n",
                          no_env, &cfg, &e),
                     ORR_OK);
    assert_string_equal(orr_config_str(cfg, "halley", "listen"), "127.0.0.1:7070");
    assert_int_equal(orr_config_int(cfg, "halley", "pool_size"), 16);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "s3cret");
    assert_true(orr_config_bool(cfg, "halley", "tls"));
    assert_int_equal(orr_config_int(cfg, "halley", "event_retention"), 90 * 60 * 1000);
    assert_int_equal(orr_config_int(cfg, "halley", "max_msg"), 64 * 1024);
    assert_string_equal(orr_config_str(cfg, "log", "level"), "debug");
    assert_string_equal(orr_config_origin(cfg, "halley", "listen"), "default");
    assert_non_null(strstr(orr_config_origin(cfg, "halley", "pool_size"), ":4"));
    orr_config_free(cfg);
}

static void test_env_overrides_file(void **state)
{
    (void)state;
    char *const env[] = {"ORRERY_HALLEY_POOL_SIZE=32", "ORRERY_HALLEY_TOKEN=from-env", "OTHER=1",
                         NULL};
    orr_config *cfg;
    orr_err e;
    assert_int_equal(load("[halley]\npool_size = 16\n", env, &cfg, &e), ORR_OK);
    assert_int_equal(orr_config_int(cfg, "halley", "pool_size"), 32);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "from-env");
    assert_string_equal(orr_config_origin(cfg, "halley", "pool_size"),
                        "environment ORRERY_HALLEY_POOL_SIZE");
    orr_config_free(cfg);
}

static void expect_error(const char *text, char *const *env, const char *field, int line,
                         const char *needle)
{
    orr_config *cfg = (orr_config *)0x1;
    orr_err e;
    assert_int_equal(load(text, env, &cfg, &e), ORR_EINVAL);
    assert_null(cfg);
    assert_string_equal(e.field, field);
    if (line > 0) {
        char where[300];
        snprintf(where, sizeof(where), "%s:%d:", path, line);
        if (!strstr(e.msg, where))
            fail_msg("message \"%s\" lacks \"%s\"", e.msg, where);
    }
    if (!strstr(e.msg, needle))
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, needle);
}

static void test_errors_name_file_line_key(void **state)
{
    (void)state;
    expect_error("[halley]\ntoken=x\npool_szie = 3\n", no_env, "halley.pool_szie", 3,
                 "unknown key");
    expect_error("[halley]\ntoken=x\n\npool_size = many\n", no_env, "halley.pool_size", 4,
                 "must be an integer");
    expect_error("[halley]\ntoken=x\npool_size = 1000\n", no_env, "halley.pool_size", 3,
                 "between 1 and 256");
    expect_error("[halley]\ntoken=x\ntls = maybe\n", no_env, "halley.tls", 3, "boolean");
    expect_error("[halley]\ntoken=x\nevent_retention = 10\n", no_env, "halley.event_retention", 3,
                 "duration");
    expect_error("[halley]\ntoken=x\nmax_msg = 4x\n", no_env, "halley.max_msg", 3, "size");
    expect_error("[halley]\npool_size = 2\n", no_env, "halley.token", 0, "required key is missing");
    expect_error("[galaxi]\nport = 1\n", no_env, "galaxi", 1, "unknown section");
    /* Another daemon's section is skipped, but checking resumes after it. */
    expect_error("[galaxy]\nanything = 1\n[halley]\ntoken=x\nbogus = 1\n", no_env, "halley.bogus",
                 5, "unknown key");
    expect_error("token = x\n", no_env, "token", 1, "outside any [section]");
    expect_error("[halley\n", no_env, "", 1, "malformed section");
    expect_error("[halley]\njust words\n", no_env, "", 2, "expected 'key = value'");
    char *const bad_env[] = {"ORRERY_HALLEY_POOL_SIZE=zero", NULL};
    expect_error("[halley]\ntoken=x\n", bad_env, "halley.pool_size", 0,
                 "environment ORRERY_HALLEY_POOL_SIZE");
}

static void test_other_daemons_sections_skipped(void **state)
{
    (void)state;
    orr_config *cfg;
    orr_err e;
    assert_int_equal(
        load("[galaxy]\nlisten = :8080\nwhatever = 1\n[halley]\ntoken = t\n", no_env, &cfg, &e),
        ORR_OK);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "t");
    orr_config_free(cfg);
}

static void test_missing_file(void **state)
{
    (void)state;
    orr_config *cfg;
    orr_err e;
    assert_int_equal(orr_config_load(schema, NSCHEMA, "/nonexistent/orrery.conf", no_env, &cfg, &e),
                     ORR_EIO);
    assert_non_null(strstr(e.msg, "/nonexistent/orrery.conf"));
}

static void test_print_masks_secrets(void **state)
{
    (void)state;
    orr_config *cfg;
    orr_err e;
    assert_int_equal(load("[halley]\ntoken = topsecret\n", no_env, &cfg, &e), ORR_OK);
    char out[4096] = "";
    FILE *f = fmemopen(out, sizeof(out) - 1, "w");
    orr_config_print(cfg, f);
    fclose(f);
    assert_null(strstr(out, "topsecret"));
    assert_non_null(strstr(out, "token = <set>"));
    assert_non_null(strstr(out, "[halley]"));
    assert_non_null(strstr(out, "pool_size = 8"));
    assert_non_null(strstr(out, "[log]"));
    orr_config_free(cfg);
}

/* A secret file at secret_path with the given content and mode. */
static char secret_path[256];

static void write_secret(const char *text, mode_t mode)
{
    snprintf(secret_path, sizeof(secret_path), "/tmp/orr-test-secret-%d", (int)getpid());
    unlink(secret_path);
    FILE *f = fopen(secret_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(secret_path, mode), 0);
}

static void test_secret_file(void **state)
{
    (void)state;
    orr_config *cfg;
    orr_err e;
    char text[512];
    /* Read from the file, one trailing newline dropped; printed masked with its origin. */
    write_secret("from-file\n", 0600);
    snprintf(text, sizeof(text), "[halley]\ntoken_file = %s\n", secret_path);
    assert_int_equal(load(text, no_env, &cfg, &e), ORR_OK);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "from-file");
    assert_non_null(strstr(orr_config_origin(cfg, "halley", "token"), secret_path));
    assert_string_equal(orr_config_str(cfg, "halley", "token_file"), secret_path);
    char out[4096] = "";
    FILE *f = fmemopen(out, sizeof(out) - 1, "w");
    orr_config_print(cfg, f);
    fclose(f);
    assert_null(strstr(out, "from-file"));
    assert_non_null(strstr(out, "token = <set>"));
    orr_config_free(cfg);
    /* 0400 is fine too; CRLF dropped, inner spaces kept. */
    write_secret("a b\r\n", 0400);
    assert_int_equal(load(text, no_env, &cfg, &e), ORR_OK);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "a b");
    orr_config_free(cfg);
    /* The environment names the file: it wins over the file's inline token. */
    char envvar[300];
    snprintf(envvar, sizeof(envvar), "ORRERY_HALLEY_TOKEN_FILE=%s", secret_path);
    char *const env[] = {envvar, NULL};
    assert_int_equal(load("[halley]\ntoken = inline\n", env, &cfg, &e), ORR_OK);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "a b");
    orr_config_free(cfg);
    /* An inline token in the environment wins over the file's token_file. */
    char *const env2[] = {"ORRERY_HALLEY_TOKEN=envtok", NULL};
    assert_int_equal(load(text, env2, &cfg, &e), ORR_OK);
    assert_string_equal(orr_config_str(cfg, "halley", "token"), "envtok");
    orr_config_free(cfg);
    unlink(secret_path);
}

static void test_secret_file_refused(void **state)
{
    (void)state;
    char text[512];
    snprintf(secret_path, sizeof(secret_path), "/tmp/orr-test-secret-%d", (int)getpid());
    snprintf(text, sizeof(text), "[halley]\npool_size = 2\ntoken_file = %s\n", secret_path);
    /* Missing file. */
    unlink(secret_path);
    expect_error(text, no_env, "halley.token_file", 3, "cannot open");
    expect_error(text, no_env, "halley.token_file", 3, secret_path);
    /* Readable by group or others, writable by others. */
    write_secret("tok\n", 0640);
    expect_error(text, no_env, "halley.token_file", 3, "mode 0640; must be 0600 or 0400");
    write_secret("tok\n", 0604);
    expect_error(text, no_env, "halley.token_file", 3, "open to group or others");
    write_secret("tok\n", 0602);
    expect_error(text, no_env, "halley.token_file", 3, "open to group or others");
    /* Empty, or only a newline. */
    write_secret("\n", 0600);
    expect_error(text, no_env, "halley.token_file", 3, "is empty");
    /* Not the daemon's user (root can give it away to make the case). */
    write_secret("tok\n", 0600);
    if (geteuid() == 0) {
        assert_int_equal(chown(secret_path, 65534, 65534), 0);
        expect_error(text, no_env, "halley.token_file", 3, "not by this daemon's user");
    }
    unlink(secret_path);
    /* A directory is not a regular file. */
    char dirtext[512];
    snprintf(dirtext, sizeof(dirtext), "[halley]\ntoken_file = /tmp\n");
    expect_error(dirtext, no_env, "halley.token_file", 2, "not a regular file");
    /* Both the key and its file in the same place. */
    write_secret("tok\n", 0600);
    snprintf(text, sizeof(text), "[halley]\ntoken = x\ntoken_file = %s\n", secret_path);
    expect_error(text, no_env, "halley.token_file", 3, "set token or token_file, not both");
    unlink(secret_path);
    /* The required key with neither form: the message names both. */
    expect_error("[halley]\npool_size = 2\n", no_env, "halley.token", 0, "token_file");
}

static void test_parse_helpers(void **state)
{
    (void)state;
    int64_t v;
    int b;
    assert_int_equal(orr_config_parse_duration("250ms", &v), ORR_OK);
    assert_int_equal(v, 250);
    assert_int_equal(orr_config_parse_duration("3h", &v), ORR_OK);
    assert_int_equal(v, 3 * 3600 * 1000);
    assert_int_equal(orr_config_parse_duration("-1s", &v), ORR_EINVAL);
    assert_int_equal(orr_config_parse_duration("99999999999999999d", &v), ORR_EINVAL);
    assert_int_equal(orr_config_parse_duration("", &v), ORR_EINVAL);
    assert_int_equal(orr_config_parse_size("2g", &v), ORR_OK);
    assert_int_equal(v, 2LL * 1024 * 1024 * 1024);
    assert_int_equal(orr_config_parse_size("12", &v), ORR_OK);
    assert_int_equal(v, 12);
    assert_int_equal(orr_config_parse_size("1t", &v), ORR_EINVAL);
    assert_int_equal(orr_config_parse_bool("OFF", &b), ORR_OK);
    assert_false(b);
    assert_int_equal(orr_config_parse_bool("2", &b), ORR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_and_defaults),
        cmocka_unit_test(test_env_overrides_file),
        cmocka_unit_test(test_errors_name_file_line_key),
        cmocka_unit_test(test_other_daemons_sections_skipped),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_print_masks_secrets),
        cmocka_unit_test(test_parse_helpers),
        cmocka_unit_test(test_secret_file),
        cmocka_unit_test(test_secret_file_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

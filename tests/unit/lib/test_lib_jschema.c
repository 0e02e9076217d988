/*
 * test_lib_jschema.c - unit tests of orr_jschema: every keyword passing and
 * failing with the exact instance path and message expected, schemas refused
 * at load with their schema path, the oneOf error choice, limits, and
 * validation from several threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>

#include <cmocka.h>

#include "orr_buf.h"
#include "orr_jschema.h"

/* ------------------------------------------------------------ helpers */

static json_t *parse(const char *text, int line)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j)
        fail_msg("line %d: bad test JSON %s: %s", line, text, je.text);
    return j;
}

static orr_jschema *load_at(const char *schema, int line)
{
    json_t *j = parse(schema, line);
    orr_jschema *s = NULL;
    orr_err err;
    orr_status rc = orr_jschema_load(j, &s, &err);
    json_decref(j);
    if (rc != ORR_OK)
        fail_msg("line %d: schema refused: %s: %s", line, err.field, err.msg);
    assert_non_null(s);
    return s;
}
#define LOAD(schema) load_at((schema), __LINE__)

static void ok_at(const orr_jschema *s, const char *inst, int line)
{
    json_t *j = parse(inst, line);
    orr_err err;
    orr_status rc = orr_jschema_validate(s, j, "spec", &err);
    json_decref(j);
    if (rc != ORR_OK)
        fail_msg("line %d: %s refused: %s: %s", line, inst, err.field, err.msg);
    assert_int_equal(err.code, ORR_OK);
}
#define OK(s, inst) ok_at((s), (inst), __LINE__)

/* Validate with root path `root`; expect the exact field and a message
 * containing msg. */
static void bad_at(const orr_jschema *s, const char *inst, const char *root, const char *field,
                   const char *msg, int line)
{
    json_t *j = parse(inst, line);
    orr_err err;
    orr_status rc = orr_jschema_validate(s, j, root, &err);
    json_decref(j);
    if (rc != ORR_EINVAL)
        fail_msg("line %d: %s accepted (rc %d)", line, inst, rc);
    if (strcmp(err.field, field) != 0 || !strstr(err.msg, msg))
        fail_msg("line %d: %s: got [%s: %s], want [%s: ...%s...]", line, inst, err.field, err.msg,
                 field, msg);
    assert_int_equal(err.code, ORR_EINVAL);
}
#define BAD(s, inst, field, msg)      bad_at((s), (inst), "spec", (field), (msg), __LINE__)
#define BAD_ROOT(s, inst, root, f, m) bad_at((s), (inst), (root), (f), (m), __LINE__)

static void load_bad_at(const char *schema, const char *field, const char *msg, int line)
{
    json_t *j = parse(schema, line);
    orr_jschema *s = (orr_jschema *)0x1;
    orr_err err;
    orr_status rc = orr_jschema_load(j, &s, &err);
    json_decref(j);
    if (rc != ORR_EINVAL)
        fail_msg("line %d: schema %s accepted", line, schema);
    if (strcmp(err.field, field) != 0 || !strstr(err.msg, msg))
        fail_msg("line %d: got [%s: %s], want [%s: ...%s...]", line, err.field, err.msg, field,
                 msg);
    assert_ptr_equal(s, (orr_jschema *)0x1); /* untouched */
}
#define LOAD_BAD(schema, field, msg) load_bad_at((schema), (field), (msg), __LINE__)

/* ------------------------------------------------------------ type, enum, const */

static void test_type(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"type\":\"string\"}");
    OK(s, "\"x\"");
    BAD(s, "3", "spec", "must be a string");
    BAD(s, "null", "spec", "must be a string");
    orr_jschema_free(s);

    s = LOAD("{\"type\":\"integer\"}");
    OK(s, "3");
    OK(s, "3.0"); /* a real with no fractional part is an integer */
    OK(s, "-0.0");
    BAD(s, "3.5", "spec", "must be an integer");
    BAD(s, "\"3\"", "spec", "must be an integer");
    BAD(s, "true", "spec", "must be an integer");
    orr_jschema_free(s);

    s = LOAD("{\"type\":\"number\"}");
    OK(s, "3");
    OK(s, "3.5");
    BAD(s, "[]", "spec", "must be a number");
    orr_jschema_free(s);

    s = LOAD("{\"type\":[\"string\",\"null\"]}");
    OK(s, "\"a\"");
    OK(s, "null");
    BAD(s, "{}", "spec", "must be a string or null");
    orr_jschema_free(s);

    s = LOAD("{\"type\":[\"object\",\"array\",\"boolean\"]}");
    OK(s, "{}");
    OK(s, "[]");
    OK(s, "false");
    BAD(s, "1", "spec", "must be an object, an array or a boolean");
    orr_jschema_free(s);
}

static void test_enum_const(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"enum\":[\"shell\",\"transfer\"]}");
    OK(s, "\"shell\"");
    OK(s, "\"transfer\"");
    BAD(s, "\"sql\"", "spec", "must be one of: shell, transfer");
    BAD(s, "1", "spec", "must be one of: shell, transfer");
    orr_jschema_free(s);

    s = LOAD("{\"enum\":[1, null, [1,2], {\"a\":1}]}");
    OK(s, "1.0"); /* numbers compare by value */
    OK(s, "null");
    OK(s, "[1,2.0]");
    OK(s, "{\"a\":1}");
    BAD(s, "[2,1]", "spec", "must be one of: 1, null, [1,2], {\"a\":1}");
    BAD(s, "{\"a\":1,\"b\":2}", "spec", "must be one of");
    orr_jschema_free(s);

    s = LOAD("{\"const\":\"shell\"}");
    OK(s, "\"shell\"");
    BAD(s, "\"shel\"", "spec", "must be \"shell\"");
    orr_jschema_free(s);

    s = LOAD("{\"const\":{\"x\":[1,true]}}");
    OK(s, "{\"x\":[1.0,true]}");
    BAD(s, "{\"x\":[1,false]}", "spec", "must be {\"x\":[1,true]}");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ numbers */

static void test_numbers(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"type\":\"integer\",\"minimum\":0}");
    OK(s, "0");
    OK(s, "7");
    BAD(s, "-1", "spec", "must be an integer >= 0");
    BAD(s, "\"x\"", "spec", "must be an integer >= 0");
    BAD(s, "1.5", "spec", "must be an integer >= 0");
    orr_jschema_free(s);

    s = LOAD("{\"minimum\":1.5,\"maximum\":10}");
    OK(s, "1.5");
    OK(s, "10");
    OK(s, "10.0");
    OK(s, "\"not a number: bounds do not apply\"");
    BAD(s, "1.4999", "spec", "must be >= 1.5 and <= 10");
    BAD(s, "11", "spec", "must be >= 1.5 and <= 10");
    orr_jschema_free(s);

    s = LOAD("{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}");
    OK(s, "0.5");
    BAD(s, "0", "spec", "must be a number > 0 and < 1");
    BAD(s, "1", "spec", "must be a number > 0 and < 1");
    orr_jschema_free(s);

    /* exact on large integers: doubles would round these together */
    s = LOAD("{\"maximum\":9007199254740993}");
    OK(s, "9007199254740993");
    BAD(s, "9007199254740994", "spec", "must be <= 9007199254740993");
    orr_jschema_free(s);

    s = LOAD("{\"multipleOf\":5}");
    OK(s, "15");
    OK(s, "-10");
    OK(s, "20.0");
    BAD(s, "12", "spec", "must be a multiple of 5");
    BAD(s, "2.5", "spec", "must be a multiple of 5");
    orr_jschema_free(s);

    s = LOAD("{\"multipleOf\":0.1}");
    OK(s, "0.3");
    OK(s, "12.7");
    BAD(s, "0.35", "spec", "must be a multiple of 0.1");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ strings */

static void test_string_length_unicode(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"minLength\":2,\"maxLength\":3}");
    OK(s, "\"ab\"");
    OK(s, "\"\\u65e5\\u672c\\u8a9e\""); /* 3 code points, 9 bytes */
    OK(s, "\"h\\u00e9\"");              /* 2 code points, 3 bytes */
    OK(s, "\"\\ud83d\\ude00x\"");       /* emoji (4 bytes) + x: 2 code points */
    BAD(s, "\"\\u65e5\\u672c\\u8a9e\\u6587\"", "spec", "must be at most 3 characters long");
    BAD(s, "\"\\u00e9\"", "spec", "must be at least 2 characters long");
    BAD(s, "\"abcd\"", "spec", "must be at most 3 characters long");
    OK(s, "12345"); /* length applies to strings only */
    orr_jschema_free(s);
}

static void test_pattern(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"pattern\":\"^[a-z][a-z0-9_]*$\"}");
    OK(s, "\"etl_daily2\"");
    BAD(s, "\"2etl\"", "spec", "must match pattern ^[a-z][a-z0-9_]*$");
    BAD(s, "\"etl-daily\"", "spec", "must match pattern");
    orr_jschema_free(s);

    /* unanchored, as JSON Schema says */
    s = LOAD("{\"pattern\":\"ab+c\"}");
    OK(s, "\"xxabbbcxx\"");
    BAD(s, "\"ac\"", "spec", "must match pattern ab+c");
    orr_jschema_free(s);

    /* ECMA shorthands translated */
    s = LOAD("{\"pattern\":\"^\\\\d{4}-\\\\d{2}-\\\\d{2}$\"}");
    OK(s, "\"2024-01-31\"");
    BAD(s, "\"2024-1-31\"", "spec", "must match pattern");
    BAD(s, "\"20x4-01-31\"", "spec", "must match pattern");
    orr_jschema_free(s);

    s = LOAD("{\"pattern\":\"^[\\\\w.\\\\-]+@\\\\S+$\"}");
    OK(s, "\"a.b-c_d@host\"");
    BAD(s, "\"a b@host\"", "spec", "must match pattern");
    BAD(s, "\"ab@ho st\"", "spec", "must match pattern");
    orr_jschema_free(s);

    s = LOAD("{\"pattern\":\"^(?:ab)+?\\\\.\\\\s*[\\\\]x]$\"}");
    OK(s, "\"abab. ]\"");
    OK(s, "\"ab.x\"");
    BAD(s, "\"ab.y\"", "spec", "must match pattern");
    orr_jschema_free(s);

    /* a key with a NUL byte does not cut matching short */
    s = LOAD("{\"pattern\":\"^a*$\"}");
    OK(s, "\"aaa\"");
    BAD(s, "\"aa\\u0000b\"", "spec", "must match pattern");
    orr_jschema_free(s);

    LOAD_BAD("{\"pattern\":\"[a-\"}", "pattern", "unterminated [");
    LOAD_BAD("{\"pattern\":\"(ab\"}", "pattern", "unmatched (");
    LOAD_BAD("{\"pattern\":\"ab)\"}", "pattern", "unmatched )");
    LOAD_BAD("{\"pattern\":\"[b-a]\"}", "pattern", "invalid regular expression");
    LOAD_BAD("{\"pattern\":\"a++\"}", "pattern", "nothing to repeat");
    LOAD_BAD("{\"pattern\":\"*a\"}", "pattern", "nothing to repeat");
    LOAD_BAD("{\"pattern\":\"a{2}{3}\"}", "pattern", "nothing to repeat");
    LOAD_BAD("{\"pattern\":\"a{99999999999999999999}\"}", "pattern", "number too big");
    LOAD_BAD("{\"pattern\":\"((a{99}){99}){99}\"}", "pattern", "pattern too complex");
    s = LOAD("{\"pattern\":\"^(ab){2,3}x{0,}c{,2}$\"}"); /* c{,2} is literal in ECMA */
    OK(s, "\"ababxxc{,2}\"");
    BAD(s, "\"abx\"", "spec", "must match pattern");
    orr_jschema_free(s);
    LOAD_BAD("{\"pattern\":5}", "pattern", "must be a string");
}

/* What ECMA-262 has and POSIX regular expressions had not. */
static void test_pattern_ecma(void **state)
{
    (void)state;
    /* lookahead: a password-like rule */
    orr_jschema *s = LOAD("{\"pattern\":\"^(?=.*\\\\d)(?=.*[a-z])[a-z\\\\d]{6,}$\"}");
    OK(s, "\"abc123\"");
    BAD(s, "\"abcdef\"", "spec", "must match pattern");
    BAD(s, "\"123456\"", "spec", "must match pattern");
    orr_jschema_free(s);

    /* negative lookahead and lookbehind */
    s = LOAD("{\"pattern\":\"^(?!tmp_)\\\\w+(?<!_old)$\"}");
    OK(s, "\"orders\"");
    BAD(s, "\"tmp_orders\"", "spec", "must match pattern");
    BAD(s, "\"orders_old\"", "spec", "must match pattern");
    orr_jschema_free(s);

    /* non-greedy: the shortest <...> before the first > */
    s = LOAD("{\"pattern\":\"^<.+?>$\"}");
    OK(s, "\"<a>\"");
    OK(s, "\"<a>b>\""); /* lazy still extends to reach $ */
    orr_jschema_free(s);
    s = LOAD("{\"pattern\":\"^<[^>]*?>[a-z]$\"}");
    OK(s, "\"<x>y\"");
    BAD(s, "\"<x>>y\"", "spec", "must match pattern");
    orr_jschema_free(s);

    /* backreference, named group, word boundary, \u escape, \d is ASCII */
    s = LOAD("{\"pattern\":\"^(\\\\w)\\\\1$\"}");
    OK(s, "\"aa\"");
    BAD(s, "\"ab\"", "spec", "must match pattern");
    orr_jschema_free(s);
    s = LOAD("{\"pattern\":\"^(?<q>['\\\"]).*\\\\k<q>$\"}");
    OK(s, "\"'x'\"");
    BAD(s, "\"'x\\\"\"", "spec", "must match pattern");
    orr_jschema_free(s);
    s = LOAD("{\"pattern\":\"\\\\bcat\\\\b\"}");
    OK(s, "\"a cat sat\"");
    BAD(s, "\"concatenate\"", "spec", "must match pattern");
    orr_jschema_free(s);
    s = LOAD("{\"pattern\":\"^caf\\\\u00e9$\"}");
    OK(s, "\"caf\\u00e9\"");
    orr_jschema_free(s);
    s = LOAD("{\"pattern\":\"^\\\\d$\"}");
    OK(s, "\"7\"");
    BAD(s, "\"\\u0667\"", "spec", "must match pattern"); /* ARABIC-INDIC DIGIT SEVEN */
    orr_jschema_free(s);

    /* "." is one character of UTF-8, $ only at the very end */
    s = LOAD("{\"pattern\":\"^.$\"}");
    OK(s, "\"\\u00e9\"");
    BAD(s, "\"ab\"", "spec", "must match pattern");
    orr_jschema_free(s);
    s = LOAD("{\"pattern\":\"^abc$\"}");
    BAD(s, "\"abc\\n\"", "spec", "must match pattern");
    orr_jschema_free(s);

    /* the same pattern twice in a schema, in pattern and patternProperties */
    s = LOAD("{\"properties\":{\"a\":{\"pattern\":\"^x\"},\"b\":{\"pattern\":\"^x\"}},"
             "\"patternProperties\":{\"^x\":{\"type\":\"integer\"}}}");
    OK(s, "{\"a\":\"x1\",\"b\":\"x2\",\"x3\":3}");
    BAD(s, "{\"a\":\"x1\",\"b\":\"y2\"}", "spec.b", "must match pattern ^x");
    BAD(s, "{\"x3\":\"3\"}", "spec.x3", "must be an integer");
    orr_jschema_free(s);

    /* PCRE2 syntax that ECMA-262 lacks is refused at load */
    LOAD_BAD("{\"pattern\":\"(?>a)\"}", "pattern", "group (?> is not ECMA-262");
    LOAD_BAD("{\"pattern\":\"(?i)a\"}", "pattern", "group (?i is not ECMA-262");
    LOAD_BAD("{\"pattern\":\"\\\\Aa\\\\z\"}", "pattern", "escape \\A is not ECMA-262");
    LOAD_BAD("{\"pattern\":\"[[:alpha:]]\"}", "pattern", "POSIX character classes");
    LOAD_BAD("{\"pattern\":\"a*?+\"}", "pattern", "nothing to repeat");
    LOAD_BAD("{\"patternProperties\":{\"\\\\Qa\":{}}}", "patternProperties.\\Qa",
             "escape \\Q is not ECMA-262");
}

/* A catastrophic pattern costs a bounded number of backtracking steps: the
 * match limit stops it and refuses the value, with a message that says so,
 * even under anyOf (a limit is not a mismatch another branch may absorb). */
static void test_pattern_match_limit(void **state)
{
    (void)state;
    char inst[64];
    memset(inst, 'a', 40);
    memcpy(inst + 40, "b", 2);
    char q[80];
    snprintf(q, sizeof q, "\"%s\"", inst);

    orr_jschema *s = LOAD("{\"pattern\":\"^(a|a)*$\"}");
    OK(s, "\"aaaa\"");
    BAD(s, q, "spec", "too costly to match against pattern ^(a|a)*$ (match limit exceeded)");
    orr_jschema_free(s);

    s = LOAD("{\"anyOf\":[{\"pattern\":\"^(a+)+$\"},{\"type\":\"string\"}]}");
    OK(s, "\"aaab\""); /* short: an honest mismatch, the second branch takes it */
    BAD(s, q, "spec", "too costly to match against pattern ^(a+)+$");
    orr_jschema_free(s);

    s = LOAD("{\"patternProperties\":{\"^(a|a)*$\":{}}}");
    char obj[96];
    snprintf(obj, sizeof obj, "{%s:1}", q);
    char field[80];
    snprintf(field, sizeof field, "spec.%s", inst);
    BAD(s, obj, field, "too costly to match against pattern");
    orr_jschema_free(s);
}

static void test_formats(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"format\":\"date-time\"}");
    OK(s, "\"2024-01-31T12:00:00Z\"");
    OK(s, "\"2024-02-29T23:59:59.123456+05:30\"");
    OK(s, "\"2016-12-31T23:59:60z\"");
    OK(s, "\"1999-12-31t00:00:00-08:00\"");
    OK(s, "42"); /* formats apply to strings only */
    BAD(s, "\"2023-02-29T00:00:00Z\"", "spec", "must be an RFC 3339 date-time");
    BAD(s, "\"2024-01-31 12:00:00Z\"", "spec", "date-time");
    BAD(s, "\"2024-01-31T12:00:00\"", "spec", "date-time");
    BAD(s, "\"2024-13-01T00:00:00Z\"", "spec", "date-time");
    BAD(s, "\"2024-01-31T24:00:00Z\"", "spec", "date-time");
    BAD(s, "\"2024-01-31T12:00:00.Z\"", "spec", "date-time");
    BAD(s, "\"2024-01-31T12:00:00+5:30\"", "spec", "date-time");
    orr_jschema_free(s);

    s = LOAD("{\"format\":\"date\"}");
    OK(s, "\"2000-02-29\"");
    BAD(s, "\"1900-02-29\"", "spec", "must be an RFC 3339 date");
    BAD(s, "\"2024-04-31\"", "spec", "date");
    BAD(s, "\"2024-4-30\"", "spec", "date");
    orr_jschema_free(s);

    s = LOAD("{\"format\":\"email\"}");
    OK(s, "\"ops@example.com\"");
    BAD(s, "\"ops@localhost\"", "spec", "must be an email address");
    BAD(s, "\"ops example@x.com\"", "spec", "email");
    BAD(s, "\"@x.com\"", "spec", "email");
    BAD(s, "\"a@b@c.com\"", "spec", "email");
    orr_jschema_free(s);

    s = LOAD("{\"format\":\"uri\"}");
    OK(s, "\"https://example.com/a?b=c\"");
    OK(s, "\"file:///var/data\"");
    BAD(s, "\"/relative/path\"", "spec", "must be a URI");
    BAD(s, "\"http://exa mple.com\"", "spec", "URI");
    orr_jschema_free(s);

    s = LOAD("{\"format\":\"hostname\"}");
    OK(s, "\"db-1.internal.example\"");
    OK(s, "\"localhost\"");
    BAD(s, "\"-db.example\"", "spec", "must be a hostname");
    BAD(s, "\"db_1.example\"", "spec", "hostname");
    BAD(s, "\"a..b\"", "spec", "hostname");
    orr_jschema_free(s);

    s = LOAD("{\"format\":\"not-a-known-format\"}");
    OK(s, "\"anything\"");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ objects */

static void test_objects(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"type\":\"object\","
                          "\"properties\":{\"name\":{\"type\":\"string\"},"
                          "  \"retries\":{\"type\":\"object\",\"properties\":{"
                          "    \"max\":{\"type\":\"integer\",\"minimum\":0}},"
                          "    \"additionalProperties\":false}},"
                          "\"required\":[\"name\"],"
                          "\"additionalProperties\":false}");
    OK(s, "{\"name\":\"a\"}");
    OK(s, "{\"name\":\"a\",\"retries\":{\"max\":3}}");
    BAD(s, "{}", "spec.name", "is required");
    BAD(s, "{\"name\":1}", "spec.name", "must be a string");
    BAD(s, "{\"name\":\"a\",\"retries\":{\"max\":-1}}", "spec.retries.max",
        "must be an integer >= 0");
    BAD(s, "{\"name\":\"a\",\"retries\":{\"max\":1,\"delay\":5}}", "spec.retries.delay",
        "unknown field");
    BAD(s, "{\"name\":\"a\",\"colour\":\"red\"}", "spec.colour", "unknown field");
    BAD(s, "[]", "spec", "must be an object");
    orr_jschema_free(s);

    s = LOAD(
        "{\"patternProperties\":{\"^x-\":{\"type\":\"string\"},\"^n_\":{\"type\":\"integer\"}},"
        "\"additionalProperties\":{\"type\":\"boolean\"}}");
    OK(s, "{\"x-a\":\"s\",\"n_b\":2,\"other\":true}");
    BAD(s, "{\"x-a\":1}", "spec.x-a", "must be a string");
    BAD(s, "{\"n_b\":\"2\"}", "spec.n_b", "must be an integer");
    BAD(s, "{\"other\":\"yes\"}", "spec.other", "must be a boolean");
    orr_jschema_free(s);

    s = LOAD("{\"minProperties\":1,\"maxProperties\":2}");
    OK(s, "{\"a\":1}");
    BAD(s, "{}", "spec", "must have at least 1 field");
    BAD(s, "{\"a\":1,\"b\":2,\"c\":3}", "spec", "must have at most 2 fields");
    orr_jschema_free(s);

    s = LOAD("{\"dependentRequired\":{\"password\":[\"user\",\"host\"]}}");
    OK(s, "{}");
    OK(s, "{\"password\":\"p\",\"user\":\"u\",\"host\":\"h\"}");
    BAD(s, "{\"password\":\"p\",\"user\":\"u\"}", "spec.host",
        "is required when password is present");
    orr_jschema_free(s);

    /* a property schema `false` forbids the field */
    s = LOAD("{\"properties\":{\"legacy\":false}}");
    OK(s, "{\"x\":1}");
    BAD(s, "{\"legacy\":1}", "spec.legacy", "is not allowed");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ arrays */

static void test_arrays(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"
                          "\"minItems\":1,\"maxItems\":3}");
    OK(s, "[1]");
    OK(s, "[1,2,3]");
    BAD(s, "[]", "spec", "must have at least 1 item");
    BAD(s, "[1,2,3,4]", "spec", "must have at most 3 items");
    BAD(s, "[1,\"2\"]", "spec[1]", "must be an integer");
    orr_jschema_free(s);

    s = LOAD("{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"items\":false}");
    OK(s, "[\"a\",1]");
    OK(s, "[\"a\"]");
    BAD(s, "[1,1]", "spec[0]", "must be a string");
    BAD(s, "[\"a\",\"b\"]", "spec[1]", "must be an integer");
    BAD(s, "[\"a\",1,2]", "spec[2]", "is not allowed");
    orr_jschema_free(s);

    s = LOAD("{\"prefixItems\":[{\"const\":\"op\"}]}"); /* extra items allowed */
    OK(s, "[\"op\",1,2,{}]");
    BAD(s, "[\"no\"]", "spec[0]", "must be \"op\"");
    orr_jschema_free(s);

    s = LOAD("{\"uniqueItems\":true}");
    OK(s, "[1,2,3,\"1\",[1],{\"a\":1},{\"a\":2}]");
    BAD(s, "[1,2,1]", "spec[2]", "must be unique (same as item 0)");
    BAD(s, "[0,1,1.0]", "spec[2]", "same as item 1");
    BAD(s, "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]", "spec[1]", "same as item 0");
    orr_jschema_free(s);
}

static void test_nested_paths(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"properties\":{\"a\":{\"properties\":{\"b\":{\"type\":\"array\","
                          "\"items\":{\"type\":\"object\",\"properties\":{\"c\":{"
                          "\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}}}}}");
    OK(s, "{\"a\":{\"b\":[{},{\"c\":[]},{\"c\":[\"x\"]}]}}");
    BAD(s, "{\"a\":{\"b\":[{},{},{\"c\":5}]}}", "spec.a.b[2].c", "must be an array");
    BAD(s, "{\"a\":{\"b\":[{},{},{\"c\":[\"x\",\"y\",3]}]}}", "spec.a.b[2].c[2]",
        "must be a string");
    BAD_ROOT(s, "{\"a\":{\"b\":[{},{},{\"c\":5}]}}", NULL, "a.b[2].c", "must be an array");
    BAD_ROOT(s, "{\"a\":{\"b\":[{},{},{\"c\":5}]}}", "", "a.b[2].c", "must be an array");
    BAD_ROOT(s, "{\"a\":{\"b\":7}}", "job", "job.a.b", "must be an array");
    orr_jschema_free(s);

    /* an error at the root names the root path, or "$" when there is none */
    s = LOAD("{\"type\":\"object\"}");
    BAD_ROOT(s, "1", NULL, "$", "must be an object");
    BAD_ROOT(s, "1", "", "$", "must be an object");
    BAD_ROOT(s, "1", "task", "task", "must be an object");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ combinators */

static const char *const task_schema =
    "{\"type\":\"object\",\"required\":[\"type\"],"
    " \"oneOf\":["
    "  {\"properties\":{\"type\":{\"const\":\"shell\"},"
    "    \"command\":{\"type\":\"string\",\"minLength\":1}},"
    "   \"required\":[\"type\",\"command\"]},"
    "  {\"$ref\":\"#/$defs/transfer\"}],"
    " \"$defs\":{\"transfer\":{\"properties\":{\"type\":{\"const\":\"transfer\"},"
    "    \"job\":{\"type\":\"object\",\"properties\":{\"threads\":{\"type\":\"integer\","
    "      \"minimum\":1}}}},"
    "   \"required\":[\"type\",\"job\"]}}}";

static void test_oneof_discriminator(void **state)
{
    (void)state;
    orr_jschema *s = LOAD(task_schema);
    OK(s, "{\"type\":\"shell\",\"command\":\"ls\"}");
    OK(s, "{\"type\":\"transfer\",\"job\":{\"threads\":4}}");
    /* the branch chosen by "type" reports its own error */
    BAD(s, "{\"type\":\"shell\",\"command\":\"\"}", "spec.command",
        "must be at least 1 characters long");
    BAD(s, "{\"type\":\"shell\"}", "spec.command", "is required");
    BAD(s, "{\"type\":\"transfer\",\"job\":{\"threads\":0}}", "spec.job.threads",
        "must be an integer >= 1");
    BAD(s, "{\"type\":\"transfer\"}", "spec.job", "is required");
    /* an unknown discriminator value lists the known ones */
    BAD(s, "{\"type\":\"sql\"}", "spec.type", "must be one of: shell, transfer");
    BAD(s, "{}", "spec.type", "is required");
    orr_jschema_free(s);
}

static void test_oneof_anyof_generic(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}");
    OK(s, "1");   /* integer, not >= 2 */
    OK(s, "2.5"); /* >= 2, not integer */
    BAD(s, "3", "spec", "must match exactly one of 2 schemas, but matches 2 (#1 and #2)");
    BAD(s, "1.5", "spec", "must match exactly one of 2 schemas");
    orr_jschema_free(s);

    s = LOAD("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}");
    OK(s, "\"a\"");
    OK(s, "1");
    BAD(s, "1.5", "spec", "must match one of 2 schemas");
    orr_jschema_free(s);

    /* no discriminator: the branch that got deepest into the value reports */
    s = LOAD("{\"anyOf\":[{\"type\":\"string\"},"
             "{\"type\":\"object\",\"properties\":{\"port\":{\"type\":\"integer\"}}}]}");
    OK(s, "{\"port\":1}");
    BAD(s, "{\"port\":\"x\"}", "spec.port", "must be an integer");
    orr_jschema_free(s);

    s = LOAD("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":0},{\"maximum\":9}]}");
    OK(s, "5");
    BAD(s, "10", "spec", "must be <= 9");
    BAD(s, "-1", "spec", "must be >= 0");
    orr_jschema_free(s);

    s = LOAD("{\"not\":{\"type\":\"null\"}}");
    OK(s, "1");
    BAD(s, "null", "spec", "must not match the schema at $.not");
    orr_jschema_free(s);

    s = LOAD("{\"if\":{\"properties\":{\"mode\":{\"const\":\"incremental\"}}},"
             "\"then\":{\"required\":[\"watermark\"]},"
             "\"else\":{\"properties\":{\"watermark\":false}}}");
    OK(s, "{\"mode\":\"incremental\",\"watermark\":\"id\"}");
    OK(s, "{\"mode\":\"full\"}");
    BAD(s, "{\"mode\":\"incremental\"}", "spec.watermark", "is required");
    BAD(s, "{\"mode\":\"full\",\"watermark\":\"id\"}", "spec.watermark", "is not allowed");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ $ref */

static void test_refs(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"$defs\":{\"port\":{\"type\":\"integer\",\"minimum\":1,"
                          "\"maximum\":65535}},"
                          "\"definitions\":{\"host~name\":{\"format\":\"hostname\"}},"
                          "\"properties\":{\"port\":{\"$ref\":\"#/$defs/port\"},"
                          "\"host\":{\"$ref\":\"#/definitions/host~0name\"},"
                          "\"alt\":{\"$ref\":\"#/properties/port\"}}}");
    OK(s, "{\"port\":80,\"host\":\"db\",\"alt\":443}");
    BAD(s, "{\"port\":0}", "spec.port", "must be an integer >= 1 and <= 65535");
    BAD(s, "{\"alt\":70000}", "spec.alt", "<= 65535");
    BAD(s, "{\"host\":\"a b\"}", "spec.host", "must be a hostname");
    orr_jschema_free(s);

    /* recursion through "#": a tree */
    s = LOAD("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
             "\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}},"
             "\"required\":[\"name\"],\"additionalProperties\":false}");
    OK(s, "{\"name\":\"r\",\"children\":[{\"name\":\"a\",\"children\":[{\"name\":\"b\"}]}]}");
    BAD(s, "{\"name\":\"r\",\"children\":[{\"name\":\"a\",\"children\":[{\"nam\":\"b\"}]}]}",
        "spec.children[0].children[0].name", "is required");
    orr_jschema_free(s);

    /* $ref beside other keywords: both apply (2020-12) */
    s = LOAD("{\"$defs\":{\"s\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/s\",\"maxLength\":2}");
    OK(s, "\"ab\"");
    BAD(s, "1", "spec", "must be a string");
    BAD(s, "\"abc\"", "spec", "at most 2");
    orr_jschema_free(s);

    LOAD_BAD("{\"properties\":{\"a\":{\"$ref\":\"#/$defs/missing\"}}}", "properties.a.$ref",
             "cannot resolve \"#/$defs/missing\"");
    LOAD_BAD("{\"$ref\":\"other.json#/x\"}", "$ref", "only local references");
    LOAD_BAD("{\"$ref\":\"#anchor\"}", "$ref", "cannot resolve");
    LOAD_BAD("{\"$defs\":{\"a\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/a/type\"}",
             "$defs.a.type", "must be a schema");
}

static void test_ref_cycles(void **state)
{
    (void)state;
    /* cycles that never move into the value are refused at load */
    LOAD_BAD("{\"$ref\":\"#\"}", "$", "cycle without progress: leads back to $");
    LOAD_BAD("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
             "\"$ref\":\"#/$defs/a\"}",
             "$defs.b", "cycle without progress: leads back to $defs.a");
    LOAD_BAD("{\"anyOf\":[{\"type\":\"string\"},{\"$ref\":\"#\"}]}", "anyOf[1]",
             "cycle without progress: leads back to $");
    LOAD_BAD("{\"$defs\":{\"a\":{\"not\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}}}}",
             "$defs.a.not.allOf[0]", "cycle without progress: leads back to $defs.a");
    /* then/else without if are never applied: no cycle */
    orr_jschema_free(LOAD("{\"then\":{\"$ref\":\"#\"}}"));

    /* a cycle through items makes progress: allowed, and deep values stop at the limit */
    orr_jschema *s = LOAD("{\"type\":[\"array\",\"integer\"],\"items\":{\"$ref\":\"#\"}}");
    orr_buf b = ORR_BUF_INIT;
    for (int i = 0; i < 100; i++)
        orr_buf_append_byte(&b, '[');
    orr_buf_append_byte(&b, '1');
    for (int i = 0; i < 100; i++)
        orr_buf_append_byte(&b, ']');
    OK(s, orr_buf_cstr(&b));

    orr_buf_reset(&b);
    for (int i = 0; i < 300; i++)
        orr_buf_append_byte(&b, '[');
    for (int i = 0; i < 300; i++)
        orr_buf_append_byte(&b, ']');
    json_t *deep = parse(orr_buf_cstr(&b), __LINE__);
    orr_err err;
    assert_int_equal(orr_jschema_validate(s, deep, NULL, &err), ORR_EINVAL);
    assert_non_null(strstr(err.msg, "nested deeper than 128 levels"));
    assert_int_equal(strncmp(err.field, "[0][0][0]", 9), 0);
    json_decref(deep);
    orr_buf_free(&b);
    orr_jschema_free(s);
}

/* Both oneOf branches descend into "c": 2^depth work on a crafted value,
 * cut by the work budget instead of running for ages. */
static void test_work_budget(void **state)
{
    (void)state;
    orr_jschema *s =
        LOAD("{\"type\":\"object\",\"properties\":{\"c\":{\"$ref\":\"#\"}},"
             "\"oneOf\":[{\"required\":[\"a\"],\"properties\":{\"c\":{\"$ref\":\"#\"}}},"
             "{\"required\":[\"b\"],\"properties\":{\"c\":{\"$ref\":\"#\"}}}]}");
    OK(s, "{\"a\":1,\"c\":{\"b\":1,\"c\":{\"a\":1}}}");
    BAD(s, "{\"a\":1,\"c\":{\"b\":1,\"c\":{\"x\":1}}}", "spec.c.c",
        "must match exactly one of 2 schemas");
    orr_buf b = ORR_BUF_INIT;
    for (int i = 0; i < 60; i++)
        orr_buf_append_str(&b, "{\"a\":1,\"c\":");
    orr_buf_append_str(&b, "{\"a\":1}");
    for (int i = 0; i < 60; i++)
        orr_buf_append_byte(&b, '}');
    json_t *v = parse(orr_buf_cstr(&b), __LINE__);
    orr_err err;
    assert_int_equal(orr_jschema_validate(s, v, "spec", &err), ORR_EINVAL);
    assert_non_null(strstr(err.msg, "too costly to validate"));
    json_decref(v);
    orr_buf_free(&b);
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ bad schemas */

static void test_bad_schemas(void **state)
{
    (void)state;
    LOAD_BAD("{\"properties\":{\"retries\":{\"minimum\":\"0\"}}}", "properties.retries.minimum",
             "must be a number");
    LOAD_BAD("{\"properties\":{\"a\":{\"contains\":{}}}}", "properties.a.contains",
             "unsupported keyword");
    LOAD_BAD("{\"unevaluatedProperties\":false}", "unevaluatedProperties", "unsupported keyword");
    LOAD_BAD("{\"type\":\"int\"}", "type", "unknown type \"int\"");
    LOAD_BAD("{\"type\":[\"string\",\"string\"]}", "type[1]", "duplicate type");
    LOAD_BAD("{\"type\":[]}", "type", "non-empty array");
    LOAD_BAD("{\"items\":[{}]}", "items", "use prefixItems");
    LOAD_BAD("{\"required\":\"a\"}", "required", "must be an array of strings");
    LOAD_BAD("{\"required\":[\"a\",1]}", "required[1]", "must be a string");
    LOAD_BAD("{\"required\":[\"a\",\"a\"]}", "required[1]", "duplicate name");
    LOAD_BAD("{\"enum\":[]}", "enum", "non-empty array");
    LOAD_BAD("{\"multipleOf\":0}", "multipleOf", "must be a number > 0");
    LOAD_BAD("{\"minLength\":-1}", "minLength", "non-negative integer");
    LOAD_BAD("{\"maxItems\":1.5}", "maxItems", "non-negative integer");
    LOAD_BAD("{\"uniqueItems\":1}", "uniqueItems", "must be a boolean");
    LOAD_BAD("{\"allOf\":[]}", "allOf", "non-empty array of schemas");
    LOAD_BAD("{\"allOf\":[{},{\"type\":7}]}", "allOf[1].type", "type name");
    LOAD_BAD("{\"oneOf\":[{},3]}", "oneOf[1]", "must be a schema");
    LOAD_BAD("{\"properties\":[]}", "properties", "must be an object of schemas");
    LOAD_BAD("{\"patternProperties\":{\"(\":{}}}", "patternProperties.(", "unmatched (");
    LOAD_BAD("{\"patternProperties\":{\"[z-a]\":{}}}", "patternProperties.[z-a]",
             "invalid regular expression");
    LOAD_BAD("{\"dependentRequired\":{\"a\":[1]}}", "dependentRequired.a[0]", "must be a string");
    LOAD_BAD("{\"$defs\":{\"x\":{\"maximum\":null}}}", "$defs.x.maximum", "must be a number");
    LOAD_BAD("[]", "$", "must be a schema");
    LOAD_BAD("\"string\"", "$", "must be a schema");

    /* a schema nested past the limit */
    orr_buf b = ORR_BUF_INIT;
    for (int i = 0; i < 200; i++)
        orr_buf_append_str(&b, "{\"not\":");
    orr_buf_append_str(&b, "{}");
    for (int i = 0; i < 200; i++)
        orr_buf_append_byte(&b, '}');
    json_t *j = parse(orr_buf_cstr(&b), __LINE__);
    orr_jschema *s = NULL;
    orr_err err;
    assert_int_equal(orr_jschema_load(j, &s, &err), ORR_EINVAL);
    assert_non_null(strstr(err.msg, "nested deeper than 128"));
    assert_null(s);
    json_decref(j);
    orr_buf_free(&b);

    /* annotations are accepted and ignored */
    s = LOAD("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"x\","
             "\"$comment\":\"c\",\"title\":\"t\",\"description\":\"d\",\"default\":1,"
             "\"examples\":[1],\"readOnly\":true,\"writeOnly\":false,\"deprecated\":false,"
             "\"type\":\"integer\"}");
    OK(s, "1");
    BAD(s, "\"1\"", "spec", "must be an integer");
    orr_jschema_free(s);

    assert_int_equal(orr_jschema_load(NULL, &s, &err), ORR_EINVAL);
}

static void test_boolean_schemas(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("true");
    OK(s, "{\"anything\":[1,2]}");
    orr_jschema_free(s);
    s = LOAD("false");
    BAD(s, "1", "spec", "is not allowed");
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ ownership, files, size */

static void test_schema_copy_and_errors_cleared(void **state)
{
    (void)state;
    json_t *schema = parse("{\"type\":\"string\"}", __LINE__);
    orr_jschema *s = NULL;
    orr_err err;
    assert_int_equal(orr_jschema_load(schema, &s, &err), ORR_OK);
    /* changing or dropping the caller's document does not change the compiled schema */
    json_object_set_new(schema, "type", json_string("integer"));
    json_decref(schema);
    json_t *v = json_string("x");
    strcpy(err.field, "stale");
    assert_int_equal(orr_jschema_validate(s, v, "spec", &err), ORR_OK);
    assert_string_equal(err.field, "");
    assert_int_equal(orr_jschema_validate(s, v, "spec", NULL), ORR_OK);
    json_decref(v);
    v = json_integer(1);
    assert_int_equal(orr_jschema_validate(s, v, "spec", NULL), ORR_EINVAL);
    json_decref(v);
    orr_jschema_free(s);
    orr_jschema_free(NULL);
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/orr_jschema_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{\"type\":\"object\",\"required\":[\"id\"]}";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    orr_jschema *s = NULL;
    orr_err err;
    assert_int_equal(orr_jschema_load_file(path, &s, &err), ORR_OK);
    BAD(s, "{}", "spec.id", "is required");
    orr_jschema_free(s);

    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "{\"a\":1,\"a\":2}", 13), 13);
    close(fd);
    assert_int_equal(orr_jschema_load_file(path, &s, &err), ORR_EINVAL);
    assert_string_equal(err.field, path);
    assert_non_null(strstr(err.msg, "line 1"));
    unlink(path);
    assert_int_equal(orr_jschema_load_file(path, &s, &err), ORR_EIO);
    assert_string_equal(err.field, path);
}

static void test_huge_array(void **state)
{
    (void)state;
    orr_jschema *s = LOAD("{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0},"
                          "\"uniqueItems\":true}");
    json_t *arr = json_array();
    for (int i = 0; i < 200000; i++)
        json_array_append_new(arr, json_integer(i));
    orr_err err;
    assert_int_equal(orr_jschema_validate(s, arr, "ids", &err), ORR_OK);
    /* a duplicate far away: 150000.0 equals item 150000 */
    json_array_append_new(arr, json_real(150000.0));
    assert_int_equal(orr_jschema_validate(s, arr, "ids", &err), ORR_EINVAL);
    assert_string_equal(err.field, "ids[200000]");
    assert_string_equal(err.msg, "must be unique (same as item 150000)");
    /* the earliest duplicate is reported */
    json_array_set_new(arr, 1000, json_integer(7));
    assert_int_equal(orr_jschema_validate(s, arr, "ids", &err), ORR_EINVAL);
    assert_string_equal(err.field, "ids[1000]");
    assert_string_equal(err.msg, "must be unique (same as item 7)");
    json_array_set_new(arr, 5, json_integer(-5));
    assert_int_equal(orr_jschema_validate(s, arr, "ids", &err), ORR_EINVAL);
    assert_string_equal(err.field, "ids[5]");
    json_decref(arr);
    orr_jschema_free(s);
}

/* ------------------------------------------------------------ threads */

typedef struct thread_arg {
    const orr_jschema *s;
    int rounds;
    int failures;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    json_t *good = json_loads("{\"type\":\"transfer\",\"job\":{\"threads\":4}}", 0, NULL);
    json_t *bad = json_loads("{\"type\":\"transfer\",\"job\":{\"threads\":0}}", 0, NULL);
    json_t *shell = json_loads("{\"type\":\"shell\",\"command\":\"\"}", 0, NULL);
    for (int i = 0; i < a->rounds; i++) {
        orr_err err;
        if (orr_jschema_validate(a->s, good, "spec", &err) != ORR_OK)
            a->failures++;
        if (orr_jschema_validate(a->s, bad, "spec", &err) != ORR_EINVAL ||
            strcmp(err.field, "spec.job.threads") != 0)
            a->failures++;
        if (orr_jschema_validate(a->s, shell, "t", &err) != ORR_EINVAL ||
            strcmp(err.field, "t.command") != 0)
            a->failures++;
    }
    json_decref(good);
    json_decref(bad);
    json_decref(shell);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    orr_jschema *s = LOAD(task_schema);
    pthread_t t[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){s, 3000, 0};
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(args[i].failures, 0);
    }
    orr_jschema_free(s);
}

/* An optional argument runs only the tests matching it: test_lib_jschema 'test_ref*' */
int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type),
        cmocka_unit_test(test_enum_const),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_string_length_unicode),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_pattern_ecma),
        cmocka_unit_test(test_pattern_match_limit),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_objects),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_nested_paths),
        cmocka_unit_test(test_oneof_discriminator),
        cmocka_unit_test(test_oneof_anyof_generic),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_ref_cycles),
        cmocka_unit_test(test_work_budget),
        cmocka_unit_test(test_bad_schemas),
        cmocka_unit_test(test_boolean_schemas),
        cmocka_unit_test(test_schema_copy_and_errors_cleared),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_huge_array),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

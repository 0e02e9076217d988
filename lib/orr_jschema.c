/*
 * orr_jschema.c - JSON Schema (draft 2020-12 subset) compiler and validator.
 *
 * Load compiles the schema document into a graph of js_node, one per schema
 * object, all living in the compiled schema's arena:
 *   1. ld_compile() walks the document; every keyword goes through one table
 *      (js_keywords) whose handler checks the value and fills the node. A node
 *      is entered in a pointer map (schema object -> node) before its keywords
 *      are compiled, so a schema reached twice (by nesting and by $ref) is one
 *      node. Unknown keywords are refused with their schema path.
 *   2. $ref pointers are resolved after the walk, over the list of all nodes
 *      (which grows at the tail as targets are compiled), so a long chain of
 *      $defs does not recurse.
 *   3. A depth-first search over "in-place" edges ($ref, allOf, anyOf, oneOf,
 *      not, if, then, else: applications that do not descend into the
 *      instance) refuses cycles, which would otherwise recurse forever.
 *   4. For every node, a discriminator is looked up: a property whose schema
 *      is a const (or a one-value enum). oneOf/anyOf use it to pick the branch
 *      whose error to report.
 *
 * Validate walks the node graph and the instance together and stops at the
 * first error. The instance path lives in one stack buffer (js_vctx.path),
 * extended with ".key" / "[i]" on the way down and cut back on the way up;
 * nothing is allocated except a sort table for uniqueItems on large arrays.
 * The compiled graph is never written after load, so validations may run
 * from several threads at once.
 *
 * Invariants: every node of the graph is reachable from js_loader.head while
 * loading; after load, node->ref is set whenever node->ref_str is; the graph
 * has no in-place cycle.
 */
#include "orr_jschema.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "orr_alloc.h"
#include "orr_arena.h"
#include "orr_buf.h"
#include "orr_hash.h"

/* ---------------------------------------------------------------- types */

enum {
    JS_T_NULL = 1 << 0,
    JS_T_BOOLEAN = 1 << 1,
    JS_T_OBJECT = 1 << 2,
    JS_T_ARRAY = 1 << 3,
    JS_T_NUMBER = 1 << 4,
    JS_T_STRING = 1 << 5,
    JS_T_INTEGER = 1 << 6,
};

enum js_format {
    JS_FMT_NONE = 0,
    JS_FMT_DATE_TIME,
    JS_FMT_DATE,
    JS_FMT_EMAIL,
    JS_FMT_URI,
    JS_FMT_HOSTNAME,
};

/* Validation results: a plain failure may be absorbed by anyOf/oneOf/not;
 * a fatal one (a limit was hit) always propagates. */
enum { JS_OK = 0, JS_FAIL = 1, JS_FATAL = 2 };

typedef struct js_node js_node;

typedef struct js_prop {
    const char *key;
    js_node *schema;
} js_prop;

typedef struct js_pattern {
    const char *src;
    pcre2_code *re;
    js_node *schema;
} js_pattern;

typedef struct js_dep {
    const char *key;
    const char **names;
    size_t n;
} js_dep;

typedef struct js_list {
    js_node **v;
    size_t n;
} js_list;

struct js_node {
    int is_false;      /* the schema `false` */
    unsigned types;    /* JS_T_* mask; 0 = any */
    const char *spath; /* schema path, for load errors */

    const char *ref_str;
    js_node *ref;

    const json_t *enum_vals; /* array */
    const json_t *const_val;

    const json_t *minimum, *maximum, *xminimum, *xmaximum, *multiple_of;

    int64_t min_len, max_len; /* -1 = unset */
    pcre2_code *pattern;
    const char *pattern_src;
    enum js_format format;

    int64_t min_items, max_items;
    int unique_items;
    js_list prefix;
    js_node *items;

    int64_t min_props, max_props;
    js_prop *props; /* sorted by key */
    size_t nprops;
    js_pattern *pats;
    size_t npats;
    js_node *additional;
    const char **required;
    size_t nrequired;
    js_dep *deps;
    size_t ndeps;

    js_list all_of, any_of, one_of;
    js_node *not_, *if_, *then_, *else_;

    const char *disc_key; /* discriminator property, or NULL */
    const json_t *disc_val;

    js_node *next_all; /* list of every node, in creation order */
    size_t idx;
};

struct orr_jschema {
    orr_arena *arena;
    json_t *doc;
    js_node *root;
    pcre2_match_context *match; /* the limits of every pattern match */
};

/* ---------------------------------------------------------------- small helpers */

/* Copy src into dst (n > 0 bytes), cut to fit; returns dst. */
static char *js_copy(char *dst, size_t n, const char *src)
{
    size_t l = strlen(src);
    if (l >= n)
        l = n - 1;
    memmove(dst, src, l);
    dst[l] = '\0';
    return dst;
}

/* Schema paths are cut to the buffer; a cut path still names the place. */
static const char *js_path_key(char *buf, size_t n, const char *parent, const char *key)
{
    int w =
        parent && parent[0] ? snprintf(buf, n, "%s.%s", parent, key) : snprintf(buf, n, "%s", key);
    if (w < 0)
        buf[0] = '\0';
    return buf;
}

static const char *js_path_idx(char *buf, size_t n, const char *parent, size_t i)
{
    if (snprintf(buf, n, "%s[%zu]", parent ? parent : "", i) < 0)
        buf[0] = '\0';
    return buf;
}

static const char *js_field(const char *path)
{
    return path && path[0] ? path : "$";
}

static int js_is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return 1;
    if (json_is_real(v)) {
        double d = json_real_value(v);
        return isfinite(d) && floor(d) == d;
    }
    return 0;
}

static long double js_num(const json_t *v)
{
    return json_is_integer(v) ? (long double)json_integer_value(v)
                              : (long double)json_real_value(v);
}

/* -1, 0, 1; exact for two integers, and for int64 vs double on long double. */
static int js_num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    long double x = js_num(a), y = js_num(b);
    return x < y ? -1 : x > y;
}

/* Print a number the way a person wrote it: 3, 0.5, 1e-06. */
static void js_num_str(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v)) {
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
        return;
    }
    double d = json_real_value(v);
    snprintf(buf, n, "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, n, "%.17g", d);
}

/* A JSON value for a message: strings bare when `bare`, others compact JSON. */
static void js_val_str(const json_t *v, int bare, char *buf, size_t n)
{
    if (bare && json_is_string(v)) {
        snprintf(buf, n, "%s", json_string_value(v));
        return;
    }
    if (json_is_number(v)) {
        js_num_str(v, buf, n);
        return;
    }
    size_t need = json_dumpb(v, buf, n > 0 ? n - 1 : 0, JSON_COMPACT | JSON_ENCODE_ANY);
    if (need >= n && n > 4)
        memcpy(buf + n - 4, "...", 4);
    else if (n > 0)
        buf[need < n ? need : n - 1] = '\0';
}

/* Structural equality of JSON values, numbers by value (3 == 3.0). */
static int js_equal(const json_t *a, const json_t *b, int depth)
{
    if (a == b)
        return 1;
    if (depth > 4 * ORR_JSCHEMA_MAX_DEPTH)
        return 0;
    if (json_is_number(a) && json_is_number(b))
        return js_num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!js_equal(json_array_get(a, i), json_array_get(b, i), depth + 1))
                return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *key;
        json_t *va;
        json_object_foreach((json_t *)a, key, va)
        {
            json_t *vb = json_object_get(b, key);
            if (!vb || !js_equal(va, vb, depth + 1))
                return 0;
        }
        return 1;
    }
    default: /* true, false, null: same type is equal */
        return 1;
    }
}

/* Hash consistent with js_equal: equal values hash equal. */
static uint64_t js_hash(const json_t *v, int depth)
{
    if (depth > 4 * ORR_JSCHEMA_MAX_DEPTH)
        return 0;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        return orr_hash_mix((uint64_t)json_integer_value(v));
    case JSON_REAL: {
        double d = json_real_value(v);
        if (floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            return orr_hash_mix((uint64_t)(int64_t)d);
        uint64_t bits;
        memcpy(&bits, &d, sizeof(bits));
        return orr_hash_mix(bits ^ 0x5bd1e995ULL);
    }
    case JSON_STRING:
        return orr_hash_fnv1a(json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        uint64_t h = 0x9e3779b97f4a7c15ULL;
        for (size_t i = 0; i < json_array_size(v); i++)
            h = orr_hash_mix(h ^ js_hash(json_array_get(v, i), depth + 1)) + i;
        return h;
    }
    case JSON_OBJECT: {
        uint64_t h = 0x2545f4914f6cdd1dULL;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            /* order-independent */
            h += orr_hash_mix(orr_hash_fnv1a_str(key) ^ (js_hash(val, depth + 1) * 31));
        }
        return h;
    }
    case JSON_TRUE:
        return 11;
    case JSON_FALSE:
        return 13;
    default:
        return 17;
    }
}

/* ---------------------------------------------------------------- regular expressions */

/*
 * `pattern` and `patternProperties` are ECMA-262 regular expressions. PCRE2
 * (8-bit, UTF) runs them with the options that make it behave as ECMA-262
 * does: $ only at the very end, \uXXXX and \u{...}, [] an empty class, an
 * unset backreference matching the empty string. re_ecma_check() refuses
 * what PCRE2 would accept but ECMA-262 would not (possessive quantifiers,
 * (?>...) and the other PCRE groups, \A \z \Q and other PCRE escapes, POSIX
 * [:classes:]), so a schema means the same in a browser. Each distinct
 * pattern is compiled once per schema (js_loader.res caches them) and lives
 * as long as the compiled schema; matching runs under the schema's match
 * context, whose limits stop a catastrophic pattern.
 */

static void re_bad(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void re_bad(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

/* An escape ECMA-262 knows: \d \D \w \W \s \S \b \B \n \r \t \f \v \0-\9 \cX
 * \xHH \uHHHH \u{H..} \k<name> \p{..} \P{..}, or a punctuation character. */
static int re_ecma_escape(unsigned char c)
{
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        return c != 0;
    return strchr("dDwWsSbBnrtfvcxukpP", c) != NULL;
}

/* {n}, {n,} or {n,m} at s (s[0] == '{'): its length, else 0 (a literal {). */
static size_t re_brace_quantifier(const char *s, size_t n)
{
    size_t i = 1, digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (!digits)
        return 0;
    if (i < n && s[i] == ',') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    return i < n && s[i] == '}' ? i + 1 : 0;
}

/* Refuse PCRE2 syntax that ECMA-262 does not have. 0, or -1 with why. */
static int re_ecma_check(const char *s, size_t n, char *why, size_t wn)
{
    int in_class = 0;
    int quant = 0; /* 1 after a quantifier, 2 after a lazy one */
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '\\') {
            if (i + 1 >= n) {
                re_bad(why, wn, "\\ at end of pattern");
                return -1;
            }
            if (!re_ecma_escape((unsigned char)s[i + 1])) {
                re_bad(why, wn, "escape \\%c is not ECMA-262", s[i + 1]);
                return -1;
            }
            i += 2, quant = 0;
            continue;
        }
        if (in_class) {
            if (c == '[' && i + 1 < n && strchr(":.=", s[i + 1])) {
                re_bad(why, wn, "POSIX character classes [%c...%c] are not ECMA-262", s[i + 1],
                       s[i + 1]);
                return -1;
            }
            in_class = c != ']';
            i++;
            continue;
        }
        size_t q = c == '{' ? re_brace_quantifier(s + i, n - i) : 0;
        if (c == '*' || c == '+' || c == '?' || q) {
            if (c == '?' && quant == 1) {
                quant = 2; /* lazy */
            } else if (quant) {
                re_bad(why, wn, "nothing to repeat at offset %zu", i);
                return -1;
            } else {
                quant = 1;
            }
            i += q ? q : 1;
            continue;
        }
        quant = 0;
        if (c == '[') {
            in_class = 1;
            i += (i + 1 < n && s[i + 1] == '^') ? 2 : 1;
            if (i < n && s[i] == ']') /* [] and [^]: ECMA's empty class */
                in_class = 0, i++;
            continue;
        }
        if (c == '(' && i + 1 < n && s[i + 1] == '?') {
            const char *g = s + i + 2;
            size_t left = n - i - 2;
            int ok = left >= 1 && (g[0] == ':' || g[0] == '=' || g[0] == '!');
            ok = ok || (left >= 2 && g[0] == '<' && (g[1] == '=' || g[1] == '!'));
            ok = ok || (left >= 2 && g[0] == '<' &&
                        ((g[1] >= 'A' && g[1] <= 'Z') || (g[1] >= 'a' && g[1] <= 'z') ||
                         g[1] == '_' || g[1] == '$'));
            if (!ok) {
                re_bad(why, wn, "group (?%.1s is not ECMA-262", left ? g : "");
                return -1;
            }
        }
        i++;
    }
    return 0;
}

/* Old, shorter words for the commonest mistakes. */
static const char *re_short(int code)
{
    switch (code) {
    case PCRE2_ERROR_MISSING_SQUARE_BRACKET:
        return "unterminated [";
    case PCRE2_ERROR_MISSING_CLOSING_PARENTHESIS:
        return "unmatched (";
    case PCRE2_ERROR_UNMATCHED_CLOSING_PARENTHESIS:
        return "unmatched )";
    case PCRE2_ERROR_QUANTIFIER_INVALID:
        return "nothing to repeat";
    case PCRE2_ERROR_PATTERN_TOO_LARGE:
        return "pattern too complex";
    default:
        return "invalid regular expression";
    }
}

static void js_regex_free_cb(void *p)
{
    pcre2_code_free((pcre2_code *)p);
}

/* Compile an ECMA-262 pattern into a pcre2_code freed with arena a.
 * NULL with why filled when it is not one. */
static pcre2_code *js_regex(orr_arena *a, const char *src, size_t n, char *why, size_t wn)
{
    if (re_ecma_check(src, n, why, wn) != 0)
        return NULL;
    int code;
    PCRE2_SIZE off;
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc)
        orr_oom(sizeof(void *));
    pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)src, n,
                      PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS |
                          PCRE2_MATCH_UNSET_BACKREF | PCRE2_NEVER_BACKSLASH_C,
                      &code, &off, cc);
    pcre2_compile_context_free(cc);
    if (!re) {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
            snprintf((char *)msg, sizeof(msg), "error %d", code);
        re_bad(why, wn, "%s (%s at offset %zu)", re_short(code), (const char *)msg, (size_t)off);
        return NULL;
    }
    orr_arena_on_cleanup(a, js_regex_free_cb, re);
    return re;
}

/* 1 if re matches somewhere in s[0..len), 0 if not, -1 when a limit of mc
 * stopped the match (why filled). */
static int js_regex_match(const pcre2_code *re, pcre2_match_context *mc, const char *s, size_t len,
                          char *why, size_t wn)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md)
        orr_oom(sizeof(void *));
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, mc);
    pcre2_match_data_free(md);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    PCRE2_UCHAR msg[160];
    if (pcre2_get_error_message(rc, msg, sizeof(msg)) < 0)
        snprintf((char *)msg, sizeof(msg), "error %d", rc);
    re_bad(why, wn, "%s", (const char *)msg);
    return -1;
}

/* ---------------------------------------------------------------- formats */

static int re_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int fmt_num(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!re_is_digit(s[i]))
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static int fmt_date(const char *s, size_t n)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;
    if (n != 10 || s[4] != '-' || s[7] != '-')
        return 0;
    if (!fmt_num(s, 4, &y) || !fmt_num(s + 5, 2, &m) || !fmt_num(s + 8, 2, &d))
        return 0;
    if (m < 1 || m > 12 || d < 1)
        return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    int max = mdays[m - 1] + (m == 2 && leap);
    return d <= max;
}

/* HH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */
static int fmt_time(const char *s, size_t n)
{
    int h, mi, se;
    if (n < 9 || s[2] != ':' || s[5] != ':')
        return 0;
    if (!fmt_num(s, 2, &h) || !fmt_num(s + 3, 2, &mi) || !fmt_num(s + 6, 2, &se))
        return 0;
    if (h > 23 || mi > 59 || se > 60) /* 60: leap second */
        return 0;
    size_t i = 8;
    if (i < n && s[i] == '.') {
        i++;
        size_t start = i;
        while (i < n && re_is_digit(s[i]))
            i++;
        if (i == start)
            return 0;
    }
    if (i < n && (s[i] == 'Z' || s[i] == 'z'))
        return i + 1 == n;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        if (n - i != 6 || s[i + 3] != ':')
            return 0;
        if (!fmt_num(s + i + 1, 2, &oh) || !fmt_num(s + i + 4, 2, &om))
            return 0;
        return oh <= 23 && om <= 59;
    }
    return 0;
}

static int fmt_date_time(const char *s, size_t n)
{
    if (n < 20 || (s[10] != 'T' && s[10] != 't'))
        return 0;
    return fmt_date(s, 10) && fmt_time(s + 11, n - 11);
}

static int fmt_hostname(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return 0;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            label = 0;
            continue;
        }
        int alnum = re_is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && c != '-')
            return 0;
        if (c == '-' && label == 0)
            return 0;
        if (++label > 63)
            return 0;
    }
    return label > 0 && s[n - 1] != '-';
}

/* Loose: local@domain, no spaces or controls, domain with a dot. */
static int fmt_email(const char *s, size_t n)
{
    const char *at = NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f)
            return 0;
        if (c == '@') {
            if (at)
                return 0;
            at = s + i;
        }
    }
    if (!at || at == s || at - s > 64)
        return 0;
    const char *dom = at + 1;
    size_t dn = n - (size_t)(dom - s);
    if (dn < 3 || dom[0] == '.' || dom[dn - 1] == '.' || !memchr(dom, '.', dn))
        return 0;
    return strstr(dom, "..") == NULL || (size_t)(strstr(dom, "..") - dom) >= dn;
}

/* Loose: scheme ":" rest, no spaces, controls or <>"{}|\^` characters. */
static int fmt_uri(const char *s, size_t n)
{
    size_t i = 0;
    if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    while (i < n && s[i] != ':') {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || re_is_digit(c) || c == '+' ||
                 c == '-' || c == '.';
        if (!ok)
            return 0;
        i++;
    }
    if (i >= n || i + 1 >= n)
        return 0;
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f || strchr("<>\"{}|\\^`", c))
            return 0;
    }
    return 1;
}

static int fmt_check(enum js_format f, const char *s, size_t n)
{
    switch (f) {
    case JS_FMT_DATE_TIME:
        return fmt_date_time(s, n);
    case JS_FMT_DATE:
        return fmt_date(s, n);
    case JS_FMT_EMAIL:
        return fmt_email(s, n);
    case JS_FMT_URI:
        return fmt_uri(s, n);
    case JS_FMT_HOSTNAME:
        return fmt_hostname(s, n);
    default:
        return 1;
    }
}

static const char *fmt_desc(enum js_format f)
{
    switch (f) {
    case JS_FMT_DATE_TIME:
        return "an RFC 3339 date-time (2024-01-31T12:00:00Z)";
    case JS_FMT_DATE:
        return "an RFC 3339 date (2024-01-31)";
    case JS_FMT_EMAIL:
        return "an email address";
    case JS_FMT_URI:
        return "a URI (scheme:...)";
    case JS_FMT_HOSTNAME:
        return "a hostname";
    default:
        return "valid";
    }
}

/* ---------------------------------------------------------------- loader */

typedef struct js_loader {
    orr_jschema *s;
    orr_arena *a;   /* the compiled schema's arena */
    orr_arena *tmp; /* load-time scratch */
    orr_err *err;
    /* schema object -> node */
    const json_t **mkeys;
    js_node **mvals;
    size_t mcap, mcount;
    /* every node, in creation order */
    js_node *head, *tail;
    size_t nnodes;
    /* every pattern compiled so far (in tmp), so each is compiled once */
    struct js_re_cached *res;
} js_loader;

typedef struct js_re_cached {
    const char *src;
    size_t n;
    pcre2_code *re;
    struct js_re_cached *next;
} js_re_cached;

/* The compiled pattern src[0..n), compiled now or taken from the cache. */
static pcre2_code *ld_regex(js_loader *L, const char *src, size_t n, char *why, size_t wn)
{
    for (js_re_cached *c = L->res; c; c = c->next)
        if (c->n == n && memcmp(c->src, src, n) == 0)
            return c->re;
    pcre2_code *re = js_regex(L->a, src, n, why, wn);
    if (re) {
        js_re_cached *c = orr_arena_alloc(L->tmp, sizeof(*c));
        *c = (js_re_cached){.src = src, .n = n, .re = re, .next = L->res};
        L->res = c;
    }
    return re;
}

typedef orr_status (*js_kw_fn)(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                               int depth);

static js_node *ld_compile(js_loader *L, json_t *v, const char *path, int depth);

static size_t ld_hash_ptr(const void *p, size_t cap)
{
    return (size_t)(orr_hash_mix((uint64_t)(uintptr_t)p) & (cap - 1));
}

static js_node *ld_memo_get(js_loader *L, const json_t *v)
{
    if (!L->mcap)
        return NULL;
    for (size_t i = ld_hash_ptr(v, L->mcap);; i = (i + 1) & (L->mcap - 1)) {
        if (!L->mkeys[i])
            return NULL;
        if (L->mkeys[i] == v)
            return L->mvals[i];
    }
}

static void ld_memo_put(js_loader *L, const json_t *v, js_node *node)
{
    if ((L->mcount + 1) * 2 > L->mcap) {
        size_t ncap = L->mcap ? L->mcap * 2 : 64;
        const json_t **nk = orr_arena_calloc(L->tmp, ncap, sizeof(*nk));
        js_node **nv = orr_arena_calloc(L->tmp, ncap, sizeof(*nv));
        for (size_t i = 0; i < L->mcap; i++) {
            if (!L->mkeys[i])
                continue;
            size_t j = ld_hash_ptr(L->mkeys[i], ncap);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = L->mkeys[i];
            nv[j] = L->mvals[i];
        }
        L->mkeys = nk;
        L->mvals = nv;
        L->mcap = ncap;
    }
    size_t i = ld_hash_ptr(v, L->mcap);
    while (L->mkeys[i])
        i = (i + 1) & (L->mcap - 1);
    L->mkeys[i] = v;
    L->mvals[i] = node;
    L->mcount++;
}

static js_node *ld_new_node(js_loader *L, const char *path)
{
    js_node *n = orr_arena_calloc(L->a, 1, sizeof(*n));
    n->spath = orr_arena_strdup(L->a, path);
    n->min_len = n->max_len = -1;
    n->min_items = n->max_items = -1;
    n->min_props = n->max_props = -1;
    n->idx = L->nnodes++;
    if (L->tail)
        L->tail->next_all = n;
    else
        L->head = n;
    L->tail = n;
    return n;
}

static orr_status ld_fail(js_loader *L, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static orr_status ld_fail(js_loader *L, const char *path, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return orr_err_set(L->err, ORR_EINVAL, js_field(path), "%s", msg);
}

static orr_status ld_nonneg_int(js_loader *L, json_t *val, const char *kpath, int64_t *out)
{
    if (!js_is_integral(val) || js_num(val) < 0 || js_num(val) > (long double)INT64_MAX)
        return ld_fail(L, kpath, "must be a non-negative integer");
    *out = json_is_integer(val) ? (int64_t)json_integer_value(val) : (int64_t)json_real_value(val);
    return ORR_OK;
}

/* A non-empty (when nonempty) array of schemas. */
static orr_status ld_schema_list(js_loader *L, json_t *val, const char *kpath, int depth,
                                 int nonempty, js_list *out)
{
    char p[512];
    if (!json_is_array(val) || (nonempty && json_array_size(val) == 0))
        return ld_fail(L, kpath,
                       nonempty ? "must be a non-empty array of schemas"
                                : "must be an array of schemas");
    out->n = json_array_size(val);
    out->v = orr_arena_calloc(L->a, out->n ? out->n : 1, sizeof(*out->v));
    for (size_t i = 0; i < out->n; i++) {
        out->v[i] =
            ld_compile(L, json_array_get(val, i), js_path_idx(p, sizeof(p), kpath, i), depth + 1);
        if (!out->v[i])
            return L->err ? L->err->code : ORR_EINVAL;
    }
    return ORR_OK;
}

/* An array of unique strings (required, dependentRequired). */
static orr_status ld_name_list(js_loader *L, json_t *val, const char *kpath, const char ***out,
                               size_t *n)
{
    char p[512];
    if (!json_is_array(val))
        return ld_fail(L, kpath, "must be an array of strings");
    *n = json_array_size(val);
    *out = orr_arena_calloc(L->a, *n ? *n : 1, sizeof(**out));
    for (size_t i = 0; i < *n; i++) {
        json_t *s = json_array_get(val, i);
        if (!json_is_string(s))
            return ld_fail(L, js_path_idx(p, sizeof(p), kpath, i), "must be a string");
        for (size_t j = 0; j < i; j++)
            if (strcmp((*out)[j], json_string_value(s)) == 0)
                return ld_fail(L, js_path_idx(p, sizeof(p), kpath, i), "duplicate name \"%s\"",
                               json_string_value(s));
        (*out)[i] = json_string_value(s);
    }
    return ORR_OK;
}

#define LD_CHILD(dst, val, path)                                                                   \
    do {                                                                                           \
        (dst) = ld_compile(L, (val), (path), depth + 1);                                           \
        if (!(dst))                                                                                \
            return L->err ? L->err->code : ORR_EINVAL;                                             \
    } while (0)

static orr_status kw_ignore(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                            int depth)
{
    (void)L, (void)n, (void)val, (void)kpath, (void)arg, (void)depth;
    return ORR_OK;
}

static const struct {
    const char *name;
    unsigned bit;
} js_type_names[] = {
    {"null", JS_T_NULL},       {"boolean", JS_T_BOOLEAN}, {"object", JS_T_OBJECT},
    {"array", JS_T_ARRAY},     {"number", JS_T_NUMBER},   {"string", JS_T_STRING},
    {"integer", JS_T_INTEGER},
};

static unsigned ld_type_bit(const json_t *v)
{
    if (!json_is_string(v))
        return 0;
    for (size_t i = 0; i < sizeof(js_type_names) / sizeof(js_type_names[0]); i++)
        if (strcmp(json_string_value(v), js_type_names[i].name) == 0)
            return js_type_names[i].bit;
    return 0;
}

static orr_status kw_type(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                          int depth)
{
    (void)arg, (void)depth;
    char p[512];
    static const char names[] = "null, boolean, object, array, number, string or integer";
    if (json_is_string(val)) {
        n->types = ld_type_bit(val);
        if (!n->types)
            return ld_fail(L, kpath, "unknown type \"%s\" (expected %s)", json_string_value(val),
                           names);
        return ORR_OK;
    }
    if (!json_is_array(val) || json_array_size(val) == 0)
        return ld_fail(L, kpath, "must be a type name or a non-empty array of type names");
    for (size_t i = 0; i < json_array_size(val); i++) {
        unsigned bit = ld_type_bit(json_array_get(val, i));
        if (!bit)
            return ld_fail(L, js_path_idx(p, sizeof(p), kpath, i), "must be one of: %s", names);
        if (n->types & bit)
            return ld_fail(L, js_path_idx(p, sizeof(p), kpath, i), "duplicate type");
        n->types |= bit;
    }
    return ORR_OK;
}

static orr_status kw_enum(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                          int depth)
{
    (void)arg, (void)depth;
    if (!json_is_array(val) || json_array_size(val) == 0)
        return ld_fail(L, kpath, "must be a non-empty array");
    n->enum_vals = val;
    return ORR_OK;
}

static orr_status kw_const(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                           int depth)
{
    (void)L, (void)kpath, (void)arg, (void)depth;
    n->const_val = val;
    return ORR_OK;
}

enum { NUM_MIN, NUM_MAX, NUM_XMIN, NUM_XMAX, NUM_MULT };

static orr_status kw_number(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                            int depth)
{
    (void)depth;
    if (!json_is_number(val))
        return ld_fail(L, kpath, "must be a number");
    switch (arg) {
    case NUM_MIN:
        n->minimum = val;
        break;
    case NUM_MAX:
        n->maximum = val;
        break;
    case NUM_XMIN:
        n->xminimum = val;
        break;
    case NUM_XMAX:
        n->xmaximum = val;
        break;
    default:
        if (js_num(val) <= 0)
            return ld_fail(L, kpath, "must be a number > 0");
        n->multiple_of = val;
    }
    return ORR_OK;
}

enum { CNT_MINLEN, CNT_MAXLEN, CNT_MINITEMS, CNT_MAXITEMS, CNT_MINPROPS, CNT_MAXPROPS };

static orr_status kw_count(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                           int depth)
{
    (void)depth;
    int64_t *dst[] = {&n->min_len,   &n->max_len,   &n->min_items,
                      &n->max_items, &n->min_props, &n->max_props};
    return ld_nonneg_int(L, val, kpath, dst[arg]);
}

static orr_status kw_unique(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                            int depth)
{
    (void)arg, (void)depth;
    if (!json_is_boolean(val))
        return ld_fail(L, kpath, "must be a boolean");
    n->unique_items = json_is_true(val);
    return ORR_OK;
}

static orr_status kw_pattern(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                             int depth)
{
    (void)arg, (void)depth;
    char why[256];
    if (!json_is_string(val))
        return ld_fail(L, kpath, "must be a string");
    n->pattern = ld_regex(L, json_string_value(val), json_string_length(val), why, sizeof(why));
    if (!n->pattern)
        return ld_fail(L, kpath, "%s", why);
    n->pattern_src = json_string_value(val);
    return ORR_OK;
}

static orr_status kw_format(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                            int depth)
{
    (void)arg, (void)depth;
    static const struct {
        const char *name;
        enum js_format f;
    } fmts[] = {{"date-time", JS_FMT_DATE_TIME},
                {"date", JS_FMT_DATE},
                {"email", JS_FMT_EMAIL},
                {"uri", JS_FMT_URI},
                {"hostname", JS_FMT_HOSTNAME}};
    if (!json_is_string(val))
        return ld_fail(L, kpath, "must be a string");
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
        if (strcmp(json_string_value(val), fmts[i].name) == 0)
            n->format = fmts[i].f;
    return ORR_OK; /* unknown formats are ignored */
}

static int ld_prop_cmp(const void *a, const void *b)
{
    return strcmp(((const js_prop *)a)->key, ((const js_prop *)b)->key);
}

static orr_status kw_properties(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                                int depth)
{
    (void)arg;
    char p[512];
    const char *key;
    json_t *sub;
    if (!json_is_object(val))
        return ld_fail(L, kpath, "must be an object of schemas");
    n->props = orr_arena_calloc(L->a, json_object_size(val) + 1, sizeof(*n->props));
    json_object_foreach(val, key, sub)
    {
        js_prop *pr = &n->props[n->nprops++];
        pr->key = key;
        LD_CHILD(pr->schema, sub, js_path_key(p, sizeof(p), kpath, key));
    }
    qsort(n->props, n->nprops, sizeof(*n->props), ld_prop_cmp);
    return ORR_OK;
}

static orr_status kw_pattern_props(js_loader *L, js_node *n, json_t *val, const char *kpath,
                                   int arg, int depth)
{
    (void)arg;
    char p[512], why[256];
    const char *key;
    json_t *sub;
    if (!json_is_object(val))
        return ld_fail(L, kpath, "must be an object of schemas");
    n->pats = orr_arena_calloc(L->a, json_object_size(val) + 1, sizeof(*n->pats));
    json_object_foreach(val, key, sub)
    {
        js_pattern *pt = &n->pats[n->npats++];
        js_path_key(p, sizeof(p), kpath, key);
        pt->src = key;
        pt->re = ld_regex(L, key, strlen(key), why, sizeof(why));
        if (!pt->re)
            return ld_fail(L, p, "%s", why);
        LD_CHILD(pt->schema, sub, p);
    }
    return ORR_OK;
}

enum { SUB_ADDITIONAL, SUB_ITEMS, SUB_NOT, SUB_IF, SUB_THEN, SUB_ELSE };

static orr_status kw_subschema(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                               int depth)
{
    js_node **dst[] = {&n->additional, &n->items, &n->not_, &n->if_, &n->then_, &n->else_};
    if (arg == SUB_ITEMS && json_is_array(val))
        return ld_fail(L, kpath, "must be a schema (use prefixItems for tuples)");
    LD_CHILD(*dst[arg], val, kpath);
    return ORR_OK;
}

enum { LIST_ALL, LIST_ANY, LIST_ONE, LIST_PREFIX };

static orr_status kw_list(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                          int depth)
{
    js_list *dst[] = {&n->all_of, &n->any_of, &n->one_of, &n->prefix};
    return ld_schema_list(L, val, kpath, depth, 1, dst[arg]);
}

static orr_status kw_required(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                              int depth)
{
    (void)arg, (void)depth;
    return ld_name_list(L, val, kpath, &n->required, &n->nrequired);
}

static orr_status kw_dep_required(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                                  int depth)
{
    (void)arg, (void)depth;
    char p[512];
    const char *key;
    json_t *names;
    if (!json_is_object(val))
        return ld_fail(L, kpath, "must be an object of string arrays");
    n->deps = orr_arena_calloc(L->a, json_object_size(val) + 1, sizeof(*n->deps));
    json_object_foreach(val, key, names)
    {
        js_dep *d = &n->deps[n->ndeps++];
        d->key = key;
        orr_status rc =
            ld_name_list(L, names, js_path_key(p, sizeof(p), kpath, key), &d->names, &d->n);
        if (rc != ORR_OK)
            return rc;
    }
    return ORR_OK;
}

static orr_status kw_defs(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                          int depth)
{
    (void)n, (void)arg;
    char p[512];
    const char *key;
    json_t *sub;
    js_node *tmp;
    if (!json_is_object(val))
        return ld_fail(L, kpath, "must be an object of schemas");
    json_object_foreach(val, key, sub)
    {
        LD_CHILD(tmp, sub, js_path_key(p, sizeof(p), kpath, key));
    }
    return ORR_OK;
}

static orr_status kw_ref(js_loader *L, js_node *n, json_t *val, const char *kpath, int arg,
                         int depth)
{
    (void)arg, (void)depth;
    if (!json_is_string(val))
        return ld_fail(L, kpath, "must be a string");
    if (json_string_value(val)[0] != '#')
        return ld_fail(L, kpath, "only local references (\"#\", \"#/$defs/name\") are supported");
    n->ref_str = json_string_value(val);
    return ORR_OK;
}

static const struct js_keyword {
    const char *name;
    js_kw_fn fn;
    int arg;
} js_keywords[] = {
    {"type", kw_type, 0},
    {"enum", kw_enum, 0},
    {"const", kw_const, 0},
    {"minimum", kw_number, NUM_MIN},
    {"maximum", kw_number, NUM_MAX},
    {"exclusiveMinimum", kw_number, NUM_XMIN},
    {"exclusiveMaximum", kw_number, NUM_XMAX},
    {"multipleOf", kw_number, NUM_MULT},
    {"minLength", kw_count, CNT_MINLEN},
    {"maxLength", kw_count, CNT_MAXLEN},
    {"pattern", kw_pattern, 0},
    {"format", kw_format, 0},
    {"minItems", kw_count, CNT_MINITEMS},
    {"maxItems", kw_count, CNT_MAXITEMS},
    {"uniqueItems", kw_unique, 0},
    {"items", kw_subschema, SUB_ITEMS},
    {"prefixItems", kw_list, LIST_PREFIX},
    {"minProperties", kw_count, CNT_MINPROPS},
    {"maxProperties", kw_count, CNT_MAXPROPS},
    {"properties", kw_properties, 0},
    {"patternProperties", kw_pattern_props, 0},
    {"additionalProperties", kw_subschema, SUB_ADDITIONAL},
    {"required", kw_required, 0},
    {"dependentRequired", kw_dep_required, 0},
    {"allOf", kw_list, LIST_ALL},
    {"anyOf", kw_list, LIST_ANY},
    {"oneOf", kw_list, LIST_ONE},
    {"not", kw_subschema, SUB_NOT},
    {"if", kw_subschema, SUB_IF},
    {"then", kw_subschema, SUB_THEN},
    {"else", kw_subschema, SUB_ELSE},
    {"$ref", kw_ref, 0},
    {"$defs", kw_defs, 0},
    {"definitions", kw_defs, 0},
    {"$schema", kw_ignore, 0},
    {"$id", kw_ignore, 0},
    {"$comment", kw_ignore, 0},
    {"title", kw_ignore, 0},
    {"description", kw_ignore, 0},
    {"default", kw_ignore, 0},
    {"examples", kw_ignore, 0},
    {"readOnly", kw_ignore, 0},
    {"writeOnly", kw_ignore, 0},
    {"deprecated", kw_ignore, 0},
};

static js_node *ld_compile(js_loader *L, json_t *v, const char *path, int depth)
{
    char kp[512];
    const char *key;
    json_t *val;

    if (json_is_boolean(v)) {
        js_node *n = ld_new_node(L, path);
        n->is_false = json_is_false(v);
        return n;
    }
    if (!json_is_object(v)) {
        ld_fail(L, path, "must be a schema (an object or a boolean)");
        return NULL;
    }
    js_node *n = ld_memo_get(L, v);
    if (n)
        return n;
    if (depth > ORR_JSCHEMA_MAX_DEPTH) {
        ld_fail(L, path, "schema nested deeper than %d levels", ORR_JSCHEMA_MAX_DEPTH);
        return NULL;
    }
    n = ld_new_node(L, path);
    ld_memo_put(L, v, n);
    json_object_foreach(v, key, val)
    {
        const struct js_keyword *kw = NULL;
        for (size_t i = 0; i < sizeof(js_keywords) / sizeof(js_keywords[0]); i++) {
            if (strcmp(js_keywords[i].name, key) == 0) {
                kw = &js_keywords[i];
                break;
            }
        }
        js_path_key(kp, sizeof(kp), path, key);
        if (!kw) {
            ld_fail(L, kp, "unsupported keyword");
            return NULL;
        }
        if (kw->fn(L, n, val, kp, kw->arg, depth) != ORR_OK)
            return NULL;
    }
    return n;
}

static int ld_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Resolve "#..." (a URI fragment holding a JSON pointer) in doc; the schema
 * path of the target goes to tpath. 0 on success. */
static int ld_pointer(json_t *doc, const char *ref, json_t **out, char *tpath, size_t tn)
{
    char frag[1024], tok[512];
    size_t fl = 0;
    /* percent-decode the fragment */
    for (const char *p = ref + 1; *p; p++) {
        if (fl + 1 >= sizeof(frag))
            return -1;
        if (*p == '%') {
            int hi = ld_hex(p[1]), lo = hi < 0 ? -1 : ld_hex(p[2]);
            if (hi < 0 || lo < 0)
                return -1;
            frag[fl++] = (char)(hi * 16 + lo);
            p += 2;
        } else {
            frag[fl++] = *p;
        }
    }
    frag[fl] = '\0';
    tpath[0] = '\0';
    if (fl == 0) {
        *out = doc;
        return 0;
    }
    if (frag[0] != '/')
        return -1; /* anchors ("#name") are not supported */
    json_t *cur = doc;
    const char *p = frag + 1;
    for (;;) {
        size_t tl = 0;
        while (*p && *p != '/') {
            if (tl + 1 >= sizeof(tok))
                return -1;
            if (*p == '~') {
                if (p[1] == '0')
                    tok[tl++] = '~';
                else if (p[1] == '1')
                    tok[tl++] = '/';
                else
                    return -1;
                p += 2;
            } else {
                tok[tl++] = *p++;
            }
        }
        tok[tl] = '\0';
        char prev[512];
        snprintf(prev, sizeof(prev), "%s", tpath);
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
            js_path_key(tpath, tn, prev, tok);
        } else if (json_is_array(cur)) {
            char *end;
            if (tl == 0 || tl > 9 || (tl > 1 && tok[0] == '0') || !re_is_digit(tok[0]))
                return -1;
            unsigned long i = strtoul(tok, &end, 10);
            if (*end)
                return -1;
            cur = json_array_get(cur, i);
            js_path_idx(tpath, tn, prev, i);
        } else {
            return -1;
        }
        if (!cur)
            return -1;
        if (!*p)
            break;
        p++;
    }
    *out = cur;
    return 0;
}

static orr_status ld_resolve_refs(js_loader *L)
{
    char tpath[512], kp[512];
    for (js_node *n = L->head; n; n = n->next_all) {
        if (!n->ref_str || n->ref)
            continue;
        json_t *target;
        js_path_key(kp, sizeof(kp), n->spath, "$ref");
        if (ld_pointer(L->s->doc, n->ref_str, &target, tpath, sizeof(tpath)) != 0)
            return ld_fail(L, kp, "cannot resolve \"%s\" in this document", n->ref_str);
        n->ref = ld_compile(L, target, tpath, 0);
        if (!n->ref)
            return L->err ? L->err->code : ORR_EINVAL;
    }
    return ORR_OK;
}

/* k-th in-place child (applied to the same instance), or NULL past the end. */
static js_node *ld_inplace_child(const js_node *n, size_t k)
{
    if (n->ref && k-- == 0)
        return n->ref;
    const js_list *lists[] = {&n->all_of, &n->any_of, &n->one_of};
    for (size_t l = 0; l < 3; l++) {
        if (k < lists[l]->n)
            return lists[l]->v[k];
        k -= lists[l]->n;
    }
    /* then/else apply only under an if */
    js_node *singles[] = {n->not_, n->if_, n->if_ ? n->then_ : NULL, n->if_ ? n->else_ : NULL};
    for (size_t s = 0; s < 4; s++) {
        if (!singles[s])
            continue;
        if (k-- == 0)
            return singles[s];
    }
    return NULL;
}

/* Iterative DFS: an in-place cycle would recurse forever at validation. */
static orr_status ld_check_cycles(js_loader *L)
{
    struct frame {
        js_node *n;
        size_t k;
    } *stack = orr_arena_calloc(L->tmp, L->nnodes + 1, sizeof(*stack));
    unsigned char *color = orr_arena_calloc(L->tmp, L->nnodes + 1, 1); /* 0 new, 1 open, 2 done */
    for (js_node *r = L->head; r; r = r->next_all) {
        if (color[r->idx])
            continue;
        size_t sp = 0;
        stack[sp++] = (struct frame){r, 0};
        color[r->idx] = 1;
        while (sp) {
            struct frame *f = &stack[sp - 1];
            js_node *c = ld_inplace_child(f->n, f->k++);
            if (!c) {
                color[f->n->idx] = 2;
                sp--;
                continue;
            }
            if (color[c->idx] == 1)
                return ld_fail(L, f->n->spath,
                               "schema cycle without progress: leads back to %s on the same "
                               "value (through $ref, allOf, anyOf, oneOf, not or if/then/else)",
                               js_field(c->spath));
            if (color[c->idx] == 0) {
                color[c->idx] = 1;
                stack[sp++] = (struct frame){c, 0};
            }
        }
    }
    return ORR_OK;
}

static const js_node *ld_follow(const js_node *n)
{
    for (int hop = 0; n && n->ref && hop < 8; hop++) {
        if (n->const_val || n->enum_vals || n->nprops)
            break;
        n = n->ref;
    }
    return n;
}

/* A property whose schema pins one value: "kind": {"const": "shell"}. */
static void ld_find_discriminator(js_node *n)
{
    const js_node *m = n;
    for (int hop = 0; m && hop < 8; hop++, m = m->ref) {
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < m->nprops; i++) {
                const js_node *p = ld_follow(m->props[i].schema);
                const json_t *val = NULL;
                if (p->const_val)
                    val = p->const_val;
                else if (p->enum_vals && json_array_size(p->enum_vals) == 1)
                    val = json_array_get(p->enum_vals, 0);
                if (!val)
                    continue;
                int req = 0;
                for (size_t r = 0; r < m->nrequired; r++)
                    req |= strcmp(m->required[r], m->props[i].key) == 0;
                if (pass == 0 && !req)
                    continue; /* prefer a required discriminator */
                n->disc_key = m->props[i].key;
                n->disc_val = val;
                return;
            }
        }
    }
}

static void js_decref_cb(void *p)
{
    json_decref((json_t *)p);
}

static void js_match_free_cb(void *p)
{
    pcre2_match_context_free((pcre2_match_context *)p);
}

orr_status orr_jschema_load(json_t *schema, orr_jschema **out, orr_err *err)
{
    orr_status rc;
    if (!schema || !out)
        return orr_err_set(err, ORR_EINVAL, "$", "no schema given");
    orr_arena *a = orr_arena_create(0);
    orr_jschema *s = orr_arena_calloc(a, 1, sizeof(*s));
    s->arena = a;
    s->doc = json_deep_copy(schema);
    if (!s->doc) {
        orr_arena_destroy(a);
        return orr_err_set(err, ORR_EINVAL, "$", "cannot copy the schema document");
    }
    orr_arena_on_cleanup(a, js_decref_cb, s->doc);
    s->match = pcre2_match_context_create(NULL);
    if (!s->match)
        orr_oom(sizeof(void *));
    orr_arena_on_cleanup(a, js_match_free_cb, s->match);
    pcre2_set_match_limit(s->match, ORR_JSCHEMA_MATCH_LIMIT);
    pcre2_set_depth_limit(s->match, ORR_JSCHEMA_MATCH_LIMIT);
    pcre2_set_heap_limit(s->match, ORR_JSCHEMA_MATCH_HEAP_KIB);

    js_loader L = {.s = s, .a = a, .tmp = orr_arena_create(0), .err = err};
    orr_err local;
    if (!L.err)
        L.err = &local;
    s->root = ld_compile(&L, s->doc, "", 0);
    if (!s->root) {
        rc = L.err->code;
        goto fail;
    }
    if ((rc = ld_resolve_refs(&L)) != ORR_OK)
        goto fail;
    if ((rc = ld_check_cycles(&L)) != ORR_OK)
        goto fail;
    for (js_node *n = L.head; n; n = n->next_all)
        ld_find_discriminator(n);
    orr_arena_destroy(L.tmp);
    *out = s;
    return ORR_OK;
fail:
    orr_arena_destroy(L.tmp);
    orr_arena_destroy(a);
    return rc != ORR_OK ? rc : ORR_EINVAL;
}

orr_status orr_jschema_load_file(const char *path, orr_jschema **out, orr_err *err)
{
    json_error_t je;
    if (!path)
        return orr_err_set(err, ORR_EINVAL, "$", "no schema path given");
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        if (je.line < 0)
            return orr_err_set(err, ORR_EIO, path, "cannot read: %s", je.text);
        return orr_err_set(err, ORR_EINVAL, path, "bad JSON at line %d column %d: %s", je.line,
                           je.column, je.text);
    }
    orr_status rc = orr_jschema_load(doc, out, err);
    json_decref(doc);
    return rc;
}

void orr_jschema_free(orr_jschema *s)
{
    if (s)
        orr_arena_destroy(s->arena); /* frees s itself, the regexes and the document */
}

/* ---------------------------------------------------------------- validator */

typedef struct js_vctx {
    char path[512];
    size_t len;
    size_t err_len;             /* path length where the last failure was reported */
    int depth;                  /* containers entered */
    int calls;                  /* nested node applications */
    long steps;                 /* node applications so far (work budget) */
    pcre2_match_context *match; /* the schema's pattern-match limits */
} js_vctx;

/* Append n bytes, cut at the buffer's end. */
static void vp_put(js_vctx *c, const char *p, size_t n)
{
    size_t room = sizeof(c->path) - 1 - c->len;
    if (n > room)
        n = room;
    memcpy(c->path + c->len, p, n);
    c->len += n;
    c->path[c->len] = '\0';
}

/* ".key" (or "key" at an empty root); returns the length to pop back to. */
static size_t vp_key(js_vctx *c, const char *key)
{
    size_t old = c->len;
    if (c->len)
        vp_put(c, ".", 1);
    vp_put(c, key, strlen(key));
    return old;
}

/* "[i]"; returns the length to pop back to. */
static size_t vp_idx(js_vctx *c, size_t i)
{
    char digits[24];
    size_t k = sizeof(digits);
    size_t old = c->len;
    digits[--k] = ']';
    do {
        digits[--k] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    digits[--k] = '[';
    vp_put(c, digits + k, sizeof(digits) - k);
    return old;
}

static void vp_pop(js_vctx *c, size_t old)
{
    c->len = old;
    c->path[old] = '\0';
}

static int v_fail(js_vctx *c, orr_err *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int v_fail(js_vctx *c, orr_err *e, const char *fmt, ...)
{
    e->code = ORR_EINVAL;
    js_copy(e->field, sizeof(e->field), js_field(c->path));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    c->err_len = c->len;
    return JS_FAIL;
}

/* Same as v_fail, at child key of the current path. */
static int v_fail_key(js_vctx *c, orr_err *e, const char *key, const char *msg)
{
    size_t old = vp_key(c, key);
    v_fail(c, e, "%s", msg);
    vp_pop(c, old);
    return JS_FAIL;
}

static int v_node(const js_node *n, const json_t *v, js_vctx *c, orr_err *e);

static unsigned v_type_bits(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return JS_T_OBJECT;
    case JSON_ARRAY:
        return JS_T_ARRAY;
    case JSON_STRING:
        return JS_T_STRING;
    case JSON_INTEGER:
        return JS_T_NUMBER | JS_T_INTEGER;
    case JSON_REAL:
        return JS_T_NUMBER | (js_is_integral(v) ? JS_T_INTEGER : 0);
    case JSON_TRUE:
    case JSON_FALSE:
        return JS_T_BOOLEAN;
    default:
        return JS_T_NULL;
    }
}

/* "an integer >= 0 and <= 10", ">= 0", "a number" */
static void v_num_desc(const js_node *n, char *buf, size_t cap)
{
    char num[64];
    size_t len = 0;
    const char *sep = "";
    buf[0] = '\0';
    unsigned nt = n->types & (JS_T_NUMBER | JS_T_INTEGER);
    if (n->types && n->types == nt) {
        len += (size_t)snprintf(buf, cap, "%s", nt == JS_T_INTEGER ? "an integer" : "a number");
        sep = " ";
    }
    const json_t *bounds[] = {n->minimum, n->xminimum, n->maximum, n->xmaximum};
    const char *ops[] = {">=", ">", "<=", "<"};
    for (int i = 0; i < 4; i++) {
        if (!bounds[i] || len >= cap)
            continue;
        js_num_str(bounds[i], num, sizeof(num));
        len += (size_t)snprintf(buf + len, cap - len, "%s%s %s", sep, ops[i], num);
        sep = " and ";
    }
}

static int v_type_fail(const js_node *n, js_vctx *c, orr_err *e)
{
    char desc[256];
    unsigned t = n->types;
    if ((t & ~(unsigned)(JS_T_NUMBER | JS_T_INTEGER)) == 0) {
        v_num_desc(n, desc, sizeof(desc));
        return v_fail(c, e, "must be %s", desc);
    }
    static const struct {
        unsigned bit;
        const char *name;
    } order[] = {{JS_T_OBJECT, "an object"},   {JS_T_ARRAY, "an array"},
                 {JS_T_STRING, "a string"},    {JS_T_NUMBER, "a number"},
                 {JS_T_INTEGER, "an integer"}, {JS_T_BOOLEAN, "a boolean"},
                 {JS_T_NULL, "null"}};
    const char *names[8];
    size_t k = 0;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (!(t & order[i].bit))
            continue;
        if (order[i].bit == JS_T_INTEGER && (t & JS_T_NUMBER))
            continue;
        names[k++] = order[i].name;
    }
    size_t len = 0;
    desc[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        const char *sep = i == 0 ? "" : (i + 1 == k ? " or " : ", ");
        len += (size_t)snprintf(desc + len, sizeof(desc) - len, "%s%s", sep, names[i]);
        if (len >= sizeof(desc))
            break;
    }
    return v_fail(c, e, "must be %s", desc);
}

static int v_enum_fail(const json_t *vals, js_vctx *c, orr_err *e)
{
    char list[320], one[128];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < json_array_size(vals); i++) {
        js_val_str(json_array_get(vals, i), 1, one, sizeof(one));
        size_t need = strlen(one) + 2;
        if (len + need + 5 >= sizeof(list)) {
            snprintf(list + len, sizeof(list) - len, "%s...", i ? ", " : "");
            break;
        }
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", one);
    }
    return v_fail(c, e, "must be one of: %s", list);
}

static int v_number(const js_node *n, const json_t *v, js_vctx *c, orr_err *e)
{
    char desc[256];
    int bad = (n->minimum && js_num_cmp(v, n->minimum) < 0) ||
              (n->xminimum && js_num_cmp(v, n->xminimum) <= 0) ||
              (n->maximum && js_num_cmp(v, n->maximum) > 0) ||
              (n->xmaximum && js_num_cmp(v, n->xmaximum) >= 0);
    if (bad) {
        v_num_desc(n, desc, sizeof(desc));
        return v_fail(c, e, "must be %s", desc);
    }
    if (n->multiple_of) {
        int ok;
        if (json_is_integer(v) && json_is_integer(n->multiple_of)) {
            ok = json_integer_value(v) % json_integer_value(n->multiple_of) == 0;
        } else {
            long double q = js_num(v) / js_num(n->multiple_of);
            long double r = q - roundl(q);
            long double mag = fabsl(q) > 1 ? fabsl(q) : 1;
            ok = isfinite((double)q) && fabsl(r) <= 1e-9L * mag;
        }
        if (!ok) {
            js_num_str(n->multiple_of, desc, sizeof(desc));
            return v_fail(c, e, "must be a multiple of %s", desc);
        }
    }
    return JS_OK;
}

static size_t v_utf8_len(const char *s, size_t n)
{
    size_t cps = 0;
    for (size_t i = 0; i < n; i++)
        cps += ((unsigned char)s[i] & 0xC0) != 0x80;
    return cps;
}

/* A match limit stopped a pattern: the value is refused, whatever anyOf or
 * not would make of a plain mismatch. */
static int v_pattern_stopped(js_vctx *c, orr_err *e, const char *src, const char *why)
{
    v_fail(c, e, "too costly to match against pattern %s (%s)", src, why);
    return JS_FATAL;
}

static int v_string(const js_node *n, const json_t *v, js_vctx *c, orr_err *e)
{
    const char *s = json_string_value(v);
    size_t bytes = json_string_length(v);
    if (n->min_len >= 0 || n->max_len >= 0) {
        size_t cps = v_utf8_len(s, bytes);
        if (n->min_len >= 0 && cps < (uint64_t)n->min_len)
            return v_fail(c, e, "must be at least %lld characters long", (long long)n->min_len);
        if (n->max_len >= 0 && cps > (uint64_t)n->max_len)
            return v_fail(c, e, "must be at most %lld characters long", (long long)n->max_len);
    }
    if (n->pattern) {
        char why[160];
        int m = js_regex_match(n->pattern, c->match, s, bytes, why, sizeof(why));
        if (m < 0)
            return v_pattern_stopped(c, e, n->pattern_src, why);
        if (!m)
            return v_fail(c, e, "must match pattern %s", n->pattern_src);
    }
    if (n->format && !fmt_check(n->format, s, bytes))
        return v_fail(c, e, "must be %s", fmt_desc(n->format));
    return JS_OK;
}

static int v_depth_fail(js_vctx *c, orr_err *e)
{
    v_fail(c, e, "nested deeper than %d levels", ORR_JSCHEMA_MAX_DEPTH);
    return JS_FATAL;
}

typedef struct js_hidx {
    uint64_t h;
    size_t i;
} js_hidx;

static int v_hidx_cmp(const void *a, const void *b)
{
    const js_hidx *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Smallest j with some i < j and items i, j equal; returns 0 when all unique. */
static int v_find_duplicate(const json_t *arr, size_t *oi, size_t *oj)
{
    size_t n = json_array_size(arr);
    int found = 0;
    js_hidx *t = n > 32 ? malloc(n * sizeof(*t)) : NULL;
    if (!t) {
        for (size_t j = 1; j < n; j++)
            for (size_t i = 0; i < j; i++)
                if (js_equal(json_array_get(arr, i), json_array_get(arr, j), 0)) {
                    *oi = i, *oj = j;
                    return 1;
                }
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        t[i] = (js_hidx){js_hash(json_array_get(arr, i), 0), i};
    qsort(t, n, sizeof(*t), v_hidx_cmp);
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && t[b].h == t[a].h)
            b++;
        for (size_t x = a + 1; x < b; x++) { /* t[x].i ascending within the run */
            if (found && t[x].i >= *oj)
                break;
            for (size_t y = a; y < x; y++) {
                if (js_equal(json_array_get(arr, t[y].i), json_array_get(arr, t[x].i), 0)) {
                    *oi = t[y].i, *oj = t[x].i;
                    found = 1;
                    break;
                }
            }
        }
        a = b;
    }
    free(t);
    return found;
}

static int v_array(const js_node *n, const json_t *v, js_vctx *c, orr_err *e)
{
    size_t count = json_array_size(v);
    int r = JS_OK;
    if (n->min_items >= 0 && count < (uint64_t)n->min_items)
        return v_fail(c, e, "must have at least %lld item%s", (long long)n->min_items,
                      n->min_items == 1 ? "" : "s");
    if (n->max_items >= 0 && count > (uint64_t)n->max_items)
        return v_fail(c, e, "must have at most %lld item%s", (long long)n->max_items,
                      n->max_items == 1 ? "" : "s");
    if ((n->prefix.n || n->items) && count) {
        if (c->depth >= ORR_JSCHEMA_MAX_DEPTH)
            return v_depth_fail(c, e);
        c->depth++;
        for (size_t i = 0; i < count && r == JS_OK; i++) {
            const js_node *sub = i < n->prefix.n ? n->prefix.v[i] : n->items;
            if (!sub)
                break;
            size_t old = vp_idx(c, i);
            r = v_node(sub, json_array_get(v, i), c, e);
            vp_pop(c, old);
        }
        c->depth--;
        if (r != JS_OK)
            return r;
    }
    size_t di, dj;
    if (n->unique_items && v_find_duplicate(v, &di, &dj)) {
        size_t old = vp_idx(c, dj);
        v_fail(c, e, "must be unique (same as item %zu)", di);
        vp_pop(c, old);
        return JS_FAIL;
    }
    return JS_OK;
}

static const js_node *v_prop_find(const js_node *n, const char *key)
{
    size_t lo = 0, hi = n->nprops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(key, n->props[mid].key);
        if (cmp == 0)
            return n->props[mid].schema;
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static int v_object(const js_node *n, const json_t *v, js_vctx *c, orr_err *e)
{
    size_t count = json_object_size(v);
    if (n->min_props >= 0 && count < (uint64_t)n->min_props)
        return v_fail(c, e, "must have at least %lld field%s", (long long)n->min_props,
                      n->min_props == 1 ? "" : "s");
    if (n->max_props >= 0 && count > (uint64_t)n->max_props)
        return v_fail(c, e, "must have at most %lld field%s", (long long)n->max_props,
                      n->max_props == 1 ? "" : "s");
    for (size_t i = 0; i < n->nrequired; i++)
        if (!json_object_get(v, n->required[i]))
            return v_fail_key(c, e, n->required[i], "is required");
    for (size_t d = 0; d < n->ndeps; d++) {
        if (!json_object_get(v, n->deps[d].key))
            continue;
        for (size_t i = 0; i < n->deps[d].n; i++) {
            if (json_object_get(v, n->deps[d].names[i]))
                continue;
            char msg[256];
            snprintf(msg, sizeof(msg), "is required when %s is present", n->deps[d].key);
            return v_fail_key(c, e, n->deps[d].names[i], msg);
        }
    }
    if (!n->nprops && !n->npats && !n->additional)
        return JS_OK;
    if (!count)
        return JS_OK;
    if (c->depth >= ORR_JSCHEMA_MAX_DEPTH)
        return v_depth_fail(c, e);
    c->depth++;
    int r = JS_OK;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        int matched = 0;
        size_t old = vp_key(c, key);
        const js_node *sub = v_prop_find(n, key);
        if (sub) {
            matched = 1;
            r = v_node(sub, val, c, e);
        }
        for (size_t p = 0; p < n->npats && r == JS_OK; p++) {
            char why[160];
            int m = js_regex_match(n->pats[p].re, c->match, key, strlen(key), why, sizeof(why));
            if (m < 0) {
                r = v_pattern_stopped(c, e, n->pats[p].src, why);
            } else if (m) {
                matched = 1;
                r = v_node(n->pats[p].schema, val, c, e);
            }
        }
        if (r == JS_OK && !matched && n->additional) {
            if (n->additional->is_false)
                r = v_fail(c, e, "unknown field");
            else
                r = v_node(n->additional, val, c, e);
        }
        vp_pop(c, old);
        if (r != JS_OK)
            break;
    }
    c->depth--;
    return r;
}

/* anyOf (one = 0) or oneOf (one = 1); see orr_jschema_validate for the error choice. */
static int v_combo(const js_list *l, int one, const json_t *v, js_vctx *c, orr_err *e)
{
    orr_err cur, pick;
    size_t matches = 0, first = 0, second = 0;
    int have_sel = 0, nsel = 0;
    size_t best_len = 0, pick_len = 0;
    int best_ties = 0, have_best = 0;
    int same_key = json_is_object(v);
    const char *disc_key = l->n ? l->v[0]->disc_key : NULL;

    for (size_t i = 0; i < l->n; i++) {
        const js_node *b = l->v[i];
        if (!b->disc_key || !disc_key || strcmp(b->disc_key, disc_key) != 0)
            same_key = 0;
        int r = v_node(b, v, c, &cur);
        if (r == JS_FATAL) {
            *e = cur;
            return r;
        }
        if (r == JS_OK) {
            if (!one)
                return JS_OK;
            if (matches == 0)
                first = i;
            else if (matches == 1)
                second = i;
            matches++;
            continue;
        }
        const json_t *dv =
            b->disc_key && json_is_object(v) ? json_object_get(v, b->disc_key) : NULL;
        if (dv && js_equal(dv, b->disc_val, 0)) {
            nsel++;
            if (!have_sel) {
                pick = cur;
                pick_len = c->err_len;
                have_sel = 1;
            }
            continue;
        }
        if (have_sel)
            continue;
        if (!have_best || c->err_len > best_len) {
            best_len = c->err_len;
            best_ties = 0;
            have_best = 1;
            if (best_len > c->len) {
                pick = cur;
                pick_len = best_len;
            }
        } else if (c->err_len == best_len) {
            best_ties++;
        }
    }
    if (one && matches == 1)
        return JS_OK;
    if (one && matches > 1)
        return v_fail(c, e,
                      "must match exactly one of %zu schemas, but matches %zu (#%zu and #%zu)",
                      l->n, matches, first + 1, second + 1);
    if (have_sel && nsel == 1) {
        *e = pick;
        c->err_len = pick_len;
        return JS_FAIL;
    }
    if (same_key && nsel == 0) {
        /* every branch is told apart by the same property: say what it may be */
        const json_t *dv = json_object_get(v, disc_key);
        if (!dv)
            return v_fail_key(c, e, disc_key, "is required");
        char list[320], one_val[128];
        size_t len = 0;
        list[0] = '\0';
        for (size_t i = 0; i < l->n && len < sizeof(list); i++) {
            js_val_str(l->v[i]->disc_val, 1, one_val, sizeof(one_val));
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", one_val);
        }
        size_t old = vp_key(c, disc_key);
        v_fail(c, e, "must be one of: %s", list);
        vp_pop(c, old);
        return JS_FAIL;
    }
    if (!have_sel && have_best && best_ties == 0 && best_len > c->len) {
        *e = pick;
        c->err_len = pick_len;
        return JS_FAIL;
    }
    return v_fail(c, e,
                  one ? "must match exactly one of %zu schemas" : "must match one of %zu schemas",
                  l->n);
}

static int v_node_body(const js_node *n, const json_t *v, js_vctx *c, orr_err *e)
{
    int r;
    if (n->ref && (r = v_node(n->ref, v, c, e)) != JS_OK)
        return r;
    if (n->types && !(n->types & v_type_bits(v)))
        return v_type_fail(n, c, e);
    if (n->enum_vals) {
        size_t i, k = json_array_size(n->enum_vals);
        for (i = 0; i < k; i++)
            if (js_equal(v, json_array_get(n->enum_vals, i), 0))
                break;
        if (i == k)
            return v_enum_fail(n->enum_vals, c, e);
    }
    if (n->const_val && !js_equal(v, n->const_val, 0)) {
        char one[256];
        js_val_str(n->const_val, 0, one, sizeof(one));
        return v_fail(c, e, "must be %s", one);
    }
    switch (json_typeof(v)) {
    case JSON_INTEGER:
    case JSON_REAL:
        r = v_number(n, v, c, e);
        break;
    case JSON_STRING:
        r = v_string(n, v, c, e);
        break;
    case JSON_ARRAY:
        r = v_array(n, v, c, e);
        break;
    case JSON_OBJECT:
        r = v_object(n, v, c, e);
        break;
    default:
        r = JS_OK;
    }
    if (r != JS_OK)
        return r;
    for (size_t i = 0; i < n->all_of.n; i++)
        if ((r = v_node(n->all_of.v[i], v, c, e)) != JS_OK)
            return r;
    if (n->any_of.n && (r = v_combo(&n->any_of, 0, v, c, e)) != JS_OK)
        return r;
    if (n->one_of.n && (r = v_combo(&n->one_of, 1, v, c, e)) != JS_OK)
        return r;
    if (n->not_) {
        orr_err tmp;
        r = v_node(n->not_, v, c, &tmp);
        if (r == JS_FATAL) {
            *e = tmp;
            return r;
        }
        if (r == JS_OK)
            return v_fail(c, e, "must not match the schema at %s.not", js_field(n->spath));
    }
    if (n->if_) {
        orr_err tmp;
        r = v_node(n->if_, v, c, &tmp);
        if (r == JS_FATAL) {
            *e = tmp;
            return r;
        }
        const js_node *next = r == JS_OK ? n->then_ : n->else_;
        if (next && (r = v_node(next, v, c, e)) != JS_OK)
            return r;
    }
    return JS_OK;
}

static int v_node(const js_node *n, const json_t *v, js_vctx *c, orr_err *e)
{
    if (n->is_false)
        return v_fail(c, e, "is not allowed");
    if (c->calls >= ORR_JSCHEMA_MAX_RECURSION) {
        v_fail(c, e, "schema applied deeper than %d levels", ORR_JSCHEMA_MAX_RECURSION);
        return JS_FATAL;
    }
    if (++c->steps > ORR_JSCHEMA_MAX_STEPS) {
        v_fail(c, e, "too costly to validate (more than %d schema applications)",
               ORR_JSCHEMA_MAX_STEPS);
        return JS_FATAL;
    }
    c->calls++;
    int r = v_node_body(n, v, c, e);
    c->calls--;
    return r;
}

orr_status orr_jschema_validate(const orr_jschema *s, const json_t *instance, const char *root_path,
                                orr_err *err)
{
    orr_err local;
    orr_err *e = err ? err : &local;
    if (!s || !instance)
        return orr_err_set(err, ORR_EINVAL, js_field(root_path), "nothing to validate");
    js_vctx c;
    c.len = 0;
    c.path[0] = '\0';
    c.err_len = 0;
    c.depth = 0;
    c.calls = 0;
    c.steps = 0;
    c.match = s->match;
    if (root_path)
        vp_put(&c, root_path, strlen(root_path));
    orr_err_clear(e);
    if (v_node(s->root, instance, &c, e) != JS_OK) {
        e->code = ORR_EINVAL;
        return ORR_EINVAL;
    }
    orr_err_clear(e);
    return ORR_OK;
}

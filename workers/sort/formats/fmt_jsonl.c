/*
 * fmt_jsonl.c - JSON lines: one JSON object per line.
 *
 * A small scanner, not a JSON library: it checks the whole line is one
 * well-formed JSON object and gives views of the top-level members the spec
 * names, without allocating. Nested objects and arrays are checked and
 * skipped (nesting deeper than JSONL_MAX_DEPTH is a syntax reject). String
 * views are the raw bytes between the quotes; a string holding escapes is
 * marked escaped (routing refuses escaped interface and time values rather
 * than unescaping them). Numbers, true, false and null are views of their
 * text; null counts as a missing field. Keys are compared as raw bytes.
 */
#include <string.h>

#include "sort_format.h"

#define JSONL_MAX_DEPTH 64

typedef struct jscan {
    const char *p, *end;
} jscan;

static void js_ws(jscan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
        s->p++;
}

static int js_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* At '"': sets the view to the bytes inside the quotes. */
static int js_string(jscan *s, const char **vp, size_t *vl, int *escaped)
{
    if (s->p >= s->end || *s->p != '"')
        return -1;
    const char *start = ++s->p;
    *escaped = 0;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            *vp = start;
            *vl = (size_t)(s->p - start);
            s->p++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            *escaped = 1;
            if (++s->p >= s->end)
                return -1;
            c = (unsigned char)*s->p;
            if (c == 'u') {
                if (s->end - s->p < 5 || !js_hex(s->p[1]) || !js_hex(s->p[2]) || !js_hex(s->p[3]) ||
                    !js_hex(s->p[4]))
                    return -1;
                s->p += 4;
            } else if (!strchr("\"\\/bfnrt", c) || c == 0) {
                return -1;
            }
        }
        s->p++;
    }
    return -1;
}

static int js_digits(jscan *s)
{
    const char *b = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > b ? 0 : -1;
}

static int js_number(jscan *s)
{
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (js_digits(s) != 0)
        return -1;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (js_digits(s) != 0)
            return -1;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (js_digits(s) != 0)
            return -1;
    }
    return 0;
}

static int js_lit(jscan *s, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

static int js_value(jscan *s, int depth, sort_val *v);

static int js_container(jscan *s, int depth)
{
    char close = *s->p == '{' ? '}' : ']';
    int obj = close == '}';
    if (depth >= JSONL_MAX_DEPTH)
        return -1;
    s->p++;
    js_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        if (obj) {
            const char *kp;
            size_t kl;
            int esc;
            if (js_string(s, &kp, &kl, &esc) != 0)
                return -1;
            js_ws(s);
            if (s->p >= s->end || *s->p != ':')
                return -1;
            s->p++;
            js_ws(s);
        }
        if (js_value(s, depth + 1, NULL) != 0)
            return -1;
        js_ws(s);
        if (s->p >= s->end)
            return -1;
        if (*s->p == ',') {
            s->p++;
            js_ws(s);
            continue;
        }
        if (*s->p == close) {
            s->p++;
            return 0;
        }
        return -1;
    }
}

/* One value; v (may be NULL) gets a view of scalars. */
static int js_value(jscan *s, int depth, sort_val *v)
{
    if (s->p >= s->end)
        return -1;
    const char *b = s->p;
    int esc = 0, str = 0, null = 0;
    const char *sp = NULL;
    size_t sl = 0;
    switch (*s->p) {
    case '"':
        if (js_string(s, &sp, &sl, &esc) != 0)
            return -1;
        str = 1;
        break;
    case '{':
    case '[':
        if (js_container(s, depth) != 0)
            return -1;
        break;
    case 't':
        if (js_lit(s, "true") != 0)
            return -1;
        break;
    case 'f':
        if (js_lit(s, "false") != 0)
            return -1;
        break;
    case 'n':
        if (js_lit(s, "null") != 0)
            return -1;
        null = 1;
        break;
    default:
        if (js_number(s) != 0)
            return -1;
    }
    if (v && !null) {
        v->p = str ? sp : b;
        v->len = (uint32_t)(str ? sl : (size_t)(s->p - b));
        v->set = 1;
        v->is_num = 0;
        v->escaped = (uint8_t)esc;
    }
    return 0;
}

static int jsonl_parse(const sort_spec *spec, const char *rec, size_t len, sort_val *vals,
                       sort_reject_reason *why)
{
    jscan s = {rec, rec + len};
    size_t n = spec->format.nfields;
    for (size_t i = 0; i < n; i++)
        vals[i].set = 0;
    js_ws(&s);
    if (s.p >= s.end || *s.p != '{')
        goto bad;
    s.p++;
    js_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
        goto done;
    }
    for (;;) {
        const char *kp;
        size_t kl;
        int esc;
        if (js_string(&s, &kp, &kl, &esc) != 0)
            goto bad;
        js_ws(&s);
        if (s.p >= s.end || *s.p != ':')
            goto bad;
        s.p++;
        js_ws(&s);
        sort_val *target = NULL;
        if (!esc) {
            for (size_t i = 0; i < n; i++) {
                const char *name = spec->format.fields[i].name;
                if (!vals[i].set && strncmp(name, kp, kl) == 0 && name[kl] == 0) {
                    target = &vals[i];
                    break;
                }
            }
        }
        if (js_value(&s, 1, target) != 0)
            goto bad;
        js_ws(&s);
        if (s.p >= s.end)
            goto bad;
        if (*s.p == ',') {
            s.p++;
            js_ws(&s);
            continue;
        }
        if (*s.p == '}') {
            s.p++;
            break;
        }
        goto bad;
    }
done:
    js_ws(&s);
    if (s.p != s.end)
        goto bad;
    return 0;
bad:
    *why = SORT_REJ_SYNTAX;
    return -1;
}

const sort_format_ops sort_fmt_jsonl = {
    .name = "jsonl",
    .binary = 0,
    .frame = sort_frame_lines,
    .parse = jsonl_parse,
};

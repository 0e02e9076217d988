/*
 * orr_subst.c - the `${...}` substitution language of task specs (see
 * orr_subst.h for the language).
 *
 * One scanner serves both the check and the expansion: it walks the text
 * once, copies plain text, and at each "${" that starts a name reads the
 * name and the optional format up to the closing brace. In check mode
 * (out == NULL) it only decides whether each name is known and each format
 * valid; in expand mode it appends the values. Nothing is allocated apart
 * from the output buffer, and every read is bounded by len, so the scanner
 * is safe on arbitrary bytes (it has a fuzz target).
 */
#include "orr_subst.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "orr_json.h"

const char *const orr_subst_builtins[] = {"task",    "task_id",       "instance_id", "attempt",
                                          "version", "schedule_time", NULL};

/* The built-ins that are instants (and so take a format). */
static int orr_subst__is_time(const char *name, size_t len)
{
    return len == 13 && memcmp(name, "schedule_time", 13) == 0;
}

int orr_subst_is_builtin(const char *name, size_t len)
{
    for (size_t i = 0; orr_subst_builtins[i]; i++)
        if (strlen(orr_subst_builtins[i]) == len && memcmp(orr_subst_builtins[i], name, len) == 0)
            return 1;
    return 0;
}

static int orr_subst__lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static int orr_subst__namech(char c)
{
    return orr_subst__lower(c) || (c >= '0' && c <= '9') || c == '_';
}

int orr_subst_valid_name(const char *s)
{
    if (!s || !orr_subst__lower(s[0]))
        return 0;
    size_t n = 1;
    while (s[n] && orr_subst__namech(s[n]))
        n++;
    return s[n] == '\0' && n <= ORR_SUBST_NAME_MAX;
}

/* strftime conversions accepted in a format (C locale, one at a time). %s
 * and %z are written here, the rest by strftime. */
static const char orr_subst__convs[] = "aAbBCdDeFgGhHIjmMnpRsStTuUVwWyYz%";

/* Check fmt (flen bytes); in expand mode (out != NULL) append the instant t
 * as seen in tz formatted by it. */
static orr_status orr_subst__time(const char *fmt, size_t flen, int64_t t, const orr_tz *tz,
                                  orr_buf *out, const char *field, orr_err *err)
{
    struct tm tm;
    int32_t off = 0;
    if (out) {
        off = tz ? orr_tz_offset(tz, t) : 0;
        time_t lt = (time_t)(t + off);
        if (!gmtime_r(&lt, &tm))
            return orr_err_set(err, ORR_EINVAL, field, "schedule time out of range");
    }
    for (size_t i = 0; i < flen; i++) {
        char c = fmt[i];
        if (c != '%') {
            if (out)
                orr_buf_append_byte(out, c);
            continue;
        }
        if (++i == flen)
            return orr_err_set(err, ORR_EINVAL, field,
                               "format \"%.*s\" ends in a lone %%: write %%%% for a percent sign",
                               (int)flen, fmt);
        c = fmt[i];
        if (c == '\0' || !strchr(orr_subst__convs, c))
            return orr_err_set(err, ORR_EINVAL, field,
                               "format \"%.*s\": %%%c is not a supported conversion (use %%Y %%m "
                               "%%d %%H %%M %%S %%j %%a %%b %%s %%z %%F %%T ...)",
                               (int)flen, fmt, c ? c : '0');
        if (!out)
            continue;
        char buf[80];
        if (c == 's') {
            snprintf(buf, sizeof buf, "%lld", (long long)t);
        } else if (c == 'z') {
            int32_t a = off < 0 ? -off : off;
            snprintf(buf, sizeof buf, "%c%02d%02d", off < 0 ? '-' : '+', (int)(a / 3600),
                     (int)(a / 60 % 60));
        } else {
            char f[3] = {'%', c, '\0'};
            if (strftime(buf, sizeof buf, f, &tm) == 0)
                buf[0] = '\0';
        }
        orr_buf_append_str(out, buf);
    }
    return ORR_OK;
}

/* The schedule time without a format: ISO 8601 with the zone's offset. */
static void orr_subst__iso(int64_t t, const orr_tz *tz, orr_buf *out)
{
    int32_t off = tz ? orr_tz_offset(tz, t) : 0;
    time_t lt = (time_t)(t + off);
    struct tm tm;
    if (!gmtime_r(&lt, &tm))
        return;
    int32_t a = off < 0 ? -off : off;
    orr_buf_appendf(out, "%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    off < 0 ? '-' : '+', (int)(a / 3600), (int)(a / 60 % 60));
}

/* The scanner. Check mode: out NULL, names[0..n) the declared names.
 * Expand mode: out and env set. */
static orr_status orr_subst__scan(const char *text, size_t len, const char *const *names, size_t n,
                                  const orr_subst_env *env, orr_buf *out, const char *field,
                                  orr_err *err)
{
    size_t base = out ? out->len : 0;
    size_t i = 0;
    while (i < len) {
        const char *d = memchr(text + i, '$', len - i);
        size_t stop = d ? (size_t)(d - text) : len;
        if (out)
            orr_buf_append(out, text + i, stop - i);
        i = stop;
        if (i == len)
            break;
        /* text[i] == '$' */
        if (i + 2 < len && text[i + 1] == '$' && text[i + 2] == '{') { /* $${ -> ${ */
            if (out)
                orr_buf_append(out, "${", 2);
            i += 3;
            continue;
        }
        if (!(i + 2 < len && text[i + 1] == '{' && orr_subst__lower(text[i + 2]))) {
            if (out)
                orr_buf_append_byte(out, '$');
            i++;
            continue;
        }
        size_t start = i;
        const char *name = text + i + 2;
        size_t nl = 0;
        while (i + 2 + nl < len && orr_subst__namech(name[nl]))
            nl++;
        size_t j = i + 2 + nl; /* after the name */
        if (nl > ORR_SUBST_NAME_MAX)
            return orr_err_set(err, ORR_EINVAL, field, "name \"%.64s...\" is longer than %d bytes",
                               name, ORR_SUBST_NAME_MAX);
        const char *fmt = NULL;
        size_t fl = 0;
        if (j < len && text[j] == ':') {
            fmt = text + j + 1;
            const char *close = memchr(fmt, '}', len - j - 1);
            if (!close)
                return orr_err_set(err, ORR_EINVAL, field,
                                   "\"${%.*s:\" at byte %zu has no closing }", (int)nl, name,
                                   start);
            fl = (size_t)(close - fmt);
            if (fl == 0 || fl > ORR_SUBST_FORMAT_MAX)
                return orr_err_set(err, ORR_EINVAL, field, "${%.*s:...}: a format is 1 to %d bytes",
                                   (int)nl, name, ORR_SUBST_FORMAT_MAX);
            j += 1 + fl;
        } else if (j >= len) {
            return orr_err_set(err, ORR_EINVAL, field,
                               "\"${%.*s\" at byte %zu has no closing } (write $${ for a literal "
                               "${)",
                               (int)nl, name, start);
        } else if (text[j] != '}') {
            return orr_err_set(err, ORR_EINVAL, field,
                               "\"${%.*s%c\" at byte %zu: a substitution is ${name} or "
                               "${name:format} (write $${ for a literal ${)",
                               (int)nl, name, text[j] >= 0x20 && text[j] < 0x7f ? text[j] : '?',
                               start);
        }
        i = j + 1; /* past the closing brace */
        int is_time = orr_subst__is_time(name, nl);
        if (fmt && !is_time)
            return orr_err_set(err, ORR_EINVAL, field,
                               "${%.*s:%.*s}: only schedule_time takes a format", (int)nl, name,
                               (int)(fl > 32 ? 32 : fl), fmt);
        if (is_time) {
            if (fmt) {
                orr_status s = orr_subst__time(fmt, fl, env ? env->schedule_time : 0,
                                               env ? env->tz : NULL, out, field, err);
                if (s != ORR_OK)
                    return s;
            } else if (out) {
                orr_subst__iso(env->schedule_time, env->tz, out);
            }
        } else if (!out) {
            int known = orr_subst_is_builtin(name, nl);
            for (size_t k = 0; !known && k < n; k++)
                known = strlen(names[k]) == nl && memcmp(names[k], name, nl) == 0;
            if (!known)
                return orr_err_set(err, ORR_EINVAL, field,
                                   "${%.*s}: unknown parameter \"%.*s\" (declare it under "
                                   "parameters, or write $${ for a literal ${)",
                                   (int)nl, name, (int)nl, name);
        } else {
            const char *v = NULL;
            for (size_t k = 0; !v && k < env->n_vars; k++)
                if (strlen(env->vars[k].name) == nl && memcmp(env->vars[k].name, name, nl) == 0)
                    v = env->vars[k].value ? env->vars[k].value : "";
            if (!v)
                return orr_err_set(err, ORR_EINVAL, field, "${%.*s}: unknown parameter \"%.*s\"",
                                   (int)nl, name, (int)nl, name);
            orr_buf_append_str(out, v);
        }
        if (out && out->len - base > ORR_SUBST_OUT_MAX)
            return orr_err_set(err, ORR_ETOOBIG, field, "expands to more than %u bytes",
                               ORR_SUBST_OUT_MAX);
    }
    if (out && out->len - base > ORR_SUBST_OUT_MAX)
        return orr_err_set(err, ORR_ETOOBIG, field, "expands to more than %u bytes",
                           ORR_SUBST_OUT_MAX);
    return ORR_OK;
}

orr_status orr_subst_check(const char *text, size_t len, const char *const *names, size_t n,
                           const char *field, orr_err *err)
{
    return orr_subst__scan(text, len, names, n, NULL, NULL, field, err);
}

orr_status orr_subst_expand(const char *text, size_t len, const orr_subst_env *env, orr_buf *out,
                            const char *field, orr_err *err)
{
    return orr_subst__scan(text, len, NULL, 0, env, out, field, err);
}

/* The walk shared by the JSON forms: check (env NULL) or expand in place. */
static orr_status orr_subst__json(json_t *v, const char *path, const char *const *names, size_t n,
                                  const orr_subst_env *env, int depth, orr_err *err)
{
    char sub[sizeof err->field];
    if (depth > 64)
        return orr_err_set(err, ORR_EINVAL, path, "nested more than 64 levels");
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (!memchr(s, '$', len))
            return ORR_OK;
        if (!env)
            return orr_subst_check(s, len, names, n, path, err);
        orr_buf b = ORR_BUF_INIT;
        orr_status st = orr_subst_expand(s, len, env, &b, path, err);
        if (st == ORR_OK && json_string_setn(v, b.data ? b.data : "", b.len) != 0)
            st = orr_err_set(err, ORR_EINVAL, path, "expands to text that is not UTF-8");
        orr_buf_free(&b);
        return st;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            orr_json_index_path(sub, sizeof sub, path, i);
            orr_status st = orr_subst__json(x, sub, names, n, env, depth + 1, err);
            if (st != ORR_OK)
                return st;
        }
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            snprintf(sub, sizeof sub, "%s.%s", path, k);
            orr_status st = orr_subst__json(x, sub, names, n, env, depth + 1, err);
            if (st != ORR_OK)
                return st;
        }
    }
    return ORR_OK;
}

orr_status orr_subst_check_json(const json_t *v, const char *path, const char *const *names,
                                size_t n, orr_err *err)
{
    return orr_subst__json((json_t *)v, path, names, n, NULL, 0, err);
}

orr_status orr_subst_expand_json(json_t *v, const char *path, const orr_subst_env *env,
                                 orr_err *err)
{
    return orr_subst__json(v, path, NULL, 0, env, 0, err);
}

orr_status orr_subst_check_spec(const json_t *spec, orr_err *err)
{
    const char *names[64];
    size_t n = 0;
    const json_t *params = json_object_get(spec, "parameters");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v)
    {
        if (orr_subst_is_builtin(k, strlen(k))) {
            char f[sizeof err->field];
            snprintf(f, sizeof f, "spec.parameters.%s", k);
            return orr_err_set(err, ORR_EINVAL, f, "\"%s\" is a built-in name; choose another", k);
        }
        if (n < sizeof names / sizeof names[0])
            names[n++] = k;
    }
    const json_t *config = json_object_get(spec, "config");
    return config ? orr_subst_check_json(config, "spec.config", names, n, err) : ORR_OK;
}

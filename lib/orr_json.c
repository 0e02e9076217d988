/*
 * orr_json.c - strict JSON getters naming the path of bad fields (see
 * orr_json.h). Every typed getter is a thin wrapper over json_get(), which
 * looks the key up and checks the value's JSON type; the wrapper only
 * converts the value (and, for integers, checks the range).
 */
#include "orr_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

orr_status orr_json_parse(const char *text, size_t len, json_t **out, orr_err *err)
{
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!v)
        return orr_err_set(err, ORR_EINVAL, "", "bad JSON at line %d column %d: %s", je.line,
                           je.column, je.text);
    *out = v;
    return ORR_OK;
}

const char *orr_json_path(char *buf, size_t n, const char *parent, const char *key)
{
    if (parent && parent[0])
        snprintf(buf, n, "%s.%s", parent, key);
    else
        snprintf(buf, n, "%s", key);
    return buf;
}

const char *orr_json_index_path(char *buf, size_t n, const char *parent, size_t i)
{
    snprintf(buf, n, "%s[%zu]", parent ? parent : "", i);
    return buf;
}

orr_status orr_json_allow_keys(const json_t *obj, const char *path, const char *const *allowed,
                               orr_err *err)
{
    char p[256];
    if (!json_is_object(obj))
        return orr_err_set(err, ORR_EINVAL, path && path[0] ? path : "$", "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        (void)val;
        int ok = 0;
        for (const char *const *a = allowed; *a; a++) {
            if (strcmp(*a, key) == 0) {
                ok = 1;
                break;
            }
        }
        if (!ok)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, key),
                               "unknown field");
    }
    return ORR_OK;
}

/* ORR_EINVAL naming path.key, with a printf message. */
static orr_status json_fail(orr_err *err, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static orr_status json_fail(orr_err *err, const char *path, const char *key, const char *fmt, ...)
{
    char p[256], msg[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, key), "%s", msg);
}

/* JSON types a getter accepts, as a mask of 1 << json_type. */
#define JT(t)      (1u << (t))
#define JT_STRING  JT(JSON_STRING)
#define JT_INTEGER JT(JSON_INTEGER)
#define JT_NUMBER  (JT(JSON_INTEGER) | JT(JSON_REAL))
#define JT_BOOLEAN (JT(JSON_TRUE) | JT(JSON_FALSE))
#define JT_OBJECT  JT(JSON_OBJECT)
#define JT_ARRAY   JT(JSON_ARRAY)

/*
 * The one getter under the typed ones: obj must be an object; key missing
 * (or null, when not required) gives ORR_OK with *v = NULL, or "is required";
 * a value whose JSON type is not in `types` gives "must be <what>".
 */
static orr_status json_get(const json_t *obj, const char *path, const char *key, int required,
                           unsigned types, const char *what, json_t **v, orr_err *err)
{
    *v = NULL;
    if (!json_is_object(obj))
        return orr_err_set(err, ORR_EINVAL, path && path[0] ? path : "$", "must be an object");
    json_t *x = json_object_get(obj, key);
    if (!x || (json_is_null(x) && !required))
        return required ? json_fail(err, path, key, "is required") : ORR_OK;
    if (!(types & JT(json_typeof(x))))
        return json_fail(err, path, key, "must be %s", what);
    *v = x;
    return ORR_OK;
}

orr_status orr_json_get_str(const json_t *obj, const char *path, const char *key, int required,
                            const char **out, orr_err *err)
{
    json_t *v;
    orr_status rc = json_get(obj, path, key, required, JT_STRING, "a string", &v, err);
    if (v)
        *out = json_string_value(v);
    return rc;
}

orr_status orr_json_get_int(const json_t *obj, const char *path, const char *key, int required,
                            int64_t min, int64_t max, int64_t *out, orr_err *err)
{
    json_t *v;
    orr_status rc = json_get(obj, path, key, required, JT_INTEGER, "an integer", &v, err);
    if (!v)
        return rc;
    int64_t x = (int64_t)json_integer_value(v);
    if (x < min || x > max)
        return json_fail(err, path, key, "must be between %lld and %lld", (long long)min,
                         (long long)max);
    *out = x;
    return ORR_OK;
}

orr_status orr_json_get_bool(const json_t *obj, const char *path, const char *key, int required,
                             int *out, orr_err *err)
{
    json_t *v;
    orr_status rc = json_get(obj, path, key, required, JT_BOOLEAN, "a boolean", &v, err);
    if (v)
        *out = json_is_true(v);
    return rc;
}

orr_status orr_json_get_double(const json_t *obj, const char *path, const char *key, int required,
                               double *out, orr_err *err)
{
    json_t *v;
    orr_status rc = json_get(obj, path, key, required, JT_NUMBER, "a number", &v, err);
    if (v)
        *out = json_number_value(v);
    return rc;
}

orr_status orr_json_get_obj(const json_t *obj, const char *path, const char *key, int required,
                            json_t **out, orr_err *err)
{
    json_t *v;
    orr_status rc = json_get(obj, path, key, required, JT_OBJECT, "an object", &v, err);
    if (v)
        *out = v;
    return rc;
}

orr_status orr_json_get_array(const json_t *obj, const char *path, const char *key, int required,
                              json_t **out, orr_err *err)
{
    json_t *v;
    orr_status rc = json_get(obj, path, key, required, JT_ARRAY, "an array", &v, err);
    if (v)
        *out = v;
    return rc;
}

static int json_dump_cb(const char *buffer, size_t size, void *data)
{
    orr_buf_append((orr_buf *)data, buffer, size);
    return 0;
}

void orr_json_dump_buf(const json_t *v, orr_buf *out)
{
    json_dump_callback(v, json_dump_cb, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}

json_t *orr_json_error_body(const orr_err *err)
{
    json_t *e = json_object();
    json_object_set_new(e, "code", json_string(orr_status_name(err->code)));
    json_object_set_new(e, "message",
                        json_string(err->msg[0] ? err->msg : orr_status_msg(err->code)));
    if (err->field[0])
        json_object_set_new(e, "field", json_string(err->field));
    else
        json_object_set_new(e, "field", json_null());
    json_t *body = json_object();
    json_object_set_new(body, "error", e);
    return body;
}

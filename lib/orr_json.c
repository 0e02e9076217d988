/* orr_json.c - strict JSON getters naming the path of bad fields (see orr_json.h). */
#include "orr_json.h"

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

/* Look key up; report missing/required. Returns 1 if found, 0 if absent-ok, -1 on error. */
static int json_lookup(const json_t *obj, const char *path, const char *key, int required,
                       json_t **v, orr_status *rc, orr_err *err)
{
    char p[256];
    *rc = ORR_OK;
    if (!json_is_object(obj)) {
        *rc = orr_err_set(err, ORR_EINVAL, path && path[0] ? path : "$", "must be an object");
        return -1;
    }
    *v = json_object_get(obj, key);
    if (!*v || (json_is_null(*v) && !required)) {
        if (required) {
            *rc =
                orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, key), "is required");
            return -1;
        }
        return 0;
    }
    return 1;
}

#define JSON_TYPE_ERR(what)                                                                        \
    orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, key), "must be " what)

orr_status orr_json_get_str(const json_t *obj, const char *path, const char *key, int required,
                            const char **out, orr_err *err)
{
    char p[256];
    json_t *v;
    orr_status rc;
    int f = json_lookup(obj, path, key, required, &v, &rc, err);
    if (f <= 0)
        return rc;
    if (!json_is_string(v))
        return JSON_TYPE_ERR("a string");
    *out = json_string_value(v);
    return ORR_OK;
}

orr_status orr_json_get_int(const json_t *obj, const char *path, const char *key, int required,
                            int64_t min, int64_t max, int64_t *out, orr_err *err)
{
    char p[256];
    json_t *v;
    orr_status rc;
    int f = json_lookup(obj, path, key, required, &v, &rc, err);
    if (f <= 0)
        return rc;
    if (!json_is_integer(v))
        return JSON_TYPE_ERR("an integer");
    int64_t x = (int64_t)json_integer_value(v);
    if (x < min || x > max)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, key),
                           "must be between %lld and %lld", (long long)min, (long long)max);
    *out = x;
    return ORR_OK;
}

orr_status orr_json_get_bool(const json_t *obj, const char *path, const char *key, int required,
                             int *out, orr_err *err)
{
    char p[256];
    json_t *v;
    orr_status rc;
    int f = json_lookup(obj, path, key, required, &v, &rc, err);
    if (f <= 0)
        return rc;
    if (!json_is_boolean(v))
        return JSON_TYPE_ERR("a boolean");
    *out = json_is_true(v);
    return ORR_OK;
}

orr_status orr_json_get_double(const json_t *obj, const char *path, const char *key, int required,
                               double *out, orr_err *err)
{
    char p[256];
    json_t *v;
    orr_status rc;
    int f = json_lookup(obj, path, key, required, &v, &rc, err);
    if (f <= 0)
        return rc;
    if (!json_is_number(v))
        return JSON_TYPE_ERR("a number");
    *out = json_number_value(v);
    return ORR_OK;
}

orr_status orr_json_get_obj(const json_t *obj, const char *path, const char *key, int required,
                            json_t **out, orr_err *err)
{
    char p[256];
    json_t *v;
    orr_status rc;
    int f = json_lookup(obj, path, key, required, &v, &rc, err);
    if (f <= 0)
        return rc;
    if (!json_is_object(v))
        return JSON_TYPE_ERR("an object");
    *out = v;
    return ORR_OK;
}

orr_status orr_json_get_array(const json_t *obj, const char *path, const char *key, int required,
                              json_t **out, orr_err *err)
{
    char p[256];
    json_t *v;
    orr_status rc;
    int f = json_lookup(obj, path, key, required, &v, &rc, err);
    if (f <= 0)
        return rc;
    if (!json_is_array(v))
        return JSON_TYPE_ERR("an array");
    *out = v;
    return ORR_OK;
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

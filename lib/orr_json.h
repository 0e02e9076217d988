/*
 * orr_json.h - helpers over jansson for reading requests and specs strictly.
 *
 * Every getter names the JSON path of a bad or missing field in err->field
 * ("spec.retries.delay"), so an API answer or a CLI message can point at it.
 * Unknown fields are refused with orr_json_allow_keys(). Numbers must be of
 * the declared type: "3" is not an integer, 3.5 is not an integer.
 */
#ifndef ORR_JSON_H
#define ORR_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

/* Parse text (len bytes, may lack a NUL). On failure ORR_EINVAL with
 * "line L column C: reason". *out is a new reference owned by the caller. */
orr_status orr_json_parse(const char *text, size_t len, json_t **out, orr_err *err);

/* "parent.key" (or "key" when parent is empty) into buf; returns buf. */
const char *orr_json_path(char *buf, size_t n, const char *parent, const char *key);
/* "parent[i]" into buf; returns buf. */
const char *orr_json_index_path(char *buf, size_t n, const char *parent, size_t i);

/* Refuse any key of obj not in allowed (a NULL-terminated list). */
orr_status orr_json_allow_keys(const json_t *obj, const char *path, const char *const *allowed,
                               orr_err *err);

/* Getters. If the key is missing: ORR_EINVAL when required, else ORR_OK and
 * *out untouched (so the caller pre-sets the default). Wrong type or out of
 * range: ORR_EINVAL naming the path. Strings point into obj (borrowed). */
orr_status orr_json_get_str(const json_t *obj, const char *path, const char *key, int required,
                            const char **out, orr_err *err);
orr_status orr_json_get_int(const json_t *obj, const char *path, const char *key, int required,
                            int64_t min, int64_t max, int64_t *out, orr_err *err);
orr_status orr_json_get_bool(const json_t *obj, const char *path, const char *key, int required,
                             int *out, orr_err *err);
orr_status orr_json_get_double(const json_t *obj, const char *path, const char *key, int required,
                               double *out, orr_err *err);
/* Object or array (borrowed). */
orr_status orr_json_get_obj(const json_t *obj, const char *path, const char *key, int required,
                            json_t **out, orr_err *err);
orr_status orr_json_get_array(const json_t *obj, const char *path, const char *key, int required,
                              json_t **out, orr_err *err);

/* Compact dump appended to out (keys in insertion order). */
void orr_json_dump_buf(const json_t *v, orr_buf *out);

/* Standard error body {"error":{"code","message","field"}} (new reference). */
json_t *orr_json_error_body(const orr_err *err);

#endif

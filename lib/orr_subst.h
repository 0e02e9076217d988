/*
 * orr_subst.h - named parameters in task specs: the `${...}` substitution
 * language, its save-time check and its expansion.
 *
 * The language, in full:
 *
 *   ${name}          the value of parameter `name` or of a built-in
 *   ${name:FORMAT}   a time built-in formatted with strftime conversions
 *                    (%Y %m %d %H %M %S %j %a %b %s %z %F %T ...), in the
 *                    time zone the caller gives (the task's)
 *   $${              a literal "${" (for a shell variable written ${x})
 *
 * A name is `[a-z][a-z0-9_]*` (at most ORR_SUBST_NAME_MAX bytes). "${"
 * followed by anything else (an upper-case letter, a digit, `#`, `!`, ...)
 * is not a substitution and is left as written, so shell forms such as
 * ${HOME} or ${#X} pass through unchanged. Built-ins (orr_subst_builtins):
 * task, task_id, instance_id, attempt, version, schedule_time (the
 * schedule time; without a format ISO 8601 with the zone's offset,
 * 2026-12-01T14:00:00+01:00). Only time built-ins take a format. Values are
 * inserted as they are: a value is never expanded again.
 *
 * A refused text is ORR_EINVAL with err->field the field given by the
 * caller and a message that names the substitution and says what is wrong;
 * an expansion that would exceed ORR_SUBST_OUT_MAX bytes is ORR_ETOOBIG.
 * Everything here is pure computation: thread-safe, never blocks.
 */
#ifndef ORR_SUBST_H
#define ORR_SUBST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"
#include "orr_tz.h"

#define ORR_SUBST_NAME_MAX   64
#define ORR_SUBST_FORMAT_MAX 64
#define ORR_SUBST_OUT_MAX    (1u << 20)

/* One named value (a parameter or a built-in). Borrowed strings. */
typedef struct orr_subst_var {
    const char *name;
    const char *value;
} orr_subst_var;

/* What an expansion reads: the named values, and the instant and zone of
 * the time built-ins (tz NULL = UTC). */
typedef struct orr_subst_env {
    const orr_subst_var *vars;
    size_t n_vars;
    int64_t schedule_time; /* seconds since the epoch, UTC */
    const orr_tz *tz;
} orr_subst_env;

/* NULL-terminated list of the built-in names (static). */
extern const char *const orr_subst_builtins[];

/* 1 when name (len bytes) is a built-in. */
int orr_subst_is_builtin(const char *name, size_t len);

/* 1 when s is a valid parameter name: [a-z][a-z0-9_]{0,63}. */
int orr_subst_valid_name(const char *s);

/* Check text (len bytes, may hold NUL bytes, which are plain text): every
 * substitution is well formed, names a built-in or one of names[0..n), and
 * carries a format only on a time built-in. ORR_EINVAL with err->field =
 * field on the first problem. */
orr_status orr_subst_check(const char *text, size_t len, const char *const *names, size_t n,
                           const char *field, orr_err *err);

/* Expand text (len bytes) into out (appended; the caller resets and frees
 * it). Same refusals as orr_subst_check against env's names; ORR_ETOOBIG
 * when out would pass ORR_SUBST_OUT_MAX bytes. On failure out holds a
 * partial result. */
orr_status orr_subst_expand(const char *text, size_t len, const orr_subst_env *env, orr_buf *out,
                            const char *field, orr_err *err);

/* orr_subst_check on every string inside v (objects and arrays, any depth);
 * a refusal names the string's JSON path under path ("spec.config.args[2]"). */
orr_status orr_subst_check_json(const json_t *v, const char *path, const char *const *names,
                                size_t n, orr_err *err);

/* orr_subst_expand of every string inside v, replaced in place. The
 * refusal names the string's path as orr_subst_check_json does. */
orr_status orr_subst_expand_json(json_t *v, const char *path, const orr_subst_env *env,
                                 orr_err *err);

/* The save-time check of a task spec (a JSON object already valid against
 * schema/task.schema.json): no name under "parameters" is a built-in's,
 * and every string under "config" passes orr_subst_check against the
 * declared names. ORR_EINVAL naming "spec.parameters.<name>" or the
 * string's path ("spec.config.command"). */
orr_status orr_subst_check_spec(const json_t *spec, orr_err *err);

#endif

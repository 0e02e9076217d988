/*
 * orr_jschema.h - JSON Schema validation (a draft 2020-12 subset) over jansson.
 *
 * Task specs, transfer-job specs and sort-stream specs are checked against
 * the schemas in schema/ before anything else reads them; a bad spec is
 * refused with the path of the bad field ("spec.retries.max") and a message a
 * person can act on ("must be an integer >= 0").
 *
 * Call order: orr_jschema_load() (or _load_file) once, then any number of
 * orr_jschema_validate() calls, from any number of threads at once (the
 * compiled schema is immutable), then orr_jschema_free().
 *
 * Supported keywords:
 *   type (a name or an array of names; "integer" is a JSON integer or a real
 *   with no fractional part), enum, const,
 *   minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers), multipleOf,
 *   minLength, maxLength (Unicode code points), pattern, format,
 *   properties, patternProperties, additionalProperties, required,
 *   minProperties, maxProperties, dependentRequired,
 *   items (a schema), prefixItems, minItems, maxItems, uniqueItems,
 *   allOf, anyOf, oneOf, not, if/then/else,
 *   $ref (local JSON pointers only: "#", "#/$defs/name", "#/definitions/name",
 *   any "#/..." pointer into the same document), $defs, definitions.
 * Ignored annotations: $schema, $id, $comment, title, description, default,
 * examples, readOnly, writeOnly, deprecated. $id does not change how $ref
 * resolves: every $ref is a pointer into the loaded document.
 * Any other keyword is refused at load, naming its schema path: a keyword
 * that would be silently ignored is a check that silently does not happen.
 *
 * pattern / patternProperties: ECMA-262 regular expressions, run by PCRE2
 * (UTF-8, so "." is one character) with the options that make it behave as
 * ECMA-262 does ($ only at the very end, \uXXXX and \u{...}, [] never
 * matches). Everything ECMA-262 has works: \d \w \s and their negations,
 * lookahead and lookbehind, lazy quantifiers, backreferences, named groups,
 * \b. PCRE2 syntax that ECMA-262 lacks (possessive quantifiers, (?>...),
 * inline flags, \A \z \Q..., [:alpha:]) is refused at load, so a schema
 * means the same in a browser. Each distinct pattern is compiled once per
 * schema and matched unanchored, as JSON Schema requires. A match that takes
 * more than ORR_JSCHEMA_MATCH_LIMIT backtracking steps, or more than
 * ORR_JSCHEMA_MATCH_HEAP_KIB of memory, stops and refuses the value ("too
 * costly to match against pattern ..."): a catastrophic pattern such as
 * ^(a|a)*$ costs bounded time on any input.
 *
 * format: "date-time" and "date" (RFC 3339, calendar-checked), "email" and
 * "uri" (loose shape checks), "hostname" (RFC 1123 labels). Unknown formats
 * are ignored. Formats apply to strings only.
 *
 * multipleOf on reals accepts a quotient within 1e-9 (relative) of an
 * integer, so 0.3 is a multiple of 0.1.
 *
 * Limits: an instance nested deeper than ORR_JSCHEMA_MAX_DEPTH containers (as
 * the schema walks into it) is refused; a schema nested deeper than
 * ORR_JSCHEMA_MAX_DEPTH is refused at load; a $ref / allOf / anyOf / oneOf /
 * not / if / then / else cycle that never descends into the instance is
 * refused at load ("cycle without progress"), and validation also stops with
 * an error past ORR_JSCHEMA_MAX_RECURSION nested schema applications.
 * One validation applies at most ORR_JSCHEMA_MAX_STEPS schema nodes (a few
 * per array item or field; a million-item array is fine): a recursive oneOf
 * whose branches both descend would otherwise cost 2^depth on a crafted
 * value. Past it the value is refused ("too costly to validate").
 */
#ifndef ORR_JSCHEMA_H
#define ORR_JSCHEMA_H

#include <jansson.h>

#include "orr_status.h"

#define ORR_JSCHEMA_MAX_DEPTH      128
#define ORR_JSCHEMA_MAX_RECURSION  1024
#define ORR_JSCHEMA_MAX_STEPS      10000000
#define ORR_JSCHEMA_MATCH_LIMIT    1000000
#define ORR_JSCHEMA_MATCH_HEAP_KIB 16384

typedef struct orr_jschema orr_jschema;

/*
 * Compile a schema (a JSON object or boolean). On success *out is a new
 * compiled schema (free with orr_jschema_free) that keeps its own deep copy
 * of `schema`: the caller keeps its reference and may change or free it.
 * On failure ORR_EINVAL, *out untouched, err->field = the schema path of the
 * unsupported keyword or malformed value ("properties.retries.minimum") and
 * err->msg what is wrong ("must be a number", "unsupported keyword").
 * A schema-level problem at the root has field "$".
 */
orr_status orr_jschema_load(json_t *schema, orr_jschema **out, orr_err *err);

/*
 * Read a schema from a JSON file (duplicate keys refused) and compile it.
 * ORR_EIO (field = path) if the file cannot be read, ORR_EINVAL (field =
 * path, msg with line and column) if it is not JSON, else as orr_jschema_load.
 */
orr_status orr_jschema_load_file(const char *path, orr_jschema **out, orr_err *err);

/*
 * Validate instance against s. ORR_OK if it conforms. Otherwise ORR_EINVAL
 * with err->field = the instance path of the first error, built from
 * root_path (NULL or "" for none, e.g. "spec") as "spec.retries.max",
 * "spec.steps[2].name"; an error at the root itself names root_path, or "$"
 * when root_path is empty. err->msg is a human message: "must be an integer
 * >= 0", "unknown field", "is required", "must be one of: shell, transfer".
 * For anyOf/oneOf, the branch chosen by a const-valued discriminator property
 * (e.g. "type": {"const": "shell"}) gives the error; otherwise the branch
 * that failed deepest in the instance, otherwise "must match exactly one of
 * N schemas". Paths longer than err->field are cut.
 * Thread-safe; never blocks. Allocates nothing itself except a sort table
 * for uniqueItems on arrays of more than 32 items and PCRE2's match data.
 * err may be NULL.
 */
orr_status orr_jschema_validate(const orr_jschema *s, const json_t *instance, const char *root_path,
                                orr_err *err);

/* Free a compiled schema; NULL is a no-op. No validate may be running on it. */
void orr_jschema_free(orr_jschema *s);

#endif

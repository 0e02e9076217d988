/*
 * wh_map.h - a writer's column mapping (`writers[i].mapping`): each entry
 * makes one target column from a source column (copied, renamed, or cast to
 * a value kind) or from a constant. Source columns no entry names are
 * skipped.
 *
 * Call order: wh_map_parse at job parse (strict; errors name
 * "writers[i].mapping[k].field"; it also hands back the writer spec the
 * plugin is configured with, "columns" set to the targets for SQL stores),
 * wh_map_reader_spec for the reader (reads the sources the mappings name,
 * in first-use order, unless it names "columns" itself), wh_map_bind once
 * the source schema is known (resolves the sources by name and builds the
 * schema the writer receives), then wh_map_apply per batch, from any number
 * of threads (a bound map is read-only).
 *
 * A value a cast cannot convert makes its row dirty (reason naming the
 * mapping entry and the target column); it never fails the load by itself.
 * NULL stays NULL under every cast.
 */
#ifndef WH_MAP_H
#define WH_MAP_H

#include <jansson.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"
#include "wh.h"

/* What a cast converts to: a value kind, and for integers the width in
 * bytes ("int" 4, "bigint" 8). */
typedef struct wh_cast_to {
    wh_kind kind;
    int bytes;
} wh_cast_to;

/* Parse a cast name ("text", "int", "bigint", "numeric", "float", "bool",
 * "date", "time", "timestamp", "timestamptz", "bytes", "json"). -1 when the
 * name is unknown, else 0. */
int wh_cast_parse(const char *name, wh_cast_to *out);
/* The list above, for messages (static). */
const char *wh_cast_names(void);

/* Convert one canonical value (len >= 0) of kind from into kind to,
 * appending the canonical result to out (which is not reset). Returns 1 on
 * success, 0 with a static reason when the value cannot be converted. */
int wh_cast_value(const wh_cast_to *to, wh_kind from, const char *p, size_t len, orr_buf *out,
                  const char **reason);

typedef struct wh_map wh_map;

/* Read spec's "mapping" (writer at path). Without one, *out is NULL and
 * *plugin_spec NULL (configure the plugin with spec itself). With one, *out
 * is the parsed map and *plugin_spec a new reference to the spec the plugin
 * is configured with (the caller keeps it alive as long as the plugin's conf
 * and json_decref()s it). ORR_EINVAL naming the bad field. */
orr_status wh_map_parse(const json_t *spec, const char *path, wh_map **out, json_t **plugin_spec,
                        orr_err *err);
/* The reader spec to configure when writers' mappings name the sources:
 * a new reference with "columns" set, or NULL to use reader unchanged. */
json_t *wh_map_reader_spec(const json_t *reader, const json_t *writers);
/* Resolve the sources against the source schema. ORR_EINVAL naming
 * "<path>.mapping[k].source" when the source does not have the column. */
orr_status wh_map_bind(wh_map *m, const wh_schema *src, orr_err *err);
/* The columns the writer receives (valid after wh_map_bind, owned by m). */
const wh_schema *wh_map_schema(const wh_map *m);
/* Number of entries, and entry k's target name. */
size_t wh_map_count(const wh_map *m);
const char *wh_map_target(const wh_map *m, size_t k);
/* Build out (reset here to the mapped width) from in's rows. A row with a
 * value that cannot be cast is reported with wh_ctx_dirty (side, in's row)
 * and left out. ORR_ETOOBIG (err set) once the dirty limit is passed. */
orr_status wh_map_apply(const wh_map *m, wh_ctx *ctx, const char *side, const wh_batch *in,
                        wh_batch *out, orr_err *err);
/* NULL is a no-op. */
void wh_map_free(wh_map *m);

#endif

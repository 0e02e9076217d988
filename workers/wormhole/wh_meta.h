/*
 * wh_meta.h - `wormhole meta`: a data source's catalog (tables, views,
 * columns, primary keys, row estimates) as JSON, read through the store's
 * plugin (wh_meta_ops in wh.h).
 *
 * The meta job (a file or standard input, as executord hands it over with
 * the password in the dsn):
 *   {"source": {"type": "postgres", "dsn": "..."}, "what": "tables"}
 *   {"source": {...}, "what": "table", "table": "schema.name"}
 * Answers, printed on stdout as one line:
 *   tables: {"tables": [{"schema", "name", "kind": "table"|"view",
 *                        "row_estimate": n|null}]}
 *   table:  {"schema", "name", "kind", "row_estimate",
 *            "columns": [{"name", "type" (as the store names it),
 *                         "kind" (wormhole's value kind, the engine's own
 *                                 mapping), "nullable", "primary_key"
 *                         (position in the key from 1, or 0), "ordinal"}],
 *            "primary_key": ["col", ...]}
 * Errors: {"error": {"code", "field", "message"}} on stdout; exit 2 for a
 * bad job, 3 for an unknown table (ORR_ENOTFOUND), 1 for anything else.
 */
#ifndef WH_META_H
#define WH_META_H

#include <jansson.h>

#include "orr_status.h"
#include "wh.h"

/* Run the meta job held in text. *out: the answer (new reference) on
 * ORR_OK. Errors name the JSON path of the bad field. */
orr_status wh_meta_run(const char *text, size_t len, json_t **out, orr_err *err);

/* The column object of the answer for c (ordinal from 1, pk position or 0). */
json_t *wh_meta_column(const wh_col *c, int ordinal, int pk_position);

/* Split "schema.name" at its first dot: *schema gets the part before it
 * ("" when there is no dot), the return value points at the name. */
const char *wh_meta_split(const char *table, char *schema, size_t n);

#endif

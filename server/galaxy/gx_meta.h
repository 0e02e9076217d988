/*
 * gx_meta.h - data metadata: the schemas, tables and columns of a data
 * source, as the transfer engine's plugins read them from the database's
 * catalog.
 *
 * The passwords of data sources are handed out only to the worker token,
 * which lives in executord; so the catalog is read there (`wormhole meta`
 * run by executord's POST /v1/meta) and galaxyd only asks. Answers are
 * cached in halleyd (GetDataSourceMeta / PutDataSourceMeta, table
 * datasource_meta), dropped when the data source changes; galaxyd answers
 * from that cache and fetches on a miss or when asked to refresh.
 *
 * Every function blocks (Halley, then an executor over HTTP, up to about
 * 30 s for a fetch). Thread-safe.
 */
#ifndef GX_META_H
#define GX_META_H

#include <jansson.h>

#include "gx_app.h"
#include "orr_status.h"

/* The columns of one table of a data source, from halleyd's cache or
 * fetched through an executor. *out is a jansson object shaped like the
 * REST answer of GET /api/v1/datasources/{name}/tables/{table}:
 *   {"schema", "name", "kind", "row_estimate",
 *    "columns": [{"name", "type", "kind", "nullable", "primary_key", "ordinal"}],
 *    "primary_key": ["col", ...], "fetched_at"}
 * (the caller json_decref()s it). table is "schema.name" (or "name" alone
 * for a store without schemas). ORR_ENOTFOUND: no such data source or
 * table; ORR_EUNAVAIL: no executor could answer; ORR_EINVAL: a bad name
 * (err->field names it). */
orr_status gx_meta_table(gx_app *app, const char *datasource, const char *table, json_t **out,
                         orr_err *err);

/* The column called name in a gx_meta_table answer (borrowed), or NULL. */
json_t *gx_meta_column(json_t *table, const char *name);

/* The same with a choice: refresh = 1 skips the cache (and stores the new
 * answer in it). */
orr_status gx_meta_table_ex(gx_app *app, const char *datasource, const char *table, int refresh,
                            json_t **out, orr_err *err);

/* Every table and view of a data source: {"tables": [{"schema", "name",
 * "kind", "row_estimate"}], "fetched_at"} (the whole list, unfiltered;
 * caller decrefs). Errors as gx_meta_table. */
orr_status gx_meta_tables(gx_app *app, const char *datasource, int refresh, json_t **out,
                          orr_err *err);

/* REST handlers (routes in gx_routes.c). */
void gx_h_meta_tables(gx_req *, gx_resp *);
void gx_h_meta_table(gx_req *, gx_resp *);
void gx_h_transfer_preview(gx_req *, gx_resp *);

/* Append the metadata counters (Prometheus text) to out. */
void gx_meta_metrics(orr_buf *out);

#endif

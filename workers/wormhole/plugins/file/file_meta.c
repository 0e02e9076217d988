/*
 * file_meta.c - `wormhole meta` for files (wh_meta.h). A file has no
 * catalog: "tables" lists the files the source's path names (patterns
 * expanded), each as a table of kind "file" without a schema or an
 * estimate; "table" gives the columns the reader would read from one of
 * them (the declared "columns", else the header line of that file), with
 * the reader's own value kinds.
 */
#include <glob.h>
#include <string.h>

#include "file_common.h"
#include "orr_json.h"
#include "wh_meta.h"

static orr_status file_meta_tables(const json_t *spec, const char *path, json_t **out, orr_err *err)
{
    void *conf = NULL;
    orr_status rc = wh_file_reader.configure(spec, path, &conf, err);
    if (rc != ORR_OK)
        return rc;
    wh_file_conf *c = conf;
    json_t *list = json_array();
    for (size_t i = 0; i < c->npaths; i++) {
        glob_t g;
        memset(&g, 0, sizeof g);
        if (strpbrk(c->paths[i], "*?[") && glob(c->paths[i], 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++)
                json_array_append_new(list,
                                      json_pack("{s:s, s:s, s:s, s:n}", "schema", "", "name",
                                                g.gl_pathv[k], "kind", "file", "row_estimate"));
        } else if (!strpbrk(c->paths[i], "*?[")) {
            json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:n}", "schema", "", "name",
                                                  c->paths[i], "kind", "file", "row_estimate"));
        }
        globfree(&g);
    }
    wh_file_reader.conf_free(conf);
    *out = json_pack("{s:o}", "tables", list);
    return ORR_OK;
}

static orr_status file_meta_table(const json_t *spec, const char *path, const char *table,
                                  json_t **out, orr_err *err)
{
    /* The reader's options, reading the one file asked for. */
    json_t *one = json_deep_copy(spec);
    json_object_set_new(one, "path", json_string(table));
    void *conf = NULL;
    wh_schema cols = {0, NULL};
    orr_status rc = wh_file_reader.configure(one, path, &conf, err);
    if (rc == ORR_OK)
        rc = wh_file_reader.describe(conf, NULL, &cols, err);
    if (rc == ORR_EIO || rc == ORR_ENOTFOUND)
        rc = orr_err_set(err, ORR_ENOTFOUND, "table", "cannot read %s", table);
    if (rc == ORR_OK) {
        json_t *list = json_array();
        for (size_t i = 0; i < cols.ncols; i++)
            json_array_append_new(list, wh_meta_column(&cols.cols[i], (int)i + 1, 0));
        *out = json_pack("{s:s, s:s, s:s, s:n, s:o, s:[]}", "schema", "", "name", table, "kind",
                         "file", "row_estimate", "columns", list, "primary_key");
    }
    wh_schema_free(&cols);
    if (conf)
        wh_file_reader.conf_free(conf);
    json_decref(one);
    return rc;
}

const wh_meta_ops wh_file_meta = {
    .tables = file_meta_tables,
    .table = file_meta_table,
};

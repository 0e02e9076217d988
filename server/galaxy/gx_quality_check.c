/*
 * gx_quality_check.c - the save-time check of quality checks (docs/
 * wormhole.md "Quality checks") against the tables themselves, read with
 * gx_meta_table: the table a check names (a transfer's check defaults to
 * its writer's table) exists in the data source; a null_ratio or freshness
 * check's column and a unique check's key columns are columns of it; a
 * freshness column holds dates or timestamps. A failed check answers 400
 * naming the field ("spec.config.checks[1].column") before anything is
 * saved. Writers given by dsn are not looked at; when no executor can read
 * a catalog, the save goes on with a warning naming the check. The rest of
 * a check's shape is the task schema's business (checked by halleyd), and a
 * sql check's query is the database's at run time.
 */
#include <stdio.h>
#include <string.h>

#include "gx_app.h"
#include "gx_meta.h"
#include "gx_quality_check.h"

/* The table's catalog: 1 *out set; 0 not looked at (warning added); -1
 * answered 400. An unqualified name not found is tried in schema public
 * (PostgreSQL's default) before it is refused. */
static int gx__q_table(gx_req *req, gx_resp *resp, const char *ds, const char *table,
                       const char *ds_field, const char *field, json_t *warnings, json_t **out)
{
    orr_err e;
    orr_err_clear(&e);
    *out = NULL;
    orr_status rc = gx_meta_table(req->app, ds, table, out, &e);
    if (rc == ORR_ENOTFOUND && !strchr(table, '.') && strcmp(e.field, "datasource") != 0) {
        orr_err_clear(&e);
        rc =
            gx_meta_table(req->app, ds, orr_arena_sprintf(req->arena, "public.%s", table), out, &e);
    }
    if (rc == ORR_OK)
        return 1;
    if (rc == ORR_ENOTFOUND || rc == ORR_EINVAL) {
        int is_ds = strcmp(e.field, "datasource") == 0;
        if (is_ds)
            gx_resp_fail(resp, ORR_EINVAL, ds_field, "no data source named \"%.128s\"", ds);
        else
            gx_resp_fail(resp, ORR_EINVAL, field, "no table %.256s in data source %.128s", table,
                         ds);
        return -1;
    }
    json_array_append_new(
        warnings,
        json_pack("{s:s, s:s}", "field", field, "message",
                  orr_arena_sprintf(req->arena, "the quality check was not checked against %s: %s",
                                    table, e.msg)));
    return 0;
}

/* One check against its table. 0 or -1 (answered). */
static int gx__q_columns(gx_req *req, gx_resp *resp, json_t *chk, const char *path, json_t *tab)
{
    const char *kind = json_string_value(json_object_get(chk, "kind"));
    const char *tname = json_string_value(json_object_get(tab, "name"));
    const char *col = json_string_value(json_object_get(chk, "column"));
    if (col && kind && (strcmp(kind, "null_ratio") == 0 || strcmp(kind, "freshness") == 0)) {
        json_t *c = gx_meta_column(tab, col);
        const char *f = orr_arena_sprintf(req->arena, "%s.column", path);
        if (!c) {
            gx_resp_fail(resp, ORR_EINVAL, f, "column %.128s is not in table %.256s", col,
                         tname ? tname : "?");
            return -1;
        }
        const char *k = json_string_value(json_object_get(c, "kind"));
        if (strcmp(kind, "freshness") == 0 && k && strcmp(k, "date") != 0 &&
            strcmp(k, "timestamp") != 0 && strcmp(k, "timestamptz") != 0) {
            gx_resp_fail(resp, ORR_EINVAL, f,
                         "column %.128s holds %.32s values: freshness needs a date or timestamp "
                         "column",
                         col, k);
            return -1;
        }
    }
    json_t *cols = json_object_get(chk, "columns");
    if (kind && strcmp(kind, "unique") == 0 && json_is_array(cols)) {
        size_t j;
        json_t *c;
        json_array_foreach(cols, j, c)
        {
            const char *n = json_string_value(c);
            if (n && !gx_meta_column(tab, n)) {
                gx_resp_fail(resp, ORR_EINVAL,
                             orr_arena_sprintf(req->arena, "%s.columns[%zu]", path, j),
                             "column %.128s is not in table %.256s", n, tname ? tname : "?");
                return -1;
            }
        }
    }
    return 0;
}

/* A transfer check's writer: the one it names, else the first. NULL when
 * the name matches none (the engine names that at run time). */
static json_t *gx__q_writer(json_t *writers, const char *name, size_t *index)
{
    size_t i;
    json_t *w;
    json_array_foreach(writers, i, w)
    {
        const char *n = json_string_value(json_object_get(w, "name"));
        const char *t = json_string_value(json_object_get(w, "type"));
        char dflt[96];
        snprintf(dflt, sizeof dflt, "%s#%zu", t ? t : "", i);
        if (!name || (n && strcmp(n, name) == 0) || (!n && strcmp(dflt, name) == 0)) {
            *index = i;
            return w;
        }
    }
    return NULL;
}

int gx_quality_check(gx_req *req, gx_resp *resp, json_t *spec, json_t *warnings)
{
    const char *type = json_string_value(json_object_get(spec, "type"));
    json_t *cfg = json_object_get(spec, "config");
    if (!type || !json_is_object(cfg))
        return 0;
    int is_task = strcmp(type, "quality") == 0;
    if (!is_task && strcmp(type, "transfer") != 0)
        return 0;
    json_t *checks = json_object_get(cfg, is_task ? "checks" : "quality");
    const char *base = is_task ? "spec.config.checks" : "spec.config.quality";
    size_t i;
    json_t *chk;
    json_array_foreach(checks, i, chk)
    {
        const char *kind = json_string_value(json_object_get(chk, "kind"));
        if (!json_is_object(chk) || !kind ||
            (strcmp(kind, "null_ratio") != 0 && strcmp(kind, "unique") != 0 &&
             strcmp(kind, "freshness") != 0))
            continue;
        const char *path = orr_arena_sprintf(req->arena, "%s[%zu]", base, i);
        const char *table = json_string_value(json_object_get(chk, "table"));
        const char *ds = NULL, *ds_field = NULL;
        if (is_task) {
            ds = json_string_value(json_object_get(cfg, "datasource"));
            ds_field = "spec.config.datasource";
        } else {
            size_t w = 0;
            json_t *wr = gx__q_writer(json_object_get(cfg, "writers"),
                                      json_string_value(json_object_get(chk, "writer")), &w);
            if (!wr)
                continue;
            ds = json_string_value(json_object_get(wr, "datasource"));
            ds_field = orr_arena_sprintf(req->arena, "spec.config.writers[%zu].datasource", w);
            if (!table)
                table = json_string_value(json_object_get(wr, "table"));
        }
        if (!ds || !table)
            continue;
        json_t *tab = NULL;
        int rc = gx__q_table(req, resp, ds, table, ds_field,
                             orr_arena_sprintf(req->arena, "%s.table", path), warnings, &tab);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        rc = gx__q_columns(req, resp, chk, path, tab);
        json_decref(tab);
        if (rc < 0)
            return -1;
    }
    return 0;
}

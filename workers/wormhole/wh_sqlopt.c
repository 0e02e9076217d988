/* wh_sqlopt.c - the SQL stores' shared options parser (see wh_sqlopt.h). */
#include "wh_sqlopt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"

static const char *const wh__sql_rkeys[] = {"dsn",     "datasource", "dsn_env", "table",
                                            "columns", "filter",     "split",   "tables"};
static const char *const wh__sql_wkeys[] = {"dsn",     "datasource", "dsn_env", "table",
                                            "columns", "mode",       "filter",  "key"};

/* keys = the shared keys of the side, then extra (NULL-terminated). */
static orr_status wh__sql_keys(const json_t *spec, const char *path, int is_reader,
                               const char *const *extra, orr_err *err)
{
    const char *keys[32];
    const char *const *base = is_reader ? wh__sql_rkeys : wh__sql_wkeys;
    size_t nbase = is_reader ? sizeof wh__sql_rkeys / sizeof *wh__sql_rkeys
                             : sizeof wh__sql_wkeys / sizeof *wh__sql_wkeys;
    size_t n = 0;
    for (size_t i = 0; i < nbase; i++)
        keys[n++] = base[i];
    for (size_t i = 0; extra && extra[i] && n + 1 < sizeof keys / sizeof *keys; i++)
        keys[n++] = extra[i];
    keys[n] = NULL;
    return wh_allow_keys(spec, path, keys, is_reader, err);
}

orr_status wh_sqlopt_parse(const json_t *spec, const char *path, int is_reader,
                           const char *const *extra_keys, wh_sqlopt *o, orr_err *err)
{
    orr_status rc;
    char p[128];
    memset(o, 0, sizeof *o);
    snprintf(o->path, sizeof o->path, "%s", path);
    if ((rc = wh__sql_keys(spec, path, is_reader, extra_keys, err)) ||
        (rc = wh_get_dsn(spec, path, &o->dsn, err)) ||
        (rc = orr_json_get_str(spec, path, "table", 0, &o->table, err)) ||
        (rc = wh_get_str_array(spec, path, "columns", &o->columns, &o->ncolumns, err)) ||
        (rc = orr_json_get_str(spec, path, "filter", 0, &o->filter, err)))
        goto fail;
    if (is_reader) {
        json_t *split = NULL;
        if ((rc = wh_get_str_array(spec, path, "tables", &o->tables, &o->ntables, err)) ||
            (rc = orr_json_get_obj(spec, path, "split", 0, &split, err)))
            goto fail;
        if (o->tables && !o->table)
            o->table = o->tables[0];
        if (split) {
            static const char *const skeys[] = {"key", "shards", NULL};
            orr_json_path(p, sizeof p, path, "split");
            if ((rc = orr_json_allow_keys(split, p, skeys, err)) ||
                (rc = orr_json_get_str(split, p, "key", 1, &o->split_key, err)) ||
                (rc = orr_json_get_int(split, p, "shards", 0, 1, 100000, &o->shards, err)))
                goto fail;
        }
    } else {
        if ((rc = wh_get_mode(spec, path, &o->mode, err)) ||
            (rc = wh_get_str_array(spec, path, "key", &o->key, &o->nkey, err)))
            goto fail;
        if (o->mode == WH_MODE_REPLACE && !o->filter) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "filter"),
                             "is required with mode replace (the slice to replace; use "
                             "truncate for the whole table)");
            goto fail;
        }
    }
    if (!o->table) {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof p, path, "table"), "is required");
        goto fail;
    }
    return ORR_OK;
fail:
    wh_sqlopt_free(o);
    return rc;
}

void wh_sqlopt_free(wh_sqlopt *o)
{
    free(o->columns);
    free(o->tables);
    free(o->key);
    o->columns = o->tables = o->key = NULL;
    o->ncolumns = o->ntables = o->nkey = 0;
}

/*
 * wh_meta.c - `wormhole meta` (contract in wh_meta.h): parse the meta job,
 * find the store's plugin and ask its catalog ops.
 */
#include "wh_meta.h"

#include <stdio.h>
#include <string.h>

#include "orr_json.h"

json_t *wh_meta_column(const wh_col *c, int ordinal, int pk_position)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:i, s:i}", "name", c->name, "type", c->type,
                          "kind", wh_kind_name(c->kind), "nullable", !c->not_null, "primary_key",
                          pk_position, "ordinal", ordinal);
    if (c->kind == WH_K_INT || (c->kind == WH_K_TEXT && c->size) ||
        (c->kind == WH_K_NUMERIC && c->size))
        json_object_set_new(o, "size", json_integer(c->size));
    if (c->kind == WH_K_NUMERIC && c->size)
        json_object_set_new(o, "scale", json_integer(c->scale));
    if (c->is_unsigned)
        json_object_set_new(o, "unsigned", json_true());
    return o;
}

const char *wh_meta_split(const char *table, char *schema, size_t n)
{
    const char *dot = strchr(table, '.');
    if (!dot) {
        schema[0] = 0;
        return table;
    }
    size_t k = (size_t)(dot - table);
    snprintf(schema, n, "%.*s", (int)(k < n ? k : n - 1), table);
    return dot + 1;
}

orr_status wh_meta_run(const char *text, size_t len, json_t **out, orr_err *err)
{
    *out = NULL;
    json_t *job = NULL;
    orr_status rc = orr_json_parse(text, len, &job, err);
    if (rc != ORR_OK)
        return rc;
    const char *what = NULL, *table = NULL, *type = NULL;
    json_t *src = json_object_get(job, "source");
    if (!json_is_object(job)) {
        rc = orr_err_set(err, ORR_EINVAL, "", "the meta job must be a JSON object");
        goto out;
    }
    if (!json_is_object(src)) {
        rc = orr_err_set(err, ORR_EINVAL, "source", "is required: an object with type and dsn");
        goto out;
    }
    if ((rc = orr_json_get_str(job, "", "what", 1, &what, err)) ||
        (rc = orr_json_get_str(job, "", "table", 0, &table, err)) ||
        (rc = orr_json_get_str(src, "source", "type", 1, &type, err)))
        goto out;
    const wh_plugin *pl = wh_plugin_find(type);
    if (!pl) {
        rc = orr_err_set(err, ORR_EINVAL, "source.type", "unknown store \"%.64s\" (known: %s)",
                         type, wh_plugin_names());
        goto out;
    }
    if (!pl->meta) {
        rc = orr_err_set(err, ORR_EINVAL, "source.type", "store %s has no catalog to read", type);
        goto out;
    }
    if (strcmp(what, "tables") == 0) {
        if (table) {
            rc = orr_err_set(err, ORR_EINVAL, "table", "is only for what \"table\"");
            goto out;
        }
        rc = pl->meta->tables(src, "source", out, err);
    } else if (strcmp(what, "table") == 0) {
        if (!table || !table[0] || strlen(table) > 512) {
            rc = orr_err_set(err, ORR_EINVAL, "table", "is required: \"schema.name\"");
            goto out;
        }
        rc = pl->meta->table(src, "source", table, out, err);
        if (rc == ORR_ENOTFOUND)
            snprintf(err->field, sizeof err->field, "table");
    } else {
        rc = orr_err_set(err, ORR_EINVAL, "what", "must be \"tables\" or \"table\"");
    }
out:
    json_decref(job);
    return rc;
}

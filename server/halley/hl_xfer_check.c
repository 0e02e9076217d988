/*
 * hl_xfer_check.c - the save-time check of the data sources a task names: a
 * transfer's reader and writers (`config.reader.datasource`,
 * `config.writers[N].datasource`) and a quality task's
 * (`config.datasource`) must name a data source that exists and whose kind
 * the endpoint can use (a postgres endpoint: postgresql; a mysql endpoint:
 * mysql or mariadb), the same rule executord applies when it resolves them
 * at run time. Run inside the caller's transaction, so CreateTask,
 * UpdateTask and RollbackTask refuse a spec the run would fail on.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "hl_api.h"

/* 1 when an endpoint of type can use a data source of kind; a type with no
 * rule (a file endpoint names none) takes any. */
static int hl__xfer_kind_fits(const char *type, const char *kind)
{
    if (!type)
        return 1;
    if (strcmp(type, "postgres") == 0)
        return strcmp(kind, "postgresql") == 0 || strcmp(kind, "postgres") == 0;
    if (strcmp(type, "mysql") == 0)
        return strcmp(kind, "mysql") == 0 || strcmp(kind, "mariadb") == 0;
    return 1;
}

static orr_status hl__xfer_check_ds(hl_conn *c, orr_arena *a, const json_t *ep, const char *type,
                                    const char *field, orr_err *err)
{
    static hl_stmt q = HL_STMT("SELECT kind FROM data_sources WHERE name = $1");
    const char *name = json_string_value(json_object_get(ep, "datasource"));
    if (!name)
        return ORR_OK;
    PGresult *r = NULL;
    orr_status s = hl_db_query(c, a, &q, 1, &name, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_EINVAL, field, "no data source named \"%.128s\"", name);
    const char *kind = hl_val(r, 0, 0);
    if (!hl__xfer_kind_fits(type, kind))
        return orr_err_set(err, ORR_EINVAL, field,
                           "data source \"%.128s\" is of kind %.64s, which a %.32s endpoint "
                           "cannot use",
                           name, kind, type);
    return ORR_OK;
}

orr_status hl_xfer_check_spec(hl_conn *c, orr_arena *a, const char *type, const json_t *spec,
                              orr_err *err)
{
    const json_t *cfg = json_object_get(spec, "config");
    if (!type || !json_is_object(cfg))
        return ORR_OK;
    if (strcmp(type, "quality") == 0)
        return hl__xfer_check_ds(c, a, cfg, NULL, "spec.config.datasource", err);
    if (strcmp(type, "transfer") != 0)
        return ORR_OK;
    orr_status s;
    const json_t *rd = json_object_get(cfg, "reader");
    if (json_is_object(rd) &&
        (s = hl__xfer_check_ds(c, a, rd, json_string_value(json_object_get(rd, "type")),
                               "spec.config.reader.datasource", err)) != ORR_OK)
        return s;
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(cfg, "writers"), i, w)
    {
        if (!json_is_object(w))
            continue;
        char field[80];
        snprintf(field, sizeof field, "spec.config.writers[%zu].datasource", i);
        if ((s = hl__xfer_check_ds(c, a, w, json_string_value(json_object_get(w, "type")), field,
                                   err)) != ORR_OK)
            return s;
    }
    return ORR_OK;
}

/*
 * gx_xfer_check.c - the save-time check of a transfer task's column
 * mappings (`config.writers[N].mapping`, docs/wormhole.md "Column
 * mapping") against the tables themselves, read with gx_meta_table:
 *
 *   - the writer's table and the reader's table exist;
 *   - every target is a column of the writer's table, every source a column
 *     of the reader's table (and of the reader's own `columns` when it names
 *     them);
 *   - a cast can work between the source's kind and the target's (a date
 *     never becomes an int), a copy without a cast too, and a NULL constant
 *     does not go into a NOT NULL column.
 *
 * A failed check answers 400 naming the field, e.g.
 * "spec.config.writers[0].mapping[3].target", before anything is saved.
 * Endpoints given by dsn rather than by data source are not checked (their
 * catalog cannot be read from here). When no executor can read a catalog,
 * the save goes on and the answer carries a "warnings" entry saying which
 * mapping was not checked: a metadata outage must not block every edit.
 * Unknown data sources are halleyd's check (hl_xfer_check.c), made at save
 * for every transfer; the ones this check meets first are named the same way.
 */
#include <stdio.h>
#include <string.h>

#include "gx_app.h"
#include "gx_meta.h"
#include "gx_xfer_check.h"

/* Value kinds (wormhole's names) a value of kind `from` can never be
 * converted to `to`, whatever the value: 1 when it can (perhaps), 0 never.
 * Mirrors what wormhole's casts accept (workers/wormhole/wh_map.c). */
static int gx__kind_reaches(const char *from, const char *to)
{
    static const char *const loose[] = {"text", "other", "json", NULL};
    if (!from || !to || strcmp(from, to) == 0 || strcmp(to, "text") == 0 ||
        strcmp(to, "other") == 0 || strcmp(to, "bytes") == 0 || strcmp(from, "other") == 0)
        return 1;
    for (const char *const *l = loose; *l; l++)
        if (strcmp(from, *l) == 0 && strcmp(to, "array") != 0)
            return 1;
    int from_num = !strcmp(from, "int") || !strcmp(from, "bigint") || !strcmp(from, "numeric") ||
                   !strcmp(from, "float") || !strcmp(from, "bool");
    int from_time =
        !strcmp(from, "date") || !strcmp(from, "timestamp") || !strcmp(from, "timestamptz");
    if (!strcmp(to, "int") || !strcmp(to, "bigint") || !strcmp(to, "numeric") ||
        !strcmp(to, "float") || !strcmp(to, "bool") || !strcmp(to, "json"))
        return from_num;
    if (!strcmp(to, "date") || !strcmp(to, "timestamp") || !strcmp(to, "timestamptz"))
        return from_time;
    if (!strcmp(to, "time"))
        return !strcmp(from, "time") || !strcmp(from, "timestamp") || !strcmp(from, "timestamptz");
    if (!strcmp(to, "array"))
        return !strcmp(from, "text");
    return 1;
}

static const char *gx__kind(json_t *col)
{
    return json_string_value(json_object_get(col, "kind"));
}

/* Read one endpoint's table. 1: *out set; 0: not checked (warning added);
 * -1: answered 400. */
static int gx__endpoint_table(gx_req *req, gx_resp *resp, json_t *ep, const char *path,
                              json_t *warnings, json_t **out)
{
    *out = NULL;
    const char *ds = json_string_value(json_object_get(ep, "datasource"));
    const char *table = json_string_value(json_object_get(ep, "table"));
    if (!ds || !table)
        return 0;
    orr_err e;
    orr_err_clear(&e);
    orr_status rc = gx_meta_table(req->app, ds, table, out, &e);
    if (rc == ORR_OK)
        return 1;
    if (rc == ORR_ENOTFOUND || rc == ORR_EINVAL) {
        int is_ds = strcmp(e.field, "datasource") == 0;
        gx_resp_fail(resp, ORR_EINVAL,
                     orr_arena_sprintf(req->arena, "%s.%s", path, is_ds ? "datasource" : "table"),
                     is_ds ? "no data source named \"%.128s\""
                           : "no table %.256s in data source %.128s",
                     is_ds ? ds : table, ds);
        return -1;
    }
    json_array_append_new(warnings,
                          json_pack("{s:s, s:s}", "field", path, "message",
                                    orr_arena_sprintf(req->arena,
                                                      "the column mapping was not checked against "
                                                      "%s: %s",
                                                      table, e.msg)));
    return 0;
}

static int gx__fail(gx_req *req, gx_resp *resp, const char *entry, const char *key, const char *msg)
{
    gx_resp_fail(resp, ORR_EINVAL, orr_arena_sprintf(req->arena, "%s.%s", entry, key), "%s", msg);
    return -1;
}

/* Check one mapping entry against the tables (either may be NULL: not
 * read). 0 or -1 (answered). */
static int gx__check_entry(gx_req *req, gx_resp *resp, json_t *m, const char *entry,
                           json_t *src_tab, json_t *src_cols, json_t *dst_tab)
{
    orr_arena *a = req->arena;
    const char *target = json_string_value(json_object_get(m, "target"));
    const char *source = json_string_value(json_object_get(m, "source"));
    const char *cast = json_string_value(json_object_get(m, "cast"));
    json_t *tcol = NULL, *scol = NULL;
    if (dst_tab && target && !(tcol = gx_meta_column(dst_tab, target)))
        return gx__fail(req, resp, entry, "target",
                        orr_arena_sprintf(a, "column %s is not in table %s", target,
                                          json_string_value(json_object_get(dst_tab, "name"))));
    if (source && json_is_array(src_cols)) {
        int found = 0;
        size_t i;
        json_t *c;
        json_array_foreach(src_cols, i, c) found |=
            json_is_string(c) && strcmp(json_string_value(c), source) == 0;
        if (!found)
            return gx__fail(
                req, resp, entry, "source",
                orr_arena_sprintf(a, "column %s is not among the reader's columns", source));
    }
    if (src_tab && source && !(scol = gx_meta_column(src_tab, source)))
        return gx__fail(req, resp, entry, "source",
                        orr_arena_sprintf(a, "column %s is not in table %s", source,
                                          json_string_value(json_object_get(src_tab, "name"))));
    json_t *k = json_object_get(m, "constant");
    if (k && json_is_null(k) && tcol && json_is_false(json_object_get(tcol, "nullable")))
        return gx__fail(req, resp, entry, "constant",
                        orr_arena_sprintf(a,
                                          "column %s is NOT NULL: a NULL constant cannot go "
                                          "into it",
                                          target));
    const char *sk = scol ? gx__kind(scol) : NULL, *tk = tcol ? gx__kind(tcol) : NULL;
    if (cast) {
        if (sk && !gx__kind_reaches(sk, cast))
            return gx__fail(
                req, resp, entry, "cast",
                orr_arena_sprintf(a, "a %s column (%s %s) cannot be cast to %s", sk, source,
                                  json_string_value(json_object_get(scol, "type")), cast));
        if (tk && !gx__kind_reaches(cast, tk))
            return gx__fail(req, resp, entry, "cast",
                            orr_arena_sprintf(a, "a value cast to %s cannot go into column %s (%s)",
                                              cast, target,
                                              json_string_value(json_object_get(tcol, "type"))));
    } else if (sk && tk && !gx__kind_reaches(sk, tk)) {
        return gx__fail(req, resp, entry, "source",
                        orr_arena_sprintf(a, "a %s column (%s) cannot go into column %s (%s)", sk,
                                          source, target,
                                          json_string_value(json_object_get(tcol, "type"))));
    }
    return 0;
}

int gx_xfer_check(gx_req *req, gx_resp *resp, json_t *spec, json_t *warnings)
{
    const char *type = json_string_value(json_object_get(spec, "type"));
    json_t *cfg = json_object_get(spec, "config");
    if (!type || strcmp(type, "transfer") != 0 || !json_is_object(cfg))
        return 0;
    json_t *writers = json_object_get(cfg, "writers"), *w;
    json_t *reader = json_object_get(cfg, "reader");
    size_t i;
    int any = 0;
    json_array_foreach(writers, i, w) any |= json_is_array(json_object_get(w, "mapping"));
    if (!any || !json_is_object(reader))
        return 0;
    json_t *src_tab = NULL, *src_cols = json_object_get(reader, "columns");
    int rc = gx__endpoint_table(req, resp, reader, "spec.config.reader", warnings, &src_tab);
    if (rc < 0)
        return -1;
    json_array_foreach(writers, i, w)
    {
        json_t *mapping = json_object_get(w, "mapping");
        if (!json_is_array(mapping))
            continue;
        const char *wpath = orr_arena_sprintf(req->arena, "spec.config.writers[%zu]", i);
        json_t *dst_tab = NULL;
        if ((rc = gx__endpoint_table(req, resp, w, wpath, warnings, &dst_tab)) < 0)
            break;
        size_t k;
        json_t *m;
        json_array_foreach(mapping, k, m)
        {
            const char *entry = orr_arena_sprintf(req->arena, "%s.mapping[%zu]", wpath, k);
            if (json_is_object(m) &&
                (rc = gx__check_entry(req, resp, m, entry, src_tab, src_cols, dst_tab)) < 0)
                break;
        }
        json_decref(dst_tab);
        if (rc < 0)
            break;
    }
    json_decref(src_tab);
    return rc < 0 ? -1 : 0;
}

static void gx__decref(void *p)
{
    json_decref(p);
}

json_t *gx_xfer_warnings(gx_req *req)
{
    json_t *w = json_array();
    orr_arena_on_cleanup(req->arena, gx__decref, w);
    return w;
}

json_t *gx_xfer_with_warnings(json_t *answer, json_t *warnings)
{
    if (json_array_size(warnings) > 0)
        json_object_set(answer, "warnings", warnings);
    return answer;
}

/* GET /api/v1/tasks/{id}/watermark?name=<table>.<column>: the incremental
 * watermark a transfer task's runs keep (value "" when none is saved yet). */
void gx_h_task_watermark(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    const char *name = gx_req_query(req, "name");
    if (!name || !*name) {
        gx_resp_fail(resp, ORR_EINVAL, "name", "is required (<table>.<column>)");
        return;
    }
    HL(GetWatermarkRequest) rq = HL_INIT(GET_WATERMARK_REQUEST);
    rq.task_id = id;
    rq.name = (char *)name;
    HL(Watermark) * w;
    if (gx_halley(req, resp, "GetWatermark", &rq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "task_id", json_integer(w->task_id));
    json_object_set_new(o, "name", json_string(w->name));
    json_object_set_new(o, "value", json_string(w->value));
    json_object_set_new(o, "instance_id",
                        w->instance_id ? json_integer(w->instance_id) : json_null());
    json_object_set_new(o, "updated_at",
                        w->updated_at_ms ? gx_json_time(w->updated_at_ms) : json_null());
    gx_resp_json(resp, 200, o);
}

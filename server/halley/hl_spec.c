/*
 * hl_spec.c - task spec validation and field extraction.
 *
 * The JSON Schema is the whole check of shape and ranges; the getters below
 * only read fields the schema already guaranteed, so their error paths are
 * defensive. Beyond the schema, the schedule and time zone go through the
 * scheduler's own code (orr_cron_check): a task is saved only if keplerd can
 * parse its cron, load its zone and find a fire time after now. Named
 * parameters go through the substitution language's own check
 * (orr_subst): no parameter takes a built-in's name, and every string of
 * config uses only well-formed substitutions of known names, so a typo is
 * refused at save, naming the field, instead of failing a run at night.
 * Deadlines go through orr_deadline_parse, the scheduler's own parser (a
 * duration of at most 31 days, or a clock time HH:MM), and two durations
 * must not put start_by after finish_by.
 */
#include "hl_spec.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "orr_cron.h"
#include "orr_deadline.h"
#include "orr_json.h"
#include "orr_schemas.h"
#include "orr_subst.h"

orr_status hl_spec_schema_load(orr_jschema **out, orr_err *err)
{
    return orr_schema_load("task.schema.json", out, err);
}

void hl_spec_clear(hl_spec *s)
{
    if (s->root)
        json_decref(s->root);
    memset(s, 0, sizeof *s);
}

/* spec.deadlines: each one parses as keplerd reads it; start_by no later
 * than finish_by when both are durations. */
static orr_status check_deadlines(json_t *doc, orr_err *err)
{
    json_t *dl = json_object_get(doc, "deadlines");
    if (!dl)
        return ORR_OK;
    static const char *const keys[] = {"start_by", "finish_by"};
    orr_deadline d[2] = {{ORR_DL_NONE, 0}, {ORR_DL_NONE, 0}};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(dl, keys[i]);
        if (!v)
            continue;
        char field[64];
        snprintf(field, sizeof field, "spec.deadlines.%s", keys[i]);
        if (!json_is_string(v))
            return orr_err_set(err, ORR_EINVAL, field, "must be a string");
        orr_status s = orr_deadline_parse(json_string_value(v), field, &d[i], err);
        if (s != ORR_OK)
            return s;
    }
    if (d[0].kind == ORR_DL_AFTER && d[1].kind == ORR_DL_AFTER && d[0].ms > d[1].ms)
        return orr_err_set(err, ORR_EINVAL, "spec.deadlines.start_by",
                           "is after finish_by: an instance must start before it can finish");
    return ORR_OK;
}

orr_status hl_spec_parse(const orr_jschema *schema, const char *json, size_t len, hl_spec *out,
                         orr_err *err)
{
    memset(out, 0, sizeof *out);
    if (!json || len == 0)
        return orr_err_set(err, ORR_EINVAL, "spec", "is required");
    json_t *doc = NULL;
    if (orr_json_parse(json, len, &doc, err) != ORR_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return orr_err_set(err, ORR_EINVAL, "spec", "not valid JSON: %s", msg);
    }
    out->root = doc;
    orr_status s = orr_jschema_validate(schema, doc, "spec", err);
    if (s != ORR_OK)
        goto fail;
    out->schedule = "";
    out->timezone = "UTC";
    if ((s = orr_json_get_str(doc, "spec", "name", 1, &out->name, err)) != ORR_OK ||
        (s = orr_json_get_str(doc, "spec", "team", 1, &out->team, err)) != ORR_OK ||
        (s = orr_json_get_str(doc, "spec", "type", 1, &out->type, err)) != ORR_OK ||
        (s = orr_json_get_str(doc, "spec", "schedule", 0, &out->schedule, err)) != ORR_OK ||
        (s = orr_json_get_str(doc, "spec", "timezone", 0, &out->timezone, err)) != ORR_OK ||
        (s = orr_json_get_int(doc, "spec", "priority", 0, -1000, 1000, &out->priority, err)) !=
            ORR_OK)
        goto fail;
    orr_err ce;
    if ((s = orr_cron_check(out->schedule, out->timezone, (int64_t)time(NULL), &ce)) != ORR_OK) {
        orr_err_set(err, s, strcmp(ce.field, "timezone") == 0 ? "spec.timezone" : "spec.schedule",
                    "%s", ce.msg);
        goto fail;
    }
    if ((s = orr_subst_check_spec(doc, err)) != ORR_OK)
        goto fail;
    if ((s = check_deadlines(doc, err)) != ORR_OK)
        goto fail;
    json_t *ups = NULL;
    if ((s = orr_json_get_array(doc, "spec", "upstreams", 0, &ups, err)) != ORR_OK)
        goto fail;
    if (ups) {
        if (json_array_size(ups) > HL_SPEC_MAX_DEPS) {
            s = orr_err_set(err, ORR_EINVAL, "spec.upstreams", "at most %d upstreams",
                            HL_SPEC_MAX_DEPS);
            goto fail;
        }
        size_t i;
        json_t *u;
        json_array_foreach(ups, i, u)
        {
            char path[64];
            orr_json_index_path(path, sizeof path, "spec.upstreams", i);
            hl_spec_dep *d = &out->deps[out->n_deps++];
            d->cycle = "latest";
            if ((s = orr_json_get_str(u, path, "kind", 1, &d->kind, err)) != ORR_OK ||
                (s = orr_json_get_str(u, path, "task", 0, &d->task, err)) != ORR_OK ||
                (s = orr_json_get_str(u, path, "cycle", 0, &d->cycle, err)) != ORR_OK)
                goto fail;
            if (strcmp(d->kind, "self") == 0) {
                if (d->task && strcmp(d->task, out->name) != 0) {
                    char f[80];
                    snprintf(f, sizeof f, "%s.task", path);
                    s = orr_err_set(err, ORR_EINVAL, f, "a self dependency names no other task");
                    goto fail;
                }
                d->task = NULL;
            } else if (strcmp(d->kind, "data_unit") == 0) {
                d->task = NULL;
                d->unit = u;
            } else if (strcmp(d->task, out->name) == 0) {
                char f[80];
                snprintf(f, sizeof f, "%s.task", path);
                s = orr_err_set(err, ORR_EINVAL, f,
                                "use kind \"self\" to depend on the task itself");
                goto fail;
            }
        }
    }
    return ORR_OK;
fail:
    hl_spec_clear(out);
    return s;
}

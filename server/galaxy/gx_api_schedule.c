/* gx_api_schedule.c - schedules: the next fire times of a cron expression (the
 * designer shows them as the user types) and backfill of a task over a date
 * range (one instance per fire time in [from, to), idempotent: instances
 * that already exist are reported, not duplicated).
 *
 * Fire times come from lib's cron engine (orr_cron, orr_tz), the same code the
 * scheduler runs, so what the designer shows is what will run. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_cron.h"
#include "orr_tz.h"
#include "orr_json.h"
#include "orr_jschema.h"

#define GX_BACKFILL_MAX 1000

void gx_h_schedule_next(gx_req *req, gx_resp *resp)
{
    const char *expr = gx_req_query(req, "cron");
    const char *zone = gx_req_query(req, "tz");
    const char *from = gx_req_query(req, "from");
    int64_t count;
    if (gx_req_query_int(req, resp, "count", 5, 1, 100, &count))
        return;
    if (!expr || !*expr) {
        gx_resp_fail(resp, ORR_EINVAL, "cron", "a cron expression is required");
        return;
    }
    orr_err e;
    orr_cron c;
    if (orr_cron_parse_into(expr, &c, &e) != ORR_OK) {
        /* The field names the cron field ("day-of-month"); keep it visible. */
        gx_resp_fail(resp, ORR_EINVAL, "cron", "%s%s%s", e.field, e.field[0] ? ": " : "", e.msg);
        return;
    }
    const orr_tz *tz = NULL;
    if (orr_tz_load(zone && *zone ? zone : "UTC", &tz, &e) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "tz", "%s", e.msg);
        return;
    }
    int64_t at_ms = (int64_t)time(NULL) * 1000;
    if (from && gx_parse_time(from, &at_ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "from", "must be an ISO-8601 time");
        return;
    }
    json_t *times = json_array();
    int64_t t = at_ms / 1000;
    for (int64_t i = 0; i < count; i++) {
        if (orr_cron_next(&c, tz, t, &t) != ORR_OK)
            break;
        json_array_append_new(times, gx_json_time(t * 1000));
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:s,s:s,s:o}", "cron", expr, "tz", orr_tz_name(tz), "times", times));
}

void gx_h_task_backfill(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"from", "to", "priority", NULL};
    orr_err e;
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *from_s = NULL, *to_s = NULL;
    int64_t priority = 0, from_ms, to_ms;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "from", 1, &from_s, &e) != ORR_OK ||
        orr_json_get_str(body, "", "to", 1, &to_s, &e) != ORR_OK ||
        orr_json_get_int(body, "", "priority", 0, -1000, 1000, &priority, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (gx_parse_time(from_s, &from_ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "from", "must be an ISO-8601 time");
        return;
    }
    if (gx_parse_time(to_s, &to_ms) != ORR_OK || to_ms <= from_ms) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "must be an ISO-8601 time after from");
        return;
    }
    HL(GetTaskRequest) tq = HL_INIT(GET_TASK_REQUEST);
    tq.id = id;
    HL(Task) * task;
    if (gx_halley(req, resp, "GetTask", &tq.base, (ProtobufCMessage **)&task) != ORR_OK)
        return;
    if (!gx_require_team(req, resp, task->team))
        return;
    if (!task->active) {
        gx_resp_fail(resp, ORR_ESTATE, "id", "task %s is deactivated", task->name);
        return;
    }
    if (!task->schedule || !*task->schedule) {
        gx_resp_fail(resp, ORR_EINVAL, "schedule", "task %s has no schedule to backfill",
                     task->name);
        return;
    }
    orr_cron c;
    const orr_tz *tz = NULL;
    if (orr_cron_parse_into(task->schedule, &c, &e) != ORR_OK ||
        orr_tz_load(task->timezone && *task->timezone ? task->timezone : "UTC", &tz, &e) !=
            ORR_OK) {
        gx_resp_fail(resp, ORR_EINTERNAL, "schedule", "stored schedule unusable: %s", e.msg);
        return;
    }
    /* Fire times in [from, to): start just before from. */
    HL(CreateInstance) *items = orr_arena_calloc(req->arena, GX_BACKFILL_MAX, sizeof(*items));
    HL(CreateInstance) **ptrs = orr_arena_calloc(req->arena, GX_BACKFILL_MAX, sizeof(*ptrs));
    size_t n = 0;
    int64_t t = from_ms / 1000 - 1;
    const char *actor = gx_actor(req);
    while (orr_cron_next(&c, tz, t, &t) == ORR_OK && t * 1000 < to_ms) {
        if (n == GX_BACKFILL_MAX) {
            gx_resp_fail(resp, ORR_EINVAL, "to",
                         "the range holds more than %d fire times; backfill it in parts",
                         GX_BACKFILL_MAX);
            return;
        }
        HL(CreateInstance) init = HL_INIT(CREATE_INSTANCE);
        items[n] = init;
        items[n].task_id = id;
        items[n].schedule_time_ms = t * 1000;
        items[n].priority = (int32_t)priority;
        items[n].actor = (char *)actor;
        ptrs[n] = &items[n];
        n++;
    }
    json_t *created = json_array(), *existing = json_array();
    if (n > 0) {
        HL(CreateInstancesRequest) rq = HL_INIT(CREATE_INSTANCES_REQUEST);
        rq.n_instances = n;
        rq.instances = ptrs;
        HL(CreateInstancesResponse) * rs;
        if (gx_halley(req, resp, "CreateInstances", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK) {
            json_decref(created);
            json_decref(existing);
            return;
        }
        for (size_t i = 0; i < rs->n_results; i++) {
            const HL(CreateInstanceResult) *r = rs->results[i];
            if (r->code != 0 || !r->instance) {
                json_decref(created);
                json_decref(existing);
                gx_resp_fail(resp, ORR_EINTERNAL, NULL, "instance %zu not created: %s", i,
                             r->message);
                return;
            }
            json_array_append_new(r->created ? created : existing, json_integer(r->instance->id));
        }
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:I,s:o,s:o}", "fire_times", (json_int_t)n, "created", created,
                           "existing", existing));
}

/* Validate a task spec without saving it: the JSON Schema of schema/ (the
 * same file halleyd checks against), then the schedule and time zone with
 * orr_cron_check, as halleyd does at save. 200 {"valid":true,"next":[...]} or 400 naming the field.
 */
void gx_h_task_validate(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    json_t *spec = gx_req_json(req, resp);
    if (!spec)
        return;
    orr_err e;
    orr_err_clear(&e);
    if (orr_jschema_validate(app->task_schema, spec, "spec", &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    const char *schedule = json_string_value(json_object_get(spec, "schedule"));
    const char *zone = json_string_value(json_object_get(spec, "timezone"));
    int64_t now = (int64_t)time(NULL);
    /* The check halleyd makes at save (parse, zone, fires again), so a spec
     * that validates here is one CreateTask accepts. */
    if (orr_cron_check(schedule, zone, now, &e) != ORR_OK) {
        gx_resp_fail(resp, e.code,
                     strcmp(e.field, "timezone") == 0 ? "spec.timezone" : "spec.schedule", "%s",
                     e.msg);
        return;
    }
    json_t *next = json_array();
    orr_cron c;
    const orr_tz *tz = NULL;
    if (schedule && *schedule && orr_cron_parse_into(schedule, &c, &e) == ORR_OK &&
        orr_tz_load(zone ? zone : "UTC", &tz, &e) == ORR_OK) {
        int64_t t = now;
        for (int i = 0; i < 5 && orr_cron_next(&c, tz, t, &t) == ORR_OK; i++)
            json_array_append_new(next, gx_json_time(t * 1000));
    }
    gx_resp_json(resp, 200, json_pack("{s:b,s:o}", "valid", 1, "next", next));
}

/* gx_api_schedule.c - schedules: the next fire times of a cron expression (the
 * designer shows them as the user types) and the check of a task spec
 * (backfill is in gx_api_runs.c).
 *
 * Fire times come from lib's cron engine (orr_cron, orr_tz), the same code the
 * scheduler runs, so what the designer shows is what will run. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "gx_quality_check.h"
#include "gx_xfer_check.h"
#include "orr_cal.h"
#include "orr_cron.h"
#include "orr_tz.h"
#include "orr_json.h"
#include "orr_jschema.h"
#include "orr_subst.h"

void gx_h_schedule_next(gx_req *req, gx_resp *resp)
{
    const char *expr = gx_req_query(req, "cron");
    const char *zone = gx_req_query(req, "tz");
    const char *from = gx_req_query(req, "from");
    int64_t count;
    if (gx_req_query_int(req, resp, "count", 5, 1, 100, &count))
        return;
    orr_err e;
    const char *cal_name = gx_req_query(req, "calendar");
    const char *policy_s = gx_req_query(req, "policy");
    orr_cal_policy policy;
    if (orr_cal_policy_parse(policy_s, &policy, &e) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "policy", "%s", e.msg);
        return;
    }
    if (!expr || !*expr) {
        gx_resp_fail(resp, ORR_EINVAL, "cron", "a cron expression is required");
        return;
    }
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
    orr_cal *cal = NULL;
    if (cal_name && *cal_name) {
        if (!gx_check_name(resp, cal_name, "calendar"))
            return;
        if (!gx_calendar_load(req, resp, cal_name, &cal)) {
            if (resp->status == 404)
                gx_resp_fail(resp, ORR_EINVAL, "calendar", "no calendar named \"%s\"", cal_name);
            return;
        }
    }
    json_t *times = json_array();
    int64_t t = at_ms / 1000;
    for (int64_t i = 0; i < count; i++) {
        if (orr_cal_next(&c, tz, cal, policy, t, &t) != ORR_OK)
            break;
        json_array_append_new(times, gx_json_time(t * 1000));
    }
    json_t *out = json_pack("{s:s,s:s,s:o}", "cron", expr, "tz", orr_tz_name(tz), "times", times);
    if (cal) {
        /* the cron's own fire times, each kept, skipped or moved */
        json_t *fires = json_array();
        t = at_ms / 1000;
        for (int64_t i = 0; i < count; i++) {
            if (orr_cron_next(&c, tz, t, &t) != ORR_OK)
                break;
            int64_t to;
            orr_cal_outcome o = orr_cal_classify(cal, policy, t, &to);
            json_array_append_new(
                fires, json_pack("{s:o,s:s,s:o}", "time", gx_json_time(t * 1000), "outcome",
                                 orr_cal_outcome_name(o), "to",
                                 o == ORR_CAL_MOVED ? gx_json_time(to * 1000) : json_null()));
        }
        json_object_set_new(out, "calendar", json_string(cal_name));
        json_object_set_new(out, "policy", json_string(orr_cal_policy_name(policy)));
        json_object_set_new(out, "fires", fires);
        orr_cal_free(cal);
    }
    gx_resp_json(resp, 200, out);
}

/* Validate a task spec without saving it: the JSON Schema of schema/ (the
 * same file halleyd checks against), then the schedule and time zone with
 * orr_cron_check, as halleyd does at save, and a transfer's tables, column
 * mapping and quality checks as galaxyd does at save. 200
 * {"valid":true,"next":[...]} (with "warnings" when the tables could not be
 * read) or 400 naming the field.
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
    if (orr_subst_check_spec(spec, &e) != ORR_OK) { /* as halleyd checks at save */
        gx_resp_err(resp, &e);
        return;
    }
    /* a transfer's tables, mapping and quality checks, as at save */
    json_t *warnings = gx_xfer_warnings(req);
    if (gx_xfer_check(req, resp, spec, warnings) != 0 ||
        gx_quality_check(req, resp, spec, warnings) != 0)
        return;
    /* a named business calendar must exist (halleyd's check at save); the
     * next fire times follow it */
    const char *cal_name = json_string_value(json_object_get(spec, "calendar"));
    orr_cal_policy policy = ORR_CAL_SKIP;
    (void)orr_cal_policy_parse(json_string_value(json_object_get(spec, "calendar_policy")), &policy,
                               &e);
    orr_cal *cal = NULL;
    if (cal_name && !gx_calendar_load(req, resp, cal_name, &cal)) {
        if (resp->status == 404)
            gx_resp_fail(resp, ORR_EINVAL, "spec.calendar", "no calendar named \"%.128s\"",
                         cal_name);
        return;
    }
    json_t *next = json_array();
    orr_cron c;
    const orr_tz *tz = NULL;
    if (schedule && *schedule && orr_cron_parse_into(schedule, &c, &e) == ORR_OK &&
        orr_tz_load(zone ? zone : "UTC", &tz, &e) == ORR_OK) {
        int64_t t = now;
        for (int i = 0; i < 5 && orr_cal_next(&c, tz, cal, policy, t, &t) == ORR_OK; i++)
            json_array_append_new(next, gx_json_time(t * 1000));
    }
    orr_cal_free(cal);
    gx_resp_json(resp, 200,
                 gx_xfer_with_warnings(json_pack("{s:b,s:o}", "valid", 1, "next", next), warnings));
}

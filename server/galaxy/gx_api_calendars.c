/*
 * gx_api_calendars.c - business calendars over REST (docs/api.md
 * "Calendars"; storage in halleyd's hl_api_calendars.c, logic in
 * lib/orr_cal.h).
 *
 *   GET    /api/v1/calendars                  the calendars (without days)
 *   POST   /api/v1/calendars                  create one, with its days
 *   GET    /api/v1/calendars/{name}           one, with every dated day
 *   PUT    /api/v1/calendars/{name}           change team, timezone,
 *          description, weekdays; "days" replaces the dated days, "add"
 *          and "remove" edit them
 *   DELETE /api/v1/calendars/{name}           409 while a task uses it
 *   POST   /api/v1/calendars/{name}/import    an .ics body (text/calendar):
 *          the days its events cover in ?from..?to (default: this year to
 *          five years ahead) added as ?kind (excluded by default)
 *   GET    /api/v1/calendars/{name}/days      every date of ?from..?to (at
 *          most 400 days) with whether it is a business day, for the
 *          console's month view
 *
 * Team rules as for tasks: developers change their teams' calendars (admin
 * every one), everyone signed in reads.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_cal.h"
#include "orr_cal_ics.h"
#include "orr_json.h"

#define GX_CAL_RANGE_MAX 400

static json_t *gx_calendar_json(const HL(Calendar) * c)
{
    json_t *wd = json_array();
    for (size_t i = 0; i < c->n_weekdays; i++)
        json_array_append_new(wd, json_integer(c->weekdays[i]));
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:o,s:i,s:s,s:o,s:o}", "name", c->name, "team", c->team,
                  "timezone", c->timezone, "description", c->description, "weekdays", wd,
                  "days_count", (int)c->days_count, "created_by", c->created_by, "created_at",
                  gx_json_time(c->created_at_ms), "updated_at", gx_json_time(c->updated_at_ms));
    if (c->days_included) {
        json_t *days = json_array();
        for (size_t i = 0; i < c->n_days; i++)
            json_array_append_new(days, json_pack("{s:s,s:s,s:s}", "day", c->days[i]->day, "kind",
                                                  c->days[i]->kind, "note", c->days[i]->note));
        json_object_set_new(o, "days", days);
    }
    return o;
}

/* body[key]: an array of {"day", "kind", "note"} into arena CalendarDay
 * messages; 0 after answering 400 naming "key[i].member". */
static int gx_cal_days(gx_req *req, gx_resp *resp, const json_t *body, const char *key,
                       HL(CalendarDay) * **out, size_t *n)
{
    const json_t *arr = json_object_get(body, key);
    *n = 0;
    *out = NULL;
    if (!arr)
        return 1;
    if (!json_is_array(arr) || json_array_size(arr) > ORR_CAL_MAX_DAYS) {
        gx_resp_fail(resp, ORR_EINVAL, key, "must be an array of at most %d days",
                     ORR_CAL_MAX_DAYS);
        return 0;
    }
    size_t m = json_array_size(arr);
    HL(CalendarDay) **list = orr_arena_alloc(req->arena, (m ? m : 1) * sizeof *list);
    HL(CalendarDay) *d = orr_arena_alloc(req->arena, (m ? m : 1) * sizeof *d);
    for (size_t i = 0; i < m; i++) {
        const json_t *v = json_array_get(arr, i);
        const json_t *day = json_object_get(v, "day"), *kind = json_object_get(v, "kind"),
                     *note = json_object_get(v, "note");
        const char *bad = NULL, *why = NULL;
        int64_t x;
        orr_err e;
        if (!json_is_object(v))
            bad = "", why = "must be an object {\"day\", \"kind\", \"note\"}";
        else if (!json_is_string(day) || orr_cal_parse_date(json_string_value(day), &x, &e))
            bad = ".day", why = "must be a date YYYY-MM-DD";
        else if (kind &&
                 !(json_is_string(kind) && (strcmp(json_string_value(kind), "excluded") == 0 ||
                                            strcmp(json_string_value(kind), "included") == 0)))
            bad = ".kind", why = "must be excluded or included";
        else if (note && !json_is_string(note))
            bad = ".note", why = "must be a string";
        if (bad) {
            gx_resp_fail(resp, ORR_EINVAL, orr_arena_sprintf(req->arena, "%s[%zu]%s", key, i, bad),
                         "%s", why);
            return 0;
        }
        d[i] = (HL(CalendarDay))HL_INIT(CALENDAR_DAY);
        d[i].day = (char *)json_string_value(day);
        d[i].kind = kind ? (char *)json_string_value(kind) : "excluded";
        d[i].note = note ? (char *)json_string_value(note) : "";
        list[i] = &d[i];
    }
    *out = list;
    *n = m;
    return 1;
}

/* The calendar's fields of body over base (may be NULL: defaults); 0 after
 * answering 400 naming the field. */
static int gx_cal_fields(gx_req *req, gx_resp *resp, const json_t *body, HL(Calendar) * c)
{
    orr_err e;
    const char *team = NULL, *zone = NULL, *desc = NULL;
    if (orr_json_get_str(body, "", "team", 0, &team, &e) != ORR_OK ||
        orr_json_get_str(body, "", "timezone", 0, &zone, &e) != ORR_OK ||
        orr_json_get_str(body, "", "description", 0, &desc, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return 0;
    }
    if (team) {
        if (!gx_check_name(resp, team, "team"))
            return 0;
        c->team = (char *)team;
    }
    if (zone) {
        const orr_tz *tz;
        if (orr_tz_load(zone, &tz, &e) != ORR_OK) {
            gx_resp_fail(resp, ORR_EINVAL, "timezone", "unknown time zone \"%.80s\"", zone);
            return 0;
        }
        c->timezone = (char *)zone;
    }
    if (desc) {
        if (strlen(desc) > 1000) {
            gx_resp_fail(resp, ORR_EINVAL, "description", "at most 1000 characters");
            return 0;
        }
        c->description = (char *)desc;
    }
    const json_t *wd = json_object_get(body, "weekdays");
    if (wd) {
        unsigned seen = 0;
        if (!json_is_array(wd) || json_array_size(wd) > 7) {
            gx_resp_fail(resp, ORR_EINVAL, "weekdays", "must be an array of ISO weekdays 1-7");
            return 0;
        }
        c->weekdays = orr_arena_alloc(req->arena, 7 * sizeof *c->weekdays);
        c->n_weekdays = 0;
        size_t i;
        const json_t *v;
        json_array_foreach(wd, i, v)
        {
            json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
            if (x < 1 || x > 7 || (seen >> x) & 1u) {
                gx_resp_fail(resp, ORR_EINVAL, "weekdays",
                             "must be distinct ISO weekdays 1 (Monday) to 7 (Sunday)");
                return 0;
            }
            seen |= 1u << x;
            c->weekdays[c->n_weekdays++] = (int32_t)x;
        }
    }
    return 1;
}

static int gx_cal_get(gx_req *req, gx_resp *resp, const char *name, int with_days, const char *from,
                      const char *to, HL(Calendar) * *out)
{
    HL(GetCalendarRequest) rq = HL_INIT(GET_CALENDAR_REQUEST);
    rq.name = (char *)name;
    rq.with_days = with_days;
    rq.from = (char *)(from ? from : "");
    rq.to = (char *)(to ? to : "");
    return gx_halley(req, resp, "GetCalendar", &rq.base, (ProtobufCMessage **)out) == ORR_OK;
}

void gx_h_calendars_list(gx_req *req, gx_resp *resp)
{
    const char *team = gx_req_query(req, "team");
    if (team && *team && !gx_check_name(resp, team, "team"))
        return;
    HL(ListCalendarsRequest) rq = HL_INIT(LIST_CALENDARS_REQUEST);
    rq.team = (char *)(team ? team : "");
    HL(ListCalendarsResponse) * rs;
    if (gx_halley(req, resp, "ListCalendars", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_calendars; i++)
        json_array_append_new(items, gx_calendar_json(rs->calendars[i]));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

void gx_h_calendar_create(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"name",     "team", "timezone", "description",
                                       "weekdays", "days", NULL};
    static const int32_t monfri[] = {1, 2, 3, 4, 5};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    const char *name = NULL;
    if (orr_json_get_str(body, "", "name", 1, &name, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!gx_check_name(resp, name, "name"))
        return;
    HL(Calendar) c = HL_INIT(CALENDAR);
    c.name = (char *)name;
    c.timezone = "UTC";
    c.weekdays = (int32_t *)monfri;
    c.n_weekdays = 5;
    if (!gx_cal_fields(req, resp, body, &c) ||
        !gx_cal_days(req, resp, body, "days", &c.days, &c.n_days))
        return;
    if (!c.team || !c.team[0]) {
        gx_resp_fail(resp, ORR_EINVAL, "team", "is required");
        return;
    }
    if (!gx_require_team(req, resp, c.team))
        return;
    HL(PutCalendarRequest) rq = HL_INIT(PUT_CALENDAR_REQUEST);
    rq.calendar = &c;
    rq.create = 1;
    rq.actor = (char *)gx_actor(req);
    HL(Calendar) * out;
    if (gx_halley(req, resp, "PutCalendar", &rq.base, (ProtobufCMessage **)&out) != ORR_OK)
        return;
    if (!gx_cal_get(req, resp, name, 1, NULL, NULL, &out))
        return;
    gx_resp_json(resp, 201, gx_calendar_json(out));
}

void gx_h_calendar_get(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    HL(Calendar) * c;
    if (gx_cal_get(req, resp, name, 1, NULL, NULL, &c))
        gx_resp_json(resp, 200, gx_calendar_json(c));
}

void gx_h_calendar_update(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"team", "timezone", "description", "weekdays",
                                       "days", "add",      "remove",      NULL};
    orr_err e;
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(Calendar) * cur;
    if (!gx_cal_get(req, resp, name, 0, NULL, NULL, &cur))
        return;
    HL(Calendar) c = *cur;
    c.days = NULL;
    c.n_days = 0;
    const char *old_team = cur->team;
    HL(CalendarDay) * *add;
    size_t n_add;
    if (!gx_cal_fields(req, resp, body, &c) ||
        !gx_cal_days(req, resp, body, "days", &c.days, &c.n_days) ||
        !gx_cal_days(req, resp, body, "add", &add, &n_add))
        return;
    const json_t *rm = json_object_get(body, "remove");
    char **remove = NULL;
    size_t n_remove = 0;
    if (rm) {
        if (!json_is_array(rm) || json_array_size(rm) > ORR_CAL_MAX_DAYS) {
            gx_resp_fail(resp, ORR_EINVAL, "remove", "must be an array of dates YYYY-MM-DD");
            return;
        }
        n_remove = json_array_size(rm);
        remove = orr_arena_alloc(req->arena, (n_remove ? n_remove : 1) * sizeof *remove);
        for (size_t i = 0; i < n_remove; i++) {
            const json_t *v = json_array_get(rm, i);
            int64_t x;
            if (!json_is_string(v) || orr_cal_parse_date(json_string_value(v), &x, &e)) {
                gx_resp_fail(resp, ORR_EINVAL, orr_arena_sprintf(req->arena, "remove[%zu]", i),
                             "must be a date YYYY-MM-DD");
                return;
            }
            remove[i] = (char *)json_string_value(v);
        }
    }
    if (json_object_get(body, "days") && (n_add || n_remove)) {
        gx_resp_fail(resp, ORR_EINVAL, "days", "give days (all of them) or add/remove, not both");
        return;
    }
    if (!gx_require_team(req, resp, old_team) ||
        (strcmp(old_team, c.team) != 0 && !gx_require_team(req, resp, c.team)))
        return;
    /* Fields first, then the day edits: two calls, each one transaction;
     * the day edits are checked above, so the second fails only if the
     * calendar went away in between. */
    HL(PutCalendarRequest) rq = HL_INIT(PUT_CALENDAR_REQUEST);
    rq.calendar = &c;
    rq.replace_days = json_object_get(body, "days") != NULL;
    rq.actor = (char *)gx_actor(req);
    HL(Calendar) * out;
    if (gx_halley(req, resp, "PutCalendar", &rq.base, (ProtobufCMessage **)&out) != ORR_OK)
        return;
    if (n_add || n_remove) {
        HL(PutCalendarDaysRequest) dq = HL_INIT(PUT_CALENDAR_DAYS_REQUEST);
        dq.name = (char *)name;
        dq.add = add;
        dq.n_add = n_add;
        dq.remove = remove;
        dq.n_remove = n_remove;
        dq.actor = (char *)gx_actor(req);
        HL(PutCalendarDaysResponse) * dr;
        if (gx_halley(req, resp, "PutCalendarDays", &dq.base, (ProtobufCMessage **)&dr) != ORR_OK)
            return;
    }
    if (gx_cal_get(req, resp, name, 1, NULL, NULL, &out))
        gx_resp_json(resp, 200, gx_calendar_json(out));
}

void gx_h_calendar_delete(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    HL(Calendar) * cur;
    if (!gx_cal_get(req, resp, name, 0, NULL, NULL, &cur) || !gx_require_team(req, resp, cur->team))
        return;
    HL(DeleteCalendarRequest) rq = HL_INIT(DELETE_CALENDAR_REQUEST);
    rq.name = (char *)name;
    rq.actor = (char *)gx_actor(req);
    HL(DeleteCalendarResponse) * out;
    if (gx_halley(req, resp, "DeleteCalendar", &rq.base, (ProtobufCMessage **)&out) != ORR_OK)
        return;
    resp->status = 204;
}

/* ?from / ?to as days; defaults def_from / def_to. 0 after a 400. */
static int gx_cal_range(gx_req *req, gx_resp *resp, int64_t def_from, int64_t def_to, int64_t *from,
                        int64_t *to)
{
    orr_err e;
    const char *f = gx_req_query(req, "from"), *t = gx_req_query(req, "to");
    *from = def_from;
    *to = def_to;
    if (f && *f && orr_cal_parse_date(f, from, &e) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "from", "must be a date YYYY-MM-DD");
        return 0;
    }
    if (t && *t && orr_cal_parse_date(t, to, &e) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "must be a date YYYY-MM-DD");
        return 0;
    }
    if (*to < *from) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "must not be before from");
        return 0;
    }
    return 1;
}

typedef struct {
    gx_req *req;
    HL(CalendarDay) * *list;
    size_t n, cap;
    const char *kind;
    int64_t from;
    unsigned char *seen; /* one byte per day of the range */
} gx_cal_import;

static int gx_cal_import_day(void *ctx, int64_t day, const char *summary, orr_err *err)
{
    gx_cal_import *im = ctx;
    if (im->seen[day - im->from])
        return 0;
    im->seen[day - im->from] = 1;
    if (im->n == ORR_CAL_MAX_DAYS) {
        orr_err_set(err, ORR_EINVAL, "body", "more than %d days", ORR_CAL_MAX_DAYS);
        return 1;
    }
    if (im->n == im->cap) {
        size_t cap = im->cap ? im->cap * 2 : 64;
        HL(CalendarDay) **l = orr_arena_alloc(im->req->arena, cap * sizeof *l);
        if (im->n)
            memcpy(l, im->list, im->n * sizeof *l);
        im->list = l;
        im->cap = cap;
    }
    char buf[16];
    HL(CalendarDay) *d = orr_arena_alloc(im->req->arena, sizeof *d);
    *d = (HL(CalendarDay))HL_INIT(CALENDAR_DAY);
    d->day = orr_arena_strdup(im->req->arena, orr_cal_format_date(day, buf, sizeof buf));
    d->kind = (char *)im->kind;
    d->note = orr_arena_sprintf(im->req->arena, "%.200s", summary);
    im->list[im->n++] = d;
    return 0;
}

void gx_h_calendar_import(gx_req *req, gx_resp *resp)
{
    static const char *const kinds[] = {"excluded", "included", NULL};
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    const char *kind;
    if (gx_req_query_enum(req, resp, "kind", kinds, &kind))
        return;
    if (!kind)
        kind = "excluded";
    int64_t today = (int64_t)time(NULL) / 86400, y;
    int m, d;
    orr_tz_civil_from_days(today, &y, &m, &d);
    int64_t from, to;
    if (!gx_cal_range(req, resp, orr_tz_days_from_civil(y, 1, 1),
                      orr_tz_days_from_civil(y + 5, 12, 31), &from, &to))
        return;
    if (to - from > 20 * 366) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "at most 20 years after from");
        return;
    }
    if (!req->body || req->body_len == 0) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "an iCalendar file (text/calendar) is required");
        return;
    }
    HL(Calendar) * cur;
    if (!gx_cal_get(req, resp, name, 0, NULL, NULL, &cur) || !gx_require_team(req, resp, cur->team))
        return;
    gx_cal_import im = {req, NULL, 0, 0, kind, from, NULL};
    im.seen = orr_arena_alloc(req->arena, (size_t)(to - from + 1));
    memset(im.seen, 0, (size_t)(to - from + 1));
    orr_err e;
    orr_err_clear(&e);
    if (orr_ics_days(req->body, req->body_len, from, to, gx_cal_import_day, &im, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(PutCalendarDaysRequest) dq = HL_INIT(PUT_CALENDAR_DAYS_REQUEST);
    dq.name = (char *)name;
    dq.add = im.list;
    dq.n_add = im.n;
    dq.actor = (char *)gx_actor(req);
    HL(PutCalendarDaysResponse) * dr;
    if (gx_halley(req, resp, "PutCalendarDays", &dq.base, (ProtobufCMessage **)&dr) != ORR_OK)
        return;
    json_t *days = json_array();
    for (size_t i = 0; i < im.n; i++)
        json_array_append_new(days, json_pack("{s:s,s:s,s:s}", "day", im.list[i]->day, "kind",
                                              im.list[i]->kind, "note", im.list[i]->note));
    gx_resp_json(resp, 200,
                 json_pack("{s:s,s:s,s:i,s:i,s:o}", "name", name, "kind", kind, "added",
                           (int)dr->added, "days_count", (int)dr->days_count, "days", days));
}

void gx_h_calendar_days(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    int64_t today = (int64_t)time(NULL) / 86400, y;
    int m, d;
    orr_tz_civil_from_days(today, &y, &m, &d);
    int64_t first = orr_tz_days_from_civil(y, m, 1);
    int64_t from, to;
    if (!gx_cal_range(req, resp, first, first + orr_tz_days_in_month(y, m) - 1, &from, &to))
        return;
    if (to - from + 1 > GX_CAL_RANGE_MAX) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "at most %d days after from", GX_CAL_RANGE_MAX);
        return;
    }
    char fb[16], tb[16];
    orr_cal_format_date(from, fb, sizeof fb);
    orr_cal_format_date(to, tb, sizeof tb);
    HL(Calendar) * c;
    if (!gx_cal_get(req, resp, name, 1, fb, tb, &c))
        return;
    unsigned mask = 0;
    for (size_t i = 0; i < c->n_weekdays; i++)
        mask |= 1u << c->weekdays[i];
    orr_cal *cal;
    orr_err e;
    if (orr_cal_new(c->timezone, mask, &cal, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    const char **notes = orr_arena_alloc(req->arena, (size_t)(to - from + 1) * sizeof *notes);
    memset(notes, 0, (size_t)(to - from + 1) * sizeof *notes);
    for (size_t i = 0; i < c->n_days; i++) {
        int64_t x;
        if (orr_cal_parse_date(c->days[i]->day, &x, &e) != ORR_OK || x < from || x > to)
            continue;
        orr_cal_set_day(
            cal, x, strcmp(c->days[i]->kind, "included") == 0 ? ORR_CAL_INCLUDED : ORR_CAL_EXCLUDED,
            &e);
        notes[x - from] = c->days[i]->note;
    }
    json_t *days = json_array();
    for (int64_t x = from; x <= to; x++) {
        char b[16];
        orr_cal_kind k = orr_cal_day_kind(cal, x);
        int wd = orr_tz_weekday(x);
        json_array_append_new(days, json_pack("{s:s,s:i,s:b,s:o,s:s}", "day",
                                              orr_cal_format_date(x, b, sizeof b), "weekday",
                                              wd == 0 ? 7 : wd, "business",
                                              orr_cal_is_business_day(cal, x), "kind",
                                              k == ORR_CAL_NONE       ? json_null()
                                              : k == ORR_CAL_INCLUDED ? json_string("included")
                                                                      : json_string("excluded"),
                                              "note", notes[x - from] ? notes[x - from] : ""));
    }
    orr_cal_free(cal);
    gx_resp_json(resp, 200,
                 json_pack("{s:s,s:s,s:s,s:s,s:o}", "name", name, "timezone", c->timezone, "from",
                           fb, "to", tb, "days", days));
}

int gx_calendar_load(gx_req *req, gx_resp *resp, const char *name, orr_cal **out)
{
    HL(Calendar) * c;
    if (!gx_cal_get(req, resp, name, 1, NULL, NULL, &c))
        return 0;
    unsigned mask = 0;
    for (size_t i = 0; i < c->n_weekdays; i++)
        mask |= 1u << c->weekdays[i];
    orr_err e;
    orr_cal *cal;
    if (orr_cal_new(c->timezone, mask, &cal, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return 0;
    }
    for (size_t i = 0; i < c->n_days; i++) {
        int64_t x;
        if (orr_cal_parse_date(c->days[i]->day, &x, &e) == ORR_OK)
            orr_cal_set_day(cal, x,
                            strcmp(c->days[i]->kind, "included") == 0 ? ORR_CAL_INCLUDED
                                                                      : ORR_CAL_EXCLUDED,
                            &e);
    }
    *out = cal;
    return 1;
}

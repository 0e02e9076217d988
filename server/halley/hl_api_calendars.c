/*
 * hl_api_calendars.c - business calendars (lib/orr_cal.h): a team's named
 * calendar, its zone and business weekdays, and its dated days excluded or
 * included.
 *
 * PutCalendar creates or updates one (with its days replaced when asked),
 * PutCalendarDays adds and removes days, DeleteCalendar refuses while an
 * active task names the calendar; each is one transaction with an audit
 * record and a "calendar.changed" event, so keplerd re-reads the calendars.
 * GetCalendar answers one with the days of a range; ListCalendars answers
 * them all (keplerd asks with every day).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_buf.h"
#include "orr_cal.h"
#include "orr_name.h"

#define HL_CAL_DESC_MAX 1000
#define HL_CAL_NOTE_MAX 200

#define HL_CAL_COLS                                                                                \
    "c.id, c.name, t.name, c.timezone, c.description, array_to_string(c.weekdays, ','),"           \
    " c.created_by, " HL_MS("c.created_at") ", " HL_MS(                                            \
        "c.updated_at") ", (SELECT count(*) FROM calendar_days d WHERE d.calendar_id = c.id)"

static hl_stmt q_cal_insert =
    HL_STMT("INSERT INTO calendars (name, team_id, timezone, description, weekdays, created_by)"
            " SELECT $1, t.id, $3, $4, $5::int[], $6 FROM teams t WHERE t.name = $2"
            " RETURNING id");
static hl_stmt q_cal_update =
    HL_STMT("UPDATE calendars c SET team_id = t.id, timezone = $3, description = $4,"
            " weekdays = $5::int[], updated_at = now() FROM teams t"
            " WHERE c.name = $1 AND t.name = $2 RETURNING c.id");
static hl_stmt q_cal_id = HL_STMT("SELECT id FROM calendars WHERE name = $1 FOR UPDATE");
static hl_stmt q_team_exists = HL_STMT("SELECT 1 FROM teams WHERE name = $1");
static hl_stmt q_days_clear = HL_STMT("DELETE FROM calendar_days WHERE calendar_id = $1::int8");
/* $2: [{"day", "kind", "note"}]; counts rows new or changed */
static hl_stmt q_days_add = HL_STMT(
    "INSERT INTO calendar_days (calendar_id, day, kind, note)"
    " SELECT $1::int8, (e ->> 'day')::date, e ->> 'kind', coalesce(e ->> 'note', '')"
    " FROM jsonb_array_elements($2::jsonb) e"
    " ON CONFLICT (calendar_id, day) DO UPDATE SET kind = excluded.kind, note = excluded.note"
    " WHERE calendar_days.kind IS DISTINCT FROM excluded.kind"
    " OR calendar_days.note IS DISTINCT FROM excluded.note");
static hl_stmt q_days_remove =
    HL_STMT("DELETE FROM calendar_days WHERE calendar_id = $1::int8 AND day = ANY($2::date[])");
static hl_stmt q_days_count =
    HL_STMT("SELECT count(*) FROM calendar_days WHERE calendar_id = $1::int8");
static hl_stmt q_cal_touch = HL_STMT("UPDATE calendars SET updated_at = now() WHERE id = $1::int8");
static hl_stmt q_cal_get =
    HL_STMT("SELECT " HL_CAL_COLS " FROM calendars c JOIN teams t ON t.id = c.team_id"
            " WHERE c.name = $1");
static hl_stmt q_cal_list =
    HL_STMT("SELECT " HL_CAL_COLS " FROM calendars c JOIN teams t ON t.id = c.team_id"
            " WHERE $1 = '' OR t.name = $1 ORDER BY c.name");
static hl_stmt q_cal_days =
    HL_STMT("SELECT calendar_id, to_char(day, 'YYYY-MM-DD'), kind, note FROM calendar_days"
            " WHERE calendar_id = ANY($1::int8[]) AND ($2 = '' OR day >= $2::date)"
            " AND ($3 = '' OR day <= $3::date) ORDER BY calendar_id, day");
/* An active task whose current spec names the calendar. */
static hl_stmt q_cal_users =
    HL_STMT("SELECT t.name FROM tasks t JOIN task_versions v ON v.task_id = t.id"
            " AND v.version = t.current_version WHERE t.active AND v.spec ->> 'calendar' = $1"
            " ORDER BY t.name LIMIT 1");
static hl_stmt q_cal_delete = HL_STMT("DELETE FROM calendars WHERE name = $1 RETURNING id");

/* ------------------------------------------------------------ checks */

/* The days as a JSON array for q_days_add; ORR_EINVAL naming
 * "<field>[i].day" / ".kind" / ".note". */
static orr_status hl_cal_days_json(orr_arena *a, const char *field,
                                   Orrery__Halley__V1__CalendarDay *const *days, size_t n,
                                   const char **out, orr_err *err)
{
    if (n > ORR_CAL_MAX_DAYS)
        return orr_err_set(err, ORR_EINVAL, field, "at most %d days", ORR_CAL_MAX_DAYS);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const Orrery__Halley__V1__CalendarDay *d = days[i];
        int64_t day;
        const char *kind = d->kind && d->kind[0] ? d->kind : "excluded";
        const char *bad = NULL, *why = NULL;
        if (orr_cal_parse_date(d->day, &day, err) != ORR_OK)
            bad = "day", why = "must be a date YYYY-MM-DD";
        else if (strcmp(kind, "excluded") != 0 && strcmp(kind, "included") != 0)
            bad = "kind", why = "must be excluded or included";
        else if (d->note && d->note[0] && !hl_is_text(d->note, HL_CAL_NOTE_MAX))
            bad = "note", why = "must be at most 200 characters without control characters";
        if (bad) {
            json_decref(arr);
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "%s[%zu].%s", field, i, bad),
                               "%s", why);
        }
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "day", d->day, "kind", kind, "note",
                                             d->note ? d->note : ""));
    }
    char *txt = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    *out = orr_arena_strdup(a, txt);
    free(txt);
    return ORR_OK;
}

/* "{1,2,3}" of the weekdays; ORR_EINVAL (field "weekdays"). */
static orr_status hl_cal_weekdays(orr_arena *a, const int32_t *w, size_t n, const char **out,
                                  orr_err *err)
{
    unsigned seen = 0;
    char buf[32] = "{";
    size_t o = 1;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < 1 || w[i] > 7 || (seen >> w[i]) & 1u)
            return orr_err_set(err, ORR_EINVAL, "weekdays",
                               "must be distinct ISO weekdays 1 (Monday) to 7 (Sunday)");
        seen |= 1u << w[i];
    }
    for (int d = 1; d <= 7; d++)
        if ((seen >> d) & 1u)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%d", o > 1 ? "," : "", d);
    snprintf(buf + o, sizeof buf - o, "}");
    *out = orr_arena_strdup(a, buf);
    return ORR_OK;
}

/* ------------------------------------------------------------ reads */

static void hl_cal_fill(orr_arena *a, const PGresult *r, int row, Orrery__Halley__V1__Calendar *c)
{
    orrery__halley__v1__calendar__init(c);
    c->id = hl_val_i64(r, row, 0);
    c->name = (char *)hl_val(r, row, 1);
    c->team = (char *)hl_val(r, row, 2);
    c->timezone = (char *)hl_val(r, row, 3);
    c->description = (char *)hl_val(r, row, 4);
    const char *w = hl_val(r, row, 5);
    c->weekdays = hl_alloc_n(a, sizeof *c->weekdays, 7);
    for (const char *p = w; *p; p++)
        if (*p >= '1' && *p <= '7' && c->n_weekdays < 7)
            c->weekdays[c->n_weekdays++] = *p - '0';
    c->created_by = (char *)hl_val(r, row, 6);
    c->created_at_ms = hl_val_i64(r, row, 7);
    c->updated_at_ms = hl_val_i64(r, row, 8);
    c->days_count = (int32_t)hl_val_i64(r, row, 9);
}

/* Attach the days of result d (rows ordered by calendar id) to the n calendars. */
static void hl_cal_attach_days(orr_arena *a, const PGresult *d,
                               Orrery__Halley__V1__Calendar *const *cals, size_t n)
{
    int rows = PQntuples(d);
    Orrery__Halley__V1__CalendarDay *all = hl_alloc_n(a, sizeof *all, (size_t)rows);
    int row = 0;
    for (size_t i = 0; i < n; i++) {
        Orrery__Halley__V1__Calendar *c = cals[i];
        int first = row;
        while (row < rows && hl_val_i64(d, row, 0) < c->id)
            row++;
        first = row;
        while (row < rows && hl_val_i64(d, row, 0) == c->id)
            row++;
        c->days_included = 1;
        c->n_days = (size_t)(row - first);
        c->days = hl_alloc_n(a, sizeof *c->days, c->n_days);
        for (int k = first; k < row; k++) {
            Orrery__Halley__V1__CalendarDay *x = &all[k];
            orrery__halley__v1__calendar_day__init(x);
            x->day = (char *)hl_val(d, k, 1);
            x->kind = (char *)hl_val(d, k, 2);
            x->note = (char *)hl_val(d, k, 3);
            c->days[k - first] = x;
        }
    }
}

static orr_status hl_cal_read_days(hl_conn *c, orr_arena *a,
                                   Orrery__Halley__V1__Calendar *const *cals, size_t n,
                                   const char *from, const char *to, orr_err *err)
{
    int64_t *ids = hl_alloc_n(a, sizeof *ids, n);
    for (size_t i = 0; i < n; i++)
        ids[i] = cals[i]->id;
    /* ids ascending for the merge in hl_cal_attach_days */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int64_t x = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = x;
        }
    const char *p[3] = {hl_id_array(a, ids, n), from ? from : "", to ? to : ""};
    PGresult *d = NULL;
    orr_status s = hl_db_query(c, a, &q_cal_days, 3, p, &d, err);
    if (s != ORR_OK)
        return s;
    /* attach in id order, whatever the order of cals */
    Orrery__Halley__V1__Calendar **by_id = hl_alloc_n(a, sizeof *by_id, n);
    memcpy(by_id, cals, n * sizeof *by_id);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && by_id[j - 1]->id > by_id[j]->id; j--) {
            Orrery__Halley__V1__Calendar *x = by_id[j];
            by_id[j] = by_id[j - 1];
            by_id[j - 1] = x;
        }
    hl_cal_attach_days(a, d, by_id, n);
    return ORR_OK;
}

static orr_status hl_cal_get(hl_conn *c, orr_arena *a, const char *name, int with_days,
                             const char *from, const char *to, Orrery__Halley__V1__Calendar **out,
                             orr_err *err)
{
    const char *p[1] = {name};
    PGresult *r = NULL;
    orr_status s = hl_db_query(c, a, &q_cal_get, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no calendar named \"%s\"", name);
    Orrery__Halley__V1__Calendar *cal = orr_arena_alloc(a, sizeof *cal);
    hl_cal_fill(a, r, 0, cal);
    if (with_days && (s = hl_cal_read_days(c, a, &cal, 1, from, to, err)) != ORR_OK)
        return s;
    *out = cal;
    return ORR_OK;
}

HL_UNARY(hl_api_get_calendar)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetCalendarRequest);
    if (!hl_is_name(rq->name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    int64_t d;
    if (rq->from[0] && orr_cal_parse_date(rq->from, &d, err) != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, "from", "must be a date YYYY-MM-DD");
    if (rq->to[0] && orr_cal_parse_date(rq->to, &d, err) != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, "to", "must be a date YYYY-MM-DD");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__Calendar *cal = NULL;
    s = hl_cal_get(c, a, rq->name, rq->with_days, rq->from, rq->to, &cal, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &cal->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_calendars)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListCalendarsRequest);
    if (rq->team[0] && !hl_is_name(rq->team, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "team", "must be " ORR_NAME_RULE);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {rq->team};
    PGresult *r = NULL;
    Orrery__Halley__V1__ListCalendarsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_calendars_response__init(o);
    if ((s = hl_db_query(c, a, &q_cal_list, 1, p, &r, err)) == ORR_OK) {
        int n = PQntuples(r);
        o->n_calendars = (size_t)n;
        o->calendars = hl_alloc_n(a, sizeof *o->calendars, (size_t)n);
        Orrery__Halley__V1__Calendar *cs = hl_alloc_n(a, sizeof *cs, (size_t)n);
        for (int i = 0; i < n; i++) {
            hl_cal_fill(a, r, i, &cs[i]);
            o->calendars[i] = &cs[i];
        }
        if (rq->with_days && n > 0)
            s = hl_cal_read_days(c, a, o->calendars, (size_t)n, NULL, NULL, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ writes */

static orr_status hl_cal_changed(hl_conn *c, orr_arena *a, const char *actor, const char *action,
                                 const char *name, const char *detail, orr_err *err)
{
    const char *payload = orr_arena_sprintf(a, "{\"calendar\":%s}", hl_jstr(a, name));
    orr_status s = hl_audit(c, a, actor, action, orr_arena_sprintf(a, "calendar:%s", name),
                            detail ? detail : payload, err);
    if (s == ORR_OK)
        s = hl_emit(c, a, "calendar.changed", 0, 0, NULL, payload, NULL, err);
    return s;
}

HL_UNARY(hl_api_put_calendar)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutCalendarRequest);
    const Orrery__Halley__V1__Calendar *in = rq->calendar;
    if (!in)
        return orr_err_set(err, ORR_EINVAL, "calendar", "is required");
    if (!hl_is_name(in->name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(in->team, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "team", "must be " ORR_NAME_RULE);
    const char *zone = in->timezone && in->timezone[0] ? in->timezone : "UTC";
    const orr_tz *tz;
    orr_status s = orr_tz_load(zone, &tz, err);
    if (s != ORR_OK)
        return orr_err_set(err, ORR_EINVAL, "timezone", "unknown time zone \"%.80s\"", zone);
    if (in->description[0] && !hl_is_text(in->description, HL_CAL_DESC_MAX))
        return orr_err_set(err, ORR_EINVAL, "description",
                           "must be at most 1000 characters without control characters");
    const char *weekdays = "{}", *days = "[]";
    if ((s = hl_cal_weekdays(a, in->weekdays, in->n_weekdays, &weekdays, err)) != ORR_OK)
        return s;
    if ((rq->create || rq->replace_days) &&
        (s = hl_cal_days_json(a, "days", in->days, in->n_days, &days, err)) != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[6] = {in->name, in->team, zone, in->description, weekdays, rq->actor};
    PGresult *r = NULL, *t = NULL;
    Orrery__Halley__V1__Calendar *out = NULL;
    if ((s = hl_db_begin(c, err)) != ORR_OK)
        goto done;
    if ((s = hl_db_query(c, a, &q_team_exists, 1, &p[1], &t, err)) != ORR_OK)
        goto done;
    if (PQntuples(t) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "team", "no team named \"%s\"", in->team);
        goto done;
    }
    s = hl_db_query(c, a, rq->create ? &q_cal_insert : &q_cal_update, rq->create ? 6 : 5, p, &r,
                    err);
    if (s == ORR_EEXIST) {
        s = orr_err_set(err, ORR_EEXIST, "name", "a calendar named \"%s\" exists", in->name);
        goto done;
    }
    if (s != ORR_OK)
        goto done;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "name", "no calendar named \"%s\"", in->name);
        goto done;
    }
    const char *id = hl_val(r, 0, 0);
    if (rq->replace_days && !rq->create &&
        (s = hl_db_query(c, a, &q_days_clear, 1, &id, NULL, err)) != ORR_OK)
        goto done;
    const char *dp[2] = {id, days};
    if ((rq->create || rq->replace_days) &&
        (s = hl_db_query(c, a, &q_days_add, 2, dp, NULL, err)) != ORR_OK)
        goto done;
    if ((s = hl_cal_changed(c, a, rq->actor, rq->create ? "calendar.create" : "calendar.update",
                            in->name, NULL, err)) != ORR_OK ||
        (s = hl_cal_get(c, a, in->name, 0, NULL, NULL, &out, err)) != ORR_OK)
        goto done;
    s = hl_db_commit(c, err);
done:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &out->base;
    return ORR_OK;
}

HL_UNARY(hl_api_put_calendar_days)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutCalendarDaysRequest);
    if (!hl_is_name(rq->name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    const char *add;
    orr_status s = hl_cal_days_json(a, "add", rq->add, rq->n_add, &add, err);
    if (s != ORR_OK)
        return s;
    if (rq->n_remove > ORR_CAL_MAX_DAYS)
        return orr_err_set(err, ORR_EINVAL, "remove", "at most %d days", ORR_CAL_MAX_DAYS);
    orr_buf rm = ORR_BUF_INIT;
    orr_buf_append_str(&rm, "{");
    for (size_t i = 0; i < rq->n_remove; i++) {
        int64_t d;
        if (orr_cal_parse_date(rq->remove[i], &d, err) != ORR_OK) {
            orr_buf_free(&rm);
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "remove[%zu]", i),
                               "must be a date YYYY-MM-DD");
        }
        orr_buf_appendf(&rm, "%s%s", i ? "," : "", rq->remove[i]);
    }
    orr_buf_append_str(&rm, "}");
    const char *remove = hl_take(a, &rm);
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL, *ra = NULL, *rr = NULL, *rc = NULL;
    Orrery__Halley__V1__PutCalendarDaysResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__put_calendar_days_response__init(o);
    const char *name = rq->name;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_cal_id, 1, &name, &r, err)) != ORR_OK)
        goto done;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "name", "no calendar named \"%s\"", rq->name);
        goto done;
    }
    const char *id = hl_val(r, 0, 0);
    const char *pa[2] = {id, add}, *pr[2] = {id, remove};
    if ((s = hl_db_query(c, a, &q_days_remove, 2, pr, &rr, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_days_add, 2, pa, &ra, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_days_count, 1, &id, &rc, err)) != ORR_OK)
        goto done;
    o->added = (int32_t)atoi(PQcmdTuples(ra));
    o->removed = (int32_t)atoi(PQcmdTuples(rr));
    o->days_count = (int32_t)hl_val_i64(rc, 0, 0);
    if (o->days_count > ORR_CAL_MAX_DAYS) {
        s = orr_err_set(err, ORR_EINVAL, "add", "a calendar holds at most %d days",
                        ORR_CAL_MAX_DAYS);
        goto done;
    }
    const char *detail = orr_arena_sprintf(a, "{\"calendar\":%s,\"added\":%d,\"removed\":%d}",
                                           hl_jstr(a, name), (int)o->added, (int)o->removed);
    if ((s = hl_db_query(c, a, &q_cal_touch, 1, &id, NULL, err)) != ORR_OK ||
        (s = hl_cal_changed(c, a, rq->actor, "calendar.days", name, detail, err)) != ORR_OK)
        goto done;
    s = hl_db_commit(c, err);
done:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_delete_calendar)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__DeleteCalendarRequest);
    if (!hl_is_name(rq->name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *name = rq->name;
    PGresult *u = NULL, *r = NULL;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_cal_id, 1, &name, &r, err)) != ORR_OK)
        goto done;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "name", "no calendar named \"%s\"", name);
        goto done;
    }
    if ((s = hl_db_query(c, a, &q_cal_users, 1, &name, &u, err)) != ORR_OK)
        goto done;
    if (PQntuples(u) > 0) {
        s = orr_err_set(err, ORR_ESTATE, "name", "task \"%s\" uses calendar \"%s\"",
                        hl_val(u, 0, 0), name);
        goto done;
    }
    if ((s = hl_db_query(c, a, &q_cal_delete, 1, &name, NULL, err)) != ORR_OK ||
        (s = hl_cal_changed(c, a, rq->actor, "calendar.delete", name, NULL, err)) != ORR_OK)
        goto done;
    s = hl_db_commit(c, err);
done:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__DeleteCalendarResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__delete_calendar_response__init(o);
    *resp = &o->base;
    return ORR_OK;
}

orr_status hl_calendar_check_spec(hl_conn *c, orr_arena *a, const json_t *spec, orr_err *err)
{
    static hl_stmt q = HL_STMT("SELECT 1 FROM calendars WHERE name = $1");
    const char *name = json_string_value(json_object_get(spec, "calendar"));
    if (!name)
        return ORR_OK;
    PGresult *r = NULL;
    orr_status s = hl_db_query(c, a, &q, 1, &name, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_EINVAL, "spec.calendar", "no calendar named \"%.128s\"", name);
    return ORR_OK;
}

static void hl_cal_free_cb(void *p)
{
    orr_cal_free(p);
}

orr_status hl_calendar_of_task(hl_conn *c, orr_arena *a, int64_t task_id, const orr_cal **out,
                               orr_cal_policy *policy, orr_err *err)
{
    static hl_stmt q_task_cal = HL_STMT(
        "SELECT cl.id, cl.timezone, array_to_string(cl.weekdays, ','),"
        " coalesce(v.spec ->> 'calendar_policy', '')"
        " FROM tasks t JOIN task_versions v ON v.task_id = t.id AND v.version = t.current_version"
        " JOIN calendars cl ON cl.name = v.spec ->> 'calendar' WHERE t.id = $1::int8");
    static hl_stmt q_cal_all_days =
        HL_STMT("SELECT (day - date '1970-01-01')::int8, kind FROM calendar_days"
                " WHERE calendar_id = $1::int8");
    *out = NULL;
    *policy = ORR_CAL_SKIP;
    const char *p[1] = {hl_i64s(a, task_id)};
    PGresult *r = NULL, *d = NULL;
    orr_status s = hl_db_query(c, a, &q_task_cal, 1, p, &r, err);
    if (s != ORR_OK || PQntuples(r) == 0)
        return s;
    unsigned mask = 0;
    for (const char *w = hl_val(r, 0, 2); *w; w++)
        if (*w >= '1' && *w <= '7')
            mask |= 1u << (*w - '0');
    orr_cal *cal;
    if ((s = orr_cal_policy_parse(hl_val(r, 0, 3), policy, err)) != ORR_OK ||
        (s = orr_cal_new(hl_val(r, 0, 1), mask, &cal, err)) != ORR_OK)
        return s;
    orr_arena_on_cleanup(a, hl_cal_free_cb, cal);
    const char *id = hl_val(r, 0, 0);
    if ((s = hl_db_query(c, a, &q_cal_all_days, 1, &id, &d, err)) != ORR_OK)
        return s;
    for (int i = 0; i < PQntuples(d) && s == ORR_OK; i++)
        s = orr_cal_set_day(
            cal, hl_val_i64(d, i, 0),
            strcmp(hl_val(d, i, 1), "included") == 0 ? ORR_CAL_INCLUDED : ORR_CAL_EXCLUDED, err);
    if (s == ORR_OK)
        *out = cal;
    return s;
}

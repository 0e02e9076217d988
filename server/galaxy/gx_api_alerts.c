/*
 * gx_api_alerts.c - alerts over REST: channels, rules, silences and the
 * history of what fired, with its deliveries.
 *
 *   GET/POST        /api/v1/alert-channels          list / create
 *   GET/PUT/DELETE  /api/v1/alert-channels/{id}
 *   POST            /api/v1/alert-channels/{id}/test   a test message now,
 *                   through the outbox like any alert (201: its ids)
 *   GET/POST        /api/v1/alert-rules
 *   GET/PUT/DELETE  /api/v1/alert-rules/{id}
 *   GET/POST        /api/v1/alert-silences           ({rule_id} or {scope_kind,
 *                   scope}; {ends_at} or {duration: "2h"})
 *   DELETE          /api/v1/alert-silences/{id}
 *   GET             /api/v1/alerts                   the history, newest first
 *
 * Who may do what follows tasks: every logged-in user reads; a developer
 * changes what belongs to their teams (gx_require_team), an admin all. A
 * PUT is a merge: members left out keep their values (a channel's config,
 * when given, replaces the stored one, but a secret left out of it is
 * kept). Secrets (a webhook's "secret", an e-mail "password") go in and
 * never come out: answers say "secret_set" / "password_set". halleyd checks
 * every value and names the field ("config.url", "events[0]", ...); the
 * shapes and the silences' times are checked here first.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_config.h"
#include "orr_json.h"

/* ------------------------------------------------------------ JSON shapes */

static json_t *gx_obj_of(const char *text)
{
    json_t *v = text && *text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(v)) {
        json_decref(v);
        v = json_object();
    }
    return v;
}

static json_t *gx_id_or_null(int64_t id)
{
    return id > 0 ? json_integer(id) : json_null();
}

static json_t *gx_str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *gx_channel_json(const HL(AlertChannel) * c)
{
    return json_pack("{s:I,s:s,s:s,s:s,s:o,s:b,s:s,s:o,s:o}", "id", (json_int_t)c->id, "name",
                     c->name, "team", c->team, "kind", c->kind, "config", gx_obj_of(c->config_json),
                     "secret_set", c->secret_set, "created_by", c->created_by, "created_at",
                     gx_json_time(c->created_at_ms), "updated_at", gx_json_time(c->updated_at_ms));
}

static json_t *gx_rule_json(const HL(AlertRule) * r)
{
    json_t *ev = json_array(), *ch = json_array();
    for (size_t i = 0; i < r->n_events; i++)
        json_array_append_new(ev, json_string(r->events[i]));
    for (size_t i = 0; i < r->n_channels; i++)
        json_array_append_new(ch, json_integer(r->channels[i]));
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:o,s:s,s:o,s:i,s:i,s:o,s:b,s:s,s:o,s:o}", "id",
                     (json_int_t)r->id, "name", r->name, "team", r->team, "scope_kind",
                     r->scope_kind, "scope", r->scope, "events", ev, "severity", r->severity,
                     "channels", ch, "quiet_period_s", (int)r->quiet_period_s, "group_window_s",
                     (int)r->group_window_s, "params", gx_obj_of(r->params_json), "enabled",
                     r->enabled, "created_by", r->created_by, "created_at",
                     gx_json_time(r->created_at_ms), "updated_at", gx_json_time(r->updated_at_ms));
}

static json_t *gx_silence_json(const HL(AlertSilence) * s, int64_t now_ms)
{
    return json_pack("{s:I,s:o,s:o,s:o,s:s,s:o,s:o,s:s,s:s,s:o,s:b}", "id", (json_int_t)s->id,
                     "rule_id", gx_id_or_null(s->rule_id), "scope_kind",
                     gx_str_or_null(s->scope_kind), "scope", gx_str_or_null(s->scope), "team",
                     s->team, "starts_at", gx_json_time(s->starts_at_ms), "ends_at",
                     gx_json_time(s->ends_at_ms), "reason", s->reason, "created_by", s->created_by,
                     "created_at", gx_json_time(s->created_at_ms), "active",
                     s->starts_at_ms <= now_ms && now_ms < s->ends_at_ms);
}

static json_t *gx_delivery_json(const HL(AlertDelivery) * d)
{
    return json_pack("{s:I,s:o,s:s,s:i,s:s,s:i,s:o,s:s,s:o,s:i,s:o}", "id", (json_int_t)d->id,
                     "channel_id", gx_id_or_null(d->channel_id), "channel", d->channel_name, "seq",
                     (int)d->seq, "state", d->state, "attempts", (int)d->attempts, "next_at",
                     gx_json_time(d->next_at_ms), "last_error", d->last_error, "delivered_at",
                     gx_json_time(d->delivered_at_ms), "count_sent", (int)d->count_sent,
                     "created_at", gx_json_time(d->created_at_ms));
}

static json_t *gx_alert_json(const HL(Alert) * a)
{
    json_t *ds = json_array();
    for (size_t i = 0; i < a->n_deliveries; i++)
        json_array_append_new(ds, gx_delivery_json(a->deliveries[i]));
    return json_pack("{s:I,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:o,s:i,s:o,s:o,s:s,s:o,"
                     "s:o}",
                     "id", (json_int_t)a->id, "rule_id", gx_id_or_null(a->rule_id), "rule",
                     a->rule_name, "team", a->team, "event", a->event, "severity", a->severity,
                     "dedup_key", a->dedup_key, "scope_kind", a->scope_kind, "scope", a->scope,
                     "task_id", gx_id_or_null(a->task_id), "instance_id",
                     gx_id_or_null(a->instance_id), "summary", a->summary, "details",
                     gx_obj_of(a->details_json), "count", (int)a->count, "first_at",
                     gx_json_time(a->first_at_ms), "last_at", gx_json_time(a->last_at_ms), "state",
                     a->state, "created_at", gx_json_time(a->created_at_ms), "deliveries", ds);
}

/* ------------------------------------------------------------ reads by id */

static HL(AlertChannel) * gx_channel_read(gx_req *req, gx_resp *resp, int64_t id)
{
    HL(ListAlertChannelsRequest) rq = HL_INIT(LIST_ALERT_CHANNELS_REQUEST);
    rq.id = id;
    HL(ListAlertChannelsResponse) * rs;
    if (gx_halley(req, resp, "ListAlertChannels", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return NULL;
    if (rs->n_channels == 0) {
        gx_resp_fail(resp, ORR_ENOTFOUND, "id", "no such channel");
        return NULL;
    }
    return rs->channels[0];
}

static HL(AlertRule) * gx_rule_read(gx_req *req, gx_resp *resp, int64_t id, const char *field)
{
    HL(ListAlertRulesRequest) rq = HL_INIT(LIST_ALERT_RULES_REQUEST);
    rq.id = id;
    HL(ListAlertRulesResponse) * rs;
    if (gx_halley(req, resp, "ListAlertRules", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return NULL;
    if (rs->n_rules == 0) {
        gx_resp_fail(resp, ORR_ENOTFOUND, field, "no such rule");
        return NULL;
    }
    return rs->rules[0];
}

/* ------------------------------------------------------------ channels */

/* Members a client may send back from an answer; they are ignored. */
#define GX_READ_ONLY "id", "created_by", "created_at", "updated_at"

void gx_h_alert_channels_list(gx_req *req, gx_resp *resp)
{
    HL(ListAlertChannelsRequest) rq = HL_INIT(LIST_ALERT_CHANNELS_REQUEST);
    const char *team = gx_req_query(req, "team");
    if (team && !gx_check_name(resp, team, "team"))
        return;
    rq.team = (char *)(team ? team : "");
    HL(ListAlertChannelsResponse) * rs;
    if (gx_halley(req, resp, "ListAlertChannels", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_channels; i++)
        json_array_append_new(items, gx_channel_json(rs->channels[i]));
    gx_page_answer(req, resp, "alert-channels", items, "name", 0);
}

void gx_h_alert_channel_get(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    HL(AlertChannel) *c = id ? gx_channel_read(req, resp, id) : NULL;
    if (c)
        gx_resp_json(resp, 200, gx_channel_json(c));
}

/* POST (cur NULL) or PUT (cur = the stored channel) of a channel. */
static void gx_channel_put(gx_req *req, gx_resp *resp, json_t *body, const HL(AlertChannel) * cur)
{
    static const char *const keys[] = {"name",       "team",       "kind", "config",
                                       "secret_set", GX_READ_ONLY, NULL};
    orr_err e;
    const char *name = cur ? cur->name : NULL, *team = cur ? cur->team : NULL;
    const char *kind = cur ? cur->kind : NULL;
    json_t *config = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "name", !cur, &name, &e) != ORR_OK ||
        orr_json_get_str(body, "", "team", !cur, &team, &e) != ORR_OK ||
        orr_json_get_str(body, "", "kind", !cur, &kind, &e) != ORR_OK ||
        orr_json_get_obj(body, "", "config", !cur, &config, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!gx_check_name(resp, name, "name") || !gx_check_name(resp, team, "team"))
        return;
    if (strcmp(kind, "webhook") != 0 && strcmp(kind, "email") != 0 && strcmp(kind, "chat") != 0) {
        gx_resp_fail(resp, ORR_EINVAL, "kind", "must be webhook, email or chat");
        return;
    }
    if (cur && !gx_require_team(req, resp, cur->team))
        return;
    if (!gx_require_team(req, resp, team))
        return;
    HL(AlertChannel) rq = HL_INIT(ALERT_CHANNEL);
    rq.id = cur ? cur->id : 0;
    rq.name = (char *)name;
    rq.team = (char *)team;
    rq.kind = (char *)kind;
    if (config) {
        char *text = json_dumps(config, JSON_COMPACT);
        rq.config_json = orr_arena_strdup(req->arena, text ? text : "{}");
        free(text);
    } else {
        rq.config_json = cur->config_json; /* without its secret: kept */
    }
    rq.actor = (char *)gx_actor(req);
    HL(AlertChannel) * c;
    if (gx_halley(req, resp, "PutAlertChannel", &rq.base, (ProtobufCMessage **)&c) != ORR_OK)
        return;
    gx_resp_json(resp, cur ? 200 : 201, gx_channel_json(c));
}

void gx_h_alert_channel_create(gx_req *req, gx_resp *resp)
{
    json_t *body = gx_req_json(req, resp);
    if (body)
        gx_channel_put(req, resp, body, NULL);
}

void gx_h_alert_channel_update(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    json_t *body = id ? gx_req_json(req, resp) : NULL;
    HL(AlertChannel) *c = body ? gx_channel_read(req, resp, id) : NULL;
    if (c)
        gx_channel_put(req, resp, body, c);
}

void gx_h_alert_channel_delete(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    HL(AlertChannel) *c = id ? gx_channel_read(req, resp, id) : NULL;
    if (!c || !gx_require_team(req, resp, c->team))
        return;
    HL(DeleteAlertObjectRequest) rq = HL_INIT(DELETE_ALERT_OBJECT_REQUEST);
    rq.id = id;
    rq.actor = (char *)gx_actor(req);
    HL(DeleteAlertObjectResponse) * rs;
    if (gx_halley(req, resp, "DeleteAlertChannel", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    resp->status = 204;
}

void gx_h_alert_channel_test(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    HL(AlertChannel) *c = id ? gx_channel_read(req, resp, id) : NULL;
    if (!c || !gx_require_team(req, resp, c->team))
        return;
    HL(TestAlertChannelRequest) rq = HL_INIT(TEST_ALERT_CHANNEL_REQUEST);
    rq.id = id;
    rq.actor = (char *)gx_actor(req);
    HL(TestAlertChannelResponse) * rs;
    if (gx_halley(req, resp, "TestAlertChannel", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    gx_resp_json(resp, 201,
                 json_pack("{s:I,s:I}", "alert_id", (json_int_t)rs->alert_id, "delivery_id",
                           (json_int_t)rs->delivery_id));
}

/* ------------------------------------------------------------ rules */

void gx_h_alert_rules_list(gx_req *req, gx_resp *resp)
{
    HL(ListAlertRulesRequest) rq = HL_INIT(LIST_ALERT_RULES_REQUEST);
    const char *team = gx_req_query(req, "team");
    if (team && !gx_check_name(resp, team, "team"))
        return;
    int enabled = gx_req_query_bool(req, resp, "enabled", 0);
    if (enabled < 0)
        return;
    rq.team = (char *)(team ? team : "");
    rq.enabled_only = enabled;
    HL(ListAlertRulesResponse) * rs;
    if (gx_halley(req, resp, "ListAlertRules", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_rules; i++)
        json_array_append_new(items, gx_rule_json(rs->rules[i]));
    gx_page_answer(req, resp, "alert-rules", items, "name", 0);
}

void gx_h_alert_rule_get(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    HL(AlertRule) *r = id ? gx_rule_read(req, resp, id, "id") : NULL;
    if (r)
        gx_resp_json(resp, 200, gx_rule_json(r));
}

/* POST (cur NULL: the defaults of a new rule) or PUT (a merge onto cur). */
static void gx_rule_put(gx_req *req, gx_resp *resp, json_t *body, const HL(AlertRule) * cur)
{
    static const char *const keys[] = {
        "name",     "team",           "scope_kind",     "scope",  "events",  "severity",
        "channels", "quiet_period_s", "group_window_s", "params", "enabled", GX_READ_ONLY,
        NULL};
    orr_err e;
    HL(AlertRule) rq = HL_INIT(ALERT_RULE);
    const char *name = cur ? cur->name : NULL, *team = cur ? cur->team : NULL;
    const char *scope_kind = cur ? cur->scope_kind : NULL, *scope = cur ? cur->scope : NULL;
    const char *severity = cur ? cur->severity : "warning";
    int64_t quiet = cur ? cur->quiet_period_s : 300, group = cur ? cur->group_window_s : 1;
    int enabled = cur ? cur->enabled : 1;
    json_t *events = NULL, *channels = NULL, *params = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "name", !cur, &name, &e) != ORR_OK ||
        orr_json_get_str(body, "", "team", !cur, &team, &e) != ORR_OK ||
        orr_json_get_str(body, "", "scope_kind", !cur, &scope_kind, &e) != ORR_OK ||
        orr_json_get_str(body, "", "scope", !cur, &scope, &e) != ORR_OK ||
        orr_json_get_array(body, "", "events", !cur, &events, &e) != ORR_OK ||
        orr_json_get_str(body, "", "severity", 0, &severity, &e) != ORR_OK ||
        orr_json_get_array(body, "", "channels", !cur, &channels, &e) != ORR_OK ||
        orr_json_get_int(body, "", "quiet_period_s", 0, 0, 86400, &quiet, &e) != ORR_OK ||
        orr_json_get_int(body, "", "group_window_s", 0, 0, 3600, &group, &e) != ORR_OK ||
        orr_json_get_obj(body, "", "params", 0, &params, &e) != ORR_OK ||
        orr_json_get_bool(body, "", "enabled", 0, &enabled, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!gx_check_name(resp, name, "name") || !gx_check_name(resp, team, "team"))
        return;
    if (events) {
        if (json_array_size(events) > 32) {
            gx_resp_fail(resp, ORR_EINVAL, "events", "at most 32 events");
            return;
        }
        rq.n_events = json_array_size(events);
        rq.events = orr_arena_alloc(req->arena, sizeof *rq.events * (rq.n_events + 1));
        for (size_t i = 0; i < rq.n_events; i++) {
            const char *v = json_string_value(json_array_get(events, i));
            if (!v) {
                gx_resp_fail(resp, ORR_EINVAL, orr_arena_sprintf(req->arena, "events[%zu]", i),
                             "must be an event name");
                return;
            }
            rq.events[i] = (char *)v;
        }
    } else {
        rq.n_events = cur->n_events;
        rq.events = cur->events;
    }
    if (channels) {
        if (json_array_size(channels) > 32) {
            gx_resp_fail(resp, ORR_EINVAL, "channels", "at most 16 channels");
            return;
        }
        rq.n_channels = json_array_size(channels);
        rq.channels = orr_arena_alloc(req->arena, sizeof *rq.channels * (rq.n_channels + 1));
        for (size_t i = 0; i < rq.n_channels; i++) {
            json_t *v = json_array_get(channels, i);
            if (!json_is_integer(v) || json_integer_value(v) <= 0) {
                gx_resp_fail(resp, ORR_EINVAL, orr_arena_sprintf(req->arena, "channels[%zu]", i),
                             "must be a channel id");
                return;
            }
            rq.channels[i] = json_integer_value(v);
        }
    } else {
        rq.n_channels = cur->n_channels;
        rq.channels = cur->channels;
    }
    if (params) {
        char *text = json_dumps(params, JSON_COMPACT);
        rq.params_json = orr_arena_strdup(req->arena, text ? text : "{}");
        free(text);
    } else {
        rq.params_json = (char *)(cur ? cur->params_json : "{}");
    }
    if (cur && !gx_require_team(req, resp, cur->team))
        return;
    if (!gx_require_team(req, resp, team))
        return;
    rq.id = cur ? cur->id : 0;
    rq.name = (char *)name;
    rq.team = (char *)team;
    rq.scope_kind = (char *)scope_kind;
    rq.scope = (char *)scope;
    rq.severity = (char *)severity;
    rq.quiet_period_s = (int32_t)quiet;
    rq.group_window_s = (int32_t)group;
    rq.enabled = enabled;
    rq.actor = (char *)gx_actor(req);
    HL(AlertRule) * r;
    if (gx_halley(req, resp, "PutAlertRule", &rq.base, (ProtobufCMessage **)&r) != ORR_OK)
        return;
    gx_resp_json(resp, cur ? 200 : 201, gx_rule_json(r));
}

void gx_h_alert_rule_create(gx_req *req, gx_resp *resp)
{
    json_t *body = gx_req_json(req, resp);
    if (body)
        gx_rule_put(req, resp, body, NULL);
}

void gx_h_alert_rule_update(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    json_t *body = id ? gx_req_json(req, resp) : NULL;
    HL(AlertRule) *r = body ? gx_rule_read(req, resp, id, "id") : NULL;
    if (r)
        gx_rule_put(req, resp, body, r);
}

void gx_h_alert_rule_delete(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    HL(AlertRule) *r = id ? gx_rule_read(req, resp, id, "id") : NULL;
    if (!r || !gx_require_team(req, resp, r->team))
        return;
    HL(DeleteAlertObjectRequest) rq = HL_INIT(DELETE_ALERT_OBJECT_REQUEST);
    rq.id = id;
    rq.actor = (char *)gx_actor(req);
    HL(DeleteAlertObjectResponse) * rs;
    if (gx_halley(req, resp, "DeleteAlertRule", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    resp->status = 204;
}

/* ------------------------------------------------------------ silences */

static int64_t gx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gx_h_alert_silences_list(gx_req *req, gx_resp *resp)
{
    int active = gx_req_query_bool(req, resp, "active", 0);
    if (active < 0)
        return;
    HL(ListAlertSilencesRequest) rq = HL_INIT(LIST_ALERT_SILENCES_REQUEST);
    rq.active_only = active;
    HL(ListAlertSilencesResponse) * rs;
    if (gx_halley(req, resp, "ListAlertSilences", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    int64_t now = gx_now_ms();
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_silences; i++)
        json_array_append_new(items, gx_silence_json(rs->silences[i], now));
    gx_page_answer(req, resp, "alert-silences", items, "id", 1);
}

void gx_h_alert_silence_create(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"rule_id", "scope_kind", "scope",  "team", "starts_at",
                                       "ends_at", "duration",   "reason", NULL};
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    orr_err e;
    int64_t rule_id = 0;
    const char *scope_kind = NULL, *scope = NULL, *team = NULL, *starts = NULL, *ends = NULL,
               *duration = NULL, *reason = "";
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_int(body, "", "rule_id", 0, 1, INT64_MAX, &rule_id, &e) != ORR_OK ||
        orr_json_get_str(body, "", "scope_kind", 0, &scope_kind, &e) != ORR_OK ||
        orr_json_get_str(body, "", "scope", 0, &scope, &e) != ORR_OK ||
        orr_json_get_str(body, "", "team", 0, &team, &e) != ORR_OK ||
        orr_json_get_str(body, "", "starts_at", 0, &starts, &e) != ORR_OK ||
        orr_json_get_str(body, "", "ends_at", 0, &ends, &e) != ORR_OK ||
        orr_json_get_str(body, "", "duration", 0, &duration, &e) != ORR_OK ||
        orr_json_get_str(body, "", "reason", 0, &reason, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!rule_id && !scope_kind) {
        gx_resp_fail(resp, ORR_EINVAL, "rule_id", "give a rule_id, or a scope_kind and scope");
        return;
    }
    if (rule_id && (scope_kind || scope)) {
        gx_resp_fail(resp, ORR_EINVAL, "scope_kind", "a silence has a rule or a scope, not both");
        return;
    }
    if (scope_kind && !scope) {
        gx_resp_fail(resp, ORR_EINVAL, "scope", "the name of the %s to silence", scope_kind);
        return;
    }
    if (team && !gx_check_name(resp, team, "team"))
        return;
    int64_t now = gx_now_ms(), start_ms = 0, end_ms = 0;
    if (starts && gx_parse_time(starts, &start_ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "starts_at", "an RFC 3339 time");
        return;
    }
    if (ends && duration) {
        gx_resp_fail(resp, ORR_EINVAL, "duration", "give ends_at or duration, not both");
        return;
    }
    if (ends) {
        if (gx_parse_time(ends, &end_ms) != ORR_OK) {
            gx_resp_fail(resp, ORR_EINVAL, "ends_at", "an RFC 3339 time");
            return;
        }
        if (end_ms <= now) {
            gx_resp_fail(resp, ORR_EINVAL, "ends_at", "is in the past");
            return;
        }
        if (end_ms - now > 366LL * 86400 * 1000) {
            gx_resp_fail(resp, ORR_EINVAL, "ends_at", "at most a year from now");
            return;
        }
    } else if (duration) {
        int64_t ms = 0;
        if (orr_config_parse_duration(duration, &ms) != ORR_OK || ms < 60000 ||
            ms > 366LL * 86400 * 1000) {
            gx_resp_fail(resp, ORR_EINVAL, "duration",
                         "a duration of 1m to 366d, such as 30m, 2h or 1d");
            return;
        }
        end_ms = (start_ms > now ? start_ms : now) + ms;
    } else {
        gx_resp_fail(resp, ORR_EINVAL, "ends_at", "give ends_at or duration");
        return;
    }
    if (start_ms && end_ms <= start_ms) {
        gx_resp_fail(resp, ORR_EINVAL, "ends_at", "must be after starts_at");
        return;
    }
    /* Whose silence it is: the rule's team, the team silenced, or the
     * team given (a developer's only team when there is one). */
    if (rule_id) {
        HL(AlertRule) *r = gx_rule_read(req, resp, rule_id, "rule_id");
        if (!r)
            return;
        team = r->team;
    } else if (strcmp(scope_kind, "team") == 0) {
        team = scope;
    } else if (!team && req->who.role != GX_ROLE_ADMIN && req->who.teams && req->who.teams[0] &&
               !req->who.teams[1]) {
        team = req->who.teams[0];
    }
    if (!team && req->who.role != GX_ROLE_ADMIN) {
        gx_resp_fail(resp, ORR_EINVAL, "team", "the team whose silence this is");
        return;
    }
    if (!gx_require_team(req, resp, team))
        return;
    HL(AlertSilence) rq = HL_INIT(ALERT_SILENCE);
    rq.rule_id = rule_id;
    rq.scope_kind = (char *)(scope_kind ? scope_kind : "");
    rq.scope = (char *)(scope ? scope : "");
    rq.team = (char *)(team ? team : "");
    rq.starts_at_ms = start_ms;
    rq.ends_at_ms = end_ms;
    rq.reason = (char *)reason;
    rq.actor = (char *)gx_actor(req);
    HL(AlertSilence) * s;
    if (gx_halley(req, resp, "PutAlertSilence", &rq.base, (ProtobufCMessage **)&s) != ORR_OK)
        return;
    gx_resp_json(resp, 201, gx_silence_json(s, gx_now_ms()));
}

void gx_h_alert_silence_delete(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(ListAlertSilencesRequest) lq = HL_INIT(LIST_ALERT_SILENCES_REQUEST);
    lq.id = id;
    HL(ListAlertSilencesResponse) * ls;
    if (gx_halley(req, resp, "ListAlertSilences", &lq.base, (ProtobufCMessage **)&ls) != ORR_OK)
        return;
    if (ls->n_silences == 0) {
        gx_resp_fail(resp, ORR_ENOTFOUND, "id", "no such silence");
        return;
    }
    const char *team = ls->silences[0]->team;
    if (!gx_require_team(req, resp, team && *team ? team : NULL))
        return;
    HL(DeleteAlertObjectRequest) rq = HL_INIT(DELETE_ALERT_OBJECT_REQUEST);
    rq.id = id;
    rq.actor = (char *)gx_actor(req);
    HL(DeleteAlertObjectResponse) * rs;
    if (gx_halley(req, resp, "DeleteAlertSilence", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    resp->status = 204;
}

/* ------------------------------------------------------------ history */

void gx_h_alerts_list(gx_req *req, gx_resp *resp)
{
    static const char *const events[] = {"failed",
                                         "retried",
                                         "timed_out",
                                         "killed",
                                         "recovered",
                                         "deadline_start",
                                         "deadline_finish",
                                         "unit_late",
                                         "unit_unreconciled",
                                         "dirty_rows",
                                         "executor_lost",
                                         "pool_starved",
                                         "test",
                                         NULL};
    static const char *const states[] = {"open", "silenced", NULL};
    int64_t limit, rule = 0;
    const char *event = NULL, *state = NULL;
    if (gx_req_query_int(req, resp, "limit", 100, 1, 1000, &limit) ||
        gx_req_query_enum(req, resp, "event", events, &event) ||
        gx_req_query_enum(req, resp, "state", states, &state))
        return;
    const char *v = gx_req_query(req, "rule");
    if (v && gx_parse_id(v, &rule) != 0) {
        gx_resp_fail(resp, ORR_EINVAL, "rule", "a rule id");
        return;
    }
    int64_t since = 0;
    v = gx_req_query(req, "since");
    if (v && gx_parse_time(v, &since) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "since", "an RFC 3339 time");
        return;
    }
    const char *team = gx_req_query(req, "team");
    if (team && !gx_check_name(resp, team, "team"))
        return;
    const char *token = gx_req_query(req, "page_token");
    HL(ListAlertsRequest) rq = HL_INIT(LIST_ALERTS_REQUEST);
    rq.rule_id = rule;
    rq.team = (char *)(team ? team : "");
    rq.event = (char *)(event ? event : "");
    rq.state = (char *)(state ? state : "");
    rq.since_ms = since;
    rq.page_size = (int32_t)limit;
    rq.page_token = (char *)(token ? token : "");
    HL(ListAlertsResponse) * rs;
    if (gx_halley(req, resp, "ListAlerts", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_alerts; i++)
        json_array_append_new(items, gx_alert_json(rs->alerts[i]));
    gx_resp_json(resp, 200,
                 json_pack("{s:o,s:o}", "items", items, "next_page_token",
                           gx_str_or_null(rs->next_page_token)));
}

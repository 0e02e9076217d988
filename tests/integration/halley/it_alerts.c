/*
 * it_alerts.c - halleyd's alert RPCs end to end: channels (config checked
 * per kind naming the field, secrets sealed at rest and never answered,
 * kept or cleared on update), rules (bad input named), grouping (300
 * concurrent raises of one key make one alert counted 300 with one pending
 * delivery per channel), digests after the first message went out, the
 * quiet period, silences of a rule and of a team and disabled rules, the
 * outbox (concurrent claimers never share a delivery, an expired lease is
 * reclaimed and the old holder cannot finish it, retries and failures), the
 * test message of a channel, the history with its deliveries, deletes and
 * the events of every change.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

typedef Orrery__Halley__V1__AlertChannel Channel;
typedef Orrery__Halley__V1__AlertRule Rule;
typedef Orrery__Halley__V1__AlertSilence Silence;
typedef Orrery__Halley__V1__RaiseAlertRequest RaiseReq;
typedef Orrery__Halley__V1__RaiseAlertResponse RaiseRes;
typedef Orrery__Halley__V1__ClaimDeliveriesResponse ClaimRes;

static orr_rpc_client *cl;
static orr_err err;
static hlt_db db;
static hlt_server srv;
static int64_t ch_hook, ch_mail, ch_chat;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static long long sql_count(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long long sql_count(const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = hlt_sql(&db, sql);
    long long n = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return n;
}

/* Put a channel; want the status, and on a refusal the field. Returns the id. */
static int64_t put_channel(int64_t id, const char *name, const char *kind, const char *config,
                           orr_status want, const char *field, char *config_out, size_t n)
{
    Channel rq = ORRERY__HALLEY__V1__ALERT_CHANNEL__INIT;
    rq.id = id;
    rq.name = (char *)name;
    rq.team = "ops";
    rq.kind = (char *)kind;
    rq.config_json = (char *)config;
    rq.actor = "user:ann";
    Channel *c = NULL;
    orr_status s = hlt_call(cl, "PutAlertChannel", &rq, &c, &err);
    HLT_CHECK(s == want, "put channel %s: got %s (%s: %s)", name, orr_status_name(s), err.field,
              err.msg);
    if (field && s != ORR_OK)
        HLT_CHECK(strcmp(err.field, field) == 0, "channel %s: field %s, want %s (%s)", name,
                  err.field, field, err.msg);
    int64_t out = c ? c->id : 0;
    if (c && config_out)
        snprintf(config_out, n, "%s", c->config_json);
    if (c)
        FREE(c);
    return out;
}

static int64_t put_rule(Rule *rq, orr_status want, const char *field)
{
    rq->actor = "user:ann";
    Rule *r = NULL;
    orr_status s = hlt_call(cl, "PutAlertRule", rq, &r, &err);
    HLT_CHECK(s == want, "put rule %s: got %s (%s: %s)", rq->name, orr_status_name(s), err.field,
              err.msg);
    if (field && s != ORR_OK)
        HLT_CHECK(strcmp(err.field, field) == 0, "rule %s: field %s, want %s (%s)", rq->name,
                  err.field, field, err.msg);
    int64_t out = r ? r->id : 0;
    if (r)
        FREE(r);
    return out;
}

static RaiseRes *raise_one(orr_rpc_client *c, int64_t rule, const char *key, int64_t iid,
                           int64_t at_ms, orr_err *e)
{
    RaiseReq rq = ORRERY__HALLEY__V1__RAISE_ALERT_REQUEST__INIT;
    rq.rule_id = rule;
    rq.event = "failed";
    rq.dedup_key = (char *)key;
    rq.scope_kind = "workflow";
    rq.scope = "daily";
    rq.instance_id = iid;
    rq.summary = "workflow daily failed";
    rq.details_json = "{\"cycle\":\"2026-01-01\"}";
    rq.at_ms = at_ms;
    RaiseRes *r = NULL;
    if (hlt_call(c, "RaiseAlert", &rq, &r, e) != ORR_OK)
        return NULL;
    return r;
}

static ClaimRes *claim(orr_rpc_client *c, const char *worker, int max, int64_t lease, orr_err *e)
{
    Orrery__Halley__V1__ClaimDeliveriesRequest rq =
        ORRERY__HALLEY__V1__CLAIM_DELIVERIES_REQUEST__INIT;
    rq.worker = (char *)worker;
    rq.max = max;
    rq.lease_ms = lease;
    ClaimRes *r = NULL;
    if (hlt_call(c, "ClaimDeliveries", &rq, &r, e) != ORR_OK)
        return NULL;
    return r;
}

static orr_status finish(int64_t id, const char *worker, int ok, const char *error,
                         int64_t retry_at)
{
    Orrery__Halley__V1__FinishDeliveryRequest rq =
        ORRERY__HALLEY__V1__FINISH_DELIVERY_REQUEST__INIT;
    rq.id = id;
    rq.worker = (char *)worker;
    rq.ok = ok;
    rq.error = (char *)error;
    rq.retry_at_ms = retry_at;
    Orrery__Halley__V1__FinishDeliveryResponse *r = NULL;
    orr_status s = hlt_call(cl, "FinishDelivery", &rq, &r, &err);
    if (r)
        FREE(r);
    return s;
}

/* ------------------------------------------------------------ channels */

static void test_channels(void)
{
    char cfg[4096];
    ch_hook = put_channel(0, "ops-hook", "webhook",
                          "{\"url\":\"https://hooks.example/in\",\"secret\":\"hmac-key-42\","
                          "\"headers\":{\"X-Env\":\"prod\"},\"timeout_s\":5}",
                          ORR_OK, NULL, cfg, sizeof cfg);
    HLT_CHECK(ch_hook > 0 && !strstr(cfg, "hmac-key-42") && strstr(cfg, "\"secret_set\": true"),
              "the answer hides the secret and says it is set: %s", cfg);
    ch_mail =
        put_channel(0, "ops-mail", "email",
                    "{\"smtp_url\":\"smtp://mail.example:587\",\"starttls\":true,"
                    "\"username\":\"bot\",\"password\":\"pw-99\",\"from\":\"orrery@example.org\","
                    "\"to\":[\"ops@example.org\"]}",
                    ORR_OK, NULL, cfg, sizeof cfg);
    HLT_CHECK(ch_mail > 0 && !strstr(cfg, "pw-99") && strstr(cfg, "\"password_set\": true"),
              "the answer hides the password: %s", cfg);
    ch_chat = put_channel(0, "ops-chat", "chat",
                          "{\"url\":\"https://chat.example/hook\",\"format\":\"teams\"}", ORR_OK,
                          NULL, NULL, 0);
    /* Secrets at rest: not in config, sealed bytes without the clear text. */
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_channels WHERE config::text LIKE '%%hmac-key%%'"
                        " OR config::text LIKE '%%pw-99%%' OR position('hmac-key-42'::bytea IN"
                        " coalesce(secret, ''::bytea)) > 0") == 0,
              "secrets are sealed at rest");
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_channels WHERE secret IS NOT NULL") == 2,
              "two sealed secrets");

    /* Bad input names the field. */
    put_channel(0, "bad1", "webhook", "{\"url\":\"ftp://x\"}", ORR_EINVAL, "config.url", NULL, 0);
    put_channel(0, "bad2", "webhook", "{}", ORR_EINVAL, "config.url", NULL, 0);
    put_channel(0, "bad3", "pager", "{}", ORR_EINVAL, "kind", NULL, 0);
    put_channel(0, "bad4", "email",
                "{\"smtp_url\":\"smtp://m:25\",\"from\":\"a@b\",\"to\":[\"nobody\"]}", ORR_EINVAL,
                "config.to[0]", NULL, 0);
    put_channel(0, "bad5", "email", "{\"smtp_url\":\"smtp://m:25\",\"from\":\"a@b\"}", ORR_EINVAL,
                "config.to", NULL, 0);
    put_channel(0, "bad6", "chat", "{\"url\":\"https://c/h\",\"format\":\"irc\"}", ORR_EINVAL,
                "config.format", NULL, 0);
    put_channel(0, "bad7", "webhook", "{\"url\":\"https://h/x\",\"timeout_s\":0}", ORR_EINVAL,
                "config.timeout_s", NULL, 0);
    put_channel(0, "bad8", "webhook", "{\"url\":\"https://h/x\",\"color\":1}", ORR_EINVAL, NULL,
                NULL, 0);
    put_channel(0, "bad9", "webhook", "[1]", ORR_EINVAL, "config", NULL, 0);
    put_channel(0, "ops-hook", "webhook", "{\"url\":\"https://h/x\"}", ORR_EEXIST, "name", NULL, 0);
    put_channel(9999, "ghost", "webhook", "{\"url\":\"https://h/x\"}", ORR_ENOTFOUND, "id", NULL,
                0);
    {
        Channel rq = ORRERY__HALLEY__V1__ALERT_CHANNEL__INIT;
        rq.name = "noteam";
        rq.team = "nosuchteam";
        rq.kind = "chat";
        rq.config_json = "{\"url\":\"https://c/h\"}";
        Channel *c = NULL;
        orr_status s = hlt_call(cl, "PutAlertChannel", &rq, &c, &err);
        HLT_CHECK(s == ORR_ENOTFOUND && strcmp(err.field, "team") == 0, "unknown team: %s %s",
                  orr_status_name(s), err.field);
        if (c)
            FREE(c);
    }

    /* Update: a secret left out is kept, "" removes it. */
    put_channel(ch_hook, "ops-hook", "webhook", "{\"url\":\"https://hooks.example/v2\"}", ORR_OK,
                NULL, cfg, sizeof cfg);
    HLT_CHECK(strstr(cfg, "\"secret_set\": true") && strstr(cfg, "/v2"), "secret kept: %s", cfg);
    put_channel(ch_chat, "ops-chat", "chat", "{\"url\":\"https://chat.example/hook2\"}", ORR_OK,
                NULL, cfg, sizeof cfg);
    int64_t tmp = put_channel(0, "tmp-hook", "webhook",
                              "{\"url\":\"https://h/x\",\"secret\":\"s\"}", ORR_OK, NULL, NULL, 0);
    put_channel(tmp, "tmp-hook", "webhook", "{\"url\":\"https://h/x\",\"secret\":\"\"}", ORR_OK,
                NULL, cfg, sizeof cfg);
    HLT_CHECK(strstr(cfg, "\"secret_set\": false") != NULL, "secret removed: %s", cfg);

    Orrery__Halley__V1__ListAlertChannelsRequest lr =
        ORRERY__HALLEY__V1__LIST_ALERT_CHANNELS_REQUEST__INIT;
    lr.team = "ops";
    Orrery__Halley__V1__ListAlertChannelsResponse *l = NULL;
    HLT_CHECK(hlt_call(cl, "ListAlertChannels", &lr, &l, &err) == ORR_OK && l->n_channels == 4,
              "list channels: %s", err.msg);
    for (size_t i = 0; l && i < l->n_channels; i++)
        HLT_CHECK(!strstr(l->channels[i]->config_json, "hmac-key-42") &&
                      !strstr(l->channels[i]->config_json, "pw-99"),
                  "listing hides secrets");
    if (l)
        FREE(l);
    Orrery__Halley__V1__DeleteAlertObjectRequest dr =
        ORRERY__HALLEY__V1__DELETE_ALERT_OBJECT_REQUEST__INIT;
    dr.id = tmp;
    Orrery__Halley__V1__DeleteAlertObjectResponse *dres = NULL;
    HLT_CHECK(hlt_call(cl, "DeleteAlertChannel", &dr, &dres, &err) == ORR_OK, "delete unused");
    if (dres)
        FREE(dres);
    dres = NULL;
    HLT_CHECK(hlt_call(cl, "DeleteAlertChannel", &dr, &dres, &err) == ORR_ENOTFOUND,
              "delete twice: not found");
}

/* ------------------------------------------------------------ rules */

static int64_t rule_main, rule_quick;

static void test_rules(void)
{
    char *ev_failed[] = {"failed", "timed_out"};
    int64_t chans[] = {ch_hook, ch_mail};
    Rule r = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
    r.name = "daily-failures";
    r.team = "ops";
    r.scope_kind = "workflow";
    r.scope = "daily";
    r.n_events = 2;
    r.events = ev_failed;
    r.severity = "critical";
    r.n_channels = 2;
    r.channels = chans;
    r.quiet_period_s = 300;
    r.group_window_s = 0;
    r.enabled = 1;
    rule_main = put_rule(&r, ORR_OK, NULL);
    HLT_CHECK(rule_main > 0, "rule created");

    Rule b = r;
    b.name = "bad";
    char *ev_bad[] = {"exploded"};
    b.events = ev_bad;
    b.n_events = 1;
    put_rule(&b, ORR_EINVAL, "events[0]");
    b = r;
    b.name = "bad";
    b.n_events = 0;
    put_rule(&b, ORR_EINVAL, "events");
    b = r;
    b.name = "bad";
    b.scope_kind = "galaxy";
    put_rule(&b, ORR_EINVAL, "scope_kind");
    b = r;
    b.name = "bad";
    b.n_channels = 0;
    put_rule(&b, ORR_EINVAL, "channels");
    int64_t ghost[] = {ch_hook, 987654};
    b = r;
    b.name = "bad";
    b.channels = ghost;
    put_rule(&b, ORR_EINVAL, "channels[1]");
    b = r;
    b.name = "bad";
    b.quiet_period_s = 90000;
    put_rule(&b, ORR_EINVAL, "quiet_period_s");
    b = r;
    b.name = "bad";
    b.group_window_s = -1;
    put_rule(&b, ORR_EINVAL, "group_window_s");
    b = r;
    b.name = "bad";
    b.severity = "loud";
    put_rule(&b, ORR_EINVAL, "severity");
    b = r;
    b.name = "bad";
    b.params_json = "{\"each_attempt\":\"yes\"}";
    put_rule(&b, ORR_EINVAL, "params.each_attempt");
    b.params_json = "{\"unit_deadline_minutes\":-1}";
    put_rule(&b, ORR_EINVAL, "params.unit_deadline_minutes");
    b.params_json = "{\"unit_deadline_minutes\":\"1h\"}";
    put_rule(&b, ORR_EINVAL, "params.unit_deadline_minutes");
    b = r;
    b.name = "bad";
    char *ev_dirty[] = {"dirty_rows"};
    b.events = ev_dirty;
    b.n_events = 1;
    put_rule(&b, ORR_EINVAL, "params.dirty_rows");
    b.params_json = "{\"dirty_rows\":10}";
    b.name = "dirty";
    HLT_CHECK(put_rule(&b, ORR_OK, NULL) > 0, "dirty_rows with its threshold");
    b = r;
    put_rule(&b, ORR_EEXIST, "name");

    /* A quick rule: quiet period of 1 s, one channel. */
    int64_t one[] = {ch_chat};
    Rule q = r;
    q.name = "quick";
    q.channels = one;
    q.n_channels = 1;
    q.quiet_period_s = 1;
    q.group_window_s = 5;
    rule_quick = put_rule(&q, ORR_OK, NULL);

    Orrery__Halley__V1__ListAlertRulesRequest lr =
        ORRERY__HALLEY__V1__LIST_ALERT_RULES_REQUEST__INIT;
    lr.id = rule_main;
    Orrery__Halley__V1__ListAlertRulesResponse *l = NULL;
    HLT_CHECK(hlt_call(cl, "ListAlertRules", &lr, &l, &err) == ORR_OK && l->n_rules == 1 &&
                  l->rules[0]->n_channels == 2 && l->rules[0]->channels[1] == ch_mail &&
                  l->rules[0]->n_events == 2 && strcmp(l->rules[0]->events[1], "timed_out") == 0 &&
                  strcmp(l->rules[0]->severity, "critical") == 0,
              "rule read back: %s", err.msg);
    if (l)
        FREE(l);

    /* A channel a rule names cannot go. */
    Orrery__Halley__V1__DeleteAlertObjectRequest dr =
        ORRERY__HALLEY__V1__DELETE_ALERT_OBJECT_REQUEST__INIT;
    dr.id = ch_hook;
    Orrery__Halley__V1__DeleteAlertObjectResponse *dres = NULL;
    HLT_CHECK(hlt_call(cl, "DeleteAlertChannel", &dr, &dres, &err) == ORR_ESTATE &&
                  strstr(err.msg, "daily-failures"),
              "channel in use: %s", err.msg);
}

/* ------------------------------------------------------------ grouping */

#define RAISERS 10
#define RAISES  30 /* each: 300 in all */

static int64_t raised_ids[RAISERS * RAISES];
static int raised_created[RAISERS * RAISES];

static void *raiser(void *arg)
{
    int t = (int)(intptr_t)arg;
    orr_err e = {0};
    for (int i = 0; i < RAISES; i++) {
        RaiseRes *r = raise_one(cl, rule_main, "failed:workflow:daily:1767225600000",
                                1000 + t * RAISES + i, 0, &e);
        raised_ids[t * RAISES + i] = r ? r->alert_id : -1;
        raised_created[t * RAISES + i] = r ? r->created : -1;
        if (r)
            FREE(r);
    }
    return NULL;
}

static void test_grouping(void)
{
    pthread_t th[RAISERS];
    for (int t = 0; t < RAISERS; t++)
        pthread_create(&th[t], NULL, raiser, (void *)(intptr_t)t);
    for (int t = 0; t < RAISERS; t++)
        pthread_join(th[t], NULL);
    int created = 0, same = 1;
    for (int i = 0; i < RAISERS * RAISES; i++) {
        created += raised_created[i] == 1;
        same &= raised_ids[i] == raised_ids[0] && raised_ids[i] > 0;
    }
    HLT_CHECK(same && created == 1, "300 raises: one alert (created %d, same %d)", created, same);
    int64_t aid = raised_ids[0];
    HLT_CHECK(sql_count("SELECT count FROM alerts WHERE id = %lld", (long long)aid) == 300,
              "counted 300");
    HLT_CHECK(sql_count("SELECT count(*) FROM alerts") == 1, "one alert row");
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE alert_id = %lld AND state ="
                        " 'pending' AND seq = 1",
                        (long long)aid) == 2,
              "one pending delivery per channel");
    HLT_CHECK(sql_count("SELECT jsonb_array_length(details->'instance_ids') FROM alerts WHERE id ="
                        " %lld",
                        (long long)aid) == 20,
              "20 example instances kept");
    HLT_CHECK(sql_count("SELECT count(*) FROM alerts WHERE details->>'cycle' = '2026-01-01'") == 1,
              "details kept");

    /* The sender claims both; count_sent is the count then; the channel's
     * secret comes with it. */
    ClaimRes *c = claim(cl, "w1", 10, 60000, &err);
    HLT_CHECK(c && c->n_deliveries == 2, "claimed the two: %s", err.msg);
    int64_t d_hook = 0, d_mail = 0;
    for (size_t i = 0; c && i < c->n_deliveries; i++) {
        Orrery__Halley__V1__AlertDelivery *d = c->deliveries[i];
        HLT_CHECK(d->count_sent == 300 && d->attempts == 1 && d->alert && d->alert->count == 300 &&
                      strcmp(d->alert->rule_name, "daily-failures") == 0 &&
                      strcmp(d->alert->severity, "critical") == 0 && d->seq == 1,
                  "claimed delivery %lld", (long long)d->id);
        if (d->channel_id == ch_hook) {
            d_hook = d->id;
            HLT_CHECK(strstr(d->channel->config_json, "hmac-key-42") != NULL,
                      "the sender gets the webhook secret: %s", d->channel->config_json);
        } else {
            d_mail = d->id;
            HLT_CHECK(strstr(d->channel->config_json, "pw-99") != NULL,
                      "the sender gets the password: %s", d->channel->config_json);
        }
    }
    if (c)
        FREE(c);
    HLT_CHECK(d_hook && d_mail, "both channels claimed");
    HLT_CHECK(finish(d_hook, "w1", 1, "", 0) == ORR_OK, "delivered: %s", err.msg);

    /* Another raise: a digest per channel (none is pending), due one quiet
     * period after the previous message. */
    RaiseRes *r = raise_one(cl, rule_main, "failed:workflow:daily:1767225600000", 5000, 0, &err);
    HLT_CHECK(r && r->alert_id == aid && !r->created && r->count == 301, "counted on: %s", err.msg);
    if (r)
        FREE(r);
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE alert_id = %lld AND state ="
                        " 'pending' AND seq = 2",
                        (long long)aid) == 2,
              "a digest per channel");
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries d WHERE alert_id = %lld AND seq = 2"
                        " AND channel_id = %lld AND next_at BETWEEN (SELECT delivered_at FROM"
                        " alert_deliveries WHERE id = %lld) + interval '299 s' AND (SELECT"
                        " delivered_at FROM alert_deliveries WHERE id = %lld) + interval '301 s'",
                        (long long)aid, (long long)ch_hook, (long long)d_hook,
                        (long long)d_hook) == 1,
              "the digest is due a quiet period after the first message");
    r = raise_one(cl, rule_main, "failed:workflow:daily:1767225600000", 5001, 0, &err);
    if (r)
        FREE(r);
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE alert_id = %lld",
                        (long long)aid) == 4,
              "a pending digest takes further raises: no new delivery");
    c = claim(cl, "w1", 10, 60000, &err);
    HLT_CHECK(c && c->n_deliveries == 0, "digests are not due yet");
    if (c)
        FREE(c);
    /* Make the digests due (as time would): they go out with the new count
     * and what the previous message covered. */
    PQclear(hlt_sql(&db, "UPDATE alert_deliveries SET next_at = now() WHERE seq = 2"));
    c = claim(cl, "w1", 10, 60000, &err);
    HLT_CHECK(c && c->n_deliveries == 2 && c->deliveries[0]->count_sent == 302 &&
                  c->deliveries[0]->prev_count_sent == 300,
              "digest covers 302 after 300");
    for (size_t i = 0; c && i < c->n_deliveries; i++)
        finish(c->deliveries[i]->id, "w1", 1, "", 0);
    if (c)
        FREE(c);
    HLT_CHECK(finish(d_mail, "w1", 1, "", 0) == ORR_OK, "first mail delivered late");

    /* The quiet period: a raise more than quiet_period_s after the last one
     * opens a new alert (times given, no waiting). */
    int64_t t0 = hlt_now_ms();
    r = raise_one(cl, rule_quick, "k1", 0, t0, &err);
    int64_t a1 = r ? r->alert_id : 0;
    HLT_CHECK(r && r->created, "quick: new");
    if (r)
        FREE(r);
    r = raise_one(cl, rule_quick, "k1", 0, t0 + 900, &err);
    HLT_CHECK(r && r->alert_id == a1 && r->count == 2, "within the quiet period: counted");
    if (r)
        FREE(r);
    r = raise_one(cl, rule_quick, "k1", 0, t0 + 2500, &err);
    HLT_CHECK(r && r->alert_id != a1 && r->created, "after the quiet period: a new alert");
    if (r)
        FREE(r);
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries d JOIN alerts a ON a.id ="
                        " d.alert_id WHERE a.rule_id = %lld AND d.seq = 1 AND d.next_at ="
                        " a.first_at + interval '5 s'",
                        (long long)rule_quick) == 2,
              "the first message waits group_window_s");

    /* Bad raises. */
    RaiseReq bad = ORRERY__HALLEY__V1__RAISE_ALERT_REQUEST__INIT;
    RaiseRes *br = NULL;
    bad.rule_id = rule_main;
    bad.event = "exploded";
    bad.dedup_key = "k";
    HLT_CHECK(hlt_call(cl, "RaiseAlert", &bad, &br, &err) == ORR_EINVAL &&
                  strcmp(err.field, "event") == 0,
              "unknown event");
    bad.event = "failed";
    bad.dedup_key = "";
    HLT_CHECK(hlt_call(cl, "RaiseAlert", &bad, &br, &err) == ORR_EINVAL &&
                  strcmp(err.field, "dedup_key") == 0,
              "no key");
    bad.dedup_key = "k";
    bad.details_json = "[]";
    HLT_CHECK(hlt_call(cl, "RaiseAlert", &bad, &br, &err) == ORR_EINVAL &&
                  strcmp(err.field, "details_json") == 0,
              "details not an object");
    bad.details_json = "";
    bad.rule_id = 424242;
    HLT_CHECK(hlt_call(cl, "RaiseAlert", &bad, &br, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "rule_id") == 0,
              "no such rule");
}

/* ------------------------------------------------------------ silences */

static int64_t put_silence(int64_t rule, const char *kind, const char *scope, int64_t ends,
                           orr_status want, const char *field)
{
    Silence rq = ORRERY__HALLEY__V1__ALERT_SILENCE__INIT;
    rq.rule_id = rule;
    rq.scope_kind = (char *)kind;
    rq.scope = (char *)scope;
    rq.ends_at_ms = ends;
    rq.reason = "maintenance";
    rq.actor = "user:ann";
    Silence *s = NULL;
    orr_status st = hlt_call(cl, "PutAlertSilence", &rq, &s, &err);
    HLT_CHECK(st == want, "silence: got %s (%s: %s)", orr_status_name(st), err.field, err.msg);
    if (field && st != ORR_OK)
        HLT_CHECK(strcmp(err.field, field) == 0, "silence field %s, want %s", err.field, field);
    int64_t id = s ? s->id : 0;
    if (s && rule)
        HLT_CHECK(strcmp(s->team, "ops") == 0, "a rule's silence has its team");
    if (s)
        FREE(s);
    return id;
}

static void del_silence(int64_t id)
{
    Orrery__Halley__V1__DeleteAlertObjectRequest dr =
        ORRERY__HALLEY__V1__DELETE_ALERT_OBJECT_REQUEST__INIT;
    dr.id = id;
    Orrery__Halley__V1__DeleteAlertObjectResponse *d = NULL;
    HLT_CHECK(hlt_call(cl, "DeleteAlertSilence", &dr, &d, &err) == ORR_OK, "delete silence: %s",
              err.msg);
    if (d)
        FREE(d);
}

static void test_silences(void)
{
    int64_t now = hlt_now_ms();
    put_silence(rule_main, "", "", now - 1000, ORR_EINVAL, "ends_at_ms");
    put_silence(0, "", "", now + 60000, ORR_EINVAL, "scope_kind");
    put_silence(0, "planet", "x", now + 60000, ORR_EINVAL, "scope_kind");
    put_silence(rule_main, "team", "ops", now + 60000, ORR_EINVAL, "scope_kind");
    put_silence(777777, "", "", now + 60000, ORR_ENOTFOUND, "rule_id");

    long long before = sql_count("SELECT count(*) FROM alert_deliveries");
    int64_t s1 = put_silence(rule_main, "", "", now + 3600000, ORR_OK, NULL);
    RaiseRes *r = raise_one(cl, rule_main, "silenced-key", 0, 0, &err);
    HLT_CHECK(r && r->silenced && r->created, "raised under a silence: silenced");
    int64_t sa = r ? r->alert_id : 0;
    if (r)
        FREE(r);
    r = raise_one(cl, rule_main, "silenced-key", 0, 0, &err);
    HLT_CHECK(r && r->silenced && r->alert_id == sa && r->count == 2,
              "counted on the silenced alert");
    if (r)
        FREE(r);
    HLT_CHECK(sql_count("SELECT count(*) FROM alerts WHERE id = %lld AND state = 'silenced'",
                        (long long)sa) == 1,
              "stored as silenced");
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries") == before, "no delivery");
    del_silence(s1);

    /* A silence of the rule's team covers it too. */
    int64_t s2 = put_silence(0, "team", "ops", now + 3600000, ORR_OK, NULL);
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_silences WHERE starts_at <>"
                        " date_trunc('milliseconds', starts_at)") == 0,
              "a silence from now starts on a whole millisecond, as raises are timed");
    r = raise_one(cl, rule_main, "team-silenced", 0, 0, &err);
    HLT_CHECK(r && r->silenced, "a team silence covers the rule");
    if (r)
        FREE(r);
    Orrery__Halley__V1__ListAlertSilencesRequest lr =
        ORRERY__HALLEY__V1__LIST_ALERT_SILENCES_REQUEST__INIT;
    lr.active_only = 1;
    Orrery__Halley__V1__ListAlertSilencesResponse *l = NULL;
    HLT_CHECK(hlt_call(cl, "ListAlertSilences", &lr, &l, &err) == ORR_OK && l->n_silences == 1 &&
                  l->silences[0]->id == s2 && strcmp(l->silences[0]->team, "ops") == 0,
              "the active silence listed");
    if (l)
        FREE(l);
    del_silence(s2);
    /* A silence that starts later does not hold now. */
    Silence later = ORRERY__HALLEY__V1__ALERT_SILENCE__INIT;
    later.scope_kind = "workflow";
    later.scope = "daily";
    later.team = "ops";
    later.starts_at_ms = now + 3600000;
    later.ends_at_ms = now + 7200000;
    Silence *ls = NULL;
    HLT_CHECK(hlt_call(cl, "PutAlertSilence", &later, &ls, &err) == ORR_OK, "later silence");
    if (ls)
        FREE(ls);
    r = raise_one(cl, rule_main, "after-silence", 0, 0, &err);
    HLT_CHECK(r && !r->silenced && r->created, "no silence now: open");
    if (r)
        FREE(r);
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries") == before + 2,
              "open again: one delivery per channel");

    /* A disabled rule records silenced alerts. */
    char *ev[] = {"failed"};
    int64_t ch[] = {ch_chat};
    Rule d = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
    d.name = "disabled";
    d.team = "ops";
    d.scope_kind = "task";
    d.scope = "*";
    d.n_events = 1;
    d.events = ev;
    d.n_channels = 1;
    d.channels = ch;
    d.enabled = 0;
    int64_t rd = put_rule(&d, ORR_OK, NULL);
    r = raise_one(cl, rd, "x", 0, 0, &err);
    HLT_CHECK(r && r->silenced, "disabled rule: silenced");
    if (r)
        FREE(r);
}

/* ------------------------------------------------------------ the outbox */

#define CLAIMERS 4
#define MANY     200
static int64_t claimed[CLAIMERS][MANY];
static int n_claimed[CLAIMERS];

static void *claimer(void *arg)
{
    int t = (int)(intptr_t)arg;
    char worker[16];
    snprintf(worker, sizeof worker, "c%d", t);
    orr_err e = {0};
    for (;;) {
        ClaimRes *c = claim(cl, worker, 7, 60000, &e);
        if (!c)
            break;
        size_t n = c->n_deliveries;
        for (size_t i = 0; i < n && n_claimed[t] < MANY; i++)
            claimed[t][n_claimed[t]++] = c->deliveries[i]->id;
        FREE(c);
        if (n == 0)
            break;
    }
    return NULL;
}

static void test_outbox(void)
{
    char *ev[] = {"failed"};
    int64_t ch[] = {ch_chat};
    Rule b = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
    b.name = "burst";
    b.team = "ops";
    b.scope_kind = "task";
    b.scope = "*";
    b.n_events = 1;
    b.events = ev;
    b.n_channels = 1;
    b.channels = ch;
    b.quiet_period_s = 300;
    b.enabled = 1;
    int64_t rb = put_rule(&b, ORR_OK, NULL);
    /* Everything due so far is taken first, so the burst is alone. */
    PQclear(hlt_sql(&db, "UPDATE alert_deliveries SET state = 'delivered' WHERE state IN"
                         " ('pending', 'sending')"));
    for (int i = 0; i < MANY; i++) {
        char key[32];
        snprintf(key, sizeof key, "failed:task:%d:0", i);
        RaiseRes *r = raise_one(cl, rb, key, 0, 0, &err);
        if (r)
            FREE(r);
    }
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE state = 'pending'") == MANY,
              "%d pending", MANY);
    pthread_t th[CLAIMERS];
    for (int t = 0; t < CLAIMERS; t++)
        pthread_create(&th[t], NULL, claimer, (void *)(intptr_t)t);
    for (int t = 0; t < CLAIMERS; t++)
        pthread_join(th[t], NULL);
    int total = 0, dup = 0;
    for (int t = 0; t < CLAIMERS; t++) {
        total += n_claimed[t];
        for (int i = 0; i < n_claimed[t]; i++)
            for (int u = 0; u < CLAIMERS; u++)
                for (int j = 0; j < n_claimed[u]; j++)
                    if ((u != t || j != i) && claimed[t][i] == claimed[u][j])
                        dup++;
    }
    HLT_CHECK(total == MANY && dup == 0, "concurrent claimers: %d claimed, %d twice", total, dup);
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE state = 'sending' AND"
                        " attempts = 1") == MANY,
              "all sending, one attempt each");
    PQclear(hlt_sql(&db, "UPDATE alert_deliveries SET state = 'delivered' WHERE state ="
                         " 'sending'"));

    /* An expired lease: another worker reclaims it; the first cannot finish. */
    Orrery__Halley__V1__TestAlertChannelRequest tr =
        ORRERY__HALLEY__V1__TEST_ALERT_CHANNEL_REQUEST__INIT;
    tr.id = ch_hook;
    tr.actor = "user:ann";
    Orrery__Halley__V1__TestAlertChannelResponse *tres = NULL;
    HLT_CHECK(hlt_call(cl, "TestAlertChannel", &tr, &tres, &err) == ORR_OK && tres->delivery_id > 0,
              "test message: %s", err.msg);
    int64_t did = tres ? tres->delivery_id : 0;
    if (tres)
        FREE(tres);
    ClaimRes *c = claim(cl, "w1", 5, 1000, &err);
    HLT_CHECK(c && c->n_deliveries == 1 && c->deliveries[0]->id == did &&
                  strcmp(c->deliveries[0]->alert->event, "test") == 0 &&
                  c->deliveries[0]->alert->rule_id == 0 &&
                  strstr(c->deliveries[0]->channel->config_json, "hmac-key-42"),
              "the test message is claimed like any other");
    if (c)
        FREE(c);
    c = claim(cl, "w2", 5, 60000, &err);
    HLT_CHECK(c && c->n_deliveries == 0, "a live lease is not reclaimed");
    if (c)
        FREE(c);
    PQclear(hlt_sql(&db, "UPDATE alert_deliveries SET claimed_until = now() - interval '1 s'"
                         " WHERE state = 'sending'"));
    c = claim(cl, "w2", 5, 60000, &err);
    HLT_CHECK(c && c->n_deliveries == 1 && c->deliveries[0]->id == did &&
                  c->deliveries[0]->attempts == 2,
              "an expired lease is reclaimed (attempt 2)");
    if (c)
        FREE(c);
    HLT_CHECK(finish(did, "w1", 1, "", 0) == ORR_ECONFLICT && strcmp(err.field, "worker") == 0,
              "the old holder cannot finish it");
    int64_t retry = hlt_now_ms() + 3600000;
    HLT_CHECK(finish(did, "w2", 0, "HTTP 503", retry) == ORR_OK, "retry later");
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE id = %lld AND state ="
                        " 'pending' AND last_error = 'HTTP 503' AND next_at > now() + interval"
                        " '50 min'",
                        (long long)did) == 1,
              "pending again at the retry time");
    PQclear(hlt_sql(&db, "UPDATE alert_deliveries SET next_at = now() WHERE state = 'pending'"));
    c = claim(cl, "w2", 5, 60000, &err);
    HLT_CHECK(c && c->n_deliveries == 1 && c->deliveries[0]->attempts == 3, "third attempt");
    if (c)
        FREE(c);
    HLT_CHECK(finish(did, "w2", 0, "HTTP 404", 0) == ORR_OK, "failed");
    HLT_CHECK(sql_count("SELECT count(*) FROM alert_deliveries WHERE id = %lld AND state ="
                        " 'failed' AND last_error = 'HTTP 404'",
                        (long long)did) == 1,
              "failed with its error");
    HLT_CHECK(finish(did, "w2", 1, "", 0) == ORR_ECONFLICT, "a finished delivery stays");
    HLT_CHECK(finish(99999999, "w2", 1, "", 0) == ORR_ENOTFOUND, "no such delivery");
    c = claim(cl, "w2", 0, 60000, &err);
    HLT_CHECK(!c && err.code == ORR_EINVAL && strcmp(err.field, "max") == 0, "max 0 refused");
    c = claim(cl, "w2", 5, 10, &err);
    HLT_CHECK(!c && strcmp(err.field, "lease_ms") == 0, "short lease refused");
}

/* ------------------------------------------------------------ history */

static void test_history(void)
{
    Orrery__Halley__V1__ListAlertsRequest rq = ORRERY__HALLEY__V1__LIST_ALERTS_REQUEST__INIT;
    rq.rule_id = rule_main;
    rq.state = "open";
    Orrery__Halley__V1__ListAlertsResponse *l = NULL;
    HLT_CHECK(hlt_call(cl, "ListAlerts", &rq, &l, &err) == ORR_OK, "list: %s", err.msg);
    int found = 0;
    for (size_t i = 0; l && i < l->n_alerts; i++) {
        Orrery__Halley__V1__Alert *al = l->alerts[i];
        HLT_CHECK(al->rule_id == rule_main && strcmp(al->state, "open") == 0, "filtered");
        if (al->count == 302) {
            found = 1;
            HLT_CHECK(al->n_deliveries == 4 && strcmp(al->deliveries[0]->state, "delivered") == 0 &&
                          al->deliveries[0]->channel_name[0],
                      "history shows the deliveries (%zu)", al->n_deliveries);
        }
    }
    HLT_CHECK(found, "the grouped alert is in the history");
    if (l)
        FREE(l);
    /* Paging: one at a time, newest first, no repeats. */
    Orrery__Halley__V1__ListAlertsRequest pr = ORRERY__HALLEY__V1__LIST_ALERTS_REQUEST__INIT;
    pr.page_size = 1;
    pr.team = "ops";
    int64_t last = 0;
    int pages = 0, ordered = 1;
    char token[512] = "";
    do {
        pr.page_token = token;
        l = NULL;
        if (hlt_call(cl, "ListAlerts", &pr, &l, &err) != ORR_OK)
            break;
        if (l->n_alerts == 1) {
            ordered &= last == 0 || l->alerts[0]->id < last;
            last = l->alerts[0]->id;
        }
        pages++;
        snprintf(token, sizeof token, "%s", l->next_page_token);
        FREE(l);
    } while (token[0] && pages < 1000);
    HLT_CHECK(ordered && pages == sql_count("SELECT count(*) FROM alerts WHERE team = 'ops'"),
              "paged through every alert (%d)", pages);
    pr.page_token = "bogus";
    l = NULL;
    HLT_CHECK(hlt_call(cl, "ListAlerts", &pr, &l, &err) == ORR_EINVAL &&
                  strcmp(err.field, "page_token") == 0,
              "bad token");
    pr.page_token = "";
    pr.state = "loud";
    HLT_CHECK(hlt_call(cl, "ListAlerts", &pr, &l, &err) == ORR_EINVAL &&
                  strcmp(err.field, "state") == 0,
              "bad state");

    /* Deleting a rule keeps its alerts (with the rule's name). */
    Orrery__Halley__V1__DeleteAlertObjectRequest dr =
        ORRERY__HALLEY__V1__DELETE_ALERT_OBJECT_REQUEST__INIT;
    dr.id = rule_quick;
    Orrery__Halley__V1__DeleteAlertObjectResponse *d = NULL;
    HLT_CHECK(hlt_call(cl, "DeleteAlertRule", &dr, &d, &err) == ORR_OK, "delete rule");
    if (d)
        FREE(d);
    HLT_CHECK(sql_count("SELECT count(*) FROM alerts WHERE rule_id IS NULL AND rule_name ="
                        " 'quick'") == 2,
              "its alerts stay");

    /* Every change made an event. */
    HLT_CHECK(sql_count("SELECT count(*) FROM events WHERE kind = 'alert_channel.changed'") >= 8,
              "channel events");
    HLT_CHECK(sql_count("SELECT count(*) FROM events WHERE kind = 'alert_rule.changed'") >= 5,
              "rule events");
    HLT_CHECK(sql_count("SELECT count(*) FROM events WHERE kind = 'alert_silence.changed'") >= 4,
              "silence events");
    HLT_CHECK(sql_count("SELECT count(*) FROM events WHERE kind = 'alert.raised'") >= 3,
              "raise events");
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    if (hlt_start(&srv, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_alerts");
    }
    cl = hlt_client(&srv, NULL);
    hlt_team(cl, "ops");
    test_channels();
    test_rules();
    test_grouping();
    test_silences();
    test_outbox();
    test_history();
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&srv) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_alerts");
}

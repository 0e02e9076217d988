/*
 * hl_api_alerts.c - alert channels, rules, silences, alerts and the outbox
 * of their deliveries.
 *
 * Channels, rules and silences are plain records (put, list, delete), each
 * change one transaction with its audit record and an "alert_*.changed"
 * event, so keplerd reloads what it evaluates. A channel's secret (webhook
 * "secret", email "password") is sealed with secretbox under [halley]
 * secret_key apart from the rest of its config and is only read back in
 * clear by ClaimDeliveries, the sender's call.
 *
 * RaiseAlert groups, in one transaction:
 *   1. the rule is read with whether it is silenced at the raise's time
 *      (disabled, or a silence of the rule, of its scope, of the alert's
 *      scope or of the rule's team);
 *   2. a transaction advisory lock on (rule, dedup key) serialises raises of
 *      one key, so 300 concurrent raises make one alert counted 300 times;
 *   3. the newest alert of (rule, key) in the same state (open/silenced)
 *      whose last_at is within the quiet period counts the raise; otherwise
 *      a new alert is written;
 *   4. an open alert gets, per channel of the rule that has no pending
 *      message of it, a delivery: seq 1 due at t + group_window_s for a new
 *      alert, or a digest (seq + 1) due one quiet period after the channel's
 *      previous message went out. Pending deliveries are locked first, so a
 *      sender that claims one concurrently either took it before (then a
 *      digest follows) or skips it (then it goes out with the new count).
 *
 * The outbox: ClaimDeliveries takes due deliveries (pending and due, or
 * sending with an expired lease) with FOR UPDATE SKIP LOCKED, so two
 * senders never hold the same one; FinishDelivery ends one only for the
 * worker that holds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_name.h"

typedef Orrery__Halley__V1__AlertChannel hl_pb_channel;
typedef Orrery__Halley__V1__AlertRule hl_pb_rule;
typedef Orrery__Halley__V1__AlertSilence hl_pb_silence;
typedef Orrery__Halley__V1__Alert hl_pb_alert;
typedef Orrery__Halley__V1__AlertDelivery hl_pb_delivery;

static const char *const hl__alert_events[] = {"failed",
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
                                               NULL};
static const char *const hl__scope_kinds[] = {"task",   "workflow", "team",
                                              "stream", "executor", NULL};
static const char *const hl__severities[] = {"info", "warning", "critical", NULL};

static int hl__in(const char *s, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------ statements */

/* clang-format off */
/* The config an answer shows: secrets left out, whether one is stored. */
#define HL_CHANNEL_COLS                                                                            \
    "c.id, c.name, c.team, c.kind, (CASE c.kind"                                                   \
    " WHEN 'webhook' THEN c.config || jsonb_build_object('secret_set', c.secret IS NOT NULL)"      \
    " WHEN 'email' THEN c.config || jsonb_build_object('password_set', c.secret IS NOT NULL)"      \
    " ELSE c.config END)::text, c.created_by, " HL_MS("c.created_at") ", "                         \
    HL_MS("c.updated_at") ", c.secret IS NOT NULL"
#define HL_RULE_COLS                                                                               \
    "r.id, r.name, r.team, r.scope_kind, r.scope, array_to_string(r.events, ','), r.severity,"     \
    " array_to_string(r.channels, ','), r.quiet_period_s, r.group_window_s, r.params::text,"       \
    " r.enabled, r.created_by, " HL_MS("r.created_at") ", " HL_MS("r.updated_at")
#define HL_SILENCE_COLS                                                                            \
    "s.id, coalesce(s.rule_id, 0), coalesce(s.scope_kind, ''), coalesce(s.scope, ''), "            \
    HL_MS("s.starts_at") ", " HL_MS("s.ends_at") ", s.reason, s.created_by, "                      \
    HL_MS("s.created_at") ", s.team"
#define HL_ALERT_COLS                                                                              \
    "a.id, coalesce(a.rule_id, 0), a.rule_name, a.team, a.event, a.severity, a.dedup_key,"         \
    " a.scope_kind, a.scope, coalesce(a.task_id, 0), coalesce(a.instance_id, 0), a.summary,"       \
    " a.details::text, a.count, " HL_MS("a.first_at") ", " HL_MS("a.last_at") ", a.state, "        \
    HL_MS("a.created_at")
#define HL_ALERT_NCOLS 18
/* The last column: what the channel's previous message of the alert covered. */
#define HL_DELIVERY_COLS                                                                           \
    "d.id, d.alert_id, coalesce(d.channel_id, 0), d.channel_name, d.seq, d.state, d.attempts, "    \
    HL_MS("d.next_at") ", d.claimed_by, " HL_MS("d.claimed_until") ", d.last_error, "              \
    HL_MS("d.delivered_at") ", d.count_sent, " HL_MS("d.created_at") ", coalesce((SELECT"          \
    " max(p.count_sent) FROM alert_deliveries p WHERE p.alert_id = d.alert_id"                     \
    " AND p.channel_id IS NOT DISTINCT FROM d.channel_id AND p.seq < d.seq), 0)"
/* clang-format on */
#define HL_DELIVERY_NCOLS 15

static hl_stmt q_ch_insert =
    HL_STMT("INSERT INTO alert_channels AS c (name, team, kind, config, secret, created_by)"
            " VALUES ($1, $2, $3, $4::jsonb, CASE WHEN $5 = 'set' THEN decode($6, 'hex') END, $7)"
            " RETURNING " HL_CHANNEL_COLS);
/* $5: 'keep' (the stored secret, unless the kind changes), 'set' ($6 hex),
 * 'clear'. */
static hl_stmt q_ch_update =
    HL_STMT("UPDATE alert_channels AS c SET name = $2, team = $3, kind = $4, config = $5::jsonb,"
            " secret = CASE $6 WHEN 'keep' THEN CASE WHEN c.kind = $4 THEN c.secret END"
            " WHEN 'set' THEN decode($7, 'hex') END, updated_at = now() WHERE c.id = $1::int8"
            " RETURNING " HL_CHANNEL_COLS);
static hl_stmt q_ch_list = HL_STMT("SELECT " HL_CHANNEL_COLS " FROM alert_channels c"
                                   " WHERE ($1 = '' OR c.team = ANY(string_to_array($1, ',')))"
                                   " AND ($2::int8 = 0 OR c.id = $2::int8) ORDER BY c.name");
static hl_stmt q_ch_used =
    HL_STMT("SELECT name FROM alert_rules WHERE $1::int8 = ANY(channels) ORDER BY name LIMIT 1");
static hl_stmt q_ch_fail_pending = HL_STMT(
    "UPDATE alert_deliveries SET state = 'failed', last_error = 'channel deleted',"
    " claimed_until = NULL WHERE channel_id = $1::int8 AND state IN ('pending', 'sending')");
static hl_stmt q_ch_delete =
    HL_STMT("DELETE FROM alert_channels WHERE id = $1::int8 RETURNING name");
static hl_stmt q_ch_test_alert = HL_STMT(
    "WITH ch AS (SELECT id, name, team FROM alert_channels WHERE id = $1::int8),"
    " a AS (INSERT INTO alerts (rule_name, team, event, severity, dedup_key, summary, details,"
    " first_at, last_at) SELECT '', ch.team, 'test', 'info', 'test:' || ch.id || ':' ||"
    " (extract(epoch from now()) * 1000)::int8, 'Test message of channel ' || ch.name,"
    " jsonb_build_object('requested_by', $2::text), now(), now() FROM ch RETURNING id)"
    " INSERT INTO alert_deliveries (alert_id, channel_id, channel_name, seq, next_at)"
    " SELECT a.id, ch.id, ch.name, 1, now() FROM a, ch RETURNING alert_id, id");

static hl_stmt q_rule_insert = HL_STMT(
    "INSERT INTO alert_rules AS r (name, team, scope_kind, scope, events, severity, channels,"
    " quiet_period_s, group_window_s, params, enabled, created_by) VALUES ($1, $2, $3, $4,"
    " string_to_array($5, ','), $6, $7::int8[], $8::int, $9::int, $10::jsonb, $11::bool, $12)"
    " RETURNING " HL_RULE_COLS);
static hl_stmt q_rule_update = HL_STMT(
    "UPDATE alert_rules AS r SET name = $2, team = $3, scope_kind = $4, scope = $5,"
    " events = string_to_array($6, ','), severity = $7, channels = $8::int8[],"
    " quiet_period_s = $9::int, group_window_s = $10::int, params = $11::jsonb,"
    " enabled = $12::bool, updated_at = now() WHERE r.id = $1::int8 RETURNING " HL_RULE_COLS);
static hl_stmt q_rule_list = HL_STMT(
    "SELECT " HL_RULE_COLS " FROM alert_rules r"
    " WHERE ($1 = '' OR r.team = ANY(string_to_array($1, ',')))"
    " AND (NOT $2::bool OR r.enabled) AND ($3::int8 = 0 OR r.id = $3::int8) ORDER BY r.name");
static hl_stmt q_rule_delete =
    HL_STMT("DELETE FROM alert_rules WHERE id = $1::int8 RETURNING name");
/* The first id of $1 that is no channel. */
static hl_stmt q_channels_missing =
    HL_STMT("SELECT x.i FROM unnest($1::int8[]) WITH ORDINALITY AS x(id, i)"
            " WHERE NOT EXISTS (SELECT 1 FROM alert_channels c WHERE c.id = x.id) ORDER BY x.i"
            " LIMIT 1");

static hl_stmt q_sil_rule = HL_STMT("SELECT team FROM alert_rules WHERE id = $1::int8");
/* A silence from now starts at this millisecond: raises are timed in whole
 * milliseconds, so one made later in the same millisecond is covered. */
static hl_stmt q_sil_insert =
    HL_STMT("INSERT INTO alert_silences AS s (rule_id, scope_kind, scope, team, starts_at, ends_at,"
            " reason, created_by) VALUES (nullif($1::int8, 0), nullif($2, ''), nullif($3, ''), $4,"
            " CASE WHEN $5::int8 = 0 THEN date_trunc('milliseconds', now())"
            " ELSE to_timestamp($5::int8 / 1000.0) END,"
            " to_timestamp($6::int8 / 1000.0), $7, $8) RETURNING " HL_SILENCE_COLS);
static hl_stmt q_sil_list =
    HL_STMT("SELECT " HL_SILENCE_COLS " FROM alert_silences s WHERE (NOT $1::bool OR s.ends_at >"
            " now()) AND ($2 = '' OR s.team = ANY(string_to_array($2, ',')))"
            " AND ($3::int8 = 0 OR s.id = $3::int8)"
            " ORDER BY s.ends_at DESC, s.id DESC LIMIT 1000");
static hl_stmt q_sil_delete =
    HL_STMT("DELETE FROM alert_silences WHERE id = $1::int8 RETURNING id");

/* $1 rule, $2 t (ms), $3 alert scope_kind, $4 alert scope, $5 dedup key.
 * Takes the transaction's advisory lock of (rule, key) once the rule is
 * found: raises of one key run one after the other from here on. */
static hl_stmt q_raise_rule = HL_STMT(
    "SELECT r.enabled, r.quiet_period_s, r.group_window_s, r.severity, r.name, r.team,"
    " EXISTS (SELECT 1 FROM alert_silences s WHERE s.starts_at <= to_timestamp($2::int8 / 1000.0)"
    " AND s.ends_at > to_timestamp($2::int8 / 1000.0) AND (s.rule_id = r.id OR (s.rule_id IS NULL"
    " AND ((s.scope_kind = $3 AND s.scope = $4) OR (s.scope_kind = r.scope_kind AND s.scope ="
    " r.scope) OR (s.scope_kind = 'team' AND s.scope = r.team))))),"
    " pg_advisory_xact_lock(1095521357, hashtext(r.id::text || ':' || $5)), cardinality(r.channels)"
    " FROM alert_rules r WHERE r.id = $1::int8");
/* The newest alert of ($4 rule, $5 key) in state $6 whose last raise is
 * within the quiet period ($7 s) of $1 (ms) counts this raise: $2 details
 * merged, $3 instance id kept among up to 20 examples; its pending
 * deliveries are locked and counted (a sender claiming one now either took
 * it first or waits for this transaction). No row: there is none. */
static hl_stmt q_raise_count = HL_STMT(
    "WITH u AS (UPDATE alerts a SET count = a.count + 1, last_at = greatest(a.last_at,"
    " to_timestamp($1::int8 / 1000.0)), details = (a.details || $2::jsonb) ||"
    " jsonb_build_object('instance_ids', CASE WHEN $3::int8 > 0 AND NOT"
    " coalesce(a.details -> 'instance_ids', '[]') @> to_jsonb($3::int8) AND jsonb_array_length("
    "coalesce(a.details -> 'instance_ids', '[]')) < 20 THEN coalesce(a.details -> 'instance_ids',"
    " '[]') || to_jsonb($3::int8) ELSE coalesce(a.details -> 'instance_ids', '[]') END)"
    " WHERE a.id = (SELECT x.id FROM alerts x WHERE x.rule_id = $4::int8 AND x.dedup_key = $5"
    " AND x.state = $6 AND x.last_at >= to_timestamp($1::int8 / 1000.0) - $7::int * interval"
    " '1 second' ORDER BY x.last_at DESC LIMIT 1) RETURNING a.id, a.count),"
    " l AS (SELECT d.id FROM alert_deliveries d JOIN u ON d.alert_id = u.id"
    " WHERE d.state = 'pending' FOR UPDATE OF d)"
    " SELECT u.id, u.count, (SELECT count(*) FROM l) FROM u");
/* $1 rule, $2 rule name, $3 team, $4 event, $5 severity, $6 key, $7 scope
 * kind, $8 scope, $9 task, $10 instance, $11 summary, $12 details, $13 t,
 * $14 state. */
static hl_stmt q_raise_insert = HL_STMT(
    "INSERT INTO alerts (rule_id, rule_name, team, event, severity, dedup_key, scope_kind, scope,"
    " task_id, instance_id, summary, details, first_at, last_at, state) VALUES ($1::int8, $2, $3,"
    " $4, $5, $6, $7, $8, nullif($9::int8, 0), nullif($10::int8, 0), $11, $12::jsonb ||"
    " jsonb_build_object('instance_ids', CASE WHEN $10::int8 > 0 THEN jsonb_build_array($10::int8)"
    " ELSE '[]'::jsonb END), to_timestamp($13::int8 / 1000.0), to_timestamp($13::int8 / 1000.0),"
    " $14) RETURNING id");
/* $1 alert, $2 rule, $3 t, $4 group window (s), $5 quiet period (s), $6
 * task, $7 instance. One delivery per channel of the rule without a pending
 * one of this alert, and an "alert.raised" event when there are any (no
 * NOTIFY in the transaction: hl_events_committed after the commit). Answers
 * the deliveries made and the event id (0: none). */
static hl_stmt q_raise_deliveries = HL_STMT(
    "WITH d AS (INSERT INTO alert_deliveries (alert_id, channel_id, channel_name, seq, next_at)"
    " SELECT $1::int8, c.id, c.name, coalesce(prev.seq, 0) + 1, CASE WHEN prev.seq IS NULL"
    " THEN to_timestamp($3::int8 / 1000.0) + $4::int * interval '1 second' ELSE"
    " greatest(to_timestamp($3::int8 / 1000.0), prev.at + $5::int * interval '1 second') END"
    " FROM alert_rules r CROSS JOIN LATERAL unnest(r.channels) AS ch(id)"
    " JOIN alert_channels c ON c.id = ch.id"
    " LEFT JOIN LATERAL (SELECT max(p.seq) AS seq, max(coalesce(p.delivered_at, p.next_at)) AS at"
    " FROM alert_deliveries p WHERE p.alert_id = $1::int8 AND p.channel_id = c.id"
    " HAVING count(*) > 0) prev ON true"
    " WHERE r.id = $2::int8 AND NOT EXISTS (SELECT 1 FROM alert_deliveries q WHERE q.alert_id ="
    " $1::int8 AND q.channel_id = c.id AND q.state = 'pending') RETURNING id),"
    " ev AS (INSERT INTO events (kind, task_id, instance_id, payload) SELECT 'alert.raised',"
    " nullif($6::int8, 0), nullif($7::int8, 0), jsonb_build_object('alert_id', $1::int8,"
    " 'rule_id', $2::int8, 'deliveries', count(*)) FROM d HAVING count(*) > 0 RETURNING id)"
    " SELECT (SELECT count(*) FROM d), coalesce((SELECT id FROM ev), 0)");

/* $1 worker, $2 max, $3 lease (ms). */
static hl_stmt q_claim = HL_STMT(
    "WITH c AS (SELECT id FROM alert_deliveries WHERE channel_id IS NOT NULL AND ((state ="
    " 'pending' AND next_at <= now()) OR (state = 'sending' AND claimed_until < now()))"
    " ORDER BY next_at, id LIMIT $2::int FOR UPDATE SKIP LOCKED),"
    " u AS (UPDATE alert_deliveries d SET state = 'sending', claimed_by = $1, claimed_until ="
    " now() + $3::int8 * interval '1 millisecond', attempts = d.attempts + 1, count_sent ="
    " (SELECT x.count FROM alerts x WHERE x.id = d.alert_id) FROM c WHERE d.id = c.id"
    " RETURNING d.*)"
    " SELECT " HL_DELIVERY_COLS ", " HL_ALERT_COLS ", ch.id, ch.name, ch.team, ch.kind,"
    " ch.config::text, coalesce(encode(ch.secret, 'hex'), '') FROM u d"
    " JOIN alerts a ON a.id = d.alert_id JOIN alert_channels ch ON ch.id = d.channel_id"
    " ORDER BY d.next_at, d.id");
/* $1 id, $2 worker, $3 ok, $4 error, $5 retry at (ms). */
static hl_stmt q_finish = HL_STMT(
    "UPDATE alert_deliveries SET state = CASE WHEN $3::bool THEN 'delivered' WHEN $5::int8 > 0"
    " THEN 'pending' ELSE 'failed' END, delivered_at = CASE WHEN $3::bool THEN now() END,"
    " next_at = CASE WHEN NOT $3::bool AND $5::int8 > 0 THEN to_timestamp($5::int8 / 1000.0)"
    " ELSE next_at END, last_error = CASE WHEN $3::bool THEN last_error ELSE $4 END,"
    " claimed_until = NULL WHERE id = $1::int8 AND state = 'sending' AND claimed_by = $2"
    " RETURNING id");
static hl_stmt q_delivery_exists = HL_STMT("SELECT 1 FROM alert_deliveries WHERE id = $1::int8");

/* $1 before id, $2 rule, $3 teams, $4 event, $5 state, $6 since (ms), $7
 * limit, $8 id. */
static hl_stmt q_alerts_list = HL_STMT(
    "SELECT " HL_ALERT_COLS " FROM alerts a WHERE ($1::int8 = 0 OR a.id < $1::int8)"
    " AND ($2::int8 = 0 OR a.rule_id = $2::int8) AND ($3 = '' OR a.team ="
    " ANY(string_to_array($3, ','))) AND ($4 = '' OR a.event = $4) AND ($5 = '' OR a.state = $5)"
    " AND ($6::int8 = 0 OR a.last_at >= to_timestamp($6::int8 / 1000.0))"
    " AND ($8::int8 = 0 OR a.id = $8::int8) ORDER BY a.id DESC LIMIT $7::int");
static hl_stmt q_alerts_deliveries =
    HL_STMT("SELECT " HL_DELIVERY_COLS " FROM alert_deliveries d WHERE d.alert_id ="
            " ANY($1::int8[]) ORDER BY d.alert_id, d.channel_name, d.seq, d.id");

/* ------------------------------------------------------------ helpers */

static const char *hl__hex(orr_arena *a, const unsigned char *p, size_t n)
{
    static const char dig[] = "0123456789abcdef";
    char *h = orr_arena_alloc(a, n * 2 + 1);
    for (size_t i = 0; i < n; i++) {
        h[2 * i] = dig[p[i] >> 4];
        h[2 * i + 1] = dig[p[i] & 15];
    }
    h[n * 2] = 0;
    return h;
}

static hl_pb_channel *hl__channel(orr_arena *a, const PGresult *r, int row, int c0)
{
    hl_pb_channel *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__alert_channel__init(o);
    o->id = hl_val_i64(r, row, c0);
    o->name = (char *)hl_val(r, row, c0 + 1);
    o->team = (char *)hl_val(r, row, c0 + 2);
    o->kind = (char *)hl_val(r, row, c0 + 3);
    o->config_json = (char *)hl_val(r, row, c0 + 4);
    o->created_by = (char *)hl_val(r, row, c0 + 5);
    o->created_at_ms = hl_val_i64(r, row, c0 + 6);
    o->updated_at_ms = hl_val_i64(r, row, c0 + 7);
    o->secret_set = hl_val_bool(r, row, c0 + 8);
    return o;
}

/* "1,2,3" -> ids in the arena. */
static int64_t *hl__ids(orr_arena *a, const char *joined, size_t *n)
{
    size_t cnt = 0;
    char **parts = hl_split_names(a, joined, &cnt);
    int64_t *ids = hl_alloc_n(a, sizeof *ids, cnt);
    for (size_t i = 0; i < cnt; i++)
        ids[i] = strtoll(parts[i], NULL, 10);
    *n = cnt;
    return ids;
}

static hl_pb_rule *hl__rule(orr_arena *a, const PGresult *r, int row)
{
    hl_pb_rule *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__alert_rule__init(o);
    o->id = hl_val_i64(r, row, 0);
    o->name = (char *)hl_val(r, row, 1);
    o->team = (char *)hl_val(r, row, 2);
    o->scope_kind = (char *)hl_val(r, row, 3);
    o->scope = (char *)hl_val(r, row, 4);
    o->events = hl_split_names(a, hl_val(r, row, 5), &o->n_events);
    o->severity = (char *)hl_val(r, row, 6);
    o->channels = hl__ids(a, hl_val(r, row, 7), &o->n_channels);
    o->quiet_period_s = (int32_t)hl_val_i64(r, row, 8);
    o->group_window_s = (int32_t)hl_val_i64(r, row, 9);
    o->params_json = (char *)hl_val(r, row, 10);
    o->enabled = hl_val_bool(r, row, 11);
    o->created_by = (char *)hl_val(r, row, 12);
    o->created_at_ms = hl_val_i64(r, row, 13);
    o->updated_at_ms = hl_val_i64(r, row, 14);
    return o;
}

static hl_pb_silence *hl__silence(orr_arena *a, const PGresult *r, int row)
{
    hl_pb_silence *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__alert_silence__init(o);
    o->id = hl_val_i64(r, row, 0);
    o->rule_id = hl_val_i64(r, row, 1);
    o->scope_kind = (char *)hl_val(r, row, 2);
    o->scope = (char *)hl_val(r, row, 3);
    o->starts_at_ms = hl_val_i64(r, row, 4);
    o->ends_at_ms = hl_val_i64(r, row, 5);
    o->reason = (char *)hl_val(r, row, 6);
    o->created_by = (char *)hl_val(r, row, 7);
    o->created_at_ms = hl_val_i64(r, row, 8);
    o->team = (char *)hl_val(r, row, 9);
    return o;
}

static hl_pb_alert *hl__alert(orr_arena *a, const PGresult *r, int row, int c0)
{
    hl_pb_alert *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__alert__init(o);
    o->id = hl_val_i64(r, row, c0);
    o->rule_id = hl_val_i64(r, row, c0 + 1);
    o->rule_name = (char *)hl_val(r, row, c0 + 2);
    o->team = (char *)hl_val(r, row, c0 + 3);
    o->event = (char *)hl_val(r, row, c0 + 4);
    o->severity = (char *)hl_val(r, row, c0 + 5);
    o->dedup_key = (char *)hl_val(r, row, c0 + 6);
    o->scope_kind = (char *)hl_val(r, row, c0 + 7);
    o->scope = (char *)hl_val(r, row, c0 + 8);
    o->task_id = hl_val_i64(r, row, c0 + 9);
    o->instance_id = hl_val_i64(r, row, c0 + 10);
    o->summary = (char *)hl_val(r, row, c0 + 11);
    o->details_json = (char *)hl_val(r, row, c0 + 12);
    o->count = (int32_t)hl_val_i64(r, row, c0 + 13);
    o->first_at_ms = hl_val_i64(r, row, c0 + 14);
    o->last_at_ms = hl_val_i64(r, row, c0 + 15);
    o->state = (char *)hl_val(r, row, c0 + 16);
    o->created_at_ms = hl_val_i64(r, row, c0 + 17);
    return o;
}

static hl_pb_delivery *hl__delivery(orr_arena *a, const PGresult *r, int row)
{
    hl_pb_delivery *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__alert_delivery__init(o);
    o->id = hl_val_i64(r, row, 0);
    o->alert_id = hl_val_i64(r, row, 1);
    o->channel_id = hl_val_i64(r, row, 2);
    o->channel_name = (char *)hl_val(r, row, 3);
    o->seq = (int32_t)hl_val_i64(r, row, 4);
    o->state = (char *)hl_val(r, row, 5);
    o->attempts = (int32_t)hl_val_i64(r, row, 6);
    o->next_at_ms = hl_val_i64(r, row, 7);
    o->claimed_by = (char *)hl_val(r, row, 8);
    o->claimed_until_ms = hl_val_i64(r, row, 9);
    o->last_error = (char *)hl_val(r, row, 10);
    o->delivered_at_ms = hl_val_i64(r, row, 11);
    o->count_sent = (int32_t)hl_val_i64(r, row, 12);
    o->created_at_ms = hl_val_i64(r, row, 13);
    o->prev_count_sent = (int32_t)hl_val_i64(r, row, 14);
    return o;
}

/* Parse text as a JSON object (field names the request field). *out is a
 * new reference. */
static orr_status hl__json_object(const char *text, const char *field, json_t **out, orr_err *err)
{
    const char *t = text[0] ? text : "{}";
    if (strlen(t) > 65536)
        return orr_err_set(err, ORR_EINVAL, field, "at most 64 KiB");
    json_t *doc = NULL;
    if (orr_json_parse(t, strlen(t), &doc, err) != ORR_OK) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return orr_err_set(err, ORR_EINVAL, field, "not valid JSON: %s", m);
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        return orr_err_set(err, ORR_EINVAL, field, "must be a JSON object");
    }
    *out = doc;
    return ORR_OK;
}

static const char *hl__dump(orr_arena *a, const json_t *v)
{
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(v, &b);
    return hl_take(a, &b);
}

/* 1 if s is an http(s) URL without spaces or control characters. */
static int hl__is_url(const char *s, const char *const *schemes)
{
    size_t n = strlen(s);
    if (n > 2048 || !hl_is_printable(s, 2048))
        return 0;
    for (int i = 0; schemes[i]; i++) {
        size_t k = strlen(schemes[i]);
        if (n > k && strncmp(s, schemes[i], k) == 0 && s[k] != '/' && s[k] != ':')
            return 1;
    }
    return 0;
}

/* 1 if s looks like an e-mail address: local@domain, printable. */
static int hl__is_email(const char *s)
{
    const char *at = strchr(s, '@');
    return hl_is_printable(s, 320) && at && at != s && at[1] && !strchr(at + 1, '@') &&
           !strpbrk(s, "<>,;\"");
}

/* Check config (a JSON object) of a channel of kind and take its secret key
 * out: *secret gets its value (borrowed from config's former member, copied
 * into the arena) or NULL when absent. Field names are "config.<key>". */
static orr_status hl__channel_config(orr_arena *a, const char *kind, json_t *config,
                                     const char **secret, orr_err *err)
{
    static const char *const hk_webhook[] = {"url", "secret", "headers", "timeout_s", NULL};
    static const char *const hk_email[] = {"smtp_url", "starttls", "username", "password",
                                           "from",     "to",       NULL};
    static const char *const hk_chat[] = {"url", "format", NULL};
    static const char *const http[] = {"http://", "https://", NULL};
    static const char *const smtp[] = {"smtp://", "smtps://", NULL};
    const char *skey = NULL;
    orr_status s;
    const char *str = NULL;
    *secret = NULL;
    /* The flags an answer adds are accepted back and ignored. */
    json_object_del(config, "secret_set");
    json_object_del(config, "password_set");
    if (strcmp(kind, "webhook") == 0) {
        if ((s = orr_json_allow_keys(config, "config", hk_webhook, err)) != ORR_OK)
            return s;
        if ((s = orr_json_get_str(config, "config", "url", 1, &str, err)) != ORR_OK)
            return s;
        if (!hl__is_url(str, http))
            return orr_err_set(err, ORR_EINVAL, "config.url", "must be an http:// or https:// URL");
        json_t *h = NULL;
        if ((s = orr_json_get_obj(config, "config", "headers", 0, &h, err)) != ORR_OK)
            return s;
        if (h) {
            const char *k;
            json_t *v;
            if (json_object_size(h) > 32)
                return orr_err_set(err, ORR_EINVAL, "config.headers", "at most 32 headers");
            json_object_foreach(h, k, v)
            {
                const char *f = orr_arena_sprintf(a, "config.headers.%s", k);
                if (!hl_is_name(k, 64))
                    return orr_err_set(err, ORR_EINVAL, f, "a header name is " ORR_NAME_RULE);
                if (!json_is_string(v) || !hl_is_text(json_string_value(v), 1024))
                    return orr_err_set(err, ORR_EINVAL, f, "must be a string of 1-1024 characters");
            }
        }
        int64_t t = 10;
        if ((s = orr_json_get_int(config, "config", "timeout_s", 0, 1, 300, &t, err)) != ORR_OK)
            return s;
        skey = "secret";
    } else if (strcmp(kind, "email") == 0) {
        if ((s = orr_json_allow_keys(config, "config", hk_email, err)) != ORR_OK)
            return s;
        if ((s = orr_json_get_str(config, "config", "smtp_url", 1, &str, err)) != ORR_OK)
            return s;
        if (!hl__is_url(str, smtp))
            return orr_err_set(err, ORR_EINVAL, "config.smtp_url",
                               "must be an smtp:// or smtps:// URL");
        int tls = 0;
        if ((s = orr_json_get_bool(config, "config", "starttls", 0, &tls, err)) != ORR_OK)
            return s;
        str = "";
        if ((s = orr_json_get_str(config, "config", "username", 0, &str, err)) != ORR_OK)
            return s;
        if (strlen(str) > 256)
            return orr_err_set(err, ORR_EINVAL, "config.username", "at most 256 bytes");
        if ((s = orr_json_get_str(config, "config", "from", 1, &str, err)) != ORR_OK)
            return s;
        if (!hl__is_email(str))
            return orr_err_set(err, ORR_EINVAL, "config.from", "must be an e-mail address");
        json_t *to = NULL;
        if ((s = orr_json_get_array(config, "config", "to", 1, &to, err)) != ORR_OK)
            return s;
        if (json_array_size(to) < 1 || json_array_size(to) > 50)
            return orr_err_set(err, ORR_EINVAL, "config.to", "1 to 50 addresses");
        size_t i;
        json_t *v;
        json_array_foreach(to, i, v)
        {
            if (!json_is_string(v) || !hl__is_email(json_string_value(v)))
                return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "config.to[%zu]", i),
                                   "must be an e-mail address");
        }
        skey = "password";
    } else if (strcmp(kind, "chat") == 0) {
        if ((s = orr_json_allow_keys(config, "config", hk_chat, err)) != ORR_OK)
            return s;
        if ((s = orr_json_get_str(config, "config", "url", 1, &str, err)) != ORR_OK)
            return s;
        if (!hl__is_url(str, http))
            return orr_err_set(err, ORR_EINVAL, "config.url", "must be an http:// or https:// URL");
        str = "slack";
        if ((s = orr_json_get_str(config, "config", "format", 0, &str, err)) != ORR_OK)
            return s;
        if (strcmp(str, "slack") != 0 && strcmp(str, "teams") != 0)
            return orr_err_set(err, ORR_EINVAL, "config.format", "must be slack or teams");
    } else {
        return orr_err_set(err, ORR_EINVAL, "kind", "must be webhook, email or chat");
    }
    if (skey) {
        json_t *v = json_object_get(config, skey);
        if (v) {
            if (!json_is_string(v) || strlen(json_string_value(v)) > 4096)
                return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "config.%s", skey),
                                   "must be a string of at most 4096 bytes");
            *secret = orr_arena_strdup(a, json_string_value(v));
            json_object_del(config, skey);
        }
    }
    return ORR_OK;
}

/* The end of a change: its audit record and its event, then the commit. */
static orr_status hl__record_commit(hl_conn *c, orr_arena *a, const char *actor, const char *action,
                                    const char *object, const char *kind, const char *payload,
                                    orr_err *err)
{
    orr_status s;
    if ((s = hl_audit(c, a, actor, action, object, payload, err)) == ORR_OK &&
        (s = hl_emit(c, a, kind, 0, 0, NULL, payload, NULL, err)) == ORR_OK)
        s = hl_db_commit(c, err);
    return s;
}

/* Run the change statement st with p on a pooled connection in one
 * transaction with its audit record and event; *r gets the result. */
static orr_status hl__change(hl_ctx *hc, orr_arena *a, hl_stmt *st, int n, const char *const *p,
                             PGresult **r, const char *actor, const char *action,
                             const char *object, const char *kind, const char *payload,
                             orr_err *err)
{
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, st, n, p, r, err)) == ORR_OK) {
        if (PQntuples(*r) == 0)
            s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such %s", object);
        else
            s = hl__record_commit(c, a, actor, action, object, kind, payload, err);
    }
    hl_db_put(hc->db, c);
    return s;
}

/* ------------------------------------------------------------ channels */

HL_UNARY(hl_api_put_alert_channel)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AlertChannel);
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "0 creates, > 0 replaces");
    if (!hl_is_name(rq->name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(rq->team, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "team", "must be " ORR_NAME_RULE);
    if (strcmp(rq->kind, "webhook") != 0 && strcmp(rq->kind, "email") != 0 &&
        strcmp(rq->kind, "chat") != 0)
        return orr_err_set(err, ORR_EINVAL, "kind", "must be webhook, email or chat");
    json_t *config = NULL;
    orr_status s = hl__json_object(rq->config_json, "config", &config, err);
    if (s != ORR_OK)
        return s;
    const char *secret = NULL;
    s = hl__channel_config(a, rq->kind, config, &secret, err);
    const char *cfg = s == ORR_OK ? hl__dump(a, config) : NULL;
    json_decref(config);
    if (s != ORR_OK)
        return s;
    const char *mode = !secret ? "keep" : secret[0] ? "set" : "clear";
    const char *hex = "";
    if (secret && secret[0]) {
        orr_buf sealed = ORR_BUF_INIT;
        hl_secret_seal(hc->secret_key, secret, strlen(secret), &sealed);
        hex = hl__hex(a, (const unsigned char *)sealed.data, sealed.len);
        orr_buf_free(&sealed);
    }
    PGresult *r = NULL;
    const char *payload = orr_arena_sprintf(a, "{\"name\":%s,\"secret_changed\":%s}",
                                            hl_jstr(a, rq->name), secret ? "true" : "false");
    const char *obj = orr_arena_sprintf(a, "alert_channel:%s", rq->name);
    if (rq->id == 0) {
        const char *p[7] = {rq->name, rq->team, rq->kind, cfg, mode, hex, rq->actor};
        s = hl__change(hc, a, &q_ch_insert, 7, p, &r, rq->actor, "alert_channel.create", obj,
                       "alert_channel.changed", payload, err);
    } else {
        const char *p[7] = {hl_i64s(a, rq->id), rq->name, rq->team, rq->kind, cfg, mode, hex};
        s = hl__change(hc, a, &q_ch_update, 7, p, &r, rq->actor, "alert_channel.update", obj,
                       "alert_channel.changed", payload, err);
    }
    if (s == ORR_EEXIST)
        return orr_err_set(err, ORR_EEXIST, "name", "a channel of that name exists");
    if (s == ORR_ENOTFOUND && !err->field[0])
        return orr_err_set(err, ORR_ENOTFOUND, "team", "no such team");
    if (s == ORR_ENOTFOUND)
        return orr_err_set(err, ORR_ENOTFOUND, "id", "no such channel");
    if (s != ORR_OK)
        return s;
    *resp = &hl__channel(a, r, 0, 0)->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_alert_channels)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListAlertChannelsRequest);
    if (strlen(rq->team) > 8192 || (rq->team[0] && !hl_is_printable(rq->team, 8192)))
        return orr_err_set(err, ORR_EINVAL, "team", "team names joined by commas");
    const char *p[2] = {rq->team, hl_i64s(a, rq->id)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_ch_list, 2, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListAlertChannelsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_alert_channels_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_channels = n;
    o->channels = hl_alloc_n(a, sizeof *o->channels, n);
    for (size_t i = 0; i < n; i++)
        o->channels[i] = hl__channel(a, r, (int)i, 0);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_delete_alert_channel)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__DeleteAlertObjectRequest);
    if (rq->id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    const char *p[1] = {hl_i64s(a, rq->id)};
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *used = NULL, *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_ch_used, 1, p, &used, err)) == ORR_OK) {
        if (PQntuples(used) > 0)
            s = orr_err_set(err, ORR_ESTATE, "id", "rule %s sends to this channel",
                            hl_val(used, 0, 0));
        else if ((s = hl_db_query(c, a, &q_ch_fail_pending, 1, p, NULL, err)) == ORR_OK &&
                 (s = hl_db_query(c, a, &q_ch_delete, 1, p, &r, err)) == ORR_OK) {
            if (PQntuples(r) == 0)
                s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such channel");
            else {
                const char *pl =
                    orr_arena_sprintf(a, "{\"id\":%lld,\"deleted\":true}", (long long)rq->id);
                s = hl__record_commit(c, a, rq->actor, "alert_channel.delete",
                                      orr_arena_sprintf(a, "alert_channel:%s", hl_val(r, 0, 0)),
                                      "alert_channel.changed", pl, err);
            }
        }
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__DeleteAlertObjectResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__delete_alert_object_response__init(o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_test_alert_channel)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__TestAlertChannelRequest);
    if (rq->id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    const char *p[2] = {hl_i64s(a, rq->id), rq->actor};
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_ch_test_alert, 2, p, &r, err)) == ORR_OK) {
        if (PQntuples(r) == 0)
            s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such channel");
        else if ((s = hl_emit(
                      c, a, "alert.raised", 0, 0, NULL,
                      orr_arena_sprintf(a, "{\"alert_id\":%s,\"test\":true}", hl_val(r, 0, 0)),
                      NULL, err)) == ORR_OK)
            s = hl_db_commit(c, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__TestAlertChannelResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__test_alert_channel_response__init(o);
    o->alert_id = hl_val_i64(r, 0, 0);
    o->delivery_id = hl_val_i64(r, 0, 1);
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ rules */

/* Check a rule's params: {"dirty_rows": N, "pool_starved_minutes": N,
 * "unit_deadline_minutes": N, "each_attempt": bool}; dirty_rows is required
 * by the event dirty_rows.
 * *canon gets the compact text. */
static orr_status hl__rule_params(orr_arena *a, const hl_pb_rule *rq, const char **canon,
                                  orr_err *err)
{
    static const char *const keys[] = {"dirty_rows", "pool_starved_minutes",
                                       "unit_deadline_minutes", "each_attempt", NULL};
    json_t *doc = NULL;
    orr_status s = hl__json_object(rq->params_json, "params", &doc, err);
    if (s != ORR_OK)
        return s;
    int64_t v = 0;
    int b = 0;
    int wants_dirty = 0;
    for (size_t i = 0; i < rq->n_events; i++)
        wants_dirty |= strcmp(rq->events[i], "dirty_rows") == 0;
    if ((s = orr_json_allow_keys(doc, "params", keys, err)) == ORR_OK &&
        (s = orr_json_get_int(doc, "params", "dirty_rows", wants_dirty, 0, INT64_MAX / 2, &v,
                              err)) == ORR_OK &&
        (s = orr_json_get_int(doc, "params", "pool_starved_minutes", 0, 1, 10080, &v, err)) ==
            ORR_OK &&
        (s = orr_json_get_int(doc, "params", "unit_deadline_minutes", 0, 0, 10080, &v, err)) ==
            ORR_OK &&
        (s = orr_json_get_bool(doc, "params", "each_attempt", 0, &b, err)) == ORR_OK)
        *canon = hl__dump(a, doc);
    json_decref(doc);
    return s;
}

HL_UNARY(hl_api_put_alert_rule)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AlertRule);
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "0 creates, > 0 replaces");
    if (!hl_is_name(rq->name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(rq->team, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "team", "must be " ORR_NAME_RULE);
    if (!hl__in(rq->scope_kind, hl__scope_kinds))
        return orr_err_set(err, ORR_EINVAL, "scope_kind",
                           "must be task, workflow, team, stream or executor");
    if (strcmp(rq->scope, "*") != 0 && !hl_is_printable(rq->scope, 256))
        return orr_err_set(err, ORR_EINVAL, "scope", "a name of the scope's kind, or *");
    if (rq->n_events == 0)
        return orr_err_set(err, ORR_EINVAL, "events", "at least one event");
    for (size_t i = 0; i < rq->n_events; i++) {
        if (!hl__in(rq->events[i], hl__alert_events))
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "events[%zu]", i),
                               "unknown event '%.64s' (failed, retried, timed_out, killed,"
                               " recovered, deadline_start, deadline_finish, unit_late,"
                               " unit_unreconciled, dirty_rows, executor_lost, pool_starved)",
                               rq->events[i]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(rq->events[i], rq->events[j]) == 0)
                return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "events[%zu]", i),
                                   "named twice");
    }
    const char *sev = rq->severity[0] ? rq->severity : "warning";
    if (!hl__in(sev, hl__severities))
        return orr_err_set(err, ORR_EINVAL, "severity", "must be info, warning or critical");
    if (rq->n_channels == 0)
        return orr_err_set(err, ORR_EINVAL, "channels", "at least one channel");
    if (rq->n_channels > 16)
        return orr_err_set(err, ORR_EINVAL, "channels", "at most 16 channels");
    for (size_t i = 0; i < rq->n_channels; i++) {
        if (rq->channels[i] <= 0)
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "channels[%zu]", i),
                               "must be a channel id");
        for (size_t j = 0; j < i; j++)
            if (rq->channels[i] == rq->channels[j])
                return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "channels[%zu]", i),
                                   "named twice");
    }
    if (rq->quiet_period_s < 0 || rq->quiet_period_s > 86400)
        return orr_err_set(err, ORR_EINVAL, "quiet_period_s", "must be 0 to 86400 seconds");
    if (rq->group_window_s < 0 || rq->group_window_s > 3600)
        return orr_err_set(err, ORR_EINVAL, "group_window_s", "must be 0 to 3600 seconds");
    const char *params = NULL;
    orr_status s = hl__rule_params(a, rq, &params, err);
    if (s != ORR_OK)
        return s;
    orr_buf ev = ORR_BUF_INIT;
    for (size_t i = 0; i < rq->n_events; i++)
        orr_buf_appendf(&ev, "%s%s", i ? "," : "", rq->events[i]);
    const char *events = hl_take(a, &ev);
    const char *chans = hl_id_array(a, rq->channels, rq->n_channels);

    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *miss = NULL, *r = NULL;
    const char *pm[1] = {chans};
    const char *payload = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_channels_missing, 1, pm, &miss, err)) == ORR_OK) {
        if (PQntuples(miss) > 0)
            s = orr_err_set(err, ORR_EINVAL,
                            orr_arena_sprintf(a, "channels[%lld]", hl_val_i64(miss, 0, 0) - 1),
                            "no such channel");
        else if (rq->id == 0) {
            const char *p[12] = {rq->name,
                                 rq->team,
                                 rq->scope_kind,
                                 rq->scope,
                                 events,
                                 sev,
                                 chans,
                                 orr_arena_sprintf(a, "%d", rq->quiet_period_s),
                                 orr_arena_sprintf(a, "%d", rq->group_window_s),
                                 params,
                                 rq->enabled ? "true" : "false",
                                 rq->actor};
            s = hl_db_query(c, a, &q_rule_insert, 12, p, &r, err);
        } else {
            const char *p[12] = {hl_i64s(a, rq->id),
                                 rq->name,
                                 rq->team,
                                 rq->scope_kind,
                                 rq->scope,
                                 events,
                                 sev,
                                 chans,
                                 orr_arena_sprintf(a, "%d", rq->quiet_period_s),
                                 orr_arena_sprintf(a, "%d", rq->group_window_s),
                                 params,
                                 rq->enabled ? "true" : "false"};
            s = hl_db_query(c, a, &q_rule_update, 12, p, &r, err);
            if (s == ORR_OK && PQntuples(r) == 0)
                s = orr_err_set(err, ORR_ENOTFOUND, "id", "no such rule");
        }
        if (s == ORR_EEXIST)
            s = orr_err_set(err, ORR_EEXIST, "name", "a rule of that name exists");
        else if (s == ORR_ENOTFOUND && !err->field[0])
            s = orr_err_set(err, ORR_ENOTFOUND, "team", "no such team");
    }
    if (s == ORR_OK) {
        payload =
            orr_arena_sprintf(a, "{\"id\":%s,\"name\":%s}", hl_val(r, 0, 0), hl_jstr(a, rq->name));
        s = hl__record_commit(c, a, rq->actor, rq->id ? "alert_rule.update" : "alert_rule.create",
                              orr_arena_sprintf(a, "alert_rule:%s", rq->name), "alert_rule.changed",
                              payload, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &hl__rule(a, r, 0)->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_alert_rules)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListAlertRulesRequest);
    if (strlen(rq->team) > 8192 || (rq->team[0] && !hl_is_printable(rq->team, 8192)))
        return orr_err_set(err, ORR_EINVAL, "team", "team names joined by commas");
    const char *p[3] = {rq->team, rq->enabled_only ? "true" : "false", hl_i64s(a, rq->id)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_rule_list, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListAlertRulesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_alert_rules_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_rules = n;
    o->rules = hl_alloc_n(a, sizeof *o->rules, n);
    for (size_t i = 0; i < n; i++)
        o->rules[i] = hl__rule(a, r, (int)i);
    *resp = &o->base;
    return ORR_OK;
}

static orr_status hl__delete(hl_ctx *hc, orr_arena *a, hl_stmt *st, int64_t id, const char *actor,
                             const char *what, ProtobufCMessage **resp, orr_err *err)
{
    if (id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    const char *p[1] = {hl_i64s(a, id)};
    PGresult *r = NULL;
    const char *pl = orr_arena_sprintf(a, "{\"id\":%lld,\"deleted\":true}", (long long)id);
    orr_status s = hl__change(hc, a, st, 1, p, &r, actor, orr_arena_sprintf(a, "%s.delete", what),
                              orr_arena_sprintf(a, "%s:%lld", what, (long long)id),
                              orr_arena_sprintf(a, "%s.changed", what), pl, err);
    if (s == ORR_ENOTFOUND)
        return orr_err_set(err, ORR_ENOTFOUND, "id", "no such %s",
                           strcmp(what, "alert_rule") == 0 ? "rule" : "silence");
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__DeleteAlertObjectResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__delete_alert_object_response__init(o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_delete_alert_rule)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__DeleteAlertObjectRequest);
    return hl__delete(hc, a, &q_rule_delete, rq->id, rq->actor, "alert_rule", resp, err);
}

/* ------------------------------------------------------------ silences */

HL_UNARY(hl_api_put_alert_silence)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AlertSilence);
    if (rq->id != 0)
        return orr_err_set(err, ORR_EINVAL, "id", "a silence is created, never replaced");
    if (rq->rule_id < 0)
        return orr_err_set(err, ORR_EINVAL, "rule_id", "must be a rule id");
    if (rq->rule_id > 0 && (rq->scope_kind[0] || rq->scope[0]))
        return orr_err_set(err, ORR_EINVAL, "scope_kind",
                           "a silence has a rule or a scope, not both");
    if (rq->rule_id == 0) {
        if (!hl__in(rq->scope_kind, hl__scope_kinds))
            return orr_err_set(
                err, ORR_EINVAL, "scope_kind",
                "must be task, workflow, team, stream or executor (or give rule_id)");
        if (!hl_is_printable(rq->scope, 256))
            return orr_err_set(err, ORR_EINVAL, "scope", "the name of a %s", rq->scope_kind);
    }
    int64_t now = hl_now_ms();
    if (rq->starts_at_ms < 0)
        return orr_err_set(err, ORR_EINVAL, "starts_at_ms", "must be 0 (now) or a time");
    if (rq->ends_at_ms <= now)
        return orr_err_set(err, ORR_EINVAL, "ends_at_ms", "must be in the future");
    if (rq->starts_at_ms && rq->ends_at_ms <= rq->starts_at_ms)
        return orr_err_set(err, ORR_EINVAL, "ends_at_ms", "must be after starts_at");
    if (rq->ends_at_ms - now > 366LL * 86400 * 1000)
        return orr_err_set(err, ORR_EINVAL, "ends_at_ms", "at most a year from now");
    if (strlen(rq->reason) > 1024 || (rq->reason[0] && !hl_is_text(rq->reason, 1024)))
        return orr_err_set(err, ORR_EINVAL, "reason", "at most 1024 characters of text");
    if (rq->team[0] && !hl_is_name(rq->team, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "team", "must be " ORR_NAME_RULE);
    const char *team = rq->team;
    if (rq->rule_id == 0 && strcmp(rq->scope_kind, "team") == 0)
        team = rq->scope;
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r = NULL, *rr = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK && rq->rule_id > 0) {
        const char *pr[1] = {hl_i64s(a, rq->rule_id)};
        if ((s = hl_db_query(c, a, &q_sil_rule, 1, pr, &rr, err)) == ORR_OK) {
            if (PQntuples(rr) == 0)
                s = orr_err_set(err, ORR_ENOTFOUND, "rule_id", "no such rule");
            else
                team = hl_val(rr, 0, 0);
        }
    }
    if (s == ORR_OK) {
        const char *p[8] = {hl_i64s(a, rq->rule_id),
                            rq->rule_id ? "" : rq->scope_kind,
                            rq->rule_id ? "" : rq->scope,
                            team,
                            hl_i64s(a, rq->starts_at_ms),
                            hl_i64s(a, rq->ends_at_ms),
                            rq->reason,
                            rq->actor};
        s = hl_db_query(c, a, &q_sil_insert, 8, p, &r, err);
    }
    if (s == ORR_OK) {
        const char *pl = orr_arena_sprintf(a, "{\"id\":%s,\"rule_id\":%lld}", hl_val(r, 0, 0),
                                           (long long)rq->rule_id);
        s = hl__record_commit(c, a, rq->actor, "alert_silence.create",
                              orr_arena_sprintf(a, "alert_silence:%s", hl_val(r, 0, 0)),
                              "alert_silence.changed", pl, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &hl__silence(a, r, 0)->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_alert_silences)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListAlertSilencesRequest);
    if (strlen(rq->team) > 8192 || (rq->team[0] && !hl_is_printable(rq->team, 8192)))
        return orr_err_set(err, ORR_EINVAL, "team", "team names joined by commas");
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be 0 or a silence id");
    const char *p[3] = {rq->active_only ? "true" : "false", rq->team, hl_i64s(a, rq->id)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_sil_list, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListAlertSilencesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_alert_silences_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_silences = n;
    o->silences = hl_alloc_n(a, sizeof *o->silences, n);
    for (size_t i = 0; i < n; i++)
        o->silences[i] = hl__silence(a, r, (int)i);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_delete_alert_silence)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__DeleteAlertObjectRequest);
    return hl__delete(hc, a, &q_sil_delete, rq->id, rq->actor, "alert_silence", resp, err);
}

/* ------------------------------------------------------------ raising */

HL_UNARY(hl_api_raise_alert)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RaiseAlertRequest);
    if (rq->rule_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "rule_id", "must be a rule id");
    if (!hl__in(rq->event, hl__alert_events))
        return orr_err_set(err, ORR_EINVAL, "event", "unknown event '%.64s'", rq->event);
    if (!hl_is_text(rq->dedup_key, 512))
        return orr_err_set(err, ORR_EINVAL, "dedup_key", "1-512 characters of text");
    if (rq->scope_kind[0] && !hl__in(rq->scope_kind, hl__scope_kinds))
        return orr_err_set(err, ORR_EINVAL, "scope_kind",
                           "must be task, workflow, team, stream or executor");
    if (strlen(rq->scope) > 256 || (rq->scope[0] && !hl_is_text(rq->scope, 256)))
        return orr_err_set(err, ORR_EINVAL, "scope", "at most 256 characters of text");
    if (rq->task_id < 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be 0 or a task id");
    if (rq->instance_id < 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be 0 or an instance id");
    if (strlen(rq->summary) > 2048 || (rq->summary[0] && !hl_is_text(rq->summary, 2048)))
        return orr_err_set(err, ORR_EINVAL, "summary", "at most 2048 characters of text");
    if (rq->at_ms < 0)
        return orr_err_set(err, ORR_EINVAL, "at_ms", "must be 0 (now) or a time");
    json_t *det = NULL;
    orr_status s = hl__json_object(rq->details_json, "details_json", &det, err);
    if (s != ORR_OK)
        return s;
    json_object_del(det, "instance_ids"); /* kept by halleyd */
    const char *details = hl__dump(a, det);
    json_decref(det);
    const char *t = hl_i64s(a, rq->at_ms ? rq->at_ms : hl_now_ms());
    const char *rid = hl_i64s(a, rq->rule_id);
    const char *iid = hl_i64s(a, rq->instance_id);

    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    Orrery__Halley__V1__RaiseAlertResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__raise_alert_response__init(o);
    PGresult *rule = NULL, *r = NULL;
    int64_t event_id = 0;
    const char *pr[5] = {rid, t, rq->scope_kind, rq->scope, rq->dedup_key};
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_raise_rule, 5, pr, &rule, err)) != ORR_OK)
        goto done;
    if (PQntuples(rule) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "rule_id", "no such rule");
        goto done;
    }
    o->silenced = !hl_val_bool(rule, 0, 0) || hl_val_bool(rule, 0, 6);
    const char *quiet = hl_val(rule, 0, 1), *window = hl_val(rule, 0, 2);
    const char *state = o->silenced ? "silenced" : "open";
    const char *pc[7] = {t, details, iid, rid, rq->dedup_key, state, quiet};
    if ((s = hl_db_query(c, a, &q_raise_count, 7, pc, &r, err)) != ORR_OK)
        goto done;
    int pending_all = 0; /* every channel has a pending message of it */
    if (PQntuples(r) > 0) {
        o->alert_id = hl_val_i64(r, 0, 0);
        o->count = (int32_t)hl_val_i64(r, 0, 1);
        pending_all = hl_val_i64(r, 0, 2) >= hl_val_i64(rule, 0, 8);
    } else {
        const char *pi[14] = {rid,
                              hl_val(rule, 0, 4),
                              hl_val(rule, 0, 5),
                              rq->event,
                              hl_val(rule, 0, 3),
                              rq->dedup_key,
                              rq->scope_kind,
                              rq->scope,
                              hl_i64s(a, rq->task_id),
                              iid,
                              rq->summary,
                              details,
                              t,
                              state};
        if ((s = hl_db_query(c, a, &q_raise_insert, 14, pi, &r, err)) != ORR_OK)
            goto done;
        o->alert_id = hl_val_i64(r, 0, 0);
        o->created = 1;
        o->count = 1;
    }
    if (!o->silenced && !pending_all) {
        const char *aid = hl_i64s(a, o->alert_id);
        const char *pd[7] = {aid, rid, t, window, quiet, hl_i64s(a, rq->task_id), iid};
        PGresult *made = NULL;
        if ((s = hl_db_query(c, a, &q_raise_deliveries, 7, pd, &made, err)) != ORR_OK)
            goto done;
        event_id = hl_val_i64(made, 0, 1);
    }
    if ((s = hl_db_commit(c, err)) == ORR_OK && event_id)
        hl_events_committed(hc->events, event_id);
done:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ the outbox */

/* The channel config of a claimed delivery with its secret opened. */
static orr_status hl__config_with_secret(hl_ctx *hc, orr_arena *a, const char *kind,
                                         const char *config, const char *hex, const char **out,
                                         orr_err *err)
{
    *out = config;
    size_t hlen = strlen(hex);
    if (hlen == 0)
        return ORR_OK;
    unsigned char *sealed = orr_arena_alloc(a, hlen / 2 + 1);
    for (size_t i = 0; i + 1 < hlen; i += 2) {
        char byte[3] = {hex[i], hex[i + 1], 0};
        sealed[i / 2] = (unsigned char)strtoul(byte, NULL, 16);
    }
    orr_buf plain = ORR_BUF_INIT;
    orr_status s = hl_secret_open(hc->secret_key, sealed, hlen / 2, &plain, err);
    json_t *doc = NULL;
    if (s == ORR_OK && (s = orr_json_parse(config, strlen(config), &doc, err)) == ORR_OK) {
        json_object_set_new(doc, strcmp(kind, "email") == 0 ? "password" : "secret",
                            orr_xcheck(json_string(orr_buf_cstr(&plain))));
        *out = hl__dump(a, doc);
        json_decref(doc);
    }
    if (plain.data)
        sodium_memzero(plain.data, plain.cap);
    orr_buf_free(&plain);
    if (s != ORR_OK)
        return orr_err_set(err, ORR_EINTERNAL, "channel",
                           "stored secret does not open with this secret_key");
    return ORR_OK;
}

HL_UNARY(hl_api_claim_deliveries)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ClaimDeliveriesRequest);
    if (!hl_is_printable(rq->worker, 256))
        return orr_err_set(err, ORR_EINVAL, "worker", "1-256 printable characters");
    if (rq->max < 1 || rq->max > 100)
        return orr_err_set(err, ORR_EINVAL, "max", "must be 1 to 100");
    if (rq->lease_ms < 1000 || rq->lease_ms > 600000)
        return orr_err_set(err, ORR_EINVAL, "lease_ms", "must be 1000 to 600000");
    const char *p[3] = {rq->worker, orr_arena_sprintf(a, "%d", rq->max), hl_i64s(a, rq->lease_ms)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_claim, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ClaimDeliveriesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__claim_deliveries_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_deliveries = n;
    o->deliveries = hl_alloc_n(a, sizeof *o->deliveries, n);
    const int ch0 = HL_DELIVERY_NCOLS + HL_ALERT_NCOLS;
    for (size_t i = 0; i < n; i++) {
        int row = (int)i;
        hl_pb_delivery *d = hl__delivery(a, r, row);
        d->alert = hl__alert(a, r, row, HL_DELIVERY_NCOLS);
        hl_pb_channel *ch = orr_arena_alloc(a, sizeof *ch);
        orrery__halley__v1__alert_channel__init(ch);
        ch->id = hl_val_i64(r, row, ch0);
        ch->name = (char *)hl_val(r, row, ch0 + 1);
        ch->team = (char *)hl_val(r, row, ch0 + 2);
        ch->kind = (char *)hl_val(r, row, ch0 + 3);
        ch->secret_set = hl_val(r, row, ch0 + 5)[0] != 0;
        const char *cfg = NULL;
        if ((s = hl__config_with_secret(hc, a, ch->kind, hl_val(r, row, ch0 + 4),
                                        hl_val(r, row, ch0 + 5), &cfg, err)) != ORR_OK)
            return s;
        ch->config_json = (char *)cfg;
        d->channel = ch;
        o->deliveries[i] = d;
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_finish_delivery)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__FinishDeliveryRequest);
    if (rq->id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be a delivery id");
    if (!hl_is_printable(rq->worker, 256))
        return orr_err_set(err, ORR_EINVAL, "worker", "1-256 printable characters");
    if (rq->retry_at_ms < 0)
        return orr_err_set(err, ORR_EINVAL, "retry_at_ms", "must be 0 (no retry) or a time");
    const char *e = rq->error;
    if (strlen(e) > 2048) /* keep the start of a long error */
        e = orr_arena_sprintf(a, "%.2040s...", e);
    const char *p[5] = {hl_i64s(a, rq->id), rq->worker, rq->ok ? "true" : "false", e,
                        hl_i64s(a, rq->retry_at_ms)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_finish, 5, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0) {
        PGresult *x;
        if ((s = hl_db_query_once(hc->db, a, &q_delivery_exists, 1, p, &x, err)) != ORR_OK)
            return s;
        if (PQntuples(x) == 0)
            return orr_err_set(err, ORR_ENOTFOUND, "id", "no such delivery");
        return orr_err_set(err, ORR_ECONFLICT, "worker",
                           "the delivery is not claimed by this worker (its lease ran out)");
    }
    Orrery__Halley__V1__FinishDeliveryResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__finish_delivery_response__init(o);
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ history */

HL_UNARY(hl_api_list_alerts)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListAlertsRequest);
    hl_page pg;
    orr_status s =
        hl_page_begin(a, "alerts", "i", rq->page_size, rq->page_token, HL_PAGE_DEFAULT, &pg, err);
    if (s != ORR_OK)
        return s;
    if (rq->rule_id < 0)
        return orr_err_set(err, ORR_EINVAL, "rule_id", "must be 0 or a rule id");
    if (strlen(rq->team) > 8192 || (rq->team[0] && !hl_is_printable(rq->team, 8192)))
        return orr_err_set(err, ORR_EINVAL, "team", "team names joined by commas");
    if (rq->event[0] && !hl__in(rq->event, hl__alert_events) && strcmp(rq->event, "test") != 0)
        return orr_err_set(err, ORR_EINVAL, "event", "unknown event '%.64s'", rq->event);
    if (rq->state[0] && strcmp(rq->state, "open") != 0 && strcmp(rq->state, "silenced") != 0)
        return orr_err_set(err, ORR_EINVAL, "state", "must be open or silenced");
    if (rq->since_ms < 0)
        return orr_err_set(err, ORR_EINVAL, "since_ms", "must be 0 or a time");
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be 0 or an alert id");
    const char *p[8] = {pg.have ? pg.keys[0] : "0",
                        hl_i64s(a, rq->rule_id),
                        rq->team,
                        rq->event,
                        rq->state,
                        hl_i64s(a, rq->since_ms),
                        orr_arena_sprintf(a, "%d", pg.size + 1),
                        hl_i64s(a, rq->id)};
    PGresult *r;
    if ((s = hl_db_query_once(hc->db, a, &q_alerts_list, 8, p, &r, err)) != ORR_OK)
        return s;
    int n = PQntuples(r) > pg.size ? pg.size : PQntuples(r);
    Orrery__Halley__V1__ListAlertsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_alerts_response__init(o);
    o->n_alerts = (size_t)n;
    o->alerts = hl_alloc_n(a, sizeof *o->alerts, (size_t)n);
    int64_t *ids = hl_alloc_n(a, sizeof *ids, (size_t)n);
    for (int i = 0; i < n; i++) {
        o->alerts[i] = hl__alert(a, r, i, 0);
        ids[i] = o->alerts[i]->id;
    }
    if (n > 0) {
        const char *pd[1] = {hl_id_array(a, ids, (size_t)n)};
        PGresult *d;
        if ((s = hl_db_query_once(hc->db, a, &q_alerts_deliveries, 1, pd, &d, err)) != ORR_OK)
            return s;
        /* Rows come by alert id ascending, alerts newest first: one walk
         * from the oldest alert. */
        int nd = PQntuples(d), j = 0;
        for (int i = n - 1; i >= 0; i--) {
            hl_pb_alert *al = o->alerts[i];
            while (j < nd && hl_val_i64(d, j, 1) < al->id)
                j++;
            int k = j;
            while (k < nd && hl_val_i64(d, k, 1) == al->id)
                k++;
            al->deliveries = hl_alloc_n(a, sizeof *al->deliveries, (size_t)(k - j));
            for (; j < k; j++)
                al->deliveries[al->n_deliveries++] = hl__delivery(a, d, j);
        }
    }
    if (PQntuples(r) > pg.size) {
        const char *k[1] = {hl_i64s(a, o->alerts[n - 1]->id)};
        o->next_page_token = hl_page_next(a, &pg, k);
    }
    *resp = &o->base;
    return ORR_OK;
}

/*
 * hl_api_resources.c - "why is it waiting" and resource limits.
 *
 * PutBlockers / GetBlockers: keplerd's leader writes what its own
 * evaluation found holding back waiting and ready instances (one row per
 * instance, replaced only by a newer evaluation; written when the list
 * changes, in batches of at most 1000, so neither audit nor event);
 * GetBlockers answers the row with the instance's state now and the
 * leases of the pools the blockers name (who holds the tokens).
 *
 * PutTeamQuota / ListTeamQuotas: per team, at most max_running instances
 * dispatched or running and max_slots slots in use (0 = no limit); keplerd
 * enforces them and re-reads them on "quota.changed".
 *
 * PutTypeLimits / ListTypeLimits, and hl_limits_apply (called by task
 * creation and update): per task type, a default and a maximum of each
 * sandbox limit (memory, cpu, pids, run_time). A spec above a maximum is
 * refused naming the field; a spec without a limit gets the default.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_limits.h"
#include "orr_config.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_name.h"

/* ------------------------------------------------------------ blockers */

#define HL_BLOCKERS_MAX 1000

/* $1: [{"id", "attempt", "b", "at"}]; the newest evaluation of an instance
 * wins; rows of instances that are gone are skipped. */
static hl_stmt q_put_blockers = HL_STMT(
    "INSERT INTO instance_blockers (instance_id, attempt, blockers, evaluated_at)"
    " SELECT DISTINCT ON (x.id) x.id, x.attempt, x.b, to_timestamp(x.at / 1000.0)"
    " FROM (SELECT (e ->> 'id')::int8 AS id, (e ->> 'attempt')::int AS attempt, e -> 'b' AS b,"
    "  (e ->> 'at')::int8 AS at FROM jsonb_array_elements($1::jsonb) e) x"
    " WHERE EXISTS (SELECT 1 FROM instances i WHERE i.id = x.id)"
    " ORDER BY x.id, x.at DESC"
    " ON CONFLICT (instance_id) DO UPDATE SET attempt = excluded.attempt,"
    " blockers = excluded.blockers, evaluated_at = excluded.evaluated_at"
    " WHERE instance_blockers.evaluated_at <= excluded.evaluated_at");
static hl_stmt q_get_blockers = HL_STMT(
    "SELECT i.state, i.attempt, b.instance_id IS NOT NULL, coalesce(b.attempt, 0),"
    " coalesce(b.blockers::text, ''), coalesce(" HL_MS(
        "b.evaluated_at") ", 0)"
                          " FROM instances i LEFT JOIN instance_blockers b ON b.instance_id = i.id"
                          " WHERE i.id = $1::int8");
static hl_stmt q_pool_holders = HL_STMT("SELECT l.pool, l.instance_id, t.name, " HL_MS(
    "i.schedule_time") ", l.tokens, i.state"
                       " FROM pool_leases l JOIN instances i ON i.id = l.instance_id JOIN tasks t "
                       "ON t.id = i.task_id"
                       " WHERE l.pool IN (SELECT x ->> 'pool' FROM instance_blockers b,"
                       "  jsonb_array_elements(b.blockers) x WHERE b.instance_id = $1::int8"
                       "  AND x ->> 'kind' = 'pool')"
                       " ORDER BY l.pool, l.acquired_at, l.instance_id LIMIT 100");

HL_UNARY(hl_api_put_blockers)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutBlockersRequest);
    if (rq->n_items > HL_BLOCKERS_MAX)
        return orr_err_set(err, ORR_EINVAL, "items", "at most %d per call", HL_BLOCKERS_MAX);
    Orrery__Halley__V1__PutBlockersResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__put_blockers_response__init(o);
    *resp = &o->base;
    if (rq->n_items == 0)
        return ORR_OK;
    orr_status s = ORR_OK;
    json_t *all = json_array();
    for (size_t i = 0; i < rq->n_items && s == ORR_OK; i++) {
        const Orrery__Halley__V1__InstanceBlockers *b = rq->items[i];
        char f[64];
        json_t *list = NULL;
        if (b->instance_id <= 0) {
            snprintf(f, sizeof f, "items[%zu].instance_id", i);
            s = orr_err_set(err, ORR_EINVAL, orr_arena_strdup(a, f), "must be positive");
        } else if (b->evaluated_at_ms <= 0) {
            snprintf(f, sizeof f, "items[%zu].evaluated_at_ms", i);
            s = orr_err_set(err, ORR_EINVAL, orr_arena_strdup(a, f), "must be positive");
        } else if (strlen(b->blockers_json) > 65536 ||
                   !(list = json_loads(b->blockers_json, JSON_REJECT_DUPLICATES, NULL)) ||
                   !json_is_array(list)) {
            snprintf(f, sizeof f, "items[%zu].blockers_json", i);
            s = orr_err_set(err, ORR_EINVAL, orr_arena_strdup(a, f),
                            "must be a JSON array of at most 64 KiB");
            json_decref(list);
            list = NULL;
        }
        if (s == ORR_OK)
            json_array_append_new(
                all, json_pack("{s:I,s:i,s:o,s:I}", "id", (json_int_t)b->instance_id, "attempt",
                               (int)b->attempt, "b", list, "at", (json_int_t)b->evaluated_at_ms));
    }
    char *doc = s == ORR_OK ? json_dumps(all, JSON_COMPACT) : NULL;
    json_decref(all);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {orr_arena_strdup(a, doc)};
    free(doc);
    PGresult *r = NULL;
    if ((s = hl_db_query_once(hc->db, a, &q_put_blockers, 1, p, &r, err)) != ORR_OK)
        return s;
    o->written = (int32_t)atoi(PQcmdTuples(r));
    return ORR_OK;
}

HL_UNARY(hl_api_get_blockers)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetBlockersRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {hl_i64s(a, rq->instance_id)};
    PGresult *r = NULL, *h = NULL;
    if ((s = hl_db_query(c, a, &q_get_blockers, 1, p, &r, err)) == ORR_OK && PQntuples(r) == 1 &&
        hl_val_bool(r, 0, 2))
        s = hl_db_query(c, a, &q_pool_holders, 1, p, &h, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
    Orrery__Halley__V1__GetBlockersResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__get_blockers_response__init(o);
    o->state = hl_pb_state(hl_val(r, 0, 0));
    o->attempt = (int32_t)hl_val_i64(r, 0, 1);
    o->found = hl_val_bool(r, 0, 2);
    if (o->found) {
        Orrery__Halley__V1__InstanceBlockers *b = orr_arena_alloc(a, sizeof *b);
        orrery__halley__v1__instance_blockers__init(b);
        b->instance_id = rq->instance_id;
        b->attempt = (int32_t)hl_val_i64(r, 0, 3);
        b->blockers_json = (char *)hl_val(r, 0, 4);
        b->evaluated_at_ms = hl_val_i64(r, 0, 5);
        o->blockers = b;
    }
    int n = h ? PQntuples(h) : 0;
    o->n_holders = (size_t)n;
    o->holders = hl_alloc_n(a, sizeof *o->holders, (size_t)n);
    Orrery__Halley__V1__PoolHolder *ph = hl_alloc_n(a, sizeof *ph, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__pool_holder__init(&ph[i]);
        ph[i].pool = (char *)hl_val(h, i, 0);
        ph[i].instance_id = hl_val_i64(h, i, 1);
        ph[i].task_name = (char *)hl_val(h, i, 2);
        ph[i].schedule_time_ms = hl_val_i64(h, i, 3);
        ph[i].tokens = (int32_t)hl_val_i64(h, i, 4);
        ph[i].state = hl_pb_state(hl_val(h, i, 5));
        o->holders[i] = &ph[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ team quotas */

#define HL_QUOTA_MAX 1000000

static hl_stmt q_put_quota =
    HL_STMT("INSERT INTO team_quotas (team_id, max_running, max_slots)"
            " SELECT id, $2::int, $3::int FROM teams WHERE name = $1"
            " ON CONFLICT (team_id) DO UPDATE SET max_running = excluded.max_running,"
            " max_slots = excluded.max_slots, updated_at = now()"
            " RETURNING " HL_MS("updated_at"));
static hl_stmt q_list_quotas = HL_STMT("SELECT t.name, q.max_running, q.max_slots, " HL_MS(
    "q.updated_at") " FROM team_quotas q JOIN teams t ON t.id = q.team_id ORDER BY t.name");

HL_UNARY(hl_api_put_team_quota)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutTeamQuotaRequest);
    if (!hl_is_name(rq->team, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "team", "must be " ORR_NAME_RULE);
    if (rq->max_running < 0 || rq->max_running > HL_QUOTA_MAX)
        return orr_err_set(err, ORR_EINVAL, "max_running", "must be 0 (no limit) to %d",
                           HL_QUOTA_MAX);
    if (rq->max_slots < 0 || rq->max_slots > HL_QUOTA_MAX)
        return orr_err_set(err, ORR_EINVAL, "max_slots", "must be 0 (no limit) to %d",
                           HL_QUOTA_MAX);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[3] = {rq->team, orr_arena_sprintf(a, "%d", (int)rq->max_running),
                        orr_arena_sprintf(a, "%d", (int)rq->max_slots)};
    const char *detail =
        orr_arena_sprintf(a, "{\"team\":%s,\"max_running\":%d,\"max_slots\":%d}",
                          hl_jstr(a, rq->team), (int)rq->max_running, (int)rq->max_slots);
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_put_quota, 3, p, &r, err)) == ORR_OK) {
        if (PQntuples(r) == 0)
            s = orr_err_set(err, ORR_ENOTFOUND, "team", "no team named \"%s\"", rq->team);
        else if ((s = hl_audit(c, a, rq->actor, "team.quota",
                               orr_arena_sprintf(a, "team:%s", rq->team), detail, err)) == ORR_OK &&
                 (s = hl_emit(c, a, "quota.changed", 0, 0, NULL, detail, NULL, err)) == ORR_OK)
            s = hl_db_commit(c, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__TeamQuota *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__team_quota__init(o);
    o->team = rq->team;
    o->max_running = rq->max_running;
    o->max_slots = rq->max_slots;
    o->updated_at_ms = hl_val_i64(r, 0, 0);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_team_quotas)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListTeamQuotasRequest);
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_quotas, 0, NULL, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListTeamQuotasResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_team_quotas_response__init(o);
    int n = PQntuples(r);
    o->n_quotas = (size_t)n;
    o->quotas = hl_alloc_n(a, sizeof *o->quotas, (size_t)n);
    Orrery__Halley__V1__TeamQuota *q = hl_alloc_n(a, sizeof *q, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__team_quota__init(&q[i]);
        q[i].team = (char *)hl_val(r, i, 0);
        q[i].max_running = (int32_t)hl_val_i64(r, i, 1);
        q[i].max_slots = (int32_t)hl_val_i64(r, i, 2);
        q[i].updated_at_ms = hl_val_i64(r, i, 3);
        o->quotas[i] = &q[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ type limits */

static hl_stmt q_put_limits =
    HL_STMT("INSERT INTO task_type_limits (type, limits) VALUES ($1, $2::jsonb)"
            " ON CONFLICT (type) DO UPDATE SET limits = excluded.limits, updated_at = now()"
            " RETURNING limits::text, " HL_MS("updated_at"));
static hl_stmt q_list_limits = HL_STMT(
    "SELECT type, limits::text, " HL_MS("updated_at") " FROM task_type_limits ORDER BY type");
static hl_stmt q_get_limits = HL_STMT("SELECT limits::text FROM task_type_limits WHERE type = $1");

HL_UNARY(hl_api_put_type_limits)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutTypeLimitsRequest);
    if (!hl_is_name(rq->type, 64))
        return orr_err_set(err, ORR_EINVAL, "type", "must be " ORR_NAME_RULE);
    orr_status s = hl_limits_check(rq->limits_json, err);
    if (s != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[2] = {rq->type, rq->limits_json};
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_put_limits, 2, p, &r, err)) == ORR_OK &&
        (s = hl_audit(c, a, rq->actor, "type.limits", orr_arena_sprintf(a, "type:%s", rq->type),
                      rq->limits_json, err)) == ORR_OK)
        s = hl_db_commit(c, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__TypeLimits *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__type_limits__init(o);
    o->type = rq->type;
    o->limits_json = (char *)hl_val(r, 0, 0);
    o->updated_at_ms = hl_val_i64(r, 0, 1);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_type_limits)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListTypeLimitsRequest);
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_limits, 0, NULL, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListTypeLimitsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_type_limits_response__init(o);
    int n = PQntuples(r);
    o->n_items = (size_t)n;
    o->items = hl_alloc_n(a, sizeof *o->items, (size_t)n);
    Orrery__Halley__V1__TypeLimits *t = hl_alloc_n(a, sizeof *t, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__type_limits__init(&t[i]);
        t[i].type = (char *)hl_val(r, i, 0);
        t[i].limits_json = (char *)hl_val(r, i, 1);
        t[i].updated_at_ms = hl_val_i64(r, i, 2);
        o->items[i] = &t[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

orr_status hl_limits_apply_db(hl_conn *c, orr_arena *a, const char *type, json_t *spec,
                              orr_err *err)
{
    const char *p[1] = {type};
    PGresult *r = NULL;
    orr_status s = hl_db_query(c, a, &q_get_limits, 1, p, &r, err);
    if (s != ORR_OK || PQntuples(r) == 0)
        return s;
    return hl_limits_apply(hl_val(r, 0, 0), spec, err);
}

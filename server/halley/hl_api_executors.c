/*
 * hl_api_executors.c - executors: PutExecutor (the executors' heartbeat,
 * so it writes neither audit record nor event), ListExecutors, with the
 * slots each executor has in use, and UpdateExecutor: an administrator's
 * settings that keplerd applies on top of what the executor announces
 * (drained: no new dispatches; slots and labels overrides). UpdateExecutor
 * is audited and emits "executor.changed", on which keplerd re-reads the
 * settings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include "orr_json.h"

typedef Orrery__Halley__V1__Executor hl_pb_executor;

/* used_slots weighs each dispatched or running instance by the slots of the
 * task version it runs (default 1), as InstanceStats' running_slots does. */
#define HL_EXECUTOR_COLS                                                                           \
    "e.id, e.host, e.slots, e.labels::text, e.active,"                                             \
    " coalesce((SELECT sum(CASE WHEN jsonb_typeof(v.spec -> 'slots') = 'number'"                   \
    "  THEN (v.spec ->> 'slots')::numeric::int8 ELSE 1 END)"                                       \
    "  FROM instances i JOIN task_versions v ON v.task_id = i.task_id"                             \
    "  AND v.version = i.task_version WHERE i.executor = e.id"                                     \
    "  AND i.state IN ('dispatched', 'running')), 0), " HL_MS(                                     \
        "e.last_seen") ","                                                                         \
                       " e.drained, e.slots_override IS NOT NULL, coalesce(e.slots_override, 0),"  \
                       " coalesce(e.labels_override::text, '')"

static hl_stmt q_put_executor =
    HL_STMT("INSERT INTO executors (id, host, slots, labels, active, last_seen)"
            " VALUES ($1, $2, $3::int, $4::jsonb, $5::bool, now())"
            " ON CONFLICT (id) DO UPDATE SET host = excluded.host, slots = excluded.slots,"
            " labels = excluded.labels, active = excluded.active, last_seen = now()");
/* An executor an administrator names before it ever registered gets a row
 * that says so: no host, never seen. */
static hl_stmt q_executor_row =
    HL_STMT("INSERT INTO executors (id, host, slots, labels, active, last_seen)"
            " VALUES ($1, '', 0, '{}', true, 'epoch') ON CONFLICT (id) DO NOTHING");
/* $2/$4/$6: whether drained ($3), the slots override ($5, < 0 = none) and
 * the labels override ($7, "" = none) change. */
static hl_stmt q_update_executor = HL_STMT(
    "UPDATE executors SET drained = CASE WHEN $2::bool THEN $3::bool ELSE drained END,"
    " slots_override = CASE WHEN $4::bool THEN (CASE WHEN $5::int < 0 THEN NULL ELSE $5::int END)"
    "  ELSE slots_override END,"
    " labels_override = CASE WHEN $6::bool THEN nullif($7, '')::jsonb ELSE labels_override END"
    " WHERE id = $1");
/* $1 active only, $2 id ("" = all). */
static hl_stmt q_list_executors =
    HL_STMT("SELECT " HL_EXECUTOR_COLS " FROM executors e WHERE (NOT $1::bool OR e.active)"
            " AND ($2 = '' OR e.id = $2) ORDER BY e.id");

/* ------------------------------------------------------------ executors */

static void hl__fill_executor(const PGresult *r, int row, hl_pb_executor *e)
{
    orrery__halley__v1__executor__init(e);
    e->id = (char *)hl_val(r, row, 0);
    e->host = (char *)hl_val(r, row, 1);
    e->slots = (int32_t)hl_val_i64(r, row, 2);
    e->labels_json = (char *)hl_val(r, row, 3);
    e->active = hl_val_bool(r, row, 4);
    e->used_slots = (int32_t)hl_val_i64(r, row, 5);
    e->last_seen_ms = hl_val_i64(r, row, 6);
    e->drained = hl_val_bool(r, row, 7);
    e->has_slots_override = hl_val_bool(r, row, 8);
    e->slots_override = (int32_t)hl_val_i64(r, row, 9);
    e->labels_override_json = (char *)hl_val(r, row, 10);
}

/* labels_json must be an object of string values. */
static orr_status hl__check_labels(orr_arena *a, const char *text, orr_err *err)
{
    json_t *doc = NULL;
    if (strlen(text) > 65536)
        return orr_err_set(err, ORR_EINVAL, "labels_json", "at most 64 KiB");
    if (orr_json_parse(text, strlen(text), &doc, err) != ORR_OK) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return orr_err_set(err, ORR_EINVAL, "labels_json", "not valid JSON: %s", m);
    }
    orr_status s = ORR_OK;
    if (!json_is_object(doc)) {
        s = orr_err_set(err, ORR_EINVAL, "labels_json", "must be a JSON object");
    } else {
        const char *key;
        json_t *v;
        json_object_foreach(doc, key, v)
        {
            if (!json_is_string(v) || strlen(key) == 0 || strlen(key) > 128) {
                s = orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "labels_json.%s", key),
                                "labels are \"key\": \"value\" strings, keys of 1-128 bytes");
                break;
            }
        }
    }
    json_decref(doc);
    return s;
}

HL_UNARY(hl_api_put_executor)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutExecutorRequest);
    if (!hl_is_name(rq->id, 128))
        return orr_err_set(err, ORR_EINVAL, "id", "must be " ORR_NAME_RULE);
    if (!hl_is_printable(rq->host, 255))
        return orr_err_set(err, ORR_EINVAL, "host", "1-255 printable characters, no spaces");
    if (rq->slots < 0 || rq->slots > 100000)
        return orr_err_set(err, ORR_EINVAL, "slots", "must be between 0 and 100000");
    const char *labels = rq->labels_json[0] ? rq->labels_json : "{}";
    orr_status s = hl__check_labels(a, labels, err);
    if (s != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[5] = {rq->id, rq->host, orr_arena_sprintf(a, "%d", (int)rq->slots), labels,
                        rq->active ? "true" : "false"};
    const char *pl[2] = {"false", rq->id};
    PGresult *r = NULL;
    if ((s = hl_db_query(c, a, &q_put_executor, 5, p, NULL, err)) == ORR_OK)
        s = hl_db_query(c, a, &q_list_executors, 2, pl, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0) /* cannot happen short of a concurrent delete */
        return orr_err_set(err, ORR_ECONFLICT, "id", "executor vanished; retry");
    hl_pb_executor *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_executor(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_executors)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListExecutorsRequest);
    const char *p[2] = {rq->active_only ? "true" : "false", ""};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_executors, 2, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListExecutorsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_executors_response__init(o);
    int n = PQntuples(r);
    o->n_executors = (size_t)n;
    o->executors = hl_alloc_n(a, sizeof *o->executors, (size_t)n);
    hl_pb_executor *es = hl_alloc_n(a, sizeof *es, (size_t)n);
    for (int i = 0; i < n; i++) {
        hl__fill_executor(r, i, &es[i]);
        o->executors[i] = &es[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_update_executor)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__UpdateExecutorRequest);
    if (!hl_is_name(rq->id, 128))
        return orr_err_set(err, ORR_EINVAL, "id", "must be " ORR_NAME_RULE);
    if (!rq->set_drained && !rq->set_slots && !rq->set_labels)
        return orr_err_set(err, ORR_EINVAL, "set_drained",
                           "nothing to change: set one of set_drained, set_slots, set_labels");
    if (rq->set_slots && rq->slots > 100000)
        return orr_err_set(err, ORR_EINVAL, "slots", "must be between 0 and 100000 (< 0 clears)");
    orr_status s = ORR_OK;
    if (rq->set_labels && rq->labels_json[0] &&
        (s = hl__check_labels(a, rq->labels_json, err)) != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[7] = {rq->id,
                        rq->set_drained ? "true" : "false",
                        rq->drained ? "true" : "false",
                        rq->set_slots ? "true" : "false",
                        orr_arena_sprintf(a, "%d", rq->set_slots ? (int)rq->slots : -1),
                        rq->set_labels ? "true" : "false",
                        rq->set_labels ? rq->labels_json : ""};
    const char *pl[2] = {"false", rq->id};
    json_t *detail = json_object();
    if (rq->set_drained)
        json_object_set_new(detail, "drained", json_boolean(rq->drained));
    if (rq->set_slots)
        json_object_set_new(detail, "slots", rq->slots < 0 ? json_null() : json_integer(rq->slots));
    if (rq->set_labels)
        json_object_set_new(detail, "labels",
                            rq->labels_json[0] ? json_loads(rq->labels_json, 0, NULL)
                                               : json_null());
    char *dj = json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(detail);
    const char *detail_json = orr_arena_strdup(a, dj ? dj : "{}");
    free(dj);
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_executor_row, 1, p, NULL, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_update_executor, 7, p, NULL, err)) == ORR_OK &&
        (s = hl_audit(c, a, rq->actor, "executor.update",
                      orr_arena_sprintf(a, "executor:%s", rq->id), detail_json, err)) == ORR_OK &&
        (s = hl_emit(
             c, a, "executor.changed", 0, 0, rq->id,
             orr_arena_sprintf(a, "{\"id\":%s,\"settings\":%s}", hl_jstr(a, rq->id), detail_json),
             NULL, err)) == ORR_OK &&
        (s = hl_db_commit(c, err)) == ORR_OK)
        s = hl_db_query(c, a, &q_list_executors, 2, pl, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ECONFLICT, "id", "executor vanished; retry");
    hl_pb_executor *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_executor(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

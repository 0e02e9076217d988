/*
 * hl_api_common.c - helpers shared by the handlers, and the Health RPC.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hl_api.h"
#include "hl_migrate.h"
#include "orr_buf.h"
#include "orr_name.h"

int hl_grpc_code(orr_status s)
{
    switch (s) {
    case ORR_OK:
        return 0;
    case ORR_ECANCELLED:
        return 1;
    case ORR_EINVAL:
        return 3;
    case ORR_ETIMEOUT:
        return 4;
    case ORR_ENOTFOUND:
        return 5;
    case ORR_EEXIST:
        return 6;
    case ORR_EPERM:
        return 7;
    case ORR_ETOOBIG:
        return 8;
    case ORR_ESTATE:
        return 9;
    case ORR_ECONFLICT:
        return 10;
    case ORR_EUNAVAIL:
        return 14;
    case ORR_EAUTH:
        return 16;
    default:
        return 13;
    }
}

orr_status hl_worker_auth(const hl_ctx *hc, const char *bearer, orr_err *err)
{
    int have_worker = hc->worker_token && hc->worker_token[0];
    int have_service = hc->service_token && hc->service_token[0];
    if (!bearer)
        bearer = "";
    if (have_worker && hl_secret_token_equal(bearer, hc->worker_token))
        return ORR_OK;
    /* Identified as a service caller: the service token, or no token at all
     * on a server that asks none. */
    int service = have_service ? hl_secret_token_equal(bearer, hc->service_token) : !bearer[0];
    if (!service)
        return orr_err_set(err, ORR_EAUTH, "authorization",
                           bearer[0] ? "unknown bearer token" : "missing bearer token");
    if (!have_worker)
        return orr_err_set(err, ORR_EPERM, "authorization",
                           "reading secrets is disabled ([halley] worker_token is unset)");
    return orr_err_set(err, ORR_EPERM, "authorization", "needs the worker token");
}

void *hl_alloc_n(orr_arena *a, size_t elem, size_t n)
{
    return orr_arena_alloc(a, elem * (n ? n : 1));
}

const char *hl_i64s(orr_arena *a, int64_t v)
{
    return orr_arena_sprintf(a, "%" PRId64, v);
}

const char *hl_jstr(orr_arena *a, const char *s)
{
    orr_buf b = ORR_BUF_INIT;
    orr_buf_append_byte(&b, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            orr_buf_appendf(&b, "\\%c", *p);
        else if (*p < 0x20)
            orr_buf_appendf(&b, "\\u%04x", *p);
        else
            orr_buf_append_byte(&b, (char)*p);
    }
    orr_buf_append_byte(&b, '"');
    const char *out = orr_arena_strdup(a, orr_buf_cstr(&b));
    orr_buf_free(&b);
    return out;
}

int hl_is_name(const char *s, size_t max)
{
    return orr_name_ok(s, max);
}

int64_t hl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hl_is_printable(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

int hl_is_text(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

char **hl_split_names(orr_arena *a, const char *joined, size_t *n_out)
{
    size_t n = joined[0] ? 1 : 0;
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    char **out = hl_alloc_n(a, sizeof *out, n);
    char *copy = orr_arena_strdup(a, joined);
    for (size_t i = 0; i < n; i++) {
        out[i] = copy;
        char *comma = strchr(copy, ',');
        if (comma) {
            *comma = 0;
            copy = comma + 1;
        }
    }
    *n_out = n;
    return out;
}

const char *hl_id_array(orr_arena *a, const int64_t *ids, size_t n)
{
    orr_buf b = ORR_BUF_INIT;
    orr_buf_append_byte(&b, '{');
    for (size_t i = 0; i < n; i++)
        orr_buf_appendf(&b, "%s%lld", i ? "," : "", (long long)ids[i]);
    orr_buf_append_byte(&b, '}');
    const char *out = orr_arena_strdup(a, orr_buf_cstr(&b));
    orr_buf_free(&b);
    return out;
}

orr_status hl_id_or_name(int64_t id, const char *name, orr_err *err)
{
    if (id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if (name[0] && !hl_is_name(name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (id == 0 && !name[0])
        return orr_err_set(err, ORR_EINVAL, "id", "give id or name");
    return ORR_OK;
}

orr_status hl_relabel(orr_err *err, orr_status s, const char *field, const char *what)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return orr_err_set(err, s, field, "%s%s%s", what, msg[0] ? ": " : "", msg);
}

const char *hl_take(orr_arena *a, orr_buf *b)
{
    const char *s = orr_arena_strdup(a, orr_buf_cstr(b));
    orr_buf_free(b);
    return s;
}

int hl_pb_role(const char *name)
{
    if (strcmp(name, "admin") == 0)
        return ORRERY__HALLEY__V1__ROLE__ROLE_ADMIN;
    if (strcmp(name, "developer") == 0)
        return ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER;
    if (strcmp(name, "viewer") == 0)
        return ORRERY__HALLEY__V1__ROLE__ROLE_VIEWER;
    return ORRERY__HALLEY__V1__ROLE__ROLE_UNSPECIFIED;
}

int hl_pb_state(const char *name)
{
    return (int)hl_state_parse(name);
}

/* How a row's columns are read: text (HL_INSTANCE_COLS, the epochs made in
 * SQL) or binary (HL_INSTANCE_RAW_COLS, the timestamps as stored). */
typedef struct hl_row_reader {
    long long (*i64)(const PGresult *r, int row, int col);
    long long (*ms)(const PGresult *r, int row, int col);
    int (*boolean)(const PGresult *r, int row, int col);
} hl_row_reader;

static const hl_row_reader hl_text_reader = {hl_val_i64, hl_val_i64, hl_val_bool};
static const hl_row_reader hl_bin_reader = {hl_bin_i64, hl_bin_ms, hl_bin_bool};

static void hl__fill_instance(const hl_row_reader *rd, const PGresult *r, int row,
                              hl_pb_instance *o)
{
    orrery__halley__v1__instance__init(o);
    o->id = rd->i64(r, row, 0);
    o->task_id = rd->i64(r, row, 1);
    o->task_name = (char *)hl_val(r, row, 2);
    o->task_version = (int32_t)rd->i64(r, row, 3);
    o->schedule_time_ms = rd->ms(r, row, 4);
    o->state = hl_pb_state(hl_val(r, row, 5));
    o->attempt = (int32_t)rd->i64(r, row, 6);
    o->executor = (char *)hl_val(r, row, 7);
    o->priority = (int32_t)rd->i64(r, row, 8);
    o->created_at_ms = rd->ms(r, row, 9);
    o->updated_at_ms = rd->ms(r, row, 10);
    o->started_at_ms = rd->ms(r, row, 11);
    o->finished_at_ms = rd->ms(r, row, 12);
    o->reason = (char *)hl_val(r, row, 13);
    o->run_now = rd->boolean(r, row, 14);
    o->ignore_upstreams = rd->boolean(r, row, 15);
    o->backfill_id = rd->i64(r, row, 16);
    o->backfill_cycle_ms = rd->ms(r, row, 17);
    o->backfill_cycles = (int32_t)rd->i64(r, row, 18);
    o->has_exit_code = !hl_val_null(r, row, HL_INSTANCE_NCOLS);
    o->exit_code = (int32_t)rd->i64(r, row, HL_INSTANCE_NCOLS);
}

void hl_fill_instance(orr_arena *a, const PGresult *r, int row, hl_pb_instance *o)
{
    (void)a;
    hl__fill_instance(&hl_text_reader, r, row, o);
}

void hl_fill_instance_bin(const PGresult *r, int row, hl_pb_instance *o)
{
    hl__fill_instance(&hl_bin_reader, r, row, o);
}

static hl_stmt q_emit =
    HL_STMT("WITH e AS (INSERT INTO events (kind, task_id, instance_id, executor, payload) "
            "VALUES ($1, nullif($2::int8, 0), nullif($3::int8, 0), $4, $5::jsonb) RETURNING id) "
            "SELECT id, pg_notify('orrery_events', id::text || ' ' || $1 || ' ' || $2) FROM e");

orr_status hl_emit(hl_conn *c, orr_arena *a, const char *kind, int64_t task_id, int64_t instance_id,
                   const char *executor, const char *payload, int64_t *id, orr_err *err)
{
    const char *p[5] = {kind, hl_i64s(a, task_id), hl_i64s(a, instance_id),
                        executor ? executor : "", payload ? payload : "{}"};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_emit, 5, p, &r, err);
    if (s == ORR_OK && id)
        *id = hl_val_i64(r, 0, 0);
    return s;
}

static hl_stmt q_audit =
    HL_STMT("INSERT INTO audit_log (actor, action, object, detail) VALUES ($1, $2, $3, $4::jsonb)");

orr_status hl_audit(hl_conn *c, orr_arena *a, const char *actor, const char *action,
                    const char *object, const char *detail_json, orr_err *err)
{
    const char *p[4] = {actor && *actor ? actor : "unknown", action, object,
                        detail_json ? detail_json : "{}"};
    return hl_db_query(c, a, &q_audit, 4, p, NULL, err);
}

static hl_stmt q_schema_version =
    HL_STMT("SELECT coalesce(max(version), 0) FROM schema_migrations");

static hl_stmt q_ping = HL_STMT("SELECT 1");

int hl_health_probe(const char *service, void *ctx)
{
    hl_ctx *hc = ctx;
    if (service[0] && strcmp(service, orrery__halley__v1__halley__descriptor.name) != 0)
        return ORR_RPC_HEALTH_UNKNOWN;
    orr_arena *a = orr_arena_create(0);
    orr_err e;
    orr_status s = hl_db_query_once(hc->db, a, &q_ping, 0, NULL, NULL, &e);
    orr_arena_destroy(a);
    return s == ORR_OK ? ORR_RPC_HEALTH_SERVING : ORR_RPC_HEALTH_NOT_SERVING;
}

HL_UNARY(hl_api_health)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__HealthRequest);
    Orrery__Halley__V1__HealthResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__health_response__init(o);
    o->known_schema_version = hc->known_schema_version;
    o->listener_ok = hl_events_listening(hc->events);
    hl_conn *c = NULL;
    orr_err e;
    orr_status s = hl_db_get(hc->db, &c, &e);
    if (s == ORR_OK) {
        PGresult *r;
        s = hl_db_query(c, a, &q_schema_version, 0, NULL, &r, &e);
        if (s == ORR_OK)
            o->schema_version = (int32_t)hl_val_i64(r, 0, 0);
        hl_db_put(hc->db, c);
    }
    o->db_ok = s == ORR_OK;
    if (s != ORR_OK)
        o->db_error = orr_arena_strdup(a, e.msg);
    hl_db_stats st;
    hl_db_get_stats(hc->db, &st);
    o->pool_size = st.size;
    o->pool_idle = st.idle;
    (void)err;
    *resp = &o->base;
    return ORR_OK;
}

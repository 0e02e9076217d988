/* gx_api_admin.c - resource pools, users, teams, data sources (with a
 * connection test) and executors, plus the operational endpoints (/healthz,
 * /metrics, the OpenAPI document).
 *
 * Pools, users and teams are changed by admins only (the route table says
 * so); everyone logged in may read pools. Data-source passwords are
 * write-only: halleyd stores them encrypted and never returns them, and this
 * layer never echoes one back. The connection test reads the clear secret
 * with the worker token ([galaxy] datasource_test_token), uses it for one
 * connection (libpq / libmariadb, 5 s timeouts), wipes it, and answers only
 * ok, a message with any copy of the secret masked, and the time taken. */
#include <fcntl.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <mysql.h>
#include <sodium.h>

#include "gx_app.h"
#include "gx_meta.h"
#include "orr_json.h"
#include "orr_log.h"

/* Frees a DataSourceSecret after wiping its clear secret. */
static void gx_free_secret(void *p)
{
    HL(DataSourceSecret) *s = p;
    if (s->secret)
        sodium_memzero(s->secret, strlen(s->secret));
    protobuf_c_message_free_unpacked(&s->base, NULL);
}

static json_t *gx_pool_json(const HL(Pool) * p)
{
    return json_pack("{s:s,s:i,s:i}", "name", p->name, "capacity", p->capacity, "used", p->used);
}

void gx_h_pools_list(gx_req *req, gx_resp *resp)
{
    HL(ListPoolsRequest) rq = HL_INIT(LIST_POOLS_REQUEST);
    HL(ListPoolsResponse) * rs;
    if (gx_halley(req, resp, "ListPools", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_pools; i++)
        json_array_append_new(items, gx_pool_json(rs->pools[i]));
    gx_page_answer(req, resp, "pools", items, "name", 0);
}

void gx_h_pool_put(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"capacity", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    int64_t capacity = 0;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_int(body, "", "capacity", 1, 0, 100000, &capacity, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(PutPoolRequest) rq = HL_INIT(PUT_POOL_REQUEST);
    rq.name = (char *)gx_req_param(req, 0);
    rq.capacity = (int32_t)capacity;
    rq.actor = (char *)gx_actor(req);
    HL(Pool) * p;
    if (gx_halley(req, resp, "PutPool", &rq.base, (ProtobufCMessage **)&p) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_pool_json(p));
}

/* The JSON array arr (may be NULL) as a NULL-ended list of its strings in
 * the request arena (*n of them); -1 with a 400 naming field[i] when one is
 * not a string. */
static int gx_json_strings(gx_req *req, gx_resp *resp, json_t *arr, const char *field, char ***out,
                           size_t *n)
{
    *n = arr ? json_array_size(arr) : 0;
    char **list = orr_arena_calloc(req->arena, *n + 1, sizeof(*list));
    for (size_t i = 0; i < *n; i++) {
        const char *t = json_string_value(json_array_get(arr, i));
        if (!t) {
            char p[64];
            gx_resp_fail(resp, ORR_EINVAL, orr_json_index_path(p, sizeof(p), field, i),
                         "must be a string");
            return -1;
        }
        list[i] = (char *)t;
    }
    *out = list;
    return 0;
}

void gx_h_users_create(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"name", "password", "role", "teams", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *name = NULL, *password = NULL, *role = NULL;
    json_t *teams = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "name", 1, &name, &e) != ORR_OK ||
        orr_json_get_str(body, "", "password", 1, &password, &e) != ORR_OK ||
        orr_json_get_str(body, "", "role", 1, &role, &e) != ORR_OK ||
        orr_json_get_array(body, "", "teams", 0, &teams, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(CreateUserRequest) rq = HL_INIT(CREATE_USER_REQUEST);
    if (strcmp(role, "admin") == 0)
        rq.role = HL_ROLE(ADMIN);
    else if (strcmp(role, "developer") == 0)
        rq.role = HL_ROLE(DEVELOPER);
    else if (strcmp(role, "viewer") == 0)
        rq.role = HL_ROLE(VIEWER);
    else {
        gx_resp_fail(resp, ORR_EINVAL, "role", "must be admin, developer or viewer");
        return;
    }
    size_t n;
    char **list;
    if (gx_json_strings(req, resp, teams, "teams", &list, &n) != 0)
        return;
    rq.name = (char *)name;
    rq.password = (char *)password;
    rq.n_teams = n;
    rq.teams = list;
    rq.actor = (char *)gx_actor(req);
    HL(User) * u;
    if (gx_halley(req, resp, "CreateUser", &rq.base, (ProtobufCMessage **)&u) != ORR_OK)
        return;
    gx_resp_json(resp, 201, gx_user_json(u));
}

/* PATCH /users/{name}: any of role, teams, active, password. halleyd ends
 * every session of the user in the same change, so the new role or team
 * list (or the disable) applies at once on every galaxyd. */
void gx_h_user_update(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"role", "teams", "active", "password", NULL};
    static const char *const roles[] = {"", "admin", "developer", "viewer"};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *role = NULL, *password = NULL;
    json_t *teams = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "role", 0, &role, &e) != ORR_OK ||
        orr_json_get_array(body, "", "teams", 0, &teams, &e) != ORR_OK ||
        orr_json_get_str(body, "", "password", 0, &password, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(UpdateUserRequest) rq = HL_INIT(UPDATE_USER_REQUEST);
    rq.name = (char *)gx_req_param(req, 0);
    if (role) {
        for (int i = 1; i < 4; i++)
            if (strcmp(role, roles[i]) == 0)
                rq.role = (HL(Role))i;
        if (!rq.role) {
            gx_resp_fail(resp, ORR_EINVAL, "role", "must be admin, developer or viewer");
            return;
        }
    }
    json_t *active = json_object_get(body, "active");
    if (active) {
        if (!json_is_boolean(active)) {
            gx_resp_fail(resp, ORR_EINVAL, "active", "must be true or false");
            return;
        }
        rq.set_active = 1;
        rq.active = json_is_true(active);
    }
    if (teams) {
        if (gx_json_strings(req, resp, teams, "teams", &rq.teams, &rq.n_teams) != 0)
            return;
        rq.set_teams = 1;
    }
    rq.password = (char *)(password ? password : "");
    rq.actor = (char *)gx_actor(req);
    HL(User) * u;
    if (gx_halley(req, resp, "UpdateUser", &rq.base, (ProtobufCMessage **)&u) != ORR_OK)
        return;
    /* The user's API tokens must answer for what is true now (a disabled
     * user's tokens stop at once): forget every cached token. */
    gx_tokcache_flush(((gx_app *)req->app)->tokcache);
    gx_resp_json(resp, 200, gx_user_json(u));
}

void gx_h_user_get(gx_req *req, gx_resp *resp)
{
    HL(GetUserRequest) rq = HL_INIT(GET_USER_REQUEST);
    rq.name = (char *)gx_req_param(req, 0);
    HL(User) * u;
    if (gx_halley(req, resp, "GetUser", &rq.base, (ProtobufCMessage **)&u) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_user_json(u));
}

void gx_h_teams_create(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"name", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *name = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "name", 1, &name, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(CreateTeamRequest) rq = HL_INIT(CREATE_TEAM_REQUEST);
    rq.name = (char *)name;
    rq.actor = (char *)gx_actor(req);
    HL(Team) * t;
    if (gx_halley(req, resp, "CreateTeam", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    gx_resp_json(resp, 201, json_pack("{s:I,s:s}", "id", (json_int_t)t->id, "name", t->name));
}

static json_t *gx_datasource_json(const HL(DataSource) * d)
{
    json_t *params = json_loads(d->params_json && *d->params_json ? d->params_json : "{}", 0, NULL);
    return json_pack("{s:s,s:s,s:o,s:b,s:o}", "name", d->name, "kind", d->kind, "params",
                     params ? params : json_object(), "has_password", (int)d->has_secret,
                     "updated_at", gx_json_time(d->updated_at_ms));
}

void gx_h_datasource_get(gx_req *req, gx_resp *resp)
{
    HL(GetDataSourceRequest) rq = HL_INIT(GET_DATA_SOURCE_REQUEST);
    rq.name = (char *)gx_req_param(req, 0);
    HL(DataSource) * d;
    if (gx_halley(req, resp, "GetDataSource", &rq.base, (ProtobufCMessage **)&d) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_datasource_json(d));
}

void gx_h_datasource_put(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"kind", "params", "password", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *kind = NULL, *password = NULL;
    json_t *params = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "kind", 1, &kind, &e) != ORR_OK ||
        orr_json_get_obj(body, "", "params", 1, &params, &e) != ORR_OK ||
        orr_json_get_str(body, "", "password", 0, &password, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (json_object_get(params, "password")) {
        gx_resp_fail(resp, ORR_EINVAL, "params.password",
                     "put the password in \"password\", where it is stored encrypted");
        return;
    }
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(params, &b);
    HL(PutDataSourceRequest) rq = HL_INIT(PUT_DATA_SOURCE_REQUEST);
    rq.name = (char *)gx_req_param(req, 0);
    rq.kind = (char *)kind;
    rq.params_json = orr_arena_strdup(req->arena, b.data);
    orr_buf_free(&b);
    rq.secret = (char *)(password ? password : "");
    rq.actor = (char *)gx_actor(req);
    HL(DataSource) * d;
    if (gx_halley(req, resp, "PutDataSource", &rq.base, (ProtobufCMessage **)&d) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_datasource_json(d));
}

void gx_h_healthz(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    HL(HealthRequest) rq = HL_INIT(HEALTH_REQUEST);
    HL(HealthResponse) *rs = NULL;
    orr_err e;
    orr_status rc =
        orr_rpc_call_unary(app->halley, "Health", &rq.base, (ProtobufCMessage **)&rs, 1000, &e);
    int halley_ok = rc == ORR_OK;
    int db_ok = halley_ok && rs->db_ok;
    json_t *out = json_pack("{s:s,s:b,s:b}", "status", halley_ok && db_ok ? "ok" : "degraded",
                            "halley", halley_ok, "database", db_ok);
    /* "events": sessions are kept from halleyd's event stream; "asking":
     * the stream is not in place and each session is checked with halleyd. */
    json_object_set_new(out, "sessions",
                        json_string(gx_sessions_synced(app->sessions) ? "events" : "asking"));
    if (!halley_ok)
        json_object_set_new(out, "error", json_string(e.msg));
    if (rs)
        protobuf_c_message_free_unpacked(&rs->base, NULL);
    gx_resp_json(resp, halley_ok ? 200 : 503, out);
}

void gx_h_metrics(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4";
    gx_server_metrics(app->server, &resp->body);
    gx_meta_metrics(&resp->body);
}

void gx_h_openapi(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    int fd = open(app->openapi_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        gx_resp_fail(resp, ORR_ENOTFOUND, NULL, "OpenAPI document not installed");
        return;
    }
    resp->status = 200;
    resp->fd = fd;
    resp->fd_size = (uint64_t)st.st_size;
    resp->content_type = "application/json";
}

void gx_h_users_list(gx_req *req, gx_resp *resp)
{
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 100, 1, 1000, &limit))
        return;
    HL(ListUsersRequest) rq = HL_INIT(LIST_USERS_REQUEST);
    const char *v;
    if ((v = gx_req_query(req, "q")))
        rq.name_prefix = (char *)v;
    if ((v = gx_req_query(req, "team")))
        rq.team = (char *)v;
    if ((v = gx_req_query(req, "page_token")))
        rq.page_token = (char *)v;
    if ((v = gx_req_query(req, "role"))) {
        if (strcmp(v, "admin") == 0)
            rq.role = HL_ROLE(ADMIN);
        else if (strcmp(v, "developer") == 0)
            rq.role = HL_ROLE(DEVELOPER);
        else if (strcmp(v, "viewer") == 0)
            rq.role = HL_ROLE(VIEWER);
        else {
            gx_resp_fail(resp, ORR_EINVAL, "role", "must be admin, developer or viewer");
            return;
        }
    }
    rq.page_size = (int32_t)limit;
    HL(ListUsersResponse) * rs;
    if (gx_halley(req, resp, "ListUsers", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_users; i++)
        json_array_append_new(items, gx_user_json(rs->users[i]));
    gx_resp_json(resp, 200,
                 json_pack("{s:o,s:o}", "items", items, "next_page_token",
                           rs->next_page_token && *rs->next_page_token
                               ? json_string(rs->next_page_token)
                               : json_null()));
}

void gx_h_teams_list(gx_req *req, gx_resp *resp)
{
    HL(ListTeamsRequest) rq = HL_INIT(LIST_TEAMS_REQUEST);
    rq.with_members = 1;
    HL(ListTeamsResponse) * rs;
    if (gx_halley(req, resp, "ListTeams", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_teams; i++) {
        json_t *members = json_array();
        for (size_t k = 0; k < rs->teams[i]->n_members; k++)
            json_array_append_new(members, json_string(rs->teams[i]->members[k]));
        json_array_append_new(items, json_pack("{s:I,s:s,s:o}", "id", (json_int_t)rs->teams[i]->id,
                                               "name", rs->teams[i]->name, "members", members));
    }
    gx_page_answer(req, resp, "teams", items, "name", 0);
}

/* Dashboard statistics: outcomes per bucket over [from, to) and the queue now. */
void gx_h_stats_instances(gx_req *req, gx_resp *resp)
{
    int64_t now_ms = (int64_t)time(NULL) * 1000, from_ms, to_ms, step = 3600;
    const char *v;
    if ((v = gx_req_query(req, "step"))) {
        /* Seconds ("3600") or a duration ("15m", "1h", "1d"). */
        char *end;
        long long secs = strtoll(v, &end, 10);
        int64_t ms;
        if (*end == '\0' && end != v)
            step = secs;
        else if (orr_config_parse_duration(v, &ms) == ORR_OK)
            step = ms / 1000;
        else
            step = -1;
        if (step < 60 || step > 86400) {
            gx_resp_fail(resp, ORR_EINVAL, "step",
                         "must be 60 to 86400 seconds, or a duration such as 15m, 1h, 1d");
            return;
        }
    }
    /* Default: the last 24 hours in buckets aligned to the step, the last
     * bucket holding "now". */
    to_ms = (now_ms / (step * 1000) + 1) * step * 1000;
    from_ms = to_ms - 86400000;
    if ((v = gx_req_query(req, "from")) && gx_parse_time(v, &from_ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "from", "must be an ISO-8601 time");
        return;
    }
    if ((v = gx_req_query(req, "to")) && gx_parse_time(v, &to_ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "must be an ISO-8601 time");
        return;
    }
    if (to_ms <= from_ms || (to_ms - from_ms) / (step * 1000) > 10000) {
        gx_resp_fail(resp, ORR_EINVAL, "to",
                     "must be after from, with at most 10000 steps in between");
        return;
    }
    HL(InstanceStatsRequest) rq = HL_INIT(INSTANCE_STATS_REQUEST);
    rq.from_ms = from_ms;
    rq.to_ms = to_ms;
    rq.bucket_seconds = (int32_t)step;
    if ((v = gx_req_query(req, "team")))
        rq.team = (char *)v;
    HL(InstanceStatsResponse) * rs;
    if (gx_halley(req, resp, "InstanceStats", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *buckets = json_array();
    for (size_t i = 0; i < rs->n_buckets; i++) {
        const HL(StatsBucket) *b = rs->buckets[i];
        json_array_append_new(
            buckets,
            json_pack("{s:o,s:I,s:I,s:I,s:I,s:I}", "start", gx_json_time(b->start_ms), "success",
                      (json_int_t)b->success, "failed", (json_int_t)b->failed, "killed",
                      (json_int_t)b->killed, "timed_out", (json_int_t)b->timed_out,
                      "marked_success", (json_int_t)b->marked_success));
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:I,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I}}", "step", (json_int_t)step,
                           "buckets", buckets, "now", "waiting", (json_int_t)rs->waiting, "ready",
                           (json_int_t)rs->ready, "dispatched", (json_int_t)rs->dispatched,
                           "running", (json_int_t)rs->running, "running_slots",
                           (json_int_t)rs->running_slots, "active_tasks",
                           (json_int_t)rs->active_tasks));
}

/* ------------------------------------------------- third round: data sources */

/* Every data source (no secrets), optionally of one ?kind. */
void gx_h_datasources_list(gx_req *req, gx_resp *resp)
{
    HL(ListDataSourcesRequest) rq = HL_INIT(LIST_DATA_SOURCES_REQUEST);
    const char *kind = gx_req_query(req, "kind");
    rq.kind = (char *)(kind ? kind : "");
    HL(ListDataSourcesResponse) * ls;
    if (gx_halley(req, resp, "ListDataSources", &rq.base, (ProtobufCMessage **)&ls) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < ls->n_data_sources; i++)
        json_array_append_new(items, gx_datasource_json(ls->data_sources[i]));
    gx_page_answer(req, resp, "datasources", items, "name", 0);
}

static const char *gx_param_str(json_t *params, const char *a, const char *b)
{
    const char *v = json_string_value(json_object_get(params, a));
    if (!v && b)
        v = json_string_value(json_object_get(params, b));
    return v;
}

/* Port as a string: "port" may be a number or a string in the params. */
static const char *gx_param_port(gx_req *req, json_t *params, const char *def)
{
    json_t *p = json_object_get(params, "port");
    if (json_is_integer(p))
        return orr_arena_sprintf(req->arena, "%lld", (long long)json_integer_value(p));
    return json_is_string(p) ? json_string_value(p) : def;
}

static int gx_test_pg(gx_req *req, json_t *params, const char *secret, char *msg, size_t n)
{
    const char *keys[8], *vals[8];
    int k = 0;
#define GX_KV(K, V)                                                                                \
    do {                                                                                           \
        const char *v_ = (V);                                                                      \
        if (v_) {                                                                                  \
            keys[k] = (K);                                                                         \
            vals[k++] = v_;                                                                        \
        }                                                                                          \
    } while (0)
    GX_KV("host", gx_param_str(params, "host", NULL));
    GX_KV("port", gx_param_port(req, params, NULL));
    GX_KV("dbname", gx_param_str(params, "database", "dbname"));
    GX_KV("user", gx_param_str(params, "user", "username"));
    GX_KV("password", *secret ? secret : NULL);
    GX_KV("sslmode", gx_param_str(params, "sslmode", NULL));
    GX_KV("connect_timeout", "5");
#undef GX_KV
    keys[k] = vals[k] = NULL;
    PGconn *c = PQconnectdbParams(keys, vals, 0);
    int ok = c && PQstatus(c) == CONNECTION_OK;
    if (ok)
        snprintf(msg, n, "connected to PostgreSQL %d", PQserverVersion(c));
    else
        snprintf(msg, n, "%s", c ? PQerrorMessage(c) : "out of memory");
    PQfinish(c);
    return ok;
}

static int gx_test_mysql(gx_req *req, json_t *params, const char *secret, char *msg, size_t n)
{
    MYSQL *m = mysql_init(NULL);
    if (!m) {
        snprintf(msg, n, "out of memory");
        return 0;
    }
    unsigned int timeout = 5;
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
    const char *port = gx_param_port(req, params, "3306");
    char *end;
    long p = strtol(port, &end, 10);
    if (*end || p <= 0 || p > 65535) {
        snprintf(msg, n, "params.port: must be 1-65535");
        mysql_close(m);
        return 0;
    }
    const char *host = gx_param_str(params, "host", NULL);
    int ok = mysql_real_connect(
                 m, host ? host : "127.0.0.1", gx_param_str(params, "user", "username"), secret,
                 gx_param_str(params, "database", "dbname"), (unsigned)p, NULL, 0) != NULL;
    if (ok)
        snprintf(msg, n, "connected to %s", mysql_get_server_info(m));
    else
        snprintf(msg, n, "%s", mysql_error(m));
    mysql_close(m);
    return ok;
}

void gx_h_datasource_test(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    const char *name = gx_req_param(req, 0);
    if (!app->halley_worker) {
        gx_resp_fail(resp, ORR_EUNAVAIL, "datasource_test_token",
                     "connection tests are off: set [galaxy] datasource_test_token (the "
                     "[halley] worker token) in galaxyd's configuration");
        return;
    }
    HL(GetDataSourceSecretRequest) rq = HL_INIT(GET_DATA_SOURCE_SECRET_REQUEST);
    rq.name = (char *)name;
    HL(DataSourceSecret) *s = NULL;
    orr_err e;
    orr_err_clear(&e);
    orr_status rc = orr_rpc_call_unary(app->halley_worker, "GetDataSourceSecret", &rq.base,
                                       (ProtobufCMessage **)&s, app->rpc_timeout_ms, &e);
    if (rc != ORR_OK) {
        if (rc == ORR_EAUTH || rc == ORR_EPERM)
            orr_err_set(&e, ORR_EINTERNAL, "datasource_test_token",
                        "the metadata service refused [galaxy] datasource_test_token");
        else if (rc == ORR_ETIMEOUT)
            orr_err_set(&e, ORR_EUNAVAIL, NULL, "metadata service unavailable; retry shortly");
        gx_resp_err(resp, &e);
        return;
    }
    /* Wipe the clear secret when the request ends, whatever happens. */
    orr_arena_on_cleanup(req->arena, gx_free_secret, s);
    json_t *params = json_loads(s->params_json && *s->params_json ? s->params_json : "{}", 0, NULL);
    if (!json_is_object(params)) {
        json_decref(params);
        gx_resp_fail(resp, ORR_EINVAL, "params", "stored parameters are not a JSON object");
        return;
    }
    const char *secret = s->secret ? s->secret : "";
    char msg[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ok;
    if (strcmp(s->kind, "postgresql") == 0 || strcmp(s->kind, "postgres") == 0)
        ok = gx_test_pg(req, params, secret, msg, sizeof(msg));
    else if (strcmp(s->kind, "mysql") == 0 || strcmp(s->kind, "mariadb") == 0)
        ok = gx_test_mysql(req, params, secret, msg, sizeof(msg));
    else {
        json_decref(params);
        gx_resp_fail(resp, ORR_EINVAL, "kind",
                     "connection tests exist for postgresql and mysql, not %s", s->kind);
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    json_decref(params);
    gx_scrub_secret(msg, secret);
    size_t ml = strlen(msg);
    while (ml && (msg[ml - 1] == '\n' || msg[ml - 1] == ' '))
        msg[--ml] = '\0';
    int64_t elapsed = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ORR_INFO("data source test", "name=%s kind=%s ok=%d elapsed_ms=%lld by=%s", orr_log_q(name),
             s->kind, ok, (long long)elapsed, orr_log_q(req->who.name));
    gx_resp_json(
        resp, 200,
        json_pack("{s:b,s:s,s:I}", "ok", ok, "message", msg, "elapsed_ms", (json_int_t)elapsed));
}

/* ------------------------------------------------------------ executors */

/* Halley's inventory (slots, labels, last seen, active) merged with the
 * ZooKeeper nodes of the executors alive now (used slots, since). An
 * executor known to one side only is listed too. */
void gx_h_executors(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    if (!app->zk) {
        gx_resp_fail(resp, ORR_EUNAVAIL, "zk", "galaxyd has no [galaxy] zk configured");
        return;
    }
    orr_err e;
    orr_err_clear(&e);
    json_t *byid = json_object();
    HL(ListExecutorsRequest) rq = HL_INIT(LIST_EXECUTORS_REQUEST);
    HL(ListExecutorsResponse) * rs;
    if (gx_halley(req, resp, "ListExecutors", &rq.base, (ProtobufCMessage **)&rs) == ORR_OK) {
        for (size_t i = 0; i < rs->n_executors; i++) {
            const HL(Executor) *x = rs->executors[i];
            json_t *labels =
                json_loads(x->labels_json && *x->labels_json ? x->labels_json : "{}", 0, NULL);
            json_t *o = json_object();
            json_object_set_new(o, "id", json_string(x->id));
            json_object_set_new(o, "name", json_string(x->id));
            json_object_set_new(o, "host", json_string(x->host));
            json_object_set_new(o, "slots", json_integer(x->slots));
            json_object_set_new(o, "used", json_integer(x->used_slots));
            json_object_set_new(o, "labels", labels ? labels : json_object());
            json_object_set_new(o, "active", json_boolean(x->active));
            json_object_set_new(o, "last_seen", gx_json_time(x->last_seen_ms));
            json_object_set_new(o, "alive", json_false());
            json_object_set_new(o, "drained", json_boolean(x->drained));
            json_object_set_new(o, "slots_override",
                                x->has_slots_override ? json_integer(x->slots_override)
                                                      : json_null());
            json_t *lo = x->labels_override_json && *x->labels_override_json
                             ? json_loads(x->labels_override_json, 0, NULL)
                             : NULL;
            json_object_set_new(o, "labels_override", lo ? lo : json_null());
            json_object_set_new(byid, x->id, o);
        }
    } else if (resp->status != 501) {
        json_decref(byid);
        return; /* Halley down: answered */
    }
    char **names;
    size_t n;
    orr_status rc = orr_zk_children(app->zk, "/orrery/executors", req->arena, &names, &n, &e);
    if (rc == ORR_ENOTFOUND)
        n = 0;
    else if (rc != ORR_OK) {
        json_decref(byid);
        gx_resp_err(resp, &e);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        orr_buf b = ORR_BUF_INIT;
        const char *path = orr_arena_sprintf(req->arena, "/orrery/executors/%s", names[i]);
        json_t *card = NULL;
        if (orr_zk_get(app->zk, path, &b, &e) == ORR_OK && b.len)
            card = json_loadb(b.data, b.len, 0, NULL);
        orr_buf_free(&b);
        const char *id = json_string_value(json_object_get(card, "id"));
        if (!json_is_object(card) || !id) {
            json_decref(card);
            continue;
        }
        json_t *o = json_object_get(byid, id);
        if (!o) {
            o = json_object();
            json_object_set_new(o, "id", json_string(id));
            json_object_set_new(o, "name", json_string(id));
            json_object_set_new(o, "active", json_true());
            json_object_set_new(o, "last_seen", json_null());
            json_object_set_new(byid, id, o);
        }
        /* The live card wins for what changes by the second. */
        json_object_update(o, card);
        json_t *used = json_object_get(card, "used_slots");
        json_object_set_new(o, "used", json_is_integer(used) ? json_incref(used) : json_integer(0));
        json_object_set_new(o, "alive", json_true());
        json_object_set_new(o, "last_seen", gx_json_time((int64_t)time(NULL) * 1000));
        json_decref(card);
    }
    /* An administrator's settings win over what the executor announces
     * (keplerd applies them the same way): slots and labels are what the
     * scheduler uses, announced_* what the executor said. */
    json_t *items = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(byid, k, v)
    {
        if (!json_object_get(v, "drained"))
            json_object_set_new(v, "drained", json_false());
        json_t *so = json_object_get(v, "slots_override"),
               *lo = json_object_get(v, "labels_override");
        json_t *own_slots = json_object_get(v, "slots"), *own_labels = json_object_get(v, "labels");
        json_object_set(v, "announced_slots", own_slots ? own_slots : json_null());
        json_object_set(v, "announced_labels", own_labels ? own_labels : json_null());
        if (json_is_integer(so))
            json_object_set(v, "slots", so);
        else
            json_object_set_new(v, "slots_override", json_null());
        if (json_is_object(lo))
            json_object_set(v, "labels", lo);
        else
            json_object_set_new(v, "labels_override", json_null());
        if (!json_object_get(v, "labels"))
            json_object_set_new(v, "labels", json_object());
        json_array_append(items, v);
    }
    json_decref(byid);
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

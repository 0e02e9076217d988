/* gx_api_admin.c - resource pools, users, teams and data sources, plus the
 * operational endpoints (/healthz, /metrics, the OpenAPI document).
 *
 * Pools, users and teams are changed by admins only (the route table says
 * so); everyone logged in may read pools. Data-source passwords are
 * write-only: halleyd stores them encrypted and never returns them, and this
 * layer never echoes one back. */
#include <fcntl.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gx_app.h"
#include "orr_json.h"

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
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
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
    size_t n = teams ? json_array_size(teams) : 0;
    char **list = orr_arena_calloc(req->arena, n + 1, sizeof(*list));
    for (size_t i = 0; i < n; i++) {
        const char *t = json_string_value(json_array_get(teams, i));
        if (!t) {
            char p[32];
            gx_resp_fail(resp, ORR_EINVAL, orr_json_index_path(p, sizeof(p), "teams", i),
                         "must be a string");
            return;
        }
        list[i] = (char *)t;
    }
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
    HL(ListTeamsResponse) * rs;
    if (gx_halley(req, resp, "ListTeams", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_teams; i++)
        json_array_append_new(items, json_pack("{s:I,s:s}", "id", (json_int_t)rs->teams[i]->id,
                                               "name", rs->teams[i]->name));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
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
                 json_pack("{s:I,s:o,s:{s:I,s:I,s:I,s:I,s:I}}", "step", (json_int_t)step, "buckets",
                           buckets, "now", "waiting", (json_int_t)rs->waiting, "ready",
                           (json_int_t)rs->ready, "dispatched", (json_int_t)rs->dispatched,
                           "running", (json_int_t)rs->running, "running_slots",
                           (json_int_t)rs->running_slots));
}

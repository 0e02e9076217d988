/*
 * hl_api_registry.c - the registry RPCs: API tokens, executors, workflows,
 * code packages and their deployments, and the audit log.
 *
 * API tokens: "orr_" + 32 random bytes in unpadded base64url (47 bytes).
 * Only the SHA-256 of the whole text is stored; the token itself is
 * returned once, by CreateApiToken. AuthenticateApiToken is the hot path of
 * every token-authenticated request, so it is one statement: the lookup by
 * hash, the user and their teams, and - at most once a minute per token - the
 * last_used_at refresh in a data-modifying CTE that touches no row (and so
 * writes nothing) in between. Malformed tokens never reach the database.
 *
 * Every change is one transaction: the row, its audit record (tokens,
 * workflows, packages) and its event (workflows, packages, deployments).
 * PutExecutor is the executors' heartbeat, so it writes neither.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_name.h"
#include <sodium.h>

#include "orr_buf.h"
#include "orr_json.h"
#include "orr_log.h"

#define HL_TOKEN_PREFIX       "orr_"
#define HL_TOKEN_RAW_BYTES    32
#define HL_TOKEN_TEXT_BYTES   (4 + 43) /* prefix + unpadded base64 of 32 bytes */
#define HL_SHA_HEX_BYTES      (crypto_hash_sha256_BYTES * 2)
#define HL_MAX_WORKFLOW_TASKS 10000

typedef Orrery__Halley__V1__ApiToken hl_pb_token;
typedef Orrery__Halley__V1__Executor hl_pb_executor;
typedef Orrery__Halley__V1__Workflow hl_pb_workflow;
typedef Orrery__Halley__V1__CodePackage hl_pb_package;
typedef Orrery__Halley__V1__Deployment hl_pb_deployment;

/* ------------------------------------------------------------ statements */

#define HL_TOKEN_COLS                                                                              \
    "t.id, u.name, t.name, coalesce(" HL_MS("t.expires_at") ", 0), " HL_MS(                        \
        "t.created_at") ", coalesce(" HL_MS("t.last_used_at") ", 0)"

static hl_stmt q_token_user = HL_STMT("SELECT id, active FROM users WHERE name = $1");
static hl_stmt q_insert_token =
    HL_STMT("INSERT INTO api_tokens (user_id, token_hash, name, expires_at)"
            " VALUES ($1::int8, decode($2, 'hex'), $3,"
            " CASE WHEN $4::int8 = 0 THEN NULL ELSE to_timestamp($4::int8 / 1000.0) END)"
            " RETURNING id");
static hl_stmt q_get_token = HL_STMT("SELECT " HL_TOKEN_COLS " FROM api_tokens t"
                                     " JOIN users u ON u.id = t.user_id WHERE t.id = $1::int8");
static hl_stmt q_list_tokens = HL_STMT("SELECT " HL_TOKEN_COLS " FROM api_tokens t"
                                       " JOIN users u ON u.id = t.user_id"
                                       " WHERE t.revoked_at IS NULL AND ($1 = '' OR u.name = $1)"
                                       " ORDER BY u.name, t.id");
static hl_stmt q_user_exists = HL_STMT("SELECT 1 FROM users WHERE name = $1");
/* $1 id, $2 user ("" = any). Locks the token row. */
static hl_stmt q_lock_token =
    HL_STMT("SELECT t.revoked_at IS NOT NULL, u.name, t.name FROM api_tokens t"
            " JOIN users u ON u.id = t.user_id WHERE t.id = $1::int8 AND ($2 = '' OR u.name = $2)"
            " FOR UPDATE OF t");
static hl_stmt q_revoke_token =
    HL_STMT("UPDATE api_tokens SET revoked_at = now() WHERE id = $1::int8");
/* The hot path: $1 hex SHA-256. Columns: user id, name, role, active,
 * teams (comma-joined), live (not revoked, not expired), rows touched,
 * expiry (ms, 0 = never). */
static hl_stmt q_auth_token = HL_STMT(
    "WITH hit AS (SELECT t.id AS tid, t.user_id AS uid,"
    "  t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AS live,"
    "  t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute' AS stale,"
    "  coalesce(" HL_MS("t.expires_at") ", 0) AS exp"
    "  FROM api_tokens t WHERE t.token_hash = decode($1, 'hex')),"
    " touch AS (UPDATE api_tokens x SET last_used_at = now() FROM hit, users u"
    "  WHERE x.id = hit.tid AND hit.live AND hit.stale AND u.id = hit.uid AND u.active"
    "  RETURNING x.id)"
    " SELECT u.id, u.name, u.role, u.active, coalesce((SELECT string_agg(tm.name, ',' ORDER BY"
    "  tm.name) FROM user_teams ut JOIN teams tm ON tm.id = ut.team_id WHERE ut.user_id = u.id),"
    "  ''), hit.live, (SELECT count(*) FROM touch), hit.exp"
    " FROM hit JOIN users u ON u.id = hit.uid");

/* used_slots weighs each dispatched or running instance by the slots of the
 * task version it runs (default 1), as InstanceStats' running_slots does. */
#define HL_EXECUTOR_COLS                                                                           \
    "e.id, e.host, e.slots, e.labels::text, e.active,"                                             \
    " coalesce((SELECT sum(CASE WHEN jsonb_typeof(v.spec -> 'slots') = 'number'"                   \
    "  THEN (v.spec ->> 'slots')::numeric::int8 ELSE 1 END)"                                       \
    "  FROM instances i JOIN task_versions v ON v.task_id = i.task_id"                             \
    "  AND v.version = i.task_version WHERE i.executor = e.id"                                     \
    "  AND i.state IN ('dispatched', 'running')), 0), " HL_MS("e.last_seen")

static hl_stmt q_put_executor =
    HL_STMT("INSERT INTO executors (id, host, slots, labels, active, last_seen)"
            " VALUES ($1, $2, $3::int, $4::jsonb, $5::bool, now())"
            " ON CONFLICT (id) DO UPDATE SET host = excluded.host, slots = excluded.slots,"
            " labels = excluded.labels, active = excluded.active, last_seen = now()");
/* $1 active only, $2 id ("" = all). */
static hl_stmt q_list_executors =
    HL_STMT("SELECT " HL_EXECUTOR_COLS " FROM executors e WHERE (NOT $1::bool OR e.active)"
            " AND ($2 = '' OR e.id = $2) ORDER BY e.id");

/* Columns: id, name, team, task ids (comma-joined, ascending), created_at. */
#define HL_WORKFLOW_COLS                                                                           \
    "w.id, w.name, tm.name, coalesce(array_to_string(array(SELECT wt.task_id"                      \
    " FROM workflow_tasks wt WHERE wt.workflow_id = w.id ORDER BY wt.task_id), ','), ''), " HL_MS( \
        "w.created_at")

static hl_stmt q_team_id = HL_STMT("SELECT id FROM teams WHERE name = $1");
static hl_stmt q_upsert_workflow =
    HL_STMT("INSERT INTO workflows (name, team_id) VALUES ($1, $2::int8)"
            " ON CONFLICT (name) DO UPDATE SET team_id = excluded.team_id RETURNING id");
/* First position (1-based) of $1 whose task does not exist. */
static hl_stmt q_missing_task =
    HL_STMT("SELECT x.ord FROM unnest($1::int8[]) WITH ORDINALITY AS x(id, ord)"
            " WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = x.id) ORDER BY x.ord LIMIT 1");
static hl_stmt q_clear_workflow =
    HL_STMT("DELETE FROM workflow_tasks WHERE workflow_id = $1::int8");
static hl_stmt q_fill_workflow = HL_STMT(
    "INSERT INTO workflow_tasks (workflow_id, task_id) SELECT $1::int8, unnest($2::int8[])");
/* $1 id (0 = any), $2 name ("" = any), $3 team ("" = any). */
static hl_stmt q_list_workflows =
    HL_STMT("SELECT " HL_WORKFLOW_COLS " FROM workflows w JOIN teams tm ON tm.id = w.team_id"
            " WHERE ($1::int8 = 0 OR w.id = $1::int8) AND ($2 = '' OR w.name = $2)"
            " AND ($3 = '' OR tm.name = $3) ORDER BY w.name");

#define HL_PACKAGE_COLS                                                                            \
    "p.id, p.name, p.sha256, p.size, p.source, p.created_by, " HL_MS("p.created_at")

static hl_stmt q_insert_package =
    HL_STMT("INSERT INTO code_packages (name, sha256, size, source, created_by)"
            " VALUES ($1, $2, $3::int8, $4, $5) RETURNING id");
static hl_stmt q_existing_package =
    HL_STMT("SELECT id FROM code_packages WHERE name = $1 AND sha256 = $2");
/* $1 id (0 = any), $2 name ("" = any), $3 limit. Newest (highest id) first. */
static hl_stmt q_list_packages =
    HL_STMT("SELECT " HL_PACKAGE_COLS " FROM code_packages p"
            " WHERE ($1::int8 = 0 OR p.id = $1::int8) AND ($2 = '' OR p.name = $2)"
            " ORDER BY p.id DESC LIMIT $3::int");
#define HL_DEPLOYMENT_COLS                                                                         \
    "d.package_id, d.executor_id, d.result, d.message, " HL_MS("d.updated_at")
static hl_stmt q_deployments =
    HL_STMT("SELECT " HL_DEPLOYMENT_COLS " FROM package_deployments d"
            " WHERE d.package_id = ANY($1::int8[]) ORDER BY d.package_id DESC, d.executor_id");
static hl_stmt q_report_deployment =
    HL_STMT("INSERT INTO package_deployments AS d (package_id, executor_id, result, message)"
            " VALUES ($1::int8, $2, $3, $4) ON CONFLICT (package_id, executor_id) DO UPDATE"
            " SET result = excluded.result, message = excluded.message, updated_at = now()"
            " RETURNING " HL_DEPLOYMENT_COLS);

#define HL_AUDIT_COLS "id, actor, action, object, detail::text, " HL_MS("at")
/* $1 before id (0 = newest), $2 actor, $3 object prefix, $4 limit. */
static hl_stmt q_list_audit =
    HL_STMT("SELECT " HL_AUDIT_COLS " FROM audit_log"
            " WHERE ($1::int8 = 0 OR id < $1::int8) AND ($2 = '' OR actor = $2)"
            " AND ($3 = '' OR starts_with(object, $3)) ORDER BY id DESC LIMIT $4::int");
/* A page of packages, newest first: id < $1 unless $1 is 0. */
static hl_stmt q_page_packages =
    HL_STMT("SELECT " HL_PACKAGE_COLS " FROM code_packages p"
            " WHERE ($1::int8 = 0 OR p.id < $1::int8) AND ($2 = '' OR p.name = $2)"
            " ORDER BY p.id DESC LIMIT $3::int");

/* ------------------------------------------------------------ helpers */

static int64_t hl__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if s is 1..max bytes of printable ASCII without spaces. */
static int hl__is_printable(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

/* Role enum from its stored name (UNSPECIFIED if unknown). */
static Orrery__Halley__V1__Role hl__role(const char *name)
{
    if (strcmp(name, "admin") == 0)
        return ORRERY__HALLEY__V1__ROLE__ROLE_ADMIN;
    if (strcmp(name, "developer") == 0)
        return ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER;
    if (strcmp(name, "viewer") == 0)
        return ORRERY__HALLEY__V1__ROLE__ROLE_VIEWER;
    return ORRERY__HALLEY__V1__ROLE__ROLE_UNSPECIFIED;
}

/* Split "a,b,c" (names without commas) into a string array in the arena. */
static char **hl__split(orr_arena *a, const char *joined, size_t *n_out)
{
    size_t n = joined[0] ? 1 : 0;
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    char **out = orr_arena_alloc(a, sizeof *out * (n ? n : 1));
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

/* Parse "1,2,3" into an int64 array in the arena. */
static int64_t *hl__split_ids(orr_arena *a, const char *joined, size_t *n_out)
{
    size_t n = joined[0] ? 1 : 0;
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    int64_t *out = orr_arena_alloc(a, sizeof *out * (n ? n : 1));
    const char *p = joined;
    for (size_t i = 0; i < n; i++) {
        char *end;
        out[i] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    *n_out = n;
    return out;
}

/* "{1,2,3}" in the arena: a PostgreSQL int8[] literal. */
static const char *hl__id_array(orr_arena *a, const int64_t *ids, size_t n)
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

/* ------------------------------------------------------------ API tokens */

static void hl__fill_token(const PGresult *r, int row, hl_pb_token *t)
{
    orrery__halley__v1__api_token__init(t);
    t->id = hl_val_i64(r, row, 0);
    t->user = (char *)hl_val(r, row, 1);
    t->name = (char *)hl_val(r, row, 2);
    t->expires_at_ms = hl_val_i64(r, row, 3);
    t->created_at_ms = hl_val_i64(r, row, 4);
    t->last_used_ms = hl_val_i64(r, row, 5);
}

/* Hex SHA-256 of the token text into hex (HL_SHA_HEX_BYTES + 1). */
static void hl__token_hash(const char *token, char hex[HL_SHA_HEX_BYTES + 1])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)token, strlen(token));
    sodium_bin2hex(hex, HL_SHA_HEX_BYTES + 1, h, sizeof h);
}

HL_UNARY(hl_api_create_api_token)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__CreateApiTokenRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->user, 128))
        return orr_err_set(err, ORR_EINVAL, "user", "a user name is required");
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (rq->expires_at_ms < 0 || (rq->expires_at_ms > 0 && rq->expires_at_ms <= hl__now_ms()))
        return orr_err_set(err, ORR_EINVAL, "expires_at_ms", "must be 0 (never) or in the future");

    unsigned char raw[HL_TOKEN_RAW_BYTES];
    randombytes_buf(raw, sizeof raw);
    char *secret = orr_arena_alloc(a, HL_TOKEN_TEXT_BYTES + 1);
    memcpy(secret, HL_TOKEN_PREFIX, 4);
    sodium_bin2base64(secret + 4, HL_TOKEN_TEXT_BYTES + 1 - 4, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    char hash[HL_SHA_HEX_BYTES + 1];
    hl__token_hash(secret, hash);

    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *pu[1] = {rq->user};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_token_user, 1, pu, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "user", "no such user \"%s\"", rq->user);
        goto out;
    }
    if (!hl_val_bool(r, 0, 1)) {
        s = orr_err_set(err, ORR_ESTATE, "user", "user \"%s\" is inactive", rq->user);
        goto out;
    }
    const char *pi[4] = {hl_val(r, 0, 0), hash, rq->name, hl_i64s(a, rq->expires_at_ms)};
    s = hl_db_query(c, a, &q_insert_token, 4, pi, &r, err);
    if (s == ORR_EEXIST)
        s = orr_err_set(err, ORR_EEXIST, "name", "user \"%s\" has a token named \"%s\"", rq->user,
                        rq->name);
    if (s != ORR_OK)
        goto out;
    const char *pid[1] = {hl_val(r, 0, 0)};
    if ((s = hl_audit(c, a, rq->actor, "token.create", orr_arena_sprintf(a, "token:%s", pid[0]),
                      orr_arena_sprintf(a, "{\"user\":%s,\"name\":%s}", hl_jstr(a, rq->user),
                                        hl_jstr(a, rq->name)),
                      err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_get_token, 1, pid, &r, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    Orrery__Halley__V1__CreateApiTokenResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__create_api_token_response__init(o);
    o->token = orr_arena_alloc(a, sizeof *o->token);
    hl__fill_token(r, 0, o->token);
    o->secret = secret;
    *resp = &o->base;
    ORR_INFO("api token created", "token_id=%lld user=%s name=%s actor=%s", (long long)o->token->id,
             orr_log_q(rq->user), orr_log_q(rq->name), orr_log_q(rq->actor));
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_list_api_tokens)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListApiTokensRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (rq->user[0] && !hl_is_name(rq->user, 128))
        return orr_err_set(err, ORR_EINVAL, "user", "not a user name");
    const char *p[1] = {rq->user};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_tokens, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    int n = PQntuples(r);
    if (n == 0 && rq->user[0]) {
        PGresult *u;
        if ((s = hl_db_query_once(hc->db, a, &q_user_exists, 1, p, &u, err)) != ORR_OK)
            return s;
        if (PQntuples(u) == 0)
            return orr_err_set(err, ORR_ENOTFOUND, "user", "no such user \"%s\"", rq->user);
    }
    Orrery__Halley__V1__ListApiTokensResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_api_tokens_response__init(o);
    o->n_tokens = (size_t)n;
    o->tokens = orr_arena_alloc(a, sizeof *o->tokens * (size_t)(n ? n : 1));
    hl_pb_token *ts = orr_arena_alloc(a, sizeof *ts * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        hl__fill_token(r, i, &ts[i]);
        o->tokens[i] = &ts[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_revoke_api_token)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__RevokeApiTokenRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (rq->id <= 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if (rq->user[0] && !hl_is_name(rq->user, 128))
        return orr_err_set(err, ORR_EINVAL, "user", "not a user name");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[2] = {hl_i64s(a, rq->id), rq->user};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_lock_token, 2, p, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "id", "no token %lld%s%s", (long long)rq->id,
                        rq->user[0] ? " of user " : "", rq->user);
        goto out;
    }
    if (hl_val_bool(r, 0, 0)) { /* revoked already: nothing changes, nothing to audit */
        s = hl_db_commit(c, err);
    } else if ((s = hl_db_query(c, a, &q_revoke_token, 1, p, NULL, err)) == ORR_OK &&
               (s = hl_audit(c, a, rq->actor, "token.revoke",
                             orr_arena_sprintf(a, "token:%lld", (long long)rq->id),
                             orr_arena_sprintf(a, "{\"user\":%s,\"name\":%s}",
                                               hl_jstr(a, hl_val(r, 0, 1)),
                                               hl_jstr(a, hl_val(r, 0, 2))),
                             err)) == ORR_OK &&
               (s = hl_db_commit(c, err)) == ORR_OK) {
        ORR_INFO("api token revoked", "token_id=%lld user=%s actor=%s", (long long)rq->id,
                 orr_log_q(hl_val(r, 0, 1)), orr_log_q(rq->actor));
    }
    if (s == ORR_OK) {
        Orrery__Halley__V1__RevokeApiTokenResponse *o = orr_arena_alloc(a, sizeof *o);
        orrery__halley__v1__revoke_api_token_response__init(o);
        *resp = &o->base;
    }
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_authenticate_api_token)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__AuthenticateApiTokenRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    Orrery__Halley__V1__AuthenticateResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__authenticate_response__init(o);
    *resp = &o->base;
    if (strlen(rq->secret) != HL_TOKEN_TEXT_BYTES || strncmp(rq->secret, HL_TOKEN_PREFIX, 4) != 0)
        return ORR_OK; /* not one of ours: no query */
    char hash[HL_SHA_HEX_BYTES + 1];
    hl__token_hash(rq->secret, hash);
    const char *p[1] = {hash};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_auth_token, 1, p, &r, err);
    if (s != ORR_OK) {
        *resp = NULL;
        return s;
    }
    if (PQntuples(r) == 0 || !hl_val_bool(r, 0, 3) || !hl_val_bool(r, 0, 5))
        return ORR_OK; /* unknown, inactive user, revoked or expired */
    Orrery__Halley__V1__User *u = orr_arena_alloc(a, sizeof *u);
    orrery__halley__v1__user__init(u);
    u->id = hl_val_i64(r, 0, 0);
    u->name = (char *)hl_val(r, 0, 1);
    u->role = hl__role(hl_val(r, 0, 2));
    u->active = 1;
    u->teams = hl__split(a, hl_val(r, 0, 4), &u->n_teams);
    o->ok = 1;
    o->user = u;
    o->expires_at_ms = hl_val_i64(r, 0, 7);
    return ORR_OK;
}

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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__PutExecutorRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->id, 128))
        return orr_err_set(err, ORR_EINVAL, "id", "must be " ORR_NAME_RULE);
    if (!hl__is_printable(rq->host, 255))
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListExecutorsRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    const char *p[2] = {rq->active_only ? "true" : "false", ""};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_executors, 2, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListExecutorsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_executors_response__init(o);
    int n = PQntuples(r);
    o->n_executors = (size_t)n;
    o->executors = orr_arena_alloc(a, sizeof *o->executors * (size_t)(n ? n : 1));
    hl_pb_executor *es = orr_arena_alloc(a, sizeof *es * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        hl__fill_executor(r, i, &es[i]);
        o->executors[i] = &es[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ workflows */

static void hl__fill_workflow(orr_arena *a, const PGresult *r, int row, hl_pb_workflow *w)
{
    orrery__halley__v1__workflow__init(w);
    w->id = hl_val_i64(r, row, 0);
    w->name = (char *)hl_val(r, row, 1);
    w->team = (char *)hl_val(r, row, 2);
    w->task_ids = hl__split_ids(a, hl_val(r, row, 3), &w->n_task_ids);
    w->created_at_ms = hl_val_i64(r, row, 4);
}

HL_UNARY(hl_api_put_workflow)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__PutWorkflowRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "a team name is required");
    if (rq->n_task_ids > HL_MAX_WORKFLOW_TASKS)
        return orr_err_set(err, ORR_EINVAL, "task_ids", "at most %d tasks", HL_MAX_WORKFLOW_TASKS);
    for (size_t i = 0; i < rq->n_task_ids; i++) {
        if (rq->task_ids[i] <= 0)
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "task_ids[%zu]", i),
                               "must be positive");
        for (size_t j = 0; j < i; j++) /* quadratic, bounded by HL_MAX_WORKFLOW_TASKS */
            if (rq->task_ids[j] == rq->task_ids[i])
                return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "task_ids[%zu]", i),
                                   "task %lld is listed twice", (long long)rq->task_ids[i]);
    }
    const char *ids = hl__id_array(a, rq->task_ids, rq->n_task_ids);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *pt[1] = {rq->team};
    const char *pm[1] = {ids};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_team_id, 1, pt, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "team", "no such team \"%s\"", rq->team);
        goto out;
    }
    const char *pw[2] = {rq->name, hl_val(r, 0, 0)};
    if ((s = hl_db_query(c, a, &q_missing_task, 1, pm, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) > 0) {
        long long pos = hl_val_i64(r, 0, 0) - 1;
        s = orr_err_set(err, ORR_ENOTFOUND, orr_arena_sprintf(a, "task_ids[%lld]", pos),
                        "no such task %lld", (long long)rq->task_ids[pos]);
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_upsert_workflow, 2, pw, &r, err)) != ORR_OK)
        goto out;
    const char *wid = hl_val(r, 0, 0);
    const char *pf[2] = {wid, ids};
    const char *pl[3] = {wid, "", ""};
    if ((s = hl_db_query(c, a, &q_clear_workflow, 1, pf, NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_fill_workflow, 2, pf, NULL, err)) != ORR_OK ||
        (s = hl_audit(c, a, rq->actor, "workflow.put",
                      orr_arena_sprintf(a, "workflow:%s", rq->name),
                      orr_arena_sprintf(a, "{\"team\":%s,\"tasks\":%zu}", hl_jstr(a, rq->team),
                                        rq->n_task_ids),
                      err)) != ORR_OK ||
        (s = hl_emit(c, a, "workflow.updated", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"id\":%s,\"name\":%s,\"team\":%s}", wid,
                                       hl_jstr(a, rq->name), hl_jstr(a, rq->team)),
                     NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_list_workflows, 3, pl, &r, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_pb_workflow *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_workflow(a, r, 0, o);
    *resp = &o->base;
    ORR_INFO("workflow saved", "workflow_id=%lld name=%s team=%s tasks=%zu", (long long)o->id,
             orr_log_q(rq->name), orr_log_q(rq->team), rq->n_task_ids);
out:
    hl_db_put(hc->db, c);
    return s;
}

/* Get-by-id-or-name requests: id > 0 or a valid name (or both). */
static orr_status hl__id_or_name(int64_t id, const char *name, orr_err *err)
{
    if (id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if (name[0] && !hl_is_name(name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (id == 0 && !name[0])
        return orr_err_set(err, ORR_EINVAL, "id", "give id or name");
    return ORR_OK;
}

HL_UNARY(hl_api_get_workflow)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__GetWorkflowRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    orr_status bad = hl__id_or_name(rq->id, rq->name, err);
    if (bad != ORR_OK)
        return bad;
    const char *p[3] = {hl_i64s(a, rq->id), rq->name, ""};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_workflows, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, rq->id ? "id" : "name", "no such workflow");
    hl_pb_workflow *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_workflow(a, r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_workflows)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListWorkflowsRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (rq->team[0] && !hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "not a team name");
    const char *p[3] = {"0", "", rq->team};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_workflows, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListWorkflowsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_workflows_response__init(o);
    int n = PQntuples(r);
    o->n_workflows = (size_t)n;
    o->workflows = orr_arena_alloc(a, sizeof *o->workflows * (size_t)(n ? n : 1));
    hl_pb_workflow *ws = orr_arena_alloc(a, sizeof *ws * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        hl__fill_workflow(a, r, i, &ws[i]);
        o->workflows[i] = &ws[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ code packages */

static void hl__fill_deployment(const PGresult *r, int row, hl_pb_deployment *d)
{
    orrery__halley__v1__deployment__init(d);
    d->package_id = hl_val_i64(r, row, 0);
    d->executor = (char *)hl_val(r, row, 1);
    d->result = (char *)hl_val(r, row, 2);
    d->message = (char *)hl_val(r, row, 3);
    d->updated_at_ms = hl_val_i64(r, row, 4);
}

/* Packages of result r (HL_PACKAGE_COLS, id descending) with their
 * deployments, read on c. *out is an arena array of n pointers. */
static orr_status hl__read_packages(hl_conn *c, orr_arena *a, const PGresult *r,
                                    hl_pb_package ***out, size_t *n_out, orr_err *err)
{
    int n = PQntuples(r);
    hl_pb_package **ps = orr_arena_alloc(a, sizeof *ps * (size_t)(n ? n : 1));
    hl_pb_package *pk = orr_arena_alloc(a, sizeof *pk * (size_t)(n ? n : 1));
    int64_t *ids = orr_arena_alloc(a, sizeof *ids * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__code_package__init(&pk[i]);
        pk[i].id = ids[i] = hl_val_i64(r, i, 0);
        pk[i].name = (char *)hl_val(r, i, 1);
        pk[i].sha256 = (char *)hl_val(r, i, 2);
        pk[i].size = hl_val_i64(r, i, 3);
        pk[i].source = (char *)hl_val(r, i, 4);
        pk[i].created_by = (char *)hl_val(r, i, 5);
        pk[i].created_at_ms = hl_val_i64(r, i, 6);
        ps[i] = &pk[i];
    }
    *out = ps;
    *n_out = (size_t)n;
    if (n == 0)
        return ORR_OK;
    const char *p[1] = {hl__id_array(a, ids, (size_t)n)};
    PGresult *d;
    orr_status s = hl_db_query(c, a, &q_deployments, 1, p, &d, err);
    if (s != ORR_OK)
        return s;
    /* Both sides are in descending package id: one merge pass. */
    int nd = PQntuples(d), k = 0;
    hl_pb_deployment *ds = orr_arena_alloc(a, sizeof *ds * (size_t)(nd ? nd : 1));
    for (int i = 0; i < n; i++) {
        while (k < nd && hl_val_i64(d, k, 0) > pk[i].id)
            k++;
        int first = k;
        while (k < nd && hl_val_i64(d, k, 0) == pk[i].id)
            k++;
        pk[i].n_deployments = (size_t)(k - first);
        pk[i].deployments =
            orr_arena_alloc(a, sizeof *pk[i].deployments * (size_t)(k > first ? k - first : 1));
        for (int j = first; j < k; j++) {
            hl__fill_deployment(d, j, &ds[j]);
            pk[i].deployments[j - first] = &ds[j];
        }
    }
    return ORR_OK;
}

static int hl__is_sha256(const char *s)
{
    if (strlen(s) != 64)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

HL_UNARY(hl_api_create_code_package)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__CreateCodePackageRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl__is_sha256(rq->sha256))
        return orr_err_set(err, ORR_EINVAL, "sha256", "must be 64 lower-case hex digits");
    if (rq->size <= 0)
        return orr_err_set(err, ORR_EINVAL, "size", "must be positive");
    if (!hl__is_printable(rq->source, 4096))
        return orr_err_set(err, ORR_EINVAL, "source",
                           "the archive's blob URL is required (1-4096 bytes, no spaces)");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[5] = {rq->name, rq->sha256, hl_i64s(a, rq->size), rq->source, rq->actor};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    s = hl_db_query(c, a, &q_insert_package, 5, p, &r, err);
    if (s == ORR_EEXIST) {
        hl_db_rollback(c);
        PGresult *e;
        long long id = 0;
        if (hl_db_query(c, a, &q_existing_package, 2, p, &e, err) == ORR_OK && PQntuples(e) > 0)
            id = hl_val_i64(e, 0, 0);
        s = orr_err_set(err, ORR_EEXIST, "sha256",
                        "package \"%s\" with this sha256 is stored (id %lld)", rq->name, id);
        goto out;
    }
    if (s != ORR_OK)
        goto out;
    const char *id = hl_val(r, 0, 0);
    const char *pg[3] = {id, "", "1"};
    hl_pb_package **ps;
    size_t n;
    if ((s = hl_audit(c, a, rq->actor, "package.create", orr_arena_sprintf(a, "package:%s", id),
                      orr_arena_sprintf(a, "{\"name\":%s,\"sha256\":\"%s\",\"size\":%lld}",
                                        hl_jstr(a, rq->name), rq->sha256, (long long)rq->size),
                      err)) != ORR_OK ||
        (s = hl_emit(c, a, "package.created", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"id\":%s,\"name\":%s,\"sha256\":\"%s\",\"source\":%s}",
                                       id, hl_jstr(a, rq->name), rq->sha256,
                                       hl_jstr(a, rq->source)),
                     NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_list_packages, 3, pg, &r, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    if ((s = hl__read_packages(c, a, r, &ps, &n, err)) != ORR_OK)
        goto out;
    *resp = &ps[0]->base;
    ORR_INFO("code package created", "package_id=%lld name=%s sha256=%s", (long long)ps[0]->id,
             orr_log_q(rq->name), rq->sha256);
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_get_code_package)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__GetCodePackageRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    orr_status bad = hl__id_or_name(rq->id, rq->name, err);
    if (bad != ORR_OK)
        return bad;
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[3] = {hl_i64s(a, rq->id), rq->name, "1"};
    PGresult *r;
    hl_pb_package **ps;
    size_t n = 0;
    if ((s = hl_db_query(c, a, &q_list_packages, 3, p, &r, err)) == ORR_OK)
        s = hl__read_packages(c, a, r, &ps, &n, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (n == 0)
        return orr_err_set(err, ORR_ENOTFOUND, rq->id ? "id" : "name", "no such code package");
    *resp = &ps[0]->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_code_packages)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListCodePackagesRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (rq->name[0] && !hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "not a package name");
    int size, have;
    const char *before;
    /* limit is the deprecated name of page_size */
    orr_status s = rq->page_size || !rq->limit
                       ? hl_page_size(rq->page_size, "page_size", HL_PAGE_DEFAULT, HL_PAGE_MAX,
                                      &size, err)
                       : hl_page_size(rq->limit, "limit", HL_PAGE_DEFAULT, HL_PAGE_MAX, &size, err);
    if (s != ORR_OK ||
        (s = hl_page_parse(a, "packages", "i", rq->page_token, &before, &have, err)) != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[3] = {before, rq->name, orr_arena_sprintf(a, "%d", size + 1)};
    PGresult *r;
    Orrery__Halley__V1__ListCodePackagesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_code_packages_response__init(o);
    if ((s = hl_db_query(c, a, &q_page_packages, 3, p, &r, err)) == ORR_OK)
        s = hl__read_packages(c, a, r, &o->packages, &o->n_packages, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (o->n_packages > (size_t)size) {
        o->n_packages = (size_t)size;
        const char *k[1] = {hl_i64s(a, o->packages[size - 1]->id)};
        o->next_page_token = (char *)hl_page_make(a, "packages", "i", k);
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_report_deployment)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ReportDeploymentRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (rq->package_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "package_id", "must be positive");
    if (!hl_is_name(rq->executor, 128))
        return orr_err_set(err, ORR_EINVAL, "executor", "must be " ORR_NAME_RULE);
    if (strcmp(rq->result, "pending") != 0 && strcmp(rq->result, "ok") != 0 &&
        strcmp(rq->result, "failed") != 0)
        return orr_err_set(err, ORR_EINVAL, "result", "must be pending, ok or failed");
    if (strlen(rq->message) > 16384)
        return orr_err_set(err, ORR_EINVAL, "message", "at most 16 KiB");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[4] = {hl_i64s(a, rq->package_id), rq->executor, rq->result, rq->message};
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK) {
        s = hl_db_query(c, a, &q_report_deployment, 4, p, &r, err);
        if (s == ORR_ENOTFOUND) /* foreign key: no such package */
            s = orr_err_set(err, ORR_ENOTFOUND, "package_id", "no code package %lld",
                            (long long)rq->package_id);
    }
    if (s == ORR_OK &&
        (s = hl_emit(c, a, "package.deployed", 0, 0, rq->executor,
                     orr_arena_sprintf(a, "{\"package_id\":%s,\"executor\":%s,\"result\":\"%s\"}",
                                       p[0], hl_jstr(a, rq->executor), rq->result),
                     NULL, err)) == ORR_OK)
        s = hl_db_commit(c, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    hl_pb_deployment *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_deployment(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------------ audit log */

HL_UNARY(hl_api_list_audit)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListAuditRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    int size, have;
    const char *before;
    orr_status ps = hl_page_size(rq->page_size, "page_size", HL_PAGE_DEFAULT, HL_PAGE_MAX, &size,
                                 err);
    if (ps != ORR_OK ||
        (ps = hl_page_parse(a, "audit", "i", rq->page_token, &before, &have, err)) != ORR_OK)
        return ps;
    /* before_id is the deprecated form of page_token */
    if (!have && rq->before_id < 0)
        return orr_err_set(err, ORR_EINVAL, "before_id", "must be 0 (newest) or positive");
    if (!have)
        before = hl_i64s(a, rq->before_id);
    if (strlen(rq->actor) > 256)
        return orr_err_set(err, ORR_EINVAL, "actor", "at most 256 bytes");
    if (strlen(rq->object_prefix) > 256)
        return orr_err_set(err, ORR_EINVAL, "object_prefix", "at most 256 bytes");
    const char *p[4] = {before, rq->actor, rq->object_prefix, orr_arena_sprintf(a, "%d", size + 1)};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_audit, 4, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListAuditResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_audit_response__init(o);
    int n = PQntuples(r) > size ? size : PQntuples(r);
    o->n_entries = (size_t)n;
    o->entries = orr_arena_alloc(a, sizeof *o->entries * (size_t)(n ? n : 1));
    Orrery__Halley__V1__AuditEntry *es = orr_arena_alloc(a, sizeof *es * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__audit_entry__init(&es[i]);
        es[i].id = hl_val_i64(r, i, 0);
        es[i].actor = (char *)hl_val(r, i, 1);
        es[i].action = (char *)hl_val(r, i, 2);
        es[i].object = (char *)hl_val(r, i, 3);
        es[i].detail_json = (char *)hl_val(r, i, 4);
        es[i].at_ms = hl_val_i64(r, i, 5);
        o->entries[i] = &es[i];
    }
    if (PQntuples(r) > size) {
        const char *k[1] = {hl_i64s(a, es[n - 1].id)};
        o->next_page_token = (char *)hl_page_make(a, "audit", "i", k);
    }
    *resp = &o->base;
    return ORR_OK;
}

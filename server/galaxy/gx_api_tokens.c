/* gx_api_tokens.c - API tokens for service accounts: /api/v1/tokens and the
 * "Authorization: Bearer orr_..." path of authentication.
 *
 * A token acts as its user, with the user's current role and teams. Halley
 * stores only the token's SHA-256 and answers AuthenticateApiToken; galaxyd
 * keeps the answers for at most GX_TOKCACHE_TTL_S seconds in a fixed table
 * of GX_TOKCACHE_SLOTS entries indexed by the token's SHA-256 (never the
 * token itself), so a busy automation does not cost one RPC per request. A
 * revoke through this galaxyd flushes the table at once; other copies see it
 * within the TTL. An entry never outlives the token's own expiry. Failed
 * authentications are not cached.
 *
 * Who may do what: everyone logged in lists, creates and revokes their own
 * tokens; admins also those of other users (?user=NAME, ?all=1, "user"). */
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_json.h"
#include "orr_log.h"

/* One cached authentication; teams are packed NUL-separated in teams_buf. */
struct gx_tokentry {
    unsigned char key[crypto_hash_sha256_BYTES];
    int64_t until_ms; /* 0 = empty slot */
    int64_t user_id;
    gx_role role;
    char name[129];
    char teams_buf[1024];
    int nteams;
};

struct gx_tokcache {
    pthread_mutex_t mu;
    struct gx_tokentry slots[GX_TOKCACHE_SLOTS];
};

static int64_t gx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct gx_tokcache *gx_tokcache_create(void)
{
    struct gx_tokcache *c = calloc(1, sizeof(*c));
    if (c)
        pthread_mutex_init(&c->mu, NULL);
    return c;
}

void gx_tokcache_flush(struct gx_tokcache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < GX_TOKCACHE_SLOTS; i++)
        c->slots[i].until_ms = 0;
    pthread_mutex_unlock(&c->mu);
}

void gx_tokcache_destroy(struct gx_tokcache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    sodium_memzero(c, sizeof(*c));
    free(c);
}

static size_t gx_tok_slot(const unsigned char *key)
{
    size_t h = 0;
    memcpy(&h, key, sizeof(h));
    return h % GX_TOKCACHE_SLOTS;
}

/* Copy the cached principal into the request arena; 1 on a fresh hit. */
static int gx_tokcache_get(struct gx_tokcache *c, const unsigned char *key, gx_req *req)
{
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    struct gx_tokentry *t = &c->slots[gx_tok_slot(key)];
    if (t->until_ms > gx_now_ms() && sodium_memcmp(t->key, key, sizeof(t->key)) == 0) {
        const char **teams = orr_arena_calloc(req->arena, (size_t)t->nteams + 1, sizeof(*teams));
        const char *p = t->teams_buf;
        for (int i = 0; i < t->nteams; i++) {
            teams[i] = orr_arena_strdup(req->arena, p);
            p += strlen(p) + 1;
        }
        req->who.user_id = t->user_id;
        req->who.name = orr_arena_strdup(req->arena, t->name);
        req->who.role = t->role;
        req->who.teams = teams;
        hit = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

/* expires_at_ms: the token's wall-clock expiry (0 = never); the entry
 * lasts the TTL or until then, whichever is sooner. */
static void gx_tokcache_put(struct gx_tokcache *c, const unsigned char *key, const HL(User) * u,
                            gx_role role, int64_t expires_at_ms)
{
    struct gx_tokentry e;
    memset(&e, 0, sizeof(e));
    memcpy(e.key, key, sizeof(e.key));
    e.user_id = u->id;
    e.role = role;
    if (strlen(u->name) >= sizeof(e.name))
        return; /* not worth caching; authenticated again next time */
    strcpy(e.name, u->name);
    size_t used = 0;
    for (size_t i = 0; i < u->n_teams; i++) {
        size_t n = strlen(u->teams[i]) + 1;
        if (used + n > sizeof(e.teams_buf))
            return;
        memcpy(e.teams_buf + used, u->teams[i], n);
        used += n;
        e.nteams++;
    }
    int64_t ttl_ms = (int64_t)GX_TOKCACHE_TTL_S * 1000;
    if (expires_at_ms > 0) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        int64_t left = expires_at_ms - ((int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000);
        if (left <= 0)
            return;
        if (left < ttl_ms)
            ttl_ms = left;
    }
    e.until_ms = gx_now_ms() + ttl_ms;
    pthread_mutex_lock(&c->mu);
    c->slots[gx_tok_slot(key)] = e;
    pthread_mutex_unlock(&c->mu);
    sodium_memzero(&e, sizeof(e));
}

orr_status gx_token_authenticate(gx_req *req, const char *token, orr_err *err)
{
    gx_app *app = req->app;
    unsigned char key[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(key, (const unsigned char *)token, strlen(token));
    if (app->tokcache && gx_tokcache_get(app->tokcache, key, req))
        return ORR_OK;
    HL(AuthenticateApiTokenRequest) rq = HL_INIT(AUTHENTICATE_API_TOKEN_REQUEST);
    rq.secret = (char *)token;
    HL(AuthenticateResponse) *rs = NULL;
    orr_err e;
    orr_status rc = orr_rpc_call_unary(app->halley, "AuthenticateApiToken", &rq.base,
                                       (ProtobufCMessage **)&rs, app->rpc_timeout_ms, &e);
    if (rc != ORR_OK) {
        /* Never the token in the log: only why the check could not be made. */
        ORR_WARN("API token check failed", "code=%s err=%s", orr_status_name(rc), orr_log_q(e.msg));
        return orr_err_set(err, ORR_EUNAVAIL, "authorization",
                           "cannot check the API token now; retry shortly");
    }
    gx_role role = rs->user ? gx_role_of(rs->user->role) : GX_ROLE_NONE;
    if (!rs->ok || !rs->user || !rs->user->active || role == GX_ROLE_NONE) {
        protobuf_c_message_free_unpacked(&rs->base, NULL);
        return orr_err_set(err, ORR_EAUTH, "authorization",
                           "unknown, revoked or expired API token");
    }
    const char **teams = orr_arena_calloc(req->arena, rs->user->n_teams + 1, sizeof(*teams));
    for (size_t i = 0; i < rs->user->n_teams; i++)
        teams[i] = orr_arena_strdup(req->arena, rs->user->teams[i]);
    req->who.user_id = rs->user->id;
    req->who.name = orr_arena_strdup(req->arena, rs->user->name);
    req->who.role = role;
    req->who.teams = teams;
    if (app->tokcache)
        gx_tokcache_put(app->tokcache, key, rs->user, role, rs->expires_at_ms);
    protobuf_c_message_free_unpacked(&rs->base, NULL);
    return ORR_OK;
}

/* ------------------------------------------------------------ handlers */

static json_t *gx_token_json(const HL(ApiToken) * t)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(t->id));
    json_object_set_new(o, "user", json_string(t->user));
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "expires_at", gx_json_time(t->expires_at_ms));
    json_object_set_new(o, "created_at", gx_json_time(t->created_at_ms));
    json_object_set_new(o, "last_used_at", gx_json_time(t->last_used_ms));
    return o;
}

void gx_h_tokens_list(gx_req *req, gx_resp *resp)
{
    const char *user = gx_req_query(req, "user");
    int admin = req->who.role == GX_ROLE_ADMIN;
    int want_all = gx_req_query_bool(req, resp, "all", 0);
    if (want_all < 0)
        return;
    if ((want_all || (user && strcmp(user, req->who.name) != 0)) && !admin) {
        gx_resp_fail(resp, ORR_EPERM, want_all ? "all" : "user",
                     "only admins see other users' tokens");
        return;
    }
    HL(ListApiTokensRequest) rq = HL_INIT(LIST_API_TOKENS_REQUEST);
    rq.user = (char *)(want_all ? "" : user ? user : req->who.name);
    HL(ListApiTokensResponse) * rs;
    if (gx_halley(req, resp, "ListApiTokens", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_tokens; i++)
        json_array_append_new(items, gx_token_json(rs->tokens[i]));
    gx_page_answer(req, resp, "tokens", items, "id", 1);
}

void gx_h_token_create(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"name", "expires_at", "user", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *name = NULL, *user = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "name", 1, &name, &e) != ORR_OK ||
        orr_json_get_str(body, "", "user", 0, &user, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    size_t nlen = strlen(name);
    if (nlen < 1 || nlen > 128) {
        gx_resp_fail(resp, ORR_EINVAL, "name", "must be 1-128 characters");
        return;
    }
    int64_t expires_ms = 0;
    json_t *exp = json_object_get(body, "expires_at");
    if (exp && !json_is_null(exp)) {
        if (!json_is_string(exp) || gx_parse_time(json_string_value(exp), &expires_ms) != ORR_OK) {
            gx_resp_fail(resp, ORR_EINVAL, "expires_at",
                         "must be an ISO-8601 time such as 2027-01-01T00:00:00Z, or null");
            return;
        }
        if (expires_ms <= (int64_t)time(NULL) * 1000) {
            gx_resp_fail(resp, ORR_EINVAL, "expires_at", "must be in the future");
            return;
        }
    }
    if (user && strcmp(user, req->who.name) != 0 && req->who.role != GX_ROLE_ADMIN) {
        gx_resp_fail(resp, ORR_EPERM, "user", "only admins create tokens for other users");
        return;
    }
    HL(CreateApiTokenRequest) rq = HL_INIT(CREATE_API_TOKEN_REQUEST);
    rq.user = (char *)(user ? user : req->who.name);
    rq.name = (char *)name;
    rq.expires_at_ms = expires_ms;
    rq.actor = (char *)gx_actor(req);
    HL(CreateApiTokenResponse) * rs;
    if (gx_halley(req, resp, "CreateApiToken", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    if (!rs->token || !rs->secret || strncmp(rs->secret, "orr_", 4) != 0) {
        gx_resp_fail(resp, ORR_EINTERNAL, NULL, "metadata service returned no token");
        return;
    }
    gx_resp_json(resp, 201,
                 json_pack("{s:o,s:s}", "token", gx_token_json(rs->token), "secret", rs->secret));
    gx_resp_header(resp, "Cache-Control", "no-store");
    ORR_INFO("API token created", "id=%lld user=%s by=%s", (long long)rs->token->id,
             orr_log_q(rs->token->user), orr_log_q(req->who.name));
}

void gx_h_token_revoke(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(RevokeApiTokenRequest) rq = HL_INIT(REVOKE_API_TOKEN_REQUEST);
    rq.id = id;
    /* Non-admins may only revoke their own: Halley answers NOT_FOUND otherwise. */
    rq.user = (char *)(req->who.role == GX_ROLE_ADMIN ? "" : req->who.name);
    rq.actor = (char *)gx_actor(req);
    HL(RevokeApiTokenResponse) * rs;
    if (gx_halley(req, resp, "RevokeApiToken", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    gx_tokcache_flush(app->tokcache);
    resp->status = 204;
    resp->content_type = NULL;
    ORR_INFO("API token revoked", "id=%lld by=%s", (long long)id, orr_log_q(req->who.name));
}

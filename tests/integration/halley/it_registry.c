/*
 * it_registry.c - halleyd's registry RPCs end to end: API tokens (create,
 * list, revoke, authenticate; expiry, revocation, inactive users, the
 * once-a-minute last_used refresh, hash-only storage), executors with the
 * slots in use, workflows, code packages with their deployments and events,
 * and the audit log with paging. Every RPC is driven through its success
 * path and its refusals, checking the status and the field named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)
#define SHA_A   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SHA_B   "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

typedef Orrery__Halley__V1__ApiToken ApiToken;
typedef Orrery__Halley__V1__AuthenticateResponse AuthResp;
typedef Orrery__Halley__V1__Executor Executor;
typedef Orrery__Halley__V1__Workflow Workflow;
typedef Orrery__Halley__V1__CodePackage Package;

static orr_rpc_client *cl;
static hlt_db db;
static orr_err err;

/* Check status and, for a refusal, the field it names. */
static void want(orr_status st, orr_status code, const char *field, const char *what)
{
    HLT_CHECK(st == code, "%s: got %s, want %s (%s: %s)", what, orr_status_name(st),
              orr_status_name(code), err.field, err.msg);
    if (field && st == code && code != ORR_OK)
        HLT_CHECK(strcmp(err.field, field) == 0, "%s: field \"%s\", want \"%s\" (%s)", what,
                  err.field, field, err.msg);
}

/* Call and drop the answer; returns the status. */
static orr_status call(const char *method, const void *req)
{
    ProtobufCMessage *r = NULL;
    orr_status st = hlt_call(cl, method, req, &r, &err);
    if (r)
        FREE(r);
    return st;
}

/* First value of a one-row query as an integer. */
static long long sql_i64(const char *q)
{
    PGresult *r = hlt_sql(&db, q);
    long long v = PQntuples(r) > 0 ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
}

static void team(const char *name)
{
    Orrery__Halley__V1__CreateTeamRequest rq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    rq.name = (char *)name;
    want(call("CreateTeam", &rq), ORR_OK, NULL, name);
}

static void user(const char *name, Orrery__Halley__V1__Role role, char **teams, size_t n)
{
    Orrery__Halley__V1__CreateUserRequest rq = ORRERY__HALLEY__V1__CREATE_USER_REQUEST__INIT;
    rq.name = (char *)name;
    rq.password = "correct horse";
    rq.role = role;
    rq.teams = teams;
    rq.n_teams = n;
    want(call("CreateUser", &rq), ORR_OK, NULL, name);
}

/* ------------------------------------------------------------ API tokens */

/* Create a token; returns the response (free it) or NULL, checking the status. */
static Orrery__Halley__V1__CreateApiTokenResponse *
mk_token(const char *u, const char *name, int64_t expires, orr_status code, const char *field)
{
    Orrery__Halley__V1__CreateApiTokenRequest rq =
        ORRERY__HALLEY__V1__CREATE_API_TOKEN_REQUEST__INIT;
    rq.user = (char *)u;
    rq.name = (char *)name;
    rq.expires_at_ms = expires;
    rq.actor = "user:ann";
    Orrery__Halley__V1__CreateApiTokenResponse *r = NULL;
    orr_status st = hlt_call(cl, "CreateApiToken", &rq, &r, &err);
    char what[160];
    snprintf(what, sizeof what, "CreateApiToken %s/%s", u, name);
    want(st, code, field, what);
    return r;
}

/* AuthenticateApiToken: 1 ok (user checked if name given), 0 refused, -1 error. */
static int auth(const char *secret, const char *want_user)
{
    Orrery__Halley__V1__AuthenticateApiTokenRequest rq =
        ORRERY__HALLEY__V1__AUTHENTICATE_API_TOKEN_REQUEST__INIT;
    rq.secret = (char *)secret;
    AuthResp *r = NULL;
    orr_status st = hlt_call(cl, "AuthenticateApiToken", &rq, &r, &err);
    HLT_CHECK(st == ORR_OK, "AuthenticateApiToken answers: %s", err.msg);
    if (st != ORR_OK)
        return -1;
    int ok = r->ok;
    if (ok && want_user)
        HLT_CHECK(r->user && strcmp(r->user->name, want_user) == 0, "token acts as %s", want_user);
    if (!ok)
        HLT_CHECK(r->user == NULL, "no user on a refusal");
    FREE(r);
    return ok;
}

/* last_used_ms of token id as listed (-1 if not listed). */
static int64_t listed_last_used(const char *u, int64_t id)
{
    Orrery__Halley__V1__ListApiTokensRequest rq = ORRERY__HALLEY__V1__LIST_API_TOKENS_REQUEST__INIT;
    rq.user = (char *)u;
    Orrery__Halley__V1__ListApiTokensResponse *r = NULL;
    int64_t out = -1;
    if (hlt_call(cl, "ListApiTokens", &rq, &r, &err) == ORR_OK) {
        for (size_t i = 0; i < r->n_tokens; i++)
            if (r->tokens[i]->id == id)
                out = r->tokens[i]->last_used_ms;
        FREE(r);
    }
    return out;
}

static void test_tokens(void)
{
    int64_t now = hlt_now_ms();
    /* Refusals before anything is written. */
    mk_token("", "ci", 0, ORR_EINVAL, "user");
    mk_token("bot", "", 0, ORR_EINVAL, "name");
    mk_token("bot", "-ci", 0, ORR_EINVAL, "name");
    mk_token("bot", "ci", now - 1000, ORR_EINVAL, "expires_at_ms");
    mk_token("bot", "ci", -5, ORR_EINVAL, "expires_at_ms");
    mk_token("nobody", "ci", 0, ORR_ENOTFOUND, "user");
    mk_token("gone", "ci", 0, ORR_ESTATE, "user");
    HLT_CHECK(sql_i64("SELECT count(*) FROM api_tokens") == 0, "refusals store nothing");

    Orrery__Halley__V1__CreateApiTokenResponse *ci = mk_token("bot", "ci", 0, ORR_OK, NULL);
    if (!ci)
        return;
    char secret[128];
    snprintf(secret, sizeof secret, "%s", ci->secret);
    int64_t ci_id = ci->token->id;
    HLT_CHECK(strncmp(secret, "orr_", 4) == 0 && strlen(secret) == 47 &&
                  strspn(secret + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-_") == 43,
              "token is orr_ + 43 base64url characters: %s", secret);
    HLT_CHECK(ci_id > 0 && strcmp(ci->token->user, "bot") == 0 &&
                  strcmp(ci->token->name, "ci") == 0 && ci->token->expires_at_ms == 0 &&
                  ci->token->last_used_ms == 0 && ci->token->created_at_ms >= now - 60000,
              "token record");
    FREE(ci);

    /* Only the SHA-256 is stored. */
    char q[512];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM api_tokens WHERE id = %lld AND token_hash = "
             "sha256(convert_to('%s', 'UTF8'))",
             (long long)ci_id, secret);
    HLT_CHECK(sql_i64(q) == 1, "stored hash is the SHA-256 of the token");
    snprintf(q, sizeof q,
             "SELECT count(*) FROM api_tokens WHERE position(convert_to('%s', 'UTF8') IN "
             "token_hash) > 0 OR name = '%s'",
             secret + 4, secret);
    HLT_CHECK(sql_i64(q) == 0, "the token text is not stored");

    mk_token("bot", "ci", 0, ORR_EEXIST, "name");

    Orrery__Halley__V1__CreateApiTokenResponse *ex =
        mk_token("bot", "nightly", now + 3600000, ORR_OK, NULL);
    char ex_secret[128] = "";
    int64_t ex_id = 0;
    if (ex) {
        HLT_CHECK(ex->token->expires_at_ms == now + 3600000, "expiry kept to the ms: %lld",
                  (long long)ex->token->expires_at_ms);
        snprintf(ex_secret, sizeof ex_secret, "%s", ex->secret);
        ex_id = ex->token->id;
        HLT_CHECK(strcmp(ex_secret, secret) != 0, "two tokens differ");
        FREE(ex);
    }
    Orrery__Halley__V1__CreateApiTokenResponse *cc = mk_token("carl", "ci", 0, ORR_OK, NULL);
    char carl_secret[128] = "";
    if (cc) {
        snprintf(carl_secret, sizeof carl_secret, "%s", cc->secret);
        FREE(cc);
    }

    /* Authentication and the user it yields. */
    Orrery__Halley__V1__AuthenticateApiTokenRequest aq =
        ORRERY__HALLEY__V1__AUTHENTICATE_API_TOKEN_REQUEST__INIT;
    aq.secret = secret;
    AuthResp *ar = NULL;
    HLT_CHECK(hlt_call(cl, "AuthenticateApiToken", &aq, &ar, &err) == ORR_OK && ar->ok &&
                  ar->user && strcmp(ar->user->name, "bot") == 0 &&
                  ar->user->role == ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER && ar->user->active &&
                  ar->user->n_teams == 2 && strcmp(ar->user->teams[0], "dev") == 0 &&
                  strcmp(ar->user->teams[1], "ops") == 0,
              "token authenticates as bot (developer, dev+ops): %s", err.msg);
    if (ar)
        FREE(ar);
    HLT_CHECK(auth(ex_secret, "bot") == 1, "token with a future expiry works");
    HLT_CHECK(auth(carl_secret, "carl") == 1, "carl's token works");
    char bad[128];
    snprintf(bad, sizeof bad, "%s", secret);
    bad[10] = bad[10] == 'A' ? 'B' : 'A';
    HLT_CHECK(auth(bad, NULL) == 0, "a changed token is refused");
    HLT_CHECK(auth("", NULL) == 0, "empty token refused");
    HLT_CHECK(auth("orr_short", NULL) == 0, "malformed token refused");
    HLT_CHECK(auth(secret + 1, NULL) == 0, "token without its prefix refused");

    /* last_used: set on first use, then refreshed at most once a minute. */
    int64_t used1 = listed_last_used("bot", ci_id);
    HLT_CHECK(used1 >= now - 60000, "last_used set on use: %lld", (long long)used1);
    snprintf(q, sizeof q,
             "UPDATE api_tokens SET last_used_at = now() - interval '30 seconds' WHERE id = %lld",
             (long long)ci_id);
    PQclear(hlt_sql(&db, q));
    int64_t recent = listed_last_used("bot", ci_id);
    HLT_CHECK(recent < used1 - 20000, "backdated by 30 s");
    HLT_CHECK(auth(secret, "bot") == 1, "use within the minute");
    HLT_CHECK(listed_last_used("bot", ci_id) == recent, "no refresh within a minute");
    snprintf(q, sizeof q,
             "UPDATE api_tokens SET last_used_at = now() - interval '2 minutes' WHERE id = %lld",
             (long long)ci_id);
    PQclear(hlt_sql(&db, q));
    int64_t stale = listed_last_used("bot", ci_id);
    HLT_CHECK(stale < used1, "backdated");
    HLT_CHECK(auth(secret, "bot") == 1, "use after a minute");
    HLT_CHECK(listed_last_used("bot", ci_id) > stale + 60000, "refreshed after a minute");

    /* The hot path, timed (reported, not asserted: the machine is shared). */
    int all_ok = 1;
    int64_t t_start = hlt_now_ms();
    for (int i = 0; i < 200; i++)
        all_ok &= auth(secret, NULL) == 1;
    HLT_CHECK(all_ok, "200 authentications in a row");
    fprintf(stderr, "AuthenticateApiToken: %.0f us per sequential call (200 calls)\n",
            (double)(hlt_now_ms() - t_start) * 1000.0 / 200);

    /* Expired token. */
    snprintf(q, sizeof q,
             "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = %lld",
             (long long)ex_id);
    PQclear(hlt_sql(&db, q));
    HLT_CHECK(auth(ex_secret, NULL) == 0, "expired token refused");
    /* carl becomes inactive: his token stops working. */
    PQclear(hlt_sql(&db, "UPDATE users SET active = false WHERE name = 'carl'"));
    HLT_CHECK(auth(carl_secret, NULL) == 0, "token of an inactive user refused");

    /* Listing. */
    Orrery__Halley__V1__ListApiTokensRequest lq = ORRERY__HALLEY__V1__LIST_API_TOKENS_REQUEST__INIT;
    Orrery__Halley__V1__ListApiTokensResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListApiTokens", &lq, &lr, &err) == ORR_OK && lr->n_tokens == 3 &&
                  strcmp(lr->tokens[0]->user, "bot") == 0 &&
                  strcmp(lr->tokens[2]->user, "carl") == 0,
              "all tokens, by user: %s", err.msg);
    if (lr)
        FREE(lr);
    lq.user = "bot";
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListApiTokens", &lq, &lr, &err) == ORR_OK && lr->n_tokens == 2 &&
                  lr->tokens[0]->id == ci_id && lr->tokens[1]->id == ex_id,
              "bot's tokens: %s", err.msg);
    if (lr)
        FREE(lr);
    lq.user = "ann";
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListApiTokens", &lq, &lr, &err) == ORR_OK && lr->n_tokens == 0,
              "a user without tokens: empty");
    if (lr)
        FREE(lr);
    lq.user = "nobody";
    want(call("ListApiTokens", &lq), ORR_ENOTFOUND, "user", "ListApiTokens unknown user");
    lq.user = "a b";
    want(call("ListApiTokens", &lq), ORR_EINVAL, "user", "ListApiTokens bad user");

    /* Revocation. */
    Orrery__Halley__V1__RevokeApiTokenRequest rq =
        ORRERY__HALLEY__V1__REVOKE_API_TOKEN_REQUEST__INIT;
    rq.actor = "user:ann";
    want(call("RevokeApiToken", &rq), ORR_EINVAL, "id", "revoke id 0");
    rq.id = 999999;
    want(call("RevokeApiToken", &rq), ORR_ENOTFOUND, "id", "revoke unknown id");
    rq.id = ci_id;
    rq.user = "ann";
    want(call("RevokeApiToken", &rq), ORR_ENOTFOUND, "id", "revoke someone else's token");
    rq.user = "b c";
    want(call("RevokeApiToken", &rq), ORR_EINVAL, "user", "revoke bad user");
    HLT_CHECK(auth(secret, "bot") == 1, "refused revocations leave the token working");
    rq.user = "bot";
    want(call("RevokeApiToken", &rq), ORR_OK, NULL, "revoke");
    HLT_CHECK(auth(secret, NULL) == 0, "revoked token refused");
    snprintf(q, sizeof q,
             "SELECT count(*) FROM api_tokens WHERE id = %lld AND revoked_at IS NOT NULL",
             (long long)ci_id);
    HLT_CHECK(sql_i64(q) == 1, "revoked token kept with revoked_at");
    HLT_CHECK(listed_last_used("bot", ci_id) == -1, "revoked token not listed");
    want(call("RevokeApiToken", &rq), ORR_OK, NULL, "revoke again (no change)");
    snprintf(
        q, sizeof q,
        "SELECT count(*) FROM audit_log WHERE action = 'token.revoke' AND object = 'token:%lld'"
        " AND actor = 'user:ann' AND detail->>'user' = 'bot'",
        (long long)ci_id);
    HLT_CHECK(sql_i64(q) == 1, "one audit record per revocation");
    HLT_CHECK(sql_i64("SELECT count(*) FROM audit_log WHERE action = 'token.create'") == 3,
              "one audit record per creation");
    /* The name of a revoked token can be given again. */
    Orrery__Halley__V1__CreateApiTokenResponse *again = mk_token("bot", "ci", 0, ORR_OK, NULL);
    if (again) {
        HLT_CHECK(again->token->id != ci_id && auth(again->secret, "bot") == 1,
                  "new token under a revoked one's name");
        FREE(again);
    }
}

/* ------------------------------------------------------------ executors */

static Executor *put_exec(const char *id, const char *host, int slots, const char *labels,
                          int active, orr_status code, const char *field)
{
    Orrery__Halley__V1__PutExecutorRequest rq = ORRERY__HALLEY__V1__PUT_EXECUTOR_REQUEST__INIT;
    rq.id = (char *)id;
    rq.host = (char *)host;
    rq.slots = slots;
    rq.labels_json = (char *)labels;
    rq.active = active;
    Executor *e = NULL;
    char what[128];
    snprintf(what, sizeof what, "PutExecutor %s", id);
    want(hlt_call(cl, "PutExecutor", &rq, &e, &err), code, field, what);
    return e;
}

static int64_t mk_task(const char *name, const char *extra)
{
    char spec[1024];
    hlt_shell_spec(spec, sizeof spec, name, "ops", extra);
    Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    rq.spec_json = spec;
    rq.actor = "user:ann";
    Orrery__Halley__V1__Task *t = NULL;
    HLT_CHECK(hlt_call(cl, "CreateTask", &rq, &t, &err) == ORR_OK, "task %s: %s", name, err.msg);
    int64_t id = t ? t->id : 0;
    if (t)
        FREE(t);
    return id;
}

/* An instance of task driven to state `to` on executor ex (waiting if to = 0). */
static void mk_instance(int64_t task, int64_t at, const char *ex, int to)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    Orrery__Halley__V1__CreateInstance *cis[1] = {&ci};
    ci.task_id = task;
    ci.schedule_time_ms = at;
    ci.actor = "test";
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.instances = cis;
    rq.n_instances = 1;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    int64_t id = 0;
    if (hlt_call(cl, "CreateInstances", &rq, &r, &err) == ORR_OK && r->results[0]->instance)
        id = r->results[0]->instance->id;
    HLT_CHECK(id > 0, "instance created: %s", err.msg);
    if (r)
        FREE(r);
    for (int st = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_WAITING; id && st < to; st++) {
        Orrery__Halley__V1__TransitionRequest tq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
        tq.instance_id = id;
        tq.expected_state = st;
        tq.new_state = st + 1;
        tq.actor = "test";
        tq.executor = (char *)ex;
        if (st + 1 == ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_SUCCESS) {
            tq.has_exit_code = 1;
            tq.exit_code = 0;
        }
        want(call("TransitionInstance", &tq), ORR_OK, NULL, "transition");
    }
}

static int32_t used_slots(const char *id)
{
    Orrery__Halley__V1__ListExecutorsRequest rq = ORRERY__HALLEY__V1__LIST_EXECUTORS_REQUEST__INIT;
    Orrery__Halley__V1__ListExecutorsResponse *r = NULL;
    int32_t out = -1;
    if (hlt_call(cl, "ListExecutors", &rq, &r, &err) == ORR_OK) {
        for (size_t i = 0; i < r->n_executors; i++)
            if (strcmp(r->executors[i]->id, id) == 0)
                out = r->executors[i]->used_slots;
        FREE(r);
    }
    return out;
}

static void test_executors(void)
{
    int64_t now = hlt_now_ms();
    put_exec("ex 1", "h1", 4, "", 1, ORR_EINVAL, "id");
    put_exec("", "h1", 4, "", 1, ORR_EINVAL, "id");
    put_exec("ex-1", "", 4, "", 1, ORR_EINVAL, "host");
    put_exec("ex-1", "h 1", 4, "", 1, ORR_EINVAL, "host");
    put_exec("ex-1", "h1", -1, "", 1, ORR_EINVAL, "slots");
    put_exec("ex-1", "h1", 4, "[1]", 1, ORR_EINVAL, "labels_json");
    put_exec("ex-1", "h1", 4, "{", 1, ORR_EINVAL, "labels_json");
    put_exec("ex-1", "h1", 4, "{\"zone\":1}", 1, ORR_EINVAL, "labels_json.zone");
    HLT_CHECK(sql_i64("SELECT count(*) FROM executors") == 0, "refusals store nothing");

    Executor *e = put_exec("ex-1", "h1.example", 4, "{\"zone\":\"a\"}", 1, ORR_OK, NULL);
    int64_t seen1 = 0;
    if (e) {
        HLT_CHECK(strcmp(e->host, "h1.example") == 0 && e->slots == 4 && e->active &&
                      strstr(e->labels_json, "\"zone\"") && strstr(e->labels_json, "\"a\"") &&
                      e->last_seen_ms >= now - 60000 && e->used_slots == 0,
                  "executor registered: %s", e->labels_json);
        seen1 = e->last_seen_ms;
        FREE(e);
    }
    PQclear(hlt_sql(&db, "UPDATE executors SET last_seen = now() - interval '1 hour'"));
    e = put_exec("ex-1", "h1.example", 8, "", 1, ORR_OK, NULL);
    if (e) {
        HLT_CHECK(e->slots == 8 && e->last_seen_ms >= seen1 && strcmp(e->labels_json, "{}") == 0,
                  "heartbeat updates slots, labels and last_seen");
        FREE(e);
    }
    e = put_exec("ex-2", "h2", 2, "{}", 0, ORR_OK, NULL);
    if (e)
        FREE(e);
    HLT_CHECK(sql_i64("SELECT count(*) FROM executors") == 2, "one row per executor");

    Orrery__Halley__V1__ListExecutorsRequest lq = ORRERY__HALLEY__V1__LIST_EXECUTORS_REQUEST__INIT;
    Orrery__Halley__V1__ListExecutorsResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListExecutors", &lq, &lr, &err) == ORR_OK && lr->n_executors == 2 &&
                  strcmp(lr->executors[0]->id, "ex-1") == 0 && !lr->executors[1]->active,
              "all executors: %s", err.msg);
    if (lr)
        FREE(lr);
    lq.active_only = 1;
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListExecutors", &lq, &lr, &err) == ORR_OK && lr->n_executors == 1 &&
                  strcmp(lr->executors[0]->id, "ex-1") == 0,
              "active executors only: %s", err.msg);
    if (lr)
        FREE(lr);

    /* used_slots: dispatched and running instances, weighted by task slots. */
    int64_t big = mk_task("big", "\"slots\":3");
    int64_t small = mk_task("small", NULL);
    const int64_t h = 3600000, t0 = 1700000000000LL;
    mk_instance(big, t0, "ex-1", ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_RUNNING);
    mk_instance(small, t0, "ex-1", ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_DISPATCHED);
    mk_instance(small, t0 + h, "ex-1", ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_SUCCESS);
    mk_instance(big, t0 + h, "ex-1", ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_READY);
    mk_instance(small, t0 + 2 * h, "ex-2",
                ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_RUNNING);
    HLT_CHECK(used_slots("ex-1") == 4, "ex-1 uses 3 + 1 slots, got %d", used_slots("ex-1"));
    HLT_CHECK(used_slots("ex-2") == 1, "ex-2 uses 1 slot, got %d", used_slots("ex-2"));
}

/* ------------------------------------------------------------ workflows */

static Workflow *put_wf(const char *name, const char *tm, const int64_t *ids, size_t n,
                        orr_status code, const char *field)
{
    Orrery__Halley__V1__PutWorkflowRequest rq = ORRERY__HALLEY__V1__PUT_WORKFLOW_REQUEST__INIT;
    rq.name = (char *)name;
    rq.team = (char *)tm;
    rq.task_ids = (int64_t *)ids;
    rq.n_task_ids = n;
    rq.actor = "user:ann";
    Workflow *w = NULL;
    char what[128];
    snprintf(what, sizeof what, "PutWorkflow %s", name);
    want(hlt_call(cl, "PutWorkflow", &rq, &w, &err), code, field, what);
    return w;
}

static Workflow *get_wf(int64_t id, const char *name, orr_status code, const char *field)
{
    Orrery__Halley__V1__GetWorkflowRequest rq = ORRERY__HALLEY__V1__GET_WORKFLOW_REQUEST__INIT;
    rq.id = id;
    rq.name = (char *)name;
    Workflow *w = NULL;
    want(hlt_call(cl, "GetWorkflow", &rq, &w, &err), code, field, "GetWorkflow");
    return w;
}

static void test_workflows(void)
{
    int64_t a = mk_task("wf_a", NULL), b = mk_task("wf_b", NULL), c = mk_task("wf_c", NULL);
    int64_t two[2] = {b, a}, bad[2] = {a, 999999}, dup[2] = {a, a}, zero[1] = {0};
    put_wf("bad name", "ops", two, 2, ORR_EINVAL, "name");
    put_wf("wf1", "", two, 2, ORR_EINVAL, "team");
    put_wf("wf1", "nobody", two, 2, ORR_ENOTFOUND, "team");
    put_wf("wf1", "ops", bad, 2, ORR_ENOTFOUND, "task_ids[1]");
    put_wf("wf1", "ops", dup, 2, ORR_EINVAL, "task_ids[1]");
    put_wf("wf1", "ops", zero, 1, ORR_EINVAL, "task_ids[0]");
    HLT_CHECK(sql_i64("SELECT count(*) FROM workflows") == 0, "refusals store nothing");

    Workflow *w = put_wf("wf1", "ops", two, 2, ORR_OK, NULL);
    int64_t wid = 0;
    if (w) {
        wid = w->id;
        HLT_CHECK(wid > 0 && strcmp(w->name, "wf1") == 0 && strcmp(w->team, "ops") == 0 &&
                      w->n_task_ids == 2 && w->task_ids[0] == a && w->task_ids[1] == b &&
                      w->created_at_ms > 0,
                  "workflow created with its tasks (by id)");
        FREE(w);
    }
    /* Replace: same id, new list; a refused replacement changes nothing. */
    int64_t one[2] = {c, b};
    w = put_wf("wf1", "ops", one, 2, ORR_OK, NULL);
    if (w) {
        HLT_CHECK(w->id == wid && w->n_task_ids == 2 && w->task_ids[0] == b && w->task_ids[1] == c,
                  "task list replaced");
        FREE(w);
    }
    put_wf("wf1", "ops", bad, 2, ORR_ENOTFOUND, "task_ids[1]");
    put_wf("wf1", "nobody", one, 2, ORR_ENOTFOUND, "team");
    w = get_wf(wid, "", ORR_OK, NULL);
    if (w) {
        HLT_CHECK(w->n_task_ids == 2 && w->task_ids[0] == b && strcmp(w->team, "ops") == 0,
                  "refused replacement left the workflow as it was");
        FREE(w);
    }
    w = put_wf("wf2", "dev", NULL, 0, ORR_OK, NULL);
    if (w) {
        HLT_CHECK(w->n_task_ids == 0 && strcmp(w->team, "dev") == 0, "empty workflow");
        FREE(w);
    }
    w = get_wf(0, "wf1", ORR_OK, NULL);
    if (w) {
        HLT_CHECK(w->id == wid, "by name");
        FREE(w);
    }
    get_wf(0, "", ORR_EINVAL, "id");
    get_wf(-1, "", ORR_EINVAL, "id");
    get_wf(0, "bad name", ORR_EINVAL, "name");
    get_wf(0, "ghost", ORR_ENOTFOUND, "name");
    get_wf(999999, "", ORR_ENOTFOUND, "id");
    get_wf(wid, "wf2", ORR_ENOTFOUND, "id");

    Orrery__Halley__V1__ListWorkflowsRequest lq = ORRERY__HALLEY__V1__LIST_WORKFLOWS_REQUEST__INIT;
    Orrery__Halley__V1__ListWorkflowsResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListWorkflows", &lq, &lr, &err) == ORR_OK && lr->n_workflows == 2 &&
                  strcmp(lr->workflows[0]->name, "wf1") == 0 && lr->workflows[0]->n_task_ids == 2,
              "all workflows: %s", err.msg);
    if (lr)
        FREE(lr);
    lq.team = "dev";
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListWorkflows", &lq, &lr, &err) == ORR_OK && lr->n_workflows == 1 &&
                  strcmp(lr->workflows[0]->name, "wf2") == 0,
              "workflows of dev: %s", err.msg);
    if (lr)
        FREE(lr);
    lq.team = "bi";
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListWorkflows", &lq, &lr, &err) == ORR_OK && lr->n_workflows == 0,
              "team without workflows");
    if (lr)
        FREE(lr);
    lq.team = "x y";
    want(call("ListWorkflows", &lq), ORR_EINVAL, "team", "ListWorkflows bad team");
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind = 'workflow.updated'") == 3 &&
                  sql_i64("SELECT count(*) FROM audit_log WHERE action = 'workflow.put'") == 3,
              "one event and one audit record per accepted PutWorkflow");
}

/* ------------------------------------------------------------ code packages */

static Package *mk_pkg(const char *name, const char *sha, int64_t size, const char *src,
                       orr_status code, const char *field)
{
    Orrery__Halley__V1__CreateCodePackageRequest rq =
        ORRERY__HALLEY__V1__CREATE_CODE_PACKAGE_REQUEST__INIT;
    rq.name = (char *)name;
    rq.sha256 = (char *)sha;
    rq.size = size;
    rq.source = (char *)src;
    rq.actor = "user:ann";
    Package *p = NULL;
    char what[128];
    snprintf(what, sizeof what, "CreateCodePackage %s", name);
    want(hlt_call(cl, "CreateCodePackage", &rq, &p, &err), code, field, what);
    return p;
}

static void report(int64_t pkg, const char *ex, const char *result, const char *msg,
                   orr_status code, const char *field)
{
    Orrery__Halley__V1__ReportDeploymentRequest rq =
        ORRERY__HALLEY__V1__REPORT_DEPLOYMENT_REQUEST__INIT;
    rq.package_id = pkg;
    rq.executor = (char *)ex;
    rq.result = (char *)result;
    rq.message = (char *)msg;
    Orrery__Halley__V1__Deployment *d = NULL;
    want(hlt_call(cl, "ReportDeployment", &rq, &d, &err), code, field, "ReportDeployment");
    if (d) {
        HLT_CHECK(d->package_id == pkg && strcmp(d->executor, ex) == 0 &&
                      strcmp(d->result, result) == 0 && strcmp(d->message, msg) == 0 &&
                      d->updated_at_ms > 0,
                  "deployment echoed");
        FREE(d);
    }
}

static Package *get_pkg(int64_t id, const char *name, orr_status code, const char *field)
{
    Orrery__Halley__V1__GetCodePackageRequest rq =
        ORRERY__HALLEY__V1__GET_CODE_PACKAGE_REQUEST__INIT;
    rq.id = id;
    rq.name = (char *)name;
    Package *p = NULL;
    want(hlt_call(cl, "GetCodePackage", &rq, &p, &err), code, field, "GetCodePackage");
    return p;
}

static void test_packages(void)
{
    const char *src = "file:///var/lib/orrery/blobs/packages/" SHA_A;
    mk_pkg("bad name", SHA_A, 10, src, ORR_EINVAL, "name");
    mk_pkg("etl-lib", "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", 10, src,
           ORR_EINVAL, "sha256");
    mk_pkg("etl-lib", SHA_A + 1, 10, src, ORR_EINVAL, "sha256");
    mk_pkg("etl-lib", SHA_A, 0, src, ORR_EINVAL, "size");
    mk_pkg("etl-lib", SHA_A, 10, "", ORR_EINVAL, "source");
    HLT_CHECK(sql_i64("SELECT count(*) FROM code_packages") == 0, "refusals store nothing");

    Package *p = mk_pkg("etl-lib", SHA_A, 10, src, ORR_OK, NULL);
    int64_t pa = 0;
    if (p) {
        pa = p->id;
        HLT_CHECK(pa > 0 && strcmp(p->name, "etl-lib") == 0 && strcmp(p->sha256, SHA_A) == 0 &&
                      p->size == 10 && strcmp(p->source, src) == 0 &&
                      strcmp(p->created_by, "user:ann") == 0 && p->created_at_ms > 0 &&
                      p->n_deployments == 0,
                  "package created");
        FREE(p);
    }
    char q[512];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM events WHERE kind = 'package.created' AND"
             " (payload->>'id')::int8 = %lld AND payload->>'name' = 'etl-lib' AND"
             " payload->>'sha256' = '%s' AND payload->>'source' = '%s'",
             (long long)pa, SHA_A, src);
    HLT_CHECK(sql_i64(q) == 1, "event package.created with id, name, sha256, source");
    mk_pkg("etl-lib", SHA_A, 99, "file:///other", ORR_EEXIST, "sha256");
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind = 'package.created'") == 1 &&
                  sql_i64("SELECT size FROM code_packages") == 10,
              "a duplicate emits nothing and keeps the stored package");
    p = mk_pkg("etl-lib", SHA_B, 20, "file:///b", ORR_OK, NULL);
    int64_t pb = p ? p->id : 0;
    if (p)
        FREE(p);
    p = mk_pkg("other", SHA_A, 5, "file:///o", ORR_OK, NULL);
    int64_t po = p ? p->id : 0;
    if (p)
        FREE(p);

    /* Deployments. */
    report(pa, "ex-1", "done", "", ORR_EINVAL, "result");
    report(0, "ex-1", "ok", "", ORR_EINVAL, "package_id");
    report(pa, "ex 1", "ok", "", ORR_EINVAL, "executor");
    report(999999, "ex-1", "ok", "", ORR_ENOTFOUND, "package_id");
    report(pa, "ex-1", "ok", "", ORR_OK, NULL);
    report(pa, "ex-1", "failed", "disk full", ORR_OK, NULL);
    report(pa, "ex-2", "pending", "", ORR_OK, NULL);
    snprintf(q, sizeof q, "SELECT count(*) FROM package_deployments WHERE package_id = %lld",
             (long long)pa);
    HLT_CHECK(sql_i64(q) == 2, "one deployment row per executor");
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind = 'package.deployed'"
                      " AND executor IN ('ex-1', 'ex-2')") == 3,
              "event package.deployed per report");

    p = get_pkg(pa, "", ORR_OK, NULL);
    if (p) {
        HLT_CHECK(p->id == pa && p->n_deployments == 2 &&
                      strcmp(p->deployments[0]->executor, "ex-1") == 0 &&
                      strcmp(p->deployments[0]->result, "failed") == 0 &&
                      strcmp(p->deployments[0]->message, "disk full") == 0 &&
                      strcmp(p->deployments[1]->executor, "ex-2") == 0 &&
                      strcmp(p->deployments[1]->result, "pending") == 0,
                  "package by id with its deployments");
        FREE(p);
    }
    p = get_pkg(0, "etl-lib", ORR_OK, NULL);
    if (p) {
        HLT_CHECK(p->id == pb && strcmp(p->sha256, SHA_B) == 0 && p->n_deployments == 0,
                  "by name: the newest");
        FREE(p);
    }
    get_pkg(0, "", ORR_EINVAL, "id");
    get_pkg(0, "bad name", ORR_EINVAL, "name");
    get_pkg(999999, "", ORR_ENOTFOUND, "id");
    get_pkg(0, "ghost", ORR_ENOTFOUND, "name");

    Orrery__Halley__V1__ListCodePackagesRequest lq =
        ORRERY__HALLEY__V1__LIST_CODE_PACKAGES_REQUEST__INIT;
    Orrery__Halley__V1__ListCodePackagesResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListCodePackages", &lq, &lr, &err) == ORR_OK && lr->n_packages == 3 &&
                  lr->packages[0]->id == po && lr->packages[1]->id == pb &&
                  lr->packages[2]->id == pa && lr->packages[0]->n_deployments == 0 &&
                  lr->packages[1]->n_deployments == 0 && lr->packages[2]->n_deployments == 2,
              "all packages newest first, deployments attached: %s", err.msg);
    if (lr)
        FREE(lr);
    lq.name = "etl-lib";
    lq.limit = 1;
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListCodePackages", &lq, &lr, &err) == ORR_OK && lr->n_packages == 1 &&
                  lr->packages[0]->id == pb,
              "by name, limit 1");
    if (lr)
        FREE(lr);
    lq.limit = 1001; /* clamped to the maximum page, not refused */
    want(call("ListCodePackages", &lq), ORR_OK, NULL, "limit too big");
    lq.limit = -1;
    want(call("ListCodePackages", &lq), ORR_EINVAL, "limit", "negative limit");
    lq.limit = -1;
    want(call("ListCodePackages", &lq), ORR_EINVAL, "limit", "negative limit");
    lq.limit = 0;
    lq.name = "bad name";
    want(call("ListCodePackages", &lq), ORR_EINVAL, "name", "bad name filter");
    HLT_CHECK(sql_i64("SELECT count(*) FROM audit_log WHERE action = 'package.create'") == 3,
              "one audit record per package");
}

/* ------------------------------------------------------------ audit log */

static void test_audit(void)
{
    long long total = sql_i64("SELECT count(*) FROM audit_log");
    HLT_CHECK(total >= 10, "audit log has the records written so far (%lld)", total);
    Orrery__Halley__V1__ListAuditRequest rq = ORRERY__HALLEY__V1__LIST_AUDIT_REQUEST__INIT;
    rq.page_size = 4;
    long long seen = 0;
    int64_t last = INT64_MAX;
    int ordered = 1, pages = 0;
    for (; pages < 100; pages++) {
        Orrery__Halley__V1__ListAuditResponse *r = NULL;
        orr_status st = hlt_call(cl, "ListAudit", &rq, &r, &err);
        HLT_CHECK(st == ORR_OK, "ListAudit page: %s", err.msg);
        if (st != ORR_OK)
            break;
        size_t n = r->n_entries;
        for (size_t i = 0; i < n; i++) {
            ordered &= r->entries[i]->id < last && r->entries[i]->at_ms > 0 &&
                       r->entries[i]->action[0] && r->entries[i]->detail_json[0] == '{';
            last = r->entries[i]->id;
        }
        seen += (long long)n;
        FREE(r);
        if (n < 4)
            break;
        rq.before_id = last;
    }
    HLT_CHECK(ordered && seen == total, "paging newest first covers every record once (%lld/%lld)",
              seen, total);

    rq.before_id = 0;
    rq.page_size = 0;
    rq.object_prefix = "token:";
    Orrery__Halley__V1__ListAuditResponse *r = NULL;
    HLT_CHECK(hlt_call(cl, "ListAudit", &rq, &r, &err) == ORR_OK && r->n_entries == 5 &&
                  strcmp(r->entries[0]->action, "token.create") == 0 &&
                  strcmp(r->entries[1]->action, "token.revoke") == 0 &&
                  strcmp(r->entries[0]->actor, "user:ann") == 0,
              "token records, newest first: %s", err.msg);
    if (r)
        FREE(r);
    rq.object_prefix = "";
    rq.actor = "nobody";
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListAudit", &rq, &r, &err) == ORR_OK && r->n_entries == 0,
              "unknown actor: nothing");
    if (r)
        FREE(r);
    rq.actor = "user:ann";
    rq.object_prefix = "package:";
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListAudit", &rq, &r, &err) == ORR_OK && r->n_entries == 3,
              "actor and prefix together");
    if (r)
        FREE(r);
    rq.page_size = 1001; /* clamped to the maximum page, not refused */
    want(call("ListAudit", &rq), ORR_OK, NULL, "page too big");
    rq.page_size = -1;
    want(call("ListAudit", &rq), ORR_EINVAL, "page_size", "negative page");
    rq.page_size = 0;
    rq.before_id = -1;
    want(call("ListAudit", &rq), ORR_EINVAL, "before_id", "negative before_id");
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_registry");
    }
    cl = hlt_client(&s, NULL);
    team("ops");
    team("dev");
    team("bi");
    char *ops[1] = {"ops"}, *both[2] = {"ops", "dev"};
    user("ann", ORRERY__HALLEY__V1__ROLE__ROLE_ADMIN, ops, 1);
    user("bot", ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER, both, 2);
    user("carl", ORRERY__HALLEY__V1__ROLE__ROLE_VIEWER, NULL, 0);
    user("gone", ORRERY__HALLEY__V1__ROLE__ROLE_VIEWER, NULL, 0);
    PQclear(hlt_sql(&db, "UPDATE users SET active = false WHERE name = 'gone'"));
    PQclear(hlt_sql(&db, "DELETE FROM audit_log"));

    test_tokens();
    test_executors();
    test_workflows();
    test_packages();
    test_audit();

    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_registry");
}

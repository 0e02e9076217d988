/* gx_api_auth.c - login, logout and "who am I".
 *
 * A successful login returns a session token (HS256 JWT, see gx_jwt.h) in the
 * body, for automation, and as an HttpOnly, SameSite=Strict cookie, for the
 * browser.
 *
 * Failed logins slow their source down, never lock anyone out
 * (gx_ratelimit.h): after login_free_failures failures of one account from
 * one client, that pair waits 1 s, then 2 s, 4 s, ... up to login_max_delay
 * before it is heard again; a client failing across many accounts (4x the
 * free failures) and an account failing from many clients (4x) wait the same
 * way, except that a client which logged in as the account lately is not
 * held by the account-wide delay. So a stranger's guesses delay only the
 * stranger. The client is the peer address, or the X-Forwarded-For entry
 * written by a trusted proxy (req->client). A delayed attempt is answered
 * 429 with Retry-After and never reaches Halley. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "gx_jwt.h"
#include "orr_json.h"
#include "orr_log.h"

static int64_t gx_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Retry-After for a wait of ms (whole seconds, rounded up). */
static void gx_retry_after(gx_req *req, gx_resp *resp, int64_t ms)
{
    gx_resp_header(resp, "Retry-After",
                   orr_arena_sprintf(req->arena, "%lld", (long long)((ms + 999) / 1000)));
}

static void gx_too_many(gx_req *req, gx_resp *resp, int64_t wait_ms)
{
    gx_resp_fail(resp, ORR_EAGAIN, "name", "too many failed logins; retry in %lld s",
                 (long long)((wait_ms + 999) / 1000));
    resp->status = 429;
    gx_retry_after(req, resp, wait_ms);
}

void gx_h_login(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    static const char *const keys[] = {"name", "password", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *name = NULL, *password = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "name", 1, &name, &e) != ORR_OK ||
        orr_json_get_str(body, "", "password", 1, &password, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!*name || strlen(name) > 128 || strlen(password) > 1024) {
        gx_resp_fail(resp, ORR_EINVAL, "name", "name must be 1-128 bytes, password at most 1024");
        return;
    }
    time_t now = time(NULL);
    int64_t mono = gx_mono_ms();
    const char *client = req->client ? req->client : req->peer;
    const char *pkey = orr_arena_sprintf(req->arena, "%s\n%s", name, client);
    int known = gx_ratelimit_known(app->login_known, pkey, mono);
    int64_t wait = gx_ratelimit_blocked(app->login_by_pair, pkey, mono);
    int64_t w = gx_ratelimit_blocked(app->login_by_client, client, mono);
    if (w > wait)
        wait = w;
    if (!known && (w = gx_ratelimit_blocked(app->login_by_user, name, mono)) > wait)
        wait = w;
    if (wait) {
        gx_too_many(req, resp, wait);
        return;
    }
    HL(AuthenticateRequest) rq = HL_INIT(AUTHENTICATE_REQUEST);
    rq.name = (char *)name;
    rq.password = (char *)password;
    HL(AuthenticateResponse) * rs;
    if (gx_halley(req, resp, "Authenticate", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    gx_role role = rs->user ? gx_role_of(rs->user->role) : GX_ROLE_NONE;
    if (!rs->ok || !rs->user || !rs->user->active || role == GX_ROLE_NONE) {
        int64_t next = gx_ratelimit_fail(app->login_by_pair, pkey, mono);
        if ((w = gx_ratelimit_fail(app->login_by_client, client, mono)) > next)
            next = w;
        if (!known && (w = gx_ratelimit_fail(app->login_by_user, name, mono)) > next)
            next = w;
        ORR_INFO("login failed", "user=%s client=%s peer=%s", orr_log_q(name), client, req->peer);
        gx_resp_fail(resp, ORR_EAUTH, NULL, "wrong user name or password");
        /* Tell the caller when its next attempt will be heard. */
        if (next > 0)
            gx_retry_after(req, resp, next);
        return;
    }
    gx_ratelimit_clear(app->login_by_pair, pkey);
    gx_ratelimit_remember(app->login_known, pkey, mono);
    const char **teams = orr_arena_calloc(req->arena, rs->user->n_teams + 1, sizeof(*teams));
    for (size_t i = 0; i < rs->user->n_teams; i++)
        teams[i] = rs->user->teams[i];
    gx_principal who = {
        .user_id = rs->user->id, .name = rs->user->name, .role = role, .teams = teams};
    char *tok = NULL;
    if (gx_jwt_issue(app->jwt_secret, app->jwt_secret_len, &who, app->session_ttl_s, now, &tok,
                     &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    const char *cookie = orr_arena_sprintf(
        req->arena, "orrery_session=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%lld%s", tok,
        (long long)app->session_ttl_s, app->cookie_secure ? "; Secure" : "");
    json_t *out = json_object();
    json_object_set_new(out, "token", json_string(tok));
    json_object_set_new(out, "expires_at",
                        gx_json_time((int64_t)(now + app->session_ttl_s) * 1000));
    json_object_set_new(out, "user", gx_user_json(rs->user));
    free(tok);
    gx_resp_json(resp, 200, out);
    gx_resp_header(resp, "Set-Cookie", cookie);
    gx_resp_header(resp, "Cache-Control", "no-store");
    ORR_INFO("login", "user=%s role=%s client=%s", orr_log_q(name), gx_role_name(role), client);
}

void gx_h_logout(gx_req *req, gx_resp *resp)
{
    (void)req;
    gx_resp_json(resp, 200, json_pack("{s:b}", "ok", 1));
    gx_resp_header(resp, "Set-Cookie",
                   "orrery_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
}

void gx_h_me(gx_req *req, gx_resp *resp)
{
    json_t *teams = json_array();
    for (const char *const *t = req->who.teams; t && *t; t++)
        json_array_append_new(teams, json_string(*t));
    gx_resp_json(resp, 200,
                 json_pack("{s:I,s:s,s:s,s:o}", "id", (json_int_t)req->who.user_id, "name",
                           req->who.name, "role", gx_role_name(req->who.role), "teams", teams));
}

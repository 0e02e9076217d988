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
 * 429 with Retry-After and never reaches Halley.
 *
 * Every login is a halleyd session (its id is the token's sid claim). Logout
 * ends it, a password change ends every session of the user (and returns a
 * new one), and so does any change an admin makes to the user; galaxyd
 * refuses an ended session at once (gx_session.h). */
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

/* Answer a successful Authenticate: the session token (body and cookie) of
 * rs's session. 0, or -1 with an error answered. */
static int gx_session_answer(gx_req *req, gx_resp *resp, const HL(AuthenticateResponse) * rs,
                             time_t now)
{
    gx_app *app = req->app;
    orr_err e;
    if (!rs->session_id || strlen(rs->session_id) != 32) {
        gx_resp_fail(resp, ORR_EUNIMPL, NULL,
                     "the metadata service made no session; upgrade "
                     "halleyd");
        return -1;
    }
    const char **teams = orr_arena_calloc(req->arena, rs->user->n_teams + 1, sizeof(*teams));
    for (size_t i = 0; i < rs->user->n_teams; i++)
        teams[i] = rs->user->teams[i];
    gx_principal who = {.user_id = rs->user->id,
                        .name = rs->user->name,
                        .role = gx_role_of(rs->user->role),
                        .teams = teams,
                        .sid = rs->session_id};
    char *tok = NULL;
    if (gx_jwt_issue(app->jwt_secret, app->jwt_secret_len, &who, app->session_ttl_s, now, &tok,
                     &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return -1;
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
    return 0;
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
    rq.session_ttl_ms = app->session_ttl_s * 1000;
    rq.client = (char *)client;
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
    if (gx_session_answer(req, resp, rs, now) == 0)
        ORR_INFO("login", "user=%s role=%s client=%s", orr_log_q(name), gx_role_name(role), client);
}

/* Logout: the caller's session (if the request carries a valid session
 * token) ends on every galaxyd; the cookie is cleared either way. */
void gx_h_logout(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    int cookie;
    const char *tok = gx_req_token(req, &cookie);
    gx_principal who;
    orr_err e;
    memset(&who, 0, sizeof who);
    int ended = 0;
    if (tok && strncmp(tok, "orr_", 4) != 0 &&
        gx_jwt_verify(app->jwt_secret, app->jwt_secret_len, tok, time(NULL), req->arena, &who,
                      &e) == ORR_OK &&
        who.sid) {
        HL(RevokeSessionRequest) rq = HL_INIT(REVOKE_SESSION_REQUEST);
        rq.session_id = (char *)who.sid;
        rq.actor = (char *)orr_arena_sprintf(req->arena, "user:%s", who.name);
        HL(RevokeSessionResponse) * rs;
        orr_status st = gx_halley(req, resp, "RevokeSession", &rq.base, (ProtobufCMessage **)&rs);
        if (st != ORR_OK && st != ORR_ENOTFOUND)
            return; /* halleyd could not end it: say so, keep the cookie */
        gx_sessions_ended(app->sessions, who.sid, who.exp_ms);
        ended = 1;
        ORR_INFO("logout", "user=%s sid=%.8s", orr_log_q(who.name), who.sid);
    }
    gx_resp_json(resp, 200, json_pack("{s:b,s:b}", "ok", 1, "session_ended", ended));
    gx_resp_header(resp, "Set-Cookie",
                   "orrery_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
}

/* A user changes their own password: every session of theirs ends (on every
 * galaxyd) and the answer is a new session, like a login's. */
void gx_h_password(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    static const char *const keys[] = {"old_password", "new_password", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *old_pw = NULL, *new_pw = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "old_password", 1, &old_pw, &e) != ORR_OK ||
        orr_json_get_str(body, "", "new_password", 1, &new_pw, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (strlen(new_pw) < 8 || strlen(new_pw) > 1024) {
        gx_resp_fail(resp, ORR_EINVAL, "new_password", "must be 8 to 1024 bytes");
        return;
    }
    HL(UpdateUserRequest) rq = HL_INIT(UPDATE_USER_REQUEST);
    rq.name = (char *)req->who.name;
    rq.password = (char *)new_pw;
    rq.old_password = (char *)old_pw;
    rq.actor = (char *)gx_actor(req);
    HL(User) * u;
    if (gx_halley(req, resp, "UpdateUser", &rq.base, (ProtobufCMessage **)&u) != ORR_OK)
        return;
    if (req->who.sid)
        gx_sessions_ended(app->sessions, req->who.sid, req->who.exp_ms);
    HL(AuthenticateRequest) aq = HL_INIT(AUTHENTICATE_REQUEST);
    aq.name = (char *)req->who.name;
    aq.password = (char *)new_pw;
    aq.session_ttl_ms = app->session_ttl_s * 1000;
    aq.client = (char *)(req->client ? req->client : req->peer);
    HL(AuthenticateResponse) * rs;
    if (gx_halley(req, resp, "Authenticate", &aq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    if (!rs->ok || !rs->user) {
        gx_resp_fail(resp, ORR_EAUTH, NULL, "password changed; log in again");
        return;
    }
    if (gx_session_answer(req, resp, rs, time(NULL)) == 0)
        ORR_INFO("password changed", "user=%s", orr_log_q(req->who.name));
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

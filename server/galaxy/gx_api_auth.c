/* gx_api_auth.c - login, logout and "who am I".
 *
 * A successful login returns a session token (HS256 JWT, see gx_jwt.h) in the
 * body, for automation, and as an HttpOnly, SameSite=Strict cookie, for the
 * browser. Failed logins are limited per user name and per client address
 * (gx_ratelimit.h); a limited attempt is answered 429 with Retry-After and
 * never reaches Halley, so it cannot be used to guess passwords faster. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "gx_jwt.h"
#include "orr_json.h"
#include "orr_log.h"

static void gx_too_many(gx_req *req, gx_resp *resp, int wait)
{
    gx_resp_fail(resp, ORR_EAGAIN, "name", "too many failed logins; retry in %d s", wait);
    resp->status = 429;
    gx_resp_header(resp, "Retry-After", orr_arena_sprintf(req->arena, "%d", wait));
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
    const char *ukey = orr_arena_sprintf(req->arena, "user:%s", name);
    const char *akey = orr_arena_sprintf(req->arena, "addr:%s", req->peer);
    int wait = gx_ratelimit_blocked(app->login_by_user, ukey, now);
    int wait2 = gx_ratelimit_blocked(app->login_by_addr, akey, now);
    if (wait || wait2) {
        gx_too_many(req, resp, wait > wait2 ? wait : wait2);
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
        gx_ratelimit_fail(app->login_by_user, ukey, now);
        gx_ratelimit_fail(app->login_by_addr, akey, now);
        ORR_INFO("login failed", "user=%s peer=%s", orr_log_q(name), req->peer);
        gx_resp_fail(resp, ORR_EAUTH, NULL, "wrong user name or password");
        return;
    }
    gx_ratelimit_clear(app->login_by_user, ukey);
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
    ORR_INFO("login", "user=%s role=%s peer=%s", orr_log_q(name), gx_role_name(role), req->peer);
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

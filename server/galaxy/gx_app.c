/* gx_app.c - what every galaxyd handler shares: authorisation, Halley calls,
 * and the JSON shapes of tasks and users (instances, state names and times:
 * gx_instance_json.c). */
#include "gx_app.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gx_jwt.h"
#include "gx_input.h"
#include "orr_blob.h"
#include "orr_log.h"
#include "orr_name.h"

static pthread_mutex_t gx_blob_mu = PTHREAD_MUTEX_INITIALIZER;

orr_blob *gx_blob(gx_app *app, orr_err *err)
{
    pthread_mutex_lock(&gx_blob_mu);
    if (!app->blob && orr_blob_open(app->blob_root, &app->blob, err) != ORR_OK) {
        app->blob = NULL;
        if (err && strcmp(err->field, "blob_root") == 0)
            snprintf(err->field, sizeof(err->field), "galaxy.blob_root");
        ORR_WARN("blob store not available", "err=%s", orr_log_q(err ? err->msg : ""));
    }
    orr_blob *b = app->blob;
    pthread_mutex_unlock(&gx_blob_mu);
    return b;
}

/* The caller's token: "Authorization: Bearer <token>" (the scheme in any
 * case, one or more spaces, RFC 7235), else the session cookie (*cookie set). */
const char *gx_req_token(gx_req *req, int *cookie)
{
    const char *h = gx_req_header(req, "Authorization");
    *cookie = 0;
    if (h && strncasecmp(h, "Bearer", 6) == 0 && h[6] == ' ') {
        h += 6;
        while (*h == ' ')
            h++;
        return h;
    }
    *cookie = 1;
    return gx_req_cookie(req, "orrery_session");
}

/* Cross-site defence for cookie-authenticated requests that change state
 * (the cookie is SameSite=Strict as well): a browser says where a request
 * comes from in Sec-Fetch-Site, or at least in Origin; either must say this
 * site. A request with neither comes from no browser and passes (bearer
 * tokens, which a page cannot attach by itself, are never checked). 0 ok. */
static int gx_cross_site(gx_req *req)
{
    if (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0)
        return 0;
    const char *site = gx_req_header(req, "Sec-Fetch-Site");
    if (site)
        return strcmp(site, "same-origin") == 0 || strcmp(site, "none") == 0 ? 0 : -1;
    const char *origin = gx_req_header(req, "Origin");
    if (!origin)
        return 0;
    const char *host = gx_req_header(req, "Host");
    const char *o = strstr(origin, "://");
    return host && o && strcasecmp(o + 3, host) == 0 ? 0 : -1;
}

int gx_auth_check(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    int cookie;
    const char *tok = gx_req_token(req, &cookie);
    orr_err e;
    if (!tok) {
        gx_resp_fail(resp, ORR_EAUTH, "authorization", "login required");
        return 1;
    }
    if (cookie && gx_cross_site(req) != 0) {
        gx_resp_fail(resp, ORR_EPERM, "origin",
                     "cross-site request refused: a session cookie only works from this site");
        return 1;
    }
    if (strncmp(tok, "orr_", 4) == 0) {
        /* API token of a service account: acts as its user. */
        if (gx_token_authenticate(req, tok, &e) != ORR_OK) {
            gx_resp_err(resp, &e);
            return 1;
        }
    } else if (gx_jwt_verify(app->jwt_secret, app->jwt_secret_len, tok, time(NULL), req->arena,
                             &req->who, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return 1;
    } else if (!req->who.sid) {
        gx_resp_fail(resp, ORR_EAUTH, "authorization",
                     "this session token predates session ids; log in again");
        return 1;
    } else if (app->sessions && gx_sessions_check(app->sessions, req->who.sid,
                                                  (int64_t)time(NULL) * 1000, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return 1;
    }
    if (req->who.role < req->route->min_role) {
        gx_resp_fail(resp, ORR_EPERM, "role", "%s role required",
                     gx_role_name(req->route->min_role));
        return 1;
    }
    return 0;
}

int gx_require_team(gx_req *req, gx_resp *resp, const char *team)
{
    if (req->who.role == GX_ROLE_ADMIN)
        return 1;
    if (req->who.role == GX_ROLE_DEVELOPER && team)
        for (const char *const *t = req->who.teams; t && *t; t++)
            if (strcmp(*t, team) == 0)
                return 1;
    gx_resp_fail(resp, ORR_EPERM, "team", "only developers of team %s (or admins) may change this",
                 team ? team : "?");
    return 0;
}

const char *gx_actor(gx_req *req)
{
    return orr_arena_sprintf(req->arena, "user:%s", req->who.name ? req->who.name : "anonymous");
}

orr_status gx_halley(gx_req *req, gx_resp *resp, const char *method, const ProtobufCMessage *in,
                     ProtobufCMessage **out)
{
    gx_app *app = req->app;
    orr_err e;
    orr_err_clear(&e);
    *out = NULL;
    /* The answer lives in the request's arena: no malloc and free per field. */
    orr_status rc =
        orr_rpc_call_unary_in(app->halley, method, in, req->arena, out, app->rpc_timeout_ms, &e);
    if (rc != ORR_OK) {
        if (rc == ORR_EUNAVAIL || rc == ORR_ETIMEOUT) {
            ORR_WARN("halley call failed", "method=%s code=%s err=%s", method, orr_status_name(rc),
                     orr_log_q(e.msg));
            orr_err_set(&e, ORR_EUNAVAIL, NULL, "metadata service unavailable; retry shortly");
        } else if (rc == ORR_EUNIMPL) {
            /* This halleyd predates the method. */
            ORR_WARN("halley lacks a method", "method=%s", method);
            orr_err_set(&e, ORR_EUNIMPL, NULL,
                        "not implemented by this metadata service (%s); upgrade halleyd", method);
            gx_resp_err(resp, &e);
            resp->status = 501;
            return rc;
        } else if (rc == ORR_EAUTH) {
            /* Our service token was refused: a deployment problem, not the user's. */
            ORR_ERROR("halley refused the service token", "method=%s", method);
            orr_err_set(&e, ORR_EINTERNAL, NULL, "galaxyd is misconfigured (service token)");
        }
        gx_resp_err(resp, &e);
        return rc;
    }
    return ORR_OK;
}

gx_role gx_role_of(HL(Role) r)
{
    switch (r) {
    case HL_ROLE(ADMIN):
        return GX_ROLE_ADMIN;
    case HL_ROLE(DEVELOPER):
        return GX_ROLE_DEVELOPER;
    case HL_ROLE(VIEWER):
        return GX_ROLE_VIEWER;
    default:
        return GX_ROLE_NONE;
    }
}

int64_t gx_param_id(gx_req *req, gx_resp *resp, int i, const char *field)
{
    int64_t v;
    if (gx_parse_id(gx_req_param(req, i), &v) != 0) {
        gx_resp_fail(resp, ORR_EINVAL, field,
                     "must be an id: digits only, no sign, spaces or leading zero");
        return 0;
    }
    return v;
}

int gx_check_name(gx_resp *resp, const char *s, const char *field)
{
    if (gx_name_ok(s))
        return 1;
    gx_resp_fail(resp, ORR_EINVAL, field, "must be " ORR_NAME_RULE);
    return 0;
}

json_t *gx_task_json(const HL(Task) * t)
{
    json_t *spec = json_loads(t->spec_json ? t->spec_json : "{}", 0, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(t->id));
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "team", json_string(t->team));
    json_object_set_new(o, "type", json_string(t->type));
    json_object_set_new(o, "active", json_boolean(t->active));
    json_object_set_new(o, "version", json_integer(t->version));
    json_object_set_new(o, "current_version", json_integer(t->current_version));
    json_object_set_new(o, "schedule", json_string(t->schedule));
    json_object_set_new(o, "timezone", json_string(t->timezone));
    json_object_set_new(o, "created_by", json_string(t->created_by));
    json_object_set_new(o, "created_at", gx_json_time(t->created_at_ms));
    json_object_set_new(o, "spec", spec ? spec : json_object());
    json_object_set_new(o, "comment", json_string(t->comment ? t->comment : ""));
    json_object_set_new(o, "restored_from",
                        t->restored_from ? json_integer(t->restored_from) : json_null());
    if (t->last_schedule_time_ms > 0) {
        const char *st = gx_state_name(t->last_state);
        json_object_set_new(o, "last_run",
                            json_pack("{s:o,s:o,s:o}", "state", st ? json_string(st) : json_null(),
                                      "schedule_time", gx_json_time(t->last_schedule_time_ms),
                                      "updated_at", gx_json_time(t->last_updated_at_ms)));
    }
    return o;
}

json_t *gx_user_json(const HL(User) * u)
{
    static const char *const roles[] = {"", "admin", "developer", "viewer"};
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(u->id));
    json_object_set_new(o, "name", json_string(u->name));
    json_object_set_new(
        o, "role", json_string((int)u->role >= 1 && (int)u->role <= 3 ? roles[u->role] : "none"));
    json_t *teams = json_array();
    for (size_t i = 0; i < u->n_teams; i++)
        json_array_append_new(teams, json_string(u->teams[i]));
    json_object_set_new(o, "teams", teams);
    json_object_set_new(o, "active", json_boolean(u->active));
    return o;
}

/* ------------------------------------------------------------ paging */

static const char *gx_sort_key;
static int gx_sort_numeric;

static int gx_page_cmp(const void *a, const void *b)
{
    json_t *x = json_object_get(*(json_t *const *)a, gx_sort_key);
    json_t *y = json_object_get(*(json_t *const *)b, gx_sort_key);
    if (gx_sort_numeric) {
        json_int_t i = json_integer_value(x), j = json_integer_value(y);
        return (i > j) - (i < j);
    }
    const char *s = json_string_value(x), *t = json_string_value(y);
    return strcmp(s ? s : "", t ? t : "");
}

static pthread_mutex_t gx_sort_mu = PTHREAD_MUTEX_INITIALIZER;

void gx_page_answer(gx_req *req, gx_resp *resp, const char *list, json_t *items, const char *key,
                    int numeric)
{
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 100, 1, 1000, &limit)) {
        json_decref(items);
        return;
    }
    /* The token is "<list>:<key of the last row shown>" in base64url. */
    const char *tok = gx_req_query(req, "page_token");
    const char *after = NULL;
    if (tok && *tok) {
        size_t n = strlen(tok);
        unsigned char *raw = orr_arena_alloc(req->arena, n + 1);
        size_t len = 0;
        size_t plen = strlen(list);
        if (n > 1024 ||
            sodium_base642bin(raw, n, tok, n, NULL, &len, NULL,
                              sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
            len <= plen + 1 || memcmp(raw, list, plen) != 0 || raw[plen] != ':') {
            gx_resp_fail(resp, ORR_EINVAL, "page_token", "not a token of this list");
            json_decref(items);
            return;
        }
        raw[len] = '\0';
        after = (const char *)raw + plen + 1;
        int64_t v;
        if (strlen(after) != len - plen - 1 || gx_text_problem(after, strlen(after)) ||
            (numeric && gx_parse_int(after, &v) != 0)) {
            gx_resp_fail(resp, ORR_EINVAL, "page_token", "not a token of this list");
            json_decref(items);
            return;
        }
    }
    size_t n = json_array_size(items);
    json_t **rows = orr_arena_calloc(req->arena, n + 1, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        rows[i] = json_array_get(items, i);
    pthread_mutex_lock(&gx_sort_mu);
    gx_sort_key = key;
    gx_sort_numeric = numeric;
    qsort(rows, n, sizeof *rows, gx_page_cmp);
    pthread_mutex_unlock(&gx_sort_mu);
    json_t *page = json_array();
    const char *last = NULL;
    size_t i = 0;
    int64_t after_i = 0;
    if (after && numeric)
        gx_parse_int(after, &after_i);
    for (; i < n && after; i++) { /* skip what the earlier pages showed */
        json_t *k = json_object_get(rows[i], key);
        if (numeric ? json_integer_value(k) > after_i
                    : strcmp(json_string_value(k) ? json_string_value(k) : "", after) > 0)
            break;
    }
    for (; i < n && json_array_size(page) < (size_t)limit; i++) {
        json_array_append(page, rows[i]);
        json_t *k = json_object_get(rows[i], key);
        last = numeric ? orr_arena_sprintf(req->arena, "%lld", (long long)json_integer_value(k))
                       : json_string_value(k);
    }
    json_t *next = json_null();
    if (i < n && last) {
        const char *plain = orr_arena_sprintf(req->arena, "%s:%s", list, last);
        size_t cap =
            sodium_base64_ENCODED_LEN(strlen(plain), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        char *enc = orr_arena_alloc(req->arena, cap);
        sodium_bin2base64(enc, cap, (const unsigned char *)plain, strlen(plain),
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        next = json_string(enc);
    }
    json_decref(items);
    gx_resp_json(resp, 200, json_pack("{s:o,s:o}", "items", page, "next_page_token", next));
}

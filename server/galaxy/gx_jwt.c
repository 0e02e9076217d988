/* gx_jwt.c - HS256 session tokens with algorithm and expiry checked here (see gx_jwt.h). */
#include "gx_jwt.h"

#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <stdlib.h>
#include <string.h>

const char *gx_role_name(gx_role r)
{
    switch (r) {
    case GX_ROLE_VIEWER:
        return "viewer";
    case GX_ROLE_DEVELOPER:
        return "developer";
    case GX_ROLE_ADMIN:
        return "admin";
    default:
        return "none";
    }
}

gx_role gx_role_parse(const char *s)
{
    if (!s)
        return GX_ROLE_NONE;
    if (strcmp(s, "viewer") == 0)
        return GX_ROLE_VIEWER;
    if (strcmp(s, "developer") == 0)
        return GX_ROLE_DEVELOPER;
    if (strcmp(s, "admin") == 0)
        return GX_ROLE_ADMIN;
    return GX_ROLE_NONE;
}

orr_status gx_jwt_issue(const unsigned char *secret, size_t secret_len, const gx_principal *who,
                        int64_t ttl_s, time_t now, char **out, orr_err *err)
{
    jwt_t *jwt = NULL;
    orr_status rc = ORR_EINTERNAL;
    json_t *teams = NULL;
    char *teams_json = NULL;
    *out = NULL;
    if (secret_len < 32)
        return orr_err_set(err, ORR_EINVAL, "galaxy.jwt_secret", "must be at least 32 bytes");
    if (jwt_new(&jwt) != 0)
        goto fail;
    char sub[32];
    snprintf(sub, sizeof(sub), "%lld", (long long)who->user_id);
    teams = json_array();
    for (const char *const *t = who->teams; t && *t; t++)
        json_array_append_new(teams, json_string(*t));
    teams_json = json_dumps(teams, JSON_COMPACT);
    if (!teams_json || jwt_add_grant(jwt, "sub", sub) || jwt_add_grant(jwt, "name", who->name) ||
        jwt_add_grant(jwt, "role", gx_role_name(who->role)) ||
        jwt_add_grant_int(jwt, "iat", (long)now) ||
        jwt_add_grant_int(jwt, "exp", (long)(now + ttl_s)))
        goto fail;
    /* teams as a JSON array: jwt_add_grants_json merges an object of grants. */
    char *grants = NULL;
    if (asprintf(&grants, "{\"teams\":%s}", teams_json) < 0)
        goto fail;
    int g = jwt_add_grants_json(jwt, grants);
    free(grants);
    if (g != 0)
        goto fail;
    if (jwt_set_alg(jwt, JWT_ALG_HS256, secret, (int)secret_len) != 0)
        goto fail;
    *out = jwt_encode_str(jwt);
    if (!*out)
        goto fail;
    rc = ORR_OK;
fail:
    if (rc != ORR_OK)
        orr_err_set(err, rc, NULL, "cannot create session token");
    free(teams_json);
    json_decref(teams);
    jwt_free(jwt);
    return rc;
}

orr_status gx_jwt_verify(const unsigned char *secret, size_t secret_len, const char *token,
                         time_t now, orr_arena *a, gx_principal *who, orr_err *err)
{
    jwt_t *jwt = NULL;
    orr_status rc = ORR_EAUTH;
    const char *why = "malformed token";
    if (!secret || secret_len < 32 || !token || !*token || strlen(token) > 8192)
        goto out;
    if (jwt_decode(&jwt, token, secret, (int)secret_len) != 0 || !jwt) {
        why = "bad signature or malformed token";
        goto out;
    }
    if (jwt_get_alg(jwt) != JWT_ALG_HS256) {
        why = "algorithm must be HS256";
        goto out;
    }
    errno = 0;
    long exp = jwt_get_grant_int(jwt, "exp");
    if (errno == ENOENT || exp <= 0) {
        why = "token has no expiry";
        goto out;
    }
    if ((time_t)exp <= now) {
        why = "token expired";
        goto out;
    }
    const char *sub = jwt_get_grant(jwt, "sub");
    const char *name = jwt_get_grant(jwt, "name");
    const char *role = jwt_get_grant(jwt, "role");
    if (!sub || !name || gx_role_parse(role) == GX_ROLE_NONE) {
        why = "token lacks sub, name or role";
        goto out;
    }
    char *end;
    long long uid = strtoll(sub, &end, 10);
    if (*end || uid <= 0) {
        why = "bad subject";
        goto out;
    }
    who->user_id = uid;
    who->name = orr_arena_strdup(a, name);
    who->role = gx_role_parse(role);
    char *teams_json = jwt_get_grants_json(jwt, "teams");
    json_t *teams = teams_json ? json_loads(teams_json, 0, NULL) : NULL;
    free(teams_json);
    size_t n = json_is_array(teams) ? json_array_size(teams) : 0;
    const char **list = orr_arena_calloc(a, n + 1, sizeof(*list));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = json_string_value(json_array_get(teams, i));
        if (t)
            list[k++] = orr_arena_strdup(a, t);
    }
    json_decref(teams);
    who->teams = list;
    rc = ORR_OK;
out:
    jwt_free(jwt);
    if (rc != ORR_OK)
        orr_err_set(err, rc, "authorization", "%s", why);
    return rc;
}

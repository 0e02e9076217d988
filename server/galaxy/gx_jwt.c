/* gx_jwt.c - HS256 session tokens with algorithm and expiry checked here (see gx_jwt.h).
 *
 * Verified-token cache: every API request carries the same few tokens, and a
 * full check (base64, JSON, HMAC, claims) costs far more than the rest of a
 * cached answer. A token that passed is remembered (GX_JWT_CACHE_SLOTS
 * direct-mapped slots, one mutex) with the exact token text, the exact secret
 * it was checked with and its claims. A later call with the same token and
 * secret reuses the claims only while exp > now and the entry is younger than
 * GX_JWT_CACHE_TTL_S; everything else (a miss, a refusal, expiry) takes the
 * full path, so refusals and their reasons are unchanged.
 */
#include "gx_jwt.h"

#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "orr_hash.h"

#define GX_JWT_CACHE_SLOTS     256
#define GX_JWT_CACHE_TTL_S     30
#define GX_JWT_CACHE_MAX_TOKEN 4096
#define GX_JWT_CACHE_MAX_KEY   128

struct gx_jwt_cached {
    uint64_t hash;
    char *block; /* malloc'd: token NUL name NUL sid NUL team NUL ... team NUL; NULL = empty */
    size_t token_len;
    unsigned char secret[GX_JWT_CACHE_MAX_KEY];
    size_t secret_len;
    int64_t user_id;
    gx_role role;
    size_t nteams;
    time_t exp;
    time_t cached_at;
};

static pthread_mutex_t gx_jwt_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gx_jwt_cached gx_jwt_cache[GX_JWT_CACHE_SLOTS];

/* 1 and *who filled (arena copies) if token is cached for this secret and
 * still usable at now. */
static int gx_jwt_cache_get(const unsigned char *secret, size_t secret_len, const char *token,
                            size_t token_len, uint64_t h, time_t now, orr_arena *a,
                            gx_principal *who)
{
    struct gx_jwt_cached *c = &gx_jwt_cache[h % GX_JWT_CACHE_SLOTS];
    int hit = 0;
    pthread_mutex_lock(&gx_jwt_cache_mu);
    if (c->block && c->hash == h && c->token_len == token_len && c->secret_len == secret_len &&
        c->exp > now && now >= c->cached_at && now - c->cached_at < GX_JWT_CACHE_TTL_S &&
        memcmp(c->block, token, token_len) == 0 && memcmp(c->secret, secret, secret_len) == 0) {
        const char *p = c->block + token_len + 1;
        who->user_id = c->user_id;
        who->role = c->role;
        who->name = orr_arena_strdup(a, p);
        p += strlen(p) + 1;
        who->sid = *p ? orr_arena_strdup(a, p) : NULL;
        who->exp_ms = (int64_t)c->exp * 1000;
        p += strlen(p) + 1;
        const char **list = orr_arena_calloc(a, c->nteams + 1, sizeof(*list));
        for (size_t i = 0; i < c->nteams; i++) {
            list[i] = orr_arena_strdup(a, p);
            p += strlen(p) + 1;
        }
        who->teams = list;
        hit = 1;
    }
    pthread_mutex_unlock(&gx_jwt_cache_mu);
    return hit;
}

static void gx_jwt_cache_put(const unsigned char *secret, size_t secret_len, const char *token,
                             size_t token_len, uint64_t h, time_t now, time_t exp,
                             const gx_principal *who)
{
    if (secret_len > GX_JWT_CACHE_MAX_KEY || token_len > GX_JWT_CACHE_MAX_TOKEN)
        return;
    const char *sid = who->sid ? who->sid : "";
    size_t size = token_len + 1 + strlen(who->name) + 1 + strlen(sid) + 1, nteams = 0;
    for (const char *const *t = who->teams; t && *t; t++, nteams++)
        size += strlen(*t) + 1;
    char *block = malloc(size), *p = block;
    if (!block)
        return;
    memcpy(p, token, token_len + 1);
    p += token_len + 1;
    size_t n = strlen(who->name) + 1;
    memcpy(p, who->name, n);
    p += n;
    n = strlen(sid) + 1;
    memcpy(p, sid, n);
    p += n;
    for (const char *const *t = who->teams; t && *t; t++) {
        n = strlen(*t) + 1;
        memcpy(p, *t, n);
        p += n;
    }
    struct gx_jwt_cached *c = &gx_jwt_cache[h % GX_JWT_CACHE_SLOTS];
    pthread_mutex_lock(&gx_jwt_cache_mu);
    char *old = c->block;
    c->block = block;
    c->hash = h;
    c->token_len = token_len;
    memcpy(c->secret, secret, secret_len);
    c->secret_len = secret_len;
    c->user_id = who->user_id;
    c->role = who->role;
    c->nteams = nteams;
    c->exp = exp;
    c->cached_at = now;
    pthread_mutex_unlock(&gx_jwt_cache_mu);
    free(old);
}

void gx_jwt_cache_clear(void)
{
    pthread_mutex_lock(&gx_jwt_cache_mu);
    for (size_t i = 0; i < GX_JWT_CACHE_SLOTS; i++) {
        free(gx_jwt_cache[i].block);
        gx_jwt_cache[i].block = NULL;
    }
    pthread_mutex_unlock(&gx_jwt_cache_mu);
}

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
        (who->sid && jwt_add_grant(jwt, "sid", who->sid)) ||
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
    size_t token_len = strlen(token);
    uint64_t h = orr_hash_fnv1a(token, token_len);
    if (gx_jwt_cache_get(secret, secret_len, token, token_len, h, now, a, who))
        return ORR_OK;
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
    const char *sid = jwt_get_grant(jwt, "sid");
    if (sid && (strlen(sid) != 32 || strspn(sid, "0123456789abcdef") != 32)) {
        why = "bad session id";
        goto out;
    }
    who->user_id = uid;
    who->name = orr_arena_strdup(a, name);
    who->sid = sid ? orr_arena_strdup(a, sid) : NULL;
    who->exp_ms = (int64_t)exp * 1000;
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
    gx_jwt_cache_put(secret, secret_len, token, token_len, h, now, (time_t)exp, who);
    rc = ORR_OK;
out:
    jwt_free(jwt);
    if (rc != ORR_OK)
        orr_err_set(err, rc, "authorization", "%s", why);
    return rc;
}

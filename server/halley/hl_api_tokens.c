/*
 * hl_api_tokens.c - API tokens: CreateApiToken, ListApiTokens,
 * RevokeApiToken and AuthenticateApiToken.
 *
 * A token is "orr_" + 32 random bytes in unpadded base64url (47 bytes). Only
 * the SHA-256 of the whole text is stored; the token itself is returned once,
 * by CreateApiToken. AuthenticateApiToken is the hot path of every
 * token-authenticated request, so it is one statement: the lookup by hash, the
 * user and their teams, and - at most once a minute per token - the
 * last_used_at refresh in a data-modifying CTE that touches no row (and so
 * writes nothing) in between. Malformed tokens never reach the database.
 * Creating and revoking write the row and its audit record in one transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include <sodium.h>

#include "orr_log.h"

#define HL_TOKEN_PREFIX     "orr_"
#define HL_TOKEN_RAW_BYTES  32
#define HL_TOKEN_TEXT_BYTES (4 + 43) /* prefix + unpadded base64 of 32 bytes */
#define HL_SHA_HEX_BYTES    (crypto_hash_sha256_BYTES * 2)

typedef Orrery__Halley__V1__ApiToken hl_pb_token;

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
    "  coalesce(" HL_MS(
        "t.expires_at") ", 0) AS exp"
                        "  FROM api_tokens t WHERE t.token_hash = decode($1, 'hex')),"
                        " touch AS (UPDATE api_tokens x SET last_used_at = now() FROM hit, users u"
                        "  WHERE x.id = hit.tid AND hit.live AND hit.stale AND u.id = hit.uid AND "
                        "u.active"
                        "  RETURNING x.id)"
                        " SELECT u.id, u.name, u.role, u.active, coalesce((SELECT "
                        "string_agg(tm.name, ',' ORDER BY"
                        "  tm.name) FROM user_teams ut JOIN teams tm ON tm.id = ut.team_id WHERE "
                        "ut.user_id = u.id),"
                        "  ''), hit.live, (SELECT count(*) FROM touch), hit.exp"
                        " FROM hit JOIN users u ON u.id = hit.uid");

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
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CreateApiTokenRequest);
    if (!hl_is_name(rq->user, 128))
        return orr_err_set(err, ORR_EINVAL, "user", "a user name is required");
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (rq->expires_at_ms < 0 || (rq->expires_at_ms > 0 && rq->expires_at_ms <= hl_now_ms()))
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
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListApiTokensRequest);
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
    o->tokens = hl_alloc_n(a, sizeof *o->tokens, (size_t)n);
    hl_pb_token *ts = hl_alloc_n(a, sizeof *ts, (size_t)n);
    for (int i = 0; i < n; i++) {
        hl__fill_token(r, i, &ts[i]);
        o->tokens[i] = &ts[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_revoke_api_token)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RevokeApiTokenRequest);
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
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AuthenticateApiTokenRequest);
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
    u->role = hl_pb_role(hl_val(r, 0, 2));
    u->active = 1;
    u->teams = hl_split_names(a, hl_val(r, 0, 4), &u->n_teams);
    o->ok = 1;
    o->user = u;
    o->expires_at_ms = hl_val_i64(r, 0, 7);
    return ORR_OK;
}

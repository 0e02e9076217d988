/*
 * gx_jwt.h - galaxyd's session tokens: HS256 JWTs checked by our own code.
 *
 * libjwt 1.10 decodes and verifies a signature but pins no algorithm and
 * checks no expiry (an HS384 token made with the same secret is accepted, and
 * a NULL key accepts alg=none). So gx_jwt_verify never passes a NULL key,
 * requires alg == HS256, requires exp and iat, refuses exp <= now, and copies
 * every claim before the token is freed.
 *
 * Claims: sub (user id), name, role (viewer|developer|admin), teams (array of
 * team names), sid (the halleyd session, when who->sid is set), iat, exp.
 * gx_jwt_verify fills who->sid (NULL when the token has none) and
 * who->exp_ms; whether the session still lives is gx_session.h's concern.
 */
#ifndef GX_JWT_H
#define GX_JWT_H

#include <stdint.h>
#include <time.h>

#include "gx_http.h"
#include "orr_arena.h"
#include "orr_status.h"

/* Create a token valid for ttl_s seconds from now. *out is malloc'd (free()).
 * secret must be at least 32 bytes. */
orr_status gx_jwt_issue(const unsigned char *secret, size_t secret_len, const gx_principal *who,
                        int64_t ttl_s, time_t now, char **out, orr_err *err);

/* Verify token; on success fill *who with arena copies. ORR_EAUTH with a
 * reason ("expired", "bad signature", "algorithm must be HS256", ...) otherwise.
 * A token that passed is remembered with its secret for up to 30 s (never past
 * its exp), so repeated calls skip the decode and HMAC; thread-safe. */
orr_status gx_jwt_verify(const unsigned char *secret, size_t secret_len, const char *token,
                         time_t now, orr_arena *a, gx_principal *who, orr_err *err);
/* Forget every remembered token (tests; a secret rotation needs nothing:
 * entries are bound to the exact secret). */
void gx_jwt_cache_clear(void);

const char *gx_role_name(gx_role r);
/* "viewer" -> GX_ROLE_VIEWER; GX_ROLE_NONE for anything else. */
gx_role gx_role_parse(const char *s);

#endif

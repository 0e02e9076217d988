/*
 * hl_api_sessions.c - login sessions: made at login, ended by logout and by
 * any change to their user, told to every galaxyd.
 *
 * A session is a row (random 128-bit id, user, expiry); galaxyd puts its id
 * in the session token it signs. Ending sessions marks their rows revoked
 * and emits one "session.revoked" event in the same transaction:
 *
 *   {"user_id": 7, "reason": "logout", "sessions": [{"sid": "...", "exp_ms": N}]}
 *
 * galaxyd keeps the ended, unexpired sessions in memory: it loads them
 * (ListRevokedSessions) each time its event stream is in place (after the
 * stream's start marker, so nothing ended in between is missed) and adds
 * each event's sessions. While its stream is not in place it asks
 * CheckSession for every request instead. Expired rows are removed a few at
 * a time when sessions are made.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "hl_api.h"
#include "orr_buf.h"

static hl_stmt q_insert_session =
    HL_STMT("INSERT INTO sessions (id, user_id, client, expires_at)"
            " VALUES ($1, $2::int8, $3, now() + $4::int8 * interval '1 millisecond')");
static hl_stmt q_purge_sessions =
    HL_STMT("DELETE FROM sessions WHERE id IN (SELECT id FROM sessions"
            " WHERE expires_at < now() - interval '1 hour' LIMIT 100)");
static hl_stmt q_revoke_user =
    HL_STMT("UPDATE sessions SET revoked_at = now(), revoke_reason = $2 WHERE user_id = $1::int8"
            " AND revoked_at IS NULL AND expires_at > now() RETURNING id, " HL_MS("expires_at"));
static hl_stmt q_revoke_one =
    HL_STMT("UPDATE sessions SET revoked_at = now(), revoke_reason = 'logout' WHERE id = $1"
            " AND revoked_at IS NULL RETURNING id, user_id, " HL_MS("expires_at"));
static hl_stmt q_session_known = HL_STMT("SELECT user_id FROM sessions WHERE id = $1");
static hl_stmt q_list_revoked = HL_STMT("SELECT id, user_id, " HL_MS(
    "expires_at") " FROM sessions"
                  " WHERE revoked_at IS NOT NULL AND expires_at > now() ORDER BY expires_at");
static hl_stmt q_check_session =
    HL_STMT("SELECT s.revoked_at IS NULL AND s.expires_at > now() AND u.active"
            " FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1");

/* 1 if s is a session id as made here: 32 lowercase hex digits. */
static int hl__is_sid(const char *s)
{
    return s && strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

orr_status hl_session_create(hl_conn *c, orr_arena *a, int64_t user_id, int64_t ttl_ms,
                             const char *client, const char **sid, orr_err *err)
{
    unsigned char raw[16];
    char *hex = orr_arena_alloc(a, 33);
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(hex, 33, raw, sizeof raw);
    const char *p[4] = {hex, hl_i64s(a, user_id), client ? client : "", hl_i64s(a, ttl_ms)};
    orr_status s = hl_db_query(c, a, &q_insert_session, 4, p, NULL, err);
    if (s == ORR_OK)
        s = hl_db_query(c, a, &q_purge_sessions, 0, NULL, NULL, err);
    if (s == ORR_OK)
        *sid = hex;
    return s;
}

/* Emit "session.revoked" for the rows of r (columns: sid at sid_col, expiry
 * in ms at exp_col) of user_id; nothing when r has no rows. */
static orr_status hl__emit_revoked(hl_conn *c, orr_arena *a, int64_t user_id, const char *reason,
                                   PGresult *r, int sid_col, int exp_col, orr_err *err)
{
    int n = PQntuples(r);
    if (n == 0)
        return ORR_OK;
    orr_buf b = ORR_BUF_INIT;
    orr_buf_appendf(&b, "{\"user_id\":%lld,\"reason\":%s,\"sessions\":[", (long long)user_id,
                    hl_jstr(a, reason));
    for (int i = 0; i < n; i++)
        orr_buf_appendf(&b, "%s{\"sid\":%s,\"exp_ms\":%lld}", i ? "," : "",
                        hl_jstr(a, hl_val(r, i, sid_col)), hl_val_i64(r, i, exp_col));
    orr_buf_appendf(&b, "]}");
    orr_status s = hl_emit(c, a, "session.revoked", 0, 0, NULL, b.data, NULL, err);
    orr_buf_free(&b);
    return s;
}

orr_status hl_sessions_revoke_user(hl_conn *c, orr_arena *a, int64_t user_id, const char *reason,
                                   int *revoked, orr_err *err)
{
    const char *p[2] = {hl_i64s(a, user_id), reason};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_revoke_user, 2, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (revoked)
        *revoked = PQntuples(r);
    return hl__emit_revoked(c, a, user_id, reason, r, 0, 1, err);
}

HL_UNARY(hl_api_revoke_session)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RevokeSessionRequest);
    if (!hl__is_sid(rq->session_id))
        return orr_err_set(err, ORR_EINVAL, "session_id", "must be 32 lowercase hex digits");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {rq->session_id};
    PGresult *r, *known;
    int revoked = 0;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_session_known, 1, p, &known, err)) != ORR_OK)
        goto out;
    if (PQntuples(known) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "session_id", "no such session");
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_revoke_one, 1, p, &r, err)) != ORR_OK)
        goto out;
    revoked = PQntuples(r);
    if (revoked &&
        (s = hl__emit_revoked(c, a, hl_val_i64(r, 0, 1), "logout", r, 0, 2, err)) != ORR_OK)
        goto out;
    if ((s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    Orrery__Halley__V1__RevokeSessionResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__revoke_session_response__init(o);
    o->revoked = revoked;
    *resp = &o->base;
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_list_revoked_sessions)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListRevokedSessionsRequest);
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_revoked, 0, NULL, &r, err);
    if (s != ORR_OK)
        return s;
    int n = PQntuples(r);
    Orrery__Halley__V1__ListRevokedSessionsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_revoked_sessions_response__init(o);
    o->n_sessions = (size_t)n;
    o->sessions = hl_alloc_n(a, sizeof *o->sessions, (size_t)n);
    for (int i = 0; i < n; i++) {
        Orrery__Halley__V1__RevokedSession *x = orr_arena_alloc(a, sizeof *x);
        orrery__halley__v1__revoked_session__init(x);
        x->session_id = (char *)hl_val(r, i, 0);
        x->user_id = hl_val_i64(r, i, 1);
        x->expires_at_ms = hl_val_i64(r, i, 2);
        o->sessions[i] = x;
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_check_session)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CheckSessionRequest);
    Orrery__Halley__V1__CheckSessionResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__check_session_response__init(o);
    if (hl__is_sid(rq->session_id)) {
        const char *p[1] = {rq->session_id};
        PGresult *r;
        orr_status s = hl_db_query_once(hc->db, a, &q_check_session, 1, p, &r, err);
        if (s != ORR_OK)
            return s;
        o->active = PQntuples(r) == 1 && hl_val_bool(r, 0, 0);
    }
    *resp = &o->base;
    return ORR_OK;
}

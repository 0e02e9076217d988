/*
 * hl_api_users.c - users (argon2id): CreateUser, GetUser, Authenticate,
 * UpdateUser and ListUsers (paged).
 *
 * Password hashing runs before any connection is taken, so a slow hash never
 * holds a pool slot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_name.h"
#include <sodium.h>

#include "orr_buf.h"
#include "orr_log.h"

static hl_stmt q_insert_user =
    HL_STMT("INSERT INTO users (name, password_hash, role) VALUES ($1, $2, $3) RETURNING id");
static hl_stmt q_user_team = HL_STMT(
    "INSERT INTO user_teams (user_id, team_id) SELECT $1::int8, id FROM teams WHERE name = $2"
    " ON CONFLICT DO NOTHING RETURNING team_id");
static hl_stmt q_get_user =
    HL_STMT("SELECT id, name, role, active, password_hash FROM users WHERE name = $1");
static hl_stmt q_user_teams =
    HL_STMT("SELECT t.name FROM user_teams ut JOIN teams t ON t.id = ut.team_id"
            " WHERE ut.user_id = $1::int8 ORDER BY t.name");

static hl_stmt q_list_users = HL_STMT(
    "SELECT u.id, u.name, u.role, u.active, coalesce((SELECT string_agg(t.name, ',' ORDER BY"
    " t.name) FROM user_teams ut JOIN teams t ON t.id = ut.team_id WHERE ut.user_id = u.id), '')"
    " FROM users u WHERE u.id > $1::int8 AND ($2 = '' OR starts_with(u.name, $2))"
    " AND ($3 = '' OR u.role = $3) AND ($4 = '' OR EXISTS (SELECT 1 FROM user_teams ut"
    " JOIN teams t ON t.id = ut.team_id WHERE ut.user_id = u.id AND t.name = $4))"
    " ORDER BY u.id LIMIT $5::int");

static hl_stmt q_lock_user =
    HL_STMT("SELECT id, password_hash FROM users WHERE name = $1 FOR UPDATE");
static hl_stmt q_set_role = HL_STMT("UPDATE users SET role = $2 WHERE id = $1::int8");
static hl_stmt q_set_active = HL_STMT("UPDATE users SET active = $2::bool WHERE id = $1::int8");
static hl_stmt q_set_password = HL_STMT("UPDATE users SET password_hash = $2 WHERE id = $1::int8");
static hl_stmt q_clear_teams = HL_STMT("DELETE FROM user_teams WHERE user_id = $1::int8");

static const char *const hl__roles[] = {NULL, "admin", "developer", "viewer"};

/* Read a user and their teams; *hash (may be NULL) gets the stored hash. */
static orr_status hl__read_user(hl_conn *c, orr_arena *a, const char *name,
                                Orrery__Halley__V1__User **out, const char **hash, orr_err *err)
{
    const char *p[1] = {name};
    PGresult *r, *t;
    orr_status s = hl_db_query(c, a, &q_get_user, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such user");
    const char *pid[1] = {hl_val(r, 0, 0)};
    if ((s = hl_db_query(c, a, &q_user_teams, 1, pid, &t, err)) != ORR_OK)
        return s;
    Orrery__Halley__V1__User *u = orr_arena_alloc(a, sizeof *u);
    orrery__halley__v1__user__init(u);
    u->id = hl_val_i64(r, 0, 0);
    u->name = (char *)hl_val(r, 0, 1);
    u->role = hl_pb_role(hl_val(r, 0, 2));
    u->active = hl_val_bool(r, 0, 3);
    int n = PQntuples(t);
    u->n_teams = (size_t)n;
    u->teams = hl_alloc_n(a, sizeof *u->teams, (size_t)n);
    for (int i = 0; i < n; i++)
        u->teams[i] = (char *)hl_val(t, i, 0);
    if (hash)
        *hash = hl_val(r, 0, 4);
    *out = u;
    return ORR_OK;
}

/* ORR_OK when every name in teams[0..n) is a name; else EINVAL naming teams[i]. */
static orr_status hl__check_team_names(orr_arena *a, char **teams, size_t n, orr_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (!hl_is_name(teams[i], 128))
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "teams[%zu]", i),
                               "not a team name");
    return ORR_OK;
}

/* Make user uid (decimal text) a member of teams[0..n), on c in the caller's
 * transaction; EINVAL naming teams[i] for an unknown or repeated team. */
static orr_status hl__add_teams(hl_conn *c, orr_arena *a, const char *uid, char **teams, size_t n,
                                orr_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const char *pt[2] = {uid, teams[i]};
        PGresult *tr;
        orr_status s = hl_db_query(c, a, &q_user_team, 2, pt, &tr, err);
        if (s != ORR_OK)
            return s;
        if (PQntuples(tr) == 0) /* unknown team (a duplicate in the list also lands here) */
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "teams[%zu]", i),
                               "unknown or repeated team \"%s\"", teams[i]);
    }
    return ORR_OK;
}

HL_UNARY(hl_api_create_user)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CreateUserRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    size_t plen = strlen(rq->password);
    if (plen < 8 || plen > 1024)
        return orr_err_set(err, ORR_EINVAL, "password", "must be 8 to 1024 bytes");
    if (rq->role < 1 || rq->role > 3)
        return orr_err_set(err, ORR_EINVAL, "role", "must be admin, developer or viewer");
    char hash[128];
    orr_status s = hl__check_team_names(a, rq->teams, rq->n_teams, err);
    if (s != ORR_OK || (s = hl_secret_hash_password(rq->password, hash, err)) != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[3] = {rq->name, hash, hl__roles[rq->role]};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    s = hl_db_query(c, a, &q_insert_user, 3, p, &r, err);
    if (s == ORR_EEXIST)
        s = orr_err_set(err, ORR_EEXIST, "name", "a user named \"%s\" exists", rq->name);
    if (s != ORR_OK)
        goto out;
    if ((s = hl__add_teams(c, a, hl_val(r, 0, 0), rq->teams, rq->n_teams, err)) != ORR_OK)
        goto out;
    Orrery__Halley__V1__User *u;
    if ((s = hl_audit(c, a, rq->actor, "user.create", orr_arena_sprintf(a, "user:%s", rq->name),
                      orr_arena_sprintf(a, "{\"role\":\"%s\"}", hl__roles[rq->role]), err)) !=
            ORR_OK ||
        (s = hl_emit(c, a, "user.created", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"name\":%s}", hl_jstr(a, rq->name)), NULL, err)) !=
            ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK ||
        (s = hl__read_user(c, a, rq->name, &u, NULL, err)) != ORR_OK)
        goto out;
    *resp = &u->base;
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_get_user)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetUserRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__User *u;
    s = hl__read_user(c, a, rq->name, &u, NULL, err);
    hl_db_put(hc->db, c);
    if (s == ORR_OK)
        *resp = &u->base;
    return s;
}

HL_UNARY(hl_api_authenticate)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AuthenticateRequest);
    Orrery__Halley__V1__AuthenticateResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__authenticate_response__init(o);
    /* Every refusal spends one argon2id check, so the time of an answer
     * does not tell whether the user exists (or is active). */
    if (!hl_is_name(rq->name, 128) || !rq->password[0]) {
        hl_secret_check_dummy(rq->password);
        *resp = &o->base;
        return ORR_OK;
    }
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__User *u = NULL;
    const char *hash = NULL;
    s = hl__read_user(c, a, rq->name, &u, &hash, err);
    hl_db_put(hc->db, c);
    if (s == ORR_ENOTFOUND) {
        hl_secret_check_dummy(rq->password);
        *resp = &o->base;
        return ORR_OK;
    }
    if (s != ORR_OK)
        return s;
    if (hl_secret_check_password(hash, rq->password) && u->active) {
        if (rq->session_ttl_ms > 0) {
            if (rq->session_ttl_ms < 1000 || rq->session_ttl_ms > 90LL * 86400000)
                return orr_err_set(err, ORR_EINVAL, "session_ttl_ms", "must be 1 s to 90 days");
            if (strlen(rq->client) > 64)
                return orr_err_set(err, ORR_EINVAL, "client", "at most 64 bytes");
            const char *sid = NULL;
            if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
                return s;
            s = hl_session_create(c, a, u->id, rq->session_ttl_ms, rq->client, &sid, err);
            hl_db_put(hc->db, c);
            if (s != ORR_OK)
                return s;
            o->session_id = (char *)sid;
        }
        o->ok = 1;
        o->user = u;
    }
    *resp = &o->base;
    return ORR_OK;
}

/* What UpdateUserRequest changes, as the audit detail ({"role":..,...}). */
static const char *hl__user_changes(orr_arena *a, const Orrery__Halley__V1__UpdateUserRequest *rq)
{
    orr_buf b = ORR_BUF_INIT;
    orr_buf_appendf(&b, "{");
    if (rq->role)
        orr_buf_appendf(&b, "\"role\":%s,", hl_jstr(a, hl__roles[rq->role]));
    if (rq->set_teams) {
        orr_buf_appendf(&b, "\"teams\":[");
        for (size_t i = 0; i < rq->n_teams; i++)
            orr_buf_appendf(&b, "%s%s", i ? "," : "", hl_jstr(a, rq->teams[i]));
        orr_buf_appendf(&b, "],");
    }
    if (rq->set_active)
        orr_buf_appendf(&b, "\"active\":%s,", rq->active ? "true" : "false");
    if (rq->password[0])
        orr_buf_appendf(&b, "\"password\":\"changed\",");
    if (b.len > 1)
        b.len--; /* the last comma */
    orr_buf_appendf(&b, "}");
    const char *out = orr_arena_strdup(a, b.data);
    orr_buf_free(&b);
    return out;
}

HL_UNARY(hl_api_update_user)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__UpdateUserRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (rq->role < 0 || rq->role > 3)
        return orr_err_set(err, ORR_EINVAL, "role", "must be admin, developer or viewer");
    if (!rq->set_teams && rq->n_teams)
        return orr_err_set(err, ORR_EINVAL, "teams", "set set_teams to replace the teams");
    orr_status s = hl__check_team_names(a, rq->teams, rq->n_teams, err);
    if (s != ORR_OK)
        return s;
    size_t plen = strlen(rq->password);
    if (plen && (plen < 8 || plen > 1024))
        return orr_err_set(err, ORR_EINVAL, "password", "must be 8 to 1024 bytes");
    if (!rq->role && !rq->set_teams && !rq->set_active && !plen)
        return orr_err_set(err, ORR_EINVAL, NULL, "nothing to change");
    /* The slow hashes run before a connection is taken (see the top). */
    char hash[128] = "";
    if (plen && (s = hl_secret_hash_password(rq->password, hash, err)) != ORR_OK)
        return s;
    if (rq->old_password[0]) {
        hl_conn *rc;
        const char *cur = NULL;
        Orrery__Halley__V1__User *u0;
        if ((s = hl_db_get(hc->db, &rc, err)) != ORR_OK)
            return s;
        s = hl__read_user(rc, a, rq->name, &u0, &cur, err);
        hl_db_put(hc->db, rc);
        if (s != ORR_OK)
            return s;
        if (!hl_secret_check_password(cur, rq->old_password))
            return orr_err_set(err, ORR_EPERM, "old_password", "does not match");
    }
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[1] = {rq->name};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_lock_user, 1, p, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "name", "no user named \"%s\"", rq->name);
        goto out;
    }
    if (rq->old_password[0] && !hl_secret_check_password(hl_val(r, 0, 1), rq->old_password)) {
        /* changed between the check above and the lock */
        s = orr_err_set(err, ORR_EPERM, "old_password", "does not match");
        goto out;
    }
    int64_t uid = hl_val_i64(r, 0, 0);
    const char *id = hl_val(r, 0, 0);
    if (rq->role) {
        const char *pr[2] = {id, hl__roles[rq->role]};
        if ((s = hl_db_query(c, a, &q_set_role, 2, pr, NULL, err)) != ORR_OK)
            goto out;
    }
    if (rq->set_active) {
        const char *pa[2] = {id, rq->active ? "true" : "false"};
        if ((s = hl_db_query(c, a, &q_set_active, 2, pa, NULL, err)) != ORR_OK)
            goto out;
    }
    if (plen) {
        const char *pp[2] = {id, hash};
        if ((s = hl_db_query(c, a, &q_set_password, 2, pp, NULL, err)) != ORR_OK)
            goto out;
    }
    if (rq->set_teams) {
        const char *pc[1] = {id};
        if ((s = hl_db_query(c, a, &q_clear_teams, 1, pc, NULL, err)) != ORR_OK ||
            (s = hl__add_teams(c, a, id, rq->teams, rq->n_teams, err)) != ORR_OK)
            goto out;
    }
    const char *changes = hl__user_changes(a, rq);
    Orrery__Halley__V1__User *u;
    if ((s = hl_audit(c, a, rq->actor, "user.update", orr_arena_sprintf(a, "user:%s", rq->name),
                      changes, err)) != ORR_OK ||
        (s = hl_emit(
             c, a, "user.updated", 0, 0, NULL,
             orr_arena_sprintf(a, "{\"name\":%s,\"changes\":%s}", hl_jstr(a, rq->name), changes),
             NULL, err)) != ORR_OK ||
        (s = hl_sessions_revoke_user(c, a, uid, "user changed", NULL, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK ||
        (s = hl__read_user(c, a, rq->name, &u, NULL, err)) != ORR_OK)
        goto out;
    ORR_INFO("user updated", "user=%s changes=%s actor=%s", orr_log_q(rq->name), orr_log_q(changes),
             orr_log_q(rq->actor));
    *resp = &u->base;
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_list_users)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListUsersRequest);
    hl_page pg;
    orr_status s =
        hl_page_begin(a, "users", "i", rq->page_size, rq->page_token, HL_PAGE_DEFAULT, &pg, err);
    if (s != ORR_OK)
        return s;
    int size = pg.size;
    const char *const *after = pg.keys;
    if (strlen(rq->name_prefix) > 128)
        return orr_err_set(err, ORR_EINVAL, "name_prefix", "at most 128 bytes");
    if (rq->role < 0 || rq->role > 3)
        return orr_err_set(err, ORR_EINVAL, "role", "unknown role");
    if (rq->team[0] && !hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "not a team name");
    const char *p[5] = {after[0], rq->name_prefix, rq->role ? hl__roles[rq->role] : "", rq->team,
                        orr_arena_sprintf(a, "%d", size + 1)};
    PGresult *r;
    s = hl_db_query_once(hc->db, a, &q_list_users, 5, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListUsersResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_users_response__init(o);
    int n = PQntuples(r);
    int shown = n > size ? size : n;
    o->n_users = (size_t)shown;
    o->users = hl_alloc_n(a, sizeof *o->users, (size_t)shown);
    Orrery__Halley__V1__User *us = hl_alloc_n(a, sizeof *us, (size_t)shown);
    for (int i = 0; i < shown; i++) {
        orrery__halley__v1__user__init(&us[i]);
        us[i].id = hl_val_i64(r, i, 0);
        us[i].name = (char *)hl_val(r, i, 1);
        us[i].role = hl_pb_role(hl_val(r, i, 2));
        us[i].active = hl_val_bool(r, i, 3);
        us[i].teams = hl_split_names(a, hl_val(r, i, 4), &us[i].n_teams);
        o->users[i] = &us[i];
    }
    if (n > size) {
        const char *last[1] = {hl_i64s(a, us[shown - 1].id)};
        o->next_page_token = hl_page_next(a, &pg, last);
    }
    *resp = &o->base;
    return ORR_OK;
}

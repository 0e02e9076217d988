/*
 * hl_api_teams.c - teams: CreateTeam and ListTeams (optionally with each
 * team's members, in the same query).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include "orr_log.h"

static hl_stmt q_insert_team = HL_STMT("INSERT INTO teams (name) VALUES ($1) RETURNING id");

/* $1: with the members (comma-joined user names, sorted). */
static hl_stmt q_list_teams =
    HL_STMT("SELECT tm.id, tm.name, CASE WHEN $1::bool THEN coalesce((SELECT string_agg(u.name, ','"
            " ORDER BY u.name) FROM user_teams ut JOIN users u ON u.id = ut.user_id"
            " WHERE ut.team_id = tm.id), '') ELSE '' END FROM teams tm ORDER BY tm.name");

HL_UNARY(hl_api_create_team)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CreateTeamRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[1] = {rq->name};
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK) {
        s = hl_db_query(c, a, &q_insert_team, 1, p, &r, err);
        if (s == ORR_EEXIST)
            s = orr_err_set(err, ORR_EEXIST, "name", "a team named \"%s\" exists", rq->name);
    }
    if (s == ORR_OK &&
        (s = hl_audit(c, a, rq->actor, "team.create", orr_arena_sprintf(a, "team:%s", rq->name),
                      NULL, err)) == ORR_OK &&
        (s = hl_emit(c, a, "team.created", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"name\":%s}", hl_jstr(a, rq->name)), NULL, err)) ==
            ORR_OK)
        s = hl_db_commit(c, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__Team *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__team__init(o);
    o->id = hl_val_i64(r, 0, 0);
    o->name = rq->name;
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_teams)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListTeamsRequest);
    PGresult *r;
    const char *p[1] = {rq->with_members ? "true" : "false"};
    orr_status s = hl_db_query_once(hc->db, a, &q_list_teams, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListTeamsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_teams_response__init(o);
    int n = PQntuples(r);
    o->n_teams = (size_t)n;
    o->teams = hl_alloc_n(a, sizeof *o->teams, (size_t)n);
    Orrery__Halley__V1__Team *t = hl_alloc_n(a, sizeof *t, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__team__init(&t[i]);
        t[i].id = hl_val_i64(r, i, 0);
        t[i].name = (char *)hl_val(r, i, 1);
        t[i].members = hl_split_names(a, hl_val(r, i, 2), &t[i].n_members);
        o->teams[i] = &t[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

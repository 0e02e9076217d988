/*
 * hl_api_pools.c - resource pools and atomic token acquisition.
 *
 * AcquireTokens is one transaction:
 *   1. lock the instance row (FOR UPDATE): a concurrent transition waits, and
 *      its lease-release trigger then sees our leases;
 *   2. an instance that already holds leases gets them back (idempotent);
 *   3. lock every named pool row in name order (FOR UPDATE ... ORDER BY name),
 *      so concurrent acquirers never deadlock and never interleave on a pool;
 *   4. with the locks held, sum the leases of each pool (a new statement, so
 *      a fresh READ COMMITTED snapshot that includes every earlier holder's
 *      commit) and check used + tokens <= capacity for all pools;
 *   5. insert the leases and an event, commit.
 * So the sum of tokens leased from a pool can never exceed its capacity,
 * whatever number of schedulers race. Leases are released by the
 * instances_release_leases trigger when the instance leaves
 * ready/dispatched/running, or by ReleaseTokens.
 */
#include <stdio.h>
#include <string.h>

#include "hl_api.h"
#include "orr_buf.h"

#define HL_POOL_COLS                                                                               \
    "p.name, p.capacity, coalesce((SELECT sum(tokens) FROM pool_leases l WHERE l.pool = p.name), " \
    "0)"

static hl_stmt q_put_pool =
    HL_STMT("INSERT INTO resource_pools (name, capacity) VALUES ($1, $2::int)"
            " ON CONFLICT (name) DO UPDATE SET capacity = excluded.capacity, updated_at = now()");
static hl_stmt q_get_pool =
    HL_STMT("SELECT " HL_POOL_COLS " FROM resource_pools p WHERE p.name = $1");
static hl_stmt q_list_pools =
    HL_STMT("SELECT " HL_POOL_COLS " FROM resource_pools p ORDER BY p.name");
static hl_stmt q_lock_instance =
    HL_STMT("SELECT state FROM instances WHERE id = $1::int8 FOR UPDATE");
static hl_stmt q_held =
    HL_STMT("SELECT pool, tokens FROM pool_leases WHERE instance_id = $1::int8 ORDER BY pool");
static hl_stmt q_lock_pools =
    HL_STMT("SELECT name, capacity FROM resource_pools WHERE name = ANY($1::text[]) ORDER BY name"
            " FOR UPDATE");
static hl_stmt q_used =
    HL_STMT("SELECT pool, sum(tokens) FROM pool_leases WHERE pool = ANY($1::text[]) GROUP BY pool");
static hl_stmt q_insert_leases = HL_STMT("INSERT INTO pool_leases (pool, instance_id, tokens)"
                                         " SELECT unnest($1::text[]), $2::int8, unnest($3::int[])");
static hl_stmt q_release =
    HL_STMT("DELETE FROM pool_leases WHERE instance_id = $1::int8 RETURNING pool");

static void hl__fill_pool(const PGresult *r, int row, Orrery__Halley__V1__Pool *p)
{
    orrery__halley__v1__pool__init(p);
    p->name = (char *)hl_val(r, row, 0);
    p->capacity = (int32_t)hl_val_i64(r, row, 1);
    p->used = (int32_t)hl_val_i64(r, row, 2);
}

HL_UNARY(hl_api_put_pool)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutPoolRequest);
    if (!hl_is_name(rq->name, 64))
        return orr_err_set(err, ORR_EINVAL, "name", "1-64 characters of [A-Za-z0-9_.-]");
    if (rq->capacity < 0)
        return orr_err_set(err, ORR_EINVAL, "capacity", "must be >= 0");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[2] = {rq->name, orr_arena_sprintf(a, "%d", (int)rq->capacity)};
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_put_pool, 2, p, NULL, err)) == ORR_OK &&
        (s = hl_audit(c, a, rq->actor, "pool.put", orr_arena_sprintf(a, "pool:%s", rq->name),
                      orr_arena_sprintf(a, "{\"capacity\":%d}", (int)rq->capacity), err)) ==
            ORR_OK &&
        (s = hl_emit(c, a, "pool.updated", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"pool\":%s,\"capacity\":%d}", hl_jstr(a, rq->name),
                                       (int)rq->capacity),
                     NULL, err)) == ORR_OK &&
        (s = hl_db_commit(c, err)) == ORR_OK)
        s = hl_db_query(c, a, &q_get_pool, 1, p, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__Pool *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_pool(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_get_pool)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetPoolRequest);
    if (!hl_is_name(rq->name, 64))
        return orr_err_set(err, ORR_EINVAL, "name", "1-64 characters of [A-Za-z0-9_.-]");
    const char *p[1] = {rq->name};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_get_pool, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such pool");
    Orrery__Halley__V1__Pool *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_pool(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_pools)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListPoolsRequest);
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_pools, 0, NULL, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListPoolsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_pools_response__init(o);
    int n = PQntuples(r);
    o->n_pools = (size_t)n;
    o->pools = hl_alloc_n(a, sizeof *o->pools, (size_t)n);
    Orrery__Halley__V1__Pool *ps = hl_alloc_n(a, sizeof *ps, (size_t)n);
    for (int i = 0; i < n; i++) {
        hl__fill_pool(r, i, &ps[i]);
        o->pools[i] = &ps[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

static void hl__held(orr_arena *a, const PGresult *r, Orrery__Halley__V1__AcquireTokensResponse *o)
{
    int n = PQntuples(r);
    o->n_held = (size_t)n;
    o->held = hl_alloc_n(a, sizeof *o->held, (size_t)n);
    Orrery__Halley__V1__PoolTokens *t = hl_alloc_n(a, sizeof *t, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__pool_tokens__init(&t[i]);
        t[i].pool = (char *)hl_val(r, i, 0);
        t[i].tokens = (int32_t)hl_val_i64(r, i, 1);
        o->held[i] = &t[i];
    }
}

HL_UNARY(hl_api_acquire_tokens)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AcquireTokensRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (rq->n_pools == 0 || rq->n_pools > 16)
        return orr_err_set(err, ORR_EINVAL, "pools", "give 1 to 16 pools");
    orr_buf names = ORR_BUF_INIT, tokens = ORR_BUF_INIT;
    orr_buf_append_byte(&names, '{');
    orr_buf_append_byte(&tokens, '{');
    for (size_t i = 0; i < rq->n_pools; i++) {
        const Orrery__Halley__V1__PoolTokens *pt = rq->pools[i];
        const char *bad = NULL;
        if (!hl_is_name(pt->pool, 64))
            bad = "pool";
        else if (pt->tokens < 1)
            bad = "tokens";
        for (size_t j = 0; !bad && j < i; j++)
            if (strcmp(rq->pools[j]->pool, pt->pool) == 0)
                bad = "pool";
        if (bad) {
            orr_buf_free(&names);
            orr_buf_free(&tokens);
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "pools[%zu].%s", i, bad),
                               strcmp(bad, "tokens") == 0 ? "must be >= 1"
                                                          : "a pool name, named once");
        }
        orr_buf_appendf(&names, "%s%s", i ? "," : "", pt->pool);
        orr_buf_appendf(&tokens, "%s%d", i ? "," : "", (int)pt->tokens);
    }
    orr_buf_append_byte(&names, '}');
    orr_buf_append_byte(&tokens, '}');
    const char *arr = orr_arena_strdup(a, orr_buf_cstr(&names));
    const char *tarr = orr_arena_strdup(a, orr_buf_cstr(&tokens));
    orr_buf_free(&names);
    orr_buf_free(&tokens);

    Orrery__Halley__V1__AcquireTokensResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__acquire_tokens_response__init(o);
    const char *id = hl_i64s(a, rq->instance_id);
    const char *pi[1] = {id};
    const char *pa[1] = {arr};
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_lock_instance, 1, pi, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
        goto out;
    }
    const char *state = hl_val(r, 0, 0);
    if (strcmp(state, "waiting") != 0 && strcmp(state, "ready") != 0) {
        s = orr_err_set(err, ORR_ESTATE, "instance_id",
                        "instance is %s; tokens are taken while waiting or ready", state);
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_held, 1, pi, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) > 0) { /* already holds its leases */
        o->granted = 1;
        hl__held(a, r, o);
        s = hl_db_commit(c, err);
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_lock_pools, 1, pa, &r, err)) != ORR_OK)
        goto out;
    if ((size_t)PQntuples(r) != rq->n_pools) {
        for (size_t i = 0; i < rq->n_pools; i++) {
            int found = 0;
            for (int k = 0; k < PQntuples(r) && !found; k++)
                found = strcmp(hl_val(r, k, 0), rq->pools[i]->pool) == 0;
            if (!found) {
                s = orr_err_set(err, ORR_ENOTFOUND, orr_arena_sprintf(a, "pools[%zu].pool", i),
                                "no such pool \"%s\"", rq->pools[i]->pool);
                goto out;
            }
        }
    }
    PGresult *cap = r, *used;
    if ((s = hl_db_query(c, a, &q_used, 1, pa, &used, err)) != ORR_OK)
        goto out;
    for (size_t i = 0; i < rq->n_pools && !o->short_pool[0]; i++) {
        int64_t capacity = 0, inuse = 0;
        for (int k = 0; k < PQntuples(cap); k++)
            if (strcmp(hl_val(cap, k, 0), rq->pools[i]->pool) == 0)
                capacity = hl_val_i64(cap, k, 1);
        for (int k = 0; k < PQntuples(used); k++)
            if (strcmp(hl_val(used, k, 0), rq->pools[i]->pool) == 0)
                inuse = hl_val_i64(used, k, 1);
        if (inuse + rq->pools[i]->tokens > capacity)
            o->short_pool = rq->pools[i]->pool;
    }
    if (o->short_pool[0]) {
        hl_db_rollback(c);
        goto out;
    }
    const char *pl[3] = {arr, id, tarr};
    if ((s = hl_db_query(c, a, &q_insert_leases, 3, pl, NULL, err)) != ORR_OK ||
        (s = hl_emit(c, a, "lease.acquired", 0, rq->instance_id, NULL,
                     orr_arena_sprintf(a, "{\"pools\":%s,\"tokens\":%s}", hl_jstr(a, arr),
                                       hl_jstr(a, tarr)),
                     NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_held, 1, pi, &r, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    o->granted = 1;
    hl__held(a, r, o);
out:
    hl_db_put(hc->db, c);
    if (s == ORR_OK)
        *resp = &o->base;
    return s;
}

HL_UNARY(hl_api_release_tokens)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ReleaseTokensRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    const char *p[1] = {hl_i64s(a, rq->instance_id)};
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_release, 1, p, &r, err)) == ORR_OK) {
        if (PQntuples(r) > 0)
            s = hl_emit(c, a, "lease.released", 0, rq->instance_id, NULL, "{}", NULL, err);
        if (s == ORR_OK)
            s = hl_db_commit(c, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ReleaseTokensResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__release_tokens_response__init(o);
    o->released = PQntuples(r);
    *resp = &o->base;
    return ORR_OK;
}

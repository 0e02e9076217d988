/*
 * it_pools.c - resource pools: capacity is never exceeded, even with many
 * acquirers racing through two halleyd replicas; multi-pool acquisition is
 * all-or-nothing; leaving ready/dispatched/running releases tokens.
 *
 * The race: HLT_THREADS threads each run HLT_ROUNDS rounds of
 *   AcquireTokens(instance, {shared: 1, side: 1}) -> if granted: bump a live
 *   counter, check it against the capacity, hold briefly, drop the counter,
 *   then release by a transition (waiting -> killed fires the trigger) or by
 *   ReleaseTokens.
 * The live counter is raised only after the grant and lowered before the
 * release, so it can only exceed the capacity if the database did. A
 * sampler thread also checks SUM(tokens) per pool in PostgreSQL directly.
 *
 * The race is made, not hoped for: the first holders keep their tokens until
 * some acquirer has been refused (which needs the pool full, so several
 * holders at once); only then does anyone release. An acquirer retries a
 * refusal until it is granted, with a deadline that fails the test loudly.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlt.h"

#define HLT_THREADS  8
#define HLT_ROUNDS   25
#define HLT_CAPACITY 3

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static hlt_server srv[2];
static hlt_db db;
static int64_t task_id;
static _Atomic int live, max_live, granted, denied, errors, stop_sampler;
static _Atomic int db_over, race_made;

#define HLT_RACE_DEADLINE_S 60 /* a hang, not a slow machine, runs into it */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void put_pool(orr_rpc_client *c, const char *name, int cap)
{
    Orrery__Halley__V1__PutPoolRequest rq = ORRERY__HALLEY__V1__PUT_POOL_REQUEST__INIT;
    rq.name = (char *)name;
    rq.capacity = cap;
    rq.actor = "admin";
    Orrery__Halley__V1__Pool *p = NULL;
    orr_err err;
    HLT_CHECK(hlt_call(c, "PutPool", &rq, &p, &err) == ORR_OK && p->capacity == cap,
              "PutPool %s: %s", name, err.msg);
    if (p)
        FREE(p);
}

static int64_t new_instance(orr_rpc_client *c, int64_t sched)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    ci.task_id = task_id;
    ci.schedule_time_ms = sched;
    Orrery__Halley__V1__CreateInstance *items[1] = {&ci};
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.n_instances = 1;
    rq.instances = items;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    orr_err err;
    int64_t id = 0;
    if (hlt_call(c, "CreateInstances", &rq, &r, &err) == ORR_OK && r->results[0]->instance)
        id = r->results[0]->instance->id;
    if (r)
        FREE(r);
    return id;
}

static orr_status acquire(orr_rpc_client *c, int64_t id, const char *p1, int t1, const char *p2,
                          int t2, Orrery__Halley__V1__AcquireTokensResponse **out, orr_err *err)
{
    Orrery__Halley__V1__PoolTokens a = ORRERY__HALLEY__V1__POOL_TOKENS__INIT,
                                   b = ORRERY__HALLEY__V1__POOL_TOKENS__INIT;
    a.pool = (char *)p1;
    a.tokens = t1;
    b.pool = (char *)p2;
    b.tokens = t2;
    Orrery__Halley__V1__PoolTokens *items[2] = {&a, &b};
    Orrery__Halley__V1__AcquireTokensRequest rq = ORRERY__HALLEY__V1__ACQUIRE_TOKENS_REQUEST__INIT;
    rq.instance_id = id;
    rq.n_pools = p2 ? 2 : 1;
    rq.pools = items;
    *out = NULL;
    return hlt_call(c, "AcquireTokens", &rq, out, err);
}

static void *racer(void *arg)
{
    int me = (int)(intptr_t)arg;
    orr_rpc_client *c = hlt_client(&srv[me % 2], NULL);
    for (int round = 0; round < HLT_ROUNDS; round++) {
        int64_t id = new_instance(c, 1767225600000LL + ((int64_t)me * 1000 + round) * 60000);
        if (!id) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        Orrery__Halley__V1__AcquireTokensResponse *r;
        orr_err err;
        double deadline = mono_s() + HLT_RACE_DEADLINE_S;
        for (;;) {
            if (acquire(c, id, "shared", 1, "side", 1, &r, &err) != ORR_OK) {
                atomic_fetch_add(&errors, 1);
                fprintf(stderr, "acquire: %s\n", err.msg);
                break;
            }
            int ok = r->granted;
            FREE(r);
            if (!ok) {
                atomic_fetch_add(&denied, 1);
                if (mono_s() > deadline) {
                    atomic_fetch_add(&errors, 1);
                    fprintf(stderr, "racer %d: refused for %d s, never granted\n", me,
                            HLT_RACE_DEADLINE_S);
                    break;
                }
                struct timespec ts = {0, 2000000};
                nanosleep(&ts, NULL);
                continue;
            }
            atomic_fetch_add(&granted, 1);
            int now = atomic_fetch_add(&live, 1) + 1;
            int prev = atomic_load(&max_live);
            while (now > prev && !atomic_compare_exchange_weak(&max_live, &prev, now))
                ;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            /* the first holders wait for a refusal: the pool is then full */
            double until = mono_s() + HLT_RACE_DEADLINE_S;
            while (!atomic_load(&race_made) && atomic_load(&denied) == 0 && mono_s() < until)
                nanosleep(&ts, NULL);
            if (!atomic_load(&race_made) && atomic_load(&denied) == 0) {
                atomic_fetch_add(&errors, 1);
                fprintf(stderr, "racer %d: no acquirer was refused in %d s: no race made\n", me,
                        HLT_RACE_DEADLINE_S);
            }
            atomic_store(&race_made, 1);
            atomic_fetch_sub(&live, 1);
            if (round % 2) {
                Orrery__Halley__V1__TransitionRequest t =
                    ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
                t.instance_id = id;
                t.expected_state = 1;
                t.new_state = 7; /* waiting -> killed: the trigger releases */
                t.actor = "it";
                Orrery__Halley__V1__TransitionResult *tr = NULL;
                if (hlt_call(c, "TransitionInstance", &t, &tr, &err) != ORR_OK)
                    atomic_fetch_add(&errors, 1);
                if (tr)
                    FREE(tr);
            } else {
                Orrery__Halley__V1__ReleaseTokensRequest rl =
                    ORRERY__HALLEY__V1__RELEASE_TOKENS_REQUEST__INIT;
                rl.instance_id = id;
                Orrery__Halley__V1__ReleaseTokensResponse *rr = NULL;
                if (hlt_call(c, "ReleaseTokens", &rl, &rr, &err) != ORR_OK || rr->released != 2)
                    atomic_fetch_add(&errors, 1);
                if (rr)
                    FREE(rr);
            }
            break;
        }
    }
    orr_rpc_client_destroy(c);
    return NULL;
}

static void *sampler(void *arg)
{
    (void)arg;
    PGconn *pg = PQconnectdb(db.dsn);
    while (!atomic_load(&stop_sampler) && PQstatus(pg) == CONNECTION_OK) {
        PGresult *r = PQexec(pg, "SELECT coalesce(max(s), 0) FROM (SELECT sum(tokens) s FROM "
                                 "pool_leases GROUP BY pool) x");
        if (PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0)) > HLT_CAPACITY)
            atomic_store(&db_over, 1);
        PQclear(r);
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    PQfinish(pg);
    return NULL;
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    if (hlt_start(&srv[0], db.dsn, NULL, NULL) != 0 ||
        hlt_start(&srv[1], db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "two halleyd replicas started");
        hlt_stop(&srv[0]);
        hlt_db_drop(&db);
        return hlt_finish("halley_it_pools");
    }
    orr_rpc_client *c = hlt_client(&srv[0], NULL);
    orr_err err;
    Orrery__Halley__V1__CreateTeamRequest tq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    tq.name = "ops";
    Orrery__Halley__V1__Team *team = NULL;
    HLT_CHECK(hlt_call(c, "CreateTeam", &tq, &team, &err) == ORR_OK, "team");
    if (team)
        FREE(team);
    char spec[512];
    Orrery__Halley__V1__CreateTaskRequest cq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    cq.spec_json = (char *)hlt_shell_spec(spec, sizeof spec, "pooled", "ops",
                                          "\"pools\":{\"shared\":1,\"side\":1}");
    Orrery__Halley__V1__Task *t = NULL;
    HLT_CHECK(hlt_call(c, "CreateTask", &cq, &t, &err) == ORR_OK, "task %s", err.msg);
    task_id = t ? t->id : 0;
    if (t)
        FREE(t);
    put_pool(c, "shared", HLT_CAPACITY);
    put_pool(c, "side", 100);
    put_pool(c, "tiny", 1);

    /* Basic paths. */
    int64_t a = new_instance(c, 1000), b = new_instance(c, 2000);
    Orrery__Halley__V1__AcquireTokensResponse *r;
    HLT_CHECK(acquire(c, a, "tiny", 1, "side", 5, &r, &err) == ORR_OK && r->granted &&
                  r->n_held == 2,
              "acquire two pools");
    if (r)
        FREE(r);
    HLT_CHECK(acquire(c, a, "tiny", 1, "side", 5, &r, &err) == ORR_OK && r->granted &&
                  r->n_held == 2,
              "acquire again is idempotent");
    if (r)
        FREE(r);
    HLT_CHECK(acquire(c, b, "side", 5, "tiny", 1, &r, &err) == ORR_OK && !r->granted &&
                  strcmp(r->short_pool, "tiny") == 0,
              "tiny is full: nothing taken");
    if (r)
        FREE(r);
    Orrery__Halley__V1__GetPoolRequest gp = ORRERY__HALLEY__V1__GET_POOL_REQUEST__INIT;
    gp.name = "side";
    Orrery__Halley__V1__Pool *p = NULL;
    HLT_CHECK(hlt_call(c, "GetPool", &gp, &p, &err) == ORR_OK && p->used == 5,
              "all-or-nothing: side holds only a's 5 (used %d)", p ? p->used : -1);
    if (p)
        FREE(p);
    HLT_CHECK(acquire(c, b, "ghost", 1, NULL, 0, &r, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "pools[0].pool") == 0,
              "unknown pool");
    HLT_CHECK(acquire(c, b, "side", 0, NULL, 0, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "pools[0].tokens") == 0,
              "zero tokens");
    HLT_CHECK(acquire(c, 987654, "side", 1, NULL, 0, &r, &err) == ORR_ENOTFOUND, "no instance");
    /* a: waiting -> ready keeps tokens; ready -> killed releases them. */
    Orrery__Halley__V1__TransitionRequest tr = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    tr.instance_id = a;
    tr.expected_state = 1;
    tr.new_state = 2;
    tr.actor = "it";
    Orrery__Halley__V1__TransitionResult *res = NULL;
    HLT_CHECK(hlt_call(c, "TransitionInstance", &tr, &res, &err) == ORR_OK, "ready");
    if (res)
        FREE(res);
    p = NULL;
    HLT_CHECK(hlt_call(c, "GetPool", &gp, &p, &err) == ORR_OK && p->used == 5, "ready keeps");
    if (p)
        FREE(p);
    tr.expected_state = 2;
    tr.new_state = 7;
    res = NULL;
    HLT_CHECK(hlt_call(c, "TransitionInstance", &tr, &res, &err) == ORR_OK, "killed");
    if (res)
        FREE(res);
    p = NULL;
    HLT_CHECK(hlt_call(c, "GetPool", &gp, &p, &err) == ORR_OK && p->used == 0,
              "killed released (used %d)", p ? p->used : -1);
    if (p)
        FREE(p);
    HLT_CHECK(acquire(c, a, "side", 1, NULL, 0, &r, &err) == ORR_ESTATE,
              "a killed instance takes no tokens");

    /* The race. */
    pthread_t th[HLT_THREADS], sp;
    pthread_create(&sp, NULL, sampler, NULL);
    for (int i = 0; i < HLT_THREADS; i++)
        pthread_create(&th[i], NULL, racer, (void *)(intptr_t)i);
    for (int i = 0; i < HLT_THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop_sampler, 1);
    pthread_join(sp, NULL);
    printf("race: granted=%d denied=%d max_live=%d errors=%d\n", atomic_load(&granted),
           atomic_load(&denied), atomic_load(&max_live), atomic_load(&errors));
    HLT_CHECK(atomic_load(&errors) == 0, "no errors in the race");
    HLT_CHECK(atomic_load(&granted) == HLT_THREADS * HLT_ROUNDS, "every round got its tokens");
    HLT_CHECK(atomic_load(&max_live) <= HLT_CAPACITY, "observed holders %d <= capacity %d",
              atomic_load(&max_live), HLT_CAPACITY);
    HLT_CHECK(atomic_load(&max_live) >= 2, "the race really overlapped (max %d)",
              atomic_load(&max_live));
    HLT_CHECK(atomic_load(&denied) > 0, "some acquirers were refused at capacity");
    HLT_CHECK(!atomic_load(&db_over), "PostgreSQL never held more than capacity");
    PGresult *q = hlt_sql(&db, "SELECT count(*) FROM pool_leases");
    HLT_CHECK(atoi(PQgetvalue(q, 0, 0)) == 0, "every lease released (%s left)",
              PQgetvalue(q, 0, 0));
    PQclear(q);

    orr_rpc_client_destroy(c);
    hlt_stop(&srv[0]);
    hlt_stop(&srv[1]);
    hlt_db_drop(&db);
    return hlt_finish("halley_it_pools");
}

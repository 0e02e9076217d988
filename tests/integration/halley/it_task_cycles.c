/*
 * it_task_cycles.c - halleyd refuses task dependencies that make a cycle:
 * the cycle named shortest-first, nothing written on refusal, a self loop
 * explained, a diamond allowed, an unknown upstream named by position, and
 * two concurrent saves that would close a cycle only together (the
 * dependency lock lets exactly one through).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

typedef Orrery__Halley__V1__Task Task;
typedef Orrery__Halley__V1__Instance Instance;

static orr_rpc_client *cl;
static orr_err err;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static void team(const char *name)
{
    hlt_team(cl, name);
}

/* Save a task (update when id > 0); returns its id or 0, checking status and field. */
static int64_t save_task(int64_t id, const char *name, const char *tm, const char *extra,
                         orr_status want, const char *field)
{
    return hlt_save_task(cl, id, name, tm, extra, want, field, &err);
}

/* ------------------------------------------------------------------ cycles */

static void test_cycles(void)
{
    int64_t a = save_task(0, "cy_a", "ops", NULL, ORR_OK, NULL);
    save_task(0, "cy_b", "ops", "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"cy_a\"}]", ORR_OK,
              NULL);
    save_task(0, "cy_c", "ops",
              "\"upstreams\":[{\"kind\":\"weak\",\"task\":\"cy_b\"},{\"kind\":\"self\"}]", ORR_OK,
              NULL);
    /* a -> c -> b -> a: refused, naming the cycle, nothing written. */
    save_task(a, "cy_a", "ops", "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"cy_c\"}]",
              ORR_EINVAL, "spec.upstreams");
    HLT_CHECK(strstr(err.msg, "cy_a -> cy_c -> cy_b -> cy_a") != NULL, "cycle named: %s", err.msg);
    Orrery__Halley__V1__GetTaskRequest g = ORRERY__HALLEY__V1__GET_TASK_REQUEST__INIT;
    g.id = a;
    Task *t = NULL;
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_OK && t->current_version == 1,
              "refused update wrote no version");
    if (t)
        FREE(t);
    /* A task naming itself as strong upstream is refused (kind self is the way). */
    save_task(0, "cy_d", "ops", "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"cy_d\"}]",
              ORR_EINVAL, "spec.upstreams[0].task");
    HLT_CHECK(strstr(err.msg, "self") != NULL, "self loop explained: %s", err.msg);
    g.id = 0;
    g.name = "cy_d";
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_ENOTFOUND,
              "refused create wrote nothing");
    save_task(0, "cy_e", "ops", "\"upstreams\":[{\"kind\":\"self\"}]", ORR_OK, NULL);
    /* A diamond is no cycle. */
    save_task(0, "cy_f", "ops",
              "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"cy_b\"},{\"kind\":\"strong\","
              "\"task\":\"cy_c\"},{\"kind\":\"weak\",\"task\":\"cy_a\"}]",
              ORR_OK, NULL);
    /* Unknown upstream names its position. */
    save_task(0, "cy_g", "ops",
              "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"cy_a\"},{\"kind\":\"strong\","
              "\"task\":\"ghost\"}]",
              ORR_EINVAL, "spec.upstreams[1].task");
    /* Updating a -> f (f depends on a through b and c and directly) is refused too. */
    save_task(a, "cy_a", "ops", "\"upstreams\":[{\"kind\":\"weak\",\"task\":\"cy_f\"}]", ORR_EINVAL,
              "spec.upstreams");
    HLT_CHECK(strstr(err.msg, "cy_a -> cy_f -> cy_a") != NULL, "shortest cycle named: %s", err.msg);
}

/* Two saves that would make a cycle only together, run at the same time:
 * the dependency lock lets exactly one of them through. */
typedef struct racer {
    orr_rpc_client *c;
    int64_t id;
    const char *name, *upstream;
    orr_status st;
    pthread_barrier_t *go;
} racer;

static void *race_save(void *arg)
{
    racer *r = arg;
    char spec[512], extra[128];
    snprintf(extra, sizeof extra, "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"%s\"}]",
             r->upstream);
    Orrery__Halley__V1__UpdateTaskRequest rq = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
    rq.id = r->id;
    rq.spec_json = (char *)hlt_shell_spec(spec, sizeof spec, r->name, "ops", extra);
    rq.actor = "race";
    Task *t = NULL;
    orr_err e;
    pthread_barrier_wait(r->go);
    r->st = hlt_call(r->c, "UpdateTask", &rq, &t, &e);
    if (t)
        FREE(t);
    return NULL;
}

static void test_cycle_race(const hlt_server *s)
{
    int one_each = 1;
    for (int round = 0; round < 8; round++) {
        char pn[32], qn[32];
        snprintf(pn, sizeof pn, "race_p%d", round);
        snprintf(qn, sizeof qn, "race_q%d", round);
        racer rs[2] = {{hlt_client(s, NULL), save_task(0, pn, "ops", NULL, ORR_OK, NULL), pn, qn,
                        ORR_OK, NULL},
                       {hlt_client(s, NULL), save_task(0, qn, "ops", NULL, ORR_OK, NULL), qn, pn,
                        ORR_OK, NULL}};
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            rs[i].go = &go;
            pthread_create(&th[i], NULL, race_save, &rs[i]);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        int ok = (rs[0].st == ORR_OK) + (rs[1].st == ORR_OK);
        int refused = (rs[0].st == ORR_EINVAL) + (rs[1].st == ORR_EINVAL);
        if (ok != 1 || refused != 1) {
            one_each = 0;
            fprintf(stderr, "round %d: %s / %s\n", round, orr_status_name(rs[0].st),
                    orr_status_name(rs[1].st));
        }
        for (int i = 0; i < 2; i++)
            orr_rpc_client_destroy(rs[i].c);
    }
    HLT_CHECK(one_each, "concurrent saves never make a cycle together");
}

int main(void)
{
    hlt_db db;
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_task_cycles");
    }
    cl = hlt_client(&s, NULL);
    team("ops");
    test_cycles();
    test_cycle_race(&s);
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_task_cycles");
}

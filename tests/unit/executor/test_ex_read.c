/* test_ex_read.c - executord's combined instance reads (ex_read.c) against a
 * real gRPC server standing in for halleyd, on loopback:
 *
 *   - runs that read while a call is in flight go together in the next
 *     call: the first call is held at a gate until the other readers have
 *     queued, so the calls carry 1 and then 4 ids by construction, and each
 *     reader gets its own row;
 *   - an unknown id is NOT_FOUND for its reader alone; a failed call fails
 *     every reader of its batch (two, queued behind a held call) with the
 *     call's error;
 *   - a halleyd without GetInstances (UNIMPLEMENTED, from the handler or
 *     from a server that has no such method at all) is read with one
 *     GetInstance per run, is not asked again while the window lasts, and
 *     is asked again once it has passed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ex_daemon.h"
#include "orr_rpc.h"

#define UNKNOWN_ID 1000 /* ids from here on have no row */
#define READERS    5

/* The stand-in for halleyd: what it was asked, a gate for GetInstances, and
 * switches for UNIMPLEMENTED and for a failure. */
typedef struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate_closed; /* GetInstances waits while set */
    int waiting;     /* GetInstances calls at the gate */
    int no_batch;    /* GetInstances answers UNIMPLEMENTED */
    int fail_multi;  /* GetInstances of more than one id fails (UNAVAILABLE) */
    int batch_calls, each_calls;
    size_t ids[16]; /* ids in each GetInstances call */
} fake;

static HL(Instance) * row(orr_rpc_call *call, int64_t id)
{
    HL(Instance) *in = orr_arena_alloc(orr_rpc_call_arena(call), sizeof *in);
    *in = (HL(Instance))HL_INIT(INSTANCE);
    in->id = id;
    in->attempt = (int32_t)(id % 7) + 1;
    return in;
}

static orr_status fake_get_instances(orr_rpc_call *call, const ProtobufCMessage *req,
                                     ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    fake *f = ctx;
    const HL(GetInstancesRequest) *rq = (const HL(GetInstancesRequest) *)req;
    pthread_mutex_lock(&f->mu);
    if (f->batch_calls < 16)
        f->ids[f->batch_calls] = rq->n_ids;
    f->batch_calls++;
    f->waiting++;
    pthread_cond_broadcast(&f->cv);
    while (f->gate_closed)
        pthread_cond_wait(&f->cv, &f->mu);
    f->waiting--;
    int no_batch = f->no_batch, fail = f->fail_multi && rq->n_ids > 1;
    pthread_mutex_unlock(&f->mu);
    if (no_batch)
        return orr_err_set(err, ORR_EUNIMPL, NULL, "no GetInstances here");
    if (fail)
        return orr_err_set(err, ORR_EUNAVAIL, "database", "the stand-in is down");
    HL(GetInstancesResponse) *r = orr_arena_alloc(orr_rpc_call_arena(call), sizeof *r);
    *r = (HL(GetInstancesResponse))HL_INIT(GET_INSTANCES_RESPONSE);
    r->instances =
        orr_arena_alloc(orr_rpc_call_arena(call), (rq->n_ids + 1) * sizeof *r->instances);
    for (size_t i = 0; i < rq->n_ids; i++)
        if (rq->ids[i] < UNKNOWN_ID)
            r->instances[r->n_instances++] = row(call, rq->ids[i]);
    *resp = &r->base;
    return ORR_OK;
}

static orr_status fake_get_instance(orr_rpc_call *call, const ProtobufCMessage *req,
                                    ProtobufCMessage **resp, orr_err *err, void *ctx)
{
    fake *f = ctx;
    const HL(GetInstanceRequest) *rq = (const HL(GetInstanceRequest) *)req;
    pthread_mutex_lock(&f->mu);
    f->each_calls++;
    pthread_mutex_unlock(&f->mu);
    if (!rq->without_deps || !rq->with_task)
        return orr_err_set(err, ORR_EINVAL, "without_deps", "a run reads its row and task");
    if (rq->id >= UNKNOWN_ID)
        return orr_err_set(err, ORR_ENOTFOUND, "id", "no such instance");
    *resp = &row(call, rq->id)->base;
    return ORR_OK;
}

/* ex_read.c's one call out, as executord makes it (ex_report.c, which is
 * not built into this test). */
orr_status ex_halley(ex_daemon *d, const char *method, const ProtobufCMessage *req,
                     ProtobufCMessage **resp, orr_err *err)
{
    return orr_rpc_call_unary(d->halley, method, req, resp, d->rpc_timeout_ms, err);
}

typedef struct world {
    fake f;
    orr_rpc_server *srv;
    orr_rpc_client *cli;
    ex_daemon *d;
} world;

/* A stand-in serving both methods (with_batch) or GetInstance alone, and a
 * daemon whose reads go to it. */
static world *world_new(int with_batch)
{
    world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    pthread_mutex_init(&w->f.mu, NULL);
    pthread_cond_init(&w->f.cv, NULL);
    orr_rpc_method methods[] = {
        {"GetInstance", fake_get_instance, NULL},
        {"GetInstances", fake_get_instances, NULL},
    };
    orr_rpc_server_opts o = {.listen = "127.0.0.1:0", .threads = 8, .token = "t"};
    orr_err err;
    assert_int_equal(orr_rpc_server_create(&orrery__halley__v1__halley__descriptor, methods,
                                           with_batch ? 2 : 1, &w->f, &o, &w->srv, &err),
                     ORR_OK);
    assert_int_equal(orr_rpc_server_start(w->srv), ORR_OK);
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", orr_rpc_server_port(w->srv));
    assert_int_equal(
        orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, target, "t", &w->cli, &err),
        ORR_OK);
    w->d = calloc(1, sizeof *w->d);
    assert_non_null(w->d);
    w->d->halley = w->cli;
    w->d->rpc_timeout_ms = 60000; /* beyond the longest wait of a held call */
    pthread_mutex_init(&w->d->read_mu, NULL);
    pthread_cond_init(&w->d->read_cv, NULL);
    return w;
}

static void world_free(world *w)
{
    orr_rpc_client_destroy(w->cli);
    orr_rpc_server_destroy(w->srv);
    pthread_mutex_destroy(&w->d->read_mu);
    pthread_cond_destroy(&w->d->read_cv);
    free(w->d);
    pthread_mutex_destroy(&w->f.mu);
    pthread_cond_destroy(&w->f.cv);
    free(w);
}

typedef struct reader {
    ex_daemon *d;
    int64_t id;
    pthread_t t;
    orr_status s;
    orr_err err;
    int64_t got_id;
    int32_t got_attempt;
} reader;

static void *read_one(void *arg)
{
    reader *r = arg;
    HL(Instance) *in = NULL;
    ex_read_ans *ans = NULL;
    orr_err_clear(&r->err);
    r->s = ex_read_instance(r->d, r->id, &in, &ans, &r->err);
    if (r->s == ORR_OK && in) {
        r->got_id = in->id;
        r->got_attempt = in->attempt;
    }
    ex_read_put(ans);
    return NULL;
}

static int at_gate(fake *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->waiting;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Set one of f's switches (the handlers read them under f->mu). */
static void fake_set(fake *f, int *sw, int v)
{
    pthread_mutex_lock(&f->mu);
    *sw = v;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Waits until the first GetInstances is at the gate (want_gate) or until
 * want_queued readers have queued: 1, or 0 after 30 s. */
static int wait_for(world *w, int want_gate, int want_queued)
{
    struct timespec pause = {0, 5 * 1000 * 1000};
    int64_t end = ex_now_ms() + 30000;
    while (ex_now_ms() < end) {
        if (want_gate ? at_gate(&w->f) == 1 : ex_read_queued(w->d) == want_queued)
            return 1;
        nanosleep(&pause, NULL);
    }
    return 0;
}

/* Reader 0's call is held at the gate; readers 1..n-1 queue behind it; the
 * gate opens and every reader is joined. 1 when all of that happened as
 * built: the first call held alone and the others queued meanwhile. */
static int held_then_batch(world *w, reader *r, int n)
{
    fake_set(&w->f, &w->f.gate_closed, 1);
    int started = 0, ok = pthread_create(&r[0].t, NULL, read_one, &r[0]) == 0;
    started += ok;
    ok = ok && wait_for(w, 1, 0);
    for (int i = 1; ok && i < n; i++) {
        ok = pthread_create(&r[i].t, NULL, read_one, &r[i]) == 0;
        started += ok;
    }
    ok = ok && wait_for(w, 0, n - 1) && at_gate(&w->f) == 1; /* nobody else called */
    fake_set(&w->f, &w->f.gate_closed, 0);
    for (int i = 0; i < started; i++)
        pthread_join(r[i].t, NULL);
    return ok;
}

/* The first reader's call is held; the others queue behind it and go
 * together in the second call. */
static void test_reads_combine(void **state)
{
    (void)state;
    world *w = world_new(1);
    reader r[READERS];
    for (int i = 0; i < READERS; i++)
        r[i] = (reader){.d = w->d, .id = 10 + i};
    int built = held_then_batch(w, r, READERS);
    int calls = w->f.batch_calls;
    size_t ids0 = w->f.ids[0], ids1 = w->f.ids[1];
    int each = w->f.each_calls, left = ex_read_queued(w->d);
    unsigned long long rc = atomic_load(&w->d->read_calls), ri = atomic_load(&w->d->read_ids);
    world_free(w);
    assert_true(built);
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(r[i].s, ORR_OK);
        assert_int_equal(r[i].got_id, r[i].id);
        assert_int_equal(r[i].got_attempt, r[i].id % 7 + 1);
    }
    assert_int_equal(calls, 2);
    assert_int_equal(ids0, 1);
    assert_int_equal(ids1, READERS - 1);
    assert_int_equal(each, 0);
    assert_int_equal(left, 0);
    assert_int_equal(rc, 2);
    assert_int_equal(ri, READERS);
}

/* An unknown id fails its own reader only; a failed call fails its batch:
 * both readers queued behind the held call get its error. */
static void test_unknown_and_failed(void **state)
{
    (void)state;
    world *w = world_new(1);
    reader r[3] = {{.d = w->d, .id = 1}, {.d = w->d, .id = 2}, {.d = w->d, .id = UNKNOWN_ID + 5}};
    int built1 = held_then_batch(w, r, 3);
    reader f[3] = {{.d = w->d, .id = 3}, {.d = w->d, .id = 4}, {.d = w->d, .id = 5}};
    fake_set(&w->f, &w->f.fail_multi, 1);
    int built2 = held_then_batch(w, f, 3);
    int calls = w->f.batch_calls, each = w->f.each_calls;
    size_t ids3 = w->f.ids[3];
    world_free(w);

    assert_true(built1);
    assert_int_equal(r[0].s, ORR_OK);
    assert_int_equal(r[1].s, ORR_OK);
    assert_int_equal(r[1].got_id, 2);
    assert_int_equal(r[2].s, ORR_ENOTFOUND);
    assert_string_equal(r[2].err.field, "id");

    assert_true(built2);
    assert_int_equal(f[0].s, ORR_OK); /* the held call, of one id */
    for (int i = 1; i < 3; i++) {
        assert_int_equal(f[i].s, ORR_EUNAVAIL);
        assert_non_null(strstr(f[i].err.msg, "the stand-in is down"));
    }
    assert_int_equal(calls, 4);
    assert_int_equal(ids3, 2);
    assert_int_equal(each, 0);
}

/* UNIMPLEMENTED from the handler: one GetInstance per run, GetInstances not
 * asked while the window lasts, asked again after it. */
static void test_unimplemented_window(void **state)
{
    (void)state;
    world *w = world_new(1);
    fake_set(&w->f, &w->f.no_batch, 1);
    reader r = {.d = w->d, .id = 3};
    read_one(&r);
    assert_int_equal(r.s, ORR_OK);
    assert_int_equal(r.got_id, 3);
    assert_int_equal(w->f.batch_calls, 1);
    assert_int_equal(w->f.each_calls, 1);
    assert_true(atomic_load(&w->d->read_alone_until) > ex_now_ms());

    r = (reader){.d = w->d, .id = UNKNOWN_ID};
    read_one(&r);
    assert_int_equal(r.s, ORR_ENOTFOUND);
    r = (reader){.d = w->d, .id = 4};
    read_one(&r);
    assert_int_equal(r.s, ORR_OK);
    assert_int_equal(r.got_attempt, 4 % 7 + 1);
    assert_int_equal(w->f.batch_calls, 1); /* not asked inside the window */
    assert_int_equal(w->f.each_calls, 3);

    fake_set(&w->f, &w->f.no_batch, 0); /* upgraded meanwhile; the window passes */
    atomic_store(&w->d->read_alone_until, ex_now_ms() - 1);
    r = (reader){.d = w->d, .id = 5};
    read_one(&r);
    assert_int_equal(r.s, ORR_OK);
    assert_int_equal(r.got_id, 5);
    assert_int_equal(w->f.batch_calls, 2);
    assert_int_equal(w->f.each_calls, 3);
    assert_int_equal(atomic_load(&w->d->read_calls), 4);
    assert_int_equal(atomic_load(&w->d->read_ids), 4);
    world_free(w);
}

/* A server that has no GetInstances at all: gRPC's own UNIMPLEMENTED. */
static void test_server_without_method(void **state)
{
    (void)state;
    world *w = world_new(0);
    reader r = {.d = w->d, .id = 8};
    read_one(&r);
    assert_int_equal(r.s, ORR_OK);
    assert_int_equal(r.got_id, 8);
    assert_int_equal(r.got_attempt, 8 % 7 + 1);
    assert_int_equal(w->f.each_calls, 1);
    assert_true(atomic_load(&w->d->read_alone_until) > ex_now_ms());
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_combine),
        cmocka_unit_test(test_unknown_and_failed),
        cmocka_unit_test(test_unimplemented_window),
        cmocka_unit_test(test_server_without_method),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_orr_watch.c - the one WatchEvents subscriber (rpc/orr_watch.h)
 * against a scripted stand-in for halleyd's WatchEvents over loopback.
 *
 * The stand-in records every request and answers each call by a script:
 * send a "watch.start" marker and events, then end the stream with an error,
 * answer that the resume point has expired, or stay open until the client
 * leaves. The tests check what the subscriber asks for (from_latest first,
 * then from the last event id seen, then from the newest again after an
 * expired resume point), which callbacks run, how often and in what order.
 * Waits poll a condition up to a generous limit; nothing depends on speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"
#include "orr_watch.h"

#define SVC       (&orrery__halley__v1__halley__descriptor)
#define MAX_CALLS 8
#define MAX_SEEN  32
#define WAIT_MS   20000

/* What a call of the stand-in does after its marker and events. */
enum { END_ERROR, END_EXPIRED, END_HOLD };

typedef struct script_call {
    int64_t marker; /* id of the watch.start marker; 0: none sent */
    int64_t events[4];
    size_t n_events;
    int end;
} script_call;

typedef struct seen_request {
    int64_t from_id;
    int from_latest, start_marker;
    char kind0[32], executor[32];
    size_t n_kinds;
} seen_request;

typedef struct fake {
    pthread_mutex_t mu;
    const script_call *script;
    size_t n_script;
    seen_request req[MAX_CALLS];
    size_t n_req;
} fake;

typedef struct subscriber {
    pthread_mutex_t mu;
    int starts, lost, resyncs;
    int fail_starts; /* on_start fails this many times first */
    int64_t seen[MAX_SEEN];
    size_t n_seen;
    char order[64]; /* S start, E event, L lost, R resync */
    size_t n_order;
} subscriber;

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ------------------------------------------------------------ the stand-in */

static orr_status send_event(orr_rpc_call *call, int64_t id, const char *kind)
{
    Orrery__Halley__V1__Event ev = ORRERY__HALLEY__V1__EVENT__INIT;
    ev.id = id;
    ev.kind = (char *)kind;
    ev.payload_json = "{}";
    return orr_rpc_stream_send(call, &ev.base);
}

static orr_status fake_watch(orr_rpc_call *call, const ProtobufCMessage *req, orr_err *err,
                             void *ctx)
{
    fake *f = ctx;
    const Orrery__Halley__V1__WatchEventsRequest *rq = (const void *)req;
    pthread_mutex_lock(&f->mu);
    size_t k = f->n_req;
    if (k < MAX_CALLS) {
        seen_request *s = &f->req[k];
        s->from_id = rq->from_id;
        s->from_latest = rq->from_latest;
        s->start_marker = rq->start_marker;
        s->n_kinds = rq->n_kinds;
        snprintf(s->kind0, sizeof s->kind0, "%s", rq->n_kinds ? rq->kinds[0] : "");
        snprintf(s->executor, sizeof s->executor, "%s", rq->executor ? rq->executor : "");
        f->n_req++;
    }
    /* past the script: the last call's behaviour again */
    const script_call *sc = &f->script[k < f->n_script ? k : f->n_script - 1];
    pthread_mutex_unlock(&f->mu);
    if (sc->marker && send_event(call, sc->marker, "watch.start") != ORR_OK)
        return ORR_OK;
    for (size_t i = 0; i < sc->n_events; i++)
        if (send_event(call, sc->events[i], "instance.transition") != ORR_OK)
            return ORR_OK;
    if (sc->end == END_ERROR)
        return orr_err_set(err, ORR_EUNAVAIL, NULL, "stand-in: stream ends");
    if (sc->end == END_EXPIRED)
        return orr_err_set(err, ORR_ESTATE, "from_id", "stand-in: resume point expired");
    while (!orr_rpc_call_wait_cancelled(call, 100))
        ;
    return ORR_OK;
}

static size_t fake_calls(fake *f)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->n_req;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static orr_rpc_server *start_fake(fake *f, char *target, size_t cap)
{
    static const orr_rpc_method methods[] = {{.name = "WatchEvents", .stream = fake_watch}};
    orr_rpc_server_opts o = {.listen = "127.0.0.1:0", .threads = 2};
    orr_rpc_server *s = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_server_create(SVC, methods, 1, f, &o, &s, &err), ORR_OK);
    assert_int_equal(orr_rpc_server_start(s), ORR_OK);
    snprintf(target, cap, "127.0.0.1:%d", orr_rpc_server_port(s));
    return s;
}

/* ------------------------------------------------------------ the subscriber */

static void note(subscriber *s, char c)
{
    if (s->n_order + 1 < sizeof s->order)
        s->order[s->n_order++] = c;
}

static int sub_start(void *cls)
{
    subscriber *s = cls;
    pthread_mutex_lock(&s->mu);
    s->starts++;
    note(s, 'S');
    int fail = s->fail_starts > 0;
    if (fail)
        s->fail_starts--;
    pthread_mutex_unlock(&s->mu);
    return fail ? -1 : 0;
}

static void sub_event(void *cls, const Orrery__Halley__V1__Event *ev)
{
    subscriber *s = cls;
    pthread_mutex_lock(&s->mu);
    if (s->n_seen < MAX_SEEN)
        s->seen[s->n_seen++] = ev->id;
    note(s, 'E');
    pthread_mutex_unlock(&s->mu);
}

static void sub_lost(void *cls)
{
    subscriber *s = cls;
    pthread_mutex_lock(&s->mu);
    s->lost++;
    note(s, 'L');
    pthread_mutex_unlock(&s->mu);
}

static void sub_resync(void *cls)
{
    subscriber *s = cls;
    pthread_mutex_lock(&s->mu);
    s->resyncs++;
    note(s, 'R');
    pthread_mutex_unlock(&s->mu);
}

static size_t seen_count(subscriber *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_seen;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ------------------------------------------------------------ tests */

/* A stream that breaks is resumed from the last event id; an expired resume
 * point calls on_resync and starts from the newest event again. */
static void test_resume_and_resync(void **state)
{
    (void)state;
    static const script_call script[] = {
        {.marker = 10, .events = {11, 12}, .n_events = 2, .end = END_ERROR},
        {.end = END_EXPIRED},
        {.marker = 20, .events = {21}, .n_events = 1, .end = END_HOLD},
    };
    fake f = {.script = script, .n_script = 3};
    pthread_mutex_init(&f.mu, NULL);
    char target[64];
    orr_rpc_server *srv = start_fake(&f, target, sizeof target);
    orr_rpc_client *cl = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_client_create(SVC, target, NULL, &cl, &err), ORR_OK);

    subscriber sub = {0};
    pthread_mutex_init(&sub.mu, NULL);
    static const char *const kinds[] = {"instance.*"};
    orr_watch_opts o = {.kinds = kinds, .nkinds = 1, .executor = "ex-1", .name = "test"};
    orr_watch_ops ops = {
        .on_start = sub_start, .on_event = sub_event, .on_lost = sub_lost, .on_resync = sub_resync};
    orr_watch *w = NULL;
    assert_int_equal(orr_watch_start(cl, &o, &ops, &sub, &w, &err), ORR_OK);
    long until = now_ms() + WAIT_MS;
    while ((seen_count(&sub) < 3 || !orr_watch_synced(w)) && now_ms() < until)
        sleep_ms(20);
    assert_int_equal(seen_count(&sub), 3);
    assert_true(orr_watch_synced(w));
    assert_int_equal(fake_calls(&f), 3);
    pthread_mutex_lock(&sub.mu);
    sub.order[sub.n_order] = 0;
    assert_int_equal(sub.seen[0], 11);
    assert_int_equal(sub.seen[1], 12);
    assert_int_equal(sub.seen[2], 21);
    assert_int_equal(sub.starts, 2);
    assert_int_equal(sub.lost, 1);
    assert_int_equal(sub.resyncs, 1);
    /* the marker never reaches on_event; lost before the resync */
    assert_string_equal(sub.order, "SEELRSE");
    pthread_mutex_unlock(&sub.mu);
    orr_watch_stop(w);

    /* first from the newest event, with the marker, the filters passed on */
    assert_true(f.req[0].from_latest);
    assert_true(f.req[0].start_marker);
    assert_int_equal(f.req[0].n_kinds, 1);
    assert_string_equal(f.req[0].kind0, "instance.*");
    assert_string_equal(f.req[0].executor, "ex-1");
    /* then resumed after the last event seen */
    assert_false(f.req[1].from_latest);
    assert_int_equal(f.req[1].from_id, 12);
    /* then, the resume point having expired, from the newest again */
    assert_true(f.req[2].from_latest);
    assert_int_equal(f.req[2].from_id, 0);

    orr_rpc_client_destroy(cl);
    orr_rpc_server_destroy(srv);
    pthread_mutex_destroy(&sub.mu);
    pthread_mutex_destroy(&f.mu);
}

/* A failed on_start closes the stream; the next one resumes from the marker
 * and calls on_start again until it succeeds. */
static void test_start_retried(void **state)
{
    (void)state;
    static const script_call script[] = {
        {.marker = 30, .end = END_HOLD},
        {.marker = 30, .events = {31}, .n_events = 1, .end = END_HOLD},
    };
    fake f = {.script = script, .n_script = 2};
    pthread_mutex_init(&f.mu, NULL);
    char target[64];
    orr_rpc_server *srv = start_fake(&f, target, sizeof target);
    orr_rpc_client *cl = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_client_create(SVC, target, NULL, &cl, &err), ORR_OK);

    subscriber sub = {.fail_starts = 1};
    pthread_mutex_init(&sub.mu, NULL);
    orr_watch_opts o = {.name = "test"};
    orr_watch_ops ops = {.on_start = sub_start, .on_event = sub_event, .on_lost = sub_lost};
    orr_watch *w = NULL;
    assert_int_equal(orr_watch_start(cl, &o, &ops, &sub, &w, &err), ORR_OK);
    long until = now_ms() + WAIT_MS;
    while ((seen_count(&sub) < 1 || !orr_watch_synced(w)) && now_ms() < until)
        sleep_ms(20);
    assert_int_equal(seen_count(&sub), 1);
    assert_true(orr_watch_synced(w));
    pthread_mutex_lock(&sub.mu);
    assert_int_equal(sub.starts, 2);
    assert_int_equal(sub.lost, 0); /* it was not in step when the first stream closed */
    assert_int_equal(sub.seen[0], 31);
    pthread_mutex_unlock(&sub.mu);
    orr_watch_stop(w);
    assert_int_equal(fake_calls(&f), 2);
    assert_true(f.req[0].from_latest);
    assert_int_equal(f.req[0].n_kinds, 0);
    assert_string_equal(f.req[0].executor, "");
    assert_false(f.req[1].from_latest);
    assert_int_equal(f.req[1].from_id, 30);

    orr_rpc_client_destroy(cl);
    orr_rpc_server_destroy(srv);
    pthread_mutex_destroy(&sub.mu);
    pthread_mutex_destroy(&f.mu);
}

/* Stopping a watcher whose stream is open returns (the thread polls). */
static void test_stop_while_open(void **state)
{
    (void)state;
    static const script_call script[] = {{.marker = 5, .end = END_HOLD}};
    fake f = {.script = script, .n_script = 1};
    pthread_mutex_init(&f.mu, NULL);
    char target[64];
    orr_rpc_server *srv = start_fake(&f, target, sizeof target);
    orr_rpc_client *cl = NULL;
    orr_err err;
    assert_int_equal(orr_rpc_client_create(SVC, target, NULL, &cl, &err), ORR_OK);
    subscriber sub = {0};
    pthread_mutex_init(&sub.mu, NULL);
    orr_watch_opts o = {.name = "test"};
    orr_watch_ops ops = {.on_event = sub_event}; /* on_start may be NULL */
    orr_watch *w = NULL;
    assert_int_equal(orr_watch_start(cl, &o, &ops, &sub, &w, &err), ORR_OK);
    long until = now_ms() + WAIT_MS;
    while (!orr_watch_synced(w) && now_ms() < until)
        sleep_ms(20);
    assert_true(orr_watch_synced(w));
    orr_watch_stop(w);
    orr_watch_stop(NULL);
    assert_int_equal(fake_calls(&f), 1);
    orr_rpc_client_destroy(cl);
    orr_rpc_server_destroy(srv);
    pthread_mutex_destroy(&sub.mu);
    pthread_mutex_destroy(&f.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_and_resync),
        cmocka_unit_test(test_start_retried),
        cmocka_unit_test(test_stop_while_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * ex_read.c - the runs' instance reads, combined (contract in ex_daemon.h).
 *
 * Each run starts with a read of its instance: is it still dispatched to
 * us, at which attempt, with which task version. keplerd dispatches in
 * batches, so many job threads read at the same moment; one GetInstances
 * call for all of them costs halleyd one RPC and PostgreSQL two statements
 * where a GetInstance each cost one RPC and two statements per run.
 *
 * A caller queues its id. When no read is in flight it leads: it takes what
 * is queued (its own id first, at most EX_READ_MAX), makes the call, hands
 * every item its row and wakes the others. Otherwise it waits, for its
 * answer or to lead the next call. One call at a time: a read is short, and
 * what queues while it is in flight goes in the next one.
 *
 * The answer is one message shared by its batch: each item that found its
 * row holds a reference, and the last ex_read_put frees it. A halleyd
 * without GetInstances (UNIMPLEMENTED) is read with a GetInstance per run
 * for the next EX_READ_ALONE_MS, then asked again (a rolling upgrade may
 * have reached it). A failed call fails the reads of its batch, each as its
 * own GetInstance would have failed; the periodic sweep starts them again.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ex_daemon.h"
#include "orr_alloc.h"
#include "orr_log.h"

#define EX_READ_MAX      256
#define EX_READ_ALONE_MS (5 * 60 * 1000)

struct ex_read_ans {
    ProtobufCMessage *msg;
    atomic_int refs;
};

typedef struct ex_read_item {
    int64_t id;
    struct ex_read_item *next;
    int taken, done; /* under read_mu */
    /* written by the leader before done */
    orr_status s;
    orr_err *err;
    HL(Instance) * in;
    ex_read_ans *ans;
} ex_read_item;

static ex_read_ans *ans_new(ProtobufCMessage *msg)
{
    ex_read_ans *a = orr_xcalloc(1, sizeof *a);
    a->msg = msg;
    return a;
}

void ex_read_put(ex_read_ans *ans)
{
    if (ans && atomic_fetch_sub(&ans->refs, 1) == 1) {
        protobuf_c_message_free_unpacked(ans->msg, NULL);
        free(ans);
    }
}

/* One GetInstance per item (a halleyd without GetInstances). */
static void read_each(ex_daemon *d, ex_read_item **items, size_t n)
{
    atomic_fetch_add(&d->read_calls, n);
    for (size_t i = 0; i < n; i++) {
        HL(GetInstanceRequest) rq = HL_INIT(GET_INSTANCE_REQUEST);
        rq.id = items[i]->id;
        rq.without_deps = 1; /* the row alone: no dependency states */
        rq.with_task = 1;    /* and the task at its version */
        ProtobufCMessage *resp = NULL;
        items[i]->s = ex_halley(d, "GetInstance", &rq.base, &resp, items[i]->err);
        if (items[i]->s != ORR_OK)
            continue;
        items[i]->ans = ans_new(resp);
        atomic_store(&items[i]->ans->refs, 1);
        items[i]->in = (HL(Instance) *)resp;
    }
}

static void read_batch(ex_daemon *d, ex_read_item **items, size_t n)
{
    atomic_fetch_add(&d->read_ids, n);
    if (ex_now_ms() < atomic_load(&d->read_alone_until)) {
        read_each(d, items, n);
        return;
    }
    int64_t ids[EX_READ_MAX];
    for (size_t i = 0; i < n; i++)
        ids[i] = items[i]->id;
    HL(GetInstancesRequest) rq = HL_INIT(GET_INSTANCES_REQUEST);
    rq.ids = ids;
    rq.n_ids = n;
    rq.with_task = 1;
    ProtobufCMessage *resp = NULL;
    orr_err e;
    orr_status s = ex_halley(d, "GetInstances", &rq.base, &resp, &e);
    if (s != ORR_EUNIMPL)
        atomic_fetch_add(&d->read_calls, 1);
    if (s == ORR_EUNIMPL) {
        ORR_INFO("halleyd has no GetInstances: reading each run's instance alone for a while",
                 "err=%s", orr_log_q(e.msg));
        atomic_store(&d->read_alone_until, ex_now_ms() + EX_READ_ALONE_MS);
        read_each(d, items, n);
        return;
    }
    if (s != ORR_OK) {
        for (size_t i = 0; i < n; i++) {
            items[i]->s = s;
            *items[i]->err = e;
        }
        return;
    }
    HL(GetInstancesResponse) *r = (HL(GetInstancesResponse) *)resp;
    ex_read_ans *ans = ans_new(resp);
    int refs = 0;
    for (size_t i = 0; i < n; i++) {
        HL(Instance) *in = NULL;
        for (size_t k = 0; k < r->n_instances && !in; k++)
            if (r->instances[k]->id == items[i]->id)
                in = r->instances[k];
        if (!in) {
            items[i]->s = orr_err_set(items[i]->err, ORR_ENOTFOUND, "id", "no such instance");
            continue;
        }
        items[i]->s = ORR_OK;
        items[i]->in = in;
        items[i]->ans = ans;
        refs++;
    }
    atomic_store(&ans->refs, refs);
    if (refs == 0) {
        protobuf_c_message_free_unpacked(resp, NULL);
        free(ans);
    }
}

orr_status ex_read_instance(ex_daemon *d, int64_t id, HL(Instance) * *in, ex_read_ans **ans,
                            orr_err *err)
{
    ex_read_item me = {.id = id, .err = err};
    *in = NULL;
    *ans = NULL;
    pthread_mutex_lock(&d->read_mu);
    ex_read_item **tail = &d->read_queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &me;
    while (!me.done && (me.taken || d->read_busy))
        pthread_cond_wait(&d->read_cv, &d->read_mu);
    if (me.done) {
        pthread_mutex_unlock(&d->read_mu);
        *in = me.in;
        *ans = me.ans;
        return me.s;
    }
    /* Lead: our own item first, then the oldest others. */
    ex_read_item *batch[EX_READ_MAX];
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (ex_read_item **pp = &d->read_queue; *pp && n < EX_READ_MAX;) {
            ex_read_item *it = *pp;
            if ((pass == 0) != (it == &me)) {
                pp = &it->next;
                continue;
            }
            *pp = it->next;
            it->next = NULL;
            it->taken = 1;
            batch[n++] = it;
        }
    d->read_busy = 1;
    pthread_mutex_unlock(&d->read_mu);

    read_batch(d, batch, n);

    pthread_mutex_lock(&d->read_mu);
    d->read_busy = 0;
    for (size_t i = 0; i < n; i++)
        batch[i]->done = 1;
    pthread_cond_broadcast(&d->read_cv);
    pthread_mutex_unlock(&d->read_mu);
    *in = me.in;
    *ans = me.ans;
    return me.s;
}

int ex_read_queued(ex_daemon *d)
{
    int n = 0;
    pthread_mutex_lock(&d->read_mu);
    for (ex_read_item *it = d->read_queue; it; it = it->next)
        n++;
    pthread_mutex_unlock(&d->read_mu);
    return n;
}

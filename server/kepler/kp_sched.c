/*
 * kp_sched.c - the scheduler loop of keplerd (see kp_sched.h).
 *
 * Threads:
 *   watcher    the event-stream subscriber (rpc/orr_watch.h) reads Halley's
 *              WatchEvents stream (instance.*, task.*, data_unit.*,
 *              stream.*), resuming by event id after any error (with
 *              back-off), turns each event into a small kp_ev and queues
 *              it; when the resume point has expired it asks the scheduler
 *              for a rebuild; it runs on standbys too, so a standby that
 *              takes over has a live stream already;
 *   elect      ZooKeeper (kp_elect.c);
 *   scheduler  everything else, alone owning the index and the store.
 *
 * One scheduler round (woken by an event, a due timer, or 1 s at most):
 *   1. drain the event queue;
 *   2. leadership: not leader -> drop all state and wait; a new epoch ->
 *      rebuild: tasks (ListTasks), instances (ListInstances per state),
 *      executors (ZooKeeper snapshot), watermark (ZooKeeper);
 *   3. apply events to the store (stale ones are ignored by event id; an
 *      event that does not follow from the cached state marks the record
 *      for a re-read); task events queue a GetTask;
 *   4. re-read doubtful instances and changed tasks;
 *   5. executors: take a new ZooKeeper snapshot when there is one;
 *   6. materialise due fire times (CreateInstances, <= 1000 per call);
 *   7. one pass over the store: dependency checks of waiting instances of
 *      "dirty" tasks, and collection of ready, timed-out, retry-due and
 *      executor-lost ones;
 *   8. dispatch what is ready already (9), so slots freed since the last
 *      round are filled before the round spends time on ready writes; then
 *      waiting -> ready for a capped number of the instances whose
 *      dependencies are met (highest priority, then oldest schedule time
 *      first): as many as halleyd writes in about READY_BUDGET_US at its
 *      recent pace, between READY_MIN and READY_ROUND, but at least as many
 *      as there are free slots nothing ready can take; the rest keep their
 *      dirty flag and the round asks for another round at once, so a
 *      release of thousands of instances is spread over rounds with
 *      dispatch (9) and events (1) between its batches;
 *   9. dispatch ready instances, highest priority first and within a
 *      priority the longest-ready first: max_parallel, executor choice, pool
 *      tokens (a denied pool is skipped for the rest of the round, so other
 *      instances still go), then ready -> dispatched with the executor, in
 *      batches; the loop ends as soon as no executor has a free slot;
 *  10. retries (-> waiting, new attempt), timeouts (-> timed_out),
 *      executor_lost (-> failed), in batches;
 *  11. every sweep_interval: re-read every live instance and recount.
 *
 * Data-unit dependencies (kp_du.h): the bucket grid of a stream is read
 * with GetSortStream (again after "stream.changed"), the reconciled units of
 * the buckets an instance needs with ListDataUnits (reconciled_only), and
 * "data_unit.reconciled" events mark units and send the tasks with data-unit
 * dependencies to a new check. A failed read (Halley without the data API,
 * an unknown stream) holds the instance and is retried after DU_RETRY_MS.
 *
 * Writes: halleyd applies the items of one TransitionInstances call one by
 * one on one database connection, so a batch of 64 or more is split into up
 * to SEND_PARTS calls sent at once from short-lived threads (send_batch);
 * only the scheduler thread touches the store, after the calls returned.
 *
 * Latency: a round blocks on its RPCs, so the time from an event (an
 * upstream's success, a slot freed) to the dispatch it allows is bounded by
 * one round: one ready batch (about READY_BUDGET_US) plus one dispatch
 * batch, not by the size of the release.
 *
 * Fencing: before every write batch the round checks that the leadership
 * epoch it built its state for is still current; and every write is a
 * compare-and-set in halleyd (expected state and attempt), so a deposed
 * leader that slipped one batch through can only lose, never dispatch an
 * instance twice or retry it twice.
 *
 * Slot accounting: an executor's used slots are the slots of instances the
 * store shows dispatched to or running on it, changed in one place
 * (set_state) and recounted by every sweep.
 */
#include "kp_sched.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halley.pb-c.h"
#include "kp_deps.h"
#include "kp_dispatch.h"
#include "kp_du.h"
#include "kp_elect.h"
#include "kp_index.h"
#include "kp_materialise.h"
#include "kp_retry.h"
#include "kp_store.h"
#include "orr_log.h"
#include "orr_rpc.h"
#include "orr_watch.h"

#define BATCH_MAX          1000
#define RPC_TIMEOUT_MS     10000
#define MATERIALISE_ROUND  5000 /* instances created per round at most */
#define FETCH_ROUND        64   /* dependency range reads per round at most */
#define REFETCH_ROUND      200  /* single-instance re-reads per round at most */
#define WATERMARK_EVERY_MS 5000
#define READY_ROUND        500    /* waiting -> ready per round at most */
#define READY_MIN          16     /* ... and at least, whatever the write cost */
#define SEND_PARTS         4      /* concurrent calls a transition batch is split into */
#define SEND_PART_MIN      32     /* ... each of at least this many items */
#define READY_BUDGET_US    250000 /* a ready batch should take about this long */
#define DU_FETCH_ROUND     32     /* data-unit range reads per round at most */
#define DU_STREAM_ROUND    8      /* stream grid reads per round at most */
#define DU_RETRY_MS        5000   /* a failed data-unit read is retried after this */

typedef Orrery__Halley__V1__Instance pb_instance;
typedef Orrery__Halley__V1__TransitionRequest pb_treq;

/* ------------------------------------------------------------ events */

enum { EV_INSTANCE_CREATED, EV_INSTANCE_TRANSITION, EV_TASK, EV_DATA_UNIT, EV_STREAM, EV_OTHER };

typedef struct kp_ev {
    int64_t id, task_id, instance_id, sched_ms, at_ms;
    int kind;
    int from, to, attempt;
    const char *exec; /* interned */
    /* EV_DATA_UNIT: the unit (interned; stream also for EV_STREAM) */
    const char *stream, *business, *interface;
    int64_t bucket_ms;
} kp_ev;

/* A stream's bucket grid as read from Halley. */
typedef struct du_stream {
    char name[KP_NAME_MAX];
    int state;           /* DU_GRID_* */
    int64_t retry_at_ms; /* DU_GRID_FAILED: read again from then */
    kp_du_grid grid;
} du_stream;

enum { DU_GRID_UNREAD, DU_GRID_OK, DU_GRID_FAILED };

typedef struct sched {
    const kp_sched_opts *o;
    volatile sig_atomic_t *stop;
    orr_rpc_client *cl;
    kp_elect *el;
    kp_index *ix;
    kp_store *st;
    char actor[256];
    /* executors */
    kp_exec *ex;
    size_t n_ex, cap_ex;
    uint64_t ex_version;
    /* event queue (watcher -> scheduler) */
    orr_watch *watch;
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    kp_ev *q;
    size_t qn, qcap;
    int64_t last_event_id;
    int need_rebuild;
    /* leadership */
    uint64_t epoch;
    /* work lists */
    int64_t *task_refresh;
    size_t n_task_refresh, cap_task_refresh;
    int64_t next_materialise_ms;
    int64_t next_sweep_ms, next_watermark_ms;
    int again; /* more work is pending: do not sleep */
    /* scratch */
    kp_inst **vec;
    size_t n_vec, cap_vec;
    uint64_t dispatched_total;
    int64_t item_us; /* moving average of halleyd's time per transition */
    /* data units */
    kp_du_cache *du;
    du_stream *streams;
    size_t n_streams, cap_streams;
    int64_t du_retry_at_ms; /* ListDataUnits failed: no reads before then */
    int du_dirty;           /* re-check every task with a data-unit dependency */
} sched;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "keplerd: out of memory\n");
        abort();
    }
    return q;
}

static int ev_state(json_t *payload, const char *key)
{
    json_t *v = json_object_get(payload, key);
    return json_is_string(v) ? (int)kp_state_parse(json_string_value(v)) : 0;
}

static const char *ev_str(json_t *payload, const char *key)
{
    json_t *v = json_object_get(payload, key);
    return json_is_string(v) ? kp_intern(json_string_value(v)) : NULL;
}

/* data_unit.reconciled / stream.changed: the unit or stream named. */
static void ev_data_from_pb(const Orrery__Halley__V1__Event *m, kp_ev *e)
{
    json_t *p = json_loads(m->payload_json ? m->payload_json : "{}", 0, NULL);
    if (!p) {
        e->kind = EV_OTHER;
        return;
    }
    if (e->kind == EV_STREAM) {
        e->stream = ev_str(p, "name");
    } else {
        e->stream = ev_str(p, "stream");
        e->business = ev_str(p, "business");
        e->interface = ev_str(p, "interface");
        json_t *b = json_object_get(p, "bucket_ms");
        if (json_is_integer(b))
            e->bucket_ms = json_integer_value(b);
        if (!e->stream || !e->business || !e->interface || !json_is_integer(b))
            e->kind = EV_OTHER;
    }
    if (!e->stream)
        e->kind = EV_OTHER;
    json_decref(p);
}

static void ev_from_pb(const Orrery__Halley__V1__Event *m, kp_ev *e)
{
    memset(e, 0, sizeof *e);
    e->id = m->id;
    e->task_id = m->task_id;
    e->instance_id = m->instance_id;
    e->at_ms = m->created_at_ms;
    e->exec = kp_intern(m->executor);
    if (strcmp(m->kind, "instance.created") == 0)
        e->kind = EV_INSTANCE_CREATED;
    else if (strcmp(m->kind, "instance.transition") == 0)
        e->kind = EV_INSTANCE_TRANSITION;
    else if (strncmp(m->kind, "task.", 5) == 0)
        e->kind = EV_TASK;
    else if (strcmp(m->kind, "data_unit.reconciled") == 0)
        e->kind = EV_DATA_UNIT;
    else if (strcmp(m->kind, "stream.changed") == 0)
        e->kind = EV_STREAM;
    else
        e->kind = EV_OTHER;
    if (e->kind == EV_DATA_UNIT || e->kind == EV_STREAM) {
        ev_data_from_pb(m, e);
        return;
    }
    if (e->kind != EV_INSTANCE_CREATED && e->kind != EV_INSTANCE_TRANSITION)
        return;
    json_t *p = json_loads(m->payload_json ? m->payload_json : "{}", 0, NULL);
    if (!p)
        return;
    e->from = ev_state(p, "from");
    e->to = ev_state(p, "to");
    json_t *a = json_object_get(p, "attempt");
    e->attempt = json_is_integer(a) ? (int)json_integer_value(a) : 0;
    json_t *t = json_object_get(p, "schedule_time_ms");
    e->sched_ms = json_is_integer(t) ? json_integer_value(t) : 0;
    json_decref(p);
}

/* The event stream's subscriber (orr_watch.h) calls these on its thread. */
static void watch_on_event(void *cls, const Orrery__Halley__V1__Event *m)
{
    sched *s = cls;
    kp_ev ev;
    ev_from_pb(m, &ev);
    pthread_mutex_lock(&s->qmu);
    if (s->qn == s->qcap) {
        s->qcap = s->qcap ? s->qcap * 2 : 1024;
        s->q = xrealloc(s->q, s->qcap * sizeof *s->q);
    }
    s->q[s->qn++] = ev;
    s->last_event_id = ev.id;
    pthread_cond_signal(&s->qcv);
    pthread_mutex_unlock(&s->qmu);
}

/* The resume point expired: events were missed; start over from a rebuild. */
static void watch_on_resync(void *cls)
{
    sched *s = cls;
    pthread_mutex_lock(&s->qmu);
    s->last_event_id = 0;
    s->need_rebuild = 1;
    pthread_mutex_unlock(&s->qmu);
}

static orr_status watch_start(sched *s, orr_err *err)
{
    static const char *const kinds[] = {"instance.*", "task.*", "data_unit.*", "stream.*"};
    orr_watch_opts o = {
        .kinds = kinds, .nkinds = sizeof kinds / sizeof kinds[0], .name = "keplerd"};
    orr_watch_ops ops = {.on_event = watch_on_event, .on_resync = watch_on_resync};
    return orr_watch_start(s->cl, &o, &ops, s, &s->watch, err);
}

/* ------------------------------------------------------------ helpers */

static int still_leader(sched *s)
{
    return s->epoch && kp_elect_leader_epoch(s->el) == s->epoch;
}

static kp_exec *exec_find(sched *s, const char *id, int create)
{
    if (!id || !*id)
        return NULL;
    for (size_t i = 0; i < s->n_ex; i++)
        if (strcmp(s->ex[i].id, id) == 0)
            return &s->ex[i];
    if (!create)
        return NULL;
    if (s->n_ex == s->cap_ex) {
        s->cap_ex = s->cap_ex ? s->cap_ex * 2 : 16;
        s->ex = xrealloc(s->ex, s->cap_ex * sizeof *s->ex);
    }
    kp_exec *e = &s->ex[s->n_ex++];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    return e;
}

static int is_live(int st)
{
    return st == KP_ST_DISPATCHED || st == KP_ST_RUNNING;
}

/* The one place a record's state changes: keeps executor slots and task
 * parallelism counts in step. */
static void set_state(sched *s, kp_inst *r, int state, const char *exec)
{
    if (is_live(r->state)) {
        kp_exec *e = exec_find(s, r->exec, 0);
        if (e)
            e->used -= r->live_slots;
        kp_task *t = kp_index_get(s->ix, r->task_id);
        if (t && t->n_live > 0)
            t->n_live--;
    }
    r->state = (uint8_t)state;
    if (exec)
        r->exec = kp_intern(exec);
    if (is_live(state)) {
        kp_task *t = kp_index_get(s->ix, r->task_id);
        r->live_slots = t ? t->slots : 1;
        kp_exec *e = exec_find(s, r->exec, 1);
        if (e)
            e->used += r->live_slots;
        if (t)
            t->n_live++;
    }
}

static void mark_task_dirty(sched *s, int64_t task_id, int with_downstream)
{
    kp_task *t = kp_index_get(s->ix, task_id);
    if (!t)
        return;
    t->deps_dirty = 1;
    if (with_downstream)
        for (size_t i = 0; i < t->n_downstream; i++) {
            kp_task *d = kp_index_get(s->ix, t->downstream[i]);
            if (d)
                d->deps_dirty = 1;
        }
    s->again = 1;
}

static int64_t since_of(const pb_instance *in)
{
    if ((int)in->state == KP_ST_RUNNING && in->started_at_ms)
        return in->started_at_ms;
    if (kp_state_finished((kp_state)in->state) && in->finished_at_ms)
        return in->finished_at_ms;
    return in->updated_at_ms ? in->updated_at_ms : wall_ms();
}

/* Take halleyd's view of an instance into the store. */
static kp_inst *adopt(sched *s, const pb_instance *in, int64_t ev_id)
{
    kp_inst *r = kp_store_get(s->st, in->id);
    if (!r)
        r = kp_store_add(s->st, in->id, in->task_id, in->schedule_time_ms, KP_ST_UNKNOWN);
    int changed = r->state != in->state || r->attempt != in->attempt;
    set_state(s, r, (int)in->state, in->executor);
    r->attempt = in->attempt;
    r->priority = in->priority;
    r->since_ms = since_of(in);
    if (ev_id > r->ev_id)
        r->ev_id = ev_id;
    r->flags &= (uint8_t)~KP_I_REFETCH;
    if (changed) {
        r->flags |= KP_I_DIRTY;
        mark_task_dirty(s, r->task_id, 1);
    }
    return r;
}

static void req_init(pb_treq *t, const sched *s, const kp_inst *r, int to, const char *reason)
{
    orrery__halley__v1__transition_request__init(t);
    t->instance_id = r->id;
    t->expected_state = (Orrery__Halley__V1__InstanceState)r->state;
    t->new_state = (Orrery__Halley__V1__InstanceState)to;
    t->actor = (char *)s->actor;
    t->reason = (char *)reason;
    t->expected_attempt = r->attempt;
}

/* One TransitionInstances call: a part of a batch, sent from its own thread
 * when the batch is split (send_batch). Touches nothing of the scheduler but
 * its client, which is thread-safe. */
typedef struct send_part {
    orr_rpc_client *cl;
    pb_treq *items;
    size_t n;
    Orrery__Halley__V1__TransitionBatchResponse *resp; /* NULL on failure */
    orr_status rc;
    int64_t took_us;
    pthread_t th;
} send_part;

static void *send_part_main(void *arg)
{
    send_part *p = arg;
    pb_treq **ptrs = xrealloc(NULL, p->n * sizeof *ptrs);
    for (size_t i = 0; i < p->n; i++)
        ptrs[i] = &p->items[i];
    Orrery__Halley__V1__TransitionBatchRequest rq =
        ORRERY__HALLEY__V1__TRANSITION_BATCH_REQUEST__INIT;
    rq.n_items = p->n;
    rq.items = ptrs;
    orr_err err;
    ProtobufCMessage *out = NULL;
    int64_t t0 = mono_us();
    p->rc = orr_rpc_call_unary(p->cl, "TransitionInstances", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    p->took_us = mono_us() - t0;
    free(ptrs);
    p->resp = NULL;
    if (p->rc != ORR_OK) {
        char buf[600];
        ORR_WARN("transition batch failed", "items=%zu error=%s", p->n,
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return NULL;
    }
    p->resp = (Orrery__Halley__V1__TransitionBatchResponse *)out;
    if (p->resp->n_results != p->n) {
        protobuf_c_message_free_unpacked(out, NULL);
        p->resp = NULL;
        p->rc = ORR_EINTERNAL;
    }
    return NULL;
}

/* Apply a batch's results to the records it was about: OK -> adopt the
 * returned instance; any failure -> mark for a re-read (ABORTED: someone
 * else moved it). recs[i] matches items[i]. */
static size_t apply_results(sched *s, kp_inst **recs, size_t n,
                            const Orrery__Halley__V1__TransitionBatchResponse *resp)
{
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        const Orrery__Halley__V1__TransitionResult *res = resp->results[i];
        if (res->code == 0 && res->instance) {
            adopt(s, res->instance, res->event_id);
            ok++;
        } else {
            recs[i]->flags |= KP_I_REFETCH;
            s->again = 1;
            if (res->code != 10 /* ABORTED */)
                ORR_WARN("transition refused", "instance=%" PRId64 " code=%d field=%s error=%s",
                         recs[i]->id, (int)res->code, orr_log_q(res->field),
                         orr_log_q(res->message));
        }
    }
    return ok;
}

/* Send n transitions (n <= BATCH_MAX) about recs[0..n) and apply the
 * results. halleyd writes the items of one call one after the other on one
 * database connection, so a batch of 2 * SEND_PART_MIN or more is split into
 * up to SEND_PARTS calls sent at once (distinct instances: their order does
 * not matter). Returns the number applied OK; *failed is set when a call
 * failed (its records are marked for a re-read) or, without sending, when
 * leadership moved. */
static size_t send_batch(sched *s, pb_treq *items, kp_inst **recs, size_t n, int *failed)
{
    *failed = 0;
    if (!still_leader(s)) {
        *failed = 1;
        return 0;
    }
    send_part parts[SEND_PARTS];
    size_t np = n / SEND_PART_MIN;
    np = np < 1 ? 1 : np > SEND_PARTS ? SEND_PARTS : np;
    size_t off = 0;
    for (size_t i = 0; i < np; i++) {
        size_t k = n / np + (i < n % np);
        memset(&parts[i], 0, sizeof parts[i]);
        parts[i].cl = s->cl;
        parts[i].items = items + off;
        parts[i].n = k;
        off += k;
    }
    /* part 0 runs on this thread, and so does a part whose thread cannot start */
    int started[SEND_PARTS] = {0};
    for (size_t i = 1; i < np; i++)
        started[i] = pthread_create(&parts[i].th, NULL, send_part_main, &parts[i]) == 0;
    send_part_main(&parts[0]);
    for (size_t i = 1; i < np; i++) {
        if (started[i])
            pthread_join(parts[i].th, NULL);
        else
            send_part_main(&parts[i]);
    }
    size_t ok = 0;
    int64_t took = 0;
    off = 0;
    for (size_t i = 0; i < np; i++) {
        send_part *p = &parts[i];
        took = p->took_us > took ? p->took_us : took;
        if (p->resp) {
            ok += apply_results(s, recs + off, p->n, p->resp);
            protobuf_c_message_free_unpacked(&p->resp->base, NULL);
        } else {
            for (size_t j = 0; j < p->n; j++)
                recs[off + j]->flags |= KP_I_REFETCH;
            s->again = 1;
            *failed = 1;
        }
        off += p->n;
    }
    int64_t per = took / (int64_t)n; /* wall time per item, the parts together */
    s->item_us = s->item_us ? (s->item_us * 3 + per) / 4 : per;
    ORR_DEBUG("transition batch", "items=%zu calls=%zu us_per_item=%" PRId64, n, np, per);
    return ok;
}

/* Transitions of recs[0..n) to `to` with one reason, in batches. */
static size_t transition_all(sched *s, kp_inst **recs, size_t n, int to, const char *reason)
{
    size_t ok = 0;
    pb_treq *items = xrealloc(NULL, (n < BATCH_MAX ? n : BATCH_MAX) * sizeof *items);
    for (size_t off = 0; off < n; off += BATCH_MAX) {
        size_t k = n - off < BATCH_MAX ? n - off : BATCH_MAX;
        for (size_t i = 0; i < k; i++)
            req_init(&items[i], s, recs[off + i], to, reason);
        int failed;
        ok += send_batch(s, items, recs + off, k, &failed);
        if (failed)
            break;
    }
    free(items);
    return ok;
}

/* ------------------------------------------------------------ reading */

typedef void (*inst_fn)(sched *s, const pb_instance *in, void *ctx);

/* Page through ListInstances. ORR_OK or the RPC's failure. */
static orr_status list_instances(sched *s, int64_t task_id, const int *states, size_t n_states,
                                 int64_t from_ms, int64_t to_ms, inst_fn fn, void *ctx)
{
    char token[32] = "";
    Orrery__Halley__V1__InstanceState st[16];
    for (size_t i = 0; i < n_states; i++)
        st[i] = (Orrery__Halley__V1__InstanceState)states[i];
    for (int pages = 0; pages < 100000; pages++) {
        Orrery__Halley__V1__ListInstancesRequest rq =
            ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
        rq.task_id = task_id;
        rq.n_states = n_states;
        rq.states = st;
        rq.from_schedule_ms = from_ms;
        rq.to_schedule_ms = to_ms;
        rq.page_size = 1000;
        rq.page_token = token;
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "ListInstances", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc != ORR_OK) {
            char buf[600];
            ORR_WARN("instance listing failed", "error=%s",
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            return rc;
        }
        Orrery__Halley__V1__ListInstancesResponse *r = (void *)out;
        for (size_t i = 0; i < r->n_instances; i++)
            fn(s, r->instances[i], ctx);
        int more = r->next_page_token && r->next_page_token[0];
        if (more)
            snprintf(token, sizeof token, "%s", r->next_page_token);
        protobuf_c_message_free_unpacked(out, NULL);
        if (!more)
            return ORR_OK;
    }
    return ORR_OK;
}

static void adopt_cb(sched *s, const pb_instance *in, void *ctx)
{
    kp_inst *r = kp_store_get(s->st, in->id);
    int64_t cutoff = *(int64_t *)ctx;
    /* a record changed by an event after the listing began is newer: keep it */
    if (r && r->ev_id > cutoff) {
        r->flags |= KP_I_SEEN;
        return;
    }
    r = adopt(s, in, 0);
    r->flags |= KP_I_SEEN;
}

static orr_status load_live_instances(sched *s)
{
    static const int live[] = {KP_ST_WAITING, KP_ST_READY, KP_ST_DISPATCHED, KP_ST_RUNNING};
    static const int done[] = {KP_ST_FAILED, KP_ST_TIMED_OUT};
    pthread_mutex_lock(&s->qmu);
    int64_t cutoff = s->last_event_id;
    pthread_mutex_unlock(&s->qmu);
    orr_status rc = list_instances(s, 0, live, 4, 0, 0, adopt_cb, &cutoff);
    if (rc == ORR_OK)
        rc = list_instances(s, 0, done, 2, wall_ms() - s->o->horizon_ms, 0, adopt_cb, &cutoff);
    return rc;
}

static orr_status refetch_one(sched *s, kp_inst *r)
{
    Orrery__Halley__V1__GetInstanceRequest rq = ORRERY__HALLEY__V1__GET_INSTANCE_REQUEST__INIT;
    rq.id = r->id;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc = orr_rpc_call_unary(s->cl, "GetInstance", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc == ORR_ENOTFOUND) {
        kp_store_remove(s->st, r);
        return ORR_OK;
    }
    if (rc != ORR_OK)
        return rc;
    adopt(s, (pb_instance *)out, r->ev_id);
    protobuf_c_message_free_unpacked(out, NULL);
    return ORR_OK;
}

static orr_status fetch_instance_id(sched *s, int64_t id, int64_t ev_id)
{
    Orrery__Halley__V1__GetInstanceRequest rq = ORRERY__HALLEY__V1__GET_INSTANCE_REQUEST__INIT;
    rq.id = id;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc = orr_rpc_call_unary(s->cl, "GetInstance", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc == ORR_ENOTFOUND)
        return ORR_OK;
    if (rc != ORR_OK)
        return rc;
    adopt(s, (pb_instance *)out, ev_id);
    protobuf_c_message_free_unpacked(out, NULL);
    return ORR_OK;
}

/* ------------------------------------------------------------ tasks */

/* Where a task's materialisation starts when this leader first sees it. */
static void task_start(sched *s, kp_task *t, int64_t watermark, int is_new)
{
    int64_t start = watermark;
    if (is_new || watermark <= 0)
        start = t->created_at_ms > start ? t->created_at_ms : start;
    if (start <= 0)
        start = wall_ms();
    t->materialised_ms = start;
    int64_t next = INT64_MAX;
    if (t->has_cron) {
        int64_t f;
        int64_t sec = start / 1000;
        next = orr_cron_next(&t->cron, t->tz, sec, &f) == ORR_OK ? f * 1000 : INT64_MAX;
    }
    t->next_fire_ms = next;
    if (next < s->next_materialise_ms)
        s->next_materialise_ms = next;
}

/* Parse and index one Task message; returns the stored task or NULL. */
static kp_task *index_task(sched *s, const Orrery__Halley__V1__Task *m, int64_t watermark,
                           int is_new)
{
    kp_task t;
    memset(&t, 0, sizeof t);
    t.id = m->id;
    t.version = m->version;
    t.created_at_ms = m->created_at_ms;
    snprintf(t.name, sizeof t.name, "%s", m->name);
    orr_err err;
    if (kp_task_parse(&t, m->spec_json, s->o->default_tz, s->o->default_timeout_ms, &err) !=
        ORR_OK) {
        ORR_ERROR("task spec not schedulable", "task=%s id=%" PRId64 " field=%s error=%s",
                  orr_log_q(m->name), m->id, orr_log_q(err.field), orr_log_q(err.msg));
        kp_index_remove(s->ix, m->id);
        return NULL;
    }
    int existed = kp_index_get(s->ix, m->id) != NULL;
    kp_task *st = kp_index_put(s->ix, &t);
    if (!existed)
        task_start(s, st, watermark, is_new);
    else if (st->has_cron) {
        int64_t f;
        st->next_fire_ms =
            orr_cron_next(&st->cron, st->tz, st->materialised_ms / 1000, &f) == ORR_OK ? f * 1000
                                                                                       : INT64_MAX;
        if (st->next_fire_ms < s->next_materialise_ms)
            s->next_materialise_ms = st->next_fire_ms;
    } else {
        st->next_fire_ms = INT64_MAX;
    }
    st->deps_dirty = 1;
    return st;
}

static void relink(sched *s)
{
    char cyc[512] = "";
    size_t n = kp_index_link(s->ix, cyc, sizeof cyc);
    if (n)
        ORR_ERROR("dependency cycle: tasks on it are not scheduled", "tasks=%zu cycle=%s", n,
                  orr_log_q(cyc));
}

static orr_status load_tasks(sched *s, int64_t watermark)
{
    char token[64] = "";
    for (int pages = 0; pages < 100000; pages++) {
        Orrery__Halley__V1__ListTasksRequest rq = ORRERY__HALLEY__V1__LIST_TASKS_REQUEST__INIT;
        rq.active = ORRERY__HALLEY__V1__ACTIVE_FILTER__ACTIVE_FILTER_ACTIVE;
        rq.page_size = 1000;
        rq.page_token = token;
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "ListTasks", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc != ORR_OK) {
            char buf[600];
            ORR_WARN("task listing failed", "error=%s",
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            return rc;
        }
        Orrery__Halley__V1__ListTasksResponse *r = (void *)out;
        for (size_t i = 0; i < r->n_tasks; i++)
            if (r->tasks[i]->active)
                index_task(s, r->tasks[i], watermark, r->tasks[i]->version == 1);
        int more = r->next_page_token && r->next_page_token[0];
        if (more)
            snprintf(token, sizeof token, "%s", r->next_page_token);
        protobuf_c_message_free_unpacked(out, NULL);
        if (!more)
            break;
    }
    relink(s);
    return ORR_OK;
}

static void refresh_tasks(sched *s)
{
    if (!s->n_task_refresh)
        return;
    for (size_t i = 0; i < s->n_task_refresh; i++) {
        Orrery__Halley__V1__GetTaskRequest rq = ORRERY__HALLEY__V1__GET_TASK_REQUEST__INIT;
        rq.id = s->task_refresh[i];
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc = orr_rpc_call_unary(s->cl, "GetTask", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc == ORR_ENOTFOUND) {
            kp_index_remove(s->ix, rq.id);
            continue;
        }
        if (rc != ORR_OK) {
            s->again = 1;
            return; /* keep the list; try again next round */
        }
        Orrery__Halley__V1__Task *t = (void *)out;
        if (!t->active) {
            kp_index_remove(s->ix, t->id);
            ORR_INFO("task deactivated", "task=%s id=%" PRId64, orr_log_q(t->name), t->id);
        } else {
            kp_task *kt = index_task(s, t, wall_ms(), 1);
            if (kt)
                ORR_INFO("task indexed", "task=%s id=%" PRId64 " version=%d", orr_log_q(kt->name),
                         kt->id, kt->version);
        }
        protobuf_c_message_free_unpacked(out, NULL);
    }
    s->n_task_refresh = 0;
    relink(s);
    for (size_t i = 0; i < kp_index_count(s->ix); i++)
        kp_index_at(s->ix, i)->deps_dirty = 1;
}

/* ------------------------------------------------------------ events */

static du_stream *stream_find(sched *s, const char *name, int create)
{
    for (size_t i = 0; i < s->n_streams; i++)
        if (strcmp(s->streams[i].name, name) == 0)
            return &s->streams[i];
    if (!create)
        return NULL;
    if (s->n_streams == s->cap_streams) {
        s->cap_streams = s->cap_streams ? s->cap_streams * 2 : 8;
        s->streams = xrealloc(s->streams, s->cap_streams * sizeof *s->streams);
    }
    du_stream *st = &s->streams[s->n_streams++];
    memset(st, 0, sizeof *st);
    snprintf(st->name, sizeof st->name, "%s", name);
    return st;
}

static void apply_event(sched *s, const kp_ev *e)
{
    if (e->kind == EV_DATA_UNIT) {
        kp_du_mark(s->du, e->stream, e->business, e->interface, e->bucket_ms);
        ORR_DEBUG("data unit reconciled", "stream=%s business=%s interface=%s bucket_ms=%" PRId64,
                  orr_log_q(e->stream), orr_log_q(e->business), orr_log_q(e->interface),
                  e->bucket_ms);
        s->du_dirty = 1;
        s->again = 1;
        return;
    }
    if (e->kind == EV_STREAM) {
        du_stream *st = stream_find(s, e->stream, 0);
        if (st)
            st->state = DU_GRID_UNREAD; /* the bucket may have changed: read it again */
        s->du_dirty = 1;
        s->again = 1;
        return;
    }
    if (e->kind == EV_TASK) {
        for (size_t i = 0; i < s->n_task_refresh; i++)
            if (s->task_refresh[i] == e->task_id)
                return;
        if (s->n_task_refresh == s->cap_task_refresh) {
            s->cap_task_refresh = s->cap_task_refresh ? s->cap_task_refresh * 2 : 16;
            s->task_refresh =
                xrealloc(s->task_refresh, s->cap_task_refresh * sizeof *s->task_refresh);
        }
        s->task_refresh[s->n_task_refresh++] = e->task_id;
        s->again = 1;
        return;
    }
    if (e->kind == EV_INSTANCE_CREATED) {
        kp_inst *r = kp_store_get(s->st, e->instance_id);
        if (!r && e->sched_ms) {
            r = kp_store_add(s->st, e->instance_id, e->task_id, e->sched_ms, KP_ST_WAITING);
            r->attempt = 1;
            kp_task *t = kp_index_get(s->ix, e->task_id);
            r->priority = t ? t->priority : 0;
            r->since_ms = e->at_ms;
            r->ev_id = e->id;
            r->flags |= KP_I_DIRTY;
        }
        mark_task_dirty(s, e->task_id, 1);
        return;
    }
    if (e->kind != EV_INSTANCE_TRANSITION)
        return;
    kp_inst *r = kp_store_get(s->st, e->instance_id);
    if (!r) {
        /* unknown instance (evicted, or older than the cache): read it */
        fetch_instance_id(s, e->instance_id, e->id);
        return;
    }
    if (e->id <= r->ev_id)
        return; /* already reflected (our own write, or a read after it) */
    if (r->state == e->from && e->to) {
        set_state(s, r, e->to, e->to == KP_ST_DISPATCHED ? e->exec : NULL);
        if (e->attempt)
            r->attempt = e->attempt;
        r->since_ms = e->at_ms;
        r->ev_id = e->id;
        r->flags |= KP_I_DIRTY;
        mark_task_dirty(s, r->task_id, 1);
    } else if (r->state == e->to && (!e->attempt || r->attempt == e->attempt)) {
        r->ev_id = e->id;
    } else {
        r->ev_id = e->id;
        r->flags |= KP_I_REFETCH;
        s->again = 1;
    }
}

/* ------------------------------------------------------------ executors */

static void sync_executors(sched *s)
{
    kp_exec *snap;
    size_t n;
    uint64_t v = kp_elect_executors(s->el, &snap, &n);
    if (v == s->ex_version) {
        for (size_t i = 0; i < n; i++)
            kp_exec_clear(&snap[i]);
        free(snap);
        return;
    }
    for (size_t i = 0; i < s->n_ex; i++)
        s->ex[i].alive = 0;
    for (size_t i = 0; i < n; i++) {
        kp_exec *e = exec_find(s, snap[i].id, 1);
        int used = e->used;
        if (!e->alive && e->slots == 0 && v)
            ORR_INFO("executor seen", "executor=%s slots=%d", orr_log_q(snap[i].id), snap[i].slots);
        for (size_t j = 0; j < e->n_labels; j++) {
            free(e->labels[j].key);
            free(e->labels[j].value);
        }
        free(e->labels);
        *e = snap[i];
        e->used = used;
        e->alive = 1;
    }
    free(snap);
    s->ex_version = v;
    s->again = 1;
}

/* ------------------------------------------------------------ materialise */

static void materialise(sched *s, int64_t now)
{
    if (now < s->next_materialise_ms)
        return;
    Orrery__Halley__V1__CreateInstance *items = xrealloc(NULL, BATCH_MAX * sizeof *items);
    Orrery__Halley__V1__CreateInstance **ptrs = xrealloc(NULL, BATCH_MAX * sizeof *ptrs);
    kp_task **owner = xrealloc(NULL, BATCH_MAX * sizeof *owner);
    int64_t times[BATCH_MAX];
    size_t n = 0, total = 0;
    int64_t next_min = INT64_MAX;
    char actor[300];
    snprintf(actor, sizeof actor, "%s", s->actor);
    /* per task: plan, then send in batches; a task's state moves only after
     * its instances were created */
    size_t count = kp_index_count(s->ix);
    for (size_t i = 0; i <= count; i++) {
        kp_task *t = i < count ? kp_index_at(s->ix, i) : NULL;
        int flush = !t || n >= BATCH_MAX - 64;
        if (t && t->next_fire_ms <= now && total < MATERIALISE_ROUND) {
            int64_t upto, next;
            size_t k = kp_materialise_plan(t, t->materialised_ms, now, s->o->horizon_ms, times, 64,
                                           &upto, &next);
            for (size_t j = 0; j < k; j++) {
                orrery__halley__v1__create_instance__init(&items[n]);
                items[n].task_id = t->id;
                items[n].schedule_time_ms = times[j];
                items[n].priority = t->priority;
                items[n].actor = actor;
                ptrs[n] = &items[n];
                owner[n] = t;
                n++;
            }
            total += k;
            /* optimistic: rolled back below if the batch fails */
            t->materialised_ms = upto;
            t->next_fire_ms = next;
        }
        if (t && t->next_fire_ms < next_min)
            next_min = t->next_fire_ms;
        if (!flush || n == 0)
            continue;
        if (!still_leader(s))
            break;
        Orrery__Halley__V1__CreateInstancesRequest rq =
            ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
        rq.n_instances = n;
        rq.instances = ptrs;
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "CreateInstances", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc != ORR_OK) {
            char buf[600];
            ORR_WARN("instance creation failed", "items=%zu error=%s", n,
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            /* roll the tasks back to before their first planned time */
            for (size_t j = n; j-- > 0;) {
                owner[j]->materialised_ms = items[j].schedule_time_ms - 1;
                owner[j]->next_fire_ms = items[j].schedule_time_ms;
            }
            s->next_materialise_ms = now + 1000;
            break;
        }
        Orrery__Halley__V1__CreateInstancesResponse *r = (void *)out;
        for (size_t j = 0; j < r->n_results && j < n; j++) {
            const Orrery__Halley__V1__CreateInstanceResult *res = r->results[j];
            if (res->code == 0 && res->instance) {
                kp_inst *ri = adopt(s, res->instance, 0);
                ri->flags |= KP_I_DIRTY;
            } else if (res->code != 0) {
                ORR_WARN("instance not created", "task=%s schedule_ms=%" PRId64 " error=%s",
                         orr_log_q(owner[j]->name), items[j].schedule_time_ms,
                         orr_log_q(res->message));
            }
        }
        for (size_t j = 0; j < n; j++)
            mark_task_dirty(s, owner[j]->id, 1);
        protobuf_c_message_free_unpacked(out, NULL);
        n = 0;
    }
    if (total >= MATERIALISE_ROUND)
        s->again = 1;
    else if (s->next_materialise_ms <= now)
        s->next_materialise_ms = next_min;
    free(items);
    free(ptrs);
    free(owner);
}

static void write_watermark(sched *s, int64_t now)
{
    if (now < s->next_watermark_ms)
        return;
    s->next_watermark_ms = now + WATERMARK_EVERY_MS;
    int64_t w = now;
    for (size_t i = 0; i < kp_index_count(s->ix); i++) {
        kp_task *t = kp_index_at(s->ix, i);
        if (t->has_cron && t->materialised_ms < w)
            w = t->materialised_ms;
    }
    if (still_leader(s))
        kp_elect_watermark_set(s->el, w);
}

/* ------------------------------------------------------------ dependencies */

typedef struct fetch_req {
    int64_t task_id, from_ms, to_ms;
} fetch_req;

typedef struct du_fetch_req {
    char stream[KP_NAME_MAX], business[KP_NAME_MAX], interface[KP_NAME_MAX];
    int64_t from_ms, to_ms;
} du_fetch_req;

typedef struct dep_ctx {
    fetch_req fetch[FETCH_ROUND];
    size_t n_fetch;
    int64_t times[KP_DEPS_MAX_CYCLES];
    kp_dep_obs obs[KP_DEPS_MAX_CYCLES];
    /* data units */
    int64_t buckets[KP_DU_MAX_BUCKETS];
    du_fetch_req du_fetch[DU_FETCH_ROUND];
    size_t n_du_fetch;
    char grid_read[DU_STREAM_ROUND][KP_NAME_MAX];
    size_t n_grid_read;
} dep_ctx;

enum { DEP_MET, DEP_WAIT, DEP_FETCH };

static void want_fetch(dep_ctx *c, int64_t task_id, int64_t from_ms, int64_t to_ms)
{
    for (size_t i = 0; i < c->n_fetch; i++)
        if (c->fetch[i].task_id == task_id && c->fetch[i].from_ms <= from_ms &&
            c->fetch[i].to_ms >= to_ms)
            return;
    if (c->n_fetch < FETCH_ROUND) {
        c->fetch[c->n_fetch].task_id = task_id;
        c->fetch[c->n_fetch].from_ms = from_ms;
        c->fetch[c->n_fetch].to_ms = to_ms;
        c->n_fetch++;
    }
}

/* Observations of task u's instances at times[0..n) (seconds). Returns
 * DEP_FETCH when some must be read from halleyd first. */
static int observe(sched *s, dep_ctx *c, const kp_task *u, size_t n)
{
    int need = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ms = c->times[i] * 1000;
        kp_inst *r = kp_store_by_key(s->st, u->id, ms);
        c->obs[i].retry_pending = 0;
        if (r) {
            c->obs[i].state = (kp_state)r->state;
            c->obs[i].retry_pending = kp_retry_wanted(&u->retry, (kp_state)r->state, r->attempt);
        } else if (u->has_cron && ms > u->materialised_ms) {
            c->obs[i].state = KP_ST_UNKNOWN; /* not due yet: wait */
        } else {
            need = 1;
        }
    }
    if (need) {
        want_fetch(c, u->id, c->times[0] * 1000, c->times[n - 1] * 1000 + 1);
        return DEP_FETCH;
    }
    return DEP_MET;
}

/* One data-unit dependency of t's instance at tsec: DEP_MET, DEP_WAIT, or
 * DEP_FETCH (the stream's grid or some units must be read first). */
static int check_du(sched *s, dep_ctx *c, const kp_task *t, const kp_dep *dep, int64_t tsec,
                    int64_t now)
{
    du_stream *st = stream_find(s, dep->stream, 1);
    if (st->state == DU_GRID_FAILED)
        return DEP_WAIT; /* round_work clears it at retry_at_ms and re-checks */
    if (st->state == DU_GRID_UNREAD) {
        for (size_t i = 0; i < c->n_grid_read; i++)
            if (strcmp(c->grid_read[i], st->name) == 0)
                return DEP_FETCH;
        if (c->n_grid_read < DU_STREAM_ROUND)
            snprintf(c->grid_read[c->n_grid_read++], KP_NAME_MAX, "%s", st->name);
        return DEP_FETCH;
    }
    size_t n = 0;
    if (kp_du_buckets(t->has_cron ? &t->cron : NULL, t->tz, &st->grid, tsec, c->buckets,
                      KP_DU_MAX_BUCKETS, &n) != ORR_OK)
        return DEP_WAIT; /* more buckets than any cycle may span: never met */
    int unknown = 0;
    int64_t from = 0, to = 0;
    if (kp_du_met(s->du, dep->stream, dep->business, dep->interface, c->buckets, n, st->grid.size_s,
                  &unknown, &from, &to))
        return DEP_MET;
    if (!unknown)
        return DEP_WAIT;
    if (now < s->du_retry_at_ms)
        return DEP_WAIT; /* round_work re-checks when the back-off ends */
    for (size_t i = 0; i < c->n_du_fetch; i++) {
        du_fetch_req *f = &c->du_fetch[i];
        if (strcmp(f->stream, dep->stream) == 0 && strcmp(f->business, dep->business) == 0 &&
            strcmp(f->interface, dep->interface) == 0 && f->from_ms <= from && f->to_ms >= to)
            return DEP_FETCH;
    }
    if (c->n_du_fetch < DU_FETCH_ROUND) {
        du_fetch_req *f = &c->du_fetch[c->n_du_fetch++];
        snprintf(f->stream, sizeof f->stream, "%s", dep->stream);
        snprintf(f->business, sizeof f->business, "%s", dep->business);
        snprintf(f->interface, sizeof f->interface, "%s", dep->interface);
        f->from_ms = from;
        f->to_ms = to;
    }
    return DEP_FETCH;
}

static int check_deps(sched *s, dep_ctx *c, const kp_task *t, const kp_inst *r, int64_t now)
{
    int64_t tsec = r->sched_ms / 1000;
    int result = DEP_MET;
    for (size_t d = 0; d < t->n_deps; d++) {
        const kp_dep *dep = &t->deps[d];
        size_t n = 0;
        const kp_task *u;
        if (dep->kind == KP_DEP_DATA_UNIT) {
            int v = check_du(s, c, t, dep, tsec, now);
            if (v == DEP_WAIT)
                return DEP_WAIT;
            if (v == DEP_FETCH)
                result = DEP_FETCH;
            continue;
        }
        if (dep->kind == KP_DEP_SELF) {
            if (!t->has_cron || kp_deps_prev_fire(&t->cron, t->tz, tsec, &c->times[0]) != ORR_OK)
                continue;
            n = 1;
            u = t;
        } else {
            u = kp_index_get(s->ix, dep->upstream_id);
            if (!u)
                return DEP_WAIT; /* unresolved upstream: hold */
            if (kp_deps_cycles(t->has_cron ? &t->cron : NULL, t->tz, u->has_cron ? &u->cron : NULL,
                               u->tz, dep->cycle_same, tsec, c->times, KP_DEPS_MAX_CYCLES,
                               &n) != ORR_OK)
                return DEP_WAIT;
            if (n == 0)
                continue;
        }
        int o = observe(s, c, u, n);
        if (o == DEP_FETCH) {
            result = DEP_FETCH;
            continue;
        }
        int past = s->o->weak_deadline_ms > 0 && now > r->sched_ms + s->o->weak_deadline_ms;
        if (kp_deps_eval(dep->kind, c->obs, n, past) != KP_DEPS_MET)
            return DEP_WAIT;
    }
    return result;
}

static void absent_cb(sched *s, const pb_instance *in, void *ctx)
{
    (void)ctx;
    if (!kp_store_get(s->st, in->id))
        adopt(s, in, 0);
}

/* Read the requested ranges; cycles that halleyd has no instance for (and
 * whose fire time is materialised) become absent markers. */
static void run_fetches(sched *s, dep_ctx *c)
{
    for (size_t i = 0; i < c->n_fetch; i++) {
        fetch_req *f = &c->fetch[i];
        if (list_instances(s, f->task_id, NULL, 0, f->from_ms, f->to_ms, absent_cb, NULL) != ORR_OK)
            return;
        kp_task *u = kp_index_get(s->ix, f->task_id);
        if (!u)
            continue;
        /* mark the missing ones in the range */
        int64_t ft = f->from_ms - 1;
        for (int k = 0; k < KP_DEPS_MAX_CYCLES; k++) {
            int64_t next;
            if (u->has_cron) {
                int64_t sec;
                if (orr_cron_next(&u->cron, u->tz, ft / 1000, &sec) != ORR_OK)
                    break;
                next = sec * 1000;
            } else {
                next = k == 0 ? f->from_ms : INT64_MAX;
            }
            if (next >= f->to_ms || next == INT64_MAX)
                break;
            if (!kp_store_by_key(s->st, u->id, next)) {
                /* a scheduled cycle that passed without an instance never gets
                 * one; a manual task's may still come (created or backfilled) */
                kp_inst *m = kp_store_add(s->st, 0, u->id, next, KP_ST_ABSENT);
                m->state = u->has_cron ? KP_ST_ABSENT : KP_ST_UNKNOWN;
                m->since_ms = wall_ms();
            }
            ft = next;
        }
    }
    c->n_fetch = 0;
    s->again = 1;
}

/* Read the grids of streams and the reconciled units asked for by the pass.
 * A failure holds the instances (DEP_WAIT) until a retry time. */
static void run_du_fetches(sched *s, dep_ctx *c, int64_t now)
{
    for (size_t i = 0; i < c->n_grid_read; i++) {
        du_stream *st = stream_find(s, c->grid_read[i], 1);
        Orrery__Halley__V1__GetSortStreamRequest rq =
            ORRERY__HALLEY__V1__GET_SORT_STREAM_REQUEST__INIT;
        rq.name = st->name;
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "GetSortStream", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc == ORR_OK) {
            const Orrery__Halley__V1__SortStream *ss = (const void *)out;
            rc = kp_du_grid_parse(ss->spec_json, &st->grid, &err);
            protobuf_c_message_free_unpacked(out, NULL);
        }
        if (rc == ORR_OK) {
            st->state = DU_GRID_OK;
            ORR_INFO("sort stream read", "stream=%s bucket_s=%" PRId64 " tz_s=%d",
                     orr_log_q(st->name), st->grid.size_s, (int)st->grid.tz_s);
        } else {
            char buf[600];
            st->state = DU_GRID_FAILED;
            st->retry_at_ms = now + DU_RETRY_MS;
            ORR_WARN("sort stream not readable: its data-unit dependencies wait",
                     "stream=%s status=%s error=%s", orr_log_q(st->name), orr_status_name(rc),
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        }
        s->du_dirty = 1;
    }
    c->n_grid_read = 0;
    for (size_t i = 0; i < c->n_du_fetch; i++) {
        du_fetch_req *f = &c->du_fetch[i];
        Orrery__Halley__V1__ListDataUnitsRequest rq =
            ORRERY__HALLEY__V1__LIST_DATA_UNITS_REQUEST__INIT;
        rq.stream = f->stream;
        rq.business = f->business;
        rq.interface = f->interface;
        rq.from_ms = f->from_ms;
        rq.to_ms = f->to_ms;
        rq.reconciled_only = 1;
        rq.limit = 5000; /* > KP_DU_MAX_BUCKETS: one page covers the range */
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "ListDataUnits", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc != ORR_OK) {
            char buf[600];
            s->du_retry_at_ms = now + DU_RETRY_MS;
            ORR_WARN("data units not readable: their dependents wait",
                     "stream=%s status=%s error=%s", orr_log_q(f->stream), orr_status_name(rc),
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            break;
        }
        const Orrery__Halley__V1__ListDataUnitsResponse *r = (const void *)out;
        for (size_t j = 0; j < r->n_units; j++) {
            const Orrery__Halley__V1__DataUnit *u = r->units[j];
            /* the filter is Halley's; a unit that does not match is not ours */
            if (u->reconciled && strcmp(u->stream, f->stream) == 0 &&
                strcmp(u->business, f->business) == 0 && strcmp(u->interface, f->interface) == 0)
                kp_du_mark(s->du, u->stream, u->business, u->interface, u->bucket_ms);
        }
        kp_du_listed(s->du, f->stream, f->business, f->interface, f->from_ms, f->to_ms);
        protobuf_c_message_free_unpacked(out, NULL);
        s->du_dirty = 1;
    }
    c->n_du_fetch = 0;
    s->again = 1;
}

/* Tasks with a data-unit dependency: their waiting instances to a check. */
static void du_mark_tasks(sched *s, int64_t now)
{
    for (size_t i = 0; i < s->n_streams; i++) {
        du_stream *st = &s->streams[i];
        if (st->state == DU_GRID_FAILED && now >= st->retry_at_ms) {
            st->state = DU_GRID_UNREAD;
            s->du_dirty = 1;
        }
    }
    if (s->du_retry_at_ms && now >= s->du_retry_at_ms) {
        s->du_retry_at_ms = 0;
        s->du_dirty = 1;
    }
    if (!s->du_dirty)
        return;
    s->du_dirty = 0;
    for (size_t i = 0; i < kp_index_count(s->ix); i++) {
        kp_task *t = kp_index_at(s->ix, i);
        for (size_t d = 0; d < t->n_deps; d++)
            if (t->deps[d].kind == KP_DEP_DATA_UNIT) {
                t->deps_dirty = 1;
                break;
            }
    }
}

/* ------------------------------------------------------------ the pass */

typedef struct work {
    kp_inst **ready, **to_ready, **retry, **timeout, **lost, **refetch;
    size_t n_ready, n_to_ready, n_retry, n_timeout, n_lost, n_refetch;
    size_t cap;
} work;

static void push(kp_inst ***v, size_t *n, size_t cap, kp_inst *r)
{
    if (*n < cap)
        (*v)[(*n)++] = r;
}

/* Order of waiting -> ready: priority, then the oldest schedule time. */
static int waiting_cmp(const void *a, const void *b)
{
    const kp_inst *x = *(kp_inst *const *)a, *y = *(kp_inst *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->sched_ms != y->sched_ms)
        return x->sched_ms < y->sched_ms ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Order of dispatch: priority, then the longest ready (since_ms is when it
 * entered ready), then the oldest schedule time. */
static int ready_cmp(const void *a, const void *b)
{
    const kp_inst *x = *(kp_inst *const *)a, *y = *(kp_inst *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->since_ms != y->since_ms)
        return x->since_ms < y->since_ms ? -1 : 1;
    if (x->sched_ms != y->sched_ms)
        return x->sched_ms < y->sched_ms ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int64_t pass(sched *s, work *w, dep_ctx *c, int64_t now)
{
    int64_t next_timer = now + 1000;
    size_t cnt = kp_store_count(s->st);
    if (cnt + 1 > w->cap) {
        w->cap = (cnt + 1) * 2;
        w->ready = xrealloc(w->ready, w->cap * sizeof(kp_inst *));
        w->to_ready = xrealloc(w->to_ready, w->cap * sizeof(kp_inst *));
        w->retry = xrealloc(w->retry, w->cap * sizeof(kp_inst *));
        w->timeout = xrealloc(w->timeout, w->cap * sizeof(kp_inst *));
        w->lost = xrealloc(w->lost, w->cap * sizeof(kp_inst *));
        w->refetch = xrealloc(w->refetch, w->cap * sizeof(kp_inst *));
    }
    w->n_ready = w->n_to_ready = w->n_retry = w->n_timeout = w->n_lost = w->n_refetch = 0;
    size_t pos = 0;
    kp_inst *r;
    while ((r = kp_store_next(s->st, &pos)) != NULL) {
        if (r->id < 0)
            continue; /* a marker */
        if (r->flags & KP_I_REFETCH) {
            push(&w->refetch, &w->n_refetch, w->cap, r);
            continue;
        }
        kp_task *t = kp_index_get(s->ix, r->task_id);
        switch (r->state) {
        case KP_ST_WAITING:
            if (!t || t->in_cycle || !((r->flags & KP_I_DIRTY) || t->deps_dirty))
                break;
            if (r->sched_ms > now) { /* not its time yet (backfilled into the future) */
                r->flags |= KP_I_DIRTY;
                if (r->sched_ms < next_timer)
                    next_timer = r->sched_ms;
                break;
            }
            {
                int v = check_deps(s, c, t, r, now);
                if (v == DEP_MET)
                    push(&w->to_ready, &w->n_to_ready, w->cap, r);
                if (v != DEP_FETCH)
                    r->flags &= (uint8_t)~KP_I_DIRTY;
                else
                    r->flags |= KP_I_DIRTY;
            }
            break;
        case KP_ST_READY:
            push(&w->ready, &w->n_ready, w->cap, r);
            break;
        case KP_ST_DISPATCHED:
        case KP_ST_RUNNING: {
            kp_exec *e = exec_find(s, r->exec, 0);
            if (s->ex_version && (!e || !e->alive)) {
                push(&w->lost, &w->n_lost, w->cap, r);
                break;
            }
            int64_t limit = t ? t->timeout_ms : s->o->default_timeout_ms;
            if (now - r->since_ms > limit)
                push(&w->timeout, &w->n_timeout, w->cap, r);
            else if (r->since_ms + limit < next_timer)
                next_timer = r->since_ms + limit + 1;
            break;
        }
        case KP_ST_FAILED:
        case KP_ST_TIMED_OUT:
            if (t && kp_retry_wanted(&t->retry, (kp_state)r->state, r->attempt)) {
                int64_t due = r->since_ms + kp_retry_delay_ms(&t->retry, r->attempt);
                if (due <= now)
                    push(&w->retry, &w->n_retry, w->cap, r);
                else if (due < next_timer)
                    next_timer = due;
            }
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; i < kp_index_count(s->ix); i++)
        kp_index_at(s->ix, i)->deps_dirty = 0;
    return next_timer;
}

/* How many waiting -> ready this round: what halleyd writes in about
 * READY_BUDGET_US at its recent pace, within [READY_MIN, READY_ROUND]. */
static size_t ready_cap(const sched *s)
{
    if (s->item_us <= 0)
        return READY_ROUND;
    int64_t k = READY_BUDGET_US / s->item_us;
    return k < READY_MIN ? READY_MIN : k > READY_ROUND ? READY_ROUND : (size_t)k;
}

/* Free slots over all live executors. */
static long free_slots(const sched *s)
{
    long f = 0;
    for (size_t i = 0; i < s->n_ex; i++)
        if (s->ex[i].alive && s->ex[i].slots > s->ex[i].used)
            f += s->ex[i].slots - s->ex[i].used;
    return f;
}

static void dispatch(sched *s, work *w)
{
    if (!s->ex_version || w->n_ready == 0 || free_slots(s) <= 0)
        return;
    qsort(w->ready, w->n_ready, sizeof *w->ready, ready_cmp);
    pb_treq *items = xrealloc(NULL, BATCH_MAX * sizeof *items);
    kp_inst **recs = xrealloc(NULL, BATCH_MAX * sizeof *recs);
    char **short_pools = NULL;
    size_t n_short = 0, n = 0;
    for (size_t i = 0; i <= w->n_ready; i++) {
        kp_inst *r = i < w->n_ready ? w->ready[i] : NULL;
        if (r && free_slots(s) <= 0) {
            r = NULL; /* every executor is full: send what is built, stop */
            i = w->n_ready;
        }
        if (r) {
            kp_task *t = kp_index_get(s->ix, r->task_id);
            if (!t || (t->max_parallel && t->n_live >= t->max_parallel))
                continue;
            int e = kp_dispatch_choose(s->ex, s->n_ex, t->slots, t->labels, t->n_labels);
            if (e < 0)
                continue;
            if (t->n_pools) {
                int blocked = 0;
                for (size_t p = 0; p < t->n_pools && !blocked; p++)
                    for (size_t q = 0; q < n_short; q++)
                        if (strcmp(short_pools[q], t->pools[p].pool) == 0)
                            blocked = 1;
                if (blocked)
                    continue;
                Orrery__Halley__V1__PoolTokens pt[KP_MAX_POOLS], *pp[KP_MAX_POOLS];
                for (size_t p = 0; p < t->n_pools; p++) {
                    orrery__halley__v1__pool_tokens__init(&pt[p]);
                    pt[p].pool = t->pools[p].pool;
                    pt[p].tokens = t->pools[p].tokens;
                    pp[p] = &pt[p];
                }
                Orrery__Halley__V1__AcquireTokensRequest rq =
                    ORRERY__HALLEY__V1__ACQUIRE_TOKENS_REQUEST__INIT;
                rq.instance_id = r->id;
                rq.n_pools = t->n_pools;
                rq.pools = pp;
                if (!still_leader(s))
                    break;
                ProtobufCMessage *out = NULL;
                orr_err err;
                orr_status rc = orr_rpc_call_unary(s->cl, "AcquireTokens", &rq.base, &out,
                                                   RPC_TIMEOUT_MS, &err);
                if (rc != ORR_OK) {
                    r->flags |= KP_I_REFETCH;
                    continue;
                }
                Orrery__Halley__V1__AcquireTokensResponse *ar = (void *)out;
                if (!ar->granted) {
                    short_pools = xrealloc(short_pools, (n_short + 1) * sizeof *short_pools);
                    short_pools[n_short++] =
                        strdup(ar->short_pool[0] ? ar->short_pool : t->pools[0].pool);
                    protobuf_c_message_free_unpacked(out, NULL);
                    continue;
                }
                protobuf_c_message_free_unpacked(out, NULL);
            }
            req_init(&items[n], s, r, KP_ST_DISPATCHED, "dispatch");
            items[n].executor = (char *)kp_intern(s->ex[e].id);
            recs[n] = r;
            /* count the slots now so the next choice in this round sees them */
            set_state(s, r, KP_ST_DISPATCHED, s->ex[e].id);
            n++;
        }
        if (n == 0 || (r && n < BATCH_MAX))
            continue;
        for (size_t j = 0; j < n; j++)
            set_state(s, recs[j], KP_ST_READY, NULL); /* adopt() sets the truth */
        int failed;
        size_t ok = send_batch(s, items, recs, n, &failed);
        s->dispatched_total += ok;
        ORR_DEBUG("dispatched", "instances=%zu total=%" PRIu64, ok, s->dispatched_total);
        n = 0;
        if (failed)
            break; /* the failed call's records are marked for a re-read */
    }
    if (n) /* a leadership break with a batch half built: undo the counts */
        for (size_t j = 0; j < n; j++)
            set_state(s, recs[j], KP_ST_READY, NULL);
    for (size_t q = 0; q < n_short; q++)
        free(short_pools[q]);
    free(short_pools);
    free(items);
    free(recs);
}

/* ------------------------------------------------------------ sweep */

static void recount(sched *s)
{
    for (size_t i = 0; i < s->n_ex; i++)
        s->ex[i].used = 0;
    for (size_t i = 0; i < kp_index_count(s->ix); i++)
        kp_index_at(s->ix, i)->n_live = 0;
    size_t pos = 0;
    kp_inst *r;
    while ((r = kp_store_next(s->st, &pos)) != NULL) {
        if (!is_live(r->state))
            continue;
        kp_exec *e = exec_find(s, r->exec, 1);
        if (e)
            e->used += r->live_slots;
        kp_task *t = kp_index_get(s->ix, r->task_id);
        if (t)
            t->n_live++;
    }
}

static void sweep(sched *s, int64_t now)
{
    size_t pos = 0;
    kp_inst *r;
    while ((r = kp_store_next(s->st, &pos)) != NULL)
        r->flags &= (uint8_t)~KP_I_SEEN;
    pthread_mutex_lock(&s->qmu);
    int64_t cutoff = s->last_event_id;
    pthread_mutex_unlock(&s->qmu);
    if (load_live_instances(s) != ORR_OK)
        return;
    /* live records the listing did not show have moved on: re-read them;
     * old finished ones and markers are evicted */
    size_t n = 0, cap = kp_store_count(s->st);
    kp_inst **evict = xrealloc(NULL, (cap ? cap : 1) * sizeof *evict);
    pos = 0;
    while ((r = kp_store_next(s->st, &pos)) != NULL) {
        if (r->flags & KP_I_SEEN)
            continue;
        int live = r->state == KP_ST_WAITING || r->state == KP_ST_READY || is_live(r->state);
        if (live && r->ev_id <= cutoff)
            r->flags |= KP_I_REFETCH;
        else if (!live && r->since_ms < now - s->o->cache_keep_ms && n < cap)
            evict[n++] = r;
    }
    for (size_t i = 0; i < n; i++)
        kp_store_remove(s->st, evict[i]);
    free(evict);
    recount(s);
    for (size_t i = 0; i < kp_index_count(s->ix); i++)
        kp_index_at(s->ix, i)->deps_dirty = 1;
    /* data units: read again when next needed; old marks go */
    kp_du_forget(s->du, now - s->o->horizon_ms - 86400 * 1000LL);
    ORR_INFO("sweep done", "instances=%zu evicted=%zu tasks=%zu", kp_store_count(s->st), n,
             kp_index_count(s->ix));
}

/* ------------------------------------------------------------ leadership */

static void drop_state(sched *s)
{
    kp_store_clear(s->st);
    kp_index_destroy(s->ix);
    s->ix = kp_index_create();
    for (size_t i = 0; i < s->n_ex; i++)
        kp_exec_clear(&s->ex[i]);
    s->n_ex = 0;
    s->ex_version = 0;
    s->n_task_refresh = 0;
    s->epoch = 0;
    kp_du_cache_destroy(s->du);
    s->du = kp_du_cache_create();
    s->n_streams = 0;
    s->du_retry_at_ms = 0;
}

static orr_status rebuild(sched *s)
{
    drop_state(s);
    int64_t now = wall_ms();
    int64_t wm = 0;
    if (kp_elect_watermark_get(s->el, &wm) != ORR_OK)
        wm = 0;
    s->next_materialise_ms = INT64_MAX;
    orr_status rc = load_tasks(s, wm);
    if (rc == ORR_OK)
        rc = load_live_instances(s);
    if (rc != ORR_OK)
        return rc;
    recount(s);
    s->next_sweep_ms = now + s->o->sweep_ms;
    s->next_watermark_ms = now + WATERMARK_EVERY_MS;
    ORR_INFO("state rebuilt from halley", "tasks=%zu instances=%zu watermark_ms=%" PRId64,
             kp_index_count(s->ix), kp_store_count(s->st), wm);
    return ORR_OK;
}

/* ------------------------------------------------------------ main loop */

static void round_work(sched *s, work *w, dep_ctx *c)
{
    int64_t now = wall_ms();
    refresh_tasks(s);
    sync_executors(s);
    /* doubtful records, bounded */
    size_t pos = 0, k = 0;
    kp_inst *r;
    kp_inst **re = xrealloc(NULL, REFETCH_ROUND * sizeof *re);
    while ((r = kp_store_next(s->st, &pos)) != NULL && k < REFETCH_ROUND)
        if (r->flags & KP_I_REFETCH)
            re[k++] = r;
    for (size_t i = 0; i < k; i++)
        if (refetch_one(s, re[i]) != ORR_OK)
            break;
    if (k == REFETCH_ROUND)
        s->again = 1;
    free(re);

    materialise(s, now);
    du_mark_tasks(s, now);
    c->n_fetch = 0;
    c->n_du_fetch = 0;
    c->n_grid_read = 0;
    int64_t next_timer = pass(s, w, c, now);
    if (c->n_fetch) {
        run_fetches(s, c);
        for (size_t i = 0; i < kp_index_count(s->ix); i++)
            kp_index_at(s->ix, i)->deps_dirty = 1;
    }
    if (c->n_du_fetch || c->n_grid_read)
        run_du_fetches(s, c, now);
    /* slots freed since the last round go to instances already ready before
     * this round spends time on a ready batch */
    dispatch(s, w);
    if (w->n_to_ready) {
        size_t k = w->n_to_ready, cap = ready_cap(s), left = 0;
        for (size_t i = 0; i < w->n_ready; i++)
            left += w->ready[i]->state == KP_ST_READY;
        /* free slots that nothing ready can fill: ready enough for them now */
        long idle = free_slots(s) - (long)left;
        if (idle > (long)cap)
            cap = idle < READY_ROUND ? (size_t)idle : READY_ROUND;
        if (k > cap) {
            /* the oldest first; the others are checked again next round */
            qsort(w->to_ready, k, sizeof *w->to_ready, waiting_cmp);
            for (size_t i = cap; i < k; i++)
                w->to_ready[i]->flags |= KP_I_DIRTY;
            k = cap;
            s->again = 1;
        }
        transition_all(s, w->to_ready, k, KP_ST_READY, "dependencies met");
        /* the ones dispatched above are no longer ready: keep the rest, add
         * the new ones, and dispatch again */
        size_t m = 0;
        for (size_t i = 0; i < w->n_ready; i++)
            if (w->ready[i]->state == KP_ST_READY)
                w->ready[m++] = w->ready[i];
        w->n_ready = m;
        for (size_t i = 0; i < k; i++)
            if (w->to_ready[i]->state == KP_ST_READY)
                push(&w->ready, &w->n_ready, w->cap, w->to_ready[i]);
        dispatch(s, w);
    }
    if (w->n_lost) {
        for (size_t i = 0; i < w->n_lost; i++)
            ORR_WARN("executor lost: failing its instance", "instance=%" PRId64 " executor=%s",
                     w->lost[i]->id, orr_log_q(w->lost[i]->exec));
        transition_all(s, w->lost, w->n_lost, KP_ST_FAILED, "executor_lost");
    }
    if (w->n_timeout) {
        for (size_t i = 0; i < w->n_timeout; i++)
            ORR_WARN("instance timed out", "instance=%" PRId64, w->timeout[i]->id);
        transition_all(s, w->timeout, w->n_timeout, KP_ST_TIMED_OUT, "timeout");
    }
    if (w->n_retry)
        transition_all(s, w->retry, w->n_retry, KP_ST_WAITING, "retry");
    if (now >= s->next_sweep_ms) {
        sweep(s, now);
        s->next_sweep_ms = now + s->o->sweep_ms;
        s->again = 1;
    }
    write_watermark(s, now);
    /* timers are polled: the main loop never sleeps more than 200 ms */
    (void)next_timer;
}

orr_status kp_sched_run(const kp_sched_opts *o, volatile sig_atomic_t *stop, orr_err *err)
{
    if (!o->halley || !*o->halley)
        return orr_err_set(err, ORR_EINVAL, "kepler.halley", "is required (host:port)");
    if (o->sweep_ms < 100)
        return orr_err_set(err, ORR_EINVAL, "kepler.sweep_interval", "must be at least 100ms");
    sched s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.stop = stop;
    snprintf(s.actor, sizeof s.actor, "kepler:%s", o->id);
    pthread_mutex_init(&s.qmu, NULL);
    pthread_cond_init(&s.qcv, NULL);
    orr_status rc = orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, o->halley,
                                          o->token, &s.cl, err);
    if (rc != ORR_OK)
        return rc;
    if ((rc = kp_elect_start(o->zk, (int)o->session_ms, o->id, &s.el, err)) != ORR_OK) {
        orr_rpc_client_destroy(s.cl);
        return rc;
    }
    s.ix = kp_index_create();
    s.st = kp_store_create();
    s.du = kp_du_cache_create();
    if (watch_start(&s, err) != ORR_OK) {
        kp_elect_stop(s.el);
        orr_rpc_client_destroy(s.cl);
        kp_index_destroy(s.ix);
        kp_store_destroy(s.st);
        kp_du_cache_destroy(s.du);
        return orr_err_set(err, ORR_EIO, NULL, "cannot start the event thread");
    }
    work w;
    memset(&w, 0, sizeof w);
    dep_ctx *c = calloc(1, sizeof *c);
    kp_ev *evs = NULL;
    size_t cap_evs = 0;
    ORR_INFO("keplerd running", "id=%s halley=%s zk=%s", orr_log_q(o->id), orr_log_q(o->halley),
             orr_log_q(o->zk));
    while (!*stop) {
        /* wait for events or a timer */
        pthread_mutex_lock(&s.qmu);
        if (s.qn == 0 && !s.again) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t wait_ms = 200;
            if (s.epoch) {
                int64_t now = wall_ms(), until = s.next_materialise_ms;
                if (s.next_sweep_ms < until)
                    until = s.next_sweep_ms;
                wait_ms = until - now;
                if (wait_ms > 200)
                    wait_ms = 200; /* also polls leadership, executors and timers */
                if (wait_ms < 1)
                    wait_ms = 1;
            }
            ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
            ts.tv_sec += wait_ms / 1000 + ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&s.qcv, &s.qmu, &ts);
        }
        size_t n = s.qn;
        if (n > cap_evs) {
            cap_evs = n * 2;
            evs = xrealloc(evs, cap_evs * sizeof *evs);
        }
        if (n)
            memcpy(evs, s.q, n * sizeof *evs);
        s.qn = 0;
        int rebuild_req = s.need_rebuild;
        s.need_rebuild = 0;
        pthread_mutex_unlock(&s.qmu);
        s.again = 0;

        uint64_t ep = kp_elect_leader_epoch(s.el);
        if (o->status) {
            atomic_store(&o->status->running, 1);
            atomic_store(&o->status->zk_connected, kp_elect_connected(s.el));
            atomic_store(&o->status->epoch, ep);
            atomic_store(&o->status->dispatched_total, s.dispatched_total);
        }
        if (ep == 0) {
            if (s.epoch) {
                ORR_WARN("standing by: not the leader", "id=%s", orr_log_q(o->id));
                drop_state(&s);
            }
            continue;
        }
        if (ep != s.epoch || rebuild_req) {
            if (rebuild(&s) != ORR_OK) {
                drop_state(&s);
                struct timespec d = {0, 500 * 1000 * 1000};
                nanosleep(&d, NULL);
                continue;
            }
            s.epoch = ep;
            /* events queued before the rebuild are reflected by it or newer:
             * apply them anyway; stale ones fall out by state checks */
        }
        for (size_t i = 0; i < n; i++)
            apply_event(&s, &evs[i]);
        round_work(&s, &w, c);
    }
    ORR_INFO("keplerd stopping", "id=%s dispatched=%" PRIu64, orr_log_q(o->id), s.dispatched_total);
    if (o->status)
        atomic_store(&o->status->running, 0);
    kp_elect_stop(s.el);
    orr_watch_stop(s.watch);
    orr_rpc_client_destroy(s.cl);
    drop_state(&s);
    kp_index_destroy(s.ix);
    kp_store_destroy(s.st);
    kp_du_cache_destroy(s.du);
    free(s.streams);
    free(s.ex);
    free(s.q);
    free(evs);
    free(c);
    free(s.task_refresh);
    free(w.ready);
    free(w.to_ready);
    free(w.retry);
    free(w.timeout);
    free(w.lost);
    free(w.refetch);
    pthread_mutex_destroy(&s.qmu);
    pthread_cond_destroy(&s.qcv);
    return ORR_OK;
}

/*
 * kp_write.c - keplerd's writes to halleyd (design at the top of kp_sched.c):
 * instance transitions in batches, instances created from cron fire times
 * (materialisation), and the watermark in ZooKeeper.
 *
 * Every write is a compare-and-set in halleyd (expected state and attempt)
 * and is sent only while the leadership epoch the state was built for is
 * current. A transition batch of 2 * SEND_PART_MIN items or more is split
 * into up to SEND_PARTS calls in flight at once on the scheduler's call set
 * (orr_rpc_set); the results are applied to the store on the scheduler
 * thread after every call returned. halleyd's
 * recent time per item (s->item_us) sizes the round's ready batches.
 *
 * Why is it waiting: the blocker lists the round records (kp__why_note)
 * are kept by instance id, a newer list replacing an older one, and handed
 * to one writer thread (PutBlockers) at most every WHY_EVERY_MS, WHY_BATCH
 * at a time, with never more than one call in flight, once they held
 * WHY_SETTLE_MS; a list whose instance changed state before that is never
 * written: the round never waits for these writes, and a release of
 * thousands of instances, whose lists change with every step of their
 * upstream, writes what remains after it settles, not every step.
 */
#include "kp_sched_int.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kp_materialise.h"
#include "orr_alloc.h"
#include "orr_log.h"

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void kp__req_init(pb_treq *t, const kp_sched *s, const kp_inst *r, int to, const char *reason)
{
    orrery__halley__v1__transition_request__init(t);
    t->instance_id = r->id;
    t->expected_state = (Orrery__Halley__V1__InstanceState)r->state;
    t->new_state = (Orrery__Halley__V1__InstanceState)to;
    t->actor = (char *)s->actor;
    t->reason = (char *)reason;
    t->expected_attempt = r->attempt;
}

/* One TransitionInstances call: a part of a batch, in flight on the
 * scheduler's call set beside the batch's other parts (kp__send_batch). */
typedef struct send_part {
    pb_treq **ptrs;
    size_t n;
    Orrery__Halley__V1__TransitionBatchResponse *resp; /* NULL on failure */
    int64_t took_us;
} send_part;

/* A part's call ended: keep its answer if it has one result per item. */
static void send_part_end(send_part *p, orr_status rc, ProtobufCMessage *out, const orr_err *err)
{
    p->resp = NULL;
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("transition batch failed", "items=%zu error=%s", p->n,
                 orr_log_q(orr_err_str(err, buf, sizeof buf)));
        return;
    }
    p->resp = (Orrery__Halley__V1__TransitionBatchResponse *)out;
    if (p->resp->n_results != p->n) {
        protobuf_c_message_free_unpacked(out, NULL);
        p->resp = NULL;
    }
}

/* Apply a batch's results to the records it was about: OK -> adopt the
 * returned instance; any failure -> mark for a re-read (ABORTED: someone
 * else moved it). recs[i] matches items[i]. */
static size_t apply_results(kp_sched *s, kp_inst **recs, size_t n,
                            const Orrery__Halley__V1__TransitionBatchResponse *resp)
{
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        const Orrery__Halley__V1__TransitionResult *res = resp->results[i];
        if (res->code == 0 && res->instance) {
            kp__adopt(s, res->instance, res->event_id);
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
size_t kp__send_batch(kp_sched *s, pb_treq *items, kp_inst **recs, size_t n, int *failed)
{
    *failed = 0;
    if (!kp__still_leader(s)) {
        *failed = 1;
        return 0;
    }
    assert(n <= BATCH_MAX);
    send_part parts[SEND_PARTS];
    pb_treq *ptrs[BATCH_MAX];
    size_t np = n / SEND_PART_MIN;
    np = np < 1 ? 1 : np > SEND_PARTS ? SEND_PARTS : np;
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &items[i];
    if (!s->send_set)
        s->send_set = orr_rpc_set_create(s->cl);
    size_t off = 0;
    int64_t t0 = mono_us();
    for (size_t i = 0; i < np; i++) {
        send_part *p = &parts[i];
        *p = (send_part){.ptrs = ptrs + off, .n = n / np + (i < n % np)};
        off += p->n;
        Orrery__Halley__V1__TransitionBatchRequest rq =
            ORRERY__HALLEY__V1__TRANSITION_BATCH_REQUEST__INIT;
        rq.n_items = p->n;
        rq.items = p->ptrs;
        orr_err err;
        orr_status rc = orr_rpc_set_start(s->send_set, "TransitionInstances", &rq.base,
                                          RPC_TIMEOUT_MS, p, &err);
        if (rc != ORR_OK)
            send_part_end(p, rc, NULL, &err);
    }
    /* every call has its deadline, so each ends */
    void *tag;
    orr_status rc;
    ProtobufCMessage *out;
    orr_err err;
    while (orr_rpc_set_next(s->send_set, -1, &tag, &rc, &out, &err) == 1) {
        send_part *p = tag;
        p->took_us = mono_us() - t0;
        send_part_end(p, rc, out, &err);
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
size_t kp__transition_all(kp_sched *s, kp_inst **recs, size_t n, int to, const char *reason)
{
    size_t ok = 0;
    pb_treq *items = orr_xrealloc(NULL, (n < BATCH_MAX ? n : BATCH_MAX) * sizeof *items);
    for (size_t off = 0; off < n; off += BATCH_MAX) {
        size_t k = n - off < BATCH_MAX ? n - off : BATCH_MAX;
        for (size_t i = 0; i < k; i++) {
            /* a reason of its own for this instance this round, if any */
            const char *own =
                s->met_notes.len ? kp_map_get(&s->met_notes, recs[off + i]->id) : NULL;
            kp__req_init(&items[i], s, recs[off + i], to, own ? own : reason);
        }
        int failed;
        ok += kp__send_batch(s, items, recs + off, k, &failed);
        if (failed)
            break;
    }
    free(items);
    return ok;
}

void kp__materialise(kp_sched *s, int64_t now)
{
    if (now < s->next_materialise_ms)
        return;
    Orrery__Halley__V1__CreateInstance *items = orr_xrealloc(NULL, BATCH_MAX * sizeof *items);
    Orrery__Halley__V1__CreateInstance **ptrs = orr_xrealloc(NULL, BATCH_MAX * sizeof *ptrs);
    kp_task **owner = orr_xrealloc(NULL, BATCH_MAX * sizeof *owner);
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
        int held = t && kp__task_paused(s, t->id); /* its workflow is paused */
        if (t && !held && t->next_fire_ms <= now && total < MATERIALISE_ROUND) {
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
        if (t && !held && t->next_fire_ms < next_min)
            next_min = t->next_fire_ms;
        if (!flush || n == 0)
            continue;
        if (!kp__still_leader(s))
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
                kp_inst *ri = kp__adopt(s, res->instance, 0);
                ri->flags |= KP_I_DIRTY;
            } else if (res->code != 0) {
                ORR_WARN("instance not created", "task=%s schedule_ms=%" PRId64 " error=%s",
                         orr_log_q(owner[j]->name), items[j].schedule_time_ms,
                         orr_log_q(res->message));
            }
        }
        for (size_t j = 0; j < n; j++)
            kp__mark_task_dirty(s, owner[j]->id, 1);
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

void kp__write_watermark(kp_sched *s, int64_t now)
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
    if (kp__still_leader(s))
        kp_elect_watermark_set(s->el, w);
}

/* ------------------------------------------------------------ why is it waiting */

void kp__why_note_text(kp_sched *s, kp_inst *r, const char *json, size_t len, uint32_t hash)
{
    if (r->id <= 0 || r->why == hash)
        return;
    r->why = hash;
    why_entry *e = orr_xrealloc(NULL, sizeof *e + len + 1);
    e->id = r->id;
    e->attempt = r->attempt;
    e->at_ms = kp__wall_ms();
    memcpy(e->json, json, len);
    e->json[len] = '\0';
    free(kp_map_del(&s->why_pending, r->id));
    kp_map_put(&s->why_pending, r->id, e);
}

void kp__why_note(kp_sched *s, kp_inst *r, const kp_why *w)
{
    kp__why_note_text(s, r, w->buf, w->len, kp_why_hash(w->buf, w->len));
}

static void *why_main(void *arg)
{
    kp_sched *s = arg;
    pthread_mutex_lock(&s->why_mu);
    for (;;) {
        while (!s->why_stop && !(s->why_busy && s->n_why_out))
            pthread_cond_wait(&s->why_cv, &s->why_mu);
        if (s->why_stop)
            break;
        why_entry **out = s->why_out;
        size_t n = s->n_why_out;
        pthread_mutex_unlock(&s->why_mu);

        Orrery__Halley__V1__InstanceBlockers *items = orr_xrealloc(NULL, n * sizeof *items);
        Orrery__Halley__V1__InstanceBlockers **ptrs = orr_xrealloc(NULL, n * sizeof *ptrs);
        for (size_t i = 0; i < n; i++) {
            orrery__halley__v1__instance_blockers__init(&items[i]);
            items[i].instance_id = out[i]->id;
            items[i].attempt = out[i]->attempt;
            items[i].blockers_json = out[i]->json;
            items[i].evaluated_at_ms = out[i]->at_ms;
            ptrs[i] = &items[i];
        }
        Orrery__Halley__V1__PutBlockersRequest rq = ORRERY__HALLEY__V1__PUT_BLOCKERS_REQUEST__INIT;
        rq.n_items = n;
        rq.items = ptrs;
        ProtobufCMessage *resp = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "PutBlockers", &rq.base, &resp, RPC_TIMEOUT_MS, &err);
        if (rc == ORR_OK)
            protobuf_c_message_free_unpacked(resp, NULL);
        else {
            char buf[600];
            /* the lists are dropped: the console shows an older evaluation
             * until the next change writes a new one */
            ORR_WARN("blockers not written", "items=%zu error=%s", n,
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        }
        for (size_t i = 0; i < n; i++)
            free(out[i]);
        free(items);
        free(ptrs);

        pthread_mutex_lock(&s->why_mu);
        s->n_why_out = 0;
        s->why_busy = 0;
    }
    pthread_mutex_unlock(&s->why_mu);
    return NULL;
}

void kp__why_start(kp_sched *s)
{
    pthread_mutex_init(&s->why_mu, NULL);
    pthread_cond_init(&s->why_cv, NULL);
    s->why_out = orr_xrealloc(NULL, WHY_BATCH * sizeof *s->why_out);
    s->why_th_started = pthread_create(&s->why_th, NULL, why_main, s) == 0;
    if (!s->why_th_started)
        ORR_WARN("no blocker writer thread: why instances wait is not recorded", "%s", "");
}

void kp__why_stop(kp_sched *s)
{
    if (s->why_th_started) {
        pthread_mutex_lock(&s->why_mu);
        s->why_stop = 1;
        pthread_cond_signal(&s->why_cv);
        pthread_mutex_unlock(&s->why_mu);
        pthread_join(s->why_th, NULL);
        s->why_th_started = 0;
    }
    for (size_t i = 0; i < s->n_why_out; i++)
        free(s->why_out[i]);
    s->n_why_out = 0;
    free(s->why_out);
    s->why_out = NULL;
    kp__why_drop(s);
    kp_map_free(&s->why_pending);
    pthread_mutex_destroy(&s->why_mu);
    pthread_cond_destroy(&s->why_cv);
}

void kp__why_forget(kp_sched *s, const kp_inst *r)
{
    if (s->why_pending.len && r->id > 0)
        free(kp_map_del(&s->why_pending, r->id));
}

void kp__why_drop(kp_sched *s)
{
    for (size_t i = 0; i < s->why_pending.cap; i++)
        if (s->why_pending.slots[i].key)
            free(s->why_pending.slots[i].val);
    kp_map_free(&s->why_pending);
    memset(&s->why_pending, 0, sizeof s->why_pending);
}

void kp__why_flush(kp_sched *s, int64_t now)
{
    if (!s->why_pending.len || now < s->next_why_ms || !s->why_th_started)
        return;
    if (!kp__still_leader(s)) {
        kp__why_drop(s);
        return;
    }
    pthread_mutex_lock(&s->why_mu);
    if (s->why_busy) {
        pthread_mutex_unlock(&s->why_mu);
        return;
    }
    size_t n = 0;
    int64_t ids[WHY_BATCH];
    for (size_t i = 0; i < s->why_pending.cap && n < WHY_BATCH; i++)
        if (s->why_pending.slots[i].key &&
            ((why_entry *)s->why_pending.slots[i].val)->at_ms <= now - WHY_SETTLE_MS) {
            s->why_out[n] = s->why_pending.slots[i].val;
            ids[n++] = s->why_pending.slots[i].key;
        }
    if (n == 0) {
        pthread_mutex_unlock(&s->why_mu);
        return;
    }
    s->n_why_out = n;
    s->why_busy = 1;
    pthread_cond_signal(&s->why_cv);
    pthread_mutex_unlock(&s->why_mu);
    for (size_t i = 0; i < n; i++)
        kp_map_del(&s->why_pending, ids[i]);
    s->next_why_ms = now + WHY_EVERY_MS;
}

/*
 * kp_sched.c - the scheduler loop of keplerd (see kp_sched.h): the round,
 * and the store's bookkeeping every part of it shares.
 *
 * Files (what they share is in kp_sched_int.h, private to them):
 *   kp_sched.c  this essay; the store's bookkeeping (kp__adopt, kp__set_state);
 *               executors; the pass; dispatch; the sweep; leadership; the
 *               round and the main loop;
 *   kp_watch.c  the event stream: events in, queued, applied to the store;
 *   kp_write.c  writes: transition batches (split into parallel calls),
 *               materialisation (CreateInstances), the watermark;
 *   kp_load.c   reading: instance listings and re-reads, tasks;
 *   kp_check.c  dependency checks: upstream instances and data units, and
 *               the reads they ask for.
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
 * One scheduler round (woken by an event, a due timer, or 200 ms at most):
 *   1. drain the event queue;
 *   2. leadership: not leader -> drop all state and wait; a new epoch (or a
 *      rebuild the watcher asked for) -> rebuild: tasks (ListTasks),
 *      instances (ListInstances per state), watermark (ZooKeeper);
 *      executors follow in 5;
 *   3. apply events to the store (stale ones are ignored by event id; an
 *      event that does not follow from the cached state marks the record
 *      for a re-read); task events queue a GetTask;
 *   4. re-read changed tasks;
 *   5. executors: take a new ZooKeeper snapshot when there is one; then
 *      re-read doubtful instances (at most REFETCH_ROUND a round);
 *   6. materialise due fire times (CreateInstances, <= 1000 per call);
 *   7. one pass over the store: dependency checks of waiting instances of
 *      "dirty" tasks, and collection of ready, timed-out, retry-due and
 *      executor-lost ones; then the reads the checks asked for;
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
 *  11. every sweep_interval: re-read every live instance and recount;
 *  12. every WATERMARK_EVERY_MS: the watermark to ZooKeeper;
 *  13. alerts (kp_alert_io.c): deadlines that passed, starved pools; the
 *      transitions' alerts were raised as their events were applied (3).
 *
 * Data-unit dependencies (kp_du.h, kp_check.c): the bucket grid of a stream
 * is read with GetSortStream (again after "stream.changed"), the reconciled
 * units of the buckets an instance needs with ListDataUnits
 * (reconciled_only), and "data_unit.reconciled" events mark units and send
 * the tasks with data-unit dependencies to a new check. A failed read
 * (Halley without the data API, an unknown stream) holds the instance and
 * is retried after DU_RETRY_MS.
 *
 * Writes (kp_write.c): halleyd applies the items of one TransitionInstances
 * call one by one on one database connection, so a batch of 64 or more is
 * split into up to SEND_PARTS calls in flight at once from the scheduler
 * thread (a call set, kp__send_batch), which applies the results after
 * every call returned.
 *
 * Latency: a round blocks on its RPCs (each with a deadline of
 * RPC_TIMEOUT_MS), so the time from an event (an upstream's success, a slot
 * freed) to the dispatch it allows is bounded by one round: one ready batch
 * (about READY_BUDGET_US) plus one dispatch batch, not by the size of the
 * release.
 *
 * Fencing: before every write batch the round checks that the leadership
 * epoch it built its state for is still current; and every write is a
 * compare-and-set in halleyd (expected state and attempt), so a deposed
 * leader that slipped one batch through can only lose, never dispatch an
 * instance twice or retry it twice.
 *
 * Slot accounting: an executor's used slots are the slots of instances the
 * store shows dispatched to or running on it, changed in one place
 * (kp__set_state) and recounted by every sweep.
 */
#include "kp_sched_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kp_dispatch.h"
#include "kp_retry.h"
#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_log.h"

/* ------------------------------------------------------------ the store's bookkeeping */

int64_t kp__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int kp__still_leader(kp_sched *s)
{
    return s->epoch && kp_elect_leader_epoch(s->el) == s->epoch;
}

kp_exec *kp__exec_find(kp_sched *s, const char *id, int create)
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
        s->ex = orr_xrealloc(s->ex, s->cap_ex * sizeof *s->ex);
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
/* The team of task t, or NULL. */
static kp_team *team_of(kp_sched *s, const kp_task *t)
{
    return t && t->team > 0 && (size_t)t->team <= s->n_teams ? &s->teams[t->team - 1] : NULL;
}

void kp__set_state(kp_sched *s, kp_inst *r, int state, const char *exec)
{
    if (is_live(r->state)) {
        kp_exec *e = kp__exec_find(s, r->exec, 0);
        if (e)
            e->used -= r->live_slots;
        kp_task *t = kp_index_get(s->ix, r->task_id);
        if (t && t->n_live > 0)
            t->n_live--;
        kp_team *tm = team_of(s, t);
        if (tm) {
            tm->running--;
            tm->slots -= r->live_slots;
        }
    }
    if (r->state != state) {
        r->why = 0; /* a new state: what blocks it is written again */
        kp__why_forget(s, r);
    }
    r->state = (uint8_t)state;
    if (exec)
        r->exec = kp_intern(exec);
    if (is_live(state)) {
        kp_task *t = kp_index_get(s->ix, r->task_id);
        r->live_slots = t ? t->slots : 1;
        kp_exec *e = kp__exec_find(s, r->exec, 1);
        if (e)
            e->used += r->live_slots;
        if (t)
            t->n_live++;
        kp_team *tm = team_of(s, t);
        if (tm) {
            tm->running++;
            tm->slots += r->live_slots;
        }
    }
}

void kp__mark_task_dirty(kp_sched *s, int64_t task_id, int with_downstream)
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
    return in->updated_at_ms ? in->updated_at_ms : kp__wall_ms();
}

/* Take halleyd's view of an instance into the store. */
kp_inst *kp__adopt(kp_sched *s, const pb_instance *in, int64_t ev_id)
{
    kp_inst *r = kp_store_get(s->st, in->id);
    if (!r)
        r = kp_store_add(s->st, in->id, in->task_id, in->schedule_time_ms, KP_ST_UNKNOWN);
    int changed = r->state != in->state || r->attempt != in->attempt;
    kp__set_state(s, r, (int)in->state, in->executor);
    r->attempt = in->attempt;
    r->priority = in->priority;
    r->since_ms = since_of(in);
    uint8_t run =
        (uint8_t)((in->run_now ? KP_I_RUN_NOW : 0) | (in->ignore_upstreams ? KP_I_NO_UPS : 0));
    if ((r->flags & (KP_I_RUN_NOW | KP_I_NO_UPS)) != run)
        changed = 1;
    r->flags = (uint8_t)((r->flags & ~(KP_I_RUN_NOW | KP_I_NO_UPS)) | run);
    r->bf_id = in->backfill_id;
    r->bf_cycle_ms = in->backfill_cycle_ms;
    r->bf_cycles = in->backfill_cycles;
    if (ev_id > r->ev_id)
        r->ev_id = ev_id;
    r->flags &= (uint8_t)~KP_I_REFETCH;
    if (changed) {
        r->flags |= KP_I_DIRTY;
        kp__mark_task_dirty(s, r->task_id, 1);
    }
    kp__alert_track(s, r);
    return r;
}

/* ------------------------------------------------------------ executors */

/* An administrator's settings of e's id, on top of its node's data. */
static void apply_settings(kp_sched *s, kp_exec *e)
{
    e->drained = 0;
    for (size_t i = 0; i < s->n_ovr; i++) {
        const kp_exec_ovr *o = &s->ovr[i];
        if (strcmp(o->id, e->id) != 0)
            continue;
        e->drained = o->drained;
        if (o->slots >= 0)
            e->slots = o->slots;
        if (o->has_labels) {
            for (size_t j = 0; j < e->n_labels; j++) {
                free(e->labels[j].key);
                free(e->labels[j].value);
            }
            free(e->labels);
            e->labels = orr_xcalloc(o->n_labels + 1, sizeof *e->labels);
            for (size_t j = 0; j < o->n_labels; j++) {
                e->labels[j].key = orr_xstrdup(o->labels[j].key);
                e->labels[j].value = orr_xstrdup(o->labels[j].value);
            }
            e->n_labels = o->n_labels;
        }
        return;
    }
}

static void sync_executors(kp_sched *s)
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
    /* which were alive: one that is gone from the snapshot was lost */
    uint8_t *was = orr_xcalloc(s->n_ex + 1, 1);
    size_t n_was = s->n_ex;
    for (size_t i = 0; i < s->n_ex; i++) {
        was[i] = (uint8_t)s->ex[i].alive;
        s->ex[i].alive = 0;
    }
    for (size_t i = 0; i < n; i++) {
        kp_exec *e = kp__exec_find(s, snap[i].id, 1);
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
        apply_settings(s, e);
    }
    free(snap);
    int64_t now = kp__wall_ms();
    for (size_t i = 0; i < n_was; i++)
        if (was[i] && !s->ex[i].alive)
            kp__alert_exec_gone(s, s->ex[i].id, s->ex[i].used, now);
    free(was);
    s->ex_version = v;
    s->again = 1;
}

/* ------------------------------------------------------------ the pass */

typedef struct work {
    kp_inst **ready, **to_ready, **retry, **timeout, **lost, **refetch, **paced;
    size_t n_ready, n_to_ready, n_retry, n_timeout, n_lost, n_refetch, n_paced;
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

/* Is r an open member of its backfill's cycle: live, or failed with a retry
 * to come (kp_backfill.h)? */
static int bf_open(const kp_inst *r, const kp_task *t)
{
    switch (r->state) {
    case KP_ST_WAITING:
    case KP_ST_READY:
    case KP_ST_DISPATCHED:
    case KP_ST_RUNNING:
        return 1;
    case KP_ST_FAILED:
    case KP_ST_TIMED_OUT:
        return t && kp_retry_wanted(&t->retry, (kp_state)r->state, r->attempt);
    default:
        return 0;
    }
}

/* A waiting instance whose turn it is: its schedule time (unless it runs
 * now), then its dependencies (unless it runs now ignoring its upstreams).
 * Returns the pass's next timer, moved earlier for a future schedule time. */
static int64_t check_waiting(kp_sched *s, work *w, dep_ctx *c, const kp_task *t, kp_inst *r,
                             int64_t now, int64_t next_timer)
{
    if (r->sched_ms > now && !(r->flags & KP_I_RUN_NOW)) {
        /* not its time yet (backfilled into the future) */
        r->flags |= KP_I_DIRTY;
        if (!r->why) { /* the same until its state changes */
            kp_why *y = &s->why_buf;
            kp_why_begin(y);
            kp_why_item(y, "\"kind\":\"not_due\",\"schedule_time_ms\":%" PRId64, r->sched_ms);
            kp_why_end(y);
            kp__why_note(s, r, y);
        }
        return r->sched_ms < next_timer ? r->sched_ms : next_timer;
    }
    int v = (r->flags & KP_I_NO_UPS) ? DEP_MET : kp__check_deps(s, c, t, r, now);
    if (v == DEP_MET) {
        push(&w->to_ready, &w->n_to_ready, w->cap, r);
        if (!(r->flags & KP_I_NO_UPS) && c->met_note[0]) {
            free(kp_map_del(&s->met_notes, r->id));
            kp_map_put(&s->met_notes, r->id, orr_xstrdup(c->met_note));
        }
    } else if (v == DEP_WAIT) {
        kp_why *y = &s->why_buf;
        kp_why_begin(y);
        kp__explain_deps(s, t, r, now, y);
        kp_why_end(y);
        kp__why_note(s, r, y);
    }
    if (v != DEP_FETCH)
        r->flags &= (uint8_t)~KP_I_DIRTY;
    else
        r->flags |= KP_I_DIRTY;
    return next_timer;
}

/* Blockers that are one constant text. */
enum { WHY_TASK_INACTIVE, WHY_CYCLE, WHY_PAUSED, WHY_CONSTS };

static void why_const(kp_sched *s, kp_inst *r, int which)
{
    static const char *const text[WHY_CONSTS] = {
        "[{\"kind\":\"task_inactive\"}]",
        "[{\"kind\":\"dependency_cycle\"}]",
        "[{\"kind\":\"workflow_paused\"}]",
    };
    static uint32_t hash[WHY_CONSTS];
    if (!hash[which])
        hash[which] = kp_why_hash(text[which], strlen(text[which]));
    kp__why_note_text(s, r, text[which], strlen(text[which]), hash[which]);
}

/* Why no executor takes ready instance r of task t now. */
static void why_executor(kp_sched *s, kp_inst *r, const kp_task *t)
{
    kp_exec_why why = kp_dispatch_explain(s->ex, s->n_ex, t->slots, t->labels, t->n_labels);
    if (why == KP_EXEC_FITS)
        return;
    kp_why *y = &s->why_buf;
    char labels[1024], k[300], v[600];
    size_t o = 0;
    labels[o++] = '{';
    for (size_t i = 0; i < t->n_labels && o < sizeof labels - 2; i++) {
        int m = snprintf(labels + o, sizeof labels - o, "%s%s:%s", i ? "," : "",
                         kp_why_q(k, sizeof k, t->labels[i].key),
                         kp_why_q(v, sizeof v, t->labels[i].value));
        if (m < 0 || (size_t)m >= sizeof labels - o - 1) {
            o = 1; /* too long: leave them out */
            break;
        }
        o += (size_t)m;
    }
    labels[o++] = '}';
    labels[o] = '\0';
    kp_why_begin(y);
    kp_why_item(y, "\"kind\":\"executor\",\"reason\":\"%s\",\"slots\":%d,\"labels\":%s",
                kp_exec_why_name(why), t->slots, labels);
    kp_why_end(y);
    kp__why_note(s, r, y);
}

static int64_t pass(kp_sched *s, work *w, dep_ctx *c, int64_t now)
{
    int64_t next_timer = now + 1000;
    size_t cnt = kp_store_count(s->st);
    if (cnt + 1 > w->cap) {
        w->cap = (cnt + 1) * 2;
        w->ready = orr_xrealloc(w->ready, w->cap * sizeof(kp_inst *));
        w->to_ready = orr_xrealloc(w->to_ready, w->cap * sizeof(kp_inst *));
        w->retry = orr_xrealloc(w->retry, w->cap * sizeof(kp_inst *));
        w->timeout = orr_xrealloc(w->timeout, w->cap * sizeof(kp_inst *));
        w->lost = orr_xrealloc(w->lost, w->cap * sizeof(kp_inst *));
        w->refetch = orr_xrealloc(w->refetch, w->cap * sizeof(kp_inst *));
        w->paced = orr_xrealloc(w->paced, w->cap * sizeof(kp_inst *));
    }
    w->n_ready = w->n_to_ready = w->n_retry = w->n_timeout = w->n_lost = w->n_refetch = 0;
    w->n_paced = 0;
    kp_bf_reset(s->bf);
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
        if (r->bf_cycles > 0 && bf_open(r, t))
            kp_bf_note(s->bf, r->bf_id, r->bf_cycle_ms, r->bf_cycles);
        switch (r->state) {
        case KP_ST_WAITING:
            if (!t || t->in_cycle) {
                why_const(s, r, !t ? WHY_TASK_INACTIVE : WHY_CYCLE);
                break;
            }
            if (!((r->flags & KP_I_DIRTY) || t->deps_dirty))
                break;
            if (kp__task_held(s, t->id)) { /* held by its workflow: checked at the resume */
                r->flags |= KP_I_DIRTY;
                why_const(s, r, WHY_PAUSED);
                break;
            }
            if (r->bf_cycles > 0) { /* a paced backfill: once every open cycle is known */
                push(&w->paced, &w->n_paced, w->cap, r);
                break;
            }
            next_timer = check_waiting(s, w, c, t, r, now, next_timer);
            break;
        case KP_ST_READY:
            push(&w->ready, &w->n_ready, w->cap, r);
            break;
        case KP_ST_DISPATCHED:
        case KP_ST_RUNNING: {
            kp_exec *e = kp__exec_find(s, r->exec, 0);
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
    /* the waiting instances of paced backfills: only their backfill's
     * earliest open cycles move on; the others stay dirty for the next pass */
    kp_bf_seal(s->bf);
    for (size_t i = 0; i < w->n_paced; i++) {
        r = w->paced[i];
        if (!kp_bf_admit(s->bf, r->bf_id, r->bf_cycle_ms)) {
            r->flags |= KP_I_DIRTY;
            continue;
        }
        next_timer = check_waiting(s, w, c, kp_index_get(s->ix, r->task_id), r, now, next_timer);
    }
    for (size_t i = 0; i < kp_index_count(s->ix); i++)
        kp_index_at(s->ix, i)->deps_dirty = 0;
    return next_timer;
}

/* How many waiting -> ready this round: what halleyd writes in about
 * READY_BUDGET_US at its recent pace, within [READY_MIN, READY_ROUND]. */
static size_t ready_cap(const kp_sched *s)
{
    if (s->item_us <= 0)
        return READY_ROUND;
    int64_t k = READY_BUDGET_US / s->item_us;
    return k < READY_MIN ? READY_MIN : k > READY_ROUND ? READY_ROUND : (size_t)k;
}

/* Free slots over all live executors. */
static long free_slots(const kp_sched *s)
{
    long f = 0;
    for (size_t i = 0; i < s->n_ex; i++)
        if (s->ex[i].alive && !s->ex[i].drained && s->ex[i].slots > s->ex[i].used)
            f += s->ex[i].slots - s->ex[i].used;
    return f;
}

static void why_pool(kp_sched *s, kp_inst *r, const char *pool, int tokens)
{
    kp_why *y = &s->why_buf;
    char qp[2 * KP_NAME_MAX + 8];
    kp_why_begin(y);
    kp_why_item(y, "\"kind\":\"pool\",\"pool\":%s,\"tokens\":%d", kp_why_q(qp, sizeof qp, pool),
                tokens);
    kp_why_end(y);
    kp__why_note(s, r, y);
}

/* Ready instances from ready[from] on that this dispatch did not reach:
 * those that waited WHY_QUEUED_MS for a slot (shorter waits are the queue
 * moving, and explaining each of a release's thousands would cost the
 * dispatch loop time and halleyd writes for nothing). */
static void why_unreached(kp_sched *s, work *w, size_t from)
{
    int64_t old = kp__wall_ms() - WHY_QUEUED_MS;
    for (size_t i = from; i < w->n_ready; i++) {
        kp_inst *r = w->ready[i];
        if (r->since_ms > old)
            continue;
        kp_task *t = r->state == KP_ST_READY ? kp_index_get(s->ix, r->task_id) : NULL;
        if (t)
            why_executor(s, r, t);
    }
}

static void dispatch(kp_sched *s, work *w)
{
    if (!s->ex_version || w->n_ready == 0)
        return;
    if (free_slots(s) <= 0) {
        if (s->why_ready)
            why_unreached(s, w, 0);
        return;
    }
    qsort(w->ready, w->n_ready, sizeof *w->ready, ready_cmp);
    kp_why *y = &s->why_buf;
    size_t unreached = w->n_ready;
    pb_treq *items = orr_xrealloc(NULL, BATCH_MAX * sizeof *items);
    kp_inst **recs = orr_xrealloc(NULL, BATCH_MAX * sizeof *recs);
    char **short_pools = NULL;
    size_t n_short = 0, n = 0;
    for (size_t i = 0; i <= w->n_ready; i++) {
        kp_inst *r = i < w->n_ready ? w->ready[i] : NULL;
        if (r && free_slots(s) <= 0) {
            r = NULL; /* every executor is full: send what is built, stop */
            unreached = i;
            i = w->n_ready;
        }
        if (r) {
            kp_task *t = kp_index_get(s->ix, r->task_id);
            if (!t)
                continue;
            if (kp__task_held(s, t->id)) {
                if (s->why_ready)
                    why_const(s, r, WHY_PAUSED);
                continue;
            }
            if (t->max_parallel && t->n_live >= t->max_parallel) {
                if (s->why_ready) {
                    char qn[2 * KP_NAME_MAX + 8];
                    kp_why_begin(y);
                    kp_why_item(y, "\"kind\":\"max_parallel\",\"task\":%s,\"limit\":%d,\"live\":%d",
                                kp_why_q(qn, sizeof qn, t->name), t->max_parallel, t->n_live);
                    kp_why_end(y);
                    kp__why_note(s, r, y);
                }
                continue;
            }
            kp_team *tm = team_of(s, t);
            if (tm && ((tm->max_running && tm->running >= tm->max_running) ||
                       (tm->max_slots && tm->slots + t->slots > tm->max_slots))) {
                if (s->why_ready) {
                    char qn[2 * KP_NAME_MAX + 8];
                    int by_running = tm->max_running && tm->running >= tm->max_running;
                    kp_why_begin(y);
                    kp_why_item(y,
                                "\"kind\":\"team_quota\",\"team\":%s,\"limit\":\"%s\",\"max\":%d,"
                                "\"used\":%d,\"needs\":%d",
                                kp_why_q(qn, sizeof qn, tm->name),
                                by_running ? "max_running" : "max_slots",
                                by_running ? tm->max_running : tm->max_slots,
                                by_running ? tm->running : tm->slots, by_running ? 1 : t->slots);
                    kp_why_end(y);
                    kp__why_note(s, r, y);
                }
                continue;
            }
            int e = kp_dispatch_choose(s->ex, s->n_ex, t->slots, t->labels, t->n_labels);
            if (e < 0) {
                if (s->why_ready)
                    why_executor(s, r, t);
                continue;
            }
            if (t->n_pools) {
                const char *blocked = NULL;
                int need = 0;
                for (size_t p = 0; p < t->n_pools && !blocked; p++)
                    for (size_t q = 0; q < n_short; q++)
                        if (strcmp(short_pools[q], t->pools[p].pool) == 0) {
                            blocked = short_pools[q];
                            need = t->pools[p].tokens;
                        }
                if (blocked) {
                    kp__alert_pool(s, blocked, 0, t->id, kp__wall_ms());
                    if (s->why_ready)
                        why_pool(s, r, blocked, need);
                    continue;
                }
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
                if (!kp__still_leader(s))
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
                    short_pools = orr_xrealloc(short_pools, (n_short + 1) * sizeof *short_pools);
                    short_pools[n_short++] =
                        strdup(ar->short_pool[0] ? ar->short_pool : t->pools[0].pool);
                    /* always: the denial itself is this round's evaluation */
                    int need = t->pools[0].tokens;
                    for (size_t p = 0; p < t->n_pools; p++)
                        if (strcmp(t->pools[p].pool, short_pools[n_short - 1]) == 0)
                            need = t->pools[p].tokens;
                    why_pool(s, r, short_pools[n_short - 1], need);
                    kp__alert_pool(s, short_pools[n_short - 1], 0, t->id, kp__wall_ms());
                    protobuf_c_message_free_unpacked(out, NULL);
                    continue;
                }
                for (size_t p = 0; p < t->n_pools; p++)
                    kp__alert_pool(s, t->pools[p].pool, 1, t->id, 0);
                protobuf_c_message_free_unpacked(out, NULL);
            }
            kp__req_init(&items[n], s, r, KP_ST_DISPATCHED, "dispatch");
            items[n].executor = (char *)kp_intern(s->ex[e].id);
            recs[n] = r;
            /* count the slots now so the next choice in this round sees them */
            kp__set_state(s, r, KP_ST_DISPATCHED, s->ex[e].id);
            n++;
        }
        if (n == 0 || (r && n < BATCH_MAX))
            continue;
        for (size_t j = 0; j < n; j++)
            kp__set_state(s, recs[j], KP_ST_READY, NULL); /* kp__adopt() sets the truth */
        int failed;
        size_t ok = kp__send_batch(s, items, recs, n, &failed);
        s->dispatched_total += ok;
        ORR_DEBUG("dispatched", "instances=%zu total=%" PRIu64, ok, s->dispatched_total);
        n = 0;
        if (failed)
            break; /* the failed call's records are marked for a re-read */
    }
    if (n) /* a leadership break with a batch half built: undo the counts */
        for (size_t j = 0; j < n; j++)
            kp__set_state(s, recs[j], KP_ST_READY, NULL);
    if (s->why_ready && unreached < w->n_ready)
        why_unreached(s, w, unreached);
    for (size_t q = 0; q < n_short; q++)
        free(short_pools[q]);
    free(short_pools);
    free(items);
    free(recs);
}

/* ------------------------------------------------------------ sweep */

static void recount(kp_sched *s)
{
    for (size_t i = 0; i < s->n_ex; i++)
        s->ex[i].used = 0;
    for (size_t i = 0; i < s->n_teams; i++)
        s->teams[i].running = s->teams[i].slots = 0;
    for (size_t i = 0; i < kp_index_count(s->ix); i++)
        kp_index_at(s->ix, i)->n_live = 0;
    size_t pos = 0;
    kp_inst *r;
    while ((r = kp_store_next(s->st, &pos)) != NULL) {
        if (!is_live(r->state))
            continue;
        kp_exec *e = kp__exec_find(s, r->exec, 1);
        if (e)
            e->used += r->live_slots;
        kp_task *t = kp_index_get(s->ix, r->task_id);
        if (t)
            t->n_live++;
        kp_team *tm = team_of(s, t);
        if (tm) {
            tm->running++;
            tm->slots += r->live_slots;
        }
    }
}

static void sweep(kp_sched *s, int64_t now)
{
    size_t pos = 0;
    kp_inst *r;
    while ((r = kp_store_next(s->st, &pos)) != NULL)
        r->flags &= (uint8_t)~KP_I_SEEN;
    pthread_mutex_lock(&s->qmu);
    int64_t cutoff = s->last_event_id;
    pthread_mutex_unlock(&s->qmu);
    if (kp__load_live_instances(s) != ORR_OK)
        return;
    /* live records the listing did not show have moved on: re-read them;
     * old finished ones and markers are evicted */
    size_t n = 0, cap = kp_store_count(s->st);
    kp_inst **evict = orr_xrealloc(NULL, (cap ? cap : 1) * sizeof *evict);
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

/* Forget this round's "dependencies met (...)" reasons. */
static void clear_notes(kp_sched *s)
{
    for (size_t i = 0; i < s->met_notes.cap; i++)
        if (s->met_notes.slots[i].key)
            free(s->met_notes.slots[i].val);
    kp_map_free(&s->met_notes);
    memset(&s->met_notes, 0, sizeof s->met_notes);
}

static void drop_state(kp_sched *s)
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
    s->n_paused = 0;
    s->paused_dirty = 0;
    kp__why_drop(s);
    kp__alert_drop(s);
    clear_notes(s);
    kp__resources_free(s);
    s->ovr_reload = s->quota_reload = s->cal_reload = 0;
}

static orr_status rebuild(kp_sched *s)
{
    drop_state(s);
    int64_t now = kp__wall_ms();
    int64_t wm = 0;
    if (kp_elect_watermark_get(s->el, &wm) != ORR_OK)
        wm = 0;
    s->next_materialise_ms = INT64_MAX;
    orr_status rc = kp__load_tasks(s, wm);
    if (rc == ORR_OK)
        rc = kp__load_paused(s);
    if (rc == ORR_OK)
        rc = kp__load_live_instances(s);
    if (rc == ORR_OK)
        rc = kp__load_resources(s, 1);
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

static void round_work(kp_sched *s, work *w, dep_ctx *c)
{
    int64_t now = kp__wall_ms();
    kp__refresh_tasks(s);
    if (s->paused_dirty)
        kp__load_paused(s);
    if (s->ovr_reload || s->quota_reload || s->cal_reload)
        (void)kp__load_resources(s, 0); /* a failed read keeps its flag: next round */
    sync_executors(s);
    s->why_ready = now >= s->why_ready_next_ms;
    if (s->why_ready)
        s->why_ready_next_ms = now + WHY_READY_EVERY_MS;
    /* doubtful records, bounded */
    size_t pos = 0, k = 0;
    kp_inst *r;
    kp_inst **re = orr_xrealloc(NULL, REFETCH_ROUND * sizeof *re);
    while ((r = kp_store_next(s->st, &pos)) != NULL && k < REFETCH_ROUND)
        if (r->flags & KP_I_REFETCH)
            re[k++] = r;
    for (size_t i = 0; i < k; i++)
        if (kp__refetch_one(s, re[i]) != ORR_OK)
            break;
    if (k == REFETCH_ROUND)
        s->again = 1;
    free(re);

    kp__materialise(s, now);
    kp__du_mark_tasks(s, now);
    c->n_fetch = 0;
    c->n_du_fetch = 0;
    c->n_grid_read = 0;
    int64_t next_timer = pass(s, w, c, now);
    if (c->n_fetch) {
        kp__run_fetches(s, c);
        for (size_t i = 0; i < kp_index_count(s->ix); i++)
            kp_index_at(s->ix, i)->deps_dirty = 1;
    }
    if (c->n_du_fetch || c->n_grid_read)
        kp__run_du_fetches(s, c, now);
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
        kp__transition_all(s, w->to_ready, k, KP_ST_READY, "dependencies met");
        clear_notes(s);
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
        kp__transition_all(s, w->lost, w->n_lost, KP_ST_FAILED, "executor_lost");
    }
    if (w->n_timeout) {
        for (size_t i = 0; i < w->n_timeout; i++)
            ORR_WARN("instance timed out", "instance=%" PRId64, w->timeout[i]->id);
        kp__transition_all(s, w->timeout, w->n_timeout, KP_ST_TIMED_OUT, "timeout");
    }
    if (w->n_retry)
        kp__transition_all(s, w->retry, w->n_retry, KP_ST_WAITING, "retry");
    if (now >= s->next_sweep_ms) {
        sweep(s, now);
        s->next_sweep_ms = now + s->o->sweep_ms;
        s->again = 1;
    }
    kp__write_watermark(s, now);
    kp__why_flush(s, now);
    kp__alert_round(s, kp__wall_ms());
    /* timers are polled: the main loop never sleeps more than 200 ms */
    (void)next_timer;
}

orr_status kp_sched_run(const kp_sched_opts *o, volatile sig_atomic_t *stop, orr_err *err)
{
    if (!o->halley || !*o->halley)
        return orr_err_set(err, ORR_EINVAL, "kepler.halley", "is required (host:port)");
    if (o->sweep_ms < 100)
        return orr_err_set(err, ORR_EINVAL, "kepler.sweep_interval", "must be at least 100ms");
    kp_sched s;
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
    s.bf = kp_bf_create();
    s.du = kp_du_cache_create();
    if (kp__watch_start(&s, err) != ORR_OK) {
        kp_elect_stop(s.el);
        orr_rpc_client_destroy(s.cl);
        kp_index_destroy(s.ix);
        kp_store_destroy(s.st);
        kp_bf_destroy(s.bf);
        kp_du_cache_destroy(s.du);
        return orr_err_set(err, ORR_EIO, NULL, "cannot start the event thread");
    }
    kp__why_start(&s);
    kp__alert_start(&s);
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
            int64_t wait_ms = 200;
            if (s.epoch) {
                int64_t now = kp__wall_ms(), until = s.next_materialise_ms;
                if (s.next_sweep_ms < until)
                    until = s.next_sweep_ms;
                if (kp__alert_next_ms(&s) < until)
                    until = kp__alert_next_ms(&s); /* a deadline alert on time */
                wait_ms = until - now;
                if (wait_ms > 200)
                    wait_ms = 200; /* also polls leadership, executors and timers */
                if (wait_ms < 1)
                    wait_ms = 1;
            }
            struct timespec ts = orr_clock_after(CLOCK_REALTIME, wait_ms);
            pthread_cond_timedwait(&s.qcv, &s.qmu, &ts);
        }
        size_t n = s.qn;
        if (n > cap_evs) {
            cap_evs = n * 2;
            evs = orr_xrealloc(evs, cap_evs * sizeof *evs);
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
            kp__alert_standby(&s, evs, n); /* for a takeover: what came meanwhile */
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
            kp__apply_event(&s, &evs[i]);
        round_work(&s, &w, c);
    }
    ORR_INFO("keplerd stopping", "id=%s dispatched=%" PRIu64, orr_log_q(o->id), s.dispatched_total);
    if (o->status)
        atomic_store(&o->status->running, 0);
    kp__alert_stop(&s); /* its thread asks the election for the epoch: before it goes */
    kp_elect_stop(s.el);
    orr_watch_stop(s.watch);
    kp__why_stop(&s);
    orr_rpc_set_destroy(s.send_set);
    orr_rpc_client_destroy(s.cl);
    drop_state(&s);
    kp_index_destroy(s.ix);
    kp_store_destroy(s.st);
    kp_bf_destroy(s.bf);
    kp_du_cache_destroy(s.du);
    free(s.streams);
    free(s.ex);
    free(s.q);
    free(evs);
    free(c);
    free(s.task_refresh);
    free(s.paused);
    free(w.ready);
    free(w.to_ready);
    free(w.retry);
    free(w.timeout);
    free(w.lost);
    free(w.refetch);
    free(w.paced);
    pthread_mutex_destroy(&s.qmu);
    pthread_cond_destroy(&s.qcv);
    return ORR_OK;
}

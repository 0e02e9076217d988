/*
 * kp_watch.c - keplerd's event stream (design at the top of kp_sched.c).
 *
 * The watcher side: halleyd's WatchEvents stream (instance.*, task.*,
 * data_unit.*, stream.*, workflow.*, executor.*, quota.*) is kept open by
 * the one subscriber (orr_watch.h),
 * which resumes by event id with back-off. Each event becomes a small
 * kp_ev (its JSON payload parsed here, strings interned) queued for the
 * scheduler thread under s->qmu; an expired resume point asks for a rebuild.
 *
 * The scheduler side: kp__apply_event takes a queued event into the store,
 * in id order, on the scheduler thread, then hands it to the alert
 * evaluation (kp_alert_io.c).
 */
#include "kp_sched_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_log.h"

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
    else if (strcmp(m->kind, "instance.run") == 0)
        e->kind = EV_INSTANCE_RUN;
    else if (strncmp(m->kind, "task.", 5) == 0)
        e->kind = EV_TASK;
    else if (strcmp(m->kind, "data_unit.reconciled") == 0)
        e->kind = EV_DATA_UNIT;
    else if (strcmp(m->kind, "stream.changed") == 0)
        e->kind = EV_STREAM;
    else if (strncmp(m->kind, "workflow.", 9) == 0)
        e->kind = EV_WORKFLOW; /* a pause, a resume, or tasks in or out of a paused one */
    else if (strcmp(m->kind, "executor.changed") == 0)
        e->kind = EV_EXECUTOR;
    else if (strcmp(m->kind, "quota.changed") == 0)
        e->kind = EV_QUOTA;
    else if (strcmp(m->kind, "calendar.changed") == 0)
        e->kind = EV_CALENDAR;
    else if (strncmp(m->kind, "alert_rule.", 11) == 0)
        e->kind = EV_ALERT_RULE;
    else if (strcmp(m->kind, "instance.stats") == 0)
        e->kind = EV_INSTANCE_STATS;
    else
        e->kind = EV_OTHER;
    if (e->kind == EV_DATA_UNIT || e->kind == EV_STREAM) {
        ev_data_from_pb(m, e);
        return;
    }
    if (e->kind == EV_INSTANCE_STATS) { /* {"attempt": N, "stats": {"dirty_rows": X, ...}} */
        json_t *p = json_loads(m->payload_json ? m->payload_json : "{}", 0, NULL);
        json_t *a = json_object_get(p, "attempt");
        json_t *d = json_object_get(json_object_get(p, "stats"), "dirty_rows");
        e->attempt = json_is_integer(a) ? (int)json_integer_value(a) : 0;
        if (json_is_number(d)) {
            e->has_dirty_rows = 1;
            e->dirty_rows = json_number_value(d);
        }
        json_decref(p);
        return;
    }
    if (e->kind != EV_INSTANCE_CREATED && e->kind != EV_INSTANCE_TRANSITION &&
        e->kind != EV_INSTANCE_RUN)
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
    e->run_now = json_is_true(json_object_get(p, "run_now"));
    e->ignore_upstreams = json_is_true(json_object_get(p, "ignore_upstreams"));
    json_t *b = json_object_get(p, "backfill_id");
    e->bf_id = json_is_integer(b) ? json_integer_value(b) : 0;
    b = json_object_get(p, "backfill_cycle_ms");
    e->bf_cycle_ms = json_is_integer(b) ? json_integer_value(b) : 0;
    b = json_object_get(p, "backfill_cycles");
    e->bf_cycles = json_is_integer(b) ? (int32_t)json_integer_value(b) : 0;
    json_t *why = json_object_get(p, "reason");
    if (json_is_string(why))
        snprintf(e->reason, sizeof e->reason, "%s", json_string_value(why));
    json_decref(p);
}

/* The event stream's subscriber (orr_watch.h) calls these on its thread. */
static void watch_on_event(void *cls, const Orrery__Halley__V1__Event *m)
{
    kp_sched *s = cls;
    kp_ev ev;
    ev_from_pb(m, &ev);
    pthread_mutex_lock(&s->qmu);
    if (s->qn == s->qcap) {
        s->qcap = s->qcap ? s->qcap * 2 : 1024;
        s->q = orr_xrealloc(s->q, s->qcap * sizeof *s->q);
    }
    s->q[s->qn++] = ev;
    s->last_event_id = ev.id;
    pthread_cond_signal(&s->qcv);
    pthread_mutex_unlock(&s->qmu);
}

/* The resume point expired: events were missed; start over from a rebuild. */
static void watch_on_resync(void *cls)
{
    kp_sched *s = cls;
    pthread_mutex_lock(&s->qmu);
    s->last_event_id = 0;
    s->need_rebuild = 1;
    pthread_mutex_unlock(&s->qmu);
}

orr_status kp__watch_start(kp_sched *s, orr_err *err)
{
    static const char *const kinds[] = {"instance.*", "task.*",     "data_unit.*",
                                        "stream.*",   "workflow.*", "executor.*",
                                        "quota.*",    "calendar.*", "alert_rule.*"};
    orr_watch_opts o = {
        .kinds = kinds, .nkinds = sizeof kinds / sizeof kinds[0], .name = "keplerd"};
    orr_watch_ops ops = {.on_event = watch_on_event, .on_resync = watch_on_resync};
    return orr_watch_start(s->cl, &o, &ops, s, &s->watch, err);
}

static void apply_event(kp_sched *s, const kp_ev *e)
{
    if (e->kind == EV_EXECUTOR || e->kind == EV_QUOTA || e->kind == EV_CALENDAR) {
        if (e->kind == EV_EXECUTOR)
            s->ovr_reload = 1;
        else if (e->kind == EV_QUOTA)
            s->quota_reload = 1;
        else
            s->cal_reload = 1;
        s->again = 1;
        return;
    }
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
        du_stream *st = kp__stream_find(s, e->stream, 0);
        if (st)
            st->state = DU_GRID_UNREAD; /* the bucket may have changed: read it again */
        s->du_dirty = 1;
        s->again = 1;
        return;
    }
    if (e->kind == EV_WORKFLOW) {
        s->paused_dirty = 1;
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
                orr_xrealloc(s->task_refresh, s->cap_task_refresh * sizeof *s->task_refresh);
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
            if (e->run_now)
                r->flags |= KP_I_RUN_NOW;
            if (e->ignore_upstreams)
                r->flags |= KP_I_NO_UPS;
            r->bf_id = e->bf_id;
            r->bf_cycle_ms = e->bf_cycle_ms;
            r->bf_cycles = e->bf_cycles;
            kp__alert_track(s, r);
        }
        kp__mark_task_dirty(s, e->task_id, 1);
        return;
    }
    if (e->kind == EV_INSTANCE_RUN) {
        kp_inst *r = kp_store_get(s->st, e->instance_id);
        if (!r) {
            kp__fetch_instance_id(s, e->instance_id, e->id);
            return;
        }
        if (e->id <= r->ev_id)
            return; /* a read after it shows it already */
        r->ev_id = e->id;
        r->flags &= (uint8_t) ~(KP_I_RUN_NOW | KP_I_NO_UPS);
        r->flags |= KP_I_DIRTY | KP_I_RUN_NOW | (e->ignore_upstreams ? KP_I_NO_UPS : 0);
        ORR_INFO("run now", "instance_id=%" PRId64 " ignore_upstreams=%d", r->id,
                 e->ignore_upstreams);
        kp__mark_task_dirty(s, r->task_id, 0);
        return;
    }
    if (e->kind != EV_INSTANCE_TRANSITION)
        return;
    kp_inst *r = kp_store_get(s->st, e->instance_id);
    if (!r) {
        /* unknown instance (evicted, or older than the cache): read it */
        kp__fetch_instance_id(s, e->instance_id, e->id);
        return;
    }
    if (e->id <= r->ev_id)
        return; /* already reflected (our own write, or a read after it) */
    if (r->state == e->from && e->to) {
        kp__set_state(s, r, e->to, e->to == KP_ST_DISPATCHED ? e->exec : NULL);
        if (e->attempt)
            r->attempt = e->attempt;
        r->since_ms = e->at_ms;
        r->ev_id = e->id;
        r->flags |= KP_I_DIRTY;
        kp__mark_task_dirty(s, r->task_id, 1);
    } else if (r->state == e->to && (!e->attempt || r->attempt == e->attempt)) {
        r->ev_id = e->id;
    } else {
        r->ev_id = e->id;
        r->flags |= KP_I_REFETCH;
        s->again = 1;
    }
}

void kp__apply_event(kp_sched *s, const kp_ev *e)
{
    apply_event(s, e);
    kp__alert_event(s, e);
}

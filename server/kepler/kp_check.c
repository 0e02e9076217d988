/*
 * kp_check.c - keplerd's dependency checks (design at the top of kp_sched.c).
 *
 * kp__check_deps decides for one waiting instance from the store alone:
 * upstream task dependencies (cycles mapped by kp_deps.h, verdicts from the
 * cached upstream instances) and data-unit dependencies (the stream's
 * bucket grid and the reconciled-unit cache of kp_du.h). What the store
 * does not know is asked for in the dep_ctx (DEP_FETCH) and read after the
 * pass by kp__run_fetches / kp__run_du_fetches, bounded per round; the
 * instance is checked again in a later round. A failed data-unit read
 * holds its dependents (DEP_WAIT) until DU_RETRY_MS later. An upstream
 * cycle that the upstream's business calendar skipped or moved away is
 * absent at once: it counts as met without waiting for the upstream's next
 * business day.
 */
#include "kp_sched_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kp_retry.h"
#include "orr_alloc.h"
#include "orr_log.h"

du_stream *kp__stream_find(kp_sched *s, const char *name, int create)
{
    for (size_t i = 0; i < s->n_streams; i++)
        if (strcmp(s->streams[i].name, name) == 0)
            return &s->streams[i];
    if (!create)
        return NULL;
    if (s->n_streams == s->cap_streams) {
        s->cap_streams = s->cap_streams ? s->cap_streams * 2 : 8;
        s->streams = orr_xrealloc(s->streams, s->cap_streams * sizeof *s->streams);
    }
    du_stream *st = &s->streams[s->n_streams++];
    memset(st, 0, sizeof *st);
    snprintf(st->name, sizeof st->name, "%s", name);
    return st;
}

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
static int observe(kp_sched *s, dep_ctx *c, const kp_task *u, size_t n)
{
    int need = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ms = c->times[i] * 1000;
        kp_inst *r = kp_store_by_key(s->st, u->id, ms);
        c->obs[i].retry_pending = 0;
        int64_t to;
        if (r) {
            c->obs[i].state = (kp_state)r->state;
            c->obs[i].retry_pending = kp_retry_wanted(&u->retry, (kp_state)r->state, r->attempt);
        } else if (u->has_cron && u->cal &&
                   orr_cal_classify(u->cal, u->cal_policy, c->times[i], &to) != ORR_CAL_KEPT) {
            /* the upstream's calendar skipped or moved this cycle: it never
             * gets an instance here, so it holds no one (docs/kepler.md) */
            c->obs[i].state = KP_ST_ABSENT;
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
static int check_du(kp_sched *s, dep_ctx *c, const kp_task *t, const kp_dep *dep, int64_t tsec,
                    int64_t now)
{
    du_stream *st = kp__stream_find(s, dep->stream, 1);
    if (st->state == DU_GRID_FAILED)
        return DEP_WAIT; /* kp__du_mark_tasks clears it at retry_at_ms; a re-check follows */
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
        return DEP_WAIT; /* re-checked when the back-off ends (kp__du_mark_tasks) */
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

int kp__check_deps(kp_sched *s, dep_ctx *c, const kp_task *t, const kp_inst *r, int64_t now)
{
    int64_t tsec = r->sched_ms / 1000;
    int result = DEP_MET;
    c->met_note[0] = '\0';
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
            if (!t->has_cron || orr_cycle_prev_fire(&t->cron, t->tz, tsec, &c->times[0]) != ORR_OK)
                continue;
            n = 1;
            u = t;
        } else {
            u = kp_index_get(s->ix, dep->upstream_id);
            if (!u)
                return DEP_WAIT; /* unresolved upstream: hold */
            if (orr_cycle_upstream(t->has_cron ? &t->cron : NULL, t->tz,
                                   u->has_cron ? &u->cron : NULL, u->tz, dep->cycle_same, tsec,
                                   c->times, KP_DEPS_MAX_CYCLES, &n) != ORR_OK)
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
        if (dep->kind != KP_DEP_WEAK && !c->met_note[0])
            for (size_t i = 0; i < n; i++)
                if (c->obs[i].state == KP_ST_ABSENT) {
                    snprintf(c->met_note, sizeof c->met_note,
                             "dependencies met (upstream %s had no run for this cycle: it did not "
                             "exist yet or skipped the cycle)",
                             u->name);
                    break;
                }
    }
    return result;
}

static const char *dep_kind_name(kp_dep_kind k)
{
    return k == KP_DEP_STRONG ? "strong"
           : k == KP_DEP_WEAK ? "weak"
           : k == KP_DEP_SELF ? "self"
                              : "data_unit";
}

/* The unmet cycles of one upstream dependency, as items of w. */
static void explain_upstream(kp_sched *s, const kp_dep *dep, const kp_task *u, const int64_t *times,
                             size_t n, int past, kp_why *w)
{
    char qn[2 * KP_NAME_MAX + 8];
    kp_why_q(qn, sizeof qn, u->name);
    for (size_t i = 0; i < n; i++) {
        int64_t ms = times[i] * 1000;
        kp_inst *x = kp_store_by_key(s->st, u->id, ms);
        kp_state st = x ? (kp_state)x->state : KP_ST_UNKNOWN;
        if (st == KP_ST_ABSENT)
            continue; /* never gets an instance: holds no one */
        int retry = x && kp_retry_wanted(&u->retry, st, x->attempt);
        if (dep->kind == KP_DEP_WEAK) {
            if (past || (kp_state_finished(st) && !retry))
                continue;
        } else if (st == KP_ST_SUCCESS || st == KP_ST_MARKED_SUCCESS) {
            continue;
        }
        const char *state;
        if (x && x->id > 0)
            state = kp_state_name(st);
        else if (!x && !(u->has_cron && ms > u->materialised_ms))
            state = "unknown"; /* not read yet: the check asks for it */
        else
            state = "not_created";
        char iid[32];
        if (x && x->id > 0)
            snprintf(iid, sizeof iid, "%" PRId64, x->id);
        else
            snprintf(iid, sizeof iid, "null");
        kp_why_item(w,
                    "\"kind\":\"upstream\",\"dependency\":\"%s\",\"task\":%s,\"task_id\":%" PRId64
                    ",\"schedule_time_ms\":%" PRId64 ",\"instance_id\":%s,\"state\":\"%s\"%s",
                    dep_kind_name(dep->kind), qn, u->id, ms, iid, state,
                    retry ? ",\"retry_pending\":true" : "");
    }
}

void kp__explain_deps(kp_sched *s, const kp_task *t, const kp_inst *r, int64_t now, kp_why *w)
{
    int64_t tsec = r->sched_ms / 1000;
    int64_t times[KP_DEPS_MAX_CYCLES];
    char q1[2 * KP_NAME_MAX + 8], q2[2 * KP_NAME_MAX + 8], q3[2 * KP_NAME_MAX + 8];
    int past = s->o->weak_deadline_ms > 0 && now > r->sched_ms + s->o->weak_deadline_ms;
    for (size_t d = 0; d < t->n_deps; d++) {
        const kp_dep *dep = &t->deps[d];
        size_t n = 0;
        const kp_task *u;
        if (dep->kind == KP_DEP_DATA_UNIT) {
            du_stream *st = kp__stream_find(s, dep->stream, 0);
            int64_t buckets[KP_DU_MAX_BUCKETS];
            size_t nb = 0;
            int unknown = 0;
            int64_t from = 0, to = 0;
            if (st && st->state == DU_GRID_OK &&
                kp_du_buckets(t->has_cron ? &t->cron : NULL, t->tz, &st->grid, tsec, buckets,
                              KP_DU_MAX_BUCKETS, &nb) == ORR_OK &&
                kp_du_met(s->du, dep->stream, dep->business, dep->interface, buckets, nb,
                          st->grid.size_s, &unknown, &from, &to))
                continue;
            kp_why_item(
                w, "\"kind\":\"data_unit\",\"stream\":%s,\"business\":%s,\"interface\":%s%s",
                kp_why_q(q1, sizeof q1, dep->stream), kp_why_q(q2, sizeof q2, dep->business),
                kp_why_q(q3, sizeof q3, dep->interface),
                st && st->state == DU_GRID_FAILED
                    ? ",\"note\":\"the stream cannot be read now; read again shortly\""
                    : "");
            continue;
        }
        if (dep->kind == KP_DEP_SELF) {
            if (!t->has_cron || orr_cycle_prev_fire(&t->cron, t->tz, tsec, &times[0]) != ORR_OK)
                continue;
            n = 1;
            u = t;
        } else {
            u = kp_index_get(s->ix, dep->upstream_id);
            if (!u) {
                kp_why_item(w, "\"kind\":\"upstream_unresolved\",\"dependency\":\"%s\",\"task\":%s",
                            dep_kind_name(dep->kind), kp_why_q(q1, sizeof q1, dep->task));
                continue;
            }
            if (orr_cycle_upstream(t->has_cron ? &t->cron : NULL, t->tz,
                                   u->has_cron ? &u->cron : NULL, u->tz, dep->cycle_same, tsec,
                                   times, KP_DEPS_MAX_CYCLES, &n) != ORR_OK) {
                kp_why_item(w,
                            "\"kind\":\"upstream\",\"dependency\":\"%s\",\"task\":%s,\"note\":"
                            "\"its cycles cannot be mapped to this one\"",
                            dep_kind_name(dep->kind), kp_why_q(q1, sizeof q1, u->name));
                continue;
            }
        }
        explain_upstream(s, dep, u, times, n, past, w);
    }
}

static void absent_cb(kp_sched *s, const pb_instance *in, void *ctx)
{
    (void)ctx;
    if (!kp_store_get(s->st, in->id))
        kp__adopt(s, in, 0);
}

/* Read the requested ranges; cycles that halleyd has no instance for (and
 * whose fire time is materialised) become absent markers. */
void kp__run_fetches(kp_sched *s, dep_ctx *c)
{
    for (size_t i = 0; i < c->n_fetch; i++) {
        fetch_req *f = &c->fetch[i];
        if (kp__list_instances(s, f->task_id, NULL, 0, f->from_ms, f->to_ms, absent_cb, NULL) !=
            ORR_OK)
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
                m->since_ms = kp__wall_ms();
            }
            ft = next;
        }
    }
    c->n_fetch = 0;
    s->again = 1;
}

/* Read the grids of streams and the reconciled units asked for by the pass.
 * A failure holds the instances (DEP_WAIT) until a retry time. */
void kp__run_du_fetches(kp_sched *s, dep_ctx *c, int64_t now)
{
    for (size_t i = 0; i < c->n_grid_read; i++) {
        du_stream *st = kp__stream_find(s, c->grid_read[i], 1);
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
void kp__du_mark_tasks(kp_sched *s, int64_t now)
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

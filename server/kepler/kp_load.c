/*
 * kp_load.c - keplerd's reads from halleyd (design at the top of kp_sched.c):
 * instance listings (the rebuild, the sweep, the ranges dependency checks
 * ask for), single-instance re-reads, tasks (all active ones at a rebuild,
 * the ones events named each round), indexed with the time their
 * materialisation starts from, and the tasks paused workflows hold (at a
 * rebuild and after every workflow event).
 */
#include "kp_sched_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_materialise.h"
#include "orr_alloc.h"

#include "orr_log.h"

/* Page through ListInstances. ORR_OK or the RPC's failure. */
orr_status kp__list_instances(kp_sched *s, int64_t task_id, const int *states, size_t n_states,
                              int64_t from_ms, int64_t to_ms, kp__inst_fn fn, void *ctx)
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

static void adopt_cb(kp_sched *s, const pb_instance *in, void *ctx)
{
    kp_inst *r = kp_store_get(s->st, in->id);
    int64_t cutoff = *(int64_t *)ctx;
    /* a record changed by an event after the listing began is newer: keep it */
    if (r && r->ev_id > cutoff) {
        r->flags |= KP_I_SEEN;
        return;
    }
    r = kp__adopt(s, in, 0);
    r->flags |= KP_I_SEEN;
}

orr_status kp__load_live_instances(kp_sched *s)
{
    static const int live[] = {KP_ST_WAITING, KP_ST_READY, KP_ST_DISPATCHED, KP_ST_RUNNING};
    static const int done[] = {KP_ST_FAILED, KP_ST_TIMED_OUT};
    pthread_mutex_lock(&s->qmu);
    int64_t cutoff = s->last_event_id;
    pthread_mutex_unlock(&s->qmu);
    orr_status rc = kp__list_instances(s, 0, live, 4, 0, 0, adopt_cb, &cutoff);
    if (rc == ORR_OK)
        rc = kp__list_instances(s, 0, done, 2, kp__wall_ms() - s->o->horizon_ms, 0, adopt_cb,
                                &cutoff);
    return rc;
}

orr_status kp__refetch_one(kp_sched *s, kp_inst *r)
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
    kp__adopt(s, (pb_instance *)out, r->ev_id);
    protobuf_c_message_free_unpacked(out, NULL);
    return ORR_OK;
}

orr_status kp__fetch_instance_id(kp_sched *s, int64_t id, int64_t ev_id)
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
    kp__adopt(s, (pb_instance *)out, ev_id);
    protobuf_c_message_free_unpacked(out, NULL);
    return ORR_OK;
}

/* Where a task's materialisation starts when this leader first sees it. */
static void task_start(kp_sched *s, kp_task *t, int64_t watermark, int is_new)
{
    int64_t start = watermark;
    if (is_new || watermark <= 0)
        start = t->created_at_ms > start ? t->created_at_ms : start;
    if (start <= 0)
        start = kp__wall_ms();
    t->materialised_ms = start;
    int64_t next = kp_task_next_fire_ms(t, start);
    t->next_fire_ms = next;
    if (next < s->next_materialise_ms)
        s->next_materialise_ms = next;
}

/* Parse and index one Task message; returns the stored task or NULL. */
static kp_task *index_task(kp_sched *s, const Orrery__Halley__V1__Task *m, int64_t watermark,
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
    st->team = kp__team_ix(s, m->team);
    st->cal = kp__calendar(s, st->calendar);
    if (!existed)
        task_start(s, st, watermark, is_new);
    else if (st->has_cron) {
        st->next_fire_ms = kp_task_next_fire_ms(st, st->materialised_ms);
        if (st->next_fire_ms < s->next_materialise_ms)
            s->next_materialise_ms = st->next_fire_ms;
    } else {
        st->next_fire_ms = INT64_MAX;
    }
    st->deps_dirty = 1;
    return st;
}

static void relink(kp_sched *s)
{
    char cyc[512] = "";
    size_t n = kp_index_link(s->ix, cyc, sizeof cyc);
    if (n)
        ORR_ERROR("dependency cycle: tasks on it are not scheduled", "tasks=%zu cycle=%s", n,
                  orr_log_q(cyc));
}

orr_status kp__load_tasks(kp_sched *s, int64_t watermark)
{
    char token[64] = "";
    /* before the tasks that name them; unreadable, they are read again
     * next round and their tasks have no fire time until then */
    if (kp__load_calendars(s) != ORR_OK)
        s->cal_reload = 1;
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

void kp__refresh_tasks(kp_sched *s)
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
            kp_task *kt = index_task(s, t, kp__wall_ms(), 1);
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

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int kp__task_paused(const kp_sched *s, int64_t id)
{
    return s->n_paused && bsearch(&id, s->paused, s->n_paused, sizeof id, cmp_i64) != NULL;
}

int kp__task_held(const kp_sched *s, int64_t id)
{
    return s->paused_dirty || kp__task_paused(s, id);
}

orr_status kp__load_paused(kp_sched *s)
{
    Orrery__Halley__V1__ListPausedTasksRequest rq =
        ORRERY__HALLEY__V1__LIST_PAUSED_TASKS_REQUEST__INIT;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(s->cl, "ListPausedTasks", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("paused task listing failed", "error=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        s->paused_dirty = 1; /* read again next round; until then nothing is released */
        return rc;
    }
    Orrery__Halley__V1__ListPausedTasksResponse *r = (void *)out;
    size_t n = r->n_tasks;
    int64_t *next = orr_xrealloc(NULL, (n ? n : 1) * sizeof *next);
    for (size_t i = 0; i < n; i++)
        next[i] = r->tasks[i]->task_id;
    qsort(next, n, sizeof *next, cmp_i64);
    protobuf_c_message_free_unpacked(out, NULL);
    /* released tasks: their waiting instances to a check, their fire times due */
    for (size_t i = 0; i < s->n_paused; i++) {
        if (bsearch(&s->paused[i], next, n, sizeof *next, cmp_i64))
            continue;
        kp__mark_task_dirty(s, s->paused[i], 0);
        kp_task *t = kp_index_get(s->ix, s->paused[i]);
        if (t && t->next_fire_ms < s->next_materialise_ms)
            s->next_materialise_ms = t->next_fire_ms;
        ORR_INFO("task resumed", "task_id=%" PRId64, s->paused[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (!kp__task_paused(s, next[i]))
            ORR_INFO("task paused by its workflow", "task_id=%" PRId64, next[i]);
    free(s->paused);
    s->paused = next;
    s->n_paused = n;
    s->cap_paused = n ? n : 1;
    s->paused_dirty = 0;
    return ORR_OK;
}
/* ------------------------------------------------------------ resource limits */

int kp__team_ix(kp_sched *s, const char *name)
{
    if (!name || !*name)
        return 0;
    for (size_t i = 0; i < s->n_teams; i++)
        if (strcmp(s->teams[i].name, name) == 0)
            return (int)i + 1;
    if (s->n_teams == s->cap_teams) {
        s->cap_teams = s->cap_teams ? s->cap_teams * 2 : 16;
        s->teams = orr_xrealloc(s->teams, s->cap_teams * sizeof *s->teams);
    }
    kp_team *t = &s->teams[s->n_teams++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    return (int)s->n_teams;
}

static void ovr_clear(kp_sched *s)
{
    for (size_t i = 0; i < s->n_ovr; i++) {
        for (size_t j = 0; j < s->ovr[i].n_labels; j++) {
            free(s->ovr[i].labels[j].key);
            free(s->ovr[i].labels[j].value);
        }
        free(s->ovr[i].labels);
    }
    free(s->ovr);
    s->ovr = NULL;
    s->n_ovr = 0;
}

static orr_status load_executor_settings(kp_sched *s)
{
    Orrery__Halley__V1__ListExecutorsRequest rq = ORRERY__HALLEY__V1__LIST_EXECUTORS_REQUEST__INIT;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(s->cl, "ListExecutors", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("executor settings not readable", "error=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return rc;
    }
    const Orrery__Halley__V1__ListExecutorsResponse *r = (const void *)out;
    ovr_clear(s);
    s->ovr = orr_xcalloc(r->n_executors ? r->n_executors : 1, sizeof *s->ovr);
    for (size_t i = 0; i < r->n_executors; i++) {
        const Orrery__Halley__V1__Executor *x = r->executors[i];
        if (!x->drained && !x->has_slots_override && !x->labels_override_json[0])
            continue;
        kp_exec_ovr *o = &s->ovr[s->n_ovr++];
        snprintf(o->id, sizeof o->id, "%s", x->id);
        o->drained = x->drained;
        o->slots = x->has_slots_override ? x->slots_override : -1;
        json_t *lab =
            x->labels_override_json[0] ? json_loads(x->labels_override_json, 0, NULL) : NULL;
        if (json_is_object(lab)) {
            o->has_labels = 1;
            o->labels = orr_xcalloc(json_object_size(lab) + 1, sizeof *o->labels);
            const char *k;
            json_t *v;
            json_object_foreach(lab, k, v)
            {
                if (!json_is_string(v))
                    continue;
                o->labels[o->n_labels].key = orr_xstrdup(k);
                o->labels[o->n_labels].value = orr_xstrdup(json_string_value(v));
                o->n_labels++;
            }
        }
        json_decref(lab);
        ORR_INFO("executor settings", "executor=%s drained=%d slots=%d labels=%s", orr_log_q(o->id),
                 o->drained, o->slots,
                 orr_log_q(o->has_labels ? x->labels_override_json : "(its own)"));
    }
    protobuf_c_message_free_unpacked(out, NULL);
    return ORR_OK;
}

static orr_status load_quotas(kp_sched *s)
{
    Orrery__Halley__V1__ListTeamQuotasRequest rq =
        ORRERY__HALLEY__V1__LIST_TEAM_QUOTAS_REQUEST__INIT;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(s->cl, "ListTeamQuotas", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("team quotas not readable", "error=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return rc;
    }
    const Orrery__Halley__V1__ListTeamQuotasResponse *r = (const void *)out;
    for (size_t i = 0; i < s->n_teams; i++)
        s->teams[i].max_running = s->teams[i].max_slots = 0;
    for (size_t i = 0; i < r->n_quotas; i++) {
        kp_team *t = &s->teams[kp__team_ix(s, r->quotas[i]->team) - 1];
        t->max_running = r->quotas[i]->max_running;
        t->max_slots = r->quotas[i]->max_slots;
        ORR_INFO("team quota", "team=%s max_running=%d max_slots=%d", orr_log_q(t->name),
                 t->max_running, t->max_slots);
    }
    protobuf_c_message_free_unpacked(out, NULL);
    return ORR_OK;
}

orr_status kp__load_resources(kp_sched *s, int all)
{
    orr_status rc = ORR_OK;
    if (all || s->ovr_reload) {
        if ((rc = load_executor_settings(s)) != ORR_OK)
            return rc;
        s->ovr_reload = 0;
        s->ex_version = s->ex_version ? UINT64_MAX : 0; /* apply them to the next snapshot */
    }
    if (all || s->quota_reload) {
        if ((rc = load_quotas(s)) != ORR_OK)
            return rc;
        s->quota_reload = 0;
    }
    if (s->cal_reload) { /* at start, kp__load_tasks read them */
        if ((rc = kp__load_calendars(s)) != ORR_OK)
            return rc;
        s->cal_reload = 0;
    }
    s->again = 1;
    return ORR_OK;
}

/* ------------------------------------------------------------ calendars */

static void calendars_clear(kp_sched *s)
{
    for (size_t i = 0; i < s->n_cals; i++) {
        free(s->cals[i].name);
        orr_cal_free(s->cals[i].cal);
    }
    free(s->cals);
    s->cals = NULL;
    s->n_cals = 0;
}

const orr_cal *kp__calendar(kp_sched *s, const char *name)
{
    if (!name[0])
        return NULL;
    for (size_t i = 0; i < s->n_cals; i++)
        if (strcmp(s->cals[i].name, name) == 0)
            return s->cals[i].cal;
    return NULL;
}

orr_status kp__load_calendars(kp_sched *s)
{
    Orrery__Halley__V1__ListCalendarsRequest rq = ORRERY__HALLEY__V1__LIST_CALENDARS_REQUEST__INIT;
    rq.with_days = 1;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(s->cl, "ListCalendars", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("calendars not readable", "error=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return rc;
    }
    const Orrery__Halley__V1__ListCalendarsResponse *r = (const void *)out;
    calendars_clear(s);
    s->cals = orr_xcalloc(r->n_calendars ? r->n_calendars : 1, sizeof *s->cals);
    for (size_t i = 0; i < r->n_calendars; i++) {
        const Orrery__Halley__V1__Calendar *c = r->calendars[i];
        unsigned mask = 0;
        for (size_t k = 0; k < c->n_weekdays; k++)
            if (c->weekdays[k] >= 1 && c->weekdays[k] <= 7)
                mask |= 1u << c->weekdays[k];
        orr_cal *cal;
        if (orr_cal_new(c->timezone, mask, &cal, &err) != ORR_OK) {
            ORR_ERROR("calendar not usable", "calendar=%s error=%s", orr_log_q(c->name),
                      orr_log_q(err.msg));
            continue;
        }
        for (size_t k = 0; k < c->n_days; k++) {
            int64_t day;
            if (orr_cal_parse_date(c->days[k]->day, &day, &err) == ORR_OK)
                (void)orr_cal_set_day(cal, day,
                                      strcmp(c->days[k]->kind, "included") == 0 ? ORR_CAL_INCLUDED
                                                                                : ORR_CAL_EXCLUDED,
                                      &err);
        }
        s->cals[s->n_cals].name = orr_xstrdup(c->name);
        s->cals[s->n_cals].cal = cal;
        s->n_cals++;
    }
    ORR_INFO("calendars read", "count=%zu", s->n_cals);
    protobuf_c_message_free_unpacked(out, NULL);
    /* tasks point at the new ones; their next fire times follow them */
    for (size_t i = 0; i < kp_index_count(s->ix); i++) {
        kp_task *t = kp_index_at(s->ix, i);
        if (!t->calendar[0])
            continue;
        t->cal = kp__calendar(s, t->calendar);
        if (!t->cal)
            ORR_WARN("task calendar unknown: no fire times", "task=%s calendar=%s",
                     orr_log_q(t->name), orr_log_q(t->calendar));
        t->next_fire_ms = kp_task_next_fire_ms(t, t->materialised_ms);
        if (t->next_fire_ms < s->next_materialise_ms)
            s->next_materialise_ms = t->next_fire_ms;
    }
    return ORR_OK;
}

void kp__resources_free(kp_sched *s)
{
    calendars_clear(s);
    ovr_clear(s);
    free(s->teams);
    s->teams = NULL;
    s->n_teams = s->cap_teams = 0;
}

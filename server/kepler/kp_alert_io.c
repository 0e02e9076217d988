/*
 * kp_alert_io.c - keplerd's alert evaluation: what the leader sees becomes
 * RaiseAlert calls to halleyd (which groups, silences and queues the
 * messages; the sender delivers them).
 *
 * What raises an alert, all on the scheduler thread while this keplerd
 * leads (kp_alert.h has the rules, their matching and the dedup keys):
 *   - instance transitions of the event stream (kp__alert_event): a final
 *     failure (failed, or timed out with no retry left), each failed attempt
 *     that will be retried (retried; failed too for rules with
 *     each_attempt), timed_out, killed, and recovered (a success after a
 *     failed attempt or after the task's previous run failed). The stream is
 *     halleyd's record of every transition, whoever wrote it (an executor,
 *     this scheduler, an operator), so nothing is inferred from the cache;
 *   - deadlines (the task spec's start_by / finish_by): every instance the
 *     store takes in is armed on a timer heap (kp__alert_track) with the
 *     instants its deadlines resolve to; each round pops the due ones and
 *     raises deadline_start when the instance has not started (waiting,
 *     ready, dispatched or suspended on its first attempt) and
 *     deadline_finish when it has not succeeded. The alert goes out when the
 *     deadline passes, whatever the run does afterwards;
 *   - an attempt's process statistics (the stream's instance.stats) with
 *     more dirty_rows than a rule's params.dirty_rows;
 *   - executors whose ZooKeeper node went away (kp__alert_exec_gone);
 *   - pools that denied tokens to queued work for longer than a rule's
 *     pool_starved_minutes (kp__alert_pool, checked every round);
 *   - data units of the streams a unit_late / unit_unreconciled rule
 *     matches (units_check): at each instant a bucket's deadline (its end +
 *     the rule's unit_deadline_minutes) passes, and at least every
 *     UNIT_RECHECK_MS, the active streams (ListSortStreams) and the units of
 *     the buckets whose deadline passed within UNIT_WINDOW_MS
 *     (ListDataUnits) are read; every expected unit (the stream's business
 *     with each declared interface, and every (business, interface) listed
 *     in that time) from the stream's first listed bucket on is judged:
 *     nothing reported raises unit_late, reported and not reconciled
 *     unit_unreconciled. Each (rule, key) is raised once (the seen keys,
 *     read back at a takeover like the deadlines').
 *
 * Rules are read with ListAlertRules (enabled ones) when leadership begins
 * and again after an alert_rule.* event; workflow membership (ListWorkflows)
 * when leadership begins and after workflow.* events. A keplerd that takes
 * over reads, before it pops any deadline, the deadline alerts of the last
 * horizon (ListAlerts) and never raises those (rule, key) pairs again: a
 * deadline the old leader alerted is not alerted twice. Instance events are
 * evaluated by whichever keplerd leads when they arrive; a standby keeps
 * those that may raise an alert from the last REPLAY_MS (at most RING_MAX)
 * and, once it leads, evaluates them again against the alerts of that
 * time (ListAlerts): a (rule, key) whose alert was counted at or after the
 * event's time is skipped, so the events the old leader had raised are not
 * raised twice and those it had not (it died first) are.
 *
 * RaiseAlert never blocks the round: raises go to a bounded queue
 * (QUEUE_MAX; beyond it they are dropped and counted, with a warning) that
 * one thread sends, only while the leadership epoch the raise was decided
 * in is current. A failed call is tried again (RAISE_TRIES, back-off);
 * halleyd's grouping by (rule, dedup key) makes a repeat harmless.
 */
#include "kp_sched_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kp_alert.h"
#include "kp_retry.h"
#include "orr_alloc.h"
#include "orr_log.h"

#define QUEUE_MAX       10000 /* raises waiting for the sender at most */
#define RAISE_TRIES     3     /* RaiseAlert attempts of one raise */
#define LOAD_RETRY_MS   10000 /* a failed rule/workflow/history read is retried after this */
#define MATCH_MAX       64    /* rules one event raises at most */
#define POOL_IDLE_MS    5000  /* a pool not denied for this long has no starved work */
#define SEEN_WINDOW_MS  (8LL * 86400 * 1000) /* deadline alerts read back at a takeover */
#define RING_MAX        4096                 /* events a standby keeps for a takeover */
#define REPLAY_MS       60000                /* ... from this far back */
#define UNIT_WINDOW_MS  (86400LL * 1000)     /* unit deadlines looked at: those of the last day */
#define UNIT_RECHECK_MS (15LL * 60000)       /* new streams and units are seen within this */
#define UNIT_PAIRS_MAX  256                  /* (business, interface) pairs of one stream */
#define ARM_START       1
#define ARM_FINISH      2

typedef struct raise_item {
    uint64_t epoch;
    Orrery__Halley__V1__RaiseAlertRequest rq;
    char *key, *event, *scope_kind, *scope, *summary, *details;
} raise_item;

typedef struct wf_list {
    size_t n;
    char **names;
} wf_list;

typedef struct pool_state {
    char name[KP_NAME_MAX];
    int64_t since_ms, last_denied_ms, task_id;
    uint32_t alerted; /* rules (by index < 32) already raised for this starvation */
} pool_state;

typedef struct kp_alerter kp_alerter;

struct kp_alerter {
    kp_alert_rules *rules;
    int loaded; /* rules, workflows and seen keys read for this epoch */
    int rules_dirty, wf_dirty;
    int64_t retry_at_ms;
    kp_map wf;     /* task id -> wf_list * */
    kp_map seen;   /* key2(rule id, hash(dedup key)) -> (void *)1 */
    kp_map armed;  /* instance id -> ARM_* bits */
    kp_map failed; /* task id -> (void *)1: its last final outcome was a failure */
    kp_dl_heap heap;
    /* a standby's recent events (ring) and, while they are replayed, the
     * last_at of every alert of their time: key2(rule, hash(key)) -> ms */
    kp_ev *ring;
    size_t ring_head, ring_n;
    kp_map *replay_last;
    pool_state *pools;
    size_t n_pools, cap_pools;
    int64_t units_next_ms; /* the next data-unit check (0: at once) */
    /* the sender */
    pthread_t th;
    int th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    raise_item **q;
    size_t q_head, q_n;
    int stop;
    uint64_t dropped, raised;
};

/* ------------------------------------------------------------ helpers */

static int64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return (int64_t)(h ? h : 1);
}

static int64_t seen_key(int64_t rule_id, const char *key)
{
    return kp_map_key2(rule_id ? rule_id : 1, hash_str(key));
}

static const char *team_name(kp_sched *s, const kp_task *t)
{
    if (t && t->team > 0 && (size_t)t->team <= s->n_teams)
        return s->teams[t->team - 1].name;
    return NULL;
}

static void fmt_time(int64_t ms, char *buf, size_t n)
{
    orr_tz_format_utc(ms / 1000, buf, n);
}

/* ------------------------------------------------------------ the sender */

static void item_free(raise_item *it)
{
    if (!it)
        return;
    free(it->key);
    free(it->event);
    free(it->scope_kind);
    free(it->scope);
    free(it->summary);
    free(it->details);
    free(it);
}

static void *sender_main(void *arg)
{
    kp_sched *s = arg;
    kp_alerter *a = s->al;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && a->q_n == 0)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->stop)
            break;
        raise_item *it = a->q[a->q_head];
        a->q_head = (a->q_head + 1) % QUEUE_MAX;
        a->q_n--;
        pthread_mutex_unlock(&a->mu);
        for (int tries = 0; tries < RAISE_TRIES; tries++) {
            pthread_mutex_lock(&a->mu);
            int stop = a->stop;
            pthread_mutex_unlock(&a->mu);
            if (stop)
                break; /* a clean stop: a standby kept the events and decides them */
            if (kp_elect_leader_epoch(s->el) != it->epoch)
                break; /* decided by a leadership that is over: the next leader decides */
            ProtobufCMessage *out = NULL;
            orr_err err;
            orr_status rc =
                orr_rpc_call_unary(s->cl, "RaiseAlert", &it->rq.base, &out, RPC_TIMEOUT_MS, &err);
            if (rc == ORR_OK) {
                Orrery__Halley__V1__RaiseAlertResponse *r = (void *)out;
                ORR_INFO("alert raised",
                         "rule_id=%" PRId64 " event=%s key=%s alert_id=%" PRId64
                         " created=%d silenced=%d count=%d",
                         it->rq.rule_id, it->event, orr_log_q(it->key), r->alert_id, r->created,
                         r->silenced, r->count);
                protobuf_c_message_free_unpacked(out, NULL);
                pthread_mutex_lock(&a->mu);
                a->raised++;
                pthread_mutex_unlock(&a->mu);
                break;
            }
            char buf[600];
            ORR_WARN("alert raise failed", "rule_id=%" PRId64 " key=%s try=%d error=%s",
                     it->rq.rule_id, orr_log_q(it->key), tries + 1,
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            if (rc == ORR_EINVAL || rc == ORR_ENOTFOUND)
                break; /* the rule went away, or halleyd refuses it: no use repeating */
            struct timespec d = {0, (long)(tries + 1) * 300 * 1000 * 1000};
            nanosleep(&d, NULL);
        }
        item_free(it);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Queue one raise; never blocks on halleyd. */
static void enqueue(kp_sched *s, const kp_alert_rule *r, int ev, const char *key, const char *scope,
                    int64_t task_id, int64_t instance_id, const char *summary, json_t *details,
                    int64_t at_ms)
{
    kp_alerter *a = s->al;
    if (a->replay_last) { /* a takeover's replay: was it counted already? */
        intptr_t last = (intptr_t)kp_map_get(a->replay_last, seen_key(r->id, key));
        if (last && last >= at_ms) {
            ORR_INFO("alert raised by the previous leader", "rule_id=%" PRId64 " key=%s", r->id,
                     orr_log_q(key));
            return;
        }
    }
    raise_item *it = orr_xcalloc(1, sizeof *it);
    Orrery__Halley__V1__RaiseAlertRequest init = ORRERY__HALLEY__V1__RAISE_ALERT_REQUEST__INIT;
    it->rq = init;
    it->epoch = s->epoch;
    it->key = orr_xstrdup(key);
    it->event = orr_xstrdup(kp_alert_event_name(ev));
    it->scope_kind = orr_xstrdup(kp_alert_scope_name(r->scope_kind));
    it->scope = orr_xstrdup(scope ? scope : r->scope);
    it->summary = orr_xstrdup(summary);
    char *d = details ? json_dumps(details, JSON_COMPACT) : NULL;
    it->details = orr_xstrdup(d ? d : "{}");
    free(d);
    it->rq.rule_id = r->id;
    it->rq.event = it->event;
    it->rq.dedup_key = it->key;
    it->rq.scope_kind = it->scope_kind;
    it->rq.scope = it->scope;
    it->rq.task_id = task_id;
    it->rq.instance_id = instance_id;
    it->rq.summary = it->summary;
    it->rq.details_json = it->details;
    it->rq.at_ms = at_ms;
    pthread_mutex_lock(&a->mu);
    if (a->q_n == QUEUE_MAX) {
        a->dropped++;
        uint64_t dropped = a->dropped;
        pthread_mutex_unlock(&a->mu);
        if ((dropped & (dropped - 1)) == 0) /* 1, 2, 4, ...: the log stays readable */
            ORR_WARN("alert queue full: raise dropped", "key=%s dropped=%" PRIu64, orr_log_q(key),
                     dropped);
        item_free(it);
        return;
    }
    a->q[(a->q_head + a->q_n) % QUEUE_MAX] = it;
    a->q_n++;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

void kp__alert_start(kp_sched *s)
{
    kp_alerter *a = orr_xcalloc(1, sizeof *a);
    a->rules = kp_alert_rules_create();
    a->q = orr_xcalloc(QUEUE_MAX, sizeof *a->q);
    a->ring = orr_xcalloc(RING_MAX, sizeof *a->ring);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    s->al = a;
    if (pthread_create(&a->th, NULL, sender_main, s) == 0)
        a->th_started = 1;
    else
        ORR_ERROR("alert sender thread did not start", "alerts=%s", "off");
}

static void wf_free(kp_alerter *a)
{
    for (size_t i = 0; i < a->wf.cap; i++) {
        wf_list *l = a->wf.slots && a->wf.slots[i].key ? a->wf.slots[i].val : NULL;
        if (!l)
            continue;
        for (size_t j = 0; j < l->n; j++)
            free(l->names[j]);
        free(l->names);
        free(l);
    }
    kp_map_free(&a->wf);
    memset(&a->wf, 0, sizeof a->wf);
}

void kp__alert_drop(kp_sched *s)
{
    kp_alerter *a = s->al;
    if (!a)
        return;
    kp_alert_rules_clear(a->rules);
    wf_free(a);
    kp_map_free(&a->seen);
    memset(&a->seen, 0, sizeof a->seen);
    kp_map_free(&a->armed);
    memset(&a->armed, 0, sizeof a->armed);
    kp_map_free(&a->failed);
    memset(&a->failed, 0, sizeof a->failed);
    kp_dl_clear(&a->heap);
    a->n_pools = 0;
    a->units_next_ms = 0;
    a->loaded = 0;
    a->retry_at_ms = 0;
    /* queued raises of the old epoch are skipped by the sender */
}

void kp__alert_stop(kp_sched *s)
{
    kp_alerter *a = s->al;
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->th_started)
        pthread_join(a->th, NULL);
    kp__alert_drop(s);
    for (size_t i = 0; i < a->q_n; i++)
        item_free(a->q[(a->q_head + i) % QUEUE_MAX]);
    free(a->q);
    free(a->ring);
    kp_alert_rules_destroy(a->rules);
    kp_dl_free(&a->heap);
    free(a->pools);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
    s->al = NULL;
}

/* ------------------------------------------------------------ reading rules, workflows, history */

static orr_status load_rules(kp_sched *s)
{
    Orrery__Halley__V1__ListAlertRulesRequest rq =
        ORRERY__HALLEY__V1__LIST_ALERT_RULES_REQUEST__INIT;
    rq.enabled_only = 1;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(s->cl, "ListAlertRules", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("alert rules not read", "error=%s", orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return rc;
    }
    Orrery__Halley__V1__ListAlertRulesResponse *r = (void *)out;
    kp_alert_rules_clear(s->al->rules);
    for (size_t i = 0; i < r->n_rules; i++) {
        const Orrery__Halley__V1__AlertRule *x = r->rules[i];
        if (!x->enabled)
            continue;
        orr_err e;
        if (kp_alert_rules_add(s->al->rules, x->id, x->name, x->team, x->scope_kind, x->scope,
                               x->severity, (const char *const *)x->events, x->n_events,
                               x->params_json, &e) != ORR_OK)
            ORR_WARN("alert rule skipped", "rule_id=%" PRId64 " field=%s error=%s", x->id,
                     orr_log_q(e.field), orr_log_q(e.msg));
    }
    ORR_INFO("alert rules read", "rules=%zu", kp_alert_rules_count(s->al->rules));
    protobuf_c_message_free_unpacked(out, NULL);
    s->al->rules_dirty = 0;
    s->al->units_next_ms = 0; /* the data units are judged under the new rules */
    return ORR_OK;
}

static orr_status load_workflows(kp_sched *s)
{
    Orrery__Halley__V1__ListWorkflowsRequest rq = ORRERY__HALLEY__V1__LIST_WORKFLOWS_REQUEST__INIT;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(s->cl, "ListWorkflows", &rq.base, &out, RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("workflows not read for alerts", "error=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return rc;
    }
    Orrery__Halley__V1__ListWorkflowsResponse *r = (void *)out;
    kp_alerter *a = s->al;
    wf_free(a);
    for (size_t i = 0; i < r->n_workflows; i++) {
        const Orrery__Halley__V1__Workflow *w = r->workflows[i];
        for (size_t j = 0; j < w->n_task_ids; j++) {
            if (!w->task_ids[j])
                continue;
            wf_list *l = kp_map_get(&a->wf, w->task_ids[j]);
            if (!l) {
                l = orr_xcalloc(1, sizeof *l);
                kp_map_put(&a->wf, w->task_ids[j], l);
            }
            l->names = orr_xrealloc(l->names, (l->n + 1) * sizeof *l->names);
            l->names[l->n++] = orr_xstrdup(w->name);
        }
    }
    protobuf_c_message_free_unpacked(out, NULL);
    a->wf_dirty = 0;
    return ORR_OK;
}

/* Every alert of halleyd's history since since_ms (of one event, or of all
 * when event is NULL), page by page, handed to fn. */
static orr_status list_alerts(kp_sched *s, const char *event, int64_t since_ms,
                              void (*fn)(void *ctx, const Orrery__Halley__V1__Alert *al), void *ctx)
{
    char token[256] = "";
    for (;;) {
        Orrery__Halley__V1__ListAlertsRequest rq = ORRERY__HALLEY__V1__LIST_ALERTS_REQUEST__INIT;
        if (event)
            rq.event = (char *)event;
        rq.since_ms = since_ms;
        rq.page_size = 500;
        rq.page_token = token;
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "ListAlerts", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc != ORR_OK) {
            char buf[600];
            ORR_WARN("alert history not read", "error=%s",
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            return rc;
        }
        Orrery__Halley__V1__ListAlertsResponse *r = (void *)out;
        for (size_t i = 0; i < r->n_alerts; i++)
            fn(ctx, r->alerts[i]);
        int more = r->next_page_token && *r->next_page_token && r->n_alerts > 0;
        if (more)
            snprintf(token, sizeof token, "%s", r->next_page_token);
        protobuf_c_message_free_unpacked(out, NULL);
        if (!more)
            return ORR_OK;
    }
}

static void mark_seen(void *ctx, const Orrery__Halley__V1__Alert *al)
{
    kp_map_put(ctx, seen_key(al->rule_id, al->dedup_key), (void *)1);
}

/* The deadline alerts raised within SEEN_WINDOW_MS: not raised again. */
static orr_status load_seen(kp_sched *s, int64_t now)
{
    static const char *const events[] = {"deadline_start", "deadline_finish", "unit_late",
                                         "unit_unreconciled"};
    for (size_t e = 0; e < 4; e++) {
        orr_status rc = list_alerts(s, events[e], now - SEEN_WINDOW_MS, mark_seen, &s->al->seen);
        if (rc != ORR_OK)
            return rc;
    }
    ORR_INFO("alert history read", "deadline_alerts=%zu", s->al->seen.len);
    return ORR_OK;
}

/* ------------------------------------------------------------ subjects and raising */

typedef struct subject_buf {
    kp_alert_subject sub;
    const char *wfs[32];
} subject_buf;

static void task_subject(kp_sched *s, const kp_task *t, subject_buf *b)
{
    memset(b, 0, sizeof *b);
    b->sub.task = t ? t->name : NULL;
    b->sub.team = team_name(s, t);
    wf_list *l = t ? kp_map_get(&s->al->wf, t->id) : NULL;
    if (l) {
        size_t n = l->n < 32 ? l->n : 32;
        for (size_t i = 0; i < n; i++)
            b->wfs[i] = l->names[i];
        b->sub.workflows = b->wfs;
        b->sub.n_workflows = n;
    }
}

/* The name a rule matched the subject by (the key and the alert's scope). */
static const char *matched_name(const kp_alert_rule *r, const kp_alert_subject *sub)
{
    switch (r->scope_kind) {
    case KP_AS_WORKFLOW:
        if (strcmp(r->scope, "*") != 0)
            return r->scope;
        return sub->n_workflows ? sub->workflows[0] : NULL;
    case KP_AS_TEAM:
        return sub->team;
    case KP_AS_EXECUTOR:
        return sub->executor;
    case KP_AS_STREAM:
        return sub->stream;
    default:
        return sub->task;
    }
}

/* Raise ev for every rule matching sub. dedup: skip (rule, key) pairs
 * already raised (deadlines) and remember the new ones; *skipped counts
 * those (may be NULL). Returns the number of raises queued. */
static size_t raise_for(kp_sched *s, int ev, const kp_alert_subject *sub,
                        uint32_t only_each_attempt, int64_t task_id, int64_t instance_id,
                        int64_t key_ms, const char *what, const char *summary, json_t *details,
                        int64_t at_ms, int dedup, size_t *skipped)
{
    size_t queued = 0;
    const kp_alert_rule *m[MATCH_MAX];
    size_t n = kp_alert_match(s->al->rules, ev, sub, m, MATCH_MAX);
    if (n > MATCH_MAX)
        n = MATCH_MAX;
    for (size_t i = 0; i < n; i++) {
        if (only_each_attempt && !m[i]->each_attempt)
            continue;
        const char *name = what ? what : matched_name(m[i], sub);
        char key[256];
        kp_alert_key(key, sizeof key, ev, m[i]->scope_kind, name, task_id, key_ms, instance_id);
        if (dedup) {
            int64_t k = seen_key(m[i]->id, key);
            if (kp_map_get(&s->al->seen, k)) {
                if (skipped)
                    (*skipped)++;
                continue;
            }
            kp_map_put(&s->al->seen, k, (void *)1);
        }
        enqueue(s, m[i], ev, key, name, task_id, instance_id, summary, details, at_ms);
        queued++;
    }
    return queued;
}

/* ------------------------------------------------------------ events */

/* An attempt reported its dirty rows: every dirty_rows rule of its task
 * whose threshold they exceed. */
static void dirty_rows(kp_sched *s, const kp_ev *e)
{
    kp_alerter *a = s->al;
    if (!e->has_dirty_rows || !(kp_alert_rules_events(a->rules) & KP_AE_BIT(KP_AE_DIRTY_ROWS)))
        return;
    kp_task *t = kp_index_get(s->ix, e->task_id);
    if (!t)
        return;
    subject_buf sb;
    task_subject(s, t, &sb);
    const kp_alert_rule *m[MATCH_MAX];
    size_t n = kp_alert_match(a->rules, KP_AE_DIRTY_ROWS, &sb.sub, m, MATCH_MAX);
    if (n > MATCH_MAX)
        n = MATCH_MAX;
    kp_inst *r = kp_store_get(s->st, e->instance_id);
    int64_t sched = r ? r->sched_ms : 0;
    char when[40];
    fmt_time(sched, when, sizeof when);
    for (size_t i = 0; i < n; i++) {
        if (!(e->dirty_rows > (double)m[i]->dirty_rows))
            continue;
        char key[256], summary[512];
        const char *name = matched_name(m[i], &sb.sub);
        kp_alert_key(key, sizeof key, KP_AE_DIRTY_ROWS, m[i]->scope_kind, name, t->id, sched,
                     e->instance_id);
        snprintf(summary, sizeof summary,
                 "%s: %.0f dirty rows in attempt %d of the run of %s (threshold %" PRId64 ")",
                 t->name, e->dirty_rows, e->attempt, when, m[i]->dirty_rows);
        json_t *d = json_pack("{s:s, s:I, s:s, s:I, s:i, s:f, s:I}", "task", t->name, "task_id",
                              (json_int_t)t->id, "schedule_time", when, "instance_id",
                              (json_int_t)e->instance_id, "attempt", e->attempt, "dirty_rows",
                              e->dirty_rows, "threshold", (json_int_t)m[i]->dirty_rows);
        enqueue(s, m[i], KP_AE_DIRTY_ROWS, key, name, t->id, e->instance_id, summary, d, e->at_ms);
        json_decref(d);
    }
}

void kp__alert_event(kp_sched *s, const kp_ev *e)
{
    kp_alerter *a = s->al;
    if (!a)
        return;
    if (e->kind == EV_ALERT_RULE) {
        a->rules_dirty = 1;
        s->again = 1;
        return;
    }
    if (e->kind == EV_WORKFLOW) {
        a->wf_dirty = 1;
        return;
    }
    if (e->kind == EV_STREAM) { /* a new or changed stream: its units are looked at */
        a->units_next_ms = 0;
        return;
    }
    if (!a->loaded && !a->replay_last) { /* no rules yet: evaluated once read (replay) */
        kp__alert_standby(s, e, 1);
        return;
    }
    if (e->kind == EV_INSTANCE_STATS) {
        dirty_rows(s, e);
        return;
    }
    if (e->kind != EV_INSTANCE_TRANSITION || !e->to)
        return;
    int to = e->to;
    if (to != KP_ST_FAILED && to != KP_ST_TIMED_OUT && to != KP_ST_KILLED && to != KP_ST_SUCCESS &&
        to != KP_ST_MARKED_SUCCESS)
        return;
    kp_task *t = kp_index_get(s->ix, e->task_id);
    int retry_left = t && (to == KP_ST_FAILED || to == KP_ST_TIMED_OUT) &&
                     kp_retry_wanted(&t->retry, (kp_state)to, e->attempt);
    int prev_failed = kp_map_get(&a->failed, e->task_id) != NULL;
    /* the task's last final outcome, for "recovered" */
    if (to == KP_ST_SUCCESS || to == KP_ST_MARKED_SUCCESS) {
        kp_map_del(&a->failed, e->task_id);
        kp_map_del(&a->armed, e->instance_id); /* its heap entries pop and find it done */
    } else if (to != KP_ST_KILLED && !retry_left)
        kp_map_put(&a->failed, e->task_id, (void *)1);
    if (!t || to == KP_ST_MARKED_SUCCESS || kp_alert_rules_count(a->rules) == 0)
        return;
    uint32_t mask = kp_alert_classify(e->from, to, e->attempt, retry_left, prev_failed);
    uint32_t want = kp_alert_rules_events(a->rules);
    int each = retry_left && (want & KP_AE_BIT(KP_AE_FAILED));
    if (!(mask & want) && !each)
        return;
    kp_inst *r = kp_store_get(s->st, e->instance_id);
    int64_t sched = r ? r->sched_ms : e->sched_ms;
    subject_buf sb;
    task_subject(s, t, &sb);
    char when[40];
    fmt_time(sched, when, sizeof when);
    json_t *d = json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:s, s:s}", "task", t->name, "task_id",
                          (json_int_t)t->id, "schedule_time", when, "instance_id",
                          (json_int_t)e->instance_id, "attempt", (json_int_t)e->attempt, "state",
                          kp_state_name((kp_state)to), "reason", e->reason, "executor",
                          e->exec ? e->exec : "");
    for (int ev = 0; ev < KP_AE_COUNT; ev++) {
        int each_only = ev == KP_AE_FAILED && each && !(mask & KP_AE_BIT(ev));
        if (!(mask & KP_AE_BIT(ev)) && !each_only)
            continue;
        char summary[512];
        if (ev == KP_AE_RECOVERED)
            snprintf(summary, sizeof summary, "%s recovered: run of %s succeeded (attempt %d)",
                     t->name, when, e->attempt);
        else
            snprintf(summary, sizeof summary, "%s %s: run of %s, attempt %d%s%s", t->name,
                     kp_alert_event_name(ev), when, e->attempt, e->reason[0] ? ": " : "",
                     e->reason);
        raise_for(s, ev, &sb.sub, each_only, t->id, e->instance_id, sched, NULL, summary, d,
                  e->at_ms, 0, NULL);
    }
    json_decref(d);
}

/* ------------------------------------------------------------ deadlines */

void kp__alert_track(kp_sched *s, const kp_inst *r)
{
    kp_alerter *a = s->al;
    if (!a || r->id <= 0 || r->state == KP_ST_SUCCESS || r->state == KP_ST_MARKED_SUCCESS)
        return;
    kp_task *t = kp_index_get(s->ix, r->task_id);
    if (!t || (t->start_by.kind == ORR_DL_NONE && t->finish_by.kind == ORR_DL_NONE))
        return;
    uintptr_t bits = (uintptr_t)kp_map_get(&a->armed, r->id);
    uintptr_t want = bits;
    if (t->start_by.kind != ORR_DL_NONE && !(bits & ARM_START)) {
        kp_dl_push(&a->heap, orr_deadline_at(&t->start_by, r->sched_ms, t->tz), r->id, 0);
        want |= ARM_START;
    }
    if (t->finish_by.kind != ORR_DL_NONE && !(bits & ARM_FINISH)) {
        kp_dl_push(&a->heap, orr_deadline_at(&t->finish_by, r->sched_ms, t->tz), r->id, 1);
        want |= ARM_FINISH;
    }
    if (want != bits)
        kp_map_put(&a->armed, r->id, (void *)want);
}

static void disarm(kp_alerter *a, int64_t id, int kind)
{
    uintptr_t bits = (uintptr_t)kp_map_get(&a->armed, id);
    bits &= ~(uintptr_t)(kind ? ARM_FINISH : ARM_START);
    if (bits)
        kp_map_put(&a->armed, id, (void *)bits);
    else
        kp_map_del(&a->armed, id);
}

static void deadline_due(kp_sched *s, const kp_dl_entry *d, int64_t now)
{
    kp_alerter *a = s->al;
    kp_inst *r = kp_store_get(s->st, d->instance_id);
    kp_task *t = r ? kp_index_get(s->ix, r->task_id) : NULL;
    if (!r || !t) {
        kp_map_del(&a->armed, d->instance_id); /* gone from the store */
        return;
    }
    const orr_deadline *dl = d->kind ? &t->finish_by : &t->start_by;
    if (dl->kind == ORR_DL_NONE) {
        disarm(a, d->instance_id, d->kind);
        return;
    }
    int64_t due = orr_deadline_at(dl, r->sched_ms, t->tz);
    if (due > now) { /* the spec changed since it was armed */
        kp_dl_push(&a->heap, due, r->id, d->kind);
        return;
    }
    /* its bit stays set: a sweep that reads the instance again does not re-arm it */
    int missed;
    if (d->kind == 0)
        missed = r->attempt <= 1 && (r->state == KP_ST_WAITING || r->state == KP_ST_READY ||
                                     r->state == KP_ST_DISPATCHED || r->state == KP_ST_SUSPENDED);
    else
        missed = r->state != KP_ST_SUCCESS && r->state != KP_ST_MARKED_SUCCESS;
    if (!missed)
        return;
    int ev = d->kind ? KP_AE_DEADLINE_FINISH : KP_AE_DEADLINE_START;
    subject_buf sb;
    task_subject(s, t, &sb);
    char when[40], by[40];
    fmt_time(r->sched_ms, when, sizeof when);
    fmt_time(due, by, sizeof by);
    char summary[512];
    snprintf(summary, sizeof summary, "%s: run of %s not %s by %s (%s)", t->name, when,
             d->kind ? "finished" : "started", by, kp_state_name((kp_state)r->state));
    json_t *det = json_pack("{s:s, s:I, s:s, s:I, s:s, s:s, s:I}", "task", t->name, "task_id",
                            (json_int_t)t->id, "schedule_time", when, "instance_id",
                            (json_int_t)r->id, "deadline", by, "state",
                            kp_state_name((kp_state)r->state), "late_ms", (json_int_t)(now - due));
    size_t skipped = 0;
    size_t queued = raise_for(s, ev, &sb.sub, 0, t->id, r->id, r->sched_ms, NULL, summary, det, now,
                              1, &skipped);
    ORR_INFO("deadline missed",
             "instance=%" PRId64 " task=%s kind=%s due_ms=%" PRId64 " late_ms=%" PRId64
             " raised=%zu alerted_before=%zu",
             r->id, orr_log_q(t->name), d->kind ? "finish_by" : "start_by", due, now - due, queued,
             skipped);
    json_decref(det);
}

/* ------------------------------------------------------------ executors and pools */

void kp__alert_exec_gone(kp_sched *s, const char *id, int used, int64_t now)
{
    kp_alerter *a = s->al;
    if (!a || !a->loaded || !(kp_alert_rules_events(a->rules) & KP_AE_BIT(KP_AE_EXECUTOR_LOST)))
        return;
    kp_alert_subject sub = {.executor = id};
    char summary[256];
    snprintf(summary, sizeof summary, "executor %s lost (%d slots in use)", id, used);
    json_t *d = json_pack("{s:s, s:i}", "executor", id, "used_slots", used);
    raise_for(s, KP_AE_EXECUTOR_LOST, &sub, 0, 0, 0, now, id, summary, d, now, 1, NULL);
    json_decref(d);
}

void kp__alert_pool(kp_sched *s, const char *pool, int granted, int64_t task_id, int64_t now)
{
    kp_alerter *a = s->al;
    if (!a || !(kp_alert_rules_events(a->rules) & KP_AE_BIT(KP_AE_POOL_STARVED)))
        return;
    pool_state *p = NULL;
    for (size_t i = 0; i < a->n_pools; i++)
        if (strcmp(a->pools[i].name, pool) == 0)
            p = &a->pools[i];
    if (!p) {
        if (granted)
            return;
        if (a->n_pools == a->cap_pools) {
            a->cap_pools = a->cap_pools ? a->cap_pools * 2 : 8;
            a->pools = orr_xrealloc(a->pools, a->cap_pools * sizeof *a->pools);
        }
        p = &a->pools[a->n_pools++];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", pool);
    }
    if (granted) {
        p->since_ms = 0;
        p->alerted = 0;
        return;
    }
    if (!p->since_ms)
        p->since_ms = now;
    p->last_denied_ms = now;
    p->task_id = task_id;
}

static void pools_check(kp_sched *s, int64_t now)
{
    kp_alerter *a = s->al;
    for (size_t i = 0; i < a->n_pools; i++) {
        pool_state *p = &a->pools[i];
        if (!p->since_ms)
            continue;
        if (now - p->last_denied_ms > POOL_IDLE_MS) { /* nothing waits for it any more */
            p->since_ms = 0;
            p->alerted = 0;
            continue;
        }
        kp_task *t = kp_index_get(s->ix, p->task_id);
        subject_buf sb;
        task_subject(s, t, &sb);
        sb.sub.pool = p->name;
        const kp_alert_rule *m[MATCH_MAX];
        size_t n = kp_alert_match(a->rules, KP_AE_POOL_STARVED, &sb.sub, m, MATCH_MAX);
        if (n > MATCH_MAX)
            n = MATCH_MAX;
        for (size_t j = 0; j < n && j < 32; j++) {
            if ((p->alerted & (1u << j)) || now - p->since_ms < m[j]->pool_starved_ms)
                continue;
            p->alerted |= 1u << j;
            char key[256], summary[256];
            kp_alert_key(key, sizeof key, KP_AE_POOL_STARVED, m[j]->scope_kind, p->name, 0,
                         p->since_ms, 0);
            snprintf(summary, sizeof summary,
                     "pool %s starved: queued work got no tokens for %" PRId64 " s", p->name,
                     (now - p->since_ms) / 1000);
            json_t *d = json_pack("{s:s, s:I, s:s}", "pool", p->name, "since_ms",
                                  (json_int_t)p->since_ms, "task", t ? t->name : "");
            enqueue(s, m[j], KP_AE_POOL_STARVED, key, p->name, t ? t->id : 0, 0, summary, d, now);
            json_decref(d);
        }
    }
}

/* ------------------------------------------------------------ data units */

typedef struct unit_pair {
    char *business, *interface;
} unit_pair;

typedef struct unit_set {
    kp_map units; /* key2(hash(business \x1f interface), bucket ms) -> 1 + bits */
    unit_pair pairs[UNIT_PAIRS_MAX];
    size_t n_pairs;
    int64_t first_ms; /* the earliest bucket listed (INT64_MAX: none) */
} unit_set;

#define UNIT_REPORTED   2 /* records or files */
#define UNIT_RECONCILED 4

static int64_t pair_hash(const char *business, const char *interface)
{
    char buf[2 * KP_NAME_MAX + 2];
    snprintf(buf, sizeof buf, "%s\x1f%s", business, interface);
    return hash_str(buf);
}

static void pair_add(unit_set *u, const char *business, const char *interface)
{
    if (!business || !*business || !interface || !*interface)
        return;
    for (size_t i = 0; i < u->n_pairs; i++)
        if (strcmp(u->pairs[i].business, business) == 0 &&
            strcmp(u->pairs[i].interface, interface) == 0)
            return;
    if (u->n_pairs == UNIT_PAIRS_MAX)
        return;
    u->pairs[u->n_pairs].business = orr_xstrdup(business);
    u->pairs[u->n_pairs].interface = orr_xstrdup(interface);
    u->n_pairs++;
}

static void unit_set_free(unit_set *u)
{
    for (size_t i = 0; i < u->n_pairs; i++) {
        free(u->pairs[i].business);
        free(u->pairs[i].interface);
    }
    kp_map_free(&u->units);
}

/* The units of stream in [from_ms, to_ms) into u. */
static orr_status units_list(kp_sched *s, const char *stream, int64_t from_ms, int64_t to_ms,
                             unit_set *u)
{
    char token[256] = "";
    for (;;) {
        Orrery__Halley__V1__ListDataUnitsRequest rq =
            ORRERY__HALLEY__V1__LIST_DATA_UNITS_REQUEST__INIT;
        rq.stream = (char *)stream;
        rq.from_ms = from_ms;
        rq.to_ms = to_ms;
        rq.page_size = 5000;
        rq.page_token = token;
        ProtobufCMessage *out = NULL;
        orr_err err;
        orr_status rc =
            orr_rpc_call_unary(s->cl, "ListDataUnits", &rq.base, &out, RPC_TIMEOUT_MS, &err);
        if (rc != ORR_OK) {
            char buf[600];
            ORR_WARN("data units not read for alerts", "stream=%s error=%s", orr_log_q(stream),
                     orr_log_q(orr_err_str(&err, buf, sizeof buf)));
            return rc;
        }
        Orrery__Halley__V1__ListDataUnitsResponse *r = (void *)out;
        for (size_t i = 0; i < r->n_units; i++) {
            const Orrery__Halley__V1__DataUnit *x = r->units[i];
            pair_add(u, x->business, x->interface);
            intptr_t bits = 1;
            if (kp_alert_unit_verdict(1, x->records, x->files, 1) != KP_AE_UNIT_LATE)
                bits |= UNIT_REPORTED;
            if (x->reconciled)
                bits |= UNIT_RECONCILED;
            kp_map_put(&u->units, kp_map_key2(pair_hash(x->business, x->interface), x->bucket_ms),
                       (void *)bits);
            if (x->bucket_ms < u->first_ms)
                u->first_ms = x->bucket_ms;
        }
        int more = r->next_page_token && *r->next_page_token && r->n_units > 0;
        if (more)
            snprintf(token, sizeof token, "%s", r->next_page_token);
        protobuf_c_message_free_unpacked(out, NULL);
        if (!more)
            return ORR_OK;
    }
}

/* The declared pairs of a stream's spec: its business with "interfaces"
 * and "interface"."const". */
static void units_declared(const char *spec_json, unit_set *u)
{
    json_t *spec = json_loads(spec_json ? spec_json : "", 0, NULL);
    const char *business = json_string_value(json_object_get(spec, "business"));
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(spec, "interfaces"), i, v)
        pair_add(u, business, json_string_value(v));
    pair_add(u, business,
             json_string_value(json_object_get(json_object_get(spec, "interface"), "const")));
    json_decref(spec);
}

/* Judge the units of one stream for the rules m[0..n). Returns the raises
 * queued; *next_ms is lowered to the rules' next bucket deadline. */
static size_t units_stream(kp_sched *s, const Orrery__Halley__V1__SortStream *st,
                           const kp_alert_rule *const *m, size_t n, int64_t now, int64_t *next_ms)
{
    kp_alerter *a = s->al;
    kp_du_grid g;
    orr_err err;
    if (kp_du_grid_parse(st->spec_json, &g, &err) != ORR_OK) {
        ORR_WARN("stream skipped for unit alerts", "stream=%s field=%s error=%s",
                 orr_log_q(st->name), orr_log_q(err.field), orr_log_q(err.msg));
        return 0;
    }
    int64_t size = g.size_s * 1000, from = INT64_MAX, to = INT64_MIN;
    int64_t first[MATCH_MAX], last[MATCH_MAX];
    size_t cnt[MATCH_MAX];
    for (size_t i = 0; i < n; i++) {
        int64_t nx;
        cnt[i] = kp_alert_unit_window(g.size_s, g.tz_s, m[i]->unit_deadline_ms, now, UNIT_WINDOW_MS,
                                      &first[i], &last[i], &nx);
        if (nx < *next_ms)
            *next_ms = nx;
        if (!cnt[i])
            continue;
        if (first[i] < from)
            from = first[i];
        if (last[i] + size > to)
            to = last[i] + size;
    }
    if (from == INT64_MAX)
        return 0;
    unit_set u;
    memset(&u, 0, sizeof u);
    u.first_ms = INT64_MAX;
    size_t queued = 0;
    if (units_list(s, st->name, from, to, &u) != ORR_OK) {
        *next_ms = now + LOAD_RETRY_MS;
        goto done;
    }
    units_declared(st->spec_json, &u);
    for (size_t i = 0; i < n; i++) {
        if (!cnt[i])
            continue;
        /* from the stream's first listed bucket on: nothing is late before it began */
        int64_t b0 = first[i] > u.first_ms ? first[i] : u.first_ms;
        for (int64_t b = b0; b <= last[i]; b += size) {
            for (size_t p = 0; p < u.n_pairs; p++) {
                const unit_pair *up = &u.pairs[p];
                intptr_t bits = (intptr_t)kp_map_get(
                    &u.units, kp_map_key2(pair_hash(up->business, up->interface), b));
                int ev = kp_alert_unit_verdict(bits != 0, (bits & UNIT_REPORTED) ? 1 : 0, 0,
                                               (bits & UNIT_RECONCILED) != 0);
                if (ev < 0 || !(m[i]->events & KP_AE_BIT(ev)))
                    continue;
                char key[512];
                kp_alert_unit_key(key, sizeof key, ev, st->name, up->business, up->interface, b);
                int64_t k = seen_key(m[i]->id, key);
                if (kp_map_get(&a->seen, k))
                    continue;
                kp_map_put(&a->seen, k, (void *)1);
                char when[40], by[40], summary[512];
                fmt_time(b, when, sizeof when);
                fmt_time(b + size + m[i]->unit_deadline_ms, by, sizeof by);
                snprintf(summary, sizeof summary, "stream %s: unit %s/%s of %s %s by %s", st->name,
                         up->business, up->interface, when,
                         ev == KP_AE_UNIT_LATE ? "not reported" : "not reconciled", by);
                json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:b, s:b}", "stream",
                                      st->name, "business", up->business, "interface",
                                      up->interface, "bucket", when, "bucket_ms", (json_int_t)b,
                                      "deadline", by, "reported", (bits & UNIT_REPORTED) != 0,
                                      "reconciled", (bits & UNIT_RECONCILED) != 0);
                enqueue(s, m[i], ev, key, st->name, 0, 0, summary, d, now);
                json_decref(d);
                queued++;
            }
        }
    }
done:
    unit_set_free(&u);
    return queued;
}

/* Every active stream a unit rule matches, when a deadline came. */
static void units_check(kp_sched *s, int64_t now)
{
    kp_alerter *a = s->al;
    uint32_t want = KP_AE_BIT(KP_AE_UNIT_LATE) | KP_AE_BIT(KP_AE_UNIT_UNRECONCILED);
    if (!(kp_alert_rules_events(a->rules) & want)) {
        a->units_next_ms = INT64_MAX;
        return;
    }
    if (now < a->units_next_ms)
        return;
    Orrery__Halley__V1__ListSortStreamsRequest rq =
        ORRERY__HALLEY__V1__LIST_SORT_STREAMS_REQUEST__INIT;
    rq.active_only = 1;
    ProtobufCMessage *out = NULL;
    orr_err err;
    if (orr_rpc_call_unary(s->cl, "ListSortStreams", &rq.base, &out, RPC_TIMEOUT_MS, &err) !=
        ORR_OK) {
        char buf[600];
        ORR_WARN("streams not read for unit alerts", "error=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        a->units_next_ms = now + LOAD_RETRY_MS;
        return;
    }
    Orrery__Halley__V1__ListSortStreamsResponse *r = (void *)out;
    int64_t next = now + UNIT_RECHECK_MS;
    size_t streams = 0, queued = 0;
    for (size_t i = 0; i < r->n_streams; i++) {
        kp_alert_subject sub = {.stream = r->streams[i]->name};
        const kp_alert_rule *m[MATCH_MAX], *x[MATCH_MAX];
        size_t n = kp_alert_match(a->rules, KP_AE_UNIT_LATE, &sub, m, MATCH_MAX);
        size_t nx = kp_alert_match(a->rules, KP_AE_UNIT_UNRECONCILED, &sub, x, MATCH_MAX);
        n = n > MATCH_MAX ? MATCH_MAX : n;
        nx = nx > MATCH_MAX ? MATCH_MAX : nx;
        for (size_t j = 0; j < nx && n < MATCH_MAX; j++) { /* the union: each rule once */
            size_t k = 0;
            while (k < n && m[k] != x[j])
                k++;
            if (k == n)
                m[n++] = x[j];
        }
        if (!n)
            continue;
        streams++;
        queued += units_stream(s, r->streams[i], m, n, now, &next);
    }
    protobuf_c_message_free_unpacked(out, NULL);
    a->units_next_ms = next > now ? next : now + 1000;
    ORR_INFO("data units checked for alerts", "streams=%zu raised=%zu next_in_ms=%" PRId64, streams,
             queued, a->units_next_ms - now);
}

/* ------------------------------------------------------------ takeover */

void kp__alert_standby(kp_sched *s, const kp_ev *evs, size_t n)
{
    kp_alerter *a = s->al;
    if (!a)
        return;
    for (size_t i = 0; i < n; i++) {
        const kp_ev *e = &evs[i];
        int keep = (e->kind == EV_INSTANCE_TRANSITION &&
                    (e->to == KP_ST_FAILED || e->to == KP_ST_TIMED_OUT || e->to == KP_ST_KILLED ||
                     e->to == KP_ST_SUCCESS)) ||
                   (e->kind == EV_INSTANCE_STATS && e->has_dirty_rows);
        if (!keep)
            continue;
        if (a->ring_n == RING_MAX) { /* the oldest goes */
            a->ring_head = (a->ring_head + 1) % RING_MAX;
            a->ring_n--;
        }
        a->ring[(a->ring_head + a->ring_n) % RING_MAX] = *e;
        a->ring_n++;
    }
}

static void keep_last(void *ctx, const Orrery__Halley__V1__Alert *al)
{
    int64_t k = seen_key(al->rule_id, al->dedup_key);
    if (al->last_at_ms > (intptr_t)kp_map_get(ctx, k))
        kp_map_put(ctx, k, (void *)(intptr_t)al->last_at_ms);
}

/* The alerts counted since from_ms: (rule, key) -> last_at_ms into m. */
static orr_status load_last(kp_sched *s, int64_t from_ms, kp_map *m)
{
    return list_alerts(s, NULL, from_ms, keep_last, m);
}

/* Leading now: evaluate what came while standing by (the last REPLAY_MS),
 * skipping what the previous leader raised. ORR_OK, or the history read's
 * failure (the ring is kept for the next try). */
static orr_status replay(kp_sched *s, int64_t now)
{
    kp_alerter *a = s->al;
    if (a->ring_n == 0)
        return ORR_OK;
    int64_t from = now - REPLAY_MS;
    kp_map last = KP_MAP_INIT;
    if (kp_alert_rules_count(a->rules) > 0) {
        orr_status rc = load_last(s, from - 1000, &last);
        if (rc != ORR_OK) {
            kp_map_free(&last);
            return rc;
        }
    }
    a->replay_last = &last;
    size_t n = 0;
    for (size_t i = 0; i < a->ring_n; i++) {
        kp_ev *e = &a->ring[(a->ring_head + i) % RING_MAX];
        if (e->at_ms < from)
            continue;
        if (!kp_store_get(s->st, e->instance_id)) /* its schedule time makes the key */
            (void)kp__fetch_instance_id(s, e->instance_id, e->id);
        kp__alert_event(s, e);
        n++;
    }
    a->replay_last = NULL;
    kp_map_free(&last);
    a->ring_n = a->ring_head = 0;
    ORR_INFO("alert events of the takeover evaluated", "events=%zu", n);
    return ORR_OK;
}

/* ------------------------------------------------------------ the round */

void kp__alert_round(kp_sched *s, int64_t now)
{
    kp_alerter *a = s->al;
    if (!a)
        return;
    if (!a->loaded || a->rules_dirty || a->wf_dirty) {
        if (now < a->retry_at_ms)
            return;
        orr_status rc = ORR_OK;
        if (!a->loaded || a->rules_dirty)
            rc = load_rules(s);
        if (rc == ORR_OK && (!a->loaded || a->wf_dirty))
            rc = load_workflows(s);
        if (rc == ORR_OK && !a->loaded)
            rc = load_seen(s, now);
        if (rc == ORR_OK && !a->loaded)
            rc = replay(s, now);
        if (rc != ORR_OK) {
            a->retry_at_ms = now + LOAD_RETRY_MS;
            return; /* no deadline is decided before the history is known */
        }
        a->loaded = 1;
    }
    kp_dl_entry d;
    while (kp_dl_pop_due(&a->heap, now, &d))
        deadline_due(s, &d, now);
    pools_check(s, now);
    units_check(s, now);
}

int64_t kp__alert_next_ms(const kp_sched *s)
{
    if (!s->al)
        return INT64_MAX;
    int64_t next = kp_dl_next(&s->al->heap);
    if (s->al->loaded && (kp_alert_rules_events(s->al->rules) &
                          (KP_AE_BIT(KP_AE_UNIT_LATE) | KP_AE_BIT(KP_AE_UNIT_UNRECONCILED))))
        next = s->al->units_next_ms < next ? s->al->units_next_ms : next;
    return next;
}

/*
 * kp_alert.c - alert rules, their matching, dedup keys and the deadline
 * heap (kp_alert.h); pure logic, no I/O.
 */
#include "kp_alert.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_deps.h"
#include "orr_alloc.h"

static const char *const EVENT_NAMES[KP_AE_COUNT] = {
    "failed",          "retried",       "timed_out",
    "killed",          "recovered",     "deadline_start",
    "deadline_finish", "unit_late",     "unit_unreconciled",
    "dirty_rows",      "executor_lost", "pool_starved",
};

static const char *const SCOPE_NAMES[KP_AS_COUNT] = {"task", "workflow", "team", "stream",
                                                     "executor"};

int kp_alert_event_parse(const char *name)
{
    for (int i = 0; name && i < KP_AE_COUNT; i++)
        if (strcmp(name, EVENT_NAMES[i]) == 0)
            return i;
    return -1;
}

const char *kp_alert_event_name(int ev)
{
    return ev >= 0 && ev < KP_AE_COUNT ? EVENT_NAMES[ev] : "unknown";
}

int kp_alert_scope_parse(const char *name)
{
    for (int i = 0; name && i < KP_AS_COUNT; i++)
        if (strcmp(name, SCOPE_NAMES[i]) == 0)
            return i;
    return -1;
}

const char *kp_alert_scope_name(int kind)
{
    return kind >= 0 && kind < KP_AS_COUNT ? SCOPE_NAMES[kind] : "unknown";
}

/* ------------------------------------------------------------ rules */

struct kp_alert_rules {
    kp_alert_rule *v;
    size_t n, cap;
    uint32_t events;
};

kp_alert_rules *kp_alert_rules_create(void)
{
    return orr_xcalloc(1, sizeof(kp_alert_rules));
}

static void rule_free(kp_alert_rule *r)
{
    free(r->name);
    free(r->team);
    free(r->scope);
    free(r->severity);
}

void kp_alert_rules_clear(kp_alert_rules *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        rule_free(&rs->v[i]);
    rs->n = 0;
    rs->events = 0;
}

void kp_alert_rules_destroy(kp_alert_rules *rs)
{
    if (!rs)
        return;
    kp_alert_rules_clear(rs);
    free(rs->v);
    free(rs);
}

size_t kp_alert_rules_count(const kp_alert_rules *rs)
{
    return rs->n;
}

uint32_t kp_alert_rules_events(const kp_alert_rules *rs)
{
    return rs->events;
}

orr_status kp_alert_rules_add(kp_alert_rules *rs, int64_t id, const char *name, const char *team,
                              const char *scope_kind, const char *scope, const char *severity,
                              const char *const *events, size_t n_events, const char *params_json,
                              orr_err *err)
{
    kp_alert_rule r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.scope_kind = kp_alert_scope_parse(scope_kind);
    if (r.scope_kind < 0)
        return orr_err_set(err, ORR_EINVAL, "scope_kind", "\"%.40s\" is not a scope kind",
                           scope_kind ? scope_kind : "");
    r.pool_starved_ms = 10 * 60000;
    r.unit_deadline_ms = 60 * 60000;
    if (params_json && *params_json) {
        json_t *p = json_loads(params_json, 0, NULL);
        if (!json_is_object(p)) {
            json_decref(p);
            return orr_err_set(err, ORR_EINVAL, "params", "not a JSON object");
        }
        json_t *v;
        r.each_attempt = json_is_true(json_object_get(p, "each_attempt"));
        if (json_is_integer(v = json_object_get(p, "dirty_rows")))
            r.dirty_rows = json_integer_value(v);
        if (json_is_number(v = json_object_get(p, "pool_starved_minutes")))
            r.pool_starved_ms = (int64_t)(json_number_value(v) * 60000.0);
        if (json_is_number(v = json_object_get(p, "unit_deadline_minutes")) &&
            json_number_value(v) >= 0)
            r.unit_deadline_ms = (int64_t)(json_number_value(v) * 60000.0);
        json_decref(p);
    }
    for (size_t i = 0; i < n_events; i++) {
        int e = kp_alert_event_parse(events[i]);
        if (e >= 0)
            r.events |= KP_AE_BIT(e);
    }
    r.name = orr_xstrdup(name ? name : "");
    r.team = orr_xstrdup(team ? team : "");
    r.scope = orr_xstrdup(scope && *scope ? scope : "*");
    r.severity = orr_xstrdup(severity && *severity ? severity : "warning");
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 16;
        rs->v = orr_xrealloc(rs->v, rs->cap * sizeof *rs->v);
    }
    rs->v[rs->n++] = r;
    rs->events |= r.events;
    return ORR_OK;
}

static int name_is(const char *scope, const char *name)
{
    return name && (strcmp(scope, "*") == 0 || strcmp(scope, name) == 0);
}

/* Does rule r's scope name the subject? */
static int scope_matches(const kp_alert_rule *r, const kp_alert_subject *sub)
{
    switch (r->scope_kind) {
    case KP_AS_TASK:
        return name_is(r->scope, sub->task);
    case KP_AS_TEAM:
        return name_is(r->scope, sub->team);
    case KP_AS_EXECUTOR:
        return name_is(r->scope, sub->executor);
    case KP_AS_STREAM:
        return name_is(r->scope, sub->stream);
    case KP_AS_WORKFLOW:
        for (size_t i = 0; i < sub->n_workflows; i++)
            if (name_is(r->scope, sub->workflows[i]))
                return 1;
        return 0;
    default:
        return 0;
    }
}

size_t kp_alert_match(const kp_alert_rules *rs, int ev, const kp_alert_subject *sub,
                      const kp_alert_rule **out, size_t max)
{
    if (ev < 0 || ev >= KP_AE_COUNT || !(rs->events & KP_AE_BIT(ev)))
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const kp_alert_rule *r = &rs->v[i];
        if (!(r->events & KP_AE_BIT(ev)) || !scope_matches(r, sub))
            continue;
        if (k < max)
            out[k] = r;
        k++;
    }
    return k;
}

uint32_t kp_alert_classify(int from, int to, int attempt, int retry_left, int prev_failed)
{
    (void)from;
    uint32_t m = 0;
    switch (to) {
    case KP_ST_FAILED:
        m |= retry_left ? KP_AE_BIT(KP_AE_RETRIED) : KP_AE_BIT(KP_AE_FAILED);
        break;
    case KP_ST_TIMED_OUT:
        m |= KP_AE_BIT(KP_AE_TIMED_OUT);
        m |= retry_left ? KP_AE_BIT(KP_AE_RETRIED) : KP_AE_BIT(KP_AE_FAILED);
        break;
    case KP_ST_KILLED:
        m |= KP_AE_BIT(KP_AE_KILLED);
        break;
    case KP_ST_SUCCESS:
        if (prev_failed || attempt > 1)
            m |= KP_AE_BIT(KP_AE_RECOVERED);
        break;
    default:
        break;
    }
    return m;
}

char *kp_alert_key(char *buf, size_t n, int ev, int scope_kind, const char *name, int64_t task_id,
                   int64_t at_ms, int64_t instance_id)
{
    const char *en = kp_alert_event_name(ev);
    if (ev == KP_AE_DEADLINE_START || ev == KP_AE_DEADLINE_FINISH)
        snprintf(buf, n, "%s:%" PRId64, en, instance_id);
    else if (ev == KP_AE_EXECUTOR_LOST || ev == KP_AE_POOL_STARVED)
        snprintf(buf, n, "%s:%s:%" PRId64, en, name ? name : "", at_ms);
    else if (scope_kind == KP_AS_TASK || !name)
        snprintf(buf, n, "%s:task:%" PRId64 ":%" PRId64, en, task_id, at_ms);
    else
        snprintf(buf, n, "%s:%s:%s:%" PRId64, en, kp_alert_scope_name(scope_kind), name, at_ms);
    return buf;
}

/* ------------------------------------------------------------ data units */

char *kp_alert_unit_key(char *buf, size_t n, int ev, const char *stream, const char *business,
                        const char *interface, int64_t bucket_ms)
{
    snprintf(buf, n, "%s:%s:%s:%s:%" PRId64, kp_alert_event_name(ev), stream ? stream : "",
             business ? business : "", interface ? interface : "", bucket_ms);
    return buf;
}

int kp_alert_unit_verdict(int exists, int64_t records, int64_t files, int reconciled)
{
    if (!exists || (records <= 0 && files <= 0))
        return KP_AE_UNIT_LATE;
    return reconciled ? -1 : KP_AE_UNIT_UNRECONCILED;
}

/* Floor division: the grid reaches before 1970 too. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

size_t kp_alert_unit_window(int64_t size_s, int32_t tz_s, int64_t deadline_ms, int64_t now_ms,
                            int64_t window_ms, int64_t *first_ms, int64_t *last_ms,
                            int64_t *next_ms)
{
    int64_t size = size_s * 1000, off = (int64_t)tz_s * 1000;
    /* the last bucket whose end + deadline <= now: start <= now - deadline - size */
    int64_t last = floor_div(now_ms - deadline_ms - size + off, size) * size - off;
    *next_ms = last + 2 * size + deadline_ms;
    /* the first whose end + deadline > now - window */
    int64_t lo = now_ms - window_ms - deadline_ms - size; /* start > lo */
    int64_t first = (floor_div(lo + off, size) + 1) * size - off;
    if (first > last)
        return 0;
    *first_ms = first;
    *last_ms = last;
    return (size_t)((last - first) / size + 1);
}

/* ------------------------------------------------------------ deadline heap */

static int dl_less(const kp_dl_entry *a, const kp_dl_entry *b)
{
    if (a->due_ms != b->due_ms)
        return a->due_ms < b->due_ms;
    return a->instance_id < b->instance_id;
}

void kp_dl_push(kp_dl_heap *h, int64_t due_ms, int64_t instance_id, int kind)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = orr_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    size_t i = h->n++;
    h->v[i] = (kp_dl_entry){due_ms, instance_id, kind};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!dl_less(&h->v[i], &h->v[p]))
            break;
        kp_dl_entry t = h->v[i];
        h->v[i] = h->v[p];
        h->v[p] = t;
        i = p;
    }
}

int kp_dl_pop_due(kp_dl_heap *h, int64_t now, kp_dl_entry *out)
{
    if (h->n == 0 || h->v[0].due_ms > now)
        return 0;
    *out = h->v[0];
    h->v[0] = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && dl_less(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && dl_less(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            break;
        kp_dl_entry t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return 1;
}

int64_t kp_dl_next(const kp_dl_heap *h)
{
    return h->n ? h->v[0].due_ms : INT64_MAX;
}

void kp_dl_clear(kp_dl_heap *h)
{
    h->n = 0;
}

void kp_dl_free(kp_dl_heap *h)
{
    free(h->v);
    memset(h, 0, sizeof *h);
}

/*
 * kp_index.c - task specs and the index of active tasks (see kp_index.h).
 *
 * Spec parsing trusts nothing: halleyd validated the spec against the schema
 * when it was saved, but keplerd still checks every field it uses, so a spec
 * written by an older or newer schema gives a clear error naming the field
 * instead of a wrong schedule.
 */
#include "kp_index.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_map.h"
#include "orr_alloc.h"
#include "orr_json.h"

orr_status kp_duration_parse(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return ORR_EINVAL;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || v > 999999999)
        return ORR_EINVAL;
    int64_t mul;
    if (strcmp(end, "ms") == 0)
        mul = 1;
    else if (strcmp(end, "s") == 0)
        mul = 1000;
    else if (strcmp(end, "m") == 0)
        mul = 60000;
    else if (strcmp(end, "h") == 0)
        mul = 3600000;
    else if (strcmp(end, "d") == 0)
        mul = 86400000;
    else
        return ORR_EINVAL;
    *ms = (int64_t)v * mul;
    return ORR_OK;
}

static orr_status spec_duration(json_t *obj, const char *path, const char *key, int64_t *out,
                                orr_err *err)
{
    const char *s = NULL;
    orr_status st = orr_json_get_str(obj, path, key, 0, &s, err);
    if (st != ORR_OK || !s)
        return st;
    if (kp_duration_parse(s, out) != ORR_OK) {
        char f[128];
        return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, path, key),
                           "\"%.40s\" is not a duration (number + ms|s|m|h|d)", s);
    }
    return ORR_OK;
}

static orr_status spec_deps(kp_task *t, json_t *doc, orr_err *err)
{
    json_t *ups = NULL;
    orr_status st = orr_json_get_array(doc, "spec", "upstreams", 0, &ups, err);
    if (st != ORR_OK || !ups)
        return st;
    size_t n = json_array_size(ups);
    if (n > KP_MAX_DEPS)
        return orr_err_set(err, ORR_EINVAL, "spec.upstreams", "at most %d upstreams", KP_MAX_DEPS);
    t->deps = orr_xcalloc(n, sizeof *t->deps);
    for (size_t i = 0; i < n; i++) {
        json_t *u = json_array_get(ups, i);
        char path[64];
        orr_json_index_path(path, sizeof path, "spec.upstreams", i);
        if (!json_is_object(u))
            return orr_err_set(err, ORR_EINVAL, path, "must be an object");
        const char *kind = NULL, *task = NULL, *cycle = "latest";
        const char *stream = NULL, *business = NULL, *interface = NULL;
        if ((st = orr_json_get_str(u, path, "kind", 1, &kind, err)) != ORR_OK ||
            (st = orr_json_get_str(u, path, "task", 0, &task, err)) != ORR_OK ||
            (st = orr_json_get_str(u, path, "cycle", 0, &cycle, err)) != ORR_OK ||
            (st = orr_json_get_str(u, path, "stream", 0, &stream, err)) != ORR_OK ||
            (st = orr_json_get_str(u, path, "business", 0, &business, err)) != ORR_OK ||
            (st = orr_json_get_str(u, path, "interface", 0, &interface, err)) != ORR_OK)
            return st;
        kp_dep *d = &t->deps[t->n_deps];
        char f[96];
        if (strcmp(kind, "strong") == 0)
            d->kind = KP_DEP_STRONG;
        else if (strcmp(kind, "weak") == 0)
            d->kind = KP_DEP_WEAK;
        else if (strcmp(kind, "self") == 0)
            d->kind = KP_DEP_SELF;
        else if (strcmp(kind, "data_unit") == 0)
            d->kind = KP_DEP_DATA_UNIT;
        else
            return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, path, "kind"),
                               "\"%.40s\" is not strong, weak, self or data_unit", kind);
        if (strcmp(cycle, "same") == 0)
            d->cycle_same = 1;
        else if (strcmp(cycle, "latest") != 0)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, path, "cycle"),
                               "\"%.40s\" is not same or latest", cycle);
        if (d->kind == KP_DEP_STRONG || d->kind == KP_DEP_WEAK) {
            if (!task || !*task)
                return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, path, "task"),
                                   "is required for a %s dependency", kind);
            if (strlen(task) >= KP_NAME_MAX)
                return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, path, "task"),
                                   "longer than %d bytes", KP_NAME_MAX - 1);
            d->task = orr_xstrdup(task);
        }
        if (d->kind == KP_DEP_DATA_UNIT) {
            const char *const names[] = {"stream", "business", "interface"};
            const char *vals[] = {stream, business, interface};
            for (int k = 0; k < 3; k++)
                if (!vals[k] || !*vals[k] || strlen(vals[k]) >= KP_NAME_MAX)
                    return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, path, names[k]),
                                       "is required for a data_unit dependency (1 to %d bytes)",
                                       KP_NAME_MAX - 1);
            d->stream = orr_xstrdup(stream);
            d->business = orr_xstrdup(business);
            d->interface = orr_xstrdup(interface);
        }
        t->n_deps++;
    }
    return ORR_OK;
}

static orr_status spec_pools(kp_task *t, json_t *doc, orr_err *err)
{
    json_t *pools = NULL;
    orr_status st = orr_json_get_obj(doc, "spec", "pools", 0, &pools, err);
    if (st != ORR_OK || !pools)
        return st;
    if (!json_is_object(pools))
        return orr_err_set(err, ORR_EINVAL, "spec.pools", "must be an object");
    size_t n = json_object_size(pools);
    if (n > KP_MAX_POOLS)
        return orr_err_set(err, ORR_EINVAL, "spec.pools", "at most %d pools", KP_MAX_POOLS);
    t->pools = orr_xcalloc(n, sizeof *t->pools);
    const char *k;
    json_t *v;
    json_object_foreach(pools, k, v)
    {
        char f[128];
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, "spec.pools", k),
                               "must be an integer from 1 to 1000000");
        t->pools[t->n_pools].pool = orr_xstrdup(k);
        t->pools[t->n_pools].tokens = (int)json_integer_value(v);
        t->n_pools++;
    }
    return ORR_OK;
}

static orr_status spec_labels(kp_task *t, json_t *doc, orr_err *err)
{
    json_t *labels = NULL;
    orr_status st = orr_json_get_obj(doc, "spec", "labels", 0, &labels, err);
    if (st != ORR_OK || !labels)
        return st;
    if (!json_is_object(labels))
        return orr_err_set(err, ORR_EINVAL, "spec.labels", "must be an object");
    size_t n = json_object_size(labels);
    if (n > KP_MAX_LABELS)
        return orr_err_set(err, ORR_EINVAL, "spec.labels", "at most %d labels", KP_MAX_LABELS);
    t->labels = orr_xcalloc(n, sizeof *t->labels);
    const char *k;
    json_t *v;
    json_object_foreach(labels, k, v)
    {
        char f[128];
        if (!json_is_string(v))
            return orr_err_set(err, ORR_EINVAL, orr_json_path(f, sizeof f, "spec.labels", k),
                               "must be a string");
        t->labels[t->n_labels].key = orr_xstrdup(k);
        t->labels[t->n_labels].value = orr_xstrdup(json_string_value(v));
        t->n_labels++;
    }
    return ORR_OK;
}

orr_status kp_task_parse(kp_task *t, const char *spec_json, const char *default_tz,
                         int64_t default_timeout_ms, orr_err *err)
{
    int64_t id = t->id, created = t->created_at_ms;
    int version = t->version;
    char name[KP_NAME_MAX];
    memcpy(name, t->name, sizeof name);
    memset(t, 0, sizeof *t);
    t->id = id;
    t->version = version;
    t->created_at_ms = created;
    memcpy(t->name, name, sizeof name);
    t->slots = 1;
    t->catch_up_all = 1;
    t->timeout_ms = default_timeout_ms;
    t->next_fire_ms = INT64_MAX;

    json_t *doc = NULL;
    orr_status st;
    if (!spec_json)
        return orr_err_set(err, ORR_EINVAL, "spec", "is missing");
    if ((st = orr_json_parse(spec_json, strlen(spec_json), &doc, err)) != ORR_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return orr_err_set(err, ORR_EINVAL, "spec", "not valid JSON: %s", msg);
    }
    if (!json_is_object(doc)) {
        st = orr_err_set(err, ORR_EINVAL, "spec", "must be an object");
        goto fail;
    }
    const char *sched = "", *zone = default_tz, *catch_up = "all", *backoff = "fixed";
    const char *nm = NULL, *cal = NULL, *cal_policy = NULL;
    int64_t slots = 1, max_par = 0, prio = 0, rmax = 0;
    json_t *retries = NULL;
    if ((st = orr_json_get_str(doc, "spec", "name", 0, &nm, err)) != ORR_OK ||
        (st = orr_json_get_str(doc, "spec", "schedule", 0, &sched, err)) != ORR_OK ||
        (st = orr_json_get_str(doc, "spec", "timezone", 0, &zone, err)) != ORR_OK ||
        (st = orr_json_get_str(doc, "spec", "catch_up", 0, &catch_up, err)) != ORR_OK ||
        (st = orr_json_get_str(doc, "spec", "calendar", 0, &cal, err)) != ORR_OK ||
        (st = orr_json_get_str(doc, "spec", "calendar_policy", 0, &cal_policy, err)) != ORR_OK ||
        (st = orr_json_get_int(doc, "spec", "slots", 0, 1, 1024, &slots, err)) != ORR_OK ||
        (st = orr_json_get_int(doc, "spec", "max_parallel", 0, 1, 100000, &max_par, err)) !=
            ORR_OK ||
        (st = orr_json_get_int(doc, "spec", "priority", 0, -1000, 1000, &prio, err)) != ORR_OK ||
        (st = spec_duration(doc, "spec", "timeout", &t->timeout_ms, err)) != ORR_OK ||
        (st = orr_json_get_obj(doc, "spec", "retries", 0, &retries, err)) != ORR_OK)
        goto fail;
    if (nm && !t->name[0])
        snprintf(t->name, sizeof t->name, "%s", nm);
    if (sched[0]) {
        if ((st = orr_cron_parse_into(sched, &t->cron, err)) != ORR_OK) {
            char field[sizeof err->field], msg[sizeof err->msg];
            snprintf(field, sizeof field, "%s", err->field);
            snprintf(msg, sizeof msg, "%s", err->msg);
            st = orr_err_set(err, ORR_EINVAL, "spec.schedule", "%.60s: %.300s", field, msg);
            goto fail;
        }
        t->has_cron = 1;
    }
    if ((st = orr_tz_load(zone ? zone : "UTC", &t->tz, err)) != ORR_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        st = orr_err_set(err, ORR_EINVAL, "spec.timezone", "%s", msg);
        goto fail;
    }
    if (cal && (!cal[0] || strlen(cal) >= sizeof t->calendar)) {
        st = orr_err_set(err, ORR_EINVAL, "spec.calendar", "must be a calendar name");
        goto fail;
    }
    if (cal)
        snprintf(t->calendar, sizeof t->calendar, "%s", cal);
    if ((st = orr_cal_policy_parse(cal_policy, &t->cal_policy, err)) != ORR_OK) {
        snprintf(err->field, sizeof err->field, "spec.calendar_policy");
        goto fail;
    }
    if (strcmp(catch_up, "latest") == 0) {
        t->catch_up_all = 0;
    } else if (strcmp(catch_up, "all") != 0) {
        st = orr_err_set(err, ORR_EINVAL, "spec.catch_up", "\"%.40s\" is not all or latest",
                         catch_up);
        goto fail;
    }
    if (t->timeout_ms <= 0) {
        st = orr_err_set(err, ORR_EINVAL, "spec.timeout", "must be positive");
        goto fail;
    }
    json_t *dl = json_object_get(doc, "deadlines");
    if (dl) {
        const char *sb = NULL, *fb = NULL;
        if (!json_is_object(dl)) {
            st = orr_err_set(err, ORR_EINVAL, "spec.deadlines", "must be an object");
            goto fail;
        }
        if ((st = orr_json_get_str(dl, "spec.deadlines", "start_by", 0, &sb, err)) != ORR_OK ||
            (st = orr_json_get_str(dl, "spec.deadlines", "finish_by", 0, &fb, err)) != ORR_OK)
            goto fail;
        if ((sb && (st = orr_deadline_parse(sb, "spec.deadlines.start_by", &t->start_by, err)) !=
                       ORR_OK) ||
            (fb && (st = orr_deadline_parse(fb, "spec.deadlines.finish_by", &t->finish_by, err)) !=
                       ORR_OK))
            goto fail;
    }
    if (retries) {
        if (!json_is_object(retries)) {
            st = orr_err_set(err, ORR_EINVAL, "spec.retries", "must be an object");
            goto fail;
        }
        if ((st = orr_json_get_int(retries, "spec.retries", "max", 0, 0, 100, &rmax, err)) !=
                ORR_OK ||
            (st = spec_duration(retries, "spec.retries", "delay", &t->retry.delay_ms, err)) !=
                ORR_OK ||
            (st = orr_json_get_str(retries, "spec.retries", "backoff", 0, &backoff, err)) != ORR_OK)
            goto fail;
        if (strcmp(backoff, "exponential") == 0) {
            t->retry.backoff = KP_BACKOFF_EXPONENTIAL;
        } else if (strcmp(backoff, "fixed") != 0) {
            st = orr_err_set(err, ORR_EINVAL, "spec.retries.backoff",
                             "\"%.40s\" is not fixed or exponential", backoff);
            goto fail;
        }
    }
    t->retry.max = (int)rmax;
    t->slots = (int)slots;
    t->max_parallel = (int)max_par;
    t->priority = (int)prio;
    if ((st = spec_deps(t, doc, err)) != ORR_OK || (st = spec_pools(t, doc, err)) != ORR_OK ||
        (st = spec_labels(t, doc, err)) != ORR_OK)
        goto fail;
    json_decref(doc);
    return ORR_OK;
fail:
    json_decref(doc);
    kp_task_clear(t);
    t->id = id;
    t->version = version;
    memcpy(t->name, name, sizeof name);
    return st;
}

void kp_task_clear(kp_task *t)
{
    for (size_t i = 0; i < t->n_deps; i++) {
        free(t->deps[i].task);
        free(t->deps[i].stream);
        free(t->deps[i].business);
        free(t->deps[i].interface);
    }
    free(t->deps);
    for (size_t i = 0; i < t->n_pools; i++)
        free(t->pools[i].pool);
    free(t->pools);
    for (size_t i = 0; i < t->n_labels; i++) {
        free(t->labels[i].key);
        free(t->labels[i].value);
    }
    free(t->labels);
    free(t->downstream);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------ the index */

struct kp_index {
    kp_task **tasks;
    size_t n, cap;
    kp_map by_id; /* id -> position + 1 (as a pointer-sized integer) */
};

kp_index *kp_index_create(void)
{
    return orr_xcalloc(1, sizeof(kp_index));
}

void kp_index_destroy(kp_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n; i++) {
        kp_task_clear(ix->tasks[i]);
        free(ix->tasks[i]);
    }
    free(ix->tasks);
    kp_map_free(&ix->by_id);
    free(ix);
}

kp_task *kp_index_get(const kp_index *ix, int64_t id)
{
    if (id <= 0)
        return NULL;
    uintptr_t pos = (uintptr_t)kp_map_get(&ix->by_id, id);
    return pos ? ix->tasks[pos - 1] : NULL;
}

kp_task *kp_index_by_name(const kp_index *ix, const char *name)
{
    for (size_t i = 0; i < ix->n; i++)
        if (strcmp(ix->tasks[i]->name, name) == 0)
            return ix->tasks[i];
    return NULL;
}

size_t kp_index_count(const kp_index *ix)
{
    return ix->n;
}

kp_task *kp_index_at(const kp_index *ix, size_t i)
{
    return i < ix->n ? ix->tasks[i] : NULL;
}

kp_task *kp_index_put(kp_index *ix, kp_task *t)
{
    kp_task *old = kp_index_get(ix, t->id);
    if (old) {
        /* keep the scheduling state of the task */
        int64_t mat = old->materialised_ms, next = old->next_fire_ms;
        int live = old->n_live, team = old->team;
        kp_task_clear(old);
        *old = *t;
        old->materialised_ms = mat;
        old->n_live = live;
        old->team = team;
        old->next_fire_ms = next;
        memset(t, 0, sizeof *t);
        return old;
    }
    if (ix->n == ix->cap) {
        size_t ncap = ix->cap ? ix->cap * 2 : 64;
        kp_task **nt = orr_xrealloc(ix->tasks, ncap * sizeof *nt);
        ix->tasks = nt;
        ix->cap = ncap;
    }
    kp_task *nt = orr_xcalloc(1, sizeof *nt);
    *nt = *t;
    memset(t, 0, sizeof *t);
    ix->tasks[ix->n++] = nt;
    kp_map_put(&ix->by_id, nt->id, (void *)(uintptr_t)ix->n);
    return nt;
}

void kp_index_remove(kp_index *ix, int64_t id)
{
    uintptr_t pos = (uintptr_t)kp_map_del(&ix->by_id, id);
    if (!pos)
        return;
    size_t i = pos - 1;
    kp_task_clear(ix->tasks[i]);
    free(ix->tasks[i]);
    ix->tasks[i] = ix->tasks[--ix->n];
    if (i < ix->n)
        kp_map_put(&ix->by_id, ix->tasks[i]->id, (void *)(uintptr_t)(i + 1));
}

typedef struct name_ent {
    const char *name;
    size_t pos;
} name_ent;

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const name_ent *)a)->name, ((const name_ent *)b)->name);
}

static void add_downstream(kp_task *up, int64_t id)
{
    for (size_t i = 0; i < up->n_downstream; i++)
        if (up->downstream[i] == id)
            return;
    if (up->n_downstream == up->cap_downstream) {
        size_t ncap = up->cap_downstream ? up->cap_downstream * 2 : 4;
        int64_t *nd = orr_xrealloc(up->downstream, ncap * sizeof *nd);
        up->downstream = nd;
        up->cap_downstream = ncap;
    }
    up->downstream[up->n_downstream++] = id;
}

size_t kp_index_link(kp_index *ix, char *cycle_msg, size_t n)
{
    name_ent *names = orr_xcalloc(ix->n, sizeof *names);
    for (size_t i = 0; i < ix->n; i++) {
        names[i].name = ix->tasks[i]->name;
        names[i].pos = i;
        ix->tasks[i]->n_downstream = 0;
        ix->tasks[i]->in_cycle = 0;
    }
    qsort(names, ix->n, sizeof *names, name_cmp);
    size_t n_edges = 0, cap_edges = 64;
    size_t(*edges)[2] = orr_xcalloc(cap_edges, sizeof *edges);
    for (size_t i = 0; i < ix->n; i++) {
        kp_task *t = ix->tasks[i];
        for (size_t d = 0; d < t->n_deps; d++) {
            kp_dep *dep = &t->deps[d];
            dep->upstream_id = 0;
            if (!dep->task)
                continue;
            name_ent key = {dep->task, 0};
            name_ent *hit = bsearch(&key, names, ix->n, sizeof *names, name_cmp);
            if (!hit)
                continue;
            kp_task *up = ix->tasks[hit->pos];
            dep->upstream_id = up->id;
            add_downstream(up, t->id);
            if (n_edges == cap_edges) {
                cap_edges *= 2;
                edges = orr_xrealloc(edges, cap_edges * sizeof *edges);
            }
            edges[n_edges][0] = i;
            edges[n_edges][1] = hit->pos;
            n_edges++;
        }
    }
    free(names);
    /* flag every task on a cycle: find one, flag it, drop its edges, repeat */
    size_t flagged = 0, *path = orr_xcalloc(ix->n + 1, sizeof *path), len = 0;
    int first = 1;
    while (kp_dag_find_cycle(ix->n, (const size_t(*)[2])edges, n_edges, path, &len)) {
        if (first && cycle_msg && n) {
            size_t off = 0;
            cycle_msg[0] = '\0';
            for (size_t k = 0; k < len && off < n; k++)
                off += (size_t)snprintf(cycle_msg + off, n - off, "%s%s", k ? " -> " : "",
                                        ix->tasks[path[k]]->name);
            first = 0;
        }
        for (size_t k = 0; k + 1 < len; k++) {
            if (!ix->tasks[path[k]]->in_cycle)
                flagged++;
            ix->tasks[path[k]]->in_cycle = 1;
        }
        /* remove edges out of flagged nodes so the next search finds another */
        size_t w = 0;
        for (size_t e = 0; e < n_edges; e++)
            if (!ix->tasks[edges[e][0]]->in_cycle) {
                edges[w][0] = edges[e][0];
                edges[w][1] = edges[e][1];
                w++;
            }
        n_edges = w;
    }
    free(path);
    free(edges);
    return flagged;
}

/* Iterative DFS with colours: 0 white, 1 on the stack, 2 done. */
int kp_dag_find_cycle(size_t n, const size_t (*edges)[2], size_t n_edges, size_t *path,
                      size_t *path_len)
{
    *path_len = 0;
    if (n == 0)
        return 0;
    /* adjacency in CSR form */
    size_t *start = orr_xcalloc(n + 1, sizeof *start), *adj = orr_xcalloc(n_edges, sizeof *adj);
    for (size_t e = 0; e < n_edges; e++)
        start[edges[e][0] + 1]++;
    for (size_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    size_t *fill = orr_xcalloc(n, sizeof *fill);
    for (size_t e = 0; e < n_edges; e++)
        adj[start[edges[e][0]] + fill[edges[e][0]]++] = edges[e][1];
    unsigned char *colour = orr_xcalloc(n, 1);
    size_t *stack = orr_xcalloc(n, sizeof *stack), *next = orr_xcalloc(n, sizeof *next);
    int found = 0;
    for (size_t root = 0; root < n && !found; root++) {
        if (colour[root])
            continue;
        size_t sp = 0;
        stack[sp++] = root;
        colour[root] = 1;
        next[root] = start[root];
        while (sp && !found) {
            size_t v = stack[sp - 1];
            if (next[v] == start[v + 1]) {
                colour[v] = 2;
                sp--;
                continue;
            }
            size_t w = adj[next[v]++];
            if (colour[w] == 0) {
                colour[w] = 1;
                next[w] = start[w];
                stack[sp++] = w;
            } else if (colour[w] == 1) {
                /* the cycle is w ... v -> w on the stack */
                size_t k = sp;
                while (stack[k - 1] != w)
                    k--;
                for (size_t j = k - 1; j < sp; j++)
                    path[(*path_len)++] = stack[j];
                path[(*path_len)++] = w;
                found = 1;
            }
        }
    }
    free(start);
    free(adj);
    free(fill);
    free(colour);
    free(stack);
    free(next);
    return found;
}

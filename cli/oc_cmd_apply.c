/* oc_cmd_apply.c - tasks as code: `validate` (offline), `apply` (plan, then
 * with --yes carry it out) and `export` (today's specs as files, which
 * `apply` reads back without a change).
 *
 * apply reads the whole platform state it compares with first (every task,
 * active or not; the pools; each named workflow and data source), builds
 * the plan (oc_plan.h) and only then writes, in an order the platform
 * accepts: pools and data sources, tasks with their upstreams first, then
 * workflows (whose task names become ids), then deactivations. Task
 * updates carry If-Match with the version the plan saw, so a change made
 * meanwhile by someone else stops the apply with a conflict (exit 4)
 * instead of being overwritten. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oc_cmds.h"
#include "oc_http.h"
#include "oc_plan.h"
#include "oc_spec.h"
#include "orr_alloc.h"
#include "orr_buf.h"

/* Load every PATH; print the problems. Exit code 0 or 2 (EIO: 1). */
static int oc__load_all(oc_ctx *ctx, const oc_args *a, oc_docs *docs)
{
    if (a->npos < 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "which files? (a file or folder of specs)");
    oc_diags d = {ORR_BUF_INIT, 0};
    int io = 0;
    for (int i = 0; i < a->npos; i++)
        if (oc_spec_load(a->pos[i], docs, &d) == ORR_EIO)
            io = 1;
    /* The same object twice is an error naming both places. */
    for (size_t i = 0; i < docs->n; i++)
        for (size_t k = 0; k < i; k++)
            if (strcmp(docs->v[i].kind, docs->v[k].kind) == 0 &&
                strcmp(docs->v[i].name, docs->v[k].name) == 0)
                oc_diag_add(&d, docs->v[i].file, docs->v[i].line, "spec.name",
                            "%s %s is also defined at %s:%d", docs->v[i].kind, docs->v[i].name,
                            docs->v[k].file, docs->v[k].line);
    int rc = OC_EXIT_OK;
    if (d.n) {
        fputs(d.text.data, ctx->err);
        rc = io ? OC_EXIT_FAILED : OC_EXIT_USAGE;
    }
    oc_diags_free(&d);
    return rc;
}

int oc_run_validate(oc_ctx *ctx, const oc_args *a)
{
    oc_docs docs = {NULL, 0};
    int rc = oc__load_all(ctx, a, &docs);
    if (rc == OC_EXIT_OK && !ctx->quiet) {
        if (ctx->json) {
            json_t *items = json_array();
            for (size_t i = 0; i < docs.n; i++)
                json_array_append_new(items, json_pack("{s:s,s:s,s:s,s:i}", "kind", docs.v[i].kind,
                                                       "name", docs.v[i].name, "file",
                                                       docs.v[i].file, "line", docs.v[i].line));
            json_t *o = json_pack("{s:b,s:o}", "ok", 1, "items", items);
            oc_print_json(ctx, o);
            json_decref(o);
        } else {
            for (size_t i = 0; i < docs.n; i++)
                fprintf(ctx->out, "ok %s %s (%s:%d)\n", docs.v[i].kind, docs.v[i].name,
                        docs.v[i].file, docs.v[i].line);
        }
    }
    oc_docs_free(&docs);
    return rc;
}

/* -------------------------------------------------------- platform state */

/* Every item of a paged list (limit 1000 per page), appended to *items. */
static orr_status oc__list_all(oc_ctx *ctx, const char *path, json_t *items, orr_err *err)
{
    char *token = NULL;
    orr_status s = ORR_OK;
    do {
        orr_buf p = ORR_BUF_INIT;
        orr_buf_appendf(&p, "%s%slimit=1000", path, strchr(path, '?') ? "&" : "?");
        if (token) {
            char *e = oc_esc(token);
            orr_buf_appendf(&p, "&page_token=%s", e);
            free(e);
        }
        free(token);
        token = NULL;
        json_t *out = NULL;
        s = oc_api(ctx, "GET", p.data, NULL, &out, err);
        orr_buf_free(&p);
        if (s != ORR_OK)
            break;
        json_array_extend(items, json_is_array(out) ? out : json_object_get(out, "items"));
        const char *next = json_string_value(json_object_get(out, "next_page_token"));
        if (next && *next)
            token = orr_xstrdup(next);
        json_decref(out);
    } while (token);
    free(token);
    return s;
}

static json_t *oc__by(json_t *items, const char *key, const char *val)
{
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o)
    {
        const char *v = json_string_value(json_object_get(o, key));
        if (v && strcmp(v, val) == 0)
            return o;
    }
    return NULL;
}

static json_t *oc__task_by_id(json_t *tasks, json_int_t id)
{
    size_t i;
    json_t *o;
    json_array_foreach(tasks, i,
                       o) if (json_integer_value(json_object_get(o, "id")) == id) return o;
    return NULL;
}

/* GET a single object; *out NULL when it does not exist (404). */
static orr_status oc__get_opt(oc_ctx *ctx, const char *coll, const char *name, json_t **out,
                              orr_err *err)
{
    char *e = oc_esc(name);
    orr_buf p = ORR_BUF_INIT;
    orr_buf_appendf(&p, "/api/v1/%s/%s", coll, e);
    free(e);
    orr_status s = oc_api(ctx, "GET", p.data, NULL, out, err);
    orr_buf_free(&p);
    if (s == ORR_ENOTFOUND) {
        *out = NULL;
        orr_err_clear(err);
        return ORR_OK;
    }
    return s;
}

/* The spec of a workflow as a file holds it: task names, in the
 * workflow's order. */
static json_t *oc__workflow_spec(const json_t *wf, json_t *tasks)
{
    json_t *names = json_array();
    size_t i;
    json_t *id;
    json_array_foreach(json_object_get(wf, "task_ids"), i, id)
    {
        json_t *t = oc__task_by_id(tasks, json_integer_value(id));
        char buf[32];
        snprintf(buf, sizeof(buf), "#%lld", (long long)json_integer_value(id));
        json_array_append_new(names,
                              json_string(t ? json_string_value(json_object_get(t, "name")) : buf));
    }
    json_t *spec = json_pack("{s:O,s:O}", "name", json_object_get(wf, "name"), "team",
                             json_object_get(wf, "team"));
    const char *desc = json_string_value(json_object_get(wf, "description"));
    if (desc && *desc)
        json_object_set_new(spec, "description", json_string(desc));
    json_object_set_new(spec, "tasks", names);
    return spec;
}

static int oc__cmp_json_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* A workflow spec with its task list sorted: the platform keeps a set. */
static json_t *oc__wf_canon(const json_t *spec)
{
    json_t *c = json_deep_copy(spec);
    json_t *tasks = json_object_get(c, "tasks");
    size_t n = json_array_size(tasks);
    json_t **v = orr_xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(tasks, i));
    qsort(v, n, sizeof(*v), oc__cmp_json_str);
    json_t *sorted = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(sorted, v[i]);
    free(v);
    json_object_set_new(c, "tasks", sorted);
    return c;
}

/* A data source as its reference spec compares: name, kind, params. */
static json_t *oc__ds_spec(const json_t *ds)
{
    return json_pack("{s:O,s:O,s:O}", "name", json_object_get(ds, "name"), "kind",
                     json_object_get(ds, "kind"), "params", json_object_get(ds, "params"));
}

/* ------------------------------------------------------------------ plan */

typedef struct oc__state {
    json_t *tasks;     /* every task, active or not */
    json_t *pools;     /* every pool */
    json_t *workflows; /* name -> workflow (GET answer) of the files' workflows */
    json_t *sources;   /* name -> data source of the files' data sources */
} oc__state;

static void oc__state_free(oc__state *st)
{
    json_decref(st->tasks);
    json_decref(st->pools);
    json_decref(st->workflows);
    json_decref(st->sources);
}

static orr_status oc__read_state(oc_ctx *ctx, const oc_docs *docs, oc__state *st, orr_err *err)
{
    st->tasks = json_array();
    st->pools = json_array();
    st->workflows = json_object();
    st->sources = json_object();
    orr_status s = oc__list_all(ctx, "/api/v1/tasks?active=any", st->tasks, err);
    int need_pools = 0;
    for (size_t i = 0; s == ORR_OK && i < docs->n; i++) {
        const oc_doc *d = &docs->v[i];
        json_t *o = NULL;
        if (strcmp(d->kind, "pool") == 0)
            need_pools = 1;
        else if (strcmp(d->kind, "workflow") == 0) {
            s = oc__get_opt(ctx, "workflows", d->name, &o, err);
            if (o)
                json_object_set_new(st->workflows, d->name, o);
        } else if (strcmp(d->kind, "datasource") == 0) {
            s = oc__get_opt(ctx, "datasources", d->name, &o, err);
            if (o)
                json_object_set_new(st->sources, d->name, o);
        }
    }
    if (s == ORR_OK && need_pools)
        s = oc__list_all(ctx, "/api/v1/pools", st->pools, err);
    return s;
}

/* Index of the task doc named name, or -1. */
static int oc__doc_index(const oc_docs *docs, const char *kind, const char *name)
{
    for (size_t i = 0; i < docs->n; i++)
        if (strcmp(docs->v[i].kind, kind) == 0 && strcmp(docs->v[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Task docs in an order where each comes after the upstreams the files
 * also define (a cycle keeps the files' order for the rest). */
static size_t *oc__task_order(const oc_docs *docs, size_t *n_out)
{
    size_t *order = orr_xcalloc(docs->n + 1, sizeof(*order)), n = 0;
    char *done = orr_xcalloc(docs->n + 1, 1);
    for (int progress = 1; progress;) {
        progress = 0;
        for (size_t i = 0; i < docs->n; i++) {
            if (done[i] || strcmp(docs->v[i].kind, "task") != 0)
                continue;
            int ready = 1;
            size_t k;
            json_t *up;
            json_array_foreach(json_object_get(docs->v[i].spec, "upstreams"), k, up)
            {
                const char *t = json_string_value(json_object_get(up, "task"));
                int j = t ? oc__doc_index(docs, "task", t) : -1;
                if (j >= 0 && (size_t)j != i && !done[j])
                    ready = 0;
            }
            if (ready) {
                done[i] = 1;
                order[n++] = i;
                progress = 1;
            }
        }
    }
    for (size_t i = 0; i < docs->n; i++)
        if (!done[i] && strcmp(docs->v[i].kind, "task") == 0)
            order[n++] = i;
    free(done);
    *n_out = n;
    return order;
}

static void oc__plan_kind(const oc_docs *docs, const char *kind, oc__state *st, oc_plan *plan)
{
    for (size_t i = 0; i < docs->n; i++) {
        const oc_doc *d = &docs->v[i];
        if (strcmp(d->kind, kind) != 0)
            continue;
        json_t *cur = NULL;
        if (strcmp(kind, "pool") == 0) {
            json_t *p = oc__by(st->pools, "name", d->name);
            if (p)
                cur = json_pack("{s:O,s:O}", "name", json_object_get(p, "name"), "capacity",
                                json_object_get(p, "capacity"));
        } else {
            json_t *ds = json_object_get(st->sources, d->name);
            if (ds)
                cur = oc__ds_spec(ds);
        }
        json_t *want = json_deep_copy(d->spec);
        int pw_missing = 0;
        if (strcmp(kind, "datasource") == 0) {
            json_object_del(want, "password_env");
            json_t *ds = json_object_get(st->sources, d->name);
            pw_missing = json_object_get(d->spec, "password_env") &&
                         (!ds || !json_is_true(json_object_get(ds, "has_password")));
        }
        if (!cur) {
            oc_plan_add(plan, OC_CREATE, kind, d->name, d);
        } else {
            oc_changes ch = {NULL, 0};
            oc_diff(cur, want, "spec", &ch);
            oc_step *s =
                oc_plan_add(plan, ch.n || pw_missing ? OC_UPDATE : OC_UNCHANGED, kind, d->name, d);
            s->diff = ch;
            if (pw_missing)
                s->note = orr_xstrdup("the password is set from spec.password_env");
        }
        json_decref(cur);
        json_decref(want);
    }
}

/* Build the plan. Problems found on the way (a workflow naming a task that
 * exists nowhere) go to diags. */
static void oc__plan(const oc_docs *docs, oc__state *st, int prune, oc_plan *plan, oc_diags *diags)
{
    oc__plan_kind(docs, "pool", st, plan);
    oc__plan_kind(docs, "datasource", st, plan);
    size_t nt;
    size_t *order = oc__task_order(docs, &nt);
    for (size_t k = 0; k < nt; k++) {
        const oc_doc *d = &docs->v[order[k]];
        size_t u;
        json_t *up;
        json_array_foreach(json_object_get(d->spec, "upstreams"), u, up)
        {
            const char *name = json_string_value(json_object_get(up, "task"));
            if (name && oc__doc_index(docs, "task", name) < 0 && !oc__by(st->tasks, "name", name)) {
                char p[64];
                snprintf(p, sizeof(p), "spec.upstreams[%zu].task", u);
                oc_diag_add(diags, d->file, oc_doc_line(d, p), p,
                            "no task named \"%s\" on the platform or in the files", name);
            }
        }
        json_t *cur = oc__by(st->tasks, "name", d->name);
        if (!cur) {
            oc_plan_add(plan, OC_CREATE, "task", d->name, d);
            continue;
        }
        oc_changes ch = {NULL, 0};
        oc_diff(json_object_get(cur, "spec"), d->spec, "spec", &ch);
        int inactive = !json_is_true(json_object_get(cur, "active"));
        oc_step *s =
            oc_plan_add(plan, ch.n || inactive ? OC_UPDATE : OC_UNCHANGED, "task", d->name, d);
        s->diff = ch;
        s->id = json_integer_value(json_object_get(cur, "id"));
        s->version = (int)json_integer_value(json_object_get(cur, "current_version"));
        if (inactive) {
            s->reactivate = 1;
            s->note = orr_xstrdup("deactivated on the platform: reactivated");
        }
    }
    free(order);
    for (size_t i = 0; i < docs->n; i++) {
        const oc_doc *d = &docs->v[i];
        if (strcmp(d->kind, "workflow") != 0)
            continue;
        size_t k;
        json_t *tn;
        json_array_foreach(json_object_get(d->spec, "tasks"), k, tn)
        {
            const char *name = json_string_value(tn);
            if (oc__doc_index(docs, "task", name) < 0 && !oc__by(st->tasks, "name", name)) {
                char p[64];
                snprintf(p, sizeof(p), "spec.tasks[%zu]", k);
                oc_diag_add(diags, d->file, oc_doc_line(d, p), p,
                            "no task named \"%s\" on the platform or in the files", name);
            }
        }
        json_t *wf = json_object_get(st->workflows, d->name);
        if (!wf) {
            oc_plan_add(plan, OC_CREATE, "workflow", d->name, d);
            continue;
        }
        json_t *cur = oc__workflow_spec(wf, st->tasks);
        /* A description the file leaves out is kept as it is (so is the
         * platform's answer to a PUT without one); "" is no description. */
        if (!json_object_get(d->spec, "description"))
            json_object_del(cur, "description");
        else if (!json_object_get(cur, "description"))
            json_object_set_new(cur, "description", json_string(""));
        json_t *a = oc__wf_canon(cur), *b = oc__wf_canon(d->spec);
        oc_changes ch = {NULL, 0};
        oc_diff(a, b, "spec", &ch);
        oc_step *s = oc_plan_add(plan, ch.n ? OC_UPDATE : OC_UNCHANGED, "workflow", d->name, d);
        s->diff = ch;
        json_decref(cur);
        json_decref(a);
        json_decref(b);
    }
    if (!prune)
        return;
    /* Prune: active tasks of the files' teams, and of the files' workflows
     * as the platform holds them today, that no file defines. */
    size_t i;
    json_t *t;
    json_array_foreach(st->tasks, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *team = json_string_value(json_object_get(t, "team"));
        if (!json_is_true(json_object_get(t, "active")) || oc__doc_index(docs, "task", name) >= 0)
            continue;
        const char *why = NULL;
        for (size_t k = 0; k < docs->n && !why; k++) {
            const oc_doc *d = &docs->v[k];
            if (strcmp(d->kind, "task") == 0 && team &&
                strcmp(json_string_value(json_object_get(d->spec, "team")), team) == 0)
                why = "team";
            if (strcmp(d->kind, "workflow") == 0) {
                json_t *wf = json_object_get(st->workflows, d->name);
                size_t m;
                json_t *id;
                json_array_foreach(json_object_get(wf, "task_ids"), m, id)
                {
                    if (json_integer_value(id) == json_integer_value(json_object_get(t, "id")))
                        why = "workflow";
                }
            }
        }
        if (!why)
            continue;
        oc_step *s = oc_plan_add(plan, OC_DEACTIVATE, "task", name, NULL);
        s->id = json_integer_value(json_object_get(t, "id"));
        s->note = orr_xstrdup(strcmp(why, "team") == 0
                                  ? "its team is in the files but the task is not"
                                  : "its workflow is in the files but the task is not");
    }
}

/* ----------------------------------------------------------------- apply */

/* Where a step's error points: file:line of the field when known. */
static int oc__step_fail(oc_ctx *ctx, const oc_step *s, const orr_err *e)
{
    if (s->doc) {
        const char *f = e->field;
        char p[160];
        /* Task create/update errors name "spec.x" (halleyd) or "x". */
        if (f[0] && strncmp(f, "spec", 4) != 0 && strcmp(s->kind, "task") != 0) {
            snprintf(p, sizeof(p), "spec.%s", f);
            f = p;
        }
        fprintf(ctx->err, "%s:%d: ", s->doc->file, f[0] ? oc_doc_line(s->doc, f) : s->doc->line);
    }
    fprintf(ctx->err, "%s %s %s: ", oc_action_name(s->act), s->kind, s->name);
    if (e->field[0])
        fprintf(ctx->err, "%s: ", e->field);
    fprintf(ctx->err, "%s\n", e->msg);
    return oc_exit_for(e->code);
}

static int oc__carry_out(oc_ctx *ctx, oc_plan *plan, oc__state *st)
{
    for (size_t i = 0; i < plan->n; i++) {
        oc_step *s = &plan->v[i];
        if (s->act == OC_UNCHANGED)
            continue;
        orr_err e;
        orr_err_clear(&e);
        orr_buf p = ORR_BUF_INIT;
        json_t *body = NULL, *out = NULL;
        const char *method = "PUT";
        char *en = oc_esc(s->name);
        if (strcmp(s->kind, "task") == 0) {
            if (s->act == OC_CREATE) {
                method = "POST";
                orr_buf_append_str(&p, "/api/v1/tasks");
                body = json_incref(s->doc->spec);
            } else if (s->act == OC_UPDATE) {
                orr_buf_appendf(&p, "/api/v1/tasks/%lld", (long long)s->id);
                body = json_incref(s->doc->spec);
            } else {
                method = "DELETE";
                orr_buf_appendf(&p, "/api/v1/tasks/%lld?reason=pruned+by+orrery+apply",
                                (long long)s->id);
            }
        } else if (strcmp(s->kind, "pool") == 0) {
            orr_buf_appendf(&p, "/api/v1/pools/%s", en);
            body = json_pack("{s:O}", "capacity", json_object_get(s->doc->spec, "capacity"));
        } else if (strcmp(s->kind, "datasource") == 0) {
            orr_buf_appendf(&p, "/api/v1/datasources/%s", en);
            body = json_pack("{s:O,s:O}", "kind", json_object_get(s->doc->spec, "kind"), "params",
                             json_object_get(s->doc->spec, "params"));
            const char *env = json_string_value(json_object_get(s->doc->spec, "password_env"));
            if (env) {
                const char *pw = getenv(env);
                if (!pw || !*pw) {
                    orr_err_set(&e, ORR_EINVAL, "spec.password_env",
                                "environment variable %s is not set", env);
                    free(en);
                    json_decref(body);
                    orr_buf_free(&p);
                    return oc__step_fail(ctx, s, &e);
                }
                json_object_set_new(body, "password", json_string(pw));
            }
        } else { /* workflow: task names to ids */
            orr_buf_appendf(&p, "/api/v1/workflows/%s", en);
            json_t *ids = json_array();
            size_t k;
            json_t *tn;
            json_array_foreach(json_object_get(s->doc->spec, "tasks"), k, tn)
            {
                json_t *t = oc__by(st->tasks, "name", json_string_value(tn));
                json_array_append(ids, json_object_get(t, "id"));
            }
            body = json_pack("{s:O,s:o}", "team", json_object_get(s->doc->spec, "team"), "task_ids",
                             ids);
            json_t *desc = json_object_get(s->doc->spec, "description");
            if (desc)
                json_object_set(body, "description", desc);
        }
        free(en);
        /* A task update is a compare-and-set on the version the plan saw;
         * a deactivated task is reactivated first (the file holds it). */
        orr_status rs = ORR_OK;
        if (s->reactivate) {
            orr_buf r = ORR_BUF_INIT;
            orr_buf_appendf(&r, "/api/v1/tasks/%lld/reactivate?reason=applied+by+orrery",
                            (long long)s->id);
            rs = oc_api(ctx, "POST", r.data, NULL, &out, &e);
            orr_buf_free(&r);
        }
        if (rs == ORR_OK && strcmp(s->kind, "task") == 0 && s->act == OC_UPDATE) {
            if (s->diff.n) {
                json_decref(out);
                out = NULL;
                rs = oc_api_if_match(ctx, p.data, body, s->version, &out, &e);
            }
        } else if (rs == ORR_OK) {
            rs = oc_api(ctx, method, p.data, body, &out, &e);
        }
        orr_buf_free(&p);
        json_decref(body);
        if (rs != ORR_OK) {
            json_decref(out);
            return oc__step_fail(ctx, s, &e);
        }
        /* A new task's id is needed by the workflows that follow. */
        if (strcmp(s->kind, "task") == 0 && out) {
            json_t *cur = oc__by(st->tasks, "name", s->name);
            if (cur)
                json_object_update(cur, out);
            else
                json_array_append(st->tasks, out);
        }
        json_decref(out);
        if (!ctx->json && !ctx->quiet)
            fprintf(ctx->out, "%s %s %s: done\n", oc_action_name(s->act), s->kind, s->name);
    }
    return OC_EXIT_OK;
}

int oc_run_apply(oc_ctx *ctx, const oc_args *a)
{
    oc_docs docs = {NULL, 0};
    oc__state st = {NULL, NULL, NULL, NULL};
    oc_plan plan = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    int rc = oc__load_all(ctx, a, &docs);
    if (rc)
        goto out;
    orr_err e;
    orr_err_clear(&e);
    if (oc__read_state(ctx, &docs, &st, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
        goto out;
    }
    oc__plan(&docs, &st, oc_flag(a, "prune"), &plan, &d);
    if (d.n) {
        fputs(d.text.data, ctx->err);
        rc = OC_EXIT_USAGE;
        goto out;
    }
    int n[4];
    oc_plan_counts(&plan, n);
    int todo = n[OC_CREATE] + n[OC_UPDATE] + n[OC_DEACTIVATE];
    int yes = oc_flag(a, "yes");
    if (!ctx->json)
        oc_plan_print(&plan, ctx->out);
    if (yes && todo)
        rc = oc__carry_out(ctx, &plan, &st);
    if (ctx->json) {
        json_t *j = oc_plan_json(&plan, yes && todo && rc == OC_EXIT_OK);
        oc_print_json(ctx, j);
        json_decref(j);
    } else if (!yes && todo) {
        fprintf(ctx->out, "nothing changed yet: run again with --yes to apply\n");
    } else if (!todo) {
        fprintf(ctx->out, "nothing to do\n");
    }
out:
    oc_diags_free(&d);
    oc_plan_free(&plan);
    oc__state_free(&st);
    oc_docs_free(&docs);
    return rc;
}

/* ---------------------------------------------------------------- export */

static int oc__mkdir_p(const char *path)
{
    char *d = orr_xstrdup(path);
    for (char *p = d + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST) {
            free(d);
            return -1;
        }
        *p = '/';
    }
    int r = mkdir(d, 0755) != 0 && errno != EEXIST ? -1 : 0;
    free(d);
    return r;
}

/* Write one document: to stdout (separated by ---) or to DIR/SUB/NAME.yaml. */
static int oc__emit(oc_ctx *ctx, const char *dir, const char *sub, const char *kind,
                    const json_t *spec, int *count)
{
    orr_buf y = ORR_BUF_INIT;
    oc_yaml_write(&y, kind, spec);
    int rc = OC_EXIT_OK;
    if (!dir) {
        fprintf(ctx->out, "%s%s", *count ? "---\n" : "", y.data);
    } else {
        orr_buf p = ORR_BUF_INIT;
        orr_buf_appendf(&p, "%s/%s", dir, sub);
        if (oc__mkdir_p(p.data) != 0) {
            rc = oc_fail(ctx, OC_EXIT_FAILED, "%s: %s", p.data, strerror(errno));
        } else {
            orr_buf_appendf(&p, "/%s.yaml", json_string_value(json_object_get(spec, "name")));
            FILE *f = fopen(p.data, "w");
            if (!f || fwrite(y.data, 1, y.len, f) != y.len || fclose(f) != 0) {
                rc = oc_fail(ctx, OC_EXIT_FAILED, "%s: %s", p.data, strerror(errno));
            } else if (!ctx->quiet) {
                fprintf(ctx->err, "wrote %s\n", p.data);
            }
        }
        orr_buf_free(&p);
    }
    (*count)++;
    orr_buf_free(&y);
    return rc;
}

/* A task spec with its keys in the order people write them (the platform
 * stores specs as jsonb, whose key order is its own); keys not listed
 * follow in their order. Same content, so apply sees no change. */
static json_t *oc__task_order_keys(const json_t *spec)
{
    static const char *const order[] = {
        "name",     "team",      "type",   "description", "schedule",     "timezone",
        "catch_up", "upstreams", "pools",  "slots",       "max_parallel", "priority",
        "retries",  "timeout",   "labels", "params",      "config",       NULL};
    json_t *out = json_object();
    for (int i = 0; order[i]; i++) {
        json_t *v = json_object_get(spec, order[i]);
        if (v)
            json_object_set(out, order[i], v);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)spec, k, v)
    {
        if (!json_object_get(out, k))
            json_object_set(out, k, v);
    }
    return out;
}

int oc_run_export(oc_ctx *ctx, const oc_args *a)
{
    const char *team = oc_arg(a, "team"), *wfname = oc_arg(a, "workflow"), *dir = oc_arg(a, "dir");
    json_t *tasks = json_array(), *wfs = json_array(), *pools = json_array(),
           *sources = json_array();
    orr_err e;
    orr_err_clear(&e);
    int rc = OC_EXIT_OK, count = 0;
    orr_status s = oc__list_all(ctx, "/api/v1/tasks?active=any", tasks, &e);
    if (s == ORR_OK) {
        if (wfname) {
            json_t *wf = NULL;
            s = oc__get_opt(ctx, "workflows", wfname, &wf, &e);
            if (s == ORR_OK && !wf) {
                rc = oc_fail(ctx, OC_EXIT_NOTFOUND, "no workflow named \"%s\"", wfname);
                goto out;
            }
            if (wf)
                json_array_append_new(wfs, wf);
        } else {
            json_t *list = json_array();
            orr_buf p = ORR_BUF_INIT;
            orr_buf_append_str(&p, "/api/v1/workflows");
            if (team) {
                char *t = oc_esc(team);
                orr_buf_appendf(&p, "?team=%s", t);
                free(t);
            }
            s = oc__list_all(ctx, p.data, list, &e);
            orr_buf_free(&p);
            size_t i;
            json_t *w;
            json_array_foreach(list, i, w)
            {
                json_t *full = NULL;
                if (s == ORR_OK)
                    s = oc__get_opt(ctx, "workflows", json_string_value(json_object_get(w, "name")),
                                    &full, &e);
                if (full)
                    json_array_append_new(wfs, full);
            }
            json_decref(list);
        }
    }
    if (s == ORR_OK && !team && !wfname)
        s = oc__list_all(ctx, "/api/v1/pools", pools, &e);
    if (s == ORR_OK && !team && !wfname)
        s = oc__list_all(ctx, "/api/v1/datasources", sources, &e);
    if (s != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
        goto out;
    }
    size_t i;
    json_t *o;
    json_array_foreach(pools, i, o)
    {
        json_t *spec = json_pack("{s:O,s:O}", "name", json_object_get(o, "name"), "capacity",
                                 json_object_get(o, "capacity"));
        rc = rc ? rc : oc__emit(ctx, dir, "pools", "pool", spec, &count);
        json_decref(spec);
    }
    json_array_foreach(sources, i, o)
    {
        json_t *spec = oc__ds_spec(o);
        rc = rc ? rc : oc__emit(ctx, dir, "datasources", "datasource", spec, &count);
        json_decref(spec);
    }
    json_array_foreach(tasks, i, o)
    {
        if (!json_is_true(json_object_get(o, "active")))
            continue;
        const char *tt = json_string_value(json_object_get(o, "team"));
        if (team && (!tt || strcmp(tt, team) != 0))
            continue;
        if (wfname) {
            int in = 0;
            size_t k;
            json_t *id;
            json_array_foreach(json_object_get(json_array_get(wfs, 0), "task_ids"), k, id)
            {
                if (json_integer_value(id) == json_integer_value(json_object_get(o, "id")))
                    in = 1;
            }
            if (!in)
                continue;
        }
        json_t *spec = oc__task_order_keys(json_object_get(o, "spec"));
        rc = rc ? rc : oc__emit(ctx, dir, "tasks", "task", spec, &count);
        json_decref(spec);
    }
    json_array_foreach(wfs, i, o)
    {
        json_t *spec = oc__workflow_spec(o, tasks);
        rc = rc ? rc : oc__emit(ctx, dir, "workflows", "workflow", spec, &count);
        json_decref(spec);
    }
out:
    json_decref(tasks);
    json_decref(wfs);
    json_decref(pools);
    json_decref(sources);
    return rc;
}

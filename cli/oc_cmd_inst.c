/* oc_cmd_inst.c - instance work from the command line: run, rerun, kill,
 * mark-success, suspend, resume, backfill, logs (one chunk after another,
 * or followed live over Server-Sent Events), and `ls` of tasks,
 * instances, executors and pools. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oc_cmds.h"
#include "oc_http.h"
#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_cron.h"
#include "orr_tz.h"

static const char *oc__s(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static void oc__instance_line(oc_ctx *ctx, const json_t *in)
{
    fprintf(ctx->out, "instance %lld %s %s: %s (attempt %lld)\n",
            (long long)json_integer_value(json_object_get(in, "id")), oc__s(in, "task_name"),
            oc__s(in, "schedule_time"), oc__s(in, "state"),
            (long long)json_integer_value(json_object_get(in, "attempt")));
}

/* One action on each instance named on the command line; the exit code is
 * that of the first failure. */
static int oc__act(oc_ctx *ctx, const oc_args *a, const char *action, json_t *extra)
{
    if (a->npos < 1) {
        json_decref(extra);
        return oc_fail(ctx, OC_EXIT_USAGE, "%s: which instance? (orrery %s ID...)", action, action);
    }
    int rc = OC_EXIT_OK;
    json_t *all = json_array();
    for (int i = 0; i < a->npos; i++) {
        int64_t id;
        int r = oc_parse_id(ctx, "instance", a->pos[i], &id);
        if (r) {
            rc = rc ? rc : r;
            continue;
        }
        json_t *body = extra ? json_deep_copy(extra) : json_object();
        const char *reason = oc_arg(a, "reason");
        if (reason)
            json_object_set_new(body, "reason", json_string(reason));
        orr_buf p = ORR_BUF_INIT;
        orr_buf_appendf(&p, "/api/v1/instances/%lld/actions/%s", (long long)id, action);
        json_t *out = NULL;
        orr_err e;
        orr_err_clear(&e);
        if (oc_api(ctx, "POST", p.data, body, &out, &e) != ORR_OK) {
            r = oc_fail_err(ctx, &e);
            rc = rc ? rc : r;
        } else if (ctx->json) {
            json_array_append(all, out);
        } else {
            oc__instance_line(ctx, out);
        }
        json_decref(out);
        json_decref(body);
        orr_buf_free(&p);
    }
    if (ctx->json)
        oc_print_json(ctx, all);
    json_decref(all);
    json_decref(extra);
    return rc;
}

/* The members of a rerun answer, one line each, and how many moved. */
static void oc__print_rerun(oc_ctx *ctx, const json_t *out)
{
    int dry = json_is_true(json_object_get(out, "dry_run"));
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(out, "members"), k, m)
    {
        fprintf(ctx->out, "%s", json_is_true(json_object_get(m, "rerun")) ? "" : "(left) ");
        oc__instance_line(ctx, json_object_get(m, "instance"));
    }
    size_t missing = json_array_size(json_object_get(out, "missing"));
    fprintf(ctx->out, "%s%lld instance(s) %s", dry ? "dry run: " : "",
            (long long)json_integer_value(json_object_get(out, "rerun")),
            dry ? "would go back to waiting" : "back to waiting");
    if (missing)
        fprintf(ctx->out, "; %zu cycle(s) without an instance left out", missing);
    fputc('\n', ctx->out);
}

int oc_run_rerun_failed(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos != 1 || !oc_arg(a, "at"))
        return oc_fail(ctx, OC_EXIT_USAGE,
                       "rerun-failed: which run? (orrery rerun-failed WORKFLOW --at TIME)");
    char *at = oc_time_arg(oc_arg(a, "at"));
    json_t *body = json_pack("{s:s,s:b}", "schedule_time", at, "dry_run", oc_flag(a, "dry-run"));
    free(at);
    if (oc_arg(a, "reason"))
        json_object_set_new(body, "reason", json_string(oc_arg(a, "reason")));
    char *en = oc_esc(a->pos[0]);
    orr_buf p = ORR_BUF_INIT;
    orr_buf_appendf(&p, "/api/v1/workflows/%s/rerun-failed", en);
    free(en);
    json_t *out = NULL;
    orr_err e;
    orr_err_clear(&e);
    int rc = OC_EXIT_OK;
    if (oc_api(ctx, "POST", p.data, body, &out, &e) != ORR_OK)
        rc = oc_fail_err(ctx, &e);
    else if (ctx->json)
        oc_print_json(ctx, out);
    else
        oc__print_rerun(ctx, out);
    json_decref(out);
    json_decref(body);
    orr_buf_free(&p);
    return rc;
}

/* A rerun of each instance named, alone or with its downstream or upstream
 * instances of the same cycle (POST /instances/{id}/rerun, one transaction
 * per set). */
int oc_run_rerun(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos < 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "rerun: which instance? (orrery rerun ID...)");
    if (oc_flag(a, "downstream") && oc_flag(a, "upstream"))
        return oc_fail(ctx, OC_EXIT_USAGE, "rerun: --downstream or --upstream, not both");
    const char *scope = oc_flag(a, "downstream") ? "downstream"
                        : oc_flag(a, "upstream") ? "upstream"
                                                 : "instance";
    int rc = OC_EXIT_OK;
    json_t *all = json_array();
    for (int i = 0; i < a->npos; i++) {
        int64_t id;
        int r = oc_parse_id(ctx, "instance", a->pos[i], &id);
        if (r) {
            rc = rc ? rc : r;
            continue;
        }
        json_t *body = json_pack("{s:s,s:b}", "scope", scope, "dry_run", oc_flag(a, "dry-run"));
        if (oc_arg(a, "reason"))
            json_object_set_new(body, "reason", json_string(oc_arg(a, "reason")));
        if (oc_flag(a, "from-scratch"))
            json_object_set_new(body, "from_scratch", json_true());
        orr_buf p = ORR_BUF_INIT;
        orr_buf_appendf(&p, "/api/v1/instances/%lld/rerun", (long long)id);
        json_t *out = NULL;
        orr_err e;
        orr_err_clear(&e);
        if (oc_api(ctx, "POST", p.data, body, &out, &e) != ORR_OK) {
            r = oc_fail_err(ctx, &e);
            rc = rc ? rc : r;
        } else if (ctx->json) {
            json_array_append(all, out);
        } else {
            oc__print_rerun(ctx, out);
        }
        json_decref(out);
        json_decref(body);
        orr_buf_free(&p);
    }
    if (ctx->json)
        oc_print_json(ctx, all);
    json_decref(all);
    return rc;
}

int oc_run_kill(oc_ctx *ctx, const oc_args *a)
{
    return oc__act(ctx, a, "kill", NULL);
}

int oc_run_mark_success(oc_ctx *ctx, const oc_args *a)
{
    return oc__act(ctx, a, "mark-success", NULL);
}

int oc_run_suspend(oc_ctx *ctx, const oc_args *a)
{
    return oc__act(ctx, a, "suspend", NULL);
}

int oc_run_resume(oc_ctx *ctx, const oc_args *a)
{
    return oc__act(ctx, a, "resume", NULL);
}

/* The --param KEY=VALUE options as a JSON object (*out NULL when none).
 * Exit code 0, or 2 for a malformed one. */
static int oc__params(oc_ctx *ctx, const oc_args *a, json_t **out)
{
    *out = NULL;
    const char *kv;
    for (int i = 0; (kv = oc_arg_nth(a, "param", i)); i++) {
        const char *eq = strchr(kv, '=');
        if (!eq || eq == kv) {
            json_decref(*out);
            *out = NULL;
            return oc_fail(ctx, OC_EXIT_USAGE, "--param %s: expected KEY=VALUE", kv);
        }
        if (!*out)
            *out = json_object();
        char *k = orr_xstrndup(kv, (size_t)(eq - kv));
        json_object_set_new(*out, k, json_string(eq + 1));
        free(k);
    }
    return OC_EXIT_OK;
}

/* The slot "run now" means when --at is not given: the task's latest fire
 * time at or before now (its next one if it never fired yet), now for a
 * task without a schedule. Seconds since the epoch; -1 when the schedule
 * cannot be read here (then the caller asks for --at). */
static int64_t oc__latest_slot(const char *schedule, const char *zone, int64_t now)
{
    if (!schedule || !*schedule)
        return now;
    orr_cron c;
    const orr_tz *tz = NULL;
    orr_err e;
    if (orr_cron_parse_into(schedule, &c, &e) != ORR_OK ||
        orr_tz_load(zone && *zone ? zone : "UTC", &tz, &e) != ORR_OK)
        return -1;
    static const int64_t windows[] = {3600, 86400, 40 * 86400, 400 * 86400, 5 * 366 * 86400};
    for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
        int64_t t = now - windows[w], next, last = -1;
        for (int n = 0; n < 200000 && orr_cron_next(&c, tz, t, &next) == ORR_OK && next <= now; n++)
            last = t = next;
        if (last >= 0)
            return last;
    }
    int64_t next;
    return orr_cron_next(&c, tz, now, &next) == ORR_OK ? next : -1;
}

int oc_run_run(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos != 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "run: which task? (orrery run TASK)");
    json_t *params = NULL;
    int rc = oc__params(ctx, a, &params);
    if (rc)
        return rc;
    json_t *task = NULL;
    if ((rc = oc_task_find(ctx, a->pos[0], &task))) {
        json_decref(params);
        return rc;
    }
    json_t *body = json_object();
    if (params)
        json_object_set_new(body, "params", params);
    char *at = NULL;
    if (oc_arg(a, "at")) {
        at = oc_time_arg(oc_arg(a, "at"));
    } else {
        int64_t slot =
            oc__latest_slot(oc__s(task, "schedule"), oc__s(task, "timezone"), (int64_t)time(NULL));
        if (slot < 0) {
            rc = oc_fail(ctx, OC_EXIT_USAGE, "run: cannot read the schedule of %s here: give --at",
                         oc__s(task, "name"));
            goto out;
        }
        char buf[64];
        at = orr_xstrdup(orr_tz_format_utc(slot, buf, sizeof(buf)));
    }
    json_object_set_new(body, "schedule_time", json_string(at));
    if (oc_flag(a, "ignore-upstreams"))
        json_object_set_new(body, "ignore_upstreams", json_true());
    if (oc_arg(a, "reason"))
        json_object_set_new(body, "reason", json_string(oc_arg(a, "reason")));
    orr_buf p = ORR_BUF_INIT;
    orr_buf_appendf(&p, "/api/v1/tasks/%lld/run",
                    (long long)json_integer_value(json_object_get(task, "id")));
    json_t *out = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (oc_api(ctx, "POST", p.data, body, &out, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
    } else if (ctx->json) {
        oc_print_json(ctx, out);
    } else {
        oc__instance_line(ctx, json_object_get(out, "instance"));
    }
    json_decref(out);
    orr_buf_free(&p);
out:
    free(at);
    json_decref(body);
    json_decref(task);
    return rc;
}

int oc_run_backfill(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos != 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "backfill: which task? (orrery backfill TASK ...)");
    const char *from = oc_arg(a, "from"), *to = oc_arg(a, "to");
    if (!from || !to)
        return oc_fail(ctx, OC_EXIT_USAGE, "backfill: --from and --to are required");
    json_t *task = NULL;
    int rc = oc_task_find(ctx, a->pos[0], &task);
    if (rc)
        return rc;
    char *f = oc_time_arg(from), *t = oc_time_arg(to);
    json_t *body = json_pack("{s:s,s:s}", "from", f, "to", t);
    free(f);
    free(t);
    if (oc_flag(a, "downstream"))
        json_object_set_new(body, "include_downstream", json_true());
    if (oc_flag(a, "dry-run"))
        json_object_set_new(body, "dry_run", json_true());
    json_t *params = NULL;
    if ((rc = oc__params(ctx, a, &params)))
        goto out;
    if (params)
        json_object_set_new(body, "params", params);
    const char *mode = oc_arg(a, "mode"), *maxc = oc_arg(a, "max-cycles");
    if (mode)
        json_object_set_new(body, "mode", json_string(mode));
    if (maxc) {
        char *end;
        long v = strtol(maxc, &end, 10);
        if (*end || end == maxc) {
            rc = oc_fail(ctx, OC_EXIT_USAGE, "--max-cycles %s: not a number", maxc);
            goto out;
        }
        json_object_set_new(body, "max_cycles", json_integer(v));
        if (!mode)
            json_object_set_new(body, "mode", json_string("parallel"));
    }
    const char *pr = oc_arg(a, "priority");
    if (pr) {
        char *end;
        long v = strtol(pr, &end, 10);
        if (*end || end == pr) {
            rc = oc_fail(ctx, OC_EXIT_USAGE, "--priority %s: not a number", pr);
            goto out;
        }
        json_object_set_new(body, "priority", json_integer(v));
    }
    orr_buf p = ORR_BUF_INIT;
    orr_buf_appendf(&p, "/api/v1/tasks/%lld/backfill",
                    (long long)json_integer_value(json_object_get(task, "id")));
    json_t *out = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (oc_api(ctx, "POST", p.data, body, &out, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
    } else if (ctx->json) {
        oc_print_json(ctx, out);
    } else {
        size_t k;
        json_t *pl;
        json_array_foreach(json_object_get(out, "planned"), k, pl)
        {
            json_t *iid = json_object_get(pl, "instance_id");
            fprintf(ctx->out, "would %s %s %s%s\n", json_is_integer(iid) ? "find" : "create",
                    oc__s(pl, "task_name"), oc__s(pl, "schedule_time"),
                    json_is_true(json_object_get(pl, "downstream")) ? " (downstream)" : "");
        }
        json_t *created = json_object_get(out, "created"),
               *existing = json_object_get(out, "existing");
        fprintf(ctx->out, "backfill %s: %lld fire time(s), %zu instance(s) created, %zu existed\n",
                oc__s(task, "name"),
                (long long)json_integer_value(json_object_get(out, "fire_times")),
                json_array_size(created), json_array_size(existing));
        const json_t *lists[2] = {created, existing};
        for (int l = 0; l < 2; l++) {
            size_t i;
            json_t *id;
            json_array_foreach(lists[l], i, id)
            {
                if (json_is_integer(id))
                    fprintf(ctx->out, "instance %lld%s\n", (long long)json_integer_value(id),
                            l ? " (existed)" : "");
            }
        }
    }
    json_decref(out);
    orr_buf_free(&p);
out:
    json_decref(body);
    json_decref(task);
    return rc;
}

/* ---------------------------------------------------------------- logs */

struct oc__follow {
    oc_ctx *ctx;
    int64_t offset;
    int attempt;
    int ended;
    orr_err err;
};

static int oc__on_event(void *cls, const char *event, json_t *data)
{
    struct oc__follow *f = cls;
    if (strcmp(event, "log") == 0) {
        json_t *d = json_object_get(data, "data");
        if (json_is_string(d)) {
            fwrite(json_string_value(d), 1, json_string_length(d), f->ctx->out);
            fflush(f->ctx->out);
        }
        json_t *no = json_object_get(data, "next_offset");
        if (json_is_integer(no))
            f->offset = json_integer_value(no);
        json_t *at = json_object_get(data, "attempt");
        if (json_is_integer(at))
            f->attempt = (int)json_integer_value(at);
    } else if (strcmp(event, "end") == 0) {
        f->ended = 1;
        return 1;
    } else if (strcmp(event, "error") == 0) {
        json_t *e = json_object_get(data, "error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        orr_err_set(&f->err, ORR_EINTERNAL, json_string_value(json_object_get(e, "field")), "%s",
                    msg ? msg : "the live log failed");
        f->ended = -1;
        return 1;
    }
    return 0;
}

/* The final state of an instance as an exit code: 0 for success. */
static int oc__outcome(oc_ctx *ctx, int64_t id)
{
    orr_buf p = ORR_BUF_INIT;
    orr_buf_appendf(&p, "/api/v1/instances/%lld", (long long)id);
    json_t *in = NULL;
    orr_err e;
    orr_err_clear(&e);
    int rc;
    if (oc_api(ctx, "GET", p.data, NULL, &in, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
    } else {
        const char *st = oc__s(in, "state");
        rc = strcmp(st, "success") == 0 || strcmp(st, "marked_success") == 0 ? OC_EXIT_OK
                                                                             : OC_EXIT_FAILED;
        if (!ctx->quiet)
            fprintf(ctx->err, "orrery: instance %lld ended %s%s%s\n", (long long)id, st,
                    *oc__s(in, "reason") ? ": " : "", oc__s(in, "reason"));
    }
    json_decref(in);
    orr_buf_free(&p);
    return rc;
}

int oc_run_logs(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos != 1)
        return oc_fail(ctx, OC_EXIT_USAGE, "logs: which instance? (orrery logs ID [-f])");
    int64_t id, attempt = 0;
    int rc = oc_parse_id(ctx, "instance", a->pos[0], &id);
    if (rc)
        return rc;
    if (oc_arg(a, "attempt") &&
        (rc = oc_parse_id(ctx, "--attempt", oc_arg(a, "attempt"), &attempt)))
        return rc;
    orr_err e;
    orr_err_clear(&e);
    if (oc_flag(a, "follow") && oc_flag(a, "timestamps"))
        return oc_fail(ctx, OC_EXIT_USAGE,
                       "logs: --timestamps reads a log as it is now; leave -f out for it");
    if (oc_flag(a, "follow")) {
        struct oc__follow f = {.ctx = ctx, .attempt = (int)attempt};
        /* A dropped connection is picked up again where it stopped. */
        for (int tries = 0; !f.ended && tries < 20; tries++) {
            orr_buf p = ORR_BUF_INIT;
            orr_buf_appendf(&p, "/api/v1/instances/%lld/log?follow=1&offset=%lld", (long long)id,
                            (long long)f.offset);
            if (f.attempt)
                orr_buf_appendf(&p, "&attempt=%d", f.attempt);
            orr_status s = oc_api_sse(ctx, p.data, oc__on_event, &f, &e);
            orr_buf_free(&p);
            if (s != ORR_OK && s != ORR_EUNAVAIL)
                return oc_fail_err(ctx, &e);
            if (s == ORR_EUNAVAIL && !f.ended)
                sleep(1); /* galaxyd away or busy with other streams: retry shortly */
        }
        if (f.ended < 0)
            return oc_fail_err(ctx, &f.err);
        if (!f.ended)
            return oc_fail_err(ctx, &e);
        return oc__outcome(ctx, id);
    }
    /* What the task wrote, byte for byte (or each line behind the time
     * executord read it), streamed from the download route. */
    orr_buf p = ORR_BUF_INIT;
    orr_buf_appendf(&p, "/api/v1/instances/%lld/log/download?timestamps=%d", (long long)id,
                    oc_flag(a, "timestamps"));
    if (attempt)
        orr_buf_appendf(&p, "&attempt=%lld", (long long)attempt);
    orr_status s = oc_api_download(ctx, p.data, ctx->out, &e);
    orr_buf_free(&p);
    if (s != ORR_OK)
        return oc_fail_err(ctx, &e);
    fflush(ctx->out);
    return OC_EXIT_OK;
}

/* ------------------------------------------------------------------ ls */

static int oc__limit(oc_ctx *ctx, const oc_args *a, long *limit)
{
    *limit = 100;
    const char *l = oc_arg(a, "limit");
    if (l) {
        char *end;
        *limit = strtol(l, &end, 10);
        if (*end || end == l || *limit < 1 || *limit > 1000)
            return oc_fail(ctx, OC_EXIT_USAGE, "--limit %s: must be 1 to 1000", l);
    }
    return OC_EXIT_OK;
}

static void oc__q(orr_buf *p, const char *key, const char *val)
{
    if (!val)
        return;
    char *e = oc_esc(val);
    orr_buf_appendf(p, "&%s=%s", key, e);
    free(e);
}

static char *oc__int(const json_t *v)
{
    orr_buf b = ORR_BUF_INIT;
    if (json_is_integer(v))
        orr_buf_appendf(&b, "%lld", (long long)json_integer_value(v));
    else if (json_is_boolean(v))
        orr_buf_append_str(&b, json_is_true(v) ? "yes" : "no");
    else if (json_is_string(v))
        orr_buf_append_str(&b, json_string_value(v));
    return orr_buf_detach(&b, NULL);
}

int oc_run_ls(oc_ctx *ctx, const oc_args *a)
{
    if (a->npos != 1)
        return oc_fail(ctx, OC_EXIT_USAGE,
                       "ls: what? (orrery ls tasks|instances|workflows|executors|pools)");
    const char *what = a->pos[0];
    long limit;
    int rc = oc__limit(ctx, a, &limit);
    if (rc)
        return rc;
    orr_buf p = ORR_BUF_INIT;
    json_t *task = NULL, *out = NULL;
    if (strcmp(what, "tasks") == 0) {
        orr_buf_appendf(&p, "/api/v1/tasks?limit=%ld&with_last_run=1", limit);
        oc__q(&p, "team", oc_arg(a, "team"));
        oc__q(&p, "q", oc_arg(a, "name"));
        if (oc_flag(a, "all"))
            orr_buf_append_str(&p, "&active=any");
    } else if (strcmp(what, "instances") == 0) {
        orr_buf_appendf(&p, "/api/v1/instances?limit=%ld", limit);
        if (oc_arg(a, "task")) {
            if ((rc = oc_task_find(ctx, oc_arg(a, "task"), &task)))
                goto out;
            orr_buf_appendf(&p, "&task_id=%lld",
                            (long long)json_integer_value(json_object_get(task, "id")));
        }
        oc__q(&p, "team", oc_arg(a, "team"));
        oc__q(&p, "state", oc_arg(a, "state"));
        oc__q(&p, "executor", oc_arg(a, "executor"));
        const char *tm[2] = {"from", "to"};
        for (int i = 0; i < 2; i++)
            if (oc_arg(a, tm[i])) {
                char *t = oc_time_arg(oc_arg(a, tm[i]));
                oc__q(&p, tm[i], t);
                free(t);
            }
    } else if (strcmp(what, "workflows") == 0) {
        orr_buf_appendf(&p, "/api/v1/workflows?limit=%ld", limit);
        oc__q(&p, "team", oc_arg(a, "team"));
    } else if (strcmp(what, "executors") == 0) {
        orr_buf_append_str(&p, "/api/v1/executors");
    } else if (strcmp(what, "pools") == 0) {
        orr_buf_appendf(&p, "/api/v1/pools?limit=%ld", limit);
    } else {
        rc = oc_fail(ctx, OC_EXIT_USAGE,
                     "ls %s: must be tasks, instances, workflows, executors or pools", what);
        goto out;
    }
    orr_err e;
    orr_err_clear(&e);
    if (oc_api(ctx, "GET", p.data, NULL, &out, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
        goto out;
    }
    if (ctx->json) {
        oc_print_json(ctx, out);
        goto out;
    }
    json_t *items = json_is_array(out) ? out : json_object_get(out, "items");
    oc_table t;
    size_t i;
    json_t *o;
    if (strcmp(what, "tasks") == 0) {
        static const char *const h[] = {"ID",       "NAME",   "TEAM",    "TYPE",
                                        "SCHEDULE", "ACTIVE", "LAST RUN"};
        oc_table_init(&t, 7, h);
        json_array_foreach(items, i, o)
        {
            char *id = oc__int(json_object_get(o, "id"));
            char *act = oc__int(json_object_get(o, "active"));
            const char *last = oc__s(json_object_get(o, "last_run"), "state");
            const char *row[] = {id,
                                 oc__s(o, "name"),
                                 oc__s(o, "team"),
                                 oc__s(o, "type"),
                                 oc__s(o, "schedule"),
                                 act,
                                 last};
            oc_table_row(&t, row);
            free(id);
            free(act);
        }
    } else if (strcmp(what, "instances") == 0) {
        static const char *const h[] = {"ID",      "TASK",     "SCHEDULE TIME", "STATE",
                                        "ATTEMPT", "EXECUTOR", "REASON"};
        oc_table_init(&t, 7, h);
        json_array_foreach(items, i, o)
        {
            char *id = oc__int(json_object_get(o, "id"));
            char *att = oc__int(json_object_get(o, "attempt"));
            const char *row[] = {
                id,  oc__s(o, "task_name"), oc__s(o, "schedule_time"), oc__s(o, "state"),
                att, oc__s(o, "executor"),  oc__s(o, "reason")};
            oc_table_row(&t, row);
            free(id);
            free(att);
        }
    } else if (strcmp(what, "workflows") == 0) {
        static const char *const h[] = {"NAME", "TEAM", "TASKS", "PAUSED", "DESCRIPTION"};
        oc_table_init(&t, 5, h);
        json_array_foreach(items, i, o)
        {
            char n[32];
            snprintf(n, sizeof(n), "%zu", json_array_size(json_object_get(o, "task_ids")));
            char *pz = oc__int(json_object_get(o, "paused"));
            const char *row[] = {oc__s(o, "name"), oc__s(o, "team"), n, pz,
                                 oc__s(o, "description")};
            oc_table_row(&t, row);
            free(pz);
        }
    } else if (strcmp(what, "executors") == 0) {
        static const char *const h[] = {"ID",    "HOST",   "SLOTS",    "USED",
                                        "ALIVE", "ACTIVE", "LAST SEEN"};
        oc_table_init(&t, 7, h);
        json_array_foreach(items, i, o)
        {
            char *sl = oc__int(json_object_get(o, "slots"));
            char *us = oc__int(json_object_get(o, "used"));
            char *al = oc__int(json_object_get(o, "alive"));
            char *ac = oc__int(json_object_get(o, "active"));
            const char *row[] = {oc__s(o, "id"),       oc__s(o, "host"), sl, us, al, ac,
                                 oc__s(o, "last_seen")};
            oc_table_row(&t, row);
            free(sl);
            free(us);
            free(al);
            free(ac);
        }
    } else {
        static const char *const h[] = {"NAME", "CAPACITY", "USED"};
        oc_table_init(&t, 3, h);
        json_array_foreach(items, i, o)
        {
            char *cap = oc__int(json_object_get(o, "capacity"));
            char *us = oc__int(json_object_get(o, "used"));
            const char *row[] = {oc__s(o, "name"), cap, us};
            oc_table_row(&t, row);
            free(cap);
            free(us);
        }
    }
    oc_table_print(&t, ctx->out);
    oc_table_free(&t);
    json_t *next = json_is_object(out) ? json_object_get(out, "next_page_token") : NULL;
    if (json_is_string(next))
        fprintf(ctx->err, "(more: raise --limit, or use --output json and page_token)\n");
out:
    json_decref(out);
    json_decref(task);
    orr_buf_free(&p);
    return rc;
}

/*
 * ex_xfer.c - what a transfer attempt needs of Halley around its run
 * (contract in ex_daemon.h):
 *   before: data sources (GetDataSourceSecret, with the worker token) and
 *           the saved watermark (GetWatermark), as ex_run_hooks for the
 *           runner;
 *   after:  process statistics from wormhole's summary (RecordProcessStats)
 *           and, for a successful incremental run, the new watermark
 *           (PutWatermark, compare-and-set against the value read before).
 * A failed run saves no watermark. Secrets are copied into the attempt's
 * arena only, and wiped in the response before it is freed.
 */
#include <stdio.h>
#include <string.h>

#include "ex_daemon.h"
#include "ex_runner.h"
#include "orr_log.h"

static int retryable(orr_status s)
{
    return s == ORR_EUNAVAIL || s == ORR_ETIMEOUT || s == ORR_EAGAIN;
}

/* Unary call, retried a few times on transient errors (about 3 s). */
static orr_status call_retry(ex_daemon *d, orr_rpc_client *c, const char *method,
                             const ProtobufCMessage *req, ProtobufCMessage **resp, orr_err *err)
{
    orr_status s = ORR_OK;
    int delay = 200;
    for (int i = 0; i < 5; i++) {
        s = orr_rpc_call_unary(c, method, req, resp, d->rpc_timeout_ms, err);
        if (!retryable(s) || atomic_load(&d->stopping))
            return s;
        ex_sleep_ms(delay);
        delay *= 2;
    }
    return s;
}

static orr_status hook_datasource(void *arg, orr_arena *a, const char *name, ex_datasource *out,
                                  orr_err *err)
{
    ex_xfer *x = arg;
    ex_daemon *d = x->d;
    if (!d->halley_worker)
        return orr_err_set(err, ORR_EPERM, "executor.halley_worker_token",
                           "is not set: this executor cannot read data sources");
    HL(GetDataSourceSecretRequest) rq = HL_INIT(GET_DATA_SOURCE_SECRET_REQUEST);
    rq.name = (char *)name;
    ProtobufCMessage *resp = NULL;
    orr_status s = call_retry(d, d->halley_worker, "GetDataSourceSecret", &rq.base, &resp, err);
    if (s != ORR_OK)
        return s;
    HL(DataSourceSecret) *ds = (HL(DataSourceSecret) *)resp;
    out->kind = orr_arena_strdup(a, ds->kind);
    out->params_json = orr_arena_strdup(a, ds->params_json);
    out->secret = orr_arena_strdup(a, ds->secret);
    explicit_bzero(ds->secret, strlen(ds->secret));
    protobuf_c_message_free_unpacked(resp, NULL);
    ORR_INFO("data source resolved", "instance=%lld name=%s kind=%s", (long long)x->instance_id,
             orr_log_q(name), orr_log_q(out->kind));
    return ORR_OK;
}

static orr_status hook_watermark(void *arg, orr_arena *a, const char *name, const char **value,
                                 orr_err *err)
{
    ex_xfer *x = arg;
    HL(GetWatermarkRequest) rq = HL_INIT(GET_WATERMARK_REQUEST);
    rq.task_id = x->task_id;
    rq.name = (char *)name;
    ProtobufCMessage *resp = NULL;
    orr_status s = call_retry(x->d, x->d->halley, "GetWatermark", &rq.base, &resp, err);
    if (s == ORR_ENOTFOUND) {
        *value = "";
        return ORR_OK;
    }
    if (s != ORR_OK)
        return s;
    *value = orr_arena_strdup(a, ((HL(Watermark) *)resp)->value);
    protobuf_c_message_free_unpacked(resp, NULL);
    ORR_INFO("watermark read", "instance=%lld task=%lld name=%s value=%s",
             (long long)x->instance_id, (long long)x->task_id, orr_log_q(name), orr_log_q(*value));
    return ORR_OK;
}

void ex_xfer_init(ex_xfer *x, ex_daemon *d, int64_t task_id, int64_t instance_id, int attempt)
{
    memset(x, 0, sizeof *x);
    x->d = d;
    x->task_id = task_id;
    x->instance_id = instance_id;
    x->attempt = attempt;
    x->hooks.arg = x;
    x->hooks.datasource = hook_datasource;
    x->hooks.watermark = hook_watermark;
}

/* RecordProcessStats from the summary in the log. */
static void record_stats(ex_xfer *x, orr_arena *a, const char *log_path)
{
    ex_stat stats[256]; /* the transfer's figures and up to 64 quality checks */
    size_t n = 0;
    int ok = 0;
    orr_err e;
    if (ex_transfer_summary(a, log_path, stats, 256, &n, &ok, &e) != ORR_OK) {
        ORR_WARN("no transfer summary: no process statistics", "instance=%lld err=%s",
                 (long long)x->instance_id, orr_log_q(e.msg));
        return;
    }
    HL(ProcessStat) *ps = orr_arena_calloc(a, n, sizeof *ps);
    HL(ProcessStat) **pp = orr_arena_calloc(a, n, sizeof *pp);
    for (size_t i = 0; i < n; i++) {
        HL(ProcessStat) tmp = HL_INIT(PROCESS_STAT);
        ps[i] = tmp;
        ps[i].key = (char *)stats[i].key;
        ps[i].value = stats[i].value;
        pp[i] = &ps[i];
    }
    HL(RecordProcessStatsRequest) rq = HL_INIT(RECORD_PROCESS_STATS_REQUEST);
    rq.instance_id = x->instance_id;
    rq.attempt = x->attempt;
    rq.stats = pp;
    rq.n_stats = n;
    ProtobufCMessage *resp = NULL;
    if (call_retry(x->d, x->d->halley, "RecordProcessStats", &rq.base, &resp, &e) != ORR_OK) {
        ORR_WARN("process statistics not recorded", "instance=%lld err=%s",
                 (long long)x->instance_id, orr_log_q(e.msg));
        return;
    }
    protobuf_c_message_free_unpacked(resp, NULL);
    ORR_INFO("process statistics recorded", "instance=%lld attempt=%d count=%zu",
             (long long)x->instance_id, x->attempt, n);
}

orr_status ex_xfer_after(ex_xfer *x, orr_arena *a, const ex_run_plan *plan, const char *log_path,
                         int succeeded, orr_err *err)
{
    record_stats(x, a, log_path);
    if (!succeeded || !plan->wm_name)
        return ORR_OK; /* a failed run saves nothing */
    const char *mark = NULL;
    orr_status s = ex_transfer_state_read(a, plan, &mark, err);
    if (s == ORR_ENOTFOUND) /* nothing read ever: no watermark to save */
        return ORR_OK;
    if (s != ORR_OK)
        return s;
    if (strcmp(mark, plan->wm_value) == 0)
        return ORR_OK;
    HL(PutWatermarkRequest) rq = HL_INIT(PUT_WATERMARK_REQUEST);
    rq.task_id = x->task_id;
    rq.name = (char *)plan->wm_name;
    rq.expected = (char *)plan->wm_value;
    rq.value = (char *)mark;
    rq.instance_id = x->instance_id;
    ProtobufCMessage *resp = NULL;
    s = call_retry(x->d, x->d->halley, "PutWatermark", &rq.base, &resp, err);
    if (s != ORR_OK) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return orr_err_set(err, s, "watermark", "%.200s not saved (%s -> %s): %s", plan->wm_name,
                           plan->wm_value[0] ? plan->wm_value : "none", mark, why);
    }
    protobuf_c_message_free_unpacked(resp, NULL);
    ORR_INFO("watermark saved", "instance=%lld task=%lld name=%s from=%s to=%s",
             (long long)x->instance_id, (long long)x->task_id, orr_log_q(plan->wm_name),
             orr_log_q(plan->wm_value), orr_log_q(mark));
    return ORR_OK;
}

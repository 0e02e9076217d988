/*
 * wh_engine.c - one transfer run (see wh_engine.h and the call order in wh.h).
 *
 * Threads: R reader threads take shards from a shared counter; each fills
 * batches from the pool and pushes every batch to every writer's queue (the
 * batch's refcount is the number of writers). Each writer has C channel
 * threads draining its queue; a channel's store state was opened by the main
 * thread, so a failed connection fails the run before any row moves. A
 * monitor thread prints progress and watches for interrupts.
 *
 * Failure: the first error is kept, the run is cancelled (pool and queues
 * wake every waiter), threads unwind, and every writer channel rolls back.
 * Success needs: no error, dirty rows within the limits, and for each writer
 * |rows expected - rows the store confirmed| <= max_row_diff. Only then are
 * the writers committed, the peripheries finished with success, and the
 * watermark saved.
 */
#include "wh_engine.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_log.h"
#include "wh_dirty.h"
#include "wh_map.h"
#include "wh_progress.h"
#include "wh_quality.h"
#include "wh_queue.h"
#include "wh_resume.h"
#include "wh_state.h"

static volatile sig_atomic_t wh_interrupted;

void wh_interrupt(void)
{
    wh_interrupted = 1;
}

typedef struct wh_wrun {
    wh_endpoint *ep;
    int channels;
    void **states;
    wh_queue q;
    wh_queue *cq; /* resume bookkeeping: one queue per channel, paired with a reader */
    int prepared;
    atomic_uint_fast64_t rows_in, rows, bytes, confirmed;
    atomic_uint_fast64_t skipped; /* rows of splits this writer committed in an earlier run */
} wh_wrun;

typedef struct wh_wthread {
    struct wh_run *run;
    wh_wrun *w;
    int channel;
} wh_wthread;

typedef struct wh_run {
    wh_ctx ctx;
    const wh_job *job;
    wh_schema src;
    wh_shards shards;
    atomic_size_t next_shard;
    atomic_size_t shards_done; /* shards read to their end */
    size_t shards_todo;        /* shards this run reads (resume leaves some out) */
    wh_pool pool;
    wh_wrun *w;
    size_t nw;
    int rchannels;
    atomic_uint_fast64_t rows_read, bytes_read;
    pthread_mutex_t err_lock;
    orr_err err;
    int failed;
    uint64_t t0;      /* rate limits count from here (threads start) */
    uint64_t started; /* the run's start, for the summary */
    pthread_mutex_t done_lock;
    pthread_cond_t done_cond;
    int done;
    wh_resume res;
    atomic_int next_reader;
} wh_run_t;

/* The queue a writer channel drains (resume: its own, fed by one reader). */
static wh_queue *wh_wqueue(wh_wrun *w, int ch)
{
    return w->cq ? &w->cq[ch] : &w->q;
}

/* Every queue of a writer: cancel (how=0) or close (how=1). */
static void wh_wqueues(wh_wrun *w, int how)
{
    int n = w->cq ? w->channels : 0;
    for (int c = -1; c < n; c++) {
        wh_queue *q = c < 0 ? &w->q : &w->cq[c];
        if (how)
            wh_queue_close(q);
        else
            wh_queue_cancel(q);
    }
}

static void wh_run_fail(wh_run_t *r, const orr_err *e)
{
    pthread_mutex_lock(&r->err_lock);
    if (!r->failed) {
        r->failed = 1;
        r->err = *e;
        ORR_ERROR("transfer failed", "job=%s field=%s error=%s", orr_log_q(r->job->name),
                  orr_log_q(e->field), orr_log_q(e->msg));
    }
    pthread_mutex_unlock(&r->err_lock);
    atomic_store(&r->ctx.cancel, 1);
    wh_pool_cancel(&r->pool);
    for (size_t i = 0; i < r->nw; i++)
        wh_wqueues(&r->w[i], 0);
}

static int wh_run_failed(wh_run_t *r)
{
    pthread_mutex_lock(&r->err_lock);
    int f = r->failed;
    pthread_mutex_unlock(&r->err_lock);
    return f;
}

/* Sleep so the totals stay under the job's rows/s and bytes/s. */
static void wh_rate_wait(wh_run_t *r, uint64_t rows, uint64_t bytes)
{
    const wh_job *j = r->job;
    double need = 0;
    if (j->rows_per_sec > 0)
        need = (double)rows / (double)j->rows_per_sec;
    if (j->bytes_per_sec > 0) {
        double nb = (double)bytes / (double)j->bytes_per_sec;
        if (nb > need)
            need = nb;
    }
    if (need <= 0)
        return;
    while (!wh_cancelled(&r->ctx)) {
        double elapsed = (double)(wh_now_ns() - r->t0) / 1e9;
        if (elapsed >= need)
            return;
        double s = need - elapsed;
        if (s > 0.1)
            s = 0.1;
        struct timespec ts = {0, (long)(s * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* Hand a filled batch to every writer queue. */
static orr_status wh_dispatch(wh_run_t *r, wh_batch *b, int reader)
{
    atomic_store(&b->refs, (int)r->nw);
    for (size_t i = 0; i < r->nw; i++) {
        if (wh_queue_push(wh_wqueue(&r->w[i], reader), b) != ORR_OK) {
            for (size_t k = i; k < r->nw; k++)
                wh_pool_release(&r->pool, b);
            return ORR_ECANCELLED;
        }
    }
    return ORR_OK;
}

/* Pass-through: the job's only writer takes the reader's rows in the
 * reader's binary form when it says it can (wh_writer_ops.raw_from) and no
 * mapping rebuilds the rows. ORRERY_WH_PASSTHROUGH=0 turns it off. */
static int wh_raw_plan(const wh_run_t *r, const wh_wrun *w)
{
    const char *env = getenv("ORRERY_WH_PASSTHROUGH");
    if (r->nw != 1 || w->ep->map || (env && strcmp(env, "0") == 0))
        return 0;
    const wh_writer_ops *ops = w->ep->plugin->writer;
    return ops->raw_from &&
           ops->raw_from(w->ep->conf, r->job->reader.plugin->reader, r->job->reader.conf);
}

static void *wh_reader_main(void *arg)
{
    wh_run_t *r = arg;
    const wh_endpoint *ep = &r->job->reader;
    const wh_reader_ops *ops = ep->plugin->reader;
    orr_err e;
    orr_err_clear(&e);
    void *st = NULL;
    int me = atomic_fetch_add(&r->next_reader, 1);
    if (ops->open(ep->conf, &r->ctx, &st, &e) != ORR_OK) {
        wh_run_fail(r, &e);
        return NULL;
    }
    for (;;) {
        size_t i = atomic_fetch_add(&r->next_shard, 1);
        if (i >= r->shards.n || wh_cancelled(&r->ctx))
            break;
        if (wh_resume_skip(&r->res, i))
            continue;
        wh_resume_hold(&r->res, &r->ctx);
        if (wh_cancelled(&r->ctx))
            break;
        if (ops->start(st, &r->shards.v[i], &e) != ORR_OK) {
            wh_run_fail(r, &e);
            break;
        }
        orr_status rc = ORR_OK;
        while (rc == ORR_OK) {
            wh_batch *b = wh_pool_get(&r->pool, r->src.ncols);
            if (!b) {
                rc = ORR_ECANCELLED;
                break;
            }
            b->shard = i;
            b->shard_end = 0;
            rc = ops->read(st, b, &e);
            if (rc != ORR_OK && rc != ORR_EOF) {
                wh_pool_release(&r->pool, b);
                if (!wh_cancelled(&r->ctx))
                    wh_run_fail(r, &e);
                break;
            }
            uint64_t rows = atomic_fetch_add(&r->rows_read, b->nrows) + b->nrows;
            uint64_t bytes = atomic_fetch_add(&r->bytes_read, b->src_bytes) + b->src_bytes;
            /* With bookkeeping, the shard's last batch (even empty) carries
             * the split's commit to every writer channel. */
            b->shard_end = r->res.on && rc == ORR_EOF;
            if (b->nrows == 0 && !b->shard_end)
                wh_pool_release(&r->pool, b);
            else if (wh_dispatch(r, b, me) != ORR_OK)
                rc = ORR_ECANCELLED;
            wh_rate_wait(r, rows, bytes);
        }
        if (rc != ORR_EOF)
            break;
        atomic_fetch_add(&r->shards_done, 1);
    }
    ops->close(st);
    return NULL;
}

static void *wh_writer_main(void *arg)
{
    wh_wthread *t = arg;
    wh_run_t *r = t->run;
    wh_wrun *w = t->w;
    const wh_writer_ops *ops = w->ep->plugin->writer;
    void *st = w->states[t->channel];
    size_t wi = (size_t)(w - r->w);
    uint64_t split_rows = 0, split_confirmed = 0;
    orr_err e;
    orr_err_clear(&e);
    wh_batch *b;
    /* A mapped writer gets each batch rebuilt in its own batch (wh_map.h). */
    wh_batch *mb = w->ep->map ? wh_batch_new(r->ctx.batch_rows, r->ctx.batch_bytes) : NULL;
    while ((b = wh_queue_pop(wh_wqueue(w, t->channel))) != NULL) {
        wh_wstats ws = {0, 0};
        orr_status rc = ORR_OK;
        if (wh_resume_done(&r->res, wi, b->shard)) {
            /* Committed by this writer in an earlier run; read again for
             * another writer. */
            atomic_fetch_add(&w->skipped, b->nrows);
            wh_pool_release(&r->pool, b);
            continue;
        }
        if (mb)
            rc = wh_map_apply(w->ep->map, &r->ctx, w->ep->name, b, mb, &e);
        if (rc == ORR_OK)
            rc = ops->write(st, mb ? mb : b, &ws, &e);
        atomic_fetch_add(&w->rows_in, b->nrows);
        atomic_fetch_add(&w->rows, ws.rows);
        atomic_fetch_add(&w->bytes, ws.bytes);
        split_rows += b->nrows;
        if (rc == ORR_OK && b->shard_end) {
            rc = wh_resume_commit(&r->res, r->job, wi, st, b->shard, split_rows, &split_confirmed,
                                  &e);
            atomic_fetch_add(&w->confirmed, split_confirmed);
            split_rows = 0;
        }
        wh_pool_release(&r->pool, b);
        if (rc != ORR_OK) {
            if (!wh_cancelled(&r->ctx) || rc != ORR_ECANCELLED)
                wh_run_fail(r, &e);
            wh_batch_free(mb);
            return NULL;
        }
    }
    wh_batch_free(mb);
    if (wh_cancelled(&r->ctx))
        return NULL;
    uint64_t confirmed = 0;
    if (ops->flush(st, &confirmed, &e) != ORR_OK) {
        wh_run_fail(r, &e);
        return NULL;
    }
    atomic_fetch_add(&w->confirmed, confirmed);
    return NULL;
}

static uint64_t wh_wait_reader_ns(wh_run_t *r)
{
    uint64_t ns = atomic_load(&r->pool.wait_ns);
    for (size_t i = 0; i < r->nw; i++)
        ns += atomic_load(&r->w[i].q.push_wait_ns);
    return ns;
}

static uint64_t wh_wait_writer_ns(wh_run_t *r)
{
    uint64_t ns = 0;
    for (size_t i = 0; i < r->nw; i++)
        ns += atomic_load(&r->w[i].q.pop_wait_ns);
    return ns;
}

/* Progress once per interval; interrupts. Ends when done is set. */
static void *wh_monitor_main(void *arg)
{
    wh_run_t *r = arg;
    uint64_t last_t = wh_now_ns(), last_rows = 0, last_print = last_t;
    uint64_t last_rw = 0, last_ww = 0;
    pthread_mutex_lock(&r->done_lock);
    while (!r->done) {
        struct timespec ts = orr_clock_after(CLOCK_REALTIME, 100);
        pthread_cond_timedwait(&r->done_cond, &r->done_lock, &ts);
        if (r->done)
            break;
        if (wh_interrupted && !wh_cancelled(&r->ctx)) {
            orr_err e;
            orr_err_set(&e, ORR_ECANCELLED, "", "interrupted by a signal");
            pthread_mutex_unlock(&r->done_lock);
            wh_run_fail(r, &e);
            pthread_mutex_lock(&r->done_lock);
        }
        uint64_t now = wh_now_ns();
        if (r->job->progress_ms <= 0 || now - last_print < (uint64_t)r->job->progress_ms * 1000000u)
            continue;
        uint64_t rows = atomic_load(&r->rows_read);
        uint64_t bytes = atomic_load(&r->bytes_read);
        uint64_t written = 0;
        for (size_t i = 0; i < r->nw; i++) {
            uint64_t x = atomic_load(&r->w[i].rows);
            written = (i == 0 || x < written) ? x : written;
        }
        uint64_t rw = wh_wait_reader_ns(r), ww = wh_wait_writer_ns(r);
        double dt = (double)(now - last_t) / 1e9;
        double rps = dt > 0 ? (double)(rows - last_rows) / dt : 0;
        const char *waiting = "none";
        uint64_t drw = rw - last_rw, dww = ww - last_ww;
        if (drw > dww && drw > 0)
            waiting = "reader";
        else if (dww > drw)
            waiting = "writer";
        wh_progress p = {.rows_read = rows,
                         .rows_written = written,
                         .bytes_read = bytes,
                         .dirty = wh_dirty_count(r->ctx.dirty),
                         .rows_per_sec = rps,
                         .waiting = waiting,
                         .shards_done = atomic_load(&r->shards_done),
                         .shards_total = r->shards_todo,
                         .rows_estimate = r->ctx.rows_estimate,
                         .elapsed_s = (double)(now - r->t0) / 1e9};
        wh_progress_print(stderr, &p);
        last_t = last_print = now;
        last_rows = rows;
        last_rw = rw;
        last_ww = ww;
    }
    pthread_mutex_unlock(&r->done_lock);
    return NULL;
}

/* ---- timestamps for the overlap window -------------------------------- */

orr_status wh_ts_sub(const char *ts, int64_t seconds, char *out, size_t n)
{
    int y, mo, d, h = 0, mi = 0, s = 0, used = 0;
    if (sscanf(ts, "%d-%d-%d %d:%d:%d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6) {
        used = 0;
        if (sscanf(ts, "%d-%d-%d%n", &y, &mo, &d, &used) != 3)
            return ORR_EINVAL;
    }
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    time_t t = timegm(&tm);
    t -= (time_t)seconds;
    struct tm out_tm;
    if (!gmtime_r(&t, &out_tm))
        return ORR_EINVAL;
    char head[32];
    strftime(head, sizeof(head), "%Y-%m-%d %H:%M:%S", &out_tm);
    snprintf(out, n, "%s%s", head, ts + used);
    return ORR_OK;
}

/* 1 when the run's high mark is below the saved watermark (rows deleted at
 * the source, or a mark saved by hand): the watermark never moves back. */
static int wh_mark_behind(const wh_incr *in)
{
    if (!in->has_low || !in->saved[0])
        return 0;
    if (!in->is_time) {
        long long hi = strtoll(in->high, NULL, 10), sv = strtoll(in->saved, NULL, 10);
        return hi < sv;
    }
    /* Timestamps compare as text once both are in the canonical
     * "YYYY-MM-DD HH:MM:SS<rest>" form with the same zone suffix. */
    char hi[sizeof in->high], sv[sizeof in->saved];
    if (wh_ts_sub(in->high, 0, hi, sizeof hi) != ORR_OK ||
        wh_ts_sub(in->saved, 0, sv, sizeof sv) != ORR_OK || strlen(hi) < 19 || strlen(sv) < 19 ||
        strcmp(hi + 19, sv + 19) != 0)
        return 0;
    return strcmp(hi, sv) < 0;
}

static orr_status wh_incr_setup(wh_run_t *r, const char *state_path, orr_err *err)
{
    const wh_job *j = r->job;
    wh_incr *in = &r->ctx.incr;
    if (!j->incr_on)
        return ORR_OK;
    in->on = 1;
    in->column = j->incr_column;
    in->is_time = j->incr_is_time;
    in->overlap = j->incr_overlap;
    orr_status rc = wh_state_load(state_path, j->incr_column, in->saved, sizeof(in->saved), err);
    if (rc == ORR_ENOTFOUND) {
        orr_err_clear(err);
        return ORR_OK;
    }
    if (rc)
        return rc;
    in->has_low = 1;
    if (in->is_time) {
        if (wh_ts_sub(in->saved, in->overlap, in->low, sizeof(in->low)) != ORR_OK)
            return orr_err_set(err, ORR_EINVAL, "state_file",
                               "%s: watermark \"%s\" is not a timestamp", state_path, in->saved);
    } else {
        char *end;
        errno = 0;
        long long v = strtoll(in->saved, &end, 10);
        if (errno || *end || end == in->saved)
            return orr_err_set(err, ORR_EINVAL, "state_file",
                               "%s: watermark \"%s\" is not an integer", state_path, in->saved);
        snprintf(in->low, sizeof(in->low), "%lld", v - (long long)in->overlap);
    }
    return ORR_OK;
}

/* ---- quality checks (wh_quality.h) ---------------------------------------- */

/* Before the commit: row_count from the run's figures, and the store-side
 * checks in the load's own transaction where a writer has one. A failed
 * check fails the run here, so the load is rolled back. */
static orr_status wh_quality_pre(wh_run_t *r, uint64_t rows_read, orr_err *e)
{
    for (size_t i = 0; i < r->nw; i++) {
        wh_wrun *w = &r->w[i];
        uint64_t in = atomic_load(&w->rows_in), sent = atomic_load(&w->rows);
        /* With resume bookkeeping every split commits on its own: no one
         * transaction holds the load, so the checks wait for the end. */
        void *st = w->channels == 1 && !r->res.on ? w->states[0] : NULL;
        uint64_t skipped = atomic_load(&w->skipped);
        orr_status rc = wh_quality_before(r->job, i, st, rows_read - skipped - (in - sent),
                                          atomic_load(&w->confirmed), e);
        if (rc)
            return rc;
    }
    return wh_quality_failed(r->job) ? wh_quality_verdict(r->job, e) : ORR_OK;
}

/* After the commit: the checks that could not run in a load transaction. */
static orr_status wh_quality_post(wh_run_t *r, orr_err *e)
{
    for (size_t i = 0; i < r->nw; i++) {
        orr_status rc = wh_quality_after(r->job, i, e);
        if (rc)
            return rc;
    }
    return wh_quality_verdict(r->job, e);
}

/* ---- the run ------------------------------------------------------------ */

orr_status wh_run(const wh_job *job, const char *state_path, wh_result *res)
{
    wh_run_t *r = orr_xcalloc(1, sizeof(*r));
    memset(res, 0, sizeof(*res));
    orr_err e;
    orr_err_clear(&e);
    orr_err_clear(&res->err);
    r->job = job;
    r->ctx.job = job;
    atomic_init(&r->ctx.cancel, 0);
    r->ctx.batch_rows = (size_t)job->batch_rows;
    r->ctx.batch_bytes = (size_t)job->batch_bytes;
    r->nw = job->nwriters;
    wh_resume_init(&r->res, job);
    r->t0 = r->started = wh_now_ns();
    pthread_mutex_init(&r->err_lock, NULL);
    pthread_mutex_init(&r->done_lock, NULL);
    pthread_cond_init(&r->done_cond, NULL);
    wh_interrupted = 0;
    const wh_endpoint *rep = &job->reader;
    const wh_plugin *rp = rep->plugin;
    int reader_prepared = 0, pool_ready = 0;
    pthread_t *rthreads = NULL, *wthreads = NULL, monitor;
    wh_wthread *wargs = NULL;
    size_t nrthreads = 0, nwthreads = 0;
    int monitor_started = 0;
    if (!state_path)
        state_path = job->state_file;

    r->w = orr_xcalloc(r->nw, sizeof(*r->w));
    for (size_t i = 0; i < r->nw; i++) {
        r->w[i].ep = &job->writers[i];
        wh_queue_init(&r->w[i].q, 4);
    }

    if (job->incr_on && !state_path) {
        orr_err_set(&e, ORR_EINVAL, "state_file", "an incremental job needs a state file");
        goto fail;
    }
    if (wh_dirty_open(job->reject_file, job->max_dirty_rows, &r->ctx.dirty, &e) != ORR_OK)
        goto fail;
    if (wh_incr_setup(r, state_path, &e) != ORR_OK)
        goto fail;

    /* Source side: prepare, describe, split. */
    if (rp->reader_periphery && rp->reader_periphery->prepare) {
        if (rp->reader_periphery->prepare(rep->conf, &r->ctx, NULL, &e) != ORR_OK)
            goto fail;
    }
    reader_prepared = 1;
    if (rp->reader->describe(rep->conf, &r->ctx, &r->src, &e) != ORR_OK)
        goto fail;
    if (r->src.ncols == 0) {
        orr_err_set(&e, ORR_EINVAL, "reader", "the source has no columns");
        goto fail;
    }
    int restored = 0;
    if (wh_resume_setup(&r->res, job, &r->ctx.incr, &r->shards, &restored, &e) != ORR_OK)
        goto fail;
    if (restored) {
        /* the stored plan of the run being resumed */
    } else if (rp->splitter) {
        if (rp->splitter->split(rep->conf, &r->ctx, rep->channels, &r->shards, &e) != ORR_OK)
            goto fail;
    } else {
        wh_shards_add(&r->shards, NULL, NULL, NULL);
    }
    if (wh_resume_start(&r->res, job, &r->shards, &r->ctx.incr, &e) != ORR_OK)
        goto fail;
    r->rchannels = rep->channels;
    size_t pending = r->res.on ? wh_resume_pending(&r->res, r->shards.n) : r->shards.n;
    r->shards_todo = pending;
    if ((size_t)r->rchannels > pending)
        r->rchannels = (int)(pending ? pending : 1);
    if (r->res.on) {
        /* Paired channels: as many per writer as reader channels, fewer
         * readers when a writer's mode allows fewer channels. */
        for (size_t i = 0; i < r->nw; i++) {
            int c =
                job->writers[i].plugin->writer->max_channels(job->writers[i].conf, r->rchannels);
            if (c >= 1 && c < r->rchannels)
                r->rchannels = c;
        }
    }
    ORR_INFO("transfer starting", "job=%s shards=%zu reader_channels=%d writers=%zu",
             orr_log_q(job->name), r->shards.n, r->rchannels, r->nw);

    /* Target side: prepare, open channels. */
    size_t total_wch = 0;
    for (size_t i = 0; i < r->nw; i++) {
        wh_wrun *w = &r->w[i];
        const wh_plugin *wp = w->ep->plugin;
        const wh_schema *wsrc = &r->src;
        if (w->ep->map) {
            if (wh_map_bind(w->ep->map, &r->src, &e) != ORR_OK)
                goto fail;
            wsrc = wh_map_schema(w->ep->map);
        }
        /* Channels first: a writer's mode may need a staging table when it
         * loads through several connections, which prepare creates. */
        w->channels =
            wp->writer->max_channels(w->ep->conf, r->res.on ? r->rchannels : w->ep->channels);
        if (w->channels < 1)
            w->channels = 1;
        if (r->res.on && w->channels != r->rchannels) {
            orr_err_set(&e, ORR_EINTERNAL, w->ep->path, "resume: %d writer channels for %d readers",
                        w->channels, r->rchannels);
            goto fail;
        }
        if (r->res.on) {
            w->cq = orr_xcalloc((size_t)w->channels, sizeof(*w->cq));
            for (int c = 0; c < w->channels; c++)
                wh_queue_init(&w->cq[c], 4);
        }
        if (wp->writer_periphery && wp->writer_periphery->prepare) {
            if (wp->writer_periphery->prepare(w->ep->conf, &r->ctx, wsrc, &e) != ORR_OK)
                goto fail;
        }
        w->prepared = 1;
        r->ctx.raw = wh_raw_plan(r, w);
        w->states = orr_xcalloc((size_t)w->channels, sizeof(void *));
        for (int c = 0; c < w->channels; c++) {
            if (wp->writer->open(w->ep->conf, &r->ctx, wsrc, w->ep->name, &w->states[c], &e) !=
                ORR_OK)
                goto fail;
        }
        total_wch += (size_t)w->channels;
    }

    /* Pool: enough batches for every thread to hold one and every queue to
     * hold a few; this is the run's memory bound. */
    size_t nbatches = 2 * (size_t)r->rchannels + total_wch + 2 * r->nw + 2;
    wh_pool_init(&r->pool, nbatches, r->ctx.batch_rows, r->ctx.batch_bytes);
    pool_ready = 1;
    res->peak_batches = nbatches;

    r->t0 = wh_now_ns();
    if (pthread_create(&monitor, NULL, wh_monitor_main, r) == 0)
        monitor_started = 1;
    wargs = orr_xcalloc(total_wch, sizeof(*wargs));
    wthreads = orr_xcalloc(total_wch, sizeof(*wthreads));
    rthreads = orr_xcalloc((size_t)r->rchannels, sizeof(*rthreads));
    for (size_t i = 0; i < r->nw; i++) {
        for (int c = 0; c < r->w[i].channels; c++) {
            wh_wthread *t = &wargs[nwthreads];
            t->run = r;
            t->w = &r->w[i];
            t->channel = c;
            if (pthread_create(&wthreads[nwthreads], NULL, wh_writer_main, t) != 0) {
                orr_err_set(&e, ORR_EINTERNAL, "", "cannot start a writer thread");
                wh_run_fail(r, &e);
                break;
            }
            nwthreads++;
        }
    }
    for (int i = 0; i < r->rchannels && !wh_run_failed(r); i++) {
        if (pthread_create(&rthreads[i], NULL, wh_reader_main, r) != 0) {
            orr_err_set(&e, ORR_EINTERNAL, "", "cannot start a reader thread");
            wh_run_fail(r, &e);
            break;
        }
        nrthreads++;
    }
    for (size_t i = 0; i < nrthreads; i++)
        pthread_join(rthreads[i], NULL);
    for (size_t i = 0; i < r->nw; i++)
        wh_wqueues(&r->w[i], 1);
    for (size_t i = 0; i < nwthreads; i++)
        pthread_join(wthreads[i], NULL);
    pthread_mutex_lock(&r->done_lock);
    r->done = 1;
    pthread_cond_signal(&r->done_cond);
    pthread_mutex_unlock(&r->done_lock);
    if (monitor_started) {
        pthread_join(monitor, NULL);
        monitor_started = 0;
    }

    if (wh_run_failed(r))
        goto fail;

    /* Checks before anything is committed. */
    uint64_t rows_read = atomic_load(&r->rows_read);
    uint64_t dirty = wh_dirty_count(r->ctx.dirty);
    if (wh_dirty_over(r->ctx.dirty)) {
        orr_err_set(&e, ORR_ETOOBIG, "max_dirty_rows",
                    "%" PRIu64 " dirty rows, more than max_dirty_rows %" PRId64, dirty,
                    job->max_dirty_rows);
        goto fail;
    }
    if (job->max_dirty_ratio >= 0 && dirty > 0) {
        /* Records seen: rows that entered batches plus records the reader
         * could not even turn into a row. */
        uint64_t seen = rows_read + wh_dirty_raw_count(r->ctx.dirty);
        double ratio = (double)dirty / (double)(seen ? seen : 1);
        if (ratio > job->max_dirty_ratio) {
            orr_err_set(&e, ORR_ETOOBIG, "max_dirty_ratio",
                        "dirty ratio %.6f is above max_dirty_ratio %.6f", ratio,
                        job->max_dirty_ratio);
            goto fail;
        }
    }
    for (size_t i = 0; i < r->nw; i++) {
        wh_wrun *w = &r->w[i];
        uint64_t in = atomic_load(&w->rows_in), sent = atomic_load(&w->rows);
        uint64_t conf = atomic_load(&w->confirmed);
        uint64_t expected = rows_read - atomic_load(&w->skipped) - (in - sent);
        uint64_t diff = expected > conf ? expected - conf : conf - expected;
        if (diff > (uint64_t)job->max_row_diff) {
            orr_err_set(&e, ORR_EIO, "max_row_diff",
                        "writer %s: %" PRIu64 " rows expected, %" PRIu64
                        " confirmed by the store (max_row_diff %" PRId64 ")",
                        w->ep->name, expected, conf, job->max_row_diff);
            goto fail;
        }
    }

    if (job->quality && wh_quality_pre(r, rows_read, &e) != ORR_OK)
        goto fail;

    /* Commit every channel, then finish the peripheries with success. */
    int ok = 1;
    for (size_t i = 0; i < r->nw; i++) {
        wh_wrun *w = &r->w[i];
        for (int c = 0; c < w->channels; c++) {
            orr_err ce;
            if (w->ep->plugin->writer->close(w->states[c], ok, &ce) != ORR_OK && ok) {
                ok = 0;
                e = ce;
            }
            w->states[c] = NULL;
        }
    }
    for (size_t i = 0; i < r->nw; i++) {
        wh_wrun *w = &r->w[i];
        const wh_periphery_ops *pp = w->ep->plugin->writer_periphery;
        orr_err fe;
        if (pp && pp->finish && pp->finish(w->ep->conf, &r->ctx, ok, &fe) != ORR_OK && ok) {
            ok = 0;
            e = fe;
        }
        w->prepared = 0;
    }
    if (rp->reader_periphery && rp->reader_periphery->finish) {
        orr_err fe;
        if (rp->reader_periphery->finish(rep->conf, &r->ctx, ok, &fe) != ORR_OK && ok) {
            ok = 0;
            e = fe;
        }
    }
    reader_prepared = 0;
    if (!ok)
        goto fail;
    if (wh_resume_clear(&r->res, job, &e) != ORR_OK)
        goto fail;
    if (job->quality && wh_quality_post(r, &e) != ORR_OK)
        goto fail;
    if (r->ctx.incr.on) {
        res->incremental = 1;
        snprintf(res->watermark_from, sizeof(res->watermark_from), "%s", r->ctx.incr.saved);
        const char *mark = r->ctx.incr.has_high && !wh_mark_behind(&r->ctx.incr)
                               ? r->ctx.incr.high
                               : r->ctx.incr.saved;
        snprintf(res->watermark_to, sizeof(res->watermark_to), "%s", mark);
        if (mark[0] && wh_state_save(state_path, job->name, job->incr_column, mark, &e) != ORR_OK)
            goto fail;
    }
    res->ok = 1;
    goto out;

fail:
    if (!wh_run_failed(r)) {
        r->failed = 1;
        r->err = e;
        if (e.code == ORR_OK)
            orr_err_set(&r->err, ORR_EINTERNAL, "", "transfer failed");
        ORR_ERROR("transfer failed", "job=%s field=%s error=%s", orr_log_q(job->name),
                  orr_log_q(r->err.field), orr_log_q(r->err.msg));
    }
    res->err = r->err;
    if (monitor_started) {
        pthread_mutex_lock(&r->done_lock);
        r->done = 1;
        pthread_cond_signal(&r->done_cond);
        pthread_mutex_unlock(&r->done_lock);
        pthread_join(monitor, NULL);
    }
    for (size_t i = 0; i < r->nw; i++) {
        wh_wrun *w = &r->w[i];
        for (int c = 0; w->states && c < w->channels; c++) {
            orr_err ce;
            if (w->states[c])
                w->ep->plugin->writer->close(w->states[c], 0, &ce);
            w->states[c] = NULL;
        }
        const wh_periphery_ops *pp = w->ep->plugin->writer_periphery;
        orr_err fe;
        if (w->prepared && pp && pp->finish)
            pp->finish(w->ep->conf, &r->ctx, 0, &fe);
    }
    if (reader_prepared && rp->reader_periphery && rp->reader_periphery->finish) {
        orr_err fe;
        rp->reader_periphery->finish(rep->conf, &r->ctx, 0, &fe);
    }

out:
    res->rows_read = atomic_load(&r->rows_read);
    res->bytes_read = atomic_load(&r->bytes_read);
    res->dirty_rows = wh_dirty_count(r->ctx.dirty);
    res->shards = r->shards.n;
    res->shards_done = atomic_load(&r->shards_done);
    res->shards_todo = r->shards_todo;
    res->rows_estimate = r->ctx.rows_estimate;
    res->reader_channels = r->rchannels;
    res->passthrough = r->ctx.raw;
    res->seconds = (double)(wh_now_ns() - r->started) / 1e9;
    res->nwriters = r->nw;
    res->writers = orr_xcalloc(r->nw ? r->nw : 1, sizeof(*res->writers));
    for (size_t i = 0; i < r->nw; i++) {
        wh_writer_result *wr = &res->writers[i];
        wh_wrun *w = &r->w[i];
        snprintf(wr->name, sizeof(wr->name), "%s", w->ep->name);
        wr->type = w->ep->type;
        wr->rows_in = atomic_load(&w->rows_in);
        wr->rows_written = atomic_load(&w->rows);
        wr->rows_confirmed = atomic_load(&w->confirmed);
        wr->bytes_written = atomic_load(&w->bytes);
        wr->dirty_rows = wr->rows_in - wr->rows_written;
        wr->channels = w->channels;
        free(w->states);
        wh_queue_destroy(&w->q);
        for (int c = 0; w->cq && c < w->channels; c++)
            wh_queue_destroy(&w->cq[c]);
        free(w->cq);
    }
    free(r->w);
    free(rthreads);
    free(wthreads);
    free(wargs);
    if (pool_ready)
        wh_pool_destroy(&r->pool);
    orr_err de;
    if (wh_dirty_close(r->ctx.dirty, &de) != ORR_OK && res->ok) {
        res->ok = 0;
        res->err = de;
    }
    res->resume = json_object();
    wh_resume_json(&r->res, res->resume);
    wh_resume_free(&r->res);
    wh_shards_free(&r->shards);
    wh_schema_free(&r->src);
    pthread_mutex_destroy(&r->err_lock);
    pthread_mutex_destroy(&r->done_lock);
    pthread_cond_destroy(&r->done_cond);
    free(r);
    return res->ok ? ORR_OK : (res->err.code ? res->err.code : ORR_EINTERNAL);
}

void wh_result_free(wh_result *res)
{
    free(res->writers);
    res->writers = NULL;
    json_decref(res->resume);
    res->resume = NULL;
}

json_t *wh_result_json(const wh_job *job, const wh_result *res)
{
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(job->name));
    json_object_set_new(o, "status", json_string(res->ok ? "ok" : "failed"));
    if (!res->ok) {
        json_t *e = json_object();
        json_object_set_new(e, "code", json_string(orr_status_name(res->err.code)));
        json_object_set_new(e, "message", json_string(res->err.msg));
        json_object_set_new(e, "field", json_string(res->err.field));
        json_object_set_new(o, "error", e);
    }
    json_object_set_new(o, "rows_read", json_integer((json_int_t)res->rows_read));
    json_object_set_new(o, "bytes_read", json_integer((json_int_t)res->bytes_read));
    json_object_set_new(o, "dirty_rows", json_integer((json_int_t)res->dirty_rows));
    json_object_set_new(o, "shards", json_integer((json_int_t)res->shards));
    json_object_set_new(o, "shards_total", json_integer((json_int_t)res->shards_todo));
    json_object_set_new(o, "shards_done", json_integer((json_int_t)res->shards_done));
    json_object_set_new(o, "rows_estimate", json_integer((json_int_t)res->rows_estimate));
    json_object_set_new(o, "reader_channels", json_integer(res->reader_channels));
    json_object_set_new(o, "passthrough", json_boolean(res->passthrough));
    json_object_set_new(o, "seconds", json_real(res->seconds));
    json_object_set_new(o, "rows_per_sec",
                        json_real(res->seconds > 0 ? (double)res->rows_read / res->seconds : 0));
    json_t *ws = json_array();
    for (size_t i = 0; i < res->nwriters; i++) {
        const wh_writer_result *w = &res->writers[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(w->name));
        json_object_set_new(x, "type", json_string(w->type));
        json_object_set_new(x, "channels", json_integer(w->channels));
        json_object_set_new(x, "rows_written", json_integer((json_int_t)w->rows_written));
        json_object_set_new(x, "rows_confirmed", json_integer((json_int_t)w->rows_confirmed));
        json_object_set_new(x, "bytes_written", json_integer((json_int_t)w->bytes_written));
        json_object_set_new(x, "dirty_rows", json_integer((json_int_t)w->dirty_rows));
        json_array_append_new(ws, x);
    }
    json_object_set_new(o, "writers", ws);
    if (res->resume)
        json_object_update(o, res->resume);
    if (job->quality)
        json_object_set_new(o, "quality", wh_quality_json(job->quality));
    if (res->incremental) {
        json_t *wm = json_object();
        json_object_set_new(wm, "column", json_string(job->incr_column));
        json_object_set_new(wm, "from", json_string(res->watermark_from));
        json_object_set_new(wm, "to", json_string(res->watermark_to));
        json_object_set_new(o, "watermark", wm);
    }
    return o;
}

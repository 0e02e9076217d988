/*
 * sort_pipe.c - one stream's pipeline: read, parse, route, commit (see
 * sort_pipe.h). Routed records go to the sinks (sinks/sort_sink.h: files,
 * postgres, handoff), which this file calls only through their ops.
 */
#include "sort_pipe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orr_clock.h"
#include "orr_alloc.h"
#include "orr_log.h"
#include "sort_metrics.h"
#include "sort_preroute.h"
#include "sort_reject.h"
#include "sort_sink.h"

#define PIPE_TICK_MS   100
#define PIPE_MAX_SINKS 8

typedef struct pipe_sink {
    const sort_sink_ops *ops;
    void *state;
} pipe_sink;

typedef struct sort_pipeline {
    const sort_pipe_cfg *cfg;
    const sort_spec *spec;
    const sort_format_ops *fmt;
    sort_reject rej;
    sort_source *src;
    sort_sink_env env; /* env.failed: a sink or the source failed; env.eof */
    pipe_sink sinks[PIPE_MAX_SINKS];
    int nsinks;
    char stem[SORT_NAME_MAX + 24]; /* name, or "<name>.w<I>" for write stage I */
    sort_val *vals;
    char work[4096];

    uint8_t seen[SORT_MAX_PARTITIONS];
    sort_off committed[SORT_MAX_PARTITIONS];
    uint8_t has_committed[SORT_MAX_PARTITIONS];
    uint64_t batch_seq;                     /* number of the batch being routed (1, 2, ...) */
    sort_off stamp_hi[SORT_MAX_PARTITIONS]; /* packs sources: highest stamp so far */
    uint8_t has_stamp_hi[SORT_MAX_PARTITIONS];
    int64_t last_tick_ms;
    orr_err fail_err;
    sort_pipe_stats st;
} sort_pipeline;

static void pipe_sum_stats(sort_pipeline *p);

static int pipe_mkdirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Staging files of a previous run hold nothing committed: remove them, and
 * the writers' folders they are in (depth 1). */
static void pipe_wipe_work(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0 || errno != EISDIR || depth == 0)
            continue;
        char sub[4400];
        if (snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >= (int)sizeof sub)
            continue;
        pipe_wipe_work(sub, depth - 1); /* a writer's folder (sort_writer.h) */
        unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

/* A sink failed: nothing more is routed nor committed. The first failure is
 * the one reported. */
static void pipe_fail(sort_pipeline *p, const orr_err *e)
{
    if (p->env.failed)
        return;
    p->fail_err = *e;
    p->env.failed = 1;
}

/* ---- commits, housekeeping -------------------------------------------- */

/* Commit each partition at the lowest position every sink holds durably. */
static void pipe_commit(sort_pipeline *p)
{
    if (p->nsinks == 0)
        return;
    for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++) {
        if (!p->seen[part])
            continue;
        sort_off lo = {0, 0};
        int ok = 1, has_lo = 0;
        for (int i = 0; i < p->nsinks && ok; i++) {
            sort_off s;
            if (!p->sinks[i].ops->safe)
                continue;
            if (!p->sinks[i].ops->safe(p->sinks[i].state, part, &s))
                ok = 0;
            else if (!has_lo || sort_off_cmp(s, lo) < 0) {
                lo = s;
                has_lo = 1;
            }
        }
        if (!ok || !has_lo)
            continue;
        /* A packs source acknowledges per delivered pack: one that came
         * below the committed position (a producer's replay) is only
         * acknowledged by committing that position again. */
        int c = p->has_committed[part] ? sort_off_cmp(lo, p->committed[part]) : 1;
        if (c < 0 || (c == 0 && !p->spec->source.packs))
            continue;
        orr_err err;
        orr_err_clear(&err);
        if (p->src->ops->commit(p->src, part, lo, &err) != ORR_OK) {
            char b[600];
            ORR_WARN("offset commit failed; will retry", "stream=%s error=%s", p->spec->name,
                     orr_log_q(orr_err_str(&err, b, sizeof b)));
            continue;
        }
        p->committed[part] = lo;
        p->has_committed[part] = 1;
    }
}

/* Every sink's housekeeping (flushes when due; force: now). */
static void pipe_tick_sinks(sort_pipeline *p, int force)
{
    for (int i = 0; i < p->nsinks && !p->env.failed; i++) {
        if (!p->sinks[i].ops->tick)
            continue;
        orr_err e;
        orr_err_clear(&e);
        if (p->sinks[i].ops->tick(p->sinks[i].state, force, &e) != ORR_OK)
            pipe_fail(p, &e);
    }
}

static void pipe_housekeep(sort_pipeline *p, int force)
{
    int64_t now = orr_clock_ms(CLOCK_MONOTONIC);
    if (!force && now - p->last_tick_ms < PIPE_TICK_MS)
        return;
    p->last_tick_ms = now;
    pipe_tick_sinks(p, 0);
    sort_reject_flush(&p->rej); /* before the commit that may acknowledge them */
    pipe_commit(p);
    if (p->cfg->metrics) {
        pipe_sum_stats(p);
        sort_metrics_publish(p->cfg->metrics, p->spec->name, &p->st);
    }
}

/* env.idle: a sink blocked for flow control keeps the stream going. */
static void pipe_idle(void *pipe)
{
    pipe_housekeep(pipe, 0);
}

/* ---- routing ---------------------------------------------------------- */

static void pipe_route_batch(sort_pipeline *p, sort_batch *b)
{
    const sort_spec *s = p->spec;
    sort_off ends[SORT_MAX_PARTITIONS];
    uint8_t has_end[SORT_MAX_PARTITIONS] = {0};
    uint8_t have[PIPE_MAX_SINKS];
    uint64_t seq = ++p->batch_seq;
    for (int k = 0; k < p->nsinks; k++)
        if (p->sinks[k].ops->batch_begin)
            p->sinks[k].ops->batch_begin(p->sinks[k].state, seq, b);
    for (size_t i = 0; i < b->n; i++) {
        const sort_entry *e = &b->e[i];
        const char *rec = b->data.data + e->pos;
        sort_reject_reason why;
        if (p->env.failed)
            break; /* a sink failed: nothing more is routed (nor committed) */
        p->st.records_in++;
        if (e->partition >= SORT_MAX_PARTITIONS)
            continue; /* sources never produce these */
        p->seen[e->partition] = 1;
        if (!has_end[e->partition] || sort_off_cmp(e->next, ends[e->partition]) > 0) {
            ends[e->partition] = e->next;
            has_end[e->partition] = 1;
        }
        int nhave = 0;
        for (int k = 0; k < p->nsinks; k++) {
            const sort_sink_ops *o = p->sinks[k].ops;
            if (o->advance)
                o->advance(p->sinks[k].state, e->partition, &e->next);
            have[k] = o->has && o->has(p->sinks[k].state, e->partition, e->off);
            nhave += have[k];
        }
        if (nhave == p->nsinks) {
            p->st.replay_dropped++; /* every sink has it from an earlier run */
            continue;
        }
        if (e->why >= 0) {
            sort_reject_add(&p->rej, e->partition, e->off, (sort_reject_reason)e->why, rec, e->len);
            continue;
        }
        if ((int64_t)e->len > s->format.max_record) {
            sort_reject_add(&p->rej, e->partition, e->off, SORT_REJ_TOO_LONG, rec, e->len);
            continue;
        }
        sort_route r;
        /* Routed by a parse stage (sort_preroute.h): no parse, unless a
         * sink needs the fields (vals would be stale). */
        int routed =
            e->ulen > 0 && !s->sinks.pg &&
            sort_preroute(s, b->data.data + e->upos, e->ulen, e->ubucket, e->utime_ms, &r) == 0;
        if (!routed && (p->fmt->parse(s, rec, e->len, p->vals, &why) != 0 ||
                        sort_record_route(s, p->vals, &r, &why) != 0)) {
            sort_reject_add(&p->rej, e->partition, e->off, why, rec, e->len);
            continue;
        }
        const sort_sink_rec sr = {e->partition, e->off, rec, e->len, p->vals, &r};
        int cancelled = 0;
        for (int k = 0; k < p->nsinks && !p->env.failed; k++) {
            if (have[k])
                continue;
            orr_err ae;
            orr_err_clear(&ae);
            orr_status rc = p->sinks[k].ops->add(p->sinks[k].state, &sr, &ae);
            if (rc == ORR_ECANCELLED) {
                cancelled = 1; /* stopping while a sink waits for room */
                break;
            }
            if (rc != ORR_OK)
                pipe_fail(p, &ae);
        }
        if (cancelled)
            break;
    }
    /* A packs source interleaves offsets across batches: its stamps only
     * rise (the sinks' commit stays behind unappended records), so packs
     * delivered below a later batch's end are acknowledged too. */
    if (s->source.packs)
        for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++) {
            if (has_end[part] && p->has_stamp_hi[part] &&
                sort_off_cmp(ends[part], p->stamp_hi[part]) < 0)
                ends[part] = p->stamp_hi[part];
            if (has_end[part]) {
                p->stamp_hi[part] = ends[part];
                p->has_stamp_hi[part] = 1;
            }
        }
    for (int k = 0; k < p->nsinks; k++)
        if (p->sinks[k].ops->batch_end)
            p->sinks[k].ops->batch_end(p->sinks[k].state, seq, ends, has_end);
}

/* ---- rebalancing ------------------------------------------------------ */
/* The source's hooks (sort_source.h) for partitions that move between
 * processes (a Kafka source in a consumer group). */

static orr_status pipe_on_drain(void *ctx, sort_batch *b, const uint32_t *parts, size_t n, int lost,
                                orr_err *err)
{
    sort_pipeline *p = ctx;
    p->st.rebalances_revoked++;
    if (lost && !p->env.failed) {
        /* Another member may be writing these partitions already: nothing
         * pending may become durable now. */
        orr_err_set(&p->fail_err, ORR_ESTATE, "spec.source.session_timeout_ms",
                    "partitions lost to the consumer group (session timed out): stopping "
                    "without committing; their next owner replays");
        p->env.failed = 1;
    }
    if (b && b->n > 0)
        pipe_route_batch(p, b);
    if (b)
        sort_batch_reset(b);
    /* Every sink makes durable what was routed (nothing after a failure). */
    for (int k = 0; k < p->nsinks; k++) {
        if (!p->sinks[k].ops->barrier)
            continue;
        orr_err be;
        orr_err_clear(&be);
        if (p->sinks[k].ops->barrier(p->sinks[k].state, &be) != ORR_OK)
            pipe_fail(p, &be);
    }
    sort_reject_flush(&p->rej);
    if (!p->env.failed)
        pipe_commit(p);
    for (size_t i = 0; i < n; i++) {
        uint32_t part = parts[i];
        if (part >= SORT_MAX_PARTITIONS)
            continue;
        char ob[SORT_OFF_MAX];
        if (p->seen[part])
            ORR_INFO("partition handed over", "stream=%s partition=%u committed=%s", p->spec->name,
                     part, p->has_committed[part] ? sort_off_fmt(p->committed[part], ob) : "none");
        /* Its next owner commits it now: a later commit from here would be stale. */
        p->seen[part] = 0;
        p->has_committed[part] = 0;
    }
    if (p->env.failed) {
        if (err)
            *err = p->fail_err;
        return p->fail_err.code != ORR_OK ? p->fail_err.code : ORR_EIO;
    }
    return ORR_OK;
}

static orr_status pipe_on_assigned(void *ctx, const uint32_t *parts, sort_off *from, size_t n,
                                   orr_err *err)
{
    sort_pipeline *p = ctx;
    p->st.rebalances_assigned++;
    if (p->env.failed)
        return ORR_OK; /* routes nothing more anyway */
    for (int k = 0; k < p->nsinks && n > 0; k++) {
        if (!p->sinks[k].ops->reload)
            continue;
        orr_err re;
        orr_err_clear(&re);
        if (p->sinks[k].ops->reload(p->sinks[k].state, parts, n, &re) != ORR_OK) {
            pipe_fail(p, &re);
            if (err)
                *err = p->fail_err;
            return p->fail_err.code;
        }
    }
    for (size_t i = 0; i < n; i++) {
        char fb[SORT_OFF_MAX], sb[SORT_OFF_MAX], tb[SORT_OFF_MAX];
        sort_off at = SORT_OFF_UNKNOWN, was = from[i];
        int known = sort_off_cmp(was, SORT_OFF_UNKNOWN) != 0;
        int has_at = 0, only = 0;
        /* A sink that alone holds the stream's records says where reading
         * resumes: the records below are there already. */
        for (int k = 0; k < p->nsinks && !has_at; k++)
            if (p->sinks[k].ops->resume)
                has_at = p->sinks[k].ops->resume(p->sinks[k].state, parts[i], &at, &only);
        if (only && has_at && (!known || sort_off_cmp(at, was) > 0))
            from[i] = at;
        ORR_INFO("partition taken over", "stream=%s partition=%u committed=%s sink_at=%s start=%s",
                 p->spec->name, parts[i], known ? sort_off_fmt(was, fb) : "none",
                 has_at ? sort_off_fmt(at, sb) : "none",
                 sort_off_cmp(from[i], SORT_OFF_UNKNOWN) != 0 ? sort_off_fmt(from[i], tb)
                                                              : "source");
    }
    return ORR_OK;
}

/* ---- run -------------------------------------------------------------- */

uint32_t sort_pipe_block_size(const sort_pipe_cfg *cfg)
{
    size_t mem = cfg->unit_memory ? cfg->unit_memory : SORT_PIPE_UNIT_MEMORY;
    size_t units = cfg->max_open_units ? cfg->max_open_units : 1;
    size_t b = mem / units;
    if (b > ORR_LZOP_BLOCK_SIZE)
        b = ORR_LZOP_BLOCK_SIZE;
    b &= ~(size_t)(ORR_LZOP_MIN_BLOCK - 1);
    if (b < SORT_PIPE_MIN_BLOCK)
        b = SORT_PIPE_MIN_BLOCK;
    return (uint32_t)b;
}

static void pipe_sum_stats(sort_pipeline *p)
{
    for (int k = 0; k < p->nsinks; k++)
        if (p->sinks[k].ops->stats)
            p->sinks[k].ops->stats(p->sinks[k].state, &p->st);
    if (p->src && p->src->ops->lag)
        for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++)
            p->st.has_lag[part] = p->src->ops->lag(p->src, part, &p->st.lag[part]) != 0;
    for (int r = 0; r < SORT_REJ__COUNT; r++)
        p->st.rejects[r] = p->rej.count[r];
    p->st.rejected = p->rej.total;
}

orr_status sort_pipe_run(const sort_pipe_cfg *cfg, sort_pipe_stats *stats, orr_err *err)
{
    sort_pipeline pp, *p = &pp;
    memset(p, 0, sizeof *p);
    p->cfg = cfg;
    p->spec = cfg->spec;
    int nw = cfg->writers > 0 ? cfg->writers : 1;
    int npool = cfg->packs > nw * 2 ? cfg->packs : nw * 2;
    int64_t t0 = orr_clock_ms(CLOCK_MONOTONIC);
    orr_status rc = ORR_OK;
    sort_batch batch = {0};
    char path[4400];

    p->fmt = sort_format_find(p->spec->format.type);
    const sort_source_ops *sops = sort_source_find(p->spec->source.type);
    if (!p->fmt || !sops)
        return orr_err_set(err, ORR_EINVAL, "spec.format.type", "no such format or source");
    if (p->spec->stage_count > 0)
        snprintf(p->stem, sizeof p->stem, "%s.w%" PRId64, p->spec->name, p->spec->stage_index);
    else
        snprintf(p->stem, sizeof p->stem, "%s", p->spec->name);
    if (snprintf(p->work, sizeof p->work, "%s/%s", cfg->work_dir, p->stem) >= (int)sizeof p->work)
        return orr_err_set(err, ORR_EINVAL, "work_dir", "path too long");
    if (pipe_mkdirs(p->work) != 0 || pipe_mkdirs(cfg->state_dir) != 0)
        return orr_err_set(err, ORR_EIO, "work_dir", "cannot create %s or %s: %s", p->work,
                           cfg->state_dir, strerror(errno));
    pipe_wipe_work(p->work, 1);

    p->vals = orr_xcalloc(SORT_MAX_FIELDS, sizeof *p->vals);
    p->env = (sort_sink_env){.cfg = cfg,
                             .spec = p->spec,
                             .fmt = p->fmt,
                             .work = p->work,
                             .writers = nw,
                             .packs = npool,
                             .rej = &p->rej,
                             .st = &p->st,
                             .idle = pipe_idle,
                             .pipe = p};
    if (snprintf(path, sizeof path, "%s/%s.rejects", cfg->state_dir, p->stem) >= (int)sizeof path) {
        rc = orr_err_set(err, ORR_EINVAL, "state_dir", "path too long");
        goto out;
    }
    rc = sort_reject_open(&p->rej, path, err);
    if (rc != ORR_OK)
        goto out;
    sort_source_env env = {cfg->state_dir, cfg->redis_addr, p->fmt, p,
                           pipe_on_drain,  pipe_on_assigned};
    rc = sops->open(p->spec, &env, &p->src, err);
    if (rc != ORR_OK)
        goto out;
    p->env.src = p->src;
    for (const sort_sink_ops *const *o = sort_sinks; *o; o++) {
        void *state = NULL;
        if (!(*o)->wanted(p->spec))
            continue;
        rc = (*o)->open(&p->env, &state, err);
        if (rc != ORR_OK)
            goto stop;
        p->sinks[p->nsinks].ops = *o;
        p->sinks[p->nsinks++].state = state;
    }
    pipe_sum_stats(p);
    ORR_INFO("stream started",
             "stream=%s source=%s format=%s writers=%d packs=%d units_known=%" PRIu64,
             p->spec->name, p->spec->source.type, p->spec->format.type, nw, npool, p->st.units);

    int backoff_ms = 50;
    while (!*cfg->stop && !p->env.failed) {
        sort_batch_reset(&batch);
        orr_err serr;
        orr_err_clear(&serr);
        orr_status src_rc = p->src->ops->next(p->src, &batch, PIPE_TICK_MS, &serr);
        p->env.behind = p->src->ops->behind && p->src->ops->behind(p->src);
        p->env.room = p->src->ops->room_wanted && p->src->ops->room_wanted(p->src);
        if (batch.n > 0)
            pipe_route_batch(p, &batch);
        if (src_rc == ORR_EOF) {
            p->env.eof = 1;
            break;
        }
        if (src_rc != ORR_OK) {
            char b[600];
            ORR_WARN("source read failed; backing off", "stream=%s backoff_ms=%d error=%s",
                     p->spec->name, backoff_ms, orr_log_q(orr_err_str(&serr, b, sizeof b)));
            struct timespec ts = {backoff_ms / 1000, (long)(backoff_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
        } else {
            backoff_ms = 50;
        }
        pipe_housekeep(p, 0);
    }

stop:
    /* Stop: every sink lands or sends what it holds, then the last commit. */
    for (int k = 0; k < p->nsinks; k++) {
        if (!p->sinks[k].ops->stop)
            continue;
        orr_err se;
        orr_err_clear(&se);
        if (p->sinks[k].ops->stop(p->sinks[k].state, &se) != ORR_OK)
            pipe_fail(p, &se);
    }
    sort_reject_flush(&p->rej);
    pipe_commit(p);
    if (rc == ORR_OK && !p->env.failed)
        for (int k = 0; k < p->nsinks; k++)
            if (p->sinks[k].ops->finish)
                p->sinks[k].ops->finish(p->sinks[k].state);
    if (p->env.failed && rc == ORR_OK) {
        rc = p->fail_err.code != ORR_OK ? p->fail_err.code : ORR_EIO;
        if (err)
            *err = p->fail_err;
    }
out:
    pipe_sum_stats(p);
    p->st.seconds = (double)(orr_clock_ms(CLOCK_MONOTONIC) - t0) / 1000.0;
    if (cfg->metrics)
        sort_metrics_publish(cfg->metrics, p->spec->name, &p->st);
    if (stats)
        *stats = p->st;
    if (p->src)
        p->src->ops->close(p->src);
    for (int k = 0; k < p->nsinks; k++)
        p->sinks[k].ops->close(p->sinks[k].state);
    sort_reject_close(&p->rej);
    sort_batch_free(&batch);
    free(p->vals);
    return rc;
}

char *sort_pipe_stats_json(const sort_pipe_stats *st)
{
    json_t *rej = json_object();
    for (int r = 0; r < SORT_REJ__COUNT; r++)
        if (st->rejects[r])
            json_object_set_new(rej, sort_reject_name((sort_reject_reason)r),
                                json_integer((json_int_t)st->rejects[r]));
    json_t *o = json_pack("{s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "records_in",
                          (json_int_t)st->records_in, "records_out", (json_int_t)st->records_out,
                          "rejected", (json_int_t)st->rejected, "rejects", rej, "replay_dropped",
                          (json_int_t)st->replay_dropped, "late", (json_int_t)st->late, "units",
                          (json_int_t)st->units, "files", (json_int_t)st->w.files, "checks_written",
                          (json_int_t)st->checks_written, "bytes_raw", (json_int_t)st->w.bytes_raw,
                          "bytes_lzo", (json_int_t)st->w.bytes_lzo, "records_written",
                          (json_int_t)st->w.records, "pool_waits", (json_int_t)st->pool_waits,
                          "seconds", st->seconds);
    json_object_set_new(o, "pg_rows", json_integer((json_int_t)st->pg_rows));
    json_object_set_new(o, "pg_refused", json_integer((json_int_t)st->pg_refused));
    json_object_set_new(o, "pg_batches", json_integer((json_int_t)st->pg_batches));
    json_object_set_new(o, "rebalances_assigned",
                        json_integer((json_int_t)st->rebalances_assigned));
    json_object_set_new(o, "rebalances_revoked", json_integer((json_int_t)st->rebalances_revoked));
    /* Why files rolled: roll_size, age (roll_age_ms, or catchup_age_ms
     * while catching up), max_open_units, bucket closed or stop. */
    json_object_set_new(o, "rolls_size", json_integer((json_int_t)st->w.rolls_size));
    json_object_set_new(o, "rolls_age", json_integer((json_int_t)st->w.rolls_age));
    json_object_set_new(o, "rolls_room", json_integer((json_int_t)st->w.rolls_room));
    json_object_set_new(o, "rolls_lru", json_integer((json_int_t)st->w.rolls_lru));
    json_object_set_new(o, "rolls_close", json_integer((json_int_t)st->w.rolls_close));
    json_object_set_new(o, "handoff_packs", json_integer((json_int_t)st->ho_packs));
    json_object_set_new(o, "handoff_bytes", json_integer((json_int_t)st->ho_bytes));
    json_object_set_new(o, "handoff_waits", json_integer((json_int_t)st->ho_waits));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* sort_pipe.c - one stream's pipeline: parse, route, commit, check (see sort_pipe.h). */
#include "sort_pipe.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orr_log.h"
#include "sort_metrics.h"
#include "sort_reject.h"
#include "sort_sink_handoff.h"
#include "sort_sink_pg.h"

#define PIPE_TICK_MS        100
#define PIPE_EMPTY_UNIT_CAP 100000 /* empty units created per check round, at most */

typedef struct pipe_bmin {
    uint64_t batch;
    sort_off min[SORT_MAX_PARTITIONS];
    uint8_t has[SORT_MAX_PARTITIONS];
} pipe_bmin;

typedef struct sort_pipeline {
    const sort_pipe_cfg *cfg;
    const sort_spec *spec;
    const sort_format_ops *fmt;
    orr_blob *blob;
    sort_units units;
    sort_reject rej;
    sort_source *src;
    sort_sink_pg *pg;              /* NULL: no PostgreSQL sink */
    sort_handoff *ho;              /* NULL: no hand-off to write stages */
    char stem[SORT_NAME_MAX + 24]; /* name, or "<name>.w<I>" for write stage I */
    sort_writer *w;
    int nw;
    sort_queue pool;
    sort_pack **cur; /* pack being filled, per writer */
    int npacks;
    sort_landings landings;
    sort_val *vals;
    const sort_check_sink *sink;
    char work[4096];

    uint8_t seen[SORT_MAX_PARTITIONS];
    sort_off committed[SORT_MAX_PARTITIONS];
    uint8_t has_committed[SORT_MAX_PARTITIONS];
    /* Batches still in the writers' queues: the lowest offset routed per
     * partition (a ring indexed by batch number; at most npool batches are
     * in flight, one pooled pack per writer each). */
    pipe_bmin *bmin;
    size_t nbmin;
    uint64_t batch_seq;                     /* number of the batch being routed (1, 2, ...) */
    sort_off stamp_hi[SORT_MAX_PARTITIONS]; /* packs sources: highest stamp so far */
    uint8_t has_stamp_hi[SORT_MAX_PARTITIONS];

    int64_t closed_upto; /* buckets ending at or before this (s) are closed */
    int64_t max_data_ms;
    int has_data;
    int64_t start_bucket;
    int64_t empty_lo, empty_hi; /* bucket range already given empty units */
    uint64_t ctl_seq, ctl_pending;
    int late_pending;
    int64_t last_ctl_ms, last_tick_ms;
    int eof;
    int failed;
    orr_err fail_err;
    sort_pipe_stats st;
} sort_pipeline;

static void pipe_sum_stats(sort_pipeline *p);

static int64_t pipe_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* Staging files of a previous run hold nothing committed: remove them. */
static void pipe_wipe_work(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

/* ---- landings, commits, checks -------------------------------------- */

static void pipe_drain_landings(sort_pipeline *p)
{
    sort_landing *v = NULL;
    size_t n = sort_landings_take(&p->landings, &v);
    for (size_t i = 0; i < n; i++)
        sort_unit_add_file(&p->units, v[i].unit, v[i].name, v[i].count, v[i].bytes);
    free(v);
}

static void pipe_check_writers(sort_pipeline *p)
{
    for (int i = 0; i < p->nw && !p->failed; i++)
        if (sort_writer_failed(&p->w[i], &p->fail_err))
            p->failed = 1;
}

static void pipe_commit(sort_pipeline *p)
{
    if (p->nw == 0)
        return;
    for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++) {
        if (!p->seen[part])
            continue;
        sort_off lo = {0, 0};
        int ok = 1;
        for (int i = 0; i < p->nw && ok; i++) {
            sort_off s;
            if (!sort_writer_safe(&p->w[i], part, &s)) {
                ok = 0;
                break;
            }
            if (i == 0 || sort_off_cmp(s, lo) < 0)
                lo = s;
        }
        /* Records of batches some writer has not appended yet: with a packs
         * source they may lie below what the writers already passed. */
        uint64_t done = UINT64_MAX;
        for (int i = 0; i < p->nw; i++) {
            uint64_t d = sort_writer_done_batch(&p->w[i]);
            if (d < done)
                done = d;
        }
        if (ok && p->batch_seq - done >= p->nbmin)
            ok = 0; /* cannot happen (the pool bounds batches in flight) */
        for (uint64_t b = done + 1; ok && b <= p->batch_seq; b++) {
            const pipe_bmin *m = &p->bmin[b % p->nbmin];
            if (m->batch == b && m->has[part] && sort_off_cmp(m->min[part], lo) < 0)
                lo = m->min[part];
        }
        sort_off ks;
        if (ok && p->pg) {
            if (!sort_sink_pg_safe(p->pg, part, &ks))
                ok = 0;
            else if (sort_off_cmp(ks, lo) < 0)
                lo = ks;
        }
        if (ok && p->ho) {
            if (!sort_handoff_safe(p->ho, part, &ks))
                ok = 0;
            else if (sort_off_cmp(ks, lo) < 0)
                lo = ks;
        }
        if (!ok)
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

/* Closed-bucket boundary now: buckets ending at or before it are closed. */
static int64_t pipe_boundary(sort_pipeline *p)
{
    const sort_spec *s = p->spec;
    int64_t t_ms;
    if (s->check.clock == SORT_CLOCK_DATA) {
        if (p->eof)
            return INT64_MAX;
        if (!p->has_data)
            return INT64_MIN;
        t_ms = p->max_data_ms - s->check.grace_ms;
    } else {
        t_ms = (int64_t)time(NULL) * 1000 - s->check.grace_ms;
    }
    return sort_bucket_start(t_ms, s->bucket, s->tz);
}

static void pipe_send_ctl(sort_pipeline *p, sort_pack_kind kind, int64_t before)
{
    p->ctl_seq++;
    for (int i = 0; i < p->nw; i++) {
        sort_pack *c = calloc(1, sizeof *c);
        if (!c)
            abort();
        c->kind = kind;
        c->roll_before = before;
        c->seq = p->ctl_seq;
        sort_queue_push(&p->w[i].in, c);
    }
}

/* Give every declared interface a unit in each closed bucket we cover. */
static void pipe_empty_units(sort_pipeline *p, int64_t upto)
{
    const sort_spec *s = p->spec;
    int64_t lo = p->units.min_bucket;
    if (s->check.clock == SORT_CLOCK_WALL && p->start_bucket < lo)
        lo = p->start_bucket;
    if (lo == INT64_MAX || s->ninterfaces == 0)
        return;
    if (upto == INT64_MAX) {
        int64_t hi = INT64_MIN;
        for (size_t i = 0; i < p->units.n; i++)
            if (p->units.all[i]->bucket_end > hi)
                hi = p->units.all[i]->bucket_end;
        upto = hi;
    }
    size_t made = 0;
    for (int64_t b = lo; sort_bucket_end(b, s->bucket, s->tz) <= upto && made < PIPE_EMPTY_UNIT_CAP;
         b = sort_bucket_next(b, s->bucket, s->tz)) {
        if (p->empty_hi > p->empty_lo && b >= p->empty_lo && b < p->empty_hi)
            continue; /* done in an earlier round */
        for (size_t i = 0; i < s->ninterfaces; i++) {
            size_t len = strlen(s->interfaces[i]);
            if (!sort_units_owns(&p->units, sort_unit_hash(s->interfaces[i], len, b)))
                continue; /* another write stage's */
            sort_units_get(&p->units, s->interfaces[i], len, b);
            made++;
        }
    }
    if (p->empty_hi <= p->empty_lo || lo < p->empty_lo)
        p->empty_lo = lo;
    if (upto > p->empty_hi)
        p->empty_hi = upto;
}

static void pipe_write_checks(sort_pipeline *p)
{
    pipe_drain_landings(p);
    pipe_empty_units(p, p->closed_upto);
    sort_unit **due = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < p->units.n; i++) {
        sort_unit *u = p->units.all[i];
        if (u->bucket_end > p->closed_upto || !sort_check_stale(u))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            sort_unit **nd = realloc(due, cap * sizeof *nd);
            if (!nd)
                abort();
            due = nd;
        }
        due[n++] = u;
    }
    /* One store batch per round: one sync per step for every _CHECK. */
    size_t written = 0;
    orr_err err;
    orr_err_clear(&err);
    if (n > 0 && sort_check_write_many(p->blob, p->spec, due, n, &written, &err) != ORR_OK) {
        char b[600];
        ORR_WARN("_CHECK write failed; will retry", "stream=%s due=%zu written=%zu error=%s",
                 p->spec->name, n, written, orr_log_q(orr_err_str(&err, b, sizeof b)));
    }
    for (size_t i = 0; i < written; i++) {
        p->st.checks_written++;
        if (p->sink && p->sink->reconciled)
            p->sink->reconciled(p->sink->ctx, p->spec, due[i]);
    }
    free(due);
}

static void pipe_checker(sort_pipeline *p, int64_t now)
{
    if (!p->spec->check.enabled || !p->spec->sinks.files)
        return; /* _CHECK lists unit files: only who lands them writes it */
    if (p->ctl_pending) {
        for (int i = 0; i < p->nw; i++)
            if (sort_writer_acked(&p->w[i]) < p->ctl_pending)
                return;
        p->ctl_pending = 0;
        pipe_write_checks(p);
    }
    int64_t b = pipe_boundary(p);
    if (b == INT64_MIN)
        return;
    if (b > p->closed_upto || (p->late_pending && now - p->last_ctl_ms >= 1000)) {
        if (b > p->closed_upto)
            p->closed_upto = b;
        p->late_pending = 0;
        p->last_ctl_ms = now;
        pipe_send_ctl(p, SORT_PACK_ROLL, p->closed_upto);
        p->ctl_pending = p->ctl_seq;
    }
}

/* Commit the PostgreSQL batch when due (or forced); a failure stops the stream. */
static void pipe_pg_flush(sort_pipeline *p, int force)
{
    if (!p->pg || p->failed || (!force && !sort_sink_pg_due(p->pg, pipe_mono_ms())))
        return;
    orr_err_clear(&p->fail_err);
    if (sort_sink_pg_flush(p->pg, &p->rej, &p->fail_err) != ORR_OK)
        p->failed = 1;
}

/* Send the hand-off packs when due (or forced); a failure stops the stream. */
static void pipe_ho_flush(sort_pipeline *p, int force)
{
    if (!p->ho || p->failed || (!force && !sort_handoff_due(p->ho, pipe_mono_ms())))
        return;
    orr_err_clear(&p->fail_err);
    orr_status rc = sort_handoff_flush(p->ho, &p->fail_err);
    if (rc == ORR_ECANCELLED)
        return; /* stopping while the write stages are behind: replayed next run */
    if (rc != ORR_OK)
        p->failed = 1;
}

/* Make every record routed so far durable in the sinks other than files
 * (PostgreSQL, the hand-off), so that a commit right after covers them. */
static void pipe_flush_sinks(sort_pipeline *p)
{
    pipe_pg_flush(p, 1);
    pipe_ho_flush(p, 1);
}

static void pipe_housekeep(sort_pipeline *p, int force)
{
    int64_t now = pipe_mono_ms();
    if (!force && now - p->last_tick_ms < PIPE_TICK_MS)
        return;
    p->last_tick_ms = now;
    pipe_check_writers(p);
    pipe_drain_landings(p);
    pipe_pg_flush(p, 0);
    pipe_ho_flush(p, 0);
    sort_reject_flush(&p->rej); /* before the commit that may acknowledge them */
    pipe_commit(p);
    pipe_checker(p, now);
    if (p->cfg->metrics) {
        pipe_sum_stats(p);
        sort_metrics_publish(p->cfg->metrics, p->spec->name, &p->st);
    }
}

/* ---- routing ---------------------------------------------------------- */

static sort_pack *pipe_pack(sort_pipeline *p, int wi)
{
    while (!p->cur[wi]) {
        sort_pack *k = sort_queue_pop(&p->pool, 0);
        if (!k) {
            p->st.pool_waits++;
            k = sort_queue_pop(&p->pool, PIPE_TICK_MS);
            pipe_housekeep(p, 0);
        }
        p->cur[wi] = k;
    }
    return p->cur[wi];
}

static void pipe_send(sort_pipeline *p, int wi)
{
    sort_pack *k = p->cur[wi];
    p->cur[wi] = NULL;
    k->kind = SORT_PACK_DATA;
    sort_queue_push(&p->w[wi].in, k);
}

static uint32_t pipe_split_of(sort_off off, uint32_t k)
{
    if (k <= 1)
        return 0;
    uint64_t h = off.hi * 0x9E3779B97F4A7C15ULL ^ off.lo;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return (uint32_t)(h % k);
}

static void pipe_route_batch(sort_pipeline *p, sort_batch *b)
{
    const sort_spec *s = p->spec;
    sort_off ends[SORT_MAX_PARTITIONS];
    uint8_t has_end[SORT_MAX_PARTITIONS] = {0};
    /* The whole batch counts as in flight from the start: a commit made
     * while it is routed (a pool wait) must stay below its records. */
    pipe_bmin *bm = &p->bmin[++p->batch_seq % p->nbmin];
    bm->batch = p->batch_seq;
    memset(bm->has, 0, sizeof bm->has);
    for (size_t i = 0; i < b->n; i++) {
        const sort_entry *e = &b->e[i];
        if (e->partition < SORT_MAX_PARTITIONS &&
            (!bm->has[e->partition] || sort_off_cmp(e->off, bm->min[e->partition]) < 0)) {
            bm->min[e->partition] = e->off;
            bm->has[e->partition] = 1;
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        const sort_entry *e = &b->e[i];
        const char *rec = b->data.data + e->pos;
        sort_reject_reason why;
        if (p->failed)
            break; /* a sink failed: nothing more is routed (nor committed) */
        p->st.records_in++;
        if (e->partition >= SORT_MAX_PARTITIONS)
            continue; /* sources never produce these */
        p->seen[e->partition] = 1;
        if (!has_end[e->partition] || sort_off_cmp(e->next, ends[e->partition]) > 0) {
            ends[e->partition] = e->next;
            has_end[e->partition] = 1;
        }
        if (p->ho)
            sort_handoff_advance(p->ho, e->partition, e->next);
        /* In PostgreSQL already: only the files or the hand-off (if any) may
         * still need it. */
        int pg_has = 0;
        if (p->pg) {
            sort_sink_pg_advance(p->pg, e->partition, e->next);
            pg_has = sort_sink_pg_skip(p->pg, e->partition, e->off);
            if (pg_has && !s->sinks.files && !p->ho) {
                p->st.replay_dropped++; /* committed to PostgreSQL by an earlier run */
                continue;
            }
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
        if (p->fmt->parse(s, rec, e->len, p->vals, &why) != 0 ||
            sort_record_route(s, p->vals, &r, &why) != 0) {
            sort_reject_add(&p->rej, e->partition, e->off, why, rec, e->len);
            continue;
        }
        if (p->pg && !pg_has) {
            /* A value PostgreSQL cannot hold is a reject of this sink only. */
            if (sort_sink_pg_add(p->pg, e->partition, e->off, p->vals, rec, e->len) != 0)
                sort_reject_add(&p->rej, e->partition, e->off, SORT_REJ_DB_REFUSED, rec, e->len);
            else if (!s->sinks.files && !p->ho)
                p->st.records_out++;
            if (sort_sink_pg_due(p->pg, 0))
                pipe_pg_flush(p, 1);
        }
        if (p->ho) {
            orr_err_clear(&p->fail_err);
            orr_status hrc = sort_handoff_add(p->ho, r.iface, r.iface_len, r.bucket_start,
                                              e->partition, e->off, rec, e->len, &p->fail_err);
            if (hrc == ORR_ECANCELLED)
                break; /* stopping while the write stages are behind */
            if (hrc != ORR_OK) {
                p->failed = 1;
                continue;
            }
            p->st.records_out++;
            if (sort_handoff_due(p->ho, 0)) /* the buffer is full */
                pipe_ho_flush(p, 1);
        }
        if (!s->sinks.files)
            continue;
        sort_unit *u = sort_units_get(&p->units, r.iface, r.iface_len, r.bucket_start);
        uint32_t split = pipe_split_of(e->off, u->split);
        /* The data clock counts replayed records too: after a crash the
         * buckets they close must still get their _CHECK. */
        if (!p->has_data || r.time_ms > p->max_data_ms) {
            p->max_data_ms = r.time_ms;
            p->has_data = 1;
        }
        if (!sort_unit_accept(&p->units, u, split, e->partition, e->off)) {
            p->st.replay_dropped++; /* landed by an earlier run or routed already */
            continue;
        }
        if (u->bucket_end <= p->closed_upto) {
            if (s->check.late == SORT_LATE_DROP) {
                sort_reject_add(&p->rej, e->partition, e->off, SORT_REJ_LATE, rec, e->len);
                continue;
            }
            u->late++;
            p->st.late++;
            p->late_pending = 1;
        }
        int wi = (int)((u->hash + split) % (uint64_t)p->nw);
        sort_pack *k = pipe_pack(p, wi);
        sort_pack_add(k, u, split, e->partition, e->off, rec, e->len);
        p->st.records_out++;
        if (k->data.len >= p->cfg->pack_bytes)
            pipe_send(p, wi);
    }
    /* A packs source interleaves offsets across batches: its stamps only
     * rise (the commit stays behind unappended records through bmin), so
     * packs delivered below a later batch's end are acknowledged too. */
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
    /* Every writer learns how far this batch went, records or not. */
    for (int wi = 0; wi < p->nw; wi++) {
        sort_pack *k = pipe_pack(p, wi);
        for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++)
            if (has_end[part])
                sort_pack_stamp(k, part, ends[part]);
        k->batch = p->batch_seq;
        pipe_send(p, wi);
    }
}

/* ---- rebalancing ------------------------------------------------------ */
/* The source's hooks (sort_source.h) for partitions that move between
 * processes (a Kafka source in a consumer group). */

/* Wait until every writer has taken control pack seq. 0, or -1 (p->failed)
 * when a writer failed: a failed writer takes nothing more. */
static int pipe_wait_acked(sort_pipeline *p, uint64_t seq)
{
    for (;;) {
        int behind = 0;
        pipe_check_writers(p);
        if (p->failed)
            return -1;
        for (int i = 0; i < p->nw; i++)
            if (sort_writer_acked(&p->w[i]) < seq)
                behind = 1;
        if (!behind)
            return 0;
        struct timespec ts = {0, 2000000L};
        nanosleep(&ts, NULL);
        pipe_drain_landings(p);
    }
}

static orr_status pipe_on_drain(void *ctx, sort_batch *b, const uint32_t *parts, size_t n, int lost,
                                orr_err *err)
{
    sort_pipeline *p = ctx;
    p->st.rebalances_revoked++;
    if (lost && !p->failed) {
        /* Another member may be writing these partitions already: nothing
         * pending may become durable now. */
        orr_err_set(&p->fail_err, ORR_ESTATE, "spec.source.session_timeout_ms",
                    "partitions lost to the consumer group (session timed out): stopping "
                    "without committing; their next owner replays");
        p->failed = 1;
    }
    if (b && b->n > 0)
        pipe_route_batch(p, b);
    if (b)
        sort_batch_reset(b);
    for (int i = 0; i < p->nw; i++)
        if (p->cur[i])
            pipe_send(p, i);
    if (!p->failed) {
        /* Kind ROLL before INT64_MIN rolls nothing: a barrier every writer
         * acknowledges after publishing its positions. */
        pipe_send_ctl(p, SORT_PACK_ROLL, INT64_MIN);
        pipe_wait_acked(p, p->ctl_seq);
    }
    pipe_drain_landings(p);
    pipe_flush_sinks(p); /* nothing after a failure */
    sort_reject_flush(&p->rej);
    if (!p->failed)
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
    if (p->failed) {
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
    if (p->failed)
        return ORR_OK; /* routes nothing more anyway */
    if (p->pg && n > 0 && sort_sink_pg_reload(p->pg, parts, n, &p->fail_err) != ORR_OK) {
        p->failed = 1;
        if (err)
            *err = p->fail_err;
        return p->fail_err.code;
    }
    /* With PostgreSQL the only sink, its position is where the partition
     * resumes: the records below are in the table already. */
    int pg_only = p->pg && !p->spec->sinks.files && !p->spec->sinks.handoff;
    for (size_t i = 0; i < n; i++) {
        char fb[SORT_OFF_MAX], sb[SORT_OFF_MAX], tb[SORT_OFF_MAX];
        sort_off at, was = from[i];
        int known = sort_off_cmp(was, SORT_OFF_UNKNOWN) != 0;
        int has_at = p->pg && sort_sink_pg_safe(p->pg, parts[i], &at);
        if (pg_only && has_at && (!known || sort_off_cmp(at, was) > 0))
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
    memset(&p->st.w, 0, sizeof p->st.w);
    for (int i = 0; i < p->nw; i++) {
        sort_writer_stats ws;
        sort_writer_get_stats(&p->w[i], &ws);
        p->st.w.records += ws.records;
        p->st.w.bytes_raw += ws.bytes_raw;
        p->st.w.bytes_lzo += ws.bytes_lzo;
        p->st.w.files += ws.files;
        p->st.w.rolls_size += ws.rolls_size;
        p->st.w.rolls_age += ws.rolls_age;
        p->st.w.rolls_lru += ws.rolls_lru;
        p->st.w.rolls_close += ws.rolls_close;
        p->st.w.open_units += ws.open_units;
    }
    if (p->src && p->src->ops->lag)
        for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++)
            p->st.has_lag[part] = p->src->ops->lag(p->src, part, &p->st.lag[part]) != 0;
    for (int r = 0; r < SORT_REJ__COUNT; r++)
        p->st.rejects[r] = p->rej.count[r];
    p->st.rejected = p->rej.total;
    p->st.units = p->units.n;
    if (p->pg)
        sort_sink_pg_counts(p->pg, &p->st.pg_rows, &p->st.pg_refused, &p->st.pg_batches);
    if (p->ho) {
        sort_handoff_counts hc;
        sort_handoff_get_counts(p->ho, &hc);
        p->st.ho_packs = hc.packs;
        p->st.ho_bytes = hc.bytes;
        p->st.ho_waits = hc.waits;
    }
}

orr_status sort_pipe_run(const sort_pipe_cfg *cfg, sort_pipe_stats *stats, orr_err *err)
{
    sort_pipeline pp, *p = &pp;
    memset(p, 0, sizeof *p);
    p->cfg = cfg;
    p->spec = cfg->spec;
    p->sink = cfg->sink ? cfg->sink : &sort_check_log_sink;
    p->closed_upto = INT64_MIN;
    p->nw = cfg->writers > 0 ? cfg->writers : 1;
    int64_t t0 = pipe_mono_ms();
    orr_status rc = ORR_OK;
    int writers_started = 0, npool = 0;
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
    pipe_wipe_work(p->work);

    sort_units_init(&p->units, p->spec);
    sort_landings_init(&p->landings);
    sort_queue_init(&p->pool);
    p->vals = calloc(SORT_MAX_FIELDS, sizeof *p->vals);
    p->w = calloc((size_t)p->nw, sizeof *p->w);
    p->cur = calloc((size_t)p->nw, sizeof *p->cur);
    if (!p->vals || !p->w || !p->cur)
        abort();
    p->start_bucket = sort_bucket_start((int64_t)time(NULL) * 1000, p->spec->bucket, p->spec->tz);

    rc = orr_blob_open(cfg->blob_url, &p->blob, err);
    if (rc != ORR_OK)
        goto out;
    /* Only who lands unit files reads them back (and sweeps leftovers). */
    rc = p->spec->sinks.files ? sort_units_load(&p->units, p->blob, err) : ORR_OK;
    if (rc != ORR_OK)
        goto out;
    /* Buckets reconciled by an earlier run stay closed: later records are late. */
    for (size_t i = 0; i < p->units.n; i++)
        if (p->units.all[i]->check_version > 0 && p->units.all[i]->bucket_end > p->closed_upto)
            p->closed_upto = p->units.all[i]->bucket_end;
    if (snprintf(path, sizeof path, "%s/%s.rejects", cfg->state_dir, p->stem) >= (int)sizeof path) {
        rc = orr_err_set(err, ORR_EINVAL, "state_dir", "path too long");
        goto out;
    }
    rc = sort_reject_open(&p->rej, path, err);
    if (rc != ORR_OK)
        goto out;
    if (p->spec->sinks.pg) {
        rc = sort_sink_pg_open(p->spec, &p->pg, err);
        if (rc != ORR_OK)
            goto out;
    }
    sort_source_env env = {cfg->state_dir, cfg->redis_addr, p->fmt, p,
                           pipe_on_drain,  pipe_on_assigned};
    rc = sops->open(p->spec, &env, &p->src, err);
    if (rc != ORR_OK)
        goto out;
    if (p->spec->sinks.handoff) {
        rc = sort_handoff_open(p->spec, cfg->redis_addr, p->src, cfg->stop, &p->ho, err);
        if (rc != ORR_OK)
            goto out;
    }

    npool = cfg->packs > p->nw * 2 ? cfg->packs : p->nw * 2;
    p->nbmin = (size_t)npool + 2;
    p->bmin = calloc(p->nbmin, sizeof *p->bmin);
    if (!p->bmin)
        abort();
    for (int i = 0; i < npool; i++) {
        sort_pack *k = calloc(1, sizeof *k);
        if (!k)
            abort();
        k->pooled = 1;
        sort_queue_push(&p->pool, k);
    }
    size_t per_writer = cfg->max_open_units / (size_t)p->nw;
    uint32_t bsize = sort_pipe_block_size(cfg);
    for (; writers_started < p->nw; writers_started++) {
        rc = sort_writer_start(&p->w[writers_started], writers_started, p->spec, p->fmt, p->blob,
                               p->work, per_writer ? per_writer : 1, bsize, &p->pool, &p->landings,
                               err);
        if (rc != ORR_OK)
            goto stop;
    }
    ORR_INFO("stream started", "stream=%s source=%s format=%s writers=%d packs=%d units_known=%zu",
             p->spec->name, p->spec->source.type, p->spec->format.type, p->nw, npool, p->units.n);

    int backoff_ms = 50;
    while (!*cfg->stop && !p->failed) {
        sort_batch_reset(&batch);
        orr_err serr;
        orr_err_clear(&serr);
        orr_status src_rc = p->src->ops->next(p->src, &batch, PIPE_TICK_MS, &serr);
        if (batch.n > 0)
            pipe_route_batch(p, &batch);
        if (src_rc == ORR_EOF) {
            p->eof = 1;
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
    /* Stop: writers roll and land everything, then the last commit. */
    p->nw = writers_started;
    for (int i = 0; i < p->nw; i++)
        if (p->cur[i])
            pipe_send(p, i);
    pipe_send_ctl(p, SORT_PACK_STOP, INT64_MAX);
    for (int i = 0; i < writers_started; i++)
        sort_writer_join(&p->w[i]);
    pipe_check_writers(p);
    pipe_drain_landings(p);
    pipe_flush_sinks(p);
    sort_reject_flush(&p->rej);
    pipe_commit(p);
    if (p->spec->check.enabled && !p->failed) {
        int64_t b = pipe_boundary(p);
        if (b > p->closed_upto)
            p->closed_upto = b;
        if (p->closed_upto != INT64_MIN)
            pipe_write_checks(p);
    }
    if (p->failed && rc == ORR_OK) {
        rc = p->fail_err.code != ORR_OK ? p->fail_err.code : ORR_EIO;
        if (err)
            *err = p->fail_err;
    }
out:
    pipe_sum_stats(p);
    p->st.seconds = (double)(pipe_mono_ms() - t0) / 1000.0;
    if (cfg->metrics)
        sort_metrics_publish(cfg->metrics, p->spec->name, &p->st);
    if (stats)
        *stats = p->st;
    if (p->src)
        p->src->ops->close(p->src);
    sort_sink_pg_close(p->pg);
    sort_handoff_close(p->ho);
    sort_reject_close(&p->rej);
    sort_pack *k;
    while ((k = sort_queue_pop(&p->pool, 0)) != NULL) {
        orr_buf_free(&k->data);
        free(k);
    }
    sort_queue_destroy(&p->pool);
    sort_landings_destroy(&p->landings);
    orr_blob_close(p->blob);
    sort_units_free(&p->units);
    sort_batch_free(&batch);
    free(p->vals);
    free(p->bmin);
    free(p->w);
    free(p->cur);
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
    json_object_set_new(o, "handoff_packs", json_integer((json_int_t)st->ho_packs));
    json_object_set_new(o, "handoff_bytes", json_integer((json_int_t)st->ho_bytes));
    json_object_set_new(o, "handoff_waits", json_integer((json_int_t)st->ho_waits));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

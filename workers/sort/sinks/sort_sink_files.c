/*
 * sort_sink_files.c - the files sink: routed records become lzop unit files
 * in the blob store, each closed bucket gets its _CHECK (see sort_pipe.h for
 * the whole picture, sort_writer.h for the writer threads).
 *
 *   add --packs--> writers (threads) --landings--> units --> checker
 *
 * A record goes to the pack of one writer (unit -> writer by hash; a hot
 * unit's records spread over its split factor by offset); a replayed record
 * (landed by an earlier run or routed already in this one) is dropped. After
 * each batch every writer gets a stamped pack, so its safe position follows
 * the batch ends; the safe position of the sink is the minimum over the
 * writers and over the batches still in their queues. The checker sends a
 * roll control pack to every writer when buckets close and, once all have
 * acknowledged it, renders the _CHECKs of the closed units (empty ones too)
 * and hands them to the checker thread (sortd-check), which writes and syncs
 * them while the pipeline goes on routing; the next housekeeping round takes
 * the result back. One round is in flight at a time; the last one, at the
 * end of a run, is written in place.
 *
 * Write-behind: unit files are written into the page cache and made durable
 * by the landing's sync, which writes out everything dirty on the
 * filesystem at once; at a bucket close and at the end of a run that was a
 * second or more of output, with reads of the source waiting behind it. With
 * "fsync" on, the checker thread also calls syncfs on the work folder's
 * filesystem whenever FILES_WB_RAW more bytes went to the writers, so the
 * landing syncs find little left to write (only when the files land by
 * rename into a file:// store on that filesystem: files_wb_open).
 * Durability still comes only from the landing's own sync.
 *
 * The sink is open in every run, files or not: its writers carry the batch
 * ends that the commit waits for. With "files": false it lands nothing
 * (has() says it holds every record) and writes no _CHECK.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_blob.h"
#include "orr_clock.h"
#include "orr_log.h"
#include "sort_check.h"
#include "sort_chan.h"
#include "sort_sink.h"
#include "sort_unit.h"
#include "sort_writer.h"

#define FILES_EMPTY_UNIT_CAP 100000 /* empty units created per check round, at most */
#define FILES_WAIT_MS        100    /* a pool wait, between housekeeping rounds */
/* Write-behind (see the top of the file): checked every FILES_WB_TICK_MS,
 * a sync each FILES_WB_RAW of packs sent (about 64 MiB of lzop). */
#define FILES_WB_TICK_MS 50
#define FILES_WB_RAW     ((uint64_t)160 << 20)

typedef struct files_bmin {
    uint64_t batch;
    sort_off min[SORT_MAX_PARTITIONS];
    uint8_t has[SORT_MAX_PARTITIONS];
} files_bmin;

typedef struct files_sink {
    sort_sink_env *env;
    const sort_spec *spec;
    orr_blob *blob;
    sort_units units;
    sort_writer *w;
    int nw;     /* writers started */
    int joined; /* stopped: the writers are joined */
    sort_queue pool;
    sort_slab slab;  /* the pool's buffers */
    sort_pack **cur; /* pack being filled, per writer */
    sort_landings landings;
    const sort_check_sink *sink;
    /* Batches still in the writers' queues: the lowest offset routed per
     * partition (a ring indexed by batch number; at most npool batches are
     * in flight, one pooled pack per writer each). */
    files_bmin *bmin;
    size_t nbmin;
    uint64_t batch_seq; /* the batch being routed */

    int64_t closed_upto; /* buckets ending at or before this (s) are closed */
    int64_t max_data_ms;
    int has_data;
    int64_t start_bucket;
    int64_t empty_lo, empty_hi; /* bucket range already given empty units */
    uint64_t ctl_seq, ctl_pending;
    int late_pending;
    int64_t last_ctl_ms;

    /* The checker thread and its one round (ck_batch, over the units in
     * ck_due): ck_busy (pipeline thread only) from submit to collect;
     * ck_state under ck_mu. */
    pthread_t ck_thread;
    int ck_started;
    int ck_busy;
    pthread_mutex_t ck_mu;
    pthread_cond_t ck_cv;
    enum { FILES_CK_IDLE, FILES_CK_QUEUED, FILES_CK_DONE } ck_state;
    int ck_stop;
    int wb_fd;                   /* the work folder, for write-behind syncs; -1: none */
    _Atomic uint64_t sent_bytes; /* pack bytes sent to the writers */
    sort_check_batch ck_batch;
    sort_unit **ck_due;
} files_sink;

/* ---- landings, writers, checks --------------------------------------- */

static void files_drain_landings(files_sink *f)
{
    sort_landing *v = NULL;
    size_t n = sort_landings_take(&f->landings, &v);
    for (size_t i = 0; i < n; i++)
        sort_unit_add_file(&f->units, v[i].unit, v[i].name, v[i].count, v[i].bytes);
    free(v);
}

/* ORR_OK, or the error of the first writer that failed. */
static orr_status files_check_writers(files_sink *f, orr_err *err)
{
    for (int i = 0; i < f->nw; i++)
        if (sort_writer_failed(&f->w[i], err))
            return err->code != ORR_OK ? err->code : ORR_EIO;
    return ORR_OK;
}

/* Closed-bucket boundary now: buckets ending at or before it are closed. */
static int64_t files_boundary(files_sink *f)
{
    const sort_spec *s = f->spec;
    int64_t t_ms;
    if (s->check.clock == SORT_CLOCK_DATA) {
        if (f->env->eof)
            return INT64_MAX;
        if (!f->has_data)
            return INT64_MIN;
        t_ms = f->max_data_ms - s->check.grace_ms;
    } else {
        t_ms = (int64_t)time(NULL) * 1000 - s->check.grace_ms;
    }
    return sort_bucket_start(t_ms, s->bucket, s->tz);
}

static void files_send_ctl(files_sink *f, sort_pack_kind kind, int64_t before)
{
    f->ctl_seq++;
    for (int i = 0; i < f->nw; i++) {
        sort_pack *c = orr_xcalloc(1, sizeof *c);
        c->kind = kind;
        c->roll_before = before;
        c->seq = f->ctl_seq;
        sort_queue_push(&f->w[i].in, c);
    }
}

/* Give every declared interface a unit in each closed bucket we cover. */
static void files_empty_units(files_sink *f, int64_t upto)
{
    const sort_spec *s = f->spec;
    int64_t lo = f->units.min_bucket;
    if (s->check.clock == SORT_CLOCK_WALL && f->start_bucket < lo)
        lo = f->start_bucket;
    if (lo == INT64_MAX || s->ninterfaces == 0)
        return;
    if (upto == INT64_MAX) {
        int64_t hi = INT64_MIN;
        for (size_t i = 0; i < f->units.n; i++)
            if (f->units.all[i]->bucket_end > hi)
                hi = f->units.all[i]->bucket_end;
        upto = hi;
    }
    size_t made = 0;
    for (int64_t b = lo;
         sort_bucket_end(b, s->bucket, s->tz) <= upto && made < FILES_EMPTY_UNIT_CAP;
         b = sort_bucket_next(b, s->bucket, s->tz)) {
        if (f->empty_hi > f->empty_lo && b >= f->empty_lo && b < f->empty_hi)
            continue; /* done in an earlier round */
        for (size_t i = 0; i < s->ninterfaces; i++) {
            size_t len = strlen(s->interfaces[i]);
            if (!sort_units_owns(&f->units, sort_unit_hash(s->interfaces[i], len, b)))
                continue; /* another write stage's */
            sort_units_get(&f->units, s->interfaces[i], len, b);
            made++;
        }
    }
    if (f->empty_hi <= f->empty_lo || lo < f->empty_lo)
        f->empty_lo = lo;
    if (upto > f->empty_hi)
        f->empty_hi = upto;
}

/* The closed units whose _CHECK is missing or out of date (*out: freed by
 * the caller), after giving every declared interface its unit. */
static size_t files_due(files_sink *f, sort_unit ***out)
{
    files_drain_landings(f);
    files_empty_units(f, f->closed_upto);
    sort_unit **due = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < f->units.n; i++) {
        sort_unit *u = f->units.all[i];
        if (u->bucket_end > f->closed_upto || !sort_check_stale(u))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            due = orr_xrealloc(due, cap * sizeof *due);
        }
        due[n++] = u;
    }
    *out = due;
    return n;
}

/* A round's result, on the pipeline thread: versions, counts, the sink. A
 * failed store batch is retried by the next round (its units stay stale). */
static void files_check_done(files_sink *f, sort_check_batch *b)
{
    if (b->rc != ORR_OK) {
        char m[600];
        ORR_WARN("_CHECK write failed; will retry", "stream=%s due=%zu written=%zu error=%s",
                 f->spec->name, b->n, b->landed, orr_log_q(orr_err_str(&b->err, m, sizeof m)));
    }
    size_t written = sort_check_apply(b);
    for (size_t i = 0; i < written; i++) {
        f->env->st->checks_written++;
        if (f->sink && f->sink->reconciled) {
            sort_unit view; /* the counts of the landed _CHECK, not newer ones */
            sort_check_landed_view(b, i, &view);
            f->sink->reconciled(f->sink->ctx, f->spec, &view);
        }
    }
}

/* One round in place: one store batch, one sync per step for every _CHECK. */
static void files_write_checks(files_sink *f)
{
    sort_unit **due = NULL;
    size_t n = files_due(f, &due);
    if (n > 0) {
        sort_check_batch b;
        sort_check_render(f->spec, due, n, &b);
        sort_check_put(f->blob, &b);
        files_check_done(f, &b);
        sort_check_batch_free(&b);
    }
    free(due);
}

/* The checker thread. Under ck_mu it waits for a round (ck_state QUEUED,
 * set by files_check_submit) or ck_stop; it puts the round with the mutex
 * released, then sets DONE for files_check_collect. Between rounds, with
 * write-behind on, it wakes every FILES_WB_TICK_MS. On ck_stop it ends,
 * after a round already queued. */
static void *files_check_main(void *arg)
{
    files_sink *f = arg;
    uint64_t synced = 0;
    pthread_mutex_lock(&f->ck_mu);
    for (;;) {
        while (f->ck_state != FILES_CK_QUEUED && !f->ck_stop) {
            if (f->wb_fd < 0) {
                pthread_cond_wait(&f->ck_cv, &f->ck_mu);
                continue;
            }
            struct timespec dl = orr_clock_after(CLOCK_MONOTONIC, FILES_WB_TICK_MS);
            if (pthread_cond_timedwait(&f->ck_cv, &f->ck_mu, &dl) != ETIMEDOUT)
                continue;
            pthread_mutex_unlock(&f->ck_mu);
            uint64_t sent = atomic_load_explicit(&f->sent_bytes, memory_order_relaxed);
            if (sent - synced >= FILES_WB_RAW) {
                synced = sent;
                (void)syncfs(f->wb_fd); /* write-behind only: landing syncs again */
            }
            pthread_mutex_lock(&f->ck_mu);
        }
        if (f->ck_state != FILES_CK_QUEUED)
            break; /* stopping, nothing queued */
        pthread_mutex_unlock(&f->ck_mu);
        sort_check_put(f->blob, &f->ck_batch); /* reads and writes only the batch */
        pthread_mutex_lock(&f->ck_mu);
        f->ck_state = FILES_CK_DONE;
        pthread_cond_broadcast(&f->ck_cv);
    }
    pthread_mutex_unlock(&f->ck_mu);
    return NULL;
}

/* Render a round and hand it to the checker thread (or write it in place
 * when the thread could not start). */
static void files_check_submit(files_sink *f)
{
    if (!f->ck_started) {
        files_write_checks(f);
        return;
    }
    sort_unit **due = NULL;
    size_t n = files_due(f, &due);
    if (n == 0) {
        free(due);
        return;
    }
    sort_check_render(f->spec, due, n, &f->ck_batch);
    f->ck_due = due;
    f->ck_busy = 1;
    pthread_mutex_lock(&f->ck_mu);
    f->ck_state = FILES_CK_QUEUED;
    pthread_cond_signal(&f->ck_cv);
    pthread_mutex_unlock(&f->ck_mu);
}

/* Take back the round in flight once it is done (wait: until it is). */
static void files_check_collect(files_sink *f, int wait)
{
    if (!f->ck_busy)
        return;
    pthread_mutex_lock(&f->ck_mu);
    while (wait && f->ck_state != FILES_CK_DONE)
        pthread_cond_wait(&f->ck_cv, &f->ck_mu);
    int done = f->ck_state == FILES_CK_DONE;
    if (done)
        f->ck_state = FILES_CK_IDLE;
    pthread_mutex_unlock(&f->ck_mu);
    if (!done)
        return;
    files_check_done(f, &f->ck_batch);
    sort_check_batch_free(&f->ck_batch);
    free(f->ck_due);
    f->ck_due = NULL;
    f->ck_busy = 0;
}

static void files_checker(files_sink *f, int64_t now)
{
    if (!f->spec->check.enabled || !f->spec->sinks.files)
        return; /* _CHECK lists unit files: only who lands them writes it */
    files_check_collect(f, 0);
    if (f->ctl_pending) {
        for (int i = 0; i < f->nw; i++)
            if (sort_writer_acked(&f->w[i]) < f->ctl_pending)
                return;
        if (f->ck_busy)
            return; /* after the round in flight */
        f->ctl_pending = 0;
        files_check_submit(f);
    }
    int64_t b = files_boundary(f);
    if (b == INT64_MIN)
        return;
    if (b > f->closed_upto || (f->late_pending && now - f->last_ctl_ms >= 1000)) {
        if (b > f->closed_upto)
            f->closed_upto = b;
        f->late_pending = 0;
        f->last_ctl_ms = now;
        files_send_ctl(f, SORT_PACK_ROLL, f->closed_upto);
        f->ctl_pending = f->ctl_seq;
    }
}

/* ---- routing ---------------------------------------------------------- */

static sort_pack *files_pack(files_sink *f, int wi)
{
    while (!f->cur[wi]) {
        sort_pack *k = sort_queue_pop(&f->pool, 0);
        if (!k) {
            f->env->st->pool_waits++;
            k = sort_queue_pop(&f->pool, FILES_WAIT_MS);
            f->env->idle(f->env->pipe);
        }
        f->cur[wi] = k;
    }
    return f->cur[wi];
}

static void files_send(files_sink *f, int wi)
{
    sort_pack *k = f->cur[wi];
    f->cur[wi] = NULL;
    k->kind = SORT_PACK_DATA;
    atomic_fetch_add_explicit(&f->sent_bytes, k->data.len, memory_order_relaxed);
    sort_queue_push(&f->w[wi].in, k);
}

static uint32_t files_split_of(sort_off off, uint32_t k)
{
    if (k <= 1)
        return 0;
    uint64_t h = off.hi * 0x9E3779B97F4A7C15ULL ^ off.lo;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return (uint32_t)(h % k);
}

/* Whether the stage catches up decides how old a file may get (the
 * writers' roll decision, sort_writer.h): told before each batch is routed
 * (a catch-up holds its first files) and at each tick (an empty read ends
 * a catch-up too). */
static void files_tell_behind(files_sink *f)
{
    for (int wi = 0; wi < f->nw; wi++) {
        sort_writer_set_behind(&f->w[wi], f->env->behind, f->batch_seq);
        sort_writer_set_room(&f->w[wi], f->env->room);
    }
}

/* The whole batch counts as in flight from the start: a commit made while
 * it is routed (a pool wait) must stay below its records. */
static void files_batch_begin(void *state, uint64_t seq, const sort_batch *b)
{
    files_sink *f = state;
    files_bmin *bm = &f->bmin[seq % f->nbmin];
    f->batch_seq = seq;
    files_tell_behind(f);
    bm->batch = seq;
    memset(bm->has, 0, sizeof bm->has);
    for (size_t i = 0; i < b->n; i++) {
        const sort_entry *e = &b->e[i];
        if (e->partition < SORT_MAX_PARTITIONS &&
            (!bm->has[e->partition] || sort_off_cmp(e->off, bm->min[e->partition]) < 0)) {
            bm->min[e->partition] = e->off;
            bm->has[e->partition] = 1;
        }
    }
}

static int files_has(void *state, uint32_t partition, sort_off off)
{
    files_sink *f = state;
    (void)partition;
    (void)off;
    return !f->spec->sinks.files; /* lands nothing: needs nothing */
}

static orr_status files_add(void *state, const sort_sink_rec *r, orr_err *err)
{
    files_sink *f = state;
    const sort_spec *s = f->spec;
    sort_pipe_stats *st = f->env->st;
    (void)err;
    sort_unit *u =
        sort_units_get(&f->units, r->route->iface, r->route->iface_len, r->route->bucket_start);
    uint32_t split = files_split_of(r->off, u->split);
    /* The data clock counts replayed records too: after a crash the
     * buckets they close must still get their _CHECK. */
    if (!f->has_data || r->route->time_ms > f->max_data_ms) {
        f->max_data_ms = r->route->time_ms;
        f->has_data = 1;
    }
    if (!sort_unit_accept(&f->units, u, split, r->partition, r->off)) {
        st->replay_dropped++; /* landed by an earlier run or routed already */
        return ORR_OK;
    }
    if (u->bucket_end <= f->closed_upto) {
        if (s->check.late == SORT_LATE_DROP) {
            sort_reject_add(f->env->rej, r->partition, r->off, SORT_REJ_LATE, r->rec, r->len);
            return ORR_OK;
        }
        u->late++;
        st->late++;
        f->late_pending = 1;
    }
    int wi = (int)((u->hash + split) % (uint64_t)f->nw);
    sort_pack *k = files_pack(f, wi);
    if (k->data.len > 0 && k->data.len + sort_pack_need(r->len) > f->env->cfg->pack_bytes) {
        /* The record starts the next pack: a pack never outgrows pack_size
         * (its buffer, kept in the pool, would double past it), unless one
         * record alone is larger. */
        files_send(f, wi);
        k = files_pack(f, wi);
    }
    sort_pack_add(k, u, split, r->partition, r->off, r->rec, r->len);
    st->records_out++;
    if (k->data.len >= f->env->cfg->pack_bytes)
        files_send(f, wi);
    return ORR_OK;
}

/* Every writer learns how far this batch went, records or not. */
static void files_batch_end(void *state, uint64_t seq, const sort_off *ends, const uint8_t *has_end)
{
    files_sink *f = state;
    for (int wi = 0; wi < f->nw; wi++) {
        sort_pack *k = files_pack(f, wi);
        for (uint32_t part = 0; part < SORT_MAX_PARTITIONS; part++)
            if (has_end[part])
                sort_pack_stamp(k, part, ends[part]);
        k->batch = seq;
        files_send(f, wi);
    }
}

static orr_status files_tick(void *state, int force, orr_err *err)
{
    files_sink *f = state;
    (void)force;
    orr_status rc = files_check_writers(f, err);
    files_tell_behind(f);
    files_drain_landings(f);
    files_checker(f, orr_clock_ms(CLOCK_MONOTONIC));
    return rc;
}

static int files_safe(void *state, uint32_t part, sort_off *out)
{
    files_sink *f = state;
    if (f->nw == 0)
        return 0;
    sort_off lo = {0, 0};
    for (int i = 0; i < f->nw; i++) {
        sort_off s;
        if (!sort_writer_safe(&f->w[i], part, &s))
            return 0;
        if (i == 0 || sort_off_cmp(s, lo) < 0)
            lo = s;
    }
    /* Records of batches some writer has not appended yet: with a packs
     * source they may lie below what the writers already passed. */
    uint64_t done = UINT64_MAX;
    for (int i = 0; i < f->nw; i++) {
        uint64_t d = sort_writer_done_batch(&f->w[i]);
        if (d < done)
            done = d;
    }
    if (f->batch_seq - done >= f->nbmin)
        return 0; /* cannot happen (the pool bounds batches in flight) */
    for (uint64_t b = done + 1; b <= f->batch_seq; b++) {
        const files_bmin *m = &f->bmin[b % f->nbmin];
        if (m->batch == b && m->has[part] && sort_off_cmp(m->min[part], lo) < 0)
            lo = m->min[part];
    }
    *out = lo;
    return 1;
}

/* Wait until every writer has taken control pack seq. ORR_OK, or the error
 * of a failed writer (a failed writer takes nothing more). */
static orr_status files_wait_acked(files_sink *f, uint64_t seq, orr_err *err)
{
    for (;;) {
        int behind = 0;
        orr_status rc = files_check_writers(f, err);
        if (rc != ORR_OK)
            return rc;
        for (int i = 0; i < f->nw; i++)
            if (sort_writer_acked(&f->w[i]) < seq)
                behind = 1;
        if (!behind)
            return ORR_OK;
        struct timespec ts = {0, 2000000L};
        nanosleep(&ts, NULL);
        files_drain_landings(f);
    }
}

static orr_status files_barrier(void *state, orr_err *err)
{
    files_sink *f = state;
    orr_status rc = ORR_OK;
    for (int i = 0; i < f->nw; i++)
        if (f->cur[i])
            files_send(f, i);
    if (!f->env->failed) {
        /* Kind ROLL before INT64_MIN rolls nothing: a barrier every writer
         * acknowledges after publishing its positions. */
        files_send_ctl(f, SORT_PACK_ROLL, INT64_MIN);
        rc = files_wait_acked(f, f->ctl_seq, err);
    }
    files_drain_landings(f);
    return rc;
}

/* Writers roll and land everything, then stop. */
static orr_status files_stop(void *state, orr_err *err)
{
    files_sink *f = state;
    for (int i = 0; i < f->nw; i++)
        if (f->cur[i])
            files_send(f, i);
    files_send_ctl(f, SORT_PACK_STOP, INT64_MAX);
    for (int i = 0; i < f->nw; i++)
        sort_writer_join(&f->w[i]);
    f->joined = 1;
    orr_status rc = files_check_writers(f, err);
    files_drain_landings(f);
    return rc;
}

static void files_finish(void *state)
{
    files_sink *f = state;
    if (!f->spec->check.enabled)
        return;
    files_check_collect(f, 1);
    int64_t b = files_boundary(f);
    if (b > f->closed_upto)
        f->closed_upto = b;
    if (f->closed_upto != INT64_MIN)
        files_write_checks(f);
}

static void files_stats(void *state, sort_pipe_stats *st)
{
    files_sink *f = state;
    memset(&st->w, 0, sizeof st->w);
    for (int i = 0; i < f->nw; i++) {
        sort_writer_stats ws;
        sort_writer_get_stats(&f->w[i], &ws);
        st->w.records += ws.records;
        st->w.bytes_raw += ws.bytes_raw;
        st->w.bytes_lzo += ws.bytes_lzo;
        st->w.files += ws.files;
        st->w.rolls_size += ws.rolls_size;
        st->w.rolls_age += ws.rolls_age;
        st->w.rolls_room += ws.rolls_room;
        st->w.rolls_lru += ws.rolls_lru;
        st->w.rolls_close += ws.rolls_close;
        st->w.open_units += ws.open_units;
    }
    st->units = f->units.n;
}

static void files_close(void *state)
{
    files_sink *f = state;
    if (!f)
        return;
    if (f->nw > 0 && !f->joined) { /* never stopped (a failed open) */
        files_send_ctl(f, SORT_PACK_STOP, INT64_MAX);
        for (int i = 0; i < f->nw; i++)
            sort_writer_join(&f->w[i]);
    }
    if (f->ck_started) {
        pthread_mutex_lock(&f->ck_mu);
        f->ck_stop = 1;
        pthread_cond_signal(&f->ck_cv);
        pthread_mutex_unlock(&f->ck_mu);
        pthread_join(f->ck_thread, NULL);
        /* A run that failed skips finish: a round that landed meanwhile
         * (the thread ends only after the round queued) is still counted
         * and reported, as the next run will load those _CHECKs as done. */
        files_check_collect(f, 0);
        if (f->ck_busy) { /* not reached: a queued round always ends DONE */
            sort_check_batch_free(&f->ck_batch);
            free(f->ck_due);
        }
    }
    if (f->wb_fd >= 0)
        close(f->wb_fd);
    pthread_mutex_destroy(&f->ck_mu);
    pthread_cond_destroy(&f->ck_cv);
    sort_pool_drain(&f->pool, &f->slab);
    sort_queue_destroy(&f->pool);
    sort_landings_destroy(&f->landings);
    orr_blob_close(f->blob);
    sort_units_free(&f->units);
    free(f->bmin);
    free(f->w);
    free(f->cur);
    free(f);
}

/* The work folder's descriptor for write-behind syncs, or -1: only when
 * the unit files land by rename into a file:// store on the same
 * filesystem (otherwise landing copies them and the landing's sync is on
 * the store's side). */
static int files_wb_open(const char *work, orr_blob *blob)
{
    const char *root = orr_blob_local_root(blob);
    struct stat ws, rs;
    if (!root || stat(work, &ws) != 0 || stat(root, &rs) != 0 || ws.st_dev != rs.st_dev)
        return -1;
    int fd = open(work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        ORR_WARN("no write-behind: cannot open the work folder", "work=%s error=%s",
                 orr_log_q(work), orr_log_q(strerror(errno)));
    return fd;
}

static int files_wanted(const sort_spec *spec)
{
    (void)spec;
    return 1; /* its writers carry the batch ends of every run */
}

static orr_status files_open(sort_sink_env *env, void **state, orr_err *err)
{
    const sort_pipe_cfg *cfg = env->cfg;
    files_sink *f = orr_xcalloc(1, sizeof *f);
    f->env = env;
    f->spec = env->spec;
    f->sink = cfg->sink ? cfg->sink : &sort_check_log_sink;
    f->closed_upto = INT64_MIN;
    pthread_mutex_init(&f->ck_mu, NULL);
    sort_cond_init(&f->ck_cv);
    f->wb_fd = -1;
    sort_units_init(&f->units, f->spec);
    sort_landings_init(&f->landings);
    sort_queue_init(&f->pool);
    f->w = orr_xcalloc((size_t)env->writers, sizeof *f->w);
    f->cur = orr_xcalloc((size_t)env->writers, sizeof *f->cur);
    f->nbmin = (size_t)env->packs + 2;
    f->bmin = orr_xcalloc(f->nbmin, sizeof *f->bmin);
    f->start_bucket = sort_bucket_start((int64_t)time(NULL) * 1000, f->spec->bucket, f->spec->tz);

    orr_status rc = orr_blob_open(cfg->blob_url, &f->blob, err);
    if (rc != ORR_OK)
        goto fail;
    /* Only who lands unit files reads them back (and sweeps leftovers). */
    rc = f->spec->sinks.files ? sort_units_load(&f->units, f->blob, err) : ORR_OK;
    if (rc != ORR_OK)
        goto fail;
    /* Buckets reconciled by an earlier run stay closed: later records are late. */
    for (size_t i = 0; i < f->units.n; i++)
        if (f->units.all[i]->check_version > 0 && f->units.all[i]->bucket_end > f->closed_upto)
            f->closed_upto = f->units.all[i]->bucket_end;
    /* Without files the packs carry only batch ends: a few bytes each,
     * which would take a whole huge page apiece. */
    sort_pool_fill(&f->pool, env->packs, f->spec->sinks.files ? cfg->pack_bytes : 0, &f->slab);
    size_t per_writer = cfg->max_open_units / (size_t)env->writers;
    uint32_t bsize = sort_pipe_block_size(cfg);
    for (; f->nw < env->writers; f->nw++) {
        rc = sort_writer_start(&f->w[f->nw], f->nw, f->spec, env->fmt, f->blob, env->work,
                               per_writer ? per_writer : 1, bsize, &f->pool, &f->landings, err);
        if (rc != ORR_OK)
            goto fail;
    }
    if (f->spec->sinks.files && f->spec->output.fsync)
        f->wb_fd = files_wb_open(env->work, f->blob);
    /* Without the thread the rounds are written in place (files_check_submit). */
    if (f->spec->sinks.files && (f->spec->check.enabled || f->wb_fd >= 0)) {
        if (pthread_create(&f->ck_thread, NULL, files_check_main, f) == 0) {
            f->ck_started = 1;
            pthread_setname_np(f->ck_thread, "sortd-check");
        } else {
            ORR_WARN("cannot start the checker thread; _CHECKs are written in place, "
                     "no write-behind",
                     "stream=%s", f->spec->name);
        }
    }
    *state = f;
    return ORR_OK;
fail:
    files_close(f);
    return rc;
}

const sort_sink_ops sort_sink_files_ops = {
    .name = "files",
    .wanted = files_wanted,
    .open = files_open,
    .batch_begin = files_batch_begin,
    .has = files_has,
    .add = files_add,
    .batch_end = files_batch_end,
    .tick = files_tick,
    .safe = files_safe,
    .barrier = files_barrier,
    .stop = files_stop,
    .finish = files_finish,
    .stats = files_stats,
    .close = files_close,
};

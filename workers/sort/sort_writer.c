/*
 * sort_writer.c - writer threads (see sort_writer.h for the contract).
 *
 * Open files form an LRU list (head = most recently appended). Each open
 * file is an lzop writer on <work>/w<writer>/<seq>.lzo that borrows the
 * writer thread's one compression scratch (orr_lzop_scratch): it holds only
 * its pending block (at most block_size bytes, grown as input arrives), and
 * each full block is compressed and written to the file at once. Every byte
 * is written once, compressed. Each writer creates its files in a folder of
 * its own: creating a file locks its folder, and with one folder for all
 * the writers spun on each other's creations.
 *
 * Rolled files wait in a landing batch (their lzop trailer and index are
 * written, nothing is synced). After each pack, if the landing thread
 * (sort_lander.h) is free, the batch becomes its flight: one store put_many
 * -- index before data file, in roll order, one sync per step -- that runs
 * while this thread goes on appending and compressing. The first offsets
 * of the batch's and the flight's files count in the published safe
 * position like those of open files, so a published position never covers
 * a record that has not landed durably; landings are reported, and control
 * packs acknowledged, only once their flight is done (or nothing waits).
 */
#include "sort_writer.h"

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
#include "orr_lzop.h"

#define WR_TICK_MS        100
#define WR_BATCH_MAX      1024 /* rolled files waiting to land, at most */
#define WR_FLIGHT_POLL_MS 2    /* queue wait while the lander runs */

struct sort_ufile {
    sort_unit *unit;
    uint32_t split, partition;
    sort_off first, last;
    uint64_t count;
    uint64_t raw_bytes;
    orr_lzop_writer *lw;
    char path[512];
    int64_t opened_ms;
    sort_ufile *lru_prev, *lru_next;
    sort_ufile *slot_next; /* same (unit, split), other partitions */
};

enum { ROLL_SIZE, ROLL_AGE, ROLL_LRU, ROLL_CLOSE, ROLL_ROOM };

void sort_landings_init(sort_landings *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
}

void sort_landings_destroy(sort_landings *l)
{
    free(l->v);
    pthread_mutex_destroy(&l->mu);
}

static void landings_add(sort_landings *l, const sort_landing *x)
{
    pthread_mutex_lock(&l->mu);
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        sort_landing *nv = orr_xrealloc(l->v, l->cap * sizeof *nv);
        l->v = nv;
    }
    l->v[l->n++] = *x;
    pthread_mutex_unlock(&l->mu);
}

size_t sort_landings_take(sort_landings *l, sort_landing **out)
{
    pthread_mutex_lock(&l->mu);
    size_t n = l->n;
    *out = l->v;
    l->v = NULL;
    l->n = l->cap = 0;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static void wr_fail(sort_writer *w, const orr_err *e)
{
    char buf[600];
    pthread_mutex_lock(&w->mu);
    if (!w->failed) {
        w->failed = 1;
        w->err = *e;
    }
    pthread_mutex_unlock(&w->mu);
    ORR_ERROR("writer failed", "writer=%d error=%s", w->index,
              orr_log_q(orr_err_str(e, buf, sizeof buf)));
}

static void lru_unlink(sort_writer *w, sort_ufile *f)
{
    if (f->lru_prev)
        f->lru_prev->lru_next = f->lru_next;
    else
        w->lru_head = f->lru_next;
    if (f->lru_next)
        f->lru_next->lru_prev = f->lru_prev;
    else
        w->lru_tail = f->lru_prev;
    f->lru_prev = f->lru_next = NULL;
}

static void lru_push_head(sort_writer *w, sort_ufile *f)
{
    f->lru_prev = NULL;
    f->lru_next = w->lru_head;
    if (w->lru_head)
        w->lru_head->lru_prev = f;
    w->lru_head = f;
    if (!w->lru_tail)
        w->lru_tail = f;
}

/* The landing batch: files rolled since the last sort_writer flush. */
struct sort_wland {
    sort_landing l;
    uint32_t partition;
    sort_off first;
    char lzo[512];
    char idx[520];
    char rel[768];
    char rel_idx[776];
    uint64_t bytes_out;
};

/* Control packs up to seq have nothing left to land: acknowledged at the
 * next publish (after the positions, as barriers expect). */
static void wr_ack(sort_writer *w, uint64_t seq)
{
    if (seq > w->lacked)
        w->lacked = seq;
}

/* The flight ran: report its landed prefix (on failure too: a restart finds
 * those files, so the landing list must agree with the store), then
 * acknowledge what it covered. */
static orr_status wr_flight_done(sort_writer *w, size_t landed, orr_status rc, const orr_err *lerr,
                                 orr_err *err)
{
    for (size_t i = 0; i < landed / 2 && i < w->nflight; i++) {
        const sort_wland *b = &w->flight[i];
        w->lstats.bytes_lzo += b->bytes_out;
        w->lstats.files++;
        landings_add(w->landings, &b->l);
        ORR_DEBUG("unit file landed", "unit=%s file=%s records=%" PRIu64 " lzo=%" PRIu64,
                  orr_log_q(b->l.unit->dir), b->l.name, b->l.count, b->bytes_out);
    }
    w->nflight = 0;
    if (rc != ORR_OK) {
        if (err)
            *err = *lerr;
        return rc;
    }
    wr_ack(w, w->flight_ack);
    return ORR_OK;
}

/* One landing step: take the flight's result when it is done (wait: wait
 * for it), then hand the batch over as the next flight; with nothing rolled
 * left anywhere, the control packs taken so far are acknowledged. */
static orr_status wr_land_step(sort_writer *w, int wait, orr_err *err)
{
    if (w->nflight > 0) {
        size_t landed = 0;
        orr_status rc = ORR_OK;
        orr_err le;
        orr_err_clear(&le);
        int got = wait ? sort_lander_wait(&w->lander, &landed, &rc, &le)
                       : sort_lander_poll(&w->lander, &landed, &rc, &le);
        if (!got)
            return ORR_OK; /* still landing: the batch keeps growing */
        rc = wr_flight_done(w, landed, rc, &le, err);
        if (rc != ORR_OK)
            return rc;
    }
    if (w->nbatch == 0) {
        wr_ack(w, w->ctl_seen);
        return ORR_OK;
    }
    sort_wland *t = w->flight;
    size_t tcap = w->flight_cap;
    w->flight = w->batch;
    w->flight_cap = w->batch_cap;
    w->nflight = w->nbatch;
    w->batch = t;
    w->batch_cap = tcap;
    w->nbatch = 0;
    if (w->items_cap < w->nflight * 2) {
        w->items_cap = w->nflight * 2;
        orr_blob_item *ni = orr_xrealloc(w->items, w->items_cap * sizeof *ni);
        w->items = ni;
    }
    for (size_t i = 0; i < w->nflight; i++) {
        const sort_wland *b = &w->flight[i];
        w->items[2 * i] = (orr_blob_item){.rel = b->rel_idx, .local = b->idx};
        w->items[2 * i + 1] = (orr_blob_item){.rel = b->rel, .local = b->lzo};
    }
    w->flight_ack = w->ctl_seen;
    sort_lander_submit(&w->lander, w->items, w->nflight * 2);
    return ORR_OK;
}

/* Land everything rolled so far and wait for it (stop). */
static orr_status wr_land_all(sort_writer *w, orr_err *err)
{
    orr_status rc;
    do
        rc = wr_land_step(w, 1, err);
    while (rc == ORR_OK && (w->nflight > 0 || w->nbatch > 0));
    return rc;
}

/* Finish f's lzop file and queue it for landing. */
static orr_status wr_land(sort_writer *w, sort_ufile *f, orr_err *err)
{
    if (w->nbatch == WR_BATCH_MAX) {
        orr_status rc = wr_land_step(w, 1, err); /* waits for the flight, then hands over */
        if (rc != ORR_OK)
            return rc;
    }
    if (w->nbatch == w->batch_cap) {
        w->batch_cap = w->batch_cap ? w->batch_cap * 2 : 16;
        sort_wland *nb = orr_xrealloc(w->batch, w->batch_cap * sizeof *nb);
        w->batch = nb;
    }
    sort_wland *b = &w->batch[w->nbatch];
    sort_part_info pi = {
        .partition = f->partition,
        .split = f->split,
        .has_split = f->unit->split > 1,
        .first = f->first,
        .last = f->last,
        .count = f->count,
    };
    b->l = (sort_landing){.unit = f->unit, .count = f->count};
    b->partition = f->partition;
    b->first = f->first;
    sort_part_name(b->l.name, &pi);
    snprintf(b->lzo, sizeof b->lzo, "%s", f->path);
    snprintf(b->idx, sizeof b->idx, "%s.index", f->path);
    snprintf(b->rel, sizeof b->rel, "%s/%s", f->unit->dir, b->l.name);
    snprintf(b->rel_idx, sizeof b->rel_idx, "%s.index", b->rel);
    orr_lzop_stats st;
    orr_lzop_writer *lw = f->lw;
    f->lw = NULL;
    orr_status rc = orr_lzop_writer_close(lw, &st, err);
    if (rc != ORR_OK)
        return rc;
    b->bytes_out = st.bytes_out;
    b->l.bytes = st.bytes_out;
    w->nbatch++;
    return ORR_OK;
}

static void wr_free_file(sort_ufile *f)
{
    if (f->lw) {
        orr_lzop_writer_abort(f->lw);
        unlink(f->path);
    }
    free(f);
}

/* Roll f: land it, drop it from the LRU list and its unit slot. */
static orr_status wr_roll(sort_writer *w, sort_ufile *f, int why, orr_err *err)
{
    orr_status rc = wr_land(w, f, err);
    if (rc != ORR_OK)
        return rc;
    switch (why) {
    case ROLL_SIZE:
        w->lstats.rolls_size++;
        break;
    case ROLL_AGE:
        w->lstats.rolls_age++;
        break;
    case ROLL_LRU:
        w->lstats.rolls_lru++;
        break;
    case ROLL_ROOM:
        w->lstats.rolls_room++;
        break;
    default:
        w->lstats.rolls_close++;
    }
    lru_unlink(w, f);
    sort_ufile **pp = &f->unit->open[f->split];
    while (*pp != f)
        pp = &(*pp)->slot_next;
    *pp = f->slot_next;
    w->nopen--;
    wr_free_file(f);
    return ORR_OK;
}

static orr_status wr_open_file(sort_writer *w, const sort_pent *e, sort_ufile **out, orr_err *err)
{
    if (w->nopen >= w->max_open && w->lru_tail) {
        orr_status rc = wr_roll(w, w->lru_tail, ROLL_LRU, err);
        if (rc != ORR_OK)
            return rc;
    }
    sort_ufile *f = orr_xcalloc(1, sizeof *f);
    f->unit = e->unit;
    f->split = e->split;
    f->partition = e->partition;
    f->first = e->off;
    f->opened_ms = orr_clock_ms(CLOCK_MONOTONIC);
    snprintf(f->path, sizeof f->path, "%s/%" PRIu64 ".lzo", w->dir, w->seq++);
    orr_lzop_opts o = {
        .name = e->unit->label,
        .mtime = (int64_t)time(NULL),
        .flags = ORR_LZOP_WITH_INDEX,
        .scratch = w->scratch,
        .block_size = w->block_size,
    };
    orr_status rc = orr_lzop_writer_open(f->path, &o, &f->lw, err);
    if (rc != ORR_OK) {
        free(f);
        return rc;
    }
    f->slot_next = e->unit->open[e->split];
    e->unit->open[e->split] = f;
    lru_push_head(w, f);
    w->nopen++;
    *out = f;
    return ORR_OK;
}

static orr_status wr_append(sort_writer *w, const sort_pent *e, const char *rec, orr_err *err)
{
    sort_ufile *f = e->unit->open[e->split];
    while (f && f->partition != e->partition)
        f = f->slot_next;
    orr_status rc;
    if (!f) {
        rc = wr_open_file(w, e, &f, err);
        if (rc != ORR_OK)
            return rc;
    } else if (w->lru_head != f) {
        lru_unlink(w, f);
        lru_push_head(w, f);
    }
    if (w->fmt->binary) {
        unsigned char h[4] = {(unsigned char)(e->len >> 24), (unsigned char)(e->len >> 16),
                              (unsigned char)(e->len >> 8), (unsigned char)e->len};
        rc = orr_lzop_write(f->lw, h, 4, err);
        if (rc == ORR_OK)
            rc = orr_lzop_write(f->lw, rec, e->len, err);
    } else {
        rc = orr_lzop_write_rec(f->lw, rec, e->len, '\n', err);
    }
    if (rc != ORR_OK)
        return rc;
    f->raw_bytes += e->len + (w->fmt->binary ? 4u : 1u);
    f->last = e->off;
    f->count++;
    w->lstats.records++;
    w->lstats.bytes_raw += e->len;
    if ((int64_t)f->raw_bytes >= w->spec->output.roll_size)
        return wr_roll(w, f, ROLL_SIZE, err);
    return ORR_OK;
}

static void wr_publish(sort_writer *w)
{
    sort_off lo[SORT_MAX_PARTITIONS];
    uint8_t has_lo[SORT_MAX_PARTITIONS] = {0};
    for (sort_ufile *f = w->lru_head; f; f = f->lru_next) {
        uint32_t p = f->partition;
        if (!has_lo[p] || sort_off_cmp(f->first, lo[p]) < 0) {
            lo[p] = f->first;
            has_lo[p] = 1;
        }
    }
    /* Rolled files not landed yet hold the position down as open ones do. */
    for (int k = 0; k < 2; k++) {
        const sort_wland *v = k ? w->flight : w->batch;
        size_t n = k ? w->nflight : w->nbatch;
        for (size_t i = 0; i < n; i++) {
            uint32_t p = v[i].partition;
            if (!has_lo[p] || sort_off_cmp(v[i].first, lo[p]) < 0) {
                lo[p] = v[i].first;
                has_lo[p] = 1;
            }
        }
    }
    w->lstats.open_units = w->nopen;
    pthread_mutex_lock(&w->mu);
    w->stats = w->lstats;
    w->acked_seq = w->lacked;
    w->done_batch = w->ldone_batch;
    for (uint32_t p = 0; p < SORT_MAX_PARTITIONS; p++) {
        if (!w->has_done[p])
            continue;
        sort_off s = w->done[p];
        if (has_lo[p] && sort_off_cmp(lo[p], s) < 0)
            s = lo[p];
        w->safe[p] = s;
        w->has_safe[p] = 1;
    }
    pthread_mutex_unlock(&w->mu);
}

static orr_status wr_roll_where(sort_writer *w, int64_t before, int why, orr_err *err)
{
    sort_ufile *f = w->lru_head;
    while (f) {
        sort_ufile *next = f->lru_next;
        if (f->unit->bucket_end <= before) {
            orr_status rc = wr_roll(w, f, why, err);
            if (rc != ORR_OK)
                return rc;
        }
        f = next;
    }
    return ORR_OK;
}

/* The timer's rolls: files older than the age limit of the moment (see
 * sort_writer.h, step 2); every file while the source's producer waits for
 * room (sort_writer_set_room). */
static orr_status wr_roll_aged(sort_writer *w, orr_err *err)
{
    if (atomic_load_explicit(&w->room, memory_order_relaxed))
        return wr_roll_where(w, INT64_MAX, ROLL_ROOM, err);
    int64_t now = orr_clock_ms(CLOCK_MONOTONIC);
    uint64_t b = atomic_load_explicit(&w->behind, memory_order_relaxed);
    int behind = (b & 1) || w->ldone_batch < (b >> 1);
    int64_t limit = w->spec->output.roll_age_ms;
    if (behind && w->spec->output.catchup_age_ms > limit)
        limit = w->spec->output.catchup_age_ms;
    sort_ufile *f = w->lru_head;
    while (f) {
        sort_ufile *next = f->lru_next;
        if (now - f->opened_ms >= limit) {
            orr_status rc = wr_roll(w, f, ROLL_AGE, err);
            if (rc != ORR_OK)
                return rc;
        }
        f = next;
    }
    return ORR_OK;
}

static void *wr_main(void *arg)
{
    sort_writer *w = arg;
    orr_err err;
    int64_t last_tick = orr_clock_ms(CLOCK_MONOTONIC);
    int stop = 0;
    while (!stop) {
        /* While a flight lands, look for its end often: its files hold
         * the safe position and the acknowledgements back. */
        sort_pack *p = sort_queue_pop(&w->in, w->nflight > 0 ? WR_FLIGHT_POLL_MS : WR_TICK_MS);
        orr_status rc = ORR_OK;
        orr_err_clear(&err);
        int failed;
        pthread_mutex_lock(&w->mu);
        failed = w->failed;
        pthread_mutex_unlock(&w->mu);
        if (p && !failed) {
            switch (p->kind) {
            case SORT_PACK_DATA: {
                size_t cur = 0;
                const char *rec;
                const sort_pent *e;
                while (rc == ORR_OK && (e = sort_pack_next(p, &cur, &rec)) != NULL)
                    rc = wr_append(w, e, rec, &err);
                for (size_t i = 0; i < p->nstamps; i++) {
                    uint32_t part = p->stamps[i].partition;
                    w->done[part] = p->stamps[i].next;
                    w->has_done[part] = 1;
                }
                if (p->batch)
                    w->ldone_batch = p->batch;
                break;
            }
            case SORT_PACK_ROLL:
                rc = wr_roll_where(w, p->roll_before, ROLL_CLOSE, &err);
                break;
            case SORT_PACK_STOP:
                rc = wr_roll_where(w, INT64_MAX, ROLL_CLOSE, &err);
                stop = 1;
                break;
            }
            if (p->kind != SORT_PACK_DATA && p->seq > w->ctl_seen)
                w->ctl_seen = p->seq;
        } else if (p && p->kind == SORT_PACK_STOP) {
            stop = 1;
        }
        int64_t now = orr_clock_ms(CLOCK_MONOTONIC);
        if (rc == ORR_OK && !failed && now - last_tick >= WR_TICK_MS) {
            rc = wr_roll_aged(w, &err);
            last_tick = now;
        }
        if (rc == ORR_OK && !failed)
            rc = stop ? wr_land_all(w, &err) : wr_land_step(w, 0, &err);
        if (rc != ORR_OK)
            wr_fail(w, &err);
        if (!failed && rc == ORR_OK)
            wr_publish(w); /* also after timer rolls with no pack */
        if (p) {
            if (p->pooled) {
                sort_pack_clear(p);
                sort_queue_push(w->pool, p);
            } else {
                orr_buf_free(&p->data);
                free(p);
            }
        }
    }
    return NULL;
}

orr_status sort_writer_start(sort_writer *w, int idx, const sort_spec *spec,
                             const sort_format_ops *fmt, orr_blob *blob, const char *work_dir,
                             size_t max_open, uint32_t block_size, sort_queue *pool,
                             sort_landings *landings, orr_err *err)
{
    memset(w, 0, sizeof *w);
    atomic_init(&w->behind, 0);
    atomic_init(&w->room, 0);
    w->index = idx;
    w->spec = spec;
    w->fmt = fmt;
    w->blob = blob;
    if (snprintf(w->dir, sizeof w->dir, "%s/w%d", work_dir, idx) >= (int)sizeof w->dir)
        return orr_err_set(err, ORR_EINVAL, "work_dir", "path too long: %s", work_dir);
    if (mkdir(w->dir, 0755) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, "work_dir", "cannot create %s: %s", w->dir,
                           strerror(errno));
    w->max_open = max_open ? max_open : 1;
    w->pool = pool;
    w->landings = landings;
    w->block_size = block_size;
    w->scratch = orr_lzop_scratch_new();
    orr_status rc = sort_lander_start(&w->lander, blob, spec->output.fsync ? 1 : 0, err);
    if (rc != ORR_OK) {
        orr_lzop_scratch_free(w->scratch);
        return rc;
    }
    sort_queue_init(&w->in);
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, wr_main, w) != 0) {
        sort_lander_stop(&w->lander);
        sort_queue_destroy(&w->in);
        pthread_mutex_destroy(&w->mu);
        orr_lzop_scratch_free(w->scratch);
        return orr_err_set(err, ORR_EIO, "writers", "cannot start writer thread %d", idx);
    }
    w->started = 1;
    /* Names for ps, top and perf: sortd-write<I>, sortd-land<I>. */
    char name[16];
    snprintf(name, sizeof name, "sortd-write%d", idx);
    pthread_setname_np(w->thread, name);
    snprintf(name, sizeof name, "sortd-land%d", idx);
    pthread_setname_np(w->lander.thread, name);
    return ORR_OK;
}

void sort_writer_join(sort_writer *w)
{
    if (!w->started)
        return;
    pthread_join(w->thread, NULL);
    w->started = 0;
    sort_lander_stop(&w->lander); /* after a failure: lets a running flight end */
    /* Files still open (after a failure) are dropped: their records were
     * never committed and will be read again. */
    while (w->lru_head) {
        sort_ufile *f = w->lru_head;
        lru_unlink(w, f);
        sort_ufile **pp = &f->unit->open[f->split];
        while (*pp && *pp != f)
            pp = &(*pp)->slot_next;
        if (*pp)
            *pp = f->slot_next;
        wr_free_file(f);
    }
    sort_pack *p;
    while ((p = sort_queue_pop(&w->in, 0)) != NULL) {
        if (p->pooled) {
            sort_pack_clear(p);
            sort_queue_push(w->pool, p);
        } else {
            orr_buf_free(&p->data);
            free(p);
        }
    }
    for (size_t i = 0; i < w->nbatch; i++) { /* never landed (a failure) */
        unlink(w->batch[i].lzo);
        unlink(w->batch[i].idx);
    }
    for (size_t i = 0; i < w->nflight; i++) { /* gone if they landed */
        unlink(w->flight[i].lzo);
        unlink(w->flight[i].idx);
    }
    free(w->batch);
    free(w->flight);
    free(w->items);
    w->batch = w->flight = NULL;
    w->items = NULL;
    w->nbatch = w->batch_cap = w->nflight = w->flight_cap = w->items_cap = 0;
    orr_lzop_scratch_free(w->scratch);
    w->scratch = NULL;
    sort_queue_destroy(&w->in);
    pthread_mutex_destroy(&w->mu);
}

int sort_writer_safe(sort_writer *w, uint32_t partition, sort_off *pos)
{
    pthread_mutex_lock(&w->mu);
    int ok = w->has_safe[partition];
    if (ok)
        *pos = w->safe[partition];
    pthread_mutex_unlock(&w->mu);
    return ok;
}

uint64_t sort_writer_done_batch(sort_writer *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t b = w->done_batch;
    pthread_mutex_unlock(&w->mu);
    return b;
}

uint64_t sort_writer_acked(sort_writer *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t s = w->acked_seq;
    pthread_mutex_unlock(&w->mu);
    return s;
}

void sort_writer_set_behind(sort_writer *w, int behind, uint64_t batch)
{
    atomic_store_explicit(&w->behind, batch << 1 | (behind ? 1u : 0u), memory_order_relaxed);
}

void sort_writer_set_room(sort_writer *w, int room)
{
    atomic_store_explicit(&w->room, room ? 1 : 0, memory_order_relaxed);
}

int sort_writer_failed(sort_writer *w, orr_err *err)
{
    pthread_mutex_lock(&w->mu);
    int f = w->failed;
    if (f && err)
        *err = w->err;
    pthread_mutex_unlock(&w->mu);
    return f;
}

void sort_writer_get_stats(sort_writer *w, sort_writer_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->stats;
    pthread_mutex_unlock(&w->mu);
}

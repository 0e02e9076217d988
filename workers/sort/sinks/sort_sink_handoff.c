/* sort_sink_handoff.c - packs per unit to the write stages' Redis streams (see
 * sort_sink_handoff.h). */
#include "sort_sink_handoff.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orr_clock.h"
#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_log.h"
#include "orr_pack.h"
#include "sort_sink.h"
#include "sort_unit.h"

#define HO_WAIT_MS     20
#define HO_WAIT_TTL_MS 2000 /* a wait key outlives a dead waiter this long */
#define HO_SPARE       4096 /* idle builders kept for reuse */
#define HO_KEY_MAX     (SORT_NAME_MAX + 24)
#define HO_MARKS       16   /* flushes whose replies are still in flight */
#define HO_CODEC_MS    1000 /* pack_codec auto: the write stages' LZ4 keys, looked at this often */

/* A flush whose packs are sent but not all accepted yet: once the reply of
 * XADD number seq has been read, the positions upto become safe. */
typedef struct ho_mark {
    uint64_t seq;
    sort_off upto[SORT_MAX_PARTITIONS];
    uint8_t has[SORT_MAX_PARTITIONS];
} ho_mark;

/* One (unit, partition) with records since the last flush. */
typedef struct ho_slot {
    uint64_t hash; /* unit hash */
    int64_t bucket;
    uint32_t partition;
    int stream;
    orr_pack_builder *b;
} ho_slot;

struct sort_handoff {
    const sort_spec *spec;
    const sort_source *src;
    redisContext *c;
    redisContext *look; /* pack_codec auto: the LZ4 keys are read here, not on c */
    char host[256];
    int port;
    char **keys;         /* "<key>.<i>" */
    char **wkeys;        /* "<key>.<i>.wait": set while this process waits for room there */
    char **lkeys;        /* "<key>.<i>.lz4": set while stream i's write stage reads LZ4 */
    uint8_t *lz4;        /* per stream: its packs go in LZ4 */
    int64_t lz4_checked; /* monotonic ms of the last look at the LZ4 keys */
    size_t nstreams;

    ho_slot *slots; /* open addressing, cap a power of two */
    size_t cap, used;
    orr_pack_builder **spare;
    size_t nspare;

    orr_buf enc;          /* one encoded pack */
    size_t replies;       /* XADDs sent, replies not read yet */
    uint64_t sent, acked; /* XADDs queued, replies read (counted since open) */
    size_t window;        /* most replies in flight (SORT_HANDOFF_WINDOW) */
    ho_mark *marks;       /* ring of HO_MARKS flushes in flight, oldest at mark_head */
    size_t mark_head, nmarks;
    uint8_t *marked;     /* per stream: the last pack sent carried the backlog mark */
    uint32_t *mpart;     /* per stream: the partition of that pack */
    uint64_t *added;     /* per stream: packs sent since the last length check */
    uint64_t *len;       /* per stream: length when last read */
    uint64_t *added_b;   /* per stream: encoded bytes sent since then */
    uint64_t *mem;       /* per stream: Redis memory (MEMORY USAGE) when last read */
    size_t buffered;     /* raw bytes in open packs */
    int64_t dirty_since; /* monotonic ms of the first advance since a flush; -1: none */
    int64_t low_bucket;  /* at most the oldest bucket of an open pack with records */

    sort_off routed[SORT_MAX_PARTITIONS], safe[SORT_MAX_PARTITIONS];
    uint8_t has_routed[SORT_MAX_PARTITIONS], has_safe[SORT_MAX_PARTITIONS];
    sort_handoff_counts n;
    int behind;           /* the source is behind: hold records for catchup_age_ms, mark packs */
    int broken;           /* a pack may be lost: nothing may become safe any more */
    int stopped;          /* stopped while waiting for room: nothing may become safe */
    int wait_key_refused; /* a wait key was refused (logged once) */
    int lz4_key_refused;  /* EXISTS on an LZ4 key was refused (logged once) */
    volatile sig_atomic_t *stop;
};

static orr_status ho_lost(sort_handoff *h, const char *what, orr_err *err)
{
    orr_status rc = orr_err_set(err, ORR_EUNAVAIL, "redis", "%s %s:%d: %s", what, h->host, h->port,
                                h->c && h->c->errstr[0] ? h->c->errstr : "connection lost");
    if (h->c)
        redisFree(h->c);
    h->c = NULL;
    if (h->replies > 0)
        h->broken = 1; /* sent packs whose fate is unknown */
    h->replies = 0;
    h->nmarks = 0; /* nothing in flight becomes safe */
    return rc;
}

static orr_status ho_connect(sort_handoff *h, orr_err *err)
{
    if (h->c)
        return ORR_OK;
    struct timeval tv = {2, 0};
    h->c = redisConnectWithTimeout(h->host, h->port, tv);
    if (!h->c || h->c->err)
        return ho_lost(h, "connect", err);
    struct timeval io = {30, 0};
    redisSetTimeout(h->c, io);
    return ORR_OK;
}

/* The flushes whose every XADD was accepted: their positions are safe. */
static void ho_settle(sort_handoff *h)
{
    while (h->nmarks > 0 && !h->broken) {
        ho_mark *m = &h->marks[h->mark_head];
        if (m->seq > h->acked)
            break;
        for (uint32_t p = 0; p < SORT_MAX_PARTITIONS; p++)
            if (m->has[p]) {
                h->safe[p] = m->upto[p];
                h->has_safe[p] = 1;
            }
        h->mark_head = (h->mark_head + 1) % HO_MARKS;
        h->nmarks--;
    }
}

/* One XADD reply read: a refusal breaks the hand-off. */
static orr_status ho_reply(sort_handoff *h, redisReply *rep, orr_status rc, orr_err *err)
{
    h->replies--;
    h->acked++;
    if (rep->type == REDIS_REPLY_ERROR && rc == ORR_OK) {
        rc = orr_err_set(err, ORR_EIO, "redis", "XADD refused: %s", rep->str);
        h->broken = 1;
    }
    freeReplyObject(rep);
    return rc;
}

/* Read XADD replies, waiting, until at most keep are outstanding. */
static orr_status ho_read_until(sort_handoff *h, size_t keep, orr_err *err)
{
    orr_status rc = ORR_OK;
    while (h->replies > keep) {
        redisReply *rep = NULL;
        if (redisGetReply(h->c, (void **)&rep) != REDIS_OK || !rep)
            return ho_lost(h, "XADD", err);
        rc = ho_reply(h, rep, rc, err);
    }
    ho_settle(h);
    return rc;
}

/* Read every outstanding XADD reply. */
static orr_status ho_read_replies(sort_handoff *h, orr_err *err)
{
    return ho_read_until(h, 0, err);
}

/* Send what is queued and read the replies that have come, without
 * waiting for Redis. */
static orr_status ho_harvest(sort_handoff *h, orr_err *err)
{
    if (!h->c || h->replies == 0)
        return ORR_OK;
    int done = 0;
    while (!done)
        if (redisBufferWrite(h->c, &done) != REDIS_OK)
            return ho_lost(h, "XADD", err);
    orr_status rc = ORR_OK;
    for (;;) {
        void *rep = NULL;
        if (redisGetReplyFromReader(h->c, &rep) != REDIS_OK)
            return ho_lost(h, "XADD", err);
        if (rep) {
            rc = ho_reply(h, rep, rc, err);
            if (h->replies == 0)
                break;
            continue;
        }
        struct pollfd pfd = {h->c->fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) <= 0)
            break; /* nothing more has come */
        if (redisBufferRead(h->c) != REDIS_OK)
            return ho_lost(h, "XADD", err);
    }
    ho_settle(h);
    return rc;
}

static orr_status ho_room(sort_handoff *h, const uint8_t *want, orr_err *err);
static orr_status ho_measure(sort_handoff *h, const uint8_t *want, int slack, int *full,
                             orr_err *err);

/* Encode the slot's pack and queue its XADD; the builder is emptied. When
 * the stream may be full (its length when last read plus what was added
 * since reaches max_packs, or its memory then plus what the packs added
 * since and this one take passes max_bytes), first wait for room. */
/* Queue the XADD of the encoded pack in h->enc to stream i, with the
 * backlog mark when mark is set (it tells the write stage it is catching up
 * too: sort_source.h, SORT_PACK_BACKLOG_FIELD); every 64 sends the queued
 * commands go to the socket. */
static orr_status ho_xadd(sort_handoff *h, size_t i, int mark, orr_err *err)
{
    const char *argv[7] = {"XADD", h->keys[i], "*", "r", h->enc.data, SORT_PACK_BACKLOG_FIELD, "1"};
    size_t lens[7] = {4, strlen(h->keys[i]), 1, 1, h->enc.len, strlen(SORT_PACK_BACKLOG_FIELD), 1};
    if (redisAppendCommandArgv(h->c, mark ? 7 : 5, argv, lens) != REDIS_OK) {
        h->broken = 1;
        return ho_lost(h, "XADD", err);
    }
    h->replies++;
    h->sent++;
    if (h->sent % 64 == 0) { /* hand the queued XADDs to the socket */
        int done = 0;
        while (!done)
            if (redisBufferWrite(h->c, &done) != REDIS_OK)
                return ho_lost(h, "XADD", err);
    }
    h->added[i]++;
    h->added_b[i] += h->enc.len;
    h->marked[i] = (uint8_t)(mark ? 1 : 0);
    return ORR_OK;
}

/* Redis's memory for n more packs of `bytes` encoded bytes on stream i,
 * counted up: each takes a node of its own (a listpack with the entry's
 * fields, a radix tree node) in an allocation rounded up to a size class,
 * and an entry in the write stage's pending lists once read; per pack at
 * least 256 bytes, or what the stream's packs took beyond their bytes at
 * the last read (small packs: ~600 bytes). */
static uint64_t ho_mem_of(const sort_handoff *h, size_t i, uint64_t bytes, uint64_t n)
{
    uint64_t per = 256;
    if (h->len[i] > 0 && h->n.packs > 0) {
        uint64_t avg = h->n.bytes / h->n.packs, seen = h->mem[i] / h->len[i];
        if (seen > avg && seen - avg > per)
            per = seen - avg;
    }
    return bytes + bytes / 4 + n * per;
}

/* pack_codec auto: which streams' write stages read LZ4, from their LZ4
 * keys (sort_source.h), pipelined on a connection of their own (h->look),
 * so the XADDs in flight on h->c are neither waited for nor out of step,
 * and a Redis that holds back writes still answers. A stream whose key is
 * missing, or whose look failed (refused: logged once; no connection: the
 * look is dropped and made again next time), gets Snappy, which every
 * write stage reads. Never an error of the stream. */
static void ho_look_codecs(sort_handoff *h)
{
    h->lz4_checked = orr_clock_ms(CLOCK_MONOTONIC);
    if (!h->look) {
        struct timeval tv = {2, 0};
        h->look = redisConnectWithTimeout(h->host, h->port, tv);
        if (h->look && !h->look->err)
            redisSetTimeout(h->look, tv);
    }
    int ok = h->look && !h->look->err;
    for (size_t i = 0; ok && i < h->nstreams; i++) {
        const char *ex[2] = {"EXISTS", h->lkeys[i]};
        ok = redisAppendCommandArgv(h->look, 2, ex, NULL) == REDIS_OK;
    }
    for (size_t i = 0; i < h->nstreams; i++) {
        redisReply *r = NULL;
        if (ok && (redisGetReply(h->look, (void **)&r) != REDIS_OK || !r))
            ok = 0;
        if (r && r->type == REDIS_REPLY_ERROR && !h->lz4_key_refused) {
            h->lz4_key_refused = 1;
            ORR_WARN("hand-off LZ4 key refused; packs go in Snappy", "stream=%s key=%s error=%s",
                     h->spec->name, h->lkeys[i], orr_log_q(r->str));
        }
        uint8_t was = h->lz4[i];
        h->lz4[i] = ok && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
        if (h->lz4[i] != was)
            ORR_INFO("hand-off pack codec", "stream=%s key=%s codec=%s", h->spec->name, h->keys[i],
                     h->lz4[i] ? "lz4" : "snappy");
        if (r)
            freeReplyObject(r);
    }
    if (!ok && h->look) { /* dialled again at the next look */
        redisFree(h->look);
        h->look = NULL;
    }
}

static orr_status ho_send(sort_handoff *h, ho_slot *s, orr_err *err)
{
    orr_status rc = ho_connect(h, err);
    if (rc != ORR_OK)
        return rc;
    size_t i = s->stream;
    int codec = h->spec->sinks.ho_codec;
    if (codec == SORT_CODEC_AUTO && orr_clock_ms(CLOCK_MONOTONIC) - h->lz4_checked >= HO_CODEC_MS)
        ho_look_codecs(h);
    if (codec == SORT_CODEC_LZ4 || (codec == SORT_CODEC_AUTO && h->lz4[i]))
        s->b->flags |= ORR_PACK_F_LZ4;
    else
        s->b->flags &= (uint8_t)~ORR_PACK_F_LZ4;
    orr_buf_reset(&h->enc);
    if ((rc = orr_pack_encode(s->b, &h->enc, err)) != ORR_OK)
        return rc;
    if ((int64_t)(h->len[i] + h->added[i]) >= h->spec->sinks.ho_max_packs ||
        (int64_t)(h->mem[i] + ho_mem_of(h, i, h->added_b[i] + h->enc.len, h->added[i] + 1)) >
            h->spec->sinks.ho_max_bytes) {
        uint8_t want[SORT_MAX_HANDOFF] = {0};
        want[i] = 1;
        if ((rc = ho_read_replies(h, err)) != ORR_OK || (rc = ho_room(h, want, err)) != ORR_OK)
            return rc;
    }
    if (h->replies >= h->window && (rc = ho_read_until(h, h->window - 1, err)) != ORR_OK)
        return rc;
    if ((rc = ho_xadd(h, s->stream, h->behind, err)) != ORR_OK)
        return rc;
    h->mpart[s->stream] = s->partition;
    h->n.records += s->b->count;
    h->n.packs++;
    h->n.bytes += h->enc.len;
    h->buffered -= orr_pack_raw_len(s->b);
    orr_pack_builder_reset(s->b, NULL, 0, s->partition, err);
    return ORR_OK;
}

orr_status sort_handoff_open(const sort_spec *spec, const char *default_addr,
                             const sort_source *src, volatile sig_atomic_t *stop,
                             sort_handoff **out, orr_err *err)
{
    *out = NULL;
    const char *addr = spec->sinks.ho_address ? spec->sinks.ho_address : default_addr;
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (!colon || colon == addr || (size_t)(colon - addr) >= 256 || atoi(colon + 1) <= 0)
        return orr_err_set(err, ORR_EINVAL, "spec.sinks.handoff.address",
                           "must be host:port (got %s)", addr ? addr : "nothing");
    sort_handoff *h = orr_xcalloc(1, sizeof *h);
    h->spec = spec;
    h->src = src;
    h->stop = stop;
    snprintf(h->host, sizeof h->host, "%.*s", (int)(colon - addr), addr);
    h->port = atoi(colon + 1);
    h->nstreams = (size_t)spec->sinks.ho_streams;
    h->keys = orr_xcalloc(h->nstreams, sizeof *h->keys);
    h->added = orr_xcalloc(h->nstreams, sizeof *h->added);
    h->len = orr_xcalloc(h->nstreams, sizeof *h->len);
    h->added_b = orr_xcalloc(h->nstreams, sizeof *h->added_b);
    h->mem = orr_xcalloc(h->nstreams, sizeof *h->mem);
    h->marked = orr_xcalloc(h->nstreams, sizeof *h->marked);
    h->mpart = orr_xcalloc(h->nstreams, sizeof *h->mpart);
    h->cap = 1024;
    h->slots = orr_xcalloc(h->cap, sizeof *h->slots);
    h->spare = orr_xcalloc(HO_SPARE, sizeof *h->spare);
    h->marks = orr_xcalloc(HO_MARKS, sizeof *h->marks);
    h->window = SORT_HANDOFF_WINDOW;
    h->low_bucket = INT64_MAX;
    h->wkeys = orr_xcalloc(h->nstreams, sizeof *h->wkeys);
    h->lkeys = orr_xcalloc(h->nstreams, sizeof *h->lkeys);
    h->lz4 = orr_xcalloc(h->nstreams, sizeof *h->lz4);
    for (size_t i = 0; i < h->nstreams; i++) {
        size_t n = strlen(spec->sinks.ho_key) + 32;
        h->keys[i] = orr_xmalloc(n);
        snprintf(h->keys[i], n, "%s.%zu", spec->sinks.ho_key, i);
        h->wkeys[i] = orr_xmalloc(n);
        snprintf(h->wkeys[i], n, "%s.%zu%s", spec->sinks.ho_key, i, SORT_HANDOFF_WAIT_SUFFIX);
        h->lkeys[i] = orr_xmalloc(n);
        snprintf(h->lkeys[i], n, "%s.%zu%s", spec->sinks.ho_key, i, SORT_HANDOFF_LZ4_SUFFIX);
    }
    h->dirty_since = -1;
    orr_status rc = ho_connect(h, err);
    if (rc == ORR_OK) { /* what the streams hold, and MEMORY allowed, from the start */
        uint8_t all[SORT_MAX_HANDOFF];
        int full;
        memset(all, 1, sizeof all);
        rc = ho_measure(h, all, 0, &full, err);
    }
    if (rc == ORR_OK && spec->sinks.ho_codec == SORT_CODEC_AUTO)
        ho_look_codecs(h);
    if (rc != ORR_OK) {
        sort_handoff_close(h);
        return rc;
    }
    ORR_INFO("hand-off to write stages",
             "stream=%s redis=%s:%d key=%s streams=%zu max_packs=%" PRId64 " max_bytes=%" PRId64
             " pack_codec=%s",
             spec->name, h->host, h->port, spec->sinks.ho_key, h->nstreams,
             spec->sinks.ho_max_packs, spec->sinks.ho_max_bytes,
             sort_codec_names[spec->sinks.ho_codec]);
    *out = h;
    return ORR_OK;
}

static void ho_grow(sort_handoff *h)
{
    size_t ncap = h->cap * 2;
    ho_slot *ns = orr_xcalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < h->cap; i++) {
        ho_slot *s = &h->slots[i];
        if (!s->b)
            continue;
        size_t j = (size_t)(s->hash ^ s->partition * 0x9E3779B97F4A7C15ULL) & (ncap - 1);
        while (ns[j].b)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(h->slots);
    h->slots = ns;
    h->cap = ncap;
}

/* The slot of (unit, partition), created empty if new. */
static ho_slot *ho_slot_of(sort_handoff *h, uint64_t hash, const char *iface, size_t len,
                           int64_t bucket, uint32_t partition, orr_err *err)
{
    if ((h->used + 1) * 4 > h->cap * 3)
        ho_grow(h);
    size_t j = (size_t)(hash ^ partition * 0x9E3779B97F4A7C15ULL) & (h->cap - 1);
    for (;; j = (j + 1) & (h->cap - 1)) {
        ho_slot *s = &h->slots[j];
        if (!s->b)
            break;
        if (s->hash == hash && s->bucket == bucket && s->partition == partition &&
            s->b->key_len > 0 && memcmp(s->b->key, iface, len) == 0 && s->b->key[len] == '@')
            return s;
    }
    ho_slot *s = &h->slots[j];
    char key[HO_KEY_MAX];
    int kl = snprintf(key, sizeof key, "%.*s@%" PRId64, (int)len, iface, bucket);
    orr_pack_builder *b = h->nspare ? h->spare[--h->nspare] : orr_xcalloc(1, sizeof *b);
    orr_status rc = b->key_len ? orr_pack_builder_reset(b, key, (size_t)kl, partition, err)
                               : orr_pack_builder_init(b, key, (size_t)kl, partition, err);
    if (rc != ORR_OK) {
        if (h->nspare < HO_SPARE)
            h->spare[h->nspare++] = b;
        else {
            orr_pack_builder_free(b);
            free(b);
        }
        return NULL;
    }
    /* A unit's records are sparse in the partition; each carries its data
     * time, the key its unit: the write stage routes without parsing. */
    b->flags = ORR_PACK_F_OFFSETS | ORR_PACK_F_TIMES; /* and the codec's, at each send */
    s->hash = hash;
    s->bucket = bucket;
    s->partition = partition;
    s->stream = (int)sort_unit_stage_of(hash, (int64_t)h->nstreams);
    s->b = b;
    h->used++;
    return s;
}

/* Packs leave in bucket order: send every open pack of a bucket before
 * `before`, oldest bucket first. A write stage's data clock moves with the
 * newest record it has read, so a pack of the next hour sent ahead of the
 * last open packs of this one (a full pack, or the slot order of a flush)
 * would make their records late there although they were read in order. */
static orr_status ho_send_before(sort_handoff *h, int64_t before, orr_err *err)
{
    while (h->low_bucket < before) {
        int64_t b = h->low_bucket, next = INT64_MAX;
        for (size_t i = 0; i < h->cap; i++) {
            ho_slot *s = &h->slots[i];
            if (!s->b || s->b->count == 0)
                continue;
            if (s->bucket <= b) {
                orr_status rc = ho_send(h, s, err);
                if (rc != ORR_OK)
                    return rc;
            } else if (s->bucket < next) {
                next = s->bucket;
            }
        }
        h->low_bucket = next;
    }
    return ORR_OK;
}

/* Send the slot's pack, the open packs of older buckets first. */
static orr_status ho_send_ordered(sort_handoff *h, ho_slot *s, orr_err *err)
{
    orr_status rc = ho_send_before(h, s->bucket, err);
    return rc != ORR_OK ? rc : ho_send(h, s, err);
}

orr_status sort_handoff_add(sort_handoff *h, const char *iface, size_t iface_len,
                            int64_t bucket_start, int64_t time_ms, uint32_t partition, sort_off off,
                            const char *rec, size_t len, orr_err *err)
{
    uint64_t o;
    if (h->broken)
        return orr_err_set(err, ORR_EIO, "handoff",
                           "a pack may not have reached Redis: the stream must restart");
    if (h->stopped)
        return orr_err_set(err, ORR_ECANCELLED, "handoff", "stopped while waiting for room");
    if (sort_source_off64(h->src, off, &o) != 0) {
        char ob[SORT_OFF_MAX];
        return orr_err_set(err, ORR_EINVAL, "offset",
                           "source position %s of partition %u cannot be carried by a pack",
                           sort_off_fmt(off, ob), partition);
    }
    uint64_t hash = sort_unit_hash(iface, iface_len, bucket_start);
    if (h->spec->sinks.ho_partition >= 0)
        partition = (uint32_t)h->spec->sinks.ho_partition; /* this parse stage's own */
    ho_slot *s = ho_slot_of(h, hash, iface, iface_len, bucket_start, partition, err);
    if (!s)
        return err->code;
    size_t before = orr_pack_raw_len(s->b);
    orr_status rc = orr_pack_add_timed(s->b, o, time_ms, rec, len, err);
    if (rc == ORR_ETOOBIG && s->b->count > 0) { /* full: send it, start again */
        if ((rc = ho_send_ordered(h, s, err)) != ORR_OK)
            return rc;
        before = 0;
        rc = orr_pack_add_timed(s->b, o, time_ms, rec, len, err);
    }
    if (rc != ORR_OK)
        return rc;
    if (bucket_start < h->low_bucket)
        h->low_bucket = bucket_start;
    h->buffered += orr_pack_raw_len(s->b) - before;
    if ((int64_t)orr_pack_raw_len(s->b) >= h->spec->sinks.ho_pack_bytes)
        return ho_send_ordered(h, s, err);
    return ORR_OK;
}

void sort_handoff_advance(sort_handoff *h, uint32_t partition, sort_off next)
{
    if (partition >= SORT_MAX_PARTITIONS)
        return;
    if (!h->has_routed[partition] || sort_off_cmp(next, h->routed[partition]) > 0) {
        h->routed[partition] = next;
        h->has_routed[partition] = 1;
    }
    if (h->dirty_since < 0)
        h->dirty_since = orr_clock_ms(CLOCK_MONOTONIC);
}

int sort_handoff_due(const sort_handoff *h, int64_t now_ms)
{
    if (h->dirty_since < 0)
        return 0;
    if (h->buffered >= SORT_HANDOFF_BUFFER)
        return 1;
    int64_t age = h->spec->sinks.ho_flush_ms;
    if (h->behind && h->spec->output.catchup_age_ms > age)
        age = h->spec->output.catchup_age_ms;
    return now_ms > 0 && now_ms - h->dirty_since >= age;
}

void sort_handoff_set_behind(sort_handoff *h, int behind)
{
    h->behind = behind ? 1 : 0;
}

/* Caught up, with nothing left to send: a stream whose last pack carried
 * the backlog mark gets an empty unmarked pack, so its write stage stops
 * filling files for catchup_age_ms (it keeps a mark until a pack without
 * one comes, as an empty read there may only mean that this stage is
 * gathering records). The empty pack is of the partition of the marked
 * one, which the write stage acknowledges with its next commit. */
static orr_status ho_send_caught_up(sort_handoff *h, orr_err *err)
{
    if (h->behind || h->dirty_since >= 0 || h->broken || h->stopped)
        return ORR_OK;
    for (size_t i = 0; i < h->nstreams; i++) {
        if (!h->marked[i])
            continue;
        orr_status rc = ho_connect(h, err);
        if (rc != ORR_OK)
            return rc;
        orr_pack_builder b;
        if ((rc = orr_pack_builder_init(&b, "caught-up", 9, h->mpart[i], err)) != ORR_OK)
            return rc;
        orr_buf_reset(&h->enc);
        rc = orr_pack_encode(&b, &h->enc, err);
        orr_pack_builder_free(&b);
        if (rc != ORR_OK)
            return rc;
        if (h->replies >= h->window && (rc = ho_read_until(h, h->window - 1, err)) != ORR_OK)
            return rc;
        if ((rc = ho_xadd(h, i, 0, err)) != ORR_OK)
            return rc;
    }
    return ORR_OK;
}

/* Read the length and the memory in Redis of every stream in want
 * (pipelined) into len and mem, starting the counts since then again.
 * *full: one of them holds max_packs or max_bytes, or (slack) nine tenths
 * of them. A refusal (an ACL without MEMORY, say) is reported once every
 * reply is read, so the connection stays in step. */
static orr_status ho_measure(sort_handoff *h, const uint8_t *want, int slack, int *full,
                             orr_err *err)
{
    *full = 0;
    orr_status rc = ho_connect(h, err);
    if (rc != ORR_OK)
        return rc;
    for (size_t i = 0; i < h->nstreams; i++) {
        if (!want[i])
            continue;
        const char *xlen[2] = {"XLEN", h->keys[i]};
        const char *mem[5] = {"MEMORY", "USAGE", h->keys[i], "SAMPLES", "0"};
        if (redisAppendCommandArgv(h->c, 2, xlen, NULL) != REDIS_OK ||
            redisAppendCommandArgv(h->c, 5, mem, NULL) != REDIS_OK)
            return ho_lost(h, "XLEN", err);
    }
    int64_t max_packs = h->spec->sinks.ho_max_packs, max_bytes = h->spec->sinks.ho_max_bytes;
    if (slack) {
        max_packs -= max_packs / 10;
        max_bytes -= max_bytes / 10;
    }
    for (size_t i = 0; i < h->nstreams; i++) {
        if (!want[i])
            continue;
        redisReply *len = NULL, *mem = NULL;
        if (redisGetReply(h->c, (void **)&len) != REDIS_OK || !len)
            return ho_lost(h, "XLEN", err);
        if (redisGetReply(h->c, (void **)&mem) != REDIS_OK || !mem) {
            freeReplyObject(len);
            return ho_lost(h, "MEMORY USAGE", err);
        }
        if (rc == ORR_OK && (len->type == REDIS_REPLY_ERROR || mem->type == REDIS_REPLY_ERROR))
            rc = orr_err_set(err, ORR_EIO, "redis", "%s refused: %s",
                             len->type == REDIS_REPLY_ERROR ? "XLEN" : "MEMORY USAGE",
                             len->type == REDIS_REPLY_ERROR ? len->str : mem->str);
        /* No key (nil): nothing held. */
        h->len[i] = len->type == REDIS_REPLY_INTEGER ? (uint64_t)len->integer : 0;
        h->mem[i] = mem->type == REDIS_REPLY_INTEGER ? (uint64_t)mem->integer : 0;
        freeReplyObject(len);
        freeReplyObject(mem);
        h->added[i] = 0;
        h->added_b[i] = 0;
        if ((int64_t)h->len[i] >= max_packs || (int64_t)h->mem[i] >= max_bytes)
            *full = 1;
    }
    return rc;
}

/* Set (on) or delete the wait keys of every stream, pipelined: a write
 * stage lands its open files while its stream's key is set (src_redis.c).
 * Every one, not only the full stream's: while this process waits it sends
 * nothing to any stream, so what the others hold back would otherwise wait
 * for catchup_age_ms. A key expires by itself if this process dies while
 * waiting. The keys only hurry the write stages: a refusal (an ACL that
 * does not cover them) is logged once and the wait goes on without them;
 * only a lost connection is an error. */
static orr_status ho_signal_wait(sort_handoff *h, int on, orr_err *err)
{
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", HO_WAIT_TTL_MS);
    for (size_t i = 0; i < h->nstreams; i++) {
        const char *set[5] = {"SET", h->wkeys[i], "1", "PX", ttl};
        const char *del[2] = {"DEL", h->wkeys[i]};
        if (redisAppendCommandArgv(h->c, on ? 5 : 2, on ? set : del, NULL) != REDIS_OK)
            return ho_lost(h, on ? "SET" : "DEL", err);
    }
    for (size_t i = 0; i < h->nstreams; i++) {
        redisReply *rep = NULL;
        if (redisGetReply(h->c, (void **)&rep) != REDIS_OK || !rep)
            return ho_lost(h, on ? "SET" : "DEL", err);
        if (rep->type == REDIS_REPLY_ERROR && !h->wait_key_refused) {
            h->wait_key_refused = 1;
            ORR_WARN("hand-off wait key refused; write stages land by age while this stage "
                     "waits",
                     "stream=%s key=%s error=%s", h->spec->name, h->wkeys[i], orr_log_q(rep->str));
        }
        freeReplyObject(rep);
    }
    return ORR_OK;
}

/* Wait until every stream we are about to add to has room; once it had
 * to wait, until each holds at most nine tenths of its bounds (so the
 * stream is not measured again before every pack near the bound). */
static orr_status ho_room(sort_handoff *h, const uint8_t *want, orr_err *err)
{
    int64_t signalled = 0; /* when the wait keys were last set (0: not yet) */
    for (int waits = 0;; waits++) {
        int full;
        orr_status rc = ho_measure(h, want, waits > 0, &full, err);
        if (rc != ORR_OK)
            return rc;
        if (!full)
            return signalled ? ho_signal_wait(h, 0, err) : ORR_OK;
        if (h->stop && *h->stop) {
            h->stopped = 1; /* records were advanced past but not sent */
            return orr_err_set(err, ORR_ECANCELLED, "handoff", "stopped while waiting for room");
        }
        if (waits == 0)
            h->n.waits++;
        int64_t now = orr_clock_ms(CLOCK_MONOTONIC);
        if (!signalled || now - signalled >= HO_WAIT_TTL_MS / 4) {
            if ((rc = ho_signal_wait(h, 1, err)) != ORR_OK)
                return rc; /* set at once, renewed well before it expires */
            signalled = now;
        }
        struct timespec ts = {0, HO_WAIT_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Send every open pack; the positions advanced so far become safe once
 * their replies are read: a mark in the ring (waiting for the oldest when
 * the ring is full). */
static orr_status ho_send_all(sort_handoff *h, orr_err *err)
{
    if (h->broken)
        return orr_err_set(err, ORR_EIO, "handoff",
                           "a pack may not have reached Redis: the stream must restart");
    if (h->stopped)
        return orr_err_set(err, ORR_ECANCELLED, "handoff", "stopped while waiting for room");
    if (h->dirty_since < 0)
        return ORR_OK;
    sort_off upto[SORT_MAX_PARTITIONS];
    uint8_t has[SORT_MAX_PARTITIONS];
    memcpy(upto, h->routed, sizeof upto);
    memcpy(has, h->has_routed, sizeof has);
    orr_status rc = ho_send_before(h, INT64_MAX, err); /* oldest bucket first */
    if (rc != ORR_OK)
        return rc;
    for (size_t i = 0; i < h->cap; i++) {
        ho_slot *s = &h->slots[i];
        if (!s->b)
            continue;
        if (s->b->count > 0 && (rc = ho_send(h, s, err)) != ORR_OK)
            return rc;
        if (h->nspare < HO_SPARE) {
            h->spare[h->nspare++] = s->b;
        } else {
            orr_pack_builder_free(s->b);
            free(s->b);
        }
        s->b = NULL;
    }
    h->used = 0;
    if (h->nmarks == HO_MARKS) { /* wait for the oldest flush */
        ho_mark *old = &h->marks[h->mark_head];
        if ((rc = ho_read_until(h, (size_t)(h->sent - old->seq), err)) != ORR_OK)
            return rc;
    }
    ho_mark *m = &h->marks[(h->mark_head + h->nmarks) % HO_MARKS];
    m->seq = h->sent;
    memcpy(m->upto, upto, sizeof upto);
    memcpy(m->has, has, sizeof has);
    h->nmarks++;
    h->buffered = 0;
    h->dirty_since = -1;
    return ORR_OK;
}

orr_status sort_handoff_flush_async(sort_handoff *h, orr_err *err)
{
    orr_status rc = ho_send_all(h, err);
    if (rc != ORR_OK)
        return rc;
    if ((rc = ho_harvest(h, err)) != ORR_OK)
        return rc;
    ho_settle(h);
    return ORR_OK;
}

orr_status sort_handoff_flush(sort_handoff *h, orr_err *err)
{
    orr_status rc = ho_send_all(h, err);
    if (rc != ORR_OK)
        return rc;
    if (h->c)
        return ho_read_replies(h, err);
    ho_settle(h);
    return ORR_OK;
}

size_t sort_handoff_in_flight(const sort_handoff *h)
{
    return h->replies;
}

orr_status sort_handoff_poll(sort_handoff *h, orr_err *err)
{
    if (h->broken)
        return orr_err_set(err, ORR_EIO, "handoff",
                           "a pack may not have reached Redis: the stream must restart");
    return ho_harvest(h, err);
}

int sort_handoff_safe(const sort_handoff *h, uint32_t partition, sort_off *out)
{
    if (partition >= SORT_MAX_PARTITIONS || !h->has_safe[partition])
        return 0;
    *out = h->safe[partition];
    return 1;
}

void sort_handoff_get_counts(const sort_handoff *h, sort_handoff_counts *out)
{
    *out = h->n;
}

void sort_handoff_close(sort_handoff *h)
{
    if (!h)
        return;
    if (h->c)
        redisFree(h->c);
    if (h->look)
        redisFree(h->look);
    for (size_t i = 0; i < h->cap; i++)
        if (h->slots[i].b) {
            orr_pack_builder_free(h->slots[i].b);
            free(h->slots[i].b);
        }
    for (size_t i = 0; i < h->nspare; i++) {
        orr_pack_builder_free(h->spare[i]);
        free(h->spare[i]);
    }
    for (size_t i = 0; i < h->nstreams && h->keys; i++) {
        free(h->keys[i]);
        free(h->wkeys[i]);
        if (h->lkeys)
            free(h->lkeys[i]);
    }
    free(h->keys);
    free(h->wkeys);
    free(h->lkeys);
    free(h->lz4);
    free(h->added);
    free(h->marked);
    free(h->mpart);
    free(h->len);
    free(h->added_b);
    free(h->mem);
    free(h->slots);
    free(h->spare);
    free(h->marks);
    orr_buf_free(&h->enc);
    free(h);
}

/* ---- the sink's ops (sort_sink.h) -------------------------------------- */

typedef struct ho_sink {
    sort_handoff *h;
    sort_sink_env *env;
} ho_sink;

static int ho__wanted(const sort_spec *spec)
{
    return spec->sinks.handoff;
}

static orr_status ho__open(sort_sink_env *env, void **state, orr_err *err)
{
    ho_sink *k = orr_xcalloc(1, sizeof *k);
    k->env = env;
    orr_status rc =
        sort_handoff_open(env->spec, env->cfg->redis_addr, env->src, env->cfg->stop, &k->h, err);
    if (rc != ORR_OK) {
        free(k);
        return rc;
    }
    *state = k;
    return ORR_OK;
}

static void ho__advance(void *state, uint32_t partition, const sort_off *next)
{
    ho_sink *k = state;
    sort_handoff_advance(k->h, partition, *next);
}

/* Send the packs when due (or forced). Stopping while the write stages are
 * behind is no failure: the source replays the rest next run. */
static orr_status ho__tick(void *state, int force, orr_err *err)
{
    ho_sink *k = state;
    orr_status rc;
    sort_handoff_set_behind(k->h, k->env->behind);
    if (force)
        rc = sort_handoff_flush(k->h, err);
    else if (sort_handoff_due(k->h, orr_clock_ms(CLOCK_MONOTONIC)))
        rc = sort_handoff_flush_async(k->h, err);
    else if ((rc = ho_send_caught_up(k->h, err)) == ORR_OK)
        rc = sort_handoff_poll(k->h, err);
    return rc == ORR_ECANCELLED ? ORR_OK : rc;
}

static orr_status ho__add(void *state, const sort_sink_rec *r, orr_err *err)
{
    ho_sink *k = state;
    sort_handoff_set_behind(k->h, k->env->behind);
    orr_status rc =
        sort_handoff_add(k->h, r->route->iface, r->route->iface_len, r->route->bucket_start,
                         r->route->time_ms, r->partition, r->off, r->rec, r->len, err);
    if (rc != ORR_OK)
        return rc; /* ORR_ECANCELLED: stopping while the write stages are behind */
    k->env->st->records_out++;
    if (sort_handoff_due(k->h, 0)) { /* the buffer is full: send, keep going */
        rc = sort_handoff_flush_async(k->h, err);
        return rc == ORR_ECANCELLED ? ORR_OK : rc;
    }
    return ORR_OK;
}

static int ho__safe(void *state, uint32_t partition, sort_off *out)
{
    ho_sink *k = state;
    return sort_handoff_safe(k->h, partition, out);
}

static orr_status ho__barrier(void *state, orr_err *err)
{
    ho_sink *k = state;
    return k->env->failed ? ORR_OK : ho__tick(k, 1, err);
}

static void ho__stats(void *state, sort_pipe_stats *st)
{
    ho_sink *k = state;
    sort_handoff_counts hc;
    sort_handoff_get_counts(k->h, &hc);
    st->ho_packs = hc.packs;
    st->ho_bytes = hc.bytes;
    st->ho_waits = hc.waits;
}

static void ho__close(void *state)
{
    ho_sink *k = state;
    if (!k)
        return;
    sort_handoff_close(k->h);
    free(k);
}

const sort_sink_ops sort_sink_handoff_ops = {
    .name = "handoff",
    .wanted = ho__wanted,
    .open = ho__open,
    .advance = ho__advance,
    .add = ho__add,
    .tick = ho__tick,
    .safe = ho__safe,
    .barrier = ho__barrier,
    .stop = ho__barrier,
    .stats = ho__stats,
    .close = ho__close,
};

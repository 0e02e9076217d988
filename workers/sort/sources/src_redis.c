/*
 * src_redis.c - the Redis Streams source (hiredis): one stream key read
 * through a consumer group; one record per entry, in the entry's field
 * spec.source.field (default "r").
 *
 * Start: XGROUP CREATE <key> <group> 0 MKSTREAM (an existing group is
 * kept); entries idle longer than claim_idle_ms in other consumers' pending
 * lists are taken over with XAUTOCLAIM; then this consumer's own pending
 * list is read again from id 0 (entries delivered before a crash but never
 * acknowledged), and after that new entries with ">" (BLOCK block_ms).
 *
 * Offsets: an entry id "ms-seq" is (hi = ms, lo = seq); next = (ms, seq+1).
 * Commit: every entry this run was delivered with an id below `next` is
 * acknowledged, so acknowledgement happens only after the records landed.
 * The source keeps the ids it was delivered in a FIFO (rd_fifo), in read
 * order, which is id order: the pending list is replayed from 0 upwards
 * before any ">" read, ">" brings ids above every id ever delivered to the
 * group, and a replay after a reconnect starts above the last id taken.
 * Commit pops the ids below `next` off its head and names them in XACKs of
 * RD_ACK_CHUNK ids, pipelined on the commit connection. An entry deleted
 * while pending, or without the record's field, is in the FIFO like any
 * other: it is acknowledged once a position past it is committed, so
 * deleted entries at the very end of an idle stream's pending list stay
 * there until later entries land. Should an id arrive below one already
 * queued, it is acknowledged by the first commit whose `next` passes every
 * id before it: later, never early. Should ids arrive below the position
 * already committed (ids going backwards), next() acknowledges them
 * itself, since the pipeline commits a position only once; in sortd the
 * files sink's safe position follows what was routed, so a commit never
 * runs ahead of the reads and this is a safeguard of the source's contract.
 * Before, a server-side script listed the pending list below `next`
 * (XPENDING) and acknowledged what it found: for Redis that listing and
 * the script's tables cost more than the acknowledgements themselves (0.8
 * of its 2.5 CPU seconds per million one-record entries).
 *
 * Packs (spec.source.packs): each entry's field holds an orr_pack (many
 * records, LZ4- or Snappy-compressed, lib/orr_pack.h) written by a producer
 * that batches. A record's partition and offset are the pack's source
 * partition and the record's own source offset (hi = 0, lo = offset), not
 * the entry id, so a pack the producer sends again after a crash (a new
 * entry with the same records) is dropped by the write stage like any
 * replay. Every delivered entry is remembered (id, partition, last record
 * offset) until commit(partition, next) finds last < next: then it is
 * acknowledged and deleted (XACK and XDEL in one script, many ids per call),
 * so the stream's length is the number of packs not yet landed, which a
 * hand-off producer bounds. A pack that does not decode is one `frame`
 * reject (partition 0, offset 0), acknowledged with partition 0's next
 * commit, as is an empty pack with its partition's.
 *
 * The producer must keep the records of one unit in offset order within a
 * partition (packs per unit, sent in order, do); packs of different units
 * may interleave freely.
 *
 * Reads in flight. Once the pending list is replayed, a read that brought
 * entries sends the next XREADGROUP (">", BLOCK) before its entries are put
 * in the batch, so Redis builds the next reply while this process routes
 * the current one and next() does not idle on a round trip. A read that
 * brought nothing (BLOCK timed out) sends no next one: an idle source has
 * no read in flight. Any other command on the reading connection first
 * reads the reply of the read in flight and keeps it for the next next(),
 * so replies stay in order. Commits (XACK, XDEL) go on a connection of
 * their own: on the reading one a commit made just as the stream emptied
 * waited for the blocked read in flight, up to block_ms. Acknowledging
 * there is safe whatever the reading connection has in flight: a commit
 * names entries delivered and landed (packs) or ids below `next`, and the
 * entries of a read in flight or lost all lie above what was taken.
 * Entries of a read in flight at close are delivered but not acknowledged:
 * the next run reads them again from its pending list.
 *
 * Backlog (sort_source_ops.behind). The source is behind while its reads
 * come back full (COUNT entries: more are waiting), while it replays its
 * pending list, and, for packs, from a pack carrying the mark "b" that a
 * parse stage adds to packs it routed from a backlog of its own
 * (sort_sink_handoff.h) until a pack without it (the parse stage sends an
 * empty one when it has caught up with nothing left to send): empty reads
 * meanwhile only mean that the parse stage gathers records. The stages
 * then fill files for output.catchup_age_ms. A parse stage that waits for
 * room on its hand-off stream (max_packs or max_bytes reached) sets the
 * key "<key>.wait" meanwhile; a packs source looks at it after its reads
 * (rd_look_for_wait) and, while it is set, reports no backlog and asks for
 * room (room_wanted): files held open would hold back the acknowledgements
 * the producer waits for, so the write stage rolls every file it has open
 * at its next timer check, whatever its age. (Estimating the producer's
 * measure here instead, from the packs' bytes, missed Redis's cost per
 * pending entry: small packs stalled until roll_age_ms.)
 *
 * Codecs. A packs source reads LZ4 and Snappy packs, and says so: it keeps
 * the key "<key>.lz4" set (SORT_HANDOFF_LZ4_TTL_MS, renewed every
 * SORT_HANDOFF_LZ4_RENEW_MS after its reads, rd_say_lz4), from which a
 * parse stage with "pack_codec": "auto" sends this stream LZ4 packs, and
 * deletes it when it closes. A write stage older than LZ4 packs sets no
 * such key and gets Snappy. (Any packs source sets it, a user's too: a
 * key beside its stream that nothing else reads.)
 *
 * Replies. The reader builds reply objects in an arena of this source
 * (rd_reply_fns) instead of one malloc per entry, id and field: a read of
 * 5,000 one-record entries made about 25,000 allocations and as many frees.
 * Every reply on the connection lives there until rd_release() resets the
 * arena, which it does only while no reply is kept for next(); reply
 * objects are never passed to freeReplyObject.
 *
 * A lost connection is re-established on the next call; a reply kept for
 * next() is still used. A read whose reply was lost with the connection
 * (in flight, or awaited) may have been served: Redis then put its entries
 * in this consumer's pending list though this run never saw them (they are
 * not in the FIFO, so no commit acknowledges them). So after a reconnect
 * the pending list is read again from the id of the last entry this run
 * took (last_id): the entries of a lost reply come first, then new ones
 * with ">" as before.
 * Exactly-once holds for one consumer per stream; entries claimed from
 * another consumer may arrive out of order and are not deduplicated yet.
 *
 * Position (spec.source.commit "position"). With one consumer per stream
 * the pending list only records what a commit will acknowledge, and for
 * Redis it is the dearest part of a read: XREADGROUP and XACK cost it about
 * four times a plain XREAD of the same entries. So this mode keeps a single
 * position instead: the group's last-delivered id is the last entry landed.
 * Entries are read with XREAD after the last id taken (the same reads in
 * flight, the next one naming the last id of the reply in hand); a commit
 * is one XGROUP SETID to the entry before `next` (re-creating the group
 * there if it was deleted); open resumes after the group's last-delivered
 * id. Nothing is ever pending, so a lost reply needs no replay: the next
 * read starts after the last entry taken. A group that still has pending
 * entries (a source that acknowledged before) is resumed from its lowest
 * pending id, and once a commit passes the highest of them the consumers
 * that held them are deleted (XGROUP DELCONSUMER), which empties the
 * pending list (a crash before that reads them again from the lowest:
 * work redone, nothing lost or doubled). The group must have no other
 * reader: every reader of a position sees every entry. Besides XREAD this
 * mode needs XINFO, XPENDING and XGROUP (SETID, CREATE, DELCONSUMER).
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_arena.h"
#include "orr_clock.h"
#include "orr_log.h"
#include "orr_pack.h"
#include "sort_preroute.h"
#include "sort_source.h"

#define RD_ACK_CHUNK      1000         /* ids per XACK */
#define RD_ACK_WINDOW     8            /* XACKs of one-record entries in flight */
#define RD_READ_BYTES     (256u << 10) /* one read(2) of replies (rd_get_reply) */
#define RD_PACK_BATCH_MAX 64 /* pack entries per XREADGROUP, whatever spec.source.batch says */
#define RD_ROOM_CHECK_MS  20 /* packs: the producer's wait key, looked at most this often */
#define RD_ARENA_BLOCK    (4u << 20) /* holds a read of 5,000 entries of ~200 bytes */

/* A delivered pack entry not yet acknowledged. */
typedef struct rd_pend {
    sort_off id;
    uint32_t partition;
    uint64_t last;
} rd_pend;

typedef struct src_redis {
    sort_source base;
    const sort_spec *spec;
    redisContext *c;
    char host[256];
    int port;
    int pending_phase;   /* reading our own pending list */
    char pending_id[64]; /* where the pending read continues */
    char last_id[64];    /* the last entry id a read brought ("0": none) */
    sort_off committed;  /* one-record entries: the one partition */
    /* one-record entries delivered, not yet acknowledged: ids[head..len) */
    sort_off *ids;
    size_t ids_head, ids_len, ids_cap;
    redisContext *cc; /* commits (XACK, XDEL): never behind a read in flight */
    int inflight;     /* a read (">", or XREAD) is sent, its reply not read */
    int behind;       /* the last read suggests a backlog (see the top) */
    int marked;       /* the last pack read carried the backlog mark */
    int ack_failing;  /* next()'s last acknowledgement below `committed` failed */
    /* position mode: consumers whose pending entries (up to pel_max) are
     * read again; deleted once a commit passes pel_max */
    char **pel_owners;
    size_t n_pel_owners;
    sort_off pel_max;
    redisReply *kept;   /* that reply, read before another command */
    char *rbuf;         /* RD_READ_BYTES: one read(2) of the reading connection */
    orr_arena *replies; /* every reply object (rd_reply_fns) */
    /* packs */
    orr_buf scratch;
    rd_pend *pend;
    size_t npend, cap;
    int room;             /* the producer waits for room (its wait key is set) */
    int64_t room_checked; /* monotonic ms of the last look at the wait key */
    int wait_key_refused; /* EXISTS on it was refused (logged once) */
    char lz4_key[600];    /* "<key>.lz4" (the codecs above) */
    int64_t lz4_said;     /* monotonic ms the LZ4 key was last set (0: never) */
    int lz4_key_refused;  /* SET of it was refused (logged once) */
    sort_off pcommitted[SORT_MAX_PARTITIONS];
    const char **ack_argv;
    size_t *ack_lens;
    char (*ack_ids)[48];
} src_redis;

/* Reply objects in the source's arena (the reader's privdata). Each links
 * itself into its parent array, as hiredis's own functions do. */
static redisReply *rd_obj(const redisReadTask *t, int type)
{
    src_redis *r = t->privdata;
    redisReply *rep = orr_arena_calloc(r->replies, 1, sizeof *rep);
    rep->type = type;
    if (t->parent) {
        redisReply *parent = t->parent->obj;
        parent->element[t->idx] = rep;
    }
    return rep;
}

static void *rd_obj_string(const redisReadTask *t, char *str, size_t len)
{
    src_redis *r = t->privdata;
    char *copy = orr_arena_alloc(r->replies, len + 1);
    memcpy(copy, str, len);
    copy[len] = 0;
    redisReply *rep = rd_obj(t, t->type);
    rep->str = copy;
    rep->len = len;
    return rep;
}

static void *rd_obj_array(const redisReadTask *t, int elements)
{
    src_redis *r = t->privdata;
    redisReply *rep = rd_obj(t, REDIS_REPLY_ARRAY);
    if (elements > 0) {
        rep->element = orr_arena_calloc(r->replies, (size_t)elements, sizeof *rep->element);
        rep->elements = (size_t)elements;
    }
    return rep;
}

static void *rd_obj_integer(const redisReadTask *t, long long value)
{
    redisReply *rep = rd_obj(t, REDIS_REPLY_INTEGER);
    rep->integer = value;
    return rep;
}

static void *rd_obj_nil(const redisReadTask *t)
{
    return rd_obj(t, REDIS_REPLY_NIL);
}

static void rd_obj_free(void *obj)
{
    (void)obj; /* freed with the arena */
}

static redisReplyObjectFunctions rd_reply_fns = {rd_obj_string, rd_obj_array, rd_obj_integer,
                                                 rd_obj_nil, rd_obj_free};

/* Done with every reply read so far, unless one is kept for next(). */
static void rd_release(src_redis *r)
{
    if (!r->kept)
        orr_arena_reset(r->replies);
}

/* The connection is gone (a reply kept for next() stays). A read's reply
 * may have gone with it: the next read is of the pending list after the
 * last entry taken (see the top of the file). */
static void rd_drop(src_redis *r)
{
    if (r->c)
        redisFree(r->c);
    r->c = NULL;
    r->inflight = 0;
    r->pending_phase = !r->spec->source.commit_position;
    memcpy(r->pending_id, r->last_id, sizeof r->pending_id);
}

/* The read command of this source's mode (for messages). */
static const char *rd_read_cmd(const src_redis *r)
{
    return r->spec->source.commit_position ? "XREAD" : "XREADGROUP";
}

/* The connection failed during cmd: err says so (ORR_EUNAVAIL, Redis's
 * own words when it has them) and the connection is dropped. */
static orr_status rd_cmd_err(const src_redis *r, const redisContext *c, const char *cmd,
                             orr_err *err)
{
    return orr_err_set(err, ORR_EUNAVAIL, "redis", "%s %s:%d: %s", cmd, r->host, r->port,
                       c->errstr[0] ? c->errstr : "connection lost");
}

static orr_status rd_lost(src_redis *r, const char *cmd, orr_err *err)
{
    orr_status rc = rd_cmd_err(r, r->c, cmd, err);
    rd_drop(r);
    return rc;
}

/* redisGetReply on the reading connection, reading RD_READ_BYTES a call
 * where hiredis reads 16 KiB: a read of 5,000 one-record entries is about
 * 1 MB, which hiredis takes in some 64 read(2)s. Queued commands are
 * written first, as redisGetReply does, and a failure sets c->err and
 * c->errstr as hiredis does. The socket is read directly: hiredis 0.14
 * speaks plain TCP only (a TLS context of a later hiredis would need its
 * read hook here). */
static int rd_get_reply(src_redis *r, redisReply **out)
{
    redisContext *c = r->c;
    void *rep = NULL;
    *out = NULL;
    if (redisGetReplyFromReader(c, &rep) != REDIS_OK)
        return REDIS_ERR;
    int done = rep != NULL;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            return REDIS_ERR;
    while (!rep) {
        ssize_t n = read(c->fd, r->rbuf, RD_READ_BYTES);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            c->err = n == 0 ? REDIS_ERR_EOF : REDIS_ERR_IO;
            snprintf(c->errstr, sizeof c->errstr, "%s",
                     n == 0 ? "Server closed the connection" : strerror(errno));
            return REDIS_ERR;
        }
        if (redisReaderFeed(c->reader, r->rbuf, (size_t)n) != REDIS_OK ||
            redisGetReplyFromReader(c, &rep) != REDIS_OK) {
            if (!c->err) {
                c->err = c->reader->err ? c->reader->err : REDIS_ERR_PROTOCOL;
                snprintf(c->errstr, sizeof c->errstr, "%s", c->reader->errstr);
            }
            return REDIS_ERR;
        }
    }
    *out = rep;
    return REDIS_OK;
}

/* Read the reply of the read in flight, if any, into r->kept so that
 * another command can use the connection. ORR_EUNAVAIL when it is lost. */
static orr_status rd_settle(src_redis *r, orr_err *err)
{
    if (!r->inflight)
        return ORR_OK;
    redisReply *rep = NULL;
    r->inflight = 0;
    if (rd_get_reply(r, &rep) != REDIS_OK)
        return rd_lost(r, rd_read_cmd(r), err);
    r->kept = rep;
    return ORR_OK;
}

static redisReply *rd_cmd(src_redis *r, int argc, const char **argv, orr_err *err)
{
    if (rd_settle(r, err) != ORR_OK)
        return NULL;
    size_t lens[16];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep = redisCommandArgv(r->c, argc, argv, lens);
    if (!rep)
        (void)rd_lost(r, argv[0], err);
    return rep;
}

/* A new connection to the source's Redis in *out (2 s to connect, replies
 * within read_timeout_s), or NULL and ORR_EUNAVAIL. */
static orr_status rd_dial(const src_redis *r, long read_timeout_s, redisContext **out, orr_err *err)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(r->host, r->port, tv);
    *out = NULL;
    if (!c || c->err) {
        orr_status rc = orr_err_set(err, ORR_EUNAVAIL, "redis", "cannot connect to %s:%d: %s",
                                    r->host, r->port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return rc;
    }
    struct timeval rt = {read_timeout_s, 0};
    redisSetTimeout(c, rt);
    *out = c;
    return ORR_OK;
}

static void rd_say_lz4(src_redis *r);

static orr_status rd_connect(src_redis *r, orr_err *err)
{
    orr_status dc = rd_dial(r, (long)(r->spec->source.block_ms / 1000) + 10, &r->c, err);
    if (dc != ORR_OK)
        return dc;
    r->c->reader->fn = &rd_reply_fns;
    r->c->reader->privdata = r;
    r->c->reader->maxbuf = 0; /* keep the read buffer: replies are large, fed 256 KiB a time */
    const char *argv[] = {"XGROUP", "CREATE",  r->spec->source.key, r->spec->source.group,
                          "0",      "MKSTREAM"};
    redisReply *rep = rd_cmd(r, 6, argv, err);
    if (!rep)
        return ORR_EUNAVAIL;
    if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYGROUP", 9) != 0) {
        orr_status rc = orr_err_set(err, ORR_EIO, "spec.source.key", "XGROUP CREATE: %s", rep->str);
        rd_release(r);
        return rc;
    }
    rd_release(r);
    return ORR_OK;
}

static void src_redis_close(sort_source *s)
{
    src_redis *r = (src_redis *)s;
    if (!r)
        return;
    if (r->lz4_said && r->cc) { /* no longer reading: parse stages go back to Snappy */
        redisReply *rep = redisCommand(r->cc, "DEL %s", r->lz4_key);
        if (rep)
            freeReplyObject(rep);
    }
    if (r->c)
        redisFree(r->c);
    if (r->cc)
        redisFree(r->cc);
    orr_arena_destroy(r->replies);
    orr_buf_free(&r->scratch);
    free(r->rbuf);
    free(r->pend);
    free(r->ack_argv);
    free(r->ack_lens);
    free(r->ack_ids);
    free(r->ids);
    for (size_t i = 0; i < r->n_pel_owners; i++)
        free(r->pel_owners[i]);
    free(r->pel_owners);
    free(r);
}

/* Take over entries idle in other consumers' pending lists. */
static orr_status rd_autoclaim(src_redis *r, orr_err *err)
{
    char idle[32], count[32], start[64] = "0-0";
    snprintf(idle, sizeof idle, "%" PRId64, r->spec->source.claim_idle_ms);
    snprintf(count, sizeof count, "%" PRId64, r->spec->source.batch);
    for (int round = 0; round < 1000; round++) {
        const char *argv[] = {"XAUTOCLAIM",
                              r->spec->source.key,
                              r->spec->source.group,
                              r->spec->source.consumer,
                              idle,
                              start,
                              "COUNT",
                              count,
                              "JUSTID"};
        redisReply *rep = rd_cmd(r, 9, argv, err);
        if (!rep)
            return ORR_EUNAVAIL;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 2 ||
            rep->element[0]->type != REDIS_REPLY_STRING) {
            rd_release(r);
            return ORR_OK; /* nothing to claim (or an old server) */
        }
        snprintf(start, sizeof start, "%s", rep->element[0]->str);
        size_t got = rep->element[1]->type == REDIS_REPLY_ARRAY ? rep->element[1]->elements : 0;
        rd_release(r);
        if (got > 0)
            ORR_INFO("pending entries claimed", "stream=%s count=%zu", r->spec->name, got);
        if (strcmp(start, "0-0") == 0)
            break;
    }
    return ORR_OK;
}

static orr_status rd_pos_start(src_redis *r, orr_err *err);

static orr_status src_redis_open(const sort_spec *spec, const sort_source_env *env,
                                 sort_source **out, orr_err *err)
{
    const char *addr = spec->source.address ? spec->source.address : env->redis_addr;
    if (!addr || !*addr)
        return orr_err_set(err, ORR_EINVAL, "spec.source.address",
                           "no Redis address: set it in the spec or as [sort] redis");
    src_redis *r = orr_xcalloc(1, sizeof *r);
    r->base.ops = &sort_src_redis;
    r->spec = spec;
    r->replies = orr_arena_create(RD_ARENA_BLOCK);
    r->rbuf = orr_xmalloc(RD_READ_BYTES);
    r->ack_argv = orr_xcalloc(5 + RD_ACK_CHUNK, sizeof *r->ack_argv);
    r->ack_lens = orr_xcalloc(5 + RD_ACK_CHUNK, sizeof *r->ack_lens);
    r->ack_ids = orr_xcalloc(RD_ACK_CHUNK, sizeof *r->ack_ids);
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof r->host || atoi(colon + 1) <= 0) {
        src_redis_close(&r->base);
        return orr_err_set(err, ORR_EINVAL, "spec.source.address", "must be host:port, not %s",
                           addr);
    }
    memcpy(r->host, addr, (size_t)(colon - addr));
    r->port = atoi(colon + 1);
    snprintf(r->pending_id, sizeof r->pending_id, "0");
    snprintf(r->last_id, sizeof r->last_id, "0");
    orr_status rc = rd_connect(r, err);
    if (rc == ORR_OK && spec->source.commit_position)
        rc = rd_pos_start(r, err);
    else if (rc == ORR_OK && spec->source.claim_idle_ms > 0)
        rc = rd_autoclaim(r, err);
    if (rc != ORR_OK) {
        src_redis_close(&r->base);
        return rc;
    }
    r->pending_phase = !spec->source.commit_position;
    if (spec->source.packs) { /* before the first read: parse stages may send LZ4 from now */
        snprintf(r->lz4_key, sizeof r->lz4_key, "%s%s", spec->source.key, SORT_HANDOFF_LZ4_SUFFIX);
        rd_say_lz4(r);
    }
    *out = &r->base;
    return ORR_OK;
}

static int rd_parse_id(const char *s, sort_off *o)
{
    const char *dash = strchr(s, '-');
    if (!dash)
        return -1;
    char *end;
    o->hi = strtoull(s, &end, 10);
    if (end != dash)
        return -1;
    o->lo = strtoull(dash + 1, &end, 10);
    return *end == 0 ? 0 : -1;
}

/* The commit connection failed in cmd: dropped (the next commit dials
 * again); ORR_EUNAVAIL with err set. */
static orr_status rd_cc_lost(src_redis *r, const char *cmd, orr_err *err)
{
    orr_status rc = rd_cmd_err(r, r->cc, cmd, err);
    redisFree(r->cc);
    r->cc = NULL;
    return rc;
}

/* A command on the commit connection (connected on first use, plain
 * hiredis replies: the caller frees them; lens NULL: C strings). NULL
 * with err set (ORR_EUNAVAIL) when Redis cannot be reached; the connection
 * is then dropped and made again by the next commit. */
static redisReply *rd_commit_cmd(src_redis *r, int argc, const char **argv, const size_t *lens,
                                 orr_err *err)
{
    if (!r->cc && rd_dial(r, 10, &r->cc, err) != ORR_OK)
        return NULL;
    redisReply *rep = redisCommandArgv(r->cc, argc, argv, lens);
    if (!rep)
        (void)rd_cc_lost(r, argv[0], err);
    return rep;
}

/* Acknowledge and delete the n entry ids staged in r->ack_ids (n <=
 * RD_ACK_CHUNK) in one script, so a crash cannot leave an acknowledged
 * pack in the stream: the stream then holds only packs not yet landed,
 * which is what a hand-off producer's flow control counts. */
static const char ack_del_script[] = "redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))\n"
                                     "return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))\n";

static orr_status rd_ack_ids(src_redis *r, size_t n, orr_err *err)
{
    if (n == 0)
        return ORR_OK;
    r->ack_argv[0] = "EVAL";
    r->ack_argv[1] = ack_del_script;
    r->ack_argv[2] = "1";
    r->ack_argv[3] = r->spec->source.key;
    r->ack_argv[4] = r->spec->source.group;
    for (size_t i = 0; i < 5; i++)
        r->ack_lens[i] = strlen(r->ack_argv[i]);
    for (size_t i = 0; i < n; i++) {
        r->ack_argv[5 + i] = r->ack_ids[i];
        r->ack_lens[5 + i] = strlen(r->ack_ids[i]);
    }
    redisReply *rep = rd_commit_cmd(r, (int)(5 + n), r->ack_argv, r->ack_lens, err);
    if (!rep)
        return ORR_EUNAVAIL;
    orr_status rc = ORR_OK;
    if (rep->type != REDIS_REPLY_INTEGER)
        rc = orr_err_set(err, ORR_EIO, "redis", "XACK failed: %s",
                         rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
    freeReplyObject(rep);
    return rc;
}

static void rd_pend_add(src_redis *r, sort_off id, uint32_t partition, uint64_t last)
{
    if (r->npend == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        rd_pend *np = orr_xrealloc(r->pend, r->cap * sizeof *np);
        r->pend = np;
    }
    r->pend[r->npend++] = (rd_pend){id, partition, last};
}

/* A delivered one-record entry: its id to the FIFO acknowledged by commits. */
static void rd_fifo_add(src_redis *r, sort_off id)
{
    if (r->ids_len == r->ids_cap) {
        if (r->ids_head > 0) { /* slide the live ids down before growing */
            memmove(r->ids, r->ids + r->ids_head, (r->ids_len - r->ids_head) * sizeof *r->ids);
            r->ids_len -= r->ids_head;
            r->ids_head = 0;
        }
        if (r->ids_len == r->ids_cap) {
            r->ids_cap = r->ids_cap ? r->ids_cap * 2 : 8192;
            r->ids = orr_xrealloc(r->ids, r->ids_cap * sizeof *r->ids);
        }
    }
    r->ids[r->ids_len++] = id;
}

/* "ms-seq" of id into out (>= 42 bytes); returns its length. */
static size_t rd_fmt_id(sort_off id, char *out)
{
    char tmp[48];
    size_t n = 0;
    uint64_t v = id.lo;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    tmp[n++] = '-';
    v = id.hi;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

/* Read the replies of `n` XACKs sent on the commit connection. */
static orr_status rd_ack_replies(src_redis *r, size_t n, orr_err *err)
{
    orr_status rc = ORR_OK;
    for (size_t i = 0; i < n; i++) {
        redisReply *rep = NULL;
        if (redisGetReply(r->cc, (void **)&rep) != REDIS_OK || !rep)
            return rd_cc_lost(r, "XACK", err);
        if (rep->type != REDIS_REPLY_INTEGER && rc == ORR_OK)
            rc = orr_err_set(err, ORR_EIO, "redis", "XACK failed: %s",
                             rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
        freeReplyObject(rep);
    }
    return rc;
}

/* Acknowledge the FIFO's ids below next (see "Commit" at the top): XACKs
 * of RD_ACK_CHUNK ids, at most RD_ACK_WINDOW of them in flight. The ids
 * leave the FIFO only once every XACK was answered; on a failure they stay
 * and the next commit names them again (acknowledging twice is harmless). */
static orr_status rd_commit_fifo(src_redis *r, sort_off next, orr_err *err)
{
    size_t end = r->ids_head;
    while (end < r->ids_len && sort_off_cmp(r->ids[end], next) < 0)
        end++;
    if (end == r->ids_head)
        return ORR_OK;
    if (!r->cc && rd_dial(r, 10, &r->cc, err) != ORR_OK)
        return ORR_EUNAVAIL;
    r->ack_argv[0] = "XACK";
    r->ack_argv[1] = r->spec->source.key;
    r->ack_argv[2] = r->spec->source.group;
    for (size_t i = 0; i < 3; i++)
        r->ack_lens[i] = strlen(r->ack_argv[i]);
    size_t out = 0; /* XACKs whose replies are not read yet */
    for (size_t at = r->ids_head; at < end;) {
        size_t n = end - at < RD_ACK_CHUNK ? end - at : RD_ACK_CHUNK;
        for (size_t i = 0; i < n; i++) {
            r->ack_argv[3 + i] = r->ack_ids[i];
            r->ack_lens[3 + i] = rd_fmt_id(r->ids[at + i], r->ack_ids[i]);
        }
        if (redisAppendCommandArgv(r->cc, (int)(3 + n), r->ack_argv, r->ack_lens) != REDIS_OK)
            return rd_cc_lost(r, "XACK", err);
        at += n;
        if (++out == RD_ACK_WINDOW || at == end) {
            orr_status rc = rd_ack_replies(r, out, err);
            if (rc != ORR_OK)
                return rc;
            out = 0;
        }
    }
    r->ids_head = end;
    if (r->ids_head == r->ids_len)
        r->ids_head = r->ids_len = 0;
    return ORR_OK;
}

/* The id just before id (ids are (ms, seq) pairs of 64-bit numbers). */
static sort_off rd_pred(sort_off id)
{
    if (id.lo > 0)
        return (sort_off){id.hi, id.lo - 1};
    if (id.hi > 0)
        return (sort_off){id.hi - 1, UINT64_MAX};
    return id;
}

/* The string value of field name in a flat field/value array, or NULL. */
static const redisReply *rd_field(const redisReply *a, const char *name)
{
    if (!a || a->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t k = 0; k + 1 < a->elements; k += 2)
        if (a->element[k]->type == REDIS_REPLY_STRING && strcmp(a->element[k]->str, name) == 0)
            return a->element[k + 1];
    return NULL;
}

/* Position mode, at open: resume after the group's last-delivered id, or
 * from its lowest pending id while it has pending entries (see "Position"
 * at the top). */
static orr_status rd_pos_start(src_redis *r, orr_err *err)
{
    const char *key = r->spec->source.key, *group = r->spec->source.group;
    const char *info[] = {"XINFO", "GROUPS", key};
    redisReply *rep = rd_cmd(r, 3, info, err);
    if (!rep)
        return ORR_EUNAVAIL;
    sort_off start = {0, 0};
    long long npending = -1;
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        const redisReply *name = rd_field(rep->element[i], "name");
        if (!name || name->type != REDIS_REPLY_STRING || strcmp(name->str, group) != 0)
            continue;
        const redisReply *last = rd_field(rep->element[i], "last-delivered-id");
        const redisReply *pend = rd_field(rep->element[i], "pending");
        if (last && last->type == REDIS_REPLY_STRING && rd_parse_id(last->str, &start) == 0 &&
            pend && pend->type == REDIS_REPLY_INTEGER)
            npending = pend->integer;
    }
    if (npending < 0) {
        orr_status rc = orr_err_set(
            err, ORR_EIO, "spec.source.group", "XINFO GROUPS %s: %s", key,
            rep->type == REDIS_REPLY_ERROR ? rep->str : "no readable entry for the group");
        rd_release(r);
        return rc;
    }
    rd_release(r);
    if (npending > 0) {
        const char *xp[] = {"XPENDING", key, group};
        if (!(rep = rd_cmd(r, 3, xp, err)))
            return ORR_EUNAVAIL;
        sort_off min, max;
        int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 4 &&
                 rep->element[1]->type == REDIS_REPLY_STRING &&
                 rep->element[2]->type == REDIS_REPLY_STRING &&
                 rep->element[3]->type == REDIS_REPLY_ARRAY &&
                 rd_parse_id(rep->element[1]->str, &min) == 0 &&
                 rd_parse_id(rep->element[2]->str, &max) == 0;
        const redisReply *owners = ok ? rep->element[3] : NULL;
        for (size_t i = 0; owners && i < owners->elements; i++) {
            const redisReply *o = owners->element[i];
            if (o->type != REDIS_REPLY_ARRAY || o->elements < 1 ||
                o->element[0]->type != REDIS_REPLY_STRING)
                continue;
            r->pel_owners = orr_xrealloc(r->pel_owners, (r->n_pel_owners + 1) * sizeof(char *));
            r->pel_owners[r->n_pel_owners++] = orr_xstrdup(o->element[0]->str);
        }
        rd_release(r);
        if (!ok)
            return orr_err_set(err, ORR_EIO, "spec.source.group", "XPENDING %s %s: bad reply", key,
                               group);
        start = rd_pred(min);
        r->pel_max = max;
        ORR_INFO("pending entries are read again, then the group keeps a position",
                 "stream=%s pending=%lld", r->spec->name, npending);
    }
    rd_fmt_id(start, r->last_id);
    if (start.hi || start.lo) /* the position after start */
        r->committed = start.lo == UINT64_MAX ? (sort_off){start.hi + 1, 0}
                                              : (sort_off){start.hi, start.lo + 1};
    return ORR_OK;
}

/* Position mode: the group's last-delivered id to the entry before next,
 * then, once next passes every entry pending at open, the consumers that
 * held them deleted (see "Position" at the top). */
static orr_status rd_commit_position(src_redis *r, sort_off next, orr_err *err)
{
    char id[48];
    const char *argv[] = {"XGROUP", "SETID",   r->spec->source.key, r->spec->source.group,
                          id,       "MKSTREAM"};
    rd_fmt_id(rd_pred(next), id);
    redisReply *rep = rd_commit_cmd(r, 5, argv, NULL, err);
    /* The group (or the whole key) deleted: made again there. */
    if (rep && rep->type == REDIS_REPLY_ERROR &&
        (strncmp(rep->str, "NOGROUP", 7) == 0 || strstr(rep->str, "key to exist"))) {
        freeReplyObject(rep);
        argv[1] = "CREATE";
        rep = rd_commit_cmd(r, 6, argv, NULL, err);
        /* Made meanwhile by the reading connection: set it after all. */
        if (rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYGROUP", 9) == 0) {
            freeReplyObject(rep);
            argv[1] = "SETID";
            rep = rd_commit_cmd(r, 5, argv, NULL, err);
        }
    }
    if (!rep)
        return ORR_EUNAVAIL;
    orr_status rc = ORR_OK;
    if (rep->type == REDIS_REPLY_ERROR)
        rc = orr_err_set(err, ORR_EIO, "redis", "XGROUP %s %s: %s", argv[1], id, rep->str);
    freeReplyObject(rep);
    while (rc == ORR_OK && r->n_pel_owners > 0 && sort_off_cmp(r->pel_max, next) < 0) {
        char *owner = r->pel_owners[r->n_pel_owners - 1];
        const char *del[] = {"XGROUP", "DELCONSUMER", r->spec->source.key, r->spec->source.group,
                             owner};
        if (!(rep = rd_commit_cmd(r, 5, del, NULL, err)))
            return ORR_EUNAVAIL;
        if (rep->type == REDIS_REPLY_ERROR)
            rc = orr_err_set(err, ORR_EIO, "redis", "XGROUP DELCONSUMER %s: %s", owner, rep->str);
        freeReplyObject(rep);
        if (rc == ORR_OK) {
            free(owner);
            r->n_pel_owners--;
        }
    }
    return rc;
}

/* One pack entry: its records into the batch, the entry into the set of
 * delivered entries acknowledged by later commits. */
static void rd_pack_entry(src_redis *r, sort_batch *b, sort_off eid, const char *id,
                          const char *val, size_t vlen)
{
    orr_pack_view v;
    orr_err perr;
    orr_err_clear(&perr);
    orr_status prc = val ? orr_pack_decode(val, vlen, &r->scratch, &v, &perr)
                         : orr_err_set(&perr, ORR_EINVAL, "spec.source.field",
                                       "entry has no field %s", r->spec->source.field);
    if (prc == ORR_OK && v.partition >= SORT_MAX_PARTITIONS)
        prc = orr_err_set(&perr, ORR_EINVAL, "partition", "pack partition %u is not below %d",
                          v.partition, SORT_MAX_PARTITIONS);
    if (prc != ORR_OK) {
        /* One frame reject at (partition 0, offset 0); the entry is
         * acknowledged with partition 0's next commit, after the reject
         * file was flushed. */
        char eb[600];
        ORR_WARN("pack rejected", "stream=%s entry=%s error=%s", r->spec->name, id,
                 orr_log_q(orr_err_str(&perr, eb, sizeof eb)));
        sort_entry en = {.next = {0, 1}, .partition = 0, .why = SORT_REJ_FRAME};
        size_t keep = val ? (vlen > 1024 ? 1024 : vlen) : 0;
        en.len = (uint32_t)keep;
        sort_batch_add(b, &en, val ? val : "");
        rd_pend_add(r, eid, 0, 0);
        return;
    }
    if (v.count == 0) { /* nothing to land: acknowledged with the next commit */
        rd_pend_add(r, eid, v.partition, 0);
        return;
    }
    /* A routed pack (sort_preroute.h): its unit and times go with the
     * records, which the pipeline then does not parse again. */
    size_t ulen = 0, upos = 0;
    int64_t ubucket = 0;
    if ((v.flags & ORR_PACK_F_TIMES) && sort_preroute_key(v.key, v.key_len, &ulen, &ubucket) == 0 &&
        ulen <= UINT32_MAX)
        upos = sort_batch_stash(b, v.key, ulen);
    else
        ulen = 0;
    orr_pack_iter it;
    orr_pack_iter_init(&it, &v);
    uint64_t off;
    int64_t t;
    const void *rec;
    size_t len;
    while (orr_pack_next_timed(&it, &off, &t, &rec, &len)) {
        sort_entry en = {.off = {0, off},
                         .next = {0, off + 1},
                         .partition = v.partition,
                         .why = -1,
                         .len = (uint32_t)len,
                         .ulen = (uint32_t)ulen,
                         .upos = upos,
                         .ubucket = ubucket,
                         .utime_ms = t};
        sort_batch_add(b, &en, rec);
    }
    rd_pend_add(r, eid, v.partition, v.last_offset);
}

/* Packs: whether the producer waits for room, from its wait key
 * ("<key>.wait", set while it waits: sort_sink_handoff.h), looked at on
 * the commit connection at most every RD_ROOM_CHECK_MS and only with
 * packs pending (none pending: nothing to land would make room). A failed
 * look counts as no wait. */
static void rd_look_for_wait(src_redis *r)
{
    if (r->npend == 0) {
        r->room = 0;
        return;
    }
    int64_t now = orr_clock_ms(CLOCK_MONOTONIC);
    if (now - r->room_checked < RD_ROOM_CHECK_MS)
        return;
    r->room_checked = now;
    char key[600];
    snprintf(key, sizeof key, "%s%s", r->spec->source.key, SORT_HANDOFF_WAIT_SUFFIX);
    const char *argv[2] = {"EXISTS", key};
    orr_err e;
    orr_err_clear(&e);
    redisReply *rep = rd_commit_cmd(r, 2, argv, NULL, &e);
    r->room = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
    if (rep && rep->type == REDIS_REPLY_ERROR && !r->wait_key_refused) {
        r->wait_key_refused = 1;
        ORR_WARN("hand-off wait key refused; files land by age while the parse stage waits",
                 "stream=%s key=%s error=%s", r->spec->name, key, orr_log_q(rep->str));
    }
    if (rep)
        freeReplyObject(rep);
}

/* Packs: set, or renew, the key saying this stage reads LZ4 packs (the
 * codecs above), on the commit connection, at most every
 * SORT_HANDOFF_LZ4_RENEW_MS. A refusal (an ACL) is logged once: the parse
 * stages then send Snappy, which is read as well. */
static void rd_say_lz4(src_redis *r)
{
    int64_t now = orr_clock_ms(CLOCK_MONOTONIC);
    if (r->lz4_said && now - r->lz4_said < SORT_HANDOFF_LZ4_RENEW_MS)
        return;
    r->lz4_said = now;
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", SORT_HANDOFF_LZ4_TTL_MS);
    const char *argv[5] = {"SET", r->lz4_key, "1", "PX", ttl};
    orr_err e;
    orr_err_clear(&e);
    redisReply *rep = rd_commit_cmd(r, 5, argv, NULL, &e);
    if (rep && rep->type == REDIS_REPLY_ERROR && !r->lz4_key_refused) {
        r->lz4_key_refused = 1;
        ORR_WARN("hand-off LZ4 key refused; parse stages send Snappy", "stream=%s key=%s error=%s",
                 r->spec->name, r->lz4_key, orr_log_q(rep->str));
    }
    if (rep)
        freeReplyObject(rep);
}

/* Send XREADGROUP: from the pending list at r->pending_id, or (pending
 * NULL) new entries with BLOCK. The command is queued in the context's
 * output buffer; send_now: also written to the socket (a read in flight). */
static int64_t rd_count(const src_redis *r)
{
    int64_t n = r->spec->source.batch;
    if (r->spec->source.packs && n > RD_PACK_BATCH_MAX)
        n = RD_PACK_BATCH_MAX; /* each entry is many records: bound the batch's memory */
    return n;
}

static orr_status rd_send_read(src_redis *r, int send_now, orr_err *err)
{
    char count[32], block[32];
    snprintf(count, sizeof count, "%" PRId64, rd_count(r));
    snprintf(block, sizeof block, "%" PRId64, r->spec->source.block_ms);
    const char *argv[12];
    int argc = 0;
    argv[argc++] = rd_read_cmd(r);
    if (!r->spec->source.commit_position) {
        argv[argc++] = "GROUP";
        argv[argc++] = r->spec->source.group;
        argv[argc++] = r->spec->source.consumer;
    }
    argv[argc++] = "COUNT";
    argv[argc++] = count;
    if (!r->pending_phase) {
        argv[argc++] = "BLOCK";
        argv[argc++] = block;
    }
    argv[argc++] = "STREAMS";
    argv[argc++] = r->spec->source.key;
    if (r->spec->source.commit_position)
        argv[argc++] = r->last_id; /* after the last entry taken */
    else
        argv[argc++] = r->pending_phase ? r->pending_id : ">";
    int ok = redisAppendCommandArgv(r->c, argc, argv, NULL) == REDIS_OK;
    for (int done = 0; ok && send_now && !done;)
        ok = redisBufferWrite(r->c, &done) == REDIS_OK;
    if (!ok) {
        return rd_lost(r, rd_read_cmd(r), err);
    }
    r->inflight = send_now;
    return ORR_OK;
}

/* The reply of the next read: the one kept by a commit, the one in flight,
 * or a new one sent now. NULL (err set) when the connection is lost. */
static redisReply *rd_read(src_redis *r, orr_err *err)
{
    redisReply *rep = r->kept;
    if (rep) {
        r->kept = NULL;
        return rep;
    }
    if (!r->inflight && rd_send_read(r, 0, err) != ORR_OK)
        return NULL;
    r->inflight = 0;
    if (rd_get_reply(r, &rep) != REDIS_OK) {
        (void)rd_lost(r, rd_read_cmd(r), err);
        return NULL;
    }
    return rep;
}

static orr_status src_redis_next(sort_source *s, sort_batch *b, int wait_ms, orr_err *err)
{
    src_redis *r = (src_redis *)s;
    (void)wait_ms;
    if (!r->c) {
        orr_status rc = rd_connect(r, err);
        if (rc != ORR_OK)
            return rc;
    }
    redisReply *rep = rd_read(r, err);
    if (!rep)
        return ORR_EUNAVAIL;
    orr_status rc = ORR_OK;
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = orr_err_set(err, ORR_EIO, "spec.source.key", "%s: %s", rd_read_cmd(r), rep->str);
        if (strncmp(rep->str, "NOGROUP", 7) == 0)
            rd_drop(r); /* the group vanished: recreate it on reconnect */
        goto done;
    }
    redisReply *ents = NULL;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0) {
        redisReply *st = rep->element[0];
        if (st->type == REDIS_REPLY_ARRAY && st->elements == 2 &&
            st->element[1]->type == REDIS_REPLY_ARRAY)
            ents = st->element[1];
    }
    /* The last entry taken: where a position read goes on, and where a
     * replay after a lost connection starts. */
    if (ents && ents->elements > 0) {
        redisReply *e = ents->element[ents->elements - 1];
        if (e->type == REDIS_REPLY_ARRAY && e->elements >= 1 &&
            e->element[0]->type == REDIS_REPLY_STRING && e->element[0]->len < sizeof r->last_id)
            memcpy(r->last_id, e->element[0]->str, e->element[0]->len + 1);
    }
    /* New entries came: the next read goes out before they are routed. A
     * failure to send it shows on the next call (the connection is gone). */
    if (!r->pending_phase && r->c && ents && ents->elements > 0) {
        orr_err serr;
        orr_err_clear(&serr);
        (void)rd_send_read(r, 1, &serr);
    }
    size_t got = 0;
    for (size_t i = 0; ents && i < ents->elements; i++) {
        redisReply *e = ents->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
            e->element[0]->type != REDIS_REPLY_STRING)
            continue;
        sort_off off;
        if (rd_parse_id(e->element[0]->str, &off) != 0)
            continue;
        got++;
        if (r->pending_phase)
            snprintf(r->pending_id, sizeof r->pending_id, "%s", e->element[0]->str);
        redisReply *fv = e->element[1];
        if (r->spec->source.packs) {
            if (fv->type != REDIS_REPLY_ARRAY)
                continue; /* deleted while pending: acknowledged by the next commit */
            const char *pv = NULL;
            size_t plen = 0;
            r->marked = 0;
            for (size_t k = 0; k + 1 < fv->elements; k += 2) {
                redisReply *f = fv->element[k], *v = fv->element[k + 1];
                if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
                    continue;
                if (strcmp(f->str, r->spec->source.field) == 0) {
                    pv = v->str;
                    plen = v->len;
                } else if (strcmp(f->str, SORT_PACK_BACKLOG_FIELD) == 0) {
                    r->marked = 1; /* routed from a backlog by the parse stage */
                }
            }
            rd_pack_entry(r, b, off, e->element[0]->str, pv, plen);
            continue;
        }
        if (!r->spec->source.commit_position)
            rd_fifo_add(r, off);
        sort_entry en = {.off = off, .next = {off.hi, off.lo + 1}, .partition = 0, .why = -1};
        const char *val = NULL;
        size_t vlen = 0;
        if (fv->type == REDIS_REPLY_ARRAY) {
            for (size_t k = 0; k + 1 < fv->elements; k += 2) {
                redisReply *f = fv->element[k], *v = fv->element[k + 1];
                if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
                    strcmp(f->str, r->spec->source.field) == 0) {
                    val = v->str;
                    vlen = v->len;
                    break;
                }
            }
        } else {
            continue; /* deleted while pending: nothing to land; acked by commit */
        }
        if (!val) {
            en.why = SORT_REJ_FRAME;
            val = "";
        }
        en.len = (uint32_t)vlen;
        sort_batch_add(b, &en, val);
    }
    /* A mark holds through empty reads: the parse stage may be gathering
     * records; an unmarked pack (an empty one, if need be) clears it. */
    r->behind = (got > 0 && (r->pending_phase || (int64_t)got >= rd_count(r))) || r->marked;
    /* Entries that came below the committed position have landed already:
     * acknowledged now, as no commit comes for a position already
     * committed (see "Commit" at the top). A failure leaves them for the
     * next call, and is logged once until an attempt succeeds. */
    if (r->ids_head < r->ids_len && sort_off_cmp(r->ids[r->ids_head], r->committed) < 0) {
        orr_err aerr;
        orr_err_clear(&aerr);
        if (rd_commit_fifo(r, r->committed, &aerr) != ORR_OK) {
            if (!r->ack_failing) {
                char eb[600];
                ORR_WARN("acknowledgement failed; will retry", "stream=%s error=%s", r->spec->name,
                         orr_log_q(orr_err_str(&aerr, eb, sizeof eb)));
            }
            r->ack_failing = 1;
        } else {
            r->ack_failing = 0;
        }
    }
    if (r->pending_phase && got == 0) {
        r->pending_phase = 0;
        ORR_INFO("pending list replayed; reading new entries", "stream=%s", r->spec->name);
    }
    if (r->spec->source.packs) {
        rd_look_for_wait(r);
        rd_say_lz4(r);
    }
done:
    rd_release(r);
    return rc;
}

/* Acknowledge every delivered pack of partition whose records are all
 * before next (they have landed). */
static orr_status rd_commit_packs(src_redis *r, uint32_t partition, sort_off next, orr_err *err)
{
    if (partition >= SORT_MAX_PARTITIONS || next.hi != 0)
        return orr_err_set(err, ORR_EINVAL, "offset", "not a pack offset");
    /* Acknowledge first, forget after: on a failure nothing is forgotten
     * (acknowledging an entry twice is harmless). */
    size_t n = 0;
    orr_status rc = ORR_OK;
    for (size_t i = 0; i < r->npend && rc == ORR_OK; i++) {
        const rd_pend *e = &r->pend[i];
        if (e->partition != partition || e->last >= next.lo)
            continue;
        snprintf(r->ack_ids[n], sizeof r->ack_ids[n], "%" PRIu64 "-%" PRIu64, e->id.hi, e->id.lo);
        if (++n == RD_ACK_CHUNK) {
            rc = rd_ack_ids(r, n, err);
            n = 0;
        }
    }
    if (rc == ORR_OK)
        rc = rd_ack_ids(r, n, err);
    if (rc != ORR_OK)
        return rc;
    size_t keep = 0;
    for (size_t i = 0; i < r->npend; i++)
        if (r->pend[i].partition != partition || r->pend[i].last >= next.lo)
            r->pend[keep++] = r->pend[i];
    r->npend = keep;
    if (sort_off_cmp(next, r->pcommitted[partition]) > 0)
        r->pcommitted[partition] = next;
    return ORR_OK;
}

static orr_status src_redis_commit(sort_source *s, uint32_t partition, sort_off next, orr_err *err)
{
    src_redis *r = (src_redis *)s;
    if (r->spec->source.packs)
        return rd_commit_packs(r, partition, next, err);
    if (partition != 0)
        return orr_err_set(err, ORR_EINVAL, "offset", "redis source has one partition");
    if (sort_off_cmp(next, r->committed) <= 0)
        return ORR_OK;
    orr_status rc = r->spec->source.commit_position ? rd_commit_position(r, next, err)
                                                    : rd_commit_fifo(r, next, err);
    if (rc != ORR_OK)
        return rc;
    r->committed = next;
    return ORR_OK;
}

static sort_off src_redis_committed(sort_source *s, uint32_t partition)
{
    src_redis *r = (src_redis *)s;
    if (r->spec->source.packs)
        return partition < SORT_MAX_PARTITIONS ? r->pcommitted[partition] : (sort_off){0, 0};
    return r->committed;
}

/* See "Backlog" at the top. */
static int src_redis_room_wanted(sort_source *s)
{
    return ((src_redis *)s)->room;
}

static int src_redis_behind(sort_source *s)
{
    src_redis *r = (src_redis *)s;
    if (r->room)
        return 0; /* the producer waits for acknowledgements: land */
    return r->behind;
}

/* Entry ids: milliseconds in the top 44 bits (until the year 2527), the
 * sequence in the low 20 (a million entries in one millisecond). Packs: the
 * record offsets the producer gave (hi is 0). */
static int src_redis_off64(const sort_source *s, sort_off off, uint64_t *out)
{
    const src_redis *r = (const src_redis *)s;
    if (r->spec->source.packs) {
        if (off.hi != 0)
            return -1;
        *out = off.lo;
        return 0;
    }
    if (off.hi >= (1ULL << 44) || off.lo >= (1ULL << 20))
        return -1;
    *out = off.hi << 20 | off.lo;
    return 0;
}

const sort_source_ops sort_src_redis = {
    .name = "redis",
    .open = src_redis_open,
    .next = src_redis_next,
    .commit = src_redis_commit,
    .committed = src_redis_committed,
    .behind = src_redis_behind,
    .room_wanted = src_redis_room_wanted,
    .close = src_redis_close,
    .off64 = src_redis_off64,
};

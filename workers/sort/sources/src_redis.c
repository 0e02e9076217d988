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
 * Commit: every entry of this consumer's pending list with an id below
 * `next` is acknowledged (XPENDING + XACK in a server-side script, in
 * chunks), so acknowledgement happens only after the records landed.
 *
 * A lost connection is re-established on the next call; after a reconnect
 * only new entries are read (the pending ones are already in this run).
 * Exactly-once holds for one consumer per stream; entries claimed from
 * another consumer may arrive out of order and are not deduplicated yet.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_log.h"
#include "sort_source.h"

typedef struct src_redis {
    sort_source base;
    const sort_spec *spec;
    redisContext *c;
    char host[256];
    int port;
    int pending_phase;   /* reading our own pending list */
    char pending_id[64]; /* where the pending read continues */
    sort_off committed;
} src_redis;

static const char ack_script[] =
    "local n = 0\n"
    "for round = 1, 100 do\n"
    "  local p = redis.call('XPENDING', KEYS[1], ARGV[1], '-', ARGV[2], 1000, ARGV[3])\n"
    "  if #p == 0 then return n end\n"
    "  local ids = {}\n"
    "  for i, e in ipairs(p) do ids[i] = e[1] end\n"
    "  n = n + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))\n"
    "  if #p < 1000 then return n end\n"
    "end\n"
    "return -n\n";

static redisReply *rd_cmd(src_redis *r, int argc, const char **argv, orr_err *err)
{
    size_t lens[16];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep = redisCommandArgv(r->c, argc, argv, lens);
    if (!rep) {
        orr_err_set(err, ORR_EUNAVAIL, "redis", "%s %s:%d: %s", argv[0], r->host, r->port,
                    r->c->errstr[0] ? r->c->errstr : "connection lost");
        redisFree(r->c);
        r->c = NULL;
    }
    return rep;
}

static orr_status rd_connect(src_redis *r, orr_err *err)
{
    struct timeval tv = {2, 0};
    r->c = redisConnectWithTimeout(r->host, r->port, tv);
    if (!r->c || r->c->err) {
        orr_status rc = orr_err_set(err, ORR_EUNAVAIL, "redis", "cannot connect to %s:%d: %s",
                                    r->host, r->port, r->c ? r->c->errstr : "out of memory");
        if (r->c)
            redisFree(r->c);
        r->c = NULL;
        return rc;
    }
    struct timeval rt = {(long)(r->spec->source.block_ms / 1000) + 10, 0};
    redisSetTimeout(r->c, rt);
    const char *argv[] = {"XGROUP", "CREATE",  r->spec->source.key, r->spec->source.group,
                          "0",      "MKSTREAM"};
    redisReply *rep = rd_cmd(r, 6, argv, err);
    if (!rep)
        return ORR_EUNAVAIL;
    if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "BUSYGROUP", 9) != 0) {
        orr_status rc = orr_err_set(err, ORR_EIO, "spec.source.key", "XGROUP CREATE: %s", rep->str);
        freeReplyObject(rep);
        return rc;
    }
    freeReplyObject(rep);
    return ORR_OK;
}

static void src_redis_close(sort_source *s)
{
    src_redis *r = (src_redis *)s;
    if (!r)
        return;
    if (r->c)
        redisFree(r->c);
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
            freeReplyObject(rep);
            return ORR_OK; /* nothing to claim (or an old server) */
        }
        snprintf(start, sizeof start, "%s", rep->element[0]->str);
        size_t got = rep->element[1]->type == REDIS_REPLY_ARRAY ? rep->element[1]->elements : 0;
        freeReplyObject(rep);
        if (got > 0)
            ORR_INFO("pending entries claimed", "stream=%s count=%zu", r->spec->name, got);
        if (strcmp(start, "0-0") == 0)
            break;
    }
    return ORR_OK;
}

static orr_status src_redis_open(const sort_spec *spec, const sort_source_env *env,
                                 sort_source **out, orr_err *err)
{
    const char *addr = spec->source.address ? spec->source.address : env->redis_addr;
    if (!addr || !*addr)
        return orr_err_set(err, ORR_EINVAL, "spec.source.address",
                           "no Redis address: set it in the spec or as [sort] redis");
    src_redis *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    r->base.ops = &sort_src_redis;
    r->spec = spec;
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof r->host || atoi(colon + 1) <= 0) {
        free(r);
        return orr_err_set(err, ORR_EINVAL, "spec.source.address", "must be host:port, not %s",
                           addr);
    }
    memcpy(r->host, addr, (size_t)(colon - addr));
    r->port = atoi(colon + 1);
    orr_status rc = rd_connect(r, err);
    if (rc == ORR_OK && spec->source.claim_idle_ms > 0)
        rc = rd_autoclaim(r, err);
    if (rc != ORR_OK) {
        src_redis_close(&r->base);
        return rc;
    }
    r->pending_phase = 1;
    snprintf(r->pending_id, sizeof r->pending_id, "0");
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

static orr_status src_redis_next(sort_source *s, sort_batch *b, int wait_ms, orr_err *err)
{
    src_redis *r = (src_redis *)s;
    (void)wait_ms;
    if (!r->c) {
        orr_status rc = rd_connect(r, err);
        if (rc != ORR_OK)
            return rc;
    }
    char count[32], block[32];
    snprintf(count, sizeof count, "%" PRId64, r->spec->source.batch);
    snprintf(block, sizeof block, "%" PRId64, r->spec->source.block_ms);
    const char *argv[12];
    int argc = 0;
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = r->spec->source.group;
    argv[argc++] = r->spec->source.consumer;
    argv[argc++] = "COUNT";
    argv[argc++] = count;
    if (!r->pending_phase) {
        argv[argc++] = "BLOCK";
        argv[argc++] = block;
    }
    argv[argc++] = "STREAMS";
    argv[argc++] = r->spec->source.key;
    argv[argc++] = r->pending_phase ? r->pending_id : ">";
    redisReply *rep = rd_cmd(r, argc, argv, err);
    if (!rep)
        return ORR_EUNAVAIL;
    orr_status rc = ORR_OK;
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = orr_err_set(err, ORR_EIO, "spec.source.key", "XREADGROUP: %s", rep->str);
        if (strncmp(rep->str, "NOGROUP", 7) == 0) {
            redisFree(r->c); /* the group vanished: recreate it on reconnect */
            r->c = NULL;
        }
        goto done;
    }
    size_t got = 0;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0) {
        redisReply *st = rep->element[0];
        redisReply *ents =
            st->type == REDIS_REPLY_ARRAY && st->elements == 2 ? st->element[1] : NULL;
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
    }
    if (r->pending_phase && got == 0) {
        r->pending_phase = 0;
        ORR_INFO("pending list replayed; reading new entries", "stream=%s", r->spec->name);
    }
done:
    freeReplyObject(rep);
    return rc;
}

static orr_status src_redis_commit(sort_source *s, uint32_t partition, sort_off next, orr_err *err)
{
    src_redis *r = (src_redis *)s;
    if (partition != 0)
        return orr_err_set(err, ORR_EINVAL, "offset", "redis source has one partition");
    if (sort_off_cmp(next, r->committed) <= 0)
        return ORR_OK;
    if (!r->c) {
        orr_status rc = rd_connect(r, err);
        if (rc != ORR_OK)
            return rc;
    }
    char end[64];
    snprintf(end, sizeof end, "(%" PRIu64 "-%" PRIu64, next.hi, next.lo);
    for (int round = 0; round < 1000; round++) {
        const char *argv[] = {"EVAL",
                              ack_script,
                              "1",
                              r->spec->source.key,
                              r->spec->source.group,
                              end,
                              r->spec->source.consumer};
        redisReply *rep = rd_cmd(r, 7, argv, err);
        if (!rep)
            return ORR_EUNAVAIL;
        if (rep->type != REDIS_REPLY_INTEGER) {
            orr_status rc = orr_err_set(err, ORR_EIO, "redis", "acknowledge failed: %s",
                                        rep->type == REDIS_REPLY_ERROR ? rep->str : "bad reply");
            freeReplyObject(rep);
            return rc;
        }
        long long n = rep->integer;
        freeReplyObject(rep);
        if (n >= 0)
            break; /* negative: more to acknowledge */
    }
    r->committed = next;
    return ORR_OK;
}

static sort_off src_redis_committed(sort_source *s, uint32_t partition)
{
    (void)partition;
    return ((src_redis *)s)->committed;
}

const sort_source_ops sort_src_redis = {
    .name = "redis",
    .open = src_redis_open,
    .next = src_redis_next,
    .commit = src_redis_commit,
    .committed = src_redis_committed,
    .close = src_redis_close,
};

/*
 * sort_xadd.c - a Redis Streams producer for sortd's end-to-end benchmark:
 * reads records (one per line) from the files of a folder in name order and
 * adds them with pipelined XADD (field "r"): one record per entry, or with
 * --pack R, packs of R records per entry (lib/orr_pack.h, Snappy), as a
 * batching parse stage hands records to sortd (source "packs": true).
 *
 *   sort_xadd --redis HOST:PORT --key KEY --in DIR [--records N]
 *             [--seconds S] [--pipeline P] [--pack R [--spread K]
 *             [--skip M] [--partition Q]]
 *
 * Records are numbered from 0 in input order: the number is the record's
 * source offset in packs (partition Q, default 0). --spread K fills K packs
 * at once and puts each record in the one its interface picks (the third
 * "|" field, as sort_gen writes it; hashed): packs per unit as a parse stage
 * sends them, so each carries sparse offsets (per-record offsets,
 * ORR_PACK_F_OFFSETS) and the packs of a partition interleave, while the
 * records of one unit stay in offset order, as sortd requires. --skip M skips the first M records
 * but keeps the numbering: a producer sending again from offset M after a crash.
 *
 * Stops after N records (default: all lines; counted after the skip), after
 * S seconds (default 120) or at the end of the input, whichever comes first;
 * P commands (default 1000; with packs 16) are sent before their replies are
 * read. Prints one line: records added, seconds, records/s. Exit status 0 on
 * success, 1 on a Redis error.
 *
 *   sort_xadd --redis HOST:PORT --key KEY --read GROUP [--records N]
 *             [--seconds S] [--count C] [--read-mode group|xread]
 *
 * The reading peer of sortd's Redis source, doing only its irreducible part:
 * reads one-record entries through consumer group GROUP (which must exist)
 * with XREADGROUP COUNT C (default 5,000, as the benchmark's spec), the next
 * read sent with the acknowledgement (XACK of every id) of the one before,
 * until N entries were read (default: until a read brings none), S seconds
 * passed (default 120). With --read-mode xread, the peer of the source's "position"
 * mode: XREAD COUNT C after the last id read, nothing acknowledged (GROUP
 * is not used). Touches each value's bytes but parses nothing.
 * Prints entries read, seconds, entries/s and its own CPU seconds (user +
 * system).
 *
 *   sort_xadd --redis HOST:PORT --key KEY --wait GROUP [--empty KEY2]...
 *             [--seconds S]
 *
 * The benchmarks' wait for a drained run, on one connection: every 5 ms
 * asks XINFO GROUPS KEY and XLEN of each KEY2 (at most 64), and exits 0 as
 * soon as GROUP has lag 0 and nothing pending and each KEY2 is empty; 3 when
 * that did not happen within S seconds (default 120), 1 on a Redis error.
 * A shell loop of redis-cli calls did the same about eight times a
 * second, and on a 2-core guest each redis-cli cost about 20 ms of CPU: an
 * eighth of a core or more taken from the run being timed.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "orr_hash.h"
#include "orr_pack.h"

#define XADD_MAX_SPREAD 1024

/* Packs being filled and the encode buffer. */
typedef struct xadd_packer {
    orr_pack_builder b[XADD_MAX_SPREAD];
    size_t spread, per_pack;
    orr_buf enc;
} xadd_packer;

/* The pack of a record: hash of its third "|" field, modulo the spread. */
static size_t xadd_pick(const xadd_packer *pk, const char *line, size_t len)
{
    if (pk->spread == 1)
        return 0;
    size_t i = 0, field = 0;
    while (i < len && field < 2)
        if (line[i++] == '|')
            field++;
    size_t start = i;
    while (i < len && line[i] != '|')
        i++;
    return (size_t)(orr_hash_fnv1a(line + start, i - start) % pk->spread);
}

/* Encode builder i and append its XADD; returns 1 if a command was queued. */
static int xadd_flush_pack(redisContext *c, const char *key, xadd_packer *pk, size_t i)
{
    orr_pack_builder *b = &pk->b[i];
    if (b->count == 0)
        return 0;
    orr_err err;
    orr_buf_reset(&pk->enc);
    if (orr_pack_encode(b, &pk->enc, &err) != ORR_OK) {
        fprintf(stderr, "sort_xadd: pack: %s: %s\n", err.field, err.msg);
        exit(1);
    }
    redisAppendCommand(c, "XADD %s * r %b", key, pk->enc.data, pk->enc.len);
    orr_pack_builder_reset(b, NULL, 0, b->partition, &err);
    return 1;
}

static double xadd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int xadd_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read the replies of n pipelined commands; -1 on an error reply. */
static int xadd_drain(redisContext *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *r = NULL;
        if (redisGetReply(c, &r) != REDIS_OK || !r) {
            fprintf(stderr, "sort_xadd: redis: %s\n", c->errstr);
            return -1;
        }
        redisReply *rep = r;
        int bad = rep->type == REDIS_REPLY_ERROR;
        if (bad)
            fprintf(stderr, "sort_xadd: XADD failed: %s\n", rep->str);
        freeReplyObject(rep);
        if (bad)
            return -1;
    }
    return 0;
}

/* The reply of one pipelined command; NULL (message printed) on failure. */
static redisReply *xadd_reply(redisContext *c, const char *what)
{
    void *r = NULL;
    if (redisGetReply(c, &r) != REDIS_OK || !r) {
        fprintf(stderr, "sort_xadd: redis: %s\n", c->errstr);
        return NULL;
    }
    redisReply *rep = r;
    if (rep->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "sort_xadd: %s failed: %s\n", what, rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

/* --read: see the top of the file. */
static int xadd_read(redisContext *c, const char *key, const char *group, uint64_t limit,
                     double seconds, uint64_t count, int plain)
{
    char cnt[32];
    snprintf(cnt, sizeof cnt, "%" PRIu64, count);
    size_t cap = 4 + count;
    const char **av = calloc(cap, sizeof *av);
    size_t *al = calloc(cap, sizeof *al);
    char(*ids)[48] = calloc(count, sizeof *ids);
    if (!av || !al || !ids)
        abort();
    const char *rd[] = {"XREADGROUP", "GROUP", group, "bench", "COUNT", cnt, "STREAMS", key, ">"};
    char last[48] = "0-0";
    const char *xr[] = {"XREAD", "COUNT", cnt, "STREAMS", key, last};
    double t0 = xadd_now(), deadline = t0 + seconds;
    uint64_t got = 0, sum = 0;
    int rc = 0, acks = 0;
    if (plain)
        redisAppendCommandArgv(c, 6, xr, NULL);
    else
        redisAppendCommandArgv(c, 9, rd, NULL);
    while (!rc) {
        if (acks) { /* the acknowledgement sent before this read */
            redisReply *a = xadd_reply(c, "XACK");
            if (!a) {
                rc = 1;
                break;
            }
            freeReplyObject(a);
            acks = 0;
        }
        redisReply *rep = xadd_reply(c, plain ? "XREAD" : "XREADGROUP");
        if (!rep) {
            rc = 1;
            break;
        }
        size_t n = 0;
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 && rep->element[0]->elements == 2) {
            redisReply *ents = rep->element[0]->element[1];
            for (size_t i = 0; i < ents->elements && n < count; i++) {
                redisReply *e = ents->element[i];
                snprintf(ids[n], sizeof ids[n], "%s", e->element[0]->str);
                av[3 + n] = ids[n];
                al[3 + n] = strlen(ids[n]);
                n++;
                redisReply *fv = e->element[1];
                if (fv->type == REDIS_REPLY_ARRAY && fv->elements >= 2)
                    sum += (uint8_t)fv->element[1]->str[fv->element[1]->len / 2];
            }
        }
        freeReplyObject(rep);
        got += n;
        if (n > 0)
            snprintf(last, sizeof last, "%s", ids[n - 1]);
        if (n > 0 && !plain) {
            av[0] = "XACK";
            av[1] = key;
            av[2] = group;
            for (size_t i = 0; i < 3; i++)
                al[i] = strlen(av[i]);
            redisAppendCommandArgv(c, (int)(3 + n), av, al);
            acks = 1;
        }
        if (n == 0 || got >= limit || xadd_now() > deadline) {
            if (acks) {
                redisReply *a = xadd_reply(c, "XACK");
                if (!a)
                    rc = 1;
                else
                    freeReplyObject(a);
            }
            break;
        }
        if (plain)
            redisAppendCommandArgv(c, 6, xr, NULL);
        else
            redisAppendCommandArgv(c, 9, rd, NULL);
    }
    double dt = xadd_now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf("read %" PRIu64 " entries in %.2f s: %.0f entries/s, cpu %.2f s (check %" PRIu64 ")\n",
           got, dt, dt > 0 ? (double)got / dt : 0.0, cpu, sum % 10);
    free(av);
    free(al);
    free(ids);
    return rc;
}

/* A connection to addr ("host:port", colon at its last ':'); NULL, said on
 * stderr, when there is none. */
static redisContext *xadd_connect(const char *addr, const char *colon)
{
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    redisContext *c = redisConnect(host, atoi(colon + 1));
    if (!c || c->err) {
        fprintf(stderr, "sort_xadd: cannot connect to %s: %s\n", addr, c ? c->errstr : "no memory");
        redisFree(c);
        return NULL;
    }
    return c;
}

/* One integer field of GROUP in an XINFO GROUPS reply: -1 when the group
 * or the field is missing, or the value is nil (lag not known). */
static long long xadd_group_field(const redisReply *groups, const char *group, const char *field)
{
    if (groups->type != REDIS_REPLY_ARRAY)
        return -1;
    for (size_t g = 0; g < groups->elements; g++) {
        const redisReply *kv = groups->element[g];
        if (kv->type != REDIS_REPLY_ARRAY)
            continue;
        const char *name = NULL;
        long long val = -1;
        for (size_t i = 0; i + 1 < kv->elements; i += 2) {
            const redisReply *k = kv->element[i], *v = kv->element[i + 1];
            if (k->type != REDIS_REPLY_STRING && k->type != REDIS_REPLY_STATUS)
                continue;
            if (strcmp(k->str, "name") == 0 && v->type == REDIS_REPLY_STRING)
                name = v->str;
            else if (strcmp(k->str, field) == 0 && v->type == REDIS_REPLY_INTEGER)
                val = v->integer;
        }
        if (name && strcmp(name, group) == 0)
            return val;
    }
    return -1;
}

/* --wait: see the top of the file. */
static int xadd_wait(redisContext *c, const char *key, const char *group, const char *const *empty,
                     size_t n_empty, double seconds)
{
    double deadline = xadd_now() + seconds;
    for (;;) {
        redisAppendCommand(c, "XINFO GROUPS %s", key);
        for (size_t i = 0; i < n_empty; i++)
            redisAppendCommand(c, "XLEN %s", empty[i]);
        redisReply *groups = xadd_reply(c, "XINFO GROUPS");
        if (!groups)
            return 1;
        int done = xadd_group_field(groups, group, "lag") == 0 &&
                   xadd_group_field(groups, group, "pending") == 0;
        freeReplyObject(groups);
        for (size_t i = 0; i < n_empty; i++) {
            redisReply *len = xadd_reply(c, "XLEN");
            if (!len)
                return 1;
            done = done && len->type == REDIS_REPLY_INTEGER && len->integer == 0;
            freeReplyObject(len);
        }
        if (done)
            return 0;
        if (xadd_now() > deadline)
            return 3;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    const char *addr = NULL, *key = NULL, *in = NULL, *read_group = NULL, *wait_group = NULL;
    const char *empty[64];
    size_t n_empty = 0;
    int plain = 0;
    uint64_t count = 5000;
    uint64_t limit = UINT64_MAX, pipeline = 0, pack = 0, spread = 1, skip = 0, partition = 0;
    double seconds = 120;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--redis") == 0)
            addr = v;
        else if (strcmp(k, "--key") == 0)
            key = v;
        else if (strcmp(k, "--in") == 0)
            in = v;
        else if (strcmp(k, "--records") == 0)
            limit = strtoull(v, NULL, 10);
        else if (strcmp(k, "--seconds") == 0)
            seconds = strtod(v, NULL);
        else if (strcmp(k, "--pipeline") == 0)
            pipeline = strtoull(v, NULL, 10);
        else if (strcmp(k, "--pack") == 0)
            pack = strtoull(v, NULL, 10);
        else if (strcmp(k, "--spread") == 0)
            spread = strtoull(v, NULL, 10);
        else if (strcmp(k, "--skip") == 0)
            skip = strtoull(v, NULL, 10);
        else if (strcmp(k, "--partition") == 0)
            partition = strtoull(v, NULL, 10);
        else if (strcmp(k, "--read-mode") == 0 && strcmp(v, "xread") == 0)
            plain = 1;
        else if (strcmp(k, "--read-mode") == 0 && strcmp(v, "group") == 0)
            plain = 0;
        else if (strcmp(k, "--read") == 0)
            read_group = v;
        else if (strcmp(k, "--count") == 0)
            count = strtoull(v, NULL, 10);
        else if (strcmp(k, "--wait") == 0)
            wait_group = v;
        else if (strcmp(k, "--empty") == 0 && n_empty < sizeof empty / sizeof empty[0])
            empty[n_empty++] = v;
        else if (strcmp(k, "--empty") == 0) {
            fprintf(stderr, "sort_xadd: at most %zu --empty keys\n",
                    sizeof empty / sizeof empty[0]);
            return 2;
        } else {
            fprintf(stderr, "sort_xadd: unknown option %s\n", k);
            return 2;
        }
    }
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (pipeline == 0)
        pipeline = pack ? 16 : 1000;
    if (colon && key && wait_group && !read_group && !in && seconds > 0) {
        redisContext *rc = xadd_connect(addr, colon);
        if (!rc)
            return 1;
        struct timeval rt = {5, 0}; /* a stalled Redis ends the wait too */
        redisSetTimeout(rc, rt);
        int st = xadd_wait(rc, key, wait_group, empty, n_empty, seconds);
        redisFree(rc);
        return st;
    }
    if (colon && key && read_group && seconds > 0 && count > 0 && count <= 100000) {
        redisContext *rc = xadd_connect(addr, colon);
        if (!rc)
            return 1;
        int st = xadd_read(rc, key, read_group, limit, seconds, count, plain);
        redisFree(rc);
        return st;
    }
    if (!colon || !key || !in || read_group || wait_group || seconds <= 0 || spread == 0 ||
        spread > XADD_MAX_SPREAD || partition > UINT32_MAX) {
        fprintf(stderr,
                "usage: sort_xadd --redis HOST:PORT --key KEY --in DIR [--records N] "
                "[--seconds S] [--pipeline P] [--pack R [--spread K] [--skip M] "
                "[--partition Q]]\n"
                "       sort_xadd --redis HOST:PORT --key KEY --read GROUP [--records N] "
                "[--seconds S] [--count C]\n"
                "       sort_xadd --redis HOST:PORT --key KEY --wait GROUP [--empty KEY2]... "
                "[--seconds S]\n");
        return 2;
    }
    xadd_packer *pk = NULL;
    if (pack) {
        pk = calloc(1, sizeof *pk);
        if (!pk)
            abort();
        pk->spread = spread;
        pk->per_pack = pack;
        for (size_t i = 0; i < spread; i++) {
            orr_err err;
            orr_pack_builder_init(&pk->b[i], "stream", 6, (uint32_t)partition, &err);
            if (spread > 1)
                pk->b[i].flags = ORR_PACK_F_OFFSETS;
        }
    }
    redisContext *c = xadd_connect(addr, colon);
    if (!c)
        return 1;
    DIR *d = opendir(in);
    if (!d) {
        perror(in);
        return 1;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        names = realloc(names, (nn + 1) * sizeof *names);
        if (!names || !(names[nn] = strdup(de->d_name)))
            abort();
        nn++;
    }
    closedir(d);
    qsort(names, nn, sizeof *names, xadd_cmp);

    double t0 = xadd_now(), deadline = t0 + seconds;
    uint64_t added = 0, inflight = 0, number = 0;
    int rc = 0, timed_out = 0;
    char *line = NULL;
    size_t cap = 0;
    for (size_t f = 0; f < nn && added < limit && !rc && !timed_out; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", in, names[f]);
        FILE *fp = fopen(path, "r");
        if (!fp) {
            perror(path);
            rc = 1;
            break;
        }
        ssize_t len;
        while (added < limit && (len = getline(&line, &cap, fp)) > 0) {
            if (line[len - 1] == '\n')
                len--;
            uint64_t off = number++;
            if (off < skip)
                continue;
            added++;
            if (pk) {
                orr_err err;
                size_t i = xadd_pick(pk, line, (size_t)len);
                if (orr_pack_add(&pk->b[i], off, line, (size_t)len, &err) != ORR_OK) {
                    fprintf(stderr, "sort_xadd: pack: %s: %s\n", err.field, err.msg);
                    rc = 1;
                    break;
                }
                if (pk->b[i].count < pk->per_pack)
                    continue;
                xadd_flush_pack(c, key, pk, i);
            } else {
                redisAppendCommand(c, "XADD %s * r %b", key, line, (size_t)len);
            }
            if (++inflight == pipeline) {
                if (xadd_drain(c, inflight) != 0) {
                    rc = 1;
                    break;
                }
                inflight = 0;
                if (xadd_now() > deadline) {
                    timed_out = 1;
                    break;
                }
            }
        }
        fclose(fp);
    }
    for (size_t i = 0; pk && !rc && i < pk->spread; i++)
        inflight += (uint64_t)xadd_flush_pack(c, key, pk, i);
    if (!rc && inflight && xadd_drain(c, inflight) != 0)
        rc = 1;
    if (pk) {
        for (size_t i = 0; i < pk->spread; i++)
            orr_pack_builder_free(&pk->b[i]);
        orr_buf_free(&pk->enc);
        free(pk);
    }
    double dt = xadd_now() - t0;
    printf("added %" PRIu64 " records in %.2f s: %.0f records/s%s\n", added, dt,
           dt > 0 ? (double)added / dt : 0.0, timed_out ? " (time limit)" : "");
    free(line);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    redisFree(c);
    return rc;
}

/*
 * sort_redis_read_test.c - the Redis source's reads in flight against a
 * real Redis (ORRERY_REDIS=host:port), through its ops as the pipeline
 * calls them. N one-record entries ("e<i>") are on a fresh stream.
 *
 *   1. next and commit alternate: after each read that brought entries the
 *      next read is in flight, so each commit first takes its reply (kept
 *      for the next next()). Every entry comes exactly once, in stream
 *      order, with its value; after the last commit nothing is pending.
 *   2. a source is closed with a read in flight: the entries that read
 *      delivered are in the consumer's pending list, not lost; a new
 *      source of the same consumer reads them first (its pending list),
 *      then the rest: every entry exactly once across the two runs.
 *
 * Each next() is bounded (block_ms 20), each loop by a round count.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sort_ho_it.h"
#include "sort_source.h"
#include "sort_spec.h"

#define N     2300 /* entries */
#define BATCH 100  /* spec.source.batch */

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static sort_spec *read_spec(const char *key, const char *addr)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\":\"rdtest\",\"business\":\"b\","
             "\"source\":{\"type\":\"redis\",\"address\":\"%s\",\"key\":\"%s\","
             "\"group\":\"g\",\"consumer\":\"c1\",\"batch\":%d,\"block_ms\":20},"
             "\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\",\"fields\":[\"id\",\"ts\","
             "\"if\"]},\"interface\":{\"field\":\"if\"},"
             "\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\"},\"bucket\":\"hour\"}",
             addr, key, BATCH);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    sort_spec *spec = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (!doc || sort_spec_parse(doc, "spec", &spec, &err) != ORR_OK) {
        fprintf(stderr, "FAIL: spec: %s %s\n", err.field, err.msg);
        exit(1);
    }
    json_decref(doc);
    return spec;
}

static sort_source *open_src(const sort_spec *spec)
{
    sort_source_env env = {0};
    sort_source *s = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (sort_src_redis.open(spec, &env, &s, &err) != ORR_OK) {
        fprintf(stderr, "FAIL: open: %s %s\n", err.field, err.msg);
        exit(1);
    }
    return s;
}

/* One next(): every entry into seen[] (counted) and checked against its
 * value; the position after the last one into *last. Returns the count. */
static size_t read_once(sort_source *s, sort_batch *b, const sort_off *ids, int *seen,
                        size_t *order, sort_off *last)
{
    orr_err err;
    orr_err_clear(&err);
    sort_batch_reset(b);
    orr_status rc = sort_src_redis.next(s, b, 20, &err);
    CHECK(rc == ORR_OK, "next: %s %s", err.field, err.msg);
    for (size_t k = 0; k < b->n; k++) {
        const sort_entry *e = &b->e[k];
        size_t i = 0;
        while (i < N && sort_off_cmp(ids[i], e->off) != 0)
            i++;
        CHECK(i < N, "entry %" PRIu64 "-%" PRIu64 " was never added", e->off.hi, e->off.lo);
        if (i == N)
            continue;
        char want[32];
        int wl = snprintf(want, sizeof want, "e%zu", i);
        CHECK(e->len == (uint32_t)wl && memcmp(b->data.data + e->pos, want, (size_t)wl) == 0,
              "entry %zu: wrong value", i);
        CHECK(i == *order, "entry %zu came where %zu was due", i, *order);
        *order = i + 1;
        seen[i]++;
        *last = e->next;
    }
    return b->n;
}

static long long pending(redisContext *c, const char *key)
{
    redisReply *r = sort_ho_it_cmd(c, "XPENDING %s g", key);
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : -1;
    freeReplyObject(r);
    return n;
}

static void fill(redisContext *c, const char *key, sort_off *ids)
{
    freeReplyObject(sort_ho_it_cmd(c, "DEL %s", key));
    for (size_t i = 0; i < N; i++) {
        char val[32];
        snprintf(val, sizeof val, "e%zu", i);
        redisReply *r = redisCommand(c, "XADD %s * r %s", key, val);
        unsigned long long ms = 0, seq = 0;
        if (!r || r->type != REDIS_REPLY_STRING || sscanf(r->str, "%llu-%llu", &ms, &seq) != 2) {
            fprintf(stderr, "FAIL: XADD\n");
            exit(1);
        }
        ids[i] = (sort_off){ms, seq};
        freeReplyObject(r);
    }
}

int main(void)
{
    const char *addr = getenv("ORRERY_REDIS");
    if (!addr || !*addr) {
        fprintf(stderr, "FAIL: ORRERY_REDIS is not set\n");
        return 1;
    }
    char key[64];
    snprintf(key, sizeof key, "orr-it-rdread-%d", (int)getpid());
    redisContext *c = sort_ho_it_connect(addr);
    static sort_off ids[N];
    static int seen[N];
    sort_batch b = {0};

    /* 1. next and commit alternate. */
    fill(c, key, ids);
    sort_spec *spec = read_spec(key, addr);
    sort_source *s = open_src(spec);
    size_t order = 0, total = 0;
    sort_off last = {0, 0};
    for (int round = 0; round < 1000 && total < N; round++) {
        total += read_once(s, &b, ids, seen, &order, &last);
        orr_err err;
        orr_err_clear(&err);
        CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    }
    for (int round = 0; round < 5; round++) /* nothing more comes */
        CHECK(read_once(s, &b, ids, seen, &order, &last) == 0, "an entry came twice");
    orr_err err;
    orr_err_clear(&err);
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    for (size_t i = 0; i < N; i++)
        CHECK(seen[i] == 1, "1: entry %zu came %d times", i, seen[i]);
    CHECK(pending(c, key) == 0, "1: %lld entries still pending after the last commit",
          pending(c, key));
    sort_src_redis.close(s);
    sort_spec_free(spec);

    /* 2. closed with a read in flight. */
    memset(seen, 0, sizeof seen);
    fill(c, key, ids);
    spec = read_spec(key, addr);
    s = open_src(spec);
    order = 0;
    total = 0;
    last = (sort_off){0, 0};
    for (int round = 0; round < 3; round++) /* the pending list, then two reads */
        total += read_once(s, &b, ids, seen, &order, &last);
    CHECK(total == 2 * BATCH, "2: first run read %zu entries, not %d", total, 2 * BATCH);
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    /* The commit took the reply of the read in flight: those entries are
     * delivered (pending) but were never put in a batch. */
    CHECK(pending(c, key) == BATCH, "2: %lld pending after the commit, not %d", pending(c, key),
          BATCH);
    sort_src_redis.close(s);
    s = open_src(spec);
    for (int round = 0; round < 1000 && total < N; round++) {
        total += read_once(s, &b, ids, seen, &order, &last);
        CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    }
    for (size_t i = 0; i < N; i++)
        CHECK(seen[i] == 1, "2: entry %zu came %d times", i, seen[i]);
    CHECK(pending(c, key) == 0, "2: %lld still pending", pending(c, key));
    sort_src_redis.close(s);
    sort_spec_free(spec);

    sort_batch_free(&b);
    freeReplyObject(sort_ho_it_cmd(c, "DEL %s", key));
    redisFree(c);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("ok: %d entries exactly once with reads in flight, also across a close\n", N);
    return 0;
}

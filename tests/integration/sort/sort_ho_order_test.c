/*
 * sort_ho_order_test.c - the hand-off sink sends its packs in bucket order
 * (ORRERY_REDIS=host:port). A write stage's data clock moves with the newest
 * record it reads, so a pack of the next hour ahead of the last packs of the
 * hour before makes their records late there. Both orders are made by
 * construction, records read in time order:
 *
 *   1. a full pack: one record of if0 in hour H, then if1 in hour H+1 until
 *      its pack is full (sent at once), then one of if2 in hour H; flush;
 *   2. a flush: 40 units of hour H+1 and 40 of hour H open at once (the
 *      slot order of the flush is the units' hashes), one flush.
 *
 * Every pack in the stream must carry a bucket no older than the one
 * before it, and every record must be there once.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_pack.h"
#include "sort_preroute.h"
#include "sort_sink_handoff.h"
#include "sort_ho_it.h"
#include "sort_spec.h"

#define HOUR_S 1764633600LL
#define WIDE   40 /* units per hour in part 2 */

static uint64_t next_off = 1;
static size_t added;

#define cmd sort_ho_it_cmd

/* One record of iface in the hour starting at hour_s. */
static void add(sort_handoff *h, const char *iface, int64_t hour_s)
{
    char rec[160];
    uint64_t off = next_off++;
    int n =
        snprintf(rec, sizeof rec, "%" PRIu64 "|%" PRId64 "|%s|%080d", off, hour_s * 1000, iface, 0);
    orr_err err;
    orr_err_clear(&err);
    orr_status rc = sort_handoff_add(h, iface, strlen(iface), hour_s, hour_s * 1000 + 1, 0,
                                     (sort_off){0, off}, rec, (size_t)n, &err);
    CHECK(rc == ORR_OK, "add: %s", err.msg);
    sort_handoff_advance(h, 0, (sort_off){0, off + 1});
    added++;
}

static long long xlen(redisContext *c, const char *stream)
{
    redisReply *r = cmd(c, "XLEN %s", stream);
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return n;
}

/* Every pack's bucket, in stream order, never older than the one before. */
static size_t check_order(redisContext *c, const char *stream, const char *part)
{
    redisReply *all = cmd(c, "XRANGE %s - +", stream);
    orr_buf scratch = ORR_BUF_INIT;
    int64_t prev = INT64_MIN;
    size_t records = 0;
    for (size_t e = 0; all->type == REDIS_REPLY_ARRAY && e < all->elements; e++) {
        redisReply *fv = all->element[e]->element[1];
        orr_pack_view v;
        orr_err err;
        orr_err_clear(&err);
        size_t il;
        int64_t bucket;
        if (orr_pack_decode(fv->element[1]->str, fv->element[1]->len, &scratch, &v, &err) !=
                ORR_OK ||
            sort_preroute_key(v.key, v.key_len, &il, &bucket) != 0) {
            CHECK(0, "%s: entry %zu is no routed pack", part, e);
            continue;
        }
        CHECK(bucket >= prev, "%s: pack %zu (%.*s) sent after a pack of bucket %" PRId64, part, e,
              (int)v.key_len, v.key, prev);
        if (bucket > prev)
            prev = bucket;
        records += v.count;
    }
    freeReplyObject(all);
    orr_buf_free(&scratch);
    return records;
}

int main(void)
{
    const char *addr = getenv("ORRERY_REDIS");
    if (!addr || !strchr(addr, ':')) {
        fprintf(stderr, "FAIL: ORRERY_REDIS is not set\n");
        return 1;
    }
    char key[128], stream[160];
    snprintf(key, sizeof key, "orr-it-hoorder-%d", (int)getpid());
    snprintf(stream, sizeof stream, "%s.0", key);
    sort_spec *spec = sort_ho_it_spec("hoorder", key, addr);
    orr_err err;
    orr_err_clear(&err);
    redisContext *ctl = sort_ho_it_connect(addr);
    freeReplyObject(cmd(ctl, "DEL %s", stream));
    sort_source src = {&sort_ho_it_plain_ops};
    sort_handoff *h = NULL;
    if (sort_handoff_open(spec, NULL, &src, NULL, &h, &err) != ORR_OK) {
        fprintf(stderr, "FAIL: open: %s\n", err.msg);
        return 1;
    }

    /* 1. a full pack of hour H+1 while if0's pack of hour H is open */
    add(h, "if0", HOUR_S);
    for (int i = 0; i < 1000 && sort_handoff_in_flight(h) == 0; i++)
        add(h, "if1", HOUR_S + 3600);
    CHECK(sort_handoff_in_flight(h) > 0, "if1's pack never filled");
    CHECK(sort_handoff_flush(h, &err) == ORR_OK, "flush: %s", err.msg);
    CHECK(xlen(ctl, stream) >= 2, "%lld packs, want if0's and if1's", xlen(ctl, stream));
    check_order(ctl, stream, "full pack");

    /* 2. one flush of units of two hours, read in time order */
    for (int u = 0; u < WIDE; u++) {
        char iface[16];
        snprintf(iface, sizeof iface, "ifa%d", u);
        add(h, iface, HOUR_S + 2 * 3600);
    }
    for (int u = 0; u < WIDE; u++) {
        char iface[16];
        snprintf(iface, sizeof iface, "ifb%d", u);
        add(h, iface, HOUR_S + 3 * 3600);
    }
    CHECK(sort_handoff_flush(h, &err) == ORR_OK, "flush: %s", err.msg);
    size_t got = check_order(ctl, stream, "flush");
    CHECK(got == added, "%zu records in the stream, want %zu", got, added);

    sort_handoff_close(h);
    freeReplyObject(cmd(ctl, "DEL %s", stream));
    redisFree(ctl);
    sort_spec_free(spec);
    if (sort_ho_it_failures) {
        fprintf(stderr, "%d check(s) failed\n", sort_ho_it_failures);
        return 1;
    }
    printf("ok: %zu records, packs in bucket order\n", added);
    return 0;
}

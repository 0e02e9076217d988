/*
 * sort_ho_window_test.c - the hand-off sink's XADDs in flight against a real
 * Redis (ORRERY_REDIS=host:port). Replies are held back by construction: a
 * second connection pauses every write (CLIENT PAUSE ... WRITE) before the
 * packs are sent, so no XADD can have been answered when the checks run.
 *
 *   1. paused: three flushes go out without waiting (flush_async); packs
 *      are in flight and no position is safe, polling changes nothing;
 *   2. unpaused: a blocking flush reads every reply; the last position is
 *      safe; the stream holds every record exactly once, in its unit's
 *      pack (key "iface@bucket"), with its offset and data time;
 *   3. paused again, more packs in flight, then the hand-off's connection
 *      is killed: the flush fails, the safe position stays where it was
 *      (the source replays from there: nothing is lost), and every later
 *      call refuses (nothing more becomes safe).
 *   4. the pack codec: with "pack_codec": "auto" (the default) a sink sends
 *      Snappy while no write stage says it reads LZ4 (part 2) and LZ4 once
 *      the stream's LZ4 key is set, as a write stage sets it; "snappy" and
 *      "lz4" send their codec whatever the key says. The records are the
 *      same in either.
 *   5. while a sink runs with "auto": its stream's LZ4 key appears (a write
 *      stage starts reading LZ4) and the sink's packs turn LZ4; the key
 *      expires (a write stage stopped without a word) and they turn Snappy
 *      again. Each turn is waited for pack by pack, up to a bound far above
 *      the sink's once-a-second look; every record lands once, and the
 *      stream holds Snappy, then LZ4, then Snappy, never mixed back.
 *   6. EXISTS refused: Redis's default user (the sink's) loses EXISTS, so
 *      every look at the LZ4 key is refused while the key is there. The
 *      packs stay Snappy and every record lands while Redis's ACL log
 *      counts at least two refused looks (the one at open and a later one);
 *      once EXISTS is allowed again the packs turn LZ4 on the same
 *      connection. `sort_ho_window_test --restore-acl` gives the default
 *      user EXISTS back (a ctest cleanup, run even if this test crashed).
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "orr_clock.h"
#include "orr_pack.h"
#include "sort_sink_handoff.h"
#include "sort_ho_it.h"
#include "sort_spec.h"

#define UNITS  3
#define PER    40 /* records per unit and round */
#define ROUNDS 3
#define HOUR_S 1764633600LL

#define cmd sort_ho_it_cmd

#define TURN_MS 15000 /* part 5: the longest wait for a codec to turn (the sink looks each 1 s) */

/* Part 5: one record into hs and a flush, until the stream's newest pack is
 * in LZ4 (want_lz4) or not, at most TURN_MS; *off counts the records sent.
 * Returns whether the codec turned. */
static int send_until_codec(sort_handoff *hs, redisContext *ctl, const char *stream, int want_lz4,
                            uint64_t *off, orr_buf *scratch)
{
    int64_t end = orr_clock_ms(CLOCK_MONOTONIC) + TURN_MS;
    while (orr_clock_ms(CLOCK_MONOTONIC) < end) {
        orr_err err;
        orr_err_clear(&err);
        uint64_t o = (*off)++;
        CHECK(sort_handoff_add(hs, "if2", 3, HOUR_S, HOUR_S * 1000, 0, (sort_off){0, o}, "turn", 4,
                               &err) == ORR_OK,
              "add: %s", err.msg);
        sort_handoff_advance(hs, 0, (sort_off){0, o + 1});
        if (sort_handoff_flush(hs, &err) != ORR_OK) {
            CHECK(0, "flush: %s", err.msg);
            return 0;
        }
        redisReply *last = cmd(ctl, "XREVRANGE %s + - COUNT 1", stream);
        int lz4 = -1;
        if (last->type == REDIS_REPLY_ARRAY && last->elements == 1) {
            redisReply *fv = last->element[0]->element[1];
            orr_pack_view v;
            if (orr_pack_decode(fv->element[1]->str, fv->element[1]->len, scratch, &v, &err) ==
                ORR_OK)
                lz4 = (v.flags & ORR_PACK_F_LZ4) != 0;
        }
        freeReplyObject(last);
        CHECK(lz4 >= 0, "the newest pack of %s cannot be read", stream);
        if (lz4 < 0)
            return 0;
        if (lz4 == want_lz4)
            return 1;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return 0;
}

/* Parts 5 and 6: the stream holds the records first..sent-1 ("turn"), each
 * once and in order, in want_runs runs of packs of one codec, the last run
 * LZ4 (want_last 1) or Snappy (0). */
static void check_turns(redisContext *ctl, const char *stream, uint64_t first, uint64_t sent,
                        int want_runs, int want_last, orr_buf *scratch, const char *part)
{
    redisReply *sp = cmd(ctl, "XRANGE %s - +", stream);
    int runs = 0, prev = -1;
    uint64_t next = first;
    for (size_t e = 0; sp->type == REDIS_REPLY_ARRAY && e < sp->elements; e++) {
        redisReply *fv = sp->element[e]->element[1];
        orr_pack_view v;
        orr_err err;
        orr_err_clear(&err);
        if (orr_pack_decode(fv->element[1]->str, fv->element[1]->len, scratch, &v, &err) !=
            ORR_OK) {
            CHECK(0, "%s, entry %zu: %s", part, e, err.msg);
            continue;
        }
        int lz4 = (v.flags & ORR_PACK_F_LZ4) != 0;
        runs += lz4 != prev;
        prev = lz4;
        orr_pack_iter it;
        orr_pack_iter_init(&it, &v);
        uint64_t o;
        int64_t t;
        const void *rec;
        size_t rl;
        while (orr_pack_next_timed(&it, &o, &t, &rec, &rl)) {
            CHECK(o == next && rl == 4 && memcmp(rec, "turn", 4) == 0,
                  "%s: record %" PRIu64 " where %" PRIu64 " was due", part, o, next);
            next = o + 1;
        }
    }
    freeReplyObject(sp);
    CHECK(runs == want_runs && prev == want_last,
          "%s: %d runs of one codec ending in %s, want %d ending in %s", part, runs,
          prev ? "LZ4" : "Snappy", want_runs, want_last ? "LZ4" : "Snappy");
    CHECK(next == sent, "%s: %" PRIu64 " records landed, %" PRIu64 " sent", part, next - first,
          sent - first);
}

/* Part 6: how many EXISTS Redis's ACL log holds as refused (the sum of its
 * entries' counts), or -1 when the log cannot be read. */
static long long acl_exists_refusals(redisContext *ctl)
{
    redisReply *log = cmd(ctl, "ACL LOG", NULL);
    long long n = log->type == REDIS_REPLY_ARRAY ? 0 : -1;
    for (size_t e = 0; n >= 0 && e < log->elements; e++) {
        redisReply *en = log->element[e];
        long long count = 0;
        int exists = 0;
        for (size_t f = 0; en->type == REDIS_REPLY_ARRAY && f + 1 < en->elements; f += 2) {
            const char *name = en->element[f]->str, *val = en->element[f + 1]->str;
            if (!name)
                continue;
            if (strcmp(name, "count") == 0 && en->element[f + 1]->type == REDIS_REPLY_INTEGER)
                count = en->element[f + 1]->integer;
            else if (strcmp(name, "object") == 0 && val && strcasecmp(val, "exists") == 0)
                exists = 1;
        }
        n += exists ? count : 0;
    }
    freeReplyObject(log);
    return n;
}

/* The default user gets EXISTS back; 0 when Redis said OK. */
static int restore_acl(redisContext *ctl)
{
    redisReply *r = cmd(ctl, "ACL SETUSER default +exists", NULL);
    int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    freeReplyObject(r);
    return ok ? 0 : 1;
}

/* Part 6 at exit (an exit from sort_ho_it_cmd on a lost connection, run
 * outside ctest's cleanup): the default user gets EXISTS back, on a
 * connection of its own made before EXISTS was taken, if part 6 took it
 * and has not given it back. */
static redisContext *g_acl_ctl;
static int g_acl_taken;
static void restore_acl_at_exit(void)
{
    if (g_acl_taken) {
        redisReply *r = redisCommand(g_acl_ctl, "ACL SETUSER default +exists");
        if (!r)
            fprintf(stderr, "FAIL: the default user's EXISTS could not be given back\n");
        freeReplyObject(r);
    }
    redisFree(g_acl_ctl);
}

/* The record of unit u, round r, number i: "id|ts|iface"; its offset. */
static uint64_t rec_off(int r, int i, int u)
{
    return (uint64_t)((r * PER + i) * UNITS + u) * 10 + 5;
}

static int64_t rec_time_ms(int r, int i, int u)
{
    return (HOUR_S + u * 3600LL) * 1000 + (r * PER + i) * 997;
}

static void add_round(sort_handoff *h, int r)
{
    for (int i = 0; i < PER; i++)
        for (int u = 0; u < UNITS; u++) {
            char iface[16], rec[64];
            snprintf(iface, sizeof iface, "if%d", u);
            uint64_t off = rec_off(r, i, u);
            int n = snprintf(rec, sizeof rec, "%" PRIu64 "|x|%s", off, iface);
            orr_err err;
            orr_err_clear(&err);
            sort_off so = {0, off};
            orr_status rc = sort_handoff_add(h, iface, strlen(iface), HOUR_S + u * 3600LL,
                                             rec_time_ms(r, i, u), 0, so, rec, (size_t)n, &err);
            CHECK(rc == ORR_OK, "add: %s", err.msg);
            sort_handoff_advance(h, 0, (sort_off){0, off + 1});
        }
}

int main(int argc, char **argv)
{
    const char *addr = getenv("ORRERY_REDIS");
    if (!addr || !strchr(addr, ':')) {
        fprintf(stderr, "FAIL: ORRERY_REDIS is not set\n");
        return 1;
    }
    if (argc == 2 && strcmp(argv[1], "--restore-acl") == 0) {
        redisContext *c = sort_ho_it_connect(addr);
        int rc = restore_acl(c);
        redisFree(c);
        if (rc)
            fprintf(stderr, "FAIL: ACL SETUSER default +exists was refused\n");
        return rc;
    }
    char key[128], stream[160];
    snprintf(key, sizeof key, "orr-it-howin-%d", (int)getpid());
    snprintf(stream, sizeof stream, "%s.0", key);
    sort_spec *spec = sort_ho_it_spec("howin", key, addr);
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

    /* 1. writes paused: flushes go out, nothing is answered */
    freeReplyObject(cmd(ctl, "CLIENT PAUSE 60000 WRITE", NULL));
    sort_off safe;
    for (int r = 0; r < ROUNDS; r++) {
        add_round(h, r);
        CHECK(sort_handoff_flush_async(h, &err) == ORR_OK, "flush_async: %s", err.msg);
        CHECK(sort_handoff_poll(h, &err) == ORR_OK, "poll: %s", err.msg);
    }
    size_t inflight = sort_handoff_in_flight(h);
    CHECK(inflight >= (size_t)(UNITS * ROUNDS), "in flight %zu, want >= %d", inflight,
          UNITS * ROUNDS);
    CHECK(!sort_handoff_safe(h, 0, &safe), "a position is safe while every XADD is held back");
    redisReply *len = cmd(ctl, "XLEN %s", stream);
    CHECK(len->type == REDIS_REPLY_INTEGER && len->integer == 0, "stream holds %lld entries",
          len->integer);
    freeReplyObject(len);

    /* 2. released: every reply read, everything safe, each record once */
    freeReplyObject(cmd(ctl, "CLIENT UNPAUSE", NULL));
    CHECK(sort_handoff_flush(h, &err) == ORR_OK, "flush: %s", err.msg);
    CHECK(sort_handoff_in_flight(h) == 0, "replies left after flush");
    uint64_t last = rec_off(ROUNDS - 1, PER - 1, UNITS - 1) + 1;
    CHECK(sort_handoff_safe(h, 0, &safe) && safe.hi == 0 && safe.lo == last,
          "safe %" PRIu64 ", want %" PRIu64, safe.lo, last);
    static uint8_t seen[ROUNDS * PER * UNITS];
    redisReply *all = cmd(ctl, "XRANGE %s - +", stream);
    orr_buf scratch = ORR_BUF_INIT;
    size_t total = 0;
    for (size_t e = 0; all->type == REDIS_REPLY_ARRAY && e < all->elements; e++) {
        redisReply *fv = all->element[e]->element[1];
        orr_pack_view v;
        if (orr_pack_decode(fv->element[1]->str, fv->element[1]->len, &scratch, &v, &err) !=
            ORR_OK) {
            CHECK(0, "entry %zu: %s", e, err.msg);
            continue;
        }
        CHECK(v.flags & ORR_PACK_F_TIMES, "a pack without times");
        CHECK(!(v.flags & ORR_PACK_F_LZ4), "a pack in LZ4 with no write stage reading LZ4");
        orr_pack_iter it;
        orr_pack_iter_init(&it, &v);
        uint64_t off;
        int64_t t;
        const void *rec;
        size_t rl;
        while (orr_pack_next_timed(&it, &off, &t, &rec, &rl)) {
            uint64_t k = (off - 5) / 10;
            int u = (int)(k % UNITS), ri = (int)(k / UNITS);
            char want_key[64];
            snprintf(want_key, sizeof want_key, "if%d@%lld", u, HOUR_S + u * 3600LL);
            CHECK(k < sizeof seen && (off - 5) % 10 == 0, "offset %" PRIu64, off);
            if (k >= sizeof seen)
                continue;
            CHECK(!seen[k], "record %" PRIu64 " twice", off);
            seen[k] = 1;
            total++;
            CHECK(v.key_len == strlen(want_key) && memcmp(v.key, want_key, v.key_len) == 0,
                  "record %" PRIu64 " in pack %.*s", off, (int)v.key_len, v.key);
            CHECK(t == rec_time_ms(ri / PER, ri % PER, u), "record %" PRIu64 " time %" PRId64, off,
                  t);
        }
    }
    freeReplyObject(all);
    CHECK(total == sizeof seen, "%zu records in the stream, want %zu", total, sizeof seen);

    /* 3. in flight when the connection dies: nothing more becomes safe */
    freeReplyObject(cmd(ctl, "CLIENT PAUSE 60000 WRITE", NULL));
    for (int i = 0; i < PER; i++) {
        orr_err_clear(&err);
        uint64_t off = last + 10 + (uint64_t)i;
        sort_handoff_add(h, "if0", 3, HOUR_S, HOUR_S * 1000, 0, (sort_off){0, off}, "r", 1, &err);
        sort_handoff_advance(h, 0, (sort_off){0, off + 1});
    }
    CHECK(sort_handoff_flush_async(h, &err) == ORR_OK, "flush_async: %s", err.msg);
    CHECK(sort_handoff_in_flight(h) > 0, "nothing in flight");
    freeReplyObject(cmd(ctl, "CLIENT KILL TYPE normal SKIPME yes", NULL));
    freeReplyObject(cmd(ctl, "CLIENT UNPAUSE", NULL));
    orr_err_clear(&err);
    CHECK(sort_handoff_flush(h, &err) != ORR_OK, "flush after the connection died succeeded");
    CHECK(sort_handoff_safe(h, 0, &safe) && safe.lo == last,
          "safe moved to %" PRIu64 " past the packs in flight", safe.lo);
    orr_err_clear(&err);
    CHECK(sort_handoff_add(h, "if0", 3, HOUR_S, HOUR_S * 1000, 0, (sort_off){0, last + 100}, "r", 1,
                           &err) == ORR_EIO,
          "add after a lost pack was taken");

    sort_handoff_close(h);
    freeReplyObject(cmd(ctl, "DEL %s", stream));

    /* 4. the codec each setting sends, with and without the LZ4 key */
    char lzkey[200];
    snprintf(lzkey, sizeof lzkey, "%s%s", stream, SORT_HANDOFF_LZ4_SUFFIX);
    static const struct {
        int codec, key, lz4;
    } cases[] = {
        {SORT_CODEC_AUTO, 1, 1},
        {SORT_CODEC_AUTO, 0, 0},
        {SORT_CODEC_SNAPPY, 1, 0},
        {SORT_CODEC_LZ4, 0, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].key)
            freeReplyObject(cmd(ctl, "SET %s 1 PX 60000", lzkey));
        else
            freeReplyObject(cmd(ctl, "DEL %s", lzkey));
        spec->sinks.ho_codec = cases[k].codec;
        sort_handoff *hs = NULL;
        orr_err_clear(&err);
        CHECK(sort_handoff_open(spec, NULL, &src, NULL, &hs, &err) == ORR_OK, "open: %s", err.msg);
        size_t got = 0, packs = 0;
        if (hs) {
            for (int i = 0; i < PER; i++)
                sort_handoff_add(hs, "if1", 3, HOUR_S, HOUR_S * 1000 + i, 0,
                                 (sort_off){0, 7 + (uint64_t)i}, "codec-record", 12, &err);
            sort_handoff_advance(hs, 0, (sort_off){0, 7 + PER});
            CHECK(sort_handoff_flush(hs, &err) == ORR_OK, "flush: %s", err.msg);
            redisReply *sp = cmd(ctl, "XRANGE %s - +", stream);
            for (size_t e = 0; sp->type == REDIS_REPLY_ARRAY && e < sp->elements; e++) {
                redisReply *fv = sp->element[e]->element[1];
                orr_pack_view v;
                if (orr_pack_decode(fv->element[1]->str, fv->element[1]->len, &scratch, &v, &err) !=
                    ORR_OK) {
                    CHECK(0, "case %zu, entry %zu: %s", k, e, err.msg);
                    continue;
                }
                packs++;
                CHECK(!(v.flags & ORR_PACK_F_LZ4) == !cases[k].lz4, "case %zu: a pack %s LZ4", k,
                      cases[k].lz4 ? "not in" : "in");
                orr_pack_iter it;
                orr_pack_iter_init(&it, &v);
                const void *rec;
                size_t rl;
                while (orr_pack_next(&it, &rec, &rl)) {
                    CHECK(rl == 12 && memcmp(rec, "codec-record", 12) == 0, "record changed");
                    got++;
                }
            }
            freeReplyObject(sp);
            sort_handoff_close(hs);
        }
        CHECK(packs > 0 && got == PER, "case %zu: %zu records in %zu packs, want %d", k, got, packs,
              PER);
        freeReplyObject(cmd(ctl, "DEL %s", stream));
    }

    /* 5. the key appears and expires while the sink runs */
    freeReplyObject(cmd(ctl, "DEL %s", lzkey));
    spec->sinks.ho_codec = SORT_CODEC_AUTO;
    sort_handoff *ht = NULL;
    orr_err_clear(&err);
    CHECK(sort_handoff_open(spec, NULL, &src, NULL, &ht, &err) == ORR_OK, "open: %s", err.msg);
    if (ht) {
        uint64_t off = 1000;
        CHECK(send_until_codec(ht, ctl, stream, 0, &off, &scratch) && off == 1001,
              "auto without a key: the first pack is not Snappy");
        freeReplyObject(cmd(ctl, "SET %s 1 PX 60000", lzkey));
        CHECK(send_until_codec(ht, ctl, stream, 1, &off, &scratch),
              "the LZ4 key appeared and the packs stayed Snappy for %d ms", TURN_MS);
        freeReplyObject(cmd(ctl, "PEXPIRE %s 1", lzkey));
        CHECK(send_until_codec(ht, ctl, stream, 0, &off, &scratch),
              "the LZ4 key expired and the packs stayed LZ4 for %d ms", TURN_MS);
        sort_handoff_close(ht);
        /* Snappy, then LZ4, then Snappy: three runs of one codec each */
        check_turns(ctl, stream, 1000, off, 3, 0, &scratch, "part 5");
        freeReplyObject(cmd(ctl, "DEL %s", stream));
    }

    /* 6. EXISTS refused while the key is there: Snappy, until it is allowed */
    freeReplyObject(cmd(ctl, "SET %s 1 PX 60000", lzkey));
    freeReplyObject(cmd(ctl, "ACL LOG RESET", NULL));
    g_acl_ctl = sort_ho_it_connect(addr);
    g_acl_taken = 1;
    atexit(restore_acl_at_exit);
    redisReply *deny = cmd(ctl, "ACL SETUSER default -exists", NULL);
    CHECK(deny->type == REDIS_REPLY_STATUS, "ACL SETUSER default -exists: %s", deny->str);
    freeReplyObject(deny);
    sort_handoff *ha = NULL;
    orr_err_clear(&err);
    CHECK(sort_handoff_open(spec, NULL, &src, NULL, &ha, &err) == ORR_OK, "open: %s", err.msg);
    if (ha) {
        uint64_t off = 2000;
        long long refused = 0;
        int64_t end = orr_clock_ms(CLOCK_MONOTONIC) + TURN_MS;
        while ((refused = acl_exists_refusals(ctl)) < 2 && orr_clock_ms(CLOCK_MONOTONIC) < end) {
            if (!send_until_codec(ha, ctl, stream, 0, &off, &scratch))
                break;
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); /* a pack each 20 ms */
        }
        CHECK(refused >= 2, "part 6: %lld refused EXISTS in the ACL log after %d ms, want 2",
              refused, TURN_MS);
        CHECK(restore_acl(ctl) == 0, "ACL SETUSER default +exists was refused");
        g_acl_taken = 0;
        CHECK(send_until_codec(ha, ctl, stream, 1, &off, &scratch),
              "EXISTS allowed again and the packs stayed Snappy for %d ms", TURN_MS);
        sort_handoff_close(ha);
        /* Snappy while refused, then LZ4: two runs of one codec each */
        check_turns(ctl, stream, 2000, off, 2, 1, &scratch, "part 6");
        freeReplyObject(cmd(ctl, "DEL %s", stream));
    } else {
        restore_acl(ctl);
        g_acl_taken = 0;
    }
    freeReplyObject(cmd(ctl, "DEL %s", lzkey));
    redisFree(ctl);
    orr_buf_free(&scratch);
    sort_spec_free(spec);
    if (sort_ho_it_failures) {
        fprintf(stderr, "%d check(s) failed\n", sort_ho_it_failures);
        return 1;
    }
    printf("ok: %zu records in flight and landed once; a lost connection keeps them unsafe\n",
           total);
    return 0;
}

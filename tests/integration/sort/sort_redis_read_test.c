/*
 * sort_redis_read_test.c - the Redis source's reads in flight against a
 * real Redis (ORRERY_REDIS=host:port), through its ops as the pipeline
 * calls them. N one-record entries ("e<i>") are on a fresh stream.
 *
 *   1. next and commit alternate: after each read that brought entries the
 *      next read is in flight while the commit goes on the source's commit
 *      connection. Every entry comes exactly once, in stream order, with
 *      its value; after the last commit nothing is pending.
 *   2. a source is closed with a read in flight: the entries that read
 *      delivered are in the consumer's pending list, not lost; a new
 *      source of the same consumer reads them first (its pending list),
 *      then the rest: every entry exactly once across the two runs.
 *   3. the reply of a read in flight is lost with its connection, after
 *      Redis served it: through a proxy of this test that forwards the
 *      second ">" read, then holds Redis's bytes until that read's entries
 *      are in the consumer's pending list (XPENDING, by construction), and
 *      then closes both sides. The source must read them again from its
 *      pending list after it reconnects: every entry exactly once, in
 *      order, nothing pending after the last commit.
 *   4. a commit acknowledges exactly the entries below its position: N4
 *      entries read without a commit, then a commit in the middle leaves
 *      exactly the rest pending, from that entry on. After a restart, 100
 *      of those deleted while pending (XDEL: the replay brings them without
 *      a field) are acknowledged with the others by the last commit, which
 *      names 8,200 ids: more than the source's XACKs in flight hold (8 of
 *      1,000 ids, RD_ACK_WINDOW and RD_ACK_CHUNK in src_redis.c).
 *   5. ids that arrive below a position already committed are
 *      acknowledged by the source as they come, and no others: after a
 *      restart the first commit names entry 4050's position while only
 *      100 entries were read (sortd's pipeline never commits ahead of its
 *      reads; the source's contract allows it), the rest of the replay
 *      then leaves exactly the entries from 4050 on pending, though one
 *      read of 100 brings entries on both sides of it, with no further
 *      commit (the pipeline commits a position only once), and a last
 *      commit clears them.
 *   6. spec.source.commit "position": the group keeps one position. An
 *      acknowledging source leaves entries pending (two reads, closed
 *      with a third in flight); a position source then starts at the
 *      lowest pending entry, its reads leave the pending list as it is,
 *      and its commit at entry 1000 moves the group's last-delivered id
 *      there and, being past every pending entry, empties the pending
 *      list. The next run starts at entry 1000; its connections (through
 *      a proxy of this test) are cut with a read in flight, and the group is
 *      deleted before its last commit, which makes it again at the
 *      position. Every entry comes exactly once, in order, across the
 *      runs; nothing is pending at the end. Last, the key is deleted and
 *      a commit makes it again with the group at its position.
 *
 * Each next() is bounded (block_ms 20), each loop by a round count.
 */
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sort_ho_it.h"
#include "sort_source.h"
#include "sort_spec.h"

#define N     2300 /* entries */
#define BATCH 100  /* spec.source.batch */

static sort_spec *read_spec(const char *key, const char *addr, const char *commit)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\":\"rdtest\",\"business\":\"b\","
             "\"source\":{\"type\":\"redis\",\"address\":\"%s\",\"key\":\"%s\","
             "\"group\":\"g\",\"consumer\":\"c1\",\"batch\":%d,\"block_ms\":20,"
             "\"commit\":\"%s\"},"
             "\"format\":{\"type\":\"delimited\",\"delimiter\":\"|\",\"fields\":[\"id\",\"ts\","
             "\"if\"]},\"interface\":{\"field\":\"if\"},"
             "\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\"},\"bucket\":\"hour\"}",
             addr, key, BATCH, commit);
    return sort_ho_it_parse(text);
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

/* The entries of batch b into seen[] (counted) and checked against their
 * values and order; the position after the last one into *last. */
static void take(const sort_batch *b, const sort_off *ids, int *seen, size_t *order, sort_off *last)
{
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
}

/* One next(), its entries taken (take). Returns the count. */
static size_t read_once(sort_source *s, sort_batch *b, const sort_off *ids, int *seen,
                        size_t *order, sort_off *last)
{
    orr_err err;
    orr_err_clear(&err);
    sort_batch_reset(b);
    orr_status rc = sort_src_redis.next(s, b, 20, &err);
    CHECK(rc == ORR_OK, "next: %s %s", err.field, err.msg);
    take(b, ids, seen, order, last);
    return b->n;
}

/* The group's last-delivered id into *out; 0 when there is no group. */
static int group_last(redisContext *c, const char *key, sort_off *out)
{
    redisReply *r = sort_ho_it_cmd(c, "XINFO GROUPS %s", key);
    int ok = 0;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *g = r->element[i];
        for (size_t k = 0; g->type == REDIS_REPLY_ARRAY && k + 1 < g->elements; k += 2) {
            unsigned long long ms = 0, seq = 0;
            if (g->element[k]->type == REDIS_REPLY_STRING &&
                strcmp(g->element[k]->str, "last-delivered-id") == 0 &&
                sscanf(g->element[k + 1]->str, "%llu-%llu", &ms, &seq) == 2) {
                *out = (sort_off){ms, seq};
                ok = 1;
            }
        }
    }
    freeReplyObject(r);
    return ok;
}

static long long pending(redisContext *c, const char *key)
{
    redisReply *r = sort_ho_it_cmd(c, "XPENDING %s g", key);
    long long n = r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : -1;
    freeReplyObject(r);
    return n;
}

/* The lowest id of the group's pending list into *min; 0 when it is empty. */
static int pending_min(redisContext *c, const char *key, sort_off *min)
{
    redisReply *r = sort_ho_it_cmd(c, "XPENDING %s g", key);
    unsigned long long ms = 0, seq = 0;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements > 1 &&
             r->element[1]->type == REDIS_REPLY_STRING &&
             sscanf(r->element[1]->str, "%llu-%llu", &ms, &seq) == 2;
    freeReplyObject(r);
    *min = (sort_off){ms, seq};
    return ok;
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

/* The proxy of case 3: each client (the source's reading connection and
 * its commit connection) gets its own connection to Redis at up_port. The
 * client that forwarded the hold_at-th ">" XREADGROUP stops reading Redis's
 * side; when told to drop, it closes both sides, forwarding nothing more.
 * Other clients, and later ones, are served normally. */
typedef struct proxy {
    int lfd, port, up_port;
    char up_host[64];
    atomic_int hold_at, reads, drop, stop, conns;
    atomic_int cut, cut_closed; /* case 6: close the connections made before cut rose */
    pthread_t th;
} proxy;

typedef struct px_conn {
    proxy *p;
    int cfd, gen;
} px_conn;

static int px_connect_up(proxy *p)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->up_port)};
    inet_pton(AF_INET, p->up_host, &sa.sin_addr);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void *px_conn_main(void *arg)
{
    px_conn *pc = arg;
    proxy *p = pc->p;
    int cfd = pc->cfd, ufd = px_connect_up(p), holding = 0, gen = pc->gen;
    free(pc);
    static _Thread_local char buf[65536];
    while (cfd >= 0 && ufd >= 0 && !atomic_load(&p->stop) && !(holding && atomic_load(&p->drop))) {
        if (atomic_load(&p->cut) != gen) {
            atomic_fetch_add(&p->cut_closed, 1);
            break;
        }
        struct pollfd fds[2] = {{cfd, POLLIN, 0}, {ufd, holding ? 0 : POLLIN, 0}};
        if (poll(fds, 2, 20) <= 0)
            continue;
        if (fds[0].revents) {
            ssize_t n = read(cfd, buf, sizeof buf);
            if (n <= 0 || write(ufd, buf, (size_t)n) != n)
                break;
            if (memmem(buf, (size_t)n, "XREADGROUP", 10) &&
                memmem(buf, (size_t)n, "\r\n$1\r\n>\r\n", 9) &&
                atomic_fetch_add(&p->reads, 1) + 1 == atomic_load(&p->hold_at))
                holding = 1;
        }
        if (fds[1].revents) {
            ssize_t n = read(ufd, buf, sizeof buf);
            if (n <= 0 || write(cfd, buf, (size_t)n) != n)
                break;
        }
    }
    if (cfd >= 0)
        close(cfd);
    if (ufd >= 0)
        close(ufd);
    if (holding) {
        atomic_store(&p->hold_at, 0);
        atomic_store(&p->drop, 0);
    }
    atomic_fetch_sub(&p->conns, 1);
    return NULL;
}

static void *px_main(void *arg)
{
    proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd lp = {p->lfd, POLLIN, 0};
        if (poll(&lp, 1, 50) <= 0)
            continue;
        int cfd = accept(p->lfd, NULL, NULL);
        if (cfd < 0)
            continue;
        px_conn *pc = malloc(sizeof *pc);
        pc->p = p;
        pc->cfd = cfd;
        pc->gen = atomic_load(&p->cut);
        pthread_t th;
        atomic_fetch_add(&p->conns, 1);
        if (pthread_create(&th, NULL, px_conn_main, pc) != 0) {
            atomic_fetch_sub(&p->conns, 1);
            close(cfd);
            free(pc);
            continue;
        }
        pthread_detach(th);
    }
    for (int i = 0; i < 500 && atomic_load(&p->conns) > 0; i++)
        usleep(10000); /* the clients' threads end on stop */
    return NULL;
}

static void px_start(proxy *p, const char *addr)
{
    const char *colon = strrchr(addr, ':');
    snprintf(p->up_host, sizeof p->up_host, "%.*s", (int)(colon - addr), addr);
    if (strcmp(p->up_host, "localhost") == 0)
        snprintf(p->up_host, sizeof p->up_host, "127.0.0.1");
    p->up_port = atoi(colon + 1);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(p->lfd, 4) != 0 || getsockname(p->lfd, (struct sockaddr *)&sa, &sl) != 0) {
        fprintf(stderr, "FAIL: proxy listen\n");
        exit(1);
    }
    p->port = ntohs(sa.sin_port);
    pthread_create(&p->th, NULL, px_main, p);
}

#define N4 9700 /* case 4: more ids than one commit's XACKs in flight hold */

/* Case 4's stream: N4 entries, added in one pipeline; their ids in ids4. */
static void fill4(redisContext *c, const char *key, sort_off *ids4)
{
    freeReplyObject(sort_ho_it_cmd(c, "DEL %s", key));
    for (size_t i = 0; i < N4; i++)
        redisAppendCommand(c, "XADD %s * r x%d", key, (int)i);
    for (size_t i = 0; i < N4; i++) {
        redisReply *r = NULL;
        unsigned long long ms = 0, seq = 0;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r || r->type != REDIS_REPLY_STRING ||
            sscanf(r->str, "%llu-%llu", &ms, &seq) != 2) {
            fprintf(stderr, "FAIL: XADD (case 4)\n");
            exit(1);
        }
        ids4[i] = (sort_off){ms, seq};
        freeReplyObject(r);
    }
}

/* Case 4's reads: until `want` entries came or a read brings none after
 * them; the position after the last into *last. Returns the count. */
static size_t read_all(sort_source *s, sort_batch *b, size_t want, sort_off *last)
{
    size_t got = 0;
    for (int round = 0; round < 1000; round++) {
        orr_err err;
        orr_err_clear(&err);
        sort_batch_reset(b);
        CHECK(sort_src_redis.next(s, b, 20, &err) == ORR_OK, "4: next: %s", err.msg);
        if (b->n == 0 && got >= want)
            break;
        for (size_t k = 0; k < b->n; k++)
            *last = b->e[k].next;
        got += b->n;
    }
    return got;
}

int main(void)
{
    const char *addr = getenv("ORRERY_REDIS");
    if (!addr || !*addr) {
        fprintf(stderr, "FAIL: ORRERY_REDIS is not set\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN); /* as in sortd: a killed connection is an error, not a signal */
    char key[64];
    snprintf(key, sizeof key, "orr-it-rdread-%d", (int)getpid());
    redisContext *c = sort_ho_it_connect(addr);
    static sort_off ids[N];
    static int seen[N];
    sort_batch b = {0};

    /* 1. next and commit alternate. */
    fill(c, key, ids);
    sort_spec *spec = read_spec(key, addr, "ack");
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
    spec = read_spec(key, addr, "ack");
    s = open_src(spec);
    order = 0;
    total = 0;
    last = (sort_off){0, 0};
    for (int round = 0; round < 3; round++) /* the pending list, then two reads */
        total += read_once(s, &b, ids, seen, &order, &last);
    CHECK(total == 2 * BATCH, "2: first run read %zu entries, not %d", total, 2 * BATCH);
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    /* Once Redis has served the read in flight (the commit, on a connection
     * of its own, does not wait for it), its entries are delivered
     * (pending) but were never put in a batch. */
    long long pend2 = 0;
    for (int round = 0; round < 1000 && (pend2 = pending(c, key)) < BATCH; round++)
        usleep(10000);
    CHECK(pend2 == BATCH, "2: %lld pending after the commit, not %d", pend2, BATCH);
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

    /* 3. the reply of a read in flight lost after Redis served it. */
    memset(seen, 0, sizeof seen);
    fill(c, key, ids);
    static proxy px;
    px_start(&px, addr);
    char paddr[64];
    snprintf(paddr, sizeof paddr, "127.0.0.1:%d", px.port);
    atomic_store(&px.hold_at, 2); /* the read sent in flight after the first ">" */
    spec = read_spec(key, paddr, "ack");
    s = open_src(spec);
    order = 0;
    total = 0;
    last = (sort_off){0, 0};
    for (int round = 0; round < 2; round++) /* the pending list, then one read */
        total += read_once(s, &b, ids, seen, &order, &last);
    CHECK(total == BATCH, "3: first reads brought %zu entries, not %d", total, BATCH);
    long long pend = 0;
    for (int round = 0; round < 1000 && (pend = pending(c, key)) < 2 * BATCH; round++)
        usleep(10000); /* until Redis has served the read in flight */
    CHECK(pend == 2 * BATCH, "3: %lld pending, not %d: the read in flight was not served", pend,
          2 * BATCH);
    atomic_store(&px.drop, 1);
    sort_batch_reset(&b);
    orr_err_clear(&err);
    CHECK(sort_src_redis.next(s, &b, 20, &err) == ORR_EUNAVAIL && b.n == 0,
          "3: the lost reply was not reported as a lost connection");
    for (int round = 0; round < 1000 && total < N; round++) {
        total += read_once(s, &b, ids, seen, &order, &last);
        CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    }
    for (int round = 0; round < 3; round++)
        CHECK(read_once(s, &b, ids, seen, &order, &last) == 0, "3: an entry came twice");
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    for (size_t i = 0; i < N; i++)
        CHECK(seen[i] == 1, "3: entry %zu came %d times", i, seen[i]);
    CHECK(pending(c, key) == 0, "3: %lld still pending", pending(c, key));
    sort_src_redis.close(s);
    sort_spec_free(spec);
    atomic_store(&px.stop, 1);
    pthread_join(px.th, NULL);
    close(px.lfd);

    /* 4. a commit acknowledges exactly what lies below its position. */
    static sort_off ids4[N4];
    fill4(c, key, ids4);
    spec = read_spec(key, addr, "ack");
    s = open_src(spec);
    last = (sort_off){0, 0};
    total = read_all(s, &b, N4, &last);
    CHECK(total == N4, "4: read %zu entries, not %d", total, N4);
    CHECK(pending(c, key) == N4, "4: %lld pending before any commit", pending(c, key));
    CHECK(sort_src_redis.commit(s, 0, ids4[1500], &err) == ORR_OK, "commit: %s", err.msg);
    CHECK(pending(c, key) == N4 - 1500, "4: %lld pending after a commit below entry 1500, not %d",
          pending(c, key), N4 - 1500);
    sort_off pmin;
    CHECK(pending_min(c, key, &pmin) && sort_off_cmp(pmin, ids4[1500]) == 0,
          "4: the pending list does not start at entry 1500");
    sort_src_redis.close(s);
    /* Deleted after open: its XAUTOCLAIM would take ids of deleted entries
     * out of the pending list itself (Redis 7). */
    s = open_src(spec);
    for (size_t i = 1600; i < 1700; i++)
        freeReplyObject(
            redisCommand(c, "XDEL %s %" PRIu64 "-%" PRIu64, key, ids4[i].hi, ids4[i].lo));
    total = read_all(s, &b, N4 - 1500 - 100, &last);
    CHECK(total == N4 - 1500 - 100, "4: the replay brought %zu entries, not %d", total,
          N4 - 1500 - 100);
    CHECK(sort_off_cmp(last, (sort_off){ids4[N4 - 1].hi, ids4[N4 - 1].lo + 1}) == 0,
          "4: the replay did not end with the last entry");
    CHECK(pending(c, key) == N4 - 1500, "4: %lld pending before the last commit", pending(c, key));
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    CHECK(pending(c, key) == 0, "4: %lld still pending after the last commit", pending(c, key));
    sort_src_redis.close(s);

    /* 5. a replay below the committed position is acknowledged as it comes. */
    fill4(c, key, ids4);
    s = open_src(spec);
    total = read_all(s, &b, N4, &last);
    CHECK(total == N4, "5: read %zu entries, not %d", total, N4);
    sort_src_redis.close(s);
    s = open_src(spec);
    sort_batch_reset(&b);
    orr_err_clear(&err);
    CHECK(sort_src_redis.next(s, &b, 20, &err) == ORR_OK && b.n == BATCH,
          "5: the replay's first read brought %zu entries, not %d", b.n, BATCH);
    CHECK(sort_src_redis.commit(s, 0, ids4[4050], &err) == ORR_OK, "commit: %s", err.msg);
    CHECK(pending(c, key) == N4 - BATCH, "5: %lld pending after the first commit, not %d",
          pending(c, key), N4 - BATCH);
    total = read_all(s, &b, N4 - BATCH, &last);
    CHECK(total == N4 - BATCH, "5: the replay brought %zu more entries, not %d", total, N4 - BATCH);
    CHECK(pending(c, key) == N4 - 4050, "5: %lld pending after the replay, not %d", pending(c, key),
          N4 - 4050);
    CHECK(pending_min(c, key, &pmin) && sort_off_cmp(pmin, ids4[4050]) == 0,
          "5: the pending list does not start at entry 4050");
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    CHECK(pending(c, key) == 0, "5: %lld still pending after the last commit", pending(c, key));
    sort_src_redis.close(s);
    sort_spec_free(spec);

    /* 6. commit "position": the group keeps one position. */
    fill(c, key, ids);
    spec = read_spec(key, addr, "ack");
    s = open_src(spec);
    memset(seen, 0, sizeof seen);
    order = 0;
    for (int round = 0; round < 3; round++) /* the pending list, then two reads */
        read_once(s, &b, ids, seen, &order, &last);
    sort_src_redis.close(s);
    sort_spec_free(spec);
    long long pend6 = pending(c, key);
    CHECK(pend6 >= 2 * BATCH, "6: %lld pending after the acknowledging run", pend6);
    memset(seen, 0, sizeof seen); /* delivered, never landed: due again */
    order = 0;
    total = 0;
    static proxy px6;
    px_start(&px6, addr);
    snprintf(paddr, sizeof paddr, "127.0.0.1:%d", px6.port);
    spec = read_spec(key, paddr, "position");
    s = open_src(spec);
    for (int round = 0; round < 1000 && total < 1000; round++)
        total += read_once(s, &b, ids, seen, &order, &last);
    CHECK(total == 1000, "6: the first position run read %zu entries, not 1000", total);
    CHECK(pending(c, key) == pend6, "6: position reads changed the pending list (%lld, not %lld)",
          pending(c, key), pend6);
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    sort_off gl = {0, 0};
    CHECK(group_last(c, key, &gl) && sort_off_cmp(gl, ids[999]) == 0,
          "6: the group's position is not entry 999 after the commit");
    CHECK(pending(c, key) == 0, "6: %lld still pending after a commit past them", pending(c, key));
    sort_src_redis.close(s);
    s = open_src(spec);
    for (int round = 0; round < 1000 && total < 1500; round++) {
        total += read_once(s, &b, ids, seen, &order, &last);
        CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "commit: %s", err.msg);
    }
    /* The first run's connections are gone once only this run's two are left. */
    for (int round = 0; round < 1000 && atomic_load(&px6.conns) != 2; round++)
        usleep(10000);
    CHECK(atomic_load(&px6.conns) == 2, "6: %d connections through the proxy, not 2",
          atomic_load(&px6.conns));
    atomic_fetch_add(&px6.cut, 1); /* the proxy closes both of the source's connections */
    for (int round = 0; round < 1000 && atomic_load(&px6.cut_closed) < 2; round++)
        usleep(10000);
    CHECK(atomic_load(&px6.cut_closed) == 2, "6: %d of the source's 2 connections were cut",
          atomic_load(&px6.cut_closed));
    int lost = 0, clost = 0, destroyed = 0;
    for (int round = 0; round < 1000 && total < N; round++) {
        sort_batch_reset(&b);
        orr_err_clear(&err);
        orr_status rc = sort_src_redis.next(s, &b, 20, &err);
        CHECK(rc == ORR_OK || (rc == ORR_EUNAVAIL && !lost++), "6: next: %s", err.msg);
        take(&b, ids, seen, &order, &last);
        total += b.n;
        if (total == N && !destroyed++)
            freeReplyObject(sort_ho_it_cmd(c, "XGROUP DESTROY %s g", key));
        orr_err_clear(&err);
        rc = sort_src_redis.commit(s, 0, last, &err);
        CHECK(rc == ORR_OK || (rc == ORR_EUNAVAIL && !clost++), "6: commit: %s", err.msg);
    }
    CHECK(sort_src_redis.commit(s, 0, last, &err) == ORR_OK, "6: commit: %s", err.msg);
    CHECK(destroyed == 1, "6: the position run read %zu entries, not %d", total, N);
    for (int round = 0; round < 3; round++)
        CHECK(read_once(s, &b, ids, seen, &order, &last) == 0, "6: an entry came twice");
    for (size_t i = 0; i < N; i++)
        CHECK(seen[i] == 1, "6: entry %zu came %d times", i, seen[i]);
    CHECK(group_last(c, key, &gl) && sort_off_cmp(gl, ids[N - 1]) == 0,
          "6: the group made again is not at the last entry");
    CHECK(pending(c, key) == 0, "6: %lld pending at the end", pending(c, key));
    /* The whole key deleted: a commit makes it again, with the group at
     * the position. */
    freeReplyObject(sort_ho_it_cmd(c, "DEL %s", key));
    sort_off past = {ids[N - 1].hi, ids[N - 1].lo + 2};
    orr_err_clear(&err);
    CHECK(sort_src_redis.commit(s, 0, past, &err) == ORR_OK, "6: commit after DEL: %s", err.msg);
    CHECK(group_last(c, key, &gl) && gl.hi == past.hi && gl.lo == past.lo - 1,
          "6: the group made again after DEL is not at the committed position");
    sort_src_redis.close(s);
    sort_spec_free(spec);
    atomic_store(&px6.stop, 1);
    pthread_join(px6.th, NULL);
    close(px6.lfd);

    sort_batch_free(&b);
    freeReplyObject(sort_ho_it_cmd(c, "DEL %s", key));
    redisFree(c);
    if (sort_ho_it_failures) {
        fprintf(stderr, "%d check(s) failed\n", sort_ho_it_failures);
        return 1;
    }
    printf("ok: %d entries exactly once with reads in flight, across a close and a lost reply;"
           " commits acknowledge exactly what lies below them; a position resumes where it was\n",
           N);
    return 0;
}

/*
 * it_zk.c - lib/orr_zk and orr_zk_elect against the real ZooKeeper of the
 * test stack (ORRERY_ZK; unset is a failure, never a skip).
 *
 * Every wait is for an event the test caused (a listener's report, a
 * probe's answer) with a generous deadline that only a broken client
 * reaches; nothing sleeps and hopes. All nodes live under a root of their
 * own, /orrery-it-zk-<pid>-<time>, removed at the end.
 *
 *   1. nodes: put, read, list, versions (compare-and-set), mkdirs, errors;
 *   2. watches: creation, change, children, deletion each reach the
 *      listener; the reader style (orr_zk_get_watch) notifies too;
 *   3. ephemeral: a node of session A vanishes when A closes (B sees the
 *      deletion); orr_zk_claim by a new life replaces the old one's node;
 *   4. election: two contenders, exactly one leader; the other takes over
 *      when the leader's session ends; a renewed session joins again
 *      behind, with a new epoch only when it leads again;
 *   5. fencing: a probe of a live session is answered, so the session is
 *      safe for about T from its send time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_arena.h"
#include "orr_buf.h"
#include "orr_zk.h"
#include "orr_zk_elect.h"

#define DEADLINE_MS 20000

static int failures;
static char root[128];

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* What one client's listener saw. */
typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    orr_zk_event ev[256];
    char path[256][256];
    int notified; /* orr_zk_get_watch's fn */
} seen;

static void seen_init(seen *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static void seen_listener(void *ctx, orr_zk_event ev, const char *path)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (s->n < 256) {
        s->ev[s->n] = ev;
        snprintf(s->path[s->n], sizeof s->path[0], "%s", path ? path : "");
        s->n++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void seen_notify(void *ctx)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->notified++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static struct timespec deadline(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += DEADLINE_MS / 1000;
    return ts;
}

/* Wait until the listener reported ev for path (NULL: any path) at index
 * >= from; returns 1 if it did before the deadline. */
static int seen_wait(seen *s, int from, orr_zk_event ev, const char *path)
{
    struct timespec until = deadline();
    pthread_mutex_lock(&s->mu);
    for (;;) {
        for (int i = from; i < s->n; i++)
            if (s->ev[i] == ev && (!path || strcmp(s->path[i], path) == 0)) {
                pthread_mutex_unlock(&s->mu);
                return 1;
            }
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static int seen_mark(seen *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static orr_zk *connect_zk(const char *hosts, seen *s, int manual)
{
    orr_zk_opts o = {.session_ms = 6000,
                     .wait_ms = 10000,
                     .manual_renew = manual,
                     .on_event = s ? seen_listener : NULL,
                     .ctx = s};
    orr_zk *zk;
    orr_err err;
    orr_status rc = orr_zk_start(hosts, &o, &zk, &err);
    CHECK(rc == ORR_OK, "start: %s", err.msg);
    rc = orr_zk_wait(zk, DEADLINE_MS, &err);
    CHECK(rc == ORR_OK, "connect: %s", err.msg);
    return zk;
}

static const char *P(orr_arena *a, const char *rel)
{
    return orr_arena_sprintf(a, "%s%s", root, rel);
}

static void test_nodes(orr_zk *zk, orr_arena *a)
{
    orr_err err;
    orr_buf b = ORR_BUF_INIT;
    orr_zk_stat st;
    CHECK(orr_zk_mkdirs(zk, P(a, "/n/deep/er"), &err) == ORR_OK, "mkdirs: %s", err.msg);
    CHECK(orr_zk_mkdirs(zk, P(a, "/n/deep/er"), &err) == ORR_OK, "mkdirs again: %s", err.msg);
    CHECK(orr_zk_put(zk, P(a, "/n/p/q"), "v1", 2, &err) == ORR_OK, "put: %s", err.msg);
    CHECK(orr_zk_put(zk, P(a, "/n/p/q"), "v2!", 3, &err) == ORR_OK, "put again: %s", err.msg);
    CHECK(orr_zk_read(zk, P(a, "/n/p/q"), 0, &b, &st, &err) == ORR_OK, "read: %s", err.msg);
    CHECK(b.len == 3 && memcmp(b.data, "v2!", 3) == 0, "read gave %.*s", (int)b.len, b.data);
    CHECK(st.owner == 0 && st.version == 1, "stat owner %llx version %d",
          (unsigned long long)st.owner, st.version);
    /* compare-and-set on the version */
    CHECK(orr_zk_set(zk, P(a, "/n/p/q"), "x", 1, 0, &err) == ORR_ECONFLICT, "stale set: %s",
          err.msg);
    CHECK(orr_zk_set(zk, P(a, "/n/p/q"), "v3", 2, 1, &err) == ORR_OK, "set: %s", err.msg);
    CHECK(orr_zk_create(zk, P(a, "/n/p/q"), "y", 1, 0, NULL, NULL, &err) == ORR_EEXIST,
          "create twice");
    CHECK(orr_zk_create(zk, P(a, "/n/none/q"), "y", 1, 0, NULL, NULL, &err) == ORR_ENOTFOUND,
          "create without parent");
    orr_buf_reset(&b);
    CHECK(orr_zk_get(zk, P(a, "/n/p/missing"), &b, &err) == ORR_ENOTFOUND, "read missing");
    CHECK(orr_zk_delete(zk, P(a, "/n/p"), -1, &err) == ORR_ESTATE, "delete with children");
    /* a large node: more than the first read guess */
    size_t big = 200 * 1024;
    char *data = malloc(big);
    memset(data, 'z', big);
    CHECK(orr_zk_put(zk, P(a, "/n/big"), data, big, &err) == ORR_OK, "put big: %s", err.msg);
    orr_buf_reset(&b);
    CHECK(orr_zk_get(zk, P(a, "/n/big"), &b, &err) == ORR_OK && b.len == big &&
              memcmp(b.data, data, big) == 0,
          "big read: %zu bytes", b.len);
    free(data);
    char **names;
    size_t n;
    CHECK(orr_zk_children(zk, P(a, "/n"), a, &names, &n, &err) == ORR_OK && n == 3,
          "children of /n: %zu", n);
    orr_buf_free(&b);
}

static void test_watches(orr_zk *za, orr_zk *zb, seen *sb, orr_arena *a)
{
    orr_err err;
    orr_buf b = ORR_BUF_INIT;
    const char *w = P(a, "/w/node");
    CHECK(orr_zk_mkdirs(za, P(a, "/w"), &err) == ORR_OK, "mkdirs: %s", err.msg);
    /* missing node: the watch reports its creation */
    int m = seen_mark(sb);
    CHECK(orr_zk_read(zb, w, 1, &b, NULL, &err) == ORR_ENOTFOUND, "watched read of nothing");
    CHECK(orr_zk_create(za, w, "1", 1, 0, NULL, NULL, &err) == ORR_OK, "create: %s", err.msg);
    CHECK(seen_wait(sb, m, ORR_ZK_CREATED, w), "no creation event for %s", w);
    /* change */
    m = seen_mark(sb);
    CHECK(orr_zk_read(zb, w, 1, &b, NULL, &err) == ORR_OK, "watched read: %s", err.msg);
    CHECK(orr_zk_set(za, w, "2", 1, -1, &err) == ORR_OK, "set: %s", err.msg);
    CHECK(seen_wait(sb, m, ORR_ZK_CHANGED, w), "no change event");
    /* children */
    m = seen_mark(sb);
    char **names;
    size_t n;
    CHECK(orr_zk_list(zb, P(a, "/w"), 1, a, &names, &n, &err) == ORR_OK && n == 1, "list");
    CHECK(orr_zk_create(za, P(a, "/w/other"), NULL, 0, 0, NULL, NULL, &err) == ORR_OK, "create");
    CHECK(seen_wait(sb, m, ORR_ZK_CHILDREN, P(a, "/w")), "no children event");
    /* deletion, seen through exists */
    m = seen_mark(sb);
    CHECK(orr_zk_exists(zb, w, 1, NULL, &err) == ORR_OK, "exists: %s", err.msg);
    CHECK(orr_zk_delete(za, w, -1, &err) == ORR_OK, "delete: %s", err.msg);
    CHECK(seen_wait(sb, m, ORR_ZK_DELETED, w), "no deletion event");
    /* the reader style: fn(ctx) once the node changes */
    CHECK(orr_zk_put(za, w, "3", 1, &err) == ORR_OK, "put: %s", err.msg);
    pthread_mutex_lock(&sb->mu);
    int before = sb->notified;
    pthread_mutex_unlock(&sb->mu);
    orr_buf_reset(&b);
    CHECK(orr_zk_get_watch(zb, w, &b, seen_notify, sb, &err) == ORR_OK && b.len == 1, "get_watch");
    CHECK(orr_zk_put(za, w, "4", 1, &err) == ORR_OK, "put: %s", err.msg);
    struct timespec until = deadline();
    pthread_mutex_lock(&sb->mu);
    while (sb->notified == before)
        if (pthread_cond_timedwait(&sb->cv, &sb->mu, &until) != 0)
            break;
    CHECK(sb->notified > before, "orr_zk_get_watch did not notify");
    pthread_mutex_unlock(&sb->mu);
    orr_buf_free(&b);
}

static void test_ephemeral(const char *hosts, orr_zk *zb, seen *sb, orr_arena *a)
{
    orr_err err;
    orr_zk_stat st;
    const char *e = P(a, "/e/node");
    orr_zk *za = connect_zk(hosts, NULL, 0);
    CHECK(orr_zk_mkdirs(za, P(a, "/e"), &err) == ORR_OK, "mkdirs: %s", err.msg);
    CHECK(orr_zk_create(za, e, "a", 1, ORR_ZK_EPHEMERAL, NULL, NULL, &err) == ORR_OK, "create: %s",
          err.msg);
    CHECK(orr_zk_exists(zb, e, 1, &st, &err) == ORR_OK, "exists: %s", err.msg);
    CHECK(st.owner == orr_zk_session_id(za) && st.owner != 0, "owner %llx, session %llx",
          (unsigned long long)st.owner, (unsigned long long)orr_zk_session_id(za));
    int m = seen_mark(sb);
    orr_zk_close(za); /* the node goes with the session */
    CHECK(seen_wait(sb, m, ORR_ZK_DELETED, e), "ephemeral node outlived its session");
    CHECK(orr_zk_exists(zb, e, 0, NULL, &err) == ORR_ENOTFOUND, "ephemeral node still there");

    /* claim: a former life's node (session still alive) is replaced */
    const char *c = P(a, "/e/claimed/ex-1");
    orr_zk *old = connect_zk(hosts, NULL, 0);
    orr_zk *now = connect_zk(hosts, NULL, 0);
    CHECK(orr_zk_claim(old, c, "old", 3, &err) == ORR_OK, "claim: %s", err.msg);
    CHECK(orr_zk_claim(old, c, "old2", 4, &err) == ORR_OK, "claim own: %s", err.msg);
    CHECK(orr_zk_claim(now, c, "new", 3, &err) == ORR_OK, "claim over: %s", err.msg);
    orr_buf b = ORR_BUF_INIT;
    CHECK(orr_zk_read(zb, c, 0, &b, &st, &err) == ORR_OK && b.len == 3 &&
              memcmp(b.data, "new", 3) == 0 && st.owner == orr_zk_session_id(now),
          "claimed node not the new life's");
    orr_buf_free(&b);
    orr_zk_close(old);
    CHECK(orr_zk_exists(zb, c, 0, NULL, &err) == ORR_OK, "the old life's close took the node");
    orr_zk_close(now);
}

/* One contender: its own session, listener and election. */
typedef struct contender {
    orr_zk *zk;
    seen s;
    orr_zk_elect *el;
} contender;

static void contender_start(contender *c, const char *hosts, const char *dir, const char *id)
{
    orr_err err;
    seen_init(&c->s);
    c->zk = connect_zk(hosts, &c->s, 1);
    CHECK(orr_zk_elect_new(c->zk, dir, id, NULL, NULL, &c->el, &err) == ORR_OK, "elect: %s",
          err.msg);
    CHECK(orr_zk_elect_step(c->el, &err) == ORR_OK, "step %s: %s", id, err.msg);
}

static void test_election(const char *hosts, orr_arena *a)
{
    orr_err err;
    const char *dir = P(a, "/kepler/election");
    contender c1, c2;
    contender_start(&c1, hosts, dir, "k1");
    contender_start(&c2, hosts, dir, "k2");
    /* c1 joined first: it leads, c2 stands by watching it */
    CHECK(orr_zk_elect_epoch(c1.el) == 1, "k1 epoch %llu",
          (unsigned long long)orr_zk_elect_epoch(c1.el));
    CHECK(orr_zk_elect_epoch(c2.el) == 0, "k2 leads too");
    char n1[256], n2[256];
    orr_zk_elect_node(c1.el, n1, sizeof n1);
    orr_zk_elect_node(c2.el, n2, sizeof n2);
    CHECK(strncmp(n1, dir, strlen(dir)) == 0 && strcmp(n1, n2) < 0, "nodes %s %s", n1, n2);
    orr_buf b = ORR_BUF_INIT;
    CHECK(orr_zk_read(c2.zk, n1, 0, &b, NULL, &err) == ORR_OK && b.len == 2 &&
              memcmp(b.data, "k1", 2) == 0,
          "leader node data");
    orr_buf_free(&b);
    /* more steps change nothing */
    CHECK(orr_zk_elect_step(c1.el, &err) == ORR_OK && orr_zk_elect_step(c2.el, &err) == ORR_OK,
          "steps");
    CHECK(orr_zk_elect_epoch(c1.el) == 1 && orr_zk_elect_epoch(c2.el) == 0, "steady");

    /* the leader's session ends: c2's watch on it fires, and c2 leads */
    int m = seen_mark(&c2.s);
    orr_zk_elect_free(c1.el);
    orr_zk_close(c1.zk);
    CHECK(seen_wait(&c2.s, m, ORR_ZK_DELETED, n1), "k2 was not told the leader went");
    CHECK(orr_zk_elect_step(c2.el, &err) == ORR_OK, "step: %s", err.msg);
    CHECK(orr_zk_elect_epoch(c2.el) == 1, "k2 did not take over");

    /* k1 comes back: it queues behind k2 */
    contender_start(&c1, hosts, dir, "k1");
    CHECK(orr_zk_elect_epoch(c1.el) == 0 && orr_zk_elect_epoch(c2.el) == 1, "k1 back in front");

    /* the leader's session is renewed (as after an expiry): it is not
     * leader from that instant, its old node is gone, and k1 takes over */
    m = seen_mark(&c1.s);
    orr_zk_elect_node(c2.el, n2, sizeof n2);
    CHECK(orr_zk_renew(c2.zk, &err) == ORR_OK, "renew: %s", err.msg);
    CHECK(orr_zk_elect_epoch(c2.el) == 0, "leader through a new session");
    CHECK(seen_wait(&c1.s, m, ORR_ZK_DELETED, n2), "k1 was not told the leader went");
    CHECK(orr_zk_elect_step(c1.el, &err) == ORR_OK, "step: %s", err.msg);
    CHECK(orr_zk_elect_epoch(c1.el) == 1, "k1 did not take over");
    CHECK(orr_zk_wait(c2.zk, DEADLINE_MS, &err) == ORR_OK, "reconnect: %s", err.msg);
    CHECK(orr_zk_elect_step(c2.el, &err) == ORR_OK, "step: %s", err.msg);
    char again[256];
    orr_zk_elect_node(c2.el, again, sizeof again);
    CHECK(again[0] && strcmp(again, n2) != 0, "k2 did not join again (%s)", again);
    CHECK(orr_zk_elect_epoch(c2.el) == 0 && orr_zk_elect_epoch(c1.el) == 1, "two leaders");

    /* leaving hands over at once; the next leadership is a new epoch */
    m = seen_mark(&c2.s);
    orr_zk_elect_leave(c1.el);
    CHECK(orr_zk_elect_epoch(c1.el) == 0, "leader after leaving");
    CHECK(seen_wait(&c2.s, m, ORR_ZK_DELETED, NULL), "k2 not told");
    CHECK(orr_zk_elect_step(c2.el, &err) == ORR_OK && orr_zk_elect_epoch(c2.el) == 2,
          "k2 epoch %llu", (unsigned long long)orr_zk_elect_epoch(c2.el));
    orr_zk_elect_free(c1.el);
    orr_zk_elect_free(c2.el);
    orr_zk_close(c1.zk);
    orr_zk_close(c2.zk);
}

static void test_fencing(orr_zk *zk)
{
    int t = 0;
    int64_t sent = orr_zk_now_ms();
    CHECK(orr_zk_safe_until(zk, &t) == 0 || t > 0, "timeout");
    /* probes go out at most every T/8; keep asking until one is answered */
    int64_t until = 0, stop = sent + DEADLINE_MS;
    while ((until = orr_zk_safe_until(zk, &t)) == 0 && orr_zk_now_ms() < stop) {
        orr_zk_probe(zk);
        usleep(10000);
    }
    CHECK(until > 0, "no probe answered");
    CHECK(t == 6000, "negotiated timeout %d", t);
    CHECK(until >= sent + t - t / 4 && until <= orr_zk_now_ms() + t - t / 4,
          "safe until %lld, sent %lld", (long long)until, (long long)sent);
}

/* Delete root and everything under it. */
static void remove_tree(orr_zk *zk, const char *path)
{
    orr_arena *a = orr_arena_create(4096);
    orr_err err;
    char **kids;
    size_t n;
    if (orr_zk_children(zk, path, a, &kids, &n, &err) == ORR_OK)
        for (size_t i = 0; i < n; i++)
            remove_tree(zk, orr_zk_path_join(a, path, kids[i]));
    orr_zk_delete(zk, path, -1, &err);
    orr_arena_destroy(a);
}

int main(void)
{
    const char *hosts = getenv("ORRERY_ZK");
    if (!hosts || !*hosts) {
        fprintf(stderr, "ORRERY_ZK is not set: start the stack (deploy/stack.sh start) and "
                        "export its env\n");
        return 1;
    }
    snprintf(root, sizeof root, "/orrery-it-zk-%d-%lld", (int)getpid(), (long long)time(NULL));
    orr_arena *a = orr_arena_create(16384);
    seen sb;
    seen_init(&sb);
    orr_zk *za = connect_zk(hosts, NULL, 0);
    orr_zk *zb = connect_zk(hosts, &sb, 0);
    CHECK(orr_zk_connected(za) && orr_zk_session_id(za) != orr_zk_session_id(zb), "sessions");
    test_nodes(za, a);
    test_watches(za, zb, &sb, a);
    test_ephemeral(hosts, zb, &sb, a);
    test_election(hosts, a);
    test_fencing(za);
    remove_tree(za, root);
    orr_err err;
    CHECK(orr_zk_exists(za, root, 0, NULL, &err) == ORR_ENOTFOUND, "root left behind");
    orr_zk_close(za);
    orr_zk_close(zb);
    orr_arena_destroy(a);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("it_zk: all checks passed\n");
    return 0;
}

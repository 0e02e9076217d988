/*
 * hl_events.c - LISTEN thread, cache invalidation and event retention.
 */
#include "hl_events.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_log.h"

struct hl_events {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t seq;
    _Atomic int listening;
    _Atomic int stop;
    char *dsn;
    int64_t retention_ms;
    hl_cache *cache;
    int wake[2];                  /* pipe: hl_events_committed -> thread */
    _Atomic int notify_pending;   /* a byte is in the pipe / a NOTIFY is due */
    _Atomic int_least64_t max_id; /* highest id reported committed */
};

static int64_t hl__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hl_events_parse_payload(const char *payload, int64_t *id, char *kind, size_t kind_size,
                            int64_t *task_id)
{
    if (!payload || kind_size == 0)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(payload, &end, 10);
    if (errno || end == payload || *end != ' ' || v <= 0)
        return -1;
    const char *k = end + 1;
    const char *sp = strchr(k, ' ');
    size_t klen = sp ? (size_t)(sp - k) : strlen(k);
    if (klen == 0 || klen >= kind_size)
        return -1;
    memcpy(kind, k, klen);
    kind[klen] = 0;
    *id = v;
    *task_id = 0;
    if (sp && sp[1]) {
        long long t = strtoll(sp + 1, &end, 10);
        if (*end != 0 || t < 0)
            return -1;
        *task_id = t;
    }
    return 0;
}

static void hl__bump(hl_events *ev)
{
    pthread_mutex_lock(&ev->mu);
    ev->seq++;
    pthread_cond_broadcast(&ev->cv);
    pthread_mutex_unlock(&ev->mu);
}

static void hl__set_listening(hl_events *ev, int on)
{
    if (atomic_exchange(&ev->listening, on) == on)
        return;
    if (ev->cache)
        hl_cache_set_enabled(ev->cache, on);
    if (on)
        ORR_INFO("listening for events", "channel=orrery_events");
    else
        ORR_WARN("event listener lost its connection", "retry_ms=%d", 1000);
    hl__bump(ev);
}

static void hl__prune(hl_events *ev, PGconn *pg)
{
    if (ev->retention_ms <= 0)
        return;
    char ms[32];
    snprintf(ms, sizeof ms, "%" PRId64, ev->retention_ms);
    const char *params[1] = {ms};
    PGresult *r = PQexecParams(
        pg,
        "WITH d AS (DELETE FROM events WHERE created_at < clock_timestamp() - $1::int8 * "
        "interval '1 millisecond' RETURNING id) "
        "UPDATE event_horizon SET pruned_upto = greatest(pruned_upto, "
        "(SELECT coalesce(max(id), 0) FROM d)) RETURNING pruned_upto",
        1, NULL, params, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        ORR_WARN("event retention failed", "err=%s", orr_log_q(PQerrorMessage(pg)));
    PQclear(r);
}

/* Send the coalesced NOTIFY for events committed by this process. */
static void hl__notify_peers(hl_events *ev, PGconn *pg, int64_t *last_ms)
{
    char drain[64];
    while (read(ev->wake[0], drain, sizeof drain) > 0)
        ;
    int64_t wait = *last_ms + HL_EVENTS_NOTIFY_MS - hl__mono_ms();
    if (wait > 0)
        nanosleep(&(struct timespec){0, (long)wait * 1000000L}, NULL);
    atomic_store(&ev->notify_pending, 0); /* later commits schedule another */
    char payload[64];
    snprintf(payload, sizeof payload, "%" PRId64 " instance.batch 0",
             (int64_t)atomic_load(&ev->max_id));
    const char *params[1] = {payload};
    PGresult *r =
        PQexecParams(pg, "SELECT pg_notify('orrery_events', $1)", 1, NULL, params, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        ORR_WARN("event notify failed", "err=%s", orr_log_q(PQerrorMessage(pg)));
    PQclear(r);
    *last_ms = hl__mono_ms();
}

static void *hl__run(void *arg)
{
    hl_events *ev = arg;
    PGconn *pg = NULL;
    int64_t next_prune = 0, last_notify = 0;
    while (!atomic_load(&ev->stop)) {
        if (!pg || PQstatus(pg) != CONNECTION_OK) {
            if (pg)
                PQfinish(pg);
            const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
            const char *vals[] = {ev->dsn, "3", "halleyd-listen", NULL};
            pg = PQconnectdbParams(keys, vals, 1);
            PGresult *r = NULL;
            if (PQstatus(pg) == CONNECTION_OK)
                r = PQexec(pg, "LISTEN orrery_events");
            if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
                PQclear(r);
                PQfinish(pg);
                pg = NULL;
                hl__set_listening(ev, 0);
                for (int i = 0; i < 10 && !atomic_load(&ev->stop); i++)
                    nanosleep(&(struct timespec){0, 100000000L}, NULL);
                continue;
            }
            PQclear(r);
            hl__set_listening(ev, 1);
            hl__bump(ev); /* readers re-read: notifications may have been missed */
        }
        if (hl__mono_ms() >= next_prune) {
            hl__prune(ev, pg);
            next_prune = hl__mono_ms() + 60000;
        }
        struct pollfd p[2] = {{.fd = PQsocket(pg), .events = POLLIN},
                              {.fd = ev->wake[0], .events = POLLIN}};
        int pr = poll(p, 2, 200);
        if (pr < 0 && errno != EINTR)
            continue;
        if (pr > 0 && (p[1].revents & POLLIN))
            hl__notify_peers(ev, pg, &last_notify);
        if (pr > 0 && !PQconsumeInput(pg)) {
            hl__set_listening(ev, 0);
            continue;
        }
        PGnotify *n;
        int any = 0;
        while ((n = PQnotifies(pg)) != NULL) {
            int64_t id, task_id;
            char kind[64];
            if (ev->cache &&
                hl_events_parse_payload(n->extra, &id, kind, sizeof kind, &task_id) == 0 &&
                strncmp(kind, "task.", 5) == 0 && task_id > 0)
                hl_cache_invalidate(ev->cache, task_id);
            PQfreemem(n);
            any = 1;
        }
        if (any)
            hl__bump(ev);
        if (PQstatus(pg) != CONNECTION_OK)
            hl__set_listening(ev, 0);
    }
    if (pg)
        PQfinish(pg);
    return NULL;
}

orr_status hl_events_start(const char *dsn, int64_t retention_ms, hl_cache *cache, hl_events **out,
                           orr_err *err)
{
    hl_events *ev = orr_xcalloc(1, sizeof *ev);
    ev->dsn = orr_xstrdup(dsn);
    if (pipe(ev->wake) != 0) {
        free(ev->dsn);
        free(ev);
        return orr_err_set(err, ORR_EINTERNAL, NULL, "pipe: %s", strerror(errno));
    }
    for (int i = 0; i < 2; i++)
        fcntl(ev->wake[i], F_SETFL, fcntl(ev->wake[i], F_GETFL) | O_NONBLOCK);
    pthread_mutex_init(&ev->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->cv, &ca);
    pthread_condattr_destroy(&ca);
    ev->retention_ms = retention_ms;
    ev->cache = cache;
    if (cache)
        hl_cache_set_enabled(cache, 0);
    if (pthread_create(&ev->thread, NULL, hl__run, ev) != 0) {
        close(ev->wake[0]);
        close(ev->wake[1]);
        free(ev->dsn);
        free(ev);
        return orr_err_set(err, ORR_EINTERNAL, NULL, "cannot start the event listener thread");
    }
    *out = ev;
    return ORR_OK;
}

void hl_events_stop(hl_events *ev)
{
    if (!ev)
        return;
    atomic_store(&ev->stop, 1);
    pthread_join(ev->thread, NULL);
    hl_events_wake(ev);
    pthread_mutex_destroy(&ev->mu);
    pthread_cond_destroy(&ev->cv);
    close(ev->wake[0]);
    close(ev->wake[1]);
    free(ev->dsn);
    free(ev);
}

void hl_events_committed(hl_events *ev, int64_t id)
{
    if (!ev || id <= 0)
        return;
    int_least64_t cur = atomic_load(&ev->max_id);
    while (cur < id && !atomic_compare_exchange_weak(&ev->max_id, &cur, id))
        ;
    hl__bump(ev);
    if (atomic_exchange(&ev->notify_pending, 1) == 0) {
        ssize_t w = write(ev->wake[1], "n", 1);
        (void)w; /* a full pipe already wakes the thread */
    }
}

int hl_events_listening(hl_events *ev)
{
    return atomic_load(&ev->listening);
}

uint64_t hl_events_seq(hl_events *ev)
{
    pthread_mutex_lock(&ev->mu);
    uint64_t s = ev->seq;
    pthread_mutex_unlock(&ev->mu);
    return s;
}

uint64_t hl_events_wait(hl_events *ev, uint64_t seen, int timeout_ms)
{
    struct timespec dl = orr_clock_after(CLOCK_MONOTONIC, timeout_ms);
    pthread_mutex_lock(&ev->mu);
    while (ev->seq == seen && !atomic_load(&ev->stop))
        if (pthread_cond_timedwait(&ev->cv, &ev->mu, &dl) == ETIMEDOUT)
            break;
    uint64_t s = ev->seq;
    pthread_mutex_unlock(&ev->mu);
    return s;
}

void hl_events_wake(hl_events *ev)
{
    hl__bump(ev);
}

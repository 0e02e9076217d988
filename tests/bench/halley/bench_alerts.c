/*
 * bench_alerts.c - halleyd's side of alerting under a burst: RaiseAlert of
 * 1,000 failures from concurrent clients, grouped (one key) and ungrouped
 * (a key each), and the outbox drained by concurrent senders
 * (ClaimDeliveries + FinishDelivery).
 *
 *   ORRERY_PG_DSN=... build/bin/bench_alerts [clients=16] [raises=1000]
 *
 * Creates a fresh database, starts halleyd (defaults of [halley]), makes one
 * rule with one channel (group window 0, so every first message is due at
 * once), then runs two phases and prints, per phase, calls, errors, the
 * wall time, calls/s, p50 and p99 of one call:
 *   raise-one-key   `raises` raises of one dedup key (one alert counted),
 *                   then its one message claimed and finished
 *   raise-distinct  `raises` raises of distinct keys (an alert and a
 *                   delivery each) while 2 senders claim (max 50, lease
 *                   30 s; 20 ms pause after an empty claim) and finish
 *                   every due delivery ("senders" line: their calls)
 * and the p50/p99 of (delivered - raised) of the distinct phase's messages:
 * halleyd's share of "delivered within 2 s of the failure", without the
 * evaluation before it and the network after it.
 */
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static hlt_server srv;
static int64_t rule_id;
static int raises = 1000;
static int clients = 16;
static atomic_int raising; /* 1 while a raise phase runs */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, uint32_t *lat, size_t n, size_t errors, double dt)
{
    qsort(lat, n, sizeof *lat, cmp_u32);
    printf("%-16s clients=%d calls=%zu errors=%zu wall=%.3fs rate=%.0f/s p50=%.2fms p99=%.2fms\n",
           name, clients, n, errors, dt, n / dt, n ? lat[n / 2] / 1000.0 : 0.0,
           n ? lat[n * 99 / 100] / 1000.0 : 0.0);
}

typedef struct raiser {
    int idx, distinct;
    uint32_t *lat;
    size_t n, errors;
} raiser;

static void *raise_run(void *arg)
{
    raiser *w = arg;
    orr_rpc_client *c = hlt_client(&srv, NULL);
    orr_err err;
    char key[64];
    for (int i = w->idx; i < raises; i += clients) {
        if (w->distinct)
            snprintf(key, sizeof key, "failed:task:%d:1767225600000", i);
        else
            snprintf(key, sizeof key, "failed:workflow:daily:1767225600000");
        Orrery__Halley__V1__RaiseAlertRequest rq = ORRERY__HALLEY__V1__RAISE_ALERT_REQUEST__INIT;
        rq.rule_id = rule_id;
        rq.event = "failed";
        rq.dedup_key = key;
        rq.scope_kind = "workflow";
        rq.scope = "daily";
        rq.instance_id = 1000 + i;
        rq.summary = "bench failure";
        double t0 = mono();
        Orrery__Halley__V1__RaiseAlertResponse *r = NULL;
        if (hlt_call(c, "RaiseAlert", &rq, &r, &err) != ORR_OK)
            w->errors++;
        if (r)
            FREE(r);
        w->lat[w->n++] = (uint32_t)((mono() - t0) * 1e6);
    }
    orr_rpc_client_destroy(c);
    return NULL;
}

static void raise_phase(const char *name, int distinct)
{
    raiser *w = calloc((size_t)clients, sizeof *w);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    double t0 = mono();
    for (int i = 0; i < clients; i++) {
        w[i] = (raiser){.idx = i, .distinct = distinct};
        w[i].lat = calloc((size_t)raises / (size_t)clients + 2, sizeof *w[i].lat);
        pthread_create(&th[i], NULL, raise_run, &w[i]);
    }
    size_t total = 0, errors = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(th[i], NULL);
        total += w[i].n;
        errors += w[i].errors;
    }
    double dt = mono() - t0;
    uint32_t *all = calloc(total + 1, sizeof *all);
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
    }
    report(name, all, total, errors, dt);
    free(all);
    free(w);
    free(th);
}

typedef struct sender {
    int idx;
    uint32_t *lat; /* per call: claim or finish */
    size_t n, cap, errors, finished;
} sender;

static void *send_run(void *arg)
{
    sender *w = arg;
    orr_rpc_client *c = hlt_client(&srv, NULL);
    orr_err err;
    char worker[16];
    snprintf(worker, sizeof worker, "bench-%d", w->idx);
    int empty = 0;
    while ((atomic_load(&raising) || empty < 3) && w->n + 60 < w->cap) {
        Orrery__Halley__V1__ClaimDeliveriesRequest rq =
            ORRERY__HALLEY__V1__CLAIM_DELIVERIES_REQUEST__INIT;
        rq.worker = worker;
        rq.max = 50;
        rq.lease_ms = 30000;
        double t0 = mono();
        Orrery__Halley__V1__ClaimDeliveriesResponse *r = NULL;
        if (hlt_call(c, "ClaimDeliveries", &rq, &r, &err) != ORR_OK) {
            w->errors++;
            break;
        }
        w->lat[w->n++] = (uint32_t)((mono() - t0) * 1e6);
        empty = r->n_deliveries ? 0 : empty + 1;
        if (!r->n_deliveries) {
            struct timespec pause = {0, 20 * 1000000};
            nanosleep(&pause, NULL);
        }
        for (size_t i = 0; i < r->n_deliveries; i++) {
            Orrery__Halley__V1__FinishDeliveryRequest f =
                ORRERY__HALLEY__V1__FINISH_DELIVERY_REQUEST__INIT;
            f.id = r->deliveries[i]->id;
            f.worker = worker;
            f.ok = 1;
            Orrery__Halley__V1__FinishDeliveryResponse *fr = NULL;
            double t1 = mono();
            if (hlt_call(c, "FinishDelivery", &f, &fr, &err) != ORR_OK)
                w->errors++;
            else
                w->finished++;
            if (fr)
                FREE(fr);
            w->lat[w->n++] = (uint32_t)((mono() - t1) * 1e6);
        }
        FREE(r);
    }
    orr_rpc_client_destroy(c);
    return NULL;
}

int main(int argc, char **argv)
{
    clients = argc > 1 ? atoi(argv[1]) : 16;
    raises = argc > 2 ? atoi(argv[2]) : 1000;
    if (clients < 1 || clients > 256 || raises < 1 || raises > 100000) {
        fprintf(stderr, "usage: bench_alerts [clients 1..256] [raises 1..100000]\n");
        return 2;
    }
    hlt_db db;
    hlt_db_create(&db);
    if (hlt_migrate(db.dsn) != 0 || hlt_start(&srv, db.dsn, NULL, NULL) != 0) {
        fprintf(stderr, "cannot start halleyd\n");
        hlt_db_drop(&db);
        return 1;
    }
    orr_rpc_client *c = hlt_client(&srv, NULL);
    orr_err err;
    hlt_team(c, "bench");
    Orrery__Halley__V1__AlertChannel ch = ORRERY__HALLEY__V1__ALERT_CHANNEL__INIT;
    ch.name = "bench-hook";
    ch.team = "bench";
    ch.kind = "webhook";
    ch.config_json = "{\"url\":\"https://hooks.example/bench\",\"secret\":\"k\"}";
    Orrery__Halley__V1__AlertChannel *cr = NULL;
    if (hlt_call(c, "PutAlertChannel", &ch, &cr, &err) != ORR_OK) {
        fprintf(stderr, "PutAlertChannel: %s\n", err.msg);
        return 1;
    }
    int64_t chans[1] = {cr->id};
    FREE(cr);
    char *events[1] = {"failed"};
    Orrery__Halley__V1__AlertRule ru = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
    ru.name = "bench-rule";
    ru.team = "bench";
    ru.scope_kind = "task";
    ru.scope = "*";
    ru.n_events = 1;
    ru.events = events;
    ru.n_channels = 1;
    ru.channels = chans;
    ru.quiet_period_s = 300;
    ru.group_window_s = 0;
    ru.enabled = 1;
    Orrery__Halley__V1__AlertRule *rr = NULL;
    if (hlt_call(c, "PutAlertRule", &ru, &rr, &err) != ORR_OK) {
        fprintf(stderr, "PutAlertRule: %s\n", err.msg);
        return 1;
    }
    rule_id = rr->id;
    FREE(rr);
    orr_rpc_client_destroy(c);

    enum { SENDERS = 2 };
    sender s[SENDERS];
    pthread_t th[SENDERS];
    size_t total = 0, errors = 0, finished = 0;
    double t0 = 0;
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1) { /* the senders run while failures are raised */
            atomic_store(&raising, 1);
            t0 = mono();
            for (int i = 0; i < SENDERS; i++) {
                s[i] = (sender){.idx = i, .cap = (size_t)raises * 4 + 400};
                s[i].lat = calloc(s[i].cap, sizeof *s[i].lat);
                pthread_create(&th[i], NULL, send_run, &s[i]);
            }
        }
        raise_phase(phase ? "raise-distinct" : "raise-one-key", phase);
        atomic_store(&raising, 0);
    }
    for (int i = 0; i < SENDERS; i++)
        pthread_join(th[i], NULL);
    double dt = mono() - t0;
    for (int i = 0; i < SENDERS; i++) {
        total += s[i].n;
        errors += s[i].errors;
        finished += s[i].finished;
    }
    uint32_t *all = calloc(total + 1, sizeof *all);
    size_t k = 0;
    for (int i = 0; i < SENDERS; i++) {
        memcpy(all + k, s[i].lat, s[i].n * sizeof *all);
        k += s[i].n;
        free(s[i].lat);
    }
    int saved = clients;
    clients = SENDERS;
    report("senders", all, total, errors, dt);
    clients = saved;
    free(all);
    /* What the outbox added: from the raise that made a message to its
     * delivery, over the distinct phase's messages. */
    PGresult *r = hlt_sql(&db, "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY x),"
                               " percentile_cont(0.99) WITHIN GROUP (ORDER BY x) FROM (SELECT"
                               " extract(epoch from d.delivered_at - a.first_at) * 1000 AS x"
                               " FROM alert_deliveries d JOIN alerts a ON a.id = d.alert_id"
                               " WHERE a.dedup_key LIKE 'failed:task:%' AND d.state ="
                               " 'delivered') s");
    printf("delivered=%zu distinct-messages=%s raise-to-delivered p50=%.0fms p99=%.0fms\n",
           finished, PQgetvalue(r, 0, 0), atof(PQgetvalue(r, 0, 1)), atof(PQgetvalue(r, 0, 2)));
    PQclear(r);
    hlt_stop(&srv);
    hlt_db_drop(&db);
    return 0;
}

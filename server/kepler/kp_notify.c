/*
 * kp_notify.c - keplerd's alert sender (the contract is in kp_notify.h; the
 * design for operators is in docs/kepler.md, "Alert delivery").
 *
 * One thread, one curl multi handle, one RPC client of its own. A round:
 *
 *   1. while leading and with free slots, claim up to the free slots from
 *      the outbox (ClaimDeliveries: pending and due, or sending with an
 *      expired lease; each claimed one is 'sending' with attempts + 1);
 *      a full answer claims again at once, a short one waits poll_ms;
 *   2. build each claimed delivery's request (orr_notify_prepare; a channel
 *      whose configuration can never work is failed at once) and add it to
 *      the multi handle;
 *   3. drive the transfers (curl_multi_perform / curl_multi_poll, at most
 *      50 ms per wait so claims and the stop flag are looked at often);
 *   4. each finished transfer is classified (orr_notify_req_outcome) and
 *      its slot freed at once; the outcome is queued for NOTIFY_REPORTERS
 *      reporter threads that make the FinishDelivery calls, so the next
 *      claim never waits for them (no claim while more than 2 x inflight
 *      reports wait). A report that fails (halleyd away) is dropped: the
 *      lease runs out and the delivery is sent again, which is the
 *      at-least-once side of the design.
 *
 * Losing leadership stops the claims; transfers in flight finish and are
 * reported (their claims are this worker's until the lease runs out). A
 * transfer never outlives its lease: its timeout is at most lease_ms - 1 s.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "halley.pb-c.h"
#include "kp_notify.h"
#include "orr_alloc.h"
#include "orr_arena.h"
#include "orr_log.h"
#include "orr_notify.h"
#include "orr_rpc.h"

#define NOTIFY_RPC_TIMEOUT_MS 10000
#define NOTIFY_WAIT_MS        50   /* longest curl_multi_poll wait */
#define NOTIFY_RPC_BACKOFF_MS 1000 /* after a failed claim */
#define NOTIFY_CLAIM_MAX      100  /* ClaimDeliveries' max */
#define NOTIFY_STOP_RPC_MS    2000 /* a hand-back at stop waits no longer */
#define NOTIFY_REPORTERS      4    /* FinishDelivery calls at once */

typedef struct notify_slot {
    orr_notify_req *req; /* NULL = free */
    int64_t delivery_id;
    int attempts;
} notify_slot;

/* One outcome waiting to be reported (FinishDelivery). */
typedef struct notify_fin {
    struct notify_fin *next;
    int64_t id, retry_at_ms;
    int ok;
    char error[400];
} notify_fin;

struct kp_notify {
    kp_notify_opts o;
    char *worker, *ca_file, *console_url;
    orr_rpc_client *cl;
    CURLM *multi;
    notify_slot *slots;
    int n_active;
    atomic_int stop;
    pthread_t thread;
    /* reports: queued by the sender thread, made by NOTIFY_REPORTERS threads */
    pthread_mutex_t fmu;
    pthread_cond_t fcv;
    notify_fin *fhead, *ftail;
    int fqueued, fquit;
    pthread_t reporters[NOTIFY_REPORTERS];
    int n_reporters;
    kp_notify_stats stats;
};

static int64_t notify_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int notify_leading(const kp_notify *n)
{
    return n->o.status && atomic_load(&n->o.status->epoch) != 0;
}

/* FinishDelivery now (on a reporter thread); 0 on success. */
static int notify_report_now(kp_notify *n, int64_t id, int ok, const char *error,
                             int64_t retry_at_ms)
{
    int timeout = atomic_load(&n->stop) ? NOTIFY_STOP_RPC_MS : NOTIFY_RPC_TIMEOUT_MS;
    Orrery__Halley__V1__FinishDeliveryRequest rq =
        ORRERY__HALLEY__V1__FINISH_DELIVERY_REQUEST__INIT;
    rq.id = id;
    rq.worker = n->worker;
    rq.ok = ok;
    rq.error = (char *)(error ? error : "");
    rq.retry_at_ms = retry_at_ms;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc = orr_rpc_call_unary(n->cl, "FinishDelivery", &rq.base, &out, timeout, &err);
    if (out)
        protobuf_c_message_free_unpacked(out, NULL);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("alert delivery: finish not recorded (sent again after its lease)",
                 "delivery=%lld err=%s", (long long)id,
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return -1;
    }
    return 0;
}

/* Queue an outcome for the reporters: the sender thread never waits for
 * halleyd's answer, so a slow report does not hold the next claim. */
static void notify_finish(kp_notify *n, int64_t id, int ok, const char *error, int64_t retry_at_ms)
{
    notify_fin *f = orr_xcalloc(1, sizeof *f);
    f->id = id;
    f->ok = ok;
    f->retry_at_ms = retry_at_ms;
    snprintf(f->error, sizeof f->error, "%s", error ? error : "");
    pthread_mutex_lock(&n->fmu);
    if (n->ftail)
        n->ftail->next = f;
    else
        n->fhead = f;
    n->ftail = f;
    n->fqueued++;
    pthread_cond_signal(&n->fcv);
    pthread_mutex_unlock(&n->fmu);
}

static int notify_queued(kp_notify *n)
{
    pthread_mutex_lock(&n->fmu);
    int q = n->fqueued;
    pthread_mutex_unlock(&n->fmu);
    return q;
}

/* A reporter: FinishDelivery for each queued outcome, until told to quit
 * and the queue is empty. */
static void *notify_reporter(void *arg)
{
    kp_notify *n = arg;
    pthread_mutex_lock(&n->fmu);
    for (;;) {
        while (!n->fhead && !n->fquit)
            pthread_cond_wait(&n->fcv, &n->fmu);
        notify_fin *f = n->fhead;
        if (!f)
            break; /* quit, and nothing left */
        n->fhead = f->next;
        if (!n->fhead)
            n->ftail = NULL;
        pthread_mutex_unlock(&n->fmu);
        notify_report_now(n, f->id, f->ok, f->error, f->retry_at_ms);
        free(f);
        pthread_mutex_lock(&n->fmu);
        n->fqueued--;
    }
    pthread_mutex_unlock(&n->fmu);
    return NULL;
}

/* Build delivery d's request and put it in a free slot; a delivery that
 * can never be sent is failed at once. */
static void notify_begin(kp_notify *n, const Orrery__Halley__V1__AlertDelivery *d, orr_arena *ar)
{
    const Orrery__Halley__V1__Alert *al = d->alert;
    const Orrery__Halley__V1__AlertChannel *ch = d->channel;
    atomic_fetch_add(&n->stats.claimed, 1);
    if (!al || !ch) {
        notify_finish(n, d->id, 0, "the alert or its channel is gone", 0);
        atomic_fetch_add(&n->stats.failed, 1);
        return;
    }
    orr_notify_alert a = {
        .alert_id = al->id,
        .delivery_id = d->id,
        .dedup_key = al->dedup_key,
        .seq = d->seq,
        .rule = al->rule_name,
        .event = al->event,
        .severity = al->severity,
        .scope_kind = al->scope_kind,
        .scope = al->scope,
        .summary = al->summary,
        .count = d->count_sent > 0 ? d->count_sent : al->count,
        .first_at_ms = al->first_at_ms,
        .last_at_ms = al->last_at_ms,
        .task_id = al->task_id,
        .instance_id = al->instance_id,
        .details_json = al->details_json,
        .now_ms = notify_now_ms(),
    };
    /* a digest says how many came since the channel's previous message */
    if (d->seq > 1 && d->prev_count_sent > 0 && a.count > d->prev_count_sent)
        a.summary = orr_arena_sprintf(ar, "%s (%lld more since the last message)",
                                      al->summary ? al->summary : "",
                                      (long long)(a.count - d->prev_count_sent));
    if (n->console_url[0])
        a.url = orr_arena_sprintf(ar, "%s/alerts/history?alert=%lld", n->console_url,
                                  (long long)al->id);
    orr_notify_opts no = {n->ca_file, (int)(n->o.lease_ms - 1000), (int)n->o.backoff_ms};
    orr_notify_req *req = NULL;
    orr_err err;
    if (orr_notify_prepare(ch->kind, ch->config_json, &a, &no, &req, &err) != ORR_OK) {
        char buf[600], msg[700];
        snprintf(msg, sizeof msg, "channel %s: %s", ch->name ? ch->name : "",
                 orr_err_str(&err, buf, sizeof buf));
        ORR_WARN("alert delivery: channel cannot send", "delivery=%lld channel=%lld err=%s",
                 (long long)d->id, (long long)ch->id, orr_log_q(msg));
        notify_finish(n, d->id, 0, msg, 0);
        atomic_fetch_add(&n->stats.failed, 1);
        return;
    }
    for (int i = 0; i < n->o.inflight; i++) {
        notify_slot *s = &n->slots[i];
        if (s->req)
            continue;
        s->req = req;
        s->delivery_id = d->id;
        s->attempts = d->attempts;
        curl_multi_add_handle(n->multi, orr_notify_req_handle(req));
        n->n_active++;
        return;
    }
    /* cannot happen: claims never exceed the free slots */
    orr_notify_req_free(req);
    notify_finish(n, d->id, 0, "no free sending slot", notify_now_ms());
}

/* Claim up to the free slots. Returns how many came (-1: the RPC failed). */
static int notify_claim(kp_notify *n, int want)
{
    Orrery__Halley__V1__ClaimDeliveriesRequest rq =
        ORRERY__HALLEY__V1__CLAIM_DELIVERIES_REQUEST__INIT;
    rq.worker = n->worker;
    rq.max = want;
    rq.lease_ms = n->o.lease_ms;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc =
        orr_rpc_call_unary(n->cl, "ClaimDeliveries", &rq.base, &out, NOTIFY_RPC_TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        ORR_WARN("alert delivery: claim failed", "err=%s",
                 orr_log_q(orr_err_str(&err, buf, sizeof buf)));
        return -1;
    }
    Orrery__Halley__V1__ClaimDeliveriesResponse *cr = (void *)out;
    int got = (int)cr->n_deliveries;
    orr_arena *ar = orr_arena_create(4096);
    for (size_t i = 0; i < cr->n_deliveries; i++) {
        notify_begin(n, cr->deliveries[i], ar);
        orr_arena_reset(ar);
    }
    orr_arena_destroy(ar);
    protobuf_c_message_free_unpacked(out, NULL);
    return got;
}

static notify_slot *notify_slot_of(kp_notify *n, CURL *h)
{
    for (int i = 0; i < n->o.inflight; i++)
        if (n->slots[i].req && orr_notify_req_handle(n->slots[i].req) == h)
            return &n->slots[i];
    return NULL;
}

static void notify_release(kp_notify *n, notify_slot *s)
{
    curl_multi_remove_handle(n->multi, orr_notify_req_handle(s->req));
    orr_notify_req_free(s->req);
    s->req = NULL;
    n->n_active--;
}

/* Report every finished transfer. */
static void notify_reap(kp_notify *n)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(n->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        notify_slot *s = notify_slot_of(n, m->easy_handle);
        if (!s)
            continue;
        orr_notify_result res;
        int64_t now = notify_now_ms();
        orr_notify_req_outcome(s->req, (int)m->data.result, s->attempts, now, &res);
        int64_t id = s->delivery_id;
        int attempts = s->attempts;
        notify_release(n, s); /* m is invalid from here */
        switch (res.outcome) {
        case ORR_NOTIFY_DELIVERED:
            atomic_fetch_add(&n->stats.delivered, 1);
            notify_finish(n, id, 1, "", 0);
            break;
        case ORR_NOTIFY_RETRY:
            atomic_fetch_add(&n->stats.retried, 1);
            ORR_INFO("alert delivery: retry", "delivery=%lld attempt=%d retry_in_ms=%lld err=%s",
                     (long long)id, attempts, (long long)(res.retry_at_ms - now),
                     orr_log_q(res.error));
            notify_finish(n, id, 0, res.error, res.retry_at_ms);
            break;
        case ORR_NOTIFY_FAILED:
            atomic_fetch_add(&n->stats.failed, 1);
            ORR_WARN("alert delivery: failed", "delivery=%lld attempt=%d err=%s", (long long)id,
                     attempts, orr_log_q(res.error));
            notify_finish(n, id, 0, res.error, 0);
            break;
        }
    }
}

static void *notify_main(void *arg)
{
    kp_notify *n = arg;
    int64_t next_claim = 0;
    int was_leading = 0;
    while (!atomic_load(&n->stop)) {
        int64_t now = notify_now_ms();
        int leading = notify_leading(n);
        if (leading != was_leading) {
            ORR_INFO(leading ? "alert delivery: sending" : "alert delivery: standing by",
                     "worker=%s", orr_log_q(n->worker));
            was_leading = leading;
        }
        int free_slots = n->o.inflight - n->n_active;
        /* reports piling up (halleyd slow): send what is claimed, claim no more */
        int can_claim = leading && free_slots > 0 && notify_queued(n) <= 2 * n->o.inflight;
        if (can_claim && now >= next_claim) {
            int want = free_slots < NOTIFY_CLAIM_MAX ? free_slots : NOTIFY_CLAIM_MAX;
            int got = notify_claim(n, want);
            next_claim = got < 0      ? now + NOTIFY_RPC_BACKOFF_MS
                         : got < want ? now + n->o.poll_ms
                                      : now; /* a full answer: more may be due */
        }
        int running = 0;
        curl_multi_perform(n->multi, &running);
        notify_reap(n);
        int wait = NOTIFY_WAIT_MS;
        if (can_claim && n->n_active < n->o.inflight) {
            int64_t until = next_claim - notify_now_ms();
            if (until < wait)
                wait = until < 0 ? 0 : (int)until;
        }
        if (wait > 0)
            curl_multi_poll(n->multi, NULL, 0, wait, NULL);
    }
    /* hand what is still running back to the outbox, due now */
    for (int i = 0; i < n->o.inflight; i++) {
        notify_slot *s = &n->slots[i];
        if (!s->req)
            continue;
        int64_t id = s->delivery_id;
        notify_release(n, s);
        notify_finish(n, id, 0, "keplerd stopped during the transfer", notify_now_ms());
    }
    return NULL;
}

/* Let the reporters drain the queue, then end them. */
static void notify_reporters_end(kp_notify *n)
{
    pthread_mutex_lock(&n->fmu);
    n->fquit = 1;
    pthread_cond_broadcast(&n->fcv);
    pthread_mutex_unlock(&n->fmu);
    for (int i = 0; i < n->n_reporters; i++)
        pthread_join(n->reporters[i], NULL);
    n->n_reporters = 0;
    pthread_mutex_destroy(&n->fmu);
    pthread_cond_destroy(&n->fcv);
}

orr_status kp_notify_start(const kp_notify_opts *o, kp_notify **out, orr_err *err)
{
    *out = NULL;
    if (o->inflight < 1 || o->inflight > 256)
        return orr_err_set(err, ORR_EINVAL, "notify_inflight", "must be 1-256");
    if (o->lease_ms < 2000)
        return orr_err_set(err, ORR_EINVAL, "notify_lease", "must be at least 2s");
    if (o->poll_ms < 10)
        return orr_err_set(err, ORR_EINVAL, "notify_poll", "must be at least 10ms");
    orr_notify_global_init();
    kp_notify *n = orr_xcalloc(1, sizeof *n);
    n->o = *o;
    n->worker = orr_xstrdup(o->worker ? o->worker : "kepler");
    n->ca_file = orr_xstrdup(o->ca_file ? o->ca_file : "");
    n->console_url = orr_xstrdup(o->console_url ? o->console_url : "");
    size_t l = strlen(n->console_url);
    while (l && n->console_url[l - 1] == '/')
        n->console_url[--l] = '\0';
    n->slots = orr_xcalloc((size_t)o->inflight, sizeof *n->slots);
    n->multi = orr_xcheck(curl_multi_init());
    orr_status rc = orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, o->halley,
                                          o->token, &n->cl, err);
    if (rc != ORR_OK)
        goto fail;
    pthread_mutex_init(&n->fmu, NULL);
    pthread_cond_init(&n->fcv, NULL);
    for (; n->n_reporters < NOTIFY_REPORTERS; n->n_reporters++)
        if (pthread_create(&n->reporters[n->n_reporters], NULL, notify_reporter, n) != 0)
            break;
    if (n->n_reporters == 0 || pthread_create(&n->thread, NULL, notify_main, n) != 0) {
        rc = orr_err_set(err, ORR_EIO, "notify", "cannot start the sender threads");
        notify_reporters_end(n);
        goto fail;
    }
    *out = n;
    return ORR_OK;
fail:
    orr_rpc_client_destroy(n->cl);
    curl_multi_cleanup(n->multi);
    free(n->slots);
    free(n->console_url);
    free(n->ca_file);
    free(n->worker);
    free(n);
    return rc;
}

const kp_notify_stats *kp_notify_stats_of(const kp_notify *n)
{
    return &n->stats;
}

void kp_notify_stop(kp_notify *n)
{
    if (!n)
        return;
    atomic_store(&n->stop, 1);
    curl_multi_wakeup(n->multi);
    pthread_join(n->thread, NULL);
    notify_reporters_end(n); /* the hand-backs queued at the end go out first */
    orr_rpc_client_destroy(n->cl);
    curl_multi_cleanup(n->multi);
    free(n->slots);
    free(n->console_url);
    free(n->ca_file);
    free(n->worker);
    free(n);
}

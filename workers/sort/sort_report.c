/* sort_report.c - reconciled units to Halley, off the pipeline thread (see sort_report.h). */
#include "sort_report.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halley.pb-c.h"
#include "orr_alloc.h"
#include "orr_clock.h"
#include "orr_log.h"
#include "sort_chan.h"
#include "orr_rpc.h"

#define REPORT_RPC_TIMEOUT_MS 5000
#define REPORT_BACKOFF_MAX_MS 5000

typedef struct report_item {
    struct report_item *next;
    char stream[SORT_NAME_MAX + 1], business[SORT_NAME_MAX + 1], iface[SORT_NAME_MAX + 1];
    int64_t bucket_ms, records, late, bytes;
    int32_t files, check_version;
} report_item;

struct sort_report {
    orr_rpc_client *rpc;
    sort_check_sink sink;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    report_item *head, *tail;
    size_t n;
    int stopping;
    int64_t flush_deadline_ms;
    sort_report_stats st;
};

static void report_reconciled(void *ctx, const sort_spec *spec, const sort_unit *u)
{
    sort_report *r = ctx;
    report_item *it = orr_xcalloc(1, sizeof *it);
    snprintf(it->stream, sizeof it->stream, "%s", spec->name);
    snprintf(it->business, sizeof it->business, "%s", spec->business);
    snprintf(it->iface, sizeof it->iface, "%.*s", (int)u->iface_len, u->iface);
    it->bucket_ms = u->bucket_start * 1000;
    it->records = (int64_t)u->total;
    it->late = (int64_t)u->late;
    it->bytes = (int64_t)u->total_bytes;
    it->files = (int32_t)u->nfiles;
    it->check_version = (int32_t)u->check_version;
    pthread_mutex_lock(&r->mu);
    if (r->n >= SORT_REPORT_QUEUE_MAX) {
        report_item *old = r->head;
        r->head = old->next;
        if (!r->head)
            r->tail = NULL;
        r->n--;
        r->st.dropped++;
        free(old);
    }
    if (r->tail)
        r->tail->next = it;
    else
        r->head = it;
    r->tail = it;
    r->n++;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* One call. ORR_OK sent; ORR_EUNAVAIL/ETIMEOUT retry; anything else refused. */
static orr_status report_send(sort_report *r, const report_item *it, orr_err *err)
{
    Orrery__Halley__V1__DataUnit du = ORRERY__HALLEY__V1__DATA_UNIT__INIT;
    du.stream = (char *)it->stream;
    du.business = (char *)it->business;
    du.interface = (char *)it->iface;
    du.bucket_ms = it->bucket_ms;
    du.records = it->records;
    du.files = it->files;
    du.bytes = it->bytes; /* .lzo bytes of the unit's files */
    du.late_records = it->late;
    du.check_version = it->check_version;
    du.reconciled = 1;
    Orrery__Halley__V1__ReportDataUnitRequest rq =
        ORRERY__HALLEY__V1__REPORT_DATA_UNIT_REQUEST__INIT;
    rq.unit = &du;
    ProtobufCMessage *resp = NULL;
    orr_status rc =
        orr_rpc_call_unary(r->rpc, "ReportDataUnit", &rq.base, &resp, REPORT_RPC_TIMEOUT_MS, err);
    if (resp)
        protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

static void *report_main(void *arg)
{
    sort_report *r = arg;
    int backoff = 100;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->head && !r->stopping)
            pthread_cond_wait(&r->cv, &r->mu);
        if (!r->head || (r->stopping && orr_clock_ms(CLOCK_MONOTONIC) >= r->flush_deadline_ms))
            break;
        report_item *it = r->head;
        pthread_mutex_unlock(&r->mu);
        orr_err err;
        orr_err_clear(&err);
        orr_status rc = report_send(r, it, &err);
        pthread_mutex_lock(&r->mu);
        if (rc == ORR_EUNAVAIL || rc == ORR_ETIMEOUT) {
            char b[600];
            ORR_WARN("unit report failed; will retry", "stream=%s interface=%s error=%s",
                     it->stream, it->iface, orr_log_q(orr_err_str(&err, b, sizeof b)));
            /* wait, but wake for a stop */
            struct timespec ts = orr_clock_after(CLOCK_REALTIME, backoff);
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
            backoff = backoff * 2 > REPORT_BACKOFF_MAX_MS ? REPORT_BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        backoff = 100;
        if (rc == ORR_OK) {
            r->st.sent++;
        } else {
            char b[600];
            r->st.refused++;
            ORR_WARN("unit report refused by Halley; dropped", "stream=%s interface=%s error=%s",
                     it->stream, it->iface, orr_log_q(orr_err_str(&err, b, sizeof b)));
        }
        r->head = it->next;
        if (!r->head)
            r->tail = NULL;
        r->n--;
        free(it);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

orr_status sort_report_start(const char *addr, const char *token, sort_report **out, orr_err *err)
{
    if (!addr || !*addr)
        return orr_err_set(err, ORR_EINVAL, "halley", "no Halley address configured");
    sort_report *r = orr_xcalloc(1, sizeof *r);
    orr_status rc = orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, addr,
                                          token && *token ? token : NULL, &r->rpc, err);
    if (rc != ORR_OK) {
        free(r);
        return rc;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->sink.ctx = r;
    r->sink.reconciled = report_reconciled;
    if (pthread_create(&r->th, NULL, report_main, r) != 0)
        abort();
    *out = r;
    return ORR_OK;
}

const sort_check_sink *sort_report_sink(sort_report *r)
{
    return &r->sink;
}

void sort_report_get_stats(sort_report *r, sort_report_stats *st)
{
    pthread_mutex_lock(&r->mu);
    *st = r->st;
    st->queued = r->n;
    pthread_mutex_unlock(&r->mu);
}

void sort_report_stop(sort_report *r, int flush_ms)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stopping = 1;
    r->flush_deadline_ms = orr_clock_ms(CLOCK_MONOTONIC) + flush_ms;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    if (r->n > 0)
        ORR_WARN("unit reports not sent at stop", "count=%zu", r->n);
    while (r->head) {
        report_item *it = r->head;
        r->head = it->next;
        free(it);
    }
    orr_rpc_client_destroy(r->rpc);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

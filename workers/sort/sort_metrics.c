/* sort_metrics.c - the Prometheus endpoint of sortd (see sort_metrics.h). */
#include "sort_metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "orr_alloc.h"
#include "orr_http.h"
#include "sort_reject.h"

struct sort_metrics {
    orr_http *http;
    pthread_mutex_t mu;
    char stream[160];
    int has;
    sort_pipe_stats st;
};

static void met_counter(orr_buf *o, const char *name, const char *help, const char *type,
                        const char *stream, uint64_t v)
{
    orr_buf_appendf(o, "# HELP %s %s\n# TYPE %s %s\n%s{stream=\"%s\"} %" PRIu64 "\n", name, help,
                    name, type, name, stream, v);
}

void sort_metrics_render(sort_metrics *m, orr_buf *o)
{
    pthread_mutex_lock(&m->mu);
    if (m->has) {
        const sort_pipe_stats *s = &m->st;
        const char *n = m->stream;
        met_counter(o, "sortd_records_in_total", "Records read from the source.", "counter", n,
                    s->records_in);
        met_counter(o, "sortd_records_out_total", "Records routed to unit files.", "counter", n,
                    s->records_out);
        orr_buf_appendf(o, "# HELP sortd_records_rejected_total Records rejected, by reason.\n"
                           "# TYPE sortd_records_rejected_total counter\n");
        for (int r = 0; r < SORT_REJ__COUNT; r++)
            orr_buf_appendf(
                o, "sortd_records_rejected_total{stream=\"%s\",reason=\"%s\"} %" PRIu64 "\n", n,
                sort_reject_name((sort_reject_reason)r), s->rejects[r]);
        met_counter(o, "sortd_replay_dropped_total",
                    "Replayed records dropped because they had landed.", "counter", n,
                    s->replay_dropped);
        met_counter(o, "sortd_late_records_total", "Records that arrived after their unit closed.",
                    "counter", n, s->late);
        met_counter(o, "sortd_open_units", "Unit files open in writers.", "gauge", n,
                    s->w.open_units);
        met_counter(o, "sortd_units", "Data units known.", "gauge", n, s->units);
        met_counter(o, "sortd_files_landed_total", "Unit files landed.", "counter", n, s->w.files);
        met_counter(o, "sortd_bytes_raw_total", "Record bytes written to unit files.", "counter", n,
                    s->w.bytes_raw);
        met_counter(o, "sortd_bytes_written_total", "lzop bytes landed.", "counter", n,
                    s->w.bytes_lzo);
        met_counter(o, "sortd_checks_written_total", "_CHECK versions written.", "counter", n,
                    s->checks_written);
        met_counter(o, "sortd_pool_waits_total", "Source pauses for flow control.", "counter", n,
                    s->pool_waits);
        met_counter(o, "sortd_pg_rows_total", "Rows committed to the PostgreSQL sink.", "counter",
                    n, s->pg_rows);
        met_counter(o, "sortd_handoff_packs_total", "Packs handed off to write stages.", "counter",
                    n, s->ho_packs);
        met_counter(o, "sortd_handoff_bytes_total", "Encoded bytes handed off to write stages.",
                    "counter", n, s->ho_bytes);
        met_counter(o, "sortd_handoff_waits_total",
                    "Parse-stage pauses while a hand-off stream was full.", "counter", n,
                    s->ho_waits);
        met_counter(o, "sortd_rebalances_total",
                    "Consumer-group assignments given to this process.", "counter", n,
                    s->rebalances_assigned);
        orr_buf_appendf(o, "# HELP sortd_lag Source messages not yet read.\n"
                           "# TYPE sortd_lag gauge\n");
        for (uint32_t p = 0; p < SORT_MAX_PARTITIONS; p++)
            if (s->has_lag[p])
                orr_buf_appendf(o,
                                "sortd_lag{stream=\"%s\",partition=\"%" PRIu32 "\"} %" PRIu64 "\n",
                                n, p, s->lag[p]);
    }
    pthread_mutex_unlock(&m->mu);
}

static enum MHD_Result met_handle(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)con_cls;
    sort_metrics *m = cls;
    orr_buf body = ORR_BUF_INIT;
    unsigned code = MHD_HTTP_OK;
    if (strcmp(method, "GET") != 0) {
        orr_buf_append_str(&body, "method not allowed\n");
        code = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") != 0) {
        orr_buf_append_str(&body, "not found: try /metrics\n");
        code = MHD_HTTP_NOT_FOUND;
    } else {
        sort_metrics_render(m, &body);
    }
    size_t len;
    char *data = orr_buf_detach(&body, &len);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

orr_status sort_metrics_start(const char *listen, sort_metrics **out, orr_err *err)
{
    *out = NULL;
    sort_metrics *m = orr_xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    orr_http_opts ho = {
        .listen = listen,
        .field = "metrics_listen",
        .handler = met_handle,
        .handler_cls = m,
        .timeout_s = 10,
    };
    orr_status rc = orr_http_start(&ho, &m->http, err);
    if (rc != ORR_OK) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        return rc;
    }
    *out = m;
    return ORR_OK;
}

int sort_metrics_port(const sort_metrics *m)
{
    return orr_http_port(m->http);
}

void sort_metrics_publish(sort_metrics *m, const char *stream, const sort_pipe_stats *st)
{
    pthread_mutex_lock(&m->mu);
    snprintf(m->stream, sizeof m->stream, "%s", stream);
    m->st = *st;
    m->has = 1;
    pthread_mutex_unlock(&m->mu);
}

void sort_metrics_stop(sort_metrics *m)
{
    if (!m)
        return;
    orr_http_stop(m->http);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* sort_metrics.c - the Prometheus endpoint of sortd (see sort_metrics.h). */
#include "sort_metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_metrics.h"
#include "sort_reject.h"

struct sort_metrics {
    orr_metrics *reg;
    orr_metrics_server *http;
    pthread_mutex_t mu;
    char stream[160];
    int has;
    sort_pipe_stats st;
};

static void met_one(orr_metrics_writer *w, const char *name, orr_metric_type type, const char *help,
                    const char *stream, uint64_t v)
{
    orr_metrics_family(w, name, type, help);
    orr_metrics_sample(w, (const char *const[]){"stream", stream, NULL}, (double)v);
}

static void met_write(sort_metrics *m, orr_metrics_writer *w)
{
    pthread_mutex_lock(&m->mu);
    if (m->has) {
        const sort_pipe_stats *s = &m->st;
        const char *n = m->stream;
        const orr_metric_type C = ORR_METRIC_COUNTER, G = ORR_METRIC_GAUGE;
        met_one(w, "sortd_records_in_total", C, "Records read from the source.", n, s->records_in);
        met_one(w, "sortd_records_out_total", C, "Records routed to unit files.", n,
                s->records_out);
        orr_metrics_family(w, "sortd_records_rejected_total", C, "Records rejected, by reason.");
        for (int r = 0; r < SORT_REJ__COUNT; r++)
            orr_metrics_sample(w,
                               (const char *const[]){"stream", n, "reason",
                                                     sort_reject_name((sort_reject_reason)r), NULL},
                               (double)s->rejects[r]);
        met_one(w, "sortd_replay_dropped_total", C,
                "Replayed records dropped because they had landed.", n, s->replay_dropped);
        met_one(w, "sortd_late_records_total", C, "Records that arrived after their unit closed.",
                n, s->late);
        met_one(w, "sortd_open_units", G, "Unit files open in writers.", n, s->w.open_units);
        met_one(w, "sortd_units", G, "Data units known.", n, s->units);
        met_one(w, "sortd_files_landed_total", C, "Unit files landed.", n, s->w.files);
        met_one(w, "sortd_bytes_raw_total", C, "Record bytes written to unit files.", n,
                s->w.bytes_raw);
        met_one(w, "sortd_bytes_written_total", C, "lzop bytes landed.", n, s->w.bytes_lzo);
        met_one(w, "sortd_checks_written_total", C, "_CHECK versions written.", n,
                s->checks_written);
        met_one(w, "sortd_pool_waits_total", C, "Source pauses for flow control.", n,
                s->pool_waits);
        met_one(w, "sortd_pg_rows_total", C, "Rows committed to the PostgreSQL sink.", n,
                s->pg_rows);
        met_one(w, "sortd_handoff_packs_total", C, "Packs handed off to write stages.", n,
                s->ho_packs);
        met_one(w, "sortd_handoff_bytes_total", C, "Encoded bytes handed off to write stages.", n,
                s->ho_bytes);
        met_one(w, "sortd_handoff_waits_total", C,
                "Parse-stage pauses while a hand-off stream was full.", n, s->ho_waits);
        met_one(w, "sortd_rebalances_total", C, "Consumer-group assignments given to this process.",
                n, s->rebalances_assigned);
        orr_metrics_family(w, "sortd_lag", G, "Source messages not yet read.");
        for (uint32_t p = 0; p < SORT_MAX_PARTITIONS; p++) {
            if (!s->has_lag[p])
                continue;
            char part[16];
            snprintf(part, sizeof part, "%" PRIu32, p);
            orr_metrics_sample(w, (const char *const[]){"stream", n, "partition", part, NULL},
                               (double)s->lag[p]);
        }
    }
    pthread_mutex_unlock(&m->mu);
}

void sort_metrics_render(sort_metrics *m, orr_buf *o)
{
    orr_metrics_writer w;
    orr_metrics_writer_init(&w, o);
    met_write(m, &w);
}

static void met_collect(void *ctx, orr_metrics_writer *w)
{
    met_write(ctx, w);
}

/* sortd is healthy while it answers; the body names the running stream. */
static int met_health(void *ctx, orr_buf *body)
{
    sort_metrics *m = ctx;
    pthread_mutex_lock(&m->mu);
    orr_buf_append_str(body, "{\"status\":\"ok\",\"stream\":");
    if (m->has) {
        orr_buf_append_byte(body, '"');
        for (const char *p = m->stream; *p; p++)
            if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                orr_buf_append_byte(body, *p);
        orr_buf_append_byte(body, '"');
    } else {
        orr_buf_append_str(body, "null");
    }
    orr_buf_append_byte(body, '}');
    pthread_mutex_unlock(&m->mu);
    return 1;
}

orr_status sort_metrics_start(const char *listen, sort_metrics **out, orr_err *err)
{
    *out = NULL;
    sort_metrics *m = orr_xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->reg = orr_metrics_create();
    orr_metrics_add_collector(m->reg, met_collect, m);
    orr_status rc =
        orr_metrics_serve(m->reg, listen, "metrics_listen", met_health, m, &m->http, err);
    if (rc != ORR_OK) {
        orr_metrics_destroy(m->reg);
        pthread_mutex_destroy(&m->mu);
        free(m);
        return rc;
    }
    *out = m;
    return ORR_OK;
}

int sort_metrics_port(const sort_metrics *m)
{
    return orr_metrics_server_port(m->http);
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
    orr_metrics_server_stop(m->http);
    orr_metrics_destroy(m->reg);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

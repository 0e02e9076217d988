/*
 * hl_metrics.c - Prometheus metrics and health over libmicrohttpd.
 */
#include "hl_metrics.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_http.h"

struct hl_metrics {
    orr_http *http;
    hl_ctx *hc;
    _Atomic(orr_rpc_server *) srv;
};

void hl_metrics_render(hl_ctx *hc, orr_rpc_server *srv, orr_buf *out)
{
    if (srv) {
        orr_rpc_method_stats st[64];
        size_t n = orr_rpc_server_stats(srv, st, 64);
        if (n > 64)
            n = 64;
        orr_buf_append_str(out, "# HELP halley_rpc_calls_total RPC calls by method.\n"
                                "# TYPE halley_rpc_calls_total counter\n");
        for (size_t i = 0; i < n; i++)
            orr_buf_appendf(out, "halley_rpc_calls_total{method=\"%s\"} %llu\n", st[i].name,
                            (unsigned long long)st[i].calls);
        orr_buf_append_str(out, "# HELP halley_rpc_errors_total RPC calls that failed.\n"
                                "# TYPE halley_rpc_errors_total counter\n");
        for (size_t i = 0; i < n; i++)
            orr_buf_appendf(out, "halley_rpc_errors_total{method=\"%s\"} %llu\n", st[i].name,
                            (unsigned long long)st[i].errors);
        orr_buf_append_str(out, "# HELP halley_rpc_latency_seconds RPC latency by method.\n"
                                "# TYPE halley_rpc_latency_seconds histogram\n");
        for (size_t i = 0; i < n; i++) {
            for (int b = 0; b < 12; b++)
                orr_buf_appendf(out,
                                "halley_rpc_latency_seconds_bucket{method=\"%s\",le=\"%g\"} %llu\n",
                                st[i].name, (double)orr_rpc_latency_bounds_us[b] / 1e6,
                                (unsigned long long)st[i].latency_le_us[b]);
            orr_buf_appendf(out,
                            "halley_rpc_latency_seconds_bucket{method=\"%s\",le=\"+Inf\"} %llu\n"
                            "halley_rpc_latency_seconds_sum{method=\"%s\"} %.6f\n"
                            "halley_rpc_latency_seconds_count{method=\"%s\"} %llu\n",
                            st[i].name, (unsigned long long)st[i].calls, st[i].name,
                            st[i].latency_sum_s, st[i].name, (unsigned long long)st[i].calls);
        }
    }
    hl_db_stats ds;
    hl_db_get_stats(hc->db, &ds);
    hl_cache_stats cs;
    hl_cache_get_stats(hc->cache, &cs);
    orr_buf_appendf(
        out,
        "# TYPE halley_db_pool_size gauge\nhalley_db_pool_size %d\n"
        "# TYPE halley_db_pool_idle gauge\nhalley_db_pool_idle %d\n"
        "# TYPE halley_db_connected gauge\nhalley_db_connected %d\n"
        "# TYPE halley_db_unavailable_total counter\nhalley_db_unavailable_total %llu\n"
        "# TYPE halley_event_listener_up gauge\nhalley_event_listener_up %d\n"
        "# TYPE halley_task_cache_hits_total counter\nhalley_task_cache_hits_total %llu\n"
        "# TYPE halley_task_cache_misses_total counter\n"
        "halley_task_cache_misses_total %llu\n"
        "# TYPE halley_task_cache_entries gauge\nhalley_task_cache_entries %zu\n",
        ds.size, ds.idle, ds.connected, (unsigned long long)ds.unavailable,
        hl_events_listening(hc->events), (unsigned long long)cs.hits, (unsigned long long)cs.misses,
        cs.entries);
}

static enum MHD_Result hl__answer(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    hl_metrics *m = cls;
    orr_buf body = ORR_BUF_INIT;
    unsigned code = 200;
    const char *type = "text/plain; version=0.0.4";
    if (strcmp(method, "GET") != 0) {
        code = 405;
        orr_buf_append_str(&body, "method not allowed\n");
    } else if (strcmp(url, "/metrics") == 0) {
        hl_metrics_render(m->hc, atomic_load(&m->srv), &body);
    } else if (strcmp(url, "/healthz") == 0) {
        hl_db_stats ds;
        hl_db_get_stats(m->hc->db, &ds);
        code = ds.connected > 0 ? 200 : 503;
        orr_buf_appendf(&body, "{\"db_ok\":%s,\"listener_ok\":%s}\n",
                        code == 200 ? "true" : "false",
                        hl_events_listening(m->hc->events) ? "true" : "false");
        type = "application/json";
    } else {
        code = 404;
        orr_buf_append_str(&body, "not found\n");
    }
    size_t len;
    char *data = orr_buf_detach(&body, &len);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", type);
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

orr_status hl_metrics_start(const char *listen, hl_ctx *hc, hl_metrics **out, orr_err *err)
{
    hl_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return orr_err_set(err, ORR_ENOMEM, NULL, "out of memory");
    m->hc = hc;
    orr_http_opts ho = {
        .listen = listen,
        .field = "halley.metrics_listen",
        .handler = hl__answer,
        .handler_cls = m,
        .connection_limit = 64,
        .timeout_s = 10,
    };
    orr_status rc = orr_http_start(&ho, &m->http, err);
    if (rc != ORR_OK) {
        free(m);
        return rc;
    }
    *out = m;
    return ORR_OK;
}

void hl_metrics_set_server(hl_metrics *m, orr_rpc_server *srv)
{
    atomic_store(&m->srv, srv);
}

int hl_metrics_port(const hl_metrics *m)
{
    return orr_http_port(m->http);
}

void hl_metrics_stop(hl_metrics *m)
{
    if (!m)
        return;
    orr_http_stop(m->http);
    free(m);
}

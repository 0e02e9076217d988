/*
 * hl_metrics.c - halleyd's Prometheus families and health, served by the
 * shared endpoint (orr_metrics): the RPC table (calls, errors, latency by
 * method), the PostgreSQL pool, the event listener and the task cache are
 * read at scrape time by one collector, and the instances by state (live
 * ones with the age of the oldest, finished ones of the last 15 minutes)
 * by two small queries at scrape time, so alert rules can see instances
 * that are stuck or failing whichever halleyd they scrape.
 */
#include "hl_metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_arena.h"
#include "hl_evwin.h"
#include "hl_tcomb.h"
#include "orr_metrics.h"

struct hl_metrics {
    orr_metrics *reg;
    orr_metrics_server *http;
    hl_ctx *hc;
    _Atomic(orr_rpc_server *) srv;
};

static void hl__rpc_families(orr_metrics_writer *w, orr_rpc_server *srv)
{
    orr_rpc_method_stats st[64];
    size_t n = orr_rpc_server_stats(srv, st, 64);
    if (n > 64)
        n = 64;
    orr_metrics_family(w, "halley_rpc_calls_total", ORR_METRIC_COUNTER, "RPC calls by method.");
    for (size_t i = 0; i < n; i++)
        orr_metrics_sample(w, (const char *const[]){"method", st[i].name, NULL},
                           (double)st[i].calls);
    orr_metrics_family(w, "halley_rpc_errors_total", ORR_METRIC_COUNTER, "RPC calls that failed.");
    for (size_t i = 0; i < n; i++)
        orr_metrics_sample(w, (const char *const[]){"method", st[i].name, NULL},
                           (double)st[i].errors);
    double bounds[12];
    for (int b = 0; b < 12; b++)
        bounds[b] = (double)orr_rpc_latency_bounds_us[b] / 1e6;
    orr_metrics_family(w, "halley_rpc_latency_seconds", ORR_METRIC_HISTOGRAM,
                       "RPC latency by method.");
    for (size_t i = 0; i < n; i++) {
        /* The server keeps cumulative buckets; the writer takes each alone. */
        uint64_t counts[13], prev = 0;
        for (int b = 0; b < 12; b++) {
            uint64_t le = st[i].latency_le_us[b];
            counts[b] = le >= prev ? le - prev : 0;
            prev = le > prev ? le : prev;
        }
        counts[12] = st[i].calls >= prev ? st[i].calls - prev : 0;
        orr_metrics_histogram_sample(w, (const char *const[]){"method", st[i].name, NULL}, bounds,
                                     counts, 12, st[i].latency_sum_s);
    }
    orr_rpc_worker_stats ws;
    orr_rpc_server_worker_stats(srv, &ws);
    orr_metrics_single(w, "halley_rpc_worker_events_total", ORR_METRIC_COUNTER,
                       "Events the RPC workers took from their queues.", (double)ws.events);
    orr_metrics_single(w, "halley_rpc_worker_busy_seconds_total", ORR_METRIC_COUNTER,
                       "Time the RPC workers spent handling events, summed over workers; "
                       "with the gate, a rate near halley_rpc_queues means calls wait for "
                       "the one worker of each queue.",
                       ws.busy_s);
    orr_metrics_single(w, "halley_rpc_worker_let_ins_total", ORR_METRIC_COUNTER,
                       "Sleeping RPC workers woken past a queue's gate: by the watchdog when the "
                       "waiting worker stayed away a whole hand-off period, or by a handler that "
                       "will wait long.",
                       (double)ws.let_ins);
    orr_metrics_single(w, "halley_rpc_queues", ORR_METRIC_GAUGE,
                       "Completion queues of the RPC server.", (double)ws.queues);
}

/* Every live state in one row each (zero when none), so a rule on a state
 * never sees it vanish; the age is that of the least recently changed. */
static hl_stmt hl__q_live =
    HL_STMT("SELECT s.state, count(i.id), "
            "coalesce(extract(epoch FROM now() - min(i.updated_at)), 0)::float8 "
            "FROM unnest(ARRAY['waiting','ready','dispatched','running']) AS s(state) "
            "LEFT JOIN instances i ON i.state = s.state GROUP BY s.state ORDER BY s.state");
static hl_stmt hl__q_finished =
    HL_STMT("SELECT s.state, count(i.id) "
            "FROM unnest(ARRAY['success','failed','timed_out','killed']) AS s(state) "
            "LEFT JOIN instances i ON i.state = s.state "
            "AND i.finished_at > now() - interval '15 minutes' "
            "GROUP BY s.state ORDER BY s.state");

/* The instance families; left out of the scrape when PostgreSQL does not
 * answer (halley_db_connected says so). */
static void hl__instance_families(hl_ctx *hc, orr_metrics_writer *w)
{
    orr_arena *a = orr_arena_create(0);
    orr_err e;
    PGresult *live = NULL, *fin = NULL;
    if (hl_db_query_once(hc->db, a, &hl__q_live, 0, NULL, &live, &e) != ORR_OK ||
        hl_db_query_once(hc->db, a, &hl__q_finished, 0, NULL, &fin, &e) != ORR_OK)
        goto out;
    orr_metrics_family(w, "halley_instances", ORR_METRIC_GAUGE,
                       "Instances in each live state (waiting, ready, dispatched, running).");
    for (int r = 0; r < PQntuples(live); r++)
        orr_metrics_sample(w, (const char *const[]){"state", PQgetvalue(live, r, 0), NULL},
                           (double)hl_val_i64(live, r, 1));
    orr_metrics_family(w, "halley_instance_oldest_seconds", ORR_METRIC_GAUGE,
                       "Seconds since the least recently changed instance of each live state "
                       "changed (0 when there is none).");
    for (int r = 0; r < PQntuples(live); r++)
        orr_metrics_sample(w, (const char *const[]){"state", PQgetvalue(live, r, 0), NULL},
                           strtod(PQgetvalue(live, r, 2), NULL));
    orr_metrics_family(w, "halley_instances_finished_15m", ORR_METRIC_GAUGE,
                       "Instances that finished in the last 15 minutes, by final state.");
    for (int r = 0; r < PQntuples(fin); r++)
        orr_metrics_sample(w, (const char *const[]){"state", PQgetvalue(fin, r, 0), NULL},
                           (double)hl_val_i64(fin, r, 1));
out:
    orr_arena_destroy(a);
}

static void hl__write(hl_ctx *hc, orr_rpc_server *srv, orr_metrics_writer *w)
{
    if (srv)
        hl__rpc_families(w, srv);
    hl_db_stats ds;
    hl_db_get_stats(hc->db, &ds);
    hl_cache_stats cs;
    hl_cache_get_stats(hc->cache, &cs);
    orr_metrics_single(w, "halley_db_pool_size", ORR_METRIC_GAUGE,
                       "PostgreSQL connections the pool may hold.", ds.size);
    orr_metrics_single(w, "halley_db_pool_idle", ORR_METRIC_GAUGE,
                       "PostgreSQL connections idle in the pool.", ds.idle);
    orr_metrics_single(w, "halley_db_connected", ORR_METRIC_GAUGE,
                       "PostgreSQL connections open and usable.", ds.connected);
    orr_metrics_single(w, "halley_db_unavailable_total", ORR_METRIC_COUNTER,
                       "Calls answered UNAVAILABLE because PostgreSQL could not be reached.",
                       (double)ds.unavailable);
    orr_metrics_single(w, "halley_event_listener_up", ORR_METRIC_GAUGE,
                       "1 while the LISTEN connection for events is in place.",
                       hl_events_listening(hc->events));
    orr_metrics_single(w, "halley_task_cache_hits_total", ORR_METRIC_COUNTER,
                       "Task reads answered from the cache.", (double)cs.hits);
    orr_metrics_single(w, "halley_task_cache_misses_total", ORR_METRIC_COUNTER,
                       "Task reads that went to PostgreSQL.", (double)cs.misses);
    orr_metrics_single(w, "halley_task_cache_entries", ORR_METRIC_GAUGE,
                       "Task versions held in the cache.", (double)cs.entries);
    uint64_t tb, ti;
    hl_tcomb_stats(&tb, &ti);
    orr_metrics_single(w, "halley_transition_batches_total", ORR_METRIC_COUNTER,
                       "Combined statements run for TransitionInstance calls.", (double)tb);
    orr_metrics_single(w, "halley_transition_batch_items_total", ORR_METRIC_COUNTER,
                       "TransitionInstance calls run in those statements.", (double)ti);
    uint64_t wr, wg;
    hl_watch_stats(&wr, &wg);
    orr_metrics_single(w, "halley_watch_reads_total", ORR_METRIC_COUNTER,
                       "Reads of the events table by WatchEvents streams.", (double)wr);
    orr_metrics_single(w, "halley_watch_gap_reads_total", ORR_METRIC_COUNTER,
                       "Of those, reads that first read the oldest open writer to judge a gap"
                       " in the event ids.",
                       (double)wg);
    orr_metrics_single(w, "halley_watch_window_events_total", ORR_METRIC_COUNTER,
                       "Events WatchEvents streams took from the window another stream's read"
                       " filled, instead of reading the table.",
                       hc->evwin ? (double)hl_evwin_taken(hc->evwin) : 0);
    if (hc->db)
        hl__instance_families(hc, w);
}

void hl_metrics_render(hl_ctx *hc, orr_rpc_server *srv, orr_buf *out)
{
    orr_metrics_writer w;
    orr_metrics_writer_init(&w, out);
    hl__write(hc, srv, &w);
}

static void hl__collect(void *ctx, orr_metrics_writer *w)
{
    hl_metrics *m = ctx;
    hl__write(m->hc, atomic_load(&m->srv), w);
}

/* 200 when PostgreSQL answered recently; the listener is reported too. */
static int hl__health(void *ctx, orr_buf *body)
{
    hl_metrics *m = ctx;
    hl_db_stats ds;
    hl_db_get_stats(m->hc->db, &ds);
    int ok = ds.connected > 0;
    orr_buf_appendf(body, "{\"status\":\"%s\",\"db_ok\":%s,\"listener_ok\":%s}",
                    ok ? "ok" : "degraded", ok ? "true" : "false",
                    hl_events_listening(m->hc->events) ? "true" : "false");
    return ok;
}

orr_status hl_metrics_start(const char *listen, hl_ctx *hc, hl_metrics **out, orr_err *err)
{
    hl_metrics *m = orr_xcalloc(1, sizeof *m);
    m->hc = hc;
    m->reg = orr_metrics_create();
    orr_metrics_add_collector(m->reg, hl__collect, m);
    orr_status rc =
        orr_metrics_serve(m->reg, listen, "halley.metrics_listen", hl__health, m, &m->http, err);
    if (rc != ORR_OK) {
        orr_metrics_destroy(m->reg);
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
    return orr_metrics_server_port(m->http);
}

void hl_metrics_stop(hl_metrics *m)
{
    if (!m)
        return;
    orr_metrics_server_stop(m->http);
    orr_metrics_destroy(m->reg);
    free(m);
}

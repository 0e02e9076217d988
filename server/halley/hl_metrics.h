/*
 * hl_metrics.h - halleyd's small HTTP port (the shared orr_metrics endpoint):
 * /metrics (Prometheus text) and /healthz (200 when PostgreSQL answered
 * recently, else 503; the event listener's state is reported too).
 */
#ifndef HL_METRICS_H
#define HL_METRICS_H

#include "hl_api.h"
#include "orr_buf.h"
#include "orr_status.h"

typedef struct hl_metrics hl_metrics;

/* Listen on "host:port" (port 0 = any free port). ORR_EINVAL for a bad
 * address, ORR_EIO if it cannot bind. srv may be NULL until the RPC server
 * exists (see hl_metrics_set_server). */
orr_status hl_metrics_start(const char *listen, hl_ctx *hc, hl_metrics **out, orr_err *err);
void hl_metrics_set_server(hl_metrics *m, orr_rpc_server *srv);
int hl_metrics_port(const hl_metrics *m);
void hl_metrics_stop(hl_metrics *m);

/* Render the Prometheus text of the current state into out. */
void hl_metrics_render(hl_ctx *hc, orr_rpc_server *srv, orr_buf *out);

#endif

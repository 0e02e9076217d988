/*
 * gx_api_progress.c - GET /api/v1/instances/{id}/progress: the live
 * progress of a transfer attempt (docs/api.md "Transfer progress").
 *
 * The answer puts together three Halley reads: the instance (its state and
 * current attempt), the attempt's progress series (GetTransferProgress:
 * the points executord recorded from wormhole's progress line, at most one
 * a second, at most 600) and its final figures (the process statistics
 * recorded from wormhole's summary when the run ended). The console polls
 * it every second while the attempt runs.
 */
#include <math.h>
#include <string.h>

#include "gx_app.h"

static json_t *gx_progress_point(const HL(TransferProgressPoint) * p)
{
    json_t *o = json_object();
    json_object_set_new(o, "at", gx_json_time(p->at_ms));
    json_object_set_new(o, "rows_read", json_integer(p->rows_read));
    json_object_set_new(o, "rows_written", json_integer(p->rows_written));
    json_object_set_new(o, "dirty_rows", json_integer(p->dirty_rows));
    json_object_set_new(o, "rows_per_sec", json_real(p->rows_per_sec));
    json_object_set_new(o, "bytes_read", json_integer(p->bytes_read));
    json_object_set_new(o, "shards_done", json_integer(p->shards_done));
    json_object_set_new(o, "shards_total", json_integer(p->shards_total));
    json_object_set_new(o, "rows_estimate", json_integer(p->rows_estimate));
    json_object_set_new(o, "elapsed_s", json_real(p->elapsed_s));
    int known = p->eta_s >= 0 && isfinite(p->eta_s);
    json_object_set_new(o, "eta_s", known ? json_real(p->eta_s) : json_null());
    json_object_set_new(o, "estimated_end",
                        known ? gx_json_time(p->at_ms + (int64_t)llround(p->eta_s * 1000.0))
                              : json_null());
    return o;
}

void gx_h_instance_progress(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int64_t attempt;
    if (gx_req_query_int(req, resp, "attempt", 0, 0, 1000000, &attempt))
        return;
    HL(GetInstanceRequest) iq = HL_INIT(GET_INSTANCE_REQUEST);
    iq.id = id;
    HL(Instance) * in;
    if (gx_halley(req, resp, "GetInstance", &iq.base, (ProtobufCMessage **)&in) != ORR_OK)
        return;
    if (attempt > in->attempt) {
        gx_resp_fail(resp, ORR_EINVAL, "attempt", "the instance is at attempt %d", in->attempt);
        return;
    }
    int shown = attempt ? (int)attempt : in->attempt;
    HL(GetTransferProgressRequest) pq = HL_INIT(GET_TRANSFER_PROGRESS_REQUEST);
    pq.instance_id = id;
    pq.attempt = shown;
    HL(GetTransferProgressResponse) * ps;
    if (gx_halley(req, resp, "GetTransferProgress", &pq.base, (ProtobufCMessage **)&ps) != ORR_OK)
        return;
    HL(ListProcessStatsRequest) sq = HL_INIT(LIST_PROCESS_STATS_REQUEST);
    sq.instance_id = id;
    HL(ListProcessStatsResponse) * ss;
    if (gx_halley(req, resp, "ListProcessStats", &sq.base, (ProtobufCMessage **)&ss) != ORR_OK)
        return;

    json_t *series = json_array();
    for (size_t i = 0; i < ps->n_points; i++)
        json_array_append_new(series, gx_progress_point(ps->points[i]));
    static const char *const fin_keys[] = {"rows_read",  "rows_written", "dirty_rows",
                                           "bytes_read", "seconds",      "rows_per_sec"};
    json_t *fin = json_object();
    for (size_t i = 0; i < ss->n_stats; i++) {
        const HL(ProcessStat) *s = ss->stats[i];
        if (s->attempt != shown)
            continue;
        for (size_t k = 0; k < sizeof fin_keys / sizeof fin_keys[0]; k++)
            if (strcmp(s->key, fin_keys[k]) == 0)
                json_object_set_new(fin, s->key, json_real(s->value));
    }
    if (json_object_size(fin) == 0) {
        json_decref(fin);
        fin = json_null();
    }
    int running = in->state == HL_STATE(RUNNING) && shown == in->attempt;
    json_t *current = ps->n_points ? gx_progress_point(ps->points[ps->n_points - 1]) : json_null();
    gx_resp_json(resp, 200,
                 json_pack("{s:I,s:i,s:s,s:b,s:o,s:o,s:o}", "instance_id", (json_int_t)id,
                           "attempt", shown, "state", gx_state_name(in->state), "running", running,
                           "current", current, "series", series, "final", fin));
}

/*
 * ex_lineage.c - after a successful transfer run, tell Halley which tables
 * and columns the run moved (ReportRunLineage), from the job as the run used
 * it: the task version the instance was made with, its parameters applied,
 * data sources still by name (the resolved copy with the dsn never leaves the
 * runner). halleyd derives the edges the same way as at a save; they replace
 * the task's previous run-time edges. A failure is logged only: lineage never
 * fails a run.
 */
#include <stdlib.h>
#include <string.h>

#include "ex_daemon.h"
#include "orr_log.h"

void ex_lineage_report(ex_daemon *d, int64_t instance_id, const json_t *config)
{
    if (!json_is_object(config))
        return;
    char *text = json_dumps(config, JSON_COMPACT);
    if (!text)
        return;
    HL(ReportRunLineageRequest) rq = HL_INIT(REPORT_RUN_LINEAGE_REQUEST);
    rq.instance_id = instance_id;
    rq.config_json = text;
    ProtobufCMessage *resp = NULL;
    orr_err err;
    orr_err_clear(&err);
    if (ex_halley(d, "ReportRunLineage", &rq.base, &resp, &err) != ORR_OK) {
        ORR_WARN("run lineage not recorded", "instance=%lld err=%s", (long long)instance_id,
                 orr_log_q(err.msg));
    } else {
        ORR_INFO("run lineage recorded", "instance=%lld edges=%d", (long long)instance_id,
                 (int)((HL(ReportRunLineageResponse) *)resp)->edges);
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    free(text);
}

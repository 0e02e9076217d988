/* gx_it_rpc.c - feeds halleyd the records that galaxyd only reads, for the
 * galaxyd integration tests (the sort checker, the executors and the transfer
 * engine write them in production):
 *
 *   gx_it_rpc HOST:PORT TOKEN report-unit STREAM BUSINESS INTERFACE BUCKET_MS
 *             RECORDS FILES BYTES LATE CHECK_VERSION RECONCILED(0|1)
 *   gx_it_rpc HOST:PORT TOKEN record-stats INSTANCE ATTEMPT KEY=VALUE...
 *   gx_it_rpc HOST:PORT TOKEN add-lineage SKIND SNAME TKIND TNAME TASK_ID
 *   gx_it_rpc HOST:PORT TOKEN put-executor ID HOST SLOTS LABELS_JSON
 *   gx_it_rpc HOST:PORT TOKEN transition INSTANCE FROM TO [EXECUTOR]
 *             (states by their API names: waiting, ready, running, ...)
 *   gx_it_rpc HOST:PORT TOKEN raise-alert RULE_ID EVENT DEDUP_KEY INSTANCE
 *
 * Exit 0 on success; otherwise the error on stderr and exit 1 (2 on usage). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_halley.h"
#include "orr_rpc.h"

static int usage(void)
{
    fprintf(stderr,
            "usage: gx_it_rpc HOST:PORT TOKEN "
            "report-unit|record-stats|add-lineage|put-executor|transition|raise-alert ...\n");
    return 2;
}

/* InstanceState of an API state name ("timed_out"), 0 when unknown. */
static int state_of(const char *name)
{
    char up[64] = "INSTANCE_STATE_";
    size_t n = strlen(up);
    for (const char *p = name; *p && n + 1 < sizeof up; p++)
        up[n++] = (char)toupper((unsigned char)*p);
    up[n] = '\0';
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value_by_name(
        &orrery__halley__v1__instance_state__descriptor, up);
    return v ? v->value : 0;
}

static int call(orr_rpc_client *c, const char *method, const ProtobufCMessage *in)
{
    ProtobufCMessage *out = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (orr_rpc_call_unary(c, method, in, &out, 10000, &e) != ORR_OK) {
        fprintf(stderr, "%s: %s%s%s\n", method, e.field, e.field[0] ? ": " : "", e.msg);
        return 1;
    }
    protobuf_c_message_free_unpacked(out, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    orr_rpc_client *c = NULL;
    orr_err e;
    if (orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, argv[1], argv[2], &c, &e) !=
        ORR_OK) {
        fprintf(stderr, "client: %s\n", e.msg);
        return 1;
    }
    const char *cmd = argv[3];
    int rc = 2;
    if (strcmp(cmd, "report-unit") == 0 && argc == 14) {
        HL(DataUnit) u = HL_INIT(DATA_UNIT);
        u.stream = argv[4];
        u.business = argv[5];
        u.interface = argv[6];
        u.bucket_ms = atoll(argv[7]);
        u.records = atoll(argv[8]);
        u.files = atoi(argv[9]);
        u.bytes = atoll(argv[10]);
        u.late_records = atoll(argv[11]);
        u.check_version = atoi(argv[12]);
        u.reconciled = atoi(argv[13]) != 0;
        HL(ReportDataUnitRequest) rq = HL_INIT(REPORT_DATA_UNIT_REQUEST);
        rq.unit = &u;
        rc = call(c, "ReportDataUnit", &rq.base);
    } else if (strcmp(cmd, "record-stats") == 0 && argc >= 7 && argc - 6 <= 64) {
        HL(ProcessStat) st[64];
        HL(ProcessStat) * ptr[64];
        size_t n = 0;
        for (int i = 6; i < argc; i++) {
            char *eq = strchr(argv[i], '=');
            if (!eq)
                return usage();
            *eq = '\0';
            HL(ProcessStat) s = HL_INIT(PROCESS_STAT);
            s.key = argv[i];
            s.value = atof(eq + 1);
            st[n] = s;
            ptr[n] = &st[n];
            n++;
        }
        HL(RecordProcessStatsRequest) rq = HL_INIT(RECORD_PROCESS_STATS_REQUEST);
        rq.instance_id = atoll(argv[4]);
        rq.attempt = atoi(argv[5]);
        rq.n_stats = n;
        rq.stats = ptr;
        rc = call(c, "RecordProcessStats", &rq.base);
    } else if (strcmp(cmd, "add-lineage") == 0 && argc == 9) {
        HL(LineageEdge) l = HL_INIT(LINEAGE_EDGE);
        l.source_kind = argv[4];
        l.source_name = argv[5];
        l.target_kind = argv[6];
        l.target_name = argv[7];
        l.task_id = atoll(argv[8]);
        HL(LineageEdge) *lp = &l;
        HL(AddLineageRequest) rq = HL_INIT(ADD_LINEAGE_REQUEST);
        rq.n_edges = 1;
        rq.edges = &lp;
        rc = call(c, "AddLineage", &rq.base);
    } else if (strcmp(cmd, "put-executor") == 0 && argc == 8) {
        HL(PutExecutorRequest) rq = HL_INIT(PUT_EXECUTOR_REQUEST);
        rq.id = argv[4];
        rq.host = argv[5];
        rq.slots = atoi(argv[6]);
        rq.labels_json = argv[7];
        rq.active = 1;
        rc = call(c, "PutExecutor", &rq.base);
    } else if (strcmp(cmd, "transition") == 0 && (argc == 7 || argc == 8)) {
        HL(TransitionRequest) rq = HL_INIT(TRANSITION_REQUEST);
        rq.instance_id = atoll(argv[4]);
        rq.expected_state = state_of(argv[5]);
        rq.new_state = state_of(argv[6]);
        rq.actor = "test";
        rq.executor = argc == 8 ? argv[7] : "";
        rc = call(c, "TransitionInstance", &rq.base);
    } else if (strcmp(cmd, "raise-alert") == 0 && argc == 8) {
        HL(RaiseAlertRequest) rq = HL_INIT(RAISE_ALERT_REQUEST);
        rq.rule_id = atoll(argv[4]);
        rq.event = argv[5];
        rq.dedup_key = argv[6];
        rq.instance_id = atoll(argv[7]);
        rq.summary = "raised by a test";
        rc = call(c, "RaiseAlert", &rq.base);
    } else {
        rc = usage();
    }
    orr_rpc_client_destroy(c);
    return rc;
}

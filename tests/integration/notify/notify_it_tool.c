/*
 * notify_it_tool.c - halleyd's alert RPCs for the sender tests and the
 * delivery benchmark (test_sender.py, tests/bench/alerts/):
 *
 *   notify_it_tool zk-root                 (creates NOTIFY_IT_ZK's chroot)
 *   notify_it_tool team NAME
 *   notify_it_tool channel TEAM NAME KIND CONFIG_JSON       -> channel id
 *   notify_it_tool rule TEAM NAME CHANNEL_ID[,ID...] QUIET_S GROUP_S -> rule id
 *   notify_it_tool raise RULE_ID DEDUP_KEY SUMMARY          -> alert id
 *   notify_it_tool burst RULE_ID KEY_PREFIX N THREADS KEYS
 *       N raises spread over KEYS dedup keys (KEY_PREFIX0, KEY_PREFIX1, ...,
 *       raise i on key i % KEYS) from THREADS threads at once; prints one
 *       line per raise: its key and its wall-clock time (ms) before the call
 *   notify_it_tool alerts
 *       every alert as a JSON line with its deliveries
 *
 * Environment: NOTIFY_IT_HALLEY (host:port), NOTIFY_IT_TOKEN. Exit 1 on an
 * RPC error (stderr says which), 2 on bad usage.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"
#include "orr_zk.h"

static orr_rpc_client *g_cl;

static ProtobufCMessage *call(const char *method, const ProtobufCMessage *rq, int allow_exists)
{
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc = orr_rpc_call_unary(g_cl, method, rq, &out, 20000, &err);
    if (rc == ORR_EEXIST && allow_exists)
        return NULL;
    if (rc != ORR_OK) {
        char buf[600];
        fprintf(stderr, "notify_it_tool: %s: %s\n", method, orr_err_str(&err, buf, sizeof buf));
        exit(1);
    }
    return out;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct burst {
    int64_t rule;
    const char *prefix;
    int first, step, n, keys;
    int64_t *at;
    int *key;
} burst;

static void *burst_main(void *arg)
{
    burst *b = arg;
    char key[256];
    for (int i = 0; i < b->n; i++) {
        Orrery__Halley__V1__RaiseAlertRequest rq = ORRERY__HALLEY__V1__RAISE_ALERT_REQUEST__INIT;
        b->key[i] = (b->first + i * b->step) % b->keys;
        snprintf(key, sizeof key, "%s%d", b->prefix, b->key[i]);
        rq.rule_id = b->rule;
        rq.event = "failed";
        rq.dedup_key = key;
        rq.scope_kind = "workflow";
        rq.scope = "bench";
        rq.summary = "failures in workflow bench";
        b->at[i] = now_ms();
        rq.at_ms = b->at[i];
        protobuf_c_message_free_unpacked(call("RaiseAlert", &rq.base, 0), NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *target = getenv("NOTIFY_IT_HALLEY"), *token = getenv("NOTIFY_IT_TOKEN");
    orr_err err;
    if (argc < 2 || !target) {
        fprintf(stderr, "usage: notify_it_tool team|channel|rule|raise|burst|alerts ...\n");
        return 2;
    }
    if (orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, target, token, &g_cl,
                              &err) != ORR_OK) {
        fprintf(stderr, "notify_it_tool: %s\n", err.msg);
        return 1;
    }
    const char *cmd = argv[1];
    const char *zk = getenv("NOTIFY_IT_ZK");
    if (strcmp(cmd, "zk-root") == 0) {
        if (!zk || !strchr(zk, '/')) {
            fprintf(stderr, "notify_it_tool: NOTIFY_IT_ZK must be host:port/root\n");
            return 2;
        }
        char hosts[256];
        snprintf(hosts, sizeof hosts, "%.*s", (int)(strchr(zk, '/') - zk), zk);
        orr_zk *z = NULL;
        orr_status rc = orr_zk_open(hosts, 5000, &z, &err);
        if (rc == ORR_OK)
            rc = orr_zk_create(z, strchr(zk, '/'), NULL, 0, 0, NULL, NULL, &err);
        orr_zk_close(z);
        if (rc != ORR_OK && rc != ORR_EEXIST) {
            fprintf(stderr, "notify_it_tool: zk-root: %s\n", err.msg);
            return 1;
        }
    } else if (strcmp(cmd, "team") == 0 && argc == 3) {
        Orrery__Halley__V1__CreateTeamRequest rq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
        rq.name = argv[2];
        rq.actor = "test";
        ProtobufCMessage *out = call("CreateTeam", &rq.base, 1);
        if (out)
            protobuf_c_message_free_unpacked(out, NULL);
    } else if (strcmp(cmd, "channel") == 0 && argc == 6) {
        Orrery__Halley__V1__AlertChannel rq = ORRERY__HALLEY__V1__ALERT_CHANNEL__INIT;
        rq.team = argv[2];
        rq.name = argv[3];
        rq.kind = argv[4];
        rq.config_json = argv[5];
        rq.actor = "test";
        Orrery__Halley__V1__AlertChannel *c = (void *)call("PutAlertChannel", &rq.base, 0);
        printf("%" PRId64 "\n", c->id);
        protobuf_c_message_free_unpacked(&c->base, NULL);
    } else if (strcmp(cmd, "rule") == 0 && argc == 7) {
        Orrery__Halley__V1__AlertRule rq = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
        int64_t ids[16];
        size_t n = 0;
        for (char *p = strtok(argv[4], ","); p && n < 16; p = strtok(NULL, ","))
            ids[n++] = strtoll(p, NULL, 10);
        char *events[] = {"failed"};
        rq.team = argv[2];
        rq.name = argv[3];
        rq.scope_kind = "workflow";
        rq.scope = "*";
        rq.n_events = 1;
        rq.events = events;
        rq.severity = "critical";
        rq.n_channels = n;
        rq.channels = ids;
        rq.quiet_period_s = atoi(argv[5]);
        rq.group_window_s = atoi(argv[6]);
        rq.params_json = "{}";
        rq.enabled = 1;
        rq.actor = "test";
        Orrery__Halley__V1__AlertRule *r = (void *)call("PutAlertRule", &rq.base, 0);
        printf("%" PRId64 "\n", r->id);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "raise") == 0 && argc == 5) {
        Orrery__Halley__V1__RaiseAlertRequest rq = ORRERY__HALLEY__V1__RAISE_ALERT_REQUEST__INIT;
        rq.rule_id = strtoll(argv[2], NULL, 10);
        rq.event = "failed";
        rq.dedup_key = argv[3];
        rq.scope_kind = "workflow";
        rq.scope = "nightly";
        rq.summary = argv[4];
        rq.details_json = "{\"instance_ids\":[1,2]}";
        rq.at_ms = now_ms();
        Orrery__Halley__V1__RaiseAlertResponse *r = (void *)call("RaiseAlert", &rq.base, 0);
        printf("%" PRId64 "\n", r->alert_id);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "burst") == 0 && argc == 7) {
        int n = atoi(argv[4]), threads = atoi(argv[5]), keys = atoi(argv[6]);
        if (n < 1 || threads < 1 || threads > 64 || keys < 1)
            return 2;
        burst b[64];
        pthread_t th[64];
        for (int t = 0; t < threads; t++) {
            b[t].rule = strtoll(argv[2], NULL, 10);
            b[t].prefix = argv[3];
            b[t].first = t;
            b[t].step = threads;
            b[t].keys = keys;
            b[t].n = n / threads + (t < n % threads);
            b[t].at = calloc((size_t)b[t].n + 1, sizeof(int64_t));
            b[t].key = calloc((size_t)b[t].n + 1, sizeof(int));
            pthread_create(&th[t], NULL, burst_main, &b[t]);
        }
        for (int t = 0; t < threads; t++) {
            pthread_join(th[t], NULL);
            for (int i = 0; i < b[t].n; i++)
                printf("%s%d %" PRId64 "\n", b[t].prefix, b[t].key[i], b[t].at[i]);
            free(b[t].at);
            free(b[t].key);
        }
    } else if (strcmp(cmd, "alerts") == 0 && argc == 2) {
        char token_buf[512] = "";
        for (;;) {
            Orrery__Halley__V1__ListAlertsRequest rq =
                ORRERY__HALLEY__V1__LIST_ALERTS_REQUEST__INIT;
            rq.page_size = 200;
            rq.page_token = token_buf;
            Orrery__Halley__V1__ListAlertsResponse *r = (void *)call("ListAlerts", &rq.base, 0);
            for (size_t i = 0; i < r->n_alerts; i++) {
                Orrery__Halley__V1__Alert *a = r->alerts[i];
                json_t *ds = json_array();
                for (size_t j = 0; j < a->n_deliveries; j++) {
                    Orrery__Halley__V1__AlertDelivery *d = a->deliveries[j];
                    json_array_append_new(
                        ds, json_pack("{s:I, s:I, s:i, s:s, s:i, s:s, s:I, s:i}", "id",
                                      (json_int_t)d->id, "channel_id", (json_int_t)d->channel_id,
                                      "seq", d->seq, "state", d->state, "attempts", d->attempts,
                                      "last_error", d->last_error, "delivered_at_ms",
                                      (json_int_t)d->delivered_at_ms, "count_sent", d->count_sent));
                }
                json_t *o =
                    json_pack("{s:I, s:s, s:i, s:s, s:I, s:o}", "id", (json_int_t)a->id,
                              "dedup_key", a->dedup_key, "count", a->count, "state", a->state,
                              "first_at_ms", (json_int_t)a->first_at_ms, "deliveries", ds);
                char *t = json_dumps(o, JSON_COMPACT);
                printf("%s\n", t);
                free(t);
                json_decref(o);
            }
            snprintf(token_buf, sizeof token_buf, "%s",
                     r->next_page_token ? r->next_page_token : "");
            protobuf_c_message_free_unpacked(&r->base, NULL);
            if (!token_buf[0])
                break;
        }
    } else {
        fprintf(stderr, "notify_it_tool: bad usage of %s\n", cmd);
        return 2;
    }
    orr_rpc_client_destroy(g_cl);
    return 0;
}

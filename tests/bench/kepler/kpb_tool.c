/*
 * kpb_tool.c - the C side of keplerd's scheduler benchmark (run.sh).
 *
 * Talks to halleyd through the orr_rpc client (KPB_HALLEY = host:port,
 * KPB_TOKEN = service token):
 *
 *   instances MS FIRST_ID LAST_ID
 *       one instance at schedule time MS for every task id in
 *       [FIRST_ID, LAST_ID], through CreateInstances in batches of 1000;
 *       prints the number created. Exit 1 if any item fails.
 *   tasks-rpc PREFIX COUNT THREADS SPEC_JSON
 *       COUNT tasks named PREFIX<n> through CreateTask from THREADS threads
 *       (SPEC_JSON without "name": the tool adds it); prints
 *       "tasks=N seconds=S rate=R" (the RPC path's rate, for comparison
 *       with the bulk copy run.sh uses).
 *   executor ID SLOTS SECONDS
 *       a batching stand-in executor (KPB_ZK = ZooKeeper hosts, may carry a
 *       chroot "/name"): registers /orrery/executors/ID (ephemeral) with
 *       SLOTS slots, then every 10 ms lists the instances dispatched to it
 *       (ListInstances, executor + state) and moves them dispatched ->
 *       running -> success (exit 0) in TransitionInstances batches: a no-op
 *       run that costs the scheduler's side nothing per instance beyond two
 *       batched writes. Runs until SIGTERM/SIGINT or SECONDS; prints
 *       "runs=N refused=M".
 *   alert-rules TEAM COUNT
 *       one webhook channel and COUNT alert rules of TEAM on it (PutAlertRule):
 *       rule 0 is team-scoped (deadline_finish of every task of TEAM), rule
 *       n > 0 task-scoped on kpb-d-<n, 7 digits> (failed, retried,
 *       timed_out, deadline_finish); prints "rules=N".
 *
 * Exit 0 on success, 1 on a failed call (message on stderr), 2 on bad usage.
 * Every loop is bounded by its count; calls have a deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"
#include "orr_zk.h"

#define KPB_TIMEOUT_MS  30000
#define KPB_BATCH       1000
#define KPB_MAX_TASKS   1000000
#define KPB_MAX_THREADS 64

static orr_rpc_client *kpb_cl;

static double kpb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses a decimal int64 in [lo, hi]; 0 on success, -1 (message naming
 * what) otherwise. */
static int kpb_int(const char *s, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "kpb_tool: %s: not an integer in [%" PRId64 ", %" PRId64 "]: %s\n", what,
                lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int kpb_instances(int64_t ms, int64_t first, int64_t last)
{
    Orrery__Halley__V1__CreateInstance items[KPB_BATCH];
    Orrery__Halley__V1__CreateInstance *ptrs[KPB_BATCH];
    int64_t created = 0;
    int rc = 0;
    for (int64_t id = first; id <= last;) {
        size_t k = 0;
        for (; k < KPB_BATCH && id <= last; k++, id++) {
            orrery__halley__v1__create_instance__init(&items[k]);
            items[k].task_id = id;
            items[k].schedule_time_ms = ms;
            items[k].actor = "bench";
            ptrs[k] = &items[k];
        }
        Orrery__Halley__V1__CreateInstancesRequest rq =
            ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
        rq.n_instances = k;
        rq.instances = ptrs;
        ProtobufCMessage *out = NULL;
        orr_err err;
        if (orr_rpc_call_unary(kpb_cl, "CreateInstances", &rq.base, &out, KPB_TIMEOUT_MS, &err) !=
            ORR_OK) {
            char buf[600];
            fprintf(stderr, "kpb_tool: CreateInstances: %s\n", orr_err_str(&err, buf, sizeof buf));
            return 1;
        }
        Orrery__Halley__V1__CreateInstancesResponse *r = (void *)out;
        for (size_t i = 0; i < r->n_results; i++) {
            if (r->results[i]->code != 0) {
                if (rc == 0)
                    fprintf(stderr, "kpb_tool: CreateInstances item: %s: %s\n",
                            r->results[i]->field, r->results[i]->message);
                rc = 1;
            } else if (r->results[i]->created) {
                created++;
            }
        }
        protobuf_c_message_free_unpacked(out, NULL);
    }
    printf("%" PRId64 "\n", created);
    return rc;
}

typedef struct kpb_job {
    const char *prefix, *spec; /* spec: a JSON object body without braces */
    int64_t from, to;          /* task numbers [from, to) */
    int failed;
} kpb_job;

static void *kpb_tasks_thread(void *arg)
{
    kpb_job *j = arg;
    size_t cap = strlen(j->spec) + strlen(j->prefix) + 64;
    char *body = malloc(cap);
    if (!body) {
        j->failed = 1;
        return NULL;
    }
    for (int64_t n = j->from; n < j->to && !j->failed; n++) {
        snprintf(body, cap, "{\"name\":\"%s%07" PRId64 "\",%s}", j->prefix, n, j->spec);
        Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
        rq.spec_json = body;
        rq.actor = "bench";
        ProtobufCMessage *out = NULL;
        orr_err err;
        if (orr_rpc_call_unary(kpb_cl, "CreateTask", &rq.base, &out, KPB_TIMEOUT_MS, &err) !=
            ORR_OK) {
            char buf[600];
            fprintf(stderr, "kpb_tool: CreateTask %s: %s\n", body,
                    orr_err_str(&err, buf, sizeof buf));
            j->failed = 1;
        } else {
            protobuf_c_message_free_unpacked(out, NULL);
        }
    }
    free(body);
    return NULL;
}

static int kpb_tasks_rpc(const char *prefix, int64_t count, int64_t threads, const char *spec)
{
    /* spec is a JSON object: drop its braces so the name can lead */
    size_t len = strlen(spec);
    if (len < 2 || spec[0] != '{' || spec[len - 1] != '}') {
        fprintf(stderr, "kpb_tool: SPEC_JSON: must be a JSON object\n");
        return 2;
    }
    char *inner = strndup(spec + 1, len - 2);
    if (!inner)
        return 1;
    pthread_t th[KPB_MAX_THREADS];
    kpb_job jobs[KPB_MAX_THREADS];
    double t0 = kpb_now();
    int64_t started = 0;
    for (int64_t i = 0; i < threads; i++) {
        jobs[i] = (kpb_job){.prefix = prefix,
                            .spec = inner,
                            .from = count * i / threads,
                            .to = count * (i + 1) / threads};
        if (pthread_create(&th[i], NULL, kpb_tasks_thread, &jobs[i]) != 0) {
            fprintf(stderr, "kpb_tool: pthread_create failed\n");
            jobs[i].failed = 1;
            break;
        }
        started++;
    }
    int rc = started == threads ? 0 : 1;
    for (int64_t i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].failed)
            rc = 1;
    }
    double secs = kpb_now() - t0;
    printf("tasks=%" PRId64 " seconds=%.2f rate=%.0f\n", count, secs,
           secs > 0 ? (double)count / secs : 0.0);
    free(inner);
    return rc;
}

/* ------------------------------------------------------------ executor */

static volatile sig_atomic_t kpb_stop;

static void kpb_on_term(int sig)
{
    (void)sig;
    kpb_stop = 1;
}

static void kpb_sleep_ms(int ms)
{
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

/* One TransitionInstances batch of n items from -> to; ok[i] set per item.
 * Returns the number that succeeded, -1 when the call itself failed. */
static int kpb_alert_rules(const char *team, int64_t count)
{
    Orrery__Halley__V1__AlertChannel ch = ORRERY__HALLEY__V1__ALERT_CHANNEL__INIT;
    ch.name = "kpb-hook";
    ch.team = (char *)team;
    ch.kind = "webhook";
    ch.config_json = "{\"url\":\"http://127.0.0.1:9/hook\"}";
    ch.actor = "bench";
    ProtobufCMessage *out = NULL;
    orr_err err;
    char buf[600];
    if (orr_rpc_call_unary(kpb_cl, "PutAlertChannel", &ch.base, &out, 10000, &err) != ORR_OK) {
        fprintf(stderr, "kpb_tool: PutAlertChannel: %s\n", orr_err_str(&err, buf, sizeof buf));
        return 1;
    }
    int64_t chans[1] = {((Orrery__Halley__V1__AlertChannel *)out)->id};
    protobuf_c_message_free_unpacked(out, NULL);
    char *task_evs[] = {"failed", "retried", "timed_out", "deadline_finish"};
    char *team_evs[] = {"deadline_finish"};
    for (int64_t i = 0; i < count; i++) {
        char name[64], scope[64];
        snprintf(name, sizeof name, "kpb-rule-%07" PRId64, i);
        snprintf(scope, sizeof scope, "kpb-d-%07" PRId64, i);
        Orrery__Halley__V1__AlertRule ru = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
        ru.name = name;
        ru.team = (char *)team;
        ru.scope_kind = i ? "task" : "team";
        ru.scope = i ? scope : (char *)team;
        ru.events = i ? task_evs : team_evs;
        ru.n_events = i ? 4 : 1;
        ru.severity = "warning";
        ru.channels = chans;
        ru.n_channels = 1;
        ru.quiet_period_s = 300;
        ru.group_window_s = 1;
        ru.params_json = "{}";
        ru.enabled = 1;
        ru.actor = "bench";
        if (orr_rpc_call_unary(kpb_cl, "PutAlertRule", &ru.base, &out, 10000, &err) != ORR_OK) {
            fprintf(stderr, "kpb_tool: PutAlertRule: %s\n", orr_err_str(&err, buf, sizeof buf));
            return 1;
        }
        protobuf_c_message_free_unpacked(out, NULL);
    }
    printf("rules=%" PRId64 "\n", count);
    return 0;
}

static int kpb_batch(Orrery__Halley__V1__TransitionRequest *items, size_t n, int *ok)
{
    Orrery__Halley__V1__TransitionRequest *ptrs[KPB_BATCH];
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &items[i];
    Orrery__Halley__V1__TransitionBatchRequest rq =
        ORRERY__HALLEY__V1__TRANSITION_BATCH_REQUEST__INIT;
    rq.n_items = n;
    rq.items = ptrs;
    ProtobufCMessage *out = NULL;
    orr_err err;
    if (orr_rpc_call_unary(kpb_cl, "TransitionInstances", &rq.base, &out, KPB_TIMEOUT_MS, &err) !=
        ORR_OK) {
        char buf[600];
        fprintf(stderr, "kpb_tool: TransitionInstances: %s\n", orr_err_str(&err, buf, sizeof buf));
        return -1;
    }
    Orrery__Halley__V1__TransitionBatchResponse *r = (void *)out;
    int good = 0;
    for (size_t i = 0; i < n; i++) {
        ok[i] = i < r->n_results && r->results[i]->code == 0;
        good += ok[i];
    }
    protobuf_c_message_free_unpacked(out, NULL);
    return good;
}

static int kpb_executor(const char *zkhosts, const char *id, int64_t slots, int64_t seconds)
{
    signal(SIGTERM, kpb_on_term);
    signal(SIGINT, kpb_on_term);
    orr_zk_opts zo = {.session_ms = 4000, .wait_ms = 10000};
    orr_zk *zk;
    orr_err zerr;
    if (orr_zk_start(zkhosts, &zo, &zk, &zerr) != ORR_OK) {
        fprintf(stderr, "kpb_tool: %s\n", zerr.msg);
        orr_zk_close(zk);
        return 1;
    }
    orr_zk_mkdirs(zk, "/orrery/executors", &zerr);
    char path[256], data[512], actor[200];
    snprintf(path, sizeof path, "/orrery/executors/%s", id);
    snprintf(actor, sizeof actor, "executor:%s", id);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int n = snprintf(data, sizeof data,
                     "{\"id\":\"%s\",\"host\":\"127.0.0.1\",\"http_port\":0,\"slots\":%" PRId64
                     ",\"used_slots\":0,\"labels\":{},\"started_at\":%" PRId64 "}",
                     id, slots, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (orr_zk_create(zk, path, data, (size_t)n, ORR_ZK_EPHEMERAL, NULL, NULL, &zerr) != ORR_OK) {
        fprintf(stderr, "kpb_tool: register %s: %s\n", path, zerr.msg);
        orr_zk_close(zk);
        return 1;
    }
    fprintf(stderr, "executor %s registered\n", id);
    static Orrery__Halley__V1__TransitionRequest items[KPB_BATCH];
    static int ok[KPB_BATCH];
    int64_t runs = 0, refused = 0;
    int rc = 0;
    double end = kpb_now() + (double)seconds;
    while (!kpb_stop && kpb_now() < end) {
        Orrery__Halley__V1__ListInstancesRequest lq =
            ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
        Orrery__Halley__V1__InstanceState dst =
            ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_DISPATCHED;
        lq.executor = (char *)id;
        lq.n_states = 1;
        lq.states = &dst;
        lq.page_size = KPB_BATCH;
        ProtobufCMessage *out = NULL;
        orr_err err;
        if (orr_rpc_call_unary(kpb_cl, "ListInstances", &lq.base, &out, KPB_TIMEOUT_MS, &err) !=
            ORR_OK) {
            char buf[600];
            fprintf(stderr, "kpb_tool: ListInstances: %s\n", orr_err_str(&err, buf, sizeof buf));
            rc = 1;
            break;
        }
        Orrery__Halley__V1__ListInstancesResponse *lr = (void *)out;
        size_t k = lr->n_instances < KPB_BATCH ? lr->n_instances : KPB_BATCH;
        for (size_t i = 0; i < k; i++) {
            orrery__halley__v1__transition_request__init(&items[i]);
            items[i].instance_id = lr->instances[i]->id;
            items[i].expected_attempt = lr->instances[i]->attempt;
            items[i].expected_state = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_DISPATCHED;
            items[i].new_state = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_RUNNING;
            items[i].actor = actor;
            items[i].reason = "started";
        }
        protobuf_c_message_free_unpacked(out, NULL);
        if (k == 0) {
            kpb_sleep_ms(10);
            continue;
        }
        if (kpb_batch(items, k, ok) < 0) {
            rc = 1;
            break;
        }
        size_t m = 0;
        for (size_t i = 0; i < k; i++) {
            if (!ok[i]) {
                refused++;
                continue;
            }
            items[m] = items[i];
            items[m].expected_state = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_RUNNING;
            items[m].new_state = ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_SUCCESS;
            items[m].reason = "exit 0";
            items[m].has_exit_code = 1;
            items[m].exit_code = 0;
            m++;
        }
        int good = m ? kpb_batch(items, m, ok) : 0;
        if (good < 0) {
            rc = 1;
            break;
        }
        runs += good;
        refused += (int64_t)m - good;
    }
    orr_zk_close(zk);
    printf("runs=%" PRId64 " refused=%" PRId64 "\n", runs, refused);
    return rc;
}

int main(int argc, char **argv)
{
    const char *halley = getenv("KPB_HALLEY"), *token = getenv("KPB_TOKEN");
    if (argc < 2) {
        fprintf(stderr, "usage: kpb_tool instances MS FIRST_ID LAST_ID | "
                        "tasks-rpc PREFIX COUNT THREADS SPEC_JSON | executor ID SLOTS SECONDS | "
                        "alert-rules TEAM COUNT\n");
        return 2;
    }
    if (!halley || !token) {
        fprintf(stderr, "kpb_tool: KPB_HALLEY and KPB_TOKEN must be set\n");
        return 2;
    }
    int64_t a = 0, b = 0, c = 0;
    if (strcmp(argv[1], "instances") == 0 && argc == 5) {
        if (kpb_int(argv[2], "MS", 0, INT64_MAX / 2, &a) ||
            kpb_int(argv[3], "FIRST_ID", 1, INT64_MAX / 2, &b) ||
            kpb_int(argv[4], "LAST_ID", b, b + KPB_MAX_TASKS, &c))
            return 2;
    } else if (strcmp(argv[1], "tasks-rpc") == 0 && argc == 6) {
        if (kpb_int(argv[3], "COUNT", 1, KPB_MAX_TASKS, &a) ||
            kpb_int(argv[4], "THREADS", 1, KPB_MAX_THREADS, &b))
            return 2;
    } else if (strcmp(argv[1], "executor") == 0 && argc == 5) {
        if (!getenv("KPB_ZK")) {
            fprintf(stderr, "kpb_tool: KPB_ZK must be set\n");
            return 2;
        }
        if (kpb_int(argv[3], "SLOTS", 1, 100000, &a) || kpb_int(argv[4], "SECONDS", 1, 86400, &b))
            return 2;
    } else if (strcmp(argv[1], "alert-rules") == 0 && argc == 4) {
        if (kpb_int(argv[3], "COUNT", 0, 100000, &a))
            return 2;
    } else {
        fprintf(stderr, "kpb_tool: bad command or arguments: %s\n", argv[1]);
        return 2;
    }
    orr_err err;
    if (orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, halley, token, &kpb_cl,
                              &err) != ORR_OK) {
        char buf[600];
        fprintf(stderr, "kpb_tool: client: %s\n", orr_err_str(&err, buf, sizeof buf));
        return 1;
    }
    int rc;
    if (argv[1][0] == 'i')
        rc = kpb_instances(a, b, c);
    else if (argv[1][0] == 't')
        rc = kpb_tasks_rpc(argv[2], a, b, argv[5]);
    else if (argv[1][0] == 'a')
        rc = kpb_alert_rules(argv[2], a);
    else
        rc = kpb_executor(getenv("KPB_ZK"), argv[2], a, b);
    fflush(stdout);
    orr_rpc_client_destroy(kpb_cl);
    return rc;
}

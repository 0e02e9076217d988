/*
 * kp_it_tool.c - the C side of keplerd's integration tests.
 *
 * Talks to halleyd through the orr_rpc client (KP_IT_HALLEY, KP_IT_TOKEN)
 * and to ZooKeeper (KP_IT_ZK, may carry a chroot "/name"):
 *
 *   zk-root                       create the chroot node of KP_IT_ZK
 *   team NAME                     create a team
 *   task SPEC_JSON                create a task; prints its id
 *   pool NAME CAPACITY            create or resize a pool
 *   stream NAME SPEC_JSON         create or replace a sort stream
 *   unit STREAM BUSINESS INTERFACE BUCKET_MS RECONCILED(0|1) [VERSION]
 *                                 report a data unit's statistics
 *   create TASK_ID MS [MS...]     create instances; prints their ids
 *   instances [PREFIX]            one JSON line per instance (task name prefix)
 *   max-live PREFIX COUNT MS      sample every 20 ms how many instances of
 *                                 tasks named PREFIX* are dispatched or
 *                                 running, until COUNT of them have ended
 *                                 (success, failed, killed, timed_out);
 *                                 prints the maximum; exit 1 if that takes
 *                                 longer than MS ms
 *   run-now TASK_ID MS IGNORE_UPSTREAMS(0|1)
 *                                 RunNow of that slot as "user:test"; prints
 *                                 the instance id
 *   backfill TASK_ID FROM_MS TO_MS MAX_CYCLES WITH_DOWNSTREAM(0|1)
 *                                 Backfill; prints the created instances' ids
 *   finish ID ATTEMPT             running -> success of that attempt (ends a
 *                                 run that a holding executor keeps)
 *   fail ID ATTEMPT               running -> failed of that attempt
 *   blockers ID                   what keplerd last wrote as blocking the
 *                                 instance (GetBlockers): one JSON line
 *                                 {"found", "state", "evaluated_at_ms",
 *                                 "blockers": [...], "holders": [...]}
 *   drain ID 0|1                  resume / drain an executor (UpdateExecutor)
 *   quota TEAM MAX_RUNNING MAX_SLOTS   a team's quota (0 = no limit)
 *   calendar NAME TEAM WEEKDAYS   create (or, if it exists, update) a UTC
 *                                 business calendar; WEEKDAYS like "12345"
 *                                 ("" = none: no business day at all)
 *   audit PREFIX                  for every instance of tasks PREFIX*: its
 *                                 state, attempts, and the number of
 *                                 ready->dispatched transitions per attempt;
 *                                 prints one JSON summary line
 *   alert-rule NAME SCOPE_KIND SCOPE EVENTS_CSV [PARAMS_JSON]
 *                                 a webhook channel (to a closed port: no
 *                                 sender runs here) and a rule of team
 *                                 "data" on it; prints the rule id
 *   stats ID ATTEMPT KEY VALUE    record one process statistic of an attempt
 *   alerts RULE_ID                one JSON line per alert of the rule
 *                                 {"id","event","dedup_key","count","state",
 *                                 "instance_id","first_at_ms","last_at_ms",
 *                                 "created_at_ms"}
 *   executor ID SLOTS RUN_MS [LABELS_JSON]
 *                                 a stand-in executor: registers
 *                                 /orrery/executors/ID (ephemeral), follows
 *                                 the events of instances dispatched to it,
 *                                 moves them dispatched -> running and, RUN_MS
 *                                 later, running -> success (failed when the
 *                                 task's name contains "fail"); every second it
 *                                 also polls for instances dispatched to it
 *                                 that it has not seen (a missed event).
 *                                 RUN_MS < 0: runs never end by themselves
 *                                 (the test ends them, or kills the executor).
 *                                 With KP_IT_BUDGET=FILE set, it ends at most
 *                                 as many runs in all as the number in FILE
 *                                 (re-read every round; missing file = 0):
 *                                 the rest are held until the test raises it.
 *                                 Runs until SIGTERM/SIGKILL.
 *
 * Exit 0 on success, 1 on a failed call (message on stderr), 2 on bad usage.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"
#include "orr_zk.h"

#define TIMEOUT_MS 15000

static orr_rpc_client *cl;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

static ProtobufCMessage *call(const char *method, const ProtobufCMessage *req)
{
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc = orr_rpc_call_unary(cl, method, req, &out, TIMEOUT_MS, &err);
    if (rc != ORR_OK) {
        char buf[600];
        fprintf(stderr, "kp_it_tool: %s: %s\n", method, orr_err_str(&err, buf, sizeof buf));
        exit(1);
    }
    return out;
}

static const char *state_name(int s)
{
    static const char *n[] = {"unknown",   "waiting",   "ready",         "dispatched",
                              "running",   "success",   "failed",        "killed",
                              "timed_out", "suspended", "marked_success"};
    return s >= 0 && s <= 10 ? n[s] : "unknown";
}

typedef void (*inst_fn)(const Orrery__Halley__V1__Instance *in, void *ctx);

static void each_instance(const char *prefix, inst_fn fn, void *ctx)
{
    char token[32] = "";
    for (;;) {
        Orrery__Halley__V1__ListInstancesRequest rq =
            ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
        rq.page_size = 1000;
        rq.page_token = token;
        Orrery__Halley__V1__ListInstancesResponse *r = (void *)call("ListInstances", &rq.base);
        for (size_t i = 0; i < r->n_instances; i++)
            if (!prefix || strncmp(r->instances[i]->task_name, prefix, strlen(prefix)) == 0)
                fn(r->instances[i], ctx);
        int more = r->next_page_token && r->next_page_token[0];
        if (more)
            snprintf(token, sizeof token, "%s", r->next_page_token);
        protobuf_c_message_free_unpacked(&r->base, NULL);
        if (!more)
            break;
    }
}

static void print_inst(const Orrery__Halley__V1__Instance *in, void *ctx)
{
    (void)ctx;
    printf("{\"id\":%" PRId64 ",\"task_id\":%" PRId64 ",\"task\":\"%s\",\"sched\":%" PRId64
           ",\"state\":\"%s\",\"attempt\":%d,\"executor\":\"%s\",\"reason\":\"%s\","
           "\"started\":%" PRId64 ",\"finished\":%" PRId64 "}\n",
           in->id, in->task_id, in->task_name, in->schedule_time_ms, state_name(in->state),
           in->attempt, in->executor, in->reason, in->started_at_ms, in->finished_at_ms);
}

typedef struct live_count {
    int live, ended;
} live_count;

static void count_live(const Orrery__Halley__V1__Instance *in, void *ctx)
{
    live_count *c = ctx;
    switch (in->state) {
    case ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_DISPATCHED:
    case ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_RUNNING:
        c->live++;
        break;
    case ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_SUCCESS:
    case ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_FAILED:
    case ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_KILLED:
    case ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_TIMED_OUT:
        c->ended++;
        break;
    default:
        break;
    }
}

typedef struct audit {
    int instances, success, other, double_dispatch, attempts, missing_dispatch;
} audit;

static void audit_one(const Orrery__Halley__V1__Instance *in, void *ctx)
{
    audit *a = ctx;
    a->instances++;
    if (in->state == ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_SUCCESS)
        a->success++;
    else
        a->other++;
    a->attempts += in->attempt;
    Orrery__Halley__V1__ListTransitionsRequest rq =
        ORRERY__HALLEY__V1__LIST_TRANSITIONS_REQUEST__INIT;
    rq.instance_id = in->id;
    Orrery__Halley__V1__ListTransitionsResponse *r = (void *)call("ListTransitions", &rq.base);
    int per[128] = {0};
    for (size_t i = 0; i < r->n_transitions; i++) {
        const Orrery__Halley__V1__Transition *t = r->transitions[i];
        if (t->to_state == ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_DISPATCHED &&
            t->attempt > 0 && t->attempt < 128)
            per[t->attempt]++;
    }
    for (int k = 1; k <= in->attempt && k < 128; k++) {
        if (per[k] > 1) {
            a->double_dispatch++;
            fprintf(stderr, "instance %" PRId64 " attempt %d dispatched %d times\n", in->id, k,
                    per[k]);
        }
        if (per[k] == 0 && in->state == ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_SUCCESS)
            a->missing_dispatch++;
    }
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* ------------------------------------------------------------ executor */

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
    (void)sig;
    stop_flag = 1;
}

typedef struct run {
    int64_t id, end_ms;
    int attempt, fail;
} run;

static int transition(int64_t id, int from, int to, int attempt, const char *actor,
                      const char *reason)
{
    Orrery__Halley__V1__TransitionRequest rq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    rq.instance_id = id;
    rq.expected_state = (Orrery__Halley__V1__InstanceState)from;
    rq.new_state = (Orrery__Halley__V1__InstanceState)to;
    rq.actor = (char *)actor;
    rq.reason = (char *)reason;
    rq.expected_attempt = attempt;
    ProtobufCMessage *out = NULL;
    orr_err err;
    orr_status rc = orr_rpc_call_unary(cl, "TransitionInstance", &rq.base, &out, TIMEOUT_MS, &err);
    if (out)
        protobuf_c_message_free_unpacked(out, NULL);
    return rc == ORR_OK;
}

/* The completion budget of KP_IT_BUDGET (see the file header). */
static long read_budget(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

static int cmd_executor(const char *zkhosts, const char *id, int slots, int run_ms,
                        const char *labels)
{
    const char *budget_file = getenv("KP_IT_BUDGET");
    long ended = 0, held_logged = -1;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    orr_zk_opts zo = {.session_ms = 3000, .wait_ms = 5000};
    orr_zk *zk;
    orr_err zerr;
    if (orr_zk_start(zkhosts, &zo, &zk, &zerr) != ORR_OK) {
        fprintf(stderr, "kp_it_tool: %s\n", zerr.msg);
        orr_zk_close(zk);
        return 1;
    }
    orr_zk_mkdirs(zk, "/orrery/executors", &zerr);
    char path[256], data[1024], actor[200];
    snprintf(path, sizeof path, "/orrery/executors/%s", id);
    snprintf(actor, sizeof actor, "executor:%s", id);
    int n = snprintf(data, sizeof data,
                     "{\"id\":\"%s\",\"host\":\"127.0.0.1\",\"http_port\":0,\"slots\":%d,"
                     "\"used_slots\":0,\"labels\":%s,\"started_at\":%" PRId64 "}",
                     id, slots, labels ? labels : "{}", now_ms());
    /* open the event stream before registering, so no dispatch is missed */
    Orrery__Halley__V1__WatchEventsRequest wq = ORRERY__HALLEY__V1__WATCH_EVENTS_REQUEST__INIT;
    char *kinds[] = {"instance.transition"};
    wq.from_latest = 1;
    wq.n_kinds = 1;
    wq.kinds = kinds;
    wq.executor = (char *)id;
    orr_rpc_stream *st = NULL;
    orr_err err;
    if (orr_rpc_stream_open(cl, "WatchEvents", &wq.base, 0, &st, &err) != ORR_OK) {
        fprintf(stderr, "kp_it_tool: WatchEvents: %s\n", err.msg);
        return 1;
    }
    sleep_ms(300);
    if (orr_zk_create(zk, path, data, (size_t)n, ORR_ZK_EPHEMERAL, NULL, NULL, &zerr) != ORR_OK) {
        fprintf(stderr, "kp_it_tool: register %s: %s\n", path, zerr.msg);
        return 1;
    }
    fprintf(stderr, "executor %s registered\n", id);
    run *runs = calloc(4096, sizeof *runs);
    size_t n_runs = 0;
    int64_t last_id = 0, last_poll = now_ms();
    while (!stop_flag) {
        ProtobufCMessage *msg = NULL;
        orr_status s = orr_rpc_stream_next(st, &msg, 20, &err);
        if (s == ORR_OK) {
            Orrery__Halley__V1__Event *ev = (void *)msg;
            last_id = ev->id;
            if (strstr(ev->payload_json, "\"to\": \"dispatched\"") ||
                strstr(ev->payload_json, "\"to\":\"dispatched\"")) {
                const char *ap = strstr(ev->payload_json, "\"attempt\"");
                int attempt = ap ? atoi(strchr(ap, ':') + 1) : 0;
                Orrery__Halley__V1__GetInstanceRequest gq =
                    ORRERY__HALLEY__V1__GET_INSTANCE_REQUEST__INIT;
                gq.id = ev->instance_id;
                Orrery__Halley__V1__Instance *in = (void *)call("GetInstance", &gq.base);
                int fail = strstr(in->task_name, "fail") != NULL;
                protobuf_c_message_free_unpacked(&in->base, NULL);
                int started = transition(ev->instance_id, 3, 4, attempt, actor, "started");
                fprintf(stderr, "event %" PRId64 ": instance %" PRId64 " attempt %d dispatched%s\n",
                        ev->id, ev->instance_id, attempt, started ? "" : " (start refused)");
                if (started && n_runs < 4096) {
                    runs[n_runs].id = ev->instance_id;
                    runs[n_runs].attempt = attempt;
                    runs[n_runs].fail = fail;
                    runs[n_runs].end_ms = run_ms < 0 ? INT64_MAX : now_ms() + run_ms;
                    n_runs++;
                }
            }
            protobuf_c_message_free_unpacked(msg, NULL);
        } else if (s != ORR_ETIMEOUT) {
            /* reopen from where we were */
            orr_rpc_stream_close(st);
            sleep_ms(200);
            wq.from_latest = last_id == 0;
            wq.from_id = last_id;
            if (orr_rpc_stream_open(cl, "WatchEvents", &wq.base, 0, &st, &err) != ORR_OK)
                st = NULL;
            if (!st)
                break;
        }
        int64_t t = now_ms();
        if (t - last_poll >= 1000) {
            /* an executor must not depend on the event stream alone: poll for
             * instances dispatched to it that it has not started */
            last_poll = t;
            Orrery__Halley__V1__ListInstancesRequest lq =
                ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
            Orrery__Halley__V1__InstanceState dst =
                ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_DISPATCHED;
            lq.executor = (char *)id;
            lq.n_states = 1;
            lq.states = &dst;
            lq.page_size = 1000;
            Orrery__Halley__V1__ListInstancesResponse *lr = (void *)call("ListInstances", &lq.base);
            for (size_t i = 0; i < lr->n_instances; i++) {
                const Orrery__Halley__V1__Instance *in = lr->instances[i];
                if (t - in->updated_at_ms < 1000)
                    continue; /* its event is probably on the way */
                int started = transition(in->id, 3, 4, in->attempt, actor, "started");
                fprintf(stderr, "poll: instance %" PRId64 " attempt %d dispatched%s\n", in->id,
                        in->attempt, started ? "" : " (start refused)");
                if (started && n_runs < 4096) {
                    runs[n_runs].id = in->id;
                    runs[n_runs].attempt = in->attempt;
                    runs[n_runs].fail = strstr(in->task_name, "fail") != NULL;
                    runs[n_runs].end_ms = run_ms < 0 ? INT64_MAX : t + run_ms;
                    n_runs++;
                }
            }
            protobuf_c_message_free_unpacked(&lr->base, NULL);
        }
        long budget = budget_file ? read_budget(budget_file) : -1;
        if (budget >= 0 && ended >= budget && held_logged != budget) {
            fprintf(stderr, "budget reached: %ld runs ended, the rest are held\n", ended);
            held_logged = budget;
        }
        for (size_t i = 0; i < n_runs;) {
            if (runs[i].end_ms <= t && (budget < 0 || ended < budget)) {
                transition(runs[i].id, 4, runs[i].fail ? 6 : 5, runs[i].attempt, actor,
                           runs[i].fail ? "exit 1" : "exit 0");
                ended++;
                runs[i] = runs[--n_runs];
            } else {
                i++;
            }
        }
    }
    if (st)
        orr_rpc_stream_close(st);
    orr_zk_close(zk);
    free(runs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kp_it_tool COMMAND ARGS (see the file header)\n");
        return 2;
    }
    const char *halley = getenv("KP_IT_HALLEY"), *token = getenv("KP_IT_TOKEN");
    const char *zk = getenv("KP_IT_ZK");
    const char *cmd = argv[1];
    if (strcmp(cmd, "zk-root") == 0) {
        if (!zk || !strchr(zk, '/')) {
            fprintf(stderr, "kp_it_tool: KP_IT_ZK must be host:port/root\n");
            return 2;
        }
        char hosts[256];
        snprintf(hosts, sizeof hosts, "%.*s", (int)(strchr(zk, '/') - zk), zk);
        orr_zk *z;
        orr_err zerr;
        orr_status rc = orr_zk_open(hosts, 5000, &z, &zerr);
        if (rc == ORR_OK)
            rc = orr_zk_create(z, strchr(zk, '/'), NULL, 0, 0, NULL, NULL, &zerr);
        orr_zk_close(z);
        if (rc != ORR_OK && rc != ORR_EEXIST) {
            fprintf(stderr, "kp_it_tool: zk-root: %s\n", zerr.msg);
            return 1;
        }
        return 0;
    }
    if (!halley) {
        fprintf(stderr, "kp_it_tool: KP_IT_HALLEY is not set\n");
        return 2;
    }
    orr_err err;
    if (orr_rpc_client_create(&orrery__halley__v1__halley__descriptor, halley, token, &cl, &err) !=
        ORR_OK) {
        fprintf(stderr, "kp_it_tool: client: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    if (strcmp(cmd, "team") == 0 && argc == 3) {
        Orrery__Halley__V1__CreateTeamRequest rq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
        rq.name = argv[2];
        rq.actor = "test";
        protobuf_c_message_free_unpacked(call("CreateTeam", &rq.base), NULL);
    } else if (strcmp(cmd, "task") == 0 && argc == 3) {
        Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
        rq.spec_json = argv[2];
        rq.actor = "test";
        Orrery__Halley__V1__Task *t = (void *)call("CreateTask", &rq.base);
        printf("%" PRId64 "\n", t->id);
        protobuf_c_message_free_unpacked(&t->base, NULL);
    } else if (strcmp(cmd, "pool") == 0 && argc == 4) {
        Orrery__Halley__V1__PutPoolRequest rq = ORRERY__HALLEY__V1__PUT_POOL_REQUEST__INIT;
        rq.name = argv[2];
        rq.capacity = atoi(argv[3]);
        rq.actor = "test";
        protobuf_c_message_free_unpacked(call("PutPool", &rq.base), NULL);
    } else if (strcmp(cmd, "stream") == 0 && argc == 4) {
        Orrery__Halley__V1__PutSortStreamRequest rq =
            ORRERY__HALLEY__V1__PUT_SORT_STREAM_REQUEST__INIT;
        rq.name = argv[2];
        rq.spec_json = argv[3];
        rq.active = 1;
        rq.actor = "test";
        protobuf_c_message_free_unpacked(call("PutSortStream", &rq.base), NULL);
    } else if (strcmp(cmd, "unit") == 0 && (argc == 7 || argc == 8)) {
        Orrery__Halley__V1__DataUnit u = ORRERY__HALLEY__V1__DATA_UNIT__INIT;
        u.stream = argv[2];
        u.business = argv[3];
        u.interface = argv[4];
        u.bucket_ms = strtoll(argv[5], NULL, 10);
        u.reconciled = strcmp(argv[6], "1") == 0;
        u.records = 10;
        u.files = 1;
        u.bytes = 100;
        u.check_version = argc == 8 ? atoi(argv[7]) : 1;
        Orrery__Halley__V1__ReportDataUnitRequest rq =
            ORRERY__HALLEY__V1__REPORT_DATA_UNIT_REQUEST__INIT;
        rq.unit = &u;
        protobuf_c_message_free_unpacked(call("ReportDataUnit", &rq.base), NULL);
    } else if (strcmp(cmd, "create") == 0 && argc >= 4) {
        size_t n = (size_t)(argc - 3);
        for (size_t off = 0; off < n; off += 1000) {
            size_t k = n - off < 1000 ? n - off : 1000;
            Orrery__Halley__V1__CreateInstance *items = calloc(k, sizeof *items);
            Orrery__Halley__V1__CreateInstance **ptrs = calloc(k, sizeof *ptrs);
            for (size_t i = 0; i < k; i++) {
                orrery__halley__v1__create_instance__init(&items[i]);
                items[i].task_id = strtoll(argv[2], NULL, 10);
                items[i].schedule_time_ms = strtoll(argv[3 + off + i], NULL, 10);
                items[i].actor = "test";
                ptrs[i] = &items[i];
            }
            Orrery__Halley__V1__CreateInstancesRequest rq =
                ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
            rq.n_instances = k;
            rq.instances = ptrs;
            Orrery__Halley__V1__CreateInstancesResponse *r =
                (void *)call("CreateInstances", &rq.base);
            for (size_t i = 0; i < r->n_results; i++) {
                if (r->results[i]->code != 0) {
                    fprintf(stderr, "kp_it_tool: create: %s\n", r->results[i]->message);
                    rc = 1;
                } else {
                    printf("%" PRId64 "\n", r->results[i]->instance->id);
                }
            }
            protobuf_c_message_free_unpacked(&r->base, NULL);
            free(items);
            free(ptrs);
        }
    } else if (strcmp(cmd, "instances") == 0) {
        each_instance(argc > 2 ? argv[2] : NULL, print_inst, NULL);
    } else if (strcmp(cmd, "transitions") == 0 && argc == 3) {
        Orrery__Halley__V1__ListTransitionsRequest rq =
            ORRERY__HALLEY__V1__LIST_TRANSITIONS_REQUEST__INIT;
        rq.instance_id = strtoll(argv[2], NULL, 10);
        Orrery__Halley__V1__ListTransitionsResponse *r = (void *)call("ListTransitions", &rq.base);
        for (size_t i = 0; i < r->n_transitions; i++) {
            const Orrery__Halley__V1__Transition *t = r->transitions[i];
            printf("{\"id\":%" PRId64 ",\"attempt\":%d,\"from\":\"%s\",\"to\":\"%s\","
                   "\"actor\":\"%s\",\"executor\":\"%s\",\"at\":%" PRId64 ",\"reason\":\"%s\"}\n",
                   t->id, t->attempt, state_name(t->from_state), state_name(t->to_state), t->actor,
                   t->executor, t->at_ms, t->reason);
        }
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "max-live") == 0 && argc == 5) {
        int want = atoi(argv[3]);
        int64_t end = now_ms() + atoll(argv[4]);
        int max = 0;
        for (;;) {
            live_count c = {0, 0};
            each_instance(argv[2], count_live, &c);
            if (c.live > max)
                max = c.live;
            if (c.ended >= want)
                break;
            if (now_ms() >= end) {
                fprintf(stderr, "kp_it_tool: max-live: %d of %d instances ended in %s ms\n",
                        c.ended, want, argv[4]);
                rc = 1;
                break;
            }
            sleep_ms(20);
        }
        printf("%d\n", max);
    } else if (strcmp(cmd, "run-now") == 0 && argc == 5) {
        Orrery__Halley__V1__RunNowRequest rq = ORRERY__HALLEY__V1__RUN_NOW_REQUEST__INIT;
        rq.task_id = strtoll(argv[2], NULL, 10);
        rq.schedule_time_ms = strtoll(argv[3], NULL, 10);
        rq.ignore_upstreams = strcmp(argv[4], "1") == 0;
        rq.actor = "user:test";
        Orrery__Halley__V1__RunNowResponse *r = (void *)call("RunNow", &rq.base);
        printf("%" PRId64 "\n", r->instance->id);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "backfill") == 0 && argc == 7) {
        Orrery__Halley__V1__BackfillRequest rq = ORRERY__HALLEY__V1__BACKFILL_REQUEST__INIT;
        rq.task_id = strtoll(argv[2], NULL, 10);
        rq.from_ms = strtoll(argv[3], NULL, 10);
        rq.to_ms = strtoll(argv[4], NULL, 10);
        rq.max_cycles = atoi(argv[5]);
        rq.include_downstream = strcmp(argv[6], "1") == 0;
        rq.actor = "user:test";
        Orrery__Halley__V1__BackfillResponse *r = (void *)call("Backfill", &rq.base);
        for (size_t i = 0; i < r->n_created; i++)
            printf("%" PRId64 "\n", r->created[i]->id);
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "finish") == 0 && argc == 4) {
        if (!transition(strtoll(argv[2], NULL, 10), 4, 5, atoi(argv[3]), "test", "exit 0")) {
            fprintf(stderr, "kp_it_tool: finish %s: the transition was refused\n", argv[2]);
            rc = 1;
        }
    } else if (strcmp(cmd, "fail") == 0 && argc == 4) {
        if (!transition(strtoll(argv[2], NULL, 10), 4, 6, atoi(argv[3]), "test", "exit 1")) {
            fprintf(stderr, "kp_it_tool: fail %s: the transition was refused\n", argv[2]);
            rc = 1;
        }
    } else if (strcmp(cmd, "blockers") == 0 && argc == 3) {
        Orrery__Halley__V1__GetBlockersRequest rq = ORRERY__HALLEY__V1__GET_BLOCKERS_REQUEST__INIT;
        rq.instance_id = strtoll(argv[2], NULL, 10);
        Orrery__Halley__V1__GetBlockersResponse *r = (void *)call("GetBlockers", &rq.base);
        printf("{\"found\":%s,\"state\":\"%s\",\"evaluated_at_ms\":%" PRId64 ",\"blockers\":%s,"
               "\"holders\":[",
               r->found ? "true" : "false", state_name(r->state),
               r->blockers ? r->blockers->evaluated_at_ms : 0,
               r->blockers ? r->blockers->blockers_json : "[]");
        for (size_t i = 0; i < r->n_holders; i++)
            printf("%s{\"pool\":\"%s\",\"instance_id\":%" PRId64 ",\"tokens\":%d}", i ? "," : "",
                   r->holders[i]->pool, r->holders[i]->instance_id, (int)r->holders[i]->tokens);
        printf("]}\n");
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "drain") == 0 && argc == 4) {
        Orrery__Halley__V1__UpdateExecutorRequest rq =
            ORRERY__HALLEY__V1__UPDATE_EXECUTOR_REQUEST__INIT;
        rq.id = argv[2];
        rq.set_drained = 1;
        rq.drained = atoi(argv[3]) != 0;
        rq.actor = "test";
        protobuf_c_message_free_unpacked(call("UpdateExecutor", &rq.base), NULL);
    } else if (strcmp(cmd, "quota") == 0 && argc == 5) {
        Orrery__Halley__V1__PutTeamQuotaRequest rq =
            ORRERY__HALLEY__V1__PUT_TEAM_QUOTA_REQUEST__INIT;
        rq.team = argv[2];
        rq.max_running = atoi(argv[3]);
        rq.max_slots = atoi(argv[4]);
        rq.actor = "test";
        protobuf_c_message_free_unpacked(call("PutTeamQuota", &rq.base), NULL);
    } else if (strcmp(cmd, "calendar") == 0 && argc == 5) {
        Orrery__Halley__V1__Calendar c = ORRERY__HALLEY__V1__CALENDAR__INIT;
        int32_t wd[7];
        c.name = argv[2];
        c.team = argv[3];
        c.timezone = "UTC";
        for (const char *p = argv[4]; *p && c.n_weekdays < 7; p++)
            wd[c.n_weekdays++] = *p - '0';
        c.weekdays = wd;
        Orrery__Halley__V1__PutCalendarRequest rq = ORRERY__HALLEY__V1__PUT_CALENDAR_REQUEST__INIT;
        rq.calendar = &c;
        rq.actor = "test";
        Orrery__Halley__V1__GetCalendarRequest gq = ORRERY__HALLEY__V1__GET_CALENDAR_REQUEST__INIT;
        gq.name = argv[2];
        ProtobufCMessage *out = NULL;
        orr_err err;
        rq.create = orr_rpc_call_unary(cl, "GetCalendar", &gq.base, &out, 10000, &err) != ORR_OK;
        if (out)
            protobuf_c_message_free_unpacked(out, NULL);
        protobuf_c_message_free_unpacked(call("PutCalendar", &rq.base), NULL);
    } else if (strcmp(cmd, "audit") == 0 && argc == 3) {
        audit a = {0};
        each_instance(argv[2], audit_one, &a);
        printf("{\"instances\":%d,\"success\":%d,\"other\":%d,\"attempts\":%d,"
               "\"double_dispatch\":%d,\"missing_dispatch\":%d}\n",
               a.instances, a.success, a.other, a.attempts, a.double_dispatch, a.missing_dispatch);
    } else if (strcmp(cmd, "stats") == 0 && argc == 6) {
        Orrery__Halley__V1__ProcessStat st = ORRERY__HALLEY__V1__PROCESS_STAT__INIT, *sp = &st;
        st.key = argv[4];
        st.value = strtod(argv[5], NULL);
        Orrery__Halley__V1__RecordProcessStatsRequest rq =
            ORRERY__HALLEY__V1__RECORD_PROCESS_STATS_REQUEST__INIT;
        rq.instance_id = strtoll(argv[2], NULL, 10);
        rq.attempt = atoi(argv[3]);
        rq.n_stats = 1;
        rq.stats = &sp;
        protobuf_c_message_free_unpacked(call("RecordProcessStats", &rq.base), NULL);
    } else if (strcmp(cmd, "alert-rule") == 0 && (argc == 6 || argc == 7)) {
        char chname[200];
        snprintf(chname, sizeof chname, "%s-hook", argv[2]);
        Orrery__Halley__V1__AlertChannel ch = ORRERY__HALLEY__V1__ALERT_CHANNEL__INIT;
        ch.name = chname;
        ch.team = "data";
        ch.kind = "webhook";
        ch.config_json = "{\"url\":\"http://127.0.0.1:9/hook\"}";
        ch.actor = "test";
        Orrery__Halley__V1__AlertChannel *c = (void *)call("PutAlertChannel", &ch.base);
        char *evs[16], *save = NULL;
        size_t n = 0;
        for (char *e = strtok_r(argv[5], ",", &save); e && n < 16; e = strtok_r(NULL, ",", &save))
            evs[n++] = e;
        int64_t chans[1] = {c->id};
        Orrery__Halley__V1__AlertRule ru = ORRERY__HALLEY__V1__ALERT_RULE__INIT;
        ru.name = argv[2];
        ru.team = "data";
        ru.scope_kind = argv[3];
        ru.scope = argv[4];
        ru.events = evs;
        ru.n_events = n;
        ru.severity = "critical";
        ru.channels = chans;
        ru.n_channels = 1;
        ru.quiet_period_s = 300;
        ru.group_window_s = 1;
        ru.params_json = argc == 7 ? argv[6] : "{}";
        ru.enabled = 1;
        ru.actor = "test";
        Orrery__Halley__V1__AlertRule *r = (void *)call("PutAlertRule", &ru.base);
        printf("%" PRId64 "\n", r->id);
        protobuf_c_message_free_unpacked(&r->base, NULL);
        protobuf_c_message_free_unpacked(&c->base, NULL);
    } else if (strcmp(cmd, "alerts") == 0 && argc == 3) {
        Orrery__Halley__V1__ListAlertsRequest rq = ORRERY__HALLEY__V1__LIST_ALERTS_REQUEST__INIT;
        rq.rule_id = strtoll(argv[2], NULL, 10);
        rq.page_size = 500;
        Orrery__Halley__V1__ListAlertsResponse *r = (void *)call("ListAlerts", &rq.base);
        for (size_t i = 0; i < r->n_alerts; i++) {
            const Orrery__Halley__V1__Alert *a = r->alerts[i];
            printf("{\"id\":%" PRId64 ",\"event\":\"%s\",\"dedup_key\":\"%s\",\"count\":%d,"
                   "\"state\":\"%s\",\"instance_id\":%" PRId64 ",\"first_at_ms\":%" PRId64
                   ",\"last_at_ms\":%" PRId64 ",\"created_at_ms\":%" PRId64 "}\n",
                   a->id, a->event, a->dedup_key, (int)a->count, a->state, a->instance_id,
                   a->first_at_ms, a->last_at_ms, a->created_at_ms);
        }
        protobuf_c_message_free_unpacked(&r->base, NULL);
    } else if (strcmp(cmd, "executor") == 0 && (argc == 5 || argc == 6)) {
        if (!zk) {
            fprintf(stderr, "kp_it_tool: KP_IT_ZK is not set\n");
            rc = 2;
        } else {
            rc =
                cmd_executor(zk, argv[2], atoi(argv[3]), atoi(argv[4]), argc == 6 ? argv[5] : NULL);
        }
    } else {
        fprintf(stderr, "kp_it_tool: bad command or arguments: %s\n", cmd);
        rc = 2;
    }
    fflush(stdout);
    orr_rpc_client_destroy(cl);
    return rc;
}

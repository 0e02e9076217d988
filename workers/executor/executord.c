/*
 * executord.c - Orrery's executor daemon: runs the instances keplerd
 * dispatches to it, each in a sandbox, serves their logs, reports to Halley.
 *
 *   executord [--config FILE] [--print-config] serve
 *
 * Start-up, in order:
 *   1. config, folders under work_dir, the sandbox backend (v2, v1 or the
 *      rlimit fallback, logged with the reasons), and the end of any group
 *      a previous life of this executor left running;
 *   2. the outbox: reports an earlier life could not deliver are re-sent;
 *   3. instances Halley still shows `running` on this executor belong to an
 *      earlier life: running -> failed "executor_restarted";
 *   4. the log server, the ZooKeeper registration, the code-package
 *      deployer (ex_deploy.c: installs what is missing, then follows
 *      "package.created"), the event stream;
 *   5. a sweep starts what is already `dispatched` to us.
 *   0. (before 2) the guardian (ex_guard.c): a process that kills every
 *      attempt's processes when executord dies, however it dies;
 * Then the main loop: stop signals, ZooKeeper ticks (a lost session kills
 * every job before registering again), a periodic sweep that repairs any
 * missed event, freeing finished jobs, restarting a dead guardian. The
 * fencing thread kills every job once ZooKeeper contact is no longer proven
 * (see fence_thread).
 *
 * Events: WatchEvents(kinds "instance.*", executor = id), kept open by the
 * one subscriber (rpc/orr_watch.h), tells of instances moved to `dispatched`
 * on us (start them) and to `killed` (end their process tree). Each time a
 * stream is in place (the server's "watch.start" marker) the subscriber's
 * on_start sweeps, so nothing dispatched before the subscription was in
 * place is missed; a broken stream is reopened from the last event id seen
 * (with back-off), followed by that sweep.
 */
#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "orr_blob.h"
#include "orr_daemon.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_rpc_tls.h"
#include "orr_sdnotify.h"
#include "orr_metrics.h"
#include "orr_watch.h"

static const orr_cfg_key ex_schema[] = {
    {"executor", "id", ORR_CFG_STRING, NULL, 0, 0, 0,
     "executor id (letters, digits, . _ -); default: the host name"},
    {"executor", "host", ORR_CFG_STRING, NULL, 0, 0, 0,
     "host name others use to reach the log server; default: the host name"},
    {"executor", "halley", ORR_CFG_STRING, "127.0.0.1:7070", 0, 0, 0, "halleyd gRPC address"},
    {"executor", "halley_token", ORR_CFG_SECRET, NULL, 0, 0, 0, "service token for halleyd"},
    ORR_RPC_TLS_CLIENT_KEYS("executor"),
    {"executor", "halley_worker_token", ORR_CFG_SECRET, NULL, 0, 0, 0,
     "halleyd's worker token, to read data-source secrets for transfer tasks (unset: "
     "data-source references fail)"},
    {"executor", "zk", ORR_CFG_STRING, NULL, 1, 0, 0, "ZooKeeper address, host:port[,host:port]"},
    {"executor", "zk_session", ORR_CFG_DURATION, "10s", 0, 2000, 600000,
     "ZooKeeper session timeout"},
    {"executor", "slots", ORR_CFG_INT, "4", 0, 1, 1024, "slots this executor offers"},
    {"executor", "labels", ORR_CFG_STRING, "", 0, 0, 0, "comma list of k=v labels"},
    {"executor", "listen", ORR_CFG_STRING, "127.0.0.1:7171", 0, 0, 0, "HTTP log server address"},
    {"executor", "metrics_listen", ORR_CFG_STRING, "", 0, 0, 0,
     "HTTP address of /metrics and /healthz, host:port ('' = off)"},
    {"executor", "pid_file", ORR_CFG_STRING, "", 0, 0, 0,
     "if set, executord serve writes its pid here (removed when it stops)"},
    {"executor", "log_token", ORR_CFG_SECRET, NULL, 1, 0, 0, "bearer token of the log server"},
    {"executor", "work_dir", ORR_CFG_STRING, "var/executor", 0, 0, 0,
     "logs, run folders, code packages, outbox"},
    {"executor", "blob_root", ORR_CFG_STRING, "var/blob", 0, 0, 0,
     "blob store root (file:// or webhdfs:// URL, or a path)"},
    {"executor", "slot_memory", ORR_CFG_SIZE, "512m", 0, 1 << 20, 1LL << 40, "memory per slot"},
    {"executor", "slot_cpu_percent", ORR_CFG_INT, "100", 0, 1, 100000,
     "CPU per slot, percent of one core"},
    {"executor", "slot_pids", ORR_CFG_INT, "256", 0, 1, 1000000, "processes per slot"},
    {"executor", "run_as", ORR_CFG_STRING, NULL, 0, 0, 0,
     "user the tasks run as; default \"orrery\" when started as root"},
    {"executor", "default_timeout", ORR_CFG_DURATION, "3h", 0, 1000, 30LL * 86400000,
     "timeout of a task whose spec sets none"},
    {"executor", "cgroup", ORR_CFG_STRING, "auto", 0, 0, 0, "sandbox backend: auto|v2|v1|rlimit"},
    {"executor", "cgroup_root", ORR_CFG_STRING, "/sys/fs/cgroup", 0, 0, 0, "cgroup file system"},
    {"executor", "cgroup_parent", ORR_CFG_STRING, "orrery", 0, 0, 0,
     "group under which attempts' groups are made"},
    {"executor", "bin_dir", ORR_CFG_STRING, NULL, 0, 0, 0,
     "folder of helper binaries (wormhole); default: executord's own folder"},
    {"executor", "rpc_timeout", ORR_CFG_DURATION, "10s", 0, 100, 600000,
     "deadline of halleyd calls"},
    {"executor", "running_hold", ORR_CFG_DURATION, "200ms", 0, 0, 3600000,
     "a run that ends this soon is reported once (dispatched -> its end); a longer one is "
     "reported running when it has lasted this long; 0: running before the start"},
    {"executor", "sweep_interval", ORR_CFG_DURATION, "10s", 0, 500, 3600000,
     "how often dispatched instances are listed in case an event was missed"},
    {"executor", "heartbeat_interval", ORR_CFG_DURATION, "15s", 0, 500, 3600000,
     "how often the executor reports itself to halleyd (its last heartbeat)"},
};

/* ------------------------------------------------------------ the card */

static json_t *labels_json(const char *labels, orr_err *err)
{
    json_t *o = json_object();
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", labels ? labels : "");
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        if (!*item)
            continue;
        char *eq = strchr(item, '=');
        if (!eq || eq == item) {
            json_decref(o);
            orr_err_set(err, ORR_EINVAL, "executor.labels", "\"%.100s\" is not key=value", item);
            return NULL;
        }
        *eq = 0;
        json_object_set_new(o, item, json_string(eq + 1));
    }
    return o;
}

/* Slots of the jobs not yet done, stored as d->used_slots. */
static int count_used(ex_daemon *d)
{
    pthread_mutex_lock(&d->mu);
    int used = 0;
    for (ex_job *j = d->jobs; j; j = j->next)
        if (!atomic_load(&j->done))
            used += j->slots;
    d->used_slots = used;
    pthread_mutex_unlock(&d->mu);
    return used;
}

void ex_daemon_publish_later(ex_daemon *d)
{
    count_used(d);
    atomic_store(&d->publish_due, 1);
}

void ex_daemon_publish(ex_daemon *d)
{
    if (!d->zk)
        return;
    int used = count_used(d);
    orr_err e;
    json_t *card = json_pack("{ss ss si si si so sI ss}", "id", d->id, "host", d->host, "http_port",
                             ex_logsrv_port(d->logsrv), "slots", d->slots, "used_slots", used,
                             "labels", labels_json(d->labels, &e), "started_at",
                             (json_int_t)d->started_at_ms, "cgroup", d->cg->name);
    char *text = json_dumps(card, JSON_COMPACT);
    json_decref(card);
    if (text)
        ex_zk_set_card(d->zk, text);
    free(text);
}

/* ------------------------------------------------------------ heartbeat */

/* Report this executor to halleyd (PutExecutor): its host, slots and labels
 * as announced, and halleyd's last_seen now, which the console shows as the
 * last heartbeat. ZooKeeper stays what says whether it is alive; a failed
 * report is tried again at the next beat. */
static void heartbeat(ex_daemon *d)
{
    orr_err e;
    json_t *labels = labels_json(d->labels, &e);
    char *text = labels ? json_dumps(labels, JSON_COMPACT) : NULL;
    json_decref(labels);
    HL(PutExecutorRequest) rq = HL_INIT(PUT_EXECUTOR_REQUEST);
    rq.id = (char *)d->id;
    rq.host = (char *)d->host;
    rq.slots = d->slots;
    rq.labels_json = text ? text : "{}";
    rq.active = 1;
    ProtobufCMessage *resp = NULL;
    if (ex_halley(d, "PutExecutor", &rq.base, &resp, &e) == ORR_OK)
        protobuf_c_message_free_unpacked(resp, NULL);
    else
        ORR_WARN("cannot report the heartbeat to halleyd", "err=%s", orr_log_q(e.msg));
    free(text);
}

/* ------------------------------------------------------------ sweeps */

/* List our instances in state st; call fn for each. Returns ORR_OK or the
 * call's error. */
static orr_status list_ours(ex_daemon *d, int st, void (*fn)(ex_daemon *, HL(Instance) *))
{
    HL(ListInstancesRequest) rq = HL_INIT(LIST_INSTANCES_REQUEST);
    HL(InstanceState) states[1] = {(HL(InstanceState))st};
    rq.executor = (char *)d->id;
    rq.states = states;
    rq.n_states = 1;
    rq.page_size = 500;
    char token[256] = "";
    for (int page = 0; page < 100; page++) {
        rq.page_token = token;
        ProtobufCMessage *resp = NULL;
        orr_err e;
        orr_status s = ex_halley(d, "ListInstances", &rq.base, &resp, &e);
        if (s != ORR_OK) {
            ORR_WARN("cannot list instances", "state=%s err=%s", ex_state_name(st),
                     orr_log_q(e.msg));
            return s;
        }
        HL(ListInstancesResponse) *r = (HL(ListInstancesResponse) *)resp;
        for (size_t i = 0; i < r->n_instances; i++)
            fn(d, r->instances[i]);
        snprintf(token, sizeof token, "%s", r->next_page_token);
        protobuf_c_message_free_unpacked(resp, NULL);
        if (!token[0])
            break;
    }
    return ORR_OK;
}

static void start_one(ex_daemon *d, HL(Instance) * in)
{
    ex_job_start(d, in->id);
}

static void fail_restarted(ex_daemon *d, HL(Instance) * in)
{
    ex_report r = {.instance_id = in->id,
                   .attempt = in->attempt,
                   .from = HL_STATE(RUNNING),
                   .to = HL_STATE(FAILED)};
    snprintf(r.reason, sizeof r.reason, "executor_restarted");
    orr_err e;
    ex_report_send(d, &r, 1, NULL, &e);
}

/* Jobs whose instance was moved to killed without our seeing the event. */
static void check_killed(ex_daemon *d)
{
    int64_t ids[256];
    int n = 0;
    pthread_mutex_lock(&d->mu);
    for (ex_job *j = d->jobs; j && n < 256; j = j->next)
        if (!atomic_load(&j->done) && j->sb)
            ids[n++] = j->instance_id;
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < n; i++) {
        HL(GetInstanceRequest) rq = HL_INIT(GET_INSTANCE_REQUEST);
        rq.id = ids[i];
        rq.without_deps = 1; /* the row alone: no dependency states */
        ProtobufCMessage *resp = NULL;
        orr_err e;
        if (ex_halley(d, "GetInstance", &rq.base, &resp, &e) != ORR_OK)
            continue;
        HL(Instance) *in = (HL(Instance) *)resp;
        if (in->state == HL_STATE(KILLED))
            ex_job_cancel(d, ids[i], EX_CANCEL_USER);
        protobuf_c_message_free_unpacked(resp, NULL);
    }
}

static void sweep(ex_daemon *d)
{
    list_ours(d, HL_STATE(DISPATCHED), start_one);
    check_killed(d);
}

/* ------------------------------------------------------------ events */

static void on_event(void *cls, const HL(Event) * ev)
{
    ex_daemon *d = cls;
    if (strcmp(ev->kind, "instance.transition") != 0 || strcmp(ev->executor, d->id) != 0)
        return;
    json_t *p = NULL;
    orr_err e;
    if (orr_json_parse(ev->payload_json, strlen(ev->payload_json), &p, &e) != ORR_OK)
        return;
    const char *to = NULL;
    orr_json_get_str(p, "", "to", 0, &to, &e);
    if (to && strcmp(to, "dispatched") == 0)
        ex_job_start(d, ev->instance_id);
    else if (to && strcmp(to, "killed") == 0)
        ex_job_cancel(d, ev->instance_id, EX_CANCEL_USER);
    json_decref(p);
}

/* The subscription is in place (a new one, or one resumed after a break):
 * catch what came before it. A failed listing is left to the periodic sweep. */
static int on_start(void *cls)
{
    sweep(cls);
    return 0;
}

/* The event stream (orr_watch.h): instance.* about this executor. */
static orr_status events_start(ex_daemon *d, orr_watch **out, orr_err *err)
{
    static const char *const kinds[] = {"instance.*"};
    orr_watch_opts o = {
        .kinds = kinds, .nkinds = 1, .executor = d->id, .name = "executord instances"};
    orr_watch_ops ops = {.on_start = on_start, .on_event = on_event};
    return orr_watch_start(d->halley, &o, &ops, d, out, err);
}

/* ------------------------------------------------------------ start-up */

static orr_status make_dir(const char *path, mode_t mode, orr_err *err)
{
    return ex_cg_mkdirs(path, mode, err);
}

static int valid_id(const char *id)
{
    if (!id[0] || strlen(id) > 128 || id[0] == '.')
        return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

static orr_status setup(ex_daemon *d, orr_config *cfg, const char *argv0, char *hostname,
                        orr_err *err)
{
    const char *sec = "executor";
    d->cfg = cfg;
    gethostname(hostname, 255);
    d->id = orr_config_str(cfg, sec, "id");
    if (!d->id)
        d->id = hostname;
    if (!valid_id(d->id))
        return orr_err_set(err, ORR_EINVAL, "executor.id",
                           "must be 1-128 letters, digits, '.', '_' or '-' (got \"%.100s\")",
                           d->id);
    d->host = orr_config_str(cfg, sec, "host");
    if (!d->host)
        d->host = hostname;
    d->slots = (int)orr_config_int(cfg, sec, "slots");
    d->labels = orr_config_str(cfg, sec, "labels");
    json_t *lj = labels_json(d->labels, err);
    if (!lj)
        return ORR_EINVAL;
    json_decref(lj);
    d->slot_memory = orr_config_int(cfg, sec, "slot_memory");
    d->slot_cpu_percent = (int)orr_config_int(cfg, sec, "slot_cpu_percent");
    d->slot_pids = (int)orr_config_int(cfg, sec, "slot_pids");
    d->default_timeout_ms = orr_config_int(cfg, sec, "default_timeout");
    d->rpc_timeout_ms = (int)orr_config_int(cfg, sec, "rpc_timeout");
    d->running_hold_ms = orr_config_int(cfg, sec, "running_hold");
    snprintf(d->actor, sizeof d->actor, "executor:%s", d->id);

    /* Folders. */
    const char *wd = orr_config_str(cfg, sec, "work_dir");
    orr_status s = make_dir(wd, 0755, err);
    if (s != ORR_OK)
        return s;
    char abs[PATH_MAX];
    if (!realpath(wd, abs))
        return orr_err_set(err, ORR_EIO, "executor.work_dir", "%s: %s", wd, strerror(errno));
    snprintf(d->work_dir, sizeof d->work_dir, "%.400s", abs);
    chmod(d->work_dir, 0755);
    snprintf(d->log_dir, sizeof d->log_dir, "%.400s/logs", d->work_dir);
    snprintf(d->run_dir, sizeof d->run_dir, "%.400s/runs", d->work_dir);
    snprintf(d->code_dir, sizeof d->code_dir, "%.400s/code", d->work_dir);
    snprintf(d->outbox_dir, sizeof d->outbox_dir, "%.400s/outbox", d->work_dir);
    snprintf(d->spare_dir, sizeof d->spare_dir, "%.400s/outbox-spare", d->work_dir);
    if ((s = make_dir(d->log_dir, 0750, err)) != ORR_OK ||
        (s = make_dir(d->run_dir, 0711, err)) != ORR_OK ||
        (s = make_dir(d->code_dir, 0755, err)) != ORR_OK ||
        (s = make_dir(d->outbox_dir, 0700, err)) != ORR_OK ||
        (s = make_dir(d->spare_dir, 0700, err)) != ORR_OK)
        return s;
    /* Code packages come from the blob store, finished logs go there. */
    if ((s = orr_blob_open(orr_config_str(cfg, sec, "blob_root"), &d->blob, err)) != ORR_OK) {
        if (err && strcmp(err->field, "blob_root") == 0)
            snprintf(err->field, sizeof err->field, "executor.blob_root");
        return s;
    }
    const char *bin = orr_config_str(cfg, sec, "bin_dir");
    if (bin) {
        snprintf(d->bin_dir, sizeof d->bin_dir, "%.500s", bin);
    } else {
        ssize_t n = readlink("/proc/self/exe", abs, sizeof abs - 1);
        abs[n > 0 ? n : 0] = 0;
        if (n <= 0)
            snprintf(abs, sizeof abs, "%s", argv0);
        char *slash = strrchr(abs, '/');
        if (slash)
            *slash = 0;
        snprintf(d->bin_dir, sizeof d->bin_dir, "%.500s", slash ? abs : ".");
    }

    /* The user tasks run as: never the user the servers run as ("orrery",
     * the owner of PostgreSQL's files in the private stack), so a task can
     * neither touch their data nor be counted with their processes. */
    const char *run_as = orr_config_str(cfg, sec, "run_as");
    if (!run_as && geteuid() == 0)
        run_as = "orrery-task";
    if (run_as && run_as[0]) {
        if (geteuid() != 0)
            return orr_err_set(err, ORR_EINVAL, "executor.run_as",
                               "switching to \"%.64s\" needs executord to run as root", run_as);
        struct passwd *pw = getpwnam(run_as);
        if (!pw)
            return orr_err_set(err, ORR_EINVAL, "executor.run_as", "no such user \"%.64s\"",
                               run_as);
        if (pw->pw_uid == 0)
            return orr_err_set(err, ORR_EINVAL, "executor.run_as", "tasks may not run as root");
        d->drop = 1;
        d->uid = pw->pw_uid;
        d->gid = pw->pw_gid;
    }

    /* Sandbox backend. */
    snprintf(d->cg_root, sizeof d->cg_root, "%.500s", orr_config_str(cfg, sec, "cgroup_root"));
    d->cg_env = (ex_cg_env){d->cg_root, "", orr_config_str(cfg, sec, "cgroup_parent"), d->id};
    char why[1024];
    if ((s = ex_cgroup_pick(&d->cg_env, orr_config_str(cfg, sec, "cgroup"), &d->cg, why, sizeof why,
                            err)) != ORR_OK)
        return s;
    if (d->cg == &ex_cgroup_rlimit_ops)
        ORR_WARN("cgroups are not writable: falling back to rlimits (no CPU limit, no OOM "
                 "detection, a process leaving its group escapes)",
                 "why=%s", orr_log_q(why));
    else
        ORR_INFO("sandbox backend chosen", "cgroup=%s skipped=%s", d->cg->name, orr_log_q(why));
    /* After an earlier life's guardian (ex_guard.c) has ended its tasks. */
    if ((s = ex_guard_lock(d, err)) != ORR_OK)
        return s;
    /* Spares of an earlier life: only once no other executord holds the folder. */
    ex_report_spares_init(d);
    if ((s = ex_rundir_init(&d->rundir, d->work_dir, d->run_dir, d->cg != &ex_cgroup_rlimit_ops,
                            d->drop, d->uid, d->gid, err)) != ORR_OK)
        return s;
    ORR_INFO("run folders", "kept_for_reuse=%s", d->rundir.reuse ? "when left as new" : "never");
    int swept = d->cg->sweep(&d->cg_env);
    if (swept)
        ORR_WARN("ended groups left by an earlier run", "count=%d", swept);
    return ORR_OK;
}

/* ------------------------------------------------------------ metrics */

static void ex_collect(void *ctx, orr_metrics_writer *w)
{
    ex_daemon *d = ctx;
    pthread_mutex_lock(&d->mu);
    int used = d->used_slots, jobs = 0;
    for (ex_job *j = d->jobs; j; j = j->next)
        jobs += !atomic_load(&j->done);
    pthread_mutex_unlock(&d->mu);
    orr_metrics_family(w, "executor_slots", ORR_METRIC_GAUGE, "Slots this executor offers.");
    orr_metrics_sample(w, NULL, d->slots);
    orr_metrics_family(w, "executor_used_slots", ORR_METRIC_GAUGE,
                       "Slots taken by running instances.");
    orr_metrics_sample(w, NULL, used);
    orr_metrics_family(w, "executor_jobs_running", ORR_METRIC_GAUGE,
                       "Instances running on this executor.");
    orr_metrics_sample(w, NULL, jobs);
    orr_metrics_family(w, "executor_registered", ORR_METRIC_GAUGE,
                       "1 while ZooKeeper contact is proven and this executor takes work.");
    orr_metrics_sample(w, NULL, !atomic_load(&d->fenced));
    orr_metrics_family(w, "executor_instance_reads_total", ORR_METRIC_COUNTER,
                       "Runs' instances read from halleyd.");
    orr_metrics_sample(w, NULL, (double)atomic_load(&d->read_ids));
    orr_metrics_family(w, "executor_instance_read_calls_total", ORR_METRIC_COUNTER,
                       "Calls to halleyd that read them (runs that start together share one).");
    orr_metrics_sample(w, NULL, (double)atomic_load(&d->read_calls));
}

/* Healthy while registered: ZooKeeper contact is proven (not fenced), so
 * keplerd sees this executor and it may run work. */
static int ex_health(void *ctx, orr_buf *body)
{
    ex_daemon *d = ctx;
    int registered = !atomic_load(&d->fenced);
    orr_buf_appendf(body, "{\"status\":\"%s\",\"registered\":%s,\"slots\":%d}",
                    registered ? "ok" : "degraded", registered ? "true" : "false", d->slots);
    return registered;
}

/* ------------------------------------------------------------ fencing */

/* Ready for systemd when both are true: the start is done (card in
 * ZooKeeper, log server and event watch up) and ZooKeeper contact is proven
 * (the fence lifted: /healthz says registered). Whichever comes second
 * sends READY=1. */
static atomic_int ex_ready_parts;

static void ex_ready_part(void)
{
    if (atomic_fetch_add(&ex_ready_parts, 1) == 1)
        orr_sdnotify_ready("executord registered");
}

/* Watches ZooKeeper contact (ex_zk.h, "Fencing") every 50 ms, apart from the
 * main loop, which may wait on Halley for seconds. Past the moment the
 * session is no longer certainly alive, every job is cancelled at once
 * (EX_CANCEL_FENCED: each job thread kills its group the moment it wakes)
 * and no new job starts, so an attempt's processes are dead before the
 * session can expire and keplerd can retry the instance elsewhere. Contact
 * proven again (the same session, or a new one after expiry) lifts the fence
 * and asks the main loop for a sweep of what is dispatched to us. */
static void *fence_thread(void *arg)
{
    ex_daemon *d = arg;
    int64_t fenced_at = 0;
    while (!atomic_load(&d->stopping)) {
        ex_zk_probe(d->zk);
        int t = 0;
        int64_t until = ex_zk_safe_until(d->zk, &t);
        int64_t now = ex_now_ms();
        if (!atomic_load(&d->fenced) && now >= until) {
            atomic_store(&d->fenced, 1);
            fenced_at = now;
            ORR_ERROR("out of contact with zookeeper for too long: killing every running "
                      "instance (fencing)",
                      "id=%s session_timeout_ms=%d", d->id, t);
            ex_job_cancel_all(d, EX_CANCEL_FENCED);
        } else if (atomic_load(&d->fenced) && now < until) {
            atomic_store(&d->fenced, 0);
            if (fenced_at)
                ORR_WARN("zookeeper contact is back: taking work again", "id=%s fenced_ms=%lld",
                         d->id, (long long)(now - fenced_at));
            else
                ORR_INFO("zookeeper contact established", "id=%s session_timeout_ms=%d", d->id, t);
            atomic_store(&d->sweep_now, 1);
            if (!fenced_at)
                ex_ready_part();
        }
        ex_sleep_ms(50);
    }
    return NULL;
}

static int serve(orr_daemon *od, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    orr_config *cfg = orr_daemon_config(od);
    const char *argv0 = orr_daemon_argv0(od);
    ex_daemon d;
    memset(&d, 0, sizeof d);
    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.job_cv, NULL);
    pthread_mutex_init(&d.guard_mu, NULL);
    pthread_mutex_init(&d.rep_mu, NULL);
    pthread_cond_init(&d.rep_cv, NULL);
    pthread_mutex_init(&d.read_mu, NULL);
    pthread_cond_init(&d.read_cv, NULL);
    d.guard_fd = d.guard_lock_fd = -1;
    atomic_store(&d.fenced, 1); /* until ZooKeeper has answered once */
    char hostname[256] = "";
    orr_err err;
    orr_err_clear(&err);
    int rc = 1;
    pthread_t fence;
    int fence_started = 0;
    orr_watch *events = NULL;
    orr_metrics *reg = orr_metrics_create();
    orr_metrics_server *msrv = NULL;
    char msg[600];

    /* The stop signals are blocked in every thread since orr_daemon_main;
     * the main loop takes them. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    d.started_at_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;

    if (setup(&d, cfg, argv0, hostname, &err) != ORR_OK)
        goto fail;
    if (ex_guard_spawn(&d, &err) != ORR_OK)
        goto fail;
    orr_metrics_add_collector(reg, ex_collect, &d);
    const char *ml = orr_config_str(cfg, "executor", "metrics_listen");
    if (ml && *ml &&
        orr_metrics_serve(reg, ml, "executor.metrics_listen", ex_health, &d, &msrv, &err) != ORR_OK)
        goto fail;
    if (orr_rpc_tls_client_setup(cfg, "executor", &err) != ORR_OK)
        goto fail;
    if (orr_rpc_client_create(
            &orrery__halley__v1__halley__descriptor, orr_config_str(cfg, "executor", "halley"),
            orr_config_str(cfg, "executor", "halley_token"), &d.halley, &err) != ORR_OK)
        goto fail;
    const char *wtok = orr_config_str(cfg, "executor", "halley_worker_token");
    if (wtok && wtok[0] &&
        orr_rpc_client_create(&orrery__halley__v1__halley__descriptor,
                              orr_config_str(cfg, "executor", "halley"), wtok, &d.halley_worker,
                              &err) != ORR_OK)
        goto fail;
    ORR_INFO("executord starting", "id=%s halley=%s work_dir=%s slots=%d", d.id,
             orr_config_str(cfg, "executor", "halley"), orr_log_q(d.work_dir), d.slots);

    int resent = ex_report_replay(&d);
    if (resent)
        ORR_INFO("outbox re-sent", "count=%d", resent);
    /* What Halley still thinks we run belongs to an earlier life. */
    while (list_ours(&d, HL_STATE(RUNNING), fail_restarted) != ORR_OK) {
        if (orr_daemon_wait_stop(1000) > 0) {
            rc = 0;
            goto out;
        }
    }

    if (ex_logsrv_start(orr_config_str(cfg, "executor", "listen"),
                        orr_config_str(cfg, "executor", "log_token"), d.log_dir, &d.logsrv,
                        &err) != ORR_OK)
        goto fail;
    ex_datasrv_mount(&d); /* before the card is published: no request can come yet */
    char node[300];
    snprintf(node, sizeof node, "/orrery/executors/%s", d.id);
    if (ex_zk_start(orr_config_str(cfg, "executor", "zk"), node,
                    (int)orr_config_int(cfg, "executor", "zk_session"), &d.zk, &err) != ORR_OK)
        goto fail;
    ex_daemon_publish(&d);
    if (pthread_create(&fence, NULL, fence_thread, &d) != 0) {
        orr_err_set(&err, ORR_EINTERNAL, NULL, "cannot start the fencing thread");
        goto fail;
    }
    fence_started = 1;
    if (ex_deploy_start(&d, &err) != ORR_OK)
        goto fail;
    if (events_start(&d, &events, &err) != ORR_OK)
        goto fail;
    ORR_INFO("executord ready", "id=%s log_port=%d metrics_port=%d cgroup=%s", d.id,
             ex_logsrv_port(d.logsrv), orr_metrics_server_port(msrv), d.cg->name);
    ex_ready_part();

    int64_t sweep_every = orr_config_int(cfg, "executor", "sweep_interval");
    int64_t next_sweep = ex_now_ms() + sweep_every;
    int64_t beat_every = orr_config_int(cfg, "executor", "heartbeat_interval");
    int64_t next_beat = 0;
    for (;;) {
        int sig = orr_daemon_wait_stop(200);
        if (sig > 0) {
            ORR_INFO("executord stopping", "signal=%d", sig);
            orr_sdnotify_stopping();
            break;
        }
        if (ex_zk_tick(d.zk) == EX_ZK_EXPIRED) {
            ORR_WARN("zookeeper session expired: killing every running instance before "
                     "registering again",
                     "id=%s", d.id);
            ex_job_cancel_all(&d, EX_CANCEL_SESSION_LOST);
            ex_job_reap(&d, 1);
            ex_zk_reconnect(d.zk);
            ex_daemon_publish(&d);
        }
        ex_job_reap(&d, 0);
        if (atomic_exchange(&d.publish_due, 0))
            ex_daemon_publish(&d);
        ex_guard_check(&d);
        if (atomic_exchange(&d.sweep_now, 0))
            next_sweep = 0;
        if (ex_now_ms() >= next_sweep && !atomic_load(&d.fenced)) {
            sweep(&d);
            next_sweep = ex_now_ms() + sweep_every;
        }
        if (ex_now_ms() >= next_beat && !atomic_load(&d.fenced)) {
            heartbeat(&d);
            next_beat = ex_now_ms() + beat_every;
        }
    }
    rc = 0;
    goto out;

fail:
    orr_err_str(&err, msg, sizeof msg);
    ORR_ERROR("executord cannot start", "err=%s", orr_log_q(msg));
    fprintf(stderr, "executord: %s\n", msg);
    rc = err.code == ORR_EINVAL ? 2 : 1;
out:
    atomic_store(&d.stopping, 1);
    ex_job_cancel_all(&d, EX_CANCEL_STOPPING);
    orr_watch_stop(events);
    ex_job_reap(&d, 1);
    ex_job_threads_stop(&d);
    /* Spares go while the work folder is still locked (ex_guard_stop). */
    ex_report_close(&d);
    ex_rundir_close(&d.rundir);
    if (fence_started)
        pthread_join(fence, NULL);
    ex_guard_stop(&d);
    ex_deploy_stop(&d);
    orr_metrics_server_stop(msrv);
    orr_metrics_destroy(reg);
    ex_zk_stop(d.zk);
    ex_logsrv_stop(d.logsrv);
    orr_blob_close(d.blob);
    orr_rpc_client_destroy(d.halley);
    orr_rpc_client_destroy(d.halley_worker);
    pthread_mutex_destroy(&d.mu);
    pthread_cond_destroy(&d.job_cv);
    pthread_mutex_destroy(&d.guard_mu);
    pthread_mutex_destroy(&d.rep_mu);
    pthread_cond_destroy(&d.rep_cv);
    pthread_mutex_destroy(&d.read_mu);
    pthread_cond_destroy(&d.read_cv);
    return rc;
}

static int guard(orr_daemon *od, int argc, char **argv)
{
    (void)od;
    /* ex_guard_main reads the command line as given: "executord guard ..." */
    return ex_guard_main(argc + 1, argv - 1);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: executord [--config FILE] [--print-config] serve\n");
}

static const orr_daemon_cmd ex_cmds[] = {
    {"serve", serve, ORR_DAEMON_SERVES},
    {"guard", guard, ORR_DAEMON_NO_CONFIG},
};

static const orr_daemon_def ex_def = {
    "executord", "executor", ex_schema, sizeof ex_schema / sizeof ex_schema[0], ex_cmds, 2, usage,
};

int main(int argc, char **argv)
{
    return orr_daemon_main(&ex_def, argc, argv);
}

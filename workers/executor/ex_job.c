/*
 * ex_job.c - a job thread per running attempt: read it, run it, report it.
 *
 * Job threads are kept: one that finished a job waits for the next instead
 * of ending, and a new thread is made only when no waiting one is free, so
 * about as many exist as jobs ever ran at once (a few more when jobs start
 * just as others end); they are never ended before executord stops. Making and
 * ending a thread per run cost executord a stack mapped and unmapped per
 * run (an 8 MiB stack is beyond glibc's cache of freed stacks when dozens
 * run at once), and an unmap flushes the TLB of every CPU the daemon ran
 * on (docs/benchmarks.md, "keplerd + the real executord").
 *
 * The life of a job (every Halley write is a compare-and-set on the state
 * and the attempt, so a late or duplicate job can never overwrite someone
 * else's decision):
 *   1. The instance with its task (ex_read_instance: one GetInstances call
 *      for the runs that start at the same moment): still dispatched to
 *      us? else stop quietly.
 *   2. The task at instance.task_version, in the same answer (GetTask
 *      with that version from a halleyd that does not fill it): the spec
 *      (type, config, timeout, slots); the named parameters and built-ins
 *      substituted into config (ex_params.h).
 *   3. Private run dir <work>/runs/<instance>-<attempt> (0700, run_as user);
 *      the runner of the type prepares argv/env/cwd. A bad spec ->
 *      dispatched -> failed "bad_spec: field: message".
 *   4. dispatched -> running staged: written to the outbox and synced, not
 *      sent (ex_report_stage), so a restart re-sends it and then fails the
 *      attempt "executor_restarted" instead of running it again.
 *   5. Sandbox (ex_sandbox.h) with the slots' limits; the log file it
 *      writes is followed by ex_logcap.h (the line index), both served live.
 *      Once the run has lasted [executor] running_hold (200 ms) the staged
 *      report is sent (its running then starts when it lands; ABORTED:
 *      someone moved it, e.g. killed, and the run is ended and not
 *      reported; refused otherwise: the run goes on and its end tries
 *      again). While it is sent the job thread is not in the sandbox's
 *      wait, so a cancel (fence, lost session, kill) signals the group
 *      itself, and the run's end and timeout are watched between tries; a
 *      try (with the call it may wait behind and a re-read of the state)
 *      can hold the timeout back by a few rpc_timeouts while halleyd does
 *      not answer.
 *   6. running -> success | failed | timed_out (+ exit code, reason), through
 *      the outbox; a run that ended within the hold goes dispatched -> its
 *      end in one report with its start time (one transition in Halley, two
 *      history rows), appended to the start record's file, so one outbox
 *      file serves the whole run. A kill by a person needs no report (the
 *      instance is already killed); the process tree is ended all the same.
 *      With running_hold 0, or an outbox that cannot be written, running is
 *      reported before the start, as it always was.
 *   5a. transfer: its progress lines followed while it runs and recorded
 *       in Halley at most once a second (ex_progress.h).
 *   6a. transfer and quality: process statistics from wormhole's summary
 *      (quality.<check>.* too; a failed check is the reason "quality") and,
 *      for a transfer after a success, the new watermark (ex_xfer.c); a
 *      watermark that cannot be saved turns the outcome into failed.
 *   7. Log landed in the blob store (lib/orr_blob) as
 *      logs/<task>/<instance>-<attempt>.log (its index .idx first; the empty
 *      log under both names when the run wrote nothing), run dir
 *      removed or kept empty for a later run (ex_rundir.h; on every path:
 *      it may hold a resolved job with passwords),
 *      slots released.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "ex_logcap.h"
#include "ex_params.h"
#include "ex_progress.h"
#include "ex_runner.h"
#include "orr_alloc.h"
#include "orr_arena.h"
#include "orr_json.h"
#include "orr_log.h"

typedef struct job_spec {
    const char *type;
    json_t *config; /* borrowed from root */
    int64_t timeout_ms;
    int slots;
    /* spec.limits (0 = the slots' share): at most the task type's maximum,
     * which halleyd checked when the spec was saved */
    int64_t memory_bytes;
    int cpu_percent, pids;
    json_t *root;
} job_spec;

static orr_status parse_spec(ex_daemon *d, const char *text, job_spec *js, orr_err *err)
{
    memset(js, 0, sizeof *js);
    js->timeout_ms = d->default_timeout_ms;
    js->slots = 1;
    orr_status s = orr_json_parse(text, strlen(text), &js->root, err);
    if (s != ORR_OK)
        return s;
    const char *timeout = NULL;
    int64_t slots = 1;
    if ((s = orr_json_get_str(js->root, "", "type", 1, &js->type, err)) != ORR_OK ||
        (s = orr_json_get_obj(js->root, "", "config", 1, &js->config, err)) != ORR_OK ||
        (s = orr_json_get_str(js->root, "", "timeout", 0, &timeout, err)) != ORR_OK ||
        (s = orr_json_get_int(js->root, "", "slots", 0, 1, 1024, &slots, err)) != ORR_OK)
        return s;
    js->slots = (int)slots;
    if (timeout &&
        (orr_config_parse_duration(timeout, &js->timeout_ms) != ORR_OK || js->timeout_ms <= 0))
        return orr_err_set(err, ORR_EINVAL, "timeout", "must be a duration such as 30m");
    json_t *lim = json_object_get(js->root, "limits");
    if (json_is_object(lim)) {
        const char *mem = json_string_value(json_object_get(lim, "memory"));
        json_t *cpu = json_object_get(lim, "cpu"), *pids = json_object_get(lim, "pids");
        if (mem && orr_config_parse_size(mem, &js->memory_bytes) != ORR_OK)
            return orr_err_set(err, ORR_EINVAL, "limits.memory", "must be a size such as 512m");
        if (json_is_number(cpu) && json_number_value(cpu) > 0)
            js->cpu_percent = (int)(json_number_value(cpu) * 100 + 0.5);
        if (json_is_integer(pids) && json_integer_value(pids) > 0 &&
            json_integer_value(pids) <= 1000000)
            js->pids = (int)json_integer_value(pids);
    }
    return ORR_OK;
}

static void set_sb(ex_daemon *d, ex_job *j, ex_sandbox *sb)
{
    pthread_mutex_lock(&d->mu);
    j->sb = sb;
    pthread_mutex_unlock(&d->mu);
}

/* Append a line to the attempt's log (messages of the executor itself),
 * stamped in its index like the task's own lines. */
static void log_note(const char *log_path, const char *fmt, const char *a, const char *b)
{
    orr_buf t = ORR_BUF_INIT;
    orr_buf_append_str(&t, "[orrery executor] ");
    orr_buf_appendf(&t, fmt, a, b);
    orr_buf_append_byte(&t, '\n');
    ex_log_append(log_path, t.data, t.len);
    orr_buf_free(&t);
}

/* How far a run's dispatched -> running has come (see run_job). */
enum {
    RUN_REPORTED, /* Halley has it running (sent before the start, or after the hold) */
    RUN_STAGED,   /* only the start record: a short run, reported in one step */
    RUN_UNSURE,   /* the running report was tried and has no answer yet */
    RUN_GONE,     /* refused: the instance was moved by someone else */
};

/* j's report from -> to; started_ms > 0 (from dispatched): the run started
 * then and has ended. */
static ex_report job_report(const ex_job *j, int from, int64_t started_ms, int to,
                            const char *reason, int has_code, int code)
{
    ex_report r = {.instance_id = j->instance_id,
                   .attempt = j->attempt,
                   .from = from,
                   .to = to,
                   .has_exit_code = has_code,
                   .exit_code = code,
                   .started_at_ms = started_ms};
    snprintf(r.reason, sizeof r.reason, "%s", reason);
    return r;
}

/* job_report through the outbox. */
static orr_status finish_report(ex_daemon *d, ex_job *j, int from, int64_t started_ms, int to,
                                const char *reason, int has_code, int code, int *now_state)
{
    ex_report r = job_report(j, from, started_ms, to, reason, has_code, code);
    orr_err e;
    return ex_report_send(d, &r, 1, now_state, &e);
}

/* The end of a started run: from running, or in one step from dispatched
 * with its start time when it was never reported running (RUN_STAGED).
 * A one-step report refused while the instance is still dispatched (a
 * halleyd without the step, say) goes as the two steps instead: the staged
 * start (rr, *staged; re-written when it is gone), then the end. While the
 * daemon stops, an unanswered end leaves the start record staged (closed,
 * kept): the replay then sends the end if its entry was written (dropping
 * the start), else the start, and the restart fails the attempt. */
static void end_report(ex_daemon *d, ex_job *j, int run, int64_t started_ms, const ex_report *rr,
                       int *staged, int to, const char *reason, int has_code, int code)
{
    if (run != RUN_STAGED) {
        finish_report(d, j, HL_STATE(RUNNING), 0, to, reason, has_code, code, NULL);
        return;
    }
    int now = -1;
    orr_status s;
    if (*staged >= 0) { /* appended to the start record: one file for the run */
        ex_report r = job_report(j, HL_STATE(DISPATCHED), started_ms, to, reason, has_code, code);
        orr_err e;
        s = ex_report_send_after_stage(d, rr, staged, &r, &now, &e);
    } else {
        s = finish_report(d, j, HL_STATE(DISPATCHED), started_ms, to, reason, has_code, code, &now);
    }
    if (s == ORR_OK)
        return;
    if (atomic_load(&d->stopping)) {
        if (*staged >= 0)
            close(*staged); /* kept in the outbox */
        *staged = -1;
        return;
    }
    if (now != HL_STATE(DISPATCHED))
        return;
    ORR_WARN("the report in one step was refused: reporting running, then the end", "instance=%lld",
             (long long)j->instance_id);
    orr_err e;
    s = *staged >= 0 ? ex_report_send_staged(d, rr, staged, NULL, NULL, NULL, &e)
                     : ex_report_send(d, rr, 1, NULL, &e);
    if (s == ORR_OK)
        finish_report(d, j, HL_STATE(RUNNING), 0, to, reason, has_code, code, NULL);
}

/* The reason a cancelled attempt ends with (a kill by a person has none). */
static const char *cancel_reason(ex_cancel why)
{
    switch (why) {
    case EX_CANCEL_SESSION_LOST:
        return "executor_lost";
    case EX_CANCEL_FENCED:
        return "executor_fenced";
    case EX_CANCEL_STOPPING:
        return "executor_stopped";
    default:
        return "";
    }
}

/* Record how many processes the main process left running as the attempt's
 * process statistic "leftover_processes" (failures only logged). */
static void record_leftover(ex_daemon *d, int64_t inst, int attempt, int n)
{
    HL(ProcessStat) st = HL_INIT(PROCESS_STAT);
    HL(ProcessStat) * sp[1] = {&st};
    st.key = "leftover_processes";
    st.value = n;
    HL(RecordProcessStatsRequest) rq = HL_INIT(RECORD_PROCESS_STATS_REQUEST);
    rq.instance_id = inst;
    rq.attempt = attempt;
    rq.stats = sp;
    rq.n_stats = 1;
    orr_err e;
    orr_status s = ORR_EUNAVAIL;
    for (int i = 0; i < 5 && s != ORR_OK && !atomic_load(&d->stopping); i++) {
        ProtobufCMessage *resp = NULL;
        if (i)
            ex_sleep_ms(200 << i);
        s = ex_halley(d, "RecordProcessStats", &rq.base, &resp, &e);
        if (resp)
            protobuf_c_message_free_unpacked(resp, NULL);
        if (s != ORR_OK && s != ORR_EUNAVAIL && s != ORR_ETIMEOUT)
            break;
    }
    if (s != ORR_OK)
        ORR_WARN("leftover count not recorded", "instance=%lld err=%s", (long long)inst,
                 orr_log_q(e.msg));
}

/* Land a finished log (or its index) in the blob store at key. On a file://
 * store on the same file system as the work folder it is hard-linked: no
 * copy, no temporary, no new inode (a third of a short run's CPU was the
 * file system allocating them). Nothing writes the file once the attempt
 * ended, so both names show the same bytes for good; the mode is the
 * store's (0644; the work folder's logs/ stays 0750). A linked file is not
 * synced here: the caller syncs the run's linked files and their folder
 * once (land_sync) before the report, as the store's copy would have.
 * Anywhere else (another file system, webhdfs, a name already taken, a link
 * refused) the store copies and syncs it as before; so it does when copy is
 * set: processes that survived the kill may still append to the work
 * folder's log, and the archived one must not change. */
static orr_status land_log(ex_daemon *d, const char *key, const char *local, int copy, int *linked,
                           orr_err *err)
{
    const char *root = orr_blob_local_root(d->blob);
    char full[EX_PATH + 320];
    *linked = 0;
    if (!copy && root && orr_blob_path_ok(key) &&
        snprintf(full, sizeof full, "%s/%s", root, key) < (int)sizeof full) {
        (void)chmod(local, 0644);
        int r = link(local, full), made = 0;
        if (r != 0 && errno == ENOENT) { /* the task's folder is new */
            char *slash = strrchr(full, '/');
            *slash = 0;
            r = mkdir(full, 0755);
            made = r == 0;
            *slash = '/';
            if (r == 0 || errno == EEXIST)
                r = link(local, full);
        }
        if (r == 0) {
            *linked = made ? 2 : 1;
            return ORR_OK;
        }
    }
    return d->blob->ops->put_file(d->blob, key, local, 0, err);
}

/* Make the linked files' bytes and their new names durable before the
 * report that makes them visible: one fdatasync per file and one fsync of
 * the store's folder (the log and its index share it), and of its parent
 * when land_log made that folder (linked 2). A crash of the machine then keeps what the
 * store's copy kept: the log of every reported run. */
static void land_sync(ex_daemon *d, const char *key, const char *const *locals, const int *linked,
                      int n)
{
    int any = 0, made = 0;
    for (int i = 0; i < n; i++) {
        if (!linked[i])
            continue;
        any = 1;
        made |= linked[i] == 2;
        if (i > 0 && linked[i - 1] && strcmp(locals[i - 1], locals[i]) == 0)
            continue; /* one file under two names: synced once */
        int fd = open(locals[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fdatasync(fd) != 0)
            ORR_WARN("log sync failed", "path=%s err=%s", orr_log_q(locals[i]),
                     orr_log_q(strerror(errno)));
        if (fd >= 0)
            close(fd);
    }
    const char *root = orr_blob_local_root(d->blob);
    char dir[EX_PATH + 320];
    if (!any || !root || snprintf(dir, sizeof dir, "%s/%s", root, key) >= (int)sizeof dir)
        return;
    for (int up = 0; up < 1 + made; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            return;
        *slash = 0;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0)
            ORR_WARN("log folder sync failed", "path=%s err=%s", orr_log_q(dir),
                     orr_log_q(strerror(errno)));
        if (fd >= 0)
            close(fd);
    }
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ex_report_send_staged's pause while the process runs: the run's end, a
 * cancel or its timeout stops the sending (the wait then deals with it). */
typedef struct run_hold {
    ex_sandbox *sb;
    int64_t kill_at; /* ex_now_ms clock */
} run_hold;

static int pause_in_run(void *cls, int ms)
{
    run_hold *h = cls;
    int64_t until = ex_now_ms() + ms;
    return ex_sandbox_hold(h->sb, until < h->kill_at ? until : h->kill_at) ||
           ex_now_ms() >= h->kill_at;
}

/* The run outlasted the hold: send its staged running report while the
 * process runs. The job thread is not waiting on the sandbox meanwhile, so
 * j->reporting lets a cancel kill the group itself (cancel_locked); each
 * pause between tries waits on the run. Returns the run's RUN_ state. */
static int report_running(ex_daemon *d, ex_job *j, ex_sandbox *sb, const ex_report *rr, int *staged,
                          int64_t kill_at)
{
    pthread_mutex_lock(&d->mu);
    int go = atomic_load(&j->cancel) == EX_CANCEL_NONE;
    j->reporting = go;
    pthread_mutex_unlock(&d->mu);
    if (!go) /* the wait finds the cancel; the end goes in one step */
        return RUN_STAGED;
    run_hold h = {sb, kill_at};
    orr_err err;
    int now = -1;
    orr_status s = ex_report_send_staged(d, rr, staged, pause_in_run, &h, &now, &err);
    pthread_mutex_lock(&d->mu);
    j->reporting = 0;
    pthread_mutex_unlock(&d->mu);
    if (s == ORR_OK)
        return RUN_REPORTED;
    if (s == ORR_EAGAIN || atomic_load(&d->stopping))
        return RUN_UNSURE;           /* stopping: the outbox keeps the start */
    if (now == HL_STATE(DISPATCHED)) /* refused, still ours: the end tries again */
        return RUN_STAGED;
    /* Moved by someone else: as if this had come before the start, the run
     * is not ours to go on with or to report. */
    ORR_WARN("the running report was refused: ending the run", "instance=%lld err=%s",
             (long long)j->instance_id, orr_log_q(err.msg));
    int none = EX_CANCEL_NONE;
    atomic_compare_exchange_strong(&j->cancel, &none, (int)EX_CANCEL_USER);
    ex_sandbox_cancel(sb);
    return RUN_GONE;
}

static void run_job(ex_daemon *d, ex_job *j, orr_arena *a)
{
    HL(Instance) *in = NULL; /* held by in_ans */
    ex_read_ans *in_ans = NULL;
    HL(Task) *task = NULL, *own_task = NULL; /* own: read by GetTask, freed here */
    job_spec js = {0};
    orr_err err;
    orr_err_clear(&err);
    ex_sandbox *sb = NULL;
    ex_logcap *cap = NULL;
    ex_progress *prog = NULL;
    char log_path[EX_PATH + 64] = "";
    int64_t inst = j->instance_id;
    char run_dir[EX_PATH + 64] = ""; /* set: removed (or kept empty) at the end */
    int made = 0;                    /* run_dir was made for this run */
    int unreachable = 1;             /* no process of the run can still reach run_dir */
    ex_xfer xfer;
    ex_run_plan plan = {0};
    ex_report rr = {0};     /* the run's dispatched -> running */
    int staged = -1;        /* rr's outbox file while only staged */
    int run = RUN_REPORTED; /* RUN_ */
    int64_t started_ms = 0; /* wall clock, for a report in one step */

    if (ex_read_instance(d, inst, &in, &in_ans, &err) != ORR_OK) {
        ORR_WARN("cannot read the instance", "instance=%lld err=%s", (long long)inst,
                 orr_log_q(err.msg));
        goto done;
    }
    if (in->state != HL_STATE(DISPATCHED) || strcmp(in->executor, d->id) != 0) {
        ORR_DEBUG("instance not dispatched to us", "instance=%lld state=%s executor=%s",
                  (long long)inst, ex_state_name((int)in->state), orr_log_q(in->executor));
        goto done;
    }
    j->attempt = in->attempt;
    ORR_INFO("instance assigned", "instance=%lld attempt=%d task=%lld", (long long)inst, j->attempt,
             (long long)in->task_id);

    task = in->task;
    if (!task) { /* a halleyd without with_task */
        HL(GetTaskRequest) gtq = HL_INIT(GET_TASK_REQUEST);
        gtq.id = in->task_id;
        gtq.version = in->task_version;
        if (ex_halley(d, "GetTask", &gtq.base, (ProtobufCMessage **)&own_task, &err) != ORR_OK) {
            ORR_WARN("cannot read the task", "instance=%lld err=%s", (long long)inst,
                     orr_log_q(err.msg));
            goto done; /* the periodic sweep tries again */
        }
        task = own_task;
    }

    /* Spec and run directory. */
    snprintf(run_dir, sizeof run_dir, "%s/%lld-%d", d->run_dir, (long long)inst, j->attempt);
    ex_log_path(log_path, sizeof log_path, d->log_dir, inst, j->attempt);
    orr_status s = parse_spec(d, task->spec_json, &js, &err);
    const ex_runner_ops *runner = NULL;
    if (s == ORR_OK && !(runner = ex_runner_find(js.type)))
        s = orr_err_set(&err, ORR_EINVAL, "type", "no runner for task type \"%.64s\"", js.type);
    if (s == ORR_OK) { /* ${...} in config: this attempt's values */
        ex_params_run pr = {.spec = js.root,
                            .params_json = in->params_json,
                            .task = task->name,
                            .task_id = in->task_id,
                            .instance_id = inst,
                            .attempt = j->attempt,
                            .version = in->task_version,
                            .schedule_time_ms = in->schedule_time_ms,
                            .timezone = task->timezone};
        s = ex_params_apply(js.config, &pr, &err);
    }
    if (s == ORR_OK) {
        pthread_mutex_lock(&d->mu);
        j->slots = js.slots;
        pthread_mutex_unlock(&d->mu);
        ex_daemon_publish_later(d);
        ex_remove_tree(run_dir);
        if (ex_rundir_make(&d->rundir, run_dir) != 0)
            s = orr_err_set(&err, ORR_EIO, run_dir, "cannot create: %s", strerror(errno));
        else
            made = 1;
    }
    if (s == ORR_OK) {
        ex_xfer_init(&xfer, d, in->task_id, inst, j->attempt);
        ex_run_ctx ctx = {.arena = a,
                          .config = js.config,
                          .instance_id = inst,
                          .task_id = in->task_id,
                          .attempt = j->attempt,
                          .from_scratch = in->from_scratch,
                          .schedule_time_ms = in->schedule_time_ms,
                          .run_dir = run_dir,
                          .code_dir = d->code_dir,
                          .bin_dir = d->bin_dir,
                          .drop = d->drop,
                          .uid = d->uid,
                          .gid = d->gid,
                          .hooks = &xfer.hooks};
        s = runner->prepare(&ctx, &plan, &err);
    }
    if (s != ORR_OK) {
        char why[600], reason[256];
        orr_err_str(&err, why, sizeof why);
        snprintf(reason, sizeof reason, "bad_spec: %.240s", why);
        log_note(log_path, "cannot start: %s%s", why, "");
        ORR_WARN("cannot start the instance", "instance=%lld err=%s", (long long)inst,
                 orr_log_q(why));
        finish_report(d, j, HL_STATE(DISPATCHED), 0, HL_STATE(FAILED), reason, 0, 0, NULL);
        goto done;
    }

    /* Fenced or stopping meanwhile: leave it dispatched (the sweep after the
     * fence lifts, or keplerd after our loss, takes it from there). */
    if (atomic_load(&j->cancel) != EX_CANCEL_NONE)
        goto done;

    /* dispatched -> running: staged, so a short run is reported once; sent
     * first when it cannot be staged or running_hold is 0. */
    rr = (ex_report){.instance_id = inst,
                     .attempt = j->attempt,
                     .from = HL_STATE(DISPATCHED),
                     .to = HL_STATE(RUNNING)};
    if (d->running_hold_ms > 0 && (staged = ex_report_stage(d, &rr, &err)) >= 0) {
        run = RUN_STAGED;
    } else {
        if (d->running_hold_ms > 0)
            ORR_WARN("cannot stage the start: reporting running first", "instance=%lld err=%s",
                     (long long)inst, orr_log_q(err.msg));
        if (ex_report_send(d, &rr, 0, NULL, &err) != ORR_OK)
            goto done;
    }

    ex_limits lim = {js.memory_bytes ? js.memory_bytes : d->slot_memory * js.slots,
                     js.cpu_percent ? js.cpu_percent : d->slot_cpu_percent * js.slots,
                     js.pids ? js.pids : d->slot_pids * js.slots};
    ex_spawn sp = {.argv = plan.argv,
                   .envp = plan.envp,
                   .cwd = plan.cwd,
                   .log_path = log_path,
                   .stdin_path = plan.stdin_path,
                   .drop = d->drop,
                   .uid = d->uid,
                   .gid = d->gid};
    char name[64];
    snprintf(name, sizeof name, "%lld-%d", (long long)inst, j->attempt);
    ex_cancel early = (ex_cancel)atomic_load(&j->cancel);
    if (early != EX_CANCEL_NONE) { /* came while we reported running: start nothing */
        if (early != EX_CANCEL_USER && run == RUN_REPORTED)
            finish_report(d, j, HL_STATE(RUNNING), 0, HL_STATE(FAILED), cancel_reason(early), 0, 0,
                          NULL);
        goto done; /* only staged: it stays dispatched, as before the report */
    }
    /* Lines unstamped beat no run: a capture that cannot start is logged. */
    if (ex_logcap_start(log_path, &cap, &err) != ORR_OK)
        ORR_WARN("the log's lines will not be stamped", "instance=%lld err=%s", (long long)inst,
                 orr_log_q(err.msg));
    ex_logsrv_begin(d->logsrv, inst, j->attempt);
    unreachable = 0; /* a start that fails may have run some of the task */
    started_ms = wall_ms();
    if (ex_sandbox_start(d->cg, &d->cg_env, name, &lim, &sp, &sb, &err) != ORR_OK) {
        char why[600], reason[256];
        orr_err_str(&err, why, sizeof why);
        snprintf(reason, sizeof reason, "sandbox: %.240s", why);
        ex_logcap_finish(cap);
        cap = NULL;
        log_note(log_path, "cannot start: %s%s", why, "");
        ORR_ERROR("sandbox start failed", "instance=%lld err=%s", (long long)inst, orr_log_q(why));
        ex_logsrv_end(d->logsrv, inst, j->attempt);
        end_report(d, j, run, started_ms, &rr, &staged, HL_STATE(FAILED), reason, 0, 0);
        goto done;
    }
    ex_guard_note(d, '+', ex_sandbox_pid(sb));
    set_sb(d, j, sb);
    if (atomic_load(&j->cancel) != EX_CANCEL_NONE) /* a kill that came before the sandbox */
        ex_sandbox_cancel(sb);
    if (strcmp(js.type, "transfer") == 0)
        prog = ex_progress_start(d, log_path, inst, j->attempt);
    ORR_INFO("instance running", "instance=%lld attempt=%d pid=%d slots=%d timeout_ms=%lld",
             (long long)inst, j->attempt, (int)ex_sandbox_pid(sb), js.slots,
             (long long)js.timeout_ms);

    ex_result res;
    int64_t kill_at = ex_now_ms() + js.timeout_ms;
    if (run == RUN_STAGED) {
        int64_t hold_until = ex_now_ms() + d->running_hold_ms;
        if (!ex_sandbox_hold(sb, hold_until < kill_at ? hold_until : kill_at) &&
            ex_now_ms() < kill_at)
            run = report_running(d, j, sb, &rr, &staged, kill_at);
    }
    ex_sandbox_wait(sb, kill_at, &res);
    ex_progress_stop(prog);
    prog = NULL;
    ex_logcap_finish(cap); /* the group is dead: the log is complete */
    cap = NULL;
    set_sb(d, j, NULL);
    ex_guard_note(d, '-', ex_sandbox_pid(sb));
    if (plan.secret_path) /* credentials live no longer than the run */
        unlink(plan.secret_path);
    if (res.left > 0)
        ORR_ERROR("processes survived the kill", "instance=%lld left=%d", (long long)inst,
                  res.left);
    else if (res.left < 0)
        ORR_WARN("the processes left after the kill could not be counted", "instance=%lld",
                 (long long)inst);
    /* Whether the count covers every process of the run is the backend's
     * (ex_rundir_init's confined): rlimit's group does not. */
    unreachable = res.left == 0;

    /* Outcome -> state. */
    int to = HL_STATE(FAILED);
    char reason[256] = "";
    ex_cancel why = (ex_cancel)atomic_load(&j->cancel);
    if (res.how == EX_END_CANCELLED && why == EX_CANCEL_USER) {
        to = HL_STATE(KILLED);
    } else if (res.how == EX_END_CANCELLED) {
        snprintf(reason, sizeof reason, "%s", cancel_reason(why));
    } else if (res.how == EX_END_TIMEOUT) {
        to = HL_STATE(TIMED_OUT);
        snprintf(reason, sizeof reason, "timeout after %lld ms", (long long)js.timeout_ms);
    } else if (res.exec_errno) {
        snprintf(reason, sizeof reason, "exec: %s", strerror(res.exec_errno));
        log_note(log_path, "cannot execute %s: %s", plan.argv[0], strerror(res.exec_errno));
    } else if (res.oom && !(res.exited && res.exit_code == 0)) {
        snprintf(reason, sizeof reason, "memory_limit");
        log_note(log_path, "killed: the memory limit (%s) was reached%s",
                 orr_arena_sprintf(a, "%lld bytes", (long long)lim.memory_bytes), "");
    } else if (res.pids_limited) {
        snprintf(reason, sizeof reason, "pids_limit");
        log_note(log_path, "a fork was refused: the process limit (%s) was reached%s",
                 orr_arena_sprintf(a, "%d", lim.pids), "");
    } else if (res.exited && res.exit_code == 0) {
        to = HL_STATE(SUCCESS);
    } else if (ex_quality_failed_exit(js.type, res.exited, res.exit_code)) {
        snprintf(reason, sizeof reason, "quality"); /* the log names the check */
    } else if (res.exited) {
        snprintf(reason, sizeof reason, "exit code %d", res.exit_code);
    } else {
        snprintf(reason, sizeof reason, "killed by signal %d", res.term_signal);
    }
    int code = res.exited ? res.exit_code : 128 + res.term_signal;
    if (res.leftover > 0) {
        /* The main process ended and left work running: killed above. */
        char *n = orr_arena_sprintf(a, "%d", res.leftover);
        log_note(log_path,
                 "the main process ended while %s process(es) it started still ran: "
                 "killed%s",
                 n, "");
        ORR_WARN("killed processes the main process left running", "instance=%lld leftover=%d",
                 (long long)inst, res.leftover);
        if (to == HL_STATE(SUCCESS))
            snprintf(reason, sizeof reason, "leftover_processes: %d killed", res.leftover);
        record_leftover(d, inst, j->attempt, res.leftover);
    }
    if ((strcmp(js.type, "transfer") == 0 || strcmp(js.type, "quality") == 0) &&
        res.how != EX_END_CANCELLED) {
        /* Statistics, and the watermark of a successful run, before the
         * final state: whoever sees success finds them. */
        if (ex_xfer_after(&xfer, a, &plan, log_path, to == HL_STATE(SUCCESS), &err) != ORR_OK) {
            char msg[600];
            orr_err_str(&err, msg, sizeof msg);
            to = HL_STATE(FAILED);
            snprintf(reason, sizeof reason, "%.250s", msg);
            log_note(log_path, "the run succeeded but %s%s", msg, "");
        }
    }
    if (strcmp(js.type, "transfer") == 0 && to == HL_STATE(SUCCESS))
        ex_lineage_report(d, inst, js.config); /* what the run moved (ex_lineage.c) */
    ex_logsrv_end(d->logsrv, inst, j->attempt);
    ORR_INFO("instance ended", "instance=%lld attempt=%d state=%s reason=%s exit_code=%d ms=%lld",
             (long long)inst, j->attempt, ex_state_name(to), orr_log_q(reason), code,
             (long long)res.ran_ms);

    /* Log to the blob store before the report, so whoever sees the final
     * state finds the log. */
    char key[256], idx_path[EX_PATH + 64];
    snprintf(key, sizeof key, "logs/%lld/%lld-%d.idx", (long long)in->task_id, (long long)inst,
             j->attempt);
    ex_log_index_path(idx_path, sizeof idx_path, log_path);
    /* The index first: a reader that finds the log finds its index. A run
     * that wrote nothing has no index file (the first line makes it): its
     * empty log is an empty index, landed under both names (one inode, no
     * copy). A log with lines and no index (the capture failed), or one that
     * survivors may still write, lands alone: its lines are unstamped. */
    int linked[2] = {0, 0};
    int copy = res.left != 0; /* survivors may still write: archive a copy */
    const char *idx_src = idx_path;
    struct stat lst;
    if (access(idx_path, F_OK) != 0)
        idx_src = !copy && stat(log_path, &lst) == 0 && lst.st_size == 0 ? log_path : NULL;
    const char *landed[2] = {idx_src, log_path};
    if (idx_src && land_log(d, key, idx_src, copy, &linked[0], &err) != ORR_OK)
        ORR_WARN("log index copy to the blob store failed", "instance=%lld err=%s", (long long)inst,
                 orr_log_q(err.msg));
    snprintf(key, sizeof key, "logs/%lld/%lld-%d.log", (long long)in->task_id, (long long)inst,
             j->attempt);
    if (land_log(d, key, log_path, copy, &linked[1], &err) != ORR_OK)
        ORR_WARN("log copy to the blob store failed", "instance=%lld err=%s", (long long)inst,
                 orr_log_q(err.msg));
    land_sync(d, key, landed, linked, 2);

    if (run == RUN_UNSURE && to != HL_STATE(KILLED) && staged >= 0) {
        /* Its running report may have landed: settle it (the process is gone,
         * nothing waits on it), then the end from running. */
        orr_err e;
        int now = -1;
        orr_status s = ex_report_send_staged(d, &rr, &staged, NULL, NULL, &now, &e);
        if (s == ORR_OK)
            run = RUN_REPORTED;
        else if (!atomic_load(&d->stopping) && now == HL_STATE(DISPATCHED))
            run = RUN_STAGED; /* refused, still ours: the end in one step, or both */
        else
            run = RUN_GONE; /* moved by someone else, or stopping (the outbox keeps it) */
    }
    /* UNSURE left without its file: the daemon stopped while it was sent;
     * the outbox keeps the start, so the next life fails the run
     * "executor_restarted" as it would a run reported running. */
    if (to != HL_STATE(KILLED) && (run == RUN_REPORTED || run == RUN_STAGED))
        end_report(d, j, run, started_ms, &rr, &staged, to, reason, 1, code);

done:
    /* After the end's own outbox entry: a start record is dropped only once
     * nothing needs it (a crash between keeps both; the replay drops it). */
    ex_report_unstage(d, &rr, staged);
    ex_progress_stop(prog);
    ex_logcap_finish(cap);
    if (made)
        ex_rundir_done(&d->rundir, run_dir, unreachable);
    else if (run_dir[0])
        ex_remove_tree(run_dir);
    ex_sandbox_free(sb);
    if (js.root)
        json_decref(js.root);
    if (own_task)
        protobuf_c_message_free_unpacked(&own_task->base, NULL);
    ex_read_put(in_ans);
}

static void job_run(ex_job *j)
{
    ex_daemon *d = j->d;
    orr_arena *a = orr_arena_create(0);
    run_job(d, j, a);
    orr_arena_destroy(a);
    pthread_mutex_lock(&d->mu);
    j->slots = 0;
    pthread_mutex_unlock(&d->mu);
    atomic_store(&j->done, 1);
    ex_daemon_publish_later(d);
}

/* A job thread: the queue's oldest job, then the next, until
 * ex_job_threads_stop finds the queue empty. */
static void *job_thread(void *arg)
{
    ex_daemon *d = arg;
    pthread_setname_np(pthread_self(), "executord-job");
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->job_queue && !d->job_stop) {
            d->job_idle++;
            pthread_cond_wait(&d->job_cv, &d->mu);
            d->job_idle--;
        }
        ex_job *j = d->job_queue;
        if (!j)
            break;
        d->job_queue = j->qnext;
        if (!d->job_queue)
            d->job_qtail = NULL;
        d->job_queued--;
        pthread_mutex_unlock(&d->mu);
        job_run(j);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Under d->mu: j goes to a waiting thread, or to a new one when every
 * waiting thread has a queued job already. 0, or -1 when a thread was
 * needed and could not be made: the job is not started (the sweep tries
 * again), as a busy thread may stay busy for hours. */
static int job_hand_over(ex_daemon *d, ex_job *j)
{
    if (d->job_idle <= d->job_queued) {
        if (d->n_job_threads == d->cap_job_threads) {
            d->cap_job_threads = d->cap_job_threads ? d->cap_job_threads * 2 : 16;
            d->job_threads =
                orr_xrealloc(d->job_threads, (size_t)d->cap_job_threads * sizeof *d->job_threads);
        }
        if (pthread_create(&d->job_threads[d->n_job_threads], NULL, job_thread, d) != 0)
            return -1;
        d->n_job_threads++;
    }
    j->qnext = NULL;
    if (d->job_qtail)
        d->job_qtail->qnext = j;
    else
        d->job_queue = j;
    d->job_qtail = j;
    d->job_queued++;
    pthread_cond_signal(&d->job_cv);
    return 0;
}

void ex_job_threads_stop(ex_daemon *d)
{
    pthread_mutex_lock(&d->mu);
    d->job_stop = 1;
    pthread_cond_broadcast(&d->job_cv);
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < d->n_job_threads; i++)
        pthread_join(d->job_threads[i], NULL);
    free(d->job_threads);
    d->job_threads = NULL;
    d->n_job_threads = d->cap_job_threads = 0;
}

void ex_job_start(ex_daemon *d, int64_t instance_id)
{
    if (atomic_load(&d->stopping))
        return;
    pthread_mutex_lock(&d->mu);
    /* stopping again under mu: cancel_all, which takes mu, must see every job */
    if (atomic_load(&d->stopping) || atomic_load(&d->fenced)) {
        /* fenced: the sweep after the fence lifts starts it */
        pthread_mutex_unlock(&d->mu);
        return;
    }
    for (ex_job *j = d->jobs; j; j = j->next)
        if (j->instance_id == instance_id && !atomic_load(&j->done)) {
            pthread_mutex_unlock(&d->mu);
            return;
        }
    ex_job *j = orr_xcalloc(1, sizeof *j);
    j->d = d;
    j->instance_id = instance_id;
    if (job_hand_over(d, j) != 0) {
        pthread_mutex_unlock(&d->mu);
        ORR_ERROR("cannot start a job thread", "instance=%lld", (long long)instance_id);
        free(j);
        return;
    }
    j->next = d->jobs;
    d->jobs = j;
    pthread_mutex_unlock(&d->mu);
}

static void cancel_locked(ex_job *j, ex_cancel why)
{
    int none = EX_CANCEL_NONE;
    atomic_compare_exchange_strong(&j->cancel, &none, (int)why);
    if (j->sb && j->reporting) /* its thread is in a report, not in the wait: kill now */
        ex_sandbox_kill_now(j->sb);
    else if (j->sb)
        ex_sandbox_cancel(j->sb);
}

void ex_job_cancel(ex_daemon *d, int64_t instance_id, ex_cancel why)
{
    pthread_mutex_lock(&d->mu);
    for (ex_job *j = d->jobs; j; j = j->next)
        if (j->instance_id == instance_id && !atomic_load(&j->done)) {
            ORR_INFO("cancelling instance", "instance=%lld why=%d", (long long)instance_id,
                     (int)why);
            cancel_locked(j, why);
        }
    pthread_mutex_unlock(&d->mu);
}

void ex_job_cancel_all(ex_daemon *d, ex_cancel why)
{
    pthread_mutex_lock(&d->mu);
    for (ex_job *j = d->jobs; j; j = j->next)
        if (!atomic_load(&j->done))
            cancel_locked(j, why);
    pthread_mutex_unlock(&d->mu);
}

int ex_job_reap(ex_daemon *d, int wait_all)
{
    int running = 0;
    for (;;) {
        ex_job *finished = NULL;
        running = 0;
        pthread_mutex_lock(&d->mu);
        for (ex_job **pp = &d->jobs; *pp;) {
            ex_job *j = *pp;
            if (atomic_load(&j->done)) {
                *pp = j->next;
                j->next = finished;
                finished = j;
            } else {
                running++;
                pp = &j->next;
            }
        }
        pthread_mutex_unlock(&d->mu);
        while (finished) {
            ex_job *n = finished->next;
            free(finished);
            finished = n;
        }
        if (!wait_all || running == 0)
            return running;
        ex_sleep_ms(50);
    }
}

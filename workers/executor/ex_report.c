/*
 * ex_report.c - state reports to Halley that survive a lost connection and a
 * restart (contract in ex_daemon.h).
 *
 * Outbox: one small JSON file per pending report,
 *   <work_dir>/outbox/<instance>-<attempt>-<to>.json
 *   {"instance_id":12,"attempt":1,"from":4,"to":5,"reason":"","exit_code":0}
 * written (once, synced) before the first try and removed once Halley
 * answered anything but "try again" (kept as a spare for the next report:
 * see "spares" below). A report is a compare-and-set
 * (expected state + expected attempt), so re-sending one that already
 * landed is harmless: it comes back ABORTED and is dropped.
 *
 * Combining: job threads report at the same moment (a whole slot round
 * starts and ends together), and one TransitionInstance call per report
 * costs halleyd and the connection far more than the rows. A report is
 * therefore queued; while fewer than REP_LEADERS calls are in flight its
 * thread becomes a leader and sends every queued report (at most
 * REP_BATCH_MAX, its own first) as one TransitionInstances call, whose items
 * keep their own compare-and-set and their own answer; otherwise it waits
 * until a leader has answered it. A lone report goes as a TransitionInstance
 * call, as before. A call that fails as a whole gives every item its
 * status, and each thread retries its own report as it always did.
 *
 * Start records: a run's dispatched -> running is staged (written and
 * synced, not sent) before its process starts, and sent only when the run
 * outlasts [executor] running_hold; a shorter run is reported once, from
 * dispatched with its start time (ex_job.c), that report appended to the
 * start record's file as its second line (one file a run; the replay reads
 * a file's last line that parses). Either way a restart finds the start in
 * the outbox if the run's end was never reported, re-sends it and then
 * fails the attempt "executor_restarted", as when the running report was
 * sent before the start.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_rpc_codec.h"

static const char *const state_names[] = {
    "unspecified", "waiting", "ready",     "dispatched", "running",        "success",
    "failed",      "killed",  "timed_out", "suspended",  "marked_success",
};

const char *ex_state_name(int state)
{
    if (state < 0 || state >= (int)(sizeof state_names / sizeof state_names[0]))
        return "?";
    return state_names[state];
}

orr_status ex_halley(ex_daemon *d, const char *method, const ProtobufCMessage *req,
                     ProtobufCMessage **resp, orr_err *err)
{
    return orr_rpc_call_unary(d->halley, method, req, resp, d->rpc_timeout_ms, err);
}

static void outbox_path(const ex_daemon *d, const ex_report *r, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%lld-%d-%d.json", d->outbox_dir, (long long)r->instance_id, r->attempt,
             r->to);
}

/* ------------------------------------------------------------ spares
 *
 * An outbox file is made and removed for nearly every run; on ext4 the new
 * inode (and the scan for recently deleted ones that comes with it) cost
 * more than the write. So a delivered report's file is not unlinked: it is
 * renamed into <work>/outbox-spare/<n> and truncated there, kept open, and
 * the next report renames it into place. The spare folder holds empty files
 * only (the rename comes before the truncation: a crash between leaves an
 * old report among the spares, which the replay never reads and the next
 * start removes), so nothing there is ever re-sent. */

void ex_report_spares_init(ex_daemon *d)
{
    d->n_spares = 0;
    DIR *dir = opendir(d->spare_dir);
    if (!dir)
        return;
    struct dirent *de;
    char path[EX_PATH + 300];
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", d->spare_dir, de->d_name);
        unlink(path);
    }
    closedir(dir);
}

void ex_report_close(ex_daemon *d)
{
    char path[EX_PATH + 32];
    pthread_mutex_lock(&d->rep_mu);
    for (int i = 0; i < d->n_spares; i++) {
        close(d->spare_fd[i]);
        snprintf(path, sizeof path, "%s/%u", d->spare_dir, d->spare_name[i]);
        unlink(path);
    }
    d->n_spares = 0;
    pthread_mutex_unlock(&d->rep_mu);
}

/* A spare renamed to path, open and empty; -1 when there is none. */
static int spare_take(ex_daemon *d, const char *path)
{
    pthread_mutex_lock(&d->rep_mu);
    if (d->n_spares == 0) {
        pthread_mutex_unlock(&d->rep_mu);
        return -1;
    }
    d->n_spares--;
    int fd = d->spare_fd[d->n_spares];
    unsigned name = d->spare_name[d->n_spares];
    pthread_mutex_unlock(&d->rep_mu);
    char sp[EX_PATH + 32];
    snprintf(sp, sizeof sp, "%s/%u", d->spare_dir, name);
    if (rename(sp, path) != 0) {
        close(fd);
        unlink(sp);
        return -1;
    }
    return fd;
}

/* The delivered report's file (path, open as fd) kept as a spare, or
 * removed when there are enough. Closes fd either way. */
static void spare_put(ex_daemon *d, const char *path, int fd)
{
    pthread_mutex_lock(&d->rep_mu);
    unsigned name = d->spare_next++;
    int room = d->n_spares < EX_SPARES;
    pthread_mutex_unlock(&d->rep_mu);
    char sp[EX_PATH + 32];
    snprintf(sp, sizeof sp, "%s/%u", d->spare_dir, name);
    if (!room || rename(path, sp) != 0) {
        close(fd);
        unlink(path);
        return;
    }
    if (ftruncate(fd, 0) != 0) {
        close(fd);
        unlink(sp);
        return;
    }
    pthread_mutex_lock(&d->rep_mu);
    if (d->n_spares < EX_SPARES) {
        d->spare_fd[d->n_spares] = fd;
        d->spare_name[d->n_spares] = name;
        d->n_spares++;
        fd = -1;
    }
    pthread_mutex_unlock(&d->rep_mu);
    if (fd >= 0) {
        close(fd);
        unlink(sp);
    }
}

/* r as one line of JSON (no newline); free() it. NULL if it cannot be made. */
static char *report_text(const ex_report *r)
{
    json_t *o =
        json_pack("{sI sI si si ss}", "instance_id", (json_int_t)r->instance_id, "attempt",
                  (json_int_t)r->attempt, "from", r->from, "to", r->to, "reason", r->reason);
    if (!o)
        return NULL;
    if (r->has_exit_code)
        json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    if (r->started_at_ms > 0)
        json_object_set_new(o, "started_at_ms", json_integer((json_int_t)r->started_at_ms));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* Written once under its own name (a spare renamed into place, else a new
 * file; no temporary) and synced before the first try; *fd_out is the open
 * file (-1 if none), for spare_put once the report is answered. A crash
 * while it is written leaves a file that does not parse (empty, or the
 * object cut short): the replay drops it, which is the report never made,
 * as a crash just before the write would have left it -- the attempt is
 * then found running at the restart and failed "executor_restarted". */
static orr_status outbox_write(ex_daemon *d, const ex_report *r, int *fd_out, orr_err *err)
{
    char path[EX_PATH + 64];
    outbox_path(d, r, path, sizeof path);
    *fd_out = -1;
    char *text = report_text(r);
    orr_status s = ORR_OK;
    int fd = spare_take(d, path);
    if (fd < 0)
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = text ? strlen(text) : 0;
    if (fd < 0 || !text || pwrite(fd, text, len, 0) != (ssize_t)len || fdatasync(fd) != 0) {
        s = orr_err_set(err, ORR_EIO, path, "cannot write the outbox: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
    } else {
        *fd_out = fd;
    }
    free(text);
    return s;
}

/* ------------------------------------------------------------ combining */

#define REP_LEADERS   2
#define REP_BATCH_MAX 256

typedef struct ex_rep_item {
    HL(TransitionRequest) * rq;
    orr_status s;
    orr_err *err;
    int taken; /* in a leader's call */
    int done;  /* answered: s and *err set */
    struct ex_rep_item *next;
} ex_rep_item;

/* Send items (n >= 1) as one call and set each one's status. */
static void rep_send(ex_daemon *d, ex_rep_item **items, size_t n)
{
    orr_err e;
    orr_err_clear(&e);
    if (n == 1) {
        ProtobufCMessage *resp = NULL;
        items[0]->s = ex_halley(d, "TransitionInstance", &items[0]->rq->base, &resp, items[0]->err);
        if (resp)
            protobuf_c_message_free_unpacked(resp, NULL);
        return;
    }
    HL(TransitionRequest) * rqs[REP_BATCH_MAX];
    for (size_t i = 0; i < n; i++)
        rqs[i] = items[i]->rq;
    HL(TransitionBatchRequest) brq = HL_INIT(TRANSITION_BATCH_REQUEST);
    brq.items = rqs;
    brq.n_items = n;
    ProtobufCMessage *resp = NULL;
    orr_status s = ex_halley(d, "TransitionInstances", &brq.base, &resp, &e);
    HL(TransitionBatchResponse) *r = (HL(TransitionBatchResponse) *)resp;
    if (s == ORR_OK && r->n_results != n)
        s = orr_err_set(&e, ORR_EINTERNAL, NULL, "halleyd answered %zu results for %zu items",
                        r->n_results, n);
    for (size_t i = 0; i < n; i++) {
        if (s != ORR_OK) {
            items[i]->s = s;
            *items[i]->err = e;
            continue;
        }
        const HL(TransitionResult) *x = r->results[i];
        items[i]->s = x->code == 0 ? ORR_OK : orr_rpc_status_from_grpc((grpc_status_code)x->code);
        if (items[i]->s != ORR_OK)
            orr_err_set(items[i]->err, items[i]->s, x->field && x->field[0] ? x->field : NULL, "%s",
                        x->message ? x->message : "");
    }
    if (resp)
        protobuf_c_message_free_unpacked(resp, NULL);
}

/* One TransitionInstance, combined with the reports of other threads that
 * come at the same moment (see the top of the file). */
static orr_status rep_call(ex_daemon *d, HL(TransitionRequest) * rq, orr_err *err)
{
    ex_rep_item me = {.rq = rq, .err = err};
    pthread_mutex_lock(&d->rep_mu);
    ex_rep_item **tail = &d->rep_queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &me;
    while (!me.done && (me.taken || d->rep_leaders >= REP_LEADERS))
        pthread_cond_wait(&d->rep_cv, &d->rep_mu);
    if (me.done) {
        pthread_mutex_unlock(&d->rep_mu);
        return me.s;
    }
    /* Lead: take our item and what queued, at most one per instance (the
     * next leader takes a second report on the same instance). */
    ex_rep_item *batch[REP_BATCH_MAX];
    size_t n = 0;
    for (ex_rep_item **pp = &d->rep_queue; *pp && n < REP_BATCH_MAX;) {
        ex_rep_item *it = *pp;
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = batch[i]->rq->instance_id == it->rq->instance_id;
        if (it != &me && (dup || n == 0)) { /* our own item goes first */
            pp = &it->next;
            continue;
        }
        *pp = it->next;
        it->next = NULL;
        it->taken = 1;
        batch[n++] = it;
        if (it == &me)
            pp = &d->rep_queue; /* scan again from the head for the others */
    }
    d->rep_leaders++;
    pthread_mutex_unlock(&d->rep_mu);

    rep_send(d, batch, n);

    pthread_mutex_lock(&d->rep_mu);
    d->rep_leaders--;
    for (size_t i = 0; i < n; i++)
        batch[i]->done = 1;
    pthread_cond_broadcast(&d->rep_cv);
    pthread_mutex_unlock(&d->rep_mu);
    return me.s;
}

static int retryable(orr_status s)
{
    return s == ORR_EUNAVAIL || s == ORR_ETIMEOUT || s == ORR_EINTERNAL || s == ORR_EIO ||
           s == ORR_EAGAIN;
}

/* The instance's state now, or -1; its attempt in *attempt. */
static int read_state(ex_daemon *d, int64_t id, int *attempt)
{
    HL(GetInstanceRequest) rq = HL_INIT(GET_INSTANCE_REQUEST);
    rq.id = id;
    rq.without_deps = 1; /* the row alone: no dependency states */
    ProtobufCMessage *resp = NULL;
    orr_err e;
    *attempt = -1;
    if (ex_halley(d, "GetInstance", &rq.base, &resp, &e) != ORR_OK)
        return -1;
    int st = (int)((HL(Instance) *)resp)->state;
    *attempt = ((HL(Instance) *)resp)->attempt;
    protobuf_c_message_free_unpacked(resp, NULL);
    return st;
}

/* The sending of every report: path is r's outbox file, *fd_io that file
 * open (-1: none), persist says whether there is a file at all (the
 * replay's is there without an fd). */
static orr_status send_loop(ex_daemon *d, const ex_report *r, const char *path, int persist,
                            int *fd_io, int (*pause)(void *, int), void *cls, int *now_state,
                            orr_err *err)
{
    int fd = *fd_io;
    HL(TransitionRequest) rq = HL_INIT(TRANSITION_REQUEST);
    rq.instance_id = r->instance_id;
    rq.expected_state = (HL(InstanceState))r->from;
    rq.new_state = (HL(InstanceState))r->to;
    rq.actor = d->actor;
    rq.reason = (char *)r->reason;
    rq.expected_attempt = r->attempt;
    rq.has_exit_code = r->has_exit_code;
    rq.exit_code = r->exit_code;
    rq.started_at_ms = r->started_at_ms;

    int delay = 200, tries = 0;
    orr_status s;
    for (;;) {
        s = rep_call(d, &rq, err);
        tries++;
        if (s == ORR_OK)
            break;
        if (!retryable(s))
            break;
        if (atomic_load(&d->stopping)) {
            ORR_WARN("report left in the outbox", "instance=%lld to=%s", (long long)r->instance_id,
                     ex_state_name(r->to));
            if (fd >= 0)
                close(fd);
            *fd_io = -1;
            return orr_err_set(err, ORR_ECANCELLED, NULL, "stopping");
        }
        if (tries == 1 || tries % 10 == 0)
            ORR_WARN("report failed, retrying", "instance=%lld to=%s tries=%d err=%s",
                     (long long)r->instance_id, ex_state_name(r->to), tries, orr_log_q(err->msg));
        if (!pause)
            ex_sleep_ms(delay);
        else if (pause(cls, delay))
            return orr_err_set(err, ORR_EAGAIN, NULL, "left staged"); /* *fd_io stays open */
        delay = delay * 2 > 5000 ? 5000 : delay * 2;
    }
    *fd_io = -1;
    if (fd >= 0)
        spare_put(d, path, fd); /* answered: the file kept for the next report */
    else if (persist)
        unlink(path);
    if (s == ORR_OK) {
        ORR_INFO("instance state reported", "instance=%lld attempt=%d from=%s to=%s reason=%s",
                 (long long)r->instance_id, r->attempt, ex_state_name(r->from),
                 ex_state_name(r->to), orr_log_q(r->reason));
        if (now_state)
            *now_state = r->to;
        return ORR_OK;
    }
    if (s == ORR_ECONFLICT || s == ORR_ESTATE) {
        int att;
        int st = read_state(d, r->instance_id, &att);
        /* Our own earlier try may have landed: halleyd committed it, then its
         * answer was lost (a deadline, a halleyd gone before it replied) and
         * the retry found the move made. The same state at the same attempt
         * is this report delivered, not a move by someone else. */
        if (st == r->to && att == r->attempt) {
            ORR_INFO("instance state already reported", "instance=%lld attempt=%d to=%s tries=%d",
                     (long long)r->instance_id, r->attempt, ex_state_name(r->to), tries);
            if (now_state)
                *now_state = r->to;
            return ORR_OK;
        }
        ORR_INFO("instance moved by someone else", "instance=%lld wanted=%s now=%s",
                 (long long)r->instance_id, ex_state_name(r->to), ex_state_name(st));
        if (now_state)
            *now_state = st;
        return ORR_ECONFLICT;
    }
    ORR_ERROR("report refused", "instance=%lld to=%s code=%s err=%s", (long long)r->instance_id,
              ex_state_name(r->to), orr_status_name(s), orr_log_q(err->msg));
    if (now_state) { /* refused, not moved: the caller may try another way */
        int att;
        *now_state = read_state(d, r->instance_id, &att);
    }
    return s;
}

orr_status ex_report_send(ex_daemon *d, const ex_report *r, int persist, int *now_state,
                          orr_err *err)
{
    int fd = -1;        /* the outbox file we wrote, open */
    if (persist == 1) { /* 2: the replay's file, already there */
        orr_err we;
        if (outbox_write(d, r, &fd, &we) != ORR_OK) /* still try to send it */
            ORR_ERROR("outbox write failed", "instance=%lld err=%s", (long long)r->instance_id,
                      orr_log_q(we.msg));
    }
    char path[EX_PATH + 64];
    outbox_path(d, r, path, sizeof path);
    return send_loop(d, r, path, persist, &fd, NULL, NULL, now_state, err);
}

/* Synced, but its folder is not: after a power loss that dropped the new
 * name, the attempt would be found dispatched, but only by an executord
 * back within its ZooKeeper session's timeout; past it keplerd has taken
 * the attempt away as lost (executor_lost), as for any run of a machine
 * that went down. */
int ex_report_stage(ex_daemon *d, const ex_report *r, orr_err *err)
{
    int fd = -1;
    return outbox_write(d, r, &fd, err) == ORR_OK ? fd : -1;
}

void ex_report_unstage(ex_daemon *d, const ex_report *r, int fd)
{
    if (fd < 0)
        return;
    char path[EX_PATH + 64];
    outbox_path(d, r, path, sizeof path);
    spare_put(d, path, fd);
}

orr_status ex_report_send_staged(ex_daemon *d, const ex_report *r, int *fd,
                                 int (*pause)(void *cls, int ms), void *cls, int *now_state,
                                 orr_err *err)
{
    char path[EX_PATH + 64];
    outbox_path(d, r, path, sizeof path);
    return send_loop(d, r, path, 1, fd, pause, cls, now_state, err);
}

/* The start record's file (fd) cut back to its first size bytes, the
 * start alone, and synced: 0, or -1. */
static int restore_start(int fd, off_t size)
{
    return ftruncate(fd, size) == 0 && fdatasync(fd) == 0 ? 0 : -1;
}

/* Give up a start record's file whose content is not known to be the start
 * alone: to the spares (emptied, or removed). */
static void drop_start(ex_daemon *d, const char *path, int *fd)
{
    ORR_WARN("a start record could not be restored: dropped", "path=%s", orr_log_q(path));
    spare_put(d, path, *fd);
    *fd = -1;
}

orr_status ex_report_send_after_stage(ex_daemon *d, const ex_report *start, int *fd,
                                      const ex_report *end, int *now_state, orr_err *err)
{
    char path[EX_PATH + 64];
    outbox_path(d, start, path, sizeof path);
    struct stat st;
    char *text = report_text(end);
    int ok = text && fstat(*fd, &st) == 0;
    if (ok) { /* a line of its own: the start's line ends without a newline */
        orr_buf line = ORR_BUF_INIT;
        orr_buf_append_byte(&line, '\n');
        orr_buf_append_str(&line, text);
        orr_buf_append_byte(&line, '\n');
        if (pwrite(*fd, line.data, line.len, st.st_size) != (ssize_t)line.len ||
            fdatasync(*fd) != 0) {
            ok = 0; /* a part may be there: back to the start alone */
            if (restore_start(*fd, st.st_size) != 0)
                drop_start(d, path, fd);
        }
        orr_buf_free(&line);
    }
    free(text);
    if (!ok) { /* its own file then; the start stays staged for the caller */
        ORR_WARN("cannot append the end to the start record", "path=%s", orr_log_q(path));
        return ex_report_send(d, end, 1, now_state, err);
    }
    /* Sent with the file kept here: an answer gives it to the spares;
     * stopping keeps both lines (the replay sends the end); a refusal cuts
     * it back to the start, staged for the caller's two steps. */
    int none = -1;
    orr_status s = send_loop(d, end, path, 0, &none, NULL, NULL, now_state, err);
    if (s == ORR_OK) {
        spare_put(d, path, *fd);
        *fd = -1;
    } else if (atomic_load(&d->stopping)) {
        close(*fd);
        *fd = -1;
    } else if (restore_start(*fd, st.st_size) != 0) {
        drop_start(d, path, fd);
    }
    return s;
}

/* One report's JSON into r: 0, or -1 when a field is missing or wrong. */
static int report_parse(const char *text, size_t n, ex_report *r)
{
    json_t *o = NULL;
    orr_err e;
    if (orr_json_parse(text, n, &o, &e) != ORR_OK)
        return -1;
    int64_t id = 0, att = 0, from = 0, to = 0, code = 0;
    const char *reason = "";
    memset(r, 0, sizeof *r);
    int ok = orr_json_get_int(o, "", "instance_id", 1, 1, INT64_MAX, &id, &e) == ORR_OK &&
             orr_json_get_int(o, "", "attempt", 1, 0, INT32_MAX, &att, &e) == ORR_OK &&
             orr_json_get_int(o, "", "from", 1, 1, 10, &from, &e) == ORR_OK &&
             orr_json_get_int(o, "", "to", 1, 1, 10, &to, &e) == ORR_OK &&
             orr_json_get_str(o, "", "reason", 0, &reason, &e) == ORR_OK;
    if (ok && json_object_get(o, "started_at_ms")) {
        int64_t at = 0;
        ok = orr_json_get_int(o, "", "started_at_ms", 1, 1, INT64_MAX, &at, &e) == ORR_OK;
        r->started_at_ms = at;
    }
    if (ok && json_object_get(o, "exit_code")) {
        ok = orr_json_get_int(o, "", "exit_code", 1, INT32_MIN, INT32_MAX, &code, &e) == ORR_OK;
        r->has_exit_code = 1;
        r->exit_code = (int)code;
    }
    if (ok) {
        r->instance_id = id;
        r->attempt = (int)att;
        r->from = (int)from;
        r->to = (int)to;
        snprintf(r->reason, sizeof r->reason, "%s", reason);
    }
    json_decref(o);
    return ok ? 0 : -1;
}

/* Read one outbox file into r: its last line that parses. A file holds one
 * report, or a run's start record with its end appended as a second line
 * (ex_report_send_after_stage); an append a crash cut short leaves the
 * start, which is then what the run's end was before it was written. */
static int outbox_read(const char *path, ex_report *r)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    size_t end = n;
    while (end > 0) {
        while (end > 0 && buf[end - 1] == '\n')
            end--;
        size_t start = end;
        while (start > 0 && buf[start - 1] != '\n')
            start--;
        if (end > start && report_parse(buf + start, end - start, r) == 0)
            return 0;
        end = start;
    }
    return -1;
}

static int is_start_record(const ex_report *r)
{
    return r->from == HL_STATE(DISPATCHED) && r->to == HL_STATE(RUNNING);
}

/* An outbox file as the replay read it. */
typedef struct replay_item {
    ex_report r;
    char path[EX_PATH + 300];
} replay_item;

/* A report of the same attempt's run in one step (from dispatched, with its
 * start time) in another file among the n read. */
static int has_one_step(const replay_item *it, size_t n, const ex_report *start)
{
    for (size_t i = 0; i < n; i++)
        if (it[i].r.instance_id == start->instance_id && it[i].r.attempt == start->attempt &&
            it[i].r.from == HL_STATE(DISPATCHED) && it[i].r.started_at_ms > 0)
            return 1;
    return 0;
}

int ex_report_replay(ex_daemon *d)
{
    DIR *dir = opendir(d->outbox_dir);
    if (!dir)
        return 0;
    replay_item *it = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        size_t l = strlen(de->d_name);
        char path[EX_PATH + 300];
        snprintf(path, sizeof path, "%s/%s", d->outbox_dir, de->d_name);
        if (l > 9 && strcmp(de->d_name + l - 9, ".json.tmp") == 0) {
            /* An executord before the single-write outbox wrote a temporary
             * and renamed it: one left over was never sent. */
            ORR_WARN("dropping an outbox temporary never sent", "path=%s", orr_log_q(path));
            unlink(path);
            continue;
        }
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        ex_report r;
        if (outbox_read(path, &r) != 0) {
            ORR_WARN("dropping an unreadable outbox file", "path=%s", orr_log_q(path));
            unlink(path);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            it = orr_xrealloc(it, cap * sizeof *it);
        }
        it[n].r = r;
        snprintf(it[n].path, sizeof it[n].path, "%s", path);
        n++;
    }
    closedir(dir);
    /* Start records first: an end reported from running then finds the run
     * running. One made needless by its run's one-step report in another
     * file is dropped (sent, it would make that report fail and the restart
     * fail the run). */
    int sent = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n && !atomic_load(&d->stopping); i++) {
            if (is_start_record(&it[i].r) != (pass == 0))
                continue;
            if (pass == 0 && has_one_step(it, n, &it[i].r)) {
                ORR_INFO("dropping a start record: its run was reported in one step",
                         "instance=%lld attempt=%d", (long long)it[i].r.instance_id,
                         it[i].r.attempt);
                unlink(it[i].path);
                continue;
            }
            ORR_INFO("re-sending a report from the outbox", "instance=%lld to=%s",
                     (long long)it[i].r.instance_id, ex_state_name(it[i].r.to));
            orr_err e;
            int fd = -1;
            send_loop(d, &it[i].r, it[i].path, 2, &fd, NULL, NULL, NULL, &e);
            sent++;
        }
    free(it);
    return sent;
}

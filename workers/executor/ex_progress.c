/*
 * ex_progress.c - the follower that reports a transfer's live progress to
 * Halley (see ex_progress.h).
 *
 * Once a second the thread reads what the attempt's log gained since its
 * last look (at most the last 64 KiB of it: only the newest line matters),
 * takes the newest complete progress line, and when it is a new one (wormhole
 * prints one per interval, each with its elapsed time) calls
 * RecordTransferProgress once (no retry: the next second brings a newer
 * point). So a run held up still reports its growing elapsed time and
 * estimate every second. Stopping wakes the thread at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "ex_progress.h"
#include "orr_alloc.h"
#include "orr_log.h"

#define EX_PROGRESS_TAIL (64 * 1024)

struct ex_progress {
    ex_daemon *d;
    int64_t instance_id;
    int attempt;
    char path[700];
    uint64_t offset; /* read up to here */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int stop;
    int warned;
};

static int same_point(const ex_progress_pt *a, const ex_progress_pt *b)
{
    return a->rows_read == b->rows_read && a->rows_written == b->rows_written &&
           a->dirty_rows == b->dirty_rows && a->shards_done == b->shards_done &&
           a->rows_per_sec == b->rows_per_sec && a->elapsed_s == b->elapsed_s;
}

/* The newest progress line the log gained since the last look. */
static int newest_line(ex_progress *p, char *buf, ex_progress_pt *out)
{
    int fd = open(p->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat sb;
    int found = 0;
    if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size > p->offset) {
        uint64_t size = (uint64_t)sb.st_size;
        uint64_t from = size - p->offset > EX_PROGRESS_TAIL ? size - EX_PROGRESS_TAIL : p->offset;
        ssize_t n = pread(fd, buf, (size_t)(size - from), (off_t)from);
        if (n > 0) {
            found = ex_progress_scan(buf, (size_t)n, out);
            /* Continue after the last complete line. */
            size_t end = (size_t)n;
            while (end > 0 && buf[end - 1] != '\n')
                end--;
            p->offset = from + end;
        }
    }
    close(fd);
    return found;
}

static void send_point(ex_progress *p, const ex_progress_pt *pt)
{
    HL(TransferProgressPoint) q = HL_INIT(TRANSFER_PROGRESS_POINT);
    q.rows_read = pt->rows_read;
    q.rows_written = pt->rows_written;
    q.dirty_rows = pt->dirty_rows;
    q.rows_per_sec = pt->rows_per_sec;
    q.bytes_read = pt->bytes_read;
    q.shards_done = pt->shards_done;
    q.shards_total = pt->shards_total;
    q.rows_estimate = pt->rows_estimate;
    q.elapsed_s = pt->elapsed_s;
    q.eta_s = pt->eta_s;
    HL(RecordTransferProgressRequest) rq = HL_INIT(RECORD_TRANSFER_PROGRESS_REQUEST);
    rq.instance_id = p->instance_id;
    rq.attempt = p->attempt;
    rq.point = &q;
    ProtobufCMessage *resp = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (ex_halley(p->d, "RecordTransferProgress", &rq.base, &resp, &e) != ORR_OK) {
        if (!p->warned)
            ORR_WARN("transfer progress not recorded", "instance=%lld attempt=%d err=%s",
                     (long long)p->instance_id, p->attempt, orr_log_q(e.msg));
        p->warned = 1;
    }
    if (resp)
        protobuf_c_message_free_unpacked(resp, NULL);
}

static void *follow(void *arg)
{
    ex_progress *p = arg;
    char *buf = orr_xmalloc(EX_PROGRESS_TAIL);
    ex_progress_pt last = {0};
    int sent = 0;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        while (!p->stop && pthread_cond_timedwait(&p->cond, &p->mu, &ts) != ETIMEDOUT) {
        }
        if (p->stop)
            break;
        pthread_mutex_unlock(&p->mu);
        ex_progress_pt pt;
        if (newest_line(p, buf, &pt) && !(sent && same_point(&pt, &last))) {
            send_point(p, &pt);
            last = pt;
            sent = 1;
        }
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    free(buf);
    return NULL;
}

ex_progress *ex_progress_start(ex_daemon *d, const char *log_path, int64_t instance_id, int attempt)
{
    ex_progress *p = orr_xcalloc(1, sizeof *p);
    p->d = d;
    p->instance_id = instance_id;
    p->attempt = attempt;
    snprintf(p->path, sizeof p->path, "%s", log_path);
    struct stat sb;
    if (stat(log_path, &sb) == 0) /* an earlier note in the log is not ours */
        p->offset = (uint64_t)sb.st_size;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&p->thread, NULL, follow, p);
    if (e != 0) {
        ORR_WARN("cannot follow a transfer's progress", "instance=%lld err=%s",
                 (long long)instance_id, orr_log_q(strerror(e)));
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void ex_progress_stop(ex_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

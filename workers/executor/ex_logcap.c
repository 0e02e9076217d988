/*
 * ex_logcap.c - the follower of an attempt's log (see ex_logcap.h).
 *
 * The thread reads the log from where it has indexed to, in pieces of up to
 * 128 KiB (pread: the page cache, no copy through a pipe), scans each piece
 * for newlines (orr_logidx_feed) and appends the records of the lines that
 * start in it to the index. At the end of the file it sleeps in poll(2) on
 * an inotify descriptor watching the log for writes (IN_MODIFY) and an
 * eventfd that finish signals, so a line is stamped as soon as it is
 * written; without inotify (no watches left) it polls every 20 ms.
 *
 * A follower right behind a task that writes as fast as it can slows that
 * task down (both copy through the same page cache on the same cores). So
 * after a full piece -- the task wrote 128 KiB or more since the last read --
 * the thread waits 20 ms before the next: it keeps up in real time with up
 * to about 6 MB/s of output (80,000 lines of 80 bytes a second); lines
 * beyond that are stamped when the thread comes to them, later than they
 * were written, and finish indexes the rest at full speed. Figures in
 * docs/benchmarks.md.
 */
#include "ex_logcap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_log.h"
#include "orr_logidx.h"

#define EX_LOGCAP_PIECE    (128 * 1024)
#define EX_LOGCAP_PAUSE_MS 20

struct ex_logcap {
    int log_fd, idx_fd; /* idx: O_APPEND; -1 until the first line (made then) */
    int ino;            /* inotify, or -1 */
    int wake;           /* eventfd: finish was called */
    orr_logidx_scan scan;
    orr_buf recs;
    pthread_t thread;
    atomic_int stop; /* finish: index to the end of the file, then return */
    int failed;      /* an index write failed (logged once) */
    char path[700];
    char idx_path[760];
};

static int64_t utc_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *ex_log_index_path(char *buf, size_t n, const char *log_path)
{
    size_t len = strlen(log_path);
    if (len >= 4 && strcmp(log_path + len - 4, ".log") == 0)
        snprintf(buf, n, "%.*s.idx", (int)(len - 4), log_path);
    else
        snprintf(buf, n, "%s.idx", log_path);
    return buf;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Open the log (made if absent) and its index, if there is one, for
 * appending, and set the scan to continue them. The index is made by the
 * first line (index_piece): a run that writes nothing (most short runs)
 * makes no index file; an empty log stands for an empty index. */
static orr_status open_pair(const char *log_path, const char *idx_path, int *log_fd, int *idx_fd,
                            orr_logidx_scan *scan, orr_err *err)
{
    *log_fd = open(log_path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (*log_fd < 0)
        return orr_err_set(err, ORR_EIO, log_path, "cannot open log: %s", strerror(errno));
    *idx_fd = open(idx_path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (*idx_fd < 0 && errno != ENOENT) {
        orr_status s = orr_err_set(err, ORR_EIO, idx_path, "cannot open: %s", strerror(errno));
        close(*log_fd);
        *log_fd = -1;
        return s;
    }
    struct stat ls, is;
    char last = '\n';
    int64_t last_ms = 0;
    if (fstat(*log_fd, &ls) == 0 && ls.st_size > 0 && pread(*log_fd, &last, 1, ls.st_size - 1) != 1)
        last = '\n';
    if (*idx_fd >= 0 && fstat(*idx_fd, &is) == 0 && is.st_size >= ORR_LOGIDX_REC) {
        unsigned char raw[ORR_LOGIDX_REC];
        off_t at = (is.st_size / ORR_LOGIDX_REC - 1) * ORR_LOGIDX_REC;
        orr_logidx_rec r;
        if (pread(*idx_fd, raw, sizeof raw, at) == (ssize_t)sizeof raw) {
            orr_logidx_decode(raw, &r);
            last_ms = r.ms;
        }
        if (is.st_size % ORR_LOGIDX_REC != 0 && ftruncate(*idx_fd, at + ORR_LOGIDX_REC) != 0)
            ORR_WARN("cannot trim a torn log index", "path=%s", orr_log_q(idx_path));
    }
    orr_logidx_scan_init(scan, ls.st_size > 0 ? (uint64_t)ls.st_size : 0, last, last_ms);
    return ORR_OK;
}

/* Index one piece of the log read at ms. */
static void index_piece(ex_logcap *c, const char *p, size_t n, int64_t ms)
{
    orr_buf_reset(&c->recs);
    orr_logidx_feed(&c->scan, p, n, ms, &c->recs);
    if (c->failed || c->recs.len == 0)
        return;
    if (c->idx_fd < 0) /* the first line: the index is made now */
        c->idx_fd = open(c->idx_path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (c->idx_fd < 0 || write_all(c->idx_fd, c->recs.data, c->recs.len) != 0) {
        c->failed = 1;
        ORR_ERROR("cannot write a log's line index; its lines go unstamped", "path=%s err=%s",
                  orr_log_q(c->path), orr_log_q(strerror(errno)));
    }
}

/* Wait EX_LOGCAP_PAUSE_MS or until finish is called. */
static void hold_back(ex_logcap *c)
{
    struct pollfd pf = {c->wake, POLLIN, 0};
    poll(&pf, 1, EX_LOGCAP_PAUSE_MS);
}

static void *follower(void *arg)
{
    ex_logcap *c = arg;
    char *buf = orr_xmalloc(EX_LOGCAP_PIECE);
    for (;;) {
        /* Read the flag before the file: what was written before finish
         * was called is then certainly read before we return. */
        int stopping = atomic_load(&c->stop);
        ssize_t n = pread(c->log_fd, buf, EX_LOGCAP_PIECE, (off_t)c->scan.offset);
        if (n > 0) {
            index_piece(c, buf, (size_t)n, utc_ms());
            if (n == EX_LOGCAP_PIECE && !stopping)
                hold_back(c); /* a fast writer: do not chase it */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ORR_ERROR("cannot read an attempt's log", "path=%s err=%s", orr_log_q(c->path),
                      orr_log_q(strerror(errno)));
            break;
        }
        if (stopping)
            break;
        struct pollfd pf[2] = {{c->wake, POLLIN, 0}, {c->ino, POLLIN, 0}};
        if (poll(pf, c->ino >= 0 ? 2 : 1, c->ino >= 0 ? 1000 : 20) > 0 &&
            (pf[1].revents & POLLIN)) {
            char ev[4096];
            while (read(c->ino, ev, sizeof ev) > 0) {
            }
        }
    }
    free(buf);
    return NULL;
}

orr_status ex_logcap_start(const char *log_path, ex_logcap **out, orr_err *err)
{
    ex_logcap *c = orr_xcalloc(1, sizeof *c);
    c->log_fd = c->idx_fd = c->ino = c->wake = -1;
    snprintf(c->path, sizeof c->path, "%s", log_path);
    ex_log_index_path(c->idx_path, sizeof c->idx_path, log_path);
    orr_status s = open_pair(log_path, c->idx_path, &c->log_fd, &c->idx_fd, &c->scan, err);
    if (s != ORR_OK)
        goto fail;
    c->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->wake < 0) {
        s = orr_err_set(err, ORR_EIO, NULL, "eventfd: %s", strerror(errno));
        goto fail;
    }
    c->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (c->ino >= 0 && inotify_add_watch(c->ino, log_path, IN_MODIFY) < 0) {
        close(c->ino);
        c->ino = -1; /* poll instead */
    }
    int e = pthread_create(&c->thread, NULL, follower, c);
    if (e != 0) {
        s = orr_err_set(err, ORR_EIO, NULL, "cannot start the log follower: %s", strerror(e));
        goto fail;
    }
    *out = c;
    return ORR_OK;
fail:
    if (c->wake >= 0)
        close(c->wake);
    if (c->ino >= 0)
        close(c->ino);
    if (c->log_fd >= 0)
        close(c->log_fd);
    if (c->idx_fd >= 0)
        close(c->idx_fd);
    free(c);
    return s;
}

void ex_logcap_finish(ex_logcap *c)
{
    if (!c)
        return;
    atomic_store(&c->stop, 1);
    uint64_t one = 1;
    ssize_t w = write(c->wake, &one, sizeof one);
    (void)w;
    pthread_join(c->thread, NULL);
    close(c->wake);
    if (c->ino >= 0)
        close(c->ino);
    close(c->log_fd);
    if (c->idx_fd >= 0)
        close(c->idx_fd);
    orr_buf_free(&c->recs);
    free(c);
}

void ex_log_append(const char *log_path, const char *text, size_t len)
{
    ex_logcap c = {.ino = -1, .wake = -1};
    orr_err err;
    snprintf(c.path, sizeof c.path, "%s", log_path);
    ex_log_index_path(c.idx_path, sizeof c.idx_path, log_path);
    if (open_pair(log_path, c.idx_path, &c.log_fd, &c.idx_fd, &c.scan, &err) != ORR_OK) {
        ORR_WARN("cannot note in an attempt's log", "err=%s", orr_log_q(err.msg));
        return;
    }
    if (write_all(c.log_fd, text, len) != 0)
        ORR_WARN("cannot note in an attempt's log", "path=%s err=%s", orr_log_q(log_path),
                 orr_log_q(strerror(errno)));
    else
        index_piece(&c, text, len, utc_ms());
    orr_buf_free(&c.recs);
    close(c.log_fd);
    if (c.idx_fd >= 0)
        close(c.idx_fd);
}

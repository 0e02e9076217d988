/*
 * ex_logcap.c - the follower of the attempts' logs (see ex_logcap.h).
 *
 * One thread follows every capture of the process: one inotify descriptor
 * holds a watch (IN_MODIFY) on each log, and the thread sleeps in poll(2)
 * until a log is written to, then reads that log from where it has indexed
 * to, in pieces of up to 128 KiB (pread: the page cache, no copy through a
 * pipe), scans each piece for newlines (orr_logidx_feed) and appends the
 * records of the lines that start in it to the index. A run costs a watch
 * and a place in the list, not a thread: a run that writes nothing wakes
 * the thread once, at its end (the removal of its watch is an event). The
 * logs that are due take turns, a piece each. Without inotify, or a watch
 * (none left), a log is read every 20 ms; and every live log is read once a
 * second whatever the events said.
 *
 * A follower right behind a task that writes as fast as it can slows that
 * task down (both copy through the same page cache on the same cores). So
 * after a full piece -- the task wrote 128 KiB or more since the last read --
 * that log waits 20 ms before its next read, while the others are read: it
 * keeps up in real time with up to about 6 MB/s of output per log (80,000
 * lines of 80 bytes a second); lines beyond that are stamped when the thread
 * comes to them, later than they were written. During such a pause the
 * thread does not wake for events (the fast log's every write is one), so
 * the other logs' lines of that time are stamped up to 20 ms late.
 *
 * Finish takes the capture out of the list, waits while the thread reads
 * it, drops its watch and indexes the rest itself at full speed: once the
 * run's group is dead nothing writes any more. Figures in
 * docs/benchmarks.md.
 */
#include "ex_logcap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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
#define EX_LOGCAP_SWEEP_MS 1000

struct ex_logcap {
    int log_fd, idx_fd; /* idx: O_APPEND; -1 until the first line (made then) */
    int wd;             /* the log's inotify watch (one per file), or -1: polled */
    orr_logidx_scan scan;
    orr_buf recs;
    int failed; /* an index write failed (logged once) */
    /* under g_fol.mu */
    int dirty;          /* new bytes may be there: read it */
    int dead;           /* a read failed (logged): not read again */
    int64_t not_before; /* monotonic ms: held back after a full piece; polled: next read */
    ex_logcap *next;
    char path[700];
    char idx_path[760];
};

/* The one follower of the process: its thread, inotify and eventfd. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t idle;         /* busy changed */
    int started;                 /* the thread runs (a failed start is tried again) */
    int ino_tried;               /* inotify_init1 was called; ino its descriptor or -1 */
    int ino;                     /* inotify, or -1: every capture polled */
    int wake;                    /* eventfd: a polled capture came */
    ex_logcap *head;             /* the live captures, the one read last at the end */
    ex_logcap *busy;             /* read by the thread outside mu */
    int64_t sweep_at;            /* monotonic ms: every capture is read again */
    int sweep_ms;                /* its period; 0: none (ex_logcap_tune) */
    int watch;                   /* 0: new captures are polled (ex_logcap_tune) */
    ex_logcap_piece_fn on_piece; /* for tests (ex_logcap_observe), or NULL */
    void *on_piece_arg;
} g_fol = {.mu = PTHREAD_MUTEX_INITIALIZER,
           .idle = PTHREAD_COND_INITIALIZER,
           .ino = -1,
           .wake = -1,
           .sweep_ms = EX_LOGCAP_SWEEP_MS,
           .watch = 1};

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

/* One piece of c's log from where it is indexed to: its length, 0 at the
 * end of the file, -1 on a read error (logged). */
static ssize_t read_piece(ex_logcap *c, char *buf)
{
    for (;;) {
        ssize_t n = pread(c->log_fd, buf, EX_LOGCAP_PIECE, (off_t)c->scan.offset);
        if (n > 0)
            index_piece(c, buf, (size_t)n, utc_ms());
        if (n >= 0)
            return n;
        if (errno != EINTR) {
            ORR_ERROR("cannot read an attempt's log", "path=%s err=%s", orr_log_q(c->path),
                      orr_log_q(strerror(errno)));
            return -1;
        }
    }
}

/* The capture due first (dirty, not held back), or NULL with *wait_ms the
 * time until one may be: -1 (an event or a new capture will say), or the
 * nearest of a held-back capture, a polled one's next read and the sweep;
 * *held: some capture is held back. A polled capture whose time has come is
 * marked here. */
static ex_logcap *next_due(int64_t now, int *wait_ms, int *held)
{
    int64_t until = -1;
    *held = 0;
    for (ex_logcap *c = g_fol.head; c; c = c->next) {
        if (c->dead)
            continue;
        if (!c->dirty && c->wd < 0 && c->not_before <= now)
            c->dirty = 1;
        if (c->dirty && c->not_before <= now)
            return c;
        *held |= c->dirty;
        int64_t at = g_fol.sweep_ms > 0 ? g_fol.sweep_at : -1;
        if (c->dirty || c->wd < 0)
            at = c->not_before;
        if (at >= 0 && (until < 0 || at < until))
            until = at;
    }
    *wait_ms = until < 0 ? -1 : until <= now ? 0 : (int)(until - now);
    return NULL;
}

/* Mark the captures the inotify events in ev name; all of them when the
 * queue overflowed. Under g_fol.mu. */
static void mark_events(const char *ev, ssize_t n)
{
    for (ssize_t at = 0; at + (ssize_t)sizeof(struct inotify_event) <= n;) {
        const struct inotify_event *e = (const struct inotify_event *)(ev + at);
        for (ex_logcap *c = g_fol.head; c; c = c->next)
            if ((e->mask & IN_Q_OVERFLOW) || (c->wd >= 0 && c->wd == e->wd))
                c->dirty = 1;
        at += (ssize_t)sizeof *e + e->len;
    }
}

/* Take the queued inotify events (non-blocking). Under g_fol.mu. */
static void drain_events(void)
{
    if (g_fol.ino < 0)
        return;
    char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(g_fol.ino, ev, sizeof ev)) > 0)
        mark_events(ev, n);
}

/* Unlink c from the list; 1 if it was there. Under g_fol.mu. */
static int unlink_capture(ex_logcap *c)
{
    for (ex_logcap **p = &g_fol.head; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            c->next = NULL;
            return 1;
        }
    return 0;
}

/* Append c at the list's end (read last among the due: the logs take
 * turns). Under g_fol.mu. */
static void append_capture(ex_logcap *c)
{
    ex_logcap **p = &g_fol.head;
    while (*p)
        p = &(*p)->next;
    *p = c;
    c->next = NULL;
}

static void *follower(void *arg)
{
    (void)arg;
    static char buf[EX_LOGCAP_PIECE];
    pthread_mutex_lock(&g_fol.mu);
    for (;;) {
        int64_t now = ex_now_ms();
        if (g_fol.sweep_ms > 0 && now >= g_fol.sweep_at) { /* a missed event waits this long */
            for (ex_logcap *c = g_fol.head; c; c = c->next)
                c->dirty = 1;
            g_fol.sweep_at = now + g_fol.sweep_ms;
        }
        int wait_ms = -1, held = 0;
        ex_logcap *c = next_due(now, &wait_ms, &held);
        if (c) {
            c->dirty = 0; /* an event from now on marks it again */
            g_fol.busy = c;
            ex_logcap_piece_fn on_piece = g_fol.on_piece;
            void *on_piece_arg = g_fol.on_piece_arg;
            pthread_mutex_unlock(&g_fol.mu);
            ssize_t n = read_piece(c, buf);
            if (on_piece)
                on_piece(c->path, n, on_piece_arg);
            pthread_mutex_lock(&g_fol.mu);
            g_fol.busy = NULL;
            pthread_cond_broadcast(&g_fol.idle);
            if (n > 0) { /* read until a read finds the end */
                c->dirty = 1;
                if (n == EX_LOGCAP_PIECE) /* a fast writer: do not chase it */
                    c->not_before = ex_now_ms() + EX_LOGCAP_PAUSE_MS;
            } else if (n < 0) {
                c->dead = 1;
            } else if (c->wd < 0) {
                c->not_before = ex_now_ms() + EX_LOGCAP_PAUSE_MS;
            }
            if (unlink_capture(c)) /* finish may have taken it meanwhile */
                append_capture(c);
            drain_events(); /* the other logs' events, between pieces */
            continue;
        }
        pthread_mutex_unlock(&g_fol.mu);
        /* While a fast writer's log is held back, its every write is an
         * event: the events wait in the queue until the pause is over, so
         * the thread does not wake for each (other logs' lines are read,
         * and stamped, up to the pause later). */
        struct pollfd pf[2] = {{g_fol.wake, POLLIN, 0}, {g_fol.ino, POLLIN, 0}};
        int ready = poll(pf, g_fol.ino >= 0 && !held ? 2 : 1, wait_ms);
        uint64_t v;
        if (ready > 0 && (pf[0].revents & POLLIN) && read(g_fol.wake, &v, sizeof v) < 0) {
            /* EAGAIN: another read took it */
        }
        pthread_mutex_lock(&g_fol.mu);
        drain_events();
    }
    return NULL;
}

/* Start the thread if it does not run: 0, or the errno of what failed
 * (tried again by the next capture). Under g_fol.mu. */
static int follower_start(void)
{
    if (g_fol.started)
        return 0;
    if (!g_fol.ino_tried) {
        g_fol.ino_tried = 1;
        g_fol.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (g_fol.ino < 0)
            ORR_WARN("no inotify: attempts' logs are read every 20 ms", "err=%s",
                     orr_log_q(strerror(errno)));
    }
    if (g_fol.wake < 0 && (g_fol.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return errno;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all); /* signals go to the daemon's own threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int e = pthread_create(&t, &at, follower, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    g_fol.started = e == 0;
    return e;
}

static void wake_follower(void)
{
    uint64_t one = 1;
    ssize_t w = write(g_fol.wake, &one, sizeof one);
    (void)w; /* a full counter wakes it as well */
}

void ex_logcap_tune(int sweep_ms, int watch)
{
    pthread_mutex_lock(&g_fol.mu);
    g_fol.sweep_ms = sweep_ms > 0 ? sweep_ms : 0;
    g_fol.sweep_at = 0;
    g_fol.watch = watch;
    int started = g_fol.started;
    pthread_mutex_unlock(&g_fol.mu);
    if (started)
        wake_follower();
}

void ex_logcap_observe(ex_logcap_piece_fn fn, void *arg)
{
    pthread_mutex_lock(&g_fol.mu);
    g_fol.on_piece = fn;
    g_fol.on_piece_arg = arg;
    while (g_fol.busy) /* a call of the one before may run (outside mu) */
        pthread_cond_wait(&g_fol.idle, &g_fol.mu);
    pthread_mutex_unlock(&g_fol.mu);
}

orr_status ex_logcap_start(const char *log_path, ex_logcap **out, orr_err *err)
{
    ex_logcap *c = orr_xcalloc(1, sizeof *c);
    c->log_fd = c->idx_fd = c->wd = -1;
    snprintf(c->path, sizeof c->path, "%s", log_path);
    ex_log_index_path(c->idx_path, sizeof c->idx_path, log_path);
    orr_status s = open_pair(log_path, c->idx_path, &c->log_fd, &c->idx_fd, &c->scan, err);
    if (s != ORR_OK) {
        free(c);
        return s;
    }
    pthread_mutex_lock(&g_fol.mu);
    int e = follower_start();
    if (e != 0) {
        pthread_mutex_unlock(&g_fol.mu);
        close(c->log_fd);
        if (c->idx_fd >= 0)
            close(c->idx_fd);
        free(c);
        return orr_err_set(err, ORR_EIO, NULL, "cannot start the log follower: %s", strerror(e));
    }
    /* Watched before the task starts: each of its writes is an event. The
     * bytes the log holds already are as indexed as they will be (scan).
     * Under mu, so that a finish of another capture of the same file (one
     * watch for both) sees this one before it removes the watch. */
    if (g_fol.ino >= 0 && g_fol.watch)
        c->wd = inotify_add_watch(g_fol.ino, log_path, IN_MODIFY);
    c->next = g_fol.head; /* polled (no watch): not_before 0, read at once */
    g_fol.head = c;
    pthread_mutex_unlock(&g_fol.mu);
    if (c->wd < 0) /* the follower's wait shortens */
        wake_follower();
    *out = c;
    return ORR_OK;
}

void ex_logcap_finish(ex_logcap *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g_fol.mu);
    unlink_capture(c);
    while (g_fol.busy == c)
        pthread_cond_wait(&g_fol.idle, &g_fol.mu);
    int shared = 0;
    for (ex_logcap *o = g_fol.head; c->wd >= 0 && o; o = o->next)
        shared |= o->wd == c->wd;
    if (c->wd >= 0 && !shared)
        inotify_rm_watch(g_fol.ino, c->wd);
    int dead = c->dead;
    pthread_mutex_unlock(&g_fol.mu);
    /* The writers are gone: what is left is indexed here, at full speed
     * (most short runs leave nothing). */
    struct stat st;
    if (!dead && (fstat(c->log_fd, &st) != 0 || (uint64_t)st.st_size > c->scan.offset)) {
        char *buf = orr_xmalloc(EX_LOGCAP_PIECE);
        while (read_piece(c, buf) > 0) {
        }
        free(buf);
    }
    close(c->log_fd);
    if (c->idx_fd >= 0)
        close(c->idx_fd);
    orr_buf_free(&c->recs);
    free(c);
}

void ex_log_append(const char *log_path, const char *text, size_t len)
{
    ex_logcap c = {.wd = -1};
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

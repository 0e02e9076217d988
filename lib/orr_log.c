/*
 * orr_log.c - logfmt logger (see orr_log.h).
 *
 * The line is built in a stack buffer (4 KiB; longer lines are cut and end in
 * "...") and written with one write(2) on the current fd, which is shared by
 * all threads. The fd is swapped atomically so a reopen never tears a line.
 */
#include "orr_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 4096

static atomic_int log_fd = 2;
static atomic_int log_min = ORR_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "fatal"};

orr_status orr_log_level_parse(const char *name, orr_log_level *out)
{
    for (int i = 0; i <= ORR_LOG_FATAL; i++) {
        if (name && strcmp(name, level_names[i]) == 0) {
            *out = (orr_log_level)i;
            return ORR_OK;
        }
    }
    return ORR_EINVAL;
}

const char *orr_log_level_name(orr_log_level l)
{
    if ((int)l < 0 || l > ORR_LOG_FATAL)
        return "unknown";
    return level_names[l];
}

orr_status orr_log_open(orr_log_level min, const char *path, orr_err *err)
{
    atomic_store(&log_min, (int)min);
    if (!path || !path[0] || strcmp(path, "-") == 0) {
        orr_log_close();
        return ORR_OK;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, "log.file", "cannot open log file %s: %s", path,
                           strerror(errno));
    int old = atomic_exchange(&log_fd, fd);
    if (old > 2)
        close(old);
    return ORR_OK;
}

void orr_log_close(void)
{
    int old = atomic_exchange(&log_fd, 2);
    if (old > 2)
        close(old);
}

void orr_log_set_level(orr_log_level min)
{
    atomic_store(&log_min, (int)min);
}

int orr_log_enabled(orr_log_level l)
{
    return (int)l >= atomic_load(&log_min);
}

/* Append s quoted and escaped into dst[0..cap), returns bytes written (no NUL). */
static size_t log_quote_into(char *dst, size_t cap, const char *s)
{
    size_t o = 0;
    if (cap < 3)
        return 0;
    dst[o++] = '"';
    for (; s && *s && o + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c == '\n') {
            dst[o++] = '\\';
            dst[o++] = 'n';
        } else if (c == '\t') {
            dst[o++] = '\\';
            dst[o++] = 't';
        } else if (c < 0x20) {
            dst[o++] = '?';
        } else {
            dst[o++] = (char)c;
        }
    }
    dst[o++] = '"';
    return o;
}

const char *orr_log_q(const char *s)
{
    static _Thread_local char ring[8][512];
    static _Thread_local unsigned next;
    char *dst = ring[next++ % 8];
    size_t n = log_quote_into(dst, sizeof(ring[0]) - 1, s);
    dst[n] = '\0';
    return dst;
}

void orr_log(orr_log_level l, const char *msg, const char *kvfmt, ...)
{
    if (!orr_log_enabled(l))
        return;
    char line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t o = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
    o += (size_t)snprintf(line + o, sizeof(line) - o,
                          ".%03ldZ level=%s msg=", ts.tv_nsec / 1000000L, orr_log_level_name(l));
    o += log_quote_into(line + o, sizeof(line) - o - 2, msg);
    if (kvfmt && kvfmt[0] && o < sizeof(line) - 2) {
        line[o++] = ' ';
        va_list ap;
        va_start(ap, kvfmt);
        int n = vsnprintf(line + o, sizeof(line) - o - 1, kvfmt, ap);
        va_end(ap);
        if (n > 0)
            o += (size_t)n < sizeof(line) - o - 1 ? (size_t)n : sizeof(line) - o - 1;
    }
    if (o >= sizeof(line) - 1) {
        o = sizeof(line) - 1;
        memcpy(line + o - 3, "...", 3);
    }
    line[o++] = '\n';
    int fd = atomic_load(&log_fd);
    const char *p = line;
    while (o > 0) {
        ssize_t w = write(fd, p, o);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        o -= (size_t)w;
    }
}

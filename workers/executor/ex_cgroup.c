/*
 * ex_cgroup.c - choosing a cgroup backend, and the small file helpers the
 * backends share (write a control file, read a key, signal every member).
 */
#include "ex_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t ex_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ex_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

orr_status ex_cg_write(const char *dir, const char *file, const char *s, orr_err *err)
{
    char path[EX_CG_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, path, "cannot open: %s", strerror(errno));
    size_t len = strlen(s);
    ssize_t w = write(fd, s, len);
    int e = errno;
    close(fd);
    if (w != (ssize_t)len)
        return orr_err_set(err, ORR_EIO, path, "cannot write \"%s\": %s", s,
                           w < 0 ? strerror(e) : "short write");
    return ORR_OK;
}

ssize_t ex_cg_read(const char *dir, const char *file, char *buf, size_t n)
{
    char path[EX_CG_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || n == 0)
        return -1;
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0;
    return (ssize_t)got;
}

int64_t ex_cg_read_key(const char *dir, const char *file, const char *key)
{
    char buf[4096];
    if (ex_cg_read(dir, file, buf, sizeof buf) < 0)
        return -1;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
            return strtoll(line + kl + 1, NULL, 10);
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

int ex_cg_signal_procs(const char *dir, int sig)
{
    char buf[65536];
    if (ex_cg_read(dir, "cgroup.procs", buf, sizeof buf) < 0)
        return 0;
    int n = 0;
    for (char *p = buf; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 1) {
            kill((pid_t)pid, sig);
            n++;
        }
        p = end;
        while (*p == '\n')
            p++;
    }
    return n;
}

orr_status ex_cg_mkdirs(const char *path, mode_t mode, orr_err *err)
{
    char tmp[EX_CG_PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return orr_err_set(err, ORR_EINVAL, path, "path too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return orr_err_set(err, ORR_EIO, tmp, "cannot create: %s", strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, mode) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, tmp, "cannot create: %s", strerror(errno));
    return ORR_OK;
}

orr_status ex_cgroup_pick(const ex_cg_env *env, const char *mode, const ex_cgroup_ops **out,
                          char *why, size_t why_size, orr_err *err)
{
    static const ex_cgroup_ops *const order[] = {&ex_cgroup_v2_ops, &ex_cgroup_v1_ops,
                                                 &ex_cgroup_rlimit_ops};
    if (why && why_size)
        why[0] = 0;
    int any = !mode || !*mode || strcmp(mode, "auto") == 0;
    size_t used = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!any && strcmp(mode, order[i]->name) != 0)
            continue;
        orr_err pe;
        orr_err_clear(&pe);
        if (order[i]->probe(env, &pe) == ORR_OK) {
            *out = order[i];
            return ORR_OK;
        }
        char msg[600];
        orr_err_str(&pe, msg, sizeof msg);
        if (!any)
            return orr_err_set(err, ORR_EINVAL, "executor.cgroup", "cgroup backend %s unusable: %s",
                               mode, msg);
        if (why && used < why_size) {
            int w = snprintf(why + used, why_size - used, "%s%s: %s", used ? "; " : "",
                             order[i]->name, msg);
            if (w > 0)
                used += (size_t)w;
        }
    }
    if (!any)
        return orr_err_set(err, ORR_EINVAL, "executor.cgroup",
                           "must be auto, v2, v1 or rlimit (got \"%s\")", mode);
    return orr_err_set(err, ORR_EINTERNAL, "executor.cgroup", "no sandbox backend works");
}

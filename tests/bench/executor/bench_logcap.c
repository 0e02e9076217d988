/*
 * bench_logcap.c - does stamping the lines slow an attempt's output?
 *
 *   bench_logcap [MiB=256] [ROUNDS=7] [LINE_BYTES=80]
 *
 * A child writes MiB of LINE_BYTES-long lines in 64 KiB writes to the log
 * file (the task's path; as fast as a task can write: the log path is all it
 * does), once alone (as before lines were stamped) and once while the
 * follower of ex_logcap.h indexes the file, in alternating order. Prints per
 * round the child's time from fork to exit and, with the follower, the time
 * until the index was complete (ex_logcap_finish returned), then the
 * medians. The first figure is the slowdown a task could see.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "ex_logcap.h"

static size_t g_total, g_line;

static void child_write(int fd)
{
    static char buf[64 * 1024];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (i % g_line == g_line - 1) ? '\n' : (char)('a' + i % 26);
    for (size_t left = g_total; left > 0;) {
        size_t n = left < sizeof buf ? left : sizeof buf;
        ssize_t w = write(fd, buf, n);
        if (w <= 0)
            _exit(1);
        left -= (size_t)w;
    }
    _exit(0);
}

/* The child's run time in ms; with follow, *indexed = until the index is done. */
static int64_t run(const char *path, int follow, int64_t *indexed)
{
    char idx[600];
    unlink(path);
    unlink(ex_log_index_path(idx, sizeof idx, path));
    ex_logcap *cap = NULL;
    orr_err err;
    if (follow && ex_logcap_start(path, &cap, &err) != ORR_OK) {
        fprintf(stderr, "capture: %s\n", err.msg);
        exit(1);
    }
    int64_t t0 = ex_now_ms();
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    pid_t pid = fork();
    if (pid == 0)
        child_write(fd);
    close(fd);
    waitpid(pid, NULL, 0);
    int64_t ran = ex_now_ms() - t0;
    if (follow) {
        ex_logcap_finish(cap);
        *indexed = ex_now_ms() - t0;
    }
    return ran;
}

static int cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    g_line = argc > 3 ? strtoul(argv[3], NULL, 10) : 80;
    if (mib == 0 || rounds <= 0 || rounds > 100 || g_line == 0) {
        fprintf(stderr, "usage: bench_logcap [MiB] [ROUNDS] [LINE_BYTES]\n");
        return 2;
    }
    g_total = mib << 20;
    char dir[] = "/tmp/bench-logcap-XXXXXX", path[512], idx[600];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/1-1.log", dir);
    int64_t a[100], b[100], ix[100];
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            a[r] = run(path, 0, NULL);
            b[r] = run(path, 1, &ix[r]);
        } else {
            b[r] = run(path, 1, &ix[r]);
            a[r] = run(path, 0, NULL);
        }
        printf("round %d: alone %lld ms, followed %lld ms (indexed after %lld ms)\n", r + 1,
               (long long)a[r], (long long)b[r], (long long)ix[r]);
    }
    struct stat st;
    if (stat(ex_log_index_path(idx, sizeof idx, path), &st) == 0)
        printf("index: %lld bytes for %zu lines\n", (long long)st.st_size,
               (g_total + g_line - 1) / g_line);
    unlink(path);
    unlink(idx);
    rmdir(dir);
    qsort(a, (size_t)rounds, sizeof a[0], cmp);
    qsort(b, (size_t)rounds, sizeof b[0], cmp);
    qsort(ix, (size_t)rounds, sizeof ix[0], cmp);
    double mb = (double)g_total / 1e6;
    int m = rounds / 2;
    printf(
        "median: alone %lld ms (%.0f MB/s), followed %lld ms (%.0f MB/s), indexed after %lld ms\n",
        (long long)a[m], mb * 1000 / (double)(a[m] ? a[m] : 1), (long long)b[m],
        mb * 1000 / (double)(b[m] ? b[m] : 1), (long long)ix[m]);
    return 0;
}

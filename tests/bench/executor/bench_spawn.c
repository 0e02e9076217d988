/*
 * bench_spawn.c - the floor of a run of executord: its sandbox alone.
 *
 *   bench_spawn [RUNS=1000] [PARALLEL=64] [files|kept|nofiles] [USER=orrery-task]
 *
 * PARALLEL threads start RUNS attempts of `/bin/sh -c true` between them,
 * each through executord's own sandbox (ex_sandbox.c) on the rlimit backend:
 * setsid, the limits of a slot (512m, one core, 256 pids), the switch to USER
 * (as root), cwd, stdin from /dev/null, stdout/stderr to a log, exec; then
 * the wait, the kill of the group and its leftover check. No RPC, no
 * PostgreSQL, no ZooKeeper: what is left of a run when the metadata is free.
 *
 * "files" (the default) also makes and removes what executord makes per run
 * on the file system of the current folder: a private run folder (0700,
 * chowned to USER) and a log file of its own (left in place, like
 * executord's work log); "kept" does the same with executord's own run
 * folders (ex_rundir.c: a folder left as new is kept and renamed into place
 * for a later run instead of made and removed, as executord does under a
 * cgroup backend; this benchmark's sandbox is the rlimit one, so it measures
 * the folders' cost, not that safety); "nofiles" runs every
 * attempt in /tmp with the log /dev/null.
 *
 * Prints runs per second and the CPU time of the process and the children it
 * reaped (user + system, getrusage) per run. Bounded: RUNS <= 100000. The
 * folder of "files" and "kept" is removed at the end unless
 * BENCH_SPAWN_LEAVE is set.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "ex_rundir.h"
#include "ex_sandbox.h"

static int g_runs, g_files, g_drop; /* g_files: 0 nofiles, 1 files, 2 kept */
static ex_rundir g_rd;              /* kept: executord's run folders */
static uid_t g_uid;
static gid_t g_gid;
static atomic_int g_next, g_failed;
static char g_dir[4096];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double t = 0;
    const struct rusage *r[2] = {&self, &kids};
    for (int i = 0; i < 2; i++)
        t += (double)r[i]->ru_utime.tv_sec + (double)r[i]->ru_utime.tv_usec / 1e6 +
             (double)r[i]->ru_stime.tv_sec + (double)r[i]->ru_stime.tv_usec / 1e6;
    return t;
}

static void *worker(void *arg)
{
    (void)arg;
    static char *const argv[] = {"/bin/sh", "-c", "true", NULL};
    static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
    ex_cg_env env = {"/sys/fs/cgroup", "", "orrery", "bench"};
    ex_limits lim = {512LL << 20, 100, 256};
    for (;;) {
        int i = atomic_fetch_add(&g_next, 1);
        if (i >= g_runs)
            return NULL;
        char run_dir[4200], log_path[4200], name[32];
        snprintf(name, sizeof name, "b-%d", i);
        if (g_files) {
            snprintf(run_dir, sizeof run_dir, "%s/runs/%d", g_dir, i);
            snprintf(log_path, sizeof log_path, "%s/logs/%d.log", g_dir, i);
            if (g_files == 2
                    ? ex_rundir_make(&g_rd, run_dir) != 0
                    : mkdir(run_dir, 0700) != 0 || (g_drop && chown(run_dir, g_uid, g_gid) != 0)) {
                atomic_fetch_add(&g_failed, 1);
                continue;
            }
        } else {
            snprintf(run_dir, sizeof run_dir, "/tmp");
            snprintf(log_path, sizeof log_path, "/dev/null");
        }
        ex_spawn sp = {.argv = argv,
                       .envp = envp,
                       .cwd = run_dir,
                       .log_path = log_path,
                       .drop = g_drop,
                       .uid = g_uid,
                       .gid = g_gid};
        ex_sandbox *sb = NULL;
        orr_err err;
        if (ex_sandbox_start(&ex_cgroup_rlimit_ops, &env, name, &lim, &sp, &sb, &err) != ORR_OK) {
            fprintf(stderr, "bench_spawn: start: %s\n", err.msg);
            atomic_fetch_add(&g_failed, 1);
        } else {
            ex_result res;
            ex_sandbox_wait(sb, 0, &res);
            if (!res.exited || res.exit_code != 0)
                atomic_fetch_add(&g_failed, 1);
            ex_sandbox_free(sb);
        }
        if (g_files == 2)
            ex_rundir_done(&g_rd, run_dir, 1);
        else if (g_files)
            rmdir(run_dir);
    }
}

int main(int argc, char **argv)
{
    g_runs = argc > 1 ? atoi(argv[1]) : 1000;
    int par = argc > 2 ? atoi(argv[2]) : 64;
    const char *mode = argc > 3 ? argv[3] : "files";
    g_files = strcmp(mode, "nofiles") == 0 ? 0 : strcmp(mode, "kept") == 0 ? 2 : 1;
    const char *user = argc > 4 ? argv[4] : "orrery-task";
    if (g_runs < 1 || g_runs > 100000 || par < 1 || par > 1024) {
        fprintf(stderr, "usage: bench_spawn [RUNS<=100000] [PARALLEL<=1024] "
                        "[files|kept|nofiles] [USER]\n");
        return 2;
    }
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam(user);
        if (!pw) {
            fprintf(stderr, "bench_spawn: no user %s\n", user);
            return 2;
        }
        g_drop = 1;
        g_uid = pw->pw_uid;
        g_gid = pw->pw_gid;
    }
    if (g_files) {
        snprintf(g_dir, sizeof g_dir, "bench-spawn-%d", (int)getpid());
        char p[4200];
        snprintf(p, sizeof p, "%s/runs", g_dir);
        if (mkdir(g_dir, 0755) != 0 || mkdir(p, 0755) != 0 ||
            (snprintf(p, sizeof p, "%s/logs", g_dir), mkdir(p, 0755)) != 0) {
            fprintf(stderr, "bench_spawn: cannot make %s: %s\n", g_dir, strerror(errno));
            return 1;
        }
    }
    if (g_files == 2) {
        char abs[PATH_MAX];
        orr_err err;
        if (!realpath(g_dir, abs)) {
            fprintf(stderr, "bench_spawn: %s: %s\n", g_dir, strerror(errno));
            return 1;
        }
        char runs[PATH_MAX + 8];
        snprintf(runs, sizeof runs, "%s/runs", abs);
        /* confined: as executord under a cgroup backend (see the top) */
        if (ex_rundir_init(&g_rd, abs, runs, 1, g_drop, g_drop ? g_uid : geteuid(),
                           g_drop ? g_gid : getegid(), &err) != ORR_OK) {
            fprintf(stderr, "bench_spawn: %s\n", err.msg);
            return 1;
        }
        if (!g_rd.reuse)
            fprintf(stderr, "bench_spawn: kept: folders are not kept (run as root to switch to "
                            "a task user)\n");
    }
    pthread_t *th = calloc((size_t)par, sizeof *th);
    double c0 = cpu_s(), t0 = now_s();
    for (int i = 0; i < par; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < par; i++)
        pthread_join(th[i], NULL);
    double t = now_s() - t0, c = cpu_s() - c0;
    free(th);
    printf("bench_spawn runs=%d parallel=%d files=%d kept=%d failed=%d seconds=%.2f rate=%.0f/s "
           "cpu_ms_per_run=%.2f\n",
           g_runs, par, g_files, g_files == 2 && g_rd.reuse, atomic_load(&g_failed), t, g_runs / t,
           c * 1000 / g_runs);
    ex_rundir_close(&g_rd);
    if (g_files && getenv("BENCH_SPAWN_LEAVE")) {
        /* Left for the caller to remove later: on an ext4 without a journal,
         * deleting thousands of inodes slows every create of the next
         * minutes (docs/benchmarks.md), so back-to-back runs leave theirs. */
        printf("bench_spawn left %s\n", g_dir);
    } else if (g_files) {
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", g_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_spawn: %s left behind\n", g_dir);
    }
    return atomic_load(&g_failed) ? 1 : 0;
}

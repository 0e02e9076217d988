/*
 * ex_cgroup_v1.c - the cgroup v1 backend (see ex_cgroup.h).
 *
 * v1 mounts each controller on its own hierarchy, so an attempt has one
 * group per controller: <root>/<ctl>/<parent>/<executor>/<name> for memory
 * and pids (required), cpu and freezer (used when mounted). The process is
 * written into each of them.
 *
 * Limits: memory.limit_in_bytes (and memory.memsw.limit_in_bytes, so swap
 * does not stretch it), pids.max, cpu.cfs_quota_us over a 100 ms period.
 * Kill: freeze the group (so a fork bomb cannot outrun us), SIGKILL every
 * member of cgroup.procs, thaw so the signals are delivered, and repeat until
 * cgroup.procs is empty. OOM: "oom_kill N" of memory.oom_control (kernels
 * before 4.13 lack it; then a non-zero memory.failcnt stands in).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_cgroup.h"

enum { V1_MEMORY, V1_PIDS, V1_CPU, V1_FREEZER, V1__N };
static const char *const v1__ctl[V1__N] = {"memory", "pids", "cpu", "freezer"};

static int v1__mounted(const ex_cg_env *env, int c)
{
    char dir[EX_CG_PATH_MAX], buf[64];
    snprintf(dir, sizeof dir, "%s/%s", env->root, v1__ctl[c]);
    return ex_cg_read(dir, "cgroup.procs", buf, sizeof buf) >= 0 &&
           ex_cg_read(dir, "cgroup.clone_children", buf, sizeof buf) >= 0;
}

static void v1__base(const ex_cg_env *env, int c, char *out, size_t n)
{
    snprintf(out, n, "%s/%s/%s/%s", env->root, v1__ctl[c], env->parent, env->executor);
}

static int v1__count_dir(const char *dir)
{
    char buf[65536];
    if (ex_cg_read(dir, "cgroup.procs", buf, sizeof buf) < 0)
        return -1;
    int n = 0;
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            n++;
    return n;
}

/* Freeze-kill-thaw rounds until procs_dir is empty or wait_ms passed. */
static int v1__kill_dirs(const char *procs_dir, const char *freezer_dir, int wait_ms)
{
    orr_err ignore;
    int64_t deadline = ex_now_ms() + wait_ms;
    for (;;) {
        if (freezer_dir && freezer_dir[0]) {
            ex_cg_write(freezer_dir, "freezer.state", "FROZEN", &ignore);
            char st[32] = "";
            for (int i = 0; i < 50; i++) {
                ex_cg_read(freezer_dir, "freezer.state", st, sizeof st);
                if (strncmp(st, "FROZEN", 6) == 0)
                    break;
                ex_sleep_ms(2);
            }
        }
        ex_cg_signal_procs(procs_dir, SIGKILL);
        if (freezer_dir && freezer_dir[0])
            ex_cg_write(freezer_dir, "freezer.state", "THAWED", &ignore);
        int n = v1__count_dir(procs_dir);
        for (int i = 0; n > 0 && i < 10; i++) {
            ex_sleep_ms(5);
            n = v1__count_dir(procs_dir);
        }
        if (n <= 0 || ex_now_ms() >= deadline)
            return n < 0 ? 0 : n;
    }
}

static orr_status v1_create(const ex_cg_env *env, const char *name, const ex_limits *lim,
                            ex_cgroup **out, orr_err *err)
{
    if (!v1__mounted(env, V1_MEMORY) || !v1__mounted(env, V1_PIDS))
        return orr_err_set(err, ORR_EUNAVAIL, "executor.cgroup_root",
                           "no cgroup v1 memory and pids hierarchies under %s", env->root);
    ex_cgroup *cg = calloc(1, sizeof *cg);
    if (!cg)
        return orr_err_set(err, ORR_ENOMEM, NULL, "out of memory");
    cg->ops = &ex_cgroup_v1_ops;
    cg->lim = *lim;
    orr_status s = ORR_OK;
    char dir_of[V1__N][EX_CG_PATH_MAX];
    for (int c = 0; c < V1__N; c++) {
        dir_of[c][0] = 0;
        if (c >= V1_CPU && !v1__mounted(env, c))
            continue;
        char base[EX_CG_PATH_MAX];
        v1__base(env, c, base, sizeof base);
        if ((s = ex_cg_mkdirs(base, 0755, err)) != ORR_OK)
            goto fail;
        snprintf(dir_of[c], EX_CG_PATH_MAX, "%.300s/%.200s", base, name);
        if (mkdir(dir_of[c], 0755) != 0 && errno != EEXIST) {
            s = orr_err_set(err, ORR_EIO, dir_of[c], "cannot create: %s", strerror(errno));
            goto fail;
        }
        memcpy(cg->dirs[cg->n_dirs++], dir_of[c], EX_CG_PATH_MAX);
    }
    memcpy(cg->procs_dir, dir_of[V1_PIDS], EX_CG_PATH_MAX);
    memcpy(cg->memory_dir, dir_of[V1_MEMORY], EX_CG_PATH_MAX);
    memcpy(cg->freezer_dir, dir_of[V1_FREEZER], EX_CG_PATH_MAX);

    char v[64];
    if (lim->memory_bytes > 0) {
        snprintf(v, sizeof v, "%lld", (long long)lim->memory_bytes);
        if ((s = ex_cg_write(cg->memory_dir, "memory.limit_in_bytes", v, err)) != ORR_OK)
            goto fail;
        orr_err ignore; /* memsw exists only with swap accounting */
        ex_cg_write(cg->memory_dir, "memory.memsw.limit_in_bytes", v, &ignore);
    }
    if (lim->pids > 0) {
        snprintf(v, sizeof v, "%d", lim->pids);
        if ((s = ex_cg_write(cg->procs_dir, "pids.max", v, err)) != ORR_OK)
            goto fail;
    }
    if (lim->cpu_percent > 0 && dir_of[V1_CPU][0]) {
        if ((s = ex_cg_write(dir_of[V1_CPU], "cpu.cfs_period_us", "100000", err)) != ORR_OK)
            goto fail;
        snprintf(v, sizeof v, "%d", lim->cpu_percent * 1000);
        if ((s = ex_cg_write(dir_of[V1_CPU], "cpu.cfs_quota_us", v, err)) != ORR_OK)
            goto fail;
    }
    *out = cg;
    return ORR_OK;
fail:
    for (int i = cg->n_dirs - 1; i >= 0; i--)
        rmdir(cg->dirs[i]);
    free(cg);
    return s;
}

static orr_status v1_attach(ex_cgroup *cg, pid_t pid, orr_err *err)
{
    char v[32];
    snprintf(v, sizeof v, "%d", (int)pid);
    cg->leader = pid;
    for (int i = 0; i < cg->n_dirs; i++) {
        orr_status s = ex_cg_write(cg->dirs[i], "cgroup.procs", v, err);
        if (s != ORR_OK)
            return s;
    }
    return ORR_OK;
}

static void v1_child_setup(const ex_cgroup *cg)
{
    (void)cg;
}

static int v1_count(const ex_cgroup *cg)
{
    return v1__count_dir(cg->procs_dir);
}

static int v1_kill(ex_cgroup *cg, int wait_ms)
{
    return v1__kill_dirs(cg->procs_dir, cg->freezer_dir, wait_ms);
}

static int v1_oom_killed(const ex_cgroup *cg)
{
    int64_t n = ex_cg_read_key(cg->memory_dir, "memory.oom_control", "oom_kill");
    if (n >= 0)
        return n > 0;
    char buf[32];
    return ex_cg_read(cg->memory_dir, "memory.failcnt", buf, sizeof buf) > 0 && atoll(buf) > 0;
}

static void v1__rmdir(const char *dir)
{
    for (int i = 0; i < 100 && rmdir(dir) != 0 && errno == EBUSY; i++)
        ex_sleep_ms(10);
}

static int v1_pids_limited(const ex_cgroup *cg)
{
    return ex_cg_read_key(cg->procs_dir, "pids.events", "max") > 0;
}

static void v1_destroy(ex_cgroup *cg)
{
    if (!cg)
        return;
    v1__kill_dirs(cg->procs_dir, cg->freezer_dir, 2000);
    for (int i = cg->n_dirs - 1; i >= 0; i--)
        v1__rmdir(cg->dirs[i]);
    free(cg);
}

static int v1_sweep(const ex_cg_env *env)
{
    char base[EX_CG_PATH_MAX];
    v1__base(env, V1_PIDS, base, sizeof base);
    DIR *d = opendir(base);
    int n = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.')
                continue;
            char procs[EX_CG_PATH_MAX * 2], fr[EX_CG_PATH_MAX * 2] = "", b2[EX_CG_PATH_MAX];
            snprintf(procs, sizeof procs, "%s/%s", base, de->d_name);
            if (v1__mounted(env, V1_FREEZER)) {
                v1__base(env, V1_FREEZER, b2, sizeof b2);
                snprintf(fr, sizeof fr, "%s/%s", b2, de->d_name);
                if (access(fr, F_OK) != 0)
                    fr[0] = 0;
            }
            v1__kill_dirs(procs, fr, 2000);
            n++;
        }
        closedir(d);
    }
    /* Remove the (now empty) groups from every hierarchy. */
    for (int c = 0; c < V1__N; c++) {
        v1__base(env, c, base, sizeof base);
        DIR *dc = opendir(base);
        if (!dc)
            continue;
        struct dirent *de;
        while ((de = readdir(dc)) != NULL) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.')
                continue;
            char dir[EX_CG_PATH_MAX * 2];
            snprintf(dir, sizeof dir, "%s/%s", base, de->d_name);
            v1__rmdir(dir);
        }
        closedir(dc);
    }
    return n;
}

static orr_status v1_probe(const ex_cg_env *env, orr_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "probe-%d", (int)getpid());
    ex_limits lim = {64 << 20, 100, 16};
    ex_cgroup *cg = NULL;
    orr_status s = v1_create(env, name, &lim, &cg, err);
    if (s != ORR_OK)
        return s;
    for (int i = cg->n_dirs - 1; i >= 0; i--)
        rmdir(cg->dirs[i]);
    free(cg);
    return ORR_OK;
}

const ex_cgroup_ops ex_cgroup_v1_ops = {
    .name = "v1",
    .probe = v1_probe,
    .create = v1_create,
    .attach = v1_attach,
    .child_setup = v1_child_setup,
    .kill = v1_kill,
    .count = v1_count,
    .oom_killed = v1_oom_killed,
    .pids_limited = v1_pids_limited,
    .destroy = v1_destroy,
    .sweep = v1_sweep,
};

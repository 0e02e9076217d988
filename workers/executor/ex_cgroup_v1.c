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
 * before 4.13 lack it; then a non-zero memory.failcnt stands in). What v2
 * does the same way is in ex_cgroup_fs.c.
 */
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

static const ex_cg_files v1__files = {
    .memory_max = "memory.limit_in_bytes",
    .swap_max = "memory.memsw.limit_in_bytes", /* only with swap accounting */
    .swap_value = NULL,                        /* memsw counts memory + swap */
    .cpu_period = "cpu.cfs_period_us",
    .cpu_quota = "cpu.cfs_quota_us",
    .cpu_quota_suffix = "",
};

/* One kill round: freeze (so a fork bomb cannot outrun us), SIGKILL every
 * member, thaw so the signals are delivered. arg: the freezer folder or "". */
static void v1__freeze_kill_thaw(const char *procs_dir, const void *arg)
{
    const char *freezer_dir = arg;
    orr_err ignore;
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
}

/* Freeze-kill-thaw rounds until procs_dir is empty or wait_ms passed. */
static int v1__kill_dirs(const char *procs_dir, const char *freezer_dir, int wait_ms)
{
    return ex_cg_kill_rounds(procs_dir, wait_ms, 50, v1__freeze_kill_thaw, freezer_dir);
}

static orr_status v1_create(const ex_cg_env *env, const char *name, const ex_limits *lim,
                            ex_cgroup **out, orr_err *err)
{
    if (!v1__mounted(env, V1_MEMORY) || !v1__mounted(env, V1_PIDS))
        return orr_err_set(err, ORR_EUNAVAIL, "executor.cgroup_root",
                           "no cgroup v1 memory and pids hierarchies under %s", env->root);
    ex_cgroup *cg = ex_cg_new(&ex_cgroup_v1_ops, lim);
    orr_status s = ORR_OK;
    const char *dir_of[V1__N] = {"", "", "", ""};
    for (int c = 0; c < V1__N; c++) {
        if (c >= V1_CPU && !v1__mounted(env, c))
            continue;
        char base[EX_CG_PATH_MAX];
        v1__base(env, c, base, sizeof base);
        if ((s = ex_cg_mkdirs(base, 0755, err)) != ORR_OK)
            goto fail;
        if ((s = ex_cg_add_dir(cg, base, name, err)) != ORR_OK)
            goto fail;
        dir_of[c] = cg->dirs[cg->n_dirs - 1];
    }
    snprintf(cg->procs_dir, EX_CG_PATH_MAX, "%s", dir_of[V1_PIDS]);
    snprintf(cg->memory_dir, EX_CG_PATH_MAX, "%s", dir_of[V1_MEMORY]);
    snprintf(cg->freezer_dir, EX_CG_PATH_MAX, "%s", dir_of[V1_FREEZER]);
    if ((s = ex_cg_set_limits(cg, &v1__files, dir_of[V1_CPU], err)) != ORR_OK)
        goto fail;
    *out = cg;
    return ORR_OK;
fail:
    ex_cg_discard(cg);
    return s;
}

static int v1_kill(ex_cgroup *cg, int wait_ms)
{
    return v1__kill_dirs(cg->procs_dir, cg->freezer_dir, wait_ms);
}

static void v1_signal(const ex_cgroup *cg)
{
    ex_cg_signal_procs(cg->procs_dir, SIGKILL);
}

static int v1_oom_killed(const ex_cgroup *cg)
{
    int64_t n = ex_cg_read_key(cg->memory_dir, "memory.oom_control", "oom_kill");
    if (n >= 0)
        return n > 0;
    char buf[32];
    return ex_cg_read(cg->memory_dir, "memory.failcnt", buf, sizeof buf) > 0 && atoll(buf) > 0;
}

/* Sweep: end the members of one leftover group (its pids folder), freezing
 * it through the freezer hierarchy's folder of the same name when there. */
static void v1__sweep_kill(const char *procs_dir, void *arg)
{
    const char *freezer_base = arg;
    char fr[EX_CG_PATH_MAX * 2] = "";
    if (freezer_base[0]) {
        const char *leaf = strrchr(procs_dir, '/');
        snprintf(fr, sizeof fr, "%s%s", freezer_base, leaf ? leaf : "");
        if (access(fr, F_OK) != 0)
            fr[0] = 0;
    }
    v1__kill_dirs(procs_dir, fr, 2000);
}

static void v1__sweep_rmdir(const char *dir, void *arg)
{
    (void)arg;
    ex_cg_rmdir(dir);
}

static int v1_sweep(const ex_cg_env *env)
{
    char base[EX_CG_PATH_MAX], freezer_base[EX_CG_PATH_MAX] = "";
    if (v1__mounted(env, V1_FREEZER))
        v1__base(env, V1_FREEZER, freezer_base, sizeof freezer_base);
    v1__base(env, V1_PIDS, base, sizeof base);
    int n = ex_cg_for_each_group(base, v1__sweep_kill, freezer_base);
    /* Remove the (now empty) groups from every hierarchy. */
    for (int c = 0; c < V1__N; c++) {
        v1__base(env, c, base, sizeof base);
        ex_cg_for_each_group(base, v1__sweep_rmdir, NULL);
    }
    return n;
}

static orr_status v1_probe(const ex_cg_env *env, orr_err *err)
{
    return ex_cg_probe(&ex_cgroup_v1_ops, env, err);
}

const ex_cgroup_ops ex_cgroup_v1_ops = {
    .name = "v1",
    .probe = v1_probe,
    .create = v1_create,
    .attach = ex_cg_attach,
    .child_setup = ex_cg_child_setup,
    .kill = v1_kill,
    .signal = v1_signal,
    .count = ex_cg_count,
    .oom_killed = v1_oom_killed,
    .pids_limited = ex_cg_pids_limited,
    .destroy = ex_cg_destroy,
    .sweep = v1_sweep,
};

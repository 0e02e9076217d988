/*
 * ex_cgroup_v2.c - the cgroup v2 backend (see ex_cgroup.h).
 *
 * The group of an attempt is <mount>/<parent>/<executor>/<name>. The memory,
 * pids and cpu controllers are enabled down the path through
 * cgroup.subtree_control (the intermediate groups hold no process, as v2
 * requires). Limits: memory.max (+ memory.swap.max 0 when present), pids.max,
 * cpu.max "<quota> 100000". Kill: cgroup.kill where the kernel has it, else
 * SIGKILL to every pid of cgroup.procs until it is empty. OOM: the oom_kill
 * counter of memory.events. What v1 does the same way is in ex_cgroup_fs.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_cgroup.h"

/* The cgroup2 mount to use, or "" if none. */
static void v2__mount(const ex_cg_env *env, char *out, size_t n)
{
    char buf[256];
    out[0] = 0;
    if (env->v2_mount && *env->v2_mount) {
        if (ex_cg_read(env->v2_mount, "cgroup.controllers", buf, sizeof buf) >= 0)
            snprintf(out, n, "%s", env->v2_mount);
        return;
    }
    if (ex_cg_read(env->root, "cgroup.controllers", buf, sizeof buf) >= 0) {
        snprintf(out, n, "%s", env->root);
        return;
    }
    char uni[EX_CG_PATH_MAX];
    snprintf(uni, sizeof uni, "%s/unified", env->root);
    if (ex_cg_read(uni, "cgroup.controllers", buf, sizeof buf) >= 0)
        snprintf(out, n, "%s", uni);
}

static int v2__has(const char *list, const char *ctl)
{
    size_t l = strlen(ctl);
    for (const char *p = list; (p = strstr(p, ctl)) != NULL; p += l)
        if ((p == list || p[-1] == ' ') && (p[l] == 0 || p[l] == ' ' || p[l] == '\n'))
            return 1;
    return 0;
}

/* Create <mount>/<parent>/<executor> with memory, pids (and cpu when there)
 * enabled for its children. */
static orr_status v2__base(const ex_cg_env *env, char *base, size_t n, orr_err *err)
{
    char mount[EX_CG_PATH_MAX], ctl[256];
    v2__mount(env, mount, sizeof mount);
    if (!mount[0])
        return orr_err_set(err, ORR_EUNAVAIL, "executor.cgroup_root",
                           "no cgroup2 mount at %s or %s/unified", env->root, env->root);
    if (ex_cg_read(mount, "cgroup.controllers", ctl, sizeof ctl) < 0)
        return orr_err_set(err, ORR_EIO, mount, "cannot read cgroup.controllers");
    ctl[strcspn(ctl, "\n")] = 0;
    if (!v2__has(ctl, "memory") || !v2__has(ctl, "pids"))
        return orr_err_set(err, ORR_EUNAVAIL, mount,
                           "cgroup2 mount lacks the memory or pids controller (has: %.100s)",
                           ctl[0] ? ctl : "none");
    const char *enable = v2__has(ctl, "cpu") ? "+memory +pids +cpu" : "+memory +pids";
    char mid[EX_CG_PATH_MAX];
    if (snprintf(mid, sizeof mid, "%s/%s", mount, env->parent) >= (int)sizeof mid)
        return orr_err_set(err, ORR_EINVAL, "executor.cgroup_parent", "cgroup path too long");
    if (snprintf(base, n, "%s/%s", mid, env->executor) >= (int)n)
        return orr_err_set(err, ORR_EINVAL, "executor.id", "cgroup path too long");
    orr_status s;
    if ((s = ex_cg_write(mount, "cgroup.subtree_control", enable, err)) != ORR_OK)
        return s;
    if ((s = ex_cg_mkdirs(mid, 0755, err)) != ORR_OK)
        return s;
    if ((s = ex_cg_write(mid, "cgroup.subtree_control", enable, err)) != ORR_OK)
        return s;
    if ((s = ex_cg_mkdirs(base, 0755, err)) != ORR_OK)
        return s;
    return ex_cg_write(base, "cgroup.subtree_control", enable, err);
}

static const ex_cg_files v2__files = {
    .memory_max = "memory.max",
    .swap_max = "memory.swap.max",
    .swap_value = "0",
    .cpu_period = NULL,
    .cpu_quota = "cpu.max",
    .cpu_quota_suffix = " 100000",
};

static orr_status v2_create(const ex_cg_env *env, const char *name, const ex_limits *lim,
                            ex_cgroup **out, orr_err *err)
{
    char base[EX_CG_PATH_MAX];
    orr_status s = v2__base(env, base, sizeof base, err);
    if (s != ORR_OK)
        return s;
    ex_cgroup *cg = ex_cg_new(&ex_cgroup_v2_ops, lim);
    if ((s = ex_cg_add_dir(cg, base, name, err)) != ORR_OK)
        goto fail;
    snprintf(cg->procs_dir, EX_CG_PATH_MAX, "%s", cg->dirs[0]);
    snprintf(cg->memory_dir, EX_CG_PATH_MAX, "%s", cg->dirs[0]);
    /* cpu.max exists only where the cpu controller is enabled */
    char probe[EX_CG_PATH_MAX + 16];
    snprintf(probe, sizeof probe, "%s/cpu.max", cg->dirs[0]);
    if ((s = ex_cg_set_limits(cg, &v2__files, access(probe, F_OK) == 0 ? cg->dirs[0] : NULL,
                              err)) != ORR_OK)
        goto fail;
    *out = cg;
    return ORR_OK;
fail:
    ex_cg_discard(cg);
    return s;
}

/* A kill round without cgroup.kill: SIGKILL to every member. */
static void v2__signal_round(const char *dir, const void *arg)
{
    (void)arg;
    ex_cg_signal_procs(dir, SIGKILL);
}

static int v2__kill_dir(const char *dir, int wait_ms)
{
    orr_err ignore;
    int has_kill = ex_cg_write(dir, "cgroup.kill", "1", &ignore) == ORR_OK;
    return ex_cg_kill_rounds(dir, wait_ms, 10, has_kill ? NULL : v2__signal_round, NULL);
}

static int v2_kill(ex_cgroup *cg, int wait_ms)
{
    return v2__kill_dir(cg->dirs[0], wait_ms);
}

static void v2_signal(const ex_cgroup *cg)
{
    orr_err ignore;
    if (ex_cg_write(cg->dirs[0], "cgroup.kill", "1", &ignore) != ORR_OK)
        ex_cg_signal_procs(cg->dirs[0], SIGKILL);
}

static int v2_oom_killed(const ex_cgroup *cg)
{
    return ex_cg_read_key(cg->dirs[0], "memory.events", "oom_kill") > 0;
}

/* Sweep one leftover group: kill, remove, count it if it went. */
static void v2__sweep_one(const char *dir, void *arg)
{
    v2__kill_dir(dir, 2000);
    if (rmdir(dir) == 0)
        ++*(int *)arg;
}

static int v2_sweep(const ex_cg_env *env)
{
    char base[EX_CG_PATH_MAX];
    orr_err e;
    if (v2__base(env, base, sizeof base, &e) != ORR_OK)
        return 0;
    int removed = 0;
    ex_cg_for_each_group(base, v2__sweep_one, &removed);
    return removed;
}

static orr_status v2_probe(const ex_cg_env *env, orr_err *err)
{
    return ex_cg_probe(&ex_cgroup_v2_ops, env, err);
}

const ex_cgroup_ops ex_cgroup_v2_ops = {
    .name = "v2",
    .probe = v2_probe,
    .create = v2_create,
    .attach = ex_cg_attach,
    .child_setup = ex_cg_child_setup,
    .kill = v2_kill,
    .signal = v2_signal,
    .count = ex_cg_count,
    .oom_killed = v2_oom_killed,
    .pids_limited = ex_cg_pids_limited,
    .destroy = ex_cg_destroy,
    .sweep = v2_sweep,
};

/*
 * ex_cgroup_v2.c - the cgroup v2 backend (see ex_cgroup.h).
 *
 * The group of an attempt is <mount>/<parent>/<executor>/<name>. The memory,
 * pids and cpu controllers are enabled down the path through
 * cgroup.subtree_control (the intermediate groups hold no process, as v2
 * requires). Limits: memory.max (+ memory.swap.max 0 when present), pids.max,
 * cpu.max "<quota> 100000". Kill: cgroup.kill where the kernel has it, else
 * SIGKILL to every pid of cgroup.procs until it is empty. OOM: the oom_kill
 * counter of memory.events.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
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

static orr_status v2_create(const ex_cg_env *env, const char *name, const ex_limits *lim,
                            ex_cgroup **out, orr_err *err)
{
    char base[EX_CG_PATH_MAX];
    orr_status s = v2__base(env, base, sizeof base, err);
    if (s != ORR_OK)
        return s;
    ex_cgroup *cg = calloc(1, sizeof *cg);
    if (!cg)
        return orr_err_set(err, ORR_ENOMEM, NULL, "out of memory");
    cg->ops = &ex_cgroup_v2_ops;
    cg->lim = *lim;
    cg->n_dirs = 1;
    snprintf(cg->dirs[0], EX_CG_PATH_MAX, "%.300s/%.200s", base, name);
    snprintf(cg->procs_dir, EX_CG_PATH_MAX, "%s", cg->dirs[0]);
    snprintf(cg->memory_dir, EX_CG_PATH_MAX, "%s", cg->dirs[0]);
    if (mkdir(cg->dirs[0], 0755) != 0 && errno != EEXIST) {
        s = orr_err_set(err, ORR_EIO, cg->dirs[0], "cannot create: %s", strerror(errno));
        free(cg);
        return s;
    }
    char v[64];
    if (lim->memory_bytes > 0) {
        snprintf(v, sizeof v, "%lld", (long long)lim->memory_bytes);
        if ((s = ex_cg_write(cg->dirs[0], "memory.max", v, err)) != ORR_OK)
            goto fail;
        orr_err ignore;
        ex_cg_write(cg->dirs[0], "memory.swap.max", "0", &ignore); /* absent without swap */
    }
    if (lim->pids > 0) {
        snprintf(v, sizeof v, "%d", lim->pids);
        if ((s = ex_cg_write(cg->dirs[0], "pids.max", v, err)) != ORR_OK)
            goto fail;
    }
    if (lim->cpu_percent > 0) {
        char probe[EX_CG_PATH_MAX + 16];
        snprintf(probe, sizeof probe, "%s/cpu.max", cg->dirs[0]);
        if (access(probe, F_OK) == 0) {
            snprintf(v, sizeof v, "%d 100000", lim->cpu_percent * 1000);
            if ((s = ex_cg_write(cg->dirs[0], "cpu.max", v, err)) != ORR_OK)
                goto fail;
        }
    }
    *out = cg;
    return ORR_OK;
fail:
    rmdir(cg->dirs[0]);
    free(cg);
    return s;
}

static orr_status v2_attach(ex_cgroup *cg, pid_t pid, orr_err *err)
{
    char v[32];
    snprintf(v, sizeof v, "%d", (int)pid);
    cg->leader = pid;
    return ex_cg_write(cg->dirs[0], "cgroup.procs", v, err);
}

static void v2_child_setup(const ex_cgroup *cg)
{
    (void)cg;
}

static int v2__count_dir(const char *dir)
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

static int v2_count(const ex_cgroup *cg)
{
    return v2__count_dir(cg->dirs[0]);
}

static int v2__kill_dir(const char *dir, int wait_ms)
{
    orr_err ignore;
    int has_kill = ex_cg_write(dir, "cgroup.kill", "1", &ignore) == ORR_OK;
    int64_t deadline = ex_now_ms() + wait_ms;
    for (;;) {
        if (!has_kill)
            ex_cg_signal_procs(dir, SIGKILL);
        int n = v2__count_dir(dir);
        if (n <= 0 || ex_now_ms() >= deadline)
            return n < 0 ? 0 : n;
        ex_sleep_ms(10);
    }
}

static int v2_kill(ex_cgroup *cg, int wait_ms)
{
    return v2__kill_dir(cg->dirs[0], wait_ms);
}

static int v2_oom_killed(const ex_cgroup *cg)
{
    return ex_cg_read_key(cg->dirs[0], "memory.events", "oom_kill") > 0;
}

static int v2_pids_limited(const ex_cgroup *cg)
{
    return ex_cg_read_key(cg->dirs[0], "pids.events", "max") > 0;
}

static void v2_destroy(ex_cgroup *cg)
{
    if (!cg)
        return;
    v2__kill_dir(cg->dirs[0], 2000);
    for (int i = 0; i < 100 && rmdir(cg->dirs[0]) != 0 && errno == EBUSY; i++)
        ex_sleep_ms(10);
    free(cg);
}

static int v2_sweep(const ex_cg_env *env)
{
    char base[EX_CG_PATH_MAX];
    orr_err e;
    if (v2__base(env, base, sizeof base, &e) != ORR_OK)
        return 0;
    DIR *d = opendir(base);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        char dir[EX_CG_PATH_MAX * 2];
        snprintf(dir, sizeof dir, "%s/%s", base, de->d_name);
        v2__kill_dir(dir, 2000);
        if (rmdir(dir) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static orr_status v2_probe(const ex_cg_env *env, orr_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "probe-%d", (int)getpid());
    ex_limits lim = {64 << 20, 100, 16};
    ex_cgroup *cg = NULL;
    orr_status s = v2_create(env, name, &lim, &cg, err);
    if (s != ORR_OK)
        return s;
    rmdir(cg->dirs[0]);
    free(cg);
    return ORR_OK;
}

const ex_cgroup_ops ex_cgroup_v2_ops = {
    .name = "v2",
    .probe = v2_probe,
    .create = v2_create,
    .attach = v2_attach,
    .child_setup = v2_child_setup,
    .kill = v2_kill,
    .count = v2_count,
    .oom_killed = v2_oom_killed,
    .pids_limited = v2_pids_limited,
    .destroy = v2_destroy,
    .sweep = v2_sweep,
};

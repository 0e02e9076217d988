/*
 * ex_cgroup_fs.c - what the two cgroup-filesystem backends (v1 and v2) share.
 *
 * Both keep an attempt in one or more group folders (ex_cgroup.dirs, one
 * for v2, one per controller for v1), count and signal members through
 * cgroup.procs, write the same kinds of limits into differently named files
 * (ex_cg_files says which), kill in rounds until the group is empty, and
 * sweep what a previous life left under <parent>/<executor>. The backends
 * keep only what differs: finding their controllers, the names of the limit
 * files, how a kill round is done (cgroup.kill, or freeze-kill-thaw) and how
 * an OOM kill shows.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "orr_alloc.h"

ex_cgroup *ex_cg_new(const ex_cgroup_ops *ops, const ex_limits *lim)
{
    ex_cgroup *cg = orr_xcalloc(1, sizeof *cg);
    cg->ops = ops;
    cg->lim = *lim;
    return cg;
}

orr_status ex_cg_add_dir(ex_cgroup *cg, const char *base, const char *name, orr_err *err)
{
    if (cg->n_dirs >= EX_CG_V1_MAX)
        return orr_err_set(err, ORR_EINTERNAL, base, "too many cgroup folders");
    char *dir = cg->dirs[cg->n_dirs];
    snprintf(dir, EX_CG_PATH_MAX, "%.300s/%.200s", base, name);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, dir, "cannot create: %s", strerror(errno));
    cg->n_dirs++;
    return ORR_OK;
}

orr_status ex_cg_set_limits(const ex_cgroup *cg, const ex_cg_files *f, const char *cpu_dir,
                            orr_err *err)
{
    orr_status s;
    char v[64];
    if (cg->lim.memory_bytes > 0) {
        snprintf(v, sizeof v, "%lld", (long long)cg->lim.memory_bytes);
        if ((s = ex_cg_write(cg->memory_dir, f->memory_max, v, err)) != ORR_OK)
            return s;
        orr_err ignore; /* absent without swap (accounting) */
        ex_cg_write(cg->memory_dir, f->swap_max, f->swap_value ? f->swap_value : v, &ignore);
    }
    if (cg->lim.pids > 0) {
        snprintf(v, sizeof v, "%d", cg->lim.pids);
        if ((s = ex_cg_write(cg->procs_dir, "pids.max", v, err)) != ORR_OK)
            return s;
    }
    if (cg->lim.cpu_percent > 0 && cpu_dir && cpu_dir[0]) {
        if (f->cpu_period && (s = ex_cg_write(cpu_dir, f->cpu_period, "100000", err)) != ORR_OK)
            return s;
        snprintf(v, sizeof v, "%d%s", cg->lim.cpu_percent * 1000, f->cpu_quota_suffix);
        if ((s = ex_cg_write(cpu_dir, f->cpu_quota, v, err)) != ORR_OK)
            return s;
    }
    return ORR_OK;
}

void ex_cg_discard(ex_cgroup *cg)
{
    for (int i = cg->n_dirs - 1; i >= 0; i--)
        rmdir(cg->dirs[i]);
    free(cg);
}

orr_status ex_cg_probe(const ex_cgroup_ops *ops, const ex_cg_env *env, orr_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "probe-%d", (int)getpid());
    ex_limits lim = {64 << 20, 100, 16};
    ex_cgroup *cg = NULL;
    orr_status s = ops->create(env, name, &lim, &cg, err);
    if (s == ORR_OK)
        ex_cg_discard(cg);
    return s;
}

int ex_cg_count_procs(const char *dir)
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

int ex_cg_kill_rounds(const char *procs_dir, int wait_ms, int settle_ms,
                      void (*round)(const char *procs_dir, const void *arg), const void *arg)
{
    int64_t deadline = ex_now_ms() + wait_ms;
    for (;;) {
        if (round)
            round(procs_dir, arg);
        int n = ex_cg_count_procs(procs_dir);
        for (int waited = 0; n > 0 && waited < settle_ms; waited += 5) {
            ex_sleep_ms(5);
            n = ex_cg_count_procs(procs_dir);
        }
        if (n <= 0 || ex_now_ms() >= deadline)
            return n; /* -1: cgroup.procs could not be read */
    }
}

void ex_cg_rmdir(const char *dir)
{
    for (int i = 0; i < 100 && rmdir(dir) != 0 && errno == EBUSY; i++)
        ex_sleep_ms(10);
}

int ex_cg_for_each_group(const char *base, void (*fn)(const char *dir, void *arg), void *arg)
{
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
        fn(dir, arg);
        n++;
    }
    closedir(d);
    return n;
}

/* ---- ops the two backends use as they are ---------------------------- */

orr_status ex_cg_attach(ex_cgroup *cg, pid_t pid, orr_err *err)
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

void ex_cg_child_setup(const ex_cgroup *cg)
{
    (void)cg; /* the parent attached the child before it execs */
}

int ex_cg_count(const ex_cgroup *cg)
{
    return ex_cg_count_procs(cg->procs_dir);
}

int ex_cg_pids_limited(const ex_cgroup *cg)
{
    return ex_cg_read_key(cg->procs_dir, "pids.events", "max") > 0;
}

void ex_cg_destroy(ex_cgroup *cg)
{
    if (!cg)
        return;
    cg->ops->kill(cg, 2000);
    for (int i = cg->n_dirs - 1; i >= 0; i--)
        ex_cg_rmdir(cg->dirs[i]);
    free(cg);
}

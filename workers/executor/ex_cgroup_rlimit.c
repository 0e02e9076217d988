/*
 * ex_cgroup_rlimit.c - the fallback backend when no cgroup is writable (see
 * ex_cgroup.h).
 *
 * Limits become rlimits of the child: RLIMIT_AS for memory (an allocation
 * fails instead of an OOM kill, so memory_limit cannot be told apart from
 * any other failure) and RLIMIT_NPROC for pids (counted per user, and not
 * enforced for a privileged user). There is no CPU limit. The group is the
 * attempt's process group (the child calls setsid()), killed with killpg();
 * a grandchild that leaves the group escapes, which is why the daemon says at
 * start that it runs in this mode. Members are counted by scanning /proc for
 * the process group (for the leftover count).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ex_cgroup.h"
#include "orr_alloc.h"

static orr_status rl_probe(const ex_cg_env *env, orr_err *err)
{
    (void)env;
    (void)err;
    return ORR_OK;
}

static orr_status rl_create(const ex_cg_env *env, const char *name, const ex_limits *lim,
                            ex_cgroup **out, orr_err *err)
{
    (void)env;
    (void)name;
    (void)err;
    ex_cgroup *cg = orr_xcalloc(1, sizeof *cg);
    cg->ops = &ex_cgroup_rlimit_ops;
    cg->lim = *lim;
    *out = cg;
    return ORR_OK;
}

static orr_status rl_attach(ex_cgroup *cg, pid_t pid, orr_err *err)
{
    (void)err;
    cg->leader = pid;
    return ORR_OK;
}

static void rl_child_setup(const ex_cgroup *cg)
{
    struct rlimit r;
    if (cg->lim.memory_bytes > 0) {
        r.rlim_cur = r.rlim_max = (rlim_t)cg->lim.memory_bytes;
        setrlimit(RLIMIT_AS, &r);
    }
    if (cg->lim.pids > 0) {
        r.rlim_cur = r.rlim_max = (rlim_t)cg->lim.pids;
        setrlimit(RLIMIT_NPROC, &r);
    }
}

/* Members of the process group: /proc/<pid>/stat field 5 (pgrp), read
 * after the ")" that ends the command name. An empty group (the common end
 * of a run: the main process reaped, nothing left behind) is told by one
 * killpg(leader, 0) answering ESRCH, without reading every process's stat. */
static int rl_count(const ex_cgroup *cg)
{
    if (cg->leader <= 0)
        return 0;
    if (killpg(cg->leader, 0) != 0 && errno == ESRCH)
        return 0;
    DIR *d = opendir("/proc");
    if (!d)
        return kill(-cg->leader, 0) == 0 ? 1 : 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0)
            continue;
        buf[r] = 0;
        char *p = strrchr(buf, ')');
        char state = 0;
        long ppid = 0, pgrp = 0;
        if (p && sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 &&
            pgrp == (long)cg->leader && state != 'Z')
            n++;
    }
    closedir(d);
    return n;
}

static int rl_kill(ex_cgroup *cg, int wait_ms)
{
    if (cg->leader <= 0)
        return 0;
    int64_t deadline = ex_now_ms() + wait_ms;
    for (;;) {
        if (killpg(cg->leader, SIGKILL) != 0 && errno == ESRCH)
            return 0;
        if (ex_now_ms() >= deadline)
            return rl_count(cg);
        ex_sleep_ms(10);
    }
}

static void rl_signal(const ex_cgroup *cg)
{
    if (cg->leader > 0)
        killpg(cg->leader, SIGKILL);
}

static int rl_oom_killed(const ex_cgroup *cg)
{
    (void)cg;
    return 0;
}

static int rl_pids_limited(const ex_cgroup *cg)
{
    (void)cg;
    return 0; /* a refused fork under RLIMIT_NPROC leaves no trace */
}

static void rl_destroy(ex_cgroup *cg)
{
    if (!cg)
        return;
    if (cg->leader > 0)
        killpg(cg->leader, SIGKILL);
    free(cg);
}

static int rl_sweep(const ex_cg_env *env)
{
    (void)env;
    return 0;
}

const ex_cgroup_ops ex_cgroup_rlimit_ops = {
    .name = "rlimit",
    .attach_after_exec = 1,
    .probe = rl_probe,
    .create = rl_create,
    .attach = rl_attach,
    .child_setup = rl_child_setup,
    .kill = rl_kill,
    .signal = rl_signal,
    .count = rl_count,
    .oom_killed = rl_oom_killed,
    .pids_limited = rl_pids_limited,
    .destroy = rl_destroy,
    .sweep = rl_sweep,
};

/*
 * ex_guard.c - the guardian: a small process that outlives a dead executord
 * just long enough to kill every task tree it left (contract in ex_daemon.h).
 *
 * Why: an attempt's processes must die with its executord (kill -9, crash,
 * the kernel's OOM killer), or an instance retried on another executor
 * after this one was declared lost runs twice. PR_SET_PDEATHSIG is not
 * enough: it fires when the forking *thread* exits (executord forks from
 * short-lived job threads), and it reaches only the direct child, never a
 * tree or a daemonised grandchild.
 *
 * Design:
 *   - At start executord takes an exclusive flock(2) on <work>/executord.lock,
 *     creates a pipe whose write end only it holds (close-on-exec, and a
 *     sandboxed child closes every descriptor before exec) and starts
 *     `executord guard <backend> <cgroup root> <parent> <executor id>` (fork
 *     and exec of its own binary, so the guardian is a fresh single-threaded
 *     process even though executord is multi-threaded). The guardian gets the
 *     pipe's read end as fd 3 and the lock file as fd 4.
 *   - The guardian ignores the stop signals (SIGINT, SIGTERM, SIGHUP reach a
 *     whole terminal group) and blocks reading the pipe:
 *       "+<pgid>\n" / "-<pgid>\n"  an attempt's process group started / ended
 *       EOF                        executord is gone, however it died: the
 *                                  kernel closes its descriptors
 *   - On EOF it ends every group of this executor with the backend's sweep
 *     (v2/v1: every attempt's cgroup under <parent>/<executor>, daemonised
 *     grandchildren included, frozen and killed), SIGKILLs every process
 *     group it was told of (the rlimit fallback, where the process group is
 *     the sandbox; a process that left its group escapes there, as that
 *     backend documents) and exits.
 *   - The guardian inherits the lock's open file: a new executord waits
 *     (bounded) for the lock, so an old guardian never sweeps away the tasks
 *     of a new life, and two executords never share one work folder.
 *   - A dead guardian is noticed by executord's main loop (its pid reaped),
 *     which starts another and tells it the live process groups again.
 * On a clean stop executord ends its attempts itself, then closes the pipe:
 * the guardian finds nothing left and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "orr_log.h"

#define GUARD_PIPE_FD 3
#define GUARD_LOCK_FD 4

/* ------------------------------------------------------------ guardian side */

static void guard__add(pid_t **v, size_t *n, size_t *cap, pid_t p)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i] == p)
            return;
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        pid_t *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return; /* the cgroup sweep still covers it */
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = p;
}

static void guard__del(pid_t *v, size_t *n, pid_t p)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == p) {
            v[i] = v[--*n];
            return;
        }
}

int ex_guard_main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: executord guard BACKEND ROOT PARENT EXECUTOR (started by "
                        "executord itself)\n");
        return 2;
    }
    static const ex_cgroup_ops *const all[] = {&ex_cgroup_v2_ops, &ex_cgroup_v1_ops,
                                               &ex_cgroup_rlimit_ops};
    const ex_cgroup_ops *ops = NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, argv[2]) == 0)
            ops = all[i];
    if (!ops) {
        fprintf(stderr, "executord guard: unknown backend \"%s\"\n", argv[2]);
        return 2;
    }
    ex_cg_env env = {argv[3], "", argv[4], argv[5]};
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);

    pid_t *groups = NULL;
    size_t n = 0, cap = 0;
    char buf[4096], line[32];
    size_t ll = 0;
    for (;;) {
        ssize_t r = read(GUARD_PIPE_FD, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break; /* EOF (or an error: the same thing for us) */
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != '\n') {
                if (ll + 1 < sizeof line)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = 0;
            ll = 0;
            long p = strtol(line + 1, NULL, 10);
            if (p <= 1)
                continue;
            if (line[0] == '+')
                guard__add(&groups, &n, &cap, (pid_t)p);
            else if (line[0] == '-')
                guard__del(groups, &n, (pid_t)p);
        }
    }
    int swept = ops->sweep(&env);
    int killed = 0;
    for (size_t i = 0; i < n; i++)
        if (killpg(groups[i], SIGKILL) == 0)
            killed++;
    if (swept || killed)
        ORR_WARN("executord is gone: ended the attempts it left",
                 "executor=%s groups=%d "
                 "process_groups=%d",
                 env.executor, swept, killed);
    free(groups);
    return 0;
}

/* ------------------------------------------------------------ executord side */

orr_status ex_guard_lock(ex_daemon *d, orr_err *err)
{
    char path[EX_PATH + 32];
    snprintf(path, sizeof path, "%s/executord.lock", d->work_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, path, "cannot open: %s", strerror(errno));
    /* An earlier life's guardian holds it while it ends that life's tasks:
     * milliseconds. Another executord on this folder holds it for good. */
    int64_t deadline = ex_now_ms() + 15000;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            orr_status s = orr_err_set(err, ORR_EIO, path, "flock: %s", strerror(errno));
            close(fd);
            return s;
        }
        if (ex_now_ms() >= deadline) {
            close(fd);
            return orr_err_set(err, ORR_EINVAL, "executor.work_dir",
                               "%s is locked: another executord uses this work folder", path);
        }
        ex_sleep_ms(20);
    }
    d->guard_lock_fd = fd;
    return ORR_OK;
}

orr_status ex_guard_spawn(ex_daemon *d, orr_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return orr_err_set(err, ORR_EIO, NULL, "guardian pipe: %s", strerror(errno));
    char *argv[] = {
        "executord",   "guard", (char *)d->cg->name, d->cg_root, (char *)d->cg_env.parent,
        (char *)d->id, NULL};
    char exe[] = "/proc/self/exe";
    sigset_t none;
    sigemptyset(&none);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return orr_err_set(err, ORR_EIO, NULL, "guardian fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Async-signal-safe calls only until exec. */
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Above the targets first, so neither dup2 clobbers the other's
         * source or is a no-op that keeps close-on-exec. */
        int pr = fcntl(p[0], F_DUPFD, 10), lk = fcntl(d->guard_lock_fd, F_DUPFD, 10);
        if (pr < 0 || lk < 0 || dup2(pr, GUARD_PIPE_FD) < 0 || dup2(lk, GUARD_LOCK_FD) < 0)
            _exit(127);
        close_range(GUARD_LOCK_FD + 1, ~0U, 0);
        execv(exe, argv);
        _exit(127);
    }
    close(p[0]);
    pthread_mutex_lock(&d->guard_mu);
    if (d->guard_fd >= 0)
        close(d->guard_fd);
    d->guard_fd = p[1];
    d->guard_pid = pid;
    pthread_mutex_unlock(&d->guard_mu);
    /* Tell the new guardian every live process group. */
    pthread_mutex_lock(&d->mu);
    for (ex_job *j = d->jobs; j; j = j->next)
        if (j->sb)
            ex_guard_note(d, '+', ex_sandbox_pid(j->sb));
    pthread_mutex_unlock(&d->mu);
    ORR_INFO("guardian started", "pid=%d", (int)pid);
    return ORR_OK;
}

void ex_guard_note(ex_daemon *d, char op, pid_t pgid)
{
    char msg[32];
    int l = snprintf(msg, sizeof msg, "%c%d\n", op, (int)pgid);
    pthread_mutex_lock(&d->guard_mu);
    if (d->guard_fd >= 0) {
        ssize_t w = write(d->guard_fd, msg, (size_t)l); /* < PIPE_BUF: atomic */
        (void)w; /* a dead guardian is noticed by ex_guard_check */
    }
    pthread_mutex_unlock(&d->guard_mu);
}

void ex_guard_check(ex_daemon *d)
{
    if (d->guard_pid <= 0)
        return;
    int st;
    if (waitpid(d->guard_pid, &st, WNOHANG) != d->guard_pid)
        return;
    ORR_ERROR("the guardian died; starting another (tasks were unguarded meanwhile)",
              "pid=%d status=%d", (int)d->guard_pid, st);
    d->guard_pid = 0;
    orr_err e;
    if (ex_guard_spawn(d, &e) != ORR_OK)
        ORR_ERROR("cannot start the guardian", "err=%s", orr_log_q(e.msg));
}

void ex_guard_stop(ex_daemon *d)
{
    pthread_mutex_lock(&d->guard_mu);
    if (d->guard_fd >= 0)
        close(d->guard_fd);
    d->guard_fd = -1;
    pthread_mutex_unlock(&d->guard_mu);
    if (d->guard_pid > 0) {
        int64_t deadline = ex_now_ms() + 10000;
        while (waitpid(d->guard_pid, NULL, WNOHANG) == 0 && ex_now_ms() < deadline)
            ex_sleep_ms(10);
        d->guard_pid = 0;
    }
    if (d->guard_lock_fd >= 0)
        close(d->guard_lock_fd);
    d->guard_lock_fd = -1;
}

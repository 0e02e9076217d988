/*
 * ex_sandbox.c - fork/exec of one attempt inside its group (see ex_sandbox.h).
 *
 * Start-up handshake, so that no task instruction runs outside the group:
 *   parent: create group, open log, pipe "go" (parent->child) and pipe "err"
 *           (child->parent, close-on-exec), fork
 *   child:  setsid, wait for the go byte
 *   parent: attach the child's pid to the group, send the go byte
 *   child:  backend setup (rlimits), drop privileges, chdir, fds, exec;
 *           on failure write errno on "err" and _exit(127)
 *   parent: read "err": EOF = exec succeeded, 4 bytes = it failed
 * Between fork and exec the child calls only async-signal-safe functions
 * (the daemon is multi-threaded); everything is prepared before fork.
 *
 * Spawning without a copy: when the backend's attach only records the leader
 * (the rlimit backend, ex_cgroup_ops.attach_after_exec), nothing has to
 * happen between the child's birth and its exec, so the child is started
 * with clone(CLONE_VM | CLONE_VFORK) on a small stack of its own (kept for
 * the next spawn) instead of fork(): it shares the daemon's memory until it
 * execs (the calling thread waits meanwhile), so the daemon's page tables
 * are not copied, its pages not write-protected, and the copy is not torn
 * down again at exec -- the largest part of a run's cost in a daemon with
 * many threads. The child does the same steps (session, limits, user,
 * folder, descriptors, exec) with system calls only: the C library's set*id
 * would switch every thread of the daemon whose memory it shares, and its
 * signal handlers must not run in the child, so every signal is blocked
 * across the clone and reset to its default in the child before it is
 * unblocked. An exec failure is left in the shared memory (exec_errno), as
 * the pipe does for fork.
 *
 * Waiting uses a pidfd of the main process and an eventfd for cancel in one
 * poll(2) whose timeout is the deadline, so no thread ever sleeps blindly
 * and nothing else in the daemon has to reap our child.
 */
#include "ex_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orr_alloc.h"

struct ex_sandbox {
    ex_cgroup *cg;
    pid_t pid;
    int pidfd;
    int cancel_fd;
    int exec_errno;
    int64_t started_ms;
};

static void child_fail(int fd, int e)
{
    ssize_t w = write(fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The child side of the handshake. Never returns. */
static void child_run(const ex_cgroup *cg, const ex_spawn *sp, int go_fd, int err_fd, int log_fd,
                      int null_fd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    if (setsid() < 0)
        child_fail(err_fd, errno);
    char go;
    ssize_t r;
    while ((r = read(go_fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (r != 1)
        _exit(126); /* the parent gave up on us */
    cg->ops->child_setup(cg);
    if (sp->drop) {
        if (setgroups(0, NULL) != 0 || setgid(sp->gid) != 0 || setuid(sp->uid) != 0)
            child_fail(err_fd, errno);
    }
    if (chdir(sp->cwd) != 0)
        child_fail(err_fd, errno);
    if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
        child_fail(err_fd, errno);
    /* Keep 0-2 and err_fd (close-on-exec) only. */
    if (err_fd > 3)
        close_range(3, (unsigned)err_fd - 1, 0);
    close_range((unsigned)err_fd + 1, ~0U, 0);
    execve(sp->argv[0], sp->argv, sp->envp);
    child_fail(err_fd, errno);
}

/* ------------------------------------------------------------ spawning without a copy */

typedef struct vm_child {
    const ex_cgroup *cg;
    const ex_spawn *sp;
    int log_fd, null_fd;
    volatile int err; /* errno of the step that failed; 0: the exec happened */
} vm_child;

/* The kernel's struct sigaction for rt_sigaction (x86-64 and most others). */
struct vm_ksigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

/* The child of spawn_shared: system calls only (see the top of the file),
 * no sanitizer instrumentation (it runs on a stack the sanitizer does not
 * know, in memory it shares with the daemon). Never returns. */
__attribute__((no_sanitize("address", "undefined"))) static int vm_child_run(void *arg)
{
    vm_child *c = arg;
    const ex_spawn *sp = c->sp;
    struct vm_ksigaction dfl = {SIG_DFL, 0, NULL, 0};
    for (int s = 1; s < 65; s++)
        if (s != SIGKILL && s != SIGSTOP)
            syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask);
    uint64_t none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
    if (syscall(SYS_setsid) < 0)
        goto fail;
    c->cg->ops->child_setup(c->cg);
    if (sp->drop && (syscall(SYS_setgroups, 0, NULL) != 0 ||
                     syscall(SYS_setresgid, sp->gid, sp->gid, sp->gid) != 0 ||
                     syscall(SYS_setresuid, sp->uid, sp->uid, sp->uid) != 0))
        goto fail;
    if (syscall(SYS_chdir, sp->cwd) != 0)
        goto fail;
    if (syscall(SYS_dup2, c->null_fd, 0) < 0 || syscall(SYS_dup2, c->log_fd, 1) < 0 ||
        syscall(SYS_dup2, c->log_fd, 2) < 0)
        goto fail;
    syscall(SYS_close_range, 3U, ~0U, 0U); /* the descriptor table is the child's own */
    syscall(SYS_execve, sp->argv[0], sp->argv, sp->envp);
fail:
    c->err = errno ? errno : EIO;
    syscall(SYS_exit_group, 127);
    return 127;
}

/* The children's stacks, kept for the next spawn (a child is done with its
 * stack once clone returns: it has exec'd or exited). A new mapping for
 * each run cost page faults on first touch and, at its munmap, a TLB
 * shoot-down that interrupts every CPU running a thread of the daemon. At
 * most EX_STACKS_KEPT are kept: as many as spawns at once. */
#define EX_STACK_SIZE  (64 * 1024)
#define EX_STACKS_KEPT 64

static struct {
    pthread_mutex_t mu;
    void *kept[EX_STACKS_KEPT];
    int n;
} g_stacks = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *stack_take(void)
{
    void *s = NULL;
    pthread_mutex_lock(&g_stacks.mu);
    if (g_stacks.n > 0)
        s = g_stacks.kept[--g_stacks.n];
    pthread_mutex_unlock(&g_stacks.mu);
    if (s)
        return s;
    s = mmap(NULL, EX_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
             -1, 0);
    return s == MAP_FAILED ? NULL : s;
}

static void stack_give(void *s)
{
    pthread_mutex_lock(&g_stacks.mu);
    int kept = g_stacks.n < EX_STACKS_KEPT;
    if (kept)
        g_stacks.kept[g_stacks.n++] = s;
    pthread_mutex_unlock(&g_stacks.mu);
    if (!kept)
        munmap(s, EX_STACK_SIZE);
}

/* Start the child of sp sharing our memory until it execs; returns its pid
 * (the exec done or failed: *exec_errno) or -1 with errno. */
static pid_t spawn_shared(const ex_cgroup *cg, const ex_spawn *sp, int log_fd, int null_fd,
                          int *exec_errno)
{
    void *stack = stack_take();
    if (!stack)
        return -1;
    vm_child c = {cg, sp, log_fd, null_fd, 0};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid =
        clone(vm_child_run, (char *)stack + EX_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    stack_give(stack);
    if (pid < 0) {
        errno = e;
        return -1;
    }
    *exec_errno = c.err;
    return pid;
}

/* The rest of ex_sandbox_start for a backend that attaches after exec. */
static orr_status start_shared(const ex_cgroup_ops *ops, ex_sandbox *sb, const ex_spawn *sp,
                               int log_fd, int null_fd, orr_err *err)
{
    sb->started_ms = ex_now_ms();
    int e = 0;
    pid_t pid = spawn_shared(sb->cg, sp, log_fd, null_fd, &e);
    if (pid < 0)
        return orr_err_set(err, ORR_EIO, NULL, "clone: %s", strerror(errno));
    sb->pid = pid;
    sb->exec_errno = e;
    sb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    orr_status s = ops->attach(sb->cg, pid, err);
    if (s != ORR_OK) { /* cannot happen for a backend that only records the leader */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        sb->pid = 0;
    }
    return s;
}

orr_status ex_sandbox_start(const ex_cgroup_ops *ops, const ex_cg_env *env, const char *name,
                            const ex_limits *lim, const ex_spawn *sp, ex_sandbox **out,
                            orr_err *err)
{
    orr_status s = ORR_OK;
    int log_fd = -1, null_fd = -1, go[2] = {-1, -1}, ep[2] = {-1, -1};
    ex_sandbox *sb = orr_xcalloc(1, sizeof *sb);
    sb->pidfd = sb->cancel_fd = -1;

    if ((s = ops->create(env, name, lim, &sb->cg, err)) != ORR_OK)
        goto fail;
    log_fd = open(sp->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (log_fd < 0) {
        s = orr_err_set(err, ORR_EIO, sp->log_path, "cannot open log: %s", strerror(errno));
        goto fail;
    }
    null_fd = open(sp->stdin_path ? sp->stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 && sp->stdin_path) {
        s = orr_err_set(err, ORR_EIO, sp->stdin_path, "cannot open: %s", strerror(errno));
        goto fail;
    }
    if (null_fd >= 0 && ops->attach_after_exec) {
        sb->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (sb->cancel_fd < 0)
            s = orr_err_set(err, ORR_EIO, NULL, "eventfd: %s", strerror(errno));
        else
            s = start_shared(ops, sb, sp, log_fd, null_fd, err);
        if (s != ORR_OK)
            goto fail;
        close(log_fd);
        close(null_fd);
        *out = sb;
        return ORR_OK;
    }
    if (null_fd < 0 || pipe2(go, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
        s = orr_err_set(err, ORR_EIO, NULL, "cannot create pipes: %s", strerror(errno));
        goto fail;
    }
    sb->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sb->cancel_fd < 0) {
        s = orr_err_set(err, ORR_EIO, NULL, "eventfd: %s", strerror(errno));
        goto fail;
    }

    sb->started_ms = ex_now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        s = orr_err_set(err, ORR_EIO, NULL, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0)
        child_run(sb->cg, sp, go[0], ep[1], log_fd, null_fd);

    sb->pid = pid;
    close(go[0]);
    close(ep[1]);
    go[0] = ep[1] = -1;
    sb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    orr_err ae;
    if ((s = ops->attach(sb->cg, pid, &ae)) != ORR_OK) {
        *err = ae;
        kill(pid, SIGKILL); /* it has not run anything of the task yet */
        waitpid(pid, NULL, 0);
        sb->pid = 0;
        goto fail;
    }
    if (write(go[1], "g", 1) != 1) {
        s = orr_err_set(err, ORR_EIO, NULL, "cannot start the child: %s", strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        sb->pid = 0;
        goto fail;
    }
    int e = 0;
    ssize_t r;
    while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    if (r == (ssize_t)sizeof e)
        sb->exec_errno = e ? e : EIO;
    close(go[1]);
    close(ep[0]);
    close(log_fd);
    close(null_fd);
    *out = sb;
    return ORR_OK;

fail:
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (ep[i] >= 0)
            close(ep[i]);
    }
    if (log_fd >= 0)
        close(log_fd);
    if (null_fd >= 0)
        close(null_fd);
    ex_sandbox_free(sb);
    return s;
}

pid_t ex_sandbox_pid(const ex_sandbox *sb)
{
    return sb->pid;
}

void ex_sandbox_cancel(ex_sandbox *sb)
{
    uint64_t one = 1;
    ssize_t w = write(sb->cancel_fd, &one, sizeof one);
    (void)w;
}

/* Wait for the main process, polling its pidfd and the cancel eventfd.
 * Returns EX_END_EXITED once it has exited (not yet reaped). */
static ex_end wait_main(ex_sandbox *sb, int64_t deadline_ms)
{
    for (;;) {
        int timeout = -1;
        if (deadline_ms > 0) {
            int64_t left = deadline_ms - ex_now_ms();
            if (left <= 0)
                return EX_END_TIMEOUT;
            timeout = left > 1000 ? 1000 : (int)left;
        }
        if (sb->pidfd < 0 && (timeout < 0 || timeout > 100))
            timeout = 100; /* no pidfd: poll waitid below */
        struct pollfd pf[2] = {{sb->cancel_fd, POLLIN, 0}, {sb->pidfd, POLLIN, 0}};
        int n = poll(pf, sb->pidfd >= 0 ? 2 : 1, timeout);
        if (n < 0 && errno != EINTR)
            ex_sleep_ms(10);
        if (n > 0 && (pf[0].revents & POLLIN))
            return EX_END_CANCELLED;
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)sb->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
            return EX_END_EXITED;
    }
}

int ex_sandbox_hold(ex_sandbox *sb, int64_t until_ms)
{
    /* wait_main's 0 is "no deadline" */
    if (wait_main(sb, until_ms > 0 ? until_ms : 1) != EX_END_TIMEOUT)
        return 1;
    siginfo_t si; /* ended just as the time came: an end, not a long run */
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)sb->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid;
}

void ex_sandbox_kill_now(ex_sandbox *sb)
{
    ex_sandbox_cancel(sb);
    sb->cg->ops->signal(sb->cg);
}

void ex_sandbox_wait(ex_sandbox *sb, int64_t deadline_ms, ex_result *res)
{
    memset(res, 0, sizeof *res);
    res->exec_errno = sb->exec_errno;
    res->how = wait_main(sb, deadline_ms);
    const ex_cgroup_ops *ops = sb->cg->ops;
    if (res->how != EX_END_EXITED)
        ops->kill(sb->cg, 0);
    int st = 0;
    while (waitpid(sb->pid, &st, 0) < 0 && errno == EINTR) {
    }
    res->ran_ms = ex_now_ms() - sb->started_ms;
    if (WIFEXITED(st)) {
        res->exited = 1;
        res->exit_code = WEXITSTATUS(st);
    } else if (WIFSIGNALED(st)) {
        res->term_signal = WTERMSIG(st);
    }
    /* The main process is gone; anything it left behind goes too, counted
     * first when it ended by itself (after a kill the count says nothing). */
    if (res->how == EX_END_EXITED) {
        int n = ops->count(sb->cg);
        res->leftover = n > 0 ? n : 0;
    }
    res->left = ops->kill(sb->cg, 5000);
    res->oom = ops->oom_killed(sb->cg);
    res->pids_limited = ops->pids_limited(sb->cg);
}

void ex_sandbox_free(ex_sandbox *sb)
{
    if (!sb)
        return;
    if (sb->cg)
        sb->cg->ops->destroy(sb->cg);
    if (sb->pidfd >= 0)
        close(sb->pidfd);
    if (sb->cancel_fd >= 0)
        close(sb->cancel_fd);
    free(sb);
}

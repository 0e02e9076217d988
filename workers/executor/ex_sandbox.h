/*
 * ex_sandbox.h - run one attempt's process in a sandbox and wait for it.
 *
 * The child gets: its own session and process group (setsid), membership of
 * the attempt's group (cgroup or rlimits, see ex_cgroup.h) before it runs a
 * single instruction of the task, the run_as user (setgroups/setgid/setuid),
 * a private working directory, stdin from /dev/null (or sp->stdin_path,
 * opened before the switch of user), stdout and stderr
 * appended to the attempt's log file, no other inherited descriptor, a
 * default signal mask and dispositions, and the environment it was given.
 *
 * Call order: ex_sandbox_start -> ex_sandbox_wait (once; blocks) ->
 * ex_sandbox_free. ex_sandbox_cancel may be called from any thread at any
 * time between start and free. When ex_sandbox_wait returns, the whole group
 * has been killed (no process of the attempt is left, res->left says
 * otherwise) and the main process reaped.
 */
#ifndef EX_SANDBOX_H
#define EX_SANDBOX_H

#include <stdint.h>
#include <sys/types.h>

#include "ex_cgroup.h"
#include "orr_status.h"

typedef struct ex_spawn {
    char *const *argv;      /* argv[0]: a path (no PATH search happens here) */
    char *const *envp;      /* the complete environment */
    const char *cwd;        /* working directory (must exist) */
    const char *log_path;   /* stdout + stderr appended here (created 0640) */
    const char *stdin_path; /* NULL: /dev/null; else opened by executord and given
                             * as stdin, so the task reads a file it may not open */
    int drop;               /* 1: switch to uid/gid (needs root) */
    uid_t uid;
    gid_t gid;
} ex_spawn;

typedef enum ex_end {
    EX_END_EXITED = 0, /* the main process ended by itself */
    EX_END_TIMEOUT,    /* the deadline passed; the group was killed */
    EX_END_CANCELLED,  /* ex_sandbox_cancel(); the group was killed */
} ex_end;

typedef struct ex_result {
    ex_end how;
    int exited; /* 1: exit_code is valid; 0: term_signal is */
    int exit_code;
    int term_signal;
    int oom;          /* the memory limit killed a member */
    int exec_errno;   /* != 0: the program could not be executed (errno of execve) */
    int left;         /* members still alive after the final kill (0 expected;
                       * -1: could not be counted) */
    int leftover;     /* the main process ended by itself while this many members
                       * it started were still running: killed then */
    int pids_limited; /* a fork was refused for the pids limit */
    int64_t ran_ms;   /* wall time from start to the end of the main process */
} ex_result;

typedef struct ex_sandbox ex_sandbox;

/* Create the group <name> (ops/env/lim), fork, put the child in the group and
 * let it exec sp->argv. On ORR_OK *out runs; free it with ex_sandbox_free()
 * after ex_sandbox_wait(). On failure nothing is left running and err names
 * what failed (a cgroup file, the log file, fork). Program-not-found is not a
 * start failure: it comes back as res->exec_errno. */
orr_status ex_sandbox_start(const ex_cgroup_ops *ops, const ex_cg_env *env, const char *name,
                            const ex_limits *lim, const ex_spawn *sp, ex_sandbox **out,
                            orr_err *err);

/* The main process id (also the process group id). */
pid_t ex_sandbox_pid(const ex_sandbox *sb);

/* Ask ex_sandbox_wait to kill the attempt now. Thread-safe, idempotent. */
void ex_sandbox_cancel(ex_sandbox *sb);

/* Block until the main process ends, a cancel arrives or until_ms passes
 * (ex_now_ms() clock), without killing or reaping anything: 0 when until_ms
 * passed with the main process still running, 1 otherwise (ex_sandbox_wait
 * then finds the end or the cancel at once). Called any number of times
 * before ex_sandbox_wait, by the thread that will call it. */
int ex_sandbox_hold(ex_sandbox *sb, int64_t until_ms);

/* SIGKILL the group once, now, from any thread: no wait, no count (cheap
 * enough under a lock). Only while the caller knows the waiting thread is
 * not inside ex_sandbox_wait (the main process is not reaped yet, so its
 * group id is still its own); ex_sandbox_wait later finds the end as a
 * cancel and verifies the kill. */
void ex_sandbox_kill_now(ex_sandbox *sb);

/* Block until the main process ends, deadline_ms passes (ex_now_ms() clock;
 * 0 = none) or a cancel arrives; then kill the whole group (verifying it is
 * empty) and fill *res. When the main process ended by itself, res->leftover
 * counts the members found after it was reaped (they are killed all the
 * same). Call once. */
void ex_sandbox_wait(ex_sandbox *sb, int64_t deadline_ms, ex_result *res);

/* Remove the group and free. NULL is a no-op. */
void ex_sandbox_free(ex_sandbox *sb);

#endif

/*
 * ex_cgroup.h - resource containers for sandboxed attempts, as an ops table.
 *
 * Three interchangeable backends share one interface (ex_cgroup_ops):
 *   v2      a cgroup under a cgroup2 mount: memory.max, cpu.max, pids.max,
 *           cgroup.kill, memory.events "oom_kill"
 *   v1      one cgroup per v1 controller (memory, pids, cpu, freezer):
 *           memory.limit_in_bytes, cpu.cfs_quota_us, pids.max, a freeze +
 *           SIGKILL loop over cgroup.procs, memory.oom_control "oom_kill"
 *   rlimit  no cgroup at all: RLIMIT_AS / RLIMIT_NPROC set in the child and
 *           the process group killed; the fallback when cgroups are not
 *           writable (it cannot tell an OOM kill, nor hold a daemonised
 *           grandchild that left the group).
 * ex_cgroup_pick() probes them in that order (or takes the one configured)
 * once at start.
 *
 * Layout: every backend puts an attempt's group at
 *   <controller root>/<parent>/<executor id>/<name>
 * so ex_cgroup_ops.sweep() can find what a previous life of the same executor
 * left behind and end it.
 *
 * Call order for one attempt:
 *   create -> (fork) attach(child pid) -> child_setup (in the child, before
 *   exec) -> ... -> kill -> destroy.
 * kill may be called any number of times; destroy kills whatever is left.
 * All functions are called from one thread per attempt, except signal
 * (any thread, while that thread has not reaped the main process);
 * child_setup runs between fork and exec and is async-signal-safe.
 */
#ifndef EX_CGROUP_H
#define EX_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "orr_status.h"

/* Limits of one attempt (the slots it takes times the per-slot limits).
 * 0 in any field = no limit of that kind. */
typedef struct ex_limits {
    int64_t memory_bytes;
    int cpu_percent; /* 100 = one full core */
    int pids;
} ex_limits;

/* Where the backends live. Strings are borrowed for the whole run. */
typedef struct ex_cg_env {
    const char *root;     /* "/sys/fs/cgroup" (v1 controllers below it, or a cgroup2 mount) */
    const char *v2_mount; /* cgroup2 mount to try: "" = root itself if it is cgroup2, then
                             root/unified */
    const char *parent;   /* "orrery" */
    const char *executor; /* executor id; a path component */
} ex_cg_env;

#define EX_CG_PATH_MAX 512
#define EX_CG_V1_MAX   4

/* One attempt's group. Fields are the backends' business. */
typedef struct ex_cgroup {
    const struct ex_cgroup_ops *ops;
    ex_limits lim;
    pid_t leader; /* the attempt's main process (also its process group) */
    int n_dirs;
    char dirs[EX_CG_V1_MAX][EX_CG_PATH_MAX]; /* v2: dirs[0]; v1: one per controller */
    char procs_dir[EX_CG_PATH_MAX];          /* the dir whose cgroup.procs lists members */
    char memory_dir[EX_CG_PATH_MAX];         /* "" when there is no memory controller */
    char freezer_dir[EX_CG_PATH_MAX];        /* v1 only; "" when absent */
} ex_cgroup;

typedef struct ex_cgroup_ops {
    const char *name; /* "v2", "v1", "rlimit" */
    /* 1 when attach only records the leader, so it may come after the
     * child's exec: the sandbox then starts the child without copying the
     * daemon's address space (ex_sandbox.c, "Spawning without a copy"). */
    int attach_after_exec;
    /* ORR_OK if this backend can work on this machine (creates and removes a
     * probe group); otherwise a message saying why not. */
    orr_status (*probe)(const ex_cg_env *env, orr_err *err);
    /* Create the group <name> with lim. *out is malloc'ed; free with destroy.
     * ORR_EIO naming the file that could not be written. */
    orr_status (*create)(const ex_cg_env *env, const char *name, const ex_limits *lim,
                         ex_cgroup **out, orr_err *err);
    /* Move pid into the group (called by the parent before the child execs). */
    orr_status (*attach)(ex_cgroup *cg, pid_t pid, orr_err *err);
    /* In the child after fork, before exec. Async-signal-safe. */
    void (*child_setup)(const ex_cgroup *cg);
    /* SIGKILL every member, waiting up to wait_ms for the group to empty.
     * Returns the number of members still present (0 = empty), -1 when it
     * cannot be told. */
    int (*kill)(ex_cgroup *cg, int wait_ms);
    /* SIGKILL every member once, now: no wait, no count, no freeze (a
     * cancel from another thread; kill then does the rounds and verifies). */
    void (*signal)(const ex_cgroup *cg);
    /* Members now (-1 if unknown). */
    int (*count)(const ex_cgroup *cg);
    /* 1 if the kernel killed a member for exceeding the memory limit. */
    int (*oom_killed)(const ex_cgroup *cg);
    /* 1 if a fork in the group was refused for the pids limit (v2, v1:
     * "max" of pids.events); the rlimit backend cannot tell (0). */
    int (*pids_limited)(const ex_cgroup *cg);
    /* Kill what is left, remove the group, free cg. NULL is a no-op. */
    void (*destroy)(ex_cgroup *cg);
    /* End and remove every group under <parent>/<executor> (leftovers of a
     * previous life). Returns how many groups were removed. */
    int (*sweep)(const ex_cg_env *env);
} ex_cgroup_ops;

extern const ex_cgroup_ops ex_cgroup_v2_ops;
extern const ex_cgroup_ops ex_cgroup_v1_ops;
extern const ex_cgroup_ops ex_cgroup_rlimit_ops;

/* Choose a backend. mode: "auto" (v2, then v1, then rlimit), "v2", "v1" or
 * "rlimit". With auto, the reasons the cgroup backends were refused go to
 * *why (may be NULL) so the daemon can say so at start. A forced mode that
 * does not probe ORR_OK is an error naming executor.cgroup. Never NULL on
 * ORR_OK. */
orr_status ex_cgroup_pick(const ex_cg_env *env, const char *mode, const ex_cgroup_ops **out,
                          char *why, size_t why_size, orr_err *err);

/* Helpers shared by the backends (ex_cgroup.c). */
/* Write s to dir/file. ORR_EIO naming the path on failure. */
orr_status ex_cg_write(const char *dir, const char *file, const char *s, orr_err *err);
/* Read dir/file into buf (NUL-terminated). -1 on failure, else bytes read. */
ssize_t ex_cg_read(const char *dir, const char *file, char *buf, size_t n);
/* Value of "key N" lines in dir/file (memory.events, memory.oom_control);
 * -1 if absent. */
int64_t ex_cg_read_key(const char *dir, const char *file, const char *key);
/* Send sig to every pid listed in dir/cgroup.procs; returns how many were listed. */
int ex_cg_signal_procs(const char *dir, int sig);
/* mkdir -p with mode. ORR_EIO naming the path. */
orr_status ex_cg_mkdirs(const char *path, mode_t mode, orr_err *err);
/* Now in milliseconds (monotonic). */
int64_t ex_now_ms(void);
/* Sleep ms milliseconds. */
void ex_sleep_ms(int ms);

/* ---- shared by the v1 and v2 backends (ex_cgroup_fs.c) ---------------- */

/* The limit files, which differ by cgroup version. */
typedef struct ex_cg_files {
    const char *memory_max;       /* "memory.max" / "memory.limit_in_bytes" */
    const char *swap_max;         /* written if present: "memory.swap.max" / "memory.memsw..." */
    const char *swap_value;       /* "0", or NULL for the memory limit (v1 memsw = memory + swap) */
    const char *cpu_period;       /* "cpu.cfs_period_us" (set to 100000), NULL when none (v2) */
    const char *cpu_quota;        /* "cpu.max" / "cpu.cfs_quota_us" */
    const char *cpu_quota_suffix; /* after the quota in microseconds: " 100000" (v2) or "" */
} ex_cg_files;

/* A new group record with ops and lim and no folder yet (aborts when out of memory). */
ex_cgroup *ex_cg_new(const ex_cgroup_ops *ops, const ex_limits *lim);
/* Make base/name (an existing one is reused) and add it to cg->dirs.
 * ORR_EIO naming the folder. */
orr_status ex_cg_add_dir(ex_cgroup *cg, const char *base, const char *name, orr_err *err);
/* Write cg->lim: memory into cg->memory_dir, pids into cg->procs_dir, cpu
 * into cpu_dir ("" or NULL: no cpu limit). ORR_EIO naming the file. */
orr_status ex_cg_set_limits(const ex_cgroup *cg, const ex_cg_files *f, const char *cpu_dir,
                            orr_err *err);
/* Remove cg's folders (which must hold no process) and free cg. */
void ex_cg_discard(ex_cgroup *cg);
/* The probe of a backend: create a group with small limits, discard it. */
orr_status ex_cg_probe(const ex_cgroup_ops *ops, const ex_cg_env *env, orr_err *err);
/* Members listed in dir/cgroup.procs; -1 if it cannot be read. */
int ex_cg_count_procs(const char *dir);
/* Kill in rounds: round(procs_dir, arg) (NULL: nothing), then wait up to
 * settle_ms for procs_dir to empty; again until it is empty or wait_ms
 * passed. Returns the members left (0 = empty). */
int ex_cg_kill_rounds(const char *procs_dir, int wait_ms, int settle_ms,
                      void (*round)(const char *procs_dir, const void *arg), const void *arg);
/* rmdir, retried for up to a second while the kernel still says EBUSY. */
void ex_cg_rmdir(const char *dir);
/* fn(base/<child>) for every child folder of base; returns how many. */
int ex_cg_for_each_group(const char *base, void (*fn)(const char *dir, void *arg), void *arg);
/* ex_cgroup_ops entries that are the same for v1 and v2. destroy kills
 * with cg->ops->kill, then removes every folder (retrying EBUSY). */
orr_status ex_cg_attach(ex_cgroup *cg, pid_t pid, orr_err *err);
void ex_cg_child_setup(const ex_cgroup *cg);
int ex_cg_count(const ex_cgroup *cg);
int ex_cg_pids_limited(const ex_cgroup *cg);
void ex_cg_destroy(ex_cgroup *cg);

#endif

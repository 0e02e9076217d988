/*
 * test_ex_sandbox.c - the executor's sandbox on the real kernel: cgroup
 * backend chosen as executord would (v2, else v1), plus the rlimit fallback.
 *
 * Needs root and writable cgroups (the machines that run executord have
 * them); a test that needs a cgroup backend fails when none is usable, so a
 * broken machine shows up red, not as a silent skip.
 *
 * The test binary doubles as the memory hog: run with argv[1] == "hog" it
 * allocates and touches memory until killed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_sandbox.h"

static char g_dir[256];
static char g_self[512];
static ex_cg_env g_env;
static char g_exec_id[64];
static const ex_cgroup_ops *g_cg; /* the cgroup backend, NULL if none works */
static int g_seq;

static char *const g_envp[] = {"PATH=/usr/bin:/bin", "LANG=C", NULL};

static char *read_file(const char *path)
{
    static char buf[65536];
    buf[0] = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return buf;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

typedef struct run {
    ex_sandbox *sb;
    ex_result res;
    char log[400];
} run;

/* Start argv under ops with lim; returns the sandbox (asserts on failure). */
static void start(run *r, const ex_cgroup_ops *ops, const ex_limits *lim, char *const *argv)
{
    char name[64];
    snprintf(name, sizeof name, "t%d", ++g_seq);
    snprintf(r->log, sizeof r->log, "%s/%s.log", g_dir, name);
    ex_spawn sp = {.argv = argv, .envp = g_envp, .cwd = g_dir, .log_path = r->log};
    orr_err err;
    orr_err_clear(&err);
    orr_status s = ex_sandbox_start(ops, &g_env, name, lim, &sp, &r->sb, &err);
    if (s != ORR_OK)
        fail_msg("start: %s %s: %s", orr_status_name(s), err.field, err.msg);
}

static void run_to_end(run *r, const ex_cgroup_ops *ops, const ex_limits *lim, char *const *argv,
                       int timeout_ms)
{
    start(r, ops, lim, argv);
    ex_sandbox_wait(r->sb, timeout_ms ? ex_now_ms() + timeout_ms : 0, &r->res);
    ex_sandbox_free(r->sb);
    r->sb = NULL;
}

static void need_cgroup(void)
{
    if (!g_cg)
        fail_msg("no cgroup backend is usable on this machine (root and writable cgroups "
                 "are required)");
}

static const ex_limits k_lim = {256 << 20, 100, 128};

static void test_echo_in_cgroup_writes_log(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    char *argv[] = {"/bin/echo", "hello", "sandbox", NULL};
    run_to_end(&r, g_cg, &k_lim, argv, 10000);
    assert_int_equal(r.res.how, EX_END_EXITED);
    assert_int_equal(r.res.exited, 1);
    assert_int_equal(r.res.exit_code, 0);
    assert_int_equal(r.res.exec_errno, 0);
    assert_int_equal(r.res.left, 0);
    assert_int_equal(r.res.oom, 0);
    assert_string_equal(read_file(r.log), "hello sandbox\n");
}

static void test_child_is_in_its_own_group_and_session(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    /* Prints its cgroup membership, session and process group ids. */
    char *argv[] = {"/bin/sh", "-c",
                    "grep -c 'orrery-test/' /proc/self/cgroup; "
                    "ps -o sid=,pgid=,pid= -p $$; ls /proc/self/fd | wc -l",
                    NULL};
    run_to_end(&r, g_cg, &k_lim, argv, 10000);
    assert_int_equal(r.res.exit_code, 0);
    const char *log = read_file(r.log);
    int groups = 0, sid = 0, pgid = 0, pid = 0, nfd = 0;
    assert_int_equal(sscanf(log, "%d %d %d %d %d", &groups, &sid, &pgid, &pid, &nfd), 5);
    assert_true(groups >= 1);
    assert_int_equal(sid, pid); /* setsid: session leader */
    assert_int_equal(pgid, pid);
    /* ls sees 0,1,2 and its own directory fd (plus nothing inherited). */
    assert_true(nfd <= 4);
}

static void test_exit_code_and_missing_program(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    run_to_end(&r, g_cg, &k_lim, argv, 10000);
    assert_int_equal(r.res.exit_code, 3);
    assert_string_equal(read_file(r.log), "out\nerr\n");

    char *missing[] = {"/nonexistent/prog", NULL};
    run_to_end(&r, g_cg, &k_lim, missing, 10000);
    assert_int_equal(r.res.exec_errno, ENOENT);
    assert_int_equal(r.res.exit_code, 127);
}

static void test_timeout_kills_the_tree(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    char *argv[] = {"/bin/sh", "-c", "sleep 60 & sleep 60 & echo started; sleep 60", NULL};
    int64_t t0 = ex_now_ms();
    run_to_end(&r, g_cg, &k_lim, argv, 500);
    int64_t took = ex_now_ms() - t0;
    assert_int_equal(r.res.how, EX_END_TIMEOUT);
    assert_int_equal(r.res.exited, 0);
    assert_int_equal(r.res.term_signal, SIGKILL);
    assert_int_equal(r.res.left, 0);
    assert_true(took >= 450);
    assert_true(took < 5000);
}

typedef struct canceller {
    ex_sandbox *sb;
    int after_ms;
} canceller;

static void *cancel_later(void *arg)
{
    canceller *c = arg;
    ex_sleep_ms(c->after_ms);
    ex_sandbox_cancel(c->sb);
    return NULL;
}

static int pid_alive(int pid)
{
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, st, sizeof st - 1);
    close(fd);
    st[n > 0 ? n : 0] = 0;
    const char *rp = strrchr(st, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z'; /* zombies are dead */
}

static void test_cancel_kills_tree_including_escaped_session(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    /* One child in a new session (escapes the process group), one plain. */
    char *argv[] = {"/bin/sh", "-c", "setsid sleep 61 & echo $!; sleep 62 & echo $!; wait", NULL};
    start(&r, g_cg, &k_lim, argv);
    canceller c = {r.sb, 400};
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &c);
    ex_sandbox_wait(r.sb, ex_now_ms() + 10000, &r.res);
    pthread_join(th, NULL);
    ex_sandbox_free(r.sb);
    assert_int_equal(r.res.how, EX_END_CANCELLED);
    assert_int_equal(r.res.left, 0);
    int p1 = 0, p2 = 0;
    assert_int_equal(sscanf(read_file(r.log), "%d %d", &p1, &p2), 2);
    assert_false(pid_alive(p1));
    assert_false(pid_alive(p2));
}

static void test_main_exit_ends_leftover_background(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    char *argv[] = {"/bin/sh", "-c", "setsid sleep 63 & echo $!; sleep 62 &", NULL};
    run_to_end(&r, g_cg, &k_lim, argv, 10000);
    assert_int_equal(r.res.how, EX_END_EXITED);
    assert_int_equal(r.res.exit_code, 0);
    assert_int_equal(r.res.left, 0);
    assert_int_equal(r.res.leftover, 2); /* both sleeps, counted then killed */
    assert_int_equal(r.res.pids_limited, 0);
    int p = 0;
    assert_int_equal(sscanf(read_file(r.log), "%d", &p), 1);
    assert_false(pid_alive(p));

    /* A main process that waits for its children leaves nothing. */
    char *waits[] = {"/bin/sh", "-c", "sleep 0.1 & wait", NULL};
    run_to_end(&r, g_cg, &k_lim, waits, 10000);
    assert_int_equal(r.res.exit_code, 0);
    assert_int_equal(r.res.leftover, 0);
}

static void test_pids_limit_is_reported(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    ex_limits lim = {256 << 20, 100, 8};
    char *argv[] = {"/bin/sh", "-c",
                    "i=0; while [ $i -lt 20 ]; do sleep 66 & i=$((i+1)); done; echo done", NULL};
    run_to_end(&r, g_cg, &lim, argv, 10000);
    assert_int_equal(r.res.how, EX_END_EXITED);
    assert_int_equal(r.res.pids_limited, 1);
    assert_true(r.res.leftover >= 1 && r.res.leftover <= 7);
    assert_int_equal(r.res.left, 0);
    assert_null(strstr(read_file(r.log), "done"));
}

static void test_memory_hog_is_oom_killed(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    ex_limits lim = {48 << 20, 100, 64};
    char *argv[] = {g_self, "hog", NULL};
    run_to_end(&r, g_cg, &lim, argv, 30000);
    assert_int_equal(r.res.how, EX_END_EXITED);
    assert_int_equal(r.res.exited, 0);
    assert_int_equal(r.res.term_signal, SIGKILL);
    assert_int_equal(r.res.oom, 1);
    assert_int_equal(r.res.left, 0);
    assert_null(strstr(read_file(r.log), "survived"));
}

static void test_fork_bomb_is_contained(void **state)
{
    (void)state;
    need_cgroup();
    run r;
    ex_limits lim = {256 << 20, 100, 40};
    char *argv[] = {"/bin/bash", "-c", "b(){ b | b & }; b; sleep 30", NULL};
    int64_t t0 = ex_now_ms();
    run_to_end(&r, g_cg, &lim, argv, 2000);
    assert_int_equal(r.res.how, EX_END_TIMEOUT);
    assert_int_equal(r.res.left, 0);
    assert_true(ex_now_ms() - t0 < 15000);
    /* bash complains that fork failed: the pids limit held. */
    assert_non_null(strstr(read_file(r.log), "fork"));
}

static void test_drop_to_unprivileged_user(void **state)
{
    (void)state;
    need_cgroup();
    if (geteuid() != 0)
        fail_msg("this test needs root (it switches to uid 65534)");
    char wd[300];
    snprintf(wd, sizeof wd, "%s/home", g_dir);
    mkdir(wd, 0700);
    assert_int_equal(chown(wd, 65534, 65534), 0);
    chmod(g_dir, 0711);
    char log[400];
    snprintf(log, sizeof log, "%s/drop.log", g_dir);
    char *argv[] = {"/bin/sh", "-c",
                    "id -u; id -g; id -G; pwd; touch /root/x 2>/dev/null || "
                    "echo denied",
                    NULL};
    ex_spawn sp = {.argv = argv,
                   .envp = g_envp,
                   .cwd = wd,
                   .log_path = log,
                   .drop = 1,
                   .uid = 65534,
                   .gid = 65534};
    ex_sandbox *sb = NULL;
    orr_err err;
    assert_int_equal(ex_sandbox_start(g_cg, &g_env, "drop", &k_lim, &sp, &sb, &err), ORR_OK);
    ex_result res;
    ex_sandbox_wait(sb, ex_now_ms() + 10000, &res);
    ex_sandbox_free(sb);
    assert_int_equal(res.exit_code, 0);
    char expect[400];
    snprintf(expect, sizeof expect, "65534\n65534\n65534\n%s\ndenied\n", wd);
    assert_string_equal(read_file(log), expect);
}

static void test_rlimit_fallback(void **state)
{
    (void)state;
    const ex_cgroup_ops *rl = &ex_cgroup_rlimit_ops;
    orr_err err;
    assert_int_equal(rl->probe(&g_env, &err), ORR_OK);
    run r;
    char *echo[] = {"/bin/echo", "plain", NULL};
    run_to_end(&r, rl, &k_lim, echo, 10000);
    assert_int_equal(r.res.exit_code, 0);
    assert_string_equal(read_file(r.log), "plain\n");

    /* Timeout ends the process group. */
    char *tree[] = {"/bin/sh", "-c", "sleep 64 & echo $!; sleep 65", NULL};
    run_to_end(&r, rl, &k_lim, tree, 400);
    assert_int_equal(r.res.how, EX_END_TIMEOUT);
    int p = 0;
    assert_int_equal(sscanf(read_file(r.log), "%d", &p), 1);
    assert_false(pid_alive(p));
    assert_int_equal(r.res.left, 0);

    /* What the main process leaves in its process group is counted, killed. */
    char *left[] = {"/bin/sh", "-c", "sleep 67 & echo $!; sleep 67 &", NULL};
    run_to_end(&r, rl, &k_lim, left, 10000);
    assert_int_equal(r.res.how, EX_END_EXITED);
    assert_int_equal(r.res.leftover, 2);
    assert_int_equal(r.res.left, 0);
    assert_int_equal(sscanf(read_file(r.log), "%d", &p), 1);
    assert_false(pid_alive(p));

    /* RLIMIT_AS turns a large allocation into a failure. */
    ex_limits small = {256 << 20, 0, 0};
    char *hog[] = {"/usr/bin/python3", "-c", "b = bytearray(1 << 30); print('survived')", NULL};
    run_to_end(&r, rl, &small, hog, 20000);
    assert_int_equal(r.res.how, EX_END_EXITED);
    assert_int_not_equal(r.res.exit_code, 0);
    assert_non_null(strstr(read_file(r.log), "MemoryError"));
}

static void test_pick_refuses_unknown_mode(void **state)
{
    (void)state;
    const ex_cgroup_ops *ops = NULL;
    orr_err err;
    orr_err_clear(&err);
    assert_int_equal(ex_cgroup_pick(&g_env, "v7", &ops, NULL, 0, &err), ORR_EINVAL);
    assert_string_equal(err.field, "executor.cgroup");
    assert_int_equal(ex_cgroup_pick(&g_env, "rlimit", &ops, NULL, 0, &err), ORR_OK);
    assert_ptr_equal(ops, &ex_cgroup_rlimit_ops);
    ex_cg_env bad = g_env;
    bad.root = "/nonexistent-cgroup-root";
    bad.v2_mount = "";
    assert_int_equal(ex_cgroup_pick(&bad, "v1", &ops, NULL, 0, &err), ORR_EINVAL);
    char why[512];
    assert_int_equal(ex_cgroup_pick(&bad, "auto", &ops, why, sizeof why, &err), ORR_OK);
    assert_ptr_equal(ops, &ex_cgroup_rlimit_ops);
    assert_non_null(strstr(why, "v1:"));
}

static int hog(void)
{
    size_t total = 0;
    for (int i = 0; i < 2048; i++) { /* up to 2 GiB, 1 MiB at a time */
        char *p = malloc(1 << 20);
        if (!p)
            return 2;
        memset(p, 0x5a, 1 << 20);
        total += 1 << 20;
    }
    printf("survived %zu\n", total);
    return 0;
}

static int setup_all(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/orr-ex-sbx-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_exec_id, sizeof g_exec_id, "ut-%d", (int)getpid());
    g_env = (ex_cg_env){"/sys/fs/cgroup", "", "orrery-test", g_exec_id};
    char why[1024];
    orr_err err;
    const ex_cgroup_ops *ops = NULL;
    if (ex_cgroup_pick(&g_env, "auto", &ops, why, sizeof why, &err) == ORR_OK &&
        ops != &ex_cgroup_rlimit_ops)
        g_cg = ops;
    fprintf(stderr, "# sandbox backend: %s%s%s\n", g_cg ? g_cg->name : "none", why[0] ? "; " : "",
            why);
    return 0;
}

static int teardown_all(void **state)
{
    (void)state;
    if (g_cg) {
        g_cg->sweep(&g_env);
        char path[512];
        const char *ctls[] = {"memory", "pids", "cpu", "freezer", "unified"};
        for (size_t i = 0; i < 5; i++) {
            snprintf(path, sizeof path, "/sys/fs/cgroup/%s/orrery-test/%s", ctls[i], g_exec_id);
            rmdir(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup/%s/orrery-test", ctls[i]);
            rmdir(path); /* fails while another run uses it: fine */
        }
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The rlimit backend starts its child without copying the daemon (clone
 * with a shared address space until exec): the child still gets its own
 * session and process group, the limits, no inherited descriptor, the
 * its folder, standard input and default signal dispositions; an exec failure still
 * comes back as exec_errno, and a cancel still ends the group. */
static void test_rlimit_spawn_without_copy(void **state)
{
    (void)state;
    const ex_cgroup_ops *rl = &ex_cgroup_rlimit_ops;
    assert_int_equal(rl->attach_after_exec, 1);
    int stray = open("/dev/null", O_RDONLY); /* not close-on-exec: must not reach the task */
    assert_true(stray > 2);
    run r;
    char *argv[] = {"/bin/sh", "-c",
                    "ps -o sid=,pgid=,pid= -p $$; ulimit -v; ulimit -p; ls /proc/self/fd | wc -l; "
                    "pwd; cat",
                    NULL};
    char in[400];
    snprintf(in, sizeof in, "%s/stdin.txt", g_dir);
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    fputs("from stdin\n", f);
    fclose(f);
    char name[64], log[400];
    snprintf(name, sizeof name, "t%d", ++g_seq);
    snprintf(log, sizeof log, "%s/%s.log", g_dir, name);
    ex_spawn sp = {.argv = argv, .envp = g_envp, .cwd = "/", .log_path = log, .stdin_path = in};
    ex_sandbox *sb = NULL;
    orr_err err;
    assert_int_equal(ex_sandbox_start(rl, &g_env, name, &k_lim, &sp, &sb, &err), ORR_OK);
    ex_result res;
    ex_sandbox_wait(sb, ex_now_ms() + 10000, &res);
    ex_sandbox_free(sb);
    close(stray);
    assert_int_equal(res.how, EX_END_EXITED);
    assert_int_equal(res.exit_code, 0);
    assert_int_equal(res.exec_errno, 0);
    int sid = 0, pgid = 0, pid = 0, nfd = 0;
    long vm = 0, nproc = 0;
    char cwd[64] = "", line[64] = "";
    const char *out = read_file(log);
    assert_int_equal(sscanf(out, "%d %d %d %ld %ld %d %63s %63[^\n]", &sid, &pgid, &pid, &vm,
                            &nproc, &nfd, cwd, line),
                     8);
    assert_int_equal(sid, pid);
    assert_int_equal(pgid, pid);
    assert_int_equal(vm, (256 << 20) / 1024); /* ulimit -v is in KiB */
    assert_int_equal(nproc, 128);
    assert_true(nfd <= 4); /* 0, 1, 2 and ls's own directory */
    assert_string_equal(cwd, "/");
    assert_string_equal(line, "from stdin");

    /* A signal this process ignores is back to its default in the task. */
    signal(SIGUSR1, SIG_IGN);
    char *usr1[] = {"/bin/sh", "-c", "kill -USR1 $$; echo survived", NULL};
    run_to_end(&r, rl, &k_lim, usr1, 10000);
    signal(SIGUSR1, SIG_DFL);
    assert_int_equal(r.res.exited, 0);
    assert_int_equal(r.res.term_signal, SIGUSR1);

    char *missing[] = {"/nonexistent/prog", NULL};
    run_to_end(&r, rl, &k_lim, missing, 10000);
    assert_int_equal(r.res.exec_errno, ENOENT);
    assert_int_equal(r.res.exit_code, 127);

    /* The unprivileged user, groups included; this process keeps its own. */
    if (geteuid() == 0) {
        char *ids[] = {"/bin/sh", "-c", "id -u; id -g; id -G", NULL};
        chmod(g_dir, 0711);
        sp = (ex_spawn){.argv = ids,
                        .envp = g_envp,
                        .cwd = "/",
                        .log_path = log,
                        .drop = 1,
                        .uid = 65534,
                        .gid = 65534};
        unlink(log);
        assert_int_equal(ex_sandbox_start(rl, &g_env, "ids", &k_lim, &sp, &sb, &err), ORR_OK);
        ex_sandbox_wait(sb, ex_now_ms() + 10000, &res);
        ex_sandbox_free(sb);
        assert_int_equal(res.exit_code, 0);
        assert_string_equal(read_file(log), "65534\n65534\n65534\n");
        assert_int_equal(geteuid(), 0);
        assert_int_equal(getegid(), 0);
    }

    /* A missing folder fails before the exec, reported the same way. */
    char *echo[] = {"/bin/echo", "never", NULL};
    sp = (ex_spawn){.argv = echo, .envp = g_envp, .cwd = "/nonexistent-dir", .log_path = log};
    assert_int_equal(ex_sandbox_start(rl, &g_env, "nodir", &k_lim, &sp, &sb, &err), ORR_OK);
    ex_sandbox_wait(sb, ex_now_ms() + 10000, &res);
    ex_sandbox_free(sb);
    assert_int_equal(res.exec_errno, ENOENT);
    assert_int_equal(res.exit_code, 127);

    /* Cancel ends the process group. */
    char *tree[] = {"/bin/sh", "-c", "sleep 71 & echo $!; sleep 72", NULL};
    start(&r, rl, &k_lim, tree);
    int p = 0;
    for (int i = 0; i < 500 && sscanf(read_file(r.log), "%d", &p) != 1; i++)
        usleep(10000);
    assert_true(p > 0);
    ex_sandbox_cancel(r.sb);
    ex_sandbox_wait(r.sb, ex_now_ms() + 10000, &r.res);
    ex_sandbox_free(r.sb);
    assert_int_equal(r.res.how, EX_END_CANCELLED);
    assert_int_equal(r.res.left, 0);
    assert_false(pid_alive(p));
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "hog") == 0)
        return hog();
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0)
        return 1;
    g_self[n] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick_refuses_unknown_mode),
        cmocka_unit_test(test_echo_in_cgroup_writes_log),
        cmocka_unit_test(test_child_is_in_its_own_group_and_session),
        cmocka_unit_test(test_exit_code_and_missing_program),
        cmocka_unit_test(test_timeout_kills_the_tree),
        cmocka_unit_test(test_cancel_kills_tree_including_escaped_session),
        cmocka_unit_test(test_main_exit_ends_leftover_background),
        cmocka_unit_test(test_pids_limit_is_reported),
        cmocka_unit_test(test_memory_hog_is_oom_killed),
        cmocka_unit_test(test_fork_bomb_is_contained),
        cmocka_unit_test(test_drop_to_unprivileged_user),
        cmocka_unit_test(test_rlimit_fallback),
        cmocka_unit_test(test_rlimit_spawn_without_copy),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}

/*
 * test_lib_daemon.c - the daemon skeleton: command dispatch (--help, a
 * command without configuration, an unknown or missing command), the pid
 * file of a serving command (there while it runs, gone after), the port
 * file written whole, stop signals taken by sigwait in the main thread and
 * by the stopper thread, which ends quietly when no signal came.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_daemon.h"

static char g_dir[256];
static char g_pid_path[300], g_port_path[300];

static const orr_cfg_key schema[] = {
    {"t", "pid_file", ORR_CFG_STRING, "", 0, 0, 0, "pid file"},
    {"t", "port_file", ORR_CFG_STRING, "", 0, 0, 0, "port file"},
};

static int ran_serve, ran_tool, saw_blocked;
static char seen_args[256];

static int read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return (int)n;
}

static int cmd_serve(orr_daemon *d, int argc, char **argv)
{
    ran_serve++;
    seen_args[0] = 0;
    for (int i = 0; i < argc; i++)
        snprintf(seen_args + strlen(seen_args), sizeof seen_args - strlen(seen_args), "%s%s",
                 i ? " " : "", argv[i]);
    /* Serving: the stop signals are blocked and the pid file names us. */
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    saw_blocked = sigismember(&cur, SIGTERM) && sigismember(&cur, SIGINT);
    char buf[64];
    assert_true(read_file(g_pid_path, buf, sizeof buf) > 0);
    assert_int_equal(atol(buf), (long)getpid());
    orr_err err;
    assert_int_equal(orr_daemon_port_file(d, &err, "http=%d metrics=%d\n", 8080, 9170), ORR_OK);
    assert_non_null(orr_daemon_config(d));
    assert_string_equal(orr_daemon_definition(d)->prog, "testd");
    return 7;
}

static int cmd_tool(orr_daemon *d, int argc, char **argv)
{
    (void)argv;
    ran_tool++;
    assert_null(orr_daemon_config(d));
    assert_string_equal(orr_daemon_argv0(d), "testd");
    return argc;
}

static const orr_daemon_cmd cmds[] = {
    {"serve", cmd_serve, ORR_DAEMON_SERVES},
    {"tool", cmd_tool, ORR_DAEMON_NO_CONFIG},
};

static const orr_daemon_def def = {"testd", "t", schema, 2, cmds, 2, NULL};

static int run(int argc, const char *const *args)
{
    char *argv[16];
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)args[i];
    argv[argc] = NULL;
    return orr_daemon_main(&def, argc, argv);
}

static void unblock(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void test_dispatch(void **state)
{
    (void)state;
    setenv("ORRERY_T_PID_FILE", g_pid_path, 1);
    setenv("ORRERY_T_PORT_FILE", g_port_path, 1);
    assert_int_equal(run(2, (const char *const[]){"testd", "--help"}), 0);
    assert_int_equal(run(1, (const char *const[]){"testd"}), 2);
    assert_int_equal(run(2, (const char *const[]){"testd", "bogus"}), 2);
    assert_int_equal(ran_serve + ran_tool, 0);
    assert_int_equal(run(3, (const char *const[]){"testd", "tool", "x"}), 2);
    assert_int_equal(ran_tool, 1);
    assert_int_equal(run(4, (const char *const[]){"testd", "serve", "--stream", "s"}), 7);
    assert_int_equal(ran_serve, 1);
    assert_string_equal(seen_args, "serve --stream s");
    assert_true(saw_blocked);
    assert_int_equal(access(g_pid_path, F_OK), -1); /* removed at the end */
    char buf[64];
    assert_true(read_file(g_port_path, buf, sizeof buf) > 0);
    assert_string_equal(buf, "http=8080 metrics=9170\n");
    /* A bad setting is exit 2 before any command runs. */
    assert_int_equal(run(3, (const char *const[]){"testd", "--config", "/nonexistent/x.conf"}), 2);
    unsetenv("ORRERY_T_PID_FILE");
    unsetenv("ORRERY_T_PORT_FILE");
    unblock();
}

static void test_write_file(void **state)
{
    (void)state;
    char path[300], buf[64];
    orr_err err;
    snprintf(path, sizeof path, "%s/w", g_dir);
    assert_int_equal(orr_daemon_write_file(path, "t.f", "one\n", &err), ORR_OK);
    assert_int_equal(orr_daemon_write_file(path, "t.f", "two\n", &err), ORR_OK);
    read_file(path, buf, sizeof buf);
    assert_string_equal(buf, "two\n");
    assert_int_equal(orr_daemon_write_file("/nonexistent/dir/p", "t.f", "x", &err), ORR_EIO);
    assert_string_equal(err.field, "t.f");
}

static void test_wait_stop(void **state)
{
    (void)state;
    orr_daemon_block_signals();
    assert_int_equal(orr_daemon_wait_stop(0), 0); /* nothing pending */
    assert_int_equal(orr_daemon_wait_stop(20), 0);
    raise(SIGTERM); /* pending, since blocked: taken by the wait */
    assert_int_equal(orr_daemon_wait_stop(-1), SIGTERM);
    kill(getpid(), SIGINT);
    assert_int_equal(orr_daemon_wait_stop(1000), SIGINT);
    unblock();
}

static int on_stop_calls, on_stop_sig;

static void on_stop(void *ctx, int sig)
{
    (void)ctx;
    on_stop_calls++;
    on_stop_sig = sig;
}

static void test_stopper(void **state)
{
    (void)state;
    orr_daemon_block_signals();
    orr_daemon_stopper *s = NULL;
    orr_err err;
    volatile sig_atomic_t flag = 0;
    /* No signal: ends quietly. */
    assert_int_equal(orr_daemon_stopper_start(&flag, on_stop, NULL, &s, &err), ORR_OK);
    assert_false(orr_daemon_stopper_fired(s));
    orr_daemon_stopper_end(s);
    assert_int_equal(flag, 0);
    assert_int_equal(on_stop_calls, 0);
    /* A signal to the process reaches the stopper's sigwait. */
    assert_int_equal(orr_daemon_stopper_start(&flag, on_stop, NULL, &s, &err), ORR_OK);
    kill(getpid(), SIGTERM);
    while (!flag) /* set by the stopper thread; the test times out if never */
        usleep(1000);
    orr_daemon_stopper_end(s); /* joins: on_stop has run */
    assert_int_equal(on_stop_calls, 1);
    assert_int_equal(on_stop_sig, SIGTERM);
    orr_daemon_stopper_end(NULL);
    unblock();
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/test_lib_daemon.XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    snprintf(g_pid_path, sizeof g_pid_path, "%s/testd.pid", g_dir);
    snprintf(g_port_path, sizeof g_port_path, "%s/testd.ports", g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_wait_stop),
        cmocka_unit_test(test_stopper),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

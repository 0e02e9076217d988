/* test_lib_sdnotify.c - readiness for systemd: nothing without NOTIFY_SOCKET;
 * with it, READY=1 (with MAINPID and STATUS) and STOPPING=1 land on the
 * datagram socket the test listens on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_sdnotify.h"

static int listen_on(char *path, size_t n)
{
    snprintf(path, n, "/tmp/orr-test-notify-%d.sock", (int)getpid());
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void test_no_socket_is_a_no_op(void **state)
{
    (void)state;
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(orr_sdnotify_ready("x"), 0);
    assert_int_equal(orr_sdnotify_stopping(), 0);
    setenv("NOTIFY_SOCKET", "", 1);
    assert_int_equal(orr_sdnotify_ready(NULL), 0);
    unsetenv("NOTIFY_SOCKET");
}

static void test_ready_and_stopping(void **state)
{
    (void)state;
    char path[128];
    int fd = listen_on(path, sizeof path);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_equal(orr_sdnotify_ready("serving on 7070"), 1);
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "READY=1\n"));
    char pid[64];
    snprintf(pid, sizeof pid, "MAINPID=%ld\n", (long)getpid());
    assert_non_null(strstr(buf, pid));
    assert_non_null(strstr(buf, "STATUS=serving on 7070"));
    assert_int_equal(orr_sdnotify_stopping(), 1);
    n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "STOPPING=1");
    /* Nothing else was sent. */
    assert_true(recv(fd, buf, sizeof buf, MSG_DONTWAIT) < 0);
    close(fd);
    unlink(path);
    /* A socket nobody listens on: a failure the daemon survives. */
    assert_int_equal(orr_sdnotify_ready(NULL), -1);
    unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_socket_is_a_no_op),
        cmocka_unit_test(test_ready_and_stopping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_ex_logcap_start.c - the log follower's thread, when it cannot start,
 * is started by the next capture.
 *
 * The follower is one per process and starts with the first capture, so this
 * test is a process of its own. Its first capture is made with two file
 * descriptors left: one for the log, one for inotify, none for the
 * follower's eventfd. That capture fails naming the follower and gives its
 * log's descriptor back; with descriptors free again, the next capture
 * starts the thread, which indexes a line written while the capture is
 * live (waited for, at most 30 s).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ex_logcap.h"
#include "orr_logidx.h"

#define FILLERS 64

static long idx_records(const char *idx)
{
    struct stat st;
    return stat(idx, &st) == 0 ? (long)(st.st_size / ORR_LOGIDX_REC) : 0;
}

static void test_failed_start_is_tried_again(void **state)
{
    (void)state;
    char dir[64], log1[128], log2[128], idx[160];
    snprintf(dir, sizeof dir, "/tmp/orr-ex-logcap-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(log1, sizeof log1, "%s/1.log", dir);
    snprintf(log2, sizeof log2, "%s/2.log", dir);

    /* every descriptor but two taken */
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = FILLERS;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fill[FILLERS], n = 0;
    while (n < FILLERS && (fill[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        n++;
    assert_true(n >= 3 && n < FILLERS);
    assert_int_equal(errno, EMFILE);
    close(fill[--n]);
    close(fill[--n]);

    ex_logcap *cap = NULL;
    orr_err err;
    orr_err_clear(&err);
    assert_int_equal(ex_logcap_start(log1, &cap, &err), ORR_EIO);
    assert_null(cap);
    assert_non_null(strstr(err.msg, "cannot start the log follower"));
    /* the log's descriptor was given back */
    int again = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(again >= 0);
    close(again);

    while (n > 0)
        close(fill[--n]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);

    assert_int_equal(ex_logcap_start(log2, &cap, &err), ORR_OK);
    int fd = open(log2, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a line\n", 7), 7);
    close(fd);
    ex_log_index_path(idx, sizeof idx, log2);
    struct timespec pause = {0, 2 * 1000 * 1000};
    for (int t = 0; t < 15000 && idx_records(idx) < 1; t++)
        nanosleep(&pause, NULL);
    assert_int_equal(idx_records(idx), 1); /* indexed by the thread, live */
    ex_logcap_finish(cap);

    unlink(idx);
    unlink(log2);
    unlink(log1);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_start_is_tried_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

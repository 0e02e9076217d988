/* test_ex_logcap_start.c - the log follower's thread, when it cannot start,
 * is started by the next capture.
 *
 * The follower is one per process and starts with the first capture, so this
 * test is a process of its own. Its first capture is made with two file
 * descriptors left, and its log's index made beforehand: the log and the
 * index take them, so neither inotify nor the follower's eventfd can be
 * made. That capture fails naming the follower and gives both descriptors
 * back. With descriptors free again the next capture
 * starts the thread, which (without inotify: it was tried once) reads the
 * log every 20 ms and indexes a line written while the capture is live,
 * waited for at most 30 s.
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

#include "ex_cgroup.h" /* ex_now_ms */
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
    char dir[64], log1[128], log2[128], idx1[160], idx[160];
    snprintf(dir, sizeof dir, "/tmp/orr-ex-logcap-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(log1, sizeof log1, "%s/1.log", dir);
    snprintf(log2, sizeof log2, "%s/2.log", dir);
    ex_log_index_path(idx, sizeof idx, log2);
    ex_log_index_path(idx1, sizeof idx1, log1);
    int made = open(idx1, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    assert_true(made >= 0);
    close(made);

    /* Every descriptor but one taken. Nothing is asserted until the
     * descriptors and the limit are back: a failed check must not leave
     * the process without them (the leak checker needs some at exit). */
    struct rlimit old, low;
    int fill[FILLERS], n = 0, got_emfile = 0, back = 0;
    orr_status first = ORR_OK, second = ORR_EIO;
    ex_logcap *cap1 = NULL, *cap2 = NULL;
    orr_err err1, err2;
    orr_err_clear(&err1);
    orr_err_clear(&err2);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = FILLERS;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    while (n < FILLERS && (fill[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        n++;
    got_emfile = n >= 3 && n < FILLERS && errno == EMFILE;
    if (!got_emfile)
        goto restore;
    close(fill[--n]);
    close(fill[--n]);

    first = ex_logcap_start(log1, &cap1, &err1);
    for (int k = 0; k < 2; k++) { /* the log's and the index's descriptors came back */
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            fill[n++] = fd;
        back += fd >= 0;
    }

restore:
    while (n > 0)
        close(fill[--n]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    if (cap1) /* started after all: the check below fails */
        ex_logcap_finish(cap1);
    assert_true(got_emfile);
    assert_int_equal(first, ORR_EIO);
    assert_non_null(strstr(err1.msg, "cannot start the log follower"));
    assert_int_equal(back, 2);

    second = ex_logcap_start(log2, &cap2, &err2);
    assert_int_equal(second, ORR_OK);
    int fd = open(log2, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a line\n", 7), 7);
    close(fd);
    struct timespec pause = {0, 2 * 1000 * 1000};
    int64_t end = ex_now_ms() + 30000;
    while (idx_records(idx) < 1 && ex_now_ms() < end)
        nanosleep(&pause, NULL);
    long live = idx_records(idx); /* indexed by the thread while live */
    ex_logcap_finish(cap2);
    unlink(idx);
    unlink(log2);
    unlink(idx1);
    unlink(log1);
    rmdir(dir);
    assert_int_equal(live, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_start_is_tried_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

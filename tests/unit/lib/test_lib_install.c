/* test_lib_install.c - the install's data folder: a value the user set is
 * kept, a default that exists (the source tree) is kept, else the folder
 * next to the binary's (BIN/../share/orrery/NAME), else the build-time one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_install.h"

static void test_datadir(void **state)
{
    (void)state;
    const char *d = orr_install_datadir();
    assert_true(d[0] == '/');
    assert_non_null(strstr(d, "/share/orrery"));
}

static void test_find_dir(void **state)
{
    (void)state;
    char out[4096];
    /* Set by the user: taken as it is, even when missing. */
    assert_string_equal(orr_install_find_dir("/nonexistent/ui", 0, "static", out, sizeof out),
                        "/nonexistent/ui");
    /* A default that exists relative to the working folder is kept. */
    char tmp[] = "/tmp/orr-test-install-XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char old[4096];
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(tmp), 0);
    assert_int_equal(mkdir("static", 0755), 0);
    assert_string_equal(orr_install_find_dir("static", 1, "static", out, sizeof out), "static");
    /* Missing, and no install next to this test's binary nor at the
     * build-time prefix holding "no-such-folder": the value stays. */
    assert_string_equal(
        orr_install_find_dir("no-such-folder", 1, "no-such-folder", out, sizeof out),
        "no-such-folder");
    /* BIN/../share/orrery/NAME next to the running binary wins. */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    char share[4200], name[64];
    snprintf(name, sizeof name, "orr-test-%d", (int)getpid());
    snprintf(share, sizeof share, "%s/../share/orrery/%s", exe, name);
    char mk[4400];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", share);
    assert_int_equal(system(mk), 0);
    assert_string_equal(orr_install_find_dir("missing", 1, name, out, sizeof out), share);
    rmdir(share);
    snprintf(share, sizeof share, "%s/../share/orrery", exe);
    rmdir(share); /* only when empty */
    assert_int_equal(rmdir("static"), 0);
    assert_int_equal(chdir(old), 0);
    assert_int_equal(rmdir(tmp), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_datadir),
        cmocka_unit_test(test_find_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

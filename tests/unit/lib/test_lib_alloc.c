/* test_lib_alloc.c - orr_x* allocate, copy and, on failure, log one fatal line and abort. */
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_alloc.h"
#include "orr_log.h"

static char path[256];

static const char *read_log(void)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Run fn in a child whose log goes to path; return its wait status. */
static int run_child(void (*fn)(void))
{
    snprintf(path, sizeof(path), "/tmp/orr-test-alloc-%d.log", (int)getpid());
    unlink(path);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        orr_err e;
        if (orr_log_open(ORR_LOG_INFO, path, &e) != ORR_OK)
            _exit(3);
        fn();
        _exit(0); /* not reached when fn aborts */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void assert_aborted_with(int st, const char *line)
{
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGABRT);
    const char *log = read_log();
    assert_non_null(strstr(log, line));
    /* exactly one line */
    assert_ptr_equal(strchr(log, '\n'), log + strlen(log) - 1);
    unlink(path);
}

static void test_allocations(void **state)
{
    (void)state;
    char *p = orr_xmalloc(0);
    char *q = orr_xmalloc(0);
    assert_non_null(p);
    assert_ptr_not_equal(p, q);
    free(q);
    p = orr_xrealloc(p, 100);
    memset(p, 'x', 100);
    p = orr_xrealloc(p, 0);
    assert_non_null(p);
    free(p);

    int *z = orr_xcalloc(16, sizeof(int));
    for (int i = 0; i < 16; i++)
        assert_int_equal(z[i], 0);
    free(z);
    free(orr_xcalloc(0, 8));

    char *s = orr_xstrdup("kepler");
    assert_string_equal(s, "kepler");
    free(s);
    s = orr_xstrndup("halley", 3);
    assert_string_equal(s, "hal");
    free(s);
    s = orr_xstrndup("ab", 10);
    assert_string_equal(s, "ab");
    free(s);

    int x;
    assert_ptr_equal(orr_xcheck(&x), &x);
}

static void child_malloc_fails(void)
{
    orr_alloc_fail_after(0);
    (void)orr_xmalloc(32);
}

static void child_third_fails(void)
{
    orr_alloc_fail_after(2);
    void *a = orr_xmalloc(8);
    char *b = orr_xstrdup("ok");
    if (!a || !b)
        _exit(4);
    (void)orr_xrealloc(a, 77);
}

static void child_calloc_overflow(void)
{
    (void)orr_xcalloc(SIZE_MAX / 2, 3);
}

static void child_xcheck_null(void)
{
    (void)orr_xcheck(NULL);
}

static void test_failure_aborts_with_one_line(void **state)
{
    (void)state;
    assert_aborted_with(run_child(child_malloc_fails),
                        "level=fatal msg=\"out of memory\" bytes=32\n");
    assert_aborted_with(run_child(child_third_fails),
                        "level=fatal msg=\"out of memory\" bytes=77\n");
    char want[96];
    snprintf(want, sizeof(want), "level=fatal msg=\"out of memory\" bytes=%zu\n", SIZE_MAX);
    assert_aborted_with(run_child(child_calloc_overflow), want);
    assert_aborted_with(run_child(child_xcheck_null),
                        "level=fatal msg=\"out of memory\" bytes=0\n");
}

static void test_injection_turns_itself_off(void **state)
{
    (void)state;
    orr_alloc_fail_after(-1);
    free(orr_xmalloc(1)); /* off by default and after -1 */
    orr_alloc_fail_after(3);
    orr_alloc_fail_after(-1);
    for (int i = 0; i < 8; i++)
        free(orr_xmalloc(1));
}

#define HEAP_PROBE (4u << 20)

/* Writes the block and keeps the compiler from dropping it, and the malloc
 * and free around it, as unused. */
static char *touch(char *p)
{
    memset(p, 1, HEAP_PROBE);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

/* A block of 4 MiB in a fresh process: mapped on its own by default
 * (exit 0), from the heap once orr_alloc_keep_heap raised the limit, and
 * the freed block then kept at the heap's top (exit 0); 1-3 name what was
 * not so. */
static void child_default_heap(void)
{
    char *p = touch(malloc(HEAP_PROBE));
    size_t mapped = mallinfo2().hblks;
    free(p);
    _exit(mapped == 1 ? 0 : 1);
}

static void child_kept_heap(void)
{
    orr_alloc_keep_heap(8u << 20, 32u << 20);
    char *p = touch(malloc(HEAP_PROBE));
    size_t mapped = mallinfo2().hblks;
    free(p);
    size_t top = mallinfo2().keepcost;
    _exit((mapped != 0 ? 1 : 0) | (top < HEAP_PROBE ? 2 : 0));
}

static void test_keep_heap(void **state)
{
    (void)state;
    /* The sanitizer's allocator replaces glibc's, which the settings and
     * mallinfo2 are about: this case runs in the plain build only (GCC
     * says so with __SANITIZE_ADDRESS__, clang with __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
    skip();
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    skip();
#endif
#endif
    int st = run_child(child_default_heap);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    st = run_child(child_kept_heap);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocations),
        cmocka_unit_test(test_failure_aborts_with_one_line),
        cmocka_unit_test(test_injection_turns_itself_off),
        cmocka_unit_test(test_keep_heap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_lib_blob.c - the blob store (orr_blob) with its file:// backend: batch
 * landing (put_many), single puts from a path, a descriptor or bytes, ranged
 * reads, object URLs and their way back (url, locate), and how roots are
 * opened. The webhdfs:// backend runs the same contract against a WebHDFS
 * stand-in (tests/integration/sort/webhdfs_blob_test.c).
 */
#include <errno.h>
#include <limits.h>
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

#include "orr_blob.h"

static char g_root[256];

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/orr-blob.XXXXXX", real[PATH_MAX];
    /* the real path: the store reports its root with links resolved */
    if (!mkdtemp(tmpl) || !realpath(tmpl, real))
        return -1;
    return snprintf(g_root, sizeof g_root, "%s", real) < (int)sizeof g_root ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
}

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static orr_blob *open_store(const char *sub)
{
    char url[400];
    snprintf(url, sizeof url, "file://%s/%s", g_root, sub);
    orr_blob *b = NULL;
    orr_err err;
    assert_int_equal(orr_blob_open(url, &b, &err), ORR_OK);
    return b;
}

/* Files and bytes land under their final names, in new folders, the local
 * files are moved away, and no temporary name is left. */
static void test_put_many_lands_all(void **state)
{
    (void)state;
    orr_blob *b = open_store("s1");
    char l1[400], l2[400], p[600];
    snprintf(l1, sizeof l1, "%s/one.local", g_root);
    snprintf(l2, sizeof l2, "%s/two.local", g_root);
    put_text(l1, "first\n");
    put_text(l2, "second\n");
    orr_blob_item items[3] = {
        {.rel = "biz/a/2024050100/f1", .local = l1},
        {.rel = "biz/b/2024050100/f2", .local = l2},
        {.rel = "biz/a/2024050100/_CHECK", .data = "{}\n", .len = 3},
    };
    size_t landed = 99;
    orr_err err;
    for (int durable = 0; durable < 2; durable++) {
        if (durable) { /* again, over the same names, with syncs */
            put_text(l1, "first again\n");
            put_text(l2, "second\n");
        }
        assert_int_equal(b->ops->put_many(b, items, 3, durable, &landed, &err), ORR_OK);
        assert_int_equal(landed, 3);
        assert_false(exists(l1));
        assert_false(exists(l2));
    }
    snprintf(p, sizeof p, "%s/s1/biz/a/2024050100/f1", g_root);
    assert_string_equal(slurp(p), "first again\n");
    snprintf(p, sizeof p, "%s/s1/biz/b/2024050100/f2", g_root);
    assert_string_equal(slurp(p), "second\n");
    snprintf(p, sizeof p, "%s/s1/biz/a/2024050100/_CHECK", g_root);
    assert_string_equal(slurp(p), "{}\n");
    assert_int_equal(orr_blob_sweep_tmp(b, "biz/a/2024050100"), 0);
    uint64_t size = 0;
    assert_int_equal(b->ops->size(b, "biz/a/2024050100/f1", &size, &err), ORR_OK);
    assert_int_equal(size, strlen("first again\n"));
    assert_int_equal(b->ops->size(b, "biz/a/2024050100/_CHECK", &size, &err), ORR_OK);
    assert_int_equal(size, 3);
    assert_int_equal(b->ops->size(b, "biz/a/2024050100/nope", &size, &err), ORR_ENOTFOUND);
    assert_int_equal(b->ops->size(b, "biz/a/2024050100", &size, &err), ORR_EINVAL);
    assert_int_equal(b->ops->size(b, "biz/../x", &size, &err), ORR_EINVAL);
    assert_string_equal(err.field, "path");
    orr_blob_close(b);
}

/* A missing local file fails the batch naming it; the items before it in
 * the list are not renamed either (placing comes first), nothing lands and
 * no temporary name stays behind. */
static void test_put_many_failure(void **state)
{
    (void)state;
    orr_blob *b = open_store("s2");
    char l1[400], p[600];
    snprintf(l1, sizeof l1, "%s/ok.local", g_root);
    put_text(l1, "x\n");
    orr_blob_item items[2] = {
        {.rel = "biz/a/20240501/ok", .local = l1},
        {.rel = "biz/a/20240501/missing", .local = "/nonexistent/sort-blob/file"},
    };
    size_t landed = 99;
    orr_err err;
    assert_int_equal(b->ops->put_many(b, items, 2, 1, &landed, &err), ORR_EIO);
    assert_int_equal(landed, 0);
    assert_non_null(strstr(err.msg, "/nonexistent/sort-blob/file"));
    snprintf(p, sizeof p, "%s/s2/biz/a/20240501/ok", g_root);
    assert_false(exists(p));
    snprintf(p, sizeof p, "%s/s2/biz/a/20240501/.tmp-ok", g_root);
    assert_false(exists(p));
    assert_string_equal(slurp(l1), "x\n"); /* moved back */
    /* a bad relative path is refused before anything moves */
    put_text(l1, "y\n");
    orr_blob_item bad[2] = {{.rel = "biz/ok2", .local = l1},
                            {.rel = "../escape", .data = "z", .len = 1}};
    assert_int_equal(b->ops->put_many(b, bad, 2, 0, &landed, &err), ORR_EINVAL);
    assert_int_equal(landed, 0);
    assert_string_equal(err.field, "path");
    assert_string_equal(slurp(l1), "y\n");
    orr_blob_close(b);
}

/* put_fd lands the whole content of an (unlinked) file whatever its
 * offset, and leaves the offset alone; put_file copies or moves. */
static void test_put_fd_and_put_file(void **state)
{
    (void)state;
    orr_blob *b = open_store("s4");
    char tmpl[400], p[600], local[400];
    snprintf(tmpl, sizeof tmpl, "%s/spool.XXXXXX", g_root);
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    unlink(tmpl);
    assert_int_equal(write(fd, "spooled body\n", 13), 13);
    assert_int_equal(lseek(fd, 3, SEEK_SET), 3);
    orr_err err;
    assert_int_equal(b->ops->put_fd(b, "packages/abc.tar.gz", fd, &err), ORR_OK);
    assert_int_equal(lseek(fd, 0, SEEK_CUR), 3);
    snprintf(p, sizeof p, "%s/s4/packages/abc.tar.gz", g_root);
    assert_string_equal(slurp(p), "spooled body\n");
    assert_int_equal(b->ops->put_fd(b, "../abc", fd, &err), ORR_EINVAL);
    assert_string_equal(err.field, "path");
    close(fd);
    /* put_file: a copy keeps the local file (a finished log), a move not */
    snprintf(local, sizeof local, "%s/4-1.log", g_root);
    put_text(local, "to the blob store\n");
    assert_int_equal(b->ops->put_file(b, "logs/77/4-1.log", local, 0, &err), ORR_OK);
    assert_true(exists(local));
    snprintf(p, sizeof p, "%s/s4/logs/77/4-1.log", g_root);
    assert_string_equal(slurp(p), "to the blob store\n");
    assert_int_equal(b->ops->put_file(b, "logs/77/4-2.log", local, 1, &err), ORR_OK);
    assert_false(exists(local));
    assert_int_equal(b->ops->put_file(b, "../x", local, 0, &err), ORR_EINVAL);
    assert_int_equal(b->ops->put_file(b, "logs/77/5-1.log", "/nonexistent", 0, &err), ORR_EIO);
    assert_non_null(strstr(err.field, "/nonexistent"));
    snprintf(p, sizeof p, "%s/s4/logs/77/.tmp-5-1.log", g_root);
    assert_false(exists(p));
    orr_blob_close(b);
}

typedef struct sink_state {
    orr_buf got;
    int calls;
    int fail_at; /* answer ORR_ECANCELLED at this call (0: never) */
} sink_state;

static orr_status sink(void *ud, const void *data, size_t n, orr_err *err)
{
    sink_state *s = ud;
    if (++s->calls == s->fail_at)
        return orr_err_set(err, ORR_ECANCELLED, "sink", "stop");
    orr_buf_append(&s->got, data, n);
    return ORR_OK;
}

/* get_range: whole, from an offset, at most max bytes, at and past the
 * end; absent objects, folders and a sink that stops. */
static void test_get_range(void **state)
{
    (void)state;
    orr_blob *b = open_store("s5");
    orr_err err;
    size_t big_n = 200000; /* several reads */
    char *big = malloc(big_n);
    assert_non_null(big);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (char)('a' + i % 26);
    assert_int_equal(b->ops->put_bytes(b, "o/big", big, big_n, &err), ORR_OK);
    sink_state s = {ORR_BUF_INIT, 0, 0};
    assert_int_equal(b->ops->get_range(b, "o/big", 0, ORR_BLOB_TO_END, sink, &s, &err), ORR_OK);
    assert_int_equal(s.got.len, big_n);
    assert_memory_equal(s.got.data, big, big_n);
    assert_true(s.calls > 1);
    orr_buf_reset(&s.got);
    assert_int_equal(b->ops->get_range(b, "o/big", 100, 7, sink, &s, &err), ORR_OK);
    assert_int_equal(s.got.len, 7);
    assert_memory_equal(s.got.data, big + 100, 7);
    orr_buf_reset(&s.got);
    assert_int_equal(b->ops->get_range(b, "o/big", big_n - 3, 100, sink, &s, &err), ORR_OK);
    assert_int_equal(s.got.len, 3);
    orr_buf_reset(&s.got);
    assert_int_equal(b->ops->get_range(b, "o/big", big_n, 100, sink, &s, &err), ORR_OK);
    assert_int_equal(s.got.len, 0);
    assert_int_equal(b->ops->get_range(b, "o/big", big_n + 5, 100, sink, &s, &err), ORR_OK);
    assert_int_equal(s.got.len, 0);
    assert_int_equal(b->ops->get_range(b, "o/none", 0, 1, sink, &s, &err), ORR_ENOTFOUND);
    assert_int_equal(b->ops->get_range(b, "o", 0, 1, sink, &s, &err), ORR_EINVAL);
    assert_int_equal(b->ops->get_range(b, "o/../x", 0, 1, sink, &s, &err), ORR_EINVAL);
    s.calls = 0;
    s.fail_at = 2;
    assert_int_equal(b->ops->get_range(b, "o/big", 0, ORR_BLOB_TO_END, sink, &s, &err),
                     ORR_ECANCELLED);
    assert_string_equal(err.field, "sink");
    orr_buf_free(&s.got);
    free(big);
    orr_blob_close(b);
}

/* url names an object by the root's real path; locate maps that URL, a
 * plain path and a relative path back, and refuses anything outside. */
static void test_url_and_locate(void **state)
{
    (void)state;
    char link[400], url[600], p[400];
    snprintf(link, sizeof link, "%s/via-link", g_root);
    snprintf(p, sizeof p, "%s/s6", g_root);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(symlink(p, link), 0);
    snprintf(url, sizeof url, "file://%s", link);
    orr_blob *b = NULL;
    orr_err err;
    assert_int_equal(orr_blob_open(url, &b, &err), ORR_OK);
    assert_string_equal(orr_blob_local_root(b), p); /* links resolved */
    assert_int_equal(b->ops->put_bytes(b, "packages/x.tar.gz", "x", 1, &err), ORR_OK);
    orr_buf u = ORR_BUF_INIT, rel = ORR_BUF_INIT;
    assert_int_equal(b->ops->url(b, "packages/x.tar.gz", &u, &err), ORR_OK);
    snprintf(url, sizeof url, "file://%s/packages/x.tar.gz", p);
    assert_string_equal(orr_buf_cstr(&u), url);
    assert_int_equal(b->ops->url(b, "../x", &u, &err), ORR_EINVAL);
    assert_int_equal(b->ops->locate(b, url, &rel, &err), ORR_OK);
    assert_string_equal(orr_buf_cstr(&rel), "packages/x.tar.gz");
    /* a plain absolute path, through the link */
    snprintf(url, sizeof url, "%s/packages/x.tar.gz", link);
    assert_int_equal(b->ops->locate(b, url, &rel, &err), ORR_OK);
    assert_string_equal(orr_buf_cstr(&rel), "packages/x.tar.gz");
    assert_int_equal(b->ops->locate(b, "packages/x.tar.gz", &rel, &err), ORR_OK);
    assert_string_equal(orr_buf_cstr(&rel), "packages/x.tar.gz");
    /* outside the root: another folder, a link leaving it, "..", schemes */
    char out[400], esc[450];
    snprintf(out, sizeof out, "%s/outside", g_root);
    put_text(out, "no\n");
    snprintf(url, sizeof url, "file://%s", out);
    assert_int_equal(b->ops->locate(b, url, &rel, &err), ORR_EINVAL);
    assert_string_equal(err.field, "url");
    assert_non_null(strstr(err.msg, "outside the blob root"));
    snprintf(esc, sizeof esc, "%s/escape", p);
    assert_int_equal(symlink(out, esc), 0);
    snprintf(url, sizeof url, "file://%s", esc);
    assert_int_equal(b->ops->locate(b, url, &rel, &err), ORR_EINVAL);
    snprintf(url, sizeof url, "file://%s/../outside", p);
    assert_int_equal(b->ops->locate(b, url, &rel, &err), ORR_EINVAL);
    assert_int_equal(b->ops->locate(b, "../outside", &rel, &err), ORR_EINVAL);
    assert_int_equal(b->ops->locate(b, "webhdfs://u@h:1/x", &rel, &err), ORR_EINVAL);
    assert_int_equal(b->ops->locate(b, p, &rel, &err), ORR_EINVAL); /* the root itself */
    snprintf(url, sizeof url, "file://%s/packages/none.tar.gz", p);
    assert_int_equal(b->ops->locate(b, url, &rel, &err), ORR_ENOTFOUND);
    orr_buf_free(&u);
    orr_buf_free(&rel);
    orr_blob_close(b);
}

/* Roots: a plain relative path is made absolute at open; file:// needs an
 * absolute path; unknown schemes and empty roots are refused. */
static void test_open_roots(void **state)
{
    (void)state;
    char cwd[4096], p[600];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_root), 0);
    orr_blob *b = NULL;
    orr_err err;
    orr_status rc = orr_blob_open("var/blob", &b, &err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, ORR_OK);
    snprintf(p, sizeof p, "%s/var/blob", g_root);
    assert_string_equal(orr_blob_local_root(b), p);
    orr_blob_close(b);
    assert_int_equal(orr_blob_open("file://var/blob", &b, &err), ORR_EINVAL);
    assert_string_equal(err.field, "blob_root");
    assert_int_equal(orr_blob_open("s3://bucket/x", &b, &err), ORR_EINVAL);
    assert_non_null(strstr(err.msg, "unsupported"));
    assert_int_equal(orr_blob_open("", &b, &err), ORR_EINVAL);
    assert_int_equal(orr_blob_open(NULL, &b, &err), ORR_EINVAL);
    orr_blob_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_many_lands_all),  cmocka_unit_test(test_put_many_failure),
        cmocka_unit_test(test_put_fd_and_put_file), cmocka_unit_test(test_get_range),
        cmocka_unit_test(test_url_and_locate),      cmocka_unit_test(test_open_roots),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

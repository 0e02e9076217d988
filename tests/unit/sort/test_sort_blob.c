/*
 * test_sort_blob.c - the file blob store's batch landing (put_many), the
 * batched _CHECK writes built on it, and the unit-file block size sortd
 * derives from its memory setting.
 */
#include <errno.h>
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
#include "orr_lzop.h"
#include "sort_check.h"
#include "sort_pipe.h"

static char g_root[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/sort-blob.XXXXXX");
    return mkdtemp(g_root) ? 0 : -1;
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

/* Batched _CHECK writes: every unit gets its document and its version. */
static void test_check_write_many(void **state)
{
    (void)state;
    orr_blob *b = open_store("s3");
    json_error_t je;
    json_t *doc = json_loads(
        "{\"name\":\"t\",\"business\":\"biz\",\"source\":{\"type\":\"file\",\"path\":\"/tmp\"},"
        "\"format\":{\"type\":\"jsonl\"},\"interface\":{\"field\":\"if\"},"
        "\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},\"bucket\":\"hour\"}",
        0, &je);
    assert_non_null(doc);
    sort_spec *spec = NULL;
    orr_err err;
    assert_int_equal(sort_spec_parse(doc, "spec", &spec, &err), ORR_OK);
    json_decref(doc);
    sort_units t;
    sort_units_init(&t, spec);
    sort_unit *u[3] = {sort_units_get(&t, "a", 1, 1714521600),
                       sort_units_get(&t, "b", 1, 1714521600),
                       sort_units_get(&t, "a", 1, 1714525200)};
    sort_unit_add_file(&t, u[0], "part-0-0-9-n10.lzo", 10, 300);
    sort_unit_add_file(&t, u[0], "part-0-10-11-n2.lzo", 2, 45);
    size_t written = 0;
    assert_int_equal(sort_check_write_many(b, spec, u, 3, &written, &err), ORR_OK);
    assert_int_equal(written, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(u[i]->check_version, 1);
        assert_false(sort_check_stale(u[i]));
    }
    char p[600];
    snprintf(p, sizeof p, "%s/s3/%s/_CHECK", g_root, u[0]->dir);
    const char *text = slurp(p);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"total\":12"));
    assert_non_null(strstr(text, "\"version\":1"));
    assert_non_null(strstr(text, "{\"name\":\"part-0-0-9-n10.lzo\",\"records\":10,\"bytes\":300}"));
    assert_non_null(strstr(text, "\"total_bytes\":345"));
    assert_int_equal(u[0]->total_bytes, 345);
    snprintf(p, sizeof p, "%s/s3/%s/_CHECK", g_root, u[1]->dir);
    text = slurp(p);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"files\":[]"));
    assert_non_null(strstr(text, "\"total_bytes\":0"));
    sort_unit_add_file(&t, u[1], "part-0-20-20-n1.lzo", 1, 7);
    assert_true(sort_check_stale(u[1]));
    assert_int_equal(sort_check_write_many(b, spec, &u[1], 1, &written, &err), ORR_OK);
    assert_int_equal(u[1]->check_version, 2);
    sort_units_free(&t);
    sort_spec_free(spec);
    orr_blob_close(b);
}

static void test_block_size_choice(void **state)
{
    (void)state;
    sort_pipe_cfg c = {.max_open_units = 2048, .unit_memory = 256u << 20};
    assert_int_equal(sort_pipe_block_size(&c), 128u * 1024u);
    c.max_open_units = 24;
    assert_int_equal(sort_pipe_block_size(&c), ORR_LZOP_BLOCK_SIZE);
    c.max_open_units = 1000000;
    assert_int_equal(sort_pipe_block_size(&c), SORT_PIPE_MIN_BLOCK);
    c.max_open_units = 3000;
    c.unit_memory = 0; /* default 256 MiB: 89478 -> rounded down to 4 KiB */
    assert_int_equal(sort_pipe_block_size(&c), 86016u);
    assert_int_equal(sort_pipe_block_size(&c) % ORR_LZOP_MIN_BLOCK, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_many_lands_all),
        cmocka_unit_test(test_put_many_failure),
        cmocka_unit_test(test_check_write_many),
        cmocka_unit_test(test_block_size_choice),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_sort_check.c - the batched _CHECK writes (on the file blob store's
 * batch landing, tested in tests/unit/lib/test_lib_blob.c), and the unit-file
 * block size sortd derives from its memory setting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_blob.h"
#include "orr_lzop.h"
#include "sort_check.h"
#include "sort_pipe.h"

static char g_root[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/sort-check.XXXXXX");
    return mkdtemp(g_root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
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

static orr_blob *open_store(const char *sub)
{
    char url[400];
    snprintf(url, sizeof url, "file://%s/%s", g_root, sub);
    orr_blob *b = NULL;
    orr_err err;
    assert_int_equal(orr_blob_open(url, &b, &err), ORR_OK);
    return b;
}

/* A stream with hourly units (jsonl; the source is not opened). */
static sort_spec *hourly_spec(void)
{
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
    return spec;
}

/* Batched _CHECK writes: every unit gets its document and its version. */
static void test_check_write_many(void **state)
{
    (void)state;
    orr_blob *b = open_store("s3");
    sort_spec *spec = hourly_spec();
    orr_err err;
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

/* A round in three steps (the checker thread's split): late records that
 * come between render and apply leave the unit stale, with the version and
 * counts of what its landed _CHECK says. */
static void test_check_round_steps(void **state)
{
    (void)state;
    orr_blob *b = open_store("s4");
    sort_spec *spec = hourly_spec();
    orr_err err;
    sort_units t;
    sort_units_init(&t, spec);
    sort_unit *u[2] = {sort_units_get(&t, "a", 1, 1714521600),
                       sort_units_get(&t, "b", 1, 1714521600)};
    sort_unit_add_file(&t, u[0], "part-0-0-9-n10.lzo", 10, 300);
    sort_check_batch cb;
    sort_check_render(spec, u, 2, &cb);
    /* Meanwhile: a late record lands in a new file of unit a. */
    sort_unit_add_file(&t, u[0], "part-0-10-10-n1.lzo", 1, 20);
    u[0]->late = 1;
    assert_int_equal(u[0]->check_version, 0); /* nothing applied before apply */
    assert_int_equal(sort_check_put(b, &cb), ORR_OK);
    assert_int_equal(cb.landed, 2);
    assert_int_equal(u[0]->check_version, 0);
    assert_int_equal(sort_check_apply(&cb), 2);
    /* What the reconciled hook is told: the landed version's counts. */
    sort_unit view;
    sort_check_landed_view(&cb, 0, &view);
    assert_int_equal(view.check_version, 1);
    assert_int_equal(view.nfiles, 1);
    assert_int_equal(view.total, 10);
    assert_int_equal(view.total_bytes, 300);
    assert_int_equal(view.late, 0);
    assert_int_equal(u[0]->nfiles, 2);
    sort_check_batch_free(&cb);
    assert_int_equal(u[0]->check_version, 1);
    assert_int_equal(u[0]->checked_nfiles, 1);
    assert_int_equal(u[0]->checked_late, 0);
    assert_true(sort_check_stale(u[0])); /* the late file is not listed yet */
    assert_false(sort_check_stale(u[1]));
    char p[600];
    snprintf(p, sizeof p, "%s/s4/%s/_CHECK", g_root, u[0]->dir);
    const char *text = slurp(p);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"total\":10,"));
    assert_non_null(strstr(text, "\"late_records\":0"));
    assert_null(strstr(text, "part-0-10-10-n1.lzo"));
    /* The next round lists it, as version 2. */
    size_t written = 0;
    assert_int_equal(sort_check_write_many(b, spec, u, 1, &written, &err), ORR_OK);
    assert_int_equal(written, 1);
    assert_int_equal(u[0]->check_version, 2);
    assert_false(sort_check_stale(u[0]));
    text = slurp(p);
    assert_non_null(strstr(text, "\"total\":11,"));
    assert_non_null(strstr(text, "\"late_records\":1"));
    assert_non_null(strstr(text, "\"version\":2"));
    /* A batch that cannot land (an absolute rel, refused by the store):
     * nothing is applied, the store's error is kept. */
    sort_check_render(spec, u, 1, &cb);
    ((char *)cb.items[0].rel)[0] = '/';
    assert_int_equal(sort_check_put(b, &cb), ORR_EINVAL);
    assert_int_equal(cb.err.code, ORR_EINVAL);
    assert_int_equal(cb.landed, 0);
    assert_int_equal(sort_check_apply(&cb), 0);
    assert_int_equal(u[0]->check_version, 2);
    sort_check_batch_free(&cb);
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
        cmocka_unit_test(test_check_write_many),
        cmocka_unit_test(test_check_round_steps),
        cmocka_unit_test(test_block_size_choice),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

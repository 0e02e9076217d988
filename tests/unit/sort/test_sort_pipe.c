/*
 * test_sort_pipe.c - the whole in-process pipeline on the file source:
 * landing, rejects, empty and amended _CHECK files, late-record policies,
 * LRU rolling and resuming from committed offsets. Each test works in its
 * own temporary folder.
 */
#include <dirent.h>
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

#include "orr_json.h"
#include "orr_lzop.h"
#include "sort_pipe.h"

typedef struct tdir {
    char root[256], in[300], blob[300], work[300], state[300];
} tdir;

static void tdir_make(tdir *t)
{
    snprintf(t->root, sizeof t->root, "/tmp/sort-unit.XXXXXX");
    assert_non_null(mkdtemp(t->root));
    snprintf(t->in, sizeof t->in, "%s/in", t->root);
    snprintf(t->blob, sizeof t->blob, "file://%s/blob", t->root);
    snprintf(t->work, sizeof t->work, "%s/work", t->root);
    snprintf(t->state, sizeof t->state, "%s/state", t->root);
    assert_int_equal(mkdir(t->in, 0755), 0);
}

static void tdir_remove(tdir *t)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    assert_int_equal(system(cmd), 0);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* src_extra: more keys of "source"; extra: more keys of the spec. */
static sort_spec *make_spec_src(const tdir *t, const char *src_extra, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\":\"t\",\"business\":\"biz\",\"source\":{\"type\":\"file\",\"path\":\"%s\","
             "\"exit_at_eof\":true%s},\"format\":{\"type\":\"jsonl\"},\"interface\":{\"field\":"
             "\"if\"},\"interfaces\":[\"a\",\"b\",\"quiet\"],\"time\":{\"field\":\"ts\","
             "\"format\":\"epoch_s\"},\"bucket\":\"hour\"%s}",
             t->in, src_extra, extra);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    sort_spec *s = NULL;
    orr_err err;
    orr_status rc = sort_spec_parse(doc, "spec", &s, &err);
    if (rc != ORR_OK)
        fail_msg("spec: %s: %s", err.field, err.msg);
    json_decref(doc);
    return s;
}

static sort_spec *make_spec(const tdir *t, const char *extra)
{
    return make_spec_src(t, "", extra);
}

static volatile sig_atomic_t no_stop;

static sort_pipe_stats run(const tdir *t, const sort_spec *s, int writers, size_t max_open)
{
    sort_pipe_cfg c = {
        .spec = s,
        .work_dir = t->work,
        .state_dir = t->state,
        .blob_url = t->blob,
        .writers = writers,
        .packs = 4,
        .pack_bytes = 4096,
        .max_open_units = max_open,
        .stop = &no_stop,
    };
    sort_pipe_stats st;
    orr_err err;
    orr_err_clear(&err);
    orr_status rc = sort_pipe_run(&c, &st, &err);
    if (rc != ORR_OK)
        fail_msg("pipeline: %s: %s", err.field, err.msg);
    return st;
}

/* Every landed line of a unit folder's files, decoded with the lzop reader
 * and appended to out; returns the number of files (0 without the folder). */
static size_t unit_bytes(const tdir *t, const char *unit, orr_buf *out)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/blob/%s", t->root, unit);
    DIR *d = opendir(dir);
    size_t nfiles = 0;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (strncmp(de->d_name, "part-", 5) != 0 || strcmp(de->d_name + n - 4, ".lzo") != 0)
            continue;
        char p[800];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        orr_lzop_reader *r = NULL;
        orr_err err;
        assert_int_equal(orr_lzop_reader_open(p, &r, &err), ORR_OK);
        char buf[4096];
        size_t got;
        while (orr_lzop_read(r, buf, sizeof buf, &got, &err) == ORR_OK)
            orr_buf_append(out, buf, got);
        orr_lzop_reader_close(r);
        nfiles++;
    }
    closedir(d);
    return nfiles;
}

/* Records in the landed files of one unit folder. */
static uint64_t unit_records(const tdir *t, const char *unit, size_t *nfiles)
{
    orr_buf b = ORR_BUF_INIT;
    *nfiles = unit_bytes(t, unit, &b);
    uint64_t lines = 0;
    for (size_t i = 0; i < b.len; i++)
        lines += b.data[i] == '\n';
    orr_buf_free(&b);
    return lines;
}

static json_t *read_check(const tdir *t, const char *unit)
{
    char p[512];
    snprintf(p, sizeof p, "%s/blob/%s/_CHECK", t->root, unit);
    json_error_t je;
    return json_load_file(p, 0, &je);
}

static int64_t jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

/* 2024-05-01 10:00 UTC = 1714557600 */
static void test_land_reject_check(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    write_file(t.in, "001.jsonl",
               "{\"if\":\"a\",\"ts\":1714557600}\n"
               "{\"if\":\"a\",\"ts\":1714561199}\n"
               "{\"if\":\"b\",\"ts\":1714561200}\n"
               "not json\n"
               "{\"if\":\"a\",\"ts\":\"x\"}\n"
               "{\"if\":\"a\",\"ts\":1714564800}");
    sort_spec *s = make_spec(&t, ",\"check\":{\"clock\":\"data\",\"grace_ms\":0}");
    sort_pipe_stats st = run(&t, s, 2, 16);
    assert_int_equal(st.records_in, 6);
    assert_int_equal(st.records_out, 4);
    assert_int_equal(st.rejected, 2);
    assert_int_equal(st.rejects[SORT_REJ_SYNTAX], 1);
    assert_int_equal(st.rejects[SORT_REJ_BAD_TIME], 1);
    size_t nf;
    assert_int_equal(unit_records(&t, "biz/a/2024050110", &nf), 2);
    assert_int_equal(nf, 1);
    assert_int_equal(unit_records(&t, "biz/b/2024050111", &nf), 1);
    /* the last line had no newline: at the end of the stream it is a record */
    assert_int_equal(unit_records(&t, "biz/a/2024050111", &nf), 0);
    assert_int_equal(unit_records(&t, "biz/a/2024050112", &nf), 1);

    json_t *c = read_check(&t, "biz/a/2024050110");
    assert_non_null(c);
    assert_int_equal(jint(c, "total"), 2);
    assert_int_equal(jint(c, "version"), 1);
    assert_int_equal(json_array_size(json_object_get(c, "files")), 1);
    json_decref(c);
    /* declared but silent interface: an empty _CHECK for every closed hour */
    c = read_check(&t, "biz/quiet/2024050111");
    assert_non_null(c);
    assert_int_equal(jint(c, "total"), 0);
    assert_int_equal(json_array_size(json_object_get(c, "files")), 0);
    json_decref(c);

    /* the reject file names the offset and the reason */
    char p[512], line[512];
    snprintf(p, sizeof p, "%s/t.rejects", t.state);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "offset=81 reason=syntax"));
    fclose(f);

    /* a second run resumes after the committed offset: nothing is read again */
    st = run(&t, s, 2, 16);
    assert_int_equal(st.records_in, 0);
    sort_spec_free(s);
    tdir_remove(&t);
}

static void test_late_amend_and_drop(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    write_file(t.in, "001.jsonl",
               "{\"if\":\"a\",\"ts\":1714557600}\n{\"if\":\"a\",\"ts\":1714568400}\n");
    sort_spec *s = make_spec(&t, ",\"check\":{\"clock\":\"data\",\"grace_ms\":0}");
    run(&t, s, 1, 16);
    json_t *c = read_check(&t, "biz/a/2024050110");
    assert_int_equal(jint(c, "version"), 1);
    json_decref(c);
    /* a late record for 10:00 amends the unit: a new file, _CHECK version 2 */
    write_file(t.in, "002.jsonl", "{\"if\":\"a\",\"ts\":1714557700}\n");
    sort_pipe_stats st = run(&t, s, 1, 16);
    assert_int_equal(st.records_out, 1);
    size_t nf;
    assert_int_equal(unit_records(&t, "biz/a/2024050110", &nf), 2);
    assert_int_equal(nf, 2);
    assert_int_equal(st.late, 1);
    c = read_check(&t, "biz/a/2024050110");
    assert_int_equal(jint(c, "version"), 2);
    assert_int_equal(jint(c, "total"), 2);
    assert_int_equal(jint(c, "late_records"), 1);
    json_decref(c);
    sort_spec_free(s);

    /* with "late": "drop", a record for a reconciled unit is rejected */
    s = make_spec(&t, ",\"check\":{\"clock\":\"data\",\"grace_ms\":0,\"late\":\"drop\"}");
    write_file(t.in, "003.jsonl",
               "{\"if\":\"b\",\"ts\":1714575600}\n{\"if\":\"b\",\"ts\":1714557600}\n");
    st = run(&t, s, 1, 16);
    assert_int_equal(st.records_out, 1);
    assert_int_equal(st.rejects[SORT_REJ_LATE], 1);
    assert_int_equal(unit_records(&t, "biz/b/2024050110", &nf), 0);
    sort_spec_free(s);
    tdir_remove(&t);
}

static void test_lru_and_split(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    char buf[64 * 1024];
    size_t n = 0;
    for (int i = 0; i < 600; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "{\"if\":\"%c\",\"ts\":%d}\n", "abc"[i % 3],
                              1714557600 + i);
    write_file(t.in, "001.jsonl", buf);
    sort_spec *s = make_spec(&t, ",\"split\":{\"c\":3},\"check\":{\"enabled\":false}");
    /* one open file at a time: rotating over three units rolls by LRU */
    sort_pipe_stats st = run(&t, s, 1, 1);
    assert_int_equal(st.records_out, 600);
    assert_true(st.w.rolls_lru > 0);
    size_t na, nb, nc;
    assert_int_equal(unit_records(&t, "biz/a/2024050110", &na), 200);
    assert_int_equal(unit_records(&t, "biz/b/2024050110", &nb), 200);
    assert_int_equal(unit_records(&t, "biz/c/2024050110", &nc), 200);
    assert_true(na > 1);
    /* with checks disabled nothing else is written */
    json_t *c = read_check(&t, "biz/a/2024050110");
    assert_null(c);
    sort_spec_free(s);
    tdir_remove(&t);
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text (each ending in a newline), sorted; they point into
 * *copy. Free the array and *copy. */
static char **sorted_lines(const char *text, size_t len, size_t *n, char **copyp)
{
    char *copy = malloc(len + 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    copy[len] = 0;
    size_t cap = 16;
    char **v = malloc(cap * sizeof *v);
    assert_non_null(v);
    *n = 0;
    for (char *p = copy; *p;) {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        *nl = 0;
        if (*n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            assert_non_null(v);
        }
        v[(*n)++] = p;
        p = nl + 1;
    }
    qsort(v, *n, sizeof *v, line_cmp);
    *copyp = copy;
    return v;
}

/* Reads of 4 KiB end inside records (and inside an overlong line): the
 * file source frames records where they were read and carries a cut record
 * over to the next read, so every record lands byte for byte, once. */
static void test_reads_cut_records(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    orr_buf f1 = ORR_BUF_INIT, f2 = ORR_BUF_INIT, want_a = ORR_BUF_INIT, want_b = ORR_BUF_INIT;
    char rec[256], pad[64];
    for (int i = 0; i < 4000; i++) {
        int k = i % 53;
        memset(pad, 'x', (size_t)k);
        pad[k] = 0;
        int n = snprintf(rec, sizeof rec, "{\"if\":\"%c\",\"ts\":%d,\"n\":%d,\"pad\":\"%s\"}",
                         "ab"[i % 2], 1714557600 + i % 3000, i, pad);
        orr_buf *f = i < 3000 ? &f1 : &f2;
        if (i == 1500) { /* longer than max_record and than a read */
            orr_buf_append_str(f, "{\"if\":\"a\",\"long\":\"");
            for (int j = 0; j < 5000; j++)
                orr_buf_append_byte(f, 'y');
            orr_buf_append_str(f, "\"}\n");
        }
        orr_buf_append(f, rec, (size_t)n);
        if (i != 3999)
            orr_buf_append_byte(f, '\n'); /* the last line of the last file has none */
        orr_buf_append(i % 2 ? &want_b : &want_a, rec, (size_t)n);
        orr_buf_append_byte(i % 2 ? &want_b : &want_a, '\n');
    }
    write_file(t.in, "001.jsonl", f1.data);
    write_file(t.in, "002.jsonl", f2.data);
    sort_spec *s = make_spec_src(&t, ",\"read_size\":4096",
                                 ",\"format\":{\"type\":\"jsonl\",\"max_record\":300},"
                                 "\"check\":{\"clock\":\"data\",\"grace_ms\":0}");
    sort_pipe_stats st = run(&t, s, 2, 16);
    assert_int_equal(st.records_in, 4001);
    assert_int_equal(st.records_out, 4000);
    assert_int_equal(st.rejects[SORT_REJ_TOO_LONG], 1);
    const char *units[2] = {"biz/a/2024050110", "biz/b/2024050110"};
    orr_buf *want[2] = {&want_a, &want_b};
    for (int u = 0; u < 2; u++) {
        orr_buf got = ORR_BUF_INIT;
        unit_bytes(&t, units[u], &got);
        size_t ng, nw;
        char *gc, *wc;
        char **g = sorted_lines(got.data, got.len, &ng, &gc);
        char **w = sorted_lines(want[u]->data, want[u]->len, &nw, &wc);
        assert_int_equal(ng, 2000);
        assert_int_equal(nw, 2000);
        for (size_t i = 0; i < ng; i++)
            assert_string_equal(g[i], w[i]);
        free(gc);
        free(wc);
        free(g);
        free(w);
        orr_buf_free(&got);
    }
    /* the committed position is the end of the last file: nothing again */
    st = run(&t, s, 2, 16);
    assert_int_equal(st.records_in, 0);
    orr_buf_free(&f1);
    orr_buf_free(&f2);
    orr_buf_free(&want_a);
    orr_buf_free(&want_b);
    sort_spec_free(s);
    tdir_remove(&t);
}

/* Each writer stages its files in a folder of its own (<work>/<stem>/w<I>);
 * what a crashed run left there, or in the folder of a writer the next run
 * no longer has, is removed at the start and lands nowhere. */
static void test_staging_folders(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    write_file(t.in, "001.jsonl", "{\"if\":\"a\",\"ts\":1714557600}\n");
    sort_spec *s = make_spec(&t, ",\"check\":{\"clock\":\"data\",\"grace_ms\":0}");
    sort_pipe_stats st = run(&t, s, 2, 16);
    assert_int_equal(st.records_out, 1);
    char p[512];
    struct stat sb;
    for (int w = 0; w < 2; w++) {
        snprintf(p, sizeof p, "%s/t/w%d", t.work, w);
        assert_int_equal(stat(p, &sb), 0);
        assert_true(S_ISDIR(sb.st_mode));
    }
    /* leftovers of a crash: a half-written file of writer 0, and writer 5's
     * folder with a file (a run with six writers) */
    snprintf(p, sizeof p, "%s/t/w0", t.work);
    write_file(p, "7.lzo", "half a file");
    snprintf(p, sizeof p, "%s/t/w5", t.work);
    assert_int_equal(mkdir(p, 0755), 0);
    write_file(p, "3.lzo", "half a file");
    write_file(t.in, "002.jsonl", "{\"if\":\"a\",\"ts\":1714557601}\n");
    st = run(&t, s, 2, 16);
    assert_int_equal(st.records_out, 1);
    snprintf(p, sizeof p, "%s/t/w0/7.lzo", t.work);
    assert_int_equal(stat(p, &sb), -1);
    snprintf(p, sizeof p, "%s/t/w5", t.work);
    assert_int_equal(stat(p, &sb), -1);
    size_t nf;
    assert_int_equal(unit_records(&t, "biz/a/2024050110", &nf), 2);
    sort_spec_free(s);
    tdir_remove(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_land_reject_check), cmocka_unit_test(test_late_amend_and_drop),
        cmocka_unit_test(test_lru_and_split),     cmocka_unit_test(test_reads_cut_records),
        cmocka_unit_test(test_staging_folders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

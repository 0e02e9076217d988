/*
 * test_sort_lander.c - writers land rolled files on their landing thread
 * while they go on compressing: a writer appends records while a landing is
 * held in the store (a gate that put_many waits on), its safe position and
 * acknowledgements stay behind the held files, and once the gate opens every
 * record is in exactly one landed file, in order within its unit. Then the
 * whole pipeline with two writers and many size rolls: every record of every
 * unit lands once, in order.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_json.h"
#include "orr_lzop.h"
#include "sort_chan.h"
#include "sort_pipe.h"
#include "sort_writer.h"

#define T0 1714557600 /* 2024-05-01 10:00 UTC */

typedef struct tdir {
    char root[256], in[300], blob[300], work[300], state[300];
} tdir;

static void tdir_make(tdir *t)
{
    snprintf(t->root, sizeof t->root, "/tmp/sort-lander.XXXXXX");
    assert_non_null(mkdtemp(t->root));
    snprintf(t->in, sizeof t->in, "%s/in", t->root);
    snprintf(t->blob, sizeof t->blob, "file://%s/blob", t->root);
    snprintf(t->work, sizeof t->work, "%s/work", t->root);
    snprintf(t->state, sizeof t->state, "%s/state", t->root);
    assert_int_equal(mkdir(t->in, 0755), 0);
    assert_int_equal(mkdir(t->work, 0755), 0);
}

static void tdir_remove(tdir *t)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    assert_int_equal(system(cmd), 0);
}

static sort_spec *make_spec(const tdir *t, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\":\"t\",\"business\":\"biz\",\"source\":{\"type\":\"file\",\"path\":\"%s\","
             "\"exit_at_eof\":true},\"format\":{\"type\":\"jsonl\"},\"interface\":{\"field\":"
             "\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},\"bucket\":\"hour\"%s}",
             t->in, extra);
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

/* ---- a store whose put_many waits at a gate --------------------------- */

typedef struct gate_blob {
    orr_blob base;
    orr_blob *inner;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int entered; /* put_many calls that reached the gate */
} gate_blob;

static orr_status gate_put_many(orr_blob *b, const orr_blob_item *items, size_t n, int durable,
                                size_t *landed, orr_err *err)
{
    gate_blob *g = (gate_blob *)b;
    pthread_mutex_lock(&g->mu);
    g->entered++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return g->inner->ops->put_many(g->inner, items, n, durable, landed, err);
}

static const orr_blob_ops gate_ops = {.scheme = "gate", .put_many = gate_put_many};

static int gate_entered(gate_blob *g)
{
    pthread_mutex_lock(&g->mu);
    int n = g->entered;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static void gate_open(gate_blob *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Poll a condition the test has made inevitable; a bound only against a
 * hang (the condition never depends on how fast the machine is). */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        int waited_ = 0;                                                                           \
        while (!(cond)) {                                                                          \
            if (waited_++ > 30000)                                                                 \
                fail_msg("never came true: %s", #cond);                                            \
            struct timespec ts_ = {0, 1000000L};                                                   \
            nanosleep(&ts_, NULL);                                                                 \
        }                                                                                          \
    } while (0)

/* ---- reading landed units back ---------------------------------------- */

typedef struct seqs {
    long v[4096];
    size_t n;
} seqs;

/* The "n" field of every record of one landed file, in file order. */
static void read_file_seqs(const char *path, seqs *out)
{
    orr_lzop_reader *r = NULL;
    orr_err err;
    assert_int_equal(orr_lzop_reader_open(path, &r, &err), ORR_OK);
    static char all[1 << 20];
    size_t len = 0, got;
    while (orr_lzop_read(r, all + len, sizeof all - 1 - len, &got, &err) == ORR_OK && got > 0)
        len += got;
    orr_lzop_reader_close(r);
    all[len] = 0;
    out->n = 0;
    for (char *p = all; (p = strstr(p, "\"n\":")) != NULL; p += 4) {
        assert_true(out->n < 4096);
        out->v[out->n++] = strtol(p + 4, NULL, 10);
    }
}

static int seqs_first_cmp(const void *a, const void *b)
{
    const seqs *x = *(seqs *const *)a, *y = *(seqs *const *)b;
    return (x->v[0] > y->v[0]) - (x->v[0] < y->v[0]);
}

/* Every record of unit dir, files ordered by their first record: the
 * concatenation must be exactly want[0..nwant). */
static void check_unit(const tdir *t, const char *unit, const long *want, size_t nwant)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/blob/%s", t->root, unit);
    DIR *d = opendir(dir);
    assert_non_null(d);
    seqs *files[256];
    size_t nf = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (strncmp(de->d_name, "part-", 5) != 0 || strcmp(de->d_name + n - 4, ".lzo") != 0)
            continue;
        char p[800];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        assert_true(nf < 256);
        files[nf] = calloc(1, sizeof(seqs));
        read_file_seqs(p, files[nf]);
        assert_true(files[nf]->n > 0);
        nf++;
    }
    closedir(d);
    qsort(files, nf, sizeof files[0], seqs_first_cmp);
    size_t k = 0;
    for (size_t i = 0; i < nf; i++) {
        for (size_t j = 0; j < files[i]->n; j++) {
            if (k >= nwant || files[i]->v[j] != want[k])
                fail_msg("%s: record %zu is n=%ld, want %ld", unit, k, files[i]->v[j],
                         k < nwant ? want[k] : -1L);
            k++;
        }
        free(files[i]);
    }
    assert_int_equal(k, nwant);
}

/* ---- a writer goes on while its landing is held ---------------------- */

static sort_pack *data_pack(sort_unit *const *u, long from, long to, uint64_t batch)
{
    sort_pack *p = calloc(1, sizeof *p);
    assert_non_null(p);
    for (long i = from; i < to; i++) {
        char rec[128];
        int len = snprintf(rec, sizeof rec, "{\"if\":\"%s\",\"ts\":%d,\"n\":%ld}", u[i % 2]->iface,
                           T0 + (int)i, i);
        sort_pack_add(p, u[i % 2], 0, 0, (sort_off){0, (uint64_t)i}, rec, (uint32_t)len);
    }
    sort_pack_stamp(p, 0, (sort_off){0, (uint64_t)to});
    p->batch = batch;
    return p;
}

static void test_writer_compresses_while_landing(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    sort_spec *s = make_spec(&t, ",\"output\":{\"fsync\":true}");
    sort_units units;
    sort_units_init(&units, s);
    sort_unit *u[2] = {sort_units_get(&units, "a", 1, T0), sort_units_get(&units, "b", 1, T0)};
    gate_blob g = {.base.ops = &gate_ops};
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    orr_err err;
    assert_int_equal(orr_blob_open(t.blob, &g.inner, &err), ORR_OK);
    sort_queue pool;
    sort_queue_init(&pool);
    sort_landings landings;
    sort_landings_init(&landings);
    sort_writer w;
    assert_int_equal(sort_writer_start(&w, 0, s, sort_format_find("jsonl"), &g.base, t.work, 16, 0,
                                       &pool, &landings, &err),
                     ORR_OK);

    /* Records 0..9, then a roll of both units: their files go to the
     * lander, which waits at the gate. */
    sort_queue_push(&w.in, data_pack(u, 0, 10, 1));
    sort_pack *roll = calloc(1, sizeof *roll);
    roll->kind = SORT_PACK_ROLL;
    roll->roll_before = u[0]->bucket_end;
    roll->seq = 1;
    sort_queue_push(&w.in, roll);
    WAIT_FOR(gate_entered(&g) == 1);

    /* Records 10..19 are appended while the first files are held. */
    sort_queue_push(&w.in, data_pack(u, 10, 20, 2));
    WAIT_FOR(sort_writer_done_batch(&w) == 2);
    assert_int_equal(gate_entered(&g), 1);
    /* Nothing held is acknowledged, reported or committed past. */
    assert_int_equal(sort_writer_acked(&w), 0);
    sort_off safe;
    assert_true(sort_writer_safe(&w, 0, &safe));
    assert_int_equal(safe.lo, 0);
    sort_landing *v = NULL;
    assert_int_equal(sort_landings_take(&landings, &v), 0);
    free(v);

    /* Open the gate: the held files land, acknowledged; the safe position
     * then stops at the first record of the open files. */
    gate_open(&g);
    WAIT_FOR(sort_writer_acked(&w) == 1);
    assert_true(sort_writer_safe(&w, 0, &safe));
    assert_int_equal(safe.lo, 10);

    sort_pack *stop = calloc(1, sizeof *stop);
    stop->kind = SORT_PACK_STOP;
    stop->roll_before = INT64_MAX;
    stop->seq = 2;
    sort_queue_push(&w.in, stop);
    sort_writer_join(&w);

    size_t n = sort_landings_take(&landings, &v);
    assert_int_equal(n, 4); /* two files per unit: before and after the roll */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i].count;
    free(v);
    assert_int_equal(total, 20);
    long wa[10], wb[10];
    for (int i = 0; i < 10; i++) {
        wa[i] = 2 * i;
        wb[i] = 2 * i + 1;
    }
    check_unit(&t, "biz/a/2024050110", wa, 10);
    check_unit(&t, "biz/b/2024050110", wb, 10);

    sort_landings_destroy(&landings);
    sort_queue_destroy(&pool);
    orr_blob_close(g.inner);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    sort_units_free(&units);
    sort_spec_free(s);
    tdir_remove(&t);
}

/* ---- the pipeline: two writers, many rolls, every record once --------- */

#define PIPE_IFACES  6
#define PIPE_RECORDS 3000

static volatile sig_atomic_t no_stop;

static void test_pipeline_lands_each_record_once_in_order(void **state)
{
    (void)state;
    tdir t;
    tdir_make(&t);
    char p[512];
    snprintf(p, sizeof p, "%s/001.jsonl", t.in);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    /* Two hours, six interfaces; a small roll size makes many files per
     * unit, so landings run while the writers append. */
    for (long i = 0; i < PIPE_RECORDS; i++)
        fprintf(f, "{\"if\":\"i%ld\",\"ts\":%ld,\"n\":%ld}\n", i % PIPE_IFACES,
                T0 + i * 7200 / PIPE_RECORDS, i);
    fclose(f);
    sort_spec *s = make_spec(&t, ",\"output\":{\"roll_size\":1024,\"fsync\":true}");
    sort_pipe_cfg c = {
        .spec = s,
        .work_dir = t.work,
        .state_dir = t.state,
        .blob_url = t.blob,
        .writers = 2,
        .packs = 4,
        .pack_bytes = 2048,
        .max_open_units = 64,
        .stop = &no_stop,
    };
    sort_pipe_stats st;
    orr_err err;
    orr_err_clear(&err);
    if (sort_pipe_run(&c, &st, &err) != ORR_OK)
        fail_msg("pipeline: %s: %s", err.field, err.msg);
    assert_int_equal(st.records_out, PIPE_RECORDS);
    assert_int_equal(st.w.records, PIPE_RECORDS);
    assert_true(st.w.rolls_size > 20);
    for (int k = 0; k < PIPE_IFACES; k++)
        for (int h = 0; h < 2; h++) {
            long want[PIPE_RECORDS];
            size_t nw = 0;
            for (long i = k; i < PIPE_RECORDS; i += PIPE_IFACES)
                if ((i * 7200 / PIPE_RECORDS) / 3600 == h)
                    want[nw++] = i;
            char unit[64];
            snprintf(unit, sizeof unit, "biz/i%d/20240501%02d", k, 10 + h);
            check_unit(&t, unit, want, nw);
        }
    sort_spec_free(s);
    tdir_remove(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_compresses_while_landing),
        cmocka_unit_test(test_pipeline_lands_each_record_once_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* sort_check.c - _CHECK documents (see sort_check.h). */
#include "sort_check.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_json.h"
#include "orr_log.h"

static int lfile_cmp(const void *a, const void *b)
{
    const sort_lfile *x = *(const sort_lfile *const *)a, *y = *(const sort_lfile *const *)b;
    return strcmp(x->name, y->name);
}

int sort_check_stale(const sort_unit *u)
{
    return u->check_version == 0 || u->nfiles != u->checked_nfiles || u->late != u->checked_late;
}

/* Render the next _CHECK version of u into out; *c gets what it counts. */
static void check_render(const sort_spec *spec, const sort_unit *u, orr_buf *out,
                         sort_check_counts *c)
{
    sort_lfile **v = orr_xcalloc(u->nfiles ? u->nfiles : 1, sizeof *v);
    size_t n = 0;
    uint64_t total = 0, total_bytes = 0;
    for (sort_lfile *f = u->files; f; f = f->next) {
        v[n++] = f;
        total += f->count;
        total_bytes += f->bytes;
    }
    qsort(v, n, sizeof *v, lfile_cmp);
    json_t *files = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(files,
                              json_pack("{s:s,s:I,s:I}", "name", v[i]->name, "records",
                                        (json_int_t)v[i]->count, "bytes", (json_int_t)v[i]->bytes));
    free(v);
    json_t *doc =
        json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:o,s:I,s:I,s:I}", "stream", spec->name, "business",
                  spec->business, "interface", u->iface, "bucket", u->label, "bucket_start",
                  (json_int_t)u->bucket_start, "version", (json_int_t)(u->check_version + 1),
                  "files", files, "total", (json_int_t)total, "total_bytes",
                  (json_int_t)total_bytes, "late_records", (json_int_t)u->late);
    orr_json_dump_buf(doc, out);
    orr_buf_append_byte(out, '\n');
    json_decref(doc);
    c->nfiles = n;
    c->total = total;
    c->bytes = total_bytes;
    c->late = u->late;
}

void sort_check_render(const sort_spec *spec, sort_unit **units, size_t n, sort_check_batch *out)
{
    memset(out, 0, sizeof *out);
    out->units = units;
    out->n = n;
    out->items = orr_xcalloc(n ? n : 1, sizeof *out->items);
    out->counts = orr_xcalloc(n ? n : 1, sizeof *out->counts);
    size_t *ends = orr_xcalloc(n ? n : 1, sizeof *ends),
           *relends = orr_xcalloc(n ? n : 1, sizeof *relends);
    for (size_t i = 0; i < n; i++) {
        check_render(spec, units[i], &out->docs, &out->counts[i]);
        ends[i] = out->docs.len;
        orr_buf_append_str(&out->rels, units[i]->dir);
        orr_buf_append(&out->rels, "/_CHECK", 8); /* with its NUL */
        relends[i] = out->rels.len;
    }
    /* The buffers are complete: point the items into them. */
    for (size_t i = 0; i < n; i++) {
        size_t d0 = i ? ends[i - 1] : 0, r0 = i ? relends[i - 1] : 0;
        out->items[i].rel = out->rels.data + r0;
        out->items[i].data = out->docs.data + d0;
        out->items[i].len = ends[i] - d0;
    }
    free(ends);
    free(relends);
}

orr_status sort_check_put(orr_blob *blob, sort_check_batch *b)
{
    orr_err_clear(&b->err);
    b->landed = 0;
    b->rc = b->n ? blob->ops->put_many(blob, b->items, b->n, 1, &b->landed, &b->err) : ORR_OK;
    return b->rc;
}

size_t sort_check_apply(sort_check_batch *b)
{
    for (size_t i = 0; i < b->landed; i++) {
        b->units[i]->check_version++;
        b->units[i]->checked_nfiles = b->counts[i].nfiles;
        b->units[i]->checked_late = b->counts[i].late;
    }
    return b->landed;
}

void sort_check_landed_view(const sort_check_batch *b, size_t i, sort_unit *view)
{
    *view = *b->units[i];
    view->nfiles = b->counts[i].nfiles;
    view->total = b->counts[i].total;
    view->total_bytes = b->counts[i].bytes;
    view->late = b->counts[i].late;
}

void sort_check_batch_free(sort_check_batch *b)
{
    free(b->items);
    free(b->counts);
    orr_buf_free(&b->docs);
    orr_buf_free(&b->rels);
    memset(b, 0, sizeof *b);
}

orr_status sort_check_write_many(orr_blob *blob, const sort_spec *spec, sort_unit **units, size_t n,
                                 size_t *written, orr_err *err)
{
    sort_check_batch b;
    sort_check_render(spec, units, n, &b);
    orr_status rc = sort_check_put(blob, &b);
    size_t landed = sort_check_apply(&b);
    if (written)
        *written = landed;
    if (rc != ORR_OK && err)
        *err = b.err;
    sort_check_batch_free(&b);
    return rc;
}

orr_status sort_check_write(orr_blob *blob, const sort_spec *spec, sort_unit *u, orr_err *err)
{
    return sort_check_write_many(blob, spec, &u, 1, NULL, err);
}

static void check_log(void *ctx, const sort_spec *spec, const sort_unit *u)
{
    (void)ctx;
    ORR_INFO("unit reconciled",
             "stream=%s unit=%s version=%" PRIu32 " files=%zu records=%" PRIu64 " bytes=%" PRIu64
             " late=%" PRIu64,
             spec->name, orr_log_q(u->dir), u->check_version, u->nfiles, u->total, u->total_bytes,
             u->late);
}

const sort_check_sink sort_check_log_sink = {NULL, check_log};

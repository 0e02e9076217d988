/* sort_check.c - _CHECK documents (see sort_check.h). */
#include "sort_check.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

orr_status sort_check_write(orr_blob *blob, const sort_spec *spec, sort_unit *u, orr_err *err)
{
    sort_lfile **v = calloc(u->nfiles ? u->nfiles : 1, sizeof *v);
    if (!v)
        abort();
    size_t n = 0;
    uint64_t total = 0;
    for (sort_lfile *f = u->files; f; f = f->next) {
        v[n++] = f;
        total += f->count;
    }
    qsort(v, n, sizeof *v, lfile_cmp);
    json_t *files = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            files, json_pack("{s:s,s:I}", "name", v[i]->name, "records", (json_int_t)v[i]->count));
    free(v);
    json_t *doc =
        json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:o,s:I,s:I}", "stream", spec->name, "business",
                  spec->business, "interface", u->iface, "bucket", u->label, "bucket_start",
                  (json_int_t)u->bucket_start, "version", (json_int_t)(u->check_version + 1),
                  "files", files, "total", (json_int_t)total, "late_records", (json_int_t)u->late);
    orr_buf out = ORR_BUF_INIT;
    orr_json_dump_buf(doc, &out);
    orr_buf_append_byte(&out, '\n');
    json_decref(doc);
    char rel[4096];
    snprintf(rel, sizeof rel, "%s/_CHECK", u->dir);
    orr_status rc = blob->ops->put_bytes(blob, rel, out.data, out.len, err);
    orr_buf_free(&out);
    if (rc != ORR_OK)
        return rc;
    u->check_version++;
    u->checked_nfiles = n;
    u->checked_late = u->late;
    return ORR_OK;
}

static void check_log(void *ctx, const sort_spec *spec, const sort_unit *u)
{
    (void)ctx;
    ORR_INFO("unit reconciled",
             "stream=%s unit=%s version=%" PRIu32 " files=%zu records=%" PRIu64 " late=%" PRIu64,
             spec->name, orr_log_q(u->dir), u->check_version, u->nfiles, u->total, u->late);
}

const sort_check_sink sort_check_log_sink = {NULL, check_log};

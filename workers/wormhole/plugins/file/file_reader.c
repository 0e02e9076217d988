/*
 * file_reader.c - delimited text (CSV, TSV/escaped text, any delimiter) and
 * fixed-width files, plain, gzip or lzop, one file per shard.
 *
 * The reader keeps a window of the file in a buffer and parses whole records
 * from it; when a record runs past the window (a quoted field with embedded
 * newlines, a huge value), the next read at least doubles the window, so a
 * record of any size is parsed in amortised linear time. Records with the
 * wrong number of fields or broken quoting are dirty rows (reported with
 * their record number), never a failure of the run by themselves.
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "file_common.h"

#define FILE_CHUNK (1u << 20)

static orr_status file_reader_configure(const json_t *spec, const char *path, void **conf,
                                        orr_err *err)
{
    wh_file_conf *c = NULL;
    orr_status rc = wh_file_conf_parse(spec, path, 1, &c, err);
    *conf = c;
    return rc;
}

typedef struct file_reader {
    wh_file_conf *c;
    wh_ctx *ctx;
    wh_file_in in;
    int open;
    orr_buf buf;
    size_t pos;
    int eof;
    uint64_t rownum;
    int skip_header;
    size_t shard;
    wh_batch *scratch; /* header parsing */
} file_reader;

/* Read more bytes: at least FILE_CHUNK, and at least the unparsed bytes so
 * the window doubles while one record does not fit. */
static orr_status file_fill(file_reader *r, orr_err *err)
{
    if (r->pos > 0) {
        orr_buf_consume(&r->buf, r->pos);
        r->pos = 0;
    }
    size_t want = r->buf.len > FILE_CHUNK ? r->buf.len : FILE_CHUNK;
    orr_buf_reserve(&r->buf, want);
    size_t n = 0;
    orr_status rc = wh_file_in_read(&r->in, r->buf.data + r->buf.len, want, &n, err);
    if (rc) {
        if (!err->field[0])
            snprintf(err->field, sizeof(err->field), "%s", r->c->path_json);
        return rc;
    }
    if (n == 0)
        r->eof = 1;
    r->buf.len += n;
    r->buf.data[r->buf.len] = 0;
    return ORR_OK;
}

/* One record into b's open row. WH_REC_* like wh_text_record. */
static int file_record(file_reader *r, wh_batch *b, size_t *used, const char **why)
{
    const char *p = r->buf.data + r->pos;
    size_t n = r->buf.len - r->pos;
    if (r->c->format != WH_FILE_FIXED)
        return wh_text_record(&r->c->fmt, p, n, r->eof, b, used, why);
    const char *nl = memchr(p, '\n', n);
    if (!nl && !r->eof)
        return WH_REC_MORE;
    size_t len = nl ? (size_t)(nl - p) : n;
    *used = nl ? len + 1 : n;
    if (wh_fixed_parse(p, len, r->c->widths, r->c->cols.ncols, b, why) != 0) {
        wh_batch_row_abort(b);
        return WH_REC_BAD;
    }
    return WH_REC_OK;
}

static int file_blank(const char *p, size_t used)
{
    return (used == 1 && p[0] == '\n') || (used == 2 && p[0] == '\r' && p[1] == '\n');
}

static orr_status file_open_shard(file_reader *r, const char *path, orr_err *err)
{
    if (r->open)
        wh_file_in_close(&r->in);
    r->open = 0;
    orr_buf_reset(&r->buf);
    r->pos = 0;
    r->eof = 0;
    r->rownum = 0;
    orr_status rc = wh_file_in_open(&r->in, path, r->c->comp, err);
    if (rc) {
        snprintf(err->field, sizeof(err->field), "%s", r->c->path_json);
        return rc;
    }
    r->open = 1;
    r->skip_header = r->c->header;
    return ORR_OK;
}

static orr_status file_reader_describe(void *conf, wh_ctx *ctx, wh_schema *out, orr_err *err)
{
    (void)ctx;
    wh_file_conf *c = conf;
    if (c->cols.ncols > 0) {
        for (size_t i = 0; i < c->cols.ncols; i++)
            *wh_schema_add(out, "", "", WH_K_TEXT) = c->cols.cols[i];
        return ORR_OK;
    }
    /* Names from the header line of the first file. */
    file_reader r = {0};
    r.c = c;
    r.in.fd = -1;
    wh_batch *b = wh_batch_new(1, 1 << 16);
    wh_batch_reset(b, 4096);
    /* The first file: the first match when the path is a pattern. */
    glob_t g;
    memset(&g, 0, sizeof(g));
    const char *first = c->paths[0];
    if (strpbrk(first, "*?[") && glob(first, 0, NULL, &g) == 0 && g.gl_pathc > 0)
        first = g.gl_pathv[0];
    orr_status rc = file_open_shard(&r, first, err);
    size_t used = 0;
    const char *why = "";
    int got = WH_REC_MORE;
    while (!rc) {
        wh_batch_row_begin(b, 1);
        got = file_record(&r, b, &used, &why);
        if (got != WH_REC_MORE || r.eof)
            break;
        rc = file_fill(&r, err);
    }
    if (!rc && (got != WH_REC_OK || r.buf.len == 0)) {
        char p[96];
        snprintf(p, sizeof(p), "%s.header", c->path_json);
        rc = orr_err_set(err, ORR_EINVAL, p, "cannot read a header line from %s%s%s", first,
                         why[0] ? ": " : "", why);
    }
    if (!rc) {
        size_t n = b->cur > 4096 ? 4096 : b->cur;
        for (size_t i = 0; i < n; i++) {
            int64_t len = b->f[i].len;
            char name[128];
            snprintf(name, sizeof(name), "%.*s", len < 0 ? 0 : (int)len,
                     b->data.data + b->f[i].off);
            wh_schema_add(out, name, "file text", WH_K_TEXT);
        }
    }
    if (r.open)
        wh_file_in_close(&r.in);
    orr_buf_free(&r.buf);
    wh_batch_free(b);
    globfree(&g);
    return rc;
}

static orr_status file_reader_open(void *conf, wh_ctx *ctx, void **state, orr_err *err)
{
    (void)err;
    file_reader *r = orr_xcalloc(1, sizeof(*r));
    r->c = conf;
    r->ctx = ctx;
    r->in.fd = -1;
    *state = r;
    return ORR_OK;
}

static orr_status file_reader_start(void *state, const wh_shard *shard, orr_err *err)
{
    file_reader *r = state;
    r->shard = shard->id;
    return file_open_shard(r, shard->path ? shard->path : r->c->paths[0], err);
}

static orr_status file_reader_read(void *state, wh_batch *b, orr_err *err)
{
    file_reader *r = state;
    while (!wh_batch_full(b)) {
        if (r->pos == r->buf.len) {
            if (r->eof)
                return ORR_EOF;
            orr_status rc = file_fill(r, err);
            if (rc)
                return rc;
            continue;
        }
        size_t used = 0;
        const char *why = "";
        wh_batch_row_begin(b, r->rownum + 1);
        int got = file_record(r, b, &used, &why);
        if (got == WH_REC_MORE) {
            orr_status rc = file_fill(r, err);
            if (rc)
                return rc;
            continue;
        }
        const char *raw = r->buf.data + r->pos;
        r->pos += used;
        b->src_bytes += used;
        if (got == WH_REC_OK && file_blank(raw, used) && b->ncols > 1) {
            wh_batch_row_abort(b);
            continue;
        }
        r->rownum++;
        if (got == WH_REC_OK && r->skip_header) {
            r->skip_header = 0;
            wh_batch_row_abort(b);
            continue;
        }
        r->skip_header = 0;
        if (got == WH_REC_OK && wh_batch_row_end(b) == ORR_OK)
            continue;
        if (got == WH_REC_OK)
            why = "wrong number of fields";
        if (wh_ctx_dirty_raw(r->ctx, r->shard, r->rownum, raw, used, why) != ORR_OK)
            return orr_err_set(err, ORR_ETOOBIG, "max_dirty_rows", "too many dirty rows");
    }
    return ORR_OK;
}

static void file_reader_close(void *state)
{
    file_reader *r = state;
    if (!r)
        return;
    if (r->open)
        wh_file_in_close(&r->in);
    orr_buf_free(&r->buf);
    free(r);
}

const wh_reader_ops wh_file_reader = {
    .configure = file_reader_configure,
    .conf_free = wh_file_conf_free,
    .describe = file_reader_describe,
    .open = file_reader_open,
    .start = file_reader_start,
    .read = file_reader_read,
    .close = file_reader_close,
};

/*
 * file_writer.c - writes delimited or fixed-width text, plain, gzip or lzop
 * (with an optional hadoop-lzo index). One channel: a file is one stream.
 * The file appears under its name only when the run commits (file_common.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "file_common.h"

static orr_status file_writer_configure(const json_t *spec, const char *path, void **conf,
                                        orr_err *err)
{
    wh_file_conf *c = NULL;
    orr_status rc = wh_file_conf_parse(spec, path, 0, &c, err);
    *conf = c;
    return rc;
}

static int file_writer_max_channels(void *conf, int wanted)
{
    (void)conf;
    (void)wanted;
    return 1;
}

typedef struct file_writer {
    wh_file_conf *c;
    wh_ctx *ctx;
    const char *name;
    wh_file_out out;
    int opened;
    orr_buf line;
    uint64_t rows;
} file_writer;

static orr_status file_writer_open(void *conf, wh_ctx *ctx, const wh_schema *src, const char *name,
                                   void **state, orr_err *err)
{
    wh_file_conf *c = conf;
    file_writer *w = orr_xcalloc(1, sizeof(*w));
    w->c = c;
    w->ctx = ctx;
    w->name = name;
    orr_status rc =
        wh_file_out_open(&w->out, c->path, c->comp, c->append, c->gzip_level, c->lzo_index, err);
    if (rc) {
        snprintf(err->field, sizeof(err->field), "%s.path", c->path_json);
        free(w);
        return rc;
    }
    w->opened = 1;
    if (c->header && !(c->append && w->out.old_size > 0) && c->format != WH_FILE_FIXED) {
        for (size_t i = 0; i < src->ncols; i++) {
            const char *n = i < c->cols.ncols ? c->cols.cols[i].name : src->cols[i].name;
            if (i)
                orr_buf_append_byte(&w->line, c->fmt.delim);
            wh_text_encode(&c->fmt, &w->line, n, (int64_t)strlen(n));
        }
        orr_buf_append_byte(&w->line, '\n');
        rc = wh_file_out_write(&w->out, w->line.data, w->line.len, err);
        orr_buf_reset(&w->line);
        if (rc) {
            wh_file_out_close(&w->out, 0, err);
            orr_buf_free(&w->line);
            free(w);
            return rc;
        }
    }
    *state = w;
    return ORR_OK;
}

static orr_status file_writer_write(void *state, const wh_batch *b, wh_wstats *st, orr_err *err)
{
    file_writer *w = state;
    const wh_file_conf *c = w->c;
    for (size_t r = 0; r < b->nrows; r++) {
        orr_buf_reset(&w->line);
        const char *why = NULL;
        for (size_t col = 0; col < b->ncols; col++) {
            int64_t len;
            const char *v = wh_batch_val(b, r, col, &len);
            if (c->format == WH_FILE_FIXED) {
                size_t width = col < c->cols.ncols ? (size_t)c->widths[col] : 0;
                size_t n = len < 0 ? 0 : (size_t)len;
                if (n > width || (v && memchr(v, '\n', n))) {
                    why = n > width ? "value wider than its fixed-width field"
                                    : "line break in a fixed-width field";
                    break;
                }
                if (n)
                    orr_buf_append(&w->line, v, n);
                for (size_t k = n; k < width; k++)
                    orr_buf_append_byte(&w->line, ' ');
                continue;
            }
            if (col)
                orr_buf_append_byte(&w->line, c->fmt.delim);
            wh_text_encode(&c->fmt, &w->line, v, len);
        }
        if (why) {
            if (wh_ctx_dirty(w->ctx, w->name, b, r, why) != ORR_OK)
                return orr_err_set(err, ORR_ETOOBIG, "max_dirty_rows", "too many dirty rows");
            continue;
        }
        orr_buf_append_byte(&w->line, '\n');
        orr_status rc = wh_file_out_write(&w->out, w->line.data, w->line.len, err);
        if (rc)
            return rc;
        st->rows++;
        st->bytes += w->line.len;
        w->rows++;
    }
    return ORR_OK;
}

static orr_status file_writer_flush(void *state, uint64_t *confirmed, orr_err *err)
{
    (void)err;
    file_writer *w = state;
    *confirmed = w->rows;
    return ORR_OK;
}

static orr_status file_writer_close(void *state, int commit, orr_err *err)
{
    file_writer *w = state;
    if (!w)
        return ORR_OK;
    orr_status rc = wh_file_out_close(&w->out, commit, err);
    orr_buf_free(&w->line);
    free(w);
    return rc;
}

const wh_writer_ops wh_file_writer = {
    .configure = file_writer_configure,
    .conf_free = wh_file_conf_free,
    .max_channels = file_writer_max_channels,
    .open = file_writer_open,
    .write = file_writer_write,
    .flush = file_writer_flush,
    .close = file_writer_close,
};

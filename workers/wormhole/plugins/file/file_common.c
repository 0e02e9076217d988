/* file_common.c - file plugin options and byte streams (see file_common.h). */
#include "file_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_json.h"

static int file_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

wh_file_comp wh_file_comp_of(wh_file_comp c, const char *path)
{
    if (c != WH_FILE_AUTO)
        return c;
    if (file_ends_with(path, ".gz"))
        return WH_FILE_GZIP;
    if (file_ends_with(path, ".lzo"))
        return WH_FILE_LZO;
    return WH_FILE_NONE;
}

static orr_status file_one_char(const json_t *spec, const char *path, const char *key, char *out,
                                orr_err *err)
{
    const char *s = NULL;
    char p[96];
    orr_status rc = orr_json_get_str(spec, path, key, 0, &s, err);
    if (rc || !s)
        return rc;
    if (strlen(s) != 1 || s[0] == '\n' || s[0] == '\r')
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, key),
                           "must be one character (not a line break)");
    out[0] = s[0];
    return ORR_OK;
}

static orr_status file_parse_columns(const json_t *spec, const char *path, wh_file_conf *c,
                                     orr_err *err)
{
    json_t *cols = NULL;
    char p[96], q[128];
    orr_status rc = orr_json_get_array(spec, path, "columns", 0, &cols, err);
    if (rc || !cols)
        return rc;
    orr_json_path(p, sizeof(p), path, "columns");
    size_t n = json_array_size(cols);
    if (n == 0)
        return orr_err_set(err, ORR_EINVAL, p, "must not be empty");
    c->widths = orr_xcalloc(n, sizeof(int));
    static const char *const keys[] = {"name", "type", "width", NULL};
    for (size_t i = 0; i < n; i++) {
        json_t *col = json_array_get(cols, i);
        orr_json_index_path(q, sizeof(q), p, i);
        const char *name = NULL, *type = "text";
        int64_t width = 0;
        if ((rc = orr_json_allow_keys(col, q, keys, err)) ||
            (rc = orr_json_get_str(col, q, "name", 1, &name, err)) ||
            (rc = orr_json_get_str(col, q, "type", 0, &type, err)) ||
            (rc = orr_json_get_int(col, q, "width", c->format == WH_FILE_FIXED, 1, 1 << 20, &width,
                                   err)))
            return rc;
        int kind = wh_kind_parse(type);
        if (kind < 0) {
            char t[160];
            return orr_err_set(err, ORR_EINVAL, orr_json_path(t, sizeof(t), q, "type"),
                               "unknown type \"%s\" (text, int, numeric, float, bool, date, time, "
                               "timestamp, timestamptz, bytes, json, array)",
                               type);
        }
        /* "file text" never equals a store's type name, so writers always
         * check values read from files (UTF-8, numbers, dates...). */
        char type_name[32];
        snprintf(type_name, sizeof(type_name), "file %s", wh_kind_name((wh_kind)kind));
        wh_schema_add(&c->cols, name, type_name, (wh_kind)kind);
        c->widths[i] = (int)width;
    }
    return ORR_OK;
}

orr_status wh_file_conf_parse(const json_t *spec, const char *path, int is_reader,
                              wh_file_conf **out, orr_err *err)
{
    static const char *const rkeys[] = {"path",        "paths",   "format", "delimiter",
                                        "quote",       "header",  "null",   "encoding",
                                        "compression", "columns", NULL};
    static const char *const wkeys[] = {
        "path",        "format",  "delimiter", "quote",      "header",    "null", "encoding",
        "compression", "columns", "mode",      "gzip_level", "lzo_index", NULL};
    orr_status rc;
    char p[96];
    *out = NULL;
    wh_file_conf *c = orr_xcalloc(1, sizeof(*c));
    snprintf(c->path_json, sizeof(c->path_json), "%s", path);
    c->gzip_level = 6;
    const char *format = "csv", *comp = "auto", *enc = "utf-8", *null = NULL, *mode = "truncate";
    if ((rc = wh_allow_keys(spec, path, is_reader ? rkeys : wkeys, is_reader, err)) ||
        (rc = orr_json_get_str(spec, path, "format", 0, &format, err)) ||
        (rc = orr_json_get_str(spec, path, "compression", 0, &comp, err)) ||
        (rc = orr_json_get_str(spec, path, "encoding", 0, &enc, err)) ||
        (rc = orr_json_get_str(spec, path, "null", 0, &null, err)) ||
        (rc = orr_json_get_bool(spec, path, "header", 0, &c->header, err)))
        goto fail;
    if (!strcmp(format, "csv")) {
        c->format = WH_FILE_CSV;
        wh_textfmt_csv(&c->fmt, ',');
    } else if (!strcmp(format, "tsv")) {
        c->format = WH_FILE_TEXT;
        wh_textfmt_escaped(&c->fmt, '\t');
    } else if (!strcmp(format, "text")) {
        c->format = WH_FILE_TEXT;
        wh_textfmt_escaped(&c->fmt, '\t');
    } else if (!strcmp(format, "fixed")) {
        c->format = WH_FILE_FIXED;
        wh_textfmt_escaped(&c->fmt, '\t');
    } else {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "format"),
                         "must be csv, tsv, text or fixed");
        goto fail;
    }
    c->delim[0] = c->fmt.delim;
    c->quote[0] = '"';
    if ((rc = file_one_char(spec, path, "delimiter", c->delim, err)) ||
        (rc = file_one_char(spec, path, "quote", c->quote, err)))
        goto fail;
    c->fmt.delim = c->delim[0];
    c->fmt.quote = c->quote[0];
    if (c->format == WH_FILE_CSV && c->fmt.delim == c->fmt.quote) {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "quote"),
                         "must differ from the delimiter");
        goto fail;
    }
    if (null) {
        c->fmt.null_str = null;
        c->fmt.null_len = strlen(null);
    }
    if (strcasecmp(enc, "utf-8") != 0 && strcasecmp(enc, "utf8") != 0) {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "encoding"),
                         "only utf-8 is supported");
        goto fail;
    }
    if (!strcmp(comp, "auto"))
        c->comp = WH_FILE_AUTO;
    else if (!strcmp(comp, "none"))
        c->comp = WH_FILE_NONE;
    else if (!strcmp(comp, "gzip"))
        c->comp = WH_FILE_GZIP;
    else if (!strcmp(comp, "lzo"))
        c->comp = WH_FILE_LZO;
    else {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "compression"),
                         "must be auto, none, gzip or lzo");
        goto fail;
    }
    if ((rc = file_parse_columns(spec, path, c, err)))
        goto fail;
    if (c->format == WH_FILE_FIXED && c->cols.ncols == 0) {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "columns"),
                         "is required (with widths) for fixed-width files");
        goto fail;
    }
    if (is_reader) {
        if ((rc = wh_get_str_array(spec, path, "paths", &c->paths, &c->npaths, err)))
            goto fail;
        const char *one = NULL;
        if ((rc = orr_json_get_str(spec, path, "path", !c->paths, &one, err)))
            goto fail;
        if (one && c->paths) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "paths"),
                             "give path or paths, not both");
            goto fail;
        }
        if (one) {
            c->paths = orr_xcalloc(1, sizeof(*c->paths));
            c->paths[0] = one;
            c->npaths = 1;
        }
        if (!c->header && c->cols.ncols == 0) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "columns"),
                             "is required when the file has no header line");
            goto fail;
        }
    } else {
        int64_t level = c->gzip_level;
        if ((rc = orr_json_get_str(spec, path, "path", 1, &c->path, err)) ||
            (rc = orr_json_get_str(spec, path, "mode", 0, &mode, err)) ||
            (rc = orr_json_get_int(spec, path, "gzip_level", 0, 1, 9, &level, err)) ||
            (rc = orr_json_get_bool(spec, path, "lzo_index", 0, &c->lzo_index, err)))
            goto fail;
        c->gzip_level = (int)level;
        if (!strcmp(mode, "append"))
            c->append = 1;
        else if (strcmp(mode, "truncate") != 0 && strcmp(mode, "replace") != 0) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "mode"),
                             "must be truncate, replace or append for files");
            goto fail;
        }
        if (c->append && wh_file_comp_of(c->comp, c->path) == WH_FILE_LZO) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "mode"),
                             "append is not supported for lzo files");
            goto fail;
        }
    }
    *out = c;
    return ORR_OK;
fail:
    wh_file_conf_free(c);
    return rc;
}

void wh_file_conf_free(void *conf)
{
    wh_file_conf *c = conf;
    if (!c)
        return;
    free(c->paths);
    free(c->widths);
    wh_schema_free(&c->cols);
    free(c);
}

/* ---- input ------------------------------------------------------------ */

orr_status wh_file_in_open(wh_file_in *in, const char *path, wh_file_comp comp, orr_err *err)
{
    memset(in, 0, sizeof(*in));
    in->fd = -1;
    snprintf(in->path, sizeof(in->path), "%s", path);
    in->comp = wh_file_comp_of(comp, path);
    if (in->comp == WH_FILE_LZO)
        return orr_lzop_reader_open(path, &in->lz, err);
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0)
        return orr_err_set(err, ORR_EIO, "", "cannot open %s: %s", path, strerror(errno));
    if (in->comp == WH_FILE_GZIP) {
        in->gz = gzdopen(in->fd, "rb");
        if (!in->gz) {
            close(in->fd);
            in->fd = -1;
            return orr_err_set(err, ORR_EIO, "", "cannot open %s as gzip", path);
        }
        gzbuffer(in->gz, 256 * 1024);
        in->fd = -1; /* owned by gz now */
    }
    return ORR_OK;
}

orr_status wh_file_in_read(wh_file_in *in, void *buf, size_t cap, size_t *n, orr_err *err)
{
    *n = 0;
    if (in->lz) {
        orr_status rc = orr_lzop_read(in->lz, buf, cap, n, err);
        if (rc == ORR_EOF) {
            *n = 0;
            return ORR_OK;
        }
        return rc;
    }
    if (in->gz) {
        if (cap > (1u << 30))
            cap = 1u << 30;
        int r = gzread(in->gz, buf, (unsigned)cap);
        if (r < 0) {
            int e;
            return orr_err_set(err, ORR_EIO, "", "cannot read %s: %s", in->path,
                               gzerror(in->gz, &e));
        }
        *n = (size_t)r;
        return ORR_OK;
    }
    for (;;) {
        ssize_t r = read(in->fd, buf, cap);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return orr_err_set(err, ORR_EIO, "", "cannot read %s: %s", in->path, strerror(errno));
        *n = (size_t)r;
        return ORR_OK;
    }
}

void wh_file_in_close(wh_file_in *in)
{
    if (in->lz)
        orr_lzop_reader_close(in->lz);
    if (in->gz)
        gzclose(in->gz);
    if (in->fd >= 0)
        close(in->fd);
    in->lz = NULL;
    in->gz = NULL;
    in->fd = -1;
}

/* ---- output ----------------------------------------------------------- */

orr_status wh_file_out_open(wh_file_out *o, const char *path, wh_file_comp comp, int append,
                            int level, int lzo_index, orr_err *err)
{
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    o->comp = wh_file_comp_of(comp, path);
    o->append = append;
    snprintf(o->path, sizeof(o->path), "%s", path);
    snprintf(o->tmp, sizeof(o->tmp), "%s.wh-tmp", path);
    const char *target = append ? o->path : o->tmp;
    if (o->comp == WH_FILE_LZO) {
        orr_lzop_opts opts = {0};
        const char *slash = strrchr(path, '/');
        opts.name = slash ? slash + 1 : path;
        opts.flags = lzo_index ? ORR_LZOP_WITH_INDEX : 0;
        return orr_lzop_writer_open(target, &opts, &o->lz, err);
    }
    o->fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (o->fd < 0)
        return orr_err_set(err, ORR_EIO, "", "cannot create %s: %s", target, strerror(errno));
    if (append) {
        struct stat st;
        o->old_size = fstat(o->fd, &st) == 0 ? st.st_size : 0;
    }
    if (o->comp == WH_FILE_GZIP) {
        char m[8];
        snprintf(m, sizeof(m), "wb%d", level);
        int dupfd = dup(o->fd);
        o->gz = dupfd >= 0 ? gzdopen(dupfd, m) : NULL;
        if (!o->gz) {
            if (dupfd >= 0)
                close(dupfd);
            return orr_err_set(err, ORR_EIO, "", "cannot open %s for gzip", target);
        }
        gzbuffer(o->gz, 256 * 1024);
    }
    return ORR_OK;
}

static orr_status file_out_raw(wh_file_out *o, const void *p, size_t n, orr_err *err)
{
    if (o->lz)
        return orr_lzop_write(o->lz, p, n, err);
    if (o->gz) {
        while (n > 0) {
            unsigned k = n > (1u << 30) ? (1u << 30) : (unsigned)n;
            if (gzwrite(o->gz, p, k) != (int)k) {
                int e;
                return orr_err_set(err, ORR_EIO, "", "cannot write %s: %s", o->path,
                                   gzerror(o->gz, &e));
            }
            p = (const char *)p + k;
            n -= k;
        }
        return ORR_OK;
    }
    while (n > 0) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return orr_err_set(err, ORR_EIO, "", "cannot write %s: %s", o->path, strerror(errno));
        p = (const char *)p + w;
        n -= (size_t)w;
    }
    return ORR_OK;
}

orr_status wh_file_out_write(wh_file_out *o, const void *p, size_t n, orr_err *err)
{
    o->bytes += n;
    orr_buf_append(&o->buf, p, n);
    if (o->buf.len < 256 * 1024)
        return ORR_OK;
    orr_status rc = file_out_raw(o, o->buf.data, o->buf.len, err);
    orr_buf_reset(&o->buf);
    return rc;
}

orr_status wh_file_out_close(wh_file_out *o, int commit, orr_err *err)
{
    orr_status rc = ORR_OK;
    if (commit && o->buf.len)
        rc = file_out_raw(o, o->buf.data, o->buf.len, err);
    orr_buf_free(&o->buf);
    if (o->lz) {
        if (commit && rc == ORR_OK)
            rc = orr_lzop_writer_close(o->lz, NULL, err);
        else
            orr_lzop_writer_abort(o->lz);
        o->lz = NULL;
    }
    if (o->gz) {
        if (gzclose(o->gz) != Z_OK && commit && rc == ORR_OK)
            rc = orr_err_set(err, ORR_EIO, "", "cannot finish %s", o->path);
        o->gz = NULL;
    }
    if (o->fd >= 0) {
        if (commit && rc == ORR_OK && fsync(o->fd) != 0)
            rc = orr_err_set(err, ORR_EIO, "", "cannot sync %s: %s", o->path, strerror(errno));
        if (!(commit && rc == ORR_OK) && o->append && ftruncate(o->fd, o->old_size) != 0)
            rc = rc ? rc : orr_err_set(err, ORR_EIO, "", "cannot restore %s", o->path);
        close(o->fd);
        o->fd = -1;
    }
    if (o->append)
        return rc;
    char idx_tmp[560], idx[540];
    snprintf(idx_tmp, sizeof(idx_tmp), "%s.index", o->tmp);
    snprintf(idx, sizeof(idx), "%s.index", o->path);
    if (commit && rc == ORR_OK) {
        if (rename(o->tmp, o->path) != 0)
            rc = orr_err_set(err, ORR_EIO, "", "cannot rename %s to %s: %s", o->tmp, o->path,
                             strerror(errno));
        if (access(idx_tmp, F_OK) == 0 && rename(idx_tmp, idx) != 0 && rc == ORR_OK)
            rc = orr_err_set(err, ORR_EIO, "", "cannot rename %s", idx_tmp);
    } else {
        unlink(o->tmp);
        unlink(idx_tmp);
    }
    return rc;
}

/* The plugin: the one symbol the registry (wh_registry.c) knows. */
const wh_plugin wh_file_plugin = {
    .name = "file",
    .reader = &wh_file_reader,
    .writer = &wh_file_writer,
    .splitter = &wh_file_splitter,
    .writer_periphery = &wh_file_writer_periphery,
    .meta = &wh_file_meta,
};

/*
 * wh_preview.c - `wormhole preview` (design in wh_preview.h).
 *
 * The capture sink is a writer plugin of its own, never registered: after
 * the job is parsed, writers[0]'s plugin and conf are swapped for it (and
 * swapped back before the job is freed, so the real plugin frees its conf).
 * It stops the run by failing its write with ORR_EOF once it holds the rows
 * it wants; the engine then cancels the readers, and the preview treats that
 * failure (and the dirty limit, set to the same count) as the end.
 */
#include "wh_preview.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "orr_json.h"
#include "wh_engine.h"
#include "wh_job.h"

typedef struct wh_capture {
    pthread_mutex_t lock;
    size_t want;
    json_t *columns; /* set by open */
    json_t *rows;
} wh_capture;

static int cap_max_channels(void *conf, int wanted)
{
    (void)conf;
    (void)wanted;
    return 1;
}

static orr_status cap_open(void *conf, wh_ctx *ctx, const wh_schema *src, const char *name,
                           void **state, orr_err *err)
{
    (void)ctx;
    (void)name;
    (void)err;
    wh_capture *c = conf;
    pthread_mutex_lock(&c->lock);
    if (!c->columns) {
        c->columns = json_array();
        for (size_t i = 0; i < src->ncols; i++)
            json_array_append_new(
                c->columns, json_pack("{s:s, s:s, s:s}", "name", src->cols[i].name, "kind",
                                      wh_kind_name(src->cols[i].kind), "type", src->cols[i].type));
    }
    pthread_mutex_unlock(&c->lock);
    *state = c;
    return ORR_OK;
}

/* A value as a JSON string; bytes that are not UTF-8 become U+FFFD. */
static json_t *cap_value(const char *p, size_t n)
{
    json_t *s = json_stringn(p, n);
    if (s)
        return s;
    orr_buf b = ORR_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch < 0x80)
            orr_buf_append_byte(&b, (char)ch);
        else
            orr_buf_append(&b, "\xEF\xBF\xBD", 3);
    }
    s = json_stringn(b.data ? b.data : "", b.len);
    orr_buf_free(&b);
    return s;
}

static orr_status cap_write(void *state, const wh_batch *b, wh_wstats *st, orr_err *err)
{
    wh_capture *c = state;
    pthread_mutex_lock(&c->lock);
    for (size_t r = 0; r < b->nrows && json_array_size(c->rows) < c->want; r++) {
        json_t *row = json_array();
        for (size_t k = 0; k < b->ncols; k++) {
            int64_t len;
            const char *v = wh_batch_val(b, r, k, &len);
            json_array_append_new(row, v ? cap_value(v, (size_t)len) : json_null());
        }
        json_array_append_new(c->rows, row);
        st->rows++;
    }
    int full = json_array_size(c->rows) >= c->want;
    pthread_mutex_unlock(&c->lock);
    if (full)
        return orr_err_set(err, ORR_EOF, "", "the preview has its rows");
    return ORR_OK;
}

static orr_status cap_flush(void *state, uint64_t *confirmed, orr_err *err)
{
    (void)err;
    wh_capture *c = state;
    pthread_mutex_lock(&c->lock);
    *confirmed = json_array_size(c->rows);
    pthread_mutex_unlock(&c->lock);
    return ORR_OK;
}

static orr_status cap_close(void *state, int commit, orr_err *err)
{
    (void)state;
    (void)commit;
    (void)err;
    return ORR_OK;
}

static const wh_writer_ops wh_capture_writer = {
    .max_channels = cap_max_channels,
    .open = cap_open,
    .write = cap_write,
    .flush = cap_flush,
    .close = cap_close,
};

static const wh_plugin wh_capture_plugin = {
    .name = "preview",
    .writer = &wh_capture_writer,
};

/* The dirty rows written to the memfd, as the answer's "dirty". */
static json_t *dirty_read(int fd, size_t max)
{
    json_t *out = json_array();
    off_t end = lseek(fd, 0, SEEK_END);
    if (end <= 0)
        return out;
    size_t n = (size_t)end < (4u << 20) ? (size_t)end : (4u << 20);
    char *buf = malloc(n + 1);
    if (!buf)
        return out;
    ssize_t got = pread(fd, buf, n, 0);
    buf[got > 0 ? got : 0] = 0;
    for (char *line = buf, *nl; line && *line && json_array_size(out) < max; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = 0;
        json_t *j = json_loads(line, JSON_ALLOW_NUL, NULL); /* a NUL in a field is \u0000 */
        if (!json_is_object(j)) {
            json_decref(j);
            continue;
        }
        const char *reason = json_string_value(json_object_get(j, "reason"));
        const char *side = json_string_value(json_object_get(j, "side"));
        char field[128] = "";
        /* A mapping's reason starts with its path: "writers[0].mapping[3] (...". */
        if (reason && strncmp(reason, "writers[", 8) == 0) {
            size_t k = strcspn(reason, " ");
            snprintf(field, sizeof field, "%.*s", (int)(k < 127 ? k : 127), reason);
        } else {
            snprintf(field, sizeof field, "%s", side ? side : "");
        }
        json_array_append_new(out, json_pack("{s:O, s:s, s:s}", "row", json_object_get(j, "row"),
                                             "reason", reason ? reason : "", "field", field));
        json_decref(j);
    }
    free(buf);
    return out;
}

/* A column the source lacks is a bad job: name the mapping entry that asked
 * for it when the reader's columns came from writers[0]'s mapping. */
static orr_status preview_missing_column(const wh_job *j, const json_t *job, orr_err *err)
{
    size_t k = (size_t)strtoul(err->field + 15, NULL, 10);
    const json_t *rspec = j->reader.spec ? j->reader.spec : json_object_get(job, "reader");
    const char *col = json_string_value(json_array_get(json_object_get(rspec, "columns"), k));
    json_t *map = json_object_get(json_array_get(json_object_get(job, "writers"), 0), "mapping");
    size_t i;
    json_t *e;
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    json_array_foreach(map, i, e)
    {
        const char *src = json_string_value(json_object_get(e, "source"));
        if (col && src && strcmp(src, col) == 0) {
            char f[64];
            snprintf(f, sizeof f, "writers[0].mapping[%zu].source", i);
            return orr_err_set(err, ORR_EINVAL, f, "%s", msg);
        }
    }
    err->code = ORR_EINVAL;
    return ORR_EINVAL;
}

orr_status wh_preview_run(const char *text, size_t len, json_t **out, orr_err *err)
{
    *out = NULL;
    json_t *req = NULL;
    orr_status rc = orr_json_parse(text, len, &req, err);
    if (rc != ORR_OK)
        return rc;
    json_t *job = NULL, *warnings = json_array();
    wh_job *j = NULL;
    const char *pfx = "";
    int fd = -1;
    wh_capture cap = {.want = WH_PREVIEW_MAX_ROWS};
    pthread_mutex_init(&cap.lock, NULL);
    cap.rows = json_array();
    if (!json_is_object(req)) {
        rc = orr_err_set(err, ORR_EINVAL, "", "must be a JSON object");
        goto out;
    }
    json_t *cfg = json_object_get(req, "config");
    pfx = cfg ? "config." : "";
    if (cfg || json_object_get(req, "rows")) {
        json_int_t rows = WH_PREVIEW_MAX_ROWS;
        json_t *rv = json_object_get(req, "rows");
        if (rv && (!json_is_integer(rv) || (rows = json_integer_value(rv)) < 1 ||
                   rows > WH_PREVIEW_MAX_ROWS)) {
            rc = orr_err_set(err, ORR_EINVAL, "rows", "must be an integer from 1 to %d",
                             WH_PREVIEW_MAX_ROWS);
            goto out;
        }
        cap.want = (size_t)rows;
        if (!json_is_object(cfg)) {
            rc = orr_err_set(err, ORR_EINVAL, "config", "must be the transfer job (an object)");
            goto out;
        }
        job = json_deep_copy(cfg);
    } else {
        job = json_incref(req);
    }
    /* What a run does besides moving rows is left out. */
    static const char *const drop[] = {"resume", "quality",         "state_file",
                                       "limits", "max_dirty_ratio", "progress_interval_ms",
                                       NULL};
    for (int i = 0; drop[i]; i++)
        json_object_del(job, drop[i]);
    json_t *writers = json_object_get(job, "writers");
    if (json_is_array(writers) && json_array_size(writers) > 1) {
        json_array_append_new(warnings, json_string("only writers[0] is previewed"));
        while (json_array_size(writers) > 1)
            json_array_remove(writers, json_array_size(writers) - 1);
    }
    json_t *reader = json_object_get(job, "reader");
    if (json_is_object(reader) && json_object_get(reader, "incremental")) {
        json_object_del(reader, "incremental");
        json_array_append_new(warnings,
                              json_string("reader.incremental is left out: the preview reads "
                                          "from the start"));
    }
    if (json_is_object(reader))
        json_object_set_new(reader, "channels", json_integer(1));
    fd = memfd_create("wormhole-preview-rejects", MFD_CLOEXEC);
    if (fd < 0) {
        rc = orr_err_set(err, ORR_EIO, "", "memfd_create failed");
        goto out;
    }
    char rej[64];
    snprintf(rej, sizeof rej, "/proc/self/fd/%d", fd);
    json_object_set_new(job, "reject_file", json_string(rej));
    json_object_set_new(job, "batch_rows", json_integer((json_int_t)cap.want));
    json_object_set_new(job, "channels", json_integer(1));
    json_object_set_new(job, "max_dirty_rows", json_integer((json_int_t)cap.want));
    json_object_set_new(job, "max_row_diff", json_integer(INT64_MAX));
    json_object_set_new(job, "progress_interval_ms", json_integer(0));
    char *jt = json_dumps(job, JSON_COMPACT);
    rc = wh_job_parse(jt, strlen(jt), &j, err);
    explicit_bzero(jt, strlen(jt));
    free(jt);
    if (rc != ORR_OK)
        goto out;
    /* The first writer's store is swapped for the capture sink. */
    const wh_plugin *real = j->writers[0].plugin;
    void *real_conf = j->writers[0].conf;
    j->writers[0].plugin = &wh_capture_plugin;
    j->writers[0].conf = &cap;
    wh_result res;
    wh_run(j, NULL, &res);
    j->writers[0].plugin = real;
    j->writers[0].conf = real_conf;
    if (!res.ok && res.err.code != ORR_EOF && res.err.code != ORR_ETOOBIG) {
        *err = res.err;
        rc = res.err.code ? res.err.code : ORR_EIO;
        if (rc == ORR_ENOTFOUND && strncmp(err->field, "reader.columns[", 15) == 0)
            rc = preview_missing_column(j, job, err);
        wh_result_free(&res);
        goto out;
    }
    wh_result_free(&res);
    *out = json_pack("{s:o, s:O, s:o, s:O}", "columns",
                     cap.columns ? json_incref(cap.columns) : json_array(), "rows", cap.rows,
                     "dirty", dirty_read(fd, cap.want), "warnings", warnings);
    rc = ORR_OK;
out:
    /* Errors name fields of the job as the request holds it. */
    if (rc != ORR_OK && pfx[0] && err->field[0] && strncmp(err->field, "config", 6) != 0 &&
        strcmp(err->field, "rows") != 0) {
        char f[sizeof err->field + 8];
        snprintf(f, sizeof f, "%s%s", pfx, err->field);
        snprintf(err->field, sizeof err->field, "%.*s", (int)sizeof err->field - 1, f);
    }
    if (fd >= 0)
        close(fd);
    wh_job_free(j);
    json_decref(job);
    json_decref(req);
    json_decref(warnings);
    json_decref(cap.columns);
    json_decref(cap.rows);
    pthread_mutex_destroy(&cap.lock);
    return rc;
}

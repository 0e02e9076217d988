/* gx_api_runtime.c - what runs right now: instance logs (the executors'
 * list, Halley's inventory merged with ZooKeeper, is in gx_api_admin.c).
 *
 * Logs: while an attempt runs its log lives on the executor, which serves it
 * over HTTP with a token (workers/executor/ex_logsrv.c); when the attempt
 * ends the executor copies it to the blob store. So a read tries the blob
 * copy first, then the executor named by the instance. Two forms:
 *   GET .../log?attempt=N&offset=K          one JSON chunk (<= 256 KiB); with
 *                                           timestamps=1 also each line's time
 *   GET .../log/download?attempt=N          the raw bytes as a file (with
 *                                           timestamps=1 each line behind its
 *                                           ISO time)
 *   GET .../log?follow=1 (or Accept: text/event-stream)
 *                                           Server-Sent Events: "log" events
 *                                           as the log grows, "end" when the
 *                                           attempt is over and all is sent
 * An SSE stream holds one HTTP worker thread (the reader waits between
 * polls), so at most half of [galaxy] threads streams run at once; beyond
 * that the answer is 503. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gx_app.h"
#include "orr_alloc.h"
#include "orr_arena.h"
#include "orr_blob.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_logidx.h"
#include "orr_zk.h"

#define GX_LOG_CHUNK (256 * 1024)

static atomic_int gx_sse_streams;

/* --------------------------------------------------------------- logs */

struct gx_log_ref {
    int64_t instance;
    int64_t task_id;
    int attempt;
    int finished; /* the attempt is over: its log will not grow */
    char executor[128];
};

struct gx_chunk {
    orr_buf data;
    int64_t next_offset;
    int complete;
    const char *source;
};

static int gx_terminal(HL(InstanceState) s)
{
    return s == HL_STATE(SUCCESS) || s == HL_STATE(FAILED) || s == HL_STATE(KILLED) ||
           s == HL_STATE(TIMED_OUT) || s == HL_STATE(MARKED_SUCCESS) || s == HL_STATE(WAITING) ||
           s == HL_STATE(READY) || s == HL_STATE(SUSPENDED);
}

/* Refresh ref from Halley (attempt 0 = the current one). */
static orr_status gx_log_ref_load(gx_app *app, struct gx_log_ref *ref, int want_attempt,
                                  orr_err *err)
{
    HL(GetInstanceRequest) q = HL_INIT(GET_INSTANCE_REQUEST);
    q.id = ref->instance;
    HL(Instance) *in = NULL;
    orr_status rc = orr_rpc_call_unary(app->halley, "GetInstance", &q.base,
                                       (ProtobufCMessage **)&in, app->rpc_timeout_ms, err);
    if (rc != ORR_OK)
        return rc;
    ref->task_id = in->task_id;
    ref->attempt = want_attempt > 0 ? want_attempt : in->attempt;
    if (ref->attempt > in->attempt) {
        rc = orr_err_set(err, ORR_ENOTFOUND, "attempt", "instance %lld has %d attempt(s)",
                         (long long)in->id, in->attempt);
    } else {
        /* An earlier attempt is over; the current one while not running. */
        ref->finished = ref->attempt < in->attempt || gx_terminal(in->state);
        snprintf(ref->executor, sizeof(ref->executor), "%s", in->executor ? in->executor : "");
    }
    protobuf_c_message_free_unpacked(&in->base, NULL);
    return rc;
}

/* Drop an incomplete UTF-8 sequence at the end and replace invalid bytes
 * with '?', so the text is valid JSON; returns the bytes consumed. */
static size_t gx_utf8_clean(char *s, size_t n, int at_end)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0) {
            s[i++] = '?';
            continue;
        }
        if (i + len > n) {
            if (!at_end)
                return i; /* wait for the rest of the character */
            for (; i < n; i++)
                s[i] = '?';
            return n;
        }
        size_t k = 1;
        while (k < len && ((unsigned char)s[i + k] >> 6) == 2)
            k++;
        if (k < len) {
            s[i++] = '?';
            continue;
        }
        i += len;
    }
    return n;
}

static orr_status gx_log_sink(void *ud, const void *data, size_t n, orr_err *err)
{
    (void)err;
    orr_buf_append(ud, data, n);
    return ORR_OK;
}

/* Read up to GX_LOG_CHUNK bytes of the archived log from the blob store
 * (logs/<task>/<instance>-<attempt>.log, landed by the executor when the
 * attempt ended); ORR_ENOTFOUND if none (or the store cannot be opened). */
static orr_status gx_log_archive(gx_app *app, const struct gx_log_ref *ref, int64_t offset,
                                 struct gx_chunk *c, int raw)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "logs/%lld/%lld-%d.log", (long long)ref->task_id,
             (long long)ref->instance, ref->attempt);
    orr_blob *blob = gx_blob(app, NULL);
    uint64_t usize = 0;
    if (!blob)
        return ORR_ENOTFOUND;
    orr_status rc = blob->ops->size(blob, rel, &usize, NULL);
    if (rc != ORR_OK)
        return rc == ORR_ENOTFOUND ? ORR_ENOTFOUND : ORR_EIO;
    int64_t size = (int64_t)usize;
    int64_t from = offset < size ? offset : size;
    size_t want = (size_t)(size - from) < GX_LOG_CHUNK ? (size_t)(size - from) : GX_LOG_CHUNK;
    orr_buf_reset(&c->data);
    orr_buf_reserve(&c->data, want);
    if (want && blob->ops->get_range(blob, rel, (uint64_t)from, want, gx_log_sink, &c->data,
                                     NULL) != ORR_OK) {
        orr_buf_reset(&c->data);
        return ORR_EIO;
    }
    if (c->data.len > want)
        c->data.len = want; /* the store never gives more; be sure of it */
    int at_end = from + (int64_t)c->data.len >= size;
    if (!raw)
        c->data.len = gx_utf8_clean(c->data.data, c->data.len, at_end);
    if (c->data.data)
        c->data.data[c->data.len] = '\0';
    c->next_offset = from + (int64_t)c->data.len;
    c->complete = at_end && c->next_offset >= size;
    c->source = "archive";
    return ORR_OK;
}

struct gx_curl_sink {
    orr_buf *buf;
    size_t max;
};

static size_t gx_curl_write(char *p, size_t sz, size_t n, void *ud)
{
    struct gx_curl_sink *s = ud;
    size_t k = sz * n;
    size_t room = s->buf->len < s->max ? s->max - s->buf->len : 0;
    orr_buf_append(s->buf, p, k < room ? k : room);
    return k < room ? k : 0; /* stop once the chunk is full */
}

/* GET path (from "/logs/...") on the executor that ran ref, at most max
 * bytes into out; *first_line from X-Orrery-First-Line when asked for.
 * ORR_ENOTFOUND when the executor is gone or has no such file. */
struct gx_curl_hdr {
    int64_t first_line;
};

static size_t gx_curl_header(char *p, size_t sz, size_t n, void *ud)
{
    struct gx_curl_hdr *h = ud;
    size_t k = sz * n;
    static const char name[] = "x-orrery-first-line:";
    if (k > sizeof(name) - 1 && strncasecmp(p, name, sizeof(name) - 1) == 0)
        h->first_line = strtoll(p + sizeof(name) - 1, NULL, 10);
    return k;
}

static orr_status gx_executor_get(gx_app *app, const struct gx_log_ref *ref, const char *path,
                                  orr_buf *out, size_t max, int64_t *first_line, orr_err *err)
{
    if (!ref->executor[0] || !app->zk)
        return ORR_ENOTFOUND;
    char zpath[256];
    snprintf(zpath, sizeof(zpath), "/orrery/executors/%s", ref->executor);
    orr_buf card = ORR_BUF_INIT;
    orr_status rc = orr_zk_get(app->zk, zpath, &card, err);
    json_t *j = rc == ORR_OK ? json_loadb(card.data, card.len, 0, NULL) : NULL;
    orr_buf_free(&card);
    const char *host = json_string_value(json_object_get(j, "host"));
    json_int_t port = json_integer_value(json_object_get(j, "http_port"));
    if (!host || port <= 0) {
        json_decref(j);
        return ORR_ENOTFOUND; /* executor gone: its log is archived or lost */
    }
    char url[768], auth[512];
    snprintf(url, sizeof(url), "http://%s:%lld%s", host, (long long)port, path);
    json_decref(j);
    const char *tok = orr_config_str(app->cfg, "galaxy", "executor_log_token");
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok ? tok : "");
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    struct gx_curl_sink sink = {out, max};
    struct gx_curl_hdr hd = {0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gx_curl_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, gx_curl_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &hd);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR) {
        orr_buf_reset(out);
        return orr_err_set(err, ORR_EUNAVAIL, "executor", "executor %s: %s", ref->executor,
                           curl_easy_strerror(cc));
    }
    if (status == 404) {
        orr_buf_reset(out);
        return ORR_ENOTFOUND;
    }
    if (status != 200) {
        orr_buf_reset(out);
        return orr_err_set(err, ORR_EUNAVAIL, "executor", "executor %s answered %ld", ref->executor,
                           status);
    }
    if (first_line)
        *first_line = hd.first_line;
    return ORR_OK;
}

/* Read from the executor's log server. */
static orr_status gx_log_executor(gx_app *app, const struct gx_log_ref *ref, int64_t offset,
                                  struct gx_chunk *c, int raw, orr_err *err)
{
    char path[128];
    snprintf(path, sizeof(path), "/logs/%lld/%d?offset=%lld", (long long)ref->instance,
             ref->attempt, (long long)offset);
    orr_status rc = gx_executor_get(app, ref, path, &c->data, GX_LOG_CHUNK, NULL, err);
    if (rc != ORR_OK)
        return rc;
    if (!raw)
        c->data.len = gx_utf8_clean(c->data.data ? c->data.data : "", c->data.len, 0);
    if (c->data.data)
        c->data.data[c->data.len] = '\0';
    c->next_offset = offset + (int64_t)c->data.len;
    c->complete = 0;
    c->source = "executor";
    return ORR_OK;
}

/* One chunk from wherever the log is; raw: the bytes as they are (else
 * valid UTF-8 for JSON). */
static orr_status gx_log_read(gx_app *app, const struct gx_log_ref *ref, int64_t offset,
                              struct gx_chunk *c, int raw, orr_err *err)
{
    orr_buf_reset(&c->data);
    orr_status rc = gx_log_archive(app, ref, offset, c, raw);
    if (rc == ORR_OK)
        return rc;
    rc = gx_log_executor(app, ref, offset, c, raw, err);
    if (rc == ORR_OK)
        return rc;
    if (rc != ORR_ENOTFOUND)
        return rc;
    /* Nowhere yet: not started, or over and not archived (yet). */
    c->next_offset = offset;
    c->complete = 0;
    c->source = "none";
    return ORR_OK;
}

/* ---- line stamps (the line index, lib/orr_logidx.h) */

struct gx_idx_blob {
    orr_blob *blob;
    const char *rel;
    orr_buf tmp;
};

static orr_status gx_idx_blob_read(void *ud, uint64_t first, size_t count, orr_logidx_rec *out,
                                   orr_err *err)
{
    struct gx_idx_blob *b = ud;
    orr_buf_reset(&b->tmp);
    orr_status rc = b->blob->ops->get_range(b->blob, b->rel, first * ORR_LOGIDX_REC,
                                            count * ORR_LOGIDX_REC, gx_log_sink, &b->tmp, err);
    if (rc != ORR_OK)
        return rc;
    if (b->tmp.len < count * ORR_LOGIDX_REC)
        return ORR_EIO;
    for (size_t i = 0; i < count; i++)
        orr_logidx_decode((const unsigned char *)b->tmp.data + i * ORR_LOGIDX_REC, &out[i]);
    return ORR_OK;
}

/* The records of the lines overlapping bytes [from, to) of the log (the
 * line holding from, then each line starting before to) appended to recs,
 * the line number of the first into *first_line; from the archived index
 * when source is "archive", else from the executor. ORR_ENOTFOUND when the
 * log has no index (logs captured before lines were stamped). */
static orr_status gx_log_stamps(gx_app *app, const struct gx_log_ref *ref, const char *source,
                                int64_t from, int64_t to, int64_t *first_line, orr_buf *recs,
                                orr_err *err)
{
    orr_buf_reset(recs);
    if (strcmp(source, "executor") == 0) {
        char path[160];
        snprintf(path, sizeof(path), "/logs/%lld/%d/lines?from=%lld&to=%lld",
                 (long long)ref->instance, ref->attempt, (long long)from, (long long)to);
        orr_status rc = gx_executor_get(app, ref, path, recs, 64 * 1024 * 1024, first_line, err);
        recs->len -= recs->len % ORR_LOGIDX_REC;
        return rc;
    }
    if (strcmp(source, "archive") != 0)
        return ORR_ENOTFOUND;
    char rel[128];
    snprintf(rel, sizeof(rel), "logs/%lld/%lld-%d.idx", (long long)ref->task_id,
             (long long)ref->instance, ref->attempt);
    struct gx_idx_blob b = {gx_blob(app, NULL), rel, ORR_BUF_INIT};
    uint64_t size = 0, k = 0;
    if (!b.blob)
        return ORR_ENOTFOUND;
    orr_status rc = b.blob->ops->size(b.blob, rel, &size, err);
    if (rc != ORR_OK)
        return rc == ORR_ENOTFOUND ? ORR_ENOTFOUND : ORR_EIO;
    uint64_t nrec = size / ORR_LOGIDX_REC;
    rc = orr_logidx_find(gx_idx_blob_read, &b, nrec, (uint64_t)from, &k, err);
    if (rc == ORR_ENOTFOUND) {
        k = nrec;
        rc = ORR_OK;
    }
    *first_line = (int64_t)k + 1;
    uint64_t first = k;
    while (rc == ORR_OK && k < nrec) {
        size_t batch = nrec - k < 4096 ? (size_t)(nrec - k) : 4096;
        orr_buf_reset(&b.tmp);
        rc = b.blob->ops->get_range(b.blob, rel, k * ORR_LOGIDX_REC, batch * ORR_LOGIDX_REC,
                                    gx_log_sink, &b.tmp, err);
        if (rc != ORR_OK || b.tmp.len < batch * ORR_LOGIDX_REC) {
            rc = ORR_EIO;
            break;
        }
        size_t i = 0;
        for (; i < batch; i++) {
            orr_logidx_rec r;
            orr_logidx_decode((const unsigned char *)b.tmp.data + i * ORR_LOGIDX_REC, &r);
            if (k + i > first && r.offset >= (uint64_t)to)
                break;
        }
        orr_buf_append(recs, b.tmp.data, i * ORR_LOGIDX_REC);
        k += i;
        if (i < batch)
            break;
    }
    orr_buf_free(&b.tmp);
    return rc;
}

/* How much of a live chunk (len bytes of the log from offset; starts_line:
 * a line starts at offset) has every line that starts in it stamped in recs
 * (the records of the lines overlapping it, in order): up to the first line
 * start without one. */
static size_t gx_stamped_prefix(const char *data, size_t len, int64_t offset, int starts_line,
                                const orr_buf *recs)
{
    size_t nrec = recs->len / ORR_LOGIDX_REC, ri = 1;
    orr_logidx_rec r;
    if (len == 0 || nrec == 0)
        return 0; /* not even the line holding offset is stamped yet */
    orr_logidx_decode((const unsigned char *)recs->data, &r);
    if (r.offset > (uint64_t)offset || (starts_line && r.offset != (uint64_t)offset))
        return 0;
    for (const char *p = memchr(data, '\n', len); p && (size_t)(p - data) + 1 < len;
         p = memchr(p + 1, '\n', len - (size_t)(p + 1 - data))) {
        size_t at = (size_t)(p - data) + 1; /* a line starts here */
        if (ri >= nrec)
            return at;
        orr_logidx_decode((const unsigned char *)recs->data + ri * ORR_LOGIDX_REC, &r);
        if (r.offset != (uint64_t)offset + at)
            return at;
        ri++;
    }
    return len;
}

/* ---- download: the raw bytes (or each line behind its time), streamed */

struct gx_dl {
    gx_app *app;
    struct gx_log_ref ref;
    int stamped;
    int64_t offset; /* of the log */
    int done;
    orr_buf pending;
    orr_buf recs;
};

/* Fill pending with the next piece: raw, or with "<ISO time> " before each
 * line that starts in it. */
static void gx_dl_fill(struct gx_dl *d)
{
    struct gx_chunk c = {ORR_BUF_INIT, 0, 0, NULL};
    orr_err e;
    orr_err_clear(&e);
    if (gx_log_read(d->app, &d->ref, d->offset, &c, 1, &e) != ORR_OK || c.data.len == 0) {
        d->done = 1;
        orr_buf_free(&c.data);
        return;
    }
    int64_t first_line = 0;
    if (!d->stamped || gx_log_stamps(d->app, &d->ref, c.source, d->offset, c.next_offset,
                                     &first_line, &d->recs, &e) != ORR_OK) {
        orr_buf_append(&d->pending, c.data.data, c.data.len);
    } else {
        size_t at = 0, nrec = d->recs.len / ORR_LOGIDX_REC;
        for (size_t i = 0; i < nrec; i++) {
            orr_logidx_rec r;
            orr_logidx_decode((const unsigned char *)d->recs.data + i * ORR_LOGIDX_REC, &r);
            if (r.offset < (uint64_t)d->offset || r.offset >= (uint64_t)c.next_offset)
                continue; /* began in an earlier piece */
            size_t pos = (size_t)(r.offset - (uint64_t)d->offset);
            orr_buf_append(&d->pending, c.data.data + at, pos - at);
            char iso[32];
            orr_buf_append_str(&d->pending, orr_logidx_iso(r.ms, iso));
            orr_buf_append_byte(&d->pending, ' ');
            at = pos;
        }
        orr_buf_append(&d->pending, c.data.data + at, c.data.len - at);
    }
    d->offset = c.next_offset;
    if (c.complete)
        d->done = 1;
    orr_buf_free(&c.data);
}

static ssize_t gx_dl_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct gx_dl *d = cls;
    if (d->pending.len == 0 && !d->done)
        gx_dl_fill(d);
    if (d->pending.len == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = d->pending.len < max ? d->pending.len : max;
    memcpy(buf, d->pending.data, n);
    orr_buf_consume(&d->pending, n);
    return (ssize_t)n;
}

static void gx_dl_free(void *cls)
{
    struct gx_dl *d = cls;
    orr_buf_free(&d->pending);
    orr_buf_free(&d->recs);
    free(d);
}

void gx_h_instance_log_download(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int64_t attempt;
    if (gx_req_query_int(req, resp, "attempt", 0, 0, 1000000, &attempt))
        return;
    int stamped = gx_req_query_bool(req, resp, "timestamps", 0);
    if (stamped < 0)
        return;
    struct gx_log_ref ref = {.instance = id};
    orr_err e;
    orr_err_clear(&e);
    if (gx_log_ref_load(app, &ref, (int)attempt, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    /* The first piece now: a log that is nowhere is a 404, not an empty file. */
    struct gx_dl *d = orr_xcalloc(1, sizeof(*d));
    d->app = app;
    d->ref = ref;
    d->stamped = stamped;
    struct gx_chunk c = {ORR_BUF_INIT, 0, 0, NULL};
    orr_status rc = gx_log_read(app, &ref, 0, &c, 1, &e);
    int nowhere = rc == ORR_OK && strcmp(c.source, "none") == 0;
    orr_buf_free(&c.data);
    if (rc != ORR_OK || nowhere) {
        gx_dl_free(d);
        if (rc != ORR_OK)
            gx_resp_err(resp, &e);
        else
            gx_resp_fail(resp, ORR_ENOTFOUND, "attempt", "attempt %d of instance %lld has no log",
                         ref.attempt, (long long)id);
        return;
    }
    resp->status = 200;
    resp->content_type = "text/plain; charset=utf-8";
    gx_resp_header(resp, "Content-Disposition",
                   orr_arena_sprintf(req->arena,
                                     "attachment; filename=\"instance-%lld-attempt-%d%s.log\"",
                                     (long long)id, ref.attempt, stamped ? "-timestamps" : ""));
    gx_resp_header(resp, "Cache-Control", "no-store");
    gx_resp_header(resp, "X-Content-Type-Options", "nosniff");
    resp->stream = gx_dl_read;
    resp->stream_free = gx_dl_free;
    resp->stream_cls = d;
}

struct gx_sse {
    gx_app *app;
    struct gx_log_ref ref;
    int want_attempt;
    int64_t offset;
    int ended;
    orr_buf pending; /* formatted events not yet handed to MHD */
    time_t last_sent;
};

static void gx_sse_event(struct gx_sse *s, const char *event, json_t *payload)
{
    orr_buf_appendf(&s->pending, "event: %s\ndata: ", event);
    orr_json_dump_buf(payload, &s->pending);
    orr_buf_append_str(&s->pending, "\n\n");
    json_decref(payload);
}

static ssize_t gx_sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct gx_sse *s = cls;
    /* Wait (bounded) for something to send: a chunk, the end, or a keepalive. */
    for (int round = 0; s->pending.len == 0 && !s->ended && round < 10; round++) {
        orr_err e;
        orr_err_clear(&e);
        if (round > 0)
            usleep(300 * 1000);
        if (gx_log_ref_load(s->app, &s->ref, s->want_attempt, &e) != ORR_OK) {
            gx_sse_event(s, "error", orr_json_error_body(&e));
            s->ended = 1;
            break;
        }
        struct gx_chunk c = {ORR_BUF_INIT, 0, 0, NULL};
        int was_finished = s->ref.finished;
        if (gx_log_read(s->app, &s->ref, s->offset, &c, 0, &e) == ORR_OK && c.data.len) {
            gx_sse_event(s, "log",
                         json_pack("{s:s%,s:I,s:i}", "data", c.data.data, c.data.len, "next_offset",
                                   (json_int_t)c.next_offset, "attempt", s->ref.attempt));
            s->offset = c.next_offset;
        } else if (was_finished && (c.complete || strcmp(c.source ? c.source : "", "none") == 0)) {
            /* Over and fully sent (or nothing will ever come): say so. */
            if (c.complete || round >= 3) {
                gx_sse_event(s, "end",
                             json_pack("{s:I,s:i}", "next_offset", (json_int_t)s->offset, "attempt",
                                       s->ref.attempt));
                s->ended = 1;
            }
        }
        orr_buf_free(&c.data);
    }
    if (s->pending.len == 0) {
        if (s->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        orr_buf_append_str(&s->pending, ": keepalive\n\n");
    }
    size_t n = s->pending.len < max ? s->pending.len : max;
    memcpy(buf, s->pending.data, n);
    orr_buf_consume(&s->pending, n);
    s->last_sent = time(NULL);
    return (ssize_t)n;
}

static void gx_sse_free(void *cls)
{
    struct gx_sse *s = cls;
    orr_buf_free(&s->pending);
    free(s);
    atomic_fetch_sub(&gx_sse_streams, 1);
}

void gx_h_instance_log(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int64_t attempt, offset, follow;
    if (gx_req_query_int(req, resp, "attempt", 0, 0, 1000000, &attempt) ||
        gx_req_query_int(req, resp, "offset", 0, 0, INT64_MAX / 2, &offset) ||
        gx_req_query_int(req, resp, "follow", 0, 0, 1, &follow))
        return;
    int stamped = gx_req_query_bool(req, resp, "timestamps", 0);
    if (stamped < 0)
        return;
    const char *accept = gx_req_header(req, "Accept");
    if (accept && strstr(accept, "text/event-stream"))
        follow = 1;
    struct gx_log_ref ref = {.instance = id};
    orr_err e;
    orr_err_clear(&e);
    if (gx_log_ref_load(app, &ref, (int)attempt, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (follow) {
        int max = (int)orr_config_int(app->cfg, "galaxy", "threads") / 2;
        if (atomic_fetch_add(&gx_sse_streams, 1) >= (max > 0 ? max : 1)) {
            atomic_fetch_sub(&gx_sse_streams, 1);
            gx_resp_fail(resp, ORR_EUNAVAIL, NULL, "too many live log streams; retry shortly");
            return;
        }
        struct gx_sse *s = orr_xcalloc(1, sizeof(*s));
        s->app = app;
        s->ref = ref;
        s->want_attempt = ref.attempt;
        s->offset = offset;
        resp->status = 200;
        resp->content_type = "text/event-stream";
        gx_resp_header(resp, "Cache-Control", "no-store");
        gx_resp_header(resp, "X-Accel-Buffering", "no");
        resp->stream = gx_sse_read;
        resp->stream_free = gx_sse_free;
        resp->stream_cls = s;
        return;
    }
    struct gx_chunk c = {ORR_BUF_INIT, 0, 0, NULL};
    if (gx_log_read(app, &ref, offset, &c, 0, &e) != ORR_OK) {
        orr_buf_free(&c.data);
        gx_resp_err(resp, &e);
        return;
    }
    /* Each line overlapping the chunk: [its offset, its time in UTC ms]. */
    orr_buf recs = ORR_BUF_INIT;
    int64_t first_line = 0;
    orr_status src = ORR_ENOTFOUND;
    if (stamped) {
        src = gx_log_stamps(app, &ref, c.source, offset, c.next_offset, &first_line, &recs, &e);
        if (src == ORR_OK && strcmp(c.source, "executor") == 0) {
            /* The index follows the log by a moment: end the chunk before
             * the first line not stamped yet; the next read brings it with
             * its time. */
            orr_buf prev = ORR_BUF_INIT;
            char path[128];
            snprintf(path, sizeof(path), "/logs/%lld/%d?offset=%lld", (long long)id, ref.attempt,
                     (long long)offset - 1);
            int starts_line =
                offset == 0 || (gx_executor_get(app, &ref, path, &prev, 1, NULL, &e) == ORR_OK &&
                                prev.len == 1 && prev.data[0] == '\n');
            orr_buf_free(&prev);
            c.data.len = gx_stamped_prefix(c.data.data, c.data.len, offset, starts_line, &recs);
            if (c.data.data)
                c.data.data[c.data.len] = '\0';
            c.next_offset = offset + (int64_t)c.data.len;
        }
    }
    json_t *out = json_pack("{s:i,s:I,s:s%,s:I,s:b,s:s}", "attempt", ref.attempt, "offset",
                            (json_int_t)offset, "data", c.data.data ? c.data.data : "", c.data.len,
                            "next_offset", (json_int_t)c.next_offset, "complete",
                            ref.finished && (c.complete || strcmp(c.source, "none") == 0), "source",
                            c.source);
    if (stamped) {
        json_t *lines = json_array();
        for (size_t i = 0; src == ORR_OK && i < recs.len / ORR_LOGIDX_REC; i++) {
            orr_logidx_rec r;
            orr_logidx_decode((const unsigned char *)recs.data + i * ORR_LOGIDX_REC, &r);
            if (i > 0 && r.offset >= (uint64_t)c.next_offset)
                break;
            json_array_append_new(lines,
                                  json_pack("[I,I]", (json_int_t)r.offset, (json_int_t)r.ms));
        }
        json_object_set_new(out, "stamped", json_boolean(src == ORR_OK));
        if (src == ORR_OK)
            json_object_set_new(out, "first_line", json_integer(first_line));
        json_object_set_new(out, "lines", lines);
    }
    orr_buf_free(&recs);
    orr_buf_free(&c.data);
    gx_resp_json(resp, 200, out);
    gx_resp_header(resp, "Cache-Control", "no-store");
}

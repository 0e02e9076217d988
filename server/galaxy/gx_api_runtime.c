/* gx_api_runtime.c - what runs right now: instance logs (the executors'
 * list, Halley's inventory merged with ZooKeeper, is in gx_api_admin.c).
 *
 * Logs: while an attempt runs its log lives on the executor, which serves it
 * over HTTP with a token (workers/executor/ex_logsrv.c); when the attempt
 * ends the executor copies it to the blob store. So a read tries the blob
 * copy first, then the executor named by the instance. Two forms:
 *   GET .../log?attempt=N&offset=K          one JSON chunk (<= 256 KiB)
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gx_app.h"
#include "orr_alloc.h"
#include "orr_blob.h"
#include "orr_json.h"
#include "orr_log.h"
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
        rc = orr_err_set(err, ORR_EINVAL, "attempt", "instance %lld has %d attempt(s)",
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
                                 struct gx_chunk *c)
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
    c->data.len = gx_utf8_clean(c->data.data, c->data.len, at_end);
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

/* Read from the executor's log server. */
static orr_status gx_log_executor(gx_app *app, const struct gx_log_ref *ref, int64_t offset,
                                  struct gx_chunk *c, orr_err *err)
{
    if (!ref->executor[0] || !app->zk)
        return ORR_ENOTFOUND;
    char path[256];
    snprintf(path, sizeof(path), "/orrery/executors/%s", ref->executor);
    orr_buf card = ORR_BUF_INIT;
    orr_status rc = orr_zk_get(app->zk, path, &card, err);
    json_t *j = rc == ORR_OK ? json_loadb(card.data, card.len, 0, NULL) : NULL;
    orr_buf_free(&card);
    const char *host = json_string_value(json_object_get(j, "host"));
    json_int_t port = json_integer_value(json_object_get(j, "http_port"));
    if (!host || port <= 0) {
        json_decref(j);
        return ORR_ENOTFOUND; /* executor gone: its log is archived or lost */
    }
    char url[512], auth[512];
    snprintf(url, sizeof(url), "http://%s:%lld/logs/%lld/%d?offset=%lld", host, (long long)port,
             (long long)ref->instance, ref->attempt, (long long)offset);
    json_decref(j);
    const char *tok = orr_config_str(app->cfg, "galaxy", "executor_log_token");
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok ? tok : "");
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = curl_slist_append(NULL, auth);
    struct gx_curl_sink sink = {&c->data, GX_LOG_CHUNK};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gx_curl_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR) {
        orr_buf_reset(&c->data);
        return orr_err_set(err, ORR_EUNAVAIL, "executor", "executor %s: %s", ref->executor,
                           curl_easy_strerror(cc));
    }
    if (status == 404) {
        orr_buf_reset(&c->data);
        return ORR_ENOTFOUND;
    }
    if (status != 200) {
        orr_buf_reset(&c->data);
        return orr_err_set(err, ORR_EUNAVAIL, "executor", "executor %s answered %ld", ref->executor,
                           status);
    }
    c->data.len = gx_utf8_clean(c->data.data ? c->data.data : "", c->data.len, 0);
    if (c->data.data)
        c->data.data[c->data.len] = '\0';
    c->next_offset = offset + (int64_t)c->data.len;
    c->complete = 0;
    c->source = "executor";
    return ORR_OK;
}

/* One chunk from wherever the log is. */
static orr_status gx_log_read(gx_app *app, const struct gx_log_ref *ref, int64_t offset,
                              struct gx_chunk *c, orr_err *err)
{
    orr_buf_reset(&c->data);
    orr_status rc = gx_log_archive(app, ref, offset, c);
    if (rc == ORR_OK)
        return rc;
    rc = gx_log_executor(app, ref, offset, c, err);
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
        if (gx_log_read(s->app, &s->ref, s->offset, &c, &e) == ORR_OK && c.data.len) {
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
    if (gx_log_read(app, &ref, offset, &c, &e) != ORR_OK) {
        orr_buf_free(&c.data);
        gx_resp_err(resp, &e);
        return;
    }
    json_t *out = json_pack("{s:i,s:I,s:s%,s:I,s:b,s:s}", "attempt", ref.attempt, "offset",
                            (json_int_t)offset, "data", c.data.data ? c.data.data : "", c.data.len,
                            "next_offset", (json_int_t)c.next_offset, "complete",
                            ref.finished && (c.complete || strcmp(c.source, "none") == 0), "source",
                            c.source);
    orr_buf_free(&c.data);
    gx_resp_json(resp, 200, out);
    gx_resp_header(resp, "Cache-Control", "no-store");
}

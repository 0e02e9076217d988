/* oc_http.c - the REST client of `orrery` (see oc_http.h): JSON calls and
 * the Server-Sent Events reader, on libcurl. Answers are read into an
 * orr_buf; error bodies give the status, field and message a command
 * prints. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oc_http.h"
#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"
#include "orr_log.h"

void oc_http_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void oc_http_cleanup(void)
{
    curl_global_cleanup();
}

char *oc_esc(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    char *r = orr_xstrdup(orr_xcheck(e));
    curl_free(e);
    return r;
}

static size_t oc__collect(char *p, size_t size, size_t n, void *cls)
{
    orr_buf_append(cls, p, size * n);
    return size * n;
}

static orr_status oc__status_by_name(const char *name)
{
    for (int s = 0; s < ORR__STATUS_COUNT; s++)
        if (strcmp(orr_status_name((orr_status)s), name) == 0)
            return (orr_status)s;
    return ORR_EINTERNAL;
}

static orr_status oc__status_by_http(long st)
{
    switch (st) {
    case 400:
    case 405:
    case 414:
    case 415:
    case 431:
        return ORR_EINVAL;
    case 401:
        return ORR_EAUTH;
    case 403:
        return ORR_EPERM;
    case 404:
        return ORR_ENOTFOUND;
    case 409:
        return ORR_ECONFLICT;
    case 413:
        return ORR_ETOOBIG;
    case 429:
        return ORR_EAGAIN;
    case 501:
        return ORR_EUNIMPL;
    default:
        return st >= 500 ? ORR_EUNAVAIL : ORR_EINTERNAL;
    }
}

/* An error answer into err; returns its status. */
static orr_status oc__error(long st, const orr_buf *body, const char *method, const char *path,
                            orr_err *err)
{
    json_t *j = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    json_t *e = j ? json_object_get(j, "error") : NULL;
    orr_status s = oc__status_by_http(st);
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *field = json_string_value(json_object_get(e, "field"));
    if (code && oc__status_by_name(code) != ORR_EINTERNAL && st != 405)
        s = oc__status_by_name(code);
    if (st == 404 && !e)
        msg = "no such route (is galaxyd new enough?)";
    orr_err_set(err, s, field && *field ? field : NULL, "%s (%s %s: HTTP %ld)",
                msg ? msg : orr_status_msg(s), method, path, st);
    json_decref(j);
    return s;
}

/* One debug line per call (orrery --verbose); never the token. */
static void oc__log_call(CURL *c, const char *method, const char *path, CURLcode rc)
{
    if (!orr_log_enabled(ORR_LOG_DEBUG))
        return;
    long st = 0;
    double secs = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &secs);
    orr_log(ORR_LOG_DEBUG, "api call", "method=%s path=%s status=%ld ms=%.1f%s%s", method,
            orr_log_q(path), st, secs * 1000, rc == CURLE_OK ? "" : " error=",
            rc == CURLE_OK ? "" : orr_log_q(curl_easy_strerror(rc)));
}

static CURL *oc__easy(oc_ctx *ctx, const char *token, const char *method, const char *path,
                      struct curl_slist **hdrs, char **url)
{
    CURL *c = orr_xcheck(curl_easy_init());
    orr_buf u = ORR_BUF_INIT;
    orr_buf_appendf(&u, "%s%s", ctx->url, path);
    *url = orr_buf_detach(&u, NULL);
    curl_easy_setopt(c, CURLOPT_URL, *url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "orrery-cli/1");
    if (token && *token) {
        orr_buf h = ORR_BUF_INIT;
        orr_buf_appendf(&h, "Authorization: Bearer %s", token);
        *hdrs = curl_slist_append(*hdrs, h.data);
        orr_buf_free(&h);
    }
    return c;
}

static orr_status oc__call(oc_ctx *ctx, const char *token, const char *method, const char *path,
                           const json_t *body, const char *header, json_t **out, long *status,
                           orr_err *err)
{
    struct curl_slist *hdrs = NULL;
    char *url = NULL;
    orr_buf req = ORR_BUF_INIT, resp = ORR_BUF_INIT;
    orr_status s = ORR_OK;
    *out = NULL;
    CURL *c = oc__easy(ctx, token ? token : ctx->token, method, path, &hdrs, &url);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (header)
        hdrs = curl_slist_append(hdrs, header);
    if (body) {
        orr_json_dump_buf(body, &req);
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)req.len);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, oc__collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    CURLcode rc = curl_easy_perform(c);
    oc__log_call(c, method, path, rc);
    if (rc != CURLE_OK) {
        s = orr_err_set(err, ORR_EUNAVAIL, NULL, "cannot reach %s: %s", ctx->url,
                        curl_easy_strerror(rc));
        goto out;
    }
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    if (status)
        *status = st;
    if (st < 200 || st > 299) {
        s = oc__error(st, &resp, method, path, err);
        goto out;
    }
    if (resp.len) {
        json_error_t je;
        *out = json_loadb(resp.data, resp.len, 0, &je);
        if (!*out)
            s = orr_err_set(err, ORR_EINTERNAL, NULL, "%s %s: answer is not JSON: %s", method, path,
                            je.text);
    }
out:
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(url);
    orr_buf_free(&req);
    orr_buf_free(&resp);
    return s;
}

orr_status oc_api_tok(oc_ctx *ctx, const char *token, const char *method, const char *path,
                      const json_t *body, json_t **out, long *status, orr_err *err)
{
    return oc__call(ctx, token, method, path, body, NULL, out, status, err);
}

orr_status oc_api_if_match(oc_ctx *ctx, const char *path, const json_t *body, int version,
                           json_t **out, orr_err *err)
{
    char h[64];
    snprintf(h, sizeof(h), "If-Match: %d", version);
    return oc__call(ctx, NULL, "PUT", path, body, h, out, NULL, err);
}

orr_status oc_api(oc_ctx *ctx, const char *method, const char *path, const json_t *body,
                  json_t **out, orr_err *err)
{
    json_t *tmp = NULL;
    orr_status s = oc_api_tok(ctx, NULL, method, path, body, out ? out : &tmp, NULL, err);
    json_decref(tmp);
    return s;
}

/* Writes a 200 body to out as it arrives; keeps an error body instead. */
struct oc__dl {
    FILE *out;
    orr_buf err_body;
    long status;
    CURL *c;
    int write_failed;
};

static size_t oc__dl_write(char *b, size_t size, size_t n, void *cls)
{
    struct oc__dl *d = cls;
    if (!d->status)
        curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &d->status);
    if (d->status != 200) {
        orr_buf_append(&d->err_body, b, size * n);
        return size * n;
    }
    if (fwrite(b, 1, size * n, d->out) != size * n) {
        d->write_failed = 1;
        return 0;
    }
    return size * n;
}

orr_status oc_api_download(oc_ctx *ctx, const char *path, FILE *out, orr_err *err)
{
    struct curl_slist *hdrs = NULL;
    char *url = NULL;
    struct oc__dl d;
    memset(&d, 0, sizeof(d));
    d.out = out;
    orr_status s = ORR_OK;
    CURL *c = oc__easy(ctx, ctx->token, "GET", path, &hdrs, &url);
    d.c = c;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, oc__dl_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
    CURLcode rc = curl_easy_perform(c);
    oc__log_call(c, "GET", path, rc);
    if (d.write_failed)
        s = orr_err_set(err, ORR_EIO, NULL, "cannot write the output");
    else if (d.status && d.status != 200)
        s = oc__error(d.status, &d.err_body, "GET", path, err);
    else if (rc != CURLE_OK)
        s = orr_err_set(err, ORR_EUNAVAIL, NULL, "cannot reach %s: %s", ctx->url,
                        curl_easy_strerror(rc));
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(url);
    orr_buf_free(&d.err_body);
    return s;
}

/* ------------------------------------------------------------------ SSE */

static void oc__sse_dispatch(oc_sse_parser *p)
{
    if (!p->event && !p->data)
        return;
    json_t *d = p->data ? json_loadb(p->data, p->data_len, 0, NULL) : NULL;
    if (!p->stop && p->fn(p->cls, p->event ? p->event : "message", d))
        p->stop = 1;
    json_decref(d);
    free(p->event);
    free(p->data);
    p->event = p->data = NULL;
    p->data_len = 0;
}

static void oc__sse_line(oc_sse_parser *p, const char *l, size_t n)
{
    if (n == 0) {
        oc__sse_dispatch(p);
        return;
    }
    if (l[0] == ':') /* a comment: keepalive */
        return;
    const char *colon = memchr(l, ':', n);
    size_t fn = colon ? (size_t)(colon - l) : n;
    const char *v = colon ? colon + 1 : l + n;
    size_t vn = colon ? n - fn - 1 : 0;
    if (vn && *v == ' ')
        v++, vn--;
    if (fn == 5 && memcmp(l, "event", 5) == 0) {
        free(p->event);
        p->event = orr_xstrndup(v, vn);
    } else if (fn == 4 && memcmp(l, "data", 4) == 0) {
        p->data = orr_xrealloc(p->data, p->data_len + vn + 2);
        if (p->data_len)
            p->data[p->data_len++] = '\n';
        memcpy(p->data + p->data_len, v, vn);
        p->data_len += vn;
        p->data[p->data_len] = 0;
    }
}

void oc_sse_feed(oc_sse_parser *p, const char *bytes, size_t n)
{
    for (size_t i = 0; i < n && !p->stop; i++) {
        char ch = bytes[i];
        if (ch == '\n') {
            size_t len = p->line_len;
            if (len && p->line[len - 1] == '\r')
                len--;
            oc__sse_line(p, p->line ? p->line : "", len);
            p->line_len = 0;
            continue;
        }
        p->line = orr_xrealloc(p->line, p->line_len + 2);
        p->line[p->line_len++] = ch;
    }
}

void oc_sse_free(oc_sse_parser *p)
{
    free(p->line);
    free(p->event);
    free(p->data);
    memset(p, 0, sizeof(*p));
}

struct oc__sse_io {
    oc_sse_parser parser;
    orr_buf err_body; /* the body of a non-200 answer */
    long status;
    CURL *c;
};

static size_t oc__sse_write(char *b, size_t size, size_t n, void *cls)
{
    struct oc__sse_io *io = cls;
    if (!io->status)
        curl_easy_getinfo(io->c, CURLINFO_RESPONSE_CODE, &io->status);
    if (io->status != 200) {
        orr_buf_append(&io->err_body, b, size * n);
        return size * n;
    }
    oc_sse_feed(&io->parser, b, size * n);
    return io->parser.stop ? 0 : size * n; /* 0 ends the transfer */
}

orr_status oc_api_sse(oc_ctx *ctx, const char *path, oc_sse_fn fn, void *cls, orr_err *err)
{
    struct curl_slist *hdrs = NULL;
    char *url = NULL;
    struct oc__sse_io io;
    memset(&io, 0, sizeof(io));
    io.parser.fn = fn;
    io.parser.cls = cls;
    orr_status s = ORR_OK;
    CURL *c = oc__easy(ctx, ctx->token, "GET", path, &hdrs, &url);
    io.c = c;
    hdrs = curl_slist_append(hdrs, "Accept: text/event-stream");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, oc__sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &io);
    /* The server sends a keepalive every few seconds: a silent minute is a
     * dead connection. */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    CURLcode rc = curl_easy_perform(c);
    oc__log_call(c, "GET", path, rc);
    if (io.status && io.status != 200) {
        s = oc__error(io.status, &io.err_body, "GET", path, err);
    } else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && io.parser.stop)) {
        s = orr_err_set(err, ORR_EUNAVAIL, NULL, "live log from %s: %s", ctx->url,
                        curl_easy_strerror(rc));
    } else if (!io.parser.stop) {
        oc__sse_dispatch(&io.parser); /* an event without its blank line */
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(url);
    oc_sse_free(&io.parser);
    orr_buf_free(&io.err_body);
    return s;
}

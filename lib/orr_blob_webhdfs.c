/*
 * orr_blob_webhdfs.c - the webhdfs:// blob backend: HDFS through the
 * WebHDFS REST API (v1) with libcurl (see orr_blob.h for the contract).
 *
 * URL: webhdfs://USER@HOST:PORT/ROOT[?timeout_s=N]
 *   USER     sent as user.name= (simple authentication); without it the
 *            HADOOP_USER_NAME environment variable is used. A password in
 *            the URL is refused (WebHDFS simple auth has none; it would only
 *            end up in logs).
 *   ROOT     absolute HDFS folder, created by open (MKDIRS).
 *   timeout_s  limit of each metadata request and of a stalled transfer
 *            (default 60 s; connecting is limited to 10 s).
 * The URL is taken apart, and every request URL put together, with curl's
 * URL API (curl_url): percent-encoding of paths and query values is
 * libcurl's, and no ".." is folded away before the root is checked.
 *
 * Requests used (all on http://HOST:PORT/webhdfs/v1<path>?op=...):
 *   CREATE     two steps: the namenode answers 307 with a Location on a
 *              datanode, the bytes are PUT there, 201 means the file is
 *              complete. Temporaries use overwrite=false.
 *   RENAME     {"boolean":true} when done; false when the destination exists
 *              or the source is missing.
 *   OPEN       307 to a datanode, followed; 200 with the bytes (offset= and
 *              length= for a range).
 *   LISTSTATUS (names, and `length` when sizes are asked for), DELETE,
 *   MKDIRS, GETFILESTATUS (also the size op: `length`).
 * Answers are read with jansson (orr_json): {"boolean"}, FileStatus(es) and
 * the RemoteException of an error.
 *
 * Landing: CREATE "<folder>/.tmp-<name>" then RENAME to "<folder>/<name>",
 * so a reader sees the whole object or nothing. HDFS's RENAME does not
 * replace an existing destination: replacing an object deletes the old one
 * first, so there is a short moment with no object under that name.
 *
 * Durability: HDFS has no per-batch fsync. A CREATE whose datanode PUT
 * answered 201 has been closed, i.e. every block was acknowledged by the
 * datanode pipeline and the namenode completed the file; that is what
 * "durable" means here, for put_many with or without the flag. A RENAME is
 * durable once it answered (the namenode logs it before answering).
 *
 * Errors name the HDFS path and carry the request, the HTTP status and the
 * RemoteException (exception and message), or libcurl's reason. The URL
 * holds no secret (a password is refused), so none can reach a log.
 *
 * Threads: the handle is read-only after open; each request uses its own
 * curl easy handle, so one store may be used by several threads at once.
 */
#include "orr_blob.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_alloc.h"
#include "orr_json.h"

typedef struct blob_hdfs {
    orr_blob base;
    char *host; /* as the URL gave it ("[::1]" for IPv6) */
    char *port;
    char *root; /* /ROOT without a trailing slash ("" for /), not encoded */
    char *user;
    long timeout_ms;
} blob_hdfs;

#define WH_MAX_PARAMS 4

/* One request and what came back. */
typedef struct wh_req {
    const char *method;                /* GET, PUT, DELETE */
    const char *op;                    /* CREATE, RENAME, ... (also for messages) */
    const char *path;                  /* absolute HDFS path */
    const char *params[WH_MAX_PARAMS]; /* extra "key=value" (value not encoded), NULL-ended */
    int follow;                        /* follow redirects (OPEN) */
    /* upload body: an open file (read with pread) or bytes (datanode PUT) */
    int fd;
    off_t pos;
    const char *data;
    size_t len;
    int upload;
    /* download: the bytes of a 200 answer go to sink instead of body */
    orr_blob_sink sink;
    void *sink_ud;
    orr_err *sink_err;
    orr_status sink_rc;
    long seen; /* status of the answer whose body is being received */
    long status;
    char *location; /* Location of a redirect (malloc'd) */
    orr_buf body;
} wh_req;

static pthread_once_t wh_once = PTHREAD_ONCE_INIT;
static void wh__global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t wh__write_cb(char *p, size_t size, size_t n, void *ud)
{
    wh_req *r = ud;
    if (r->sink && r->seen == 200) {
        r->sink_rc = r->sink(r->sink_ud, p, size * n, r->sink_err);
        return r->sink_rc == ORR_OK ? size * n : 0;
    }
    /* With a sink only an error answer lands here: keep its start. */
    if (!r->sink || r->body.len < (1u << 16))
        orr_buf_append(&r->body, p, size * n);
    return size * n;
}

/* Each answer's headers start with its status line: remember the status,
 * so a redirect's body and the final body are told apart. */
static size_t wh__header_cb(char *p, size_t size, size_t n, void *ud)
{
    wh_req *r = ud;
    size_t len = size * n;
    long code = 0;
    if (len > 9 && strncmp(p, "HTTP/", 5) == 0) {
        const char *sp = memchr(p, ' ', len);
        if (sp && (size_t)(sp - p) + 4 <= len && sscanf(sp + 1, "%3ld", &code) == 1) {
            r->seen = code;
            orr_buf_reset(&r->body);
        }
    }
    return len;
}

static size_t wh__read_cb(char *dst, size_t size, size_t n, void *ud)
{
    wh_req *r = ud;
    size_t want = size * n;
    if (r->fd >= 0) {
        for (;;) {
            ssize_t got = pread(r->fd, dst, want, r->pos);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                return CURL_READFUNC_ABORT;
            r->pos += got;
            return (size_t)got;
        }
    }
    if (want > r->len)
        want = r->len;
    memcpy(dst, r->data, want);
    r->data += want;
    r->len -= want;
    return want;
}

/* 1 if name (a RemoteException's "exception", with or without a package)
 * is want. */
static int wh__exception_is(const char *name, const char *want)
{
    if (!name)
        return 0;
    size_t n = strlen(name), w = strlen(want);
    return n >= w && strcmp(name + n - w, want) == 0 && (n == w || name[n - w - 1] == '.');
}

/* The RemoteException of a WebHDFS error body: exception name and message
 * copied into ex and msg ("" when absent or not JSON). */
static void wh__remote(const orr_buf *body, char *ex, size_t exn, char *msg, size_t msgn)
{
    ex[0] = msg[0] = 0;
    json_t *j = NULL, *re = NULL;
    if (!body->len || orr_json_parse(body->data, body->len, &j, NULL) != ORR_OK)
        return;
    const char *e = NULL, *m = NULL;
    if (orr_json_get_obj(j, "", "RemoteException", 1, &re, NULL) == ORR_OK) {
        (void)orr_json_get_str(re, "RemoteException", "exception", 0, &e, NULL);
        (void)orr_json_get_str(re, "RemoteException", "message", 0, &m, NULL);
    }
    snprintf(ex, exn, "%s", e ? e : "");
    snprintf(msg, msgn, "%.200s", m ? m : "");
    json_decref(j);
}

/* Report a request that did not get the wanted status. */
static orr_status wh__fail(const wh_req *r, orr_err *err)
{
    char ex[128], msg[201];
    wh__remote(&r->body, ex, sizeof ex, msg, sizeof msg);
    orr_status code = r->status == 404   ? ORR_ENOTFOUND
                      : r->status == 401 ? ORR_EAUTH
                      : r->status == 403 ? ORR_EPERM
                                         : ORR_EIO;
    /* A 403 FileAlreadyExists is an I/O failure of the put, not a missing
     * right; keep EPERM only for access control. */
    if (code == ORR_EPERM && !wh__exception_is(ex, "AccessControlException") &&
        !wh__exception_is(ex, "SecurityException"))
        code = ORR_EIO;
    return orr_err_set(err, code, r->path, "webhdfs %s: HTTP %ld%s%s%s%s", r->op, r->status,
                       ex[0] || msg[0] ? ": " : "", ex, ex[0] && msg[0] ? ": " : "", msg);
}

/* A URL API failure (out of memory or a bad part) as an error of r. */
static orr_status wh__urlfail(const wh_req *r, CURLUcode uc, orr_err *err)
{
    return orr_err_set(err, uc == CURLUE_OUT_OF_MEMORY ? ORR_ENOMEM : ORR_EINVAL, r->path,
                       "webhdfs %s: cannot build the request URL: %s", r->op,
                       curl_url_strerror(uc));
}

/* The namenode URL of r (http://HOST:PORT/webhdfs/v1<path>?op=..&user.name=
 * ..&params) into *out (curl_free it). */
static orr_status wh__nn_url(blob_hdfs *b, const wh_req *r, char **out, orr_err *err)
{
    CURLU *u = orr_xcheck(curl_url());
    orr_buf s = ORR_BUF_INIT;
    CURLUcode uc;
    orr_buf_append_str(&s, "/webhdfs/v1");
    orr_buf_append_str(&s, r->path);
    if ((uc = curl_url_set(u, CURLUPART_SCHEME, "http", 0)) != CURLUE_OK ||
        (uc = curl_url_set(u, CURLUPART_HOST, b->host, 0)) != CURLUE_OK ||
        (uc = curl_url_set(u, CURLUPART_PORT, b->port, 0)) != CURLUE_OK ||
        (uc = curl_url_set(u, CURLUPART_PATH, orr_buf_cstr(&s), CURLU_URLENCODE)) != CURLUE_OK)
        goto fail;
    orr_buf_reset(&s);
    orr_buf_appendf(&s, "op=%s", r->op);
    if ((uc = curl_url_set(u, CURLUPART_QUERY, orr_buf_cstr(&s),
                           CURLU_APPENDQUERY | CURLU_URLENCODE)) != CURLUE_OK)
        goto fail;
    orr_buf_reset(&s);
    orr_buf_appendf(&s, "user.name=%s", b->user);
    if ((uc = curl_url_set(u, CURLUPART_QUERY, orr_buf_cstr(&s),
                           CURLU_APPENDQUERY | CURLU_URLENCODE)) != CURLUE_OK)
        goto fail;
    for (int i = 0; i < WH_MAX_PARAMS && r->params[i]; i++)
        if ((uc = curl_url_set(u, CURLUPART_QUERY, r->params[i],
                               CURLU_APPENDQUERY | CURLU_URLENCODE)) != CURLUE_OK)
            goto fail;
    uc = curl_url_get(u, CURLUPART_URL, out, 0);
fail:
    orr_buf_free(&s);
    curl_url_cleanup(u);
    return uc == CURLUE_OK ? ORR_OK : wh__urlfail(r, uc, err);
}

/* Run r against url (a full URL). Fills status, location, body. */
static orr_status wh__perform(blob_hdfs *b, wh_req *r, const char *url, orr_err *err)
{
    CURL *c = curl_easy_init();
    if (!c)
        return orr_err_set(err, ORR_ENOMEM, r->path, "webhdfs %s: cannot create a request", r->op);
    char ebuf[CURL_ERROR_SIZE] = "";
    orr_buf_reset(&r->body);
    r->seen = 0;
    r->sink_rc = ORR_OK;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    /* A datanode redirect to https is verified; there is no insecure switch. */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wh__write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, wh__header_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    if (r->upload) {
        /* Data may be large: limit stalls, not the whole transfer. */
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, wh__read_cb);
        curl_easy_setopt(c, CURLOPT_READDATA, r);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->len);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (b->timeout_ms + 999) / 1000);
    } else if (r->follow) {
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (b->timeout_ms + 999) / 1000);
    } else {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, b->timeout_ms);
    }
    if (strcmp(r->method, "PUT") == 0 && !r->upload) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    } else if (strcmp(r->method, "DELETE") == 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    struct curl_slist *hdr = NULL;
    if (r->upload)
        hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream");
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);

    orr_status rc = ORR_OK;
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_WRITE_ERROR && r->sink_rc != ORR_OK) {
        rc = r->sink_rc; /* the sink stopped the read and set err */
    } else if (cc != CURLE_OK) {
        orr_status code = cc == CURLE_OPERATION_TIMEDOUT ? ORR_ETIMEOUT
                          : cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST
                              ? ORR_EUNAVAIL
                              : ORR_EIO;
        rc = orr_err_set(err, code, r->path, "webhdfs %s: %s", r->op,
                         ebuf[0] ? ebuf : curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        char *loc = NULL;
        free(r->location);
        r->location = NULL;
        if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc) {
            r->location = orr_xstrdup(loc);
        }
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return rc;
}

/* Request on the namenode for r->path with r->op and r->params. */
static orr_status wh__call(blob_hdfs *b, wh_req *r, orr_err *err)
{
    char *url = NULL;
    orr_status rc = wh__nn_url(b, r, &url, err);
    if (rc == ORR_OK)
        rc = wh__perform(b, r, url, err);
    curl_free(url);
    return rc;
}

static void wh__req_free(wh_req *r)
{
    free(r->location);
    r->location = NULL;
    orr_buf_free(&r->body);
}

/* {"boolean": x} of a 200 answer: 1, 0, or -1 when the body is not that. */
static int wh__boolean(const wh_req *r)
{
    json_t *j = NULL;
    if (orr_json_parse(r->body.data ? r->body.data : "", r->body.len, &j, NULL) != ORR_OK)
        return -1;
    int v = -1;
    if (orr_json_get_bool(j, "", "boolean", 1, &v, NULL) != ORR_OK)
        v = -1;
    json_decref(j);
    return v;
}

/* Absolute HDFS path of rel into out; rel NULL or "" is the root. */
static orr_status wh__full(blob_hdfs *b, const char *rel, orr_buf *out, orr_err *err)
{
    orr_buf_reset(out);
    if (rel && *rel && !orr_blob_path_ok(rel))
        return orr_err_set(err, ORR_EINVAL, "path", "not a clean relative path: %s", rel);
    orr_buf_append_str(out, b->root);
    if (rel && *rel) {
        orr_buf_append_byte(out, '/');
        orr_buf_append_str(out, rel);
    } else if (!out->len) {
        orr_buf_append_byte(out, '/');
    }
    return ORR_OK;
}

/* Temporary name of full ("<folder>/.tmp-<name>") into out. */
static void wh__tmp(const char *full, orr_buf *out)
{
    const char *slash = strrchr(full, '/');
    orr_buf_reset(out);
    orr_buf_append(out, full, (size_t)(slash - full) + 1);
    orr_buf_append_str(out, ".tmp-");
    orr_buf_append_str(out, slash + 1);
}

/* A metadata request (no body, no redirect); param may be NULL. */
static orr_status wh__simple(blob_hdfs *b, const char *method, const char *op, const char *path,
                             const char *param, wh_req *r, orr_err *err)
{
    r->method = method;
    r->op = op;
    r->path = path;
    memset(r->params, 0, sizeof r->params);
    r->params[0] = param;
    r->follow = 0;
    r->upload = 0;
    r->fd = -1;
    r->sink = NULL;
    return wh__call(b, r, err);
}

/* DELETE path; ok if it was absent. */
static orr_status wh__delete(blob_hdfs *b, const char *path, orr_err *err)
{
    wh_req r = {0};
    orr_status rc = wh__simple(b, "DELETE", "DELETE", path, "recursive=false", &r, err);
    if (rc == ORR_OK && r.status != 200)
        rc = wh__fail(&r, err);
    wh__req_free(&r);
    return rc;
}

/* CREATE path (two steps) with the bytes of the open file fd (from offset
 * 0, len bytes) or of data/len (fd < 0). */
static orr_status wh__create(blob_hdfs *b, const char *path, int fd, const void *data, size_t len,
                             int overwrite, orr_err *err)
{
    wh_req r = {0};
    orr_status rc;
    for (int attempt = 0;; attempt++) {
        rc = wh__simple(b, "PUT", "CREATE", path, overwrite ? "overwrite=true" : "overwrite=false",
                        &r, err);
        if (rc != ORR_OK)
            goto out;
        if (r.status == 403)
            goto refused;
        if (r.status != 307 || !r.location) {
            rc = r.status == 307 ? orr_err_set(err, ORR_EIO, path,
                                               "webhdfs CREATE: HTTP 307 without a Location")
                                 : wh__fail(&r, err);
            goto out;
        }
        char *dn = r.location;
        r.location = NULL;
        r.fd = fd;
        r.pos = 0;
        r.data = data;
        r.len = len;
        r.upload = 1;
        r.status = 0;
        rc = wh__perform(b, &r, dn, err);
        free(dn);
        r.upload = 0;
        r.fd = -1;
        if (rc != ORR_OK)
            goto out;
        if (r.status == 201)
            goto out;
    refused:
        /* A leftover temporary of a crash: remove it and try once more. */
        if (attempt == 0 && !overwrite && r.status == 403) {
            char ex[128], msg[8];
            wh__remote(&r.body, ex, sizeof ex, msg, sizeof msg);
            if (wh__exception_is(ex, "FileAlreadyExistsException") &&
                wh__delete(b, path, NULL) == ORR_OK)
                continue;
        }
        rc = wh__fail(&r, err);
        goto out;
    }
out:
    wh__req_free(&r);
    return rc;
}

/* RENAME from to (absolute); an existing destination is replaced. */
static orr_status wh__rename(blob_hdfs *b, const char *from, const char *to, orr_err *err)
{
    orr_buf param = ORR_BUF_INIT;
    orr_buf_append_str(&param, "destination=");
    orr_buf_append_str(&param, to);
    wh_req r = {0};
    orr_status rc;
    for (int attempt = 0;; attempt++) {
        rc = wh__simple(b, "PUT", "RENAME", from, orr_buf_cstr(&param), &r, err);
        if (rc != ORR_OK)
            break;
        if (r.status != 200) {
            rc = wh__fail(&r, err);
            break;
        }
        int v = wh__boolean(&r);
        if (v == 1)
            break;
        if (v == 0 && attempt == 0) {
            /* false: the destination exists (or the source is gone). */
            wh_req s = {0};
            orr_status src = wh__simple(b, "GET", "GETFILESTATUS", to, NULL, &s, NULL);
            int exists = src == ORR_OK && s.status == 200;
            wh__req_free(&s);
            if (exists && wh__delete(b, to, NULL) == ORR_OK)
                continue;
        }
        rc = orr_err_set(err, ORR_EIO, to, "webhdfs RENAME from %s: refused (HTTP %ld, %s)", from,
                         r.status, v == 0 ? "boolean false" : "not a boolean answer");
        break;
    }
    wh__req_free(&r);
    orr_buf_free(&param);
    return rc;
}

/* Open local for an upload: its descriptor and size. */
static orr_status wh__open_local(const char *local, int *fd, size_t *size, orr_err *err)
{
    struct stat st;
    *fd = open(local, O_RDONLY | O_CLOEXEC);
    if (*fd < 0 || fstat(*fd, &st) != 0) {
        orr_status rc = orr_err_set(err, ORR_EIO, local, "cannot open: %s", strerror(errno));
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return rc;
    }
    *size = (size_t)st.st_size;
    return ORR_OK;
}

/* Land the bytes of fd (size bytes) or data/len at rel: CREATE the
 * temporary, RENAME it; the temporary is removed on failure. */
static orr_status wh__put(blob_hdfs *b, const char *rel, int fd, const void *data, size_t len,
                          orr_err *err)
{
    orr_buf full = ORR_BUF_INIT, tmp = ORR_BUF_INIT;
    orr_status rc = !rel || !*rel ? orr_err_set(err, ORR_EINVAL, "path", "is empty")
                                  : wh__full(b, rel, &full, err);
    if (rc != ORR_OK)
        goto out;
    wh__tmp(orr_buf_cstr(&full), &tmp);
    rc = wh__create(b, orr_buf_cstr(&tmp), fd, data, len, 0, err);
    if (rc == ORR_OK)
        rc = wh__rename(b, orr_buf_cstr(&tmp), orr_buf_cstr(&full), err);
    if (rc != ORR_OK)
        (void)wh__delete(b, orr_buf_cstr(&tmp), NULL);
out:
    orr_buf_free(&full);
    orr_buf_free(&tmp);
    return rc;
}

static orr_status wh_put_file(orr_blob *bb, const char *rel, const char *local, int move,
                              orr_err *err)
{
    int fd = -1;
    size_t size = 0;
    orr_status rc =
        !rel || !*rel || !orr_blob_path_ok(rel)
            ? orr_err_set(err, ORR_EINVAL, "path", "not a clean relative path: %s", rel ? rel : "")
            : wh__open_local(local, &fd, &size, err);
    if (rc != ORR_OK)
        return rc;
    rc = wh__put((blob_hdfs *)bb, rel, fd, NULL, size, err);
    close(fd);
    if (rc == ORR_OK && move)
        unlink(local);
    return rc;
}

static orr_status wh_put_fd(orr_blob *bb, const char *rel, int fd, orr_err *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return orr_err_set(err, ORR_EIO, rel ? rel : "", "the file to land is not readable");
    return wh__put((blob_hdfs *)bb, rel, fd, NULL, (size_t)st.st_size, err);
}

static orr_status wh_put_bytes(orr_blob *bb, const char *rel, const void *data, size_t len,
                               orr_err *err)
{
    orr_blob_item it = {.rel = rel, .data = data, .len = len};
    return bb->ops->put_many(bb, &it, 1, 1, NULL, err);
}

static orr_status wh_get_range(orr_blob *bb, const char *rel, uint64_t offset, uint64_t max,
                               orr_blob_sink sink, void *ud, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    char off[40], len[40];
    wh_req r = {0};
    orr_status rc = wh__full(b, rel, &full, err);
    if (rc != ORR_OK)
        goto out;
    if (max == 0)
        goto out;
    r.method = "GET";
    r.op = "OPEN";
    r.path = orr_buf_cstr(&full);
    r.follow = 1;
    r.fd = -1;
    r.sink = sink;
    r.sink_ud = ud;
    r.sink_err = err;
    int np = 0;
    if (offset > 0) {
        snprintf(off, sizeof off, "offset=%llu", (unsigned long long)offset);
        r.params[np++] = off;
    }
    if (max != ORR_BLOB_TO_END) {
        snprintf(len, sizeof len, "length=%llu", (unsigned long long)max);
        r.params[np++] = len;
    }
    rc = wh__call(b, &r, err);
    if (rc == ORR_OK && r.status != 200)
        rc = wh__fail(&r, err);
out:
    wh__req_free(&r);
    orr_buf_free(&full);
    return rc;
}

static orr_status wh__append_sink(void *ud, const void *data, size_t n, orr_err *err)
{
    (void)err;
    orr_buf_append((orr_buf *)ud, data, n);
    return ORR_OK;
}

static orr_status wh_get_bytes(orr_blob *bb, const char *rel, orr_buf *out, orr_err *err)
{
    orr_buf_reset(out);
    orr_status rc = wh_get_range(bb, rel, 0, ORR_BLOB_TO_END, wh__append_sink, out, err);
    if (rc != ORR_OK)
        orr_buf_reset(out);
    else
        orr_buf_append(out, "", 0); /* a buffer, NUL-terminated, also when empty */
    return rc;
}

static orr_status wh_list(orr_blob *bb, const char *rel, orr_buf *out, orr_buf *sizes, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    wh_req r = {0};
    json_t *j = NULL;
    orr_status rc = wh__full(b, rel, &full, err);
    if (rc != ORR_OK)
        goto out;
    rc = wh__simple(b, "GET", "LISTSTATUS", orr_buf_cstr(&full), NULL, &r, err);
    if (rc != ORR_OK)
        goto out;
    if (r.status != 200) {
        rc = wh__fail(&r, err);
        goto out;
    }
    json_t *fss, *arr;
    if ((rc = orr_json_parse(r.body.data ? r.body.data : "", r.body.len, &j, err)) != ORR_OK ||
        (rc = orr_json_get_obj(j, "", "FileStatuses", 1, &fss, err)) != ORR_OK ||
        (rc = orr_json_get_array(fss, "FileStatuses", "FileStatus", 1, &arr, err)) != ORR_OK) {
        rc = orr_err_set(err, ORR_EIO, orr_buf_cstr(&full), "webhdfs LISTSTATUS: bad answer: %s",
                         err ? err->msg : "");
        goto out;
    }
    size_t i;
    json_t *st;
    json_array_foreach(arr, i, st)
    {
        char p[64];
        const char *name = NULL;
        orr_json_index_path(p, sizeof p, "FileStatuses.FileStatus", i);
        if ((rc = orr_json_get_str(st, p, "pathSuffix", 1, &name, err)) != ORR_OK)
            goto out;
        if (!*name)
            continue;    /* LISTSTATUS of a file lists the file itself */
        int64_t len = 0; /* folders have length 0 */
        if (sizes && (rc = orr_json_get_int(st, p, "length", 1, 0, INT64_MAX, &len, err)) != ORR_OK)
            goto out;
        orr_buf_append(out, name, strlen(name) + 1);
        if (sizes) {
            uint64_t n = (uint64_t)len;
            orr_buf_append(sizes, &n, sizeof n);
        }
    }
out:
    json_decref(j);
    wh__req_free(&r);
    orr_buf_free(&full);
    return rc;
}

/* GETFILESTATUS of path: its type ("FILE", "DIRECTORY", ...) into type and
 * its length into *len. */
static orr_status wh__status(blob_hdfs *b, const char *path, char *type, size_t tn, int64_t *len,
                             orr_err *err)
{
    wh_req r = {0};
    json_t *j = NULL, *fs;
    const char *t = NULL;
    orr_status rc = wh__simple(b, "GET", "GETFILESTATUS", path, NULL, &r, err);
    if (rc != ORR_OK)
        goto out;
    if (r.status != 200) {
        rc = wh__fail(&r, err);
        goto out;
    }
    if ((rc = orr_json_parse(r.body.data ? r.body.data : "", r.body.len, &j, err)) != ORR_OK ||
        (rc = orr_json_get_obj(j, "", "FileStatus", 1, &fs, err)) != ORR_OK ||
        (rc = orr_json_get_str(fs, "FileStatus", "type", 1, &t, err)) != ORR_OK ||
        (rc = orr_json_get_int(fs, "FileStatus", "length", 1, 0, INT64_MAX, len, err)) != ORR_OK) {
        rc = orr_err_set(err, ORR_EIO, path, "webhdfs GETFILESTATUS: bad answer: %s",
                         err ? err->msg : "");
        goto out;
    }
    snprintf(type, tn, "%s", t);
out:
    json_decref(j);
    wh__req_free(&r);
    return rc;
}

static orr_status wh_size(orr_blob *bb, const char *rel, uint64_t *size, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    char type[32];
    int64_t len = 0;
    orr_status rc = wh__full(b, rel, &full, err);
    if (rc == ORR_OK && (!rel || !*rel))
        rc = orr_err_set(err, ORR_EINVAL, "path", "is empty");
    if (rc == ORR_OK)
        rc = wh__status(b, orr_buf_cstr(&full), type, sizeof type, &len, err);
    if (rc == ORR_OK && strcmp(type, "FILE") != 0)
        rc = orr_err_set(err, ORR_EINVAL, orr_buf_cstr(&full), "not a file (type %s)", type);
    if (rc == ORR_OK)
        *size = (uint64_t)len;
    orr_buf_free(&full);
    return rc;
}

static orr_status wh_remove(orr_blob *bb, const char *rel, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    orr_status rc = wh__full(b, rel, &full, err);
    if (rc == ORR_OK && (!rel || !*rel))
        rc = orr_err_set(err, ORR_EINVAL, "path", "is empty");
    if (rc == ORR_OK)
        rc = wh__delete(b, orr_buf_cstr(&full), err);
    orr_buf_free(&full);
    return rc;
}

static orr_status wh_put_many(orr_blob *bb, const orr_blob_item *items, size_t n, int durable,
                              size_t *landed, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    (void)durable; /* every CREATE that answered 201 is durable (see top) */
    orr_buf fulls = ORR_BUF_INIT, tmps = ORR_BUF_INIT, one = ORR_BUF_INIT, t = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    size_t placed = 0, done = 0;
    if (landed)
        *landed = 0;
    for (; placed < n; placed++) {
        const orr_blob_item *it = &items[placed];
        if ((rc = !it->rel || !*it->rel ? orr_err_set(err, ORR_EINVAL, "path", "is empty")
                                        : wh__full(b, it->rel, &one, err)) != ORR_OK)
            goto out;
        wh__tmp(orr_buf_cstr(&one), &t);
        if (it->local) {
            int fd;
            size_t size;
            if ((rc = wh__open_local(it->local, &fd, &size, err)) != ORR_OK)
                goto out;
            rc = wh__create(b, orr_buf_cstr(&t), fd, NULL, size, 0, err);
            close(fd);
        } else {
            rc = wh__create(b, orr_buf_cstr(&t), -1, it->data, it->len, 0, err);
        }
        if (rc != ORR_OK) {
            (void)wh__delete(b, orr_buf_cstr(&t), NULL); /* a partial temporary */
            goto out;
        }
        orr_buf_append(&fulls, one.data, one.len + 1);
        orr_buf_append(&tmps, t.data, t.len + 1);
    }
    const char *f = fulls.data, *tp = tmps.data;
    for (; done < n; done++, f += strlen(f) + 1, tp += strlen(tp) + 1) {
        if ((rc = wh__rename(b, tp, f, err)) != ORR_OK)
            goto out;
        if (items[done].local)
            unlink(items[done].local); /* landed: the local copy is no longer needed */
        if (landed)
            *landed = done + 1;
    }
out:
    /* Temporaries of items that did not land are removed; their local files
     * were only read, so they are still where they were. */
    tp = tmps.data;
    for (size_t i = 0; i < placed; i++, tp += strlen(tp) + 1)
        if (i >= done)
            (void)wh__delete(b, tp, NULL);
    orr_buf_free(&fulls);
    orr_buf_free(&tmps);
    orr_buf_free(&one);
    orr_buf_free(&t);
    return rc;
}

static orr_status wh_url(orr_blob *bb, const char *rel, orr_buf *out, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    CURLU *u = NULL;
    char *s = NULL;
    CURLUcode uc = CURLUE_OK;
    orr_status rc = !rel || !*rel ? orr_err_set(err, ORR_EINVAL, "path", "is empty")
                                  : wh__full(b, rel, &full, err);
    if (rc != ORR_OK)
        goto out;
    u = orr_xcheck(curl_url());
    if ((uc = curl_url_set(u, CURLUPART_SCHEME, "webhdfs", CURLU_NON_SUPPORT_SCHEME)) ==
            CURLUE_OK &&
        (uc = curl_url_set(u, CURLUPART_USER, b->user, CURLU_URLENCODE)) == CURLUE_OK &&
        (uc = curl_url_set(u, CURLUPART_HOST, b->host, 0)) == CURLUE_OK &&
        (uc = curl_url_set(u, CURLUPART_PORT, b->port, 0)) == CURLUE_OK &&
        (uc = curl_url_set(u, CURLUPART_PATH, orr_buf_cstr(&full), CURLU_URLENCODE)) == CURLUE_OK) {
        uc = curl_url_get(u, CURLUPART_URL, &s, CURLU_NON_SUPPORT_SCHEME);
    }
    if (uc != CURLUE_OK) {
        rc = orr_err_set(err, uc == CURLUE_OUT_OF_MEMORY ? ORR_ENOMEM : ORR_EINVAL, "path",
                         "cannot make a URL of %s: %s", rel, curl_url_strerror(uc));
        goto out;
    }
    orr_buf_reset(out);
    orr_buf_append_str(out, s);
out:
    curl_free(s);
    curl_url_cleanup(u);
    orr_buf_free(&full);
    return rc;
}

/* Part p of u into *out (curl_free it); NULL when the URL has none. */
static CURLUcode wh__part(CURLU *u, CURLUPart p, unsigned flags, char **out)
{
    *out = NULL;
    CURLUcode uc = curl_url_get(u, p, out, flags);
    if (uc == CURLUE_NO_USER || uc == CURLUE_NO_PASSWORD || uc == CURLUE_NO_PORT ||
        uc == CURLUE_NO_QUERY || uc == CURLUE_NO_HOST || uc == CURLUE_NO_OPTIONS) {
        *out = NULL;
        return CURLUE_OK;
    }
    return uc;
}

static orr_status wh_locate(orr_blob *bb, const char *ref, orr_buf *rel, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf_reset(rel);
    if (!strstr(ref, "://")) {
        if (!orr_blob_path_ok(ref))
            return orr_err_set(err, ORR_EINVAL, "url",
                               "%.200s is neither a webhdfs:// URL nor a clean relative path", ref);
        orr_buf_append_str(rel, ref);
        return ORR_OK;
    }
    CURLU *u = orr_xcheck(curl_url());
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    orr_status rc = ORR_OK;
    if (curl_url_set(u, CURLUPART_URL, ref, CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS) !=
            CURLUE_OK ||
        wh__part(u, CURLUPART_SCHEME, 0, &scheme) != CURLUE_OK ||
        wh__part(u, CURLUPART_HOST, 0, &host) != CURLUE_OK ||
        wh__part(u, CURLUPART_PORT, 0, &port) != CURLUE_OK ||
        wh__part(u, CURLUPART_PATH, CURLU_URLDECODE, &path) != CURLUE_OK) {
        rc = orr_err_set(err, ORR_EINVAL, "url", "not a URL: %.200s", ref);
        goto out;
    }
    if (!scheme || strcasecmp(scheme, "webhdfs") != 0 || !host || strcasecmp(host, b->host) != 0 ||
        !port || strcmp(port, b->port) != 0) {
        rc = orr_err_set(err, ORR_EINVAL, "url", "%.200s is not in this blob store", ref);
        goto out;
    }
    size_t rl = strlen(b->root);
    if (!path || strncmp(path, b->root, rl) != 0 || path[rl] != '/' ||
        !orr_blob_path_ok(path + rl + 1)) {
        rc = orr_err_set(err, ORR_EINVAL, "url", "%.200s is outside the blob root", ref);
        goto out;
    }
    orr_buf_append_str(rel, path + rl + 1);
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

static void wh_close(orr_blob *bb)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    free(b->host);
    free(b->port);
    free(b->root);
    free(b->user);
    free(b);
}

/* Parse the URL into b with curl's URL API. Messages never repeat the
 * authority part (it may hold a password). */
static orr_status wh__parse(blob_hdfs *b, const char *url, orr_err *err)
{
    CURLU *u = orr_xcheck(curl_url());
    char *user = NULL, *pass = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
    orr_status rc = ORR_OK;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS);
    if (uc == CURLUE_BAD_PORT_NUMBER) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root", "webhdfs URL: port is not a number");
        goto out;
    }
    if (uc != CURLUE_OK || wh__part(u, CURLUPART_USER, CURLU_URLDECODE, &user) != CURLUE_OK ||
        wh__part(u, CURLUPART_PASSWORD, 0, &pass) != CURLUE_OK ||
        wh__part(u, CURLUPART_HOST, 0, &host) != CURLUE_OK ||
        wh__part(u, CURLUPART_PORT, 0, &port) != CURLUE_OK ||
        wh__part(u, CURLUPART_PATH, CURLU_URLDECODE, &path) != CURLUE_OK ||
        wh__part(u, CURLUPART_QUERY, 0, &query) != CURLUE_OK) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                         "not a webhdfs URL (webhdfs://USER@HOST:PORT/ROOT): %s",
                         uc != CURLUE_OK ? curl_url_strerror(uc) : "a part is malformed");
        goto out;
    }
    if (pass) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                         "webhdfs URL must not carry a password (simple auth: user only)");
        goto out;
    }
    const char *name = user ? user : getenv("HADOOP_USER_NAME");
    if (!name || !*name) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                         "webhdfs URL needs a user (webhdfs://USER@HOST:PORT/ROOT) or "
                         "HADOOP_USER_NAME");
        goto out;
    }
    for (const char *c = name; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.')) {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                             "webhdfs user may hold only letters, digits, '-', '_', '.'");
            goto out;
        }
    }
    if (!host || !*host || !port) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                         "webhdfs URL needs HOST:PORT (webhdfs://USER@HOST:PORT/ROOT)");
        goto out;
    }
    b->user = orr_xstrdup(name);
    b->host = orr_xstrdup(host);
    b->port = orr_xstrdup(port);
    size_t n = path ? strlen(path) : 0;
    while (n > 0 && path[n - 1] == '/')
        path[--n] = 0;
    if (n > 0 && (path[0] != '/' || !orr_blob_path_ok(path + 1))) {
        rc =
            orr_err_set(err, ORR_EINVAL, "blob_root", "webhdfs root is not a clean path: %s", path);
        goto out;
    }
    b->root = orr_xstrdup(n ? path : "");
    b->timeout_ms = 60000;
    if (query) {
        long v = 0;
        char extra;
        if (sscanf(query, "timeout_s=%ld%c", &v, &extra) != 1 || v < 1 || v > 3600) {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                             "webhdfs URL: only ?timeout_s=1..3600 is understood");
            goto out;
        }
        b->timeout_ms = v * 1000;
    }
out:
    curl_free(user);
    curl_free(pass);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    return rc;
}

static orr_status wh_open(const char *url, orr_blob **out, orr_err *err)
{
    pthread_once(&wh_once, wh__global_init);
    blob_hdfs *b = orr_xcalloc(1, sizeof *b);
    b->base.ops = &orr_blob_webhdfs;
    wh_req r = {0};
    char type[32] = "";
    int64_t len = 0;
    orr_status rc = wh__parse(b, url, err);
    if (rc != ORR_OK)
        goto fail;
    const char *root = b->root[0] ? b->root : "/";
    rc = wh__simple(b, "PUT", "MKDIRS", root, NULL, &r, err);
    if (rc == ORR_OK && (r.status != 200 || wh__boolean(&r) != 1))
        rc = r.status != 200 ? wh__fail(&r, err)
                             : orr_err_set(err, ORR_EIO, root, "webhdfs MKDIRS: refused");
    if (rc == ORR_OK)
        rc = wh__status(b, root, type, sizeof type, &len, err);
    if (rc == ORR_OK && strcmp(type, "DIRECTORY") != 0)
        rc = orr_err_set(err, ORR_EIO, root, "webhdfs GETFILESTATUS: root is not a folder");
    if (rc != ORR_OK) {
        /* Name the setting; the message already names the HDFS path. */
        if (err && err->field[0] != 0 && strcmp(err->field, "blob_root") != 0) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            orr_err_set(err, rc, "blob_root", "%s: %s", root, m);
        }
        goto fail;
    }
    wh__req_free(&r);
    *out = &b->base;
    return ORR_OK;
fail:
    wh__req_free(&r);
    wh_close(&b->base);
    return rc;
}

const orr_blob_ops orr_blob_webhdfs = {
    .scheme = "webhdfs",
    .open = wh_open,
    .put_file = wh_put_file,
    .put_fd = wh_put_fd,
    .put_bytes = wh_put_bytes,
    .get_bytes = wh_get_bytes,
    .get_range = wh_get_range,
    .list = wh_list,
    .remove = wh_remove,
    .size = wh_size,
    .put_many = wh_put_many,
    .url = wh_url,
    .locate = wh_locate,
    .close = wh_close,
};

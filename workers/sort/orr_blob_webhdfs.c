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
 *
 * Requests used (all on http://HOST:PORT/webhdfs/v1/<path>?op=...):
 *   CREATE     two steps: the namenode answers 307 with a Location on a
 *              datanode, the bytes are PUT there, 201 means the file is
 *              complete. Temporaries use overwrite=false.
 *   RENAME     {"boolean":true} when done; false when the destination exists
 *              or the source is missing.
 *   OPEN       307 to a datanode, followed; 200 with the bytes.
 *   LISTSTATUS (names, and `length` when sizes are asked for), DELETE,
 *   MKDIRS, GETFILESTATUS (also the size op: `length`).
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
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_json.h"

typedef struct blob_hdfs {
    orr_blob base;
    char *base_url; /* http://HOST:PORT/webhdfs/v1 */
    char *root;     /* /ROOT without a trailing slash ("" for /) */
    char *user;     /* percent-encoded */
    long timeout_ms;
} blob_hdfs;

/* One request and what came back. */
typedef struct wh_req {
    const char *method; /* GET, PUT, DELETE */
    const char *op;     /* CREATE, RENAME, ... (for messages) */
    const char *path;   /* absolute HDFS path */
    const char *params; /* extra "&k=v" or "" */
    int follow;         /* follow redirects (OPEN) */
    /* upload body: a file or bytes (for the datanode PUT) */
    FILE *in;
    const char *data;
    size_t len;
    int upload;
    long status;
    char *location; /* Location of a redirect (malloc'd) */
    orr_buf body;
} wh_req;

static pthread_once_t wh_once = PTHREAD_ONCE_INIT;
static void wh__global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Percent-encode s (keeping '/') onto out. */
static void wh__enc(orr_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
            orr_buf_append_byte(out, (char)c);
        } else {
            orr_buf_append_byte(out, '%');
            orr_buf_append_byte(out, hex[c >> 4]);
            orr_buf_append_byte(out, hex[c & 15]);
        }
    }
}

static size_t wh__write_cb(char *p, size_t size, size_t n, void *ud)
{
    orr_buf_append((orr_buf *)ud, p, size * n);
    return size * n;
}

static size_t wh__read_cb(char *dst, size_t size, size_t n, void *ud)
{
    wh_req *r = ud;
    size_t want = size * n;
    if (r->in) {
        size_t got = fread(dst, 1, want, r->in);
        if (got == 0 && ferror(r->in))
            return CURL_READFUNC_ABORT;
        return got;
    }
    if (want > r->len)
        want = r->len;
    memcpy(dst, r->data, want);
    r->data += want;
    r->len -= want;
    return want;
}

/* Append " (RemoteException: message)" details of a WebHDFS error body. */
static void wh__remote(const orr_buf *body, char *out, size_t n)
{
    out[0] = 0;
    if (!body->len)
        return;
    json_t *j = json_loadb(body->data, body->len, 0, NULL);
    json_t *re = j ? json_object_get(j, "RemoteException") : NULL;
    const char *ex = json_string_value(json_object_get(re, "exception"));
    const char *msg = json_string_value(json_object_get(re, "message"));
    if (ex || msg)
        snprintf(out, n, ": %s%s%.200s", ex ? ex : "", ex && msg ? ": " : "", msg ? msg : "");
    json_decref(j);
}

/* Report a request that did not get the wanted status. */
static orr_status wh__fail(const wh_req *r, orr_err *err)
{
    char remote[320];
    wh__remote(&r->body, remote, sizeof remote);
    orr_status code = r->status == 404   ? ORR_ENOTFOUND
                      : r->status == 401 ? ORR_EAUTH
                      : r->status == 403 ? ORR_EPERM
                                         : ORR_EIO;
    /* A 403 FileAlreadyExists is an I/O failure of the put, not a missing
     * right; keep EPERM only for access control. */
    if (code == ORR_EPERM && !strstr(remote, "AccessControl") && !strstr(remote, "Security"))
        code = ORR_EIO;
    return orr_err_set(err, code, r->path, "webhdfs %s: HTTP %ld%s", r->op, r->status, remote);
}

/* Run r against url (a full URL). Fills status, location, body. */
static orr_status wh__perform(blob_hdfs *b, wh_req *r, const char *url, orr_err *err)
{
    CURL *c = curl_easy_init();
    if (!c)
        return orr_err_set(err, ORR_ENOMEM, r->path, "webhdfs %s: cannot create a request", r->op);
    char ebuf[CURL_ERROR_SIZE] = "";
    orr_buf_reset(&r->body);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wh__write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
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
    if (cc != CURLE_OK) {
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
            r->location = strdup(loc);
            if (!r->location)
                abort();
        }
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return rc;
}

/* Request on the namenode for r->path with op and params. */
static orr_status wh__call(blob_hdfs *b, wh_req *r, orr_err *err)
{
    orr_buf url = ORR_BUF_INIT;
    orr_buf_append_str(&url, b->base_url);
    wh__enc(&url, r->path);
    orr_buf_appendf(&url, "?op=%s&user.name=%s%s", r->op, b->user, r->params ? r->params : "");
    orr_status rc = wh__perform(b, r, orr_buf_cstr(&url), err);
    orr_buf_free(&url);
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

static orr_status wh__simple(blob_hdfs *b, const char *method, const char *op, const char *path,
                             const char *params, wh_req *r, orr_err *err)
{
    r->method = method;
    r->op = op;
    r->path = path;
    r->params = params;
    r->follow = 0;
    r->upload = 0;
    return wh__call(b, r, err);
}

/* DELETE path; ok if it was absent. */
static orr_status wh__delete(blob_hdfs *b, const char *path, orr_err *err)
{
    wh_req r = {0};
    orr_status rc = wh__simple(b, "DELETE", "DELETE", path, "&recursive=false", &r, err);
    if (rc == ORR_OK && r.status != 200)
        rc = wh__fail(&r, err);
    wh__req_free(&r);
    return rc;
}

/* CREATE path (two steps) with the bytes of in or data/len. */
static orr_status wh__create(blob_hdfs *b, const char *path, FILE *in, const void *data, size_t len,
                             int overwrite, orr_err *err)
{
    wh_req r = {0};
    orr_status rc;
    for (int attempt = 0;; attempt++) {
        rc = wh__simple(b, "PUT", "CREATE", path,
                        overwrite ? "&overwrite=true" : "&overwrite=false", &r, err);
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
        if (in)
            rewind(in);
        r.in = in;
        r.data = data;
        r.len = len;
        r.upload = 1;
        r.status = 0;
        rc = wh__perform(b, &r, dn, err);
        free(dn);
        r.upload = 0;
        r.in = NULL;
        if (rc != ORR_OK)
            goto out;
        if (r.status == 201)
            goto out;
    refused:
        /* A leftover temporary of a crash: remove it and try once more. */
        if (attempt == 0 && !overwrite && r.status == 403 && r.body.data &&
            strstr(r.body.data, "FileAlreadyExists") && wh__delete(b, path, NULL) == ORR_OK)
            continue;
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
    orr_buf params = ORR_BUF_INIT;
    orr_buf_append_str(&params, "&destination=");
    wh__enc(&params, to);
    wh_req r = {0};
    orr_status rc;
    for (int attempt = 0;; attempt++) {
        rc = wh__simple(b, "PUT", "RENAME", from, orr_buf_cstr(&params), &r, err);
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
            orr_status src = wh__simple(b, "GET", "GETFILESTATUS", to, "", &s, NULL);
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
    orr_buf_free(&params);
    return rc;
}

static orr_status wh_put_file(orr_blob *bb, const char *rel, const char *local, int move,
                              orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT, tmp = ORR_BUF_INIT;
    FILE *in = NULL;
    orr_status rc = !rel || !*rel ? orr_err_set(err, ORR_EINVAL, "path", "is empty")
                                  : wh__full(b, rel, &full, err);
    if (rc != ORR_OK)
        goto out;
    in = fopen(local, "rb");
    struct stat st;
    if (!in || fstat(fileno(in), &st) != 0) {
        rc = orr_err_set(err, ORR_EIO, local, "cannot open: %s", strerror(errno));
        goto out;
    }
    wh__tmp(orr_buf_cstr(&full), &tmp);
    rc = wh__create(b, orr_buf_cstr(&tmp), in, NULL, (size_t)st.st_size, 0, err);
    if (rc != ORR_OK) {
        (void)wh__delete(b, orr_buf_cstr(&tmp), NULL);
        goto out;
    }
    rc = wh__rename(b, orr_buf_cstr(&tmp), orr_buf_cstr(&full), err);
    if (rc != ORR_OK) {
        (void)wh__delete(b, orr_buf_cstr(&tmp), NULL);
        goto out;
    }
    if (move)
        unlink(local);
out:
    if (in)
        fclose(in);
    orr_buf_free(&full);
    orr_buf_free(&tmp);
    return rc;
}

static orr_status wh_put_bytes(orr_blob *bb, const char *rel, const void *data, size_t len,
                               orr_err *err)
{
    orr_blob_item it = {.rel = rel, .data = data, .len = len};
    return bb->ops->put_many(bb, &it, 1, 1, NULL, err);
}

static orr_status wh_get_bytes(orr_blob *bb, const char *rel, orr_buf *out, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    wh_req r = {0};
    orr_status rc = wh__full(b, rel, &full, err);
    if (rc != ORR_OK)
        goto out;
    r.method = "GET";
    r.op = "OPEN";
    r.path = orr_buf_cstr(&full);
    r.params = "";
    r.follow = 1;
    rc = wh__call(b, &r, err);
    if (rc != ORR_OK)
        goto out;
    if (r.status != 200) {
        rc = wh__fail(&r, err);
        goto out;
    }
    orr_buf_reset(out);
    orr_buf_append(out, r.body.data ? r.body.data : "", r.body.len);
out:
    wh__req_free(&r);
    orr_buf_free(&full);
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
    rc = wh__simple(b, "GET", "LISTSTATUS", orr_buf_cstr(&full), "", &r, err);
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

static orr_status wh_size(orr_blob *bb, const char *rel, uint64_t *size, orr_err *err)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    orr_buf full = ORR_BUF_INIT;
    wh_req r = {0};
    json_t *j = NULL;
    orr_status rc = wh__full(b, rel, &full, err);
    if (rc == ORR_OK && (!rel || !*rel))
        rc = orr_err_set(err, ORR_EINVAL, "path", "is empty");
    if (rc != ORR_OK)
        goto out;
    rc = wh__simple(b, "GET", "GETFILESTATUS", orr_buf_cstr(&full), "", &r, err);
    if (rc != ORR_OK)
        goto out;
    if (r.status != 200) {
        rc = wh__fail(&r, err);
        goto out;
    }
    json_t *fs;
    const char *type = NULL;
    int64_t len = 0;
    if ((rc = orr_json_parse(r.body.data ? r.body.data : "", r.body.len, &j, err)) != ORR_OK ||
        (rc = orr_json_get_obj(j, "", "FileStatus", 1, &fs, err)) != ORR_OK ||
        (rc = orr_json_get_str(fs, "FileStatus", "type", 1, &type, err)) != ORR_OK ||
        (rc = orr_json_get_int(fs, "FileStatus", "length", 1, 0, INT64_MAX, &len, err)) != ORR_OK) {
        rc = orr_err_set(err, ORR_EIO, orr_buf_cstr(&full), "webhdfs GETFILESTATUS: bad answer: %s",
                         err ? err->msg : "");
        goto out;
    }
    if (strcmp(type, "FILE") != 0) {
        rc = orr_err_set(err, ORR_EINVAL, orr_buf_cstr(&full), "not a file (type %s)", type);
        goto out;
    }
    *size = (uint64_t)len;
out:
    json_decref(j);
    wh__req_free(&r);
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
            FILE *in = fopen(it->local, "rb");
            struct stat st;
            if (!in || fstat(fileno(in), &st) != 0) {
                rc = orr_err_set(err, ORR_EIO, it->local, "cannot open: %s", strerror(errno));
                if (in)
                    fclose(in);
                goto out;
            }
            rc = wh__create(b, orr_buf_cstr(&t), in, NULL, (size_t)st.st_size, 0, err);
            fclose(in);
        } else {
            rc = wh__create(b, orr_buf_cstr(&t), NULL, it->data, it->len, 0, err);
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

static void wh_close(orr_blob *bb)
{
    blob_hdfs *b = (blob_hdfs *)bb;
    free(b->base_url);
    free(b->root);
    free(b->user);
    free(b);
}

/* Parse the URL into b. Messages never repeat the authority part. */
static orr_status wh__parse(blob_hdfs *b, const char *url, orr_err *err)
{
    const char *p = url + strlen("webhdfs://");
    const char *slash = strchr(p, '/');
    const char *q = strchr(p, '?');
    if (q && (!slash || q < slash))
        slash = NULL;
    const char *auth_end = slash ? slash : q ? q : p + strlen(p);
    const char *at = memchr(p, '@', (size_t)(auth_end - p));
    const char *host = at ? at + 1 : p;
    orr_buf tmp = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    if (at) {
        if (memchr(p, ':', (size_t)(at - p))) {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                             "webhdfs URL must not carry a password (simple auth: user only)");
            goto out;
        }
        orr_buf_append(&tmp, p, (size_t)(at - p));
    } else {
        const char *env = getenv("HADOOP_USER_NAME");
        if (env)
            orr_buf_append_str(&tmp, env);
    }
    if (!tmp.len) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                         "webhdfs URL needs a user (webhdfs://USER@HOST:PORT/ROOT) or "
                         "HADOOP_USER_NAME");
        goto out;
    }
    for (size_t i = 0; i < tmp.len; i++) {
        char c = tmp.data[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.')) {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                             "webhdfs user may hold only letters, digits, '-', '_', '.'");
            goto out;
        }
    }
    b->user = strdup(orr_buf_cstr(&tmp));
    size_t hl = (size_t)(auth_end - host);
    const char *colon = memchr(host, ':', hl);
    if (hl == 0 || !colon || colon == host || colon + 1 == auth_end) {
        rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                         "webhdfs URL needs HOST:PORT (webhdfs://USER@HOST:PORT/ROOT)");
        goto out;
    }
    for (const char *c = colon + 1; c < auth_end; c++)
        if (*c < '0' || *c > '9') {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root", "webhdfs URL: port is not a number");
            goto out;
        }
    orr_buf_reset(&tmp);
    orr_buf_appendf(&tmp, "http://%.*s/webhdfs/v1", (int)hl, host);
    b->base_url = strdup(orr_buf_cstr(&tmp));
    orr_buf_reset(&tmp);
    if (slash) {
        const char *end = q ? q : slash + strlen(slash);
        orr_buf_append(&tmp, slash, (size_t)(end - slash));
        while (tmp.len > 0 && tmp.data[tmp.len - 1] == '/')
            tmp.data[--tmp.len] = 0;
        if (tmp.len > 1 && !orr_blob_path_ok(orr_buf_cstr(&tmp) + 1)) {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root", "webhdfs root is not a clean path: %s",
                             orr_buf_cstr(&tmp));
            goto out;
        }
    }
    b->root = strdup(orr_buf_cstr(&tmp));
    b->timeout_ms = 60000;
    if (q) {
        long v = 0;
        char extra;
        if (sscanf(q, "?timeout_s=%ld%c", &v, &extra) != 1 || v < 1 || v > 3600) {
            rc = orr_err_set(err, ORR_EINVAL, "blob_root",
                             "webhdfs URL: only ?timeout_s=1..3600 is understood");
            goto out;
        }
        b->timeout_ms = v * 1000;
    }
    if (!b->user || !b->base_url || !b->root)
        abort();
out:
    orr_buf_free(&tmp);
    return rc;
}

static orr_status wh_open(const char *url, orr_blob **out, orr_err *err)
{
    pthread_once(&wh_once, wh__global_init);
    blob_hdfs *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->base.ops = &orr_blob_webhdfs;
    wh_req r = {0};
    orr_status rc = wh__parse(b, url, err);
    if (rc != ORR_OK)
        goto fail;
    const char *root = b->root[0] ? b->root : "/";
    rc = wh__simple(b, "PUT", "MKDIRS", root, "", &r, err);
    if (rc == ORR_OK && (r.status != 200 || wh__boolean(&r) != 1))
        rc = r.status != 200 ? wh__fail(&r, err)
                             : orr_err_set(err, ORR_EIO, root, "webhdfs MKDIRS: refused");
    if (rc == ORR_OK)
        rc = wh__simple(b, "GET", "GETFILESTATUS", root, "", &r, err);
    if (rc == ORR_OK && r.status != 200)
        rc = wh__fail(&r, err);
    if (rc == ORR_OK && (!r.body.data || !strstr(r.body.data, "\"DIRECTORY\"")))
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
    .put_bytes = wh_put_bytes,
    .get_bytes = wh_get_bytes,
    .list = wh_list,
    .remove = wh_remove,
    .size = wh_size,
    .put_many = wh_put_many,
    .close = wh_close,
};

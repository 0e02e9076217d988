/* gx_api_packages.c - code packages: upload an archive that every executor
 * unpacks (POST /api/v1/packages?name=NAME), and list them with the state of
 * their deployment on each executor (GET /api/v1/packages).
 *
 * Storage is content-addressed under <blob_root>/packages/:
 *   1. gx_pkg_begin() opens a temporary file ".upload-XXXXXX" there;
 *   2. gx_pkg_write() appends a piece and feeds it to a SHA-256 state
 *      (libsodium), so the digest is ready when the last byte is written;
 *   3. gx_pkg_finish() syncs the file and renames it to <sha256>.tar.gz (an
 *      upload of the same bytes lands on the same name, atomically);
 *      gx_pkg_abort() removes the temporary file instead.
 * Then Halley records it (CreateCodePackage, source file://<path>) and
 * announces it to the executors. Halley answers ALREADY_EXISTS for a name
 * and digest it has: that upload is answered 200 with the stored package.
 *
 * The writer takes the body piece by piece so that it can be fed straight
 * from the HTTP layer; today gx_http hands the handler the whole body, so an
 * upload is also bounded by [galaxy] max_body (the layer answers 413). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gx_app.h"
#include "orr_log.h"

typedef struct gx_pkg {
    int fd;
    char dir[PATH_MAX];
    char tmp[PATH_MAX + 32];
    char final[PATH_MAX + 96];
    char sha256[crypto_hash_sha256_BYTES * 2 + 1];
    int64_t size;
    int existed; /* the final file was there before this upload */
    crypto_hash_sha256_state st;
} gx_pkg;

/* mkdir -p of an absolute or relative path. */
static int gx_mkdirs(const char *path)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
        return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Open the temporary file; ORR_EIO (naming the folder) on failure. */
static orr_status gx_pkg_begin(gx_pkg *p, const char *blob_root, orr_err *err)
{
    memset(p, 0, sizeof(*p));
    p->fd = -1;
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s/packages", blob_root) >= (int)sizeof(dir) ||
        gx_mkdirs(dir) != 0 || !realpath(dir, p->dir))
        return orr_err_set(err, ORR_EIO, NULL, "cannot create the package folder: %s",
                           strerror(errno));
    snprintf(p->tmp, sizeof(p->tmp), "%s/.upload-XXXXXX", p->dir);
    p->fd = mkstemp(p->tmp);
    if (p->fd < 0)
        return orr_err_set(err, ORR_EIO, NULL, "cannot create a temporary file: %s",
                           strerror(errno));
    crypto_hash_sha256_init(&p->st);
    return ORR_OK;
}

/* Append a piece (the caller bounds the total). ORR_EIO on a write error. */
static orr_status gx_pkg_write(gx_pkg *p, const void *data, size_t len, orr_err *err)
{
    crypto_hash_sha256_update(&p->st, data, len);
    const char *c = data;
    while (len) {
        ssize_t n = write(p->fd, c, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return orr_err_set(err, ORR_EIO, NULL, "cannot write the package: %s", strerror(errno));
        c += n;
        len -= (size_t)n;
        p->size += n;
    }
    return ORR_OK;
}

/* Sync and move to <sha256>.tar.gz; p->sha256 and p->final are then set. */
static orr_status gx_pkg_finish(gx_pkg *p, orr_err *err)
{
    unsigned char d[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&p->st, d);
    sodium_bin2hex(p->sha256, sizeof(p->sha256), d, sizeof(d));
    snprintf(p->final, sizeof(p->final), "%s/%s.tar.gz", p->dir, p->sha256);
    if (fsync(p->fd) != 0 || fchmod(p->fd, 0644) != 0)
        return orr_err_set(err, ORR_EIO, NULL, "cannot sync the package: %s", strerror(errno));
    close(p->fd);
    p->fd = -1;
    p->existed = access(p->final, F_OK) == 0;
    if (rename(p->tmp, p->final) != 0)
        return orr_err_set(err, ORR_EIO, NULL, "cannot store the package: %s", strerror(errno));
    p->tmp[0] = '\0';
    return ORR_OK;
}

/* Remove what an unfinished upload left. Safe after finish (no-op). */
static void gx_pkg_abort(gx_pkg *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    if (p->tmp[0])
        unlink(p->tmp);
    p->tmp[0] = '\0';
}

static json_t *gx_package_json(const HL(CodePackage) * c)
{
    json_t *deps = json_array();
    for (size_t i = 0; i < c->n_deployments; i++) {
        const HL(Deployment) *d = c->deployments[i];
        json_array_append_new(deps, json_pack("{s:s,s:s,s:s,s:o}", "executor", d->executor,
                                              "result", d->result, "message", d->message,
                                              "updated_at", gx_json_time(d->updated_at_ms)));
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(c->id));
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "sha256", json_string(c->sha256));
    json_object_set_new(o, "size", json_integer(c->size));
    json_object_set_new(o, "source", json_string(c->source));
    json_object_set_new(o, "created_by", json_string(c->created_by));
    json_object_set_new(o, "created_at", gx_json_time(c->created_at_ms));
    json_object_set_new(o, "deployments", deps);
    return o;
}

void gx_h_packages_list(gx_req *req, gx_resp *resp)
{
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 100, 1, 1000, &limit))
        return;
    HL(ListCodePackagesRequest) rq = HL_INIT(LIST_CODE_PACKAGES_REQUEST);
    const char *name = gx_req_query(req, "name");
    if (name && !gx_check_name(resp, name, "name"))
        return;
    if (name)
        rq.name = (char *)name;
    rq.page_size = (int32_t)limit;
    const char *token = gx_req_query(req, "page_token");
    rq.page_token = (char *)(token ? token : "");
    HL(ListCodePackagesResponse) * rs;
    if (gx_halley(req, resp, "ListCodePackages", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_packages; i++)
        json_array_append_new(items, gx_package_json(rs->packages[i]));
    gx_resp_json(resp, 200,
                 json_pack("{s:o,s:o}", "items", items, "next_page_token",
                           rs->next_page_token && *rs->next_page_token
                               ? json_string(rs->next_page_token)
                               : json_null()));
}

/* The stored package of name with this digest; answers the error itself. */
static HL(CodePackage) *
    gx_find_package(gx_req *req, gx_resp *resp, const char *name, const char *sha256)
{
    HL(ListCodePackagesRequest) rq = HL_INIT(LIST_CODE_PACKAGES_REQUEST);
    rq.name = (char *)name;
    rq.limit = 1000;
    HL(ListCodePackagesResponse) * rs;
    if (gx_halley(req, resp, "ListCodePackages", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return NULL;
    for (size_t i = 0; i < rs->n_packages; i++)
        if (strcmp(rs->packages[i]->sha256, sha256) == 0)
            return rs->packages[i];
    gx_resp_fail(resp, ORR_EINTERNAL, NULL, "package %s exists but was not found", name);
    return NULL;
}

#define GX_PKG_CHUNK ((size_t)256 << 10)

/* Read up to n bytes of a spooled body; 0 at its end or on an error. */
static size_t gx_pkg_read(int fd, unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

void gx_h_package_upload(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    orr_err e;
    orr_err_clear(&e);
    const char *name = gx_req_query(req, "name");
    if (!name) {
        gx_resp_fail(resp, ORR_EINVAL, "name", "the query parameter name is required");
        return;
    }
    if (!gx_check_name(resp, name, "name"))
        return;
    const char *ct = gx_req_header(req, "Content-Type");
    if (ct && strncmp(ct, "application/gzip", 16) != 0 &&
        strncmp(ct, "application/x-gzip", 18) != 0 &&
        strncmp(ct, "application/octet-stream", 24) != 0) {
        gx_resp_fail(resp, ORR_EINVAL, "Content-Type", "must be application/gzip");
        return;
    }
    if (req->body_len > app->max_package) {
        gx_resp_fail(resp, ORR_ETOOBIG, "body",
                     "a package is at most %zu bytes ([galaxy] max_package)", app->max_package);
        return;
    }
    /* The route spools the body (gx_route.spool_max): read it back in
     * pieces, so memory stays small whatever the package size. */
    unsigned char *buf = orr_arena_alloc(req->arena, GX_PKG_CHUNK);
    size_t got = 0;
    if (req->body_spooled)
        got = gx_pkg_read(req->body_fd, buf, GX_PKG_CHUNK);
    else if (req->body)
        memcpy(buf, req->body, got = req->body_len < GX_PKG_CHUNK ? req->body_len : GX_PKG_CHUNK);
    if (req->body_len < 18 || got < 2 || buf[0] != 0x1f || buf[1] != 0x8b) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "must be a gzip-compressed tar archive");
        return;
    }
    gx_pkg p;
    if (gx_pkg_begin(&p, app->blob_root, &e) != ORR_OK)
        goto fail;
    size_t done = 0;
    while (got > 0) {
        if (gx_pkg_write(&p, buf, got, &e) != ORR_OK)
            goto fail;
        done += got;
        if (done >= req->body_len)
            break;
        if (req->body_spooled) {
            got = gx_pkg_read(req->body_fd, buf, GX_PKG_CHUNK);
        } else {
            got = req->body_len - done < GX_PKG_CHUNK ? req->body_len - done : GX_PKG_CHUNK;
            memcpy(buf, req->body + done, got);
        }
    }
    if (done != req->body_len) {
        orr_err_set(&e, ORR_EIO, "body", "the request body could not be read back");
        goto fail;
    }
    if (gx_pkg_finish(&p, &e) != ORR_OK)
        goto fail;
    HL(CreateCodePackageRequest) rq = HL_INIT(CREATE_CODE_PACKAGE_REQUEST);
    rq.name = (char *)name;
    rq.sha256 = p.sha256;
    rq.size = p.size;
    rq.source = orr_arena_sprintf(req->arena, "file://%s", p.final);
    rq.actor = (char *)gx_actor(req);
    HL(CodePackage) * c;
    orr_status rc = gx_halley(req, resp, "CreateCodePackage", &rq.base, (ProtobufCMessage **)&c);
    if (rc == ORR_EEXIST) {
        c = gx_find_package(req, resp, name, p.sha256);
        if (c)
            gx_resp_json(resp, 200, gx_package_json(c));
        return;
    }
    if (rc != ORR_OK) {
        /* Not recorded: take back a file nobody else refers to. */
        if (!p.existed)
            unlink(p.final);
        return;
    }
    ORR_INFO("package uploaded", "name=%s sha256=%s size=%lld by=%s", orr_log_q(name), p.sha256,
             (long long)p.size, orr_log_q(req->who.name));
    gx_resp_json(resp, 201, gx_package_json(c));
    gx_resp_header(resp, "Location",
                   orr_arena_sprintf(req->arena, "/api/v1/packages?name=%s", name));
    return;
fail:
    gx_pkg_abort(&p);
    ORR_WARN("package upload failed", "name=%s err=%s", orr_log_q(name), orr_log_q(e.msg));
    gx_resp_err(resp, &e);
}

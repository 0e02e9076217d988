/* gx_api_packages.c - code packages: upload an archive that every executor
 * unpacks (POST /api/v1/packages?name=NAME), and list them with the state of
 * their deployment on each executor (GET /api/v1/packages).
 *
 * Storage is content-addressed in the blob store (lib/orr_blob: file:// or
 * webhdfs://, [galaxy] blob_root) as packages/<sha256>.tar.gz:
 *   1. the HTTP layer spools the body to an unlinked temporary file
 *      (gx_route.spool_max) or, when small, holds it in memory;
 *   2. gx_pkg_digest() reads it once for its SHA-256 (libsodium) and size;
 *   3. gx_pkg_store() lands it under its digest's name (the store writes a
 *      temporary name and renames it, so an upload of the same bytes lands
 *      on the same name, atomically, and a reader never sees half of it).
 * Then Halley records it (CreateCodePackage, source: the store's URL of the
 * object, e.g. file:///var/blob/packages/<sha256>.tar.gz) and announces it
 * to the executors, which fetch it from the same store. Halley answers
 * ALREADY_EXISTS for a name and digest it has: that upload is answered 200
 * with the stored package. An object nobody refers to (Halley refused the
 * package) is removed again unless it was there before. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gx_app.h"
#include "orr_blob.h"
#include "orr_log.h"

typedef struct gx_pkg {
    char sha256[crypto_hash_sha256_BYTES * 2 + 1];
    char rel[crypto_hash_sha256_BYTES * 2 + 32]; /* packages/<sha256>.tar.gz */
    int64_t size;
    int existed; /* the object was in the store before this upload */
} gx_pkg;

#define GX_PKG_CHUNK ((size_t)256 << 10)

/* Up to n bytes of a spooled body from offset; 0 at its end or on an error. */
static size_t gx_pkg_read(int fd, unsigned char *buf, size_t n, int64_t offset)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)offset + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* SHA-256 and size of the whole body into p (buf: GX_PKG_CHUNK bytes of
 * scratch). ORR_EIO (field "body") when a spooled body cannot be read back
 * whole. */
static orr_status gx_pkg_digest(gx_req *req, gx_pkg *p, unsigned char *buf, orr_err *err)
{
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    p->size = 0;
    if (!req->body_spooled) {
        crypto_hash_sha256_update(&st, (const unsigned char *)req->body, req->body_len);
        p->size = (int64_t)req->body_len;
    } else {
        size_t got;
        while ((got = gx_pkg_read(req->body_fd, buf, GX_PKG_CHUNK, p->size)) > 0) {
            crypto_hash_sha256_update(&st, buf, got);
            p->size += (int64_t)got;
        }
    }
    if ((size_t)p->size != req->body_len)
        return orr_err_set(err, ORR_EIO, "body", "the request body could not be read back");
    unsigned char d[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&st, d);
    sodium_bin2hex(p->sha256, sizeof(p->sha256), d, sizeof(d));
    snprintf(p->rel, sizeof(p->rel), "packages/%s.tar.gz", p->sha256);
    return ORR_OK;
}

/* Land the body at p->rel (p->existed says whether it was there). */
static orr_status gx_pkg_store(gx_req *req, orr_blob *blob, gx_pkg *p, orr_err *err)
{
    uint64_t size;
    p->existed = blob->ops->size(blob, p->rel, &size, NULL) == ORR_OK;
    if (req->body_spooled)
        return blob->ops->put_fd(blob, p->rel, req->body_fd, err);
    return blob->ops->put_bytes(blob, p->rel, req->body, req->body_len, err);
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
        got = gx_pkg_read(req->body_fd, buf, 2, 0);
    else if (req->body)
        memcpy(buf, req->body, got = req->body_len < 2 ? req->body_len : 2);
    if (req->body_len < 18 || got < 2 || buf[0] != 0x1f || buf[1] != 0x8b) {
        gx_resp_fail(resp, ORR_EINVAL, "body", "must be a gzip-compressed tar archive");
        return;
    }
    gx_pkg p;
    memset(&p, 0, sizeof(p));
    orr_blob *blob = gx_blob(app, &e);
    orr_buf url = ORR_BUF_INIT;
    if (!blob || gx_pkg_digest(req, &p, buf, &e) != ORR_OK ||
        gx_pkg_store(req, blob, &p, &e) != ORR_OK ||
        blob->ops->url(blob, p.rel, &url, &e) != ORR_OK)
        goto fail;
    HL(CreateCodePackageRequest) rq = HL_INIT(CREATE_CODE_PACKAGE_REQUEST);
    rq.name = (char *)name;
    rq.sha256 = p.sha256;
    rq.size = p.size;
    rq.source = orr_arena_strdup(req->arena, orr_buf_cstr(&url));
    orr_buf_free(&url);
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
            (void)blob->ops->remove(blob, p.rel, NULL);
        return;
    }
    ORR_INFO("package uploaded", "name=%s sha256=%s size=%lld by=%s", orr_log_q(name), p.sha256,
             (long long)p.size, orr_log_q(req->who.name));
    gx_resp_json(resp, 201, gx_package_json(c));
    gx_resp_header(resp, "Location",
                   orr_arena_sprintf(req->arena, "/api/v1/packages?name=%s", name));
    return;
fail:
    orr_buf_free(&url);
    ORR_WARN("package upload failed", "name=%s err=%s", orr_log_q(name), orr_log_q(e.msg));
    gx_resp_err(resp, &e);
}

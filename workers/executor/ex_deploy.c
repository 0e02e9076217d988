/*
 * ex_deploy.c - code packages: every executor unpacks every package into
 * <work_dir>/code/<name>, where shell tasks with config.package run
 * (contract in ex_daemon.h).
 *
 * One thread, the event-stream subscriber's (rpc/orr_watch.h). It keeps
 * WatchEvents(kinds "package.*") open; each time a stream is in place (the
 * server's "watch.start" marker) it installs the newest package of every
 * name that ListCodePackages shows and this executor lacks (when the list
 * cannot be read, the stream is reopened and the list asked for again with
 * the subscriber's back-off, 200 ms doubling to 5 s), then installs each
 * package a "package.created" event announces. A package created between
 * the two is seen by both, which is harmless (an installed sha256 is only
 * reported). A broken stream is reopened from the last event id and
 * followed by a new scan.
 *
 * Installing a package (install_one):
 *   1. its name must be a plain folder name; already installed with the
 *      same sha256 (marker <code>/.<name>.package) -> reported ok again;
 *   2. the archive is copied from the blob store (lib/orr_blob: file:// or
 *      webhdfs://; the package's source is a URL of that store or a path
 *      relative to its root) to <work>/deploy/<id>.tgz, its size and sha256
 *      compared with what Halley recorded;
 *   3. it is unpacked into <code>/.tmp-<name> (ex_untar: no absolute names,
 *      no "..", no links leaving it, no devices);
 *   4. the new folder replaces the old one in one step (renameat2
 *      RENAME_EXCHANGE, or rename when there was none); the old one is
 *      removed; the marker is written (temporary + rename);
 *   5. ReportDeployment(package, executor, ok|failed, message).
 * Any failure leaves the installed folder as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "ex_untar.h"
#include "orr_blob.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_watch.h"

#define DEPLOY_MAX_ARCHIVE (1LL << 30)
#define DEPLOY_MAX_UNPACK  (4LL << 30)
#define DEPLOY_MAX_ENTRIES 200000

static int valid_name(const char *n)
{
    if (!n[0] || n[0] == '.' || strlen(n) > 128)
        return 0;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

static void report(ex_daemon *d, int64_t id, const char *name, int ok, const char *msg)
{
    HL(ReportDeploymentRequest) rq = HL_INIT(REPORT_DEPLOYMENT_REQUEST);
    rq.package_id = id;
    rq.executor = (char *)d->id;
    rq.result = ok ? "ok" : "failed";
    rq.message = (char *)msg;
    orr_err e;
    orr_status s = ORR_OK;
    int delay = 200;
    for (int i = 0; i < 6 && !atomic_load(&d->stopping); i++) {
        ProtobufCMessage *resp = NULL;
        s = ex_halley(d, "ReportDeployment", &rq.base, &resp, &e);
        if (s == ORR_OK) {
            protobuf_c_message_free_unpacked(resp, NULL);
            break;
        }
        if (s != ORR_EUNAVAIL && s != ORR_ETIMEOUT)
            break;
        ex_sleep_ms(delay);
        delay *= 2;
    }
    if (s == ORR_OK)
        ORR_INFO("deployment reported", "package=%lld name=%s result=%s message=%s", (long long)id,
                 orr_log_q(name), ok ? "ok" : "failed", orr_log_q(msg));
    else
        ORR_WARN("deployment not reported", "package=%lld name=%s result=%s err=%s", (long long)id,
                 orr_log_q(name), ok ? "ok" : "failed", orr_log_q(e.msg));
}

/* The sha256 in the install marker of name, or "" (buf of 65). */
static void marker_read(ex_daemon *d, const char *name, char *sha)
{
    char path[EX_PATH + 200];
    snprintf(path, sizeof path, "%s/.%s.package", d->code_dir, name);
    sha[0] = 0;
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    const char *v = json_string_value(json_object_get(m, "sha256"));
    if (v)
        snprintf(sha, 65, "%s", v);
    json_decref(m);
}

static orr_status marker_write(ex_daemon *d, const HL(CodePackage) * p, orr_err *err)
{
    char path[EX_PATH + 200], tmp[EX_PATH + 220];
    snprintf(path, sizeof path, "%s/.%s.package", d->code_dir, p->name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *m = json_pack("{sI ss ss sI}", "id", (json_int_t)p->id, "name", p->name, "sha256",
                          p->sha256, "size", (json_int_t)p->size);
    int rc = json_dump_file(m, tmp, JSON_COMPACT);
    json_decref(m);
    if (rc != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return orr_err_set(err, ORR_EIO, path, "cannot write the install marker");
    }
    return ORR_OK;
}

/* Where step 2 writes: the archive file, its digest and size so far. */
typedef struct fetch_to {
    int fd;
    const char *path;
    int64_t size;
    crypto_hash_sha256_state st;
} fetch_to;

static orr_status fetch_sink(void *ud, const void *data, size_t n, orr_err *err)
{
    fetch_to *f = ud;
    f->size += (int64_t)n;
    if (f->size > DEPLOY_MAX_ARCHIVE)
        return orr_err_set(err, ORR_ETOOBIG, "source", "larger than %lld bytes",
                           (long long)DEPLOY_MAX_ARCHIVE);
    crypto_hash_sha256_update(&f->st, data, n);
    for (const char *c = data; n > 0;) {
        ssize_t w = write(f->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return orr_err_set(err, ORR_EIO, f->path, "write: %s", strerror(errno));
        c += w;
        n -= (size_t)w;
    }
    return ORR_OK;
}

/* Step 2: copy the archive source names from the blob store to dst
 * (created 0600), with its size and SHA-256 (64 lower-case hex digits).
 * ORR_EINVAL naming "source" for a URL of another store or outside its
 * root, ORR_ENOTFOUND when it does not exist, ORR_ETOOBIG past
 * DEPLOY_MAX_ARCHIVE, ORR_EIO otherwise; dst is removed on failure. */
static orr_status fetch(ex_daemon *d, const char *source, const char *dst, char sha_hex[65],
                        int64_t *size, orr_err *err)
{
    orr_buf rel = ORR_BUF_INIT;
    fetch_to f = {.fd = -1, .path = dst};
    orr_status s = d->blob->ops->locate(d->blob, source, &rel, err);
    if (s != ORR_OK) {
        if (err)
            snprintf(err->field, sizeof err->field, "source");
        goto out;
    }
    unlink(dst);
    f.fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (f.fd < 0) {
        s = orr_err_set(err, ORR_EIO, dst, "cannot create: %s", strerror(errno));
        goto out;
    }
    crypto_hash_sha256_init(&f.st);
    s = d->blob->ops->get_range(d->blob, orr_buf_cstr(&rel), 0, DEPLOY_MAX_ARCHIVE + 1, fetch_sink,
                                &f, err);
    if (close(f.fd) != 0 && s == ORR_OK)
        s = orr_err_set(err, ORR_EIO, dst, "close: %s", strerror(errno));
    if (s != ORR_OK) {
        unlink(dst);
        goto out;
    }
    unsigned char dig[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&f.st, dig);
    sodium_bin2hex(sha_hex, 65, dig, sizeof dig);
    *size = f.size;
out:
    orr_buf_free(&rel);
    return s;
}

/* Steps 2-4; on failure err says why (the folder is untouched). */
static orr_status install(ex_daemon *d, const HL(CodePackage) * p, orr_err *err)
{
    char dl_dir[EX_PATH + 16], archive[EX_PATH + 64], tmp[EX_PATH + 200], target[EX_PATH + 200];
    snprintf(dl_dir, sizeof dl_dir, "%s/deploy", d->work_dir);
    if (mkdir(dl_dir, 0700) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, dl_dir, "cannot create: %s", strerror(errno));
    snprintf(archive, sizeof archive, "%s/%lld.tgz", dl_dir, (long long)p->id);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s", d->code_dir, p->name);
    snprintf(target, sizeof target, "%s/%s", d->code_dir, p->name);

    char sha[65];
    int64_t size = 0;
    orr_status s = fetch(d, p->source, archive, sha, &size, err);
    if (s != ORR_OK)
        return s;
    if (p->size > 0 && size != p->size) {
        s = orr_err_set(err, ORR_EINVAL, "size", "the archive has %lld bytes, not %lld",
                        (long long)size, (long long)p->size);
        goto out;
    }
    if (strcmp(sha, p->sha256) != 0) {
        s = orr_err_set(err, ORR_EINVAL, "sha256", "the archive's sha256 is %s, not %.64s", sha,
                        p->sha256);
        goto out;
    }
    ex_remove_tree(tmp);
    if (mkdir(tmp, 0755) != 0) {
        s = orr_err_set(err, ORR_EIO, tmp, "cannot create: %s", strerror(errno));
        goto out;
    }
    chmod(tmp, 0755);
    if ((s = ex_untar(archive, tmp, DEPLOY_MAX_UNPACK, DEPLOY_MAX_ENTRIES, err)) != ORR_OK)
        goto out;
    struct stat st;
    if (lstat(target, &st) == 0) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) != 0) {
            s = orr_err_set(err, ORR_EIO, target, "cannot swap in the new version: %s",
                            strerror(errno));
            goto out;
        }
    } else if (rename(tmp, target) != 0) {
        s = orr_err_set(err, ORR_EIO, target, "cannot move into place: %s", strerror(errno));
        goto out;
    }
    s = marker_write(d, p, err);
out:
    ex_remove_tree(tmp); /* the old version after a swap, or a failed unpack */
    unlink(archive);
    return s;
}

static void install_one(ex_daemon *d, const HL(CodePackage) * p)
{
    char msg[600];
    if (!valid_name(p->name)) {
        snprintf(msg, sizeof msg, "name: \"%.100s\" is not a plain folder name", p->name);
        report(d, p->id, p->name, 0, msg);
        return;
    }
    char have[65];
    marker_read(d, p->name, have);
    char target[EX_PATH + 200];
    snprintf(target, sizeof target, "%s/%s", d->code_dir, p->name);
    struct stat st;
    if (have[0] && strcmp(have, p->sha256) == 0 && stat(target, &st) == 0) {
        report(d, p->id, p->name, 1, "already installed");
        return;
    }
    int64_t t0 = ex_now_ms();
    orr_err e;
    orr_err_clear(&e);
    if (install(d, p, &e) != ORR_OK) {
        orr_err_str(&e, msg, sizeof msg);
        ORR_WARN("code package refused", "package=%lld name=%s err=%s", (long long)p->id,
                 orr_log_q(p->name), orr_log_q(msg));
        report(d, p->id, p->name, 0, msg);
        return;
    }
    snprintf(msg, sizeof msg, "installed %.64s (%lld bytes)", p->sha256, (long long)p->size);
    ORR_INFO("code package installed", "package=%lld name=%s sha256=%s ms=%lld", (long long)p->id,
             orr_log_q(p->name), p->sha256, (long long)(ex_now_ms() - t0));
    report(d, p->id, p->name, 1, msg);
}

/* Install the newest package of every name. ORR_OK once the list was read. */
static orr_status scan(ex_daemon *d)
{
    HL(ListCodePackagesRequest) rq = HL_INIT(LIST_CODE_PACKAGES_REQUEST);
    rq.limit = 1000;
    ProtobufCMessage *resp = NULL;
    orr_err e;
    orr_status s = ex_halley(d, "ListCodePackages", &rq.base, &resp, &e);
    if (s != ORR_OK) {
        ORR_WARN("cannot list code packages", "err=%s", orr_log_q(e.msg));
        return s;
    }
    HL(ListCodePackagesResponse) *r = (HL(ListCodePackagesResponse) *)resp;
    for (size_t i = 0; i < r->n_packages && !atomic_load(&d->stopping); i++) {
        int newer_seen = 0; /* newest first: an earlier one of that name wins */
        for (size_t k = 0; k < i && !newer_seen; k++)
            newer_seen = strcmp(r->packages[k]->name, r->packages[i]->name) == 0;
        if (!newer_seen)
            install_one(d, r->packages[i]);
    }
    protobuf_c_message_free_unpacked(resp, NULL);
    return ORR_OK;
}

static void on_package_event(void *cls, const HL(Event) * ev)
{
    ex_daemon *d = cls;
    if (strcmp(ev->kind, "package.created") != 0)
        return;
    json_t *pl = NULL;
    orr_err e;
    if (orr_json_parse(ev->payload_json, strlen(ev->payload_json), &pl, &e) != ORR_OK)
        return;
    int64_t id = 0;
    orr_json_get_int(pl, "", "id", 1, 1, INT64_MAX, &id, &e);
    json_decref(pl);
    if (id <= 0)
        return;
    HL(GetCodePackageRequest) rq = HL_INIT(GET_CODE_PACKAGE_REQUEST);
    rq.id = id;
    ProtobufCMessage *resp = NULL;
    if (ex_halley(d, "GetCodePackage", &rq.base, &resp, &e) != ORR_OK) {
        ORR_WARN("cannot read a new code package", "package=%lld err=%s", (long long)id,
                 orr_log_q(e.msg));
        return;
    }
    install_one(d, (HL(CodePackage) *)resp);
    protobuf_c_message_free_unpacked(resp, NULL);
}

/* The subscription is in place: install what is missing. Non-zero when the
 * list could not be read (the subscriber reopens and asks again). */
static int on_subscribed(void *cls)
{
    return scan(cls) == ORR_OK ? 0 : -1;
}

orr_status ex_deploy_start(ex_daemon *d, orr_err *err)
{
    static const char *const kinds[] = {"package.*"};
    orr_watch_opts o = {.kinds = kinds, .nkinds = 1, .name = "executord packages"};
    orr_watch_ops ops = {.on_start = on_subscribed, .on_event = on_package_event};
    return orr_watch_start(d->halley, &o, &ops, d, &d->deployer, err);
}

void ex_deploy_stop(ex_daemon *d)
{
    if (!d->deployer)
        return;
    atomic_store(&d->stopping, 1); /* a scan or an install in progress gives up */
    orr_watch_stop(d->deployer);
    d->deployer = NULL;
}

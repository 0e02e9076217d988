/*
 * orr_blob.c - the blob store's backend table and the file:// backend (see
 * orr_blob.h). The file backend keeps only its root (absolute, symbolic
 * links resolved) and an open descriptor of it for syncfs; each put writes
 * ".tmp-<name>" beside the target, fsyncs it, renames it and fsyncs the
 * folder, so a reader never sees half a file.
 */
#include "orr_blob.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orr_alloc.h"

typedef struct blob_file {
    orr_blob base;
    char *root;
    int root_fd; /* for syncfs */
} blob_file;

static const orr_blob_ops *const orr_blob_backends[] = {
    &orr_blob_file,
    &orr_blob_webhdfs,
};

int orr_blob_path_ok(const char *rel)
{
    if (!rel || !*rel || rel[0] == '/')
        return 0;
    const char *p = rel;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (!e)
            break;
        p = e + 1;
    }
    return 1;
}

/* Create path and its missing parents, deepest first: a folder whose parent
 * exists costs one mkdir. path is modified and restored. */
static int blob__mkdirs(char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -1;
    char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return -1;
    *slash = 0;
    int r = blob__mkdirs(path);
    *slash = '/';
    if (r != 0)
        return -1;
    return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static void blob__fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

static orr_status bf__full(blob_file *b, const char *rel, char *out, size_t n, orr_err *err)
{
    if (!orr_blob_path_ok(rel))
        return orr_err_set(err, ORR_EINVAL, "path", "not a clean relative path: %s", rel);
    if (snprintf(out, n, "%s/%s", b->root, rel) >= (int)n)
        return orr_err_set(err, ORR_EINVAL, "path", "path too long: %s", rel);
    return ORR_OK;
}

/* Split full into folder and base name parts (in place copies). */
static void bf__split(const char *full, char *dir, size_t dn, const char **base)
{
    const char *slash = strrchr(full, '/');
    size_t k = (size_t)(slash - full);
    if (k >= dn)
        k = dn - 1;
    memcpy(dir, full, k);
    dir[k] = 0;
    *base = slash + 1;
}

/* Copy everything of the open file in (from offset 0, with pread) to a new
 * file dst, fsync'ed. src names in for messages. dst is left on failure. */
static orr_status bf__copy_fd(int in, const char *src, const char *dst, orr_err *err)
{
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0)
        return orr_err_set(err, ORR_EIO, dst, "cannot create: %s", strerror(errno));
    char buf[1 << 16];
    orr_status rc = ORR_OK;
    for (off_t pos = 0;;) {
        ssize_t r = pread(in, buf, sizeof buf, pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = orr_err_set(err, ORR_EIO, src, "read failed: %s", strerror(errno));
            break;
        }
        if (r == 0)
            break;
        pos += r;
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(out, buf + off, (size_t)(r - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = orr_err_set(err, ORR_EIO, dst, "write failed: %s", strerror(errno));
                goto done;
            }
            off += w;
        }
    }
done:
    if (rc == ORR_OK && fsync(out) != 0)
        rc = orr_err_set(err, ORR_EIO, dst, "fsync failed: %s", strerror(errno));
    close(out);
    return rc;
}

static orr_status bf__copy(const char *src, const char *dst, orr_err *err)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return orr_err_set(err, ORR_EIO, src, "cannot open: %s", strerror(errno));
    orr_status rc = bf__copy_fd(in, src, dst, err);
    close(in);
    return rc;
}

/* Rename tmp to full and sync the folder; tmp is removed on failure. */
static orr_status bf__land(const char *tmp, const char *full, const char *dir, orr_err *err)
{
    if (rename(tmp, full) != 0) {
        int e = errno;
        unlink(tmp);
        return orr_err_set(err, ORR_EIO, full, "rename failed: %s", strerror(e));
    }
    blob__fsync_dir(dir);
    return ORR_OK;
}

/* Full path, folder (created) and temporary name of rel. */
static orr_status bf__prepare(blob_file *b, const char *rel, char full[4096], char dir[4096],
                              char tmp[4200], orr_err *err)
{
    const char *base;
    orr_status rc = bf__full(b, rel, full, 4096, err);
    if (rc != ORR_OK)
        return rc;
    bf__split(full, dir, 4096, &base);
    if (blob__mkdirs(dir) != 0)
        return orr_err_set(err, ORR_EIO, dir, "cannot create folder: %s", strerror(errno));
    snprintf(tmp, 4200, "%s/.tmp-%s", dir, base);
    return ORR_OK;
}

static orr_status bf_put_file(orr_blob *bb, const char *rel, const char *local, int move,
                              orr_err *err)
{
    char full[4096], dir[4096], tmp[4200];
    orr_status rc = bf__prepare((blob_file *)bb, rel, full, dir, tmp, err);
    if (rc != ORR_OK)
        return rc;
    if (!(move && rename(local, tmp) == 0)) {
        /* Another filesystem, or a copy was asked for. */
        rc = bf__copy(local, tmp, err);
        if (rc != ORR_OK) {
            unlink(tmp);
            return rc;
        }
        if (move)
            unlink(local);
    }
    return bf__land(tmp, full, dir, err);
}

static orr_status bf_put_fd(orr_blob *bb, const char *rel, int fd, orr_err *err)
{
    char full[4096], dir[4096], tmp[4200];
    orr_status rc = bf__prepare((blob_file *)bb, rel, full, dir, tmp, err);
    if (rc != ORR_OK)
        return rc;
    if ((rc = bf__copy_fd(fd, "the file to land", tmp, err)) != ORR_OK) {
        unlink(tmp);
        return rc;
    }
    return bf__land(tmp, full, dir, err);
}

static orr_status bf_put_bytes(orr_blob *bb, const char *rel, const void *data, size_t len,
                               orr_err *err)
{
    char full[4096], dir[4096], tmp[4200];
    orr_status rc = bf__prepare((blob_file *)bb, rel, full, dir, tmp, err);
    if (rc != ORR_OK)
        return rc;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return orr_err_set(err, ORR_EIO, tmp, "cannot create: %s", strerror(errno));
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return orr_err_set(err, ORR_EIO, tmp, "write failed: %s", strerror(e));
        }
        p += w;
        len -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return orr_err_set(err, ORR_EIO, tmp, "fsync failed: %s", strerror(e));
    }
    close(fd);
    return bf__land(tmp, full, dir, err);
}

static orr_status bf_get_bytes(orr_blob *bb, const char *rel, orr_buf *out, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char full[4096];
    orr_status rc = bf__full(b, rel, full, sizeof full, err);
    if (rc != ORR_OK)
        return rc;
    orr_buf_reset(out);
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return orr_err_set(err, ORR_ENOTFOUND, full, "no such object");
        return orr_err_set(err, ORR_EIO, full, "cannot open: %s", strerror(errno));
    }
    for (;;) {
        orr_buf_reserve(out, 65536);
        ssize_t r = read(fd, out->data + out->len, 65536);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return orr_err_set(err, ORR_EIO, full, "read failed: %s", strerror(e));
        }
        if (r == 0)
            break;
        out->len += (size_t)r;
        out->data[out->len] = 0;
    }
    close(fd);
    return ORR_OK;
}

static orr_status bf_get_range(orr_blob *bb, const char *rel, uint64_t offset, uint64_t max,
                               orr_blob_sink sink, void *ud, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char full[4096], buf[1 << 16];
    orr_status rc = bf__full(b, rel, full, sizeof full, err);
    if (rc != ORR_OK)
        return rc;
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return orr_err_set(err, ORR_ENOTFOUND, full, "no such object");
        return orr_err_set(err, ORR_EIO, full, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = orr_err_set(err, ORR_EIO, full, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = orr_err_set(err, ORR_EINVAL, full, "not a file");
        goto out;
    }
    if (offset > (uint64_t)INT64_MAX)
        goto out; /* past any end: no bytes */
    for (off_t pos = (off_t)offset; max > 0;) {
        ssize_t r = pread(fd, buf, max < sizeof buf ? (size_t)max : sizeof buf, pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = orr_err_set(err, ORR_EIO, full, "read failed: %s", strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        if ((rc = sink(ud, buf, (size_t)r, err)) != ORR_OK)
            goto out;
        pos += r;
        max -= (uint64_t)r;
    }
out:
    close(fd);
    return rc;
}

static orr_status bf_list(orr_blob *bb, const char *rel, orr_buf *out, orr_buf *sizes, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char full[4096];
    if (rel && *rel) {
        orr_status rc = bf__full(b, rel, full, sizeof full, err);
        if (rc != ORR_OK)
            return rc;
    } else {
        snprintf(full, sizeof full, "%s", b->root);
    }
    DIR *d = opendir(full);
    if (!d) {
        if (errno == ENOENT)
            return orr_err_set(err, ORR_ENOTFOUND, full, "no such folder");
        return orr_err_set(err, ORR_EIO, full, "cannot list: %s", strerror(errno));
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        orr_buf_append(out, de->d_name, strlen(de->d_name) + 1);
        if (sizes) {
            struct stat st;
            uint64_t n = 0; /* a folder, or removed meanwhile */
            if (fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISREG(st.st_mode))
                n = (uint64_t)st.st_size;
            orr_buf_append(sizes, &n, sizeof n);
        }
    }
    closedir(d);
    return ORR_OK;
}

static orr_status bf_remove(orr_blob *bb, const char *rel, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char full[4096];
    orr_status rc = bf__full(b, rel, full, sizeof full, err);
    if (rc != ORR_OK)
        return rc;
    if (unlink(full) != 0 && errno != ENOENT)
        return orr_err_set(err, ORR_EIO, full, "cannot remove: %s", strerror(errno));
    return ORR_OK;
}

static orr_status bf_size(orr_blob *bb, const char *rel, uint64_t *size, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char full[4096];
    orr_status rc = bf__full(b, rel, full, sizeof full, err);
    if (rc != ORR_OK)
        return rc;
    struct stat st;
    if (stat(full, &st) != 0) {
        if (errno == ENOENT)
            return orr_err_set(err, ORR_ENOTFOUND, full, "no such object");
        return orr_err_set(err, ORR_EIO, full, "cannot stat: %s", strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return orr_err_set(err, ORR_EINVAL, full, "not a file");
    *size = (uint64_t)st.st_size;
    return ORR_OK;
}

/* Make everything written to the store's filesystem durable: syncfs, or
 * where that is unavailable, fsync of each path in paths (NUL-separated). */
static orr_status bf__sync(blob_file *b, const orr_buf *paths, orr_err *err)
{
    if (syncfs(b->root_fd) == 0)
        return ORR_OK;
    if (errno != ENOSYS && errno != EINVAL && errno != EBADF)
        return orr_err_set(err, ORR_EIO, b->root, "syncfs failed: %s", strerror(errno));
    for (size_t off = 0; off < paths->len;) {
        const char *p = paths->data + off;
        off += strlen(p) + 1;
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            return orr_err_set(err, ORR_EIO, p, "fsync failed: %s", strerror(e));
        }
        close(fd);
    }
    return ORR_OK;
}

/* Place one item under its temporary name tmp in folder dir. */
static orr_status bf__place(const orr_blob_item *it, char *dir, const char *tmp, orr_err *err)
{
    for (int attempt = 0;; attempt++) {
        int e = 0;
        if (it->local) {
            if (rename(it->local, tmp) == 0)
                return ORR_OK;
            e = errno;
            if (e == EXDEV) {
                orr_status rc = bf__copy(it->local, tmp, err);
                if (rc != ORR_OK) {
                    unlink(tmp);
                    return rc;
                }
                unlink(it->local);
                return ORR_OK;
            }
        } else {
            int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd >= 0) {
                const char *p = it->data;
                size_t left = it->len;
                while (left > 0) {
                    ssize_t w = write(fd, p, left);
                    if (w < 0 && errno == EINTR)
                        continue;
                    if (w <= 0) {
                        e = w < 0 ? errno : EIO;
                        break;
                    }
                    p += w;
                    left -= (size_t)w;
                }
                if (close(fd) != 0 && !e)
                    e = errno;
                if (!e)
                    return ORR_OK;
                unlink(tmp);
                return orr_err_set(err, ORR_EIO, tmp, "write failed: %s", strerror(e));
            }
            e = errno;
        }
        if (e == ENOENT && attempt == 0 && blob__mkdirs(dir) == 0)
            continue; /* the folder is new */
        return orr_err_set(err, ORR_EIO, tmp, "cannot place %s: %s",
                           it->local ? it->local : "bytes", strerror(e));
    }
}

static orr_status bf_put_many(orr_blob *bb, const orr_blob_item *items, size_t n, int durable,
                              size_t *landed, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    orr_buf tmps = ORR_BUF_INIT, dirs = ORR_BUF_INIT;
    char full[4096], dir[4096], tmp[4200];
    const char *base;
    orr_status rc = ORR_OK;
    size_t placed = 0, done = 0;
    if (landed)
        *landed = 0;
    for (; placed < n; placed++) {
        rc = bf__full(b, items[placed].rel, full, sizeof full, err);
        if (rc != ORR_OK)
            goto out;
        bf__split(full, dir, sizeof dir, &base);
        snprintf(tmp, sizeof tmp, "%s/.tmp-%s", dir, base);
        rc = bf__place(&items[placed], dir, tmp, err);
        if (rc != ORR_OK)
            goto out;
        orr_buf_append(&tmps, tmp, strlen(tmp) + 1);
    }
    if (durable && (rc = bf__sync(b, &tmps, err)) != ORR_OK)
        goto out;
    const char *t = tmps.data;
    for (; done < n; done++, t += strlen(t) + 1) {
        rc = bf__full(b, items[done].rel, full, sizeof full, err);
        if (rc != ORR_OK)
            goto out;
        if (rename(t, full) != 0) {
            rc = orr_err_set(err, ORR_EIO, full, "rename failed: %s", strerror(errno));
            goto out;
        }
        if (landed)
            *landed = done + 1;
        bf__split(full, dir, sizeof dir, &base);
        orr_buf_append(&dirs, dir, strlen(dir) + 1);
    }
    if (durable)
        rc = bf__sync(b, &dirs, err);
out:
    if (rc != ORR_OK && tmps.len) {
        /* Items placed but not landed: local files go back where they were
         * (best effort), bytes are removed. */
        size_t i = 0;
        for (const char *q = tmps.data; q < tmps.data + tmps.len; q += strlen(q) + 1, i++) {
            if (i < done || i >= placed)
                continue;
            if (!items[i].local || rename(q, items[i].local) != 0)
                unlink(q);
        }
    }
    orr_buf_free(&tmps);
    orr_buf_free(&dirs);
    return rc;
}

static orr_status bf_url(orr_blob *bb, const char *rel, orr_buf *out, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char full[4096];
    orr_status rc = bf__full(b, rel, full, sizeof full, err);
    if (rc != ORR_OK)
        return rc;
    orr_buf_reset(out);
    orr_buf_appendf(out, "file://%s", full);
    return ORR_OK;
}

static orr_status bf_locate(orr_blob *bb, const char *ref, orr_buf *rel, orr_err *err)
{
    blob_file *b = (blob_file *)bb;
    char real[PATH_MAX];
    orr_buf_reset(rel);
    const char *path = strncmp(ref, "file://", 7) == 0 ? ref + 7 : ref;
    if (path[0] != '/') {
        if (path != ref || strstr(ref, "://") || !orr_blob_path_ok(ref))
            return orr_err_set(err, ORR_EINVAL, "url",
                               "%.200s is neither a file:// URL nor a clean relative path", ref);
        orr_buf_append_str(rel, ref);
        return ORR_OK;
    }
    if (!realpath(path, real))
        return orr_err_set(err, errno == ENOENT ? ORR_ENOTFOUND : ORR_EIO, "url", "%.200s: %s", ref,
                           strerror(errno));
    /* Inside the root once links are resolved (the root's are, at open). */
    size_t rl = strlen(b->root);
    if (rl == 1)
        rl = 0; /* the root is "/" */
    if (strncmp(real, b->root, rl) != 0 || real[rl] != '/' || !orr_blob_path_ok(real + rl + 1))
        return orr_err_set(err, ORR_EINVAL, "url", "%.200s is outside the blob root", ref);
    orr_buf_append_str(rel, real + rl + 1);
    return ORR_OK;
}

static void bf_close(orr_blob *bb)
{
    blob_file *b = (blob_file *)bb;
    if (b->root_fd >= 0)
        close(b->root_fd);
    free(b->root);
    free(b);
}

static orr_status bf_open(const char *url, orr_blob **out, orr_err *err)
{
    const char *path = url;
    if (strncmp(url, "file://", 7) == 0) {
        path = url + 7;
        if (path[0] != '/')
            return orr_err_set(err, ORR_EINVAL, "blob_root",
                               "file store needs an absolute path: %s", url);
    }
    if (!*path)
        return orr_err_set(err, ORR_EINVAL, "blob_root", "empty path");
    blob_file *b = orr_xcalloc(1, sizeof *b);
    b->base.ops = &orr_blob_file;
    b->root_fd = -1;
    b->root = orr_xstrdup(path);
    size_t n = strlen(b->root);
    while (n > 1 && b->root[n - 1] == '/')
        b->root[--n] = 0;
    char real[PATH_MAX];
    if (blob__mkdirs(b->root) != 0 || !realpath(b->root, real)) {
        orr_status rc = orr_err_set(err, ORR_EIO, "blob_root", "cannot create %s: %s", b->root,
                                    strerror(errno));
        bf_close(&b->base);
        return rc;
    }
    /* Absolute, links resolved: url and locate compare against it. */
    free(b->root);
    b->root = orr_xstrdup(real);
    b->root_fd = open(b->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (b->root_fd < 0) {
        orr_status rc =
            orr_err_set(err, ORR_EIO, "blob_root", "cannot open %s: %s", b->root, strerror(errno));
        bf_close(&b->base);
        return rc;
    }
    *out = &b->base;
    return ORR_OK;
}

const orr_blob_ops orr_blob_file = {
    .scheme = "file",
    .open = bf_open,
    .put_file = bf_put_file,
    .put_fd = bf_put_fd,
    .put_bytes = bf_put_bytes,
    .get_bytes = bf_get_bytes,
    .get_range = bf_get_range,
    .list = bf_list,
    .remove = bf_remove,
    .size = bf_size,
    .put_many = bf_put_many,
    .url = bf_url,
    .locate = bf_locate,
    .close = bf_close,
};

orr_status orr_blob_open(const char *url, orr_blob **out, orr_err *err)
{
    if (!url || !*url)
        return orr_err_set(err, ORR_EINVAL, "blob_root", "is required");
    const char *colon = strstr(url, "://");
    if (!colon)
        return orr_blob_file.open(url, out, err); /* a plain path */
    size_t n = (size_t)(colon - url);
    for (size_t i = 0; i < sizeof orr_blob_backends / sizeof orr_blob_backends[0]; i++) {
        const orr_blob_ops *o = orr_blob_backends[i];
        if (strlen(o->scheme) == n && strncmp(o->scheme, url, n) == 0)
            return o->open(url, out, err);
    }
    return orr_err_set(err, ORR_EINVAL, "blob_root", "unsupported blob store scheme: %.*s", (int)n,
                       url);
}

void orr_blob_close(orr_blob *b)
{
    if (b)
        b->ops->close(b);
}

size_t orr_blob_sweep_tmp(orr_blob *b, const char *rel)
{
    orr_buf names = ORR_BUF_INIT;
    size_t removed = 0;
    if (b->ops->list(b, rel, &names, NULL, NULL) == ORR_OK) {
        for (size_t off = 0; off < names.len;) {
            const char *nm = names.data + off;
            off += strlen(nm) + 1;
            if (strncmp(nm, ".tmp-", 5) != 0)
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", rel, nm);
            if (b->ops->remove(b, p, NULL) == ORR_OK)
                removed++;
        }
    }
    orr_buf_free(&names);
    return removed;
}

const char *orr_blob_local_root(const orr_blob *b)
{
    return b->ops == &orr_blob_file ? ((const blob_file *)b)->root : NULL;
}

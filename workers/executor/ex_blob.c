/*
 * ex_blob.c - copy a file into the file:// blob store and fetch one back
 * (see ex_blob.h).
 */
#include "ex_blob.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ex_cgroup.h"

orr_status ex_blob_root_dir(const char *root, char *out, size_t n, orr_err *err)
{
    if (!root || !*root)
        return orr_err_set(err, ORR_EINVAL, "executor.blob_root", "must be set");
    const char *p = root;
    if (strncmp(root, "file://", 7) == 0)
        p = root + 7;
    else if (strstr(root, "://"))
        return orr_err_set(err, ORR_EINVAL, "executor.blob_root",
                           "only the file:// backend is supported here (got %.100s)", root);
    if (!*p)
        return orr_err_set(err, ORR_EINVAL, "executor.blob_root", "empty path");
    if (snprintf(out, n, "%s", p) >= (int)n)
        return orr_err_set(err, ORR_EINVAL, "executor.blob_root", "path too long");
    return ORR_OK;
}

orr_status ex_blob_put_file(const char *root_dir, const char *key, const char *src, orr_err *err)
{
    char dst[1024], tmp[1100], dir[1024];
    orr_status s = ORR_OK;
    if (strstr(key, "..") || key[0] == '/')
        return orr_err_set(err, ORR_EINVAL, "key", "must be a relative path without ..");
    snprintf(dst, sizeof dst, "%s/%s", root_dir, key);
    snprintf(dir, sizeof dir, "%s", dst);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    if ((s = ex_cg_mkdirs(dir, 0755, err)) != ORR_OK)
        return s;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", dst, (int)getpid());

    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return orr_err_set(err, ORR_EIO, src, "cannot open: %s", strerror(errno));
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        s = orr_err_set(err, ORR_EIO, tmp, "cannot create: %s", strerror(errno));
        goto done_in;
    }
    char buf[65536];
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            s = orr_err_set(err, ORR_EIO, src, "read: %s", strerror(errno));
            goto done_out;
        }
        if (r == 0)
            break;
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(out, buf + off, (size_t)(r - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                s = orr_err_set(err, ORR_EIO, tmp, "write: %s", strerror(errno));
                goto done_out;
            }
            off += w;
        }
    }
    if (fsync(out) != 0) {
        s = orr_err_set(err, ORR_EIO, tmp, "fsync: %s", strerror(errno));
        goto done_out;
    }
done_out:
    if (close(out) != 0 && s == ORR_OK)
        s = orr_err_set(err, ORR_EIO, tmp, "close: %s", strerror(errno));
    if (s == ORR_OK && rename(tmp, dst) != 0)
        s = orr_err_set(err, ORR_EIO, dst, "rename: %s", strerror(errno));
    if (s != ORR_OK)
        unlink(tmp);
done_in:
    close(in);
    return s;
}

orr_status ex_blob_fetch(const char *root_dir, const char *url, const char *dst, int64_t max_bytes,
                         char sha_hex[65], int64_t *size, orr_err *err)
{
    char want[PATH_MAX], root[PATH_MAX], real[PATH_MAX];
    const char *p = url;
    if (strncmp(url, "file://", 7) == 0)
        p = url + 7;
    else if (strstr(url, "://"))
        return orr_err_set(err, ORR_EINVAL, "source",
                           "only file:// blobs can be fetched here (got %.100s)", url);
    if (!*p)
        return orr_err_set(err, ORR_EINVAL, "source", "empty path");
    if (p[0] == '/')
        snprintf(want, sizeof want, "%s", p);
    else
        snprintf(want, sizeof want, "%s/%s", root_dir, p);
    if (!realpath(root_dir, root))
        return orr_err_set(err, ORR_EIO, "executor.blob_root", "%s: %s", root_dir, strerror(errno));
    if (!realpath(want, real))
        return orr_err_set(err, errno == ENOENT ? ORR_ENOTFOUND : ORR_EIO, "source", "%.200s: %s",
                           url, strerror(errno));
    size_t rl = strlen(root);
    if (strncmp(real, root, rl) != 0 || real[rl] != '/')
        return orr_err_set(err, ORR_EINVAL, "source", "%.200s is outside the blob root", url);

    int in = open(real, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return orr_err_set(err, ORR_EIO, "source", "cannot open %s: %s", real, strerror(errno));
    unlink(dst);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        close(in);
        return orr_err_set(err, ORR_EIO, dst, "cannot create: %s", strerror(errno));
    }
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    orr_status s = ORR_OK;
    int64_t total = 0;
    unsigned char buf[65536];
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            s = orr_err_set(err, ORR_EIO, "source", "read %s: %s", real, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        total += r;
        if (total > max_bytes) {
            s = orr_err_set(err, ORR_ETOOBIG, "source", "larger than %lld bytes",
                            (long long)max_bytes);
            break;
        }
        crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
        if (write(out, buf, (size_t)r) != r) {
            s = orr_err_set(err, ORR_EIO, dst, "write: %s", strerror(errno));
            break;
        }
    }
    close(in);
    if (close(out) != 0 && s == ORR_OK)
        s = orr_err_set(err, ORR_EIO, dst, "close: %s", strerror(errno));
    if (s != ORR_OK) {
        unlink(dst);
        return s;
    }
    unsigned char dig[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&st, dig);
    sodium_bin2hex(sha_hex, 65, dig, sizeof dig);
    *size = total;
    return ORR_OK;
}

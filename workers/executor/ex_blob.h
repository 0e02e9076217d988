/*
 * ex_blob.h - the executor's side of the blob store: copy a finished
 * attempt's log to the `file://` backend, and fetch a code package's
 * archive from it (checking its size and SHA-256).
 *
 * The blob root is a "file:///path" URL or a plain path. A copy goes to a
 * temporary name beside the target, is fsync'ed and renamed, so a reader
 * never sees half a file and a crash leaves at most a temporary.
 */
#ifndef EX_BLOB_H
#define EX_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "orr_status.h"

/* The directory of a blob root ("file:///x" or "/x"); ORR_EINVAL naming
 * executor.blob_root for another scheme. */
orr_status ex_blob_root_dir(const char *root, char *out, size_t n, orr_err *err);

/* Copy the file src to <root dir>/<key> (key may hold '/': folders are
 * created). ORR_EIO naming the path that failed. Blocks on disk I/O. */
orr_status ex_blob_put_file(const char *root_dir, const char *key, const char *src, orr_err *err);

/* Copy the blob at url ("file:///..." inside root_dir, or a path relative
 * to root_dir) to dst (created 0600), at most max_bytes, computing its size
 * and SHA-256 (64 lower-case hex digits + NUL into sha_hex). ORR_EINVAL
 * naming "source" for a URL of another scheme or outside the root,
 * ORR_ENOTFOUND when it does not exist, ORR_ETOOBIG past max_bytes, ORR_EIO
 * otherwise. dst is removed on failure. Blocks on disk I/O. */
orr_status ex_blob_fetch(const char *root_dir, const char *url, const char *dst, int64_t max_bytes,
                         char sha_hex[65], int64_t *size, orr_err *err);

#endif

/*
 * ex_blob.h - the executor's side of the blob store: copy a finished
 * attempt's log to the `file://` backend.
 *
 * The blob root is a "file:///path" URL or a plain path. A copy goes to a
 * temporary name beside the target, is fsync'ed and renamed, so a reader
 * never sees half a file and a crash leaves at most a temporary.
 */
#ifndef EX_BLOB_H
#define EX_BLOB_H

#include <stddef.h>

#include "orr_status.h"

/* The directory of a blob root ("file:///x" or "/x"); ORR_EINVAL naming
 * executor.blob_root for another scheme. */
orr_status ex_blob_root_dir(const char *root, char *out, size_t n, orr_err *err);

/* Copy the file src to <root dir>/<key> (key may hold '/': folders are
 * created). ORR_EIO naming the path that failed. Blocks on disk I/O. */
orr_status ex_blob_put_file(const char *root_dir, const char *key, const char *src, orr_err *err);

#endif

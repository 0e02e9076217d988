/*
 * orr_blob.h - the blob store: where landed files, code packages and
 * archived logs go. One ops struct per backend, chosen by the URL's scheme
 * from one table (orr_blob.c); adding a backend is one file and one line.
 *
 *   file:///data/orrery   (or a plain path)   local or NFS folder
 *                                             (orr_blob.c)
 *   webhdfs://user@host:port/root   HDFS through WebHDFS with libcurl
 *                                   (orr_blob_webhdfs.c)
 *
 * A plain relative path ("var/blob") is taken from the working folder at
 * open and made absolute; the file backend resolves its root's symbolic
 * links, so the URLs it gives (url) are canonical.
 *
 * Paths given to the functions are relative to the store's root, with "/"
 * separators, and must not contain "..", "." components or empty parts.
 *
 * Landing is atomic: a put writes a temporary name (".tmp-<name>") in the
 * target folder, makes it durable, and renames it to its final name, so a
 * reader (or a restart) sees the whole file or nothing. Leftover ".tmp-"
 * files of a crash are removed by orr_blob_sweep_tmp().
 *
 * Every call blocks on disk or network I/O. A store handle may be used by
 * several threads at once (no backend keeps mutable state after open).
 */
#ifndef ORR_BLOB_H
#define ORR_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "orr_buf.h"
#include "orr_status.h"

typedef struct orr_blob orr_blob;

/* One object of a batch landing (put_many): a local file moved into the
 * store (local set; it is gone on success) or bytes (data, len). */
typedef struct orr_blob_item {
    const char *rel;
    const char *local;
    const void *data;
    size_t len;
} orr_blob_item;

/* Receives the bytes of get_range in order, in pieces of any size. A status
 * other than ORR_OK stops the read, which returns it as it is (the sink sets
 * err itself). */
typedef orr_status (*orr_blob_sink)(void *ud, const void *data, size_t n, orr_err *err);

/* Read to the end of the object (get_range's max). */
#define ORR_BLOB_TO_END UINT64_MAX

typedef struct orr_blob_ops {
    const char *scheme;
    orr_status (*open)(const char *url, orr_blob **out, orr_err *err);
    /* Land the local file at rel (folders created as needed). With move
     * set the local file may be renamed away (it is gone on success). */
    orr_status (*put_file)(orr_blob *b, const char *rel, const char *local, int move, orr_err *err);
    /* Land the whole content of the open regular file fd (from offset 0 to
     * its size at the call, read with pread: fd's offset is unchanged, fd
     * stays open; an unlinked file is fine) at rel. ORR_EIO naming the path
     * that failed, ORR_EINVAL for a bad rel. */
    orr_status (*put_fd)(orr_blob *b, const char *rel, int fd, orr_err *err);
    orr_status (*put_bytes)(orr_blob *b, const char *rel, const void *data, size_t len,
                            orr_err *err);
    /* Read a whole object into out (reset first). ORR_ENOTFOUND if absent. */
    orr_status (*get_bytes)(orr_blob *b, const char *rel, orr_buf *out, orr_err *err);
    /* Stream at most max bytes (ORR_BLOB_TO_END: all) of the object at rel,
     * from offset, to sink, without holding them in memory. An offset at the
     * end gives no bytes; past the end it gives none (file) or fails (ORR_EIO,
     * webhdfs): ask size first. ORR_ENOTFOUND if absent, ORR_EINVAL for a
     * bad rel or a folder, a sink's status as it is, ORR_EIO otherwise. */
    orr_status (*get_range)(orr_blob *b, const char *rel, uint64_t offset, uint64_t max,
                            orr_blob_sink sink, void *ud, orr_err *err);
    /* Names in folder rel (not recursive, no "." entries), each followed by
     * a NUL, appended to out; with sizes (may be NULL), each entry's size in
     * bytes (0 for a folder) appended to it as a uint64_t, in the same
     * order. ORR_ENOTFOUND if the folder is absent. */
    orr_status (*list)(orr_blob *b, const char *rel, orr_buf *out, orr_buf *sizes, orr_err *err);
    orr_status (*remove)(orr_blob *b, const char *rel, orr_err *err);
    /* Size in bytes of the object at rel into *size. ORR_ENOTFOUND if
     * absent, ORR_EINVAL for a bad rel or a folder, ORR_EIO otherwise. */
    orr_status (*size)(orr_blob *b, const char *rel, uint64_t *size, orr_err *err);
    /* Land n items as one batch: each is first placed under a temporary
     * name in its folder (folders created as needed), then every item is
     * renamed to its final name in list order. With durable set, the bytes
     * of all items are made durable before the first final name appears,
     * and the names before the call returns -- one sync per step for the
     * whole batch (the file backend: syncfs on its filesystem) instead of
     * an fsync per file and folder. *landed (may be NULL) gets how many
     * items are under their final names, always a prefix of the list, also
     * on failure (ORR_EIO naming the path, ORR_EINVAL for a bad rel); the
     * local files of items that did not land are moved back (best effort). */
    orr_status (*put_many)(orr_blob *b, const orr_blob_item *items, size_t n, int durable,
                           size_t *landed, orr_err *err);
    /* The URL that names the object at rel (file:///root/rel,
     * webhdfs://user@host:port/root/rel, percent-encoded) into out (reset
     * first): what other programs are told, and what locate maps back.
     * ORR_EINVAL (field "path") for a bad rel. */
    orr_status (*url)(orr_blob *b, const char *rel, orr_buf *out, orr_err *err);
    /* The path relative to the root (into rel, reset first) of the object
     * that ref names: a URL of this store (as url gives it; the file backend
     * also takes a plain absolute path, and follows symbolic links), or a
     * clean relative path, taken as it is. ORR_EINVAL (field "url") for a URL
     * of another store or scheme, a path outside the root or not clean;
     * ORR_ENOTFOUND (file) when the path does not exist. */
    orr_status (*locate)(orr_blob *b, const char *ref, orr_buf *rel, orr_err *err);
    void (*close)(orr_blob *b);
} orr_blob_ops;

struct orr_blob {
    const orr_blob_ops *ops;
};

/* Open a store by URL (or plain path). ORR_EINVAL (field "blob_root") for
 * an unknown scheme or a bad URL, ORR_EIO if the root cannot be created,
 * ORR_EUNAVAIL / ORR_ETIMEOUT when a remote store does not answer. Free
 * with orr_blob_close (NULL is fine). */
orr_status orr_blob_open(const char *url, orr_blob **out, orr_err *err);
void orr_blob_close(orr_blob *b);

/* 1 if rel is a clean relative path (see above). */
int orr_blob_path_ok(const char *rel);

/* Remove ".tmp-*" leftovers in folder rel. Returns how many were removed. */
size_t orr_blob_sweep_tmp(orr_blob *b, const char *rel);

/* Local root folder of a file:// store; NULL for other backends. */
const char *orr_blob_local_root(const orr_blob *b);

/* The backends, one ops struct each (orr_blob.c, orr_blob_webhdfs.c). */
extern const orr_blob_ops orr_blob_file;
extern const orr_blob_ops orr_blob_webhdfs;

#endif
